//! Seed 004's Figure 9: timings of the MP layer's and the thread package's primitives, on one
//! proc. pcml's counterparts: the proc datum is a [`pcml::mp::ProcLocal`], the spin lock a
//! [`pcml::mp::SpinLock`], a thread a fiber.
//!
//! One operation each: a `get` and a `set` of the datum; a `lock` and the guard's drop; a
//! `try_lock` that fails (the lock is held by the caller); a `spawn` of a fiber that returns at
//! once and its `join`; one message of a ping-pong between two fibers over channels; a
//! `yield_now` (two fibers yielding to each other); a lock and unlock of an uncontended
//! [`pcml::Mutex`] (a fiber-blocking mutex) and a failing `try_lock` on one the caller holds;
//! "acquire and release proc" has no counterpart, since pcml's procs park and wake by
//! themselves.
//!
//! The paper gives microseconds; we give nanoseconds.

use std::hint::black_box;

use pcml::mp::{ProcLocal, SpinLock};

use super::micro::{Placement, fiber_spawn_join, fiber_yield};
use super::{Ctx, in_pcml, pingpong};
use crate::runner::{Metric, Result, Sample, check_eq, repeat, timed};
use crate::table::{Row, Section};

fn ns(op: &'static str) -> Metric {
    Metric::NsPerOp { op }
}

/// Get and set the proc datum, `n` times per run.
pub fn proc_datum(n: u64, runs: usize) -> Result<Vec<Sample>> {
    in_pcml(1, move || {
        let datum = ProcLocal::new(|_| 0u64);
        let round = |n: u64| {
            datum.set(0);
            for _ in 0..n {
                black_box(&datum).set(datum.get() + 1);
            }
            check_eq("datum after the loop", n, datum.get())
        };
        round(n / 10 + 1)?;
        repeat(runs, || timed(n, || round(n)))
    })
}

/// Lock and unlock a spin lock, `n` times per run.
pub fn spin_lock(n: u64, runs: usize) -> Result<Vec<Sample>> {
    in_pcml(1, move || {
        let lock = SpinLock::new(0u64);
        let round = |n: u64| {
            *lock.lock() = 0;
            for _ in 0..n {
                *black_box(&lock).lock() += 1;
            }
            check_eq("count under the lock", n, *lock.lock())
        };
        round(n / 10 + 1)?;
        repeat(runs, || timed(n, || round(n)))
    })
}

/// A failing `try_lock` on a held spin lock, `n` times per run.
pub fn failed_try_lock(n: u64, runs: usize) -> Result<Vec<Sample>> {
    in_pcml(1, move || {
        let lock = SpinLock::new(());
        let round = |n: u64| {
            let _held = lock.lock();
            let mut failed = 0u64;
            for _ in 0..n {
                if black_box(&lock).try_lock().is_none() {
                    failed += 1;
                }
            }
            check_eq("failed try_locks", n, failed)
        };
        round(n / 10 + 1)?;
        repeat(runs, || timed(n, || round(n)))
    })
}

/// Lock and unlock an uncontended [`pcml::Mutex`] from a fiber, `n` times per run.
pub fn mutex_lock(n: u64, runs: usize) -> Result<Vec<Sample>> {
    in_pcml(1, move || {
        let lock = pcml::Mutex::new(0u64);
        let round = |n: u64| {
            *lock.lock() = 0;
            for _ in 0..n {
                *black_box(&lock).lock() += 1;
            }
            check_eq("count under the mutex", n, *lock.lock())
        };
        round(n / 10 + 1)?;
        repeat(runs, || timed(n, || round(n)))
    })
}

/// A failing `try_lock` on a [`pcml::Mutex`] the caller holds, `n` times per run.
pub fn failed_mutex_try_lock(n: u64, runs: usize) -> Result<Vec<Sample>> {
    in_pcml(1, move || {
        let lock = pcml::Mutex::new(());
        let round = |n: u64| {
            let _held = lock.lock();
            let mut failed = 0u64;
            for _ in 0..n {
                if black_box(&lock).try_lock().is_none() {
                    failed += 1;
                }
            }
            check_eq("failed mutex try_locks", n, failed)
        };
        round(n / 10 + 1)?;
        repeat(runs, || timed(n, || round(n)))
    })
}

/// Runs the Figure 9 primitives.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let runs = ctx.cfg.runs;
    let n = ctx.size(5_000_000, 50_000_000);
    let threads = ctx.size(300_000, 1_000_000);
    let prog = "Figure 9";
    ctx.step("fig9: proc datum");
    let s = proc_datum(n, runs)?;
    sec.rows.push(Row::measured(
        prog,
        "get and set proc datum (ProcLocal)",
        Some(1),
        ns("get+set"),
        &s,
    ));
    ctx.step("fig9: spin lock");
    let s = spin_lock(n, runs)?;
    sec.rows.push(Row::measured(
        prog,
        "lock and unlock spin lock",
        Some(1),
        ns("lock+unlock"),
        &s,
    ));
    ctx.step("fig9: failed try_lock");
    let s = failed_try_lock(n, runs)?;
    sec.rows.push(Row::measured(
        prog,
        "unsuccessfully try to lock spin lock",
        Some(1),
        ns("try_lock"),
        &s,
    ));
    ctx.step("fig9: mutex");
    let s = mutex_lock(n, runs)?;
    sec.rows.push(Row::measured(
        prog,
        "lock and unlock mutex",
        Some(1),
        ns("lock+unlock"),
        &s,
    ));
    ctx.step("fig9: failed mutex try_lock");
    let s = failed_mutex_try_lock(n, runs)?;
    sec.rows.push(Row::measured(
        prog,
        "unsuccessfully try to lock mutex",
        Some(1),
        ns("try_lock"),
        &s,
    ));
    ctx.step("fig9: fork null thread and wait");
    let s = fiber_spawn_join(1, Placement::Any, threads, runs)?;
    sec.rows.push(Row::measured(
        prog,
        "fork null thread and wait for it",
        Some(1),
        ns("thread"),
        &s,
    ));
    ctx.step("fig9: ping-pong");
    let s = pingpong::fibers(1, 2 * threads, runs)?;
    // One synchronization of the paper's is one message: keep ns per message.
    sec.rows.push(
        Row::measured(
            prog,
            "synchronize with another thread (ping-pong)",
            Some(1),
            ns("message"),
            &s,
        )
        .with_note("two fibers, two channels"),
    );
    ctx.step("fig9: yield");
    let s = fiber_yield(1, threads, runs)?;
    sec.rows.push(Row::measured(
        prog,
        "voluntarily yield to another thread",
        Some(1),
        ns("yield"),
        &s,
    ));
    sec.rows.push(Row::skipped(
        prog,
        "acquire and release proc",
        None,
        ns("acquire+release"),
        "no counterpart: pcml's procs park and wake by themselves",
    ));
    sec.notes.push(format!(
        "Figure 9: {n} operations per run for the datum and lock rows, {threads} threads or \
         yields per fiber for the thread rows; one proc."
    ));
    for (what, us) in [
        ("get and set proc_datum", "0.07"),
        ("lock and unlock spin lock", "5.7"),
        ("unsuccessfully try to lock spin lock", "1.12"),
        ("lock and unlock mutex", "40.7"),
        ("unsuccessfully try to lock mutex", "10.6"),
        ("fork null thread and wait for it", "287"),
        ("synchronize with another thread (ping-pong)", "232"),
        ("voluntarily yield to another thread", "32.5"),
        ("acquire and release proc (8 procs)", "80.2"),
    ] {
        sec.publish(prog, what, &format!("{us} us"));
    }
    Ok(())
}
