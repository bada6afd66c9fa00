//! Events: the combinators, choice, sync and poll, shared events, user-defined base events, the runtime under events, stress.
//!
//! One test binary per area (linking is most of a test build); each module is one
//! topic.

mod across_procs;
mod basic;
mod classics;
#[path = "../common/mod.rs"]
mod common;
mod custom;
mod runtime;
mod shared;
mod stress;
