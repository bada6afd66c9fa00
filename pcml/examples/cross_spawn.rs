//! Profiling aid: a parent on proc 0 spawning children on proc 1 and joining each (Reppy, Russo and Xiao's
//! 2-proc spawn), and a cross-proc join round trip.
//!
//! `cargo run --release -p pcml --example cross_spawn -- N PROCS`: N children per run (20,000),
//! on a runtime of PROCS procs (2; with more, the others have nothing to do but look for work).
//! Prints the time per child and the parks per child of the run.
fn main() {
    let arg = |i: usize, d: u64| {
        std::env::args()
            .nth(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let (n, procs) = (arg(1, 20_000), arg(2, 2) as usize);
    let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
    rt.block_on(move || {
        for _ in 0..3 {
            let before = pcml::sched::metrics().unwrap();
            let t = std::time::Instant::now();
            for i in 0..n {
                assert_eq!(pcml::spawn_on(1, move || i).join().unwrap(), i);
            }
            let e = t.elapsed();
            let m = pcml::sched::metrics().unwrap().since(&before).total();
            println!(
                "{procs} procs, spawn_on(1)+join: {:.0} ns each, {:.3} parks each",
                e.as_nanos() as f64 / n as f64,
                m.parks as f64 / n as f64
            );
        }
    })
    .unwrap();
}
