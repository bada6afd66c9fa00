//! The `Blocker`: one way to block, three kinds of waiter (ARCHITECTURE.md, "Invariants").
//!
//! A thread that must wait hands a `Blocker` to whatever will wake it (a channel's waiter
//! queue, a join state) and then blocks; `unblock` makes it runnable again:
//! - a **fiber** suspends; its blocker names its home proc, its slot there and a fresh token,
//!   and `unblock` lands the wake-up in the home proc's inbox (Reppy, Russo and Xiao 2009 section 9.1), so the
//!   fiber resumes where it lives (decision 2);
//! - a plain **OS thread** outside any runtime parks; `unblock` sets its flag and unparks it;
//! - **async** code registers its `Waker`; `unblock` wakes it.
//!
//! This is the `Cont<T>` of the Parallel CML paper's C# implementation (section 9.2).
//!
//! # Invariants
//! - `unblock` consumes the blocker, and a fiber's token is consumed by the first wake-up that
//!   carries it; stale or repeated wake-ups are ignored by the home proc.
//! - A fiber that called `block_current` is resumed only by its token's wake-up, never
//!   spuriously; or it does not return at all: dropped at shutdown, or cancelled
//!   (`JoinHandle::abort`), it unwinds from there, and the destructors of its caller's frames
//!   withdraw whatever `prepare` published.

use std::fmt;
use std::ptr::NonNull;
use std::task::Waker;

use crate::loom::sync::Arc;
use crate::loom::sync::atomic::{AtomicBool, Ordering};
use crate::sched::waitfor::{WaitObject, Waiter};
use crate::sched::worker;

/// A handle that makes one blocked thread runnable again.
pub(crate) struct Blocker(Kind);

enum Kind {
    Fiber {
        /// The runtime's id (see `registry`): no reference count is held.
        runtime: u64,
        proc: usize,
        slot: usize,
        token: u64,
    },
    Thread(Arc<ThreadSignal>),
    Waker(Waker),
}

/// A fiber's wake-up taken out of its [`Blocker`] ([`Blocker::as_fiber`]): plain values, so
/// it needs no drop and outlives the blocker's memory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FiberWake {
    runtime: u64,
    proc: usize,
    slot: usize,
    token: u64,
}

impl FiberWake {
    /// Makes the fiber runnable: the same as [`Blocker::unblock`] of the blocker it came from.
    #[inline(always)]
    pub(crate) fn wake(self) {
        worker::wake_fiber(self.runtime, self.proc, self.slot, self.token)
    }

    /// [`wake`](Self::wake), then `worker::consume_budget`, with one look-up of the proc's
    /// context (`worker::wake_fiber_then_consume`).
    #[inline(always)]
    pub(crate) fn wake_then_consume(self) {
        worker::wake_fiber_then_consume(self.runtime, self.proc, self.slot, self.token)
    }
}

/// What a parked OS thread waits on.
struct ThreadSignal {
    /// Set (Release) by `unblock`; read (Acquire) by the parked thread's loop.
    notified: AtomicBool,
    thread: crate::loom::thread::Thread,
}

impl Blocker {
    pub(crate) fn fiber(runtime: u64, proc: usize, slot: usize, token: u64) -> Self {
        Blocker(Kind::Fiber {
            runtime,
            proc,
            slot,
            token,
        })
    }

    /// A blocker that wakes `waker`: how async code waits.
    pub(crate) fn from_waker(waker: Waker) -> Self {
        Blocker(Kind::Waker(waker))
    }

    /// Makes the blocked thread runnable.
    ///
    /// Inline for a fiber's wake-up (the hot path of a channel rendezvous: no call, and no
    /// registers saved for the other kinds) and a task's (a call through its waker's table
    /// either way; through `unblock_other` it was a second call, with the blocker moved to
    /// it: about 12 instructions a wake-up, callgrind `examples/taskpp`), out of line for an
    /// OS thread's.
    #[inline(always)]
    pub(crate) fn unblock(self) {
        match self.0 {
            Kind::Fiber {
                runtime,
                proc,
                slot,
                token,
            } => worker::wake_fiber(runtime, proc, slot, token),
            Kind::Waker(w) => w.wake(),
            other => unblock_other(other),
        }
    }

    /// The wake-up of a fiber's blocker, as a copy of its fields (`None` for the other
    /// kinds): what a waker that must not read the blocker after a release store (a direct
    /// offer's partner, `DirectRecord::finish_wake`) keeps in registers across it.
    #[inline(always)]
    pub(crate) fn as_fiber(&self) -> Option<FiberWake> {
        match self.0 {
            Kind::Fiber {
                runtime,
                proc,
                slot,
                token,
            } => Some(FiberWake {
                runtime,
                proc,
                slot,
                token,
            }),
            _ => None,
        }
    }

    /// Whether this blocker wakes the fiber `w` from the block `w.token` (a dump's question).
    pub(crate) fn wakes(&self, w: &Waiter) -> bool {
        matches!(self.0, Kind::Fiber { runtime, proc, slot, token }
            if runtime == w.runtime && proc == w.proc && slot == w.slot && token == w.token)
    }

    /// Whether this blocker would wake the same task as `waker` (so an async poll need not
    /// replace it).
    #[allow(dead_code)] // used by the event layer
    pub(crate) fn will_wake(&self, waker: &Waker) -> bool {
        matches!(&self.0, Kind::Waker(w) if w.will_wake(waker))
    }
}

/// [`Blocker::unblock`] of an OS thread or an async waker.
#[inline(never)]
fn unblock_other(kind: Kind) {
    match kind {
        // Not reached (`unblock` wakes fibers inline); kept correct all the same.
        fiber @ Kind::Fiber { .. } => Blocker(fiber).unblock(),
        Kind::Thread(signal) => {
            // Release: pairs with the Acquire load in `block_thread`, so whatever the waker
            // wrote before unblocking is visible to the woken thread.
            signal.notified.store(true, Ordering::Release);
            signal.thread.unpark();
        }
        Kind::Waker(w) => w.wake(),
    }
}

impl fmt::Debug for Blocker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Kind::Fiber {
                proc, slot, token, ..
            } => write!(f, "Blocker::Fiber(proc {proc}, slot {slot}, token {token})"),
            Kind::Thread(_) => f.write_str("Blocker::Thread"),
            Kind::Waker(_) => f.write_str("Blocker::Waker"),
        }
    }
}

/// Blocks the calling thread until the blocker given to `prepare` is unblocked.
///
/// `prepare` stores the blocker where the waker will find it; it may unblock it at once. It runs
/// before the caller suspends, so it may end a critical section begun before the call (a direct
/// channel send or receive queues its offer and releases the channel's spin lock there, so its
/// blocker is in place before any partner can see the offer). If the caller cannot block,
/// `prepare` is dropped without being called (releasing whatever it holds) before the panic.
/// `what` names the operation for the panic message in contexts that cannot block.
///
/// A cancelled fiber (`JoinHandle::abort`) unwinds out of this call instead of returning,
/// before or after `prepare` ran: callers keep what `prepare` publishes in values whose drop
/// withdraws it.
///
/// # Panics
/// Inside a pcml async task, which cannot block.
#[inline(always)]
pub(crate) fn block_current(what: &str, prepare: impl FnOnce(Blocker)) {
    block(what, None, 0, prepare)
}

/// [`block_current`] on `obj` (a channel's, a join state's, a mailbox's shared state): a
/// dump shows its id, the same for every thread blocked on it, and the wait-for graph asks
/// it how the wait can end (`waitfor`).
#[inline(always)]
pub(crate) fn block_current_on<'a>(
    what: &str,
    obj: *const (dyn WaitObject + 'a),
    prepare: impl FnOnce(Blocker),
) {
    block(what, Some(obj), 0, prepare)
}

/// [`block_current_on`] through the handle at address `handle` (the `Arc` field of the
/// `Chan` or half whose method blocks): the wait-for graph places the handle (`waitfor`).
#[inline(always)]
pub(crate) fn block_current_through<'a>(
    what: &str,
    obj: *const (dyn WaitObject + 'a),
    handle: usize,
    prepare: impl FnOnce(Blocker),
) {
    block(what, Some(obj), handle, prepare)
}

#[inline(always)]
fn block<'a>(
    what: &str,
    obj: Option<*const (dyn WaitObject + 'a)>,
    handle: usize,
    prepare: impl FnOnce(Blocker),
) {
    // SAFETY: only the lifetime is erased; the pointer is read only while the fiber is
    // suspended in this call (`FiberSlot::blocked_on`), which keeps the object alive.
    let obj_ptr = obj
        .and_then(|o| NonNull::new(o.cast_mut()))
        .map(|o| unsafe {
            std::mem::transmute::<NonNull<dyn WaitObject + 'a>, NonNull<dyn WaitObject + 'static>>(
                o,
            )
        });
    match worker::block_fiber(what, obj_ptr, handle, prepare) {
        Ok(()) => {}
        Err(worker::NotAFiber::Task) => panic!(
            "pcml: {what} would block inside a pcml async task, which cannot block its proc; use `.await` instead"
        ),
        Err(worker::NotAFiber::OsThread(_)) if ShutdownDrops::active() => panic!(
            "pcml: {what} would block in a destructor run at runtime shutdown (of an async \
             task's future or an unstarted fiber's closure), where nothing is left to wake it; \
             destructors of pcml threads must not block"
        ),
        Err(worker::NotAFiber::OsThread(prepare)) => {
            block_thread(what, obj.map_or(0, |o| o.cast::<()>().addr()), prepare)
        }
        Err(worker::NotAFiber::Shutdown) => panic!(
            "pcml: {what} would block in a fiber that is being dropped at runtime shutdown; \
             destructors of fibers must not block"
        ),
    }
}

/// While alive, the calling OS thread drops what a runtime's shutdown left (a proc's queued
/// tasks and unstarted fibers, and `Runtime`'s drop of what is left outside the procs): a
/// blocking call there panics instead of parking the thread. Those destructors run on a proc's
/// thread or on the thread that drops the `Runtime`, outside any pcml thread, so they would
/// block as a plain OS thread does; but the runtime's other threads are gone or going, and
/// the wait never ended: `block_on` hung in the join of the procs or in the drop. As a
/// destructor of a started fiber that blocks at shutdown panics (`NotAFiber::Shutdown`), so
/// does this one; the panic becomes that thread's outcome (its join error).
pub(crate) struct ShutdownDrops {
    was: bool,
}

std::thread_local! {
    static SHUTDOWN_DROPS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl ShutdownDrops {
    pub(crate) fn enter() -> Self {
        ShutdownDrops {
            was: SHUTDOWN_DROPS.with(|d| d.replace(true)),
        }
    }

    /// Whether the calling thread drops what a runtime's shutdown left (also read by the
    /// spawns, which cancel what they would start there: see `spawn::cancelled_at_shutdown`).
    pub(crate) fn active() -> bool {
        SHUTDOWN_DROPS.with(|d| d.get())
    }
}

impl Drop for ShutdownDrops {
    fn drop(&mut self) {
        SHUTDOWN_DROPS.with(|d| d.set(self.was));
    }
}

/// Parks the calling OS thread until unblocked.
#[inline(never)]
fn block_thread(what: &str, obj: usize, prepare: impl FnOnce(Blocker)) {
    crate::sched::outside::used_pcml();
    let _listed = crate::sched::dump::OsBlocked::enter(what, obj);
    let signal = Arc::new(ThreadSignal {
        notified: AtomicBool::new(false),
        thread: crate::loom::thread::current(),
    });
    prepare(Blocker(Kind::Thread(signal.clone())));
    // Acquire: pairs with the Release store in `unblock`.
    while !signal.notified.load(Ordering::Acquire) {
        crate::loom::thread::park();
    }
}
