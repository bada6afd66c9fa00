//! Profiling aid: Reppy, Russo and Xiao's parallel ping-pong, 8 pairs with the two fibers of pair i on
//! procs i mod P and i+1 mod P (every message crosses procs on 2 procs), each ponger spawned
//! before its pinger, as the bench does.
//!
//! `PCML_PROCS=P cargo run --release -p pcml --example parpp -- N [THREADS] [spawn]`: N round
//! trips a pair (100,000), on THREADS OS threads (`Builder::carrier_threads`; the default if
//! not given); prints the rate, the run's resumes, parks, cross-proc wake-ups, steals and
//! bursts dealt (see the `sched` docs), and
//! the proc on which each pair's ponger and pinger started (`01`: a pair split across procs,
//! every message of it a cross-proc wake-up); then when each pair ended, and each thread's CPU
//! time and wait for a core over the run, with the cores the OS gave the run in all (their
//! CPU time over the run's wall time). With
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
    // When each pinger ended, in microseconds since the timed burst began.
    static DONE: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];
    static T0: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
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
                                if let Some(t0) = T0.get() {
                                    DONE[i].store(t0.elapsed().as_micros() as usize, Relaxed);
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
        let sched0 = schedstats();
        let t = *T0.get_or_init(std::time::Instant::now);
        pairs(n).into_iter().for_each(|h| h.join().unwrap());
        let e = t.elapsed();
        let sched1 = schedstats();
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
        let done: Vec<String> = DONE
            .iter()
            .map(|d| format!("{:.1}", d.load(Relaxed) as f64 / 1e3))
            .collect();
        println!("  each pair ended at (ms): {}", done.join(" "));
        // Each thread's CPU time over the burst and its wait for a core; together, the cores
        // the OS gave the run (beside a busy process in another session, one of two: the
        // `sched` docs, "Beside a busy process a dealt burst runs at the speed of one proc").
        let mut ran_all = 0;
        let mut per_thread = Vec::new();
        for (tid, (name, ran, waited)) in &sched1 {
            let (_, ran0, waited0) = sched0.get(tid).cloned().unwrap_or_default();
            let (ran, waited) = (ran - ran0, waited - waited0);
            ran_all += ran;
            if ran >= 1_000_000 {
                per_thread.push(format!(
                    "{name} ran {:.1} ms, waited {:.1} ms",
                    ran as f64 / 1e6,
                    waited as f64 / 1e6
                ));
            }
        }
        println!(
            "  cores used {:.2}: {}",
            ran_all as f64 / e.as_nanos() as f64,
            per_thread.join("; ")
        );
    })
    .unwrap();
}

/// Each thread of the process by id: its name, its CPU time and its time spent waiting for a
/// core, in ns (the first two fields of `/proc/self/task/<tid>/schedstat`; empty where the
/// kernel has no such file).
fn schedstats() -> std::collections::BTreeMap<u64, (String, u64, u64)> {
    let mut threads = std::collections::BTreeMap::new();
    let tasks = std::fs::read_dir("/proc/self/task").into_iter().flatten();
    for task in tasks.flatten() {
        let Ok(tid) = task.file_name().to_string_lossy().parse::<u64>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) else {
            continue;
        };
        let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        let mut fields = stat.split_whitespace().map(|f| f.parse::<u64>().ok());
        if let (Some(Some(ran)), Some(Some(waited))) = (fields.next(), fields.next()) {
            threads.insert(tid, (name.trim().to_string(), ran, waited));
        }
    }
    threads
}
