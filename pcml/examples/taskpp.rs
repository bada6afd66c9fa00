//! Profiling aid: ping-pong between two async tasks on one proc, over `recv_evt().await` and
//! `send_evt(v).await` (the one-branch event syncs' direct path); with the argument `sync`,
//! between two fibers over `recv_evt().sync()` and `send_evt(v).sync()` instead; with `async`,
//! between two tasks over `recv_async()` and `send_async(v)`; with `tokio`, between two tokio
//! tasks over a pair of `mpsc::channel(1)` on a `current_thread` runtime (the bench's peer).
//! A third argument runs it on that many procs (tokio: a `multi_thread` runtime of that many
//! workers), the scheduler placing the tasks. A fourth (`.await` mode only) runs that many
//! pairs one after the other on one runtime, as the benchmark's rows do, and prints for each
//! the process's CPU time per message and what each proc did (polls per message, steals).
//!
//! `cargo run --release -p pcml --example taskpp -- [sync|async|tokio] [messages/2] [procs] [runs]`

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
    let runs: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(0);
    if runs > 0 && mode == "await" {
        await_runs(n, procs, runs);
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
            await_pair(n).join().unwrap()
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

/// One `.await` pair of `n` round trips.
fn await_pair(n: u64) -> pcml::JoinHandle<u64> {
    let (ping, pong) = (Chan::<u64>::new(), Chan::<u64>::new());
    let (p2, q2) = (ping.clone(), pong.clone());
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
}

/// The process's CPU time (user and system) so far, in seconds.
fn cpu_seconds() -> f64 {
    // SAFETY: `getrusage` fills the struct it is given; all-zero bytes are a valid `rusage`.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a `rusage`, and `RUSAGE_SELF`.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(ru.ru_utime) + secs(ru.ru_stime)
}

/// `runs` `.await` pairs one after the other on one runtime of `procs` procs (after a warm-up
/// pair of a tenth the length), as the benchmark's rows run them.
fn await_runs(n: u64, procs: usize, runs: usize) {
    let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
    rt.block_on(move || {
        assert_eq!(await_pair(n / 10 + 1).join().unwrap(), n / 10 + 1);
        for _ in 0..runs {
            let before = pcml::sched::metrics().unwrap();
            let (t, cpu) = (std::time::Instant::now(), cpu_seconds());
            assert_eq!(await_pair(n).join().unwrap(), n);
            let msgs = (2 * n) as f64;
            let wall = t.elapsed().as_nanos() as f64 / msgs;
            let cpu = (cpu_seconds() - cpu) * 1e9 / msgs;
            let m = pcml::sched::metrics().unwrap().since(&before);
            let procs: Vec<String> = m
                .procs()
                .iter()
                .map(|p| format!("polls {:.2} steals {}", p.polls as f64 / msgs, p.steals))
                .collect();
            println!(
                "{wall:.1} ns per message, CPU {cpu:.1} ns | {}",
                procs.join(" | ")
            );
        }
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
