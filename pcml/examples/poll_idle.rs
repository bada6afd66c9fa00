//! Profiling aid: the price of a `poll` that finds nothing (a `select!` with a `default` arm
//! that takes it), over a choice of `k` idle channels, on one proc. Usage:
//! `poll_idle [polls] [k]`.
use pcml::chan::Chan;
use pcml::event::choose;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let k: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2);
    let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    rt.block_on(move || {
        let chans: Vec<Chan<u64>> = (0..k).map(|_| Chan::new()).collect();
        let t = std::time::Instant::now();
        let mut misses = 0u64;
        for _ in 0..n {
            if choose(chans.iter().map(|c| c.recv_evt())).poll().is_none() {
                misses += 1;
            }
        }
        let e = t.elapsed();
        assert_eq!(misses, n);
        println!(
            "poll of a choice over {k} idle channels: {:.1} ns per poll",
            e.as_nanos() as f64 / n as f64
        );
    })
    .unwrap();
}
