//! Loom models of the event protocol (seed 003, section 7; run by `.ci/loom`).
//!
//! Each model has two or three threads; every waiter is a loom thread (parking) or a waker
//! (the async model), which exercise the same protocol as fibers.

mod loom_async_drop;
mod loom_both_directions;
mod loom_claimed_pairing;
mod loom_nack;
mod loom_opposite_choices;
