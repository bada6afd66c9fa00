//! What lives outside a runtime's procs and may still act on it: the part of deadlock
//! detection that keeps it from crying wolf.
//!
//! A runtime whose procs all sleep while main is blocked is deadlocked only if nothing else
//! can ever wake one of its threads. Besides its own timers, I/O sources and blocking jobs
//! (which `worker::check_deadlock` counts: each wakes a proc when it goes, so the last
//! sleeper that finds one parks without a re-check; a timer is its park's deadline, a
//! finished blocking job kicks the runtime, and so does removing the last source of its I/O
//! driver, or of the fallback driver, which counts for every runtime), two kinds of agent
//! can:
//! - **OS threads.** Any OS thread may hold a channel handle, a `Pid` or a runtime handle and
//!   use it later: one that is slower than the fibers, one that sleeps first, one blocked in a
//!   pcml `recv` whose partner has just woken it. pcml cannot see where a handle was moved, so
//!   it counts threads, not handles: every OS thread of the process (read from
//!   `/proc/self/task`) is taken to be able to act, except pcml's own threads (procs, I/O
//!   drivers, blocking pools, the timer thread), threads waiting in `block_on`, and the
//!   process's first thread while it sleeps, as long as it has never used pcml (built a
//!   runtime, blocked on a pcml event or waited on one's future; so a test harness's main
//!   thread does not stop detection). Under ThreadSanitizer (`cfg(pcml_tsan)`, set by the
//!   build script) the sanitizer's own background thread is left out too: it never holds a
//!   handle, and counting it kept every deadlock from being reported. It is told apart by
//!   its signal mask (`sanitizer_thread`); a user thread that blocks the same signals is
//!   then not counted either, a blind spot of sanitized builds only.
//! - **Other runtimes.** A runtime may share channels with another; it is taken to be able to
//!   act unless all its procs sleep with nothing pending, or it has shut down.
//!
//! While any of these may act, the last proc to sleep re-checks now and then (`Recheck`): an
//! OS thread that ends cannot tell pcml so.
//!
//! # Invariants
//! - Every proc that leaves its sleeping state, and every runtime that settles its main as
//!   deadlocked, first increments `EPOCH` (SeqCst). `others_quiescent` reads `EPOCH`, checks
//!   every runtime twice, and reads `EPOCH` again: if it did not change, no proc woke between
//!   the two reads, so a runtime seen quiescent in the first pass stayed so (work pushed into
//!   it by a proc of another runtime before that runtime fell asleep is seen in the second
//!   pass), and at the second read of `EPOCH` every runtime was quiescent at once.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::sched::worker::Shared;

/// Counts proc wake-ups and deadlock settlements in every runtime of the process (see the
/// module invariants).
static EPOCH: AtomicU64 = AtomicU64::new(0);

/// Whether the process's first thread has used pcml (built a runtime or blocked on an event).
static FIRST_THREAD_USED: AtomicBool = AtomicBool::new(false);

/// Threads deadlock detection does not count as able to act.
struct Known {
    /// pcml's own threads: procs, I/O drivers, blocking pools, the timer thread.
    own: HashSet<libc::pid_t>,
    /// Threads waiting in `block_on`.
    in_block_on: HashSet<libc::pid_t>,
}

static KNOWN: Mutex<Option<Known>> = Mutex::new(None);

fn with_known<R>(f: impl FnOnce(&mut Known) -> R) -> R {
    let mut k = KNOWN.lock().unwrap_or_else(PoisonError::into_inner);
    f(k.get_or_insert_with(|| Known {
        own: HashSet::new(),
        in_block_on: HashSet::new(),
    }))
}

thread_local! {
    static TID: libc::pid_t = {
        // SAFETY: gettid has no preconditions.
        unsafe { libc::gettid() }
    };
}

fn tid() -> libc::pid_t {
    TID.with(|t| *t)
}

fn is_first_thread(tid: libc::pid_t) -> bool {
    // SAFETY: getpid has no preconditions.
    tid == unsafe { libc::getpid() }
}

/// Marks the calling thread as one of pcml's own until the guard drops.
pub(crate) struct OwnThread(libc::pid_t);

impl OwnThread {
    pub(crate) fn enter() -> Self {
        let t = tid();
        with_known(|k| k.own.insert(t));
        OwnThread(t)
    }
}

impl Drop for OwnThread {
    fn drop(&mut self) {
        with_known(|k| k.own.remove(&self.0));
    }
}

/// Marks the calling thread as waiting in `block_on` until the guard drops.
pub(crate) struct InBlockOn(libc::pid_t);

impl InBlockOn {
    pub(crate) fn enter() -> Self {
        let t = tid();
        used_pcml();
        with_known(|k| k.in_block_on.insert(t));
        InBlockOn(t)
    }
}

impl Drop for InBlockOn {
    fn drop(&mut self) {
        with_known(|k| k.in_block_on.remove(&self.0));
    }
}

/// Notes that the calling OS thread (not a proc) has used pcml: if it is the process's first
/// thread, it counts as able to act from now on.
pub(crate) fn used_pcml() {
    if !FIRST_THREAD_USED.load(Ordering::Relaxed) && is_first_thread(tid()) {
        FIRST_THREAD_USED.store(true, Ordering::Relaxed);
    }
}

/// Counts a proc's wake-up or a deadlock settlement (see the module invariants).
pub(crate) fn bump_epoch() {
    // SeqCst: pairs with the SeqCst loads of `EPOCH` in `others_quiescent`, which must see
    // the bump if they could see anything this proc does after it.
    EPOCH.fetch_add(1, Ordering::SeqCst);
}

/// What the last proc to sleep learns about the world outside its runtime.
#[must_use]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outside {
    /// Nothing outside can act: the runtime is deadlocked.
    Quiet,
    /// Something outside may act; look again after this long (an OS thread that ends cannot
    /// tell pcml so).
    Recheck(Duration),
}

/// The first re-check delay; it doubles up to `RECHECK_MAX` while the outside stays busy.
pub(crate) const RECHECK_MIN: Duration = Duration::from_millis(1);
/// The longest delay between re-checks.
pub(crate) const RECHECK_MAX: Duration = Duration::from_millis(100);

/// Whether anything outside `me`'s procs may still act on it; `me`'s own state was found
/// quiescent by the caller, who is its last proc to fall asleep. `backoff` is the delay to
/// ask for if something may.
pub(crate) fn check(me: &Shared, backoff: Duration) -> Outside {
    if os_threads_may_act() || !others_quiescent(me) {
        Outside::Recheck(backoff)
    } else {
        Outside::Quiet
    }
}

/// Whether an OS thread that is not pcml's own and not waiting in `block_on` is alive.
fn os_threads_may_act() -> bool {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        // Cannot list threads: assume the worst.
        return true;
    };
    let tids: Vec<libc::pid_t> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let first_used = FIRST_THREAD_USED.load(Ordering::Relaxed);
    with_known(|k| {
        tids.iter().any(|t| {
            !(k.own.contains(t)
                || k.in_block_on.contains(t)
                || (!first_used && is_first_thread(*t) && is_sleeping(*t))
                || sanitizer_thread(*t))
        })
    })
}

/// Whether `tid` is ThreadSanitizer's background thread (see the module docs). The runtime
/// starts it with every signal blocked but the synchronous ones (a fault, an abort) and two
/// that glibc keeps for itself; user threads of a test rarely block them all, let alone the
/// real-time ones. Never true outside `cfg(pcml_tsan)`.
#[cfg(pcml_tsan)]
fn sanitizer_thread(tid: libc::pid_t) -> bool {
    /// Signals 1, 2, 3, 10, 12, 14, 15, 17 (HUP, INT, QUIT, USR1, USR2, ALRM, TERM, CHLD)
    /// and 34..=64 (the real-time ones), as bit `n - 1` of `SigBlk` in `/proc`.
    const ASYNC: u64 = 0xffff_fffe_0001_6a07;
    std::fs::read_to_string(format!("/proc/self/task/{tid}/status")).is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("SigBlk:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .is_some_and(|m| m & ASYNC == ASYNC)
    })
}

#[cfg(not(pcml_tsan))]
#[inline(always)]
fn sanitizer_thread(_tid: libc::pid_t) -> bool {
    false
}

/// Whether the thread `tid` of this process sleeps (state `S` in `/proc`): the process's
/// first thread, never having used pcml, is left out only then. While it runs it may be
/// about to use a handle it holds (build a future of a pcml event for another executor, for
/// example), as a harness's main thread waiting for its tests does not.
fn is_sleeping(tid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).is_ok_and(|s| {
        // `pid (comm) state ...`; comm may hold spaces and parentheses.
        s.rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            == Some('S')
    })
}

/// Whether every runtime (`me` included) is quiescent at one instant (see the invariants).
fn others_quiescent(me: &Shared) -> bool {
    let mut all = crate::sched::registry::all();
    // `me` is in the registry too, unless it is being dropped.
    all.retain(|r| !std::ptr::eq(&**r, me));
    for _ in 0..3 {
        // SeqCst: pairs with `bump_epoch`.
        let e0 = EPOCH.load(Ordering::SeqCst);
        let quiet = (0..2).all(|_| me.is_quiescent() && all.iter().all(|r| r.is_quiescent()));
        if !quiet {
            return false;
        }
        if EPOCH.load(Ordering::SeqCst) == e0 {
            return true;
        }
    }
    false
}
