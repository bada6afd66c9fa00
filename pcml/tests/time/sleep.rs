//! Sleeping fibers and tasks on the scheduler's per-proc timers.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use pcml::Runtime;

fn rt(procs: usize) -> Runtime {
    Runtime::builder().procs(procs).build().unwrap()
}

#[test]
fn sleeping_fibers_wake_in_deadline_order_and_free_the_proc() {
    for procs in [1, 2] {
        let order = rt(procs)
            .block_on(|| {
                let log = Arc::new(Mutex::new(Vec::new()));
                let hs: Vec<_> = [60u64, 20, 40]
                    .into_iter()
                    .map(|ms| {
                        let log = log.clone();
                        pcml::spawn(move || {
                            let start = Instant::now();
                            pcml::time::sleep(Duration::from_millis(ms));
                            // Never early.
                            assert!(start.elapsed() >= Duration::from_millis(ms));
                            log.lock().unwrap().push(ms);
                        })
                    })
                    .collect();
                // While they sleep, the procs run other work.
                let busy: u64 = (0..100)
                    .map(|i| pcml::spawn(move || i).join().unwrap())
                    .sum();
                assert_eq!(busy, 4950);
                for h in hs {
                    h.join().unwrap();
                }
                Arc::try_unwrap(log).unwrap().into_inner().unwrap()
            })
            .unwrap();
        assert_eq!(order, vec![20, 40, 60], "procs = {procs}");
    }
}

#[test]
fn sleeping_tasks_wake_in_deadline_order() {
    let order = rt(2)
        .block_on(|| {
            let log = Arc::new(Mutex::new(Vec::new()));
            // The deadlines are fixed here, before any task runs, and lie 100 ms apart, so a
            // task that is slow to start (a loaded machine) cannot change their order.
            let hs: Vec<_> = [210u64, 10, 110]
                .into_iter()
                .map(|ms| {
                    let log = log.clone();
                    let nap = pcml::time::sleep_async(Duration::from_millis(ms));
                    pcml::spawn_task(async move {
                        nap.await;
                        log.lock().unwrap().push(ms);
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            Arc::try_unwrap(log).unwrap().into_inner().unwrap()
        })
        .unwrap();
    assert_eq!(order, vec![10, 110, 210]);
}

#[test]
fn a_sleeping_main_is_not_a_deadlock() {
    let v = rt(2)
        .block_on(|| {
            pcml::time::sleep(Duration::from_millis(30));
            7
        })
        .unwrap();
    assert_eq!(v, 7);
}

#[test]
fn zero_sleep_yields_and_outside_a_runtime_sleep_is_a_thread_sleep() {
    pcml::run(|| pcml::time::sleep(Duration::ZERO));
    let start = Instant::now();
    pcml::time::sleep(Duration::from_millis(5));
    assert!(start.elapsed() >= Duration::from_millis(5));
}

#[test]
fn sleep_in_a_task_says_to_await() {
    let e = pcml::run(|| {
        pcml::spawn_task(async { pcml::time::sleep(Duration::from_millis(1)) })
            .join()
            .unwrap_err()
    });
    assert!(e.to_string().contains("sleep_async"), "{e}");
}

/// Polls a sleep once with a waker that does nothing (the context is not kept across an
/// `.await`: it is not `Send`).
fn poll_once(s: std::pin::Pin<&mut pcml::time::Sleep>) -> Poll<()> {
    s.poll(&mut Context::from_waker(Waker::noop()))
}

/// `sleep_until_async` of a passed instant is ready at its first poll.
#[test]
fn a_sleep_until_a_passed_instant_is_ready_at_once() {
    rt(1)
        .block_on(|| {
            pcml::spawn_task(async {
                let past = Instant::now();
                let mut s = std::pin::pin!(pcml::time::sleep_until_async(past));
                assert_eq!(poll_once(s.as_mut()), Poll::Ready(()));
                assert_eq!(s.deadline(), past);
            })
            .join()
            .unwrap();
        })
        .unwrap();
}

/// `Sleep::reset` moves an armed sleep's deadline both ways: a later deadline is not ended by
/// the old timer, an earlier one ends the sleep, and a completed sleep can be set again.
#[test]
fn a_reset_sleep_keeps_its_new_deadline() {
    for procs in [1, 2] {
        rt(procs)
            .block_on(|| {
                pcml::spawn_task(async {
                    let mut s = std::pin::pin!(pcml::time::sleep_async(Duration::from_millis(1)));
                    assert_eq!(poll_once(s.as_mut()), Poll::Pending);
                    // Later: the 1 ms timer is cancelled, so the sleep outlives it.
                    let later = Instant::now() + Duration::from_secs(3600);
                    s.as_mut().reset(later);
                    assert_eq!(s.deadline(), later);
                    assert_eq!(poll_once(s.as_mut()), Poll::Pending);
                    pcml::time::sleep_async(Duration::from_millis(20)).await;
                    assert_eq!(poll_once(s.as_mut()), Poll::Pending);
                    // Earlier: awaiting it ends at the new deadline, not the old one.
                    let sooner = Instant::now() + Duration::from_millis(5);
                    s.as_mut().reset(sooner);
                    s.as_mut().await;
                    assert!(Instant::now() >= sooner);
                    // Completed, then set again: it sleeps once more.
                    let again = Instant::now() + Duration::from_millis(5);
                    s.as_mut().reset(again);
                    s.as_mut().await;
                    assert!(Instant::now() >= again);
                })
                .join()
                .unwrap();
            })
            .unwrap();
    }
}
