//! The held slot (`sched::held`): the owner puts and takes back while a thief steals. Every
//! item put comes out exactly once: to the owner's take, back from a put into a full slot, or
//! to the thief. (Under loom both sides of the Dekker pair are `SeqCst` fences; the kernel's
//! barrier of ordinary builds is checked by the slot's own unit tests.)

use crate::loom::sync::Arc;
use crate::sched::held::HeldSlot;
use loom::thread::{self, JoinHandle};

/// A slot holding `1`, and a thief already trying to take it.
fn held_one_and_a_thief() -> (Arc<HeldSlot<u32>>, JoinHandle<Option<u32>>) {
    let slot = Arc::new(HeldSlot::new());
    assert!(slot.try_put(1).is_ok());
    let thief = {
        let slot = slot.clone();
        thread::spawn(move || slot.steal())
    };
    (slot, thief)
}

#[test]
fn loom_held_take_back_races_a_thief() {
    loom::model(|| {
        let (slot, thief) = held_one_and_a_thief();
        let mine = slot.take_if(|v| *v == 1);
        let stolen = thief.join().unwrap();
        let got: Vec<u32> = [mine, stolen].into_iter().flatten().collect();
        assert_eq!(got, vec![1], "exactly one of the two got it");
        assert!(!slot.is_full());
    });
}

#[test]
fn loom_held_second_put_races_a_thief() {
    loom::model(|| {
        let (slot, thief) = held_one_and_a_thief();
        // Goes in if the thief emptied the slot first, else comes back.
        let refused = slot.try_put(2).err();
        let mine = slot.take_if(|_| true);
        let stolen = thief.join().unwrap();
        let mut got: Vec<u32> = [refused, mine, stolen].into_iter().flatten().collect();
        got.sort_unstable();
        assert_eq!(got, vec![1, 2], "each item comes out exactly once");
    });
}

#[test]
fn loom_held_refusal_races_a_thief() {
    loom::model(|| {
        let (slot, thief) = held_one_and_a_thief();
        // Looked at and left held (as a dump does), then taken back.
        assert_eq!(slot.take_if(|_| false), None);
        let mine = slot.take_if(|_| true);
        let stolen = thief.join().unwrap();
        let got: Vec<u32> = [mine, stolen].into_iter().flatten().collect();
        assert_eq!(got, vec![1], "exactly one of the two got it");
    });
}
