//! Branches: the leaves of a flattened event, each a base event with its wrappers composed in
//! (the canonical form of seed 003's Figure 5), behind one object-safe trait.
//!
//! # Invariants
//! - A branch holds the output of a commit made by its own `try_do` or `block` until
//!   `finish` applies the wrappers; wrappers run only in `finish`, after the protocol state
//!   is consistent (so a panicking wrapper leaves no channel locked, no partner half-done).

use std::sync::{Arc, Mutex};

use super::rep::{BaseEvent, Blocked, OwnWaiter};

/// What the blocking phase did with one branch.
#[must_use]
pub(crate) enum BlockOutcome {
    Waiting,
    Committed,
    Synched,
}

/// One leaf of a flattened event, output type erased to `T`.
pub(crate) trait Branch<T>: Send {
    /// Polling phase.
    fn poll(&mut self) -> bool;
    /// Commit phase; on `true` the output is held for `finish`.
    fn try_do(&mut self) -> bool;
    /// Blocking phase; on `Committed` the output is held for `finish`.
    fn block(&mut self, me: &OwnWaiter<'_>) -> BlockOutcome;
    /// This branch won: its held output, or the partner's delivery, through the wrappers.
    fn finish(self: Box<Self>) -> T;
    /// This branch won but the sync was abandoned: take the output and drop it unwrapped.
    fn discard(self: Box<Self>);
    /// This branch lost.
    fn cancel(&mut self);
}

/// A base event and the wrapper composed onto it.
pub(crate) struct Leaf<E: BaseEvent, F> {
    pub(crate) base: E,
    pub(crate) out: Option<E::Output>,
    pub(crate) f: F,
}

impl<E: BaseEvent, F> Leaf<E, F> {
    /// The winning output: held from a commit in `try_do`/`block`, or delivered by a partner.
    fn output(&mut self) -> E::Output {
        match self.out.take() {
            Some(v) => v,
            None => self.base.complete(),
        }
    }
}

impl<E, F, T> Branch<T> for Leaf<E, F>
where
    E: BaseEvent,
    F: FnOnce(E::Output) -> T + Send,
{
    fn poll(&mut self) -> bool {
        self.base.poll()
    }
    fn try_do(&mut self) -> bool {
        match self.base.try_do() {
            Some(v) => {
                self.out = Some(v);
                true
            }
            None => false,
        }
    }
    fn block(&mut self, me: &OwnWaiter<'_>) -> BlockOutcome {
        match self.base.block(me) {
            Blocked::Waiting => BlockOutcome::Waiting,
            Blocked::Committed(v) => {
                self.out = Some(v);
                BlockOutcome::Committed
            }
            Blocked::Synched => BlockOutcome::Synched,
        }
    }
    fn finish(mut self: Box<Self>) -> T {
        let v = self.output();
        (self.f)(v)
    }
    fn discard(mut self: Box<Self>) {
        let v = self.output();
        self.base.discard(v);
    }
    fn cancel(&mut self) {
        self.base.cancel();
    }
}

/// A wrapper around an already erased branch (`wrap` of a wrapped base event).
pub(crate) struct Mapped<U, F> {
    pub(crate) inner: Box<dyn Branch<U>>,
    pub(crate) f: F,
}

impl<U, T, F> Branch<T> for Mapped<U, F>
where
    U: 'static,
    F: FnOnce(U) -> T + Send,
{
    fn poll(&mut self) -> bool {
        self.inner.poll()
    }
    fn try_do(&mut self) -> bool {
        self.inner.try_do()
    }
    fn block(&mut self, me: &OwnWaiter<'_>) -> BlockOutcome {
        self.inner.block(me)
    }
    fn finish(self: Box<Self>) -> T {
        let Mapped { inner, f } = *self;
        f(inner.finish())
    }
    fn discard(self: Box<Self>) {
        self.inner.discard();
    }
    fn cancel(&mut self) {
        self.inner.cancel();
    }
}

/// A wrapper shared by every leaf of a wrapped choice; only the winner's leaf calls it.
pub(crate) struct SharedMap<U, F> {
    pub(crate) inner: Box<dyn Branch<U>>,
    pub(crate) f: Arc<Mutex<Option<F>>>,
}

impl<U, T, F> Branch<T> for SharedMap<U, F>
where
    U: 'static,
    F: FnOnce(U) -> T + Send,
{
    fn poll(&mut self) -> bool {
        self.inner.poll()
    }
    fn try_do(&mut self) -> bool {
        self.inner.try_do()
    }
    fn block(&mut self, me: &OwnWaiter<'_>) -> BlockOutcome {
        self.inner.block(me)
    }
    fn finish(self: Box<Self>) -> T {
        let SharedMap { inner, f } = *self;
        let v = inner.finish();
        let f = f
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .expect("pcml: a wrapper ran twice");
        f(v)
    }
    fn discard(self: Box<Self>) {
        self.inner.discard();
    }
    fn cancel(&mut self) {
        self.inner.cancel();
    }
}
