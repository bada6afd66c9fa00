//! Panics of pcml threads: caught, reported through `join`, printed once if nobody joins.
//!
//! A process-wide panic hook (installed once, chaining the previous hook) captures the message,
//! location and, with `RUST_BACKTRACE`, the backtrace of a panic in a non-main fiber, a task or
//! a `spawn_blocking` job, instead of printing it. The report travels in the [`JoinError`]; it
//! is printed when the thread's handle is dropped unjoined (see `join`). Panics anywhere else,
//! the main fiber's included, reach the previous hook as usual.
//!
//! `exit()` unwinds with an [`ExitSignal`] payload through `resume_unwind`, which bypasses the
//! hook; the catch at the thread's root turns it into `JoinError::is_exit`.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::Once;

use crate::sched::worker::{self, Current};
use crate::{JoinError, ThreadId};

/// The payload with which `pcml::exit` unwinds a thread.
pub(crate) struct ExitSignal;

/// The payload with which a cancelled fiber unwinds from the blocking point or yield where
/// its cancellation ([`JoinHandle::abort`](crate::JoinHandle::abort)) found it. Only a fiber
/// that a proc started can be cancelled there, so a thread that another runs inline on its
/// stack and that catches this signal is not the cancelled one but goes with it: its catch
/// records it as cancelled and passes the signal on ([`is_host_abort`]).
pub(crate) struct AbortSignal;

/// Unwinds the calling fiber, cancelled, with an [`AbortSignal`]: no panic message (it
/// bypasses the hook), destructors run on the way.
#[cold]
#[inline(never)]
pub(crate) fn raise_abort() -> ! {
    std::panic::resume_unwind(Box::new(AbortSignal))
}

/// Whether `payload`, caught by a thread that runs inline on a fiber's stack, is the signal
/// of that fiber's cancellation, which the catch must pass on.
pub(crate) fn is_host_abort(payload: &(dyn Any + Send)) -> bool {
    payload.is::<AbortSignal>()
        && matches!(worker::current(), Some(Current::Fiber { inlined: 1.., .. }))
}

thread_local! {
    /// The last captured panic report on this thread.
    static REPORT: RefCell<Option<String>> = const { RefCell::new(None) };
    /// Set while a `spawn_blocking` job runs on this thread.
    pub(crate) static IN_BLOCKING_JOB: Cell<bool> = const { Cell::new(false) };
}

static INSTALL: Once = Once::new();

/// Whether a panic on this thread now is a pcml thread's, to be captured.
fn capturing() -> bool {
    if IN_BLOCKING_JOB.with(|b| b.get()) {
        return true;
    }
    if worker::context().is_some_and(|ctx| ctx.is_shutting_down()) {
        return false;
    }
    match worker::current() {
        Some(Current::Fiber { main, .. }) => !main,
        Some(Current::Task { .. }) => true,
        Some(Current::Scheduler) | None => false,
    }
}

/// The fiber stack left that a backtrace needs. Capturing and printing one (symbols
/// resolved) overflowed a 16 KiB fiber stack and worked on a 32 KiB one, for a panic at the
/// top of the fiber's body (`RUST_BACKTRACE=1`, tests/fault_inject.rs's child at stack sizes
/// of 16, 32, 48, 64, 96 and 128 KiB); 40 KiB left keeps a margin.
const BACKTRACE_STACK: usize = 40 * 1024;

/// `Some(bytes left)` if a backtrace is wanted (`RUST_BACKTRACE` set, not `0`) but the
/// calling fiber's stack has less than [`BACKTRACE_STACK`] left: printing it would overflow
/// the stack and abort the process, where the panic alone is harmless.
fn cramped_fiber_stack() -> Option<usize> {
    let left = worker::fiber_stack_left()?;
    if left >= BACKTRACE_STACK {
        return None;
    }
    let wanted = std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0");
    wanted.then_some(left)
}

fn no_backtrace_note(left: usize) -> String {
    format!(
        "stack backtrace: not captured: the fiber had {} KiB of stack left, and a backtrace \
         needs about {} KiB (raise Builder::stack_size or PCML_STACK_SIZE to see one)",
        left / 1024,
        BACKTRACE_STACK / 1024
    )
}

/// Installs the hook (once per process).
pub(crate) fn install_hook() {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let cramped = cramped_fiber_stack();
            if !capturing() {
                if let Some(left) = cramped {
                    // The previous hook would print a backtrace on a stack too small for it.
                    let msg = crate::sched::join::payload_message(info.payload())
                        .unwrap_or("Box<dyn Any>");
                    let note = no_backtrace_note(left);
                    match info.location() {
                        Some(loc) => crate::log::hook_output(format_args!(
                            "pcml fiber panicked at {loc}:\n{msg}\n{note}"
                        )),
                        None => crate::log::hook_output(format_args!(
                            "pcml fiber panicked:\n{msg}\n{note}"
                        )),
                    }
                    return;
                }
                previous(info);
                return;
            }
            let msg = crate::sched::join::payload_message(info.payload()).unwrap_or("Box<dyn Any>");
            let mut report = match info.location() {
                Some(loc) => format!("panicked at {loc}:\n{msg}"),
                None => format!("panicked:\n{msg}"),
            };
            if let Some(left) = cramped {
                report.push('\n');
                report.push_str(&no_backtrace_note(left));
            } else {
                let bt = std::backtrace::Backtrace::capture();
                if bt.status() == std::backtrace::BacktraceStatus::Captured {
                    report.push_str(&format!("\nstack backtrace:\n{bt}"));
                }
            }
            REPORT.with(|r| *r.borrow_mut() = Some(report));
        }));
    });
}

/// Turns a caught unwind payload of thread `id` into its `JoinError`.
pub(crate) fn join_error(id: ThreadId, payload: Box<dyn Any + Send>) -> JoinError {
    if payload.is::<ExitSignal>() {
        return JoinError::exited(id);
    }
    if payload.is::<AbortSignal>() {
        return JoinError::aborted(id);
    }
    let report = REPORT.with(|r| r.borrow_mut().take()).unwrap_or_else(|| {
        match crate::sched::join::payload_message(payload.as_ref()) {
            Some(m) => format!("panicked: {m}"),
            None => "panicked".to_string(),
        }
    });
    JoinError::panicked(id, payload, report)
}
