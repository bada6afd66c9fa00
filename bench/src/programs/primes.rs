//! Seed 003's primes (section 10.3): the first N primes by the concurrent sieve, a generator of
//! 2, 3, 4, ... and a chain of filter threads, one added per prime found, filters assigned
//! round-robin to procs (filter `k` on proc `k mod P`; the generator and the main fiber on
//! proc 0). Figures are seconds per run. The answer: the Nth prime and the sum of the first N,
//! against trial division done outside the timing.
//!
//! As in the peers the chain is never stopped: once main has its N primes the chain blocks,
//! and each run's runtime is dropped afterwards (so each run builds a fresh runtime, outside
//! the timed region).
//!
//! The Rust peers: tokio, the generator and each filter a task over `mpsc::channel(1)` (tokio
//! has no rendezvous channel), on a `current_thread` runtime and on a `multi_thread` one of 2
//! workers (a fresh runtime per run; the chain's tasks are dropped with it); and
//! crossbeam-channel with the generator and each filter an OS thread of a small stack
//! ([`OS_STACK`]) over `bounded(0)`. OS threads cannot be dropped, so that chain is stopped
//! after the timed region: main drops its end and raises a flag the generator checks, and
//! each thread ends when its neighbour's end is gone; all are joined before the next run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use pcml::chan::Chan;

use super::pingpong::spawn_at;
use super::{Ctx, in_pcml, in_tokio};
use crate::runner::{Error, Metric, Result, Sample, check_eq};
use crate::table::{Goal, Row, Section};

/// The first `n` primes by trial division (the reference answer).
///
/// ```
/// assert_eq!(pcml_bench::programs::primes::first_primes(5), vec![2, 3, 5, 7, 11]);
/// ```
pub fn first_primes(n: usize) -> Vec<u64> {
    let mut primes: Vec<u64> = Vec::with_capacity(n);
    let mut x = 2u64;
    while primes.len() < n {
        if primes
            .iter()
            .take_while(|&&p| p * p <= x)
            .all(|&p| !x.is_multiple_of(p))
        {
            primes.push(x);
        }
        x += 1;
    }
    primes
}

/// The primes the crossbeam-channel peer finds in the quick suite, where the others find 1000:
/// its chain of OS threads hands each number over through the kernel, and 1000 primes took
/// 7 to 19 s for its five runs on the 2-core box, a tenth of the quick suite. With `--full`
/// it finds 2000, as the others do.
pub const OS_PRIMES_QUICK: u64 = 500;

/// Which threads run the sieve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Fibers with blocking `send`/`recv`, filters placed round-robin.
    Fibers,
    /// Fibers with blocking `send`/`recv`, every thread placed by the scheduler.
    Spawned,
    /// Async tasks with `send_evt(..).await`; the scheduler places them.
    Tasks,
}

fn sieve(n: usize, kind: Kind) -> Vec<u64> {
    let procs = pcml::procs();
    let first: Chan<u64> = Chan::new();
    let gen_out = first.clone();
    match kind {
        Kind::Fibers | Kind::Spawned => {
            let on = (kind == Kind::Fibers).then_some(0);
            spawn_at(on, move || {
                let mut i = 2u64;
                loop {
                    gen_out.send(i);
                    i += 1;
                }
            });
        }
        Kind::Tasks => {
            pcml::spawn_task(async move {
                let mut i = 2u64;
                loop {
                    gen_out.send_evt(i).await;
                    i += 1;
                }
            });
        }
    }
    let mut ch = first;
    let mut primes = Vec::with_capacity(n);
    for k in 0..n {
        let prime = ch.recv();
        primes.push(prime);
        if k + 1 == n {
            break;
        }
        let (input, out) = (ch, Chan::new());
        let output = out.clone();
        match kind {
            Kind::Fibers | Kind::Spawned => {
                let on = (kind == Kind::Fibers).then_some((k + 1) % procs);
                spawn_at(on, move || {
                    loop {
                        let x = input.recv();
                        if !x.is_multiple_of(prime) {
                            output.send(x);
                        }
                    }
                });
            }
            Kind::Tasks => {
                pcml::spawn_task(async move {
                    loop {
                        let x = input.recv_evt().await;
                        if !x.is_multiple_of(prime) {
                            output.send_evt(x).await;
                        }
                    }
                });
            }
        }
        ch = out;
    }
    primes
}

/// The first `n` primes by the sieve, one fresh runtime of `procs` procs per run.
pub fn measure(procs: usize, n: usize, kind: Kind, runs: usize) -> Result<Vec<Sample>> {
    let want = first_primes(n);
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (seconds, got) = in_pcml(procs, move || {
            let start = Instant::now();
            let got = sieve(n, kind);
            Ok((start.elapsed().as_secs_f64(), got))
        })?;
        check_primes(&want, &got)?;
        samples.push(Sample {
            seconds,
            ops: n as u64,
        });
    }
    Ok(samples)
}

fn check_primes(want: &[u64], got: &[u64]) -> Result<()> {
    check_eq(
        "Nth prime and sum",
        (want.last().copied(), want.iter().sum::<u64>()),
        (got.last().copied(), got.iter().sum::<u64>()),
    )
}

async fn tokio_sieve(n: usize) -> Result<Vec<u64>> {
    use tokio::sync::mpsc::channel;
    let (gen_out, mut ch) = channel::<u64>(1);
    tokio::spawn(async move {
        let mut i = 2u64;
        while gen_out.send(i).await.is_ok() {
            i += 1;
        }
    });
    let mut primes = Vec::with_capacity(n);
    for k in 0..n {
        let prime = ch
            .recv()
            .await
            .ok_or_else(|| Error::Failed("tokio sieve: the chain closed".into()))?;
        primes.push(prime);
        if k + 1 == n {
            break;
        }
        let (output, out) = channel::<u64>(1);
        let mut input = ch;
        tokio::spawn(async move {
            while let Some(x) = input.recv().await {
                if !x.is_multiple_of(prime) && output.send(x).await.is_err() {
                    return;
                }
            }
        });
        ch = out;
    }
    Ok(primes)
}

/// tokio: the first `n` primes by the sieve, one fresh runtime of `workers` workers (0:
/// `current_thread`) per run.
pub fn tokio_tasks(workers: usize, n: usize, runs: usize) -> Result<Vec<Sample>> {
    let want = first_primes(n);
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (seconds, got) = in_tokio(workers, async move {
            let start = Instant::now();
            let got = tokio_sieve(n).await?;
            Ok((start.elapsed().as_secs_f64(), got))
        })?;
        check_primes(&want, &got)?;
        samples.push(Sample {
            seconds,
            ops: n as u64,
        });
    }
    Ok(samples)
}

/// The stack of each OS thread of the crossbeam-channel sieve: a filter holds a few words.
pub const OS_STACK: usize = 64 * 1024;

fn os_thread(f: impl FnOnce() + Send + 'static) -> Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .stack_size(OS_STACK)
        .spawn(f)
        .map_err(|e| Error::Failed(format!("crossbeam sieve: cannot start a thread: {e}")))
}

/// One run of the crossbeam-channel sieve: the seconds to find the first `n` primes, and the
/// primes; the chain is stopped and joined after the clock stops.
fn crossbeam_sieve(n: usize) -> Result<(f64, Vec<u64>)> {
    use crossbeam_channel::bounded;
    let start = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let (gen_out, mut ch) = bounded::<u64>(0);
    let gen_stop = stop.clone();
    let mut threads = vec![os_thread(move || {
        let mut i = 2u64;
        // Relaxed: the flag only asks the generator to end; the channels order everything else.
        while !gen_stop.load(Ordering::Relaxed) && gen_out.send(i).is_ok() {
            i += 1;
        }
    })?];
    let mut primes = Vec::with_capacity(n);
    for k in 0..n {
        let Ok(prime) = ch.recv() else {
            break;
        };
        primes.push(prime);
        if k + 1 == n {
            break;
        }
        let (output, out) = bounded::<u64>(0);
        let input = ch;
        threads.push(os_thread(move || {
            while let Ok(x) = input.recv() {
                if !x.is_multiple_of(prime) && output.send(x).is_err() {
                    return;
                }
            }
        })?);
        ch = out;
    }
    let seconds = start.elapsed().as_secs_f64();
    // Stop the chain: the generator's loop ends on the flag (dropping the first sender), the
    // last filter's send fails once `ch` is gone, and each filter ends when its input's
    // sender or its output's receiver is dropped.
    stop.store(true, Ordering::Relaxed);
    drop(ch);
    for t in threads {
        t.join()
            .map_err(|_| Error::Failed("crossbeam sieve: a thread panicked".into()))?;
    }
    Ok((seconds, primes))
}

/// crossbeam-channel: the first `n` primes by the sieve, one OS thread per filter, per run.
pub fn crossbeam_threads(n: usize, runs: usize) -> Result<Vec<Sample>> {
    let want = first_primes(n);
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (seconds, got) = crossbeam_sieve(n)?;
        check_primes(&want, &got)?;
        samples.push(Sample {
            seconds,
            ops: n as u64,
        });
    }
    Ok(samples)
}

/// Measures pcml and the peers.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let runs = ctx.cfg.runs;
    let n = ctx.size(1000, 2000);
    let prog = format!("primes-{n}");
    // One run at each proc count before the next at any (see `Ctx::interleaved`).
    let placed = ctx.interleaved("primes: pcml fibers", &ctx.cfg.procs, runs, &|p, runs| {
        measure(p, n as usize, Kind::Fibers, runs)
    })?;
    for (&p, s) in ctx.cfg.procs.iter().zip(placed) {
        sec.rows.push(
            Row::measured(&prog, "pcml fibers", Some(p), Metric::Seconds, &s)
                .with_note("filter k on proc k mod P"),
        );
    }
    for &p in &ctx.cfg.procs {
        ctx.step(&format!("primes: pcml tasks on {p} procs"));
        let s = measure(p, n as usize, Kind::Tasks, runs)?;
        sec.rows.push(
            Row::measured(&prog, "pcml tasks", Some(p), Metric::Seconds, &s)
                .with_note("the scheduler places the filters"),
        );
    }
    ctx.tokio_rows(
        sec,
        &prog,
        Metric::Seconds,
        "a task per filter, `mpsc::channel(1)`; the scheduler places them",
        |workers| tokio_tasks(workers, n as usize, runs),
    )?;
    // One OS thread per filter hands each number over through the kernel; the quick suite
    // runs this peer on fewer primes (its own row, labelled by its size).
    let n_os = ctx.size(OS_PRIMES_QUICK, 2000);
    let prog_os = format!("primes-{n_os}");
    ctx.step(&format!(
        "primes: crossbeam-channel, {n_os} primes, one OS thread per filter"
    ));
    let s = crossbeam_threads(n_os as usize, runs)?;
    sec.rows.push(
        Row::measured(
            &prog_os,
            "crossbeam-channel (OS threads)",
            None,
            Metric::Seconds,
            &s,
        )
        .with_note(&format!(
            "one OS thread ({} KiB stack) per filter, `bounded(0)`",
            OS_STACK / 1024
        )),
    );
    ctx.peer_rows(
        sec,
        &prog,
        "primes",
        n,
        None,
        None,
        Metric::Seconds,
        true,
        runs,
    )?;
    ctx.multicore_rows(
        sec,
        &prog,
        "primes",
        n,
        None,
        Metric::Seconds,
        &|p, runs| measure(p, n as usize, Kind::Spawned, runs),
        &|p, runs| measure(p, n as usize, Kind::Fibers, runs),
    )?;
    // Times: the peer's time over ours is our speed-up.
    if ctx.has_procs(1) {
        sec.add_ratio(
            &format!("{prog}: tokio current_thread time / pcml fibers 1P time (speed-up)"),
            (&prog, "tokio", Some(1)),
            (&prog, "pcml fibers", Some(1)),
            None,
        );
        sec.add_ratio(
            &format!("{prog}: tokio current_thread time / pcml tasks 1P time (speed-up)"),
            (&prog, "tokio", Some(1)),
            (&prog, "pcml tasks", Some(1)),
            None,
        );
    }
    if ctx.has_procs(2) {
        sec.add_ratio(
            &format!("{prog}: CML time / pcml fibers 2P time (speed-up)"),
            (&prog, "CML (SML/NJ)", Some(1)),
            (&prog, "pcml fibers", Some(2)),
            Some(Goal::AtLeast(2.0)),
        );
        sec.add_ratio(
            &format!("{prog}: Go 2P time / pcml fibers 2P time (speed-up)"),
            (&prog, "Go", Some(2)),
            (&prog, "pcml fibers", Some(2)),
            Some(Goal::AtLeast(4.0)),
        );
        sec.add_ratio(
            &format!("{prog}: tokio 2 workers time / pcml fibers 2P time (speed-up)"),
            (&prog, "tokio", Some(2)),
            (&prog, "pcml fibers", Some(2)),
            None,
        );
        for (peer, label) in [("Go", "Go 2P"), ("tokio", "tokio 2 workers")] {
            sec.add_ratio(
                &format!("{prog}: {label} time / pcml fibers (spawn) 2P time (speed-up)"),
                (&prog, peer, Some(2)),
                (&prog, "pcml fibers (spawn)", Some(2)),
                Some(Goal::AtLeast(1.0)),
            );
        }
        if prog_os == prog {
            sec.add_ratio(
                &format!("{prog}: crossbeam-channel time / pcml fibers 2P time (speed-up)"),
                (&prog, "crossbeam-channel (OS threads)", None),
                (&prog, "pcml fibers", Some(2)),
                None,
            );
        }
        sec.add_ratio(
            &format!("{prog}: pcml fibers 1P time / 2P time (speed-up over procs)"),
            (&prog, "pcml fibers", Some(1)),
            (&prog, "pcml fibers", Some(2)),
            None,
        );
    }
    sec.notes.push(format!(
        "primes: the first {n} primes (the paper: 2000), checked against trial division; \
         crossbeam-channel with an OS thread per filter: the first {n_os} (row {prog_os}). \
         tokio's rows: 1 is a current_thread runtime, 2 a multi_thread runtime of 2 workers."
    ));
    sec.publish("primes-2000", "CML", "1.34 s");
    sec.publish("primes-2000", "Manticore 1P", "3.08 s");
    sec.publish("primes-2000", "Manticore 2P", "3.37 s");
    sec.publish("primes-2000", "Manticore 8P", "0.92 s");
    Ok(())
}
