//! Seed 003's parallel ping-pong (section 10.2): eight independent ping-pong pairs at once;
//! on several procs the two fibers of a pair are on different procs (pair `i`: pinger on proc
//! `i % P`, ponger on `(i + 1) % P`). One message is one operation; figures are messages per
//! second, all pairs together.

use super::pingpong::fiber_pair;
use super::{Ctx, in_pcml, triangle};
use crate::runner::{Error, Metric, Result, Sample, check_eq, repeat, timed};
use crate::table::{Goal, Row, Section};

const RATE: Metric = Metric::Rate { unit: "msgs/s" };

/// Pairs run at once.
pub const PAIRS: u64 = 8;

fn eight_pairs(rounds: u64) -> Result<()> {
    let p = pcml::procs();
    let hs: Vec<_> = (0..PAIRS as usize)
        .map(|i| fiber_pair(rounds, i % p, (i + 1) % p))
        .collect();
    for h in hs {
        let sum = h.join().map_err(|e| Error::Failed(e.to_string()))?;
        check_eq("sum of a pair's replies", triangle(rounds) + rounds, sum)?;
    }
    Ok(())
}

/// Fibers: `msgs` messages per run in all, on a runtime of `procs` procs.
pub fn fibers(procs: usize, msgs: u64, runs: usize) -> Result<Vec<Sample>> {
    let rounds = (msgs / (2 * PAIRS)).max(1);
    in_pcml(procs, move || {
        eight_pairs(rounds / 10 + 1)?;
        repeat(runs, || timed(2 * PAIRS * rounds, || eight_pairs(rounds)))
    })
}

/// Measures pcml and the peers.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let runs = ctx.cfg.runs;
    let n = ctx.size(480_000, 1_600_000);
    let prog = "parallel ping-pong";
    for &p in &ctx.cfg.procs {
        ctx.step(&format!("parallel ping-pong: pcml fibers on {p} procs"));
        let n = ctx.fit(n, |k| fibers(p, k, 1))?;
        let s = fibers(p, n, runs)?;
        sec.rows.push(
            Row::measured(prog, "pcml fibers", Some(p), RATE, &s)
                .with_note("pair i: procs i mod P and i+1 mod P"),
        );
    }
    ctx.peer_rows(
        sec,
        prog,
        "parpingpong",
        n,
        None,
        Some("msgs"),
        RATE,
        true,
        runs,
    )?;
    sec.add_ratio(
        "parallel ping-pong: pcml fibers 1P / CML",
        (prog, "pcml fibers", Some(1)),
        (prog, "CML (SML/NJ)", Some(1)),
        Some(Goal::AtLeast(2.0)),
    );
    if let Some(&p) = ctx.cfg.procs.iter().max().filter(|&&p| p > 1) {
        sec.add_ratio(
            &format!(
                "parallel ping-pong: pcml fibers {p}P / 1P (paper: Manticore 2P 0.57, 8P 1.38)"
            ),
            (prog, "pcml fibers", Some(p)),
            (prog, "pcml fibers", Some(1)),
            None,
        );
    }
    sec.notes.push(format!(
        "parallel ping-pong: 8 pairs, {n} messages per run in all."
    ));
    sec.publish(prog, "CML", "1,576,000 msgs/s (1.00)");
    sec.publish(prog, "Manticore 1P", "724,000 msgs/s (0.46)");
    sec.publish(prog, "Manticore 2P", "412,000 msgs/s (0.26)");
    sec.publish(prog, "Manticore 8P", "1,000,000 msgs/s (0.63)");
    Ok(())
}
