//! What pcml reports as it runs: thread spawns and exits, panics, actor crashes and restarts,
//! supervisors giving up, deadlocks, I/O driver errors.
//!
//! With the `tracing` feature, pcml emits these as [`tracing`](https://docs.rs/tracing) events,
//! for whatever subscriber the program installs:
//!
//! ```
//! # #[cfg(feature = "tracing")]
//! # {
//! // With tracing-subscriber: `tracing_subscriber::fmt().with_env_filter("pcml=debug").init();`
//! // Without a subscriber, pcml prints what it would print without the feature (below).
//! let err = pcml::run(|| pcml::spawn(|| -> u8 { panic!("boom") }).join().unwrap_err());
//! assert!(err.is_panic());
//! # }
//! ```
//!
//! Without the feature (the default), nothing is logged but what pcml has always printed to
//! stderr: the panic of a thread nobody joined, the crash of an actor nobody watches, and
//! I/O driver failures. The same goes with the feature while no subscriber has been set
//! (`tracing::dispatcher::has_been_set`), so nothing is lost by turning it on.
//!
//! # Events
//!
//! | target | level | message | fields |
//! | --- | --- | --- | --- |
//! | `pcml::sched` | TRACE | `spawn` | `thread`, `kind` (`fiber`, `task`, `blocking`), `site` (the caller of the spawn), `name` (for [`SpawnBuilder`](crate::SpawnBuilder) spawns given one) |
//! | `pcml::sched` | TRACE | `exit` | `thread`, `reason` (`returned`, `panicked`, `exited`, `cancelled`) |
//! | `pcml::sched` | WARN | `thread panicked` | `thread`, `report` (message, location, backtrace if `RUST_BACKTRACE`) |
//! | `pcml::sched` | ERROR | `thread panicked and nobody joined it` | `thread`, `report` (printed without the feature) |
//! | `pcml::sched` | WARN | the watchdog's report of a thread that holds its proc (`... has computed on proc P for N ms of CPU time without a sync point ...`) | `proc`, `ran_ms` (printed without the feature) |
//! | `pcml::sched` | ERROR | `deadlock` | `blocked`, `waiting_for_stack`, `dump` (the runtime's [`Dump`](crate::Dump)) |
//! | `pcml::sched` | ERROR | `partial deadlock` | `threads`, `report` (a [`PartialDeadlock`](crate::sched::PartialDeadlock); only with [`Builder::report_deadlocks`](crate::Builder::report_deadlocks); printed without the feature) |
//! | `pcml::actor` | DEBUG | `actor exited` | `actor`, `reason` (every end but a normal one) |
//! | `pcml::actor` | ERROR | `actor crashed` | `actor`, `reason`, `report`, `observed`, `last_message` (a panic; printed without the feature when nobody watches the actor, or when it keeps its last message) |
//! | `pcml::actor` | INFO | `child restarted` | `supervisor`, `child` (its name), `reason`, `restarts` |
//! | `pcml::actor` | ERROR | `supervisor gave up` | `supervisor`, `child`, `reason`, `max_restarts`, `period` |
//! | `pcml::io` | ERROR | what failed (`the I/O driver stopped: epoll_wait failed`, `could not wake the I/O driver to stop it`) | `error` (printed without the feature) |
//!
//! An actor's crash is its panic, as OTP's crash report is an abnormal end other than a
//! shutdown: an actor killed by a link or by its supervisor is logged as `actor exited`, the
//! panic that started it as `actor crashed`. The crash report carries the `Debug` text of the
//! last message the actor received if it asked for that
//! ([`Ctx::report_last_message`](crate::actor::Ctx::report_last_message)). Thread ids are [`ThreadId::as_u64`],
//! actor ids [`ActorId::as_u64`](crate::actor::ActorId::as_u64).
//!
//! # Implementation
//! Every report pcml makes goes through one function of this module per event, so the list
//! above is the whole of it. Without the feature the TRACE to INFO events compile to nothing;
//! with it and no subscriber interested, each costs tracing's level check (a Relaxed load and
//! a compare). A spawn through a `SpawnBuilder` passes its name to the spawn event through a
//! thread-local (`with_spawn_label`), read only when the event is enabled.
//!
//! [`ThreadId::as_u64`]: crate::ThreadId::as_u64

use std::fmt;
use std::panic::Location;
use std::time::Duration;

use crate::ThreadId;

/// Whether events should go to stderr: the feature is off, or no subscriber was ever set.
#[inline]
fn to_stderr() -> bool {
    #[cfg(feature = "tracing")]
    {
        !tracing::dispatcher::has_been_set()
    }
    #[cfg(not(feature = "tracing"))]
    {
        true
    }
}

/// How a new thread runs, for the spawn event.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Fiber,
    Task,
    Blocking,
}

impl Kind {
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    fn as_str(self) -> &'static str {
        match self {
            Kind::Fiber => "fiber",
            Kind::Task => "task",
            Kind::Blocking => "blocking",
        }
    }
}

#[cfg(feature = "tracing")]
std::thread_local! {
    /// The name of the spawn a `SpawnBuilder` is making on this OS thread.
    static SPAWN_LABEL: std::cell::RefCell<Option<std::sync::Arc<str>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs `spawn` with `name` as the name in the spawn event it emits.
#[inline]
pub(crate) fn with_spawn_label<R>(name: &std::sync::Arc<str>, spawn: impl FnOnce() -> R) -> R {
    #[cfg(feature = "tracing")]
    {
        if tracing::enabled!(target: "pcml::sched", tracing::Level::TRACE) {
            let prev = SPAWN_LABEL.with(|l| l.replace(Some(name.clone())));
            let r = spawn();
            SPAWN_LABEL.with(|l| *l.borrow_mut() = prev);
            return r;
        }
    }
    let _ = name;
    spawn()
}

/// A thread was spawned at `site`.
#[inline(always)]
pub(crate) fn spawned(thread: ThreadId, kind: Kind, site: &'static Location<'static>) {
    #[cfg(feature = "tracing")]
    if tracing::enabled!(target: "pcml::sched", tracing::Level::TRACE) {
        spawned_slow(thread, kind, site);
    }
    let _ = (thread, kind, site);
}

#[cfg(feature = "tracing")]
#[cold]
#[inline(never)]
fn spawned_slow(thread: ThreadId, kind: Kind, site: &'static Location<'static>) {
    SPAWN_LABEL.with(|l| match &*l.borrow() {
        Some(name) => tracing::trace!(
            target: "pcml::sched",
            thread = thread.as_u64(),
            kind = kind.as_str(),
            site = %site,
            name = &**name,
            "spawn"
        ),
        None => tracing::trace!(
            target: "pcml::sched",
            thread = thread.as_u64(),
            kind = kind.as_str(),
            site = %site,
            "spawn"
        ),
    });
}

/// A thread ended with `outcome` (its error if it failed).
#[inline(always)]
pub(crate) fn exited(thread: ThreadId, failure: Option<&crate::JoinError>) {
    #[cfg(feature = "tracing")]
    if tracing::enabled!(target: "pcml::sched", tracing::Level::WARN) {
        exited_slow(thread, failure);
    }
    let _ = (thread, failure);
}

#[cfg(feature = "tracing")]
#[cold]
#[inline(never)]
fn exited_slow(thread: ThreadId, failure: Option<&crate::JoinError>) {
    let reason = match failure {
        None => "returned",
        Some(e) if e.is_panic() => "panicked",
        Some(e) if e.is_exit() => "exited",
        Some(_) => "cancelled",
    };
    tracing::trace!(target: "pcml::sched", thread = thread.as_u64(), reason, "exit");
    if let Some(e) = failure
        && let Some(report) = e.panic_report()
    {
        tracing::warn!(
            target: "pcml::sched",
            thread = thread.as_u64(),
            report,
            "thread panicked"
        );
    }
}

/// A thread failed and nobody will see its result (its handle was dropped).
#[cold]
pub(crate) fn unobserved_failure(e: &crate::JoinError) {
    if !e.is_panic() {
        return;
    }
    if to_stderr() {
        eprintln!("{e} (its JoinHandle was dropped, so nobody joined it)");
    } else {
        #[cfg(feature = "tracing")]
        tracing::error!(
            target: "pcml::sched",
            thread = e.id().as_u64(),
            report = e.panic_report().unwrap_or_default(),
            "thread panicked and nobody joined it"
        );
    }
}

/// A runtime found itself deadlocked.
#[cold]
pub(crate) fn deadlock(blocked: usize, waiting_for_stack: usize, dump: &crate::Dump) {
    #[cfg(feature = "tracing")]
    tracing::error!(
        target: "pcml::sched",
        blocked,
        waiting_for_stack,
        dump = %dump,
        "deadlock"
    );
    let _ = (blocked, waiting_for_stack, dump);
}

/// A partial deadlock found by the watchdog (`Builder::report_deadlocks`).
#[cold]
pub(crate) fn partial_deadlock(d: &crate::sched::PartialDeadlock) {
    if to_stderr() {
        eprintln!("pcml: partial deadlock: {d}");
    } else {
        #[cfg(feature = "tracing")]
        tracing::error!(
            target: "pcml::sched",
            threads = d.threads().len(),
            report = %d,
            "partial deadlock"
        );
    }
}

/// An actor ended abnormally (`reason`). `report` is a panic's full report; `observed`:
/// someone watches the actor (a link or a monitor), so the stderr fallback stays quiet.
#[cold]
pub(crate) fn actor_ended(
    actor: crate::actor::ActorId,
    reason: &crate::actor::ExitReason,
    report: Option<&str>,
    observed: bool,
    last_message: Option<&str>,
) {
    if to_stderr() {
        if let Some(report) = report {
            // The report may run over several lines (a backtrace): the message goes first.
            match (observed, last_message) {
                (false, None) => eprintln!("pcml: {actor} died unobserved: {report}"),
                (false, Some(m)) => eprintln!(
                    "pcml: {actor} died unobserved (last message received: {m}): {report}"
                ),
                (true, Some(m)) => {
                    eprintln!("pcml: {actor} crashed (last message received: {m}): {report}")
                }
                (true, None) => {}
            }
        }
        return;
    }
    #[cfg(feature = "tracing")]
    if let Some(report) = report {
        tracing::error!(
            target: "pcml::actor",
            actor = actor.as_u64(),
            reason = %reason,
            report,
            observed,
            last_message,
            "actor crashed"
        );
    } else {
        tracing::debug!(target: "pcml::actor", actor = actor.as_u64(), reason = %reason, "actor exited");
    }
    let _ = (reason, last_message);
}

/// A supervisor restarted its child `child` after it ended with `reason`.
#[cold]
pub(crate) fn child_restarted(
    supervisor: crate::actor::ActorId,
    child: &str,
    reason: &crate::actor::ExitReason,
    restarts: u32,
) {
    #[cfg(feature = "tracing")]
    tracing::info!(
        target: "pcml::actor",
        supervisor = supervisor.as_u64(),
        child,
        reason = %reason,
        restarts,
        "child restarted"
    );
    let _ = (supervisor, child, reason, restarts);
}

/// A supervisor gave up: more than `max_restarts` restarts within `period`, the last after
/// `child` ended with `reason`.
#[cold]
pub(crate) fn supervisor_gave_up(
    supervisor: crate::actor::ActorId,
    child: &str,
    reason: &crate::actor::ExitReason,
    max_restarts: u32,
    period: Duration,
) {
    #[cfg(feature = "tracing")]
    tracing::error!(
        target: "pcml::actor",
        supervisor = supervisor.as_u64(),
        child,
        reason = %reason,
        max_restarts,
        period = ?period,
        "supervisor gave up"
    );
    let _ = (supervisor, child, reason, max_restarts, period);
}

/// The watchdog found proc `proc` running one thread for `ran` without a sync point; `text`
/// says which and what to do.
#[cold]
pub(crate) fn hog(proc: usize, ran: Duration, text: &str) {
    if to_stderr() {
        eprintln!("{text}");
    } else {
        #[cfg(feature = "tracing")]
        tracing::warn!(
            target: "pcml::sched",
            proc,
            ran_ms = ran.as_millis() as u64,
            "{text}"
        );
    }
    let _ = (proc, ran);
}

/// The I/O driver failed: `what` says what it could not do.
#[cold]
pub(crate) fn io_driver_error(what: &str, error: &dyn fmt::Display) {
    if to_stderr() {
        eprintln!("pcml: {what}: {error}");
    } else {
        #[cfg(feature = "tracing")]
        tracing::error!(target: "pcml::io", error = %error, "{what}");
    }
}

/// Whatever pcml prints that is no event of its own: a panic's report printed by the panic
/// hook for a fiber whose stack is too small for the default hook's backtrace. Goes to stderr
/// always (the hook's output would have).
pub(crate) fn hook_output(text: fmt::Arguments<'_>) {
    eprintln!("{text}");
}
