//! Every live runtime by id, so a thread outside a runtime (an OS thread, a timer or I/O
//! thread, another runtime's proc) can reach it to wake one of its fibers.
//!
//! A fiber's `Blocker` names its runtime by id instead of holding a reference count on it:
//! blocking and waking from the runtime's own procs (nearly every wake-up) then costs no
//! atomic read-modify-write on the runtime's shared state; only a wake-up from outside looks
//! the runtime up here.
//!
//! # Invariants
//! - An entry is added when a runtime is built and removed when its shared state is dropped;
//!   entries hold `Weak`s, so the registry never keeps a runtime alive.
//! - Runtime ids are never reused, so a stale id finds nothing.

use std::sync::{Arc, PoisonError, RwLock, Weak};

use crate::sched::worker::Shared;

static RUNTIMES: RwLock<Vec<(u64, Weak<Shared>)>> = RwLock::new(Vec::new());

/// Records a new runtime.
pub(crate) fn register(shared: &Arc<Shared>) {
    let mut all = RUNTIMES.write().unwrap_or_else(PoisonError::into_inner);
    all.push((shared.id, Arc::downgrade(shared)));
}

/// Forgets a runtime whose shared state is being dropped.
pub(crate) fn unregister(id: u64) {
    let mut all = RUNTIMES.write().unwrap_or_else(PoisonError::into_inner);
    all.retain(|(i, _)| *i != id);
}

/// The runtime with this id, if it is still alive.
pub(crate) fn lookup(id: u64) -> Option<Arc<Shared>> {
    let all = RUNTIMES.read().unwrap_or_else(PoisonError::into_inner);
    all.iter()
        .find(|(i, _)| *i == id)
        .and_then(|(_, w)| w.upgrade())
}

/// Every live runtime (for deadlock detection across runtimes).
pub(crate) fn all() -> Vec<Arc<Shared>> {
    let all = RUNTIMES.read().unwrap_or_else(PoisonError::into_inner);
    all.iter().filter_map(|(_, w)| w.upgrade()).collect()
}
