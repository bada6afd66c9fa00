//! Loom models of the locks' hand-off protocols (run by `.ci/loom`).
//!
//! A lost wake-up shows as a deadlock, a lock held twice or lost as a failed assertion, in
//! every interleaving up to the preemption bound.

use crate::event::select;
use crate::event::tests::model;
use crate::lock::{Mutex, Semaphore};
use crate::mailbox::Mailbox;

/// Two threads increment under the mutex; the one that blocks gets the lock handed over.
#[test]
fn loom_mutex_hand_off() {
    model(|| {
        let m = Mutex::new(0u8);
        let m2 = m.clone();
        let t = loom::thread::spawn(move || *m2.lock() += 1);
        *m.lock() += 1;
        t.join().unwrap();
        assert_eq!(*m.try_lock().expect("the mutex was left locked"), 2);
    });
}

/// A lock in a choice with a mailbox receive, against a thread that unlocks and sends: one
/// branch wins, and if the lock lost it is still free (not handed to the loser).
#[test]
fn loom_mutex_lock_in_a_choice_loses_nothing() {
    model(|| {
        let m = Mutex::new(());
        let held = m.lock();
        let mb = Mailbox::new();
        let (m2, rx) = (m.clone(), mb.clone());
        let t = loom::thread::spawn(move || {
            select([m2.lock_evt().wrap(|_g| 1u8), rx.recv_evt().wrap(|()| 2)])
        });
        drop(held);
        mb.send(());
        let won = t.join().unwrap();
        assert!(m.try_lock().is_some(), "the lock was lost");
        if won == 1 {
            assert_eq!(mb.try_recv(), Some(()));
        }
    });
}

/// A release races a blocked acquire: the permit is handed over, never lost or doubled.
#[test]
fn loom_semaphore_release_races_acquire() {
    model(|| {
        let sem = Semaphore::new(0);
        let s2 = sem.clone();
        let t = loom::thread::spawn(move || s2.acquire().forget());
        sem.release(1);
        t.join().unwrap();
        assert_eq!(sem.available_permits(), 0);
    });
}
