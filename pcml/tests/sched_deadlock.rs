//! Deadlock detection and shutdown.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pcml::{Runtime, RuntimeError};

fn rt(procs: usize) -> Runtime {
    Runtime::builder().procs(procs).build().unwrap()
}

/// A task that waits forever on a future nobody can wake.
fn never() -> pcml::JoinHandle<()> {
    pcml::spawn_task(std::future::pending::<()>())
}

#[test]
fn main_blocked_on_a_thread_nobody_can_wake_is_a_deadlock() {
    for procs in [1, 2] {
        let r = rt(procs).block_on(|| {
            // main -> a -> b -> (a task pending forever)
            let a = pcml::spawn(|| {
                let b = pcml::spawn(|| never().join().unwrap());
                b.join().unwrap()
            });
            a.join().unwrap();
        });
        assert_eq!(
            r,
            Err(RuntimeError::Deadlock {
                blocked: 4,
                waiting_for_stack: 0
            }),
            "procs = {procs}"
        );
    }
}

#[test]
fn a_blocked_child_its_joiner_ran_inline_counts_once() {
    for procs in [1, 2] {
        let r = rt(procs).block_on(|| {
            // `held` is the proc's held fiber, so `queued` goes to the deque; joining
            // `queued` runs it inline (unless a second proc took it), and it blocks for good.
            let held = pcml::spawn(|| ());
            let queued = pcml::spawn(|| never().join().unwrap());
            queued.join().unwrap();
            held.join().unwrap();
        });
        assert_eq!(
            r,
            Err(RuntimeError::Deadlock {
                // main, `queued` and the task; `held` ran to its end meanwhile.
                blocked: 3,
                waiting_for_stack: 0
            }),
            "procs = {procs}"
        );
    }
}

#[test]
fn run_panics_with_a_message_naming_the_blocked_threads() {
    let p = std::panic::catch_unwind(|| pcml::run(|| never().join().unwrap())).unwrap_err();
    let msg = p.downcast_ref::<String>().unwrap();
    assert!(msg.contains("deadlock"), "{msg}");
    assert!(msg.contains("all 2 live threads"), "{msg}");
}

#[test]
fn a_pending_blocking_job_is_not_a_deadlock() {
    let v = rt(2)
        .block_on(|| {
            pcml::spawn_blocking(|| {
                std::thread::sleep(std::time::Duration::from_millis(100));
                5
            })
            .join()
            .unwrap()
        })
        .unwrap();
    assert_eq!(v, 5);
}

/// Records the proc its destructor runs on.
struct Witness(Arc<Mutex<Vec<Option<usize>>>>);
impl Drop for Witness {
    fn drop(&mut self) {
        self.0.lock().unwrap().push(pcml::current_proc());
    }
}

#[test]
fn shutdown_drops_remaining_fibers_on_their_home_proc() {
    let drops = Arc::new(Mutex::new(Vec::new()));
    let started = Arc::new(AtomicUsize::new(0));
    let (d, s) = (drops.clone(), started.clone());
    rt(2)
        .block_on(move || {
            for proc in [0, 1, 1] {
                let (d, s) = (d.clone(), s.clone());
                // Blocked forever when main returns.
                drop(pcml::spawn_on(proc, move || {
                    let _w = Witness(d);
                    s.fetch_add(1, Ordering::SeqCst);
                    never().join().unwrap();
                }));
            }
            let (d2, s2) = (d.clone(), s.clone());
            // Runnable forever when main returns.
            drop(pcml::spawn_on(1, move || {
                let _w = Witness(d2);
                s2.fetch_add(1, Ordering::SeqCst);
                loop {
                    pcml::yield_now();
                }
            }));
            while s.load(Ordering::SeqCst) < 4 {
                pcml::yield_now();
            }
        })
        .unwrap();
    let mut drops = drops.lock().unwrap().clone();
    drops.sort();
    assert_eq!(drops, vec![Some(0), Some(1), Some(1), Some(1)]);
}

#[test]
fn joining_a_thread_dropped_at_shutdown_reports_cancellation() {
    let (tx, rx) = std::sync::mpsc::channel();
    rt(1)
        .block_on(move || {
            tx.send(pcml::spawn(|| never().join().unwrap())).unwrap();
            pcml::yield_now();
        })
        .unwrap();
    let h = rx.recv().unwrap();
    let e = h.join().unwrap_err();
    assert!(e.is_cancelled(), "{e}");
}

/// Regression: procs that fall asleep before main is submitted, or while a wake-up from another
/// proc is in flight, are not a deadlock.
#[test]
fn no_false_deadlock_in_many_short_runtimes() {
    for i in 0..1500 {
        let r = rt(2).block_on(move || match i % 3 {
            0 => pcml::spawn_task(async { 1 }).join().unwrap(),
            1 => pcml::spawn(|| 1).join().unwrap(),
            _ => pcml::spawn_task(async { panic!("expected") })
                .join()
                .map_or(1, |()| 0),
        });
        assert_eq!(r, Ok(1), "iteration {i}");
    }
}

// What is not a deadlock: threads outside the runtime that can still act.

const RUNS: usize = 40;

#[test]
fn slow_os_thread_senders_started_before_block_on_are_not_a_deadlock() {
    for run in 0..RUNS {
        let ch = pcml::Chan::<u64>::new();
        let senders: Vec<_> = (0..2u64)
            .map(|i| {
                let c = ch.clone();
                std::thread::spawn(move || {
                    // Slower than the fibers: they block on the channel long before.
                    std::thread::yield_now();
                    for k in 0..50 {
                        c.send(i * 1000 + k);
                    }
                })
            })
            .collect();
        let r = rt(1 + run % 2).block_on(move || {
            let workers: Vec<_> = (0..4)
                .map(|_| {
                    let c = ch.clone();
                    pcml::spawn(move || (0..25).map(|_| c.recv()).sum::<u64>())
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).sum::<u64>()
        });
        let expected: u64 = (0..2u64)
            .map(|i| (0..50).map(|k| i * 1000 + k).sum::<u64>())
            .sum();
        assert_eq!(r, Ok(expected), "run {run}");
        senders.into_iter().for_each(|s| s.join().unwrap());
    }
}

#[test]
fn os_threads_started_by_a_fiber_are_not_a_deadlock() {
    for run in 0..RUNS {
        let r = rt(1 + run % 2).block_on(|| {
            let ch = pcml::Chan::<u32>::new();
            let c = ch.clone();
            let t = std::thread::spawn(move || {
                std::thread::sleep(std::time::Duration::from_millis(2));
                c.send(7);
            });
            let v = ch.recv();
            t.join().unwrap();
            v
        });
        assert_eq!(r, Ok(7), "run {run}");
    }
}

#[test]
fn a_sleeping_os_thread_that_later_sends_is_not_a_deadlock() {
    // The thread is started before the runtime exists, by the process's first thread or not.
    for run in 0..5 {
        let ch = pcml::chan::Chan::<u32>::new();
        let c = ch.clone();
        let outside = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(30));
            c.send(11);
        });
        let v = rt(1 + run % 2).block_on(move || ch.recv());
        assert_eq!(v, Ok(11), "run {run}");
        outside.join().unwrap();
    }
}

#[test]
fn an_os_thread_blocked_in_recv_that_then_sends_is_not_a_deadlock() {
    for run in 0..RUNS * 5 {
        let (to_os, from_fiber) = (pcml::Chan::<u32>::new(), pcml::Chan::<u32>::new());
        let (rx, tx) = (to_os.clone(), from_fiber.clone());
        let os = std::thread::spawn(move || {
            for _ in 0..20 {
                let v = rx.recv();
                tx.send(v + 1);
            }
        });
        let r = rt(1 + run % 2).block_on(move || {
            let mut v = 0;
            for _ in 0..20 {
                to_os.send(v);
                v = from_fiber.recv();
            }
            v
        });
        assert_eq!(r, Ok(20), "run {run}");
        os.join().unwrap();
    }
}

#[test]
fn two_runtimes_sharing_a_channel_are_not_a_deadlock() {
    for run in 0..RUNS {
        let (ping, pong) = (pcml::Chan::<u32>::new(), pcml::Chan::<u32>::new());
        let (ping2, pong2) = (ping.clone(), pong.clone());
        let b = std::thread::spawn(move || {
            rt(1).block_on(move || {
                for _ in 0..20 {
                    let v = ping2.recv();
                    pong2.send(v + 1);
                }
            })
        });
        let a = rt(1 + run % 2).block_on(move || {
            let mut v = 0;
            for _ in 0..20 {
                ping.send(v);
                v = pong.recv();
            }
            v
        });
        assert_eq!(a, Ok(20), "run {run}");
        assert_eq!(b.join().unwrap(), Ok(()), "run {run}");
    }
}

#[test]
fn a_deadlock_is_reported_once_the_os_threads_that_could_end_it_are_gone() {
    let ch = pcml::Chan::<u32>::new();
    let c = ch.clone();
    // Holds a handle, sleeps, and ends without sending: only then is it a deadlock.
    let outside = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(20));
        drop(c);
    });
    let r = rt(2).block_on(move || ch.recv());
    assert!(matches!(r, Err(RuntimeError::Deadlock { .. })), "{r:?}");
    outside.join().unwrap();
}
