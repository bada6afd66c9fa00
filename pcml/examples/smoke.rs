//! Quick timing of the runtime's primitives (the full report is `cargo run -p pcml-bench`).
use std::time::Instant;

fn rate(n: u64, t: std::time::Duration) -> f64 {
    n as f64 / t.as_secs_f64() / 1e6
}

fn main() {
    let n = 2_000_000u64;
    for procs in [1, 2] {
        let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
        rt.block_on(move || {
            for _ in 0..3 {
                let t = Instant::now();
                for i in 0..n {
                    let h = pcml::spawn(move || i);
                    assert_eq!(h.join().unwrap(), i);
                }
                let spawn = t.elapsed();
                let t = Instant::now();
                for i in 0..n / 4 {
                    let h = pcml::spawn_task(async move { i });
                    assert_eq!(h.join().unwrap(), i);
                }
                let task = t.elapsed();
                let t = Instant::now();
                let other = pcml::spawn_on(0, move || {
                    for _ in 0..n {
                        pcml::yield_now();
                    }
                });
                for _ in 0..n {
                    pcml::yield_now();
                }
                other.join().unwrap();
                let y = t.elapsed();
                println!(
                    "procs {procs}: fiber spawn+join {:.2} M/s, task spawn+join {:.2} M/s, yield {:.1} ns/switch",
                    rate(n, spawn),
                    rate(n / 4, task),
                    y.as_nanos() as f64 / (2 * n) as f64
                );
            }
        })
        .unwrap();
    }
    // Bare corosensei resume+suspend.
    let mut co = corosensei::Coroutine::<(), (), ()>::new(|y, ()| {
        loop {
            y.suspend(());
        }
    });
    let t = Instant::now();
    for _ in 0..n * 4 {
        co.resume(());
    }
    println!(
        "bare corosensei resume+suspend: {:.1} ns",
        t.elapsed().as_nanos() as f64 / (4 * n) as f64
    );
}
