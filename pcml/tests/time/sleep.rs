//! Sleeping fibers and tasks on the scheduler's per-proc timers.

use std::sync::{Arc, Mutex};
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
