//! Section 4's deadlock: two threads choose over the same two channels in opposite orders
//! while a sender offers on both. A protocol that locked both channels at once could deadlock;
//! ours locks one at a time, and every message must reach exactly one receiver.

use crate::chan::Chan;
use crate::event::select;

#[test]
fn three_threads_opposite_choices_with_a_racing_sender() {
    super::model(|| {
        let (a, b) = (Chan::new(), Chan::new());
        let (a1, b1) = (a.clone(), b.clone());
        let (a2, b2) = (a.clone(), b.clone());
        let t1 = loom::thread::spawn(move || select([a1.recv_evt(), b1.recv_evt()]));
        let t2 = loom::thread::spawn(move || select([b2.recv_evt(), a2.recv_evt()]));
        a.send(1u8);
        b.send(2u8);
        let mut got = [t1.join().unwrap(), t2.join().unwrap()];
        got.sort();
        assert_eq!(got, [1, 2]);
    });
}

#[test]
fn two_choices_in_opposite_orders() {
    // A receiver chooses (a, b); a sender chooses (b, a): exactly one message passes, and the
    // receiver gets the one the sender says it sent.
    super::model(|| {
        let (a, b) = (Chan::new(), Chan::new());
        let (a1, b1) = (a.clone(), b.clone());
        let t = loom::thread::spawn(move || select([a1.recv_evt(), b1.recv_evt()]));
        let sent = select([b.send_evt(2u8).wrap(|()| 2), a.send_evt(1u8).wrap(|()| 1)]);
        assert_eq!(t.join().unwrap(), sent);
    });
}
