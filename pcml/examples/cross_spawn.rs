//! Profiling aid: a parent on proc 0 spawning children on proc 1 and joining each (Reppy, Russo and Xiao's
//! 2-proc spawn), and a cross-proc join round trip.
fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    rt.block_on(move || {
        for _ in 0..3 {
            let t = std::time::Instant::now();
            for i in 0..n {
                assert_eq!(pcml::spawn_on(1, move || i).join().unwrap(), i);
            }
            let e = t.elapsed();
            println!(
                "spawn_on(1)+join: {:.0} ns each",
                e.as_nanos() as f64 / n as f64
            );
        }
    })
    .unwrap();
}
