//! Profiling aid: skynet (10-ary; leaves from argv, default 1,000,000) with async tasks and
//! with fibers, on 1 and 2 procs. For callgrind, a second argument runs one tree once on one
//! proc: `tasks-once` (tasks that return their sums through join handles), `chan-once` (tasks
//! that send them over channels with `send_evt(..).await`, as the benchmark's rows do) or
//! `tokio-once` (tokio tasks and join handles on a `current_thread` runtime). A third argument
//! repeats the tree that many times in one runtime, a fourth sets the branching factor (default
//! 10; a node splits its leaves into near-equal slices, as the benchmark's skynet does, so
//! `729 tasks-once 1 3` is its 3-ary tree of depth 6) and a fifth the procs (default 1; tokio
//! then runs a `multi_thread` runtime of that many workers). With more than one tree, pcml's
//! modes print what the scheduler did (polls, steals, parks, wake-ups across procs).

#[path = "support/mi_alloc.rs"]
mod mi_alloc;

/// mimalloc, as the benchmark runs (its instruction counts match the bench's).
#[global_allocator]
static ALLOC: mi_alloc::Natural = mi_alloc::Natural;
use std::future::Future;
use std::pin::Pin;

use pcml::chan::Chan;

fn chan_node(
    num: u64,
    size: u64,
    branch: u64,
    out: Chan<u64>,
) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move {
        if size == 1 {
            out.send_evt(num).await;
            return;
        }
        let ch = Chan::new();
        let mut kids = 0;
        for (lo, n) in slices(num, size, branch) {
            pcml::spawn_task(chan_node(lo, n, branch, ch.clone()));
            kids += 1;
        }
        let mut sum = 0;
        for _ in 0..kids {
            sum += ch.recv_evt().await;
        }
        out.send_evt(sum).await;
    })
}

/// The slices of `leaves` leaves starting at `first`, for `branch` children (empty ones left
/// out), as the benchmark's skynet splits them.
fn slices(first: u64, leaves: u64, branch: u64) -> impl Iterator<Item = (u64, u64)> {
    (0..branch).filter_map(move |i| {
        let lo = first + leaves * i / branch;
        let hi = first + leaves * (i + 1) / branch;
        (hi > lo).then_some((lo, hi - lo))
    })
}

fn tokio_node(num: u64, size: u64, branch: u64) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        if size == 1 {
            return num;
        }
        let hs: Vec<_> = slices(num, size, branch)
            .map(|(lo, n)| tokio::spawn(tokio_node(lo, n, branch)))
            .collect();
        let mut sum = 0;
        for h in hs {
            sum += h.await.unwrap();
        }
        sum
    })
}

fn node(num: u64, size: u64, branch: u64) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        if size == 1 {
            return num;
        }
        let hs: Vec<_> = slices(num, size, branch)
            .map(|(lo, n)| pcml::spawn_task(node(lo, n, branch)))
            .collect();
        let mut sum = 0;
        for h in hs {
            sum += h.await.unwrap();
        }
        sum
    })
}

fn fiber_node(num: u64, size: u64) -> u64 {
    if size == 1 {
        return num;
    }
    let step = size / 10;
    let hs: Vec<_> = (0..10)
        .map(|i| pcml::spawn(move || fiber_node(num + i * step, step)))
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).sum()
}

fn main() {
    let leaves: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let expected = leaves * (leaves - 1) / 2;
    let once = std::env::args().nth(2);
    if let Some(once) = once.as_deref() {
        // An optional third argument: how many trees, one after the other in one runtime; the
        // time of each is printed when there are more than one.
        let reps: usize = std::env::args()
            .nth(3)
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        let arg = |n: usize, default: u64| {
            std::env::args()
                .nth(n)
                .and_then(|s| s.parse().ok())
                .unwrap_or(default)
        };
        let branch = arg(4, 10);
        let procs = arg(5, 1) as usize;
        let mut times: Vec<std::time::Duration>;
        if once == "tokio-once" {
            let rt = if procs == 1 {
                tokio::runtime::Builder::new_current_thread().build()
            } else {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(procs)
                    .build()
            }
            .unwrap();
            // As the benchmark runs it: every tree from one task.
            times = rt
                .block_on(async move {
                    tokio::spawn(async move {
                        let mut times = Vec::new();
                        for _ in 0..reps {
                            let t = std::time::Instant::now();
                            let sum = tokio::spawn(tokio_node(0, leaves, branch)).await.unwrap();
                            times.push(t.elapsed());
                            assert_eq!(sum, expected);
                        }
                        times
                    })
                    .await
                })
                .unwrap();
        } else {
            let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
            let chan = match once {
                "tasks-once" => false,
                "chan-once" => true,
                _ => panic!("unknown mode {once}: tasks-once, chan-once or tokio-once"),
            };
            times = rt
                .block_on(move || {
                    let mut times = Vec::new();
                    let before = pcml::sched::metrics().unwrap();
                    for _ in 0..reps {
                        let t = std::time::Instant::now();
                        let sum = if chan {
                            let root = Chan::new();
                            pcml::spawn_task(chan_node(0, leaves, branch, root.clone()));
                            root.recv()
                        } else {
                            pcml::spawn_task(node(0, leaves, branch)).join().unwrap()
                        };
                        times.push(t.elapsed());
                        assert_eq!(sum, expected);
                    }
                    if reps > 1 {
                        // What the scheduler did over all the trees (steals, parks,
                        // wake-ups across procs).
                        println!("{}", pcml::sched::metrics().unwrap().since(&before));
                    }
                    times
                })
                .unwrap();
        }
        if reps > 1 {
            times.sort();
            println!(
                "{once} {leaves} leaves: median {:?} (min {:?}, max {:?})",
                times[reps / 2],
                times[0],
                times[reps - 1]
            );
        }
        return;
    }
    for procs in [1, 2] {
        for _ in 0..3 {
            let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
            let t = std::time::Instant::now();
            let sum = rt
                .block_on(move || pcml::spawn_task(node(0, leaves, 10)).join().unwrap())
                .unwrap();
            let tasks = t.elapsed();
            assert_eq!(sum, expected);
            let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
            let t = std::time::Instant::now();
            let sum = rt.block_on(move || fiber_node(0, leaves)).unwrap();
            assert_eq!(sum, expected);
            println!(
                "procs {procs}: skynet {leaves} leaves: tasks {tasks:?}, fibers {:?}",
                t.elapsed()
            );
        }
    }
}
