//! A worker pool, the channel idiom Go, crossbeam-channel and tokio users write first: 4
//! workers take jobs from a buffered channel (capacity 64) with `for job in &jobs`, send each
//! result (the job times 2) on a second buffered channel, and stop when the producer, done,
//! drops its sender; the results loop ends when the last worker is gone. One operation is one
//! job (two channel messages: the job and its result); figures are jobs per second.
//!
//! pcml runs it with fibers over `pcml::chan::bounded(64)` halves (the scheduler places the
//! fibers); crossbeam-channel with OS threads over `crossbeam_channel::bounded(64)`; Go with
//! goroutines, `make(chan int, 64)`, `for j := range jobs`, `close` and a `sync.WaitGroup`
//! (`bench/peers/go`, program `workerpool`).
//!
//! The answer: the results sum to `n (n - 1)` and there are `n` of them.

use super::{Ctx, in_pcml};
use crate::peers::{Peer, PeerArgs};
use crate::runner::{Error, Metric, Result, Sample, check_eq, repeat, timed};
use crate::table::{Row, Section};

const RATE: Metric = Metric::Rate { unit: "jobs/s" };

/// Workers in the pool.
pub const WORKERS: usize = 4;
/// Capacity of the jobs and the results channels.
pub const BUFFER: usize = 64;

fn check(n: u64, count: u64, sum: u64) -> Result<()> {
    check_eq("results", n, count)?;
    check_eq("sum of results", n * n.saturating_sub(1), sum)
}

/// One pool of pcml fibers doing `n` jobs; checks the results.
pub fn fiber_pool(n: u64) -> Result<()> {
    let (jobs_tx, jobs) = pcml::chan::bounded::<u64>(BUFFER);
    let (results_tx, results) = pcml::chan::bounded::<u64>(BUFFER);
    for _ in 0..WORKERS {
        let (jobs, results_tx) = (jobs.clone(), results_tx.clone());
        pcml::spawn(move || {
            for job in &jobs {
                results_tx.send(2 * job).expect("the results loop is alive");
            }
        });
    }
    drop((jobs, results_tx));
    pcml::spawn(move || {
        for j in 0..n {
            jobs_tx.send(j).expect("the workers are alive");
        }
    });
    let (mut count, mut sum) = (0u64, 0u64);
    for r in &results {
        count += 1;
        sum += r;
    }
    check(n, count, sum)
}

/// pcml fibers: `n` jobs per run on a runtime of `procs` procs.
pub fn fibers(procs: usize, n: u64, runs: usize) -> Result<Vec<Sample>> {
    in_pcml(procs, move || {
        fiber_pool(n / 10 + 1)?;
        repeat(runs, || timed(n, || fiber_pool(n)))
    })
}

/// One pool of OS threads over crossbeam-channel doing `n` jobs; checks the results.
pub fn crossbeam_pool(n: u64) -> Result<()> {
    let (jobs_tx, jobs) = crossbeam_channel::bounded::<u64>(BUFFER);
    let (results_tx, results) = crossbeam_channel::bounded::<u64>(BUFFER);
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (jobs, results_tx) = (jobs.clone(), results_tx.clone());
            std::thread::spawn(move || {
                for job in &jobs {
                    results_tx.send(2 * job).expect("the results loop is alive");
                }
            })
        })
        .collect();
    drop((jobs, results_tx));
    let producer = std::thread::spawn(move || {
        for j in 0..n {
            jobs_tx.send(j).expect("the workers are alive");
        }
    });
    let (mut count, mut sum) = (0u64, 0u64);
    for r in &results {
        count += 1;
        sum += r;
    }
    let panicked = |_| Error::Failed("a crossbeam worker panicked".into());
    producer.join().map_err(panicked)?;
    for w in workers {
        w.join().map_err(panicked)?;
    }
    check(n, count, sum)
}

/// crossbeam-channel on OS threads: `n` jobs per run.
pub fn crossbeam_threads(n: u64, runs: usize) -> Result<Vec<Sample>> {
    crossbeam_pool(n / 10 + 1)?;
    repeat(runs, || timed(n, || crossbeam_pool(n)))
}

/// Measures pcml and the peers.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let runs = ctx.cfg.runs;
    let n = ctx.size(200_000, 1_000_000);
    let prog = "worker pool";
    let shape = format!("{WORKERS} workers, `for job in &jobs`, buffers of {BUFFER}");
    for &p in &ctx.cfg.procs {
        ctx.step(&format!("worker pool: pcml fibers on {p} procs"));
        let n = ctx.fit(n, |k| fibers(p, k, 1))?;
        let s = fibers(p, n, runs)?;
        sec.rows.push(
            Row::measured(prog, "pcml fibers", Some(p), RATE, &s)
                .with_note(&format!("{shape}; `chan::bounded` halves")),
        );
    }
    ctx.step("worker pool: crossbeam-channel on OS threads");
    let s = crossbeam_threads(n, runs)?;
    sec.rows.push(
        Row::measured(prog, "crossbeam-channel (OS threads)", None, RATE, &s)
            .with_note(&format!("{shape}; `crossbeam_channel::bounded`")),
    );
    for &p in &ctx.cfg.procs {
        let args = PeerArgs {
            n,
            procs: Some(p),
            branch: None,
            reps: None,
        };
        let row = ctx.peers.row(
            ctx.progress,
            prog,
            Peer::Go,
            "workerpool",
            &args,
            Some("jobs"),
            RATE,
            runs,
        )?;
        sec.rows.push(row);
    }
    for &p in &ctx.cfg.procs {
        sec.add_ratio(
            &format!("worker pool: pcml fibers {p}P / Go GOMAXPROCS={p}"),
            (prog, "pcml fibers", Some(p)),
            (prog, "Go", Some(p)),
            None,
        );
        sec.add_ratio(
            &format!("worker pool: pcml fibers {p}P / crossbeam-channel (OS threads)"),
            (prog, "pcml fibers", Some(p)),
            (prog, "crossbeam-channel (OS threads)", None),
            None,
        );
    }
    sec.notes.push(format!(
        "worker pool: up to {n} jobs per run (fewer where a probe run shows a configuration \
         would exceed the run budget: see \"runs x ops\"); one job is two channel messages, \
         the job and its result."
    ));
    Ok(())
}
