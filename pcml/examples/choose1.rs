//! Profiling aid: on one proc, a fiber sends on `k` channels in turn and another receives with
//! a choice over all of them (`select`). Usage: `choose1 [messages] [k]`.
use pcml::chan::Chan;
use pcml::event::select;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(500_000);
    let k: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(4);
    let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    rt.block_on(move || {
        let chans: Vec<Chan<u64>> = (0..k).map(|_| Chan::new()).collect();
        let tx = chans.clone();
        let t = std::time::Instant::now();
        let s = pcml::spawn(move || {
            for i in 0..n {
                tx[(i as usize) % k].send(i);
            }
        });
        let mut sum = 0u64;
        for _ in 0..n {
            sum = sum.wrapping_add(select(chans.iter().map(|c| c.recv_evt())));
        }
        let e = t.elapsed();
        s.join().unwrap();
        assert_eq!(sum, n * (n - 1) / 2);
        println!(
            "choice over {k} channels: {:.1} ns per message",
            e.as_nanos() as f64 / n as f64
        );
    })
    .unwrap();
}
