//! Loom models of the sync variables' own protocols (IVar, MVar, CVar; run by `.ci/loom`).
//!
//! Each model has two threads, one of them blocking (a loom thread parks, as an OS-thread
//! waiter does), so a lost wake-up shows as a deadlock and a lost or duplicated value as a
//! failed assertion, in every interleaving up to the preemption bound.

use std::future::{Future, IntoFuture};
use std::task::{Context, Waker};

use crate::event::select;
use crate::event::tests::model;
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::{AtomicBool, Ordering};
use crate::mailbox::Mailbox;
use crate::sync_var::{CVar, IVar, MVar};

/// A put races a blocking get: the getter always wakes with the value, and a second put
/// fails without disturbing it.
#[test]
fn loom_ivar_put_races_get() {
    model(|| {
        let iv = IVar::new();
        let i2 = iv.clone();
        let t = loom::thread::spawn(move || i2.get());
        iv.put(7u8).unwrap();
        assert_eq!(t.join().unwrap(), 7);
        assert_eq!(iv.put(8).unwrap_err().into_inner(), 8);
        assert_eq!(iv.try_get(), Some(7));
    });
}

/// A putter fills the MVar twice (the second put blocks until the first value is taken); the
/// taker gets both, in order, and the variable ends empty.
#[test]
fn loom_mvar_put_blocks_while_full() {
    model(|| {
        let mv = MVar::new();
        let m2 = mv.clone();
        let t = loom::thread::spawn(move || {
            m2.put(1u8);
            m2.put(2);
        });
        let a = mv.take();
        let b = mv.take();
        t.join().unwrap();
        assert_eq!((a, b), (1, 2));
        assert_eq!(mv.try_take(), None);
    });
}

/// A choice between taking an MVar and receiving from a mailbox, against a thread that fills
/// both: exactly one value is taken, and the other stays where it was (nothing lost, nothing
/// taken twice).
#[test]
fn loom_mvar_take_in_a_choice_loses_nothing() {
    model(|| {
        let mv = MVar::new();
        let mb = Mailbox::new();
        let (m2, b2) = (mv.clone(), mb.clone());
        let t = loom::thread::spawn(move || select([m2.take_evt(), b2.recv_evt()]));
        mv.put(1u8);
        mb.send(2u8);
        let got = t.join().unwrap();
        match got {
            1 => assert_eq!(mb.try_recv(), Some(2)),
            2 => assert_eq!(mv.try_take(), Some(1)),
            other => panic!("took {other}, which nobody sent"),
        }
    });
}

/// A swap on a full MVar races a take: the taker sees either the old value (and the swap then
/// finds the variable empty, so it waits for the put below) or the swapped-in one.
#[test]
fn loom_mvar_swap_races_take() {
    model(|| {
        let mv = MVar::new_full(1u8);
        let m2 = mv.clone();
        let t = loom::thread::spawn(move || m2.swap(2));
        let taken = mv.take();
        if taken == 1 {
            // The swap blocks on an empty variable until it is filled again.
            mv.put(3);
            assert_eq!(t.join().unwrap(), 3);
            assert_eq!(mv.try_take(), Some(2));
        } else {
            assert_eq!(taken, 2);
            assert_eq!(t.join().unwrap(), 1);
            assert_eq!(mv.try_take(), None);
        }
    });
}

/// A blocked take's `.await` is dropped while a put races it: either the drop withdraws the
/// take first (the put fills the MVar) or the put hands the take its value first (the drop
/// gives it back). Either way the value ends in the MVar, once.
#[test]
fn loom_mvar_dropped_take_races_put() {
    model(|| {
        let mv = MVar::new();
        let mut take = Box::pin(mv.take_evt().into_future());
        let mut cx = Context::from_waker(Waker::noop());
        assert!(take.as_mut().poll(&mut cx).is_pending());
        let m2 = mv.clone();
        let t = loom::thread::spawn(move || m2.put(1u8));
        drop(take);
        t.join().unwrap();
        assert_eq!(mv.try_take(), Some(1));
        assert_eq!(mv.try_take(), None);
    });
}

/// The same with a blocked swap: either it is withdrawn (the put fills the MVar and the swap's
/// value is dropped) or it won and is undone (its value, still in the cell, is dropped and the
/// put's is back). Either way the MVar ends holding the put's value alone.
#[test]
fn loom_mvar_dropped_swap_races_put() {
    model(|| {
        let mv = MVar::new();
        let mut swap = Box::pin(mv.swap_evt(2u8).into_future());
        let mut cx = Context::from_waker(Waker::noop());
        assert!(swap.as_mut().poll(&mut cx).is_pending());
        let m2 = mv.clone();
        let t = loom::thread::spawn(move || m2.put(1u8));
        drop(swap);
        t.join().unwrap();
        assert_eq!(mv.try_take(), Some(1));
        assert_eq!(mv.try_take(), None);
    });
}

/// A signal races a wait: the waiter always wakes, and sees what the signaller wrote before.
#[test]
fn loom_cvar_signal_races_wait() {
    model(|| {
        let cv = Arc::new(CVar::new());
        let flag = Arc::new(AtomicBool::new(false));
        let (c2, f2) = (cv.clone(), flag.clone());
        let t = loom::thread::spawn(move || {
            c2.wait();
            f2.load(Ordering::Relaxed)
        });
        flag.store(true, Ordering::Relaxed);
        cv.signal();
        assert!(
            t.join().unwrap(),
            "the waiter missed a write made before the signal"
        );
        assert!(cv.is_signalled());
    });
}
