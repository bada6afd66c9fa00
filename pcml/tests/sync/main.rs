//! Synchronization objects: mutex, semaphore, barrier, IVar, MVar, CVar.
//!
//! One test binary per area (linking is most of a test build); each module is one
//! topic.

#[path = "../common/mod.rs"]
mod common;

mod across_procs;
mod lock_barrier;
mod lock_mutex;
mod lock_semaphore;
mod sync_var_choice_stress;
mod sync_var_cvar;
mod sync_var_ivar;
mod sync_var_mvar;
