//! Cancelled timers are dropped from their proc's heap and stop counting as wake sources.
//!
//! Each test measures the process's resident memory, which tests running beside it in one
//! process would disturb: it runs itself alone in a child process of the test binary.

use std::task::{Context, Poll, Waker};
use std::time::Duration;

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
