//! Cancelled timers are dropped from their proc's heap and stop counting as wake sources.
//!
//! Each test measures the process's resident memory, which tests running beside it in one
//! process would disturb: it runs itself alone in a child process of the test binary.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use pcml::{Runtime, RuntimeError};

use crate::common;

/// The process's resident memory in KiB, where Linux tells.
fn rss_kib() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Arms a timer far in the future and drops it, many times: cancelled timers are dropped from
/// the heap (memory stays bounded) and stop counting as wake sources (a deadlock afterwards
/// is still detected).
#[test]
fn cancelled_timers_are_removed_and_do_not_keep_the_runtime_alive() {
    if !common::alone(
        module_path!(),
        "cancelled_timers_are_removed_and_do_not_keep_the_runtime_alive",
    ) {
        return;
    }
    let r = Runtime::builder().procs(1).build().unwrap().block_on(|| {
        let before = rss_kib();
        pcml::spawn_task(async {
            let mut cx = Context::from_waker(Waker::noop());
            for _ in 0..1_000_000 {
                let mut s = std::pin::pin!(pcml::time::sleep_async(Duration::from_secs(3600)));
                assert_eq!(s.as_mut().poll(&mut cx), Poll::Pending);
                // Dropped here: its timer is cancelled.
            }
        })
        .join()
        .unwrap();
        if let (Some(b), Some(a)) = (before, rss_kib()) {
            // A million leaked timer entries would be tens of megabytes.
            assert!(a < b + 20 * 1024, "RSS grew from {b} KiB to {a} KiB");
        }
        // Nothing can wake main now: the cancelled timers must not count.
        pcml::spawn_task(std::future::pending::<()>())
            .join()
            .unwrap();
    });
    assert!(matches!(r, Err(RuntimeError::Deadlock { .. })), "{r:?}");
}

/// The loop: a choice between a busy channel and a timeout that never fires. The
/// losing timers are cancelled and dropped, so memory stays bounded.
#[test]
fn a_million_choices_won_by_the_channel_keep_memory_bounded() {
    if !common::alone(
        module_path!(),
        "a_million_choices_won_by_the_channel_keep_memory_bounded",
    ) {
        return;
    }
    let r = Runtime::builder().procs(1).build().unwrap().block_on(|| {
        const N: u32 = 1_000_000;
        let ch = pcml::Chan::<u32>::new();
        let c = ch.clone();
        let sender = pcml::spawn(move || {
            for i in 0..N {
                c.send(i);
            }
        });
        let before = rss_kib();
        let mut sum = 0u64;
        for _ in 0..N {
            let got = pcml::select([
                ch.recv_evt().wrap(Some),
                pcml::time::timeout_evt(Duration::from_secs(1)).wrap(|()| None),
            ]);
            sum += u64::from(got.expect("the channel always wins"));
        }
        sender.join().unwrap();
        assert_eq!(sum, u64::from(N) * u64::from(N - 1) / 2);
        if let (Some(b), Some(a)) = (before, rss_kib()) {
            assert!(a < b + 20 * 1024, "RSS grew from {b} KiB to {a} KiB");
        }
        // No timer is left pending: nothing can wake main, so this is a deadlock.
        pcml::spawn_task(std::future::pending::<()>())
            .join()
            .unwrap();
    });
    assert!(matches!(r, Err(RuntimeError::Deadlock { .. })), "{r:?}");
}

/// Arms a sleep for each deadline in `at` and polls it once (arming its timer on this proc,
/// unless a slow machine let the deadline pass already: that sleep is then done).
fn armed(at: impl IntoIterator<Item = Instant>) -> Vec<Pin<Box<pcml::time::Sleep>>> {
    let mut cx = Context::from_waker(Waker::noop());
    at.into_iter()
        .map(|d| {
            let mut s = Box::pin(pcml::time::sleep_until_async(d));
            let _ = s.as_mut().poll(&mut cx);
            s
        })
        .collect()
}

/// Deadlines 1 to 41 ms after `start`, in a scrambled order.
fn scrambled(start: Instant, n: u64) -> impl Iterator<Item = Instant> {
    (0..n).map(move |i| start + Duration::from_micros(1_000 + (i * 7_919) % 40_000))
}

/// Awaits each sleep: every one completes, none before its deadline.
async fn all_fire(sleeps: Vec<Pin<Box<pcml::time::Sleep>>>) {
    for s in sleeps {
        let d = s.deadline();
        s.await;
        assert!(Instant::now() >= d);
    }
}

/// Timers cancelled in a scattered order on the proc that armed them, two thirds of them (the
/// heap compacts while the rest fire): the timers left all fire, none early, and the
/// cancelled ones do not keep the runtime alive.
#[test]
fn timers_cancelled_out_of_order_leave_the_rest_firing() {
    leaves_nothing_alive(async {
        let sleeps = armed(scrambled(Instant::now(), 600));
        // Two of every three go, from everywhere in the heap.
        let kept: Vec<_> = sleeps.into_iter().step_by(3).collect();
        assert_eq!(kept.len(), 200);
        all_fire(kept).await;
    });
}

/// Timers cancelled on another thread, then more armed (which compacts the heap, most of it
/// cancelled) and some of those cancelled on the proc: the survivors all fire, none early,
/// and nothing cancelled keeps the runtime alive.
#[test]
fn timers_cancelled_off_their_proc_and_on_it_leave_the_rest_firing() {
    leaves_nothing_alive(async {
        let start = Instant::now();
        let far = armed((0..1_000).map(|_| start + Duration::from_secs(3600)));
        let near = armed(scrambled(start, 300));
        // Cancelled on a plain OS thread.
        std::thread::spawn(move || drop(far)).join().unwrap();
        // Arming compacts the heap now that most of it is cancelled.
        let more = armed(scrambled(start + Duration::from_millis(2), 300));
        // Cancelled on the proc, after the compaction.
        let kept: Vec<_> = near
            .into_iter()
            .step_by(2)
            .chain(more.into_iter().step_by(3))
            .collect();
        assert_eq!(kept.len(), 250);
        all_fire(kept).await;
    });
}

/// Runs `body` as a task on a runtime of one proc, then checks that nothing it left behind
/// (its cancelled timers) keeps the runtime alive: a task that waits for ever is then
/// reported as a deadlock.
fn leaves_nothing_alive(body: impl Future<Output = ()> + Send + 'static) {
    let r = Runtime::builder().procs(1).build().unwrap().block_on(|| {
        pcml::spawn_task(body).join().unwrap();
        pcml::spawn_task(std::future::pending::<()>())
            .join()
            .unwrap();
    });
    assert!(matches!(r, Err(RuntimeError::Deadlock { .. })), "{r:?}");
}
