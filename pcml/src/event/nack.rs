//! Negative acknowledgements: a one-shot condition variable (Reppy, Russo and Xiao's `cvar`, Figure 15)
//! whose event becomes enabled when the branch of `with_nack` that created it loses.
//!
//! Following Fluet's scheme (section 4), the bookkeeping lives outside the commit protocol:
//! `with_nack` creates a `Nack` when the sync flattens the event, and the sync fires every
//! nack whose branches did not win once the winner is known (or all of them, if the sync is
//! abandoned: a dropped future, a panicking guard).
//!
//! # Invariants
//! - `fired` goes `false -> true` once, under the lock; waiters are pushed only under the lock
//!   while `fired` is false, and drained by the firing thread, so none is missed.

use crate::loom::sync::Arc;
use crate::loom::sync::atomic::{AtomicBool, Ordering};
use crate::mp::SpinLock;

use super::rep::{BaseEvent, Blocked, OwnWaiter, SelfSynch, Waiter};

/// A one-shot condition: set once, waited on by events.
pub(crate) struct Nack {
    /// Set (Release, under `waiters`' lock) by `fire`; read lock-free (Acquire) by `poll`.
    fired: AtomicBool,
    /// Syncs blocked on the nack; pushed by `block`, drained by `fire`, under the lock.
    waiters: SpinLock<Vec<Waiter>>,
}

impl Nack {
    pub(crate) fn new() -> Self {
        Self {
            fired: AtomicBool::new(false),
            waiters: SpinLock::new(Vec::new()),
        }
    }

    /// Whether the nack has fired.
    pub(crate) fn is_fired(&self) -> bool {
        // Acquire: pairs with the Release store in `fire`.
        self.fired.load(Ordering::Acquire)
    }

    /// Fires the nack: enables its event for good and completes every blocked waiter.
    pub(crate) fn fire(&self) {
        let waiters = {
            let mut w = self.waiters.lock();
            if self.fired.load(Ordering::Relaxed) {
                return;
            }
            // Release: pairs with the Acquire load in `is_fired`.
            self.fired.store(true, Ordering::Release);
            std::mem::take(&mut *w)
        };
        for w in waiters {
            // Nothing of ours is claimed, so spinning on a claimed waiter cannot deadlock.
            if let Some(commit) = w.synch_spinning() {
                commit.publish();
            }
        }
    }
}

/// The base event of a nack: enabled once the nack fires.
pub(crate) struct NackEvt(pub(crate) Arc<Nack>);

impl BaseEvent for NackEvt {
    type Output = ();

    fn poll(&mut self) -> bool {
        self.0.is_fired()
    }

    fn try_do(&mut self) -> Option<()> {
        self.0.is_fired().then_some(())
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<()> {
        let mut w = self.0.waiters.lock();
        if !self.0.fired.load(Ordering::Relaxed) {
            if w.len() >= 8 {
                // Sweep syncs that completed elsewhere.
                w.retain(|x| !x.is_synched());
            }
            w.push(me.waiter());
            return Blocked::Waiting;
        }
        drop(w);
        // Fired since we polled: complete our own sync, if nobody beat us to it.
        match me.synch_self() {
            SelfSynch::Won => Blocked::Committed(()),
            SelfSynch::AlreadySynched => Blocked::Synched,
        }
    }

    fn complete(&mut self) {}
}
