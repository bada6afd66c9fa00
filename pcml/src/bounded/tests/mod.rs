//! Loom models of the bounded channel's protocol (run by `.ci/loom`).
//!
//! Two threads, one of them blocking (a loom thread parks, as an OS-thread waiter does), so a
//! lost wake-up shows as a deadlock and a lost, duplicated or reordered message as a failed
//! assertion, in every interleaving up to the preemption bound.

use crate::bounded::BoundedChan;
use crate::event::select;
use crate::event::tests::model;
use crate::mailbox::Mailbox;

/// A sender sends two messages into a buffer of one (the second blocks until the first is
/// taken, then moves into the buffer): the receiver gets both, in order.
#[test]
fn loom_bounded_send_blocks_while_full() {
    model(|| {
        let ch = BoundedChan::new(1);
        let tx = ch.clone();
        let t = loom::thread::spawn(move || {
            tx.send(1u8);
            tx.send(2);
        });
        let a = ch.recv();
        let b = ch.recv();
        t.join().unwrap();
        assert_eq!((a, b), (1, 2));
        assert_eq!(ch.try_recv(), None);
    });
}

/// A send into a full channel chooses against a mailbox receive while the main thread makes
/// room and sends to the mailbox: exactly one branch happens, and the losing send's message
/// never enters the buffer.
#[test]
fn loom_bounded_send_in_a_choice_never_enqueues_when_it_loses() {
    model(|| {
        let ch = BoundedChan::new(1);
        ch.send(0u8);
        let mb = Mailbox::new();
        let (tx, rx) = (ch.clone(), mb.clone());
        let t = loom::thread::spawn(move || {
            select([tx.send_evt(1).wrap(|()| None), rx.recv_evt().wrap(Some)])
        });
        assert_eq!(ch.recv(), 0);
        mb.send(9u8);
        match t.join().unwrap() {
            None => {
                assert_eq!(ch.try_recv(), Some(1));
                assert_eq!(mb.try_recv(), Some(9));
            }
            Some(9) => assert_eq!(ch.try_recv(), None),
            Some(other) => panic!("received {other}, which nobody sent"),
        }
    });
}
