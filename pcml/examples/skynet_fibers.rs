//! Profiling aid: the bench's skynet of fibers (each node `pcml::spawn`s its children, which
//! send their sums up a channel with a blocking `send`), `BRANCH`-ary over `LEAVES` leaves,
//! repeated `RUNS` times in one runtime of `PROCS` procs, as the bench's rows run it.
//!
//! `cargo run --release -p pcml --example skynet_fibers -- LEAVES BRANCH PROCS RUNS` (defaults
//! 729, 3, 2, 20). Prints each run's time and, on stderr, each proc's resumes, parks, steals,
//! wake-ups sent to other procs and blocks of spawns dealt in that run (see the `sched` docs).
//! Allocates with mimalloc through `mi_malloc`, as the bench binary does.
use pcml::chan::Chan;

fn node(first: u64, leaves: u64, branch: u64, out: Chan<u64>) {
    if leaves == 1 {
        out.send(first);
        return;
    }
    let ch = Chan::new();
    let kids = branch.min(leaves);
    let (step, extra) = (leaves / kids, leaves % kids);
    let mut lo = first;
    for k in 0..kids {
        let n = step + u64::from(k < extra);
        let c = ch.clone();
        pcml::spawn(move || node(lo, n, branch, c));
        lo += n;
    }
    let sum: u64 = (0..kids).map(|_| ch.recv()).sum();
    out.send(sum);
}

fn main() {
    let arg = |i: usize, d: u64| {
        std::env::args()
            .nth(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let (leaves, branch, procs, runs) = (arg(1, 729), arg(2, 3), arg(3, 2), arg(4, 20));
    let rt = pcml::Runtime::builder()
        .procs(procs as usize)
        .build()
        .unwrap();
    rt.block_on(move || {
        let mut times = Vec::new();
        for _ in 0..runs {
            let before = pcml::sched::metrics().unwrap();
            let t = std::time::Instant::now();
            let root = Chan::new();
            let out = root.clone();
            pcml::spawn(move || node(0, leaves, branch, out));
            assert_eq!(root.recv(), leaves * (leaves - 1) / 2);
            let us = t.elapsed().as_secs_f64() * 1e6;
            times.push(us);
            let m = pcml::sched::metrics().unwrap().since(&before);
            let line: Vec<String> = m
                .procs()
                .iter()
                .map(|p| {
                    format!(
                        "r{} p{} s{} i{} w{} d{} b{}",
                        p.resumes, p.parks, p.steals, p.injector_pulls, p.sent_wakes, p.blocks_dealt, p.bursts_dealt
                    )
                })
                .collect();
            eprintln!("{us:8.1} us  {}", line.join(" | "));
        }
        times.sort_by(f64::total_cmp);
        println!(
            "skynet {leaves}/{branch} fibers on {procs} procs: median {:.1} us (min {:.1}, max {:.1})",
            times[times.len() / 2],
            times[0],
            times[times.len() - 1]
        );
    })
    .unwrap();
}

#[path = "support/mi_alloc.rs"]
mod mi_alloc;

/// mimalloc, as the benchmark runs (its instruction counts match the bench's).
#[global_allocator]
static ALLOC: mi_alloc::Natural = mi_alloc::Natural;
