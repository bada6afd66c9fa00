//! Seed 000's message bombing (chapter 4): what carrying unreceived messages costs. A receiver
//! actor takes [`MESSAGES`] `Msg(6, 3)` by selective receive, summing `6 / 3`, and sends the
//! sum (2 x [`MESSAGES`]) to the main actor. In bombing 1 a sender spawned first also sends it
//! [`MESSAGES`] `BadMsg(6, 3)`, which it never takes: they stay in its mailbox and every
//! receive passes over those ahead of the next `Msg`. Bombing 2 has no bad sender. One run is
//! the whole program: the main actor spawns the receiver and the senders and waits for the
//! sum. Time (the mean of 100 runs per sample) and peak memory, against Erlang (the thesis's
//! Table 4.1: MLKit 7.5 / 4.1 ms, Erlang 0.5 / 0.17 ms).
//!
//! As in the thesis, the two senders run concurrently, so how the bad messages interleave with
//! the good ones depends on the scheduler; each message is sent with its own `send`, as the
//! Erlang peer does.
//!
//! # Invariants
//! - The receiver's selective receive names `Msg` only: a `BadMsg` is never taken.

use pcml::IVar;

use super::Ctx;
use super::seed000::{self, Kind, actor};
use crate::runner::{Error, Result, Sample, check_eq};
use crate::table::Section;

/// Messages of each kind: the thesis's 200.
pub const MESSAGES: u64 = 200;

/// A message to the receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bomb {
    /// A message the receiver takes: it adds `num / den`.
    Msg(u64, u64),
    /// A message it never takes.
    BadMsg(u64, u64),
}

fn wanted(m: &Bomb) -> bool {
    matches!(m, Bomb::Msg(..))
}

fn gain(m: Bomb) -> u64 {
    match m {
        Bomb::Msg(num, den) => num / den,
        // Never taken (`wanted`); if it were, the sum would be wrong and the run would fail.
        Bomb::BadMsg(..) => 0,
    }
}

fn send_all(to: &actor::Pid<Bomb>, n: u64, m: Bomb) {
    for _ in 0..n {
        if to.send(m).is_err() {
            // The receiver ends once it has its `Msg`s; `BadMsg`s that come later are dropped,
            // as Erlang drops a message to a dead process. A `Msg` must always arrive.
            assert!(
                !wanted(&m),
                "bombing: the receiver exited before its messages came"
            );
            return;
        }
    }
}

/// One run of bombing `variant` (1 or 2) with fiber actors; returns the receiver's sum.
fn run_fibers(variant: u8, n: u64) -> u64 {
    let done = IVar::new();
    let out = done.clone();
    actor::spawn(move |mut main: actor::Ctx<u64>| {
        let me = main.pid();
        let a = actor::spawn(move |mut ctx: actor::Ctx<Bomb>| {
            let mut sum = 0;
            for _ in 0..n {
                sum += gain(ctx.receive_match(wanted));
            }
            let _ = me.send(sum);
        });
        if variant == 1 {
            let b = a.clone();
            actor::spawn(move |_: actor::Ctx<()>| send_all(&b, n, Bomb::BadMsg(6, 3)));
        }
        actor::spawn(move |_: actor::Ctx<()>| send_all(&a, n, Bomb::Msg(6, 3)));
        let _ = out.put(main.receive());
    });
    done.get()
}

/// One run of bombing `variant` (1 or 2) with async actors; returns the receiver's sum.
fn run_async(variant: u8, n: u64) -> u64 {
    let done = IVar::new();
    let out = done.clone();
    actor::spawn_async(move |mut main: actor::Ctx<u64>| async move {
        let me = main.pid();
        let a = actor::spawn_async(move |mut ctx: actor::Ctx<Bomb>| async move {
            let mut sum = 0;
            for _ in 0..n {
                sum += gain(ctx.recv_match(wanted).await);
            }
            let _ = me.send(sum);
        });
        if variant == 1 {
            let b = a.clone();
            actor::spawn_async(move |_: actor::Ctx<()>| async move {
                send_all(&b, n, Bomb::BadMsg(6, 3))
            });
        }
        actor::spawn_async(
            move |_: actor::Ctx<()>| async move { send_all(&a, n, Bomb::Msg(6, 3)) },
        );
        let _ = out.put(main.recv().await);
    });
    done.get()
}

fn one(variant: u8, n: u64, kind: Kind) -> Result<()> {
    let sum = match kind {
        Kind::Fibers => run_fibers(variant, n),
        Kind::Async => run_async(variant, n),
    };
    check_eq("the receiver's sum", 2 * n, sum)
}

/// Bombing `variant` (1 or 2) with `n` messages of each kind, on `procs` procs: `runs`
/// samples, each the mean of `reps` runs.
pub fn measure(
    procs: usize,
    variant: u8,
    n: u64,
    kind: Kind,
    runs: usize,
    reps: u64,
) -> Result<Vec<Sample>> {
    if !matches!(variant, 1 | 2) || n == 0 {
        return Err(Error::Failed(format!(
            "bombing needs variant 1 or 2 and n >= 1 (got {variant}, {n})"
        )));
    }
    seed000::averaged(procs, runs, reps, move || one(variant, n, kind))
}

/// The memory probe, run in a fresh process: a run of bombing `variant` on one proc after a
/// warm-up run; the peak resident set it added, in bytes.
pub fn probe_memory(variant: u8, n: u64, kind: Kind) -> Result<super::Peak> {
    seed000::peak_after_warmup(move || one(variant, n, kind))
}

/// Measures pcml and Erlang.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let runs = ctx.cfg.runs;
    let reps = seed000::reps(ctx);
    for variant in [1u8, 2] {
        let prog = format!("bombing {variant}");
        seed000::pcml_rows(
            ctx,
            sec,
            &prog,
            |p, kind| measure(p, variant, MESSAGES, kind, runs, reps),
            (&format!("bombing{variant}"), MESSAGES, 0),
        )?;
        seed000::erlang_rows(
            ctx,
            sec,
            &prog,
            &format!("bombing{variant}"),
            MESSAGES,
            reps,
        )?;
        seed000::vs_erlang(ctx, sec, &prog);
    }
    seed000::note_actors(sec);
    sec.notes.push(format!(
        "bombing 1: {MESSAGES} messages the receiver never takes and {MESSAGES} it takes by \
         selective receive; bombing 2: only the {MESSAGES} it takes (the thesis's sizes)."
    ));
    sec.publish("bombing 1", "MLKit actors", "7.5 ms");
    sec.publish("bombing 1", "Erlang", "0.5 ms");
    sec.publish("bombing 2", "MLKit actors", "4.1 ms");
    sec.publish("bombing 2", "Erlang", "0.17 ms");
    Ok(())
}
