//! Seed 004's allpairs (Figure 10): Floyd's all-pairs shortest paths on a 100-node graph, on
//! 1..N procs. Step k of Floyd's algorithm updates every row from row k; here each step forks
//! one fiber per row and joins them all (a barrier per step), as a fork-join thread package
//! would. Figures are seconds per run and the speed-up over procs. The answer: the distances
//! equal the sequential algorithm's, computed outside the timing.

use std::sync::Arc;
use std::time::Instant;

use super::matrix::speedup_rows;
use super::{Ctx, in_pcml};
use crate::runner::{Error, Result, Sample, check_eq, warm_runs};
use crate::table::Section;

/// No edge.
const INF: u32 = u32::MAX / 4;

/// A deterministic directed graph of `n` nodes: about a third of the pairs have an edge of
/// weight 1..100 (row-major distance matrix).
pub fn graph(n: usize) -> Vec<u32> {
    let mut x = 7u64;
    (0..n * n)
        .map(|k| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let r = (x >> 33) as u32;
            if k / n == k % n {
                0
            } else if r.is_multiple_of(3) {
                1 + r % 100
            } else {
                INF
            }
        })
        .collect()
}

fn relax_row(d: &[u32], n: usize, k: usize, i: usize) -> Vec<u32> {
    let dik = d[i * n + k];
    (0..n)
        .map(|j| d[i * n + j].min(dik + d[k * n + j]))
        .collect()
}

/// Floyd's algorithm, sequentially (the reference answer).
pub fn floyd(d: &[u32], n: usize) -> Vec<u32> {
    let mut d = d.to_vec();
    for k in 0..n {
        d = (0..n).flat_map(|i| relax_row(&d, n, k, i)).collect();
    }
    d
}

fn floyd_fibers(d0: &[u32], n: usize) -> Result<Vec<u32>> {
    let mut d = Arc::new(d0.to_vec());
    for k in 0..n {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let d = d.clone();
                pcml::spawn(move || relax_row(&d, n, k, i))
            })
            .collect();
        let mut next = Vec::with_capacity(n * n);
        for h in handles {
            next.extend(h.join().map_err(|e| Error::Failed(e.to_string()))?);
        }
        d = Arc::new(next);
    }
    Ok(Arc::try_unwrap(d).unwrap_or_else(|d| (*d).clone()))
}

/// All pairs by fork-join fibers, `runs` runs on a runtime of `procs` procs.
pub fn measure(procs: usize, n: usize, runs: usize) -> Result<Vec<Sample>> {
    let g = Arc::new(graph(n));
    let want = floyd(&g, n);
    in_pcml(procs, move || {
        warm_runs(runs, (n * n) as u64, || {
            let start = Instant::now();
            let got = floyd_fibers(&g, n)?;
            let seconds = start.elapsed().as_secs_f64();
            check_eq("the distances", &want, &got)?;
            Ok(seconds)
        })
    })
}

/// Runs allpairs on each proc count.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let n = ctx.size(100, 100) as usize;
    let prog = format!("allpairs {n}");
    speedup_rows(ctx, sec, &prog, |p| measure(p, n, ctx.cfg.runs))?;
    sec.publish(
        "allpairs",
        "SML/NJ MP",
        "22.38 s (1P), 12.60 s (2P), 9.71 s (8P)",
    );
    Ok(())
}
