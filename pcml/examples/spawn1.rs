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
        let before = pcml::sched::metrics().unwrap();
        let (cpu0, all0) = (thread_cpu(), process_cpu());
        let t = std::time::Instant::now();
        let mut sum = 0;
        for i in 0..n {
            sum += pcml::spawn(move || std::hint::black_box(i)).join().unwrap();
        }
        let e = t.elapsed();
        let (cpu, all) = (thread_cpu() - cpu0, process_cpu() - all0);
        assert_eq!(sum, n * (n - 1) / 2);
        let m = pcml::sched::metrics().unwrap().since(&before);
        for (i, p) in m.procs().iter().enumerate() {
            eprintln!(
                "proc {i}: resumes {} parks {} steals {} cross-proc wakes {}",
                p.resumes, p.parks, p.steals, p.sent_wakes
            );
        }
        println!(
            "{procs}-proc spawn+join: {:.1} ns each",
            e.as_nanos() as f64 / n as f64
        );
        eprintln!(
            "CPU time per spawn+join: {:.1} ns on the spawner's thread, {:.1} ns the whole process",
            cpu as f64 / n as f64,
            all as f64 / n as f64
        );
    })
    .unwrap();
}

/// The calling thread's CPU time, in nanoseconds.
fn thread_cpu() -> u64 {
    clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The process's CPU time (all threads), in nanoseconds.
fn process_cpu() -> u64 {
    clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn clock(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out pointer.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
