//! Branches: the leaves of a flattened event, each a base event with its wrappers composed in
//! (the canonical form of Reppy, Russo and Xiao's Figure 5), behind one object-safe trait.
//!
//! # Invariants
//! - A branch holds the output of a commit made by its own `try_do` or `block` until
//!   `finish` applies the wrappers; wrappers run only in `finish`, after the protocol state
//!   is consistent (so a panicking wrapper leaves no channel locked, no partner half-done).

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

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
    /// A blocking one-branch sync on the base event's direct path (its object's own
    /// `send`/`recv`, see "Direct syncs" in `rep`): `true` once done, the output held for
    /// `finish`; `false`, having done nothing, if the base event has no direct path.
    fn sync_direct(&mut self) -> bool {
        false
    }
    /// An async one-branch sync on the base event's direct path, polled with `cx`: `Ready`
    /// holds the output for `finish`; `Pending` leaves the branch owning a queued offer
    /// (dropping the branch withdraws it); `None`, having done nothing, if the base event has
    /// no direct path.
    fn poll_direct(&mut self, cx: &mut Context<'_>) -> Option<Poll<()>> {
        let _ = cx;
        None
    }
    /// The base event, for a dump (`BaseEvent::describe`).
    fn describe(&self) -> String;
}

/// A base event with a direct path: a one-branch sync of it may skip the protocol (no
/// record, no state CAS), as the object's own blocking operations do.
pub(crate) trait DirectBase: BaseEvent {
    /// Synchronizes this event alone, blocking the calling fiber or OS thread; panics, before
    /// publishing anything, if it would block inside a pcml async task.
    fn sync_direct(&mut self) -> Self::Output;
    /// Synchronizes this event alone from async code. On `Pending` the event owns a queued
    /// offer whose waker is `cx`'s; polling again uses the new context's waker; dropping the
    /// event withdraws the offer, or, if a partner already delivered, drops what it delivered
    /// (the object's `discard`). The direct path never calls `BaseEvent::discard`: the
    /// event's own drop must do what its `discard` does (for a channel, drop the message).
    fn poll_direct(&mut self, cx: &mut Context<'_>) -> Poll<Self::Output>;
}

/// A leaf whose base event has a direct path (no wrapper of its own: `wrap` puts a
/// [`Mapped`] around it).
pub(crate) struct DirectLeaf<E: BaseEvent> {
    pub(crate) leaf: Leaf<E, Identity<E::Output>>,
}

/// The wrapper of a leaf that has none.
pub(crate) type Identity<T> = fn(T) -> T;

impl<E: DirectBase> Branch<E::Output> for DirectLeaf<E> {
    fn poll(&mut self) -> bool {
        self.leaf.poll()
    }
    fn try_do(&mut self) -> bool {
        self.leaf.try_do()
    }
    fn block(&mut self, me: &OwnWaiter<'_>) -> BlockOutcome {
        self.leaf.block(me)
    }
    fn finish(mut self: Box<Self>) -> E::Output {
        // No wrapper: the identity.
        self.leaf.output()
    }
    fn discard(mut self: Box<Self>) {
        let v = self.leaf.output();
        self.leaf.base.discard(v);
    }
    fn cancel(&mut self) {
        self.leaf.cancel()
    }
    fn describe(&self) -> String {
        self.leaf.base.describe()
    }
    fn sync_direct(&mut self) -> bool {
        self.leaf.out = Some(self.leaf.base.sync_direct());
        true
    }
    fn poll_direct(&mut self, cx: &mut Context<'_>) -> Option<Poll<()>> {
        Some(
            self.leaf
                .base
                .poll_direct(cx)
                .map(|v| self.leaf.out = Some(v)),
        )
    }
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
    fn describe(&self) -> String {
        self.base.describe()
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
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn sync_direct(&mut self) -> bool {
        self.inner.sync_direct()
    }
    fn poll_direct(&mut self, cx: &mut Context<'_>) -> Option<Poll<()>> {
        self.inner.poll_direct(cx)
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
    fn describe(&self) -> String {
        self.inner.describe()
    }
}
