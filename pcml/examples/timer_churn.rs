//! Profiling aid: arm and cancel many timers from one task; prints RSS growth.
use std::task::{Context, Poll, Waker};
use std::time::Duration;

fn rss_kib() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    pcml::Runtime::builder()
        .procs(1)
        .build()
        .unwrap()
        .block_on(move || {
            let before = rss_kib();
            pcml::spawn_task(async move {
                let mut cx = Context::from_waker(Waker::noop());
                for _ in 0..n {
                    let mut s = std::pin::pin!(pcml::time::sleep_async(Duration::from_secs(3600)));
                    assert_eq!(s.as_mut().poll(&mut cx), Poll::Pending);
                }
            })
            .join()
            .unwrap();
            println!("{n} timers: RSS {} KiB -> {} KiB", before, rss_kib());
        })
        .unwrap();
}
