//! Time: sleeps, timeouts and timers.
//!
//! One test binary per area (linking is most of a test build); each module is one
//! topic.

#[path = "../common/mod.rs"]
mod common;

mod events;
mod sleep;
mod timer_churn;
