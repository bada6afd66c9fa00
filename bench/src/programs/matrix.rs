//! Seed 004's matrix (Figure 10): multiply two 250x250 integer matrices, one fiber per row of
//! the product (the thread package's fork and join), on 1..N procs; figures are seconds per
//! run and the speed-up over procs. Rows are spawned with `spawn`, so idle procs steal them.
//! The answer: the product equals the sequential one, computed outside the timing.

use std::sync::Arc;
use std::time::Instant;

use super::{Ctx, in_pcml};
use crate::runner::{Error, Metric, Result, Sample, check_eq, warm_runs};
use crate::table::{Row, Section};

/// A deterministic `n`x`n` matrix of small integers (row-major).
pub fn matrix(n: usize, seed: u64) -> Vec<i64> {
    let mut x = seed;
    (0..n * n)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((x >> 33) % 100) as i64 - 50
        })
        .collect()
}

/// Row `i` of `a * b` for `n`x`n` matrices.
fn row(a: &[i64], b: &[i64], n: usize, i: usize) -> Vec<i64> {
    let mut out = vec![0i64; n];
    for k in 0..n {
        let aik = a[i * n + k];
        for (j, o) in out.iter_mut().enumerate() {
            *o += aik * b[k * n + j];
        }
    }
    out
}

/// The product, sequentially (the reference answer).
pub fn multiply(a: &[i64], b: &[i64], n: usize) -> Vec<i64> {
    (0..n).flat_map(|i| row(a, b, n, i)).collect()
}

/// The product by one fiber per row, `runs` runs on a runtime of `procs` procs.
pub fn measure(procs: usize, n: usize, runs: usize) -> Result<Vec<Sample>> {
    let (a, b) = (Arc::new(matrix(n, 1)), Arc::new(matrix(n, 2)));
    let want = multiply(&a, &b, n);
    in_pcml(procs, move || {
        warm_runs(runs, n as u64, || {
            let start = Instant::now();
            let handles: Vec<_> = (0..n)
                .map(|i| {
                    let (a, b) = (a.clone(), b.clone());
                    pcml::spawn(move || row(&a, &b, n, i))
                })
                .collect();
            let mut got = Vec::with_capacity(n * n);
            for h in handles {
                got.extend(h.join().map_err(|e| Error::Failed(e.to_string()))?);
            }
            let seconds = start.elapsed().as_secs_f64();
            check_eq("the product", &want, &got)?;
            Ok(seconds)
        })
    })
}

/// Runs matrix on each proc count.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let n = ctx.size(250, 250) as usize;
    let prog = format!("matrix {n}x{n}");
    speedup_rows(ctx, sec, &prog, |p| measure(p, n, ctx.cfg.runs))?;
    sec.publish(
        "matrix",
        "SML/NJ MP",
        "26.64 s (1P), 13.51 s (2P), 3.40 s (8P)",
    );
    Ok(())
}

/// Measures `prog` on each configured proc count and adds the speed-up of the most procs
/// over one.
pub fn speedup_rows(
    ctx: &Ctx<'_>,
    sec: &mut Section,
    prog: &str,
    mut measure: impl FnMut(usize) -> Result<Vec<Sample>>,
) -> Result<()> {
    for &p in &ctx.cfg.procs {
        ctx.step(&format!("{prog}: pcml fibers on {p} procs"));
        let s = measure(p)?;
        sec.rows.push(Row::measured(
            prog,
            "pcml fibers",
            Some(p),
            Metric::Seconds,
            &s,
        ));
    }
    if let Some(&p) = ctx.cfg.procs.iter().max().filter(|&&p| p > 1) {
        sec.add_ratio(
            &format!("{prog}: speed-up, 1P time / {p}P time"),
            (prog, "pcml fibers", Some(1)),
            (prog, "pcml fibers", Some(p)),
            None,
        );
    }
    Ok(())
}
