//! A choice naming one channel in both directions must not talk to itself (section 4): its
//! send is taken by the other thread's receive, its own receive stays unmatched.

use crate::chan::Chan;
use crate::event::select;

#[test]
fn a_choice_over_one_channel_both_ways() {
    super::model(|| {
        let ch = Chan::new();
        let c2 = ch.clone();
        let t = loom::thread::spawn(move || {
            select([c2.recv_evt().wrap(Some), c2.send_evt(7u8).wrap(|()| None)])
        });
        assert_eq!(ch.recv(), 7);
        assert_eq!(t.join().unwrap(), None);
    });
}
