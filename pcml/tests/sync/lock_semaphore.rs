//! lock::Semaphore: a bound on holders from fibers, OS threads, pcml tasks and tokio; FIFO;
//! release and forget; acquire_evt in choices; no permit lost when a sync loses or a future
//! is dropped; a cross-proc stress.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use pcml::Semaphore;

#[test]
fn try_acquire_release_and_forget() {
    let sem = Semaphore::new(2);
    let a = sem.try_acquire().unwrap();
    let b = sem.acquire();
    assert_eq!(sem.available_permits(), 0);
    assert!(sem.try_acquire().is_none());
    drop(a);
    assert_eq!(sem.available_permits(), 1);
    b.forget();
    assert_eq!(sem.available_permits(), 1);
    sem.release(3);
    assert_eq!(sem.available_permits(), 4);
    let zero = Semaphore::new(0);
    assert!(zero.try_acquire().is_none());
}

#[test]
fn waiters_are_served_in_arrival_order() {
    let sem = Semaphore::new(0);
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut ts = Vec::new();
    for i in 0..4 {
        let (sem2, order) = (sem.clone(), order.clone());
        ts.push(std::thread::spawn(move || {
            let p = sem2.acquire();
            order.lock().unwrap().push(i);
            p.forget();
        }));
        common::wait_until(|| sem.queue_len() == i + 1);
    }
    for i in 0..4 {
        sem.release(1);
        common::wait_until(|| order.lock().unwrap().len() == i + 1);
    }
    ts.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(*order.lock().unwrap(), [0, 1, 2, 3]);
}

/// Runs `n` rounds of acquire / note the holder count / yield / release.
fn bounded_work(sem: &Semaphore, now: &AtomicUsize, max: &AtomicUsize, n: usize) {
    for _ in 0..n {
        let _p = sem.acquire();
        max.fetch_max(now.fetch_add(1, SeqCst) + 1, SeqCst);
        pcml::yield_now();
        now.fetch_sub(1, SeqCst);
    }
}

#[test]
fn holders_stay_bounded_in_fibers_and_tasks_across_procs() {
    let now = Arc::new(AtomicUsize::new(0));
    let max = Arc::new(AtomicUsize::new(0));
    let sem = Semaphore::new(3);
    common::run_on_procs(2, {
        let (sem, now, max) = (sem.clone(), now.clone(), max.clone());
        move || {
            let mut hs = Vec::new();
            for _ in 0..6 {
                let (sem, now, max) = (sem.clone(), now.clone(), max.clone());
                hs.push(pcml::spawn(move || bounded_work(&sem, &now, &max, 300)));
            }
            for _ in 0..4 {
                let (sem, now, max) = (sem.clone(), now.clone(), max.clone());
                hs.push(pcml::spawn_task(async move {
                    for _ in 0..300 {
                        let _p = sem.acquire_evt().await;
                        max.fetch_max(now.fetch_add(1, SeqCst) + 1, SeqCst);
                        pcml::yield_async().await;
                        now.fetch_sub(1, SeqCst);
                    }
                }));
            }
            hs.into_iter().for_each(|h| h.join().unwrap());
        }
    })
    .unwrap();
    assert!(max.load(SeqCst) <= 3, "max holders {}", max.load(SeqCst));
    assert_eq!(sem.available_permits(), 3);
}

#[test]
fn acquire_evt_in_choices_and_dropped_futures_keep_no_permit() {
    let sem = Semaphore::new(1);
    let p = sem.acquire();
    assert!(
        sem.acquire_evt()
            .sync_timeout(Duration::from_millis(2))
            .is_none()
    );
    let r = pcml::select([sem.acquire_evt().wrap(|_| "permit"), pcml::always("busy")]);
    assert_eq!(r, "busy");
    drop(p);
    assert_eq!(sem.available_permits(), 1);

    let rt = common::tokio_rt();
    rt.block_on(async {
        let held = sem.acquire_evt().await;
        tokio::select! {
            _ = sem.acquire_evt() => panic!("no permit is free"),
            _ = tokio::time::sleep(Duration::from_millis(1)) => {}
        }
        drop(held);
        assert_eq!(sem.available_permits(), 1);
        // Tokio tasks and an OS thread share two permits.
        let sem2 = Semaphore::new(2);
        let now = Arc::new(AtomicUsize::new(0));
        let max = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let (sem, now, max) = (sem2.clone(), now.clone(), max.clone());
                tokio::spawn(async move {
                    for _ in 0..100 {
                        let _p = sem.acquire_evt().await;
                        max.fetch_max(now.fetch_add(1, SeqCst) + 1, SeqCst);
                        tokio::task::yield_now().await;
                        now.fetch_sub(1, SeqCst);
                    }
                })
            })
            .collect();
        let os = {
            let (sem, now, max) = (sem2.clone(), now.clone(), max.clone());
            std::thread::spawn(move || {
                for _ in 0..100 {
                    let _p = sem.acquire();
                    max.fetch_max(now.fetch_add(1, SeqCst) + 1, SeqCst);
                    std::thread::yield_now();
                    now.fetch_sub(1, SeqCst);
                }
            })
        };
        for h in hs {
            h.await.unwrap();
        }
        os.join().unwrap();
        assert!(max.load(SeqCst) <= 2);
        assert_eq!(sem2.available_permits(), 2);
    });
}

#[test]
fn stress_timeouts_never_lose_a_permit() {
    let sem = Semaphore::new(2);
    common::run_on_procs(2, {
        let sem = sem.clone();
        move || {
            let hs: Vec<_> = (0..6u64)
                .map(|i| {
                    let sem = sem.clone();
                    pcml::spawn(move || {
                        for _ in 0..2000 {
                            let t = Duration::from_micros(5 * (i + 1));
                            if let Some(p) = sem.acquire_evt().sync_timeout(t) {
                                pcml::yield_now();
                                drop(p);
                            }
                        }
                    })
                })
                .collect();
            hs.into_iter().for_each(|h| h.join().unwrap());
        }
    })
    .unwrap();
    assert_eq!(sem.available_permits(), 2);
}

#[test]
fn an_acquire_dropped_after_the_hand_off_releases_its_permit() {
    use std::future::IntoFuture;
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let sem = Semaphore::new(0);
    let mut fut = Box::pin(sem.acquire_evt().into_future());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    sem.release(1); // handed to the future
    assert_eq!(sem.available_permits(), 0);
    drop(fut);
    assert_eq!(sem.available_permits(), 1);
}
