//! Direct syncs (`Chan::send`/`Chan::recv`: one offer, no state CAS, blocker installed before
//! the offer is queued) against each other and against choices: every message is delivered
//! exactly once, to a thread that then wakes with it.

use crate::chan::Chan;
use crate::event::select;

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
