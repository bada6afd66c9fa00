//! Seed 004's mst (Figure 10): Prim's minimum spanning tree of 500 random points in the unit
//! square (the complete graph, Euclidean weights), on 1..N procs. Each of the n-1 steps forks
//! one fiber per chunk of the vertices (eight chunks): a fiber relaxes its chunk's distances
//! against the vertex just added and returns its nearest vertex; the main fiber picks the
//! nearest overall. Figures are seconds per run and the speed-up over procs. The answer: the
//! tree's weight equals the sequential algorithm's, computed outside the timing.

use std::sync::Arc;
use std::time::Instant;

use super::matrix::speedup_rows;
use super::{Ctx, in_pcml};
use crate::runner::{Error, Result, Sample, warm_runs};
use crate::table::Section;

/// Chunks of vertices, one fiber each per step.
const CHUNKS: usize = 8;

/// `n` deterministic pseudo-random points in the unit square.
pub fn points(n: usize) -> Vec<(f64, f64)> {
    let mut x = 11u64;
    let mut next = move || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    (0..n).map(|_| (next(), next())).collect()
}

fn dist(a: (f64, f64), b: (f64, f64)) -> f64 {
    ((a.0 - b.0).powi(2) + (a.1 - b.1).powi(2)).sqrt()
}

/// One chunk of Prim's state: the first vertex's index, each vertex's distance to the tree
/// (`INFINITY` once in the tree counts as taken, marked by `NAN`).
struct Chunk {
    first: usize,
    d: Vec<f64>,
}

impl Chunk {
    /// Relaxes against `v` (just added) and returns the nearest free vertex and its distance.
    fn relax(&mut self, pts: &[(f64, f64)], v: usize) -> Option<(f64, usize)> {
        let mut best: Option<(f64, usize)> = None;
        for (k, d) in self.d.iter_mut().enumerate() {
            let u = self.first + k;
            if u == v {
                *d = f64::NAN;
            }
            if d.is_nan() {
                continue;
            }
            *d = d.min(dist(pts[u], pts[v]));
            if best.is_none_or(|(bd, bu)| *d < bd || (*d == bd && u < bu)) {
                best = Some((*d, u));
            }
        }
        best
    }
}

fn chunks(n: usize) -> Vec<Chunk> {
    let size = n.div_ceil(CHUNKS);
    (0..n)
        .step_by(size.max(1))
        .map(|first| Chunk {
            first,
            d: vec![f64::INFINITY; size.min(n - first)],
        })
        .collect()
}

fn pick(bests: impl Iterator<Item = Option<(f64, usize)>>) -> Option<(f64, usize)> {
    bests
        .flatten()
        .fold(None, |acc: Option<(f64, usize)>, (d, u)| match acc {
            Some((bd, bu)) if bd < d || (bd == d && bu < u) => Some((bd, bu)),
            _ => Some((d, u)),
        })
}

/// The tree's weight, sequentially (the reference answer).
pub fn prim(pts: &[(f64, f64)]) -> f64 {
    let mut cs = chunks(pts.len());
    let (mut v, mut total) = (0, 0.0);
    for _ in 1..pts.len() {
        let Some((d, u)) = pick(cs.iter_mut().map(|c| c.relax(pts, v))) else {
            break;
        };
        total += d;
        v = u;
    }
    total
}

fn prim_fibers(pts: &Arc<Vec<(f64, f64)>>) -> Result<f64> {
    let mut cs = chunks(pts.len());
    let (mut v, mut total) = (0, 0.0);
    for _ in 1..pts.len() {
        let handles: Vec<_> = cs
            .drain(..)
            .map(|mut c| {
                let pts = pts.clone();
                pcml::spawn(move || {
                    let best = c.relax(&pts, v);
                    (c, best)
                })
            })
            .collect();
        let mut bests = Vec::with_capacity(CHUNKS);
        for h in handles {
            let (c, best) = h.join().map_err(|e| Error::Failed(e.to_string()))?;
            cs.push(c);
            bests.push(best);
        }
        let Some((d, u)) = pick(bests.into_iter()) else {
            break;
        };
        total += d;
        v = u;
    }
    Ok(total)
}

/// The tree of `n` points by fork-join fibers, `runs` runs on a runtime of `procs` procs.
pub fn measure(procs: usize, n: usize, runs: usize) -> Result<Vec<Sample>> {
    let pts = Arc::new(points(n));
    let want = prim(&pts);
    in_pcml(procs, move || {
        warm_runs(runs, n as u64, || {
            let start = Instant::now();
            let got = prim_fibers(&pts)?;
            let seconds = start.elapsed().as_secs_f64();
            if (got - want).abs() > 1e-9 * want.abs().max(1.0) {
                return Err(Error::WrongAnswer(format!(
                    "tree weight: expected {want}, got {got}"
                )));
            }
            Ok(seconds)
        })
    })
}

/// Runs mst on each proc count.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let n = ctx.size(500, 500) as usize;
    let prog = format!("mst {n}");
    speedup_rows(ctx, sec, &prog, |p| measure(p, n, ctx.cfg.runs))?;
    sec.publish(
        "mst",
        "SML/NJ MP",
        "47.30 s (1P), 30.25 s (2P), 22.80 s (8P)",
    );
    Ok(())
}
