//! Profiling aid: ping-pong between two fibers on one proc.
use pcml::chan::Chan;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    rt.block_on(move || {
        let (ping, pong) = (Chan::<u64>::new(), Chan::<u64>::new());
        let (p2, q2) = (ping.clone(), pong.clone());
        let ponger = pcml::spawn(move || {
            for _ in 0..n {
                let v = p2.recv();
                q2.send(v + 1);
            }
        });
        pcml::yield_now();
        let t = std::time::Instant::now();
        let mut v = 0;
        for _ in 0..n {
            ping.send(v);
            v = pong.recv();
        }
        let e = t.elapsed();
        assert_eq!(v, n);
        ponger.join().unwrap();
        println!(
            "1-proc ping-pong: {:.1} ns per message",
            e.as_nanos() as f64 / (2 * n) as f64
        );
    })
    .unwrap();
}
