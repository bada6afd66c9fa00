//! Synchronous variables (CML's `SyncVar`, Deleuze's MVars): [`IVar`], a write-once cell, and
//! [`MVar`], a cell that is either full or empty.
//!
//! ```
//! use pcml::{IVar, MVar};
//!
//! pcml::run(|| {
//!     let result = IVar::new();
//!     let r = result.clone();
//!     pcml::spawn(move || r.put("done").unwrap());
//!     assert_eq!(result.get(), "done"); // waits until it is written; every reader sees it
//!     assert!(result.put("again").is_err()); // written once
//!
//!     let slot = MVar::new();
//!     let s = slot.clone();
//!     pcml::spawn(move || s.put(1));
//!     assert_eq!(slot.take(), 1); // waits until full, leaves it empty
//! });
//! ```
//!
//! Both are communication objects built on the public [`BaseEvent`] API, like a user's own
//! primitive would be: a mutex around the cell and its queues of waiters, each waiter paired
//! with a one-value slot. (The mutex is `std::sync::Mutex`, reached through the crate's loom
//! shim so that the loom models in `sync_var/tests` check these protocols; `.ci/loom` runs them.) Every blocking operation is an event
//! ([`IVar::get_evt`], [`MVar::take_evt`], [`MVar::put_evt`], [`MVar::get_evt`],
//! [`MVar::swap_evt`]), so it composes
//! in `choose`/`select` and works from fibers, OS threads and async code (`.await`); the plain
//! methods (`get`, `take`, `put`, ...) are those events synced.
//!
//! The phases of each event: `poll` locks briefly and looks at the cell; `try_do` commits if the
//! cell allows it (serving waiters it unblocks); `block` either completes at once (the cell
//! allows it: [`OwnWaiter::synch_self`], or for a put, a blocked taker matched with
//! [`OwnWaiter::try_match`]) or queues its offer; `complete` reads what the partner delivered
//! into the slot; a losing put offer's `cancel` drops the value it carried; a take or swap
//! that won but whose sync was abandoned before it saw the value (a dropped `.await`) gives
//! the value back in `discard` (see [`MVar`]'s "Cancellation").
//!
//! # Differences from the CML library
//! - CML's `mPut` on a full MVar raises `Put`; here, as in Deleuze 2010 (and Haskell), `put` blocks
//!   while full. [`IVar::put`] on a full IVar returns [`PutError`] with the value.
//! - Deliveries and wake-ups happen under the object's lock (unlike `Chan`, which drops its lock
//!   first): the wake-up only schedules the waiter and never takes this lock, so this cannot
//!   deadlock, and it keeps the cell's state changes atomic.
//!
//! # Invariants
//! - The cell and its queues are touched only under the object's lock; the lock is never held
//!   across a block or a yield, and the only lock taken under it is a waiter's slot lock, which
//!   is a leaf (nobody takes another lock while holding a slot lock).
//! - A waiter's slot is written by the thread that won its sync (then it publishes), and read
//!   by its owner after `complete`, or, for a losing put offer, in `cancel`.
//! - `MVar`: when the cell is full, no live taker or reader is queued (a put serves them
//!   first); when it is empty, no live putter is queued (a take refills from the first live
//!   putter). Queues are FIFO, so waiters of one kind are served in arrival order, except
//!   that a value given back by `discard` into a full cell moves the cell's value to the
//!   front of the putters, as an offer of no sync (`Waiter::unowned`): a take wins it like any
//!   putter, and it wakes nobody.
//! - `MVar`: `swapped_in` names a blocked swap only while the cell holds that swap's
//!   replacement value, unchanged since the exchange; every other change of the cell clears it.
//! - A blocked swapper is a taker whose slot holds its replacement value; whoever hands it the
//!   taken value exchanges the two under the lock and puts the replacement in the cell (or to
//!   the next taker), so no other put or take comes between a swap's take and its put.
//! - A sync never matches an offer of its own ([`Waiter::same_sync`](crate::event::Waiter::same_sync)).

use crate::loom::sync::{Arc, Mutex};
use std::fmt;

use crate::event::{BaseEvent, Blocked, Event, OwnWaiter, SelfSynch, Waiter};

pub(crate) mod waiters;

#[cfg(all(test, pcml_loom))]
mod tests;

use waiters::{
    Matched, Offer, Offers, Queue, Slot, complete_self, deliver, delivered, drop_offer,
    hand_to_taker, lock,
};

// ---------------------------------------------------------------------------------------------
// IVar

/// The error of a second [`IVar::put`]: the IVar is already full. Holds the value back.
///
/// # Examples
/// ```
/// let v = pcml::IVar::new();
/// v.put(1).unwrap();
/// let err = v.put(2).unwrap_err();
/// assert_eq!(err.into_inner(), 2);
/// ```
#[derive(PartialEq, Eq)]
pub struct PutError<T>(pub T);

impl<T> PutError<T> {
    /// The value that was not put.
    ///
    /// # Examples
    /// ```
    /// let v = pcml::IVar::new();
    /// v.put("a").unwrap();
    /// assert_eq!(v.put("b").unwrap_err().into_inner(), "b");
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for PutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PutError(..)")
    }
}

impl<T> fmt::Display for PutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("put on an IVar that already holds a value (an IVar is written once)")
    }
}

impl<T> std::error::Error for PutError<T> {}

/// A write-once variable (CML's `ivar`): empty until its one [`put`](IVar::put), then full
/// forever. Readers block until it is full, and each gets a clone of the value.
///
/// Cheap to clone (a reference count); `Send + Sync` when `T: Send`.
///
/// # Examples
/// ```
/// let v = pcml::IVar::new();
/// let r = v.clone();
/// let t = std::thread::spawn(move || r.get());
/// v.put(42).unwrap();
/// assert_eq!(t.join().unwrap(), 42);
/// ```
pub struct IVar<T> {
    inner: Arc<IVarInner<T>>,
}

struct IVarInner<T> {
    state: Mutex<IState<T>>,
}

struct IState<T> {
    /// The value, once put (written once, under the lock).
    value: Option<T>,
    /// Blocked getters, served (and emptied) by the put.
    getters: Offers<T>,
}

impl<T> Clone for IVar<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Default for IVar<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for IVar<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let full = lock(&self.inner.state).value.is_some();
        f.debug_struct("IVar").field("full", &full).finish()
    }
}

impl<T> IVar<T> {
    /// An empty IVar.
    ///
    /// # Examples
    /// ```
    /// let v: pcml::IVar<u8> = pcml::IVar::new();
    /// assert_eq!(v.try_get(), None);
    /// ```
    pub fn new() -> Self {
        Self {
            inner: Arc::new(IVarInner {
                state: Mutex::new(IState {
                    value: None,
                    getters: Queue::new(),
                }),
            }),
        }
    }
}

impl<T: Clone + Send + 'static> IVar<T> {
    /// Fills the IVar and wakes every blocked getter with a clone of `v`. Never blocks.
    ///
    /// # Errors
    /// [`PutError`] holding `v` if the IVar was already full.
    ///
    /// # Examples
    /// ```
    /// let v = pcml::IVar::new();
    /// assert!(v.put(1).is_ok());
    /// assert!(v.put(2).is_err());
    /// assert_eq!(v.get(), 1);
    /// ```
    pub fn put(&self, v: T) -> Result<(), PutError<T>> {
        let mut st = lock(&self.inner.state);
        if st.value.is_some() {
            return Err(PutError(v));
        }
        let getters = std::mem::replace(&mut st.getters, Queue::new());
        for g in getters.q {
            // A dead getter (its sync won elsewhere) just gives the clone back.
            let _ = deliver(&g, v.clone());
        }
        st.value = Some(v);
        Ok(())
    }

    /// Blocks until the IVar is full, then returns a clone of its value.
    ///
    /// # Examples
    /// ```
    /// let v = pcml::IVar::new();
    /// v.put("x").unwrap();
    /// assert_eq!(v.get(), "x");
    /// ```
    pub fn get(&self) -> T {
        self.get_evt().sync()
    }

    /// The value, if the IVar is full; never blocks.
    ///
    /// # Examples
    /// ```
    /// let v = pcml::IVar::new();
    /// assert_eq!(v.try_get(), None);
    /// v.put(3).unwrap();
    /// assert_eq!(v.try_get(), Some(3));
    /// ```
    pub fn try_get(&self) -> Option<T> {
        lock(&self.inner.state).value.clone()
    }

    /// An event enabled once the IVar is full, returning a clone of its value.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let v: pcml::IVar<u32> = pcml::IVar::new();
    /// let r = pcml::select([
    ///     v.get_evt().wrap(Some),
    ///     pcml::time::timeout_evt(Duration::from_millis(1)).wrap(|()| None),
    /// ]);
    /// assert_eq!(r, None);
    /// ```
    pub fn get_evt(&self) -> Event<T> {
        Event::from_base(IGetEvt {
            var: self.inner.clone(),
            slot: None,
        })
    }
}

impl<T: Clone + Send + 'static> IVar<T> {
    /// The base event of `get_evt`, for objects built on an IVar that need its phases.
    pub(crate) fn get_base(&self) -> IGetEvt<T> {
        IGetEvt {
            var: self.inner.clone(),
            slot: None,
        }
    }
}

/// The base event of [`IVar::get_evt`].
pub(crate) struct IGetEvt<T> {
    var: Arc<IVarInner<T>>,
    /// Our offer's slot while blocked.
    slot: Option<Slot<T>>,
}

impl<T: Clone + Send + 'static> BaseEvent for IGetEvt<T> {
    type Output = T;

    fn poll(&mut self) -> bool {
        lock(&self.var.state).value.is_some()
    }

    fn try_do(&mut self) -> Option<T> {
        lock(&self.var.state).value.clone()
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<T> {
        let mut st = lock(&self.var.state);
        if let Some(v) = &st.value {
            return complete_self(me, || v.clone());
        }
        self.slot = Some(st.getters.push_offer(me, None));
        Blocked::Waiting
    }

    fn complete(&mut self) -> T {
        delivered(
            self.slot
                .as_ref()
                .expect("pcml: IVar get completed unblocked"),
        )
    }

    fn describe(&self) -> String {
        crate::sched::dump::on_object("IVar::read_evt", Arc::as_ptr(&self.var))
    }
}

// ---------------------------------------------------------------------------------------------
// MVar

/// A cell that is either full or empty (Deleuze's MVar, CML's `mvar`): `put` fills it,
/// blocking while it is full; `take` empties it, blocking while it is empty; `get` reads it
/// without emptying it.
///
/// Blocked takers, putters and readers are served in FIFO order per kind. Cheap to clone (a
/// reference count); `Send + Sync` when `T: Send`.
///
/// # Cancellation
/// A take, swap or put that loses a choice, or whose `.await` is dropped before a partner
/// reached it, leaves the MVar as it was (a losing put or swap drops the value it carried).
///
/// Rarely, a blocked [`take_evt`](MVar::take_evt) `.await` is dropped just after a put handed
/// it the value: the sync completed, but nobody will see its result. The value then goes
/// back, as if the take had never happened; it was taken before anything now in the MVar was
/// put, so it goes first:
/// - into the cell, if the MVar is empty (serving a blocked reader and taker, as a put does);
/// - into the cell, if the MVar was refilled meanwhile; the value that was there becomes the
///   first of the blocked puts, a put nobody waits on. So the next take gets the given-back
///   value, the one after gets the newer value, and no put ever blocks on the give-back.
///
/// A blocked [`swap_evt`](MVar::swap_evt) dropped the same way had taken the old value and put
/// its own. If its own value is still in the cell, untaken since the exchange, the whole swap
/// is undone: its value is dropped and the old one is back. Otherwise its value has gone on
/// (a take got it), so the swap's put stands and only its take is undone: the old value goes
/// back as above, and the MVar then holds one value more than before the swap. Values are
/// never lost; an MVar used as a lock (one token, exchanged by swaps) stays with one token
/// unless a swap is dropped after its replacement was taken.
///
/// A read ([`get_evt`](MVar::get_evt)) only clones, so there is nothing to give back.
///
/// ```
/// use std::future::{Future, IntoFuture};
/// use std::task::{Context, Waker};
///
/// let m = pcml::MVar::new();
/// let mut take = Box::pin(m.take_evt().into_future());
/// let mut cx = Context::from_waker(Waker::noop());
/// assert!(take.as_mut().poll(&mut cx).is_pending()); // blocked: the MVar is empty
/// m.put(1); // handed straight to the blocked take
/// m.put(2); // the MVar was empty again, so this fills it
/// drop(take); // the take never saw 1: it goes back, ahead of 2
/// assert_eq!((m.try_take(), m.try_take(), m.try_take()), (Some(1), Some(2), None));
/// ```
///
/// # Examples
/// A one-slot buffer between two threads:
/// ```
/// let m = pcml::MVar::new();
/// let p = m.clone();
/// let t = std::thread::spawn(move || (0..3).for_each(|i| p.put(i)));
/// let got: Vec<i32> = (0..3).map(|_| m.take()).collect();
/// assert_eq!(got, [0, 1, 2]);
/// t.join().unwrap();
/// ```
pub struct MVar<T> {
    inner: Arc<MVarInner<T>>,
}

struct MVarInner<T> {
    state: Mutex<MState<T>>,
}

/// How a queued reader turns the cell's value into its own copy (`T::clone`, captured where
/// `T: Clone` is known).
type Cloner<T> = fn(&T) -> T;

struct MState<T> {
    /// The cell.
    value: Option<T>,
    /// Blocked takers (empty slots); live ones only while `value` is `None`.
    takers: Offers<T>,
    /// Blocked putters (slots holding their values); live ones only while `value` is `Some`.
    putters: Offers<T>,
    /// Blocked readers; live ones only while `value` is `None`.
    readers: Queue<(Offer<T>, Cloner<T>)>,
    /// The slot of the blocked swap whose replacement value is in the cell, while the cell has
    /// not changed since that swap's exchange: its `discard` can then undo the whole swap.
    /// Set by `fill_from`; cleared by every other change of the cell.
    swapped_in: Option<Slot<T>>,
}

impl<T> MState<T> {
    /// The cell was empty and receives `v`: serve every live reader a clone, then the first
    /// live taker, else store it.
    fn fill(&mut self, v: T) {
        self.fill_from(v, None);
    }

    /// As `fill`, for a `v` that is the replacement value of the blocked swap whose slot is
    /// `swap`, if any.
    fn fill_from(&mut self, v: T, swap: Option<Slot<T>>) {
        for (r, clone) in std::mem::take(&mut self.readers.q) {
            let _ = deliver(&r, clone(&v));
        }
        let (mut v, mut swap) = (v, swap);
        while let Some((_, t)) = self.takers.take_match(None) {
            let Some(commit) = t.w.synch_spinning() else {
                // Dead taker: next.
                continue;
            };
            match hand_to_taker(&t, commit, v) {
                // A swapper put its value back: it goes to the next taker, or the cell.
                Some(back) => {
                    v = back;
                    swap = Some(t.slot);
                }
                None => return,
            }
        }
        self.value = Some(v);
        self.swapped_in = swap;
    }

    /// The cell was just emptied: refill it from the first live putter, if any.
    fn refill(&mut self) {
        debug_assert!(self.value.is_none());
        if let Some(v) = self.putters.take_first() {
            // Live takers and readers are not queued while putters are.
            self.fill(v);
        }
    }

    /// Takes the value, refilling from a blocked putter.
    fn take(&mut self) -> Option<T> {
        let v = self.value.take()?;
        self.swapped_in = None;
        self.refill();
        Some(v)
    }

    /// Exchanges the cell's value for `v` (a swap that completes at once).
    fn exchange(&mut self, v: T) -> Option<T> {
        // Full: no live taker or reader is queued, so the exchange needs no one served.
        let old = self.value.as_mut()?;
        self.swapped_in = None;
        Some(std::mem::replace(old, v))
    }

    /// Gives back `v`, taken by a sync that was then abandoned (`BaseEvent::discard`), as if
    /// the take had never happened. It was taken before anything now in the MVar was put, so
    /// it goes first: into an empty cell as a put would go (serving readers and a taker), or
    /// into a full cell, whose value moves to the front of the putters as an offer nobody
    /// waits on (the next take after `v`'s gets it, and no put blocks for it).
    fn give_back(&mut self, v: T) {
        let Some(newer) = self.value.take() else {
            self.fill(v);
            return;
        };
        // Full: no live taker or reader is queued.
        self.value = Some(v);
        self.swapped_in = None;
        self.putters.push_front(Offer {
            w: Waiter::unowned(),
            slot: Arc::new(Mutex::new(Some(newer))),
            swap: false,
        });
    }
}

impl<T> Clone for MVar<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Default for MVar<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for MVar<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let full = lock(&self.inner.state).value.is_some();
        f.debug_struct("MVar").field("full", &full).finish()
    }
}

impl<T> MVar<T> {
    /// An empty MVar.
    ///
    /// # Examples
    /// ```
    /// let m: pcml::MVar<u8> = pcml::MVar::new();
    /// assert_eq!(m.try_take(), None);
    /// ```
    pub fn new() -> Self {
        Self::with(None)
    }

    /// A full MVar holding `v`.
    ///
    /// # Examples
    /// ```
    /// let m = pcml::MVar::new_full(5);
    /// assert_eq!(m.take(), 5);
    /// ```
    pub fn new_full(v: T) -> Self {
        Self::with(Some(v))
    }

    fn with(value: Option<T>) -> Self {
        Self {
            inner: Arc::new(MVarInner {
                state: Mutex::new(MState {
                    value,
                    takers: Queue::new(),
                    putters: Queue::new(),
                    readers: Queue::new(),
                    swapped_in: None,
                }),
            }),
        }
    }
}

impl<T: Send + 'static> MVar<T> {
    /// Fills the MVar, blocking while it is full.
    ///
    /// # Examples
    /// ```
    /// let m = pcml::MVar::new();
    /// m.put(1);
    /// assert_eq!(m.take(), 1);
    /// ```
    pub fn put(&self, v: T) {
        self.put_evt(v).sync()
    }

    /// An event enabled while the MVar is empty; syncing on it fills it with `v`. If it loses
    /// a choice, `v` is dropped.
    ///
    /// # Examples
    /// ```
    /// let m = pcml::MVar::new_full(1);
    /// let r = pcml::select([m.put_evt(2).wrap(|()| "put"), pcml::always("busy")]);
    /// assert_eq!(r, "busy");
    /// ```
    pub fn put_evt(&self, v: T) -> Event<()> {
        Event::from_base(PutEvt {
            var: self.inner.clone(),
            value: Some(v),
            slot: None,
        })
    }

    /// Fills the MVar if it is empty; gives `v` back if it is full. Never blocks.
    ///
    /// # Examples
    /// ```
    /// let m = pcml::MVar::new();
    /// assert_eq!(m.try_put(1), Ok(()));
    /// assert_eq!(m.try_put(2), Err(2));
    /// ```
    pub fn try_put(&self, v: T) -> Result<(), T> {
        let mut st = lock(&self.inner.state);
        if st.value.is_some() {
            return Err(v);
        }
        st.fill(v);
        Ok(())
    }

    /// Empties the MVar and returns its value, blocking while it is empty.
    ///
    /// # Examples
    /// ```
    /// let m = pcml::MVar::new_full("v");
    /// assert_eq!(m.take(), "v");
    /// ```
    pub fn take(&self) -> T {
        self.take_evt().sync()
    }

    /// An event enabled while the MVar is full; syncing on it empties it and returns the value.
    /// If its `.await` is dropped after a put handed it the value, the value goes back (see
    /// [Cancellation](MVar#cancellation)).
    ///
    /// # Examples
    /// ```
    /// let m = pcml::MVar::new_full(7);
    /// assert_eq!(pcml::select([m.take_evt(), pcml::never()]), 7);
    /// ```
    pub fn take_evt(&self) -> Event<T> {
        Event::from_base(TakeEvt {
            var: self.inner.clone(),
            slot: None,
        })
    }

    /// Empties the MVar and returns its value if it is full. Never blocks.
    ///
    /// # Examples
    /// ```
    /// let m = pcml::MVar::new();
    /// assert_eq!(m.try_take(), None);
    /// m.put(1);
    /// assert_eq!(m.try_take(), Some(1));
    /// ```
    pub fn try_take(&self) -> Option<T> {
        lock(&self.inner.state).take()
    }

    /// Takes the value and puts `v` in its place in one step, returning the old value; blocks
    /// while the MVar is empty. No other put or take comes between the two.
    ///
    /// # Examples
    /// ```
    /// let m = pcml::MVar::new_full(1);
    /// assert_eq!(m.swap(2), 1);
    /// assert_eq!(m.take(), 2);
    /// ```
    pub fn swap(&self, v: T) -> T {
        self.swap_evt(v).sync()
    }

    /// An event enabled while the MVar is full; syncing on it exchanges the value for `v` in
    /// one step and returns the old value. If it loses a choice, `v` is dropped. If its
    /// `.await` is dropped after a put handed it the old value, the swap is undone, or at
    /// least its take is (see [Cancellation](MVar#cancellation)).
    ///
    /// # Examples
    /// ```
    /// let m = pcml::MVar::new();
    /// let s = m.clone();
    /// let t = std::thread::spawn(move || s.swap_evt("new").sync());
    /// m.put("old");
    /// assert_eq!(t.join().unwrap(), "old");
    /// assert_eq!(m.take(), "new");
    /// ```
    pub fn swap_evt(&self, v: T) -> Event<T> {
        Event::from_base(SwapEvt {
            var: self.inner.clone(),
            value: Some(v),
            slot: None,
        })
    }
}

impl<T: Clone + Send + 'static> MVar<T> {
    /// Returns a clone of the value if the MVar is full, leaving it full. Never blocks.
    ///
    /// # Examples
    /// ```
    /// let m = pcml::MVar::new();
    /// assert_eq!(m.try_get(), None);
    /// m.put(5);
    /// assert_eq!(m.try_get(), Some(5));
    /// assert_eq!(m.try_take(), Some(5));
    /// ```
    pub fn try_get(&self) -> Option<T> {
        lock(&self.inner.state).value.clone()
    }

    /// Returns a clone of the value without emptying the MVar, blocking while it is empty.
    ///
    /// # Examples
    /// ```
    /// let m = pcml::MVar::new_full(3);
    /// assert_eq!(m.get(), 3);
    /// assert_eq!(m.take(), 3);
    /// ```
    pub fn get(&self) -> T {
        self.get_evt().sync()
    }

    /// An event enabled while the MVar is full, returning a clone of the value (the MVar stays
    /// full).
    ///
    /// # Examples
    /// ```
    /// let m = pcml::MVar::new();
    /// let r = m.clone();
    /// let t = std::thread::spawn(move || r.get_evt().sync());
    /// m.put('a');
    /// assert_eq!(t.join().unwrap(), 'a');
    /// ```
    pub fn get_evt(&self) -> Event<T> {
        Event::from_base(ReadEvt {
            var: self.inner.clone(),
            slot: None,
        })
    }
}

/// The base event of [`MVar::put_evt`].
struct PutEvt<T> {
    var: Arc<MVarInner<T>>,
    /// The value, until it is put or queued in `slot`.
    value: Option<T>,
    /// Our queued offer's slot (holding the value) while blocked.
    slot: Option<Slot<T>>,
}

impl<T: Send + 'static> BaseEvent for PutEvt<T> {
    type Output = ();

    fn poll(&mut self) -> bool {
        lock(&self.var.state).value.is_none()
    }

    fn try_do(&mut self) -> Option<()> {
        let mut st = lock(&self.var.state);
        if st.value.is_some() {
            return None;
        }
        st.fill(self.value.take().expect("pcml: MVar put without a value"));
        Some(())
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<()> {
        let mut st = lock(&self.var.state);
        if st.value.is_some() {
            self.slot = Some(st.putters.push_offer(me, self.value.take()));
            return Blocked::Waiting;
        }
        // Empty: hand the value to a blocked taker of another sync (Figure 9), serving
        // readers first, or else fill the cell ourselves.
        let st = &mut *st;
        let value = &mut self.value;
        let served = st.takers.match_partner(me, |t, commit| {
            let v = value.take().expect("pcml: MVar put without a value");
            for (r, clone) in std::mem::take(&mut st.readers.q) {
                let _ = deliver(&r, clone(&v));
            }
            // A swapper's slot comes back with the value it put back.
            hand_to_taker(t, commit, v).map(|back| (back, t.slot.clone()))
        });
        match served {
            Matched::Won(back) => {
                if let Some((back, swap)) = back {
                    // A swapper put its value back: it fills the cell.
                    st.fill_from(back, Some(swap));
                }
                return Blocked::Committed(());
            }
            Matched::SelfSynched => return Blocked::Synched,
            Matched::NoPartner => {}
        }
        match me.synch_self() {
            SelfSynch::Won => {
                st.fill(self.value.take().expect("pcml: MVar put without a value"));
                Blocked::Committed(())
            }
            SelfSynch::AlreadySynched => Blocked::Synched,
        }
    }

    fn complete(&mut self) {}

    fn cancel(&mut self) {
        drop_offer(&mut self.slot);
    }

    fn describe(&self) -> String {
        crate::sched::dump::on_object("MVar::put_evt", Arc::as_ptr(&self.var))
    }
}

/// The base event of [`MVar::take_evt`].
struct TakeEvt<T> {
    var: Arc<MVarInner<T>>,
    /// Our queued offer's slot while blocked.
    slot: Option<Slot<T>>,
}

impl<T: Send + 'static> BaseEvent for TakeEvt<T> {
    type Output = T;

    fn poll(&mut self) -> bool {
        lock(&self.var.state).value.is_some()
    }

    fn try_do(&mut self) -> Option<T> {
        lock(&self.var.state).take()
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<T> {
        let mut st = lock(&self.var.state);
        if st.value.is_some() {
            return complete_self(me, || st.take().expect("pcml: MVar emptied under its lock"));
        }
        let slot = Slot::default();
        st.takers.push(Offer {
            w: me.waiter(),
            slot: slot.clone(),
            swap: false,
        });
        self.slot = Some(slot);
        Blocked::Waiting
    }

    fn complete(&mut self) -> T {
        delivered(
            self.slot
                .as_ref()
                .expect("pcml: MVar take completed unblocked"),
        )
    }

    fn discard(&mut self, v: T) {
        // Our `.await` was dropped after a put handed us `v`: it goes back.
        lock(&self.var.state).give_back(v);
    }

    fn describe(&self) -> String {
        crate::sched::dump::on_object("MVar::take_evt", Arc::as_ptr(&self.var))
    }
}

/// The base event of [`MVar::get_evt`].
struct ReadEvt<T> {
    var: Arc<MVarInner<T>>,
    /// Our queued offer's slot while blocked.
    slot: Option<Slot<T>>,
}

impl<T: Clone + Send + 'static> BaseEvent for ReadEvt<T> {
    type Output = T;

    fn poll(&mut self) -> bool {
        lock(&self.var.state).value.is_some()
    }

    fn try_do(&mut self) -> Option<T> {
        lock(&self.var.state).value.clone()
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<T> {
        let mut st = lock(&self.var.state);
        if let Some(v) = &st.value {
            return complete_self(me, || v.clone());
        }
        let slot = Slot::default();
        st.readers.push((
            Offer {
                w: me.waiter(),
                slot: slot.clone(),
                swap: false,
            },
            T::clone,
        ));
        self.slot = Some(slot);
        Blocked::Waiting
    }

    fn complete(&mut self) -> T {
        delivered(
            self.slot
                .as_ref()
                .expect("pcml: MVar get completed unblocked"),
        )
    }

    fn describe(&self) -> String {
        crate::sched::dump::on_object("MVar::read_evt", Arc::as_ptr(&self.var))
    }
}

/// The base event of [`MVar::swap_evt`]: a take that puts its value back in the same step.
struct SwapEvt<T> {
    var: Arc<MVarInner<T>>,
    /// The value to put back, until it is exchanged or queued in `slot`.
    value: Option<T>,
    /// Our queued taker offer's slot while blocked: our value until a putter exchanges it
    /// for the taken one.
    slot: Option<Slot<T>>,
}

impl<T: Send + 'static> BaseEvent for SwapEvt<T> {
    type Output = T;

    fn poll(&mut self) -> bool {
        lock(&self.var.state).value.is_some()
    }

    fn try_do(&mut self) -> Option<T> {
        let mut st = lock(&self.var.state);
        // Empty: not enabled, and our value stays ours.
        st.value.as_ref()?;
        st.exchange(self.value.take().expect("pcml: MVar swap without a value"))
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<T> {
        let mut st = lock(&self.var.state);
        if st.value.is_some() {
            let new = self.value.take().expect("pcml: MVar swap without a value");
            return complete_self(me, || {
                st.exchange(new).expect("pcml: MVar emptied under its lock")
            });
        }
        let slot = Arc::new(Mutex::new(self.value.take()));
        st.takers.push(Offer {
            w: me.waiter(),
            slot: slot.clone(),
            swap: true,
        });
        self.slot = Some(slot);
        Blocked::Waiting
    }

    fn complete(&mut self) -> T {
        delivered(
            self.slot
                .as_ref()
                .expect("pcml: MVar swap completed unblocked"),
        )
    }

    fn discard(&mut self, old: T) {
        // Our `.await` was dropped after a put handed us `old` and took our value in
        // exchange. If that value still sits in the cell untouched, undo the whole swap;
        // otherwise it has gone on, so our put stands and only our take is undone.
        let mut st = lock(&self.var.state);
        let ours = match (&st.swapped_in, &self.slot) {
            (Some(cell), Some(mine)) => Arc::ptr_eq(cell, mine),
            _ => false,
        };
        if !ours {
            st.give_back(old);
            return;
        }
        st.swapped_in = None;
        let new = st
            .value
            .replace(old)
            .expect("pcml: a swapped-in value vanished from its MVar");
        drop(st);
        // Our own replacement value, never taken (readers may have cloned it): dropped, as
        // if never put.
        drop(new);
    }

    fn cancel(&mut self) {
        // Our sync is settled and this offer lost: the slot still holds our value; drop it.
        if let Some(slot) = self.slot.take() {
            lock(&slot).take();
        }
    }

    fn describe(&self) -> String {
        crate::sched::dump::on_object("MVar::swap_evt", Arc::as_ptr(&self.var))
    }
}

/// A one-shot condition variable (the Parallel CML paper's `cvar`, Figure 15): once signalled
/// it stays signalled, and every wait, before or after, returns.
///
/// It is an [`IVar`] of `()`: `signal` puts (a second signal does nothing), `wait` gets.
///
/// # Examples
/// ```
/// use pcml::sync_var::CVar;
///
/// pcml::run(|| {
///     let ready = CVar::new();
///     let r = ready.clone();
///     let waiter = pcml::spawn(move || r.wait());
///     ready.signal();
///     ready.signal(); // harmless
///     waiter.join().unwrap();
///     assert!(ready.is_signalled());
/// });
/// ```
#[derive(Clone, Default)]
pub struct CVar {
    flag: IVar<()>,
}

impl fmt::Debug for CVar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CVar")
            .field("signalled", &self.is_signalled())
            .finish()
    }
}

impl CVar {
    /// An unsignalled condition variable.
    ///
    /// ```
    /// assert!(!pcml::CVar::new().is_signalled());
    /// ```
    pub fn new() -> Self {
        Self { flag: IVar::new() }
    }

    /// Signals it, waking every waiter; signalling again does nothing.
    ///
    /// ```
    /// let c = pcml::CVar::new();
    /// c.signal();
    /// c.signal(); // does nothing
    /// assert!(c.is_signalled());
    /// ```
    pub fn signal(&self) {
        // A second signal finds the flag set: nothing to do, as in CML.
        let _ = self.flag.put(());
    }

    /// Blocks until it is signalled (at once if it already is).
    ///
    /// ```
    /// pcml::run(|| {
    ///     let go = pcml::CVar::new();
    ///     let g = go.clone();
    ///     let starter = pcml::spawn(move || g.signal());
    ///     go.wait(); // returns once the other fiber signalled
    ///     starter.join().unwrap();
    ///     go.wait(); // at once from now on
    /// });
    /// ```
    pub fn wait(&self) {
        self.flag.get()
    }

    /// An event enabled once it is signalled, to wait in a choice.
    ///
    /// ```
    /// use std::time::Duration;
    /// use pcml::sync_var::CVar;
    ///
    /// let c = CVar::new();
    /// assert_eq!(c.wait_evt().sync_timeout(Duration::from_millis(1)), None);
    /// c.signal();
    /// assert_eq!(c.wait_evt().sync_timeout(Duration::from_secs(60)), Some(()));
    /// ```
    pub fn wait_evt(&self) -> Event<()> {
        self.flag.get_evt()
    }

    /// Whether it has been signalled.
    ///
    /// ```
    /// let c = pcml::CVar::new();
    /// assert!(!c.is_signalled());
    /// c.signal();
    /// assert!(c.is_signalled());
    /// ```
    pub fn is_signalled(&self) -> bool {
        self.flag.try_get().is_some()
    }
}
