//! A choice's `poll` is linearizable: it answers `None` only if at one instant no branch was
//! enabled (`sync::poll_confirm`). A token moves from mailbox `a` to mailbox `b`, put into `b`
//! before it is taken from `a`, so at every instant one of them holds it; a poll that tested
//! `b` before the put and `a` after the take would miss it in both.

use crate::event::choose;
use crate::mailbox::Mailbox;

#[test]
fn poll_never_misses_a_token_that_is_always_somewhere() {
    super::model(|| {
        let (a, b) = (Mailbox::new(), Mailbox::new());
        a.send(());
        let (a2, b2) = (a.clone(), b.clone());
        let mover = loom::thread::spawn(move || {
            b2.send(());
            a2.recv();
        });
        // `b` first: under loom the branches are tested in order.
        let got = choose([b.recv_evt().wrap(|()| 'b'), a.recv_evt().wrap(|()| 'a')]).poll();
        match got {
            // Give it back: the mover waits for it.
            Some('a') => a.send(()),
            Some(_) => {}
            None => panic!("poll found neither mailbox enabled"),
        }
        mover.join().unwrap();
    });
}
