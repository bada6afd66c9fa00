//! lock::Mutex: mutual exclusion from fibers, OS threads, pcml tasks and tokio; FIFO
//! hand-off; lock_evt in choices; no lost lock when a sync loses or a future is dropped;
//! panics release; a lock-order deadlock is reported; a cross-proc stress.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

use pcml::{Mutex, RuntimeError};

#[test]
fn try_lock_is_locked_and_deref() {
    let m = Mutex::new(vec![1]);
    assert!(!m.is_locked());
    let mut g = m.try_lock().unwrap();
    g.push(2);
    assert!(m.is_locked());
    assert!(m.try_lock().is_none());
    drop(g);
    assert_eq!(*m.lock(), [1, 2]);
    assert!(!m.is_locked());
}

/// Increments `m` `n` times, yielding inside the critical section, and checks nobody else is
/// inside meanwhile.
fn hammer(m: &Mutex<(u64, bool)>, n: u64) {
    for _ in 0..n {
        let mut g = m.lock();
        assert!(!g.1, "two holders at once");
        g.1 = true;
        pcml::yield_now();
        g.0 += 1;
        g.1 = false;
    }
}

#[test]
fn fibers_exclude_each_other_across_procs() {
    for procs in [1, 2] {
        let total = common::run_on_procs(procs, || {
            let m = Mutex::new((0u64, false));
            let hs: Vec<_> = (0..8)
                .map(|_| {
                    let m = m.clone();
                    pcml::spawn(move || hammer(&m, 500))
                })
                .collect();
            hs.into_iter().for_each(|h| h.join().unwrap());
            m.lock().0
        })
        .unwrap();
        assert_eq!(total, 4000, "procs = {procs}");
    }
}

#[test]
fn waiters_get_the_lock_in_arrival_order() {
    let m = Mutex::new(Vec::new());
    let held = m.lock();
    let mut ts = Vec::new();
    for i in 0..4 {
        let m2 = m.clone();
        ts.push(std::thread::spawn(move || m2.lock().push(i)));
        common::wait_until(|| m.queue_len() == i + 1);
    }
    drop(held);
    ts.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(*m.lock(), [0, 1, 2, 3]);
}

#[test]
fn lock_evt_in_choices_never_loses_the_lock() {
    let m = Mutex::new(0);
    let held = m.lock();
    // Loses to a timeout after blocking.
    assert!(
        pcml::select([
            m.lock_evt().wrap(Some),
            pcml::time::timeout_evt(Duration::from_millis(2)).wrap(|()| None),
        ])
        .is_none()
    );
    // Loses to a ready channel in the commit phase.
    let ch = pcml::Mailbox::new();
    ch.send(7);
    let r = pcml::select([m.lock_evt().wrap(|_| 0), ch.recv_evt()]);
    assert_eq!(r, 7);
    // A waiter queued behind the dead offers still gets the lock.
    let m2 = m.clone();
    let t = std::thread::spawn(move || *m2.lock() += 1);
    common::wait_until(|| m.queue_len() >= 2);
    drop(held);
    t.join().unwrap();
    assert_eq!(*m.lock(), 1);
    assert!(!m.is_locked());
}

#[test]
fn a_panic_while_holding_releases_to_the_next_waiter() {
    let r = pcml::run(|| {
        let m = Mutex::new(0);
        let m1 = m.clone();
        let holder = pcml::spawn(move || {
            let _g = m1.lock();
            pcml::yield_now();
            panic!("boom while holding the lock");
        });
        let m2 = m.clone();
        let waiter = pcml::spawn(move || {
            *m2.lock() += 1;
        });
        assert!(holder.join().is_err());
        waiter.join().unwrap();
        *m.lock()
    });
    assert_eq!(r, 1);
    // And on OS threads.
    let m = Mutex::new(0);
    let m1 = m.clone();
    let t = std::thread::spawn(move || {
        let _g = m1.lock();
        panic!("boom");
    });
    assert!(t.join().is_err());
    assert_eq!(*m.lock(), 0);
}

#[test]
fn lock_order_inversion_is_reported_as_a_deadlock() {
    let r = common::run_on_procs(2, || {
        let (a, b) = (Mutex::new(()), Mutex::new(()));
        let both = pcml::Barrier::new(2);
        let (a1, b1, both1) = (a.clone(), b.clone(), both.clone());
        let t1 = pcml::spawn(move || {
            let _ga = a1.lock();
            both1.wait();
            let _gb = b1.lock();
        });
        let t2 = pcml::spawn(move || {
            let _gb = b.lock();
            both.wait();
            let _ga = a.lock();
        });
        t1.join().unwrap();
        t2.join().unwrap();
    });
    assert!(matches!(r, Err(RuntimeError::Deadlock { .. })), "{r:?}");
}

#[test]
fn guards_cross_awaits_in_pcml_tasks_and_tokio() {
    let total = pcml::run(|| {
        let m = Mutex::new((0u64, false));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                pcml::spawn_task(async move {
                    for _ in 0..200 {
                        let mut g = m.lock_evt().await;
                        assert!(!g.1);
                        g.1 = true;
                        pcml::yield_async().await;
                        g.0 += 1;
                        g.1 = false;
                    }
                })
            })
            .chain((0..2).map(|_| {
                let m = m.clone();
                pcml::spawn(move || hammer(&m, 200))
            }))
            .collect();
        hs.into_iter().for_each(|h| h.join().unwrap());
        m.lock().0
    });
    assert_eq!(total, 1200);

    let rt = common::tokio_rt();
    rt.block_on(async {
        let m = Mutex::new(0u32);
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let m = m.clone();
                tokio::spawn(async move {
                    for _ in 0..200 {
                        let mut g = m.lock_evt().await;
                        tokio::task::yield_now().await;
                        *g += 1;
                    }
                })
            })
            .collect();
        for h in hs {
            h.await.unwrap();
        }
        assert_eq!(*m.lock_evt().await, 800);

        // A dropped lock future does not keep the lock.
        let held = m.lock_evt().await;
        tokio::select! {
            _ = m.lock_evt() => panic!("the mutex is held"),
            _ = tokio::time::sleep(Duration::from_millis(1)) => {}
        }
        drop(held);
        assert!(m.try_lock().is_some());
    });
}

#[test]
fn stress_timeouts_and_dropped_futures_never_lose_the_lock() {
    // Lockers on fibers, tasks and OS threads, many giving up on short timeouts (some at the
    // instant the lock is handed to them): at the end the mutex is free and every counted
    // increment happened under it.
    let stop = Arc::new(AtomicBool::new(false));
    let m = Mutex::new((0u64, false));
    let counted = common::run_on_procs(2, {
        let m = m.clone();
        let stop = stop.clone();
        move || {
            let mut hs = Vec::new();
            for i in 0..4u64 {
                let m = m.clone();
                hs.push(pcml::spawn(move || {
                    let mut mine = 0;
                    for _ in 0..2000 {
                        let timeout = Duration::from_micros(10 * (i + 1));
                        if let Some(mut g) = m.lock_evt().sync_timeout(timeout) {
                            assert!(!g.1);
                            g.0 += 1;
                            mine += 1;
                        }
                    }
                    mine
                }));
            }
            for _ in 0..2 {
                let m = m.clone();
                hs.push(pcml::spawn_task(async move {
                    let mut mine = 0;
                    for _ in 0..2000 {
                        let got = pcml::choose([
                            m.lock_evt().wrap(Some),
                            pcml::time::timeout_evt(Duration::from_micros(20)).wrap(|()| None),
                        ])
                        .await;
                        if let Some(mut g) = got {
                            g.0 += 1;
                            mine += 1;
                        }
                    }
                    mine
                }));
            }
            let os = {
                let (m, stop) = (m.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut mine = 0;
                    while !stop.load(SeqCst) {
                        let mut g = m.lock();
                        g.0 += 1;
                        mine += 1;
                    }
                    mine
                })
            };
            let mut total: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
            stop.store(true, SeqCst);
            total += os.join().unwrap();
            total
        }
    })
    .unwrap();
    let g = m.try_lock().expect("the mutex was left locked");
    assert_eq!(g.0, counted);
}

#[test]
fn a_lock_dropped_after_the_hand_off_passes_the_lock_on() {
    use std::future::IntoFuture;
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let m = Mutex::new(0);
    let held = m.lock();
    let mut fut = Box::pin(m.lock_evt().into_future());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    let m2 = m.clone();
    let next = std::thread::spawn(move || *m2.lock() += 1);
    common::wait_until(|| m.queue_len() == 2);
    drop(held); // handed to the future, which nobody polls again
    drop(fut); // ... and passed on to the thread
    next.join().unwrap();
    assert_eq!(*m.try_lock().unwrap(), 1);
}
