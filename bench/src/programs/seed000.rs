//! What Krook's actor programs (skynet, message bombing, bitonic mergesort) share: the
//! actor layer they run on, the timing of tiny programs (the mean of many runs per sample, as
//! the thesis averaged 100), the Erlang rows with their peak memory, and the goal rows.
//!
//! Every pcml program of this chapter is written twice over `pcml::actor`, with fiber actors
//! (direct style: `receive` blocks the fiber) and with async actors (indirect style:
//! `recv().await`).
//!
//! # Invariants
//! - A sample of a tiny program is the mean of `reps` runs (its `ops` is `reps`), on pcml and
//!   on Erlang alike; each run checks its answer inside the loop, as the Erlang peer does.
//! - The goal rows compare figures of the same invocation.

use std::time::Instant;

use super::{Ctx, Peak, in_pcml, memory_rows, peak_of};
use crate::peers::{Peer, PeerArgs};
use crate::runner::{Metric, Result, Sample, repeat};
use crate::table::{Goal, Ratio, Row, Section};

pub use pcml::actor;

/// The row system of fiber actors.
pub const FIBERS: &str = "pcml actors (fibers)";
/// The row system of async actors.
pub const ASYNC: &str = "pcml actors (async)";

/// The two kinds of actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `actor::spawn`: a fiber, direct style.
    Fibers,
    /// `actor::spawn_async`: an async task, indirect style.
    Async,
}

impl Kind {
    /// Both kinds.
    pub const BOTH: [Kind; 2] = [Kind::Fibers, Kind::Async];

    /// The row system.
    pub fn system(self) -> &'static str {
        match self {
            Kind::Fibers => FIBERS,
            Kind::Async => ASYNC,
        }
    }

    /// The probe kind of `pcml-bench --probe` (see [`super::probe`]).
    pub fn probe_kind(self) -> &'static str {
        match self {
            Kind::Fibers => "fibers",
            Kind::Async => "tasks",
        }
    }
}

/// Runs `one` once to warm up, then `runs` samples, each the mean of `reps` runs of `one`, in a
/// runtime of `procs` procs. `one` runs the whole program and checks its answer.
pub fn averaged<F>(procs: usize, runs: usize, reps: u64, one: F) -> Result<Vec<Sample>>
where
    F: Fn() -> Result<()> + Send + 'static,
{
    let reps = reps.max(1);
    in_pcml(procs, move || {
        one()?;
        repeat(runs, || {
            let start = Instant::now();
            for _ in 0..reps {
                one()?;
            }
            Ok(Sample {
                seconds: (start.elapsed().as_secs_f64() / reps as f64).max(1e-9),
                ops: reps,
            })
        })
    })
}

/// The runs a sample of a tiny program averages: 100, as the thesis did (fewer in the tests).
pub fn reps(ctx: &Ctx<'_>) -> u64 {
    if ctx.cfg.tiny { 2 } else { 100 }
}

/// Adds the pcml rows of a tiny program: per proc count, the time of each actor kind (from
/// `measure(procs, kind)`); then its peak memory per kind (RSS and heap), probed in a fresh
/// process with `pcml-bench --probe probe.0 KIND probe.1 probe.2`.
pub fn pcml_rows(
    ctx: &Ctx<'_>,
    sec: &mut Section,
    prog: &str,
    measure: impl Fn(usize, Kind) -> Result<Vec<Sample>>,
    probe: (&str, u64, u64),
) -> Result<()> {
    for &p in &ctx.cfg.procs {
        for kind in Kind::BOTH {
            ctx.step(&format!("{prog}: {} on {p} procs", kind.system()));
            let s = measure(p, kind)?;
            sec.rows.push(Row::measured(
                prog,
                kind.system(),
                Some(p),
                Metric::Seconds,
                &s,
            ));
        }
    }
    let mem = Metric::BytesPerOp { op: "run" };
    let mut heap_rows = Vec::new();
    for kind in Kind::BOTH {
        ctx.step(&format!("{prog}: {} peak memory", kind.system()));
        let (rss, heap) = memory_rows(
            &memory_program(prog),
            &heap_program(prog),
            kind.system(),
            (probe.0, kind.probe_kind(), probe.1, probe.2),
            1,
            mem,
            ctx.cfg.runs.min(3),
        )?;
        sec.rows.push(if rss.median().is_some() {
            rss.with_note("peak RSS added by a run after a warm-up run, fresh process, 1 proc")
        } else {
            rss
        });
        heap_rows.push(if heap.median().is_some() {
            heap.with_note(
                "peak growth of live heap bytes during a run after a warm-up run (fiber \
                 stacks not counted)",
            )
        } else {
            heap
        });
    }
    sec.rows.extend(heap_rows);
    Ok(())
}

/// Runs `one` in a fresh one-proc runtime twice and returns the peak memory the second run
/// added: what a run needs beyond what the warm-up left (for the memory probes, each in a
/// fresh process; the Erlang peer measures its resident set the same way).
pub fn peak_after_warmup<F>(one: F) -> Result<Peak>
where
    F: Fn() -> Result<()> + Send + 'static,
{
    in_pcml(1, move || {
        one()?;
        peak_of(&one)
    })
}

/// The row program of `prog`'s peak RSS rows.
pub fn memory_program(prog: &str) -> String {
    format!("{prog} memory")
}

/// The row program of `prog`'s peak heap rows (pcml only).
pub fn heap_program(prog: &str) -> String {
    format!("{prog} heap")
}

/// Adds the Erlang rows of a tiny program: per proc count, its time (the mean of `reps` runs
/// per invocation) and its peak memory (one cold run per invocation), from the same runs of
/// `run.sh erlang program n PROCS reps`.
pub fn erlang_rows(
    ctx: &Ctx<'_>,
    sec: &mut Section,
    prog: &str,
    program: &str,
    n: u64,
    reps: u64,
) -> Result<()> {
    let mem = Metric::BytesPerOp { op: "run" };
    let mut mem_rows = Vec::new();
    for &p in &ctx.cfg.procs {
        let args = PeerArgs {
            n,
            procs: Some(p),
            branch: None,
            reps: Some(reps),
        };
        let (time, memory) = ctx.peers.rows_with_value(
            ctx.progress,
            prog,
            Peer::Erlang,
            program,
            &args,
            Metric::Seconds,
            Some("reps"),
            (&memory_program(prog), "peak_rss_added", mem),
            ctx.cfg.runs,
        )?;
        sec.rows.push(time);
        mem_rows.push(if memory.median().is_some() {
            memory.with_note("peak RSS added by a run after a warm-up run, fresh VM")
        } else {
            memory
        });
    }
    sec.rows.extend(mem_rows);
    Ok(())
}

/// Adds, for `prog` on the most procs run, the ratio Erlang time / pcml time for each actor
/// kind; then the goal row "at least 5x faster than Erlang", which holds Erlang's fastest
/// row (over proc counts) against pcml's fastest (over actor kinds and proc counts), so that
/// neither side is judged on a proc count that does not suit it (Erlang's tiny programs run
/// slower on two schedulers than on one); then renews the chapter's summary goal row
/// ([`renew_summary`]).
pub fn vs_erlang(ctx: &Ctx<'_>, sec: &mut Section, prog: &str) {
    let p = *ctx.cfg.procs.iter().max().unwrap_or(&1);
    for kind in Kind::BOTH {
        sec.add_ratio(
            &format!(
                "{prog}: Erlang {p}P time / {} {p}P time (speed-up)",
                kind.system()
            ),
            (prog, "Erlang", Some(p)),
            (prog, kind.system(), Some(p)),
            None,
        );
    }
    // The fastest of `systems` over the proc counts run: (system, procs, short name).
    let fastest = |systems: &[(&'static str, &'static str)]| {
        let mut best: Option<((&'static str, &'static str), usize, f64)> = None;
        for &system in systems {
            for &q in &ctx.cfg.procs {
                let Some(m) = sec.find((prog, system.0, Some(q))).and_then(Row::median) else {
                    continue;
                };
                if best.is_none_or(|(_, _, b)| m < b) {
                    best = Some((system, q, m));
                }
            }
        }
        best.map_or((systems[0], p), |(system, q, _)| (system, q))
    };
    let ((erlang, _), ep) = fastest(&[("Erlang", "Erlang")]);
    let ((ours, short), op) = fastest(&[(FIBERS, "fibers"), (ASYNC, "async")]);
    sec.add_ratio(
        &format!(
            "{prog}: fastest Erlang time ({ep}P) / {PER_PROGRAM} time ({short}, {op}P): at \
             least {GOAL_VS_ERLANG}x"
        ),
        (prog, erlang, Some(ep)),
        (prog, ours, Some(op)),
        Some(Goal::AtLeast(GOAL_VS_ERLANG)),
    );
    renew_summary(sec);
}

/// The chapter's goal: every program at least this many times faster than Erlang.
pub const GOAL_VS_ERLANG: f64 = 5.0;

const PER_PROGRAM: &str = "fastest pcml actors";
const SUMMARY: &str = "every Krook 2020 program at least 5x faster than Erlang";

/// Replaces the summary goal row "every Krook 2020 program at least 5x faster than Erlang" by
/// one over the per-program goal rows now in the section: the smallest of their ratios, or
/// which program was not measured.
pub fn renew_summary(sec: &mut Section) {
    sec.ratios.retain(|q| !q.label.starts_with(SUMMARY));
    let per: Vec<&Ratio> = sec
        .ratios
        .iter()
        .filter(|q| q.label.contains(PER_PROGRAM) && q.goal.is_some())
        .collect();
    let programs: Vec<String> = per
        .iter()
        .map(|q| q.label.split(':').next().unwrap_or("").to_string())
        .collect();
    let value = per.iter().try_fold(f64::INFINITY, |min, q| match &q.value {
        Ok(v) => Ok(min.min(*v)),
        Err(why) => Err(format!(
            "{}: {why}",
            q.label.split(':').next().unwrap_or("")
        )),
    });
    let label = format!(
        "{SUMMARY} (the smallest speed-up of the {} measured here: {})",
        programs.len(),
        programs.join(", ")
    );
    sec.ratios.push(Ratio::derived(
        &label,
        value,
        Some(Goal::AtLeast(GOAL_VS_ERLANG)),
    ));
}

/// The note every Krook 2020 section gets once: what the actor rows run on.
pub fn note_actors(sec: &mut Section) {
    let note = "pcml actors are pcml::actor: fiber actors (actor::spawn, blocking receive) and \
                async actors (actor::spawn_async, recv().await); a run's root hands its answer \
                to the timing fiber through an IVar.";
    let tiny = "The tiny programs (skynet depth 6, bombing, bitonic) report the mean time of \
                one run: each sample averages 100 runs after a warm-up (\"runs x ops\" reads \
                samples x runs averaged), on pcml and in each Erlang VM alike. Their memory is \
                the peak RSS added by one run after a warm-up run, in a fresh process (pcml, 1 \
                proc) or a fresh VM (Erlang): what a run needs beyond what the warm-up left, at \
                page granularity (allocators keep and return whole pages, so small programs \
                read 0 or a jump). The \"heap\" rows (pcml only) count the live heap bytes \
                the run added at its peak, byte-exact (the thesis's Table 4.2 counts allocated \
                bytes); fiber stacks come from a pool and are not in them.";
    for n in [note, tiny] {
        if !sec.notes.iter().any(|x| x == n) {
            sec.notes.push(n.to_string());
        }
    }
}
