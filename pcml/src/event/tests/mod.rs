//! Loom models of the event protocol (Reppy, Russo and Xiao 2009, section 7; run by `.ci/loom`).
//!
//! Each model has two or three threads; every waiter is a loom thread (parking) or a waker
//! (the async model), which exercise the same protocol as fibers.

mod loom_async_drop;
mod loom_both_directions;
mod loom_claimed_pairing;
mod loom_direct;
mod loom_nack;
mod loom_opposite_choices;
mod loom_poll;

/// Runs `f` under loom with the preemption bound from `LOOM_MAX_PREEMPTIONS` and room for the
/// spin-lock and `Claimed` spin loops (each iteration yields, which loom counts as a branch).
pub(crate) fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut b = loom::model::Builder::new();
    b.max_branches = 100_000;
    b.check(f);
}
