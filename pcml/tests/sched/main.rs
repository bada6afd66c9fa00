//! The scheduler: spawning and joining, stacks, stealing, held fibers, panics, task order and
//! wakers, procs.
//!
//! One test binary per area (linking is most of a test build); each module is one
//! topic.

#[path = "../common/mod.rs"]
mod common;

mod across_procs;
mod carrier;
mod crowded;
mod held;
mod join_evt;
mod metrics;
mod mp_procs;
mod panic;
mod shutdown;
mod spawn;
mod stack;
mod steal;
mod task_abort;
mod task_order;
mod task_waker;
