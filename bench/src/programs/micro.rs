//! The runtime's microbenchmarks: fiber yield, fiber spawn+join and task
//! spawn+join on 1 and 2 procs, beside corosensei's bare resume+suspend measured in the same
//! run, and CML's spawn.
//!
//! What one operation is:
//! - **bare switch**: one `resume` of a corosensei coroutine and its `suspend` back: two stack
//!   switches, the least a fiber yield can cost.
//! - **fiber yield**: one `yield_now` by one of two fibers on the same proc that yield to each
//!   other: the fiber switches to the scheduler, which resumes the other (two stack switches
//!   plus the run queue). Goal: within 5x of the bare switch.
//! - **fiber spawn+join**: `spawn(trivial)` then `join` it, one at a time. Goal on one proc:
//!   at least 1.5x the rate of CML's spawn peer measured in the same run.
//! - **task spawn+join**: inside an async task, `spawn_task(trivial).await`, one at a time.
//!
//! The workloads here are reused by the seed programs (`spawn`, `weigh`, `fig9`).
//!
//! # Invariants
//! - Each workload checks its answer: the sum of the children's values, or that the yielding
//!   fibers really took turns.

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use corosensei::{Coroutine, CoroutineResult};

use super::{Ctx, in_pcml, triangle};
use crate::peers::{Peer, PeerArgs};
use crate::runner::{Error, Metric, Result, Sample, check_eq, repeat, timed, warm_samples_async};
use crate::table::{Goal, Row, Section};

/// Where a spawned child fiber goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// `pcml::spawn`: the scheduler decides (an idle proc may steal it).
    Any,
    /// `pcml::spawn_on` the next proc after the parent's (Reppy, Russo and Xiao's 2-proc variant).
    OtherProc,
}

/// `n` bare corosensei resume+suspend round trips per run; `ops` counts round trips.
pub fn bare_switch(n: u64, runs: usize) -> Result<Vec<Sample>> {
    let mut co: Coroutine<u64, u64, ()> = Coroutine::new(|y, mut x| {
        loop {
            x = y.suspend(x + 1);
        }
    });
    let mut round = |n: u64| -> Result<()> {
        let mut v = 0u64;
        for _ in 0..n {
            match co.resume(black_box(v)) {
                CoroutineResult::Yield(r) => v = r,
                CoroutineResult::Return(()) => {
                    return Err(Error::Failed("coroutine returned".into()));
                }
            }
        }
        check_eq("bare switch count", n, v)
    };
    round(n / 10 + 1)?;
    repeat(runs, || timed(n, || round(n)))
}

/// Two fibers on the caller's proc yield to each other `n` times each; `ops` counts yields
/// (2n). Checks that at least 90% of the yields (or all but 4) let the other fiber run.
fn yield_pair(n: u64) -> Result<()> {
    let home = pcml::current_proc().ok_or_else(|| Error::Failed("not on a proc".into()))?;
    let turns = Arc::new(AtomicU64::new(0));
    let fiber = |turns: Arc<AtomicU64>| {
        move || {
            let mut interleaved = 0u64;
            for _ in 0..n {
                // Both fibers run on one proc, one at a time: a load and a store count the
                // turn without the locked read-modify-write (about 5 ns here) that the bare
                // switch loop does not pay either.
                let before = turns.load(Ordering::Relaxed);
                turns.store(before + 1, Ordering::Relaxed);
                pcml::yield_now();
                if turns.load(Ordering::Relaxed) != before + 1 {
                    interleaved += 1;
                }
            }
            interleaved
        }
    };
    let a = pcml::spawn_on(home, fiber(turns.clone()));
    let b = pcml::spawn_on(home, fiber(turns.clone()));
    let ia = a.join().map_err(|e| Error::Failed(e.to_string()))?;
    let ib = b.join().map_err(|e| Error::Failed(e.to_string()))?;
    check_eq("yields done", 2 * n, turns.load(Ordering::Relaxed))?;
    // Nearly every yield should let the other fiber run: not the first ones (the second fiber
    // may not have reached the run queue yet) nor the last of the fiber that ends last.
    if (ia + ib) * 10 < 2 * n * 9 && ia + ib + 4 < 2 * n {
        return Err(Error::WrongAnswer(format!(
            "fiber yield: only {} of {} yields let the other fiber run",
            ia + ib,
            2 * n
        )));
    }
    Ok(())
}

/// Fiber yield on a runtime of `procs` procs, both fibers on proc 0; `n` yields per fiber.
pub fn fiber_yield(procs: usize, n: u64, runs: usize) -> Result<Vec<Sample>> {
    in_pcml(procs, move || {
        yield_pair(n / 10 + 1)?;
        repeat(runs, || timed(2 * n, || yield_pair(n)))
    })
}

fn spawn_join_loop(n: u64, placement: Placement) -> Result<()> {
    let target = match placement {
        Placement::Any => None,
        Placement::OtherProc => {
            let here = pcml::current_proc().unwrap_or(0);
            Some((here + 1) % pcml::procs())
        }
    };
    let mut sum = 0u64;
    for i in 0..n {
        let h = match target {
            None => pcml::spawn(move || black_box(i)),
            Some(p) => pcml::spawn_on(p, move || black_box(i)),
        };
        sum += h.join().map_err(|e| Error::Failed(e.to_string()))?;
    }
    check_eq("sum of children", triangle(n), sum)
}

/// Fiber spawn+join, one at a time, `n` per run; `ops` counts threads.
pub fn fiber_spawn_join(
    procs: usize,
    placement: Placement,
    n: u64,
    runs: usize,
) -> Result<Vec<Sample>> {
    in_pcml(procs, move || {
        spawn_join_loop(n / 10 + 1, placement)?;
        repeat(runs, || timed(n, || spawn_join_loop(n, placement)))
    })
}

async fn task_loop(n: u64) -> Result<()> {
    let mut sum = 0u64;
    for i in 0..n {
        sum += pcml::spawn_task(async move { black_box(i) })
            .await
            .map_err(|e| Error::Failed(e.to_string()))?;
    }
    check_eq("sum of children", triangle(n), sum)
}

/// Task spawn+join inside an async task, one at a time, `n` per run; `ops` counts threads.
pub fn task_spawn_join(procs: usize, n: u64, runs: usize) -> Result<Vec<Sample>> {
    in_pcml(procs, move || {
        pcml::spawn_task(warm_samples_async(runs, n, n, task_loop))
            .join()
            .map_err(|e| Error::Failed(e.to_string()))?
    })
}

/// Runs the section: bare switch, then each pcml operation on each configured proc count,
/// then CML's spawn, and the two goal ratios.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let runs = ctx.cfg.runs;
    let ns = |op| Metric::NsPerOp { op };
    let switches = ctx.size(2_000_000, 10_000_000);
    let spawns = ctx.size(300_000, 2_000_000);

    ctx.step("micro: corosensei bare resume+suspend");
    // A few milliseconds a run: take more runs, so one preempted run cannot move the median
    // that the yield goal is measured against.
    let s = bare_switch(switches, runs.max(15))?;
    sec.rows.push(
        Row::measured("switch", "corosensei bare", None, ns("resume+suspend"), &s)
            .with_note("one resume and its suspend: two stack switches"),
    );
    for &p in &ctx.cfg.procs {
        ctx.step(&format!("micro: fiber yield on {p} procs"));
        let n = ctx.fit(switches / 2, |k| fiber_yield(p, k, 1))?;
        let s = fiber_yield(p, n, runs)?;
        sec.rows.push(
            Row::measured("yield", "pcml fibers", Some(p), ns("yield"), &s)
                .with_note("two fibers on proc 0 yield to each other"),
        );
    }
    for &p in &ctx.cfg.procs {
        ctx.step(&format!("micro: fiber spawn+join on {p} procs"));
        let n = ctx.fit(spawns, |k| fiber_spawn_join(p, Placement::Any, k, 1))?;
        let s = fiber_spawn_join(p, Placement::Any, n, runs)?;
        sec.rows.push(
            Row::measured("spawn+join", "pcml fibers", Some(p), ns("thread"), &s)
                .with_note("`spawn` then `join`, one at a time"),
        );
    }
    for &p in &ctx.cfg.procs {
        ctx.step(&format!("micro: task spawn+join on {p} procs"));
        let n = ctx.fit(spawns, |k| task_spawn_join(p, k, 1))?;
        let s = task_spawn_join(p, n, runs)?;
        sec.rows.push(
            Row::measured("spawn+join", "pcml tasks", Some(p), ns("thread"), &s)
                .with_note("`spawn_task(..).await` inside a task"),
        );
    }
    let cml = ctx.peers.row(
        ctx.progress,
        "spawn+join",
        Peer::Cml,
        "spawn",
        &PeerArgs {
            n: ctx.size(1_000_000, 2_000_000),
            procs: None,
            branch: None,
            reps: None,
        },
        Some("threads"),
        ns("thread"),
        runs,
    )?;
    sec.rows
        .push(cml.with_note("peer `spawn`: spawn then sync on joinEvt"));

    sec.add_ratio(
        "fiber yield (2 switches via the scheduler) / bare resume+suspend, 1 proc",
        ("yield", "pcml fibers", Some(1)),
        ("switch", "corosensei bare", None),
        Some(Goal::AtMost(5.0)),
    );
    if ctx.has_procs(2) {
        sec.add_ratio(
            "fiber yield on 2 procs / on 1 proc (the idle proc's interference)",
            ("yield", "pcml fibers", Some(2)),
            ("yield", "pcml fibers", Some(1)),
            None,
        );
    }
    // Rates: a lower time per thread is a higher rate, so CML's time over ours.
    sec.add_ratio(
        "fiber spawn+join rate on 1 proc / CML's spawn rate (CML ns per thread / ours)",
        ("spawn+join", "CML (SML/NJ)", Some(1)),
        ("spawn+join", "pcml fibers", Some(1)),
        Some(Goal::AtLeast(1.5)),
    );
    if ctx.has_procs(2) {
        sec.add_ratio(
            "fiber spawn+join time on 2 procs / on 1 proc",
            ("spawn+join", "pcml fibers", Some(2)),
            ("spawn+join", "pcml fibers", Some(1)),
            None,
        );
        sec.add_ratio(
            "task spawn+join time on 2 procs / on 1 proc",
            ("spawn+join", "pcml tasks", Some(2)),
            ("spawn+join", "pcml tasks", Some(1)),
            None,
        );
    }
    sec.notes.push(format!(
        "Sizes: {switches} round trips or yields per run, {spawns} threads per run for pcml; \
         figures are ns per operation (lower is better), rates in parentheses."
    ));
    sec.notes.push(
        "pcml's `join` of a fiber that has not started yet runs it on the joiner's stack \
         (work-first join), so one-at-a-time spawn+join on one proc mostly measures that path; \
         CML's spawn makes and schedules a real thread."
            .to_string(),
    );
    sec.publish(
        "spawn+join",
        "goal",
        "fiber spawn+join on 1 proc >= 1.5x CML's rate (CML ~7 M/s, Go ~1.3 M/s here)",
    );
    sec.publish(
        "yield",
        "goal",
        "fiber yield within 5x of a bare corosensei switch",
    );
    Ok(())
}
