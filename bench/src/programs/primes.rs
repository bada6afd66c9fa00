//! Seed 003's primes (section 10.3): the first N primes by the concurrent sieve, a generator of
//! 2, 3, 4, ... and a chain of filter threads, one added per prime found, filters assigned
//! round-robin to procs (filter `k` on proc `k mod P`; the generator and the main fiber on
//! proc 0). Figures are seconds per run. The answer: the Nth prime and the sum of the first N,
//! against trial division done outside the timing.
//!
//! As in the peers the chain is never stopped: once main has its N primes the chain blocks,
//! and each run's runtime is dropped afterwards (so each run builds a fresh runtime, outside
//! the timed region).

use std::time::Instant;

use pcml::chan::Chan;

use super::{Ctx, in_pcml};
use crate::runner::{Metric, Result, Sample, check_eq};
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

/// Which threads run the sieve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Fibers with blocking `send`/`recv`, filters placed round-robin.
    Fibers,
    /// Async tasks with `send_evt(..).await`; the scheduler places them.
    Tasks,
}

fn sieve(n: usize, kind: Kind) -> Vec<u64> {
    let procs = pcml::procs();
    let first: Chan<u64> = Chan::new();
    let gen_out = first.clone();
    match kind {
        Kind::Fibers => {
            pcml::spawn_on(0, move || {
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
            Kind::Fibers => {
                pcml::spawn_on((k + 1) % procs, move || {
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
        check_eq(
            "Nth prime and sum",
            (want.last().copied(), want.iter().sum::<u64>()),
            (got.last().copied(), got.iter().sum::<u64>()),
        )?;
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
    for &p in &ctx.cfg.procs {
        ctx.step(&format!("primes: pcml fibers on {p} procs"));
        let s = measure(p, n as usize, Kind::Fibers, runs)?;
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
    // Times: the peer's time over ours is our speed-up.
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
            &format!("{prog}: pcml fibers 1P time / 2P time (speed-up over procs)"),
            (&prog, "pcml fibers", Some(1)),
            (&prog, "pcml fibers", Some(2)),
            None,
        );
    }
    sec.notes.push(format!(
        "primes: the first {n} primes (the paper: 2000), checked against trial division."
    ));
    sec.publish("primes-2000", "CML", "1.34 s");
    sec.publish("primes-2000", "Manticore 1P", "3.08 s");
    sec.publish("primes-2000", "Manticore 2P", "3.37 s");
    sec.publish("primes-2000", "Manticore 8P", "0.92 s");
    Ok(())
}
