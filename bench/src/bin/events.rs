//! Event and channel microbenchmarks: ping-pong on one proc and across two, eight
//! parallel pairs on one and two procs, and a receiver choosing over 1, 4 and 16 channels.
//!
//! One message is one completed send/receive rendezvous (a ping-pong round trip is two).
//! Each figure is the median of 5 runs, in messages per second.
//!
//! Run: `cargo run --release -p pcml-bench --bin events` (set `EVENTS_SCALE=0.1` for a quick
//! look).

use std::time::Instant;

use pcml::chan::Chan;
use pcml::event::select;

fn scale() -> f64 {
    std::env::var("EVENTS_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.0)
}

fn runtime(procs: usize) -> pcml::Runtime {
    pcml::Runtime::builder().procs(procs).build().unwrap()
}

/// Two fibers bounce a counter `rounds` times, on `procs` (0 and 1 if two procs).
fn ping_pong(procs: usize, rounds: u64) -> f64 {
    let rt = runtime(procs);
    rt.block_on(move || {
        let (ping, pong) = (Chan::new(), Chan::new());
        let (p2, q2) = (ping.clone(), pong.clone());
        let start = Instant::now();
        let a = pcml::spawn_on(0, move || {
            for i in 0..rounds {
                ping.send(i);
                let _ = pong.recv();
            }
        });
        let b = pcml::spawn_on(procs - 1, move || {
            for _ in 0..rounds {
                let v: u64 = p2.recv();
                q2.send(v);
            }
        });
        a.join().unwrap();
        b.join().unwrap();
        (2 * rounds) as f64 / start.elapsed().as_secs_f64()
    })
    .unwrap()
}

/// Eight independent ping-pong pairs, pair `i` on proc `i % procs`.
fn parallel_pairs(procs: usize, rounds: u64) -> f64 {
    let rt = runtime(procs);
    rt.block_on(move || {
        let start = Instant::now();
        let mut hs = Vec::new();
        for i in 0..8 {
            let (ping, pong) = (Chan::new(), Chan::new());
            let (p2, q2) = (ping.clone(), pong.clone());
            hs.push(pcml::spawn_on(i % procs, move || {
                for i in 0..rounds {
                    ping.send(i);
                    let _ = pong.recv();
                }
            }));
            hs.push(pcml::spawn_on(i % procs, move || {
                for _ in 0..rounds {
                    let v: u64 = p2.recv();
                    q2.send(v);
                }
            }));
        }
        for h in hs {
            h.join().unwrap();
        }
        (8 * 2 * rounds) as f64 / start.elapsed().as_secs_f64()
    })
    .unwrap()
}

/// One sender cycles over `k` channels; one receiver selects over all of them. One proc.
fn choose_over(k: usize, msgs: u64) -> f64 {
    let rt = runtime(1);
    rt.block_on(move || {
        let chans: Vec<Chan<u64>> = (0..k).map(|_| Chan::new()).collect();
        let tx = chans.clone();
        let start = Instant::now();
        let s = pcml::spawn(move || {
            for i in 0..msgs {
                tx[(i as usize) % k].send(i);
            }
        });
        let mut sum = 0u64;
        for _ in 0..msgs {
            sum = sum.wrapping_add(select(chans.iter().map(|c| c.recv_evt())));
        }
        s.join().unwrap();
        assert_eq!(sum, msgs * (msgs - 1) / 2);
        msgs as f64 / start.elapsed().as_secs_f64()
    })
    .unwrap()
}

fn median(mut f: impl FnMut() -> f64) -> f64 {
    let mut v: Vec<f64> = (0..5).map(|_| f()).collect();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[2]
}

fn report(name: &str, rate: f64) {
    println!("{name:<28} {:>8.2} M msgs/s", rate / 1e6);
}

fn main() {
    let s = scale();
    let n = |base: f64| ((base * s) as u64).max(1000);
    println!("pcml events benchmark: median of 5 runs; one message = one rendezvous");
    report("ping-pong, 1 proc", median(|| ping_pong(1, n(1_000_000.0))));
    report("ping-pong, 2 procs", median(|| ping_pong(2, n(200_000.0))));
    report(
        "8 pairs, 1 proc",
        median(|| parallel_pairs(1, n(125_000.0))),
    );
    report(
        "8 pairs, 2 procs",
        median(|| parallel_pairs(2, n(125_000.0))),
    );
    for k in [1, 4, 16] {
        report(
            &format!("choose over {k:>2} chans, 1 proc"),
            median(|| choose_over(k, n(500_000.0))),
        );
    }
}
