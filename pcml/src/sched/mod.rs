//! The scheduler (seeds 003 and 004): runtimes, procs' run queues, work stealing, inboxes,
//! spawning, joining, deadlock detection.
//!
//! A runtime has one worker OS thread per proc (see `worker`). Work reaches a proc three ways:
//! its own deque and held slot (what it spawns, stealable by idle procs; see `held`), the
//! global injector (work from
//! outside the procs), and its inbox (wake-ups of its own fibers, and fibers placed on it with
//! `spawn_on`). A started fiber lives on its home proc for life (see `fiber`); tasks migrate.
//!
//! Deadlock (seed 000's NoRunnableThreads; CML shuts down the same way): when the last proc goes
//! to sleep and main is blocked, every queue is empty and no blocking job, timer or I/O source
//! is pending, and nothing outside the runtime can act (no OS thread but pcml's own and those
//! waiting in `block_on`, no other runtime that is not idle: see `outside`), `block_on` returns
//! [`RuntimeError::Deadlock`] naming how many threads are blocked. [`Builder::detect_deadlock`]
//! says exactly what is and is not detected.
//!
//! # Invariants
//! - See `worker` for the run-queue and sleep invariants, `join` for results, `blocker` for
//!   wake-ups.

pub(crate) mod blocker;
pub(crate) mod blocking;
pub(crate) mod fibers;
pub(crate) mod held;
pub(crate) mod inbox;
pub(crate) mod io;
pub(crate) mod join;
pub(crate) mod outside;
pub(crate) mod panic;
pub(crate) mod registry;
pub(crate) mod runtime;
pub(crate) mod spawn;
pub(crate) mod timer;
pub(crate) mod worker;

#[cfg(all(test, pcml_loom))]
mod tests;

pub use join::{JoinError, JoinHandle, ThreadId};
pub use runtime::{BuildError, Builder, MAX_PROCS, Runtime, RuntimeError, run};
pub use spawn::{
    SpawnError, YieldAsync, current, exit, spawn, spawn_blocking, spawn_on, spawn_task,
    try_current, try_spawn, try_spawn_on, yield_async, yield_now,
};

pub(crate) use runtime::default_procs;
pub(crate) use worker::location;
