//! Async tasks: stackless threads, i.e. Rust futures (Deleuze's indirect style, Farvardin's heap
//! frames).
//!
//! ```
//! pcml::run(|| {
//!     let (tx, rx) = pcml::chan::bounded::<u32>(4);
//!     let producer = pcml::spawn_task(async move {
//!         for i in 1..=4 {
//!             tx.send_async(i).await.unwrap();
//!         }
//!     });
//!     let consumer = pcml::spawn_task(async move {
//!         let mut sum = 0;
//!         while let Ok(v) = rx.recv_async().await {
//!             sum += v;
//!         }
//!         sum
//!     });
//!     producer.join().unwrap();
//!     assert_eq!(consumer.join().unwrap(), 10);
//! });
//! ```
//!
//! A task is a `Send + 'static` future that runs on the same procs as fibers. It holds no stack
//! of its own (its frame is the future's state, on the heap), so millions can exist at once,
//! and it migrates freely between procs: it is stealable whenever it is scheduled. Its waker
//! reschedules it on the waking proc's deque (or the runtime's injector from outside).
//!
//! The deque runs the newest first, so two tasks that talk stay on one proc, each woken on top
//! of the queue and run at the proc's next turn; every 244th turn the proc runs its oldest
//! queued item instead, so work queued below such a pair is not held up until the pair stops.
//! An idle proc takes another proc's queued tasks only when that proc has more than the one
//! its next turn runs (or its thread computes on with one queued: see the `sched` docs,
//! "Placement"). It used to count that one as work too, so beside a talking pair it never
//! parked: it spun on the pair's queue, slowing the proc that ran it, and now and then took a
//! task of the pair away.
//!
//! A task is one allocation, a `TaskCell`: its state word, its reference count, the future
//! itself and its join state. The run queue, the wakers and the join handle all point at that
//! one cell (the design of tokio's task cell and of Go's `g`), so spawning a task costs one
//! allocation beyond what the future itself allocates.
//!
//! The cell keeps its own reference count (`Header::refs`), not an `Arc`'s: freeing a cell
//! whose last reference is dropped by its only holder (the common end: the proc that ran the
//! task to completion) takes no atomic read-modify-write, where an `Arc` takes two (its strong
//! count, then its weak count). Those two locked instructions were about a tenth of all those
//! an async actor executes (skynet depth 6, examples/actors.rs).
//!
//! # Awaiting a task just spawned
//! An `.await` of the join handle of a task that has not started, and that its proc would
//! run next (the newest work queued there, as a task spawned just before the `.await` is),
//! polls that task right there, inside the awaiting task's poll: Cilk's work-first join, as
//! a fiber's [`join`](crate::JoinHandle::join) of an unstarted fiber does. If the child
//! finishes, the awaiting task goes on in the same poll, where it would otherwise register
//! its waker, go idle, be woken by the child's end and be polled again. The child is still a
//! task of its own: it has its own id ([`current`](crate::current)), its panic or an abort
//! reaches the handle as a [`JoinError`](crate::JoinError), and if it waits, it is woken and
//! polled on its own like any task. Such runs nest at most 8 deep on a proc's stack, and
//! about one `.await` in 128 in a row leaves the child to the queue, so a task that spawns
//! and awaits in a loop still gives its proc turns for its timers, I/O and other work.
//!
//! A parent that spawns its children and then awaits them in order awaits first the oldest,
//! which is below its siblings in the queue. So while the newest work queued on the proc is a
//! task queued during the awaiting task's poll, that task runs there first, and so on down
//! to the awaited one: the proc's next turns would run them in that order anyway once the
//! parent went idle, and the parent would then be woken by its first child and polled again
//! only to find them all done. A tree of such tasks (tokio's skynet) then runs depth first
//! with every node polled once. It stops at work older than the poll, a fiber, or a task
//! taken by another proc (then the parent waits for it as usual), under the same bounds.
//!
//! # What it costs
//! Instructions per operation on one proc, counted by callgrind as the difference of two run
//! lengths (`valgrind --tool=callgrind` on the examples named, built `--release`, on mimalloc
//! as the benchmark runs), against the same program on a tokio 1.54 `current_thread`
//! runtime (counts move by about 1% from run to run: the scheduler's spinning depends on
//! timing):
//!
//! | operation | pcml | tokio | example |
//! | --- | ---: | ---: | --- |
//! | spawn a task and await its `JoinHandle` | 552 | 1,735 | `taskspawn [tokio] N` |
//! | skynet, per leaf, sums returned through join handles | 906 | 1,646 | `skynet N tasks-once` / `tokio-once` |
//! | skynet, per leaf, sums sent over channels (`send_evt(..).await`) | 1,990 | - | `skynet N chan-once` |
//! | ping-pong round trip, `recv_async`/`send_async` | 1,079 | 2,113 | `taskpp async N` / `taskpp tokio N` |
//! | ping-pong round trip, `recv_evt().await`/`send_evt(v).await` | 1,169 | 2,113 | `taskpp N` |
//!
//! (Measured 2026-11-25, runs of 20,000 and 60,000 operations, or 10,000 and 100,000 leaves;
//! the skynet row of join handles 2026-12-01, when it had grown to 1,063 (tokio 1,646): the
//! siblings run in the awaiting task's poll took it to 965, and the 3-ary tree of 729 leaves
//! from 1,112 to 864 instructions a task (runs of 20 and 60 trees), while a spawn and await
//! went from 596 to 605 (the test for siblings above the awaited task). A spawn and await
//! cost 1,186 before the work-first join above; the other rows fell by 4% to 9% when the
//! drop of a completed `.await`'s sync future became a test with no call and the worker's
//! turn was kept inline. The channel rows 2026-12-01, runs of 100,000 and 200,000 round
//! trips, and 10,000 and 100,000 leaves: from 1,699, 1,544 and 2,353 when the small functions
//! of a wait (the offer record's, the budget's, the sync future's `poll`) were made inline
//! across the crate boundary, a queued offer's memory came to be kept by the proc instead of
//! a thread-local cache, and a waker's wake-up was made inline in the partner's `unblock`;
//! then 2026-12-02, the same lengths, from 1,422, 1,334 and 2,163 when the worker's turn
//! came to run a task inline, an async wait's offer to be taken inline, and a wake-up on a
//! one-proc runtime to take a path of its own: see `sched::worker`'s `wake_here`. All rows
//! 2026-12-02 again, runs of 20,000 and 60,000 round trips or spawns, and 10,000 and 100,000
//! leaves: from 1,201, 1,291, 559, 914 and 2,110 on the day's `main` (the earlier figures
//! had drifted) when a one-proc turn came to read its empty private queues without their
//! `RefCell` borrow flags and to take the task on top of its own stack as a `TaskRef`
//! (`sched::worker`'s `pop_own_task`), not as an `Option<Runnable>` moved through the stack
//! and tested for a fiber twice. That was 15% in time: `pcml-bench --only pingpong --procs
//! 1,2 --no-peers --runs 6 --rounds 2` under `chrt -f 1`, four runs alternated with the
//! former build at load 8 to 10, put the `.await` ping-pong on one proc at 20.3 to 20.7 M
//! messages a second (medians of the runs) against 17.4 to 17.9 M, 1.74x to 1.76x tokio's
//! `current_thread` rate in the same runs against 1.50x to 1.54x.)
//!
//! (tokio's ping-pong is over two `mpsc::channel(1)`s: it has no rendezvous channel.) So a
//! value handed to a parent is cheapest through the child's join handle, and a hot loop on
//! one channel is cheapest with `recv_async`/`send_async`: an `.await` of a channel event pays
//! for the event itself (an `Arc` clone of the channel, the sync future's state and a call
//! through the inline event's table; the event is held without a box, see the `chan` docs),
//! about 30 instructions an await, in exchange for taking part in choices, timeouts and
//! wrappers (it was about 250 with a boxed event: 2,657 a round trip, and skynet over
//! channels 2,919 a leaf).
//!
//! A task that waits leaves a clone of its waker with what it waits for, and the run queue's
//! reference to the task, which the poll began with, is dropped when the poll goes idle: an
//! increment and a decrement of the cell's count, two locked instructions a wait. Instead, the
//! first waker clone made in a poll on the polling proc takes over the run queue's count (the
//! proc offers it in a slot of its own before the poll and sees after the poll whether it was
//! taken). Only registered tasks offer it (those that have waited before), so the registry's
//! reference keeps the cell alive through the poll even if that waker is woken and dropped on
//! another proc meanwhile. The `.await` ping-pong went from 20.1 to 16.1 locked instructions a
//! round trip (callgrind per-instruction counts against the binary's `lock`-prefixed
//! instructions, runs of 20,000 and 60,000 round trips) at the same instruction count (1,689
//! before, 1,689 after). The rest: eight are the `Arc` clone and drop of the channel that each
//! of the four events takes (an `Event` owns its channel), four the channel's queue lock and
//! four the task's state (the wake-up, and the end of a poll that goes idle).
//!
//! What those locked instructions cost in time was measured with builds made for the
//! measurement only, not sound in general: one whose channel events took no `Arc` count (8
//! locked instructions and 23 instructions fewer a round trip) ran `taskpp 300000 1 3` in a
//! median of 72.3 ns a message against 77.5 (30 runs each, alternated, at load 4 to 5, the
//! spread 52 to 93 ns for both), and one whose task state changes were plain loads and
//! stores as well (4 locked instructions left) in 71.3. So an uncontended locked
//! instruction costs this machine (AMD EPYC, a VM) about a nanosecond (10 ns a round trip
//! for the first 8 and 23 other instructions, 2 ns for the next 4), not the 20 cycles first
//! assumed: worth removing only where that adds almost no instructions (the per-proc cache
//! of channel counts described in the `chan` docs added 92 a round trip).
//!
//! A wake-up costs about 135 instructions on one proc (the channel's `unblock`, the waker's
//! state transition, and the push on the proc's run queue), inlined from the waker down to
//! the push; the header of a task (`<dyn Task>::header`) is read in place, with no call
//! through the task's vtable. Earlier figures, in time,
//! before that change: `pcml-bench --only spawn,pingpong,skynet --no-peers --runs 6 --rounds 2` on a
//! shared 2-core machine (so the spreads are wide), medians against tokio's in the same run:
//! spawn+join 1.62x tokio's rate on one proc, 1.21x on two against tokio's 2 workers (2.99 M
//! against 2.47 M a second, spreads 1.2 to 5.5 M and 1.4 to 4.0 M); skynet 100000/10 with
//! join handles 1.95x faster than tokio on one proc and 2.64x on two, with channels 0.49x
//! and 0.67x; ping-pong 0.73x tokio's rate on one proc with event `.await`s and 1.14x with
//! `send_async`, on two procs 1.39x and 2.8x (5.09 M against 1.80 M messages a second).
//!
//! # Invariants
//! - `state` moves `SCHEDULED -> RUNNING -> {IDLE, NOTIFIED, DONE}`, `IDLE -> SCHEDULED` (a
//!   wake-up), `NOTIFIED -> SCHEDULED` (the runner reschedules). Only the thread that moved it
//!   to `RUNNING` touches `future`, until it leaves `RUNNING`; after the procs stop, shutdown
//!   does.
//! - The future never moves once the cell is allocated (it is pinned in the cell).
//! - A task is in its runtime's registry from spawn until it is `DONE`, so shutdown can drop
//!   every unfinished future (breaking cycles through wakers stored in channels).
//! - `Header::refs` counts the `TaskRef`s, owned wakers and join handle alive for the cell;
//!   the one that drops it to zero frees the cell. It starts at the number of references the
//!   spawn hands out (the run queue's, and the join handle's if any), written before any is
//!   published. In a poll of a registered task, the first waker clone made on the polling
//!   proc takes over the count of the run queue's reference (the runner then forgets that
//!   reference instead of dropping it); the registry's reference keeps the cell alive through
//!   the poll whatever becomes of that waker.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll, RawWaker, RawWakerVTable, Waker};

use crossbeam_utils::CachePadded;
use slab::Slab;

use crate::ThreadId;
use crate::fiber::Site;
use crate::loom::PlainCell;
use crate::mp::SpinLock;
use crate::mp::{Counted, Counts, RefCount};
use crate::sched::join::{JoinState, JoinTarget};
use crate::sched::worker::{self, Runnable, Shared};

const IDLE: u8 = 0;
const SCHEDULED: u8 = 1;
const RUNNING: u8 = 2;
const NOTIFIED: u8 = 3;
const DONE: u8 = 4;

/// A counted reference to a spawned task, type-erased: what run queues, wakers' owners and
/// the registry hold. Clone it to count another reference; dropping the last one frees the
/// task's cell (allocated by `new_cell` as a `Box`).
pub(crate) type TaskRef = Counted<dyn Task>;

impl Counts for dyn Task + '_ {
    #[inline]
    fn ref_count(&self) -> &RefCount {
        &self.header().refs
    }
}

/// The operations of a task cell that do not depend on its future's type.
pub(crate) trait Task: Send + Sync {
    /// Polls the task once. The caller moved it out of a run queue (state `SCHEDULED`);
    /// `this` is the caller's reference to this very task (to register it if it waits).
    fn run(&self, this: &TaskRef) -> TaskRun;
    /// Drops the future of an unfinished task. Only after the procs have stopped.
    fn drop_future(&self);
    /// Cancels the task (`JoinHandle::abort`): its next run drops its future instead of
    /// polling it.
    fn abort(&self);
}

impl dyn Task + '_ {
    /// The task's header, read in place: every `Task` is a [`TaskCell`], whose header is its
    /// first field (`repr(C)`), so this is no call through the vtable (it was one, three times
    /// a poll and wake-up).
    #[inline(always)]
    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the only implementation of `Task` is `TaskCell`, `repr(C)` with `header`
        // first, so the object's address is its header's; the borrow is `self`'s.
        unsafe { &*std::ptr::from_ref(self).cast::<Header>() }
    }
}

/// A task's address, holding no reference count: for a record that must reach a task only
/// while it knows the task's future is alive (an async actor's, see `actor::record`).
pub(crate) struct TaskAddr(NonNull<dyn Task>);

// SAFETY: only an address; what may be done with it is `upgrade`'s contract.
unsafe impl Send for TaskAddr {}
// SAFETY: as above.
unsafe impl Sync for TaskAddr {}

impl TaskAddr {
    /// The address of `task`.
    pub(crate) fn of(task: &TaskRef) -> Self {
        TaskAddr(task.as_non_null())
    }

    /// A counted reference to the task.
    ///
    /// # Safety
    /// The task's cell is alive (its future has not been dropped, for instance).
    pub(crate) unsafe fn upgrade(&self) -> TaskRef {
        // SAFETY: the cell is alive (our caller's promise); the count taken here is the one
        // the new reference gives up.
        unsafe {
            self.0.as_ref().header().refs.count();
            TaskRef::from_counted(self.0)
        }
    }
}

/// What every task has, whatever its future.
pub(crate) struct Header {
    pub(crate) id: ThreadId,
    /// See the module invariants.
    state: AtomicU8,
    /// Counted references alive (task references, owned wakers, the join handle); see the
    /// module invariants and `mp::RefCount`.
    refs: RefCount,
    /// The runtime's id (see `sched::registry`): a task holds no reference count on it.
    runtime: u64,
    /// The task's key in its registry (its slab key times `SHARDS`, plus its shard), or
    /// `NOT_REGISTERED`: a task is registered the first time a poll leaves it pending (tasks
    /// that finish in their first poll never are). Written only by the thread holding the
    /// task in `RUNNING`.
    registry_key: AtomicUsize,
    /// A scheduling hint, written by the proc that polls the task just before each poll: that
    /// proc's index and the length of its deque of new work then, packed by
    /// [`Header::set_polled_at`], and whether the poll left a choice of several branches
    /// pending ([`Header::mark_choice_pending`]). A wake-up on the same proc runs the task
    /// once the deque is back to that length (`sched::worker::Context::wake_here`): after the
    /// work the task spawned in that poll; one on another proc after such a choice sends the
    /// task back. Relaxed: a stale value only changes where and in what order work runs.
    polled_at: AtomicU32,
    /// Set once by `JoinHandle::abort`, before it wakes the task; read by the runner before
    /// each poll: a cancelled task's future is dropped instead of polled.
    aborted: AtomicBool,
    /// Where the task was spawned (for dumps); written once, at the spawn.
    pub(crate) site: Site,
    /// The actor the task runs (an async actor's [`ActorId`](crate::actor::ActorId) as a
    /// number), or 0: written once by the actor's spawn before the task is scheduled, read by
    /// dumps. Relaxed: a dump reads it after the registry's lock, taken after the scheduling
    /// push that publishes the cell.
    actor: AtomicU64,
}

impl Header {
    /// Records that proc `proc` polls the task with `depth` items in its deque of new work
    /// (saturated at `POLLED_DEPTH_MAX`); a proc index past `u16::MAX - 1` records nothing
    /// usable. Clears the mark of [`Header::mark_choice_pending`].
    #[inline]
    pub(crate) fn set_polled_at(&self, proc: usize, depth: usize) {
        self.polled_at
            .store(pack_polled_at(proc, depth), Ordering::Relaxed);
    }

    /// Marks the record of the running poll (by the thread that runs it) as leaving a choice
    /// of several branches pending: a wake-up from another proc then sends the task back to
    /// the proc that polled it (`sched::worker::Context::wake_here`; see the `sched` docs,
    /// "Fair choice across procs").
    pub(crate) fn mark_choice_pending(&self) {
        // Relaxed load and store: only the thread holding the task in RUNNING writes the
        // record; a waker reads it after its AcqRel CAS of `state`, which pairs with the
        // runner's Release CAS to IDLE after this store.
        let v = self.polled_at.load(Ordering::Relaxed);
        self.polled_at.store(v | CHOICE_PENDING, Ordering::Relaxed);
    }

    /// Whether the task is in its runtime's registry (a poll of it has been left pending
    /// before). Read by the thread about to poll it.
    #[inline]
    pub(crate) fn is_registered(&self) -> bool {
        self.registry_key.load(Ordering::Relaxed) != NOT_REGISTERED
    }

    /// Counts one more reference to the task (for a caller that will make a [`TaskRef`] of
    /// it, or that holds one whose count it gave away).
    #[inline]
    pub(crate) fn count_ref(&self) {
        self.refs.count();
    }

    /// Records that the task runs actor `actor` (its id as a number), for dumps.
    pub(crate) fn set_actor(&self, actor: u64) {
        self.actor.store(actor, Ordering::Relaxed);
    }

    /// The actor the task runs, as [`set_actor`](Self::set_actor) recorded (0: none).
    pub(crate) fn actor(&self) -> u64 {
        self.actor.load(Ordering::Relaxed)
    }

    /// [`Header::set_polled_at`]'s last record, with [`Header::mark_choice_pending`]'s mark,
    /// or `None` if there is none.
    #[inline]
    pub(crate) fn polled_at(&self) -> Option<PolledAt> {
        let v = self.polled_at.load(Ordering::Relaxed);
        let proc = v >> 16;
        (proc != u32::from(u16::MAX)).then_some(PolledAt {
            proc: proc as usize,
            depth: (v & POLLED_DEPTH_MAX) as usize,
            choice: v & CHOICE_PENDING != 0,
        })
    }
}

/// Where and how a task's last poll ran ([`Header::polled_at`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PolledAt {
    /// The proc that polled it.
    pub(crate) proc: usize,
    /// The length of that proc's deque of new work when the poll began.
    pub(crate) depth: usize,
    /// Whether the poll left a choice of several branches pending.
    pub(crate) choice: bool,
}

/// The deepest deque length `Header::polled_at` records.
const POLLED_DEPTH_MAX: u32 = 0x7fff;
/// `Header::polled_at`'s mark of a poll that left a choice of several branches pending.
const CHOICE_PENDING: u32 = 0x8000;

/// `Header::polled_at`'s record of a poll by `proc` with `depth` items in its deque.
#[inline]
fn pack_polled_at(proc: usize, depth: usize) -> u32 {
    // Saturated as `usize`s, then narrowed (both fit: no cast truncates): one comparison each
    // instead of a conversion's and a minimum's (a poll's bookkeeping, inline in the worker's
    // loop).
    let proc = proc.min(usize::from(u16::MAX)) as u32;
    let depth = depth.min(POLLED_DEPTH_MAX as usize) as u32;
    proc << 16 | depth
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
/// `repr(C)`, header first: `<dyn Task>::header` reads it at the object's address.
#[repr(C)]
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
    /// Takes the outcome of task `id` (once).
    fn complete(&self, id: ThreadId, outcome: Result<T, crate::JoinError>);
}

impl<T: Send + 'static> Completion<T> for JoinState<T> {
    fn complete(&self, _id: ThreadId, outcome: Result<T, crate::JoinError>) {
        JoinState::complete(self, outcome);
    }
}

/// The completion of a task spawned with no join handle: its output is dropped and a panic
/// is reported as an unjoined thread's is. No state and no atomic: nobody can join it.
pub(crate) struct Detached;

impl<T> Completion<T> for Detached {
    fn complete(&self, id: ThreadId, outcome: Result<T, crate::JoinError>) {
        crate::log::exited(id, outcome.as_ref().err());
        if let Err(e) = &outcome {
            crate::sched::join::report_unobserved(e);
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
        // SAFETY: every task cell is allocated by `new_cell` and counts its references; the
        // vtable's functions treat the pointer as one counted reference that the waker owns;
        // wrapping the waker in ManuallyDrop means this borrowed one never releases the count
        // it does not own, and `this` outlives the poll it is used for.
        ManuallyDrop::new(unsafe { Waker::from_raw(raw) })
    }

    /// The task reference an owned waker's pointer stands for.
    ///
    /// # Safety
    /// `ptr` is a waker's pointer to a live cell of this type, and the caller gives up the
    /// reference it counts (or forgets the result).
    unsafe fn waker_ref(ptr: *const ()) -> TaskRef {
        // SAFETY: a waker's pointer is a cell's address, never null; the count is the caller's.
        unsafe { TaskRef::from_counted(NonNull::new_unchecked(ptr.cast::<Self>().cast_mut())) }
    }

    unsafe fn waker_clone(ptr: *const ()) -> RawWaker {
        // The first clone in a poll of this task on its proc takes over the runner's count
        // (see `Context::run_task`).
        if !worker::take_donated_count(ptr) {
            // SAFETY: `ptr` points at a cell that the waker being cloned keeps alive.
            unsafe { (*ptr.cast::<Self>()).header.refs.count() };
        }
        RawWaker::new(ptr, &Self::VTABLE)
    }

    unsafe fn waker_wake(ptr: *const ()) {
        // SAFETY: an owned waker owns one counted reference, which we take over.
        let this = unsafe { Self::waker_ref(ptr) };
        if Self::transition_to_scheduled(this.header()) {
            // The waker's own count goes to the run queue: no increment, no decrement (two
            // locked instructions that took two thirds of a wake-up's cycles).
            worker::push_task(this.header().runtime, this);
        }
    }

    unsafe fn waker_wake_by_ref(ptr: *const ()) {
        // SAFETY: the waker's count keeps the cell alive.
        let this = unsafe { &*ptr.cast::<Self>() };
        if Self::transition_to_scheduled(&this.header) {
            this.header.refs.count();
            // SAFETY: the reference just counted goes to the run queue.
            let task = unsafe { Self::waker_ref(ptr) };
            worker::push_task(this.header.runtime, task);
        }
    }

    unsafe fn waker_drop(ptr: *const ()) {
        // SAFETY: an owned waker owns one counted reference, dropped here.
        drop(unsafe { Self::waker_ref(ptr) });
    }

    /// A wake-up's state change: `IDLE -> SCHEDULED` (true: the caller must push the task to
    /// a run queue) or `RUNNING -> NOTIFIED` (false: the runner will reschedule it); false
    /// with no change if it is already scheduled, already noted, or finished.
    #[must_use]
    fn transition_to_scheduled(header: &Header) -> bool {
        let state = &header.state;
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
        // Acquire: pairs with the Release swap in `abort` (which wakes us after it).
        if self.header.aborted.load(Ordering::Acquire) {
            return self.cancel_aborted();
        }
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
            crate::sched::metrics::count_task(-1);
            self.join.complete(self.header.id, outcome);
            return TaskRun::Finished;
        }
        if self.header.registry_key.load(Ordering::Relaxed) == NOT_REGISTERED {
            // It may wait indefinitely now: shutdown must be able to find it. (Still RUNNING,
            // so no other thread can finish it and `remove` it meanwhile.)
            worker::register_task(this);
        }
        // Release: publishes this poll's writes to the next runner (Acquire swap above).
        // Acquire on failure: pairs with the AcqRel CAS of a waker that noted the task
        // (NOTIFIED), so a cancellation flagged before that wake-up is seen at the next run.
        match state.compare_exchange(RUNNING, IDLE, Ordering::Release, Ordering::Acquire) {
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

    fn abort(&self) {
        self.abort_task();
    }

    fn drop_future(&self) {
        // SAFETY: the procs have stopped, so no thread holds the task in RUNNING.
        let fut = self.future.with_mut(|f| unsafe { (*f).take() });
        // A future whose destructor panics must not stop the shutdown (the other tasks, the
        // blocking pool and the I/O driver are still to be dropped): the panic becomes the
        // task's outcome.
        self.drop_and_complete(fut, crate::JoinError::cancelled);
    }
}

impl<F, J> TaskCell<F, J>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    J: Completion<F::Output>,
{
    /// The run of a cancelled task, in place of a poll (the caller holds it in `RUNNING`):
    /// drops its future and completes it as aborted.
    #[cold]
    #[inline(never)]
    fn cancel_aborted(&self) -> TaskRun {
        // SAFETY: we hold the task in RUNNING, so we alone touch `future`. Dropped in place.
        let fut = self.future.with_mut(|f| unsafe { (*f).take() });
        self.drop_and_complete(fut, crate::JoinError::aborted);
        TaskRun::Finished
    }

    /// Drops `fut`, the future just taken out of the task (`None` if it had finished),
    /// marks the task done and, if there was a future, completes the join with `reason`'s
    /// error; a panicking destructor is the future's last act, reported as the outcome
    /// instead.
    fn drop_and_complete(&self, fut: Option<F>, reason: fn(ThreadId) -> crate::JoinError) {
        let unfinished = fut.is_some();
        let dropped = catch_unwind(AssertUnwindSafe(|| drop(fut)));
        // Release: nothing reads the future after DONE; orders the drop before it.
        self.header.state.store(DONE, Ordering::Release);
        if unfinished {
            let outcome = match dropped {
                Ok(()) => reason(self.header.id),
                Err(p) => crate::sched::panic::join_error(self.header.id, p),
            };
            crate::sched::metrics::count_task(-1);
            self.join.complete(self.header.id, Err(outcome));
        }
    }

    /// Cancels the task (`JoinHandle::abort`): flags it, then wakes it, so that its next run
    /// drops its future instead of polling it.
    fn abort_task(&self) {
        // AcqRel: the Release half pairs with the runner's Acquire load before each poll;
        // swap, so only the first abort wakes.
        if self.header.aborted.swap(true, Ordering::AcqRel) {
            return;
        }
        if Self::transition_to_scheduled(&self.header) {
            self.header.refs.count();
            // SAFETY: the reference just counted goes to the run queue.
            let task = unsafe { TaskRef::from_counted(NonNull::from(self)) };
            worker::push_task(self.header.runtime, task);
        }
    }
}

impl<F> TaskCell<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    /// [`JoinTarget::poll_inline`] once a task queued above this one ran in its place (see
    /// `worker::run_joined_task`): asks again until this one ran or finished, or nothing
    /// more can run here. Out of line: the common await (of the task spawned last) runs it
    /// at the first ask.
    #[inline(never)]
    fn poll_inline_after_others(&self) -> bool {
        let cell = NonNull::from(self).cast();
        while !self.join.is_done() {
            match worker::run_joined_task(cell) {
                worker::Joined::Target => return true,
                worker::Joined::Other => {}
                worker::Joined::Nothing => break,
            }
        }
        // Something ran: the caller looks at the join state.
        true
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

    fn abort(&self) {
        self.abort_task();
    }

    #[inline]
    fn poll_inline(&self) -> bool {
        match worker::run_joined_task(NonNull::from(self).cast()) {
            worker::Joined::Target => true,
            worker::Joined::Nothing => false,
            worker::Joined::Other => self.poll_inline_after_others(),
        }
    }

    unsafe fn release(&self) {
        // SAFETY: the join handle owns one counted reference, which it gives up here.
        drop(unsafe { TaskRef::from_counted(NonNull::from(self)) });
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
        let mut s = self.shards[shard].lock();
        let key = s.insert(task);
        // The key says the shard too. Relaxed: read only by `remove`, which runs after the
        // task was scheduled (the scheduling push orders this store before it).
        s[key]
            .header()
            .registry_key
            .store(key * SHARDS + shard, Ordering::Relaxed);
    }

    /// Forgets a finished task, if it was ever registered.
    #[inline(always)]
    pub(crate) fn remove(&self, task: &TaskRef) {
        let key = task.header().registry_key.load(Ordering::Relaxed);
        if key == NOT_REGISTERED {
            return;
        }
        let (shard, key) = (key % SHARDS, key / SHARDS);
        let removed = self.shards[shard].lock().try_remove(key);
        drop(removed);
    }

    /// Calls `f` with the id, spawn site and actor ([`Header::actor`]) of every registered
    /// task (a dump), outside the registry's locks.
    pub(crate) fn for_each(&self, mut f: impl FnMut(ThreadId, Site, u64)) {
        for shard in self.shards.iter() {
            let tasks: Vec<(ThreadId, Site, u64)> = shard
                .lock()
                .iter()
                .map(|(_, t)| {
                    let h = t.header();
                    (h.id, h.site, h.actor())
                })
                .collect();
            tasks
                .into_iter()
                .for_each(|(id, site, actor)| f(id, site, actor));
        }
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
pub(crate) fn spawn_on_runtime<F>(
    shared: &Arc<Shared>,
    fut: F,
    site: Site,
) -> crate::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let id = ThreadId::next();
    // Two references: the run queue's and the handle's.
    let cell = new_cell(shared, fut, JoinState::new_inline(id), id, 2, site);
    shared.count_live(1);
    // SAFETY: `new_cell` counted this reference for the run queue.
    let task = unsafe { TaskRef::from_counted(cell) };
    worker::push_runnable(shared, Runnable::Task(task));
    let target: NonNull<dyn JoinTarget<F::Output>> = cell;
    // SAFETY: the cell is alive (the handle's reference is counted, and given up here), and
    // its address is even: a cell is aligned to 8 by its header's counters.
    unsafe { crate::JoinHandle::from_counted(target) }
}

/// Spawns `fut` as a task of `shared` with no join handle (an actor's body, which reports its
/// own end): no handle to make and drop, so one reference count and one join-state update
/// fewer per task. A panic that escapes `fut` is reported as an unjoined thread's would be.
pub(crate) fn spawn_detached_on_runtime<F>(
    shared: &Arc<Shared>,
    fut: F,
    before: impl FnOnce(&TaskRef),
    site: Site,
) where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let id = ThreadId::next();
    let cell = new_cell(shared, fut, JoinState::new_inline_detached(id), id, 1, site);
    // SAFETY: `new_cell` counted this one reference, for the run queue.
    let task = unsafe { TaskRef::from_counted(cell) };
    before(&task);
    shared.count_live(1);
    worker::push_runnable(shared, Runnable::Task(task));
}

/// Spawns `fut` as a task with no join handle and no join state at all (see [`Detached`]):
/// the lightest task, for an actor's body, which reports its own end. Only from a proc of a
/// runtime (the common case: an actor spawned by an actor); elsewhere it returns `fut` back
/// for [`spawn_detached_on_runtime`]'s path. `before` sees the task before it is scheduled.
#[inline]
pub(crate) fn spawn_unjoined<F, B>(fut: F, before: B, site: Site) -> Result<(), (F, B)>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    B: FnOnce(&TaskRef),
{
    let Some(ctx) = worker::context() else {
        return Err((fut, before));
    };
    let cell = new_cell(&ctx.shared, fut, Detached, ThreadId::next(), 1, site);
    // SAFETY: `new_cell` counted this one reference, for the run queue.
    let task = unsafe { TaskRef::from_counted(cell) };
    before(&task);
    // On this proc: its own counter, with no second look-up of the context.
    ctx.count_live_here(1);
    worker::push_runnable(&ctx.shared, Runnable::Task(task));
    Ok(())
}

/// A task cell for `fut` in `shared`, not yet scheduled nor counted live (the caller counts
/// it), with `refs` references counted: the caller makes them (`TaskRef::from_counted`, a
/// join handle) before it publishes any.
fn new_cell<F, J>(
    shared: &Arc<Shared>,
    fut: F,
    join: J,
    id: ThreadId,
    refs: usize,
    site: Site,
) -> NonNull<TaskCell<F, J>>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
    J: Completion<F::Output>,
{
    crate::log::spawned(id, crate::log::Kind::Task, site);
    crate::sched::metrics::task_spawned(shared);
    // Written straight into its block (`Box::new` built the cell on the stack, then copied
    // it there, future and all).
    let mut cell = Box::<TaskCell<F, J>>::new_uninit();
    cell.write(TaskCell {
        header: Header {
            id,
            state: AtomicU8::new(SCHEDULED),
            refs: RefCount::new(refs),
            runtime: shared.id,
            registry_key: AtomicUsize::new(NOT_REGISTERED),
            polled_at: AtomicU32::new(u32::MAX),
            aborted: AtomicBool::new(false),
            site,
            actor: AtomicU64::new(0),
        },
        future: PlainCell::new(Some(fut)),
        join,
    });
    // SAFETY: written just above.
    NonNull::from(Box::leak(unsafe { cell.assume_init() }))
}
