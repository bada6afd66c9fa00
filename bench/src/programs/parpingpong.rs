//! Seed 003's parallel ping-pong (section 10.2): eight independent ping-pong pairs at once;
//! on several procs the two fibers of a pair are on different procs (pair `i`: pinger on proc
//! `i % P`, ponger on `(i + 1) % P`). One message is one operation; figures are messages per
//! second, all pairs together.
//!
//! The Rust peers: tokio, the 16 tasks of the 8 pairs over `mpsc::channel(1)` pairs (tokio has
//! no rendezvous channel; see [`super::pingpong`]) on a `current_thread` runtime and on a
//! `multi_thread` one of 2 workers (the scheduler places the tasks); and crossbeam-channel on
//! 16 OS threads, one per pinger and ponger, over `bounded(0)` rendezvous channels (the kernel
//! places the threads).

use super::pingpong::{fiber_pair, fiber_pair_at, tokio_pair};
use super::{Ctx, in_pcml, in_tokio, triangle};
use crate::runner::{Error, Metric, Result, Sample, check_eq, repeat, timed, warm_samples_async};
use crate::table::{Goal, Row, Section};

const RATE: Metric = Metric::Rate { unit: "msgs/s" };

/// Pairs run at once.
pub const PAIRS: u64 = 8;

fn eight_pairs(rounds: u64) -> Result<()> {
    let p = pcml::procs();
    let hs: Vec<_> = (0..PAIRS as usize)
        .map(|i| fiber_pair(rounds, i % p, (i + 1) % p))
        .collect();
    for h in hs {
        let sum = h.join().map_err(|e| Error::Failed(e.to_string()))?;
        check_eq("sum of a pair's replies", triangle(rounds) + rounds, sum)?;
    }
    Ok(())
}

fn eight_spawned_pairs(rounds: u64) -> Result<()> {
    let hs: Vec<_> = (0..PAIRS)
        .map(|_| fiber_pair_at(rounds, None, None))
        .collect();
    for h in hs {
        let sum = h.join().map_err(|e| Error::Failed(e.to_string()))?;
        check_eq("sum of a pair's replies", triangle(rounds) + rounds, sum)?;
    }
    Ok(())
}

/// Fibers placed by the scheduler (`pcml::spawn`): `msgs` messages per run in all, on a
/// runtime of `procs` procs.
pub fn fibers_spawned(procs: usize, msgs: u64, runs: usize) -> Result<Vec<Sample>> {
    let rounds = (msgs / (2 * PAIRS)).max(1);
    in_pcml(procs, move || {
        eight_spawned_pairs(rounds / 10 + 1)?;
        repeat(runs, || {
            timed(2 * PAIRS * rounds, || eight_spawned_pairs(rounds))
        })
    })
}

/// Fibers: `msgs` messages per run in all, on a runtime of `procs` procs.
pub fn fibers(procs: usize, msgs: u64, runs: usize) -> Result<Vec<Sample>> {
    let rounds = (msgs / (2 * PAIRS)).max(1);
    in_pcml(procs, move || {
        eight_pairs(rounds / 10 + 1)?;
        repeat(runs, || timed(2 * PAIRS * rounds, || eight_pairs(rounds)))
    })
}

async fn tokio_pairs(rounds: u64) -> Result<()> {
    let pairs: Vec<_> = (0..PAIRS)
        .map(|_| tokio::spawn(tokio_pair(rounds)))
        .collect();
    for pair in pairs {
        pair.await
            .map_err(|e| Error::Failed(format!("tokio pinger: {e}")))??;
    }
    Ok(())
}

/// tokio: `msgs` messages per run in all, on a fresh runtime of `workers` workers (0:
/// `current_thread`).
pub fn tokio_tasks(workers: usize, msgs: u64, runs: usize) -> Result<Vec<Sample>> {
    let rounds = (msgs / (2 * PAIRS)).max(1);
    in_tokio(
        workers,
        warm_samples_async(runs, rounds, 2 * PAIRS * rounds, tokio_pairs),
    )
}

/// The eight pairs on 16 OS threads over crossbeam-channel's `bounded(0)`.
fn crossbeam_pairs(rounds: u64) -> Result<()> {
    let pingers: Vec<_> = (0..PAIRS)
        .map(|_| {
            let (ping_tx, ping_rx) = crossbeam_channel::bounded::<u64>(0);
            let (pong_tx, pong_rx) = crossbeam_channel::bounded::<u64>(0);
            let ponger = std::thread::spawn(move || {
                for _ in 0..rounds {
                    let Ok(v) = ping_rx.recv() else { return };
                    if pong_tx.send(v + 1).is_err() {
                        return;
                    }
                }
            });
            std::thread::spawn(move || {
                let mut sum = 0u64;
                for i in 0..rounds {
                    ping_tx.send(i).ok()?;
                    sum += pong_rx.recv().ok()?;
                }
                ponger.join().ok()?;
                Some(sum)
            })
        })
        .collect();
    for pinger in pingers {
        let sum = pinger
            .join()
            .ok()
            .flatten()
            .ok_or_else(|| Error::Failed("a crossbeam pair broke off".into()))?;
        check_eq("sum of a pair's replies", triangle(rounds) + rounds, sum)?;
    }
    Ok(())
}

/// crossbeam-channel on 16 OS threads: `msgs` messages per run in all.
pub fn crossbeam_threads(msgs: u64, runs: usize) -> Result<Vec<Sample>> {
    let rounds = (msgs / (2 * PAIRS)).max(1);
    crossbeam_pairs(rounds / 10 + 1)?;
    repeat(runs, || {
        timed(2 * PAIRS * rounds, || crossbeam_pairs(rounds))
    })
}

/// Measures pcml and the peers.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let runs = ctx.cfg.runs;
    let n = ctx.size(480_000, 1_600_000);
    let prog = "parallel ping-pong";
    // One run at each proc count before the next at any (see `Ctx::interleaved`).
    let placed = ctx.interleaved_fitted("parallel ping-pong: pcml fibers", n, &fibers)?;
    for (&p, s) in ctx.cfg.procs.iter().zip(placed) {
        sec.rows.push(
            Row::measured(prog, "pcml fibers", Some(p), RATE, &s)
                .with_note("pair i: procs i mod P and i+1 mod P"),
        );
    }
    ctx.tokio_rows(
        sec,
        prog,
        RATE,
        "16 tasks, `mpsc::channel(1)` pairs; the scheduler places them",
        |workers| {
            let n = ctx.fit(n, |k| tokio_tasks(workers, k, 1))?;
            tokio_tasks(workers, n, runs)
        },
    )?;
    ctx.step("parallel ping-pong: crossbeam-channel on 16 OS threads");
    let n_cb = ctx.fit(n, |k| crossbeam_threads(k, 1))?;
    let s = crossbeam_threads(n_cb, runs)?;
    sec.rows.push(
        Row::measured(prog, "crossbeam-channel (OS threads)", None, RATE, &s)
            .with_note("16 OS threads, `bounded(0)` rendezvous channels"),
    );
    ctx.peer_rows(
        sec,
        prog,
        "parpingpong",
        n,
        None,
        Some("msgs"),
        RATE,
        true,
        runs,
    )?;
    ctx.multicore_rows(
        sec,
        prog,
        "parpingpong",
        n,
        Some("msgs"),
        RATE,
        &|p, runs| {
            let n = ctx.fit_span(n, |k| fibers_spawned(p, k, 1))?;
            fibers_spawned(p, n, runs)
        },
        &|p, runs| {
            let n = ctx.fit(n, |k| fibers(p, k, 1))?;
            fibers(p, n, runs)
        },
    )?;
    sec.add_ratio(
        "parallel ping-pong: pcml fibers 1P / CML",
        (prog, "pcml fibers", Some(1)),
        (prog, "CML (SML/NJ)", Some(1)),
        Some(Goal::AtLeast(2.0)),
    );
    for &p in &ctx.cfg.procs {
        let kind = if p == 1 {
            "current_thread".to_string()
        } else {
            format!("multi_thread {p} workers")
        };
        sec.add_ratio(
            &format!("parallel ping-pong: pcml fibers {p}P / tokio {kind}"),
            (prog, "pcml fibers", Some(p)),
            (prog, "tokio", Some(p)),
            None,
        );
    }
    if let Some(&p) = ctx.cfg.procs.iter().max() {
        sec.add_ratio(
            &format!("parallel ping-pong: pcml fibers {p}P / crossbeam-channel (OS threads)"),
            (prog, "pcml fibers", Some(p)),
            (prog, "crossbeam-channel (OS threads)", None),
            None,
        );
    }
    if let Some(&p) = ctx.cfg.procs.iter().max().filter(|&&p| p > 1) {
        sec.add_ratio(
            &format!(
                "parallel ping-pong: pcml fibers {p}P / 1P (paper: Manticore 2P 0.57, 8P 1.38)"
            ),
            (prog, "pcml fibers", Some(p)),
            (prog, "pcml fibers", Some(1)),
            None,
        );
    }
    sec.notes.push(format!(
        "parallel ping-pong: 8 pairs, up to {n} messages per run in all (fewer where a \
         probe run shows a configuration would exceed the run budget: see \"runs x ops\"). \
         tokio's rows: 1 is a current_thread runtime, 2 a multi_thread runtime of 2 workers."
    ));
    sec.publish(prog, "CML", "1,576,000 msgs/s (1.00)");
    sec.publish(prog, "Manticore 1P", "724,000 msgs/s (0.46)");
    sec.publish(prog, "Manticore 2P", "412,000 msgs/s (0.26)");
    sec.publish(prog, "Manticore 8P", "1,000,000 msgs/s (0.63)");
    Ok(())
}
