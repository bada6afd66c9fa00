//! Profiling aid: K compute-bound async tasks spawned on one proc, which the other procs must
//! take from its queue to share the work (on a busy machine, the spawner's thread may be off
//! its core when they look).
//!
//! `cargo run --release -p pcml --example spread -- K SLICES [PROCS] [RUNS]`: K tasks (16), each
//! computing SLICES slices (80) of a fixed computation (`SLICE` steps of a xorshift, about 50 us
//! on the 2-core machine this is developed on) with a `yield_async` after each, spawned by main
//! on proc 0 of PROCS procs (2), RUNS runs (5). Prints each run's wall time, the steals, and how
//! many slices ran on each proc.
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

/// Xorshift steps in a slice of a task's work.
const SLICE: u32 = 30_000;

fn main() {
    let arg = |i: usize| std::env::args().nth(i).and_then(|s| s.parse::<u64>().ok());
    let k = arg(1).unwrap_or(16) as usize;
    let slices = arg(2).unwrap_or(80);
    let procs = arg(3).unwrap_or(2) as usize;
    let runs = arg(4).unwrap_or(5);
    let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
    rt.block_on(move || {
        for _ in 0..runs {
            let before = pcml::sched::metrics().unwrap();
            let ran_on: Arc<Vec<AtomicUsize>> =
                Arc::new((0..procs).map(|_| AtomicUsize::new(0)).collect());
            let t = Instant::now();
            let hs: Vec<_> = (0..k)
                .map(|_| {
                    let ran_on = ran_on.clone();
                    pcml::spawn_task(async move {
                        let mut x = 0x9e37_79b9_7f4a_7c15u64;
                        for _ in 0..slices {
                            for _ in 0..SLICE {
                                x ^= x << 13;
                                x ^= x >> 7;
                                x ^= x << 17;
                            }
                            std::hint::black_box(x);
                            ran_on[pcml::current_proc().unwrap()].fetch_add(1, Relaxed);
                            pcml::yield_async().await;
                        }
                    })
                })
                .collect();
            hs.into_iter().for_each(|h| h.join().unwrap());
            let e = t.elapsed();
            let m = pcml::sched::metrics().unwrap().since(&before);
            let steals: u64 = m.procs().iter().map(|p| p.steals).sum();
            let on: Vec<usize> = ran_on.iter().map(|c| c.load(Relaxed)).collect();
            println!(
                "{k} tasks of {slices} slices on {procs} procs: {:.1} ms (steals {steals}, \
                 slices run on each proc {on:?})",
                e.as_secs_f64() * 1e3
            );
        }
    })
    .unwrap();
}
