//! Queues of blocked waiters for the communication objects built on the public event API
//! (`sync_var`, `bounded`, `mailbox`, `lock`, `net`, `actor`) and for I/O readiness
//! (`io::readiness`, where a waiter needs no slot): each waiter is its sync's handle plus a
//! one-value slot, queued first come first served, with dead waiters swept as the queue grows.
//!
//! Besides the queue, the steps these objects share: queue an offer ([`Queue::push_offer`]),
//! serve the first live waiter ([`Queue::complete_first`], [`Queue::deliver_first`],
//! [`Queue::take_first`]), match a partner in the blocking phase ([`Queue::match_partner`]),
//! give a discarded message back ([`give_back`]), drop a losing offer ([`drop_offer`]), and
//! take a blocking operation's fast path ([`now_or_sync`]).
//!
//! # Invariants
//! - A slot is written once, by the thread that won its waiter's sync, before it publishes;
//!   the waiter's owner reads it in `complete`.
//! - The slot lock is a leaf: nothing else is locked under it.

use crate::loom::sync::{Arc, Mutex, MutexGuard};
use std::collections::VecDeque;

use crate::event::{Blocked, Commit, Event, Match, OwnWaiter, SelfSynch, Waiter};
use crate::sched::worker;

/// Sweep dead waiters from a queue when a push finds it at least this long (then double it).
pub(crate) const SWEEP_AT: usize = 16;

/// A one-value slot, written by the winner of a waiter's sync and read by its owner.
pub(crate) type Slot<T> = Arc<Mutex<Option<T>>>;

pub(crate) fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    // A panic never happens while a lock is held (no user code runs under it but `Clone`);
    // if it did, the state is still consistent, so ignore poisoning.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A queued waiter: its sync's handle and its slot (a taker's empty slot, a putter's value).
pub(crate) struct Offer<T> {
    pub(crate) w: Waiter,
    pub(crate) slot: Slot<T>,
    /// A swapper's taker offer (`MVar::swap_evt`): its slot holds the value to put back until
    /// a putter exchanges it for the taken one.
    pub(crate) swap: bool,
}

/// Hands `v` to a taker whose sync we won, then publishes. Returns the value a swapper puts
/// back in exchange, which now fills the cell.
pub(crate) fn hand_to_taker<T>(t: &Offer<T>, commit: Commit<'_>, v: T) -> Option<T> {
    let back = {
        let mut slot = lock(&t.slot);
        if t.swap {
            slot.replace(v)
        } else {
            *slot = Some(v);
            None
        }
    };
    commit.publish();
    back
}

/// Something queued for a sync: gives access to the sync's waiter handle.
pub(crate) trait Queued {
    fn waiter(&self) -> &Waiter;
}

impl<T> Queued for Offer<T> {
    fn waiter(&self) -> &Waiter {
        &self.w
    }
}

/// A bare waiter: nothing to deliver but the wake-up (I/O readiness, `io::readiness`).
impl Queued for Waiter {
    fn waiter(&self) -> &Waiter {
        self
    }
}

impl<T, X> Queued for (Offer<T>, X) {
    fn waiter(&self) -> &Waiter {
        &self.0.w
    }
}

/// A queue of plain offers.
pub(crate) type Offers<T> = Queue<Offer<T>>;

/// A FIFO queue of offers (or offers with extras) that drops dead ones when it grows.
pub(crate) struct Queue<I> {
    pub(crate) q: VecDeque<I>,
    sweep_at: usize,
}

impl<I: Queued> Queue<I> {
    pub(crate) fn new() -> Self {
        Self {
            q: VecDeque::new(),
            sweep_at: SWEEP_AT,
        }
    }

    pub(crate) fn push(&mut self, o: I) {
        if self.q.len() >= self.sweep_at {
            self.q.retain(|o| !o.waiter().is_synched());
            self.sweep_at = (self.q.len() * 2).max(SWEEP_AT);
        }
        self.q.push_back(o);
    }

    /// Queues `o` ahead of every other offer (a value given back goes first).
    pub(crate) fn push_front(&mut self, o: I) {
        self.q.push_front(o);
    }

    /// Removes the first live offer that is not of `me`'s sync, with its position.
    pub(crate) fn take_match(&mut self, me: Option<&OwnWaiter<'_>>) -> Option<(usize, I)> {
        let mut i = 0;
        while i < self.q.len() {
            let o = self.q[i].waiter();
            if o.is_synched() {
                self.q.remove(i);
                continue;
            }
            if me.is_some_and(|me| o.same_sync(me)) {
                i += 1;
                continue;
            }
            return self.q.remove(i).map(|o| (i, o));
        }
        None
    }
}

impl<T> Queue<Offer<T>> {
    /// Queues an offer of `me`'s sync whose slot starts out holding `value` (`None` for a
    /// taker, the message for a sender); returns the slot, for the event's `complete` or
    /// `cancel`.
    pub(crate) fn push_offer(&mut self, me: &OwnWaiter<'_>, value: Option<T>) -> Slot<T> {
        let slot = Arc::new(Mutex::new(value));
        self.push(Offer {
            w: me.waiter(),
            slot: slot.clone(),
            swap: false,
        });
        slot
    }

    /// Completes the first live queued offer with `make()`: wins its sync (spinning while its
    /// owner holds it `Claimed`), fills its slot, publishes. Dead offers on the way are
    /// dropped. Returns `false`, without calling `make`, if no live offer is queued.
    pub(crate) fn complete_first(&mut self, make: impl FnOnce() -> T) -> bool {
        while let Some((_, o)) = self.take_match(None) {
            if let Some(commit) = o.w.synch_spinning() {
                *lock(&o.slot) = Some(make());
                commit.publish();
                return true;
            }
            // Dead offer (its sync completed elsewhere): next.
        }
        false
    }

    /// Hands `v` to the first live queued offer (a blocked receiver); gives it back if none
    /// is queued.
    pub(crate) fn deliver_first(&mut self, v: T) -> Result<(), T> {
        let mut v = v;
        while let Some((_, o)) = self.take_match(None) {
            match deliver(&o, v) {
                Ok(()) => return Ok(()),
                // Dead offer (its sync completed elsewhere): next.
                Err(back) => v = back,
            }
        }
        Err(v)
    }

    /// Takes the value the first live queued offer carries (a blocked sender's message),
    /// winning its sync (spinning while its owner holds it `Claimed`), then publishes. Dead
    /// offers on the way are dropped. `None` if no live offer is queued.
    pub(crate) fn take_first(&mut self) -> Option<T> {
        while let Some((_, o)) = self.take_match(None) {
            if let Some(commit) = o.w.synch_spinning() {
                let v = lock(&o.slot).take();
                commit.publish();
                return Some(v.expect("pcml: a blocked sender's offer without its value"));
            }
            // Dead offer: next.
        }
        None
    }
}

/// What [`Queue::match_partner`] found.
#[must_use]
pub(crate) enum Matched<O> {
    /// We won a partner's sync and ours together, and delivered: what the delivery returned.
    Won(O),
    /// Our own sync completed elsewhere meanwhile (the partner stays queued): report `Synched`.
    SelfSynched,
    /// No live partner of another sync is queued: complete our sync alone, or queue.
    NoPartner,
}

impl<I: Queued> Queue<I> {
    /// The blocking phase's match (the paper's Figure 9): takes the first live offer of another
    /// sync and tries to win its sync together with `me`'s. On a win, `deliver` fills the
    /// partner's slot and publishes the `Commit`. Dead partners are dropped on the way; a
    /// partner found while our own sync completed elsewhere goes back where it was.
    pub(crate) fn match_partner<O>(
        &mut self,
        me: &OwnWaiter<'_>,
        deliver: impl FnOnce(&I, Commit<'_>) -> O,
    ) -> Matched<O> {
        while let Some((i, o)) = self.take_match(Some(me)) {
            match me.try_match(o.waiter()) {
                Match::Won(commit) => return Matched::Won(deliver(&o, commit)),
                // Dead partner, out of the queue: look again.
                Match::PartnerGone => continue,
                // Our sync completed elsewhere: put the partner back (below) and stop.
                Match::SelfSynched => {}
            }
            self.q.insert(i, o);
            return Matched::SelfSynched;
        }
        Matched::NoPartner
    }
}

/// A buffered object's `discard`: a receive whose `.await` was dropped after a message was
/// handed to it gives it back. It was the oldest, so it goes to the front of `buf`, or, if the
/// buffer is empty, to the first live blocked receiver, else into the buffer.
pub(crate) fn give_back<T>(buf: &mut VecDeque<T>, receivers: &mut Offers<T>, v: T) {
    if !buf.is_empty() {
        buf.push_front(v);
    } else if let Err(v) = receivers.deliver_first(v) {
        buf.push_back(v);
    }
}

/// A losing offer's `cancel`: our sync is settled and this offer lost, so nobody else touches
/// its slot now; drops what it still holds (a sender's message).
pub(crate) fn drop_offer<T>(slot: &mut Option<Slot<T>>) {
    if let Some(slot) = slot.take() {
        lock(&slot).take();
    }
}

/// Completes a blocked sync's offer with `v`: wins its sync (spinning while its owner holds it
/// `Claimed`), delivers, publishes. Gives `v` back if the offer is dead.
pub(crate) fn deliver<T>(o: &Offer<T>, v: T) -> Result<(), T> {
    match o.w.synch_spinning() {
        Some(commit) => {
            *lock(&o.slot) = Some(v);
            commit.publish();
            Ok(())
        }
        None => Err(v),
    }
}

/// Reads what a partner delivered into our slot.
pub(crate) fn delivered<T>(slot: &Slot<T>) -> T {
    lock(slot)
        .take()
        .expect("pcml: a completed sync-variable offer without its value")
}

/// A blocking operation's fast path: `now`, what it got without an event (one lock), counted
/// against the fiber's budget like a sync that commits at once; else `evt()` synced.
pub(crate) fn now_or_sync<T: Send + 'static>(now: Option<T>, evt: impl FnOnce() -> Event<T>) -> T {
    match now {
        Some(v) => {
            worker::consume_budget();
            v
        }
        None => evt().sync(),
    }
}

/// Completes a sync in its blocking phase with no partner (the cell allows it).
pub(crate) fn complete_self<O>(me: &OwnWaiter<'_>, f: impl FnOnce() -> O) -> Blocked<O> {
    match me.synch_self() {
        SelfSynch::Won => Blocked::Committed(f()),
        SelfSynch::AlreadySynched => Blocked::Synched,
    }
}
