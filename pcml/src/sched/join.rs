//! Join handles: how a thread's result (or its failure) reaches whoever waits for it.
//!
//! # Invariants
//! - `result` is written once, by the completer, before it sets `DONE` (Release); after the
//!   handle observes `DONE` (Acquire) only the handle touches `result`.
//! - `DETACHED` is set once, when the handle is dropped unjoined. If the completer finds
//!   `DETACHED` already set, it owns `result` and prints an unobserved panic; if the handle finds
//!   `DONE` already set on drop, the handle does. So a panic nobody joins is printed exactly once.
//! - The `waiter` cell belongs to the handle while `WAITER` is clear and to the completer once it
//!   has set `DONE` with `WAITER` set. The handle writes a blocker, then sets `WAITER` with a CAS
//!   that fails if `DONE` came first (it then keeps its blocker); to replace a blocker it clears
//!   `WAITER` with a CAS that fails if `DONE` came first (the completer then wakes the old one).
//!   So a joiner either sees `DONE` or leaves a blocker the completer will wake, with one atomic
//!   read-modify-write on each side.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::num::NonZeroU64;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::loom::PlainCell as UnsafeCell;
use crate::sched::blocker::{self, Blocker};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// The identity of a pcml thread (a fiber or an async task), unique within the process.
///
/// ```
/// pcml::run(|| {
///     let me = pcml::current();
///     let child = pcml::spawn(pcml::current).join().unwrap();
///     assert_ne!(me, child);
/// });
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadId(NonZeroU64);

impl ThreadId {
    #[inline]
    pub(crate) fn next() -> Self {
        use std::cell::Cell;
        use std::sync::atomic::AtomicU64;
        /// Ids are handed to each OS thread in blocks, so spawning touches no shared counter.
        const BLOCK: u64 = 1024;
        static NEXT_BLOCK: AtomicU64 = AtomicU64::new(1);
        thread_local! {
            /// The next id of this thread's block, and the end of the block.
            static RANGE: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
        }
        let n = RANGE.with(|r| {
            let (next, end) = r.get();
            let (next, end) = if next < end {
                (next, end)
            } else {
                // Relaxed: only uniqueness matters.
                let start = NEXT_BLOCK.fetch_add(BLOCK, std::sync::atomic::Ordering::Relaxed);
                (start, start + BLOCK)
            };
            r.set((next + 1, end));
            next
        });
        ThreadId(NonZeroU64::new(n).expect("thread ids exhausted"))
    }

    /// The id whose number is `n` (from [`as_u64`](Self::as_u64)).
    pub(crate) fn from_u64(n: u64) -> Option<Self> {
        NonZeroU64::new(n).map(ThreadId)
    }

    /// The id as a number.
    ///
    /// ```
    /// pcml::run(|| assert!(pcml::current().as_u64() > 0));
    /// ```
    pub fn as_u64(self) -> u64 {
        self.0.get()
    }
}

impl fmt::Debug for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ThreadId({})", self.0)
    }
}

impl fmt::Display for ThreadId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// Why a thread produced no value: it panicked, it called [`exit`](crate::exit), or the runtime
/// shut down before it finished.
///
/// ```
/// pcml::run(|| {
///     let err = pcml::spawn(|| -> u32 { panic!("boom") }).join().unwrap_err();
///     assert!(err.is_panic());
///     assert!(err.to_string().contains("boom"));
/// });
/// ```
pub struct JoinError(Box<ErrorInner>);

/// Boxed, so that a `Result<T, JoinError>` is one word more than `T` and a small one is
/// returned in registers on the spawn and join paths; errors are rare.
struct ErrorInner {
    id: ThreadId,
    repr: Repr,
}

enum Repr {
    /// A panic's payload and its printed report.
    Panicked {
        payload: Box<dyn Any + Send>,
        report: String,
    },
    Exited,
    /// Dropped unfinished at shutdown (or when a deadlock stopped the runtime).
    Cancelled,
    /// Cancelled by [`JoinHandle::abort`].
    Aborted,
}

impl JoinError {
    fn new(id: ThreadId, repr: Repr) -> Self {
        Self(Box::new(ErrorInner { id, repr }))
    }
    pub(crate) fn panicked(id: ThreadId, payload: Box<dyn Any + Send>, report: String) -> Self {
        Self::new(id, Repr::Panicked { payload, report })
    }
    pub(crate) fn exited(id: ThreadId) -> Self {
        Self::new(id, Repr::Exited)
    }
    pub(crate) fn cancelled(id: ThreadId) -> Self {
        Self::new(id, Repr::Cancelled)
    }
    pub(crate) fn aborted(id: ThreadId) -> Self {
        Self::new(id, Repr::Aborted)
    }

    /// The thread that failed.
    pub fn id(&self) -> ThreadId {
        self.0.id
    }

    /// Whether the thread panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self.0.repr, Repr::Panicked { .. })
    }

    /// Whether the thread ended itself with [`exit`](crate::exit).
    ///
    /// ```
    /// pcml::run(|| {
    ///     let err = pcml::spawn(|| -> () { pcml::exit() }).join().unwrap_err();
    ///     assert!(err.is_exit());
    /// });
    /// ```
    pub fn is_exit(&self) -> bool {
        matches!(self.0.repr, Repr::Exited)
    }

    /// Whether the thread was cancelled before it finished: by [`JoinHandle::abort`], or
    /// because the runtime shut down (or a deadlock stopped it).
    ///
    /// ```
    /// pcml::run(|| {
    ///     let ch = pcml::Chan::<u8>::new();
    ///     let rx = ch.clone();
    ///     let h = pcml::spawn(move || rx.recv());
    ///     h.abort();
    ///     assert!(h.join().unwrap_err().is_cancelled());
    /// });
    /// ```
    pub fn is_cancelled(&self) -> bool {
        matches!(self.0.repr, Repr::Cancelled | Repr::Aborted)
    }

    /// The panic payload, to re-raise with `std::panic::resume_unwind`.
    ///
    /// # Panics
    /// If the thread did not panic; see [`try_into_panic`](Self::try_into_panic).
    pub fn into_panic(self) -> Box<dyn Any + Send> {
        self.try_into_panic().unwrap_or_else(|e| {
            panic!("JoinError::into_panic on an error that is not a panic: {e}")
        })
    }

    /// The panic payload, or the error itself if the thread did not panic.
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send>, JoinError> {
        let ErrorInner { id, repr } = *self.0;
        match repr {
            Repr::Panicked { payload, .. } => Ok(payload),
            repr => Err(JoinError::new(id, repr)),
        }
    }

    /// The panic's message, when the payload is a string.
    pub fn panic_message(&self) -> Option<&str> {
        match &self.0.repr {
            Repr::Panicked { payload, .. } => payload_message(payload.as_ref()),
            _ => None,
        }
    }
}

impl JoinError {
    /// A panic's full report (message, location, backtrace if captured).
    #[cfg_attr(not(feature = "tracing"), allow(dead_code))]
    pub(crate) fn panic_report(&self) -> Option<&str> {
        match &self.0.repr {
            Repr::Panicked { report, .. } => Some(report),
            _ => None,
        }
    }
}

pub(crate) fn payload_message(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&'static str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

impl fmt::Display for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = self.0.id;
        match &self.0.repr {
            Repr::Panicked { report, .. } => write!(f, "pcml thread {id} {report}"),
            Repr::Exited => write!(f, "pcml thread {id} ended itself with pcml::exit"),
            Repr::Cancelled => write!(
                f,
                "pcml thread {id} was dropped unfinished: its runtime shut down"
            ),
            Repr::Aborted => write!(f, "pcml thread {id} was cancelled by JoinHandle::abort"),
        }
    }
}

impl fmt::Debug for JoinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinError")
            .field("id", &self.0.id)
            .field("error", &format_args!("{self}"))
            .finish()
    }
}

impl std::error::Error for JoinError {}

const DONE: u8 = 1;
const DETACHED: u8 = 2;
const WAITER: u8 = 4;

/// The state a thread shares with its [`JoinHandle`].
pub(crate) struct JoinState<T> {
    pub(crate) id: ThreadId,
    /// `DONE`, `DETACHED` and `WAITER` bits; see the module invariants.
    state: AtomicU8,
    /// Written by the completer before `DONE`; then owned by the handle (or by the completer if
    /// `DETACHED` came first).
    result: UnsafeCell<Option<Result<T, JoinError>>>,
    /// The joiner waiting for `DONE`; owned as the module invariants say.
    waiter: UnsafeCell<Option<Blocker>>,
}

// SAFETY: `result` is handed from the completer to the handle through the DONE protocol, one
// thread at a time; T: Send is what moving it between threads needs.
unsafe impl<T: Send> Sync for JoinState<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for JoinState<T> {}

impl<T> crate::sched::waitfor::WaitObject for JoinState<T> {
    /// A join ends only when its thread does.
    fn wait_for(&self, _: &crate::sched::waitfor::Waiter) -> crate::sched::waitfor::WaitFor {
        crate::sched::waitfor::WaitFor::Join {
            target: self.id,
            open: !self.is_done(),
        }
    }
}

impl<T> JoinState<T> {
    pub(crate) fn new(id: ThreadId) -> Arc<Self> {
        Arc::new(Self::new_inline(id))
    }

    /// A join state to embed in another shared object.
    pub(crate) fn new_inline(id: ThreadId) -> Self {
        Self {
            id,
            state: AtomicU8::new(0),
            result: UnsafeCell::new(None),
            waiter: UnsafeCell::new(None),
        }
    }

    /// A join state whose handle was never made (a detached spawn): the completer owns the
    /// result at once, as if the handle had been dropped before the thread ended.
    pub(crate) fn new_inline_detached(id: ThreadId) -> Self {
        Self {
            id,
            state: AtomicU8::new(DETACHED),
            result: UnsafeCell::new(None),
            waiter: UnsafeCell::new(None),
        }
    }

    /// Publishes the thread's outcome and wakes the joiner. Called once.
    pub(crate) fn complete(&self, outcome: Result<T, JoinError>) {
        crate::log::exited(self.id, outcome.as_ref().err());
        // SAFETY: before DONE only the completer touches `result`.
        self.result.with_mut(|r| unsafe { *r = Some(outcome) });
        // AcqRel: the Release half publishes `result` to the handle's Acquire loads; the Acquire
        // half pairs with the handle's Release CAS that set WAITER (its blocker) or its Release
        // fetch_or(DETACHED).
        let prev = self.state.fetch_or(DONE, Ordering::AcqRel);
        let waiter = if prev & WAITER != 0 {
            // SAFETY: WAITER was set before DONE, so the cell is ours now (module invariants).
            self.waiter.with_mut(|w| unsafe { (*w).take() })
        } else {
            None
        };
        if prev & DETACHED != 0 {
            // The handle is gone: we own the result.
            // SAFETY: DETACHED was set before DONE, so the handle never touches `result`.
            let outcome = self.result.with_mut(|r| unsafe { (*r).take() });
            if let Some(Err(e)) = outcome {
                report_unobserved(&e);
            }
        }
        if let Some(w) = waiter {
            w.unblock();
        }
    }

    /// Whether nothing was ever stored in the state (no result, no waiter), so that dropping
    /// it would do nothing. Only for the handle's owner, before the thread can complete.
    #[inline]
    pub(crate) fn is_untouched(&self) -> bool {
        // Relaxed: the only bit that can be set before the thread completes is WAITER, set by
        // the handle's owner itself (module invariants).
        self.state.load(Ordering::Relaxed) == 0
    }

    pub(crate) fn is_done(&self) -> bool {
        // Acquire: pairs with the Release half of `fetch_or(DONE)` in `complete`.
        self.state.load(Ordering::Acquire) & DONE != 0
    }

    /// Takes the result. Only the handle calls this, after `is_done()`.
    pub(crate) fn take(&self) -> Result<T, JoinError> {
        debug_assert!(self.is_done());
        // SAFETY: DONE has been observed with Acquire, so the completer is finished with
        // `result` and the handle (our caller) is its only user.
        self.result
            .with_mut(|r| unsafe { (*r).take() })
            .expect("pcml: a join result was taken twice")
    }

    /// Registers `blocker` (the handle's side only) to be woken at completion; wakes it at once
    /// if already done.
    pub(crate) fn register(&self, blocker: Blocker) {
        // Acquire: pairs with the completer's Release half of fetch_or(DONE).
        let mut s = self.state.load(Ordering::Acquire);
        if s & WAITER != 0 {
            // Take the cell back to replace the old blocker.
            // Acquire: pairs with our own earlier Release CAS (program order) and the completer.
            match self
                .state
                .compare_exchange(s, s & !WAITER, Ordering::Acquire, Ordering::Acquire)
            {
                // The cell is ours again.
                Ok(_) => s &= !WAITER,
                // DONE came first: the completer wakes the old blocker; this one is not needed.
                Err(_) => {
                    blocker.unblock();
                    return;
                }
            }
        }
        if s & DONE != 0 {
            blocker.unblock();
            return;
        }
        // SAFETY: WAITER is clear, so the cell is the handle's (module invariants).
        self.waiter.with_mut(|w| unsafe { *w = Some(blocker) });
        // Release: publishes the blocker to the completer's Acquire half of fetch_or(DONE).
        if self
            .state
            .compare_exchange(s, s | WAITER, Ordering::Release, Ordering::Acquire)
            .is_err()
        {
            // DONE came first; the cell is still ours: wake our own blocker.
            // SAFETY: WAITER was never set, so the completer does not touch the cell.
            if let Some(b) = self.waiter.with_mut(|w| unsafe { (*w).take() }) {
                b.unblock();
            }
        }
    }
}

/// What a [`JoinHandle`] holds: a join state, and possibly the thread's unstarted body.
pub(crate) trait JoinTarget<T>: Send + Sync {
    fn state(&self) -> &JoinState<T>;

    /// Runs the thread's body here, on the joiner's stack, if nobody has started it and the
    /// joiner can (a fiber with room on its stack); `true` if it ran.
    fn run_inline(&self) -> bool {
        false
    }

    /// The joiner's fast path: if the thread is a fiber that its proc still holds back from
    /// the queues (`worker::run_held`), runs its body here and returns its outcome, without
    /// touching the join state. When it returns `Some`, it has also dropped the handle's
    /// counted reference (`TargetRef`), which the caller must then forget.
    fn join_held(&self) -> Option<Result<T, JoinError>> {
        None
    }

    /// An `.await` of the handle from a task: polls the thread here, inside the awaiting
    /// task's poll, if it is a task that its proc would run next (work-first join, see
    /// `worker::run_joined_task`); `true` if it ran. The default, for other threads, runs
    /// nothing.
    fn poll_inline(&self) -> bool {
        false
    }

    /// Asks the thread to stop (see [`JoinHandle::abort`]); the default, for threads that
    /// cannot be cancelled (`spawn_blocking` jobs), does nothing.
    fn abort(&self) {}

    /// Drops one counted reference, for targets shared through counted references
    /// ([`JoinHandle::from_counted`]).
    ///
    /// # Safety
    /// The caller owns such a reference and does not use `self` after the call.
    unsafe fn release(&self) {}
}

/// A join handle's reference to its target: a strong reference of an `Arc` (tasks, blocking
/// jobs), or a counted reference to a spawned fiber's cell, which keeps its own count (see
/// `sched::spawn`).
///
/// One fat pointer, so that a handle is two words and moves in registers: the kinds are told
/// apart by the pointer's lowest bit, set for an `Arc`. (An `Arc`'s data follows its two
/// counters, so its address is a multiple of 8; a counted target's address is even, as
/// [`JoinHandle::from_counted`] requires.)
pub(crate) struct TargetRef<T> {
    ptr: std::ptr::NonNull<dyn JoinTarget<T>>,
}

/// `TargetRef::ptr`'s tag for a reference owned through an `Arc`.
const ARC_TAG: usize = 1;

// SAFETY: a `JoinTarget` is `Send + Sync`, and both kinds of count are atomic.
unsafe impl<T> Send for TargetRef<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for TargetRef<T> {}

impl<T> TargetRef<T> {
    fn from_arc(target: Arc<dyn JoinTarget<T>>) -> Self {
        let p = Arc::into_raw(target).cast_mut();
        debug_assert_eq!(p.addr() & ARC_TAG, 0);
        Self {
            ptr: std::ptr::NonNull::new(p.map_addr(|a| a | ARC_TAG))
                .expect("an Arc's pointer is not null"),
        }
    }

    /// Takes over a counted reference.
    ///
    /// # Safety
    /// As [`JoinHandle::from_counted`].
    unsafe fn from_counted(target: std::ptr::NonNull<dyn JoinTarget<T>>) -> Self {
        debug_assert_eq!(target.as_ptr().addr() & ARC_TAG, 0);
        Self { ptr: target }
    }

    #[inline(always)]
    fn untagged(&self) -> *mut (dyn JoinTarget<T> + 'static) {
        self.ptr.as_ptr().map_addr(|a| a & !ARC_TAG)
    }
}

impl<T> std::ops::Deref for TargetRef<T> {
    type Target = dyn JoinTarget<T>;

    #[inline(always)]
    fn deref(&self) -> &(dyn JoinTarget<T> + 'static) {
        // SAFETY: we own a reference (strong or counted), so the target is alive.
        unsafe { &*self.untagged() }
    }
}

impl<T> Drop for TargetRef<T> {
    fn drop(&mut self) {
        let p = self.untagged();
        if self.ptr.as_ptr().addr() & ARC_TAG != 0 {
            // SAFETY: the pointer came from `Arc::into_raw` (`from_arc`), and we give up its
            // strong reference once, here.
            drop(unsafe { Arc::from_raw(p.cast_const()) });
        } else {
            // SAFETY: we own one counted reference and never use it again.
            unsafe { (*p).release() }
        }
    }
}

impl<T: Send> JoinTarget<T> for JoinState<T> {
    fn state(&self) -> &JoinState<T> {
        self
    }
}

/// Reports the failure of a thread whose result nobody will see.
pub(crate) fn report_unobserved(e: &JoinError) {
    crate::log::unobserved_failure(e);
}

/// An owned permission to wait for a thread's result.
///
/// Dropping the handle detaches the thread: it runs on, and a panic of a detached thread is
/// printed to stderr once. `join` blocks only the calling fiber (or the calling OS thread outside
/// a runtime); async code awaits the handle instead.
///
/// # Examples
/// ```
/// pcml::run(|| {
///     let h = pcml::spawn(|| 6 * 7);
///     assert_eq!(h.join().unwrap(), 42);
///
///     let t = pcml::spawn_task(async { "task" });
///     assert_eq!(t.join().unwrap(), "task");
/// });
/// ```
pub struct JoinHandle<T> {
    pub(crate) state: Option<TargetRef<T>>,
}

impl<T> JoinHandle<T> {
    pub(crate) fn new(state: Arc<dyn JoinTarget<T>>) -> Self {
        Self {
            state: Some(TargetRef::from_arc(state)),
        }
    }

    /// A handle owning one counted reference to `target`.
    ///
    /// # Safety
    /// `target` is alive, at an even address (its type's alignment is at least 2), and its
    /// count includes a reference the caller gives up.
    pub(crate) unsafe fn from_counted(target: std::ptr::NonNull<dyn JoinTarget<T>>) -> Self {
        Self {
            // SAFETY: as our caller promises.
            state: Some(unsafe { TargetRef::from_counted(target) }),
        }
    }

    pub(crate) fn state(&self) -> &JoinState<T> {
        self.state
            .as_ref()
            .expect("pcml: JoinHandle polled after it returned its result")
            .state()
    }

    /// Waits for the thread to finish and returns its value, or why there is none.
    ///
    /// Blocks the calling fiber, or the calling OS thread outside a runtime. If the thread is a
    /// fiber that no proc has started yet and the caller is a fiber of the same runtime (on the
    /// fiber's proc, for `spawn_on`) with at least a quarter of its stack free, `join` runs the
    /// fiber's closure right here on the caller's stack (work-first, as Cilk's join does): no
    /// stack, no context switch. The closure still sees its own [`current`](crate::current)
    /// id, and its panics are still caught and returned as a [`JoinError`]. Until it returns
    /// it is part of its joiner: if the joiner is cancelled ([`abort`](Self::abort)) meanwhile,
    /// it is cancelled with it.
    ///
    /// # Panics
    /// Inside a pcml async task, which cannot block: `.await` the handle there.
    // Out of line: inlined into a spawn+join loop it cost 15% more cycles per iteration
    // (`perf stat`, examples/spawn1), with fewer instructions; measured again with the
    // two-word handle: 51 cycles against 43.
    #[inline(never)]
    pub fn join(mut self) -> Result<T, JoinError> {
        let target = self.state.take().expect("pcml: JoinHandle already joined");
        if let Some(outcome) = target.join_held() {
            // `join_held` dropped the reference `target` holds.
            std::mem::forget(target);
            return outcome;
        }
        let state = target.state();
        // Work-first, as Cilk's join: a fiber joining a thread that has not started yet runs it
        // here instead of blocking while a proc starts it on a stack of its own.
        if !state.is_done() && !target.run_inline() && !state.is_done() {
            blocker::block_current_on("JoinHandle::join", state, |b| state.register(b));
            // A fiber is resumed only by its blocker; an OS thread's park loops on the flag.
            debug_assert!(state.is_done());
        }
        state.take()
    }

    /// Whether the thread has finished (so `join` would not block).
    ///
    /// ```
    /// pcml::run(|| {
    ///     let h = pcml::spawn(|| ());
    ///     while !h.is_finished() {
    ///         pcml::yield_now();
    ///     }
    ///     h.join().unwrap();
    /// });
    /// ```
    pub fn is_finished(&self) -> bool {
        self.state().is_done()
    }

    /// The id of the thread.
    pub fn id(&self) -> ThreadId {
        self.state().id
    }

    /// Cancels the thread, as tokio's `JoinHandle::abort` does; its join then returns a
    /// [`JoinError`] for which [`is_cancelled`](JoinError::is_cancelled) holds, unless the
    /// thread finished first (then the join returns its outcome as usual).
    ///
    /// - A fiber that has not started never runs: its closure is dropped.
    /// - A fiber blocked anywhere in pcml (a channel, a choice, an `MVar`, a join, a sleep, a
    ///   socket, a mailbox) stops waiting as if its sync had lost every branch: its offers are
    ///   withdrawn, its negative acknowledgements fire, and nothing is taken from anybody.
    ///   Then it unwinds from there, running the destructors on its stack. If a partner had
    ///   already completed the sync when the cancellation arrived, what it delivered is
    ///   dropped (a buffered object, such as a mailbox or an `MVar`, gets it back), as when a
    ///   pending `.await` is dropped.
    /// - A running fiber is cancelled at its next blocking point or yield (including the
    ///   yields that a loop of syncs that never block makes every 128 syncs). A fiber that
    ///   computes without ever synchronizing cannot be stopped: Rust code cannot be safely
    ///   interrupted at an arbitrary instruction.
    /// - An async task's future is dropped instead of being polled again (at once if it is
    ///   waiting: the cancellation wakes it).
    /// - A `spawn_blocking` job cannot be cancelled: it runs to its end.
    /// - A fiber that the cancelled fiber's [`join`](Self::join) is running inline on its own
    ///   stack (it had not started when joined) goes with it: its own join reports it
    ///   cancelled. A child that must outlive a joiner that may be cancelled should be let
    ///   start first (joined after it has synchronized once, say), or not be joined.
    ///
    /// Aborting twice, or a finished thread, does nothing. The cancelled fiber's unwinding
    /// must not be caught and ignored (`catch_unwind` that swallows it): the fiber would run
    /// on. A destructor that runs during the unwinding may block and sync as usual.
    ///
    /// ```
    /// use pcml::event::with_nack;
    ///
    /// pcml::run(|| {
    ///     let ch = pcml::Chan::<u32>::new();
    ///     let (started, nacked) = (pcml::IVar::new(), pcml::IVar::new());
    ///     let (rx, s, n) = (ch.clone(), started.clone(), nacked.clone());
    ///     let h = pcml::spawn(move || {
    ///         with_nack(move |nack| {
    ///             pcml::spawn(move || {
    ///                 nack.sync();
    ///                 n.put(()).unwrap()
    ///             });
    ///             s.put(()).unwrap();
    ///             rx.recv_evt()
    ///         })
    ///         .sync()
    ///     });
    ///     started.get(); // the fiber is in its sync
    ///     h.abort();
    ///     assert!(h.join().unwrap_err().is_cancelled());
    ///     nacked.get(); // its sync's nack fired
    ///     assert!(ch.send_evt(1).poll().is_none()); // and its offer is gone
    /// });
    /// ```
    pub fn abort(&self) {
        if let Some(t) = &self.state {
            t.abort();
        }
    }
}

impl<T> Future for JoinHandle<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let state = self.state();
        if !state.is_done() {
            let target = self.state.as_ref().expect("checked by `state`");
            if target.poll_inline() && state.is_done() {
                let target = self.state.take().expect("checked above");
                return Poll::Ready(target.state().take());
            }
            state.register(Blocker::from_waker(cx.waker().clone()));
            if !state.is_done() {
                return Poll::Pending;
            }
        }
        let target = self.state.take().expect("checked above");
        Poll::Ready(target.state().take())
    }
}

impl<T> Drop for JoinHandle<T> {
    // Inline, so that a `join` (which empties the handle) drops nothing.
    #[inline]
    fn drop(&mut self) {
        if let Some(target) = self.state.take() {
            detach(target);
        }
    }
}

/// Drops an unjoined handle's target: the thread runs on, detached.
#[inline(never)]
fn detach<T>(target: TargetRef<T>) {
    let state = target.state();
    // AcqRel: Release pairs with the Acquire half of the completer's fetch_or(DONE); Acquire
    // pairs with its Release half when DONE is already set, making `result` visible.
    let prev = state.state.fetch_or(DETACHED, Ordering::AcqRel);
    if prev & DONE != 0 {
        // SAFETY: DONE observed with Acquire; the handle owns `result`.
        let outcome = state.result.with_mut(|r| unsafe { (*r).take() });
        if let Some(Err(e)) = outcome {
            report_unobserved(&e);
        }
    }
}

impl<T> fmt::Debug for JoinHandle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.state {
            Some(s) => f
                .debug_struct("JoinHandle")
                .field("id", &s.state().id)
                .field("finished", &s.state().is_done())
                .finish(),
            None => f.write_str("JoinHandle { <joined> }"),
        }
    }
}

#[cfg(all(test, not(pcml_loom)))]
mod tests {
    use super::{JoinError, JoinHandle, JoinState, ThreadId};

    /// A completer on one OS thread and a joiner on another, racing: the joiner always gets the
    /// value (it parks as an OS-thread waiter when it comes first).
    #[test]
    fn join_and_complete_race_from_os_threads() {
        for i in 0..50u32 {
            let state = JoinState::new(ThreadId::next());
            let handle = JoinHandle::new(state.clone());
            let t = std::thread::spawn(move || state.complete(Ok(i)));
            assert_eq!(handle.join().unwrap(), i);
            t.join().unwrap();
        }
    }

    /// A handle is one fat pointer and a small result one word more, so both move in
    /// registers on the spawn and join paths (the `TargetRef` and `JoinError` docs say why).
    #[test]
    fn a_handle_and_a_small_result_are_two_words() {
        let word = std::mem::size_of::<usize>();
        assert_eq!(std::mem::size_of::<JoinHandle<u64>>(), 2 * word);
        assert_eq!(std::mem::size_of::<Result<u64, JoinError>>(), 2 * word);
    }

    #[test]
    fn a_join_error_keeps_its_kind_and_id_through_try_into_panic() {
        let id = ThreadId::next();
        let e = JoinError::exited(id).try_into_panic().unwrap_err();
        assert!(e.is_exit() && !e.is_panic() && !e.is_cancelled());
        assert_eq!(e.id(), id);
        let e = JoinError::cancelled(id).try_into_panic().unwrap_err();
        assert!(e.is_cancelled());
        let p = JoinError::panicked(id, Box::new("boom"), "panicked: boom".into());
        assert_eq!(p.panic_message(), Some("boom"));
        assert!(p.to_string().contains("boom"));
        let payload = p.try_into_panic().unwrap();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
    }

    #[test]
    fn dropping_the_handle_before_or_after_completion_is_clean() {
        let state = JoinState::<u8>::new(ThreadId::next());
        drop(JoinHandle::new(state.clone()));
        state.complete(Ok(1));
        let state = JoinState::<u8>::new(ThreadId::next());
        let h = JoinHandle::new(state.clone());
        state.complete(Ok(2));
        assert!(h.is_finished());
        drop(h);
    }
}
