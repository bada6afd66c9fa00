//! An async sync dropped while a partner commits: either the drop cancels first (the partner
//! finds no receiver and keeps its message) or the partner commits first (the sync completed;
//! the message is dropped with the future). Never both, never neither: the message is dropped
//! exactly once, and never taken by a sync that then does not complete.
//!
//! Two models: a one-branch `.await` (the direct path: its offer owned by the future,
//! withdrawn when dropped) and the same receive as a choice of one (the full protocol: a
//! record, cancellation by `synch_self`, `BaseEvent::discard`).

use std::future::{Future, IntoFuture};
use std::task::{Context, Waker};

use crate::chan::Chan;
use crate::event::{Event, choose};
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::{AtomicUsize, Ordering};

struct Tracked(Arc<AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn dropped_future_races_a_committing_sender() {
    dropped_future_races(|ch| ch.recv_evt());
}

#[test]
fn dropped_choice_future_races_a_committing_sender() {
    dropped_future_races(|ch| choose([ch.recv_evt()]));
}

fn dropped_future_races(recv: fn(&Chan<Tracked>) -> Event<Tracked>) {
    super::model(move || {
        let ch: Chan<Tracked> = Chan::new();
        let drops = Arc::new(AtomicUsize::new(0));
        let mut fut = Box::pin(recv(&ch).into_future());
        let mut cx = Context::from_waker(Waker::noop());
        assert!(fut.as_mut().poll(&mut cx).is_pending());
        let tx = ch.clone();
        let d = drops.clone();
        let t = loom::thread::spawn(move || tx.try_send(Tracked(d)).is_ok());
        drop(fut);
        let sent = t.join().unwrap();
        assert_eq!(drops.load(Ordering::SeqCst), 1, "sent = {sent}");
        // Whatever happened, no live receiver is left behind.
        let d = drops.clone();
        assert!(ch.try_send(Tracked(d)).is_err());
        assert_eq!(drops.load(Ordering::SeqCst), 2);
    });
}
