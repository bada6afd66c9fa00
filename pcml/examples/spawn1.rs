//! Profiling aid: spawn a trivial fiber and join it, over and over, on one proc (Reppy, Russo
//! and Xiao's spawn benchmark; `join` runs the unstarted child inline).
//!
//! `cargo run --release -p pcml --example spawn1 -- N PROCS`: N spawns (1,000,000) on a runtime
//! of PROCS procs (1; with more, the others are idle and may steal the child).
fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let procs: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
    rt.block_on(move || {
        let t = std::time::Instant::now();
        let mut sum = 0;
        for i in 0..n {
            sum += pcml::spawn(move || std::hint::black_box(i)).join().unwrap();
        }
        let e = t.elapsed();
        assert_eq!(sum, n * (n - 1) / 2);
        println!(
            "{procs}-proc spawn+join: {:.1} ns each",
            e.as_nanos() as f64 / n as f64
        );
    })
    .unwrap();
}
