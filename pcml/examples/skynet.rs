//! Profiling aid: skynet (10-ary; leaves from argv, default 1,000,000) with async tasks and
//! with fibers, on 1 and 2 procs. For callgrind, a second argument runs one tree once on one
//! proc: `tasks-once` (tasks that return their sums through join handles), `chan-once` (tasks
//! that send them over channels with `send_evt(..).await`, as the benchmark's rows do) or
//! `tokio-once` (tokio tasks and join handles on a `current_thread` runtime).

#[path = "support/mi_alloc.rs"]
mod mi_alloc;

/// mimalloc, as the benchmark runs (its instruction counts match the bench's).
#[global_allocator]
static ALLOC: mi_alloc::Natural = mi_alloc::Natural;
use std::future::Future;
use std::pin::Pin;

use pcml::chan::Chan;

fn chan_node(num: u64, size: u64, out: Chan<u64>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move {
        if size == 1 {
            out.send_evt(num).await;
            return;
        }
        let step = size / 10;
        let ch = Chan::new();
        for i in 0..10 {
            pcml::spawn_task(chan_node(num + i * step, step, ch.clone()));
        }
        let mut sum = 0;
        for _ in 0..10 {
            sum += ch.recv_evt().await;
        }
        out.send_evt(sum).await;
    })
}

fn tokio_node(num: u64, size: u64) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        if size == 1 {
            return num;
        }
        let step = size / 10;
        let hs: Vec<_> = (0..10)
            .map(|i| tokio::spawn(tokio_node(num + i * step, step)))
            .collect();
        let mut sum = 0;
        for h in hs {
            sum += h.await.unwrap();
        }
        sum
    })
}

fn node(num: u64, size: u64) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        if size == 1 {
            return num;
        }
        let step = size / 10;
        let hs: Vec<_> = (0..10)
            .map(|i| pcml::spawn_task(node(num + i * step, step)))
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
        let mut times = Vec::new();
        if once == "tokio-once" {
            let rt = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            for _ in 0..reps {
                let t = std::time::Instant::now();
                let sum =
                    rt.block_on(async move { tokio::spawn(tokio_node(0, leaves)).await.unwrap() });
                times.push(t.elapsed());
                assert_eq!(sum, expected);
            }
        } else {
            let rt = pcml::Runtime::builder().procs(1).build().unwrap();
            let chan = match once {
                "tasks-once" => false,
                "chan-once" => true,
                _ => panic!("unknown mode {once}: tasks-once, chan-once or tokio-once"),
            };
            times = rt
                .block_on(move || {
                    let mut times = Vec::new();
                    for _ in 0..reps {
                        let t = std::time::Instant::now();
                        let sum = if chan {
                            let root = Chan::new();
                            pcml::spawn_task(chan_node(0, leaves, root.clone()));
                            root.recv()
                        } else {
                            pcml::spawn_task(node(0, leaves)).join().unwrap()
                        };
                        times.push(t.elapsed());
                        assert_eq!(sum, expected);
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
                .block_on(move || pcml::spawn_task(node(0, leaves)).join().unwrap())
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
