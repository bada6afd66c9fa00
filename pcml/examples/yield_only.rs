//! Profiling aid: two fibers yielding to each other on one proc.
fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(5_000_000);
    let mode = std::env::args().nth(2).unwrap_or_default();
    let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    rt.block_on(move || {
        let t = std::time::Instant::now();
        if mode == "spawn" {
            for i in 0..n {
                pcml::spawn(move || i).join().unwrap();
            }
        } else {
            let other = pcml::spawn(move || {
                for _ in 0..n {
                    pcml::yield_now();
                }
            });
            for _ in 0..n {
                pcml::yield_now();
            }
            other.join().unwrap();
        }
        println!("{:?}", t.elapsed());
    })
    .unwrap();
}
