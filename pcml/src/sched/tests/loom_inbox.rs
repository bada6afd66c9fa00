//! The inbox/park/unpark hand-off: a proc about to sleep and a remote waker racing.
//!
//! The proc side is `Context::idle` reduced to its protocol: set `sleeping`, look at the inbox,
//! park if it is empty. The waker side is `Shared::send_to`: push, then unpark if `sleeping`.
//! Loom explores every interleaving (within the preemption bound) and checks the proc always
//! ends up seeing the message: no wake-up is lost.

use crate::loom::sync::Arc;
use crate::loom::sync::atomic::{AtomicBool, Ordering, fence};
use crate::mp::Parker;
use crate::sched::inbox::Inbox;

struct Proc {
    inbox: Inbox<u32>,
    parker: Parker,
    sleeping: AtomicBool,
}

impl Proc {
    fn send(&self, msg: u32) {
        self.inbox.push(msg);
        fence(Ordering::SeqCst);
        if self.sleeping.load(Ordering::Relaxed) {
            self.parker.unpark();
        }
    }

    /// Waits until at least one message arrives; returns what was drained.
    fn wait_for_messages(&self) -> Vec<u32> {
        let mut got = Vec::new();
        loop {
            self.inbox.drain_into(&mut got);
            if !got.is_empty() {
                return got;
            }
            self.sleeping.store(true, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            if self.inbox.is_empty() {
                self.parker.park(None);
            }
            self.sleeping.store(false, Ordering::SeqCst);
        }
    }
}

fn new_proc() -> Arc<Proc> {
    Arc::new(Proc {
        inbox: Inbox::new(),
        parker: Parker::new(),
        sleeping: AtomicBool::new(false),
    })
}

#[test]
fn one_waker_is_never_lost() {
    loom::model(|| {
        let p = new_proc();
        let q = p.clone();
        let t = loom::thread::spawn(move || q.send(7));
        let got = p.wait_for_messages();
        assert_eq!(got, vec![7]);
        t.join().unwrap();
    });
}

#[test]
fn two_wakers_both_arrive() {
    loom::model(|| {
        let p = new_proc();
        let (a, b) = (p.clone(), p.clone());
        let ta = loom::thread::spawn(move || a.send(1));
        let tb = loom::thread::spawn(move || b.send(2));
        let mut all = Vec::new();
        while all.len() < 2 {
            all.extend(p.wait_for_messages());
        }
        all.sort();
        assert_eq!(all, vec![1, 2]);
        ta.join().unwrap();
        tb.join().unwrap();
    });
}

#[test]
fn unpark_before_park_leaves_a_token() {
    loom::model(|| {
        let p = new_proc();
        let q = p.clone();
        let t = loom::thread::spawn(move || q.parker.unpark());
        // Whether the unpark comes before or after, park returns.
        p.parker.park(None);
        t.join().unwrap();
    });
}
