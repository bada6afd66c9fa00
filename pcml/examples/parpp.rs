//! Profiling aid: Reppy, Russo and Xiao's parallel ping-pong, 8 pairs with the two fibers of pair i on
//! procs i mod P and i+1 mod P (every message crosses procs on 2 procs), each ponger spawned
//! before its pinger, as the bench does.
//!
//! `PCML_PROCS=P cargo run --release -p pcml --example parpp -- N [THREADS] [spawn]`: N round
//! trips a pair (100,000), on THREADS OS threads (`Builder::carrier_threads`; the default if
//! not given); prints the rate, the run's resumes, parks, cross-proc wake-ups, steals and
//! bursts dealt (see the `sched` docs), and
//! the proc on which each pair's ponger and pinger started (`01`: a pair split across procs,
//! every message of it a cross-proc wake-up). With
//! `spawn`, every fiber is placed by the scheduler (`pcml::spawn`), as the bench's "(spawn)"
//! row. With `warm`, the same 8 pairs with a tenth of the round trips run first, and the
//! measured burst is spawned as soon as they are joined, as in each run of the bench's rows
//! (a runtime, a short warm-up, the timed run).
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use pcml::chan::Chan;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let procs = pcml::mp::procs();
    let spawned = std::env::args().any(|a| a == "spawn");
    let warm = std::env::args().any(|a| a == "warm");
    let place = move |on: usize, f: Box<dyn FnOnce() + Send>| {
        if spawned {
            pcml::spawn(f)
        } else {
            pcml::spawn_on(on, f)
        }
    };
    // An optional second argument: the runtime's OS threads (`Builder::carrier_threads`).
    let mut builder = pcml::Runtime::builder();
    if let Some(c) = std::env::args().nth(2).and_then(|s| s.parse().ok()) {
        builder = builder.carrier_threads(c);
    }
    let rt = builder.build().unwrap();
    // The proc each fiber started on (ponger 2i, pinger 2i + 1).
    static ON: [AtomicUsize; 16] = [const { AtomicUsize::new(0) }; 16];
    let started = |k: usize| ON[k].store(pcml::current_proc().unwrap_or(0), Relaxed);
    rt.block_on(move || {
        let pairs = |n: u64| -> Vec<pcml::JoinHandle<()>> {
            (0..8usize)
                .flat_map(|i| {
                    let (ping, pong) = (Chan::<u64>::new(), Chan::<u64>::new());
                    let (p2, q2) = (ping.clone(), pong.clone());
                    [
                        place(
                            (i + 1) % procs,
                            Box::new(move || {
                                started(2 * i);
                                for _ in 0..n {
                                    let v = p2.recv();
                                    q2.send(v + 1);
                                }
                            }),
                        ),
                        place(
                            i % procs,
                            Box::new(move || {
                                started(2 * i + 1);
                                for v in 0..n {
                                    ping.send(v);
                                    assert_eq!(pong.recv(), v + 1);
                                }
                            }),
                        ),
                    ]
                })
                .collect()
        };
        if warm {
            pairs(n / 10 + 1)
                .into_iter()
                .for_each(|h| h.join().unwrap());
        }
        let before = pcml::sched::metrics().unwrap();
        let t = std::time::Instant::now();
        pairs(n).into_iter().for_each(|h| h.join().unwrap());
        let e = t.elapsed();
        let m = pcml::sched::metrics().unwrap().since(&before).total();
        let layout: String = (0..16)
            .map(|k| {
                let on = ON[k].load(Relaxed).to_string();
                if k % 2 == 1 { on + " " } else { on }
            })
            .collect();
        println!(
            "parallel ping-pong on {procs} procs: {:.2} M msgs/s (resumes {}, parks {}, \
             wakes across procs {}, steals {}, bursts dealt {}; procs of each pair's ponger \
             and pinger: {})",
            16.0 * n as f64 / e.as_secs_f64() / 1e6,
            m.resumes,
            m.parks,
            m.sent_wakes,
            m.steals,
            m.bursts_dealt,
            layout.trim_end()
        );
    })
    .unwrap();
}
