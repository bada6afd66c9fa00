//! Direct syncs (`Chan::send`/`Chan::recv`: one offer, no state CAS, blocker installed before
//! the offer is queued) against each other and against choices: every message is delivered
//! exactly once, to a thread that then wakes with it. Also the async direct path (a
//! one-branch channel event's `.await`, its offer owned by the future): a new waker at each
//! poll, and a pending send dropped while a receiver takes it.

use std::future::{Future, IntoFuture};
use std::task::{Context, Poll, Waker};

use crate::chan::Chan;
use crate::event::select;
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::{AtomicUsize, Ordering};

/// A round trip between two direct syncs on each side: both block and both commit, in every
/// interleaving of queueing, taking, delivering and waking.
#[test]
fn direct_round_trip() {
    super::model(|| {
        let (ping, pong) = (Chan::new(), Chan::new());
        let (p2, q2) = (ping.clone(), pong.clone());
        let t = loom::thread::spawn(move || {
            let v: u8 = p2.recv();
            q2.send(v + 1);
        });
        ping.send(1u8);
        assert_eq!(pong.recv(), 2);
        t.join().unwrap();
    });
}

/// A direct receive meets a choice whose other branch never fires: the choice either commits
/// to the queued direct offer (its commit or blocking phase) or is committed to by it.
#[test]
fn direct_recv_meets_a_choosing_sender() {
    super::model(|| {
        let (a, b) = (Chan::new(), Chan::<u8>::new());
        let (a2, b2) = (a.clone(), b.clone());
        let t = loom::thread::spawn(move || {
            select([a2.send_evt(1u8).wrap(|()| 'a'), b2.recv_evt().wrap(|_| 'b')])
        });
        assert_eq!(a.recv(), 1);
        assert_eq!(t.join().unwrap(), 'a');
        // The losing receive offer is dead: a direct send finds no receiver.
        assert!(b.try_send(9).is_err());
    });
}

/// A direct send against a choice of two receives: the choice takes the message through one
/// of its phases, and its other receive offer is dead afterwards.
#[test]
fn direct_send_meets_a_choosing_receiver() {
    super::model(|| {
        let (a, b) = (Chan::new(), Chan::new());
        let (a2, b2) = (a.clone(), b.clone());
        let t = loom::thread::spawn(move || select([a2.recv_evt(), b2.recv_evt()]));
        a.send(1u8);
        let got = t.join().unwrap();
        assert_eq!(got, 1);
        assert_eq!(b.try_recv(), None);
    });
}

/// Wakes a parked loom thread.
struct Unpark(loom::thread::Thread);

impl std::task::Wake for Unpark {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `fut` until it is ready, as an executor that moves the task would: the first poll
/// with a waker that wakes nobody, every later one with a new waker that unparks this
/// thread, parking in between. So the task is woken only if a poll's new waker replaced the
/// one the offer was queued with (else the model deadlocks); a later poll either replaces
/// the queued offer's waker or finds the partner done (or about to be).
fn poll_until_ready<F: Future + Unpin>(mut fut: F) -> F::Output {
    if let Poll::Ready(v) =
        std::pin::Pin::new(&mut fut).poll(&mut Context::from_waker(Waker::noop()))
    {
        return v;
    }
    loop {
        let waker = Waker::from(std::sync::Arc::new(Unpark(loom::thread::current())));
        if let Poll::Ready(v) = std::pin::Pin::new(&mut fut).poll(&mut Context::from_waker(&waker))
        {
            return v;
        }
        loom::thread::park();
    }
}

/// An async direct send and an async direct receive, each polled with new wakers, against
/// blocking direct syncs on another thread: a round trip.
#[test]
fn async_direct_round_trip_with_new_wakers() {
    super::model(|| {
        let (ping, pong) = (Chan::new(), Chan::new());
        let (p2, q2) = (ping.clone(), pong.clone());
        let t = loom::thread::spawn(move || {
            let v: u8 = p2.recv();
            q2.send(v + 1);
        });
        poll_until_ready(Box::pin(ping.send_evt(1u8).into_future()));
        assert_eq!(poll_until_ready(Box::pin(pong.recv_evt().into_future())), 2);
        t.join().unwrap();
    });
}

/// The same round trip over `Chan::send_async`/`Chan::recv_async` (the same hand-off, with
/// futures that borrow the channel).
#[test]
fn send_async_recv_async_round_trip_with_new_wakers() {
    super::model(|| {
        let (ping, pong) = (Chan::new(), Chan::new());
        let (p2, q2) = (ping.clone(), pong.clone());
        let t = loom::thread::spawn(move || {
            let v: u8 = p2.recv();
            q2.send(v + 1);
        });
        poll_until_ready(Box::pin(ping.send_async(1u8)));
        assert_eq!(poll_until_ready(Box::pin(pong.recv_async())), 2);
        t.join().unwrap();
    });
}

struct Tracked(Arc<AtomicUsize>);

impl Drop for Tracked {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A pending async direct send dropped while a receiver takes its message: either the drop
/// withdraws the offer first (the receiver finds nothing; the message is dropped with the
/// future) or the receiver takes it (the send completed). The message is dropped exactly
/// once, and no offer is left queued.
#[test]
fn async_direct_send_dropped_while_a_receiver_takes() {
    super::model(|| {
        let ch: Chan<Tracked> = Chan::new();
        let drops = Arc::new(AtomicUsize::new(0));
        let mut fut = Box::pin(ch.send_evt(Tracked(drops.clone())).into_future());
        assert!(
            fut.as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_pending()
        );
        let rx = ch.clone();
        let t = loom::thread::spawn(move || rx.try_recv().is_some());
        drop(fut);
        let got = t.join().unwrap();
        assert_eq!(drops.load(Ordering::SeqCst), 1, "got = {got}");
        assert_eq!(ch.queue_lens(), (0, 0));
    });
}
