//! Seed 003's spawn benchmark (section 10.1): repeatedly spawn a trivial thread and wait for it
//! to end. In the 2-proc variant the parent runs on proc 0 and places each child on proc 1 with
//! `spawn_on`, as the paper's does, which measures the cross-proc hand-off (Reppy, Russo and Xiao 2009 section
//! 9.1: the child starts through proc 1's inbox, and its end wakes the parent through proc 0's).
//!
//! Beside pcml: CML (one proc), Go (`go` and a receive of the child's index, GOMAXPROCS=1,2),
//! Erlang (`spawn` and a `receive` of `{done, Pid}`, `+S 1`, `2`), OS threads
//! (`std::thread::spawn` + `join`, few iterations) and tokio (`tokio::spawn(..).await` from a
//! task on a current-thread runtime and on a 2-worker runtime).
//!
//! One operation is one thread spawned and joined; figures are threads per second.

use std::hint::black_box;

use super::micro::{Placement, fiber_spawn_join, task_spawn_join};
use super::{Ctx, triangle};
use crate::runner::{Error, Metric, Result, Sample, check_eq, repeat, timed};
use crate::table::{Goal, Row, Section};

const RATE: Metric = Metric::Rate { unit: "threads/s" };

/// `n` OS threads spawned and joined one at a time, per run.
pub fn os_threads(n: u64, runs: usize) -> Result<Vec<Sample>> {
    let round = |n: u64| -> Result<()> {
        let mut sum = 0u64;
        for i in 0..n {
            sum += std::thread::spawn(move || black_box(i))
                .join()
                .map_err(|_| Error::Failed("thread panicked".into()))?;
        }
        check_eq("sum of children", triangle(n), sum)
    };
    round(n / 10 + 1)?;
    repeat(runs, || timed(n, || round(n)))
}

async fn tokio_loop(n: u64) -> Result<()> {
    let mut sum = 0u64;
    for i in 0..n {
        sum += tokio::spawn(async move { black_box(i) })
            .await
            .map_err(|e| Error::Failed(e.to_string()))?;
    }
    check_eq("sum of children", triangle(n), sum)
}

/// `n` tokio tasks spawned and awaited one at a time from a task, per run, on a
/// current-thread runtime (`workers == 0`) or a multi-thread one with `workers` workers.
pub fn tokio_tasks(workers: usize, n: u64, runs: usize) -> Result<Vec<Sample>> {
    let rt = super::tokio_runtime(workers)?;
    rt.block_on(async move {
        // The loop runs in a spawned task, so that on a multi-thread runtime it runs on a
        // worker (block_on's future runs on the calling thread, outside the workers).
        tokio::spawn(async move {
            tokio_loop(n / 10 + 1).await?;
            let mut samples = Vec::with_capacity(runs);
            for _ in 0..runs {
                let start = std::time::Instant::now();
                tokio_loop(n).await?;
                samples.push(Sample {
                    seconds: start.elapsed().as_secs_f64().max(1e-9),
                    ops: n,
                });
            }
            Ok(samples)
        })
        .await
        .map_err(|e| Error::Failed(e.to_string()))?
    })
}

/// Runs the spawn benchmark on every system.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let runs = ctx.cfg.runs;
    let n1 = ctx.size(500_000, 2_000_000);
    let n2 = ctx.size(100_000, 1_000_000);
    let placement = |p| {
        if p == 1 {
            (Placement::Any, n1, "`spawn` + `join`")
        } else {
            (
                Placement::OtherProc,
                n2,
                "parent on proc 0, children `spawn_on` proc 1",
            )
        }
    };
    // One run at each proc count before the next at any (see `Ctx::interleaved`).
    let placed = ctx.interleaved("spawn: pcml fibers", &ctx.cfg.procs, runs, &|p, runs| {
        let (placement, n, _) = placement(p);
        let n = ctx.fit(n, |k| fiber_spawn_join(p, placement, k, 1))?;
        fiber_spawn_join(p, placement, n, runs)
    })?;
    for (&p, s) in ctx.cfg.procs.iter().zip(placed) {
        let (_, _, note) = placement(p);
        sec.rows
            .push(Row::measured("spawn", "pcml fibers", Some(p), RATE, &s).with_note(note));
    }
    for &p in &ctx.cfg.procs {
        ctx.step(&format!("spawn: pcml tasks on {p} procs"));
        let n = ctx.fit(n1, |k| task_spawn_join(p, k, 1))?;
        let s = task_spawn_join(p, n, runs)?;
        sec.rows.push(
            Row::measured("spawn", "pcml tasks", Some(p), RATE, &s)
                .with_note("`spawn_task(..).await` in a task; the scheduler places children"),
        );
    }
    ctx.peer_rows(
        sec,
        "spawn",
        "spawn",
        ctx.size(1_000_000, 2_000_000),
        None,
        Some("threads"),
        RATE,
        true,
        runs,
    )?;
    ctx.multicore_rows(
        sec,
        "spawn",
        "spawn",
        ctx.size(1_000_000, 2_000_000),
        Some("threads"),
        RATE,
        &|p, runs| {
            let n = ctx.fit_span(n1, |k| fiber_spawn_join(p, Placement::Any, k, 1))?;
            fiber_spawn_join(p, Placement::Any, n, runs)
        },
        &|p, runs| {
            let n = ctx.fit(n2, |k| fiber_spawn_join(p, Placement::OtherProc, k, 1))?;
            fiber_spawn_join(p, Placement::OtherProc, n, runs)
        },
    )?;
    ctx.step("spawn: OS threads");
    let s = os_threads(ctx.size(5_000, 20_000), runs)?;
    sec.rows.push(
        Row::measured("spawn", "OS threads (std)", None, RATE, &s)
            .with_note("`std::thread::spawn` + `join`"),
    );
    if ctx.has_procs(1) {
        ctx.step("spawn: tokio current_thread");
        let s = tokio_tasks(0, n1, runs)?;
        sec.rows.push(
            Row::measured("spawn", "tokio", Some(1), RATE, &s)
                .with_note("current_thread runtime, `tokio::spawn(..).await`"),
        );
    }
    for &p in ctx.cfg.procs.iter().filter(|&&p| p > 1) {
        ctx.step(&format!("spawn: tokio {p} workers"));
        let s = tokio_tasks(p, n1, runs)?;
        sec.rows.push(
            Row::measured("spawn", "tokio", Some(p), RATE, &s)
                .with_note("multi_thread runtime, loop in a worker task"),
        );
    }

    let pcml1 = ("spawn", "pcml fibers", Some(1));
    sec.add_ratio(
        "pcml fibers 1P / CML",
        pcml1,
        ("spawn", "CML (SML/NJ)", Some(1)),
        Some(Goal::AtLeast(1.5)),
    );
    for &p in &ctx.cfg.procs {
        sec.add_ratio(
            &format!("pcml fibers 1P / Go GOMAXPROCS={p}"),
            pcml1,
            ("spawn", "Go", Some(p)),
            Some(Goal::AtLeast(5.0)),
        );
    }
    for &p in &ctx.cfg.procs {
        sec.add_ratio(
            &format!("pcml fibers 1P / Erlang +S {p}"),
            pcml1,
            ("spawn", "Erlang", Some(p)),
            None,
        );
    }
    sec.add_ratio(
        "pcml fibers 1P / tokio current_thread",
        pcml1,
        ("spawn", "tokio", Some(1)),
        None,
    );
    sec.add_ratio(
        "pcml tasks 1P / tokio current_thread",
        ("spawn", "pcml tasks", Some(1)),
        ("spawn", "tokio", Some(1)),
        None,
    );
    if ctx.has_procs(2) {
        sec.add_ratio(
            "pcml fibers 2P (children on the other proc) / CML (paper: Manticore 2P 0.13)",
            ("spawn", "pcml fibers", Some(2)),
            ("spawn", "CML (SML/NJ)", Some(1)),
            None,
        );
        sec.add_ratio(
            "pcml fibers 2P / 1P (paper: Manticore 0.27)",
            ("spawn", "pcml fibers", Some(2)),
            pcml1,
            None,
        );
    }
    sec.notes.push(format!(
        "spawn: up to {n1} threads per run (fibers 1P, tasks, tokio), {n2} (fibers 2P), {} (OS \
         threads); CML, Go and Erlang: {} per run, in their own processes.",
        ctx.size(5_000, 20_000),
        ctx.size(1_000_000, 2_000_000)
    ));
    sec.notes.push(
        "spawn: pcml fibers 1P join an unstarted child by running it on the parent's stack \
         (work-first join); 2P children are placed on the other proc, so they really start \
         there and their end wakes the parent across procs."
            .to_string(),
    );
    sec.publish("spawn", "CML", "2,628,000 threads/s (ratio 1.00)");
    sec.publish("spawn", "Manticore 1P", "1,235,000 threads/s (0.47)");
    sec.publish("spawn", "Manticore 2P", "330,300 threads/s (0.13)");
    Ok(())
}
