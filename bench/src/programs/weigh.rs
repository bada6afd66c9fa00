//! Seed 002's concurrency benchmarks (section 5.3, Figures 5.8 and 5.9): the cost of a thread
//! per representation. pcml has two: fibers run on contiguous stacks (the paper's "contiguous
//! stacks" with a stack cache: pcml's per-proc stack pool) and async tasks keep their state in
//! a heap-allocated future (the paper's heap frames, its "CPS" strategy).
//!
//! Spawn-and-sync: each iteration spawns a thread that ends at once, and the parent waits for
//! it. Measured warm (a warm-up round first, so the stack pool holds stacks), on one proc, one
//! at a time and in batches of 1000 (a thousand live at once, so the pool must hold that many).
//! Ping-pong (Figure 5.9): two threads bounce messages over two channels, fibers blocking in
//! `send`/`recv`, tasks awaiting the same channels' events.
//!
//! One operation is one thread spawned and joined, or one message; figures are ns per
//! operation.

use std::hint::black_box;

use super::micro::{Placement, fiber_spawn_join, task_spawn_join};
use super::{Ctx, in_pcml, pingpong, triangle};
use crate::runner::{Error, Metric, Result, Sample, check_eq, repeat, timed};
use crate::table::{Row, Section};

const NS: Metric = Metric::NsPerOp { op: "thread" };

fn fiber_batch_round(batch: u64, rounds: u64) -> Result<()> {
    for _ in 0..rounds {
        let hs: Vec<_> = (0..batch)
            .map(|i| pcml::spawn(move || black_box(i)))
            .collect();
        let mut sum = 0u64;
        for h in hs {
            sum += h.join().map_err(|e| Error::Failed(e.to_string()))?;
        }
        check_eq("sum of a batch", triangle(batch), sum)?;
    }
    Ok(())
}

/// Fibers spawned `batch` at a time then joined, `rounds` batches per run, on one proc.
pub fn fiber_batches(batch: u64, rounds: u64, runs: usize) -> Result<Vec<Sample>> {
    in_pcml(1, move || {
        fiber_batch_round(batch, 1)?;
        repeat(runs, || {
            timed(batch * rounds, || fiber_batch_round(batch, rounds))
        })
    })
}

async fn task_batch_round(batch: u64, rounds: u64) -> Result<()> {
    for _ in 0..rounds {
        let hs: Vec<_> = (0..batch)
            .map(|i| pcml::spawn_task(async move { black_box(i) }))
            .collect();
        let mut sum = 0u64;
        for h in hs {
            sum += h.await.map_err(|e| Error::Failed(e.to_string()))?;
        }
        check_eq("sum of a batch", triangle(batch), sum)?;
    }
    Ok(())
}

/// Tasks spawned `batch` at a time from a task then awaited, `rounds` batches per run, on one
/// proc.
pub fn task_batches(batch: u64, rounds: u64, runs: usize) -> Result<Vec<Sample>> {
    in_pcml(1, move || {
        pcml::spawn_task(async move {
            task_batch_round(batch, 1).await?;
            let mut samples = Vec::with_capacity(runs);
            for _ in 0..runs {
                let start = std::time::Instant::now();
                task_batch_round(batch, rounds).await?;
                samples.push(Sample {
                    seconds: start.elapsed().as_secs_f64().max(1e-9),
                    ops: batch * rounds,
                });
            }
            Ok(samples)
        })
        .join()
        .map_err(|e| Error::Failed(e.to_string()))?
    })
}

/// Runs spawn-and-sync and ping-pong for fibers and tasks.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let runs = ctx.cfg.runs;
    let n = ctx.size(300_000, 1_000_000);
    let batch = 1000.min(n);
    let rounds = (n / batch).max(1);
    ctx.step("weigh: fibers spawn-and-sync");
    let s = fiber_spawn_join(1, Placement::Any, n, runs)?;
    sec.rows.push(
        Row::measured("spawn-and-sync", "pcml fibers", Some(1), NS, &s)
            .with_note("contiguous stacks, pooled; one at a time"),
    );
    ctx.step("weigh: tasks spawn-and-sync");
    let s = task_spawn_join(1, n, runs)?;
    sec.rows.push(
        Row::measured("spawn-and-sync", "pcml tasks", Some(1), NS, &s)
            .with_note("heap-allocated futures; one at a time"),
    );
    ctx.step("weigh: fibers in batches of 1000");
    let s = fiber_batches(batch, rounds, runs)?;
    sec.rows.push(
        Row::measured("spawn-and-sync x1000", "pcml fibers", Some(1), NS, &s)
            .with_note("1000 spawned, then all joined"),
    );
    ctx.step("weigh: tasks in batches of 1000");
    let s = task_batches(batch, rounds, runs)?;
    sec.rows.push(
        Row::measured("spawn-and-sync x1000", "pcml tasks", Some(1), NS, &s)
            .with_note("1000 spawned, then all awaited"),
    );
    let msg = Metric::NsPerOp { op: "message" };
    ctx.step("weigh: fibers ping-pong");
    let m = ctx.size(500_000, 2_000_000);
    let s = pingpong::fibers(1, m, runs)?;
    sec.rows.push(
        Row::measured("ping-pong", "pcml fibers", Some(1), msg, &s)
            .with_note("blocking send/recv on two channels"),
    );
    ctx.step("weigh: tasks ping-pong");
    let s = pingpong::tasks(1, m, runs)?;
    sec.rows.push(
        Row::measured("ping-pong", "pcml tasks", Some(1), msg, &s)
            .with_note("`send_evt(..).await`, `recv_evt().await`"),
    );
    sec.add_ratio(
        "fiber / task time per spawn-and-sync (paper: CPS, i.e. heap frames, fastest)",
        ("spawn-and-sync", "pcml fibers", Some(1)),
        ("spawn-and-sync", "pcml tasks", Some(1)),
        None,
    );
    sec.add_ratio(
        "fiber / task time per thread, batches of 1000",
        ("spawn-and-sync x1000", "pcml fibers", Some(1)),
        ("spawn-and-sync x1000", "pcml tasks", Some(1)),
        None,
    );
    sec.add_ratio(
        "fiber / task time per message, ping-pong (paper: contiguous stacks fastest)",
        ("ping-pong", "pcml fibers", Some(1)),
        ("ping-pong", "pcml tasks", Some(1)),
        None,
    );
    sec.notes.push(format!(
        "{n} threads per run, warm (a warm-up round first), one proc; ping-pong: {m} \
         messages per run."
    ));
    sec.publish(
        "spawn-and-sync",
        "Manticore",
        "chart only (Fig. 5.8): CPS (heap frames) fastest, even against warm stack caches",
    );
    sec.publish(
        "ping-pong",
        "Manticore",
        "chart only (Fig. 5.9): contiguous stacks fastest (cache locality)",
    );
    Ok(())
}
