//! Loom models of the actor mailbox's hand-offs (run by `.ci/loom`).
//!
//! The receiving side is a loom thread using a `Ctx::new` context, so a blocked receive parks
//! as an OS-thread waiter does: a lost wake-up shows as a deadlock, a lost or duplicated
//! message as a failed assertion, in every interleaving up to the preemption bound.

use crate::actor::{Ctx, Signal};
use crate::event::select;
use crate::event::tests::model;
use crate::mailbox::Mailbox;

/// Two sends race a selective receive that wants the second message, then a plain receive:
/// the selective receive parks (or not) and resumes its scan without losing the first one.
#[test]
fn loom_send_races_selective_receive() {
    model(|| {
        let mut me = Ctx::<u8>::new();
        let pid = me.pid();
        let t = loom::thread::spawn(move || {
            pid.send(1).unwrap();
            pid.send(2).unwrap();
        });
        assert_eq!(me.receive_match(|m| *m == 2), 2);
        assert_eq!(me.receive(), 1);
        t.join().unwrap();
    });
}

/// A choice between the mailbox's receive event and a `Mailbox`, against a thread that sends
/// to both: exactly one message is taken, the other stays where it was.
#[test]
fn loom_receive_event_in_a_choice_takes_one() {
    model(|| {
        let mut me = Ctx::<u8>::new();
        let pid = me.pid();
        let mb = Mailbox::new();
        let mb2 = mb.clone();
        let t = loom::thread::spawn(move || {
            pid.send(1).unwrap();
            mb2.send(2u8);
        });
        let got = select([me.receive_evt(), mb.recv_evt()]);
        t.join().unwrap();
        match got {
            1 => assert_eq!(mb.try_recv(), Some(2)),
            2 => assert_eq!(me.try_receive(), Some(1)),
            other => panic!("received {other}"),
        }
        assert!(me.is_empty() && mb.is_empty());
    });
}

/// A monitored actor ends while its watcher blocks in `receive_signal`: the down signal is
/// delivered exactly once, and the watcher wakes.
#[test]
fn loom_death_races_receive_signal() {
    model(|| {
        let mut me = Ctx::<u8>::new();
        let other = Ctx::<u8>::new();
        let mref = me.monitor(&other.pid());
        let t = loom::thread::spawn(move || drop(other));
        match me.receive_signal() {
            Signal::Down { monitor, .. } => assert_eq!(monitor, mref),
            s => panic!("unexpected {s:?}"),
        }
        t.join().unwrap();
        assert_eq!(me.try_receive_signal(), None);
    });
}

/// The owner holds a message privately (taken out of the shared queue by an earlier receive)
/// when it makes a receive event and syncs it on another thread, while a third message is sent
/// and the owner receives selectively: the event sees the private message, and the two
/// receives get one each of the two messages they accept (the event's count, dropped on the
/// other thread, races the owner's choice between its private and shared paths).
#[test]
fn loom_private_messages_and_a_receive_event_on_another_thread() {
    model(|| {
        let mut me = Ctx::<u8>::new();
        let pid = me.pid();
        pid.send_many([1, 2]).unwrap();
        assert_eq!(me.receive(), 1);
        let ev = me.receive_match_evt(|m| *m >= 2);
        let t = loom::thread::spawn(move || ev.sync());
        pid.send(3).unwrap();
        let mine = me.receive_match(|m| *m >= 2);
        let theirs = t.join().unwrap();
        let mut got = [mine, theirs];
        got.sort_unstable();
        assert_eq!(got, [2, 3]);
        assert!(me.is_empty());
    });
}
