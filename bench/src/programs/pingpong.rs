//! Seed 003's ping-pong (section 10.1): two threads bounce messages over two synchronous
//! channels; in the 2-proc variant each thread runs on its own proc (pcml fibers: `spawn_on`
//! 0 and 1). One message is one operation (a round trip is two); figures are messages per
//! second. pcml runs it with fibers (blocking `send`/`recv`) and with async tasks
//! (`send_evt(..).await`, `recv_evt().await`; tasks are not pinned, the scheduler places them).
//!
//! The Rust peers are crossbeam-channel on two OS threads with rendezvous channels
//! (`bounded(0)`), the synchronous channel of the paper, and tokio: two tasks over a pair of
//! `tokio::sync::mpsc::channel(1)` (tokio has no rendezvous channel; a send completes into the
//! one-slot buffer, but the pinger waits for each reply, so one message is in flight at a
//! time as in the paper) on a `current_thread` runtime and on a `multi_thread` one with 2
//! workers, where the scheduler places the tasks.
//!
//! The answer: the pinger sums the replies, each the ping plus one.

use pcml::chan::Chan;

use super::{Ctx, in_pcml, in_tokio, triangle};
use crate::runner::{Error, Metric, Result, Sample, check_eq, repeat, timed, warm_samples_async};
use crate::table::{Goal, Row, Section};

const RATE: Metric = Metric::Rate { unit: "msgs/s" };

/// The pinger's and ponger's procs for a runtime of `procs`: 0 and the last.
fn placement() -> (usize, usize) {
    (0, pcml::procs() - 1)
}

/// Spawns `f` on proc `on`, or where the scheduler places it (`None`).
pub fn spawn_at<T: Send + 'static>(
    on: Option<usize>,
    f: impl FnOnce() -> T + Send + 'static,
) -> pcml::JoinHandle<T> {
    match on {
        Some(proc) => pcml::spawn_on(proc, f),
        None => pcml::spawn(f),
    }
}

/// One ping-pong of `rounds` round trips between two fibers; returns the pinger's sum.
pub fn fiber_pair(rounds: u64, ping_on: usize, pong_on: usize) -> pcml::JoinHandle<u64> {
    fiber_pair_at(rounds, Some(ping_on), Some(pong_on))
}

/// [`fiber_pair`] with each fiber on the proc given, or placed by the scheduler (`None`).
pub fn fiber_pair_at(
    rounds: u64,
    ping_on: Option<usize>,
    pong_on: Option<usize>,
) -> pcml::JoinHandle<u64> {
    let (ping, pong) = (Chan::new(), Chan::new());
    let (ping2, pong2) = (ping.clone(), pong.clone());
    spawn_at(pong_on, move || {
        for _ in 0..rounds {
            let v: u64 = ping2.recv();
            pong2.send(v + 1);
        }
    });
    spawn_at(ping_on, move || {
        let mut sum = 0u64;
        for i in 0..rounds {
            ping.send(i);
            sum += pong.recv();
        }
        sum
    })
}

/// One ping-pong of `rounds` round trips between two async tasks; returns the pinger's sum.
pub fn task_pair(rounds: u64) -> pcml::JoinHandle<u64> {
    let (ping, pong) = (Chan::new(), Chan::new());
    let (ping2, pong2) = (ping.clone(), pong.clone());
    pcml::spawn_task(async move {
        for _ in 0..rounds {
            let v: u64 = ping2.recv_evt().await;
            pong2.send_evt(v + 1).await;
        }
    });
    pcml::spawn_task(async move {
        let mut sum = 0u64;
        for i in 0..rounds {
            ping.send_evt(i).await;
            sum += pong.recv_evt().await;
        }
        sum
    })
}

/// [`task_pair`] over `Chan::send_async`/`recv_async`: futures that borrow the channel and
/// cannot take part in a choice, with no allocation per operation.
pub fn task_pair_async(rounds: u64) -> pcml::JoinHandle<u64> {
    let (ping, pong) = (Chan::new(), Chan::new());
    let (ping2, pong2) = (ping.clone(), pong.clone());
    pcml::spawn_task(async move {
        for _ in 0..rounds {
            let v: u64 = ping2.recv_async().await;
            pong2.send_async(v + 1).await;
        }
    });
    pcml::spawn_task(async move {
        let mut sum = 0u64;
        for i in 0..rounds {
            ping.send_async(i).await;
            sum += pong.recv_async().await;
        }
        sum
    })
}

fn check_pair(h: pcml::JoinHandle<u64>, rounds: u64) -> Result<()> {
    let sum = h.join().map_err(|e| Error::Failed(e.to_string()))?;
    check_eq("sum of replies", triangle(rounds) + rounds, sum)
}

/// Fibers: `msgs` messages per run on a runtime of `procs` procs.
pub fn fibers(procs: usize, msgs: u64, runs: usize) -> Result<Vec<Sample>> {
    let rounds = (msgs / 2).max(1);
    in_pcml(procs, move || {
        let (a, b) = placement();
        check_pair(fiber_pair(rounds / 10 + 1, a, b), rounds / 10 + 1)?;
        repeat(runs, || {
            timed(2 * rounds, || check_pair(fiber_pair(rounds, a, b), rounds))
        })
    })
}

/// Fibers placed by the scheduler (`pcml::spawn`): `msgs` messages per run on a runtime of
/// `procs` procs.
pub fn fibers_spawned(procs: usize, msgs: u64, runs: usize) -> Result<Vec<Sample>> {
    let rounds = (msgs / 2).max(1);
    in_pcml(procs, move || {
        let pair = |r| check_pair(fiber_pair_at(r, None, None), r);
        pair(rounds / 10 + 1)?;
        repeat(runs, || timed(2 * rounds, || pair(rounds)))
    })
}

/// Async tasks over `send_evt(..).await`/`recv_evt().await`: `msgs` messages per run on a
/// runtime of `procs` procs.
pub fn tasks(procs: usize, msgs: u64, runs: usize) -> Result<Vec<Sample>> {
    tasks_with(procs, msgs, runs, task_pair)
}

/// Async tasks over `send_async`/`recv_async`: as [`tasks`].
pub fn tasks_async(procs: usize, msgs: u64, runs: usize) -> Result<Vec<Sample>> {
    tasks_with(procs, msgs, runs, task_pair_async)
}

fn tasks_with(
    procs: usize,
    msgs: u64,
    runs: usize,
    pair: fn(u64) -> pcml::JoinHandle<u64>,
) -> Result<Vec<Sample>> {
    let rounds = (msgs / 2).max(1);
    in_pcml(procs, move || {
        check_pair(pair(rounds / 10 + 1), rounds / 10 + 1)?;
        repeat(runs, || {
            timed(2 * rounds, || check_pair(pair(rounds), rounds))
        })
    })
}

/// crossbeam-channel on two OS threads: `msgs` messages per run over rendezvous channels.
pub fn crossbeam_threads(msgs: u64, runs: usize) -> Result<Vec<Sample>> {
    let rounds = (msgs / 2).max(1);
    let pair = move |rounds: u64| -> Result<()> {
        let (ping_tx, ping_rx) = crossbeam_channel::bounded::<u64>(0);
        let (pong_tx, pong_rx) = crossbeam_channel::bounded::<u64>(0);
        let ponger = std::thread::spawn(move || {
            for _ in 0..rounds {
                let v = ping_rx.recv().expect("pinger alive");
                pong_tx.send(v + 1).expect("pinger alive");
            }
        });
        let mut sum = 0u64;
        for i in 0..rounds {
            ping_tx.send(i).map_err(|e| Error::Failed(e.to_string()))?;
            sum += pong_rx.recv().map_err(|e| Error::Failed(e.to_string()))?;
        }
        ponger
            .join()
            .map_err(|_| Error::Failed("crossbeam ponger panicked".into()))?;
        check_eq("sum of replies", triangle(rounds) + rounds, sum)
    };
    pair(rounds / 10 + 1)?;
    repeat(runs, || timed(2 * rounds, || pair(rounds)))
}

/// One ping-pong of `rounds` round trips between two tokio tasks over `mpsc::channel(1)`
/// pairs, in the calling task's runtime; checks the pinger's sum.
pub async fn tokio_pair(rounds: u64) -> Result<()> {
    let (ping_tx, mut ping_rx) = tokio::sync::mpsc::channel::<u64>(1);
    let (pong_tx, mut pong_rx) = tokio::sync::mpsc::channel::<u64>(1);
    let ponger = tokio::spawn(async move {
        for _ in 0..rounds {
            let v = ping_rx.recv().await.expect("pinger alive");
            pong_tx.send(v + 1).await.expect("pinger alive");
        }
    });
    let closed = |what: &str| Error::Failed(format!("tokio ping-pong: {what} closed early"));
    let mut sum = 0u64;
    for i in 0..rounds {
        ping_tx.send(i).await.map_err(|_| closed("ping"))?;
        sum += pong_rx.recv().await.ok_or_else(|| closed("pong"))?;
    }
    ponger
        .await
        .map_err(|e| Error::Failed(format!("tokio ponger: {e}")))?;
    check_eq("sum of replies", triangle(rounds) + rounds, sum)
}

/// tokio: `msgs` messages per run, the pinger a task on a fresh runtime of `workers` workers
/// (0: `current_thread`).
pub fn tokio_tasks(workers: usize, msgs: u64, runs: usize) -> Result<Vec<Sample>> {
    let rounds = (msgs / 2).max(1);
    in_tokio(
        workers,
        warm_samples_async(runs, rounds, 2 * rounds, tokio_pair),
    )
}

/// Measures pcml and the peers.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let runs = ctx.cfg.runs;
    let n = ctx.size(500_000, 2_000_000);
    let prog = "ping-pong";
    // One run at each proc count before the next at any (see `Ctx::interleaved`).
    let placed = ctx.interleaved_fitted("ping-pong: pcml fibers", n, &fibers)?;
    for (&p, s) in ctx.cfg.procs.iter().zip(placed) {
        let note = if p == 1 {
            "both fibers on proc 0"
        } else {
            "pinger on proc 0, ponger on the last proc"
        };
        sec.rows
            .push(Row::measured(prog, "pcml fibers", Some(p), RATE, &s).with_note(note));
    }
    for &p in &ctx.cfg.procs {
        ctx.step(&format!("ping-pong: pcml tasks on {p} procs"));
        let n = ctx.fit(n, |k| tasks(p, k, 1))?;
        let s = tasks(p, n, runs)?;
        sec.rows.push(
            Row::measured(prog, "pcml tasks", Some(p), RATE, &s)
                .with_note("`send_evt(..).await`; the scheduler places the tasks"),
        );
        ctx.step(&format!("ping-pong: pcml tasks (send_async) on {p} procs"));
        let n = ctx.fit(n, |k| tasks_async(p, k, 1))?;
        let s = tasks_async(p, n, runs)?;
        sec.rows.push(
            Row::measured(prog, "pcml tasks (send_async)", Some(p), RATE, &s).with_note(
                "`send_async(..).await`: no event, no choice, nothing allocated per message",
            ),
        );
    }
    ctx.step("ping-pong: crossbeam-channel on OS threads");
    let cb = ctx.size(50_000, 200_000);
    let s = crossbeam_threads(cb, runs)?;
    sec.rows.push(
        Row::measured(prog, "crossbeam-channel (OS threads)", None, RATE, &s)
            .with_note("two OS threads, `bounded(0)` rendezvous channels"),
    );
    ctx.tokio_rows(
        sec,
        prog,
        RATE,
        "two tasks, `mpsc::channel(1)` pair (no rendezvous in tokio)",
        |workers| {
            let n = ctx.fit(n, |k| tokio_tasks(workers, k, 1))?;
            tokio_tasks(workers, n, runs)
        },
    )?;
    ctx.peer_rows(
        sec,
        prog,
        "pingpong",
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
        "pingpong",
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
    let ours = (prog, "pcml fibers", Some(1));
    sec.add_ratio(
        "ping-pong: pcml fibers 1P / CML",
        ours,
        (prog, "CML (SML/NJ)", Some(1)),
        Some(Goal::AtLeast(2.0)),
    );
    for &p in &ctx.cfg.procs {
        sec.add_ratio(
            &format!("ping-pong: pcml fibers 1P / Go GOMAXPROCS={p}"),
            ours,
            (prog, "Go", Some(p)),
            Some(Goal::AtLeast(5.0)),
        );
    }
    sec.add_ratio(
        "ping-pong: pcml fibers 1P / tokio current_thread",
        ours,
        (prog, "tokio", Some(1)),
        None,
    );
    sec.add_ratio(
        "ping-pong: pcml tasks 1P / tokio current_thread",
        (prog, "pcml tasks", Some(1)),
        (prog, "tokio", Some(1)),
        None,
    );
    sec.add_ratio(
        "ping-pong: pcml tasks (send_async) 1P / tokio current_thread",
        (prog, "pcml tasks (send_async)", Some(1)),
        (prog, "tokio", Some(1)),
        None,
    );
    sec.add_ratio(
        "ping-pong: pcml fibers 1P / crossbeam-channel (OS threads)",
        ours,
        (prog, "crossbeam-channel (OS threads)", None),
        None,
    );
    if ctx.has_procs(2) {
        sec.add_ratio(
            "ping-pong: pcml tasks 2P / tokio multi_thread 2 workers",
            (prog, "pcml tasks", Some(2)),
            (prog, "tokio", Some(2)),
            None,
        );
        sec.add_ratio(
            "ping-pong: pcml fibers 2P / 1P (paper: Manticore 0.39)",
            (prog, "pcml fibers", Some(2)),
            ours,
            None,
        );
    }
    sec.notes.push(format!(
        "ping-pong: up to {n} messages per run ({} round trips; fewer where a probe run shows \
         a configuration would exceed the run budget: see \"runs x ops\"); crossbeam-channel: \
         {cb}. tokio's rows: 1 is a current_thread runtime, 2 a multi_thread runtime of 2 \
         workers.",
        n / 2
    ));
    sec.publish(prog, "CML", "1,608,000 msgs/s (1.00)");
    sec.publish(prog, "Manticore 1P", "697,800 msgs/s (0.43)");
    sec.publish(prog, "Manticore 2P", "271,400 msgs/s (0.17)");
    Ok(())
}
