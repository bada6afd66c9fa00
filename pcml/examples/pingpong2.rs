//! Profiling aid: ping-pong between a fiber on proc 0 and one on proc 1.
use pcml::chan::Chan;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    rt.block_on(move || {
        for _ in 0..3 {
            let (ping, pong) = (Chan::<u64>::new(), Chan::<u64>::new());
            let (p2, q2) = (ping.clone(), pong.clone());
            let ponger = pcml::spawn_on(1, move || {
                for _ in 0..n {
                    let v = p2.recv();
                    q2.send(v + 1);
                }
            });
            let t = std::time::Instant::now();
            let pinger = pcml::spawn_on(0, move || {
                let mut v = 0;
                for _ in 0..n {
                    ping.send(v);
                    v = pong.recv();
                }
                v
            });
            if std::env::args().nth(2).as_deref() == Some("ponger-first") {
                ponger.join().unwrap();
                assert_eq!(pinger.join().unwrap(), n);
            } else {
                assert_eq!(pinger.join().unwrap(), n);
                ponger.join().unwrap();
            }
            let e = t.elapsed();
            println!(
                "2-proc ping-pong: {:.0} ns per message",
                e.as_nanos() as f64 / (2 * n) as f64
            );
        }
    })
    .unwrap();
}
