//! A nack fires exactly when its branch loses: a thread chooses between a nacked receive on
//! `a` and a receive on `b`; the other thread sends on one of them.

use crate::chan::Chan;
use crate::event::{Event, select, with_nack};
use crate::loom::sync::{Arc, Mutex};

fn chooser(a: Chan<u8>, b: Chan<u8>, slot: Arc<Mutex<Option<Event<()>>>>) -> (char, u8) {
    select([
        with_nack(move |nack| {
            *slot.lock().unwrap() = Some(nack);
            a.recv_evt()
        })
        .wrap(|x| ('a', x)),
        b.recv_evt().wrap(|x| ('b', x)),
    ])
}

fn run(send_on_a: bool) {
    super::model(move || {
        let (a, b) = (Chan::new(), Chan::new());
        let slot = Arc::new(Mutex::new(None));
        let (a1, b1, s1) = (a.clone(), b.clone(), slot.clone());
        let t = loom::thread::spawn(move || chooser(a1, b1, s1));
        if send_on_a {
            a.send(1);
        } else {
            b.send(2);
        }
        let got = t.join().unwrap();
        let nack = slot.lock().unwrap().take().expect("with_nack ran");
        let fired = nack.poll().is_some();
        if send_on_a {
            assert_eq!(got, ('a', 1));
            assert!(!fired, "nack fired though its branch won");
        } else {
            assert_eq!(got, ('b', 2));
            assert!(fired, "nack did not fire though its branch lost");
        }
    });
}

#[test]
fn nack_silent_when_its_branch_wins() {
    run(true);
}

#[test]
fn nack_fires_when_its_branch_loses() {
    run(false);
}
