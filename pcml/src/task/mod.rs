//! Async tasks: stackless threads, i.e. Rust futures (seed 001's indirect style, seed 002's heap
//! frames).
//!
//! A task is a `Send + 'static` future that runs on the same procs as fibers. It holds no stack
//! of its own (its frame is the future's state, on the heap), so millions can exist at once,
//! and it migrates freely between procs: it is stealable whenever it is scheduled. Its waker
//! reschedules it on the waking proc's deque (or the runtime's injector from outside).
//!
//! A task is one allocation, a `TaskCell`: its state word, the future itself and its join
//! state. The run queue, the wakers and the join handle all point at that one cell (the design
//! of tokio's task cell and of Go's `g`), so spawning a task costs one allocation beyond what
//! the future itself allocates.
//!
//! # Invariants
//! - `state` moves `SCHEDULED -> RUNNING -> {IDLE, NOTIFIED, DONE}`, `IDLE -> SCHEDULED` (a
//!   wake-up), `NOTIFIED -> SCHEDULED` (the runner reschedules). Only the thread that moved it
//!   to `RUNNING` touches `future`, until it leaves `RUNNING`; after the procs stop, shutdown
//!   does.
//! - The future never moves once the cell is allocated (it is pinned in the cell).
//! - A task is in its runtime's registry from spawn until it is `DONE`, so shutdown can drop
//!   every unfinished future (breaking cycles through wakers stored in channels).

use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU32, AtomicUsize, Ordering};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use crossbeam_utils::CachePadded;
use slab::Slab;

use crate::ThreadId;
use crate::loom::PlainCell;
use crate::mp::SpinLock;
use crate::sched::join::{JoinState, JoinTarget};
use crate::sched::worker::{self, Runnable, Shared};

const IDLE: u8 = 0;
const SCHEDULED: u8 = 1;
const RUNNING: u8 = 2;
const NOTIFIED: u8 = 3;
const DONE: u8 = 4;

/// A spawned task, type-erased: what run queues and the registry hold.
pub(crate) type TaskRef = Arc<dyn Task>;

/// The operations of a task cell that do not depend on its future's type.
pub(crate) trait Task: Send + Sync {
    fn header(&self) -> &Header;
    /// Polls the task once. The caller moved it out of a run queue (state `SCHEDULED`);
    /// `this` is the caller's reference to this very task (to register it if it waits).
    fn run(&self, this: &TaskRef) -> TaskRun;
    /// Drops the future of an unfinished task. Only after the procs have stopped.
    fn drop_future(&self);
}

/// What every task has, whatever its future.
pub(crate) struct Header {
    pub(crate) id: ThreadId,
    /// See the module invariants.
    state: AtomicU8,
    /// The runtime's id (see `sched::registry`): a task holds no reference count on it.
    runtime: u64,
    /// The task's key in its registry (its slab key times `SHARDS`, plus its shard), or
    /// `NOT_REGISTERED`: a task is registered the first time a poll leaves it pending (tasks
    /// that finish in their first poll never are). Written only by the thread holding the
    /// task in `RUNNING`.
    registry_key: AtomicUsize,
    /// A scheduling hint, written by the proc that polls the task just before each poll: that
    /// proc's index and the length of its deque of new work then, packed by
    /// [`Header::set_polled_at`]. A wake-up on the same proc runs the task once the deque is
    /// back to that length (`sched::worker::Context::wake_here`): after the work the task
    /// spawned in that poll. Relaxed: a stale value only changes the order of ready work.
    polled_at: AtomicU32,
}

impl Header {
    /// Records that proc `proc` polls the task with `depth` items in its deque of new work
    /// (saturated at `u16::MAX`); a proc index past `u16::MAX - 1` records nothing usable.
    #[inline]
    pub(crate) fn set_polled_at(&self, proc: usize, depth: usize) {
        let proc = u32::try_from(proc)
            .unwrap_or(u32::MAX)
            .min(u32::from(u16::MAX));
        let depth = u32::try_from(depth)
            .unwrap_or(u32::MAX)
            .min(u32::from(u16::MAX));
        self.polled_at.store(proc << 16 | depth, Ordering::Relaxed);
    }

    /// The proc and deque length of [`Header::set_polled_at`]'s last record, or `None` if there
    /// is none.
    #[inline]
    pub(crate) fn polled_at(&self) -> Option<(usize, usize)> {
        let v = self.polled_at.load(Ordering::Relaxed);
        let proc = v >> 16;
        (proc != u32::from(u16::MAX)).then_some((proc as usize, (v & 0xffff) as usize))
    }
}

/// `Header::registry_key` of a task that never waited.
const NOT_REGISTERED: usize = usize::MAX;

/// What became of a task after one poll.
pub(crate) enum TaskRun {
    /// Pending and not woken: a waker holds it.
    Idle,
    /// Woken while it ran: run it again later.
    Reschedule,
    /// It completed.
    Finished,
}

/// One task: state, future and join state in one allocation. `J` is where its outcome goes:
/// a [`JoinState`] for a joinable task, [`Detached`] for one spawned with no handle.
pub(crate) struct TaskCell<F: Future, J = JoinState<<F as Future>::Output>> {
    header: Header,
    /// Touched only by the thread holding the task in `RUNNING`, or at shutdown.
    future: PlainCell<Option<F>>,
    join: J,
}

// SAFETY: `future` is reached by one thread at a time (the RUNNING protocol) and F is Send;
// the join state hands its output between threads (F::Output: Send).
unsafe impl<F: Future + Send, J: Sync> Sync for TaskCell<F, J> where F::Output: Send {}

/// Where a finished task's outcome goes.
pub(crate) trait Completion<T>: Send + Sync + 'static {
    /// Takes the outcome of the task (once).
    fn complete(&self, outcome: Result<T, crate::JoinError>);
}

impl<T: Send + 'static> Completion<T> for JoinState<T> {
    fn complete(&self, outcome: Result<T, crate::JoinError>) {
        JoinState::complete(self, outcome);
    }
}

/// The completion of a task spawned with no join handle: its output is dropped and a panic
/// is reported as an unjoined thread's is. No state and no atomic: nobody can join it.
pub(crate) struct Detached;

impl<T> Completion<T> for Detached {
    fn complete(&self, outcome: Result<T, crate::JoinError>) {
        if let Err(e) = outcome {
            crate::sched::join::report_unobserved(&e);
        }
    }
}

impl<F, J> TaskCell<F, J>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    J: Completion<F::Output>,
{
    const VTABLE: RawWakerVTable = RawWakerVTable::new(
        Self::waker_clone,
        Self::waker_wake,
        Self::waker_wake_by_ref,
        Self::waker_drop,
    );

    /// A waker that borrows `this` (no reference count taken) for the length of a poll.
    fn borrowed_waker(this: &Self) -> ManuallyDrop<Waker> {
        let raw = RawWaker::new(std::ptr::from_ref(this).cast(), &Self::VTABLE);
        // SAFETY: every task cell lives in an `Arc` (tasks are made only by `spawn_on_runtime`),
        // so `this` is the pointer `Arc::as_ptr` gives; the vtable's functions treat it as an
        // `Arc<Self>` that the waker owns; wrapping the waker in ManuallyDrop means this
        // borrowed one never releases the count it does not own, and `this` outlives the poll
        // it is used for.
        ManuallyDrop::new(unsafe { Waker::from_raw(raw) })
    }

    unsafe fn waker_clone(ptr: *const ()) -> RawWaker {
        // SAFETY: `ptr` came from an `Arc<Self>` alive while the waker is.
        unsafe { Arc::increment_strong_count(ptr.cast::<Self>()) };
        RawWaker::new(ptr, &Self::VTABLE)
    }

    unsafe fn waker_wake(ptr: *const ()) {
        // SAFETY: an owned waker owns one count of the Arc.
        let this = unsafe { Arc::from_raw(ptr.cast::<Self>()) };
        if Self::transition_to_scheduled(&this) {
            // The waker's own count goes to the run queue: no increment, no decrement (two
            // locked instructions that took two thirds of a wake-up's cycles).
            worker::push_task(this.header.runtime, this);
        }
    }

    unsafe fn waker_wake_by_ref(ptr: *const ()) {
        // SAFETY: the waker's count keeps the Arc alive; ManuallyDrop leaves it untouched.
        let this = ManuallyDrop::new(unsafe { Arc::from_raw(ptr.cast::<Self>()) });
        Self::wake_by_ref(&this);
    }

    unsafe fn waker_drop(ptr: *const ()) {
        // SAFETY: an owned waker owns one count of the Arc.
        drop(unsafe { Arc::from_raw(ptr.cast::<Self>()) });
    }

    fn wake_by_ref(this: &Arc<Self>) {
        if Self::transition_to_scheduled(this) {
            let task: TaskRef = this.clone();
            worker::push_task(this.header.runtime, task);
        }
    }

    /// A wake-up's state change: `IDLE -> SCHEDULED` (true: the caller must push the task to
    /// a run queue) or `RUNNING -> NOTIFIED` (false: the runner will reschedule it); false
    /// with no change if it is already scheduled, already noted, or finished.
    #[must_use]
    fn transition_to_scheduled(this: &Self) -> bool {
        let state = &this.header.state;
        let mut s = state.load(Ordering::Relaxed);
        loop {
            let next = match s {
                IDLE => SCHEDULED,
                RUNNING => NOTIFIED,
                // Already scheduled, already noted, or finished.
                _ => return false,
            };
            // AcqRel: Acquire pairs with the runner's Release CAS to IDLE (its poll's writes);
            // Release hands them on to the next runner.
            match state.compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return next == SCHEDULED,
                // State changed under us: look again.
                Err(actual) => s = actual,
            }
        }
    }
}

impl<F, J> Task for TaskCell<F, J>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    J: Completion<F::Output>,
{
    fn header(&self) -> &Header {
        &self.header
    }

    fn run(&self, this: &TaskRef) -> TaskRun {
        let state = &self.header.state;
        // Acquire: pairs with the Release that scheduled it, so the previous poll's writes to
        // `future` (on another proc, perhaps) are visible.
        let prev = state.load(Ordering::Acquire);
        debug_assert_eq!(prev, SCHEDULED);
        // A plain store, not a swap: nobody else writes a SCHEDULED state (a waker that finds
        // it SCHEDULED leaves it; shutdown runs after the procs stopped), so no write can come
        // between the load and the store. Wakers that load RUNNING afterwards CAS it to
        // NOTIFIED; our Release CAS below pairs with them. (Saves a locked instruction per
        // poll.)
        state.store(RUNNING, Ordering::Relaxed);
        let waker = Self::borrowed_waker(self);
        let mut cx = Context::from_waker(&waker);
        // SAFETY: we hold the task in RUNNING, so we are the only thread touching `future`;
        // the future is never moved out of the cell while it is Some (it is only dropped).
        let polled = self.future.with_mut(|f| match unsafe { &mut *f } {
            Some(fut) => {
                let fut = unsafe { Pin::new_unchecked(fut) };
                catch_unwind(AssertUnwindSafe(|| fut.poll(&mut cx)))
            }
            None => Ok(Poll::Pending),
        });
        let outcome = match polled {
            Ok(Poll::Pending) => None,
            Ok(Poll::Ready(v)) => Some(Ok(v)),
            Err(payload) => Some(Err(crate::sched::panic::join_error(
                self.header.id,
                payload,
            ))),
        };
        if let Some(outcome) = outcome {
            // SAFETY: still RUNNING. Dropped in place (no move of the future out first).
            self.future.with_mut(|f| unsafe { *f = None });
            // Release: nothing reads the future after DONE; orders the drop before it.
            state.store(DONE, Ordering::Release);
            self.join.complete(outcome);
            return TaskRun::Finished;
        }
        if self.header.registry_key.load(Ordering::Relaxed) == NOT_REGISTERED {
            // It may wait indefinitely now: shutdown must be able to find it. (Still RUNNING,
            // so no other thread can finish it and `remove` it meanwhile.)
            worker::register_task(this);
        }
        // Release: publishes this poll's writes to the next runner (Acquire swap above).
        match state.compare_exchange(RUNNING, IDLE, Ordering::Release, Ordering::Relaxed) {
            // Nobody woke it: it waits for its waker.
            Ok(_) => TaskRun::Idle,
            // Woken while running (NOTIFIED): we reschedule it.
            Err(_) => {
                // Release: pairs with the next runner's Acquire swap.
                state.store(SCHEDULED, Ordering::Release);
                TaskRun::Reschedule
            }
        }
    }

    fn drop_future(&self) {
        // SAFETY: the procs have stopped, so no thread holds the task in RUNNING.
        let fut = self.future.with_mut(|f| unsafe { (*f).take() });
        let unfinished = fut.is_some();
        drop(fut);
        self.header.state.store(DONE, Ordering::Release);
        if unfinished {
            self.join
                .complete(Err(crate::JoinError::cancelled(self.header.id)));
        }
    }
}

impl<F> JoinTarget<F::Output> for TaskCell<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn state(&self) -> &JoinState<F::Output> {
        &self.join
    }
}

/// Every live task of a runtime, sharded by the proc that registers it: a task that waits and
/// ends on one proc (the common case) touches only that proc's shard, so procs do not pass
/// the shards' cache lines to each other (a line's round trip between the procs of this VM
/// costs from about 40 ns to over 1 us).
pub(crate) struct TaskRegistry {
    /// Spin locks: a section is one slab insert or removal (a task that waits costs one
    /// atomic read-modify-write to register and one to forget; a mutex's release is another).
    /// Each on its own cache line.
    shards: Box<[CachePadded<SpinLock<Slab<TaskRef>>>]>,
}

const SHARDS: usize = 16;

impl TaskRegistry {
    pub(crate) fn new() -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(SpinLock::new(Slab::new())))
                .collect(),
        }
    }

    /// Registers `task`, in the calling proc's shard (procs past the 16th share shards).
    pub(crate) fn insert(&self, task: TaskRef) {
        let shard = worker::context().map_or(0, |c| c.index) % SHARDS;
        let key = self.shards[shard].lock().insert(task.clone());
        // The key says the shard too. Relaxed: read only by `remove`, which runs after the
        // task was scheduled (the scheduling push orders this store before it).
        task.header()
            .registry_key
            .store(key * SHARDS + shard, Ordering::Relaxed);
    }

    /// Forgets a finished task, if it was ever registered.
    pub(crate) fn remove(&self, task: &TaskRef) {
        let key = task.header().registry_key.load(Ordering::Relaxed);
        if key == NOT_REGISTERED {
            return;
        }
        let (shard, key) = (key % SHARDS, key / SHARDS);
        let removed = self.shards[shard].lock().try_remove(key);
        drop(removed);
    }

    /// Drops the future of every task still registered. Called once the procs have stopped.
    pub(crate) fn shutdown(&self) {
        for shard in self.shards.iter() {
            let tasks: Vec<TaskRef> = shard.lock().drain().collect();
            for t in tasks {
                t.drop_future();
            }
        }
    }
}

/// Spawns `fut` as a task of `shared`, scheduled from the current thread.
pub(crate) fn spawn_on_runtime<F>(shared: &Arc<Shared>, fut: F) -> crate::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let id = ThreadId::next();
    let cell = new_cell(shared, fut, JoinState::new_inline(id), id);
    shared.count_live(1);
    let task: TaskRef = cell.clone();
    worker::push_runnable(shared, Runnable::Task(task));
    crate::JoinHandle::new(cell)
}

/// Spawns `fut` as a task of `shared` with no join handle (an actor's body, which reports its
/// own end): no handle to make and drop, so one reference count and one join-state update
/// fewer per task. A panic that escapes `fut` is reported as an unjoined thread's would be.
pub(crate) fn spawn_detached_on_runtime<F>(shared: &Arc<Shared>, fut: F)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let id = ThreadId::next();
    let task: TaskRef = new_cell(shared, fut, JoinState::new_inline_detached(id), id);
    shared.count_live(1);
    worker::push_runnable(shared, Runnable::Task(task));
}

/// Spawns `fut` as a task with no join handle and no join state at all (see [`Detached`]):
/// the lightest task, for an actor's body, which reports its own end. Only from a proc of a
/// runtime (the common case: an actor spawned by an actor); elsewhere it returns `fut` back
/// for [`spawn_detached_on_runtime`]'s path.
pub(crate) fn spawn_unjoined<F>(fut: F) -> Result<(), F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let Some(ctx) = worker::context() else {
        return Err(fut);
    };
    let task: TaskRef = new_cell(&ctx.shared, fut, Detached, ThreadId::next());
    // On this proc: its own counter, with no second look-up of the context.
    ctx.count_live_here(1);
    worker::push_runnable(&ctx.shared, Runnable::Task(task));
    Ok(())
}

/// A task cell for `fut` in `shared`, not yet scheduled nor counted live (the caller counts it).
fn new_cell<F, J>(shared: &Arc<Shared>, fut: F, join: J, id: ThreadId) -> Arc<TaskCell<F, J>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    J: Completion<F::Output>,
{
    Arc::new(TaskCell {
        header: Header {
            id,
            state: AtomicU8::new(SCHEDULED),
            runtime: shared.id,
            registry_key: AtomicUsize::new(NOT_REGISTERED),
            polled_at: AtomicU32::new(u32::MAX),
        },
        future: PlainCell::new(Some(fut)),
        join,
    })
}
