//! The parker an idle proc sleeps on (Morrisett and Tolmach's release of a proc, done automatically).
//!
//! A token protocol: `unpark` leaves a token that the next `park` consumes, so a wake-up that
//! arrives before the proc parks is never lost. The loom model in `sched/tests/loom_inbox.rs`
//! checks this hand-off together with the inbox.
//!
//! # Invariants
//! - `state` is `EMPTY`, `PARKED` (the owner sleeps or is about to, holding or waiting on
//!   `lock`) or `NOTIFIED` (a token is waiting).
//! - Only the owning proc calls `park`; anyone may call `unpark`.

use std::time::Duration;

use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use crate::loom::sync::{Condvar, Mutex};

const EMPTY: usize = 0;
const PARKED: usize = 1;
const NOTIFIED: usize = 2;

#[derive(Debug)]
pub(crate) struct Parker {
    /// Written by `park` (owner) and `unpark` (anyone).
    state: AtomicUsize,
    /// Held while the owner moves to `PARKED` and while an unparker notifies, so the notify
    /// cannot fall between the owner's check and its wait.
    lock: Mutex<()>,
    cvar: Condvar,
}

impl Parker {
    pub(crate) fn new() -> Self {
        Self {
            state: AtomicUsize::new(EMPTY),
            lock: Mutex::new(()),
            cvar: Condvar::new(),
        }
    }

    /// Sleeps until a token is available (consuming it), or until `timeout` passes if given.
    /// Returns whether a token ended the wait (`false`: the timeout passed).
    pub(crate) fn park(&self, timeout: Option<Duration>) -> bool {
        // Acquire: pairs with the Release swap in `unpark`, so what the unparker published
        // before unparking (an inbox push) is visible once we consume its token.
        if self
            .state
            .compare_exchange(NOTIFIED, EMPTY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return true;
        }
        let mut guard = self.lock.lock().unwrap();
        match self
            .state
            .compare_exchange(EMPTY, PARKED, Ordering::Relaxed, Ordering::Relaxed)
        {
            // Now parked; `unpark` will take the lock before notifying.
            Ok(_) => {}
            // A token arrived between the fast path and the lock: consume it and return.
            Err(_) => {
                // Acquire: as above.
                self.state.swap(EMPTY, Ordering::Acquire);
                return true;
            }
        }
        loop {
            guard = match timeout {
                None => self.cvar.wait(guard).unwrap(),
                #[cfg(not(pcml_loom))]
                Some(t) => self.cvar.wait_timeout(guard, t).unwrap().0,
                #[cfg(pcml_loom)]
                Some(_) => self.cvar.wait(guard).unwrap(),
            };
            // Acquire: pairs with the Release swap in `unpark`.
            if self
                .state
                .compare_exchange(NOTIFIED, EMPTY, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return true;
            }
            if timeout.is_some() {
                // Timed out (or a spurious wake-up, which is harmless for a timed park): stop
                // being parked. A token that races in is kept for the next park.
                let _ = self.state.compare_exchange(
                    PARKED,
                    EMPTY,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                );
                drop(guard);
                return false;
            }
            // Spurious wake-up: still PARKED, wait again.
        }
    }

    /// Consumes a waiting token without sleeping; returns whether there was one. For an owner
    /// that sleeps elsewhere (a proc blocked in the I/O poller, `sched::io`) and checks for a
    /// token before and after.
    pub(crate) fn take_token(&self) -> bool {
        // Acquire: pairs with the Release swap in `unpark`, as in `park`.
        self.state
            .compare_exchange(NOTIFIED, EMPTY, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Leaves a token and wakes the owner if it sleeps.
    pub(crate) fn unpark(&self) {
        // Release: pairs with the Acquire in `park`.
        match self.state.swap(NOTIFIED, Ordering::Release) {
            // Nobody sleeping, or a token already waiting: the owner will see it.
            EMPTY | NOTIFIED => {}
            // The owner is parked: take the lock so our notify cannot slip in before its wait.
            _parked => {
                drop(self.lock.lock().unwrap());
                self.cvar.notify_one();
            }
        }
    }
}

#[cfg(all(test, not(pcml_loom)))]
mod tests {
    use super::Parker;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    #[test]
    fn a_token_left_before_park_is_consumed() {
        let p = Parker::new();
        p.unpark();
        p.park(None);
        // The token is gone: a timed park now times out.
        p.park(Some(Duration::from_millis(1)));
    }

    #[test]
    fn unpark_from_another_thread_wakes_the_sleeper() {
        let p = Arc::new(Parker::new());
        let flag = Arc::new(AtomicBool::new(false));
        let (q, f) = (p.clone(), flag.clone());
        let t = std::thread::spawn(move || {
            f.store(true, Ordering::Release);
            q.unpark();
        });
        while !flag.load(Ordering::Acquire) {
            p.park(None);
        }
        t.join().unwrap();
    }
}
