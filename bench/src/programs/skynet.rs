//! Seed 000's skynet (chapter 4): a tree of threads, BRANCH children per node; each leaf sends
//! its number to its parent over a channel and each node the sum of its children's; the answer
//! is LEAVES(LEAVES-1)/2. Run as the paper's 3-ary tree of depth 6 (729 leaves, 1,093 threads)
//! and the common 10-ary tree (100,000 leaves quick, 1,000,000 with `--full`). A node splits
//! its leaves into BRANCH near-equal slices, as the peers do. Figures are seconds per run.
//!
//! pcml runs it with async tasks (`spawn_task`, `send_evt(..).await`) on every size, and with
//! fibers where the tree's live fibers fit under the fiber cap (see the crate docs of pcml:
//! each started, unfinished fiber holds a stack): up to [`FIBER_LEAVES_MAX`] leaves. The
//! "pcml tasks (join)" rows run tokio's program on pcml: each node a task that awaits its
//! children's `JoinHandle`s in order and returns their sum, no channel; the tokio ratios are
//! given against both pcml task rows.
//! These rows use channels where actors would use mailboxes; the actor rows of the same tree
//! are [`super::actor_skynet`]'s.
//!
//! The Rust peer is tokio: each node a task (`tokio::spawn`) that awaits its children's
//! `JoinHandle`s in order and returns their sum (the handle is tokio's way to hand a value
//! to the parent), on a `current_thread` runtime and on a `multi_thread` one of 2 workers.

use std::future::Future;
use std::pin::Pin;

use pcml::chan::Chan;

use super::{Ctx, in_pcml, in_tokio, memory_row};
use crate::runner::{Error, Metric, Result, Sample, check_eq, repeat, timed};
use crate::table::{Goal, Row, Section};

/// The largest tree run with fibers (more would approach the fiber cap).
pub const FIBER_LEAVES_MAX: u64 = 10_000;

/// The slices of `leaves` leaves starting at `first`, for `branch` children (empty ones left
/// out).
pub(crate) fn slices(first: u64, leaves: u64, branch: u64) -> impl Iterator<Item = (u64, u64)> {
    (0..branch).filter_map(move |i| {
        let lo = first + leaves * i / branch;
        let hi = first + leaves * (i + 1) / branch;
        (hi > lo).then_some((lo, hi - lo))
    })
}

fn fiber_node(first: u64, leaves: u64, branch: u64, out: Chan<u64>) {
    if leaves == 1 {
        out.send(first);
        return;
    }
    let ch = Chan::new();
    let mut kids = 0;
    for (lo, n) in slices(first, leaves, branch) {
        let c = ch.clone();
        pcml::spawn(move || fiber_node(lo, n, branch, c));
        kids += 1;
    }
    let sum: u64 = (0..kids).map(|_| ch.recv()).sum();
    out.send(sum);
}

fn task_node(
    first: u64,
    leaves: u64,
    branch: u64,
    out: Chan<u64>,
) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move {
        if leaves == 1 {
            out.send_evt(first).await;
            return;
        }
        let ch = Chan::new();
        let mut kids = 0;
        for (lo, n) in slices(first, leaves, branch) {
            pcml::spawn_task(task_node(lo, n, branch, ch.clone()));
            kids += 1;
        }
        let mut sum = 0u64;
        for _ in 0..kids {
            sum += ch.recv_evt().await;
        }
        out.send_evt(sum).await;
    })
}

/// tokio's program on pcml: a node returns its sum, which its parent gets from the node's
/// `JoinHandle` (children awaited in order).
fn joined_node(first: u64, leaves: u64, branch: u64) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        if leaves == 1 {
            return first;
        }
        let kids: Vec<_> = slices(first, leaves, branch)
            .map(|(lo, n)| pcml::spawn_task(joined_node(lo, n, branch)))
            .collect();
        let mut sum = 0u64;
        for kid in kids {
            // A child only adds numbers; its failure is a panic, which fails the run.
            sum += kid.await.expect("a skynet task panicked");
        }
        sum
    })
}

/// Which threads build the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Fibers, blocking `send`/`recv`.
    Fibers,
    /// Async tasks, reporting over channels.
    Tasks,
    /// Async tasks returning their sums through their join handles (tokio's program).
    Joined,
}

fn tree(leaves: u64, branch: u64, kind: Kind) -> Result<()> {
    if kind == Kind::Joined {
        let sum = pcml::spawn_task(joined_node(0, leaves, branch))
            .join()
            .map_err(|e| Error::Failed(format!("pcml skynet: {e}")))?;
        return check_eq("sum of the leaves", leaves * (leaves - 1) / 2, sum);
    }
    let root = Chan::new();
    let out = root.clone();
    match kind {
        Kind::Fibers => {
            pcml::spawn(move || fiber_node(0, leaves, branch, out));
        }
        Kind::Tasks => {
            pcml::spawn_task(task_node(0, leaves, branch, out));
        }
        Kind::Joined => unreachable!("skynet: the join-handle tree is run above"),
    }
    check_eq("sum of the leaves", leaves * (leaves - 1) / 2, root.recv())
}

/// Skynet of `leaves` leaves and `branch` children per node, on `procs` procs.
pub fn measure(
    procs: usize,
    leaves: u64,
    branch: u64,
    kind: Kind,
    runs: usize,
) -> Result<Vec<Sample>> {
    if leaves < 1 || branch < 2 {
        return Err(Error::Failed(format!(
            "skynet needs leaves >= 1 and branch >= 2 (got {leaves}, {branch})"
        )));
    }
    in_pcml(procs, move || {
        tree(leaves, branch, kind)?;
        repeat(runs, || timed(leaves, || tree(leaves, branch, kind)))
    })
}

fn tokio_node(first: u64, leaves: u64, branch: u64) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        if leaves == 1 {
            return first;
        }
        let kids: Vec<_> = slices(first, leaves, branch)
            .map(|(lo, n)| tokio::spawn(tokio_node(lo, n, branch)))
            .collect();
        let mut sum = 0u64;
        for kid in kids {
            // A child only adds numbers; its failure is a panic, which fails the run.
            sum += kid.await.expect("a skynet task panicked");
        }
        sum
    })
}

async fn tokio_tree(leaves: u64, branch: u64) -> Result<()> {
    let sum = tokio::spawn(tokio_node(0, leaves, branch))
        .await
        .map_err(|e| Error::Failed(format!("tokio skynet: {e}")))?;
    check_eq("sum of the leaves", leaves * (leaves - 1) / 2, sum)
}

/// tokio: skynet of `leaves` leaves and `branch` children per node, on a fresh runtime of
/// `workers` workers (0: `current_thread`).
pub fn tokio_tasks(workers: usize, leaves: u64, branch: u64, runs: usize) -> Result<Vec<Sample>> {
    if leaves < 1 || branch < 2 {
        return Err(Error::Failed(format!(
            "skynet needs leaves >= 1 and branch >= 2 (got {leaves}, {branch})"
        )));
    }
    in_tokio(workers, async move {
        tokio_tree(leaves, branch).await?;
        let mut samples = Vec::with_capacity(runs);
        for _ in 0..runs {
            let start = std::time::Instant::now();
            tokio_tree(leaves, branch).await?;
            samples.push(Sample {
                seconds: start.elapsed().as_secs_f64().max(1e-9),
                ops: leaves,
            });
        }
        Ok(samples)
    })
}

/// The threads of a tree of `leaves` leaves, `branch` children per node (leaves included).
///
/// ```
/// assert_eq!(pcml_bench::programs::skynet::nodes(729, 3), 1093);
/// assert_eq!(pcml_bench::programs::skynet::nodes(1_000_000, 10), 1_111_111);
/// ```
pub fn nodes(leaves: u64, branch: u64) -> u64 {
    if leaves <= 1 {
        return 1;
    }
    1 + slices(0, leaves, branch)
        .map(|(_, n)| nodes(n, branch))
        .sum::<u64>()
}

/// The memory probe, run in a fresh process: builds one tree on one proc and returns the
/// peak resident set it added, in bytes.
pub fn probe_memory(kind: Kind, leaves: u64, branch: u64) -> Result<super::Peak> {
    super::peak_added(move || tree(leaves, branch, kind))
}

/// Measures pcml and the peers.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let runs = ctx.cfg.runs;
    let big = ctx.size(100_000, 1_000_000);
    let secs = Metric::Seconds;
    for (leaves, branch) in [(729, 3), (big, 10)] {
        let prog = format!("skynet {leaves}/{branch}");
        for &p in &ctx.cfg.procs {
            if leaves <= FIBER_LEAVES_MAX {
                ctx.step(&format!("{prog}: pcml fibers on {p} procs"));
                let s = measure(p, leaves, branch, Kind::Fibers, runs)?;
                sec.rows
                    .push(Row::measured(&prog, "pcml fibers", Some(p), secs, &s));
            } else {
                sec.rows.push(Row::skipped(
                    &prog,
                    "pcml fibers",
                    Some(p),
                    secs,
                    &format!(
                        "more than {FIBER_LEAVES_MAX} leaves would near the fiber cap; tasks below"
                    ),
                ));
            }
        }
        for &p in &ctx.cfg.procs {
            ctx.step(&format!("{prog}: pcml tasks on {p} procs"));
            let s = measure(p, leaves, branch, Kind::Tasks, runs)?;
            sec.rows
                .push(Row::measured(&prog, "pcml tasks", Some(p), secs, &s));
        }
        for &p in &ctx.cfg.procs {
            ctx.step(&format!("{prog}: pcml tasks (join) on {p} procs"));
            let s = measure(p, leaves, branch, Kind::Joined, runs)?;
            sec.rows.push(
                Row::measured(&prog, "pcml tasks (join)", Some(p), secs, &s).with_note(
                    "tokio's program: parents await the children's `JoinHandle`s, no channel",
                ),
            );
        }
        ctx.tokio_rows(
            sec,
            &prog,
            secs,
            "`tokio::spawn` per node, parents await the `JoinHandle`s",
            |workers| tokio_tasks(workers, leaves, branch, runs),
        )?;
        ctx.peer_rows(
            sec,
            &prog,
            "skynet",
            leaves,
            Some(branch),
            None,
            secs,
            true,
            runs,
        )?;
        let best = *ctx.cfg.procs.iter().max().unwrap_or(&1);
        let ours = (prog.as_str(), "pcml tasks", Some(best));
        sec.add_ratio(
            &format!("{prog}: Go time / pcml tasks {best}P time (speed-up)"),
            (prog.as_str(), "Go", Some(best)),
            ours,
            Some(Goal::AtLeast(3.0)),
        );
        for &p in &ctx.cfg.procs {
            let kind = if p == 1 {
                "current_thread".to_string()
            } else {
                format!("{p} workers")
            };
            sec.add_ratio(
                &format!("{prog}: tokio {kind} time / pcml tasks {p}P time (speed-up)"),
                (prog.as_str(), "tokio", Some(p)),
                (prog.as_str(), "pcml tasks", Some(p)),
                None,
            );
            sec.add_ratio(
                &format!("{prog}: tokio {kind} time / pcml tasks (join) {p}P time (speed-up)"),
                (prog.as_str(), "tokio", Some(p)),
                (prog.as_str(), "pcml tasks (join)", Some(p)),
                None,
            );
        }
        sec.add_ratio(
            &format!("{prog}: Erlang time / pcml tasks {best}P time (speed-up)"),
            (prog.as_str(), "Erlang", Some(best)),
            ours,
            Some(Goal::AtLeast(10.0)),
        );
    }
    let mem = Metric::BytesPerOp { op: "thread" };
    let prog = format!("skynet {big}/10 memory");
    for kind in [Kind::Tasks, Kind::Fibers] {
        let (system, leaves) = match kind {
            Kind::Tasks => ("pcml tasks", big),
            Kind::Joined => unreachable!("skynet: no memory row for the join-handle tree"),
            Kind::Fibers => ("pcml fibers", big.min(FIBER_LEAVES_MAX)),
        };
        ctx.step(&format!("{prog}: {system} peak memory"));
        let kind_arg = match kind {
            Kind::Fibers => "fibers",
            Kind::Tasks => "tasks",
            Kind::Joined => unreachable!("skynet: no memory row for the join-handle tree"),
        };
        let row = memory_row(
            &prog,
            system,
            ("skynet", kind_arg, leaves, 10),
            nodes(leaves, 10),
            mem,
            runs.min(3),
        )?;
        let row = if matches!(row.outcome, crate::table::Outcome::Measured(_)) {
            row.with_note(&format!(
                "peak RSS added by one tree of {leaves} leaves, per thread, fresh process"
            ))
        } else {
            row
        };
        sec.rows.push(row);
    }
    sec.notes.push(format!(
        "skynet LEAVES/BRANCH: 729 leaves of a 3-ary tree (the paper's), {big} of a 10-ary \
         tree; the \"pcml fibers\" and \"pcml tasks\" rows report to their parents over \
         channels (the actor rows are the actor-skynet program's); tokio's rows and the \
         \"pcml tasks (join)\" rows return the sums through `JoinHandle`s (tokio 1: a \
         current_thread runtime, 2: a multi_thread runtime of 2 workers)."
    ));
    sec.publish("skynet 729/3", "MLKit actors", "177.3 ms");
    sec.publish("skynet 729/3", "Erlang", "2.7 ms");
    Ok(())
}
