//! Profiling aid: from an async task, spawn a trivial task and await its join handle, over and
//! over, on one proc; with the argument `tokio`, the same on a tokio `current_thread` runtime
//! (`tokio::spawn(..).await`), for a callgrind comparison (per-spawn cost = the difference of
//! two run lengths). A second number runs it on that many procs (tokio: a `multi_thread`
//! runtime of that many workers).
//!
//! `cargo run --release -p pcml --example taskspawn -- [tokio] [spawns] [procs]`

#[path = "support/mi_alloc.rs"]
mod mi_alloc;
#[path = "support/tokio_rt.rs"]
mod tokio_rt;

/// mimalloc, as the benchmark runs (its instruction counts match the bench's).
#[global_allocator]
static ALLOC: mi_alloc::Natural = mi_alloc::Natural;
use std::hint::black_box;

async fn pcml_loop(n: u64) -> u64 {
    let mut sum = 0;
    for i in 0..n {
        sum += pcml::spawn_task(async move { black_box(i) }).await.unwrap();
    }
    sum
}

async fn tokio_loop(n: u64) -> u64 {
    let mut sum = 0;
    for i in 0..n {
        sum += tokio::spawn(async move { black_box(i) }).await.unwrap();
    }
    sum
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let tokio = args.peek().map(String::as_str) == Some("tokio");
    if tokio {
        args.next();
    }
    let n: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let procs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let t = std::time::Instant::now();
    let sum = if tokio {
        let rt = tokio_rt::runtime(procs);
        rt.block_on(async move { tokio::spawn(tokio_loop(n)).await })
            .unwrap()
    } else {
        let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
        rt.block_on(move || pcml::spawn_task(pcml_loop(n)).join().unwrap())
            .unwrap()
    };
    let e = t.elapsed();
    assert_eq!(sum, n * (n - 1) / 2);
    println!(
        "{procs}-proc task spawn+join ({}): {:.1} ns each",
        if tokio { "tokio" } else { "pcml" },
        e.as_nanos() as f64 / n as f64
    );
}
