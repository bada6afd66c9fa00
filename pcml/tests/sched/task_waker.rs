//! A task's waker: clones made in a poll (the first takes over the run queue's reference),
//! woken from the task's own poll, from another proc or from an OS thread, kept after the
//! task ended; `will_wake` across polls.

use crate::common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use common::run_on_procs;

/// Wakers left for a waker thread (or another task) to wake.
type Slot = Arc<Mutex<Vec<Waker>>>;

/// A future that waits `rounds` times. In each poll it clones its waker three times: drops
/// one, wakes one by value at once in every third round (woken while it runs), and leaves
/// the last in `slot` for someone else to wake; it checks that the waker it left in its
/// last poll `will_wake` this poll's.
struct Rounds {
    left: u32,
    round: u32,
    slot: Slot,
    last: Option<Waker>,
}

impl Future for Rounds {
    type Output = u32;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        if let Some(last) = self.last.take() {
            assert!(
                last.will_wake(cx.waker()),
                "a task's waker changed between two polls"
            );
        }
        if self.left == 0 {
            return Poll::Ready(self.round);
        }
        self.left -= 1;
        self.round += 1;
        let kept = cx.waker().clone();
        drop(cx.waker().clone());
        self.last = Some(cx.waker().clone());
        if self.round % 3 == 0 {
            // Woken while it runs: the runner queues it again.
            kept.wake();
        } else {
            self.slot.lock().unwrap().push(kept);
        }
        Poll::Pending
    }
}

/// Wakes what is left in `slot` from an OS thread until `done` reaches `tasks`.
fn waker_thread(slot: Slot, done: Arc<AtomicUsize>, tasks: usize) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while done.load(Ordering::Acquire) < tasks {
            let wakers: Vec<Waker> = std::mem::take(&mut *slot.lock().unwrap());
            if wakers.is_empty() {
                std::thread::sleep(Duration::from_micros(50));
            }
            for (i, w) in wakers.into_iter().enumerate() {
                if i % 2 == 0 {
                    w.wake();
                } else {
                    w.wake_by_ref();
                }
            }
        }
    })
}

#[test]
fn tasks_whose_poll_clones_and_wakes_its_waker_all_complete() {
    for procs in [1, 2] {
        let tasks = 50;
        let rounds = 60;
        let slot: Slot = Arc::default();
        let done = Arc::new(AtomicUsize::new(0));
        let waker = waker_thread(slot.clone(), done.clone(), tasks);
        let total = run_on_procs(procs, move || {
            let handles: Vec<_> = (0..tasks)
                .map(|_| {
                    let slot = slot.clone();
                    let done = done.clone();
                    pcml::spawn_task(async move {
                        let n = Rounds {
                            left: rounds,
                            round: 0,
                            slot,
                            last: None,
                        }
                        .await;
                        done.fetch_add(1, Ordering::Release);
                        n
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum::<u32>()
        })
        .unwrap();
        waker.join().unwrap();
        assert_eq!(total, tasks as u32 * rounds, "on {procs} procs");
    }
}

#[test]
fn a_waker_kept_after_its_task_ended_wakes_nothing() {
    for procs in [1, 2] {
        let kept: Slot = Arc::default();
        let k2 = kept.clone();
        run_on_procs(procs, move || {
            let handles: Vec<_> = (0..20)
                .map(|i| {
                    let kept = k2.clone();
                    pcml::spawn_task(async move {
                        // Pending once (so the task is registered), then a clone of the
                        // waker outlives the task.
                        pcml::yield_async().await;
                        std::future::poll_fn(|cx| {
                            kept.lock().unwrap().push(cx.waker().clone());
                            Poll::Ready(())
                        })
                        .await;
                        i
                    })
                })
                .collect();
            let sum: i32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
            assert_eq!(sum, (0..20).sum());
        })
        .unwrap();
        let wakers = std::mem::take(&mut *kept.lock().unwrap());
        assert_eq!(wakers.len(), 20);
        for (i, w) in wakers.into_iter().enumerate() {
            if i % 2 == 0 {
                w.wake_by_ref();
            }
            w.wake();
        }
    }
}

#[test]
fn two_tasks_that_wake_each_other_through_stored_wakers_finish() {
    // Each leaves a clone of its waker for the other, on and off one proc.
    for procs in [1, 2] {
        let n = 2_000u32;
        let got = run_on_procs(procs, move || {
            let slots: [Slot; 2] = [Arc::default(), Arc::default()];
            let turn = Arc::new(AtomicUsize::new(0));
            let side = |me: usize| {
                let slots = slots.clone();
                let turn = turn.clone();
                pcml::spawn_task(async move {
                    let mut mine = 0u32;
                    while mine < n {
                        std::future::poll_fn(|cx| {
                            if turn.load(Ordering::Acquire) % 2 == me {
                                Poll::Ready(())
                            } else {
                                slots[me].lock().unwrap().push(cx.waker().clone());
                                // The other side may have moved on meanwhile.
                                if turn.load(Ordering::Acquire) % 2 == me {
                                    Poll::Ready(())
                                } else {
                                    Poll::Pending
                                }
                            }
                        })
                        .await;
                        mine += 1;
                        turn.fetch_add(1, Ordering::AcqRel);
                        let other = std::mem::take(&mut *slots[1 - me].lock().unwrap());
                        other.into_iter().for_each(Waker::wake);
                    }
                    mine
                })
            };
            let (a, b) = (side(0), side(1));
            a.join().unwrap() + b.join().unwrap()
        })
        .unwrap();
        assert_eq!(got, 2 * n, "on {procs} procs");
    }
}
