//! Profiling aid: ping-pong between a fiber on proc 0 and one on proc 1.
//!
//! `cargo run --release -p pcml --example pingpong2 -- N [MODE] [PROCS] [RUNS]`: N round trips
//! (200,000) a run. MODE `ponger-first` joins the ponger first; MODE `spawn` places both fibers
//! with `pcml::spawn` (the scheduler keeps them on one proc unless an idle proc steals one) on
//! a runtime of PROCS procs (2); MODE `placed` puts the pinger on proc 0 and the ponger on the
//! last of PROCS procs, as the bench's paper-placed row does (with more procs than cores, on
//! two OS threads). RUNS runs (3), each printed with its steals, cross-proc wake-ups and parks.
//! MODE `threads` runs no runtime: two plain OS threads hand a counter back and forth, each
//! parking until it is its turn (`std::thread::park`, a futex), the floor of any hop between
//! two procs whose threads sleep while they wait (see the `sched` docs, "Explicit placement
//! on a busy machine"); alternate it with `placed` to compare the two in the same moment.
use pcml::chan::Chan;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// `n` round trips between two OS threads that park until it is their turn; ns a message.
fn os_threads(n: u64) -> f64 {
    // Odd values: the second thread's turn; even: the first's. Release stores pair with the
    // Acquire loads of the waiter.
    let turn = Arc::new(AtomicU64::new(0));
    let wait = |turn: &AtomicU64, want: u64| {
        while turn.load(Ordering::Acquire) != want {
            std::thread::park();
        }
    };
    let first = std::thread::current();
    let t2 = turn.clone();
    let second = std::thread::spawn(move || {
        for i in 0..n {
            wait(&t2, 2 * i + 1);
            t2.store(2 * i + 2, Ordering::Release);
            first.unpark();
        }
    });
    let start = std::time::Instant::now();
    for i in 0..n {
        turn.store(2 * i + 1, Ordering::Release);
        second.thread().unpark();
        wait(&turn, 2 * i + 2);
    }
    let e = start.elapsed();
    second.join().unwrap();
    e.as_nanos() as f64 / (2 * n) as f64
}

fn main() {
    let arg = |i: usize| std::env::args().nth(i);
    let n: u64 = arg(1).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let mode = arg(2).unwrap_or_default();
    let spawn = mode == "spawn";
    let placed = mode == "placed";
    let procs: usize = arg(3).and_then(|s| s.parse().ok()).unwrap_or(2);
    let runs: usize = arg(4).and_then(|s| s.parse().ok()).unwrap_or(3);
    if mode == "threads" {
        for _ in 0..runs {
            println!(
                "2 OS threads: {:.0} ns per message (futex hand-off)",
                os_threads(n)
            );
        }
        return;
    }
    let rt = pcml::Runtime::builder()
        .procs(if spawn || placed { procs } else { 2 })
        .build()
        .unwrap();
    rt.block_on(move || {
        for _ in 0..runs {
            let before = pcml::sched::metrics().unwrap();
            let (ping, pong) = (Chan::<u64>::new(), Chan::<u64>::new());
            let (p2, q2) = (ping.clone(), pong.clone());
            let ponger_body = move || {
                for _ in 0..n {
                    let v = p2.recv();
                    q2.send(v + 1);
                }
            };
            let ponger = if spawn {
                pcml::spawn(ponger_body)
            } else {
                pcml::spawn_on(pcml::procs() - 1, ponger_body)
            };
            let t = std::time::Instant::now();
            let pinger_body = move || {
                let mut v = 0;
                for _ in 0..n {
                    ping.send(v);
                    v = pong.recv();
                }
                v
            };
            let pinger = if spawn {
                pcml::spawn(pinger_body)
            } else {
                pcml::spawn_on(0, pinger_body)
            };
            if mode == "ponger-first" {
                ponger.join().unwrap();
                assert_eq!(pinger.join().unwrap(), n);
            } else {
                assert_eq!(pinger.join().unwrap(), n);
                ponger.join().unwrap();
            }
            let e = t.elapsed();
            let m = pcml::sched::metrics().unwrap().since(&before);
            let steals: u64 = m.procs().iter().map(|p| p.steals).sum();
            let wakes: u64 = m.procs().iter().map(|p| p.sent_wakes).sum();
            let parks: u64 = m.procs().iter().map(|p| p.parks).sum();
            println!(
                "{}-proc ping-pong: {:.0} ns per message (steals {steals}, cross-proc wake-ups \
                 {wakes}, parks {parks})",
                pcml::procs(),
                e.as_nanos() as f64 / (2 * n) as f64
            );
        }
    })
    .unwrap();
}
