//! First-class synchronous events (Concurrent ML), made parallel with the optimistic protocol
//! of the Parallel CML paper (Reppy, Russo and Xiao 2009, sections 4 to 8).
//!
//! An [`Event<T>`] describes a synchronous operation that yields a `T`: a base event of a
//! communication object (a channel's [`send_evt`](crate::chan::Chan::send_evt) or
//! [`recv_evt`](crate::chan::Chan::recv_evt), [`always`], [`never()`], or your own
//! [`BaseEvent`]; see the [`guide`]), combined with [`choose`], [`Event::wrap`], [`guard`]
//! and [`with_nack`].
//! Nothing happens until the event is synchronized: [`Event::sync`] (or [`sync`], or
//! [`select`] for a choice) blocks the calling fiber or OS thread until one branch happens;
//! `ev.await` does the same in async code, in pcml tasks or any executor; [`Event::poll`]
//! commits only if a branch is enabled now.
//!
//! ```
//! use pcml::chan::Chan;
//! use pcml::event::{select, Event};
//!
//! pcml::run(|| {
//!     let (a, b) = (Chan::new(), Chan::new());
//!     let a2 = a.clone();
//!     pcml::spawn(move || a2.send(1));
//!     let got = select([
//!         a.recv_evt().wrap(|x: i32| format!("a{x}")),
//!         b.recv_evt().wrap(|x: i32| format!("b{x}")),
//!     ]);
//!     assert_eq!(got, "a1");
//! });
//! ```
//!
//! ## Events are values: one-shot `Event`, reusable `SharedEvent`
//! In CML an event is a value that may be synchronized many times, each time a fresh
//! synchronization. pcml has two forms of it:
//! - [`Event<T>`] is the one-shot form, consumed by its sync. It may own what it offers (a
//!   `send_evt` moves its message into the sync, so the message need not be `Clone`), and its
//!   wrappers, guards and `with_nack` functions are `FnOnce` closures that may move what they
//!   capture (a reply channel, a buffer). To sync "the same" one-shot event again, build it
//!   again: construction is cheap (a channel event is a reference count and a box).
//! - [`SharedEvent<T>`] is the reusable form: a cheaply cloned value, usable from many threads,
//!   that builds a fresh `Event` at every sync ([`SharedEvent::sync`], `poll`, `sync_timeout`,
//!   `(&ev).await`). Its wrappers are `Fn`, its guards and `with_nack` functions run again at
//!   each sync with new nacks, and nothing of one sync carries over to the next.
//!
//! ```
//! use pcml::Chan;
//! use pcml::event::SharedEvent;
//!
//! pcml::run(|| {
//!     let ch = Chan::new();
//!     let c = ch.clone();
//!     pcml::spawn(move || (1..=3).for_each(|i| c.send(i)));
//!     // One value, synced three times: three receives.
//!     let doubled = SharedEvent::recv(&ch).wrap(|x: u32| 2 * x);
//!     let got: Vec<u32> = (0..3).map(|_| doubled.sync()).collect();
//!     assert_eq!(got, [2, 4, 6]);
//! });
//! ```
//!
//! ## The protocol
//! See the file `rep.rs` for the event-state variable, its states `Waiting`,
//! `Claimed` and `Synched`, and the transitions of the paper's Figure 7; `sync.rs` for the
//! polling, commit and blocking phases; `chan` for a communication object's four phases.
//! Choice is fair: each enabled branch is equally likely to win (documented in `sync.rs`);
//! [`choose_biased`] prefers earlier branches.
//!
//! ## Time
//! [`Event::sync_timeout`] and [`crate::time::timeout_evt`] bound a sync by a deadline; see
//! [`crate::time`].
//!
//! ## Cancellation
//! A branch that loses a choice takes nothing: its offers are withdrawn, its nacks fire, and
//! whatever it carried (a send's message, a put's value) is dropped. Dropping a pending
//! `ev.await` (a `tokio::select!` that took another branch, a timeout around it), or unwinding
//! a fiber blocked in `sync`, is a loss of every branch.
//!
//! One window remains: a partner may complete the sync just before it is abandoned (it
//! delivered, say, a message into the blocked receive, and the drop came before the future
//! was polled again). The sync then did complete, but nobody will see its value, and the
//! wrappers do not run. The value goes to the winning base event's [`BaseEvent::discard`],
//! and each object decides what that means:
//! - buffered objects give the value back, first in line, as if it had never been taken:
//!   [`Mailbox`](crate::mailbox::Mailbox) and [`Multicast`](crate::multicast::Multicast)
//!   ports, [`BoundedChan`](crate::bounded::BoundedChan), an actor's mailbox and its exit
//!   signals, [`MVar`](crate::sync_var::MVar)'s take and swap (a swap is undone whole while
//!   its value is untaken; see its "Cancellation"), and a listener's accepted connection;
//! - a [`Semaphore`](crate::lock::Semaphore) permit or a [`Mutex`](crate::lock::Mutex) guard
//!   is dropped, which releases it or passes the lock on;
//! - reads that clone ([`IVar`](crate::sync_var::IVar) and `MVar` gets), timeouts, I/O
//!   readiness (which stays set), nacks, [`always`], sends and puts have nothing to give
//!   back; a join event's result is dropped with the join handle the event consumed;
//! - a synchronous [`Chan`](crate::chan::Chan) receive **drops the message**: the sender's
//!   send completed when the two met, so the message cannot go back to it, and queueing it
//!   again would break the rendezvous (see [`Chan::recv_evt`](crate::chan::Chan::recv_evt)).
//!   The same holds for an [`rpc`](crate::rpc) call's answer: [`Reply::send`](crate::rpc::Reply::send)
//!   returned true, but the dropped call never sees the answer.
//!
//! # Invariants
//! - Every sync creates at most one event-state record, only if its commit phase fails, and
//!   the record reaches `Synched` exactly once (see `rep`).
//! - A message moves only from a sync that completes to a sync that completes: an abandoned
//!   sync (a dropped future, an unwinding fiber) moves itself to `Synched` first, so no partner
//!   can take from or give to it afterwards. If a partner completed it first, it did complete:
//!   its value goes to [`BaseEvent::discard`], never silently nowhere (see "Cancellation").
//! - Guard, `with_nack` and wrapper functions never run with a channel locked or a record
//!   `Claimed`; a panic in them propagates to the syncing thread with the protocol settled.

pub mod base;
pub(crate) mod branch;
pub mod guide;
pub(crate) mod inline;
mod join;
pub(crate) mod nack;
pub(crate) mod rep;
mod select_macro;
mod shared;
pub(crate) mod sync;

#[cfg(all(test, pcml_loom))]
pub(crate) mod tests;

use std::fmt;
use std::future::IntoFuture;

use self::branch::{Branch, DirectBase, DirectLeaf, Leaf, Mapped, SharedMap};
use self::inline::{Inline, InlineBase};
use self::sync::Prepared;

pub use self::rep::BaseEvent;
pub(crate) use self::rep::{Blocked, Commit, Match, OwnWaiter, SelfSynch, Waiter};
pub use self::shared::SharedEvent;
pub use self::sync::SyncFuture;

/// A first-class synchronous operation yielding a `T`.
///
/// Build events with the communication objects ([`Chan`](crate::chan::Chan)), [`always`],
/// [`never()`], [`choose`], [`guard`], [`with_nack`] and [`Event::wrap`]; run one with
/// [`Event::sync`], `.await`, or [`Event::poll`]. An event is consumed by its sync; for an
/// event value that may be synced many times, use [`SharedEvent`] (see the module docs).
///
/// # Examples
/// ```
/// use pcml::event::{always, choose, Event};
///
/// let ev: Event<u32> = choose([always(1), always(2)]).wrap(|x| x * 10);
/// let v = ev.sync();
/// assert!(v == 10 || v == 20);
/// ```
#[must_use = "an event does nothing until it is synchronized"]
pub struct Event<T> {
    pub(crate) kind: Kind<T>,
}

pub(crate) enum Kind<T> {
    /// Never enabled.
    Never,
    /// A base event with its wrappers.
    Base(Box<dyn Branch<T>>),
    /// A small base event with a direct path and no wrapper, held without a box (see
    /// `inline`).
    Inline(Inline<T>),
    /// A choice.
    Choose(Vec<Event<T>>),
    /// A choice that tries its branches in order.
    ChooseBiased(Vec<Event<T>>),
    /// Run at sync time to produce the event.
    Guard(Box<dyn FnOnce() -> Event<T> + Send>),
    /// Run at sync time with a fresh nack event.
    WithNack(Box<dyn FnOnce(Event<()>) -> Event<T> + Send>),
    /// A wrapper over a compound event.
    Wrapped(Box<dyn FlattenInto<T>>),
}

/// A compound event under a wrapper: flattened with the wrapper shared by its leaves.
pub(crate) trait FlattenInto<T>: Send {
    fn flatten_into(self: Box<Self>, out: &mut Prepared<T>);
}

struct WrapNode<U, F> {
    inner: Event<U>,
    f: F,
}

impl<U, T, F> FlattenInto<T> for WrapNode<U, F>
where
    U: Send + 'static,
    T: Send + 'static,
    F: FnOnce(U) -> T + Send + 'static,
{
    fn flatten_into(self: Box<Self>, out: &mut Prepared<T>) {
        let WrapNode { inner, f } = *self;
        let mut tmp = Prepared::<U>::new();
        sync::flatten(inner, &mut tmp);
        let base = out.branches.len();
        let f = std::sync::Arc::new(std::sync::Mutex::new(Some(f)));
        for b in tmp.branches.drain(..).flatten() {
            out.branches.push(Some(Box::new(SharedMap {
                inner: b,
                f: f.clone(),
            })));
        }
        for (n, s, e) in tmp.nacks.drain(..) {
            out.nacks.push((n, s + base, e + base));
        }
    }
}

impl<T> fmt::Debug for Event<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let k = match &self.kind {
            Kind::Never => "Never",
            Kind::Base(_) | Kind::Inline(_) => "Base",
            Kind::Choose(_) => "Choose",
            Kind::ChooseBiased(_) => "ChooseBiased",
            Kind::Guard(_) => "Guard",
            Kind::WithNack(_) => "WithNack",
            Kind::Wrapped(_) => "Wrapped",
        };
        f.debug_tuple("Event").field(&k).finish()
    }
}

impl<T: Send + 'static> Event<T> {
    /// Makes an event of a base event: a communication object's offer, through the four
    /// phases of [`BaseEvent`].
    ///
    /// ```
    /// use pcml::event::{Event};
    /// use pcml::event::base::{BaseEvent, Blocked, OwnWaiter};
    ///
    /// /// An event that is always enabled with a fixed value (what `always` does).
    /// struct Ready(Option<u8>);
    /// impl BaseEvent for Ready {
    ///     type Output = u8;
    ///     fn poll(&mut self) -> bool { true }
    ///     fn try_do(&mut self) -> Option<u8> { self.0.take() }
    ///     fn block(&mut self, _: &OwnWaiter<'_>) -> Blocked<u8> { unreachable!() }
    ///     fn complete(&mut self) -> u8 { unreachable!() }
    /// }
    /// assert_eq!(Event::from_base(Ready(Some(3))).sync(), 3);
    /// ```
    pub fn from_base<E: BaseEvent<Output = T>>(base: E) -> Self {
        Event {
            kind: Kind::Base(Box::new(Leaf {
                base,
                out: None,
                f: identity::<T>,
            })),
        }
    }

    /// Makes an event of a base event with a direct path: a one-branch sync of it (with any
    /// wrappers) takes that path; in a choice it is an ordinary base event.
    pub(crate) fn from_direct_base<E: DirectBase<Output = T>>(base: E) -> Self {
        Event {
            kind: Kind::Base(direct_branch(base)),
        }
    }

    /// Makes an event of a small base event with a direct path, held inline (no box) if it
    /// fits: a one-branch sync or `.await` of it is its direct path; a choice, a `wrap` or a
    /// `poll` uses its boxed branch.
    pub(crate) fn from_inline<E: InlineBase<Output = T>>(base: E) -> Self {
        let kind = if inline::fits::<E>() {
            Kind::Inline(Inline::new(base))
        } else {
            Kind::Base(base.into_branch())
        };
        Event { kind }
    }

    /// This event with an inline base event turned into its boxed branch: what every path
    /// but a one-branch sync works with.
    pub(crate) fn boxed(self) -> Self {
        match self.kind {
            Kind::Inline(i) => Event {
                kind: Kind::Base(i.into_branch()),
            },
            kind => Event { kind },
        }
    }

    /// Applies `f` to the result when this event is chosen (CML's `wrap`). `f` runs in the
    /// syncing thread after the synchronization is complete.
    ///
    /// ```
    /// let ev = pcml::event::always(20).wrap(|x| x + 1);
    /// assert_eq!(ev.sync(), 21);
    /// ```
    pub fn wrap<U, F>(self, f: F) -> Event<U>
    where
        U: Send + 'static,
        F: FnOnce(T) -> U + Send + 'static,
    {
        let kind = match self.kind {
            Kind::Never => Kind::Never,
            Kind::Base(b) => Kind::Base(Box::new(Mapped { inner: b, f })),
            Kind::Inline(i) => Kind::Base(Box::new(Mapped {
                inner: i.into_branch(),
                f,
            })),
            kind => Kind::Wrapped(Box::new(WrapNode {
                inner: Event { kind },
                f,
            })),
        };
        Event { kind }
    }

    /// Synchronizes on the event: blocks the calling fiber or OS thread until one of its
    /// branches happens, and returns that branch's (wrapped) result.
    ///
    /// # Panics
    /// If it would block inside a pcml async task (use `.await` there), and if a guard,
    /// `with_nack` or wrapper function panics (after the synchronization is settled).
    ///
    /// ```
    /// assert_eq!(pcml::event::always("hi").sync(), "hi");
    /// ```
    pub fn sync(self) -> T {
        sync::sync(self)
    }

    /// Synchronizes only if a branch is enabled now (CML's poll functions): `Some(result)`
    /// if one committed, `None` (and every branch lost, firing its nacks) otherwise. It never
    /// blocks, and it may be called from async code.
    ///
    /// `None` means that at one instant during the call no branch was enabled, as Go's
    /// `select` with a `default` and crossbeam-channel's `try_select` promise: a message that
    /// moves from one channel of the choice to another, always present in one of them, is
    /// never missed. A choice that finds nothing confirms it by offering every branch and
    /// withdrawing the offers at once, which costs about what a blocking sync's offers cost
    /// (a choice of two idle channels: 2,514 instructions a poll against 1,348 for the same
    /// choice tested branch by branch, `examples/poll_idle` under callgrind); an event of one
    /// branch and a poll that finds a branch enabled pay nothing for it. Timeouts are the
    /// exception: a deadline that passes while the offers are out may be answered `None`.
    ///
    /// ```
    /// use pcml::event::{always, never};
    /// assert_eq!(always(1).poll(), Some(1));
    /// assert_eq!(never::<i32>().poll(), None);
    /// ```
    pub fn poll(self) -> Option<T> {
        sync::poll(self)
    }
}

fn identity<T>(x: T) -> T {
    x
}

/// The boxed branch of a base event with a direct path and no wrapper.
pub(crate) fn direct_branch<E: DirectBase>(base: E) -> Box<dyn Branch<E::Output>> {
    Box::new(DirectLeaf {
        leaf: Leaf {
            base,
            out: None,
            f: identity::<E::Output>,
        },
    })
}

impl<T: Send + 'static> IntoFuture for Event<T> {
    type Output = T;
    type IntoFuture = SyncFuture<T>;

    /// Synchronizes in async code: `ev.await`. Dropping the future before it completes
    /// cancels the sync (every branch loses; nacks fire).
    ///
    /// ```
    /// let fut = async { pcml::event::always(5).await };
    /// assert_eq!(pcml::run(|| pcml::spawn_task(fut).join().unwrap()), 5);
    /// ```
    fn into_future(self) -> SyncFuture<T> {
        SyncFuture::new(self)
    }
}

/// Synchronizes on `ev` (CML's `sync`); the same as [`Event::sync`].
///
/// ```
/// assert_eq!(pcml::event::sync(pcml::event::always(7)), 7);
/// ```
pub fn sync<T: Send + 'static>(ev: Event<T>) -> T {
    ev.sync()
}

/// Synchronizes on a choice of events (CML's `select`, = `sync(choose(evs))`).
///
/// ```
/// use pcml::event::{always, never, select};
/// assert_eq!(select([never(), always(2)]), 2);
/// ```
pub fn select<T: Send + 'static>(evs: impl IntoIterator<Item = Event<T>>) -> T {
    choose(evs).sync()
}

/// An event that is always enabled and yields `v` (CML's `alwaysEvt`).
///
/// ```
/// assert_eq!(pcml::event::always(vec![1]).sync(), vec![1]);
/// ```
pub fn always<T: Send + 'static>(v: T) -> Event<T> {
    Event::from_base(Always(Some(v)))
}

/// An event that is never enabled (CML's `never`): syncing on it alone blocks forever.
///
/// ```
/// use pcml::event::{always, never, select};
/// assert_eq!(select([never(), always(1)]), 1);
/// ```
pub fn never<T>() -> Event<T> {
    Event { kind: Kind::Never }
}

/// The choice of several events (CML's `choose`): when synchronized, exactly one of them
/// happens. Nestable; an empty choice is [`never()`].
///
/// Fair: when several branches are enabled, each is equally likely to happen, whatever its
/// position in the choice and whatever the readiness of the others (nested choices are
/// flattened first, so this holds of the leaves). For a choice that prefers its first
/// branches, see [`choose_biased`].
///
/// ```
/// use pcml::event::{always, choose};
/// let v = choose([always(1), choose([always(2), always(3)])]).sync();
/// assert!((1..=3).contains(&v));
/// ```
pub fn choose<T: Send + 'static>(evs: impl IntoIterator<Item = Event<T>>) -> Event<T> {
    Event {
        kind: Kind::Choose(evs.into_iter().collect()),
    }
}

/// A choice that prefers its earlier branches: when several are enabled, the first of them
/// (in the order given, nested choices flattened in place) happens. When none is enabled it
/// waits for all of them, as [`choose`] does, and the first to become enabled wins.
///
/// Use it for priorities (a shutdown signal before work) as `futures::select_biased!` and
/// tokio's `biased;` are used; the price is that a busy early branch can starve later ones.
/// A biased choice makes the whole sync it belongs to biased: placed inside a [`choose`], it
/// turns the enclosing choice into an ordered one too.
///
/// ```
/// use pcml::event::{always, choose_biased, never};
///
/// for _ in 0..100 {
///     assert_eq!(choose_biased([never(), always(1), always(2)]).sync(), 1);
/// }
/// ```
pub fn choose_biased<T: Send + 'static>(evs: impl IntoIterator<Item = Event<T>>) -> Event<T> {
    Event {
        kind: Kind::ChooseBiased(evs.into_iter().collect()),
    }
}

/// Synchronizes on a biased choice: `choose_biased(evs).sync()`, the ordered sibling of
/// [`select`].
///
/// ```
/// use pcml::event::{always, select_biased};
/// assert_eq!(select_biased([always("first"), always("second")]), "first");
/// ```
pub fn select_biased<T: Send + 'static>(evs: impl IntoIterator<Item = Event<T>>) -> T {
    choose_biased(evs).sync()
}

/// An event computed when it is synchronized (CML's `guard`): `f` runs at sync time, in the
/// syncing thread, and its event is used.
///
/// ```
/// use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
/// use std::sync::Arc;
/// let runs = Arc::new(AtomicU32::new(0));
/// let r = runs.clone();
/// let ev = pcml::event::guard(move || { r.fetch_add(1, Relaxed); pcml::event::always(1) });
/// assert_eq!(runs.load(Relaxed), 0);
/// assert_eq!(ev.sync(), 1);
/// assert_eq!(runs.load(Relaxed), 1);
/// ```
pub fn guard<T, F>(f: F) -> Event<T>
where
    T: Send + 'static,
    F: FnOnce() -> Event<T> + Send + 'static,
{
    Event {
        kind: Kind::Guard(Box::new(f)),
    }
}

/// An event computed at sync time with a negative acknowledgement (CML's `withNack`): `f`
/// receives an `Event<()>` that becomes enabled exactly when the sync does not choose the
/// event `f` returns (another branch wins, or the sync is abandoned).
///
/// ```
/// use pcml::event::{always, never, select, with_nack, Event};
/// use std::sync::{Arc, Mutex};
///
/// let slot: Arc<Mutex<Option<Event<()>>>> = Arc::default();
/// let s = slot.clone();
/// let v = select([
///     with_nack(move |nack| { *s.lock().unwrap() = Some(nack); never() }),
///     always(2),
/// ]);
/// assert_eq!(v, 2);
/// // The never branch lost, so its nack is enabled.
/// let nack = slot.lock().unwrap().take().unwrap();
/// assert_eq!(nack.poll(), Some(()));
/// ```
pub fn with_nack<T, F>(f: F) -> Event<T>
where
    T: Send + 'static,
    F: FnOnce(Event<()>) -> Event<T> + Send + 'static,
{
    Event {
        kind: Kind::WithNack(Box::new(f)),
    }
}

/// The base event of [`always`].
struct Always<T>(Option<T>);

impl<T: Send + 'static> BaseEvent for Always<T> {
    type Output = T;
    fn poll(&mut self) -> bool {
        true
    }
    fn try_do(&mut self) -> Option<T> {
        self.0.take()
    }
    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<T> {
        // Only reached if the commit phase did not get to this branch; complete ourselves.
        match me.synch_self() {
            SelfSynch::Won => Blocked::Committed(self.0.take().expect("pcml: always taken")),
            SelfSynch::AlreadySynched => Blocked::Synched,
        }
    }
    fn complete(&mut self) -> T {
        unreachable!("pcml: an always event never publishes an offer")
    }
}
