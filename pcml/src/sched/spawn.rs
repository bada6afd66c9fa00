//! The thread API: spawn, yield, exit, current (Deleuze's spawn/yield/halt).

use std::alloc::Layout;
use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::io;
use std::panic::{AssertUnwindSafe, Location, catch_unwind, resume_unwind};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use crate::fiber::stack::{self, NoStack};
use crate::fiber::{BodyPtr, FiberBody, NewFiber, Site};
use crate::loom::PlainCell;
use crate::mp::RefCount;
use crate::sched::blocking::{self, BlockingPool};
use crate::sched::join::{JoinHandle, JoinState, JoinTarget};
use crate::sched::panic::ExitSignal;
use crate::sched::worker::{self, Current, InboxMsg, Runnable, Shared};
use crate::{JoinError, ThreadId};

/// Why a fiber could not be spawned.
#[derive(Debug)]
#[non_exhaustive]
pub enum SpawnError {
    /// Called outside a pcml runtime.
    NoRuntime,
    /// `spawn_on` named a proc the runtime does not have.
    NoSuchProc {
        /// The proc asked for.
        proc: usize,
        /// How many procs the runtime has.
        procs: usize,
    },
    /// The runtime's [`max_fibers`](crate::Builder::max_fibers) fibers are started and
    /// unfinished.
    FiberLimit {
        /// The limit.
        max_fibers: usize,
    },
    /// The process-wide cap on fiber stacks, derived from `vm.max_map_count`, is reached.
    StackCap {
        /// Stacks the cap allows.
        cap: usize,
        /// The system's `vm.max_map_count`, if known.
        max_map_count: Option<usize>,
    },
    /// Mapping a new stack failed (the mapping limit or memory).
    StackMap(io::Error),
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const ADVICE: &str = "each started, unfinished fiber holds a stack of two memory mappings; \
            raise the limit with `sysctl -w vm.max_map_count=N` (as root), let fibers finish \
            before spawning more, or use async tasks (pcml::spawn_task) for very many threads";
        match self {
            SpawnError::NoRuntime => f.write_str(
                "pcml: spawn called outside a pcml runtime; start one with pcml::run or Runtime::block_on",
            ),
            SpawnError::NoSuchProc { proc, procs } => write!(
                f,
                "pcml: spawn_on({proc}) but the runtime has {procs} procs (0..{procs})"
            ),
            SpawnError::FiberLimit { max_fibers } => write!(
                f,
                "pcml: cannot spawn a fiber: {max_fibers} fibers are running or blocked, the \
                 runtime's max_fibers; raise it with Runtime::builder().max_fibers(n)"
            ),
            SpawnError::StackCap { cap, max_map_count } => write!(
                f,
                "pcml: cannot spawn a fiber: {cap} fiber stacks are in use, the most that \
                 vm.max_map_count = {} allows; {ADVICE}",
                max_map_count.map_or("unknown".to_string(), |n| n.to_string())
            ),
            SpawnError::StackMap(e) => write!(
                f,
                "pcml: cannot spawn a fiber: mapping its stack failed ({e}); {ADVICE}"
            ),
        }
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SpawnError::StackMap(e) => Some(e),
            _ => None,
        }
    }
}

/// A spawned fiber's closure and its join state, in one allocation shared by the runnable and
/// the handle.
///
/// # Invariants
/// - `state`'s `CLAIMED` bit is set once; the thread that sets it owns `f` (runs it or, at
///   shutdown, cancels it). A proc that starts the fiber sets `STARTED` and the fiber's slot
///   in the same write (`claim_at`); `ABORT` is set once, by `abort`. Both sides write with a
///   read-modify-write of the one word, so an abort either comes first (the starter sees
///   `ABORT` and the body never runs its closure) or finds where the fiber runs (and sends
///   its cancellation there).
/// - The cell is heap-allocated (or written into a proc's [`SpareCell`]) and freed by the
///   `release` that drops its last counted reference: the runnable's [`BodyPtr`] and the
///   handle's counted [`TargetRef`], so `refs` starts at two, written before either reference
///   is published (no read-modify-write on spawn). The one exception is `join_held`: the
///   joiner then owns both references (the held one was never published) and frees the cell
///   without looking at the count.
/// - Its memory goes back to the global allocator, or to the freeing proc's [`SpareCell`].
struct FiberCell<F, T> {
    /// Counted references alive; see `release`.
    refs: RefCount,
    join: JoinState<T>,
    /// The runtime the fiber belongs to.
    runtime: u64,
    /// The proc the fiber must run on (`spawn_on`), or `ANY_PROC`.
    proc: usize,
    /// `CLAIMED`, `ABORT`, and `STARTED` with the fiber's slot and proc (`home`); see the
    /// invariants.
    state: AtomicUsize,
    /// Where it was spawned (for dumps); written once, at the spawn.
    site: Site,
    /// Taken once, by the claimer.
    f: PlainCell<Option<F>>,
}

// SAFETY: `f` is reached only by the one thread that claimed the cell; the join state is Sync
// for T: Send.
unsafe impl<F: Send, T: Send> Sync for FiberCell<F, T> {}

/// `FiberCell::state`: the body is claimed.
const CLAIMED: usize = 1;
/// `FiberCell::state`: the fiber is cancelled (`JoinHandle::abort`).
const ABORT: usize = 2;
/// `FiberCell::state`: a proc started the fiber; `home` gives where.
const STARTED: usize = 4;
/// `FiberCell::state`: the unstarted fiber was dealt to another proc with a part of a burst
/// of spawns (`FiberBody::deal`): a joiner no longer runs it inline.
const DEALT: usize = 8;
/// `FiberCell::state`: the bits below the started fiber's home.
const HOME_SHIFT: u32 = 4;

/// The `state` bits that say where a started fiber lives: its slot and its proc.
fn home(proc: usize, slot: usize) -> usize {
    debug_assert!(proc < 1 << 16 && slot < 1 << (usize::BITS - 16 - HOME_SHIFT));
    (slot << 16 | proc) << HOME_SHIFT
}

impl<F, T> FiberCell<F, T> {
    /// Whether the fiber was cancelled before its body began (checked by the body itself).
    #[inline]
    fn is_aborted(&self) -> bool {
        // Relaxed: the claimer read-modified-wrote the word after any abort that it must see
        // (invariants); a later abort reaches the running fiber through its proc.
        self.state.load(Ordering::Relaxed) & ABORT != 0
    }

    /// Drops one counted reference, freeing the cell with the last.
    ///
    /// # Safety
    /// The caller owns a reference and does not use `self` after the call.
    unsafe fn release_ref(&self) {
        if !self.refs.release() {
            return;
        }
        // SAFETY: this was the last reference.
        unsafe { self.free() }
    }

    /// Drops the cell and frees (or recycles) its memory.
    ///
    /// # Safety
    /// The caller owns the last reference and does not use `self` after the call.
    #[inline]
    unsafe fn free(&self) {
        // SAFETY: this was the last reference, so nobody uses the cell any more; it was
        // written in place by `new_fiber` and is dropped once, here.
        unsafe { std::ptr::drop_in_place(self as *const Self as *mut Self) };
        // SAFETY: as our caller promises; the contents are dropped.
        unsafe { self.free_memory() }
    }

    /// Frees (or recycles) the cell's memory without dropping its contents.
    ///
    /// # Safety
    /// The caller owns the last reference, does not use `self` after the call, and either
    /// dropped the contents or knows that none of them owns anything.
    #[inline]
    unsafe fn free_memory(&self) {
        // SAFETY: as our caller promises; the cell was made by `place_cell` (`new_fiber`).
        unsafe { free_cell_memory(self) }
    }
}

/// Puts a new fiber cell: in `spare`'s kept block if it has `T`'s layout, else in a new
/// heap block. Either way [`free_cell_memory`] frees it.
#[inline(always)]
fn place_cell<T>(spare: Option<&SpareCell>, value: T) -> NonNull<T> {
    match spare.and_then(|s| s.take(Layout::new::<T>())) {
        Some(block) => {
            let cell = block.cast::<T>();
            // SAFETY: the block is unused memory with this type's layout (`SpareCell`).
            unsafe { cell.as_ptr().write(value) };
            cell
        }
        None => NonNull::from(Box::leak(Box::new(value))),
    }
}

/// Frees (or recycles, through the proc's [`SpareCell`]) the memory of a cell made by
/// [`place_cell`], without dropping its contents.
///
/// # Safety
/// `cell` came from `place_cell`, nobody uses it any more, and its contents are dropped or
/// own nothing.
#[inline]
unsafe fn free_cell_memory<T>(cell: *const T) {
    // SAFETY: the block came from the global allocator with `T`'s layout (`place_cell`, or
    // a `SpareCell` block of that layout), and holds nothing live, as our caller promises.
    unsafe {
        worker::recycle_cell(
            NonNull::new_unchecked(cell.cast_mut().cast()),
            Layout::new::<T>(),
        )
    };
}

/// The memory of one freed fiber cell, kept by a proc for its next spawn, so that a loop of
/// spawns and joins on the proc allocates nothing (Go's runtime keeps freed goroutine records
/// per P for the same reason). Any cell of the same layout may reuse it.
///
/// # Invariants
/// - A kept block was allocated by the global allocator with the layout kept beside it, and
///   holds no live value; the holder frees it when it drops.
pub(crate) struct SpareCell(Cell<Option<(NonNull<u8>, Layout)>>);

impl SpareCell {
    pub(crate) fn new() -> Self {
        Self(Cell::new(None))
    }

    /// Takes the kept block if it has `layout`.
    #[inline]
    pub(crate) fn take(&self, layout: Layout) -> Option<NonNull<u8>> {
        match self.0.get() {
            Some((block, l)) if l == layout => {
                self.0.set(None);
                Some(block)
            }
            _ => None,
        }
    }

    /// Keeps `block` if no block is kept, else frees it.
    ///
    /// # Safety
    /// `block` was allocated by the global allocator with `layout`, holds no live value, and
    /// the caller does not use it again.
    #[inline]
    pub(crate) unsafe fn put(&self, block: NonNull<u8>, layout: Layout) {
        if self.0.get().is_none() {
            self.0.set(Some((block, layout)));
        } else {
            // SAFETY: as the caller promises.
            unsafe { std::alloc::dealloc(block.as_ptr(), layout) }
        }
    }
}

impl Drop for SpareCell {
    fn drop(&mut self) {
        if let Some((block, layout)) = self.0.take() {
            // SAFETY: a kept block is ours, from the global allocator with `layout`.
            unsafe { std::alloc::dealloc(block.as_ptr(), layout) }
        }
    }
}

// SAFETY: the cell is boxed and counted as `release_ref` describes.
unsafe impl<F, T> FiberBody for FiberCell<F, T>
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    unsafe fn release(&self) {
        // SAFETY: as the trait requires.
        unsafe { self.release_ref() }
    }

    fn claim(&self) -> bool {
        // AcqRel: the Acquire half orders our later read of `f` after the cell's
        // construction (published by the deque push or the Arc clone); the Release half is
        // not needed by anyone but costs nothing on this RMW.
        self.state.fetch_or(CLAIMED, Ordering::AcqRel) & CLAIMED == 0
    }

    fn claim_at(&self, proc: usize, slot: usize) -> Option<Site> {
        let mut s = 0;
        loop {
            if s & CLAIMED != 0 {
                return None;
            }
            // AcqRel: as `claim`; and the Release half publishes `home` to `abort`'s Acquire
            // read-modify-write.
            match self.state.compare_exchange_weak(
                s,
                s | CLAIMED | STARTED | home(proc, slot),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Some(self.site),
                // Claimed by a joiner, aborted, or a spurious failure: look again.
                Err(actual) => s = actual,
            }
        }
    }

    fn is_claimed(&self) -> bool {
        self.state.load(Ordering::Relaxed) & CLAIMED != 0
    }

    fn deal(&self) {
        // Relaxed: a hint for joiners (see `run_inline`); the inbox push that hands the
        // fiber over publishes it to its new proc, and `claim` still settles who runs it.
        self.state.fetch_or(DEALT, Ordering::Relaxed);
    }

    fn site(&self) -> Site {
        self.site
    }

    fn run(&self) {
        // SAFETY: the caller claimed the cell, so it alone touches `f`.
        let f = self
            .f
            .with_mut(|f| unsafe { (*f).take() })
            .expect("pcml: a fiber body ran twice");
        let join = &self.join;
        if self.is_aborted() {
            // Cancelled before it began: it never runs.
            drop(f);
            join.complete(Err(JoinError::aborted(join.id)));
            return;
        }
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(v) => join.complete(Ok(v)),
            Err(p) if worker::context().is_some_and(|c| c.is_shutting_down()) => {
                // The fiber is being dropped at shutdown: record that, then let the unwind
                // reach the coroutine's root.
                join.complete(Err(JoinError::cancelled(join.id)));
                resume_unwind(p);
            }
            Err(p) if crate::sched::panic::is_host_abort(p.as_ref()) => {
                // Run inline on a fiber that was cancelled: it goes with its host.
                join.complete(Err(JoinError::aborted(join.id)));
                resume_unwind(p);
            }
            Err(p) => join.complete(Err(crate::sched::panic::join_error(join.id, p))),
        }
    }

    fn cancel(&self) {
        // SAFETY: the caller claimed the cell.
        let f = self.f.with_mut(|f| unsafe { (*f).take() });
        complete_cancelled(&self.join, f);
    }
}

impl<F, T> JoinTarget<T> for FiberCell<F, T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    fn state(&self) -> &JoinState<T> {
        &self.join
    }

    fn run_inline(&self) -> bool {
        // A fiber dealt to another proc starts there, beside the fibers dealt with it (its
        // partner, likely): a joiner that ran it here first would split them. Seen late (a
        // joiner on another proc racing with the deal), the claim still settles who runs it.
        // Relaxed: as in `deal`.
        if self.state.load(Ordering::Relaxed) & DEALT != 0 {
            return false;
        }
        worker::run_inline(self, self.join.id, self.runtime, self.proc)
    }

    fn abort(&self) {
        // AcqRel: the Acquire half pairs with `claim_at`'s Release, so `home` is the
        // starter's; the Release half publishes the flag to the starter's Acquire.
        let prev = self.state.fetch_or(ABORT, Ordering::AcqRel);
        if prev & ABORT != 0 || self.join.is_done() {
            // Aborted already, or nothing left to cancel.
            return;
        }
        if prev & STARTED != 0 {
            let home = prev >> HOME_SHIFT;
            worker::abort_fiber(self.runtime, home & 0xffff, home >> 16, self.join.id);
        }
        // Not started (or run inline by a joiner): the body sees the flag when it begins.
    }

    unsafe fn release(&self) {
        // SAFETY: as the trait requires.
        unsafe { self.release_ref() }
    }

    fn join_held(&self) -> Option<Result<T, JoinError>> {
        if self.proc != ANY_PROC || self.is_aborted() {
            // Placed on a proc; or cancelled, and then `run_inline` (or the proc) finds
            // that out.
            return None;
        }
        let me = self as *const Self as *const ();
        let outcome = worker::run_held(me, self.join.id, |held| {
            // The held reference was never published and the joiner owns the handle's: they
            // are the only two, so once the body has run the joiner frees the cell itself
            // (below), with no count to settle.
            held.forget();
            // SAFETY: `run_held` took the only other reference to this unstarted fiber off
            // its proc, so the joiner alone touches `f`.
            let f = self
                .f
                .with_mut(|f| unsafe { (*f).take() })
                .expect("pcml: a fiber body ran twice");
            match catch_unwind(AssertUnwindSafe(f)) {
                Ok(v) => Ok(v),
                // Unwound by shutdown while inlined, or by the joiner's cancellation: let the
                // unwind reach the joiner's root.
                // The handle's reference is then the only one left (the held one is
                // forgotten), and its drop on the way frees the cell.
                Err(p)
                    if worker::context().is_some_and(|c| c.is_shutting_down())
                        || crate::sched::panic::is_host_abort(p.as_ref()) =>
                {
                    self.refs.set(1);
                    resume_unwind(p)
                }
                Err(p) => Err(crate::sched::panic::join_error(self.join.id, p)),
            }
        })?;
        // Read before the cell is freed below: the log line comes after.
        let id = self.join.id;
        if self.join.is_untouched() {
            // SAFETY: the joiner holds the only reference left (the handle's; the held one
            // was forgotten above) and gives it up here, as `join_held` promises. Nothing in
            // the cell needs dropping: `f` was taken, and the join state holds nothing.
            unsafe { self.free_memory() };
        } else {
            // The handle was polled as a future before it was joined: it left a waker.
            // SAFETY: as above.
            unsafe { self.free() };
        }
        // Ended without its join state (the joiner takes the outcome straight).
        crate::log::exited(id, outcome.as_ref().err());
        Some(outcome)
    }
}

/// The cell of a fiber spawned with no join handle ([`spawn_unjoined`]): its closure and its
/// id, nothing else. Its only reference is its runnable's [`BodyPtr`], so it keeps no count,
/// no join state and no claim flag: nobody can join it or run it inline, and whoever holds the
/// runnable (its proc, or a thief) runs it or drops it. That spares an actor's fiber the
/// handle's count and detach and the join state's completion: four atomic read-modify-writes.
///
/// # Invariants
/// - Only the holder of the one reference touches the cell; `f` is `None` once it has run or
///   been cancelled ("claimed").
/// - The cell is heap-allocated (or written into a proc's [`SpareCell`]) and freed by
///   `release`, through the freeing proc's [`SpareCell`] when it has room.
struct LoneFiber<F> {
    id: ThreadId,
    /// Where it was spawned (for dumps).
    site: Site,
    /// Taken once, by `run` or `cancel`.
    f: PlainCell<Option<F>>,
}

// SAFETY: the cell is reached only by the holder of its one reference, which moves between
// threads with the runnable (`F: Send`).
unsafe impl<F: Send> Sync for LoneFiber<F> {}

impl<F> LoneFiber<F> {
    fn take(&self) -> Option<F> {
        // SAFETY: only the holder of the one reference calls this (invariants).
        self.f.with_mut(|f| unsafe { (*f).take() })
    }
}

// SAFETY: the cell lives in a heap block owned by its one reference, which `release` frees.
unsafe impl<F> FiberBody for LoneFiber<F>
where
    F: FnOnce() + Send,
{
    fn claim(&self) -> bool {
        // No race to settle: the holder of the only reference alone may run the body.
        !self.is_claimed()
    }

    fn is_claimed(&self) -> bool {
        // SAFETY: only the holder of the one reference calls this (invariants).
        self.f.with(|f| unsafe { (*f).is_none() })
    }

    fn site(&self) -> Site {
        self.site
    }

    fn run(&self) {
        let f = self.take().expect("pcml: a fiber body ran twice");
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(()) => crate::log::exited(self.id, None),
            Err(p) => {
                if worker::context().is_some_and(|c| c.is_shutting_down()) {
                    // Dropped at shutdown: let the unwind reach the coroutine's root.
                    resume_unwind(p);
                }
                let e = crate::sched::panic::join_error(self.id, p);
                crate::log::exited(self.id, Some(&e));
                crate::sched::join::report_unobserved(&e);
            }
        }
    }

    fn cancel(&self) {
        let f = self.take();
        // As `FiberCell::cancel`: a panicking destructor must not stop the shutdown.
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| drop(f))) {
            crate::sched::join::report_unobserved(&crate::sched::panic::join_error(self.id, p));
        }
    }

    unsafe fn release(&self) {
        let cell = self as *const Self;
        // SAFETY: the caller gave up the only reference, so nobody uses the cell any more; it
        // was made by `place_cell` (`spawn_unjoined`) and is dropped once, here, then freed.
        unsafe {
            std::ptr::drop_in_place(cell.cast_mut());
            free_cell_memory(cell);
        }
    }
}

/// Spawns a fiber running `f` with no join handle and no join state ([`LoneFiber`]): the
/// lightest fiber, for an actor's body, which reports its own end. A panic that escapes `f`
/// is reported as an unjoined thread's is. Only on a proc with room for a fiber (the common
/// case: an actor spawned by an actor); otherwise it gives `f` back, for [`spawn`], which
/// places it or says why it cannot.
pub(crate) fn spawn_unjoined<F>(f: F, site: Site) -> Result<(), F>
where
    F: FnOnce() + Send + 'static,
{
    let Some(ctx) = worker::context() else {
        return Err(f);
    };
    if check_on_proc(ctx).is_err() {
        return Err(f);
    }
    let id = ThreadId::next();
    crate::log::spawned(id, crate::log::Kind::Fiber, site);
    let value = LoneFiber {
        id,
        site,
        f: PlainCell::new(Some(f)),
    };
    let cell = place_cell(Some(ctx.spare_cell()), value);
    let fiber = NewFiber {
        id,
        main: false,
        // SAFETY: the cell is alive and this is its one reference.
        body: unsafe { BodyPtr::from_raw(cell as NonNull<dyn FiberBody>) },
    };
    // Counts it live unless it is held (see `Context::hold_new`).
    ctx.hold_new(fiber);
    Ok(())
}

/// The runtime of the calling thread: a proc's, or a blocking-pool thread's.
///
/// Calls `f` with it: on a proc by reference (no reference count traffic on the spawn path),
/// on a blocking-pool thread through a clone.
fn with_current_shared<R>(f: impl FnOnce(Option<&Arc<Shared>>) -> R) -> R {
    match worker::context() {
        Some(ctx) => f(Some(&ctx.shared)),
        None => f(blocking::current_shared().as_ref()),
    }
}

/// The runtime of the calling thread (a proc's or a blocking-pool thread's), if any.
pub(crate) fn current_runtime() -> Option<Arc<Shared>> {
    with_current_shared(|s| s.cloned())
}

#[cold]
#[inline(never)]
fn no_runtime(what: &str) -> ! {
    panic!("{what} called outside a pcml runtime; start one with pcml::run or Runtime::block_on")
}

/// Whether a spawn by the calling thread comes from a destructor run by a runtime's shutdown
/// off its procs (`Runtime`'s drop of the tasks and fibers the procs left), where there is no
/// current runtime and none left to run a new thread: see [`cancelled_at_shutdown`].
#[inline]
fn spawning_at_shutdown() -> bool {
    crate::sched::blocker::ShutdownDrops::active()
}

/// The handle of a thread spawned by a destructor that a runtime's shutdown runs off its
/// procs: the thread can never run (the procs are gone), so it is cancelled at once, as the
/// threads the shutdown drops are. `body` (the closure or future) is dropped here, and a
/// destructor of it that panics is the thread's outcome, as in [`FiberBody::cancel`]. No
/// panic ("called outside a pcml runtime") and no error: a destructor cannot handle one, and
/// a panic in it aborts the process if another panic is unwinding.
#[cold]
#[inline(never)]
fn cancelled_at_shutdown<B, T>(body: B, kind: crate::log::Kind, site: Site) -> JoinHandle<T>
where
    T: Send + 'static,
{
    let id = ThreadId::next();
    crate::log::spawned(id, kind, site);
    let join = JoinState::new(id);
    let handle = JoinHandle::new(join.clone());
    complete_cancelled(&join, body);
    handle
}

/// Completes `join` as cancelled, dropping the thread's `body` (closure or future) first. A
/// destructor of it that panics is the thread's outcome instead; it must not stop the
/// shutdown (or the spawn) that cancels the thread.
fn complete_cancelled<B, T>(join: &JoinState<T>, body: B) {
    let outcome = match catch_unwind(AssertUnwindSafe(|| drop(body))) {
        Ok(()) => JoinError::cancelled(join.id),
        Err(p) => crate::sched::panic::join_error(join.id, p),
    };
    join.complete(Err(outcome));
}

/// `FiberCell::proc` for a fiber that may run on any proc.
const ANY_PROC: usize = usize::MAX;

/// Makes a fiber's cell, in `spare`'s block if it has one that fits.
#[inline(always)]
fn new_fiber<F, T>(
    f: F,
    runtime: u64,
    proc: usize,
    spare: Option<&SpareCell>,
    site: Site,
) -> (NewFiber, JoinHandle<T>)
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let id = ThreadId::next();
    crate::log::spawned(id, crate::log::Kind::Fiber, site);
    let value = FiberCell {
        refs: RefCount::new(2),
        join: JoinState::new_inline(id),
        runtime,
        proc,
        state: AtomicUsize::new(0),
        site,
        f: PlainCell::new(Some(f)),
    };
    let cell = place_cell(spare, value);
    // SAFETY: the cell is alive, and its count of two covers exactly these two references;
    // its address is a multiple of 8 (it holds an `AtomicUsize`).
    unsafe {
        (
            NewFiber {
                id,
                main: false,
                body: BodyPtr::from_raw(cell as NonNull<dyn FiberBody>),
            },
            JoinHandle::from_counted(cell as NonNull<dyn JoinTarget<T>>),
        )
    }
}

/// Checks that a fiber could get a stack now.
fn check_capacity(shared: &Shared) -> Result<(), SpawnError> {
    check_limit(shared)?;
    worker::reserve_stack(shared).map_err(no_stack)
}

/// Checks the runtime's `max_fibers`.
#[inline]
fn check_limit(shared: &Shared) -> Result<(), SpawnError> {
    if shared.running_fibers.load(Ordering::Relaxed) >= shared.max_fibers {
        return Err(SpawnError::FiberLimit {
            max_fibers: shared.max_fibers,
        });
    }
    Ok(())
}

#[cold]
fn no_stack(e: NoStack) -> SpawnError {
    match e {
        NoStack::Cap { cap } => SpawnError::StackCap {
            cap,
            max_map_count: stack::max_map_count(),
        },
        NoStack::Mmap(e) => SpawnError::StackMap(e),
    }
}

/// [`check_capacity`] on a proc, through its context.
#[inline]
fn check_on_proc(ctx: &worker::Context) -> Result<(), SpawnError> {
    check_limit(&ctx.shared)?;
    ctx.reserve_stack().map_err(no_stack)
}

/// Spawns a fiber on the calling proc, which has checked its capacity ([`check_on_proc`]).
#[inline(always)]
fn spawn_here<F, T>(ctx: &worker::Context, f: F, site: Site) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (fiber, handle) = new_fiber(f, ctx.shared.id, ANY_PROC, Some(ctx.spare_cell()), site);
    // Counts it live unless it is held (see `Context::hold_new`).
    ctx.hold_new(fiber);
    handle
}

#[cold]
#[inline(never)]
fn spawn_failed(e: SpawnError) -> ! {
    panic!("{e}")
}

/// Spawns a fiber running `f`, or says why it cannot.
///
/// The fiber is unstarted until a proc picks it up (any idle proc may steal it; see also [the
/// held fiber](crate::fiber#the-held-fiber)); it gets its stack when it first runs. Fails when
/// no stack could be had now (see the crate docs on the fiber cap) or outside a runtime. In a
/// destructor that a runtime's shutdown runs it returns a handle of a fiber cancelled at once
/// (see [what a destructor may do at shutdown](crate::sched#what-a-destructor-may-do-at-shutdown)).
///
/// ```
/// pcml::run(|| {
///     let h = pcml::try_spawn(|| "hi").expect("a stack is free");
///     assert_eq!(h.join().unwrap(), "hi");
/// });
/// assert!(matches!(pcml::try_spawn(|| ()), Err(pcml::SpawnError::NoRuntime)));
/// ```
#[track_caller]
pub fn try_spawn<F, T>(f: F) -> Result<JoinHandle<T>, SpawnError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    try_spawn_at(f, Location::caller())
}

/// [`try_spawn`] with the spawn site given.
#[inline]
pub(crate) fn try_spawn_at<F, T>(f: F, site: Site) -> Result<JoinHandle<T>, SpawnError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    if let Some(ctx) = worker::context() {
        check_on_proc(ctx)?;
        return Ok(spawn_here(ctx, f, site));
    }
    let Some(shared) = blocking::current_shared() else {
        if spawning_at_shutdown() {
            return Ok(cancelled_at_shutdown(f, crate::log::Kind::Fiber, site));
        }
        return Err(SpawnError::NoRuntime);
    };
    check_capacity(&shared)?;
    let (fiber, handle) = new_fiber(f, shared.id, ANY_PROC, None, site);
    shared.count_live(1);
    // Off the procs (a blocking-pool thread): through the injector.
    shared.push_injector(Runnable::Fiber(fiber));
    Ok(handle)
}

/// Spawns a fiber running `f`.
///
/// # Panics
/// Outside a runtime, or when no fiber stack can be had, with a message that says which limit
/// was hit and how to raise it; see [`try_spawn`] for the error value instead. Not in a
/// destructor that a runtime's shutdown runs: the fiber is then cancelled at once (see [what a
/// destructor may do at shutdown](crate::sched#what-a-destructor-may-do-at-shutdown)).
///
/// ```
/// pcml::run(|| {
///     let hs: Vec<_> = (0..100).map(|i| pcml::spawn(move || i * i)).collect();
///     let sum: i32 = hs.into_iter().map(|h| h.join().unwrap()).sum();
///     assert_eq!(sum, 328350);
/// });
/// ```
#[track_caller]
pub fn spawn<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    spawn_at(f, Location::caller())
}

/// [`spawn`] with the spawn site given.
#[inline(always)]
pub(crate) fn spawn_at<F, T>(f: F, site: Site) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    if let Some(ctx) = worker::context() {
        // On a proc (the common case), without the `Result` of `try_spawn`.
        if let Err(e) = check_on_proc(ctx) {
            spawn_failed(e)
        }
        return spawn_here(ctx, f, site);
    }
    try_spawn_at(f, site).unwrap_or_else(|e| spawn_failed(e))
}

/// Spawns a fiber that starts and stays on proc `proc` (explicit placement, as the papers'
/// benchmarks use), or says why it cannot.
///
/// ```
/// let rt = pcml::Runtime::builder().procs(2).build().unwrap();
/// rt.block_on(|| {
///     let h = pcml::try_spawn_on(1, pcml::current_proc).unwrap();
///     assert_eq!(h.join().unwrap(), Some(1));
///     assert!(pcml::try_spawn_on(2, || ()).is_err());
/// })
/// .unwrap();
/// ```
#[track_caller]
pub fn try_spawn_on<F, T>(proc: usize, f: F) -> Result<JoinHandle<T>, SpawnError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    try_spawn_on_at(proc, f, Location::caller())
}

/// [`try_spawn_on`] with the spawn site given.
pub(crate) fn try_spawn_on_at<F, T>(
    proc: usize,
    f: F,
    site: Site,
) -> Result<JoinHandle<T>, SpawnError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    with_current_shared(|shared| {
        let Some(shared) = shared else {
            if spawning_at_shutdown() {
                return Ok(cancelled_at_shutdown(f, crate::log::Kind::Fiber, site));
            }
            return Err(SpawnError::NoRuntime);
        };
        let procs = shared.procs.len();
        if proc >= procs {
            return Err(SpawnError::NoSuchProc { proc, procs });
        }
        check_capacity(shared)?;
        let (fiber, handle) = new_fiber(f, shared.id, proc, None, site);
        shared.count_live(1);
        shared.send_to(proc, InboxMsg::Start(fiber));
        Ok(handle)
    })
}

/// Spawns a fiber that starts and stays on proc `proc`.
///
/// `proc` is a proc of the runtime, not an OS thread: on a runtime with more procs than
/// OS threads ([`Builder::carrier_threads`](crate::Builder::carrier_threads)) the fiber runs
/// in proc `proc`'s turns on the thread that carries it, and a message to a fiber of another
/// proc of the same thread wakes no OS thread.
///
/// ```
/// let rt = pcml::Runtime::builder().procs(2).build().unwrap();
/// let on = rt.block_on(|| pcml::spawn_on(1, pcml::current_proc).join().unwrap());
/// assert_eq!(on.unwrap(), Some(1));
/// ```
///
/// # Panics
/// As [`spawn`], and if the runtime has no proc `proc`.
#[track_caller]
pub fn spawn_on<F, T>(proc: usize, f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    try_spawn_on_at(proc, f, Location::caller()).unwrap_or_else(|e| panic!("{e}"))
}

/// Spawns an async task: a stackless thread that may run on any proc and migrate between them.
///
/// Use tasks for very many threads (each costs only its future); use `.await` inside them.
///
/// # Panics
/// Outside a pcml runtime; not in a destructor that a runtime's shutdown runs, where the task
/// is cancelled at once (see [what a destructor may do at
/// shutdown](crate::sched#what-a-destructor-may-do-at-shutdown)).
///
/// ```
/// pcml::run(|| {
///     let t = pcml::spawn_task(async {
///         let inner = pcml::spawn_task(async { 20 });
///         inner.await.unwrap() + 1
///     });
///     assert_eq!(t.join().unwrap(), 21);
/// });
/// ```
#[track_caller]
pub fn spawn_task<F>(fut: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    spawn_task_at(fut, Location::caller())
}

/// [`spawn_task`] with the spawn site given.
#[inline]
pub(crate) fn spawn_task_at<F>(fut: F, site: Site) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    with_current_shared(|shared| match shared {
        Some(shared) => crate::task::spawn_on_runtime(shared, fut, site),
        None if spawning_at_shutdown() => cancelled_at_shutdown(fut, crate::log::Kind::Task, site),
        None => no_runtime("pcml::spawn_task"),
    })
}

/// [`spawn_task`] without a join handle, for threads that report their own end (actors).
///
/// # Panics
/// Outside a pcml runtime.
pub(crate) fn spawn_task_detached<F>(fut: F, before: impl FnOnce(&crate::task::TaskRef), site: Site)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    with_current_shared(|shared| match shared {
        Some(shared) => crate::task::spawn_detached_on_runtime(shared, fut, before, site),
        None if spawning_at_shutdown() => {
            // Nobody joins it: its outcome is dropped with the handle.
            drop(cancelled_at_shutdown::<F, ()>(
                fut,
                crate::log::Kind::Task,
                site,
            ));
        }
        None => no_runtime("pcml::actor::spawn_async"),
    })
}

/// Runs `f` on a side pool of OS threads, so a blocking system call or a long computation does
/// not stall a proc. Its handle joins like any other.
///
/// # Panics
/// Outside a pcml runtime; not in a destructor that a runtime's shutdown runs, where the job
/// is cancelled at once (see [what a destructor may do at
/// shutdown](crate::sched#what-a-destructor-may-do-at-shutdown)).
///
/// ```
/// pcml::run(|| {
///     let h = pcml::spawn_blocking(|| std::fs::metadata(".").is_ok());
///     assert!(h.join().unwrap());
/// });
/// ```
#[track_caller]
pub fn spawn_blocking<F, T>(f: F) -> JoinHandle<T>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let Some(shared) = current_runtime() else {
        if spawning_at_shutdown() {
            return cancelled_at_shutdown(f, crate::log::Kind::Blocking, Location::caller());
        }
        no_runtime("pcml::spawn_blocking")
    };
    let id = ThreadId::next();
    crate::log::spawned(id, crate::log::Kind::Blocking, Location::caller());
    let join = JoinState::new(id);
    let handle = JoinHandle::new(join.clone());
    let mut job = BlockingJob { f: Some(f), join };
    BlockingPool::submit(
        &shared,
        Box::new(move || {
            let f = job.f.take().expect("pcml: a blocking job ran twice");
            let outcome = catch_unwind(AssertUnwindSafe(f))
                .map_err(|p| crate::sched::panic::join_error(id, p));
            job.join.complete(outcome);
        }),
    );
    handle
}

/// A `spawn_blocking` job and its join state. Dropped unrun (the pool's shutdown drops what
/// is still queued), it completes the join as cancelled, so its joiner does not wait for ever.
struct BlockingJob<F, T> {
    /// Taken by the run.
    f: Option<F>,
    join: Arc<JoinState<T>>,
}

impl<F, T> Drop for BlockingJob<F, T> {
    fn drop(&mut self) {
        if let Some(f) = self.f.take() {
            complete_cancelled(&self.join, f);
        }
    }
}

/// Lets the other runnable threads of this proc run, then continues.
///
/// # Panics
/// Outside a fiber: in an async task `.await` [`yield_async`] instead; outside a runtime there
/// is nothing to yield to.
///
/// ```
/// pcml::run(|| {
///     let h = pcml::spawn(|| 1);
///     while !h.is_finished() {
///         pcml::yield_now();
///     }
/// });
/// ```
#[inline]
pub fn yield_now() {
    if worker::yield_fiber() {
        return;
    }
    yield_misuse()
}

#[cold]
fn yield_misuse() -> ! {
    match worker::current() {
        Some(Current::Task { .. }) => panic!(
            "pcml::yield_now called in an async task, which cannot suspend its proc; use `pcml::yield_async().await`"
        ),
        _ => panic!(
            "pcml::yield_now called outside a pcml fiber; it only works inside pcml::run, Runtime::block_on or a spawned fiber"
        ),
    }
}

/// A future that is pending once, letting other threads run: `yield_now` for async code.
///
/// ```
/// pcml::run(|| {
///     pcml::spawn_task(async {
///         pcml::yield_async().await;
///     })
///     .join()
///     .unwrap();
/// });
/// ```
pub fn yield_async() -> YieldAsync {
    YieldAsync { yielded: false }
}

/// The future of [`yield_async`].
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct YieldAsync {
    yielded: bool,
}

impl Future for YieldAsync {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.yielded {
            return Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Ends the calling pcml thread now (Deleuze's `halt`); destructors of its stack run. Its
/// joiner gets a [`JoinError`] for which `is_exit()` holds. In the main fiber, `block_on`
/// returns `RuntimeError::MainExited`.
///
/// # Panics
/// Outside a pcml thread.
///
/// ```
/// pcml::run(|| {
///     let h = pcml::spawn(|| -> u8 {
///         pcml::exit();
///     });
///     assert!(h.join().unwrap_err().is_exit());
/// });
/// ```
pub fn exit() -> ! {
    let in_pcml_thread = matches!(
        worker::current(),
        Some(Current::Fiber { .. } | Current::Task { .. })
    ) || crate::sched::panic::IN_BLOCKING_JOB.with(|b| b.get());
    if !in_pcml_thread {
        panic!("pcml::exit called outside a pcml thread: there is no pcml thread to end");
    }
    resume_unwind(Box::new(ExitSignal))
}

/// The id of the calling pcml thread.
///
/// # Panics
/// Outside a fiber or task; see [`try_current`].
///
/// ```
/// pcml::run(|| println!("I am {}", pcml::current()));
/// ```
pub fn current() -> ThreadId {
    try_current().unwrap_or_else(|| {
        panic!("pcml::current called outside a pcml fiber or task; use pcml::try_current to ask")
    })
}

/// The id of the calling pcml thread, or `None` outside a fiber or task.
///
/// ```
/// assert!(pcml::try_current().is_none());
/// assert!(pcml::run(pcml::try_current).is_some());
/// ```
pub fn try_current() -> Option<ThreadId> {
    match worker::current()? {
        Current::Fiber { id, .. } | Current::Task { id, .. } => Some(id),
        Current::Scheduler => None,
    }
}
