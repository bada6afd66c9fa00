//! Seed 001's sieve (section 3.2, Figure 2): a generator of integers, a chain of filter
//! threads and, at its end, the `sift` thread: each number reaching sift is prime; sift passes
//! it to the output and inserts a new filter for it at the end of the chain. The program keeps
//! creating threads (one per prime). Figures are seconds per run on one proc.
//!
//! Direct style: fibers; indirect style: async tasks on the same channels (the paper's MVars).
//! The answer: the first n primes, against trial division.

use std::time::Instant;

use pcml::chan::Chan;

use super::kpn::Style;
use super::primes::first_primes;
use super::{Ctx, in_pcml};
use crate::runner::{Metric, Result, Sample, check_eq};
use crate::table::{Row, Section};

fn sieve_fibers(n: usize) -> Vec<u64> {
    let (ints, output) = (Chan::new(), Chan::new());
    let gen_out = ints.clone();
    pcml::spawn(move || {
        let mut i = 2u64;
        loop {
            gen_out.send(i);
            i += 1;
        }
    });
    let out = output.clone();
    pcml::spawn(move || {
        let mut input: Chan<u64> = ints;
        loop {
            let p = input.recv();
            out.send(p);
            let next = Chan::new();
            let (from, to) = (input, next.clone());
            pcml::spawn(move || {
                loop {
                    let x = from.recv();
                    if !x.is_multiple_of(p) {
                        to.send(x);
                    }
                }
            });
            input = next;
        }
    });
    (0..n).map(|_| output.recv()).collect()
}

fn sieve_tasks(n: usize) -> Vec<u64> {
    let (ints, output) = (Chan::new(), Chan::new());
    let gen_out = ints.clone();
    pcml::spawn_task(async move {
        let mut i = 2u64;
        loop {
            gen_out.send_evt(i).await;
            i += 1;
        }
    });
    let out = output.clone();
    pcml::spawn_task(async move {
        let mut input: Chan<u64> = ints;
        loop {
            let p = input.recv_evt().await;
            out.send_evt(p).await;
            let next = Chan::new();
            let (from, to) = (input, next.clone());
            pcml::spawn_task(async move {
                loop {
                    let x = from.recv_evt().await;
                    if !x.is_multiple_of(p) {
                        to.send_evt(x).await;
                    }
                }
            });
            input = next;
        }
    });
    (0..n).map(|_| output.recv()).collect()
}

/// The first `n` primes by the chain, one fresh one-proc runtime per run.
pub fn measure(n: usize, style: Style, runs: usize) -> Result<Vec<Sample>> {
    let want = first_primes(n);
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (seconds, got) = in_pcml(1, move || {
            let start = Instant::now();
            let got = match style {
                Style::Direct => sieve_fibers(n),
                Style::Indirect => sieve_tasks(n),
            };
            Ok((start.elapsed().as_secs_f64(), got))
        })?;
        check_eq("the first primes", &want, &got)?;
        samples.push(Sample {
            seconds,
            ops: n as u64,
        });
    }
    Ok(samples)
}

/// Runs the sieve in both styles.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let n = ctx.size(1_000, 3_000) as usize;
    let prog = format!("sieve {n}");
    for style in [Style::Direct, Style::Indirect] {
        ctx.step(&format!("{prog}: {}", style.system()));
        let s = measure(n, style, ctx.cfg.runs)?;
        sec.rows.push(
            Row::measured(&prog, style.system(), Some(1), Metric::Seconds, &s)
                .with_note(&format!("{n} filter threads made")),
        );
    }
    sec.add_ratio(
        &format!("{prog}: direct / indirect time"),
        (&prog, Style::Direct.system(), Some(1)),
        (&prog, Style::Indirect.system(), Some(1)),
        None,
    );
    sec.notes
        .push(format!("sieve: the first {n} primes, one proc."));
    Ok(())
}
