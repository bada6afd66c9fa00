//! Two syncs that each offer both a send and a receive on one channel must pair up: one sends
//! to the other. When both are in their blocking phase, the match goes through the `Claimed`
//! state (Figure 9), and neither may match its own offer.

use crate::chan::Chan;
use crate::event::select;

#[test]
fn two_symmetric_choices_pair_up() {
    super::model(|| {
        let ch = Chan::new();
        let c2 = ch.clone();
        let t = loom::thread::spawn(move || {
            select([c2.send_evt(2u8).wrap(|()| None), c2.recv_evt().wrap(Some)])
        });
        let mine = select([ch.send_evt(1u8).wrap(|()| None), ch.recv_evt().wrap(Some)]);
        let theirs = t.join().unwrap();
        match (mine, theirs) {
            (None, Some(1)) | (Some(2), None) => {}
            other => panic!("bad pairing: {other:?}"),
        }
    });
}
