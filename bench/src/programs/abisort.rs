//! Seed 004's abisort (Figure 10): sorting 2^13 integers on 1..N procs. The paper's is the
//! adaptive bitonic sort of Bilardi and Nicolau; ours is the plain (non-adaptive) bitonic
//! sort with the same fork-join shape: sort both halves in parallel (one forked fiber, one on
//! the caller), in opposite directions, then merge, forking the two half-merges likewise;
//! below a cutoff of 256 elements a piece is sorted sequentially. Figures are seconds per run
//! and the speed-up over procs. The answer: the output equals the input sorted.

use std::time::Instant;

use super::matrix::speedup_rows;
use super::{Ctx, in_pcml};
use crate::runner::{Error, Result, Sample, check_eq, warm_runs};
use crate::table::Section;

/// Pieces this small are sorted (or merged) sequentially.
const CUTOFF: usize = 256;

/// `n` deterministic pseudo-random integers.
pub fn numbers(n: usize) -> Vec<u32> {
    let mut x = 3u64;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 32) as u32
        })
        .collect()
}

/// Runs `a` in a forked fiber and `b` here, and returns both results.
fn fork2<A, B>(a: A, b: impl FnOnce() -> Result<B>) -> Result<(Vec<u32>, B)>
where
    A: FnOnce() -> Result<Vec<u32>> + Send + 'static,
{
    let h = pcml::spawn(a);
    let rb = b()?;
    let ra = h.join().map_err(|e| Error::Failed(e.to_string()))??;
    Ok((ra, rb))
}

/// Merges a bitonic sequence into order (`up`: ascending).
fn merge(mut v: Vec<u32>, up: bool) -> Result<Vec<u32>> {
    let n = v.len();
    if n <= CUTOFF {
        if up {
            v.sort_unstable();
        } else {
            v.sort_unstable_by(|a, b| b.cmp(a));
        }
        return Ok(v);
    }
    let half = n / 2;
    for i in 0..half {
        if (v[i] > v[i + half]) == up {
            v.swap(i, i + half);
        }
    }
    let hi = v.split_off(half);
    let (mut lo, hi) = fork2(move || merge(v, up), move || merge(hi, up))?;
    lo.extend(hi);
    Ok(lo)
}

/// Bitonic sort of `v` (a power-of-two length) in direction `up`.
fn sort(mut v: Vec<u32>, up: bool) -> Result<Vec<u32>> {
    if v.len() <= CUTOFF {
        return merge(v, up);
    }
    let hi = v.split_off(v.len() / 2);
    let (mut lo, hi) = fork2(move || sort(v, true), move || sort(hi, false))?;
    lo.extend(hi);
    merge(lo, up)
}

/// Sorts `n` (a power of two) numbers, `runs` runs on a runtime of `procs` procs.
pub fn measure(procs: usize, n: usize, runs: usize) -> Result<Vec<Sample>> {
    if !n.is_power_of_two() {
        return Err(Error::Failed(format!(
            "bitonic sort needs a power of two, not {n}"
        )));
    }
    let xs = numbers(n);
    let mut want = xs.clone();
    want.sort_unstable();
    in_pcml(procs, move || {
        warm_runs(runs, n as u64, || {
            let input = xs.clone();
            let start = Instant::now();
            let got = sort(input, true)?;
            let seconds = start.elapsed().as_secs_f64();
            check_eq("sorted numbers", &want, &got)?;
            Ok(seconds)
        })
    })
}

/// Runs abisort on each proc count.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let n = 1usize << 13;
    let prog = format!("abisort {n}");
    speedup_rows(ctx, sec, &prog, |p| measure(p, n, ctx.cfg.runs))?;
    sec.notes.push(
        "abisort: plain bitonic sort (not the paper's adaptive variant), fork-join, cutoff 256."
            .to_string(),
    );
    sec.publish(
        "abisort",
        "SML/NJ MP",
        "20.53 s (1P), 12.06 s (2P), 8.69 s (8P)",
    );
    Ok(())
}
