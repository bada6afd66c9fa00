//! Profiling aid: ping-pong between two async tasks on one proc, over `recv_evt().await` and
//! `send_evt(v).await` (the one-branch event syncs' direct path); with the argument `sync`,
//! between two fibers over `recv_evt().sync()` and `send_evt(v).sync()` instead; with `async`,
//! between two tasks over `recv_async()` and `send_async(v)`; with `tokio`, between two tokio
//! tasks over a pair of `mpsc::channel(1)` on a `current_thread` runtime (the bench's peer).
//! A third argument runs it on that many procs (tokio: a `multi_thread` runtime of that many
//! workers), the scheduler placing the tasks.
//!
//! `cargo run --release -p pcml --example taskpp -- [sync|async|tokio] [messages/2] [procs]`

#[path = "support/mi_alloc.rs"]
mod mi_alloc;
#[path = "support/tokio_rt.rs"]
mod tokio_rt;

/// mimalloc, as the benchmark runs (its instruction counts match the bench's).
#[global_allocator]
static ALLOC: mi_alloc::Natural = mi_alloc::Natural;
use pcml::chan::Chan;

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    let mode = match args.peek().map(String::as_str) {
        Some(m @ ("sync" | "async" | "tokio")) => m.to_string(),
        _ => "await".to_string(),
    };
    if mode != "await" {
        args.next();
    }
    let sync = mode == "sync";
    let n: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let procs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    if mode == "tokio" {
        tokio_pingpong(n, procs);
        return;
    }
    let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
    rt.block_on(move || {
        let (ping, pong) = (Chan::<u64>::new(), Chan::<u64>::new());
        let (p2, q2) = (ping.clone(), pong.clone());
        let t = std::time::Instant::now();
        let v = if sync {
            let ponger = pcml::spawn(move || {
                for _ in 0..n {
                    let v = p2.recv_evt().sync();
                    q2.send_evt(v + 1).sync();
                }
            });
            let mut v = 0;
            for _ in 0..n {
                ping.send_evt(v).sync();
                v = pong.recv_evt().sync();
            }
            ponger.join().unwrap();
            v
        } else if mode == "async" {
            pcml::spawn_task(async move {
                for _ in 0..n {
                    let v = p2.recv_async().await;
                    q2.send_async(v + 1).await;
                }
            });
            pcml::spawn_task(async move {
                let mut v = 0;
                for _ in 0..n {
                    ping.send_async(v).await;
                    v = pong.recv_async().await;
                }
                v
            })
            .join()
            .unwrap()
        } else {
            pcml::spawn_task(async move {
                for _ in 0..n {
                    let v = p2.recv_evt().await;
                    q2.send_evt(v + 1).await;
                }
            });
            pcml::spawn_task(async move {
                let mut v = 0;
                for _ in 0..n {
                    ping.send_evt(v).await;
                    v = pong.recv_evt().await;
                }
                v
            })
            .join()
            .unwrap()
        };
        let e = t.elapsed();
        assert_eq!(v, n);
        let what = match mode.as_str() {
            "sync" => "fibers, sync()",
            "async" => "tasks, recv_async/send_async",
            _ => "tasks, .await",
        };
        println!(
            "{procs}-proc ping-pong ({what}): {:.1} ns per message",
            e.as_nanos() as f64 / (2 * n) as f64
        );
    })
    .unwrap();
}

/// The bench's tokio peer: two tasks over a pair of `mpsc::channel(1)`, on a `current_thread`
/// runtime for one proc, else a `multi_thread` one of `procs` workers.
fn tokio_pingpong(n: u64, procs: usize) {
    let rt = tokio_rt::runtime(procs);
    let t = std::time::Instant::now();
    let v = rt.block_on(async move {
        let (ping_tx, mut ping_rx) = tokio::sync::mpsc::channel::<u64>(1);
        let (pong_tx, mut pong_rx) = tokio::sync::mpsc::channel::<u64>(1);
        tokio::spawn(async move {
            for _ in 0..n {
                let v = ping_rx.recv().await.unwrap();
                pong_tx.send(v + 1).await.unwrap();
            }
        });
        tokio::spawn(async move {
            let mut v = 0;
            for _ in 0..n {
                ping_tx.send(v).await.unwrap();
                v = pong_rx.recv().await.unwrap();
            }
            v
        })
        .await
        .unwrap()
    });
    assert_eq!(v, n);
    println!(
        "{procs}-proc ping-pong (tokio tasks, mpsc::channel(1)): {:.1} ns per message",
        t.elapsed().as_nanos() as f64 / (2 * n) as f64
    );
}
