//! Synchronous channels (CML's `chan`): a communication object exposing two base events,
//! `send_evt` and `recv_evt`, through the four phases of [`BaseEvent`] (seed 003, section 6.5,
//! Figures 13 and 14).
//!
//! A channel is a spin lock around two waiting queues, one of blocked senders (each offer
//! holding its message) and one of blocked receivers (each offer holding an empty slot for
//! one). The phases:
//! - `poll` reads the other queue's length without locking (advisory);
//! - `do` locks, takes the first live offer of the other queue and tries to win its sync
//!   (Figure 8), spinning on loads while it is `Claimed`;
//! - `block` locks, looks for a live offer of the other queue that is not of its own sync
//!   (section 4), and tries to match it (Figure 9); finding none, it enqueues its own offer;
//! - `cancel` takes back a losing send offer's message.
//!
//! The plain `send` and `recv` run the same phases on the channel directly, without boxing an
//! event, with their event-state record inside their offer: one allocation when they block,
//! none when they commit at once.
//!
//! # Dead offers
//! An offer whose sync completed elsewhere stays queued until someone meets it (and drops it)
//! or a sweep removes it: when a push finds the queue at its threshold, dead offers are removed
//! and the threshold reset to `max(n + K1, K2 * n)` for the `n` offers left, with `K1 = 10`,
//! `K2 = 1.5` (section 8.3). A loop choosing over a busy and an idle channel thus keeps the
//! idle channel's queue below about `K1` dead offers.
//!
//! # Invariants
//! - The queues are touched only under the channel's lock; the lock is never held across a
//!   block, a yield, a wake-up or user code, and no other channel's lock is taken under it.
//! - An offer's slot is written by its owner before it is enqueued, and afterwards only by the
//!   thread that won the offer's sync (a partner, after `TrySynch::Won`/`Match::Won`) or by its
//!   owner once its sync is settled and this offer lost (`cancel`) or won (`complete`).
//! - `senders`/`receivers` equal the queue lengths as of the last update under the lock.

use std::collections::VecDeque;
use std::fmt;

use crate::event::Event;
use crate::event::rep::{BaseEvent, Blocked, Match, OwnWaiter, SelfSynch, SyncRecord};
use crate::event::sync;
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use crate::mp::SpinLock;
use crate::sched::worker;

/// Dead-offer sweep: the threshold's additive term.
const K1: usize = 10;

/// A synchronous channel: a send and a receive meet, and the message passes, in one step.
///
/// Cheap to clone (a reference count); `Send + Sync` when `T: Send`. Usable from fibers, OS
/// threads and (through its events and `.await`) async code.
///
/// # Examples
/// ```
/// use pcml::chan::Chan;
///
/// let ch = Chan::new();
/// let tx = ch.clone();
/// let t = std::thread::spawn(move || tx.send("ping"));
/// assert_eq!(ch.recv(), "ping");
/// t.join().unwrap();
/// ```
pub struct Chan<T> {
    inner: Arc<ChanInner<T>>,
}

struct ChanInner<T> {
    queues: SpinLock<Queues<T>>,
    /// `queues.sendq` length (Relaxed: a hint for the lock-free polling phase only).
    senders: AtomicUsize,
    /// `queues.recvq` length (Relaxed, as `senders`).
    receivers: AtomicUsize,
}

struct Queues<T> {
    sendq: WaitQueue<T>,
    recvq: WaitQueue<T>,
}

/// A queue of offers with the dead-offer sweep of section 8.3.
struct WaitQueue<T> {
    q: VecDeque<Arc<Offer<T>>>,
    /// Sweep when a push finds `q.len()` at this.
    threshold: usize,
}

/// One offer of one sync on this channel.
///
/// A plain `send`/`recv` (one base event, no choice) keeps its event-state record inside its
/// offer (`own`), so blocking costs one allocation; an offer of an `Event` sync points to the
/// sync's shared record instead (`shared`), and `own` is unused.
struct Offer<T> {
    /// The record of a direct send/recv; unused when `shared` is set.
    own: SyncRecord,
    /// The record of the `Event` sync this offer belongs to.
    shared: Option<Arc<SyncRecord>>,
    /// The offer's branch index within its sync.
    branch: u32,
    /// A send offer's message, or a receive offer's delivered message; see the invariants.
    slot: UnsafeCell<Option<T>>,
}

// SAFETY: the slot is reached by one thread at a time (module invariants: its owner before
// publication and after settlement, the winner of its sync in between), and the message is
// `Send`; the records are made of atomics and a lock.
unsafe impl<T: Send> Sync for Offer<T> {}
// SAFETY: as above; all fields may move between threads when `T: Send`.
unsafe impl<T: Send> Send for Offer<T> {}

impl<T> Offer<T> {
    /// An offer of a direct send/recv, with its own record: the calling thread's cached one
    /// if it has one of this type, else a new one.
    fn direct(msg: Option<T>) -> Arc<Self>
    where
        T: Send + 'static,
    {
        if let Some(o) = cache::take::<Offer<T>>() {
            // The cache holds only offers nobody else references (see `cache::put`), and
            // nobody can have cloned it since: its record and slot are ours alone.
            o.own.reset();
            if let Some(m) = msg {
                // SAFETY: we hold the only reference, so we have the right to the slot.
                unsafe { o.put(m) };
            }
            return o;
        }
        Arc::new(Offer {
            own: SyncRecord::new(),
            shared: None,
            branch: 0,
            slot: UnsafeCell::new(msg),
        })
    }

    /// Gives a finished direct offer back to the thread's cache (if nobody else holds it).
    fn recycle(o: Arc<Self>)
    where
        T: Send + 'static,
    {
        cache::put(o);
    }

    /// An offer of branch `me` of an `Event` sync.
    fn of(me: &OwnWaiter<'_>, msg: Option<T>) -> Arc<Self> {
        Arc::new(Offer {
            own: SyncRecord::new(),
            shared: Some(me.rec.clone()),
            branch: me.branch,
            slot: UnsafeCell::new(msg),
        })
    }

    /// The event-state record of the offer's sync.
    fn record(&self) -> &SyncRecord {
        match &self.shared {
            Some(r) => r,
            None => &self.own,
        }
    }

    /// Takes the slot's content.
    ///
    /// # Safety
    /// The caller has the right to the slot (module invariants).
    unsafe fn take(&self) -> Option<T> {
        // SAFETY: the caller has exclusive access to the slot.
        self.slot.with_mut(|p| unsafe { (*p).take() })
    }

    /// Fills the slot.
    ///
    /// # Safety
    /// The caller has the right to the slot (module invariants).
    unsafe fn put(&self, v: T) {
        // SAFETY: the caller has exclusive access to the slot.
        self.slot.with_mut(|p| unsafe { *p = Some(v) });
    }
}

impl<T> WaitQueue<T> {
    fn new() -> Self {
        Self {
            q: VecDeque::new(),
            threshold: K1,
        }
    }

    fn push(&mut self, o: Arc<Offer<T>>) {
        if self.q.len() >= self.threshold {
            self.q.retain(|o| !o.record().is_synched());
            let n = self.q.len();
            self.threshold = (n + K1).max(n + n / 2);
        }
        self.q.push_back(o);
    }

    /// Removes and returns the first live offer not of sync `me` (any live offer for `None`),
    /// with its position; drops dead offers met on the way.
    fn take_match(&mut self, me: Option<&SyncRecord>) -> Option<(usize, Arc<Offer<T>>)> {
        let mut i = 0;
        while i < self.q.len() {
            let o = &self.q[i];
            if o.record().is_synched() {
                self.q.remove(i);
                continue;
            }
            if me.is_some_and(|me| std::ptr::eq(o.record(), me)) {
                i += 1;
                continue;
            }
            let o = if i == 0 {
                self.q.pop_front()
            } else {
                self.q.remove(i)
            };
            return o.map(|o| (i, o));
        }
        None
    }
}

/// A per-thread cache of one finished direct offer, so a thread that blocks in `send`/`recv`
/// over and over reuses one allocation (fibers never migrate, so a fiber's offers come back to
/// its own proc's cache). Off under loom, whose models must not keep state across runs.
mod cache {
    use std::any::TypeId;
    use std::cell::Cell;

    use crate::loom::sync::Arc;

    /// An `Arc<X>` with its type erased.
    struct Cached {
        ty: TypeId,
        ptr: *const (),
        drop_fn: unsafe fn(*const ()),
    }

    impl Drop for Cached {
        fn drop(&mut self) {
            // SAFETY: `ptr` came from `Arc::into_raw` of the type `drop_fn` was made for.
            unsafe { (self.drop_fn)(self.ptr) }
        }
    }

    /// # Safety
    /// `p` comes from `Arc::<X>::into_raw` and is not used again.
    unsafe fn drop_arc<X>(p: *const ()) {
        // SAFETY: per the contract.
        drop(unsafe { Arc::from_raw(p.cast::<X>()) });
    }

    thread_local! {
        static SLOT: Cell<Option<Cached>> = const { Cell::new(None) };
    }

    /// The cached `Arc<X>`, if the cache holds one of that type.
    pub(super) fn take<X: 'static>() -> Option<Arc<X>> {
        if cfg!(pcml_loom) {
            return None;
        }
        let c = SLOT.try_with(|s| s.take()).ok()??;
        if c.ty != TypeId::of::<X>() {
            // Another type: keep it.
            let _ = SLOT.try_with(|s| s.set(Some(c)));
            return None;
        }
        let c = std::mem::ManuallyDrop::new(c);
        // SAFETY: `ty` says `ptr` came from `Arc::<X>::into_raw`; `c` is not dropped.
        Some(unsafe { Arc::from_raw(c.ptr.cast::<X>()) })
    }

    /// Caches `a` if this thread holds the only reference. (The check is a load, not the
    /// compare-and-swap of `Arc::get_mut`: these Arcs never have `Weak`s, so a strong count of
    /// one means nobody else can reach the value.)
    pub(super) fn put<X: Send + Sync + 'static>(a: Arc<X>) {
        if cfg!(pcml_loom) || Arc::strong_count(&a) != 1 {
            return;
        }
        // Acquire: pairs with the Release decrement of the last other holder's drop, so its
        // accesses to the value happen before our reuse of it.
        crate::loom::sync::atomic::fence(crate::loom::sync::atomic::Ordering::Acquire);
        let c = Cached {
            ty: TypeId::of::<X>(),
            ptr: Arc::into_raw(a).cast::<()>(),
            drop_fn: drop_arc::<X>,
        };
        let _ = SLOT.try_with(|s| s.set(Some(c)));
    }
}

/// What a blocking phase on the channel did.
enum BlockOn<R> {
    /// Our offer is enqueued.
    Waiting,
    /// We matched a partner: the result.
    Committed(R),
    /// Our sync was completed elsewhere meanwhile; our offer was not enqueued.
    Synched,
}

impl<T: Send> ChanInner<T> {
    fn update_counts(&self, qs: &Queues<T>) {
        self.senders.store(qs.sendq.q.len(), Ordering::Relaxed);
        self.receivers.store(qs.recvq.q.len(), Ordering::Relaxed);
    }

    /// Polling phase of a send.
    fn poll_send(&self) -> bool {
        self.receivers.load(Ordering::Relaxed) > 0
    }

    /// Polling phase of a receive.
    fn poll_recv(&self) -> bool {
        self.senders.load(Ordering::Relaxed) > 0
    }

    /// Commit phase of a send (Figure 13): give `msg` to a blocked receiver, if any.
    fn do_send(&self, msg: T) -> Result<(), T> {
        let mut qs = self.queues.lock();
        loop {
            let Some((_, o)) = qs.recvq.take_match(None) else {
                self.update_counts(&qs);
                return Err(msg);
            };
            if let Some(commit) = o.record().synch_spinning_as(o.branch) {
                self.update_counts(&qs);
                drop(qs);
                // SAFETY: we won the receiver's sync, so its slot is ours until we publish.
                unsafe { o.put(msg) };
                commit.publish();
                return Ok(());
            }
            // Dead receiver: it is out of the queue; try the next.
        }
    }

    /// Commit phase of a receive: take a blocked sender's message, if any.
    fn do_recv(&self) -> Option<T> {
        let mut qs = self.queues.lock();
        loop {
            let Some((_, o)) = qs.sendq.take_match(None) else {
                self.update_counts(&qs);
                return None;
            };
            if let Some(commit) = o.record().synch_spinning_as(o.branch) {
                self.update_counts(&qs);
                drop(qs);
                // SAFETY: we won the sender's sync, so its slot is ours until we publish.
                let msg = unsafe { o.take() }.expect("pcml: a send offer without a message");
                commit.publish();
                return Some(msg);
            }
        }
    }

    /// Blocking phase of a send (Figure 14): `offer` holds the message and our record.
    fn block_send(&self, offer: &Arc<Offer<T>>) -> BlockOn<()> {
        let me = offer.record();
        let mut qs = self.queues.lock();
        loop {
            let Some((i, o)) = qs.recvq.take_match(Some(me)) else {
                qs.sendq.push(offer.clone());
                self.update_counts(&qs);
                return BlockOn::Waiting;
            };
            match me.try_match(o.record(), o.branch) {
                Match::Won(commit) => {
                    self.update_counts(&qs);
                    drop(qs);
                    // SAFETY: our offer is unpublished, so its slot is ours; we won the
                    // receiver's sync, so its slot is ours until we publish.
                    unsafe { o.put(offer.take().expect("pcml: send offer without message")) };
                    commit.publish();
                    return BlockOn::Committed(());
                }
                // Dead receiver, already out of the queue: look again.
                Match::PartnerGone => continue,
                Match::SelfSynched => {}
            }
            // Someone completed our sync through another offer: put the receiver back where
            // it was (the paper's `undequeue`) and stop.
            qs.recvq.q.insert(i, o);
            self.update_counts(&qs);
            return BlockOn::Synched;
        }
    }

    /// Blocking phase of a receive (Figure 14, mirrored): `offer` has an empty slot.
    fn block_recv(&self, offer: &Arc<Offer<T>>) -> BlockOn<T> {
        let me = offer.record();
        let mut qs = self.queues.lock();
        loop {
            let Some((i, o)) = qs.sendq.take_match(Some(me)) else {
                qs.recvq.push(offer.clone());
                self.update_counts(&qs);
                return BlockOn::Waiting;
            };
            match me.try_match(o.record(), o.branch) {
                Match::Won(commit) => {
                    self.update_counts(&qs);
                    drop(qs);
                    // SAFETY: we won the sender's sync: its slot is ours until we publish.
                    let msg = unsafe { o.take() }.expect("pcml: a send offer without a message");
                    commit.publish();
                    return BlockOn::Committed(msg);
                }
                // Dead sender, already out of the queue: look again.
                Match::PartnerGone => continue,
                Match::SelfSynched => {}
            }
            qs.sendq.q.insert(i, o);
            self.update_counts(&qs);
            return BlockOn::Synched;
        }
    }
}

/// The base event of [`Chan::send_evt`].
struct SendEvt<T> {
    ch: Arc<ChanInner<T>>,
    /// The message until it is offered or delivered.
    msg: Option<T>,
    /// Our published offer, if `block` published one.
    offer: Option<Arc<Offer<T>>>,
}

impl<T: Send + 'static> BaseEvent for SendEvt<T> {
    type Output = ();

    fn poll(&mut self) -> bool {
        self.ch.poll_send()
    }

    fn try_do(&mut self) -> Option<()> {
        let msg = self.msg.take().expect("pcml: send event reused");
        match self.ch.do_send(msg) {
            Ok(()) => Some(()),
            Err(msg) => {
                self.msg = Some(msg);
                None
            }
        }
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<()> {
        let offer = Offer::of(me, self.msg.take());
        match self.ch.block_send(&offer) {
            BlockOn::Waiting => {
                self.offer = Some(offer);
                Blocked::Waiting
            }
            BlockOn::Committed(()) => Blocked::Committed(()),
            BlockOn::Synched => {
                // SAFETY: the offer was never published.
                self.msg = unsafe { offer.take() };
                Blocked::Synched
            }
        }
    }

    fn complete(&mut self) {
        // The receiver took the message out of our offer.
        self.offer = None;
    }

    fn cancel(&mut self) {
        if let Some(o) = self.offer.take() {
            // SAFETY: our sync is settled and this offer lost: no partner touches its slot.
            drop(unsafe { o.take() });
        }
    }
}

/// The base event of [`Chan::recv_evt`].
struct RecvEvt<T> {
    ch: Arc<ChanInner<T>>,
    /// Our published offer, if `block` published one.
    offer: Option<Arc<Offer<T>>>,
}

impl<T: Send + 'static> BaseEvent for RecvEvt<T> {
    type Output = T;

    fn poll(&mut self) -> bool {
        self.ch.poll_recv()
    }

    fn try_do(&mut self) -> Option<T> {
        self.ch.do_recv()
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<T> {
        let offer = Offer::of(me, None);
        match self.ch.block_recv(&offer) {
            BlockOn::Waiting => {
                self.offer = Some(offer);
                Blocked::Waiting
            }
            BlockOn::Committed(v) => Blocked::Committed(v),
            BlockOn::Synched => Blocked::Synched,
        }
    }

    fn complete(&mut self) -> T {
        let o = self
            .offer
            .take()
            .expect("pcml: receive completed without an offer");
        // SAFETY: the sender published after delivering, and we saw the publication.
        unsafe { o.take() }.expect("pcml: receive completed without a message")
    }

    fn cancel(&mut self) {
        // An empty slot: nothing to reclaim; the dead offer is swept.
        self.offer = None;
    }
}

/// A blocked direct send/recv; cancels its offer if the thread unwinds while waiting (a fiber
/// dropped at shutdown).
struct DirectWait<'a, T> {
    offer: &'a Offer<T>,
    armed: bool,
}

impl<T> Drop for DirectWait<'_, T> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        match self.offer.own.synch_self() {
            // Nobody can complete us now; reclaim a send's message.
            SelfSynch::Won => {}
            // A partner won us: wait until it is done with the slot.
            SelfSynch::AlreadySynched => {
                self.offer.own.wait_winner();
            }
        }
        // SAFETY: the sync is settled and any partner is done with the slot.
        drop(unsafe { self.offer.take() });
    }
}

impl<T: Send + 'static> Chan<T> {
    /// Makes a channel.
    ///
    /// ```
    /// let ch: pcml::chan::Chan<u8> = pcml::chan::Chan::new();
    /// assert_eq!(ch.try_recv(), None);
    /// ```
    pub fn new() -> Self {
        Chan {
            inner: Arc::new(ChanInner {
                queues: SpinLock::new(Queues {
                    sendq: WaitQueue::new(),
                    recvq: WaitQueue::new(),
                }),
                senders: AtomicUsize::new(0),
                receivers: AtomicUsize::new(0),
            }),
        }
    }

    /// Sends `msg`, blocking until a receiver takes it.
    ///
    /// # Panics
    /// If it would block inside a pcml async task (use `ch.send_evt(msg).await` there).
    ///
    /// ```
    /// pcml::run(|| {
    ///     let ch = pcml::chan::Chan::new();
    ///     let rx = ch.clone();
    ///     let h = pcml::spawn(move || rx.recv());
    ///     ch.send(5);
    ///     assert_eq!(h.join().unwrap(), 5);
    /// });
    /// ```
    pub fn send(&self, msg: T) {
        let ch = &*self.inner;
        // Polling and commit phases.
        let msg = if ch.poll_send() {
            match ch.do_send(msg) {
                Ok(()) => {
                    worker::consume_budget();
                    return;
                }
                Err(msg) => msg,
            }
        } else {
            msg
        };
        // Blocking phase, with the record inside the offer.
        sync::assert_can_block("send");
        let offer = Offer::direct(Some(msg));
        match ch.block_send(&offer) {
            BlockOn::Committed(()) => {
                Offer::recycle(offer);
                worker::consume_budget();
                return;
            }
            BlockOn::Waiting => {}
            BlockOn::Synched => unreachable!("pcml: a one-offer sync completed elsewhere"),
        }
        let mut wait = DirectWait {
            offer: &offer,
            armed: true,
        };
        sync::wait_for_winner(&offer.own, "send");
        wait.armed = false;
        drop(wait);
        Offer::recycle(offer);
    }

    /// Receives a message, blocking until a sender offers one.
    ///
    /// # Panics
    /// If it would block inside a pcml async task (use `ch.recv_evt().await` there).
    ///
    /// ```
    /// pcml::run(|| {
    ///     let ch = pcml::chan::Chan::new();
    ///     let tx = ch.clone();
    ///     pcml::spawn(move || tx.send("hi"));
    ///     assert_eq!(ch.recv(), "hi");
    /// });
    /// ```
    pub fn recv(&self) -> T {
        let ch = &*self.inner;
        if ch.poll_recv()
            && let Some(v) = ch.do_recv()
        {
            worker::consume_budget();
            return v;
        }
        sync::assert_can_block("recv");
        let offer = Offer::direct(None);
        match ch.block_recv(&offer) {
            BlockOn::Committed(v) => {
                Offer::recycle(offer);
                worker::consume_budget();
                return v;
            }
            BlockOn::Waiting => {}
            BlockOn::Synched => unreachable!("pcml: a one-offer sync completed elsewhere"),
        }
        let mut wait = DirectWait {
            offer: &offer,
            armed: true,
        };
        sync::wait_for_winner(&offer.own, "recv");
        wait.armed = false;
        drop(wait);
        // SAFETY: the sender published after delivering, and we saw the publication.
        let v = unsafe { offer.take() }.expect("pcml: receive completed without a message");
        Offer::recycle(offer);
        v
    }

    /// The event of sending `msg` (CML's `sendEvt`).
    ///
    /// ```
    /// use pcml::event::select;
    /// pcml::run(|| {
    ///     let (a, b) = (pcml::chan::Chan::new(), pcml::chan::Chan::<u8>::new());
    ///     let a2 = a.clone();
    ///     let h = pcml::spawn(move || a2.recv());
    ///     select([a.send_evt(1).wrap(|()| "a"), b.send_evt(2).wrap(|()| "b")]);
    ///     assert_eq!(h.join().unwrap(), 1);
    /// });
    /// ```
    pub fn send_evt(&self, msg: T) -> Event<()> {
        Event::from_base(SendEvt {
            ch: self.inner.clone(),
            msg: Some(msg),
            offer: None,
        })
    }

    /// The event of receiving a message (CML's `recvEvt`).
    ///
    /// ```
    /// pcml::run(|| {
    ///     let ch = pcml::chan::Chan::new();
    ///     let tx = ch.clone();
    ///     pcml::spawn(move || tx.send(2));
    ///     assert_eq!(ch.recv_evt().wrap(|x: i32| x * 2).sync(), 4);
    /// });
    /// ```
    ///
    /// # Cancellation
    /// A receive that loses a choice, or whose `.await` is dropped before a sender reached it,
    /// takes nothing. But if the `.await` is dropped just after a sender handed it a message
    /// (the two syncs met: the sender's send has completed and returned), the message is
    /// dropped with the future. It cannot go back to the sender, which has moved on, and the
    /// channel does not put it back in its queue either: that would turn the rendezvous into a
    /// buffer, and a message could then be received after its sender's later messages on other
    /// channels, breaking the causal order a completed send guarantees. Where a message must
    /// not be lost, receive from a [`Mailbox`](crate::mailbox::Mailbox) or a
    /// [`BoundedChan`](crate::bounded::BoundedChan), which give it back.
    ///
    /// ```
    /// use std::future::{Future, IntoFuture};
    /// use std::task::{Context, Waker};
    ///
    /// let ch = pcml::chan::Chan::new();
    /// let mut recv = Box::pin(ch.recv_evt().into_future());
    /// assert!(recv.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
    /// assert_eq!(ch.try_send(1), Ok(())); // the blocked receive took it: the send is done
    /// drop(recv); // never polled again: the message is dropped with it
    /// assert_eq!(ch.try_recv(), None);
    /// ```
    pub fn recv_evt(&self) -> Event<T> {
        Event::from_base(RecvEvt {
            ch: self.inner.clone(),
            offer: None,
        })
    }

    /// Sends `msg` only if a receiver is blocked on the channel now; gives it back otherwise.
    ///
    /// ```
    /// let ch = pcml::chan::Chan::new();
    /// assert_eq!(ch.try_send(1), Err(1));
    /// ```
    pub fn try_send(&self, msg: T) -> Result<(), T> {
        let r = if self.inner.poll_send() {
            self.inner.do_send(msg)
        } else {
            Err(msg)
        };
        worker::consume_budget();
        r
    }

    /// Receives a message only if a sender is blocked on the channel now.
    ///
    /// ```
    /// let ch: pcml::chan::Chan<i32> = pcml::chan::Chan::new();
    /// assert_eq!(ch.try_recv(), None);
    /// ```
    pub fn try_recv(&self) -> Option<T> {
        let r = if self.inner.poll_recv() {
            self.inner.do_recv()
        } else {
            None
        };
        worker::consume_budget();
        r
    }

    /// The lengths of the waiting queues `(senders, receivers)`, dead offers included: for
    /// tests of the sweep.
    #[doc(hidden)]
    pub fn queue_lens(&self) -> (usize, usize) {
        let qs = self.inner.queues.lock();
        (qs.sendq.q.len(), qs.recvq.q.len())
    }
}

impl<T: Send + 'static> Default for Chan<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for Chan<T> {
    fn clone(&self) -> Self {
        Chan {
            inner: self.inner.clone(),
        }
    }
}

impl<T> PartialEq for Chan<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl<T> Eq for Chan<T> {}

impl<T> fmt::Debug for Chan<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chan")
            .field("senders", &self.inner.senders.load(Ordering::Relaxed))
            .field("receivers", &self.inner.receivers.load(Ordering::Relaxed))
            .finish()
    }
}
