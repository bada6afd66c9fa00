//! Seed 000's skynet with actors (chapter 4): the cost of spawning actors. Two trees:
//!
//! - The thesis's: an actor spawns three children, each of which spawns three, down to depth
//!   [`PAPER_DEPTH`]; each leaf sends 1 to its parent, each inner actor the sum of its three
//!   children's, and the root's sum, 3^6 = 729, goes to a printer actor (1,093 actors plus
//!   the printer). Tiny: each sample is the mean of 100 runs. Row "skynet depth 6 (thesis)",
//!   against the Erlang peer's `skynet-paper`.
//! - The common 10-ary tree (100,000 leaves quick, 1,000,000 with `--full`), the same program
//!   as [`super::skynet`]'s channel rows (a node splits its leaves into ten near-equal slices;
//!   a leaf sends its number, the answer is LEAVES(LEAVES-1)/2), so its actor rows sit in the
//!   same table rows and are held against the same Erlang figures (measured here when the
//!   `skynet` program did not run).
//!
//! Fiber actors run the 10-ary tree only up to [`super::skynet::FIBER_LEAVES_MAX`] leaves
//! (every started, unfinished fiber holds a stack; see pcml's fiber cap); async actors run
//! every size.
//!
//! # Invariants
//! - Every node is an actor, leaves included, as in the thesis.

use std::future::Future;
use std::pin::Pin;

use pcml::IVar;

use super::seed000::{self, Kind, actor};
use super::skynet::{FIBER_LEAVES_MAX, nodes, slices};
use super::{Ctx, in_pcml, memory_row};
use crate::peers::{Peer, PeerArgs};
use crate::runner::{Error, Metric, Result, Sample, check_eq, repeat, timed};
use crate::table::{Goal, Row, Section};

/// The thesis's depth: a 3-ary tree of 729 leaves.
pub const PAPER_DEPTH: u32 = 6;

fn send_up(parent: &actor::Pid<u64>, v: u64) {
    parent
        .send(v)
        .unwrap_or_else(|_| panic!("skynet: a parent exited before its children answered"));
}

/// The thesis's node, fiber actor: depth 0 sends 1; else three children and their sum.
fn paper_fiber(mut ctx: actor::Ctx<u64>, depth: u32, parent: actor::Pid<u64>) {
    if depth == 0 {
        return send_up(&parent, 1);
    }
    for _ in 0..3 {
        let me = ctx.pid();
        actor::spawn(move |c| paper_fiber(c, depth - 1, me));
    }
    let sum: u64 = (0..3).map(|_| ctx.receive()).sum();
    send_up(&parent, sum);
}

type Boxed = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The thesis's node, async actor.
fn paper_async(mut ctx: actor::Ctx<u64>, depth: u32, parent: actor::Pid<u64>) -> Boxed {
    Box::pin(async move {
        if depth == 0 {
            return send_up(&parent, 1);
        }
        for _ in 0..3 {
            let me = ctx.pid();
            actor::spawn_async(move |c| paper_async(c, depth - 1, me));
        }
        let mut sum = 0;
        for _ in 0..3 {
            sum += ctx.recv().await;
        }
        send_up(&parent, sum);
    })
}

/// The 10-ary tree's node, fiber actor: leaves `[first, first + leaves)`.
fn wide_fiber(
    mut ctx: actor::Ctx<u64>,
    first: u64,
    leaves: u64,
    branch: u64,
    parent: actor::Pid<u64>,
) {
    if leaves == 1 {
        return send_up(&parent, first);
    }
    let mut kids = 0;
    for (lo, n) in slices(first, leaves, branch) {
        let me = ctx.pid();
        actor::spawn(move |c| wide_fiber(c, lo, n, branch, me));
        kids += 1;
    }
    let sum: u64 = (0..kids).map(|_| ctx.receive()).sum();
    send_up(&parent, sum);
}

/// The 10-ary tree's node, async actor.
fn wide_async(
    mut ctx: actor::Ctx<u64>,
    first: u64,
    leaves: u64,
    branch: u64,
    parent: actor::Pid<u64>,
) -> Boxed {
    Box::pin(async move {
        if leaves == 1 {
            return send_up(&parent, first);
        }
        let mut kids = 0;
        for (lo, n) in slices(first, leaves, branch) {
            let me = ctx.pid();
            actor::spawn_async(move |c| wide_async(c, lo, n, branch, me));
            kids += 1;
        }
        let mut sum = 0;
        for _ in 0..kids {
            sum += ctx.recv().await;
        }
        send_up(&parent, sum);
    })
}

/// Which tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tree {
    /// The thesis's 3-ary tree of this depth; leaves send 1.
    Paper {
        /// Levels below the root.
        depth: u32,
    },
    /// `leaves` leaves, `branch` children per node; leaves send their numbers.
    Wide {
        /// Leaves.
        leaves: u64,
        /// Children per node.
        branch: u64,
    },
}

impl Tree {
    fn answer(self) -> u64 {
        match self {
            Tree::Paper { depth } => 3u64.pow(depth),
            Tree::Wide { leaves, .. } => leaves * (leaves - 1) / 2,
        }
    }

    fn check(self) -> Result<()> {
        match self {
            Tree::Paper { depth } if depth > 30 => Err(Error::Failed(format!(
                "skynet depth {depth} is too deep (3^depth actors)"
            ))),
            Tree::Wide { leaves, branch } if leaves < 1 || branch < 2 => Err(Error::Failed(
                format!("skynet needs leaves >= 1 and branch >= 2 (got {leaves}, {branch})"),
            )),
            _ => Ok(()),
        }
    }
}

/// One run: a printer actor (which hands the root's sum to this fiber) and the tree's root.
fn one(tree: Tree, kind: Kind) -> Result<()> {
    let done = IVar::new();
    let out = done.clone();
    match kind {
        Kind::Fibers => {
            let printer = actor::spawn(move |mut c: actor::Ctx<u64>| {
                let _ = out.put(c.receive());
            });
            match tree {
                Tree::Paper { depth } => actor::spawn(move |c| paper_fiber(c, depth, printer)),
                Tree::Wide { leaves, branch } => {
                    actor::spawn(move |c| wide_fiber(c, 0, leaves, branch, printer))
                }
            };
        }
        Kind::Async => {
            let printer = actor::spawn_async(move |mut c: actor::Ctx<u64>| async move {
                let _ = out.put(c.recv().await);
            });
            match tree {
                Tree::Paper { depth } => {
                    actor::spawn_async(move |c| paper_async(c, depth, printer))
                }
                Tree::Wide { leaves, branch } => {
                    actor::spawn_async(move |c| wide_async(c, 0, leaves, branch, printer))
                }
            };
        }
    }
    check_eq("skynet's sum", tree.answer(), done.get())
}

/// The thesis's tree on `procs` procs: `runs` samples, each the mean of `reps` runs.
pub fn measure_paper(
    procs: usize,
    depth: u32,
    kind: Kind,
    runs: usize,
    reps: u64,
) -> Result<Vec<Sample>> {
    let tree = Tree::Paper { depth };
    tree.check()?;
    seed000::averaged(procs, runs, reps, move || one(tree, kind))
}

/// The wide tree on `procs` procs: a warm-up run, then `runs` samples of one run each.
pub fn measure_wide(
    procs: usize,
    leaves: u64,
    branch: u64,
    kind: Kind,
    runs: usize,
) -> Result<Vec<Sample>> {
    let tree = Tree::Wide { leaves, branch };
    tree.check()?;
    in_pcml(procs, move || {
        one(tree, kind)?;
        repeat(runs, || timed(leaves, || one(tree, kind)))
    })
}

/// The memory probe, run in a fresh process on one proc: the peak resident set, in bytes,
/// added by the thesis's tree of depth `a` after a warm-up tree (`branch` 0), or by one tree of
/// `a` leaves and `branch` children per node, cold (as the channel rows of that tree).
pub fn probe_memory(kind: Kind, a: u64, branch: u64) -> Result<super::Peak> {
    let tree = if branch == 0 {
        Tree::Paper {
            depth: u32::try_from(a).unwrap_or(u32::MAX),
        }
    } else {
        Tree::Wide { leaves: a, branch }
    };
    tree.check()?;
    match tree {
        // Tiny: what a run needs after a warm-up, as the other Krook 2020 programs.
        Tree::Paper { .. } => seed000::peak_after_warmup(move || one(tree, kind)),
        // As the channel rows of the same tree: one cold run.
        Tree::Wide { .. } => super::peak_added(move || one(tree, kind)),
    }
}

/// Measures pcml and Erlang.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let runs = ctx.cfg.runs;
    let reps = seed000::reps(ctx);
    let secs = Metric::Seconds;

    // The thesis's tree.
    let prog = format!("skynet depth {PAPER_DEPTH} (thesis)");
    seed000::pcml_rows(
        ctx,
        sec,
        &prog,
        |p, kind| measure_paper(p, PAPER_DEPTH, kind, runs, reps),
        ("actor-skynet", u64::from(PAPER_DEPTH), 0),
    )?;
    seed000::erlang_rows(
        ctx,
        sec,
        &prog,
        "skynet-paper",
        u64::from(PAPER_DEPTH),
        reps,
    )?;
    seed000::vs_erlang(ctx, sec, &prog);

    // The 10-ary tree, beside the channel rows of the `skynet` program.
    let big = ctx.size(100_000, 1_000_000);
    let prog = format!("skynet {big}/10");
    for &p in &ctx.cfg.procs {
        for kind in Kind::BOTH {
            if kind == Kind::Fibers && big > FIBER_LEAVES_MAX {
                sec.rows.push(Row::skipped(
                    &prog,
                    kind.system(),
                    Some(p),
                    secs,
                    &format!(
                        "more than {FIBER_LEAVES_MAX} leaves would near the fiber cap; async actors below"
                    ),
                ));
                continue;
            }
            ctx.step(&format!("{prog}: {} on {p} procs", kind.system()));
            let s = measure_wide(p, big, 10, kind, runs)?;
            sec.rows
                .push(Row::measured(&prog, kind.system(), Some(p), secs, &s));
        }
    }
    for &p in &ctx.cfg.procs {
        if sec.find((&prog, "Erlang", Some(p))).is_none() {
            let args = PeerArgs {
                n: big,
                procs: Some(p),
                branch: Some(10),
                reps: None,
            };
            let row = ctx.peers.row(
                ctx.progress,
                &prog,
                Peer::Erlang,
                "skynet",
                &args,
                None,
                secs,
                runs,
            )?;
            sec.rows.push(row);
        }
    }
    seed000::vs_erlang(ctx, sec, &prog);
    let mem_prog = format!("skynet {big}/10 memory");
    ctx.step(&format!("{mem_prog}: {ASYNC_SYSTEM} peak memory"));
    let row = memory_row(
        &mem_prog,
        ASYNC_SYSTEM,
        ("actor-skynet", Kind::Async.probe_kind(), big, 10),
        nodes(big, 10) + 1,
        Metric::BytesPerOp { op: "thread" },
        runs.min(3),
    )?;
    sec.rows.push(if row.median().is_some() {
        row.with_note(&format!(
            "peak RSS added by one tree of {big} leaves, per actor, fresh process"
        ))
    } else {
        row
    });

    // The goal of issue 6: a million leaves under half a second on two procs.
    let million = "skynet 1000000/10";
    sec.add_limit(
        &format!("skynet 1,000,000 leaves under 0.5 s on 2 procs ({ASYNC_SYSTEM})"),
        (million, ASYNC_SYSTEM, Some(2)),
        Goal::AtMost(0.5),
        if ctx.cfg.full {
            "not run on 2 procs (--procs)"
        } else {
            "1,000,000 leaves run only with --full"
        },
    );
    seed000::note_actors(sec);
    sec.notes.push(format!(
        "skynet depth {PAPER_DEPTH} (thesis): the thesis's 3-ary tree of actors, {} leaves \
         each sending 1, {} actors and a printer; skynet {big}/10 with actors is the channel \
         program's tree with an actor per node.",
        3u64.pow(PAPER_DEPTH),
        (3u64.pow(PAPER_DEPTH + 1) - 1) / 2
    ));
    sec.publish(
        &format!("skynet depth {PAPER_DEPTH} (thesis)"),
        "MLKit actors",
        "177.3 ms",
    );
    sec.publish(
        &format!("skynet depth {PAPER_DEPTH} (thesis)"),
        "Erlang",
        "2.7 ms",
    );
    Ok(())
}

const ASYNC_SYSTEM: &str = seed000::ASYNC;
