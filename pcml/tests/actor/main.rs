//! Actors: spawning, messages, selective receive, links, monitors, supervisors, the registry.
//!
//! One test binary per area (linking is most of a test build); each module is one
//! topic.

mod basic;
mod classics;
mod failure;
mod mailbox;
mod registry;
mod stress;
mod supervisor;
mod untyped;
