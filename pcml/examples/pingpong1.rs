//! Profiling aid: ping-pong between two fibers on one proc.
//!
//! Prints the wall-clock time per message, and how that time splits between the proc's OS
//! thread running and it waiting for a core (from `/proc/thread-self/schedstat`, read around
//! the loop on the proc's thread, which runs both fibers). On a shared machine the wall figure
//! follows the share of a core the thread gets; the time on the CPU is the program's own cost.
use pcml::chan::Chan;

/// The calling thread's time on a CPU and time runnable but waiting for one, in ns (zeros
/// where the kernel does not say).
fn sched_times() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let mut v = s.split_whitespace().map(|x| x.parse().unwrap_or(0));
    (v.next().unwrap_or(0), v.next().unwrap_or(0))
}

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
        let (cpu0, wait0) = sched_times();
        let t = std::time::Instant::now();
        let mut v = 0;
        for _ in 0..n {
            ping.send(v);
            v = pong.recv();
        }
        let e = t.elapsed();
        let (cpu1, wait1) = sched_times();
        assert_eq!(v, n);
        ponger.join().unwrap();
        let per = |ns: f64| ns / (2 * n) as f64;
        println!(
            "1-proc ping-pong: {:.1} ns per message ({:.1} ns on the CPU, {:.1} ns waiting for a core)",
            per(e.as_nanos() as f64),
            per(cpu1.saturating_sub(cpu0) as f64),
            per(wait1.saturating_sub(wait0) as f64),
        );
    })
    .unwrap();
}
