//! Loom models of the scheduler's hand-offs (run by `.ci/loom`).

mod loom_held;
mod loom_inbox;
