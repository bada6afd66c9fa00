//! Procs: the multiprocessor layer (Morrisett and Tolmach 1992, sections 4 and 5).
//!
//! ```
//! use pcml::ProcLocal;
//!
//! let rt = pcml::Runtime::builder().procs(2).build().unwrap();
//! rt.block_on(|| {
//!     assert_eq!(pcml::procs(), 2);
//!     assert!(pcml::current_proc().is_some_and(|p| p < 2));
//!     // One counter per proc, no sharing between them.
//!     let hits = ProcLocal::new(|_proc| 0u64);
//!     hits.set(hits.get() + 1);
//!     assert_eq!(hits.get(), 1);
//! })
//! .unwrap();
//! ```
//!
//! A *proc* is one scheduler of a runtime, run by a worker OS thread; a runtime has `procs()`
//! of them, by default `std::thread::available_parallelism()`. A runtime with more procs
//! than the process can run at once runs several procs on each of its OS threads, in turn
//! (see [`Builder::carrier_threads`](crate::Builder::carrier_threads)). Each proc runs pcml threads one at a time, with no
//! preemption. The layer offers what Morrisett and Tolmach's MP interface offers: the number of procs, the
//! identity of the current proc, a per-proc datum ([`ProcLocal`]) and spin locks
//! ([`SpinLock`]). Acquiring and releasing procs is automatic: an idle proc spins briefly,
//! then parks, and is unparked when work arrives for it (see `sched`).
//!
//! Differences from Morrisett and Tolmach 1992: procs are not acquired by user code; the datum is typed and may be
//! any `T`, one value per proc.
//!
//! # Invariants
//! - `current_proc()` is `Some(i)` exactly while the worker thread of proc `i` runs a turn
//!   of proc `i`, whichever pcml thread runs there.

mod parker;
mod proc_local;
mod refs;
mod spin;

pub(crate) use parker::Parker;
pub use proc_local::ProcLocal;
pub(crate) use refs::{Counted, Counts, RefCount};
pub use spin::{SpinLock, SpinLockGuard};

/// The number of procs of the current runtime; outside a runtime, the number a default runtime
/// would have (`PCML_PROCS` if set, else `std::thread::available_parallelism()`).
///
/// ```
/// let n = pcml::run(pcml::procs);
/// assert!(n >= 1);
/// ```
pub fn procs() -> usize {
    match crate::sched::location() {
        Some((_, _, procs)) => procs,
        None => crate::sched::default_procs(),
    }
}

/// The index of the proc running the caller, or `None` outside a runtime's procs.
///
/// ```
/// assert_eq!(pcml::current_proc(), None);
/// assert_eq!(pcml::run(pcml::current_proc), Some(0));
/// ```
pub fn current_proc() -> Option<usize> {
    crate::sched::location().map(|(_, proc, _)| proc)
}
