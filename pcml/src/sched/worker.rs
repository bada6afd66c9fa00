//! A proc's worker: the loop that runs fibers and tasks on one OS thread (Reppy, Russo and Xiao 2009; Morrisett and Tolmach 1992).
//!
//! Each proc owns
//! - `ready`: started fibers that are runnable (they live here and nowhere else), and unstarted
//!   fibers placed here explicitly (`spawn_on`); private to the proc;
//! - `local`: a work-stealing deque of new work, unstarted fibers and async tasks. The proc runs
//!   the newest first, so a tree of spawns runs depth first in little memory, and idle procs
//!   steal the oldest: near a tree's root, the largest pieces. On Krook's skynet (a 3-ary
//!   tree of 1,093 async actors) this made 2 procs 1.3x faster than oldest-first, because far
//!   fewer actors move between procs (`examples/actors.rs skynet6 async 2000 2`: 129-132 us
//!   per run against 168-170 us). A runtime of one proc keeps its new work on a private stack
//!   (`own`) instead, with no fence or read-modify-write per push and pop (actor skynet depth
//!   6 async on 1 proc: -12% cycles);
//! - woken async tasks: a task woken here goes on top of `local`, to run next, unless the work
//!   it spawned in its last poll here is still in `local`; then it waits in `deferred` until
//!   `local` is back to its length at that poll. A tree of spawns thus runs as a depth-first
//!   program would, each parent after its children: a parent woken by its first child's reply
//!   takes all the replies in one poll, and a parent whose children block until it receives
//!   runs as soon as they all have. (Channel skynet, 100,000 tasks on 1 proc: 1.35 G cycles,
//!   against 1.62 G with oldest-first and 2.48 G with every wake-up after all new work.) A
//!   deferred task still the oldest after 61 turns runs anyway. A task woken during its own
//!   poll (a yield) goes to `woken`, a work-stealing deque run oldest first when there is no
//!   new work;
//! - a held fiber: the oldest unstarted fiber spawned on the proc, kept out of the deque (see
//!   `Context::hold_new`), so that the usual spawn-then-join costs one atomic operation: the
//!   joiner takes the fiber back and runs it inline. It is held in the proc's shared entry
//!   (`held`), where idle procs may steal it, or, on a runtime of one proc, in its private
//!   context (`own_held`), with no atomic operation at all;
//! - an [`Inbox`]: the landing pad through which others wake this proc's fibers;
//! - its fibers' slots (`fibers`), its stack pool, and a [`Parker`] to sleep on.
//!
//! A global injector takes work pushed from outside the procs. The loop drains the inbox, then
//! alternates between `ready` and new work (held, placed, `local`) so that neither starves the
//! other (a fiber spinning on `yield_now` goes to the back of `ready`, so everything else
//! runnable runs first), moves due `deferred` tasks onto `local` before it takes new work,
//! runs `woken` when both are empty, and every 61st turn looks at an overdue deferred task,
//! `woken` and the injector first (as Go does for its global queue) so they are not starved
//! by local work. Due timers (`timer`) fire between threads. With nothing to do the proc steals
//! (only work that has waited `STEAL_GRACE` in its victim's queues: see the `sched` docs),
//! spins briefly (a futex wake-up costs about 45 us on this machine against 200 ns for a
//! cache-line round trip), then parks until its next timer, or until woken.
//!
//! # Invariants
//! - A started fiber is in exactly one of: running (its coroutine taken out of its slot), its
//!   proc's `ready` queue (state `Ready`), waiting behind turns owed to its proc (state
//!   `Ready`, in `owed`), or blocked (state `Blocked`, coroutine in its slot).
//! - A fiber's `token` is non-zero only while it is blocking or blocked; the first wake-up that
//!   carries it sets it to zero, so a repeated or stale wake-up does nothing.
//! - `RefCell` borrows of the proc's structures never span a coroutine switch or a task poll.
//! - `num_sleeping` counts procs between `sleeping.store(true)` and their wake-up; the pusher of
//!   an inbox message checks `sleeping` after pushing, the sleeper checks the inbox after setting
//!   `sleeping`, each with a SeqCst fence between its store and its load: a wake-up is never
//!   lost (loom model `sched/tests/loom_inbox.rs`).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ptr;
use std::time::{Duration, Instant};

use corosensei::CoroutineResult;
use crossbeam_deque::{Injector, Steal, Stealer, Worker as Deque};
use crossbeam_utils::CachePadded;

use crate::ThreadId;
use crate::fiber::stack::{self, NoStack, StackPool};
use crate::fiber::{BodyPtr, Coroutine, FiberBody, NewFiber, Resume, Suspend, Yielder, overflow};
use crate::mp::Parker;
use crate::mp::SpinLock;
use crate::sched::blocker::Blocker;
use crate::sched::blocking::BlockingPool;
use crate::sched::fibers::{FiberState, FiberTable};
use crate::sched::held::HeldSlot;
use crate::sched::inbox::Inbox;
use crate::sched::metrics;
use crate::sched::owed::{self, Check, Owed};
use crate::sched::runtime::MainSlot;
use crate::sched::spawn::SpareCell;
use crate::sched::timer::{OnFire, TimerCell, TimerHeap};
use crate::sched::watchdog::{ProcWatch, TASK_BIT};
use crate::task::{TaskRef, TaskRegistry, TaskRun};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering, fence};
use std::sync::{Arc, Mutex};

/// How long an idle proc looks for work before it parks. A futex wake-up costs about 45 us on
/// this machine, so two procs passing work back and forth must not park between hand-offs.
const SPIN: Duration = Duration::from_micros(100);
/// For this long the idle proc spins on its core; after it, until `SPIN`, it yields the core
/// between looks, so that on an oversubscribed machine (more runnable threads than cores) the
/// thread that has the work can run. Yielding sooner made cross-proc hand-offs 4x slower on an
/// idle machine here (ping-pong across 2 procs: 0.76 M against 3.4 M msgs/s), so the hot phase
/// covers ordinary hand-off latencies.
const SPIN_HOT: Duration = Duration::from_micros(50);
/// How long an idle proc looks for work when `spin_limit` others already spin (see `idle`).
const SPIN_OVER_LIMIT: Duration = Duration::from_micros(10);
/// How long work must wait in another proc's queues before an idle proc takes it (see
/// `Context::left_there`). A proc that spawns a thread and then blocks runs it within a
/// microsecond or two; an idle proc that took it at once would pin it far from the threads it
/// talks to, and every message between them would then cross procs.
const STEAL_GRACE: Duration = Duration::from_micros(20);
/// How long another proc's held fiber (the one its spawner is likeliest to join or talk to
/// next) must stay held before an idle proc takes it: long enough that an OS that takes the
/// spawner's core away for a while (a busy machine) does not make it move, short enough that
/// a thread computing without a sync point does not hold it back for long. One stolen filter
/// of the primes sieve made every later number cross procs twice: 2-proc runs of
/// `examples/primes.rs spawn` took 1.5x the 1-proc time on a busy machine.
const HELD_GRACE: Duration = Duration::from_millis(2);
/// Every this many turns a proc with armed timers fires the due ones.
const TIMER_EVERY: u32 = 32;
/// Every this many turns a proc looks at the injector before its own queues (Go uses 61).
const INJECTOR_EVERY: u32 = 61;
/// Syncs that complete without blocking before a fiber yields anyway.
pub(crate) const BUDGET: u32 = 128;

/// Work that any proc may run.
pub(crate) enum Runnable {
    Fiber(NewFiber),
    Task(TaskRef),
}

/// A message to a proc's inbox.
pub(crate) enum InboxMsg {
    /// Wake the fiber in `slot` if its token is still `token`.
    Wake { slot: usize, token: u64 },
    /// Start this fiber here (explicit placement).
    Start(NewFiber),
    /// Cancel the fiber in `slot` if it is still thread `id` (`JoinHandle::abort`).
    Abort { slot: usize, id: ThreadId },
    /// Describe this proc's threads for a dump (`sched::dump`).
    Dump(Arc<crate::sched::dump::Request>),
    /// As `Wake`, from a choice on proc `from`: the woken fiber runs at once, and `from` is
    /// told when it has suspended again (`Paid`). See `owed`.
    WakeOwed {
        slot: usize,
        token: u64,
        from: usize,
        epoch: u32,
    },
    /// A fiber of proc `by` woken by a choice here (a `WakeOwed` of `epoch`) has run.
    Paid { by: usize, epoch: u32 },
    /// To a proc's own inbox, by a choice of its running fiber: send this `WakeOwed` to
    /// `proc` once the proc is back in its loop (the chooser has suspended) and has taken as
    /// many turns as it had fibers ready then (`after`, `usize::MAX` until counted), as a
    /// fiber of its own that the choice woke would wait for them. See `owed`.
    SendOwed {
        proc: usize,
        slot: usize,
        token: u64,
        epoch: u32,
        after: usize,
    },
}

/// `ProcShared::cpu_clock` before the proc's thread has set it.
pub(crate) const NO_CLOCK: i32 = i32::MIN;

/// What a proc shares with the others.
pub(crate) struct ProcShared {
    /// The steal end of the proc's `local` deque.
    pub(crate) stealer: Stealer<Runnable>,
    /// The steal end of the proc's `woken` deque.
    pub(crate) woken_stealer: Stealer<Runnable>,
    /// Wake-ups and placed fibers from elsewhere.
    pub(crate) inbox: Inbox<InboxMsg>,
    /// What the proc sleeps on when idle.
    pub(crate) parker: Parker,
    /// Set (SeqCst) by the proc before its last look for work, cleared after it wakes.
    pub(crate) sleeping: AtomicBool,
    /// Threads started minus threads finished by this proc (may be negative: a thread spawned
    /// here may end elsewhere). So that the common spawn-then-join costs no count, a fiber in
    /// a held slot is counted only once it leaves the slot for anything but its joiner's
    /// inline run (`Context::hold_new`), and a thread run inline on a fiber's stack is counted
    /// only while that fiber is blocked (`block_fiber`; a fiber taken from a queue to run
    /// inline gives up the count of its spawn). Deadlock detection sums the counters only
    /// when every proc sleeps, so every fiber is blocked and every held slot empty: then the
    /// sum is exact. Written only by the proc's own worker thread, with a plain load
    /// and store (no read-modify-write on the spawn path); summed by deadlock detection. On a
    /// line of its own: the owner writes it at most spawns and ends, while idle procs poll the
    /// other fields.
    pub(crate) live: CachePadded<AtomicIsize>,
    /// Timers of this proc cancelled and not yet dropped from its heap (drives compaction);
    /// incremented by any thread, reset by the proc.
    pub(crate) timers_cancelled: AtomicUsize,
    /// The oldest unstarted fiber spawned on this proc (see `Context::hold_new`); idle procs
    /// may steal it.
    pub(crate) held: HeldSlot<NewFiber>,
    /// What the watchdog reads (`sched::watchdog`): written by the proc on every turn, on a
    /// line of its own.
    pub(crate) watch: CachePadded<ProcWatch>,
    /// This proc's timers. Locked by the proc to arm timers and take due ones, and by other
    /// procs only while the watchdog has marked this one as hogged (`fire_hogged_timers`);
    /// on a line of its own, away from the fields idle procs poll.
    pub(crate) timers: CachePadded<SpinLock<TimerHeap>>,
    /// The CPU clock of the proc's thread (`NO_CLOCK` until it starts): procs owed a turn by
    /// this one read it (`owed`).
    pub(crate) cpu_clock: std::sync::atomic::AtomicI32,
    /// This proc's metrics (`sched::metrics`): written by the proc only, read by snapshots;
    /// on a line of its own.
    pub(crate) metrics: CachePadded<crate::sched::metrics::ProcCounters>,
}

/// The state of a runtime shared by its procs and by the threads that talk to it.
pub(crate) struct Shared {
    /// Unique per runtime in this process.
    pub(crate) id: u64,
    /// One cache line (or more) per proc, so procs writing their own entries (inbox, live
    /// counter) do not invalidate each other's.
    pub(crate) procs: Box<[CachePadded<ProcShared>]>,
    /// Work pushed from outside the procs.
    pub(crate) injector: Injector<Runnable>,
    /// The size of every fiber stack of this runtime.
    pub(crate) stack_size: usize,
    /// The cap on started, unfinished fibers of this runtime.
    pub(crate) max_fibers: usize,
    pub(crate) detect_deadlock: bool,
    /// Set once, by `block_on` when main settles or by `Runtime::drop`.
    pub(crate) shutdown: AtomicBool,
    /// Procs spinning while idle.
    pub(crate) num_searching: AtomicUsize,
    /// How many idle procs may spin at once (see `Context::idle`): half the procs that the
    /// machine's cores can run at once, at least one.
    pub(crate) spin_limit: usize,
    /// Procs parked or about to park.
    pub(crate) num_sleeping: AtomicUsize,
    /// Threads started minus finished by threads that are not this runtime's procs; with the
    /// procs' own `live` counters, the fibers and tasks alive (main included).
    pub(crate) live_external: AtomicIsize,
    /// Fibers holding a stack (started, not finished); counted only under a `max_fibers` limit.
    pub(crate) running_fibers: AtomicUsize,
    /// Fibers that found no stack when they were to start; they start when one is freed.
    pub(crate) stack_waiters: Mutex<VecDeque<NewFiber>>,
    /// `stack_waiters.len()`, readable without the lock.
    pub(crate) stack_waiting: AtomicUsize,
    /// Every live async task, so shutdown can drop them.
    pub(crate) tasks: TaskRegistry,
    /// The side pool of `spawn_blocking`.
    pub(crate) blocking: BlockingPool,
    /// Sources other than pcml threads that may wake a thread (pending timers, I/O, ...).
    pub(crate) wake_sources: AtomicUsize,
    /// The runtime's I/O driver (`sched::io`), started by the first registration from a proc
    /// and stopped by `Runtime::drop`.
    pub(crate) io: std::sync::OnceLock<Arc<crate::sched::io::Driver>>,
    /// How `block_on` learns that main ended or that the runtime deadlocked.
    pub(crate) main: MainSlot,
    /// Procs whose worker loop has ended (after shutdown); read by other runtimes' deadlock
    /// detection (`is_quiescent`).
    pub(crate) exited: AtomicUsize,
    /// What the watchdog thread (`sched::watchdog`) sleeps on; unparked at shutdown.
    pub(crate) watchdog: Parker,
    /// Set by the watchdog while it sleeps because every proc slept; cleared by the first
    /// proc to wake (`watchdog::wake_watchdog`).
    pub(crate) watchdog_asleep: AtomicBool,
    /// Procs the watchdog has marked as hogged (`sched::watchdog`); read (Relaxed) by the
    /// procs every `TIMER_EVERY` turns and when idle, to fire those procs' due timers.
    pub(crate) hogs: AtomicUsize,
    /// Tasks started minus ended off the procs (`sched::metrics`); Relaxed, read for metrics.
    pub(crate) tasks_external: std::sync::atomic::AtomicI64,
    /// Actors started minus ended off the procs (`sched::metrics`); Relaxed, read for metrics.
    pub(crate) actors_external: std::sync::atomic::AtomicI64,
}

impl ProcShared {
    /// Whether this proc's deques hold work that others may take (cheap loads only); its held
    /// fiber is not counted (see `Context::held_waited`).
    #[inline]
    pub(crate) fn has_queued(&self) -> bool {
        !self.stealer.is_empty() || !self.woken_stealer.is_empty()
    }

    /// Whether this proc has a timer due at `now` (possibly a cancelled one).
    pub(crate) fn timers_due(&self, now: Instant) -> bool {
        self.timers.lock().next_deadline().is_some_and(|d| d <= now)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        crate::sched::registry::unregister(self.id);
    }
}

impl Shared {
    /// Makes stealable work visible to idle procs: wakes one sleeper if nobody is searching.
    pub(crate) fn notify_idle(&self) {
        if self.procs.len() == 1 {
            // The only proc is the one pushing, or it will find the work in the injector when
            // it next looks (it is unparked by `push_injector`'s caller otherwise).
            return;
        }
        // SeqCst fence: the pusher's half of the Dekker pair with `num_sleeping` (the sleeper
        // increments it, SeqCst, before its last look at the queues).
        fence(Ordering::SeqCst);
        if self.num_searching.load(Ordering::SeqCst) == 0
            && self.num_sleeping.load(Ordering::SeqCst) > 0
        {
            self.wake_sleeper();
        }
    }

    /// Wakes one sleeping proc, if any.
    pub(crate) fn wake_sleeper(&self) {
        for p in self.procs.iter() {
            // SeqCst: pairs with the sleeper's SeqCst store before it looks for work.
            if p.sleeping.load(Ordering::SeqCst) {
                p.parker.unpark();
                return;
            }
        }
    }

    /// Pushes work from outside the procs.
    pub(crate) fn push_injector(&self, r: Runnable) {
        self.injector.push(r);
        fence(Ordering::SeqCst);
        if self.num_searching.load(Ordering::SeqCst) == 0 {
            self.wake_sleeper();
        }
    }

    /// Sends `msg` to proc `proc`'s inbox and wakes the proc if it sleeps.
    pub(crate) fn send_to(&self, proc: usize, msg: InboxMsg) {
        let p = &self.procs[proc];
        p.inbox.push(msg);
        // SeqCst fence: the pusher's half of the Dekker pair with the sleeper's fence in `idle`
        // (flag store, fence, inbox load): either it sees our message or we see its flag.
        fence(Ordering::SeqCst);
        if p.sleeping.load(Ordering::Relaxed) {
            p.parker.unpark();
        }
    }

    /// Asks one proc to look again (after an outside event that may end a deadlock check).
    pub(crate) fn kick(&self) {
        if self.num_sleeping.load(Ordering::SeqCst) == self.procs.len() {
            self.procs[0].parker.unpark();
        }
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        // Acquire: pairs with the Release store in `begin_shutdown`.
        self.shutdown.load(Ordering::Acquire)
    }

    pub(crate) fn begin_shutdown(&self) {
        // Release: pairs with the Acquire loads of `is_shutdown`.
        self.shutdown.store(true, Ordering::Release);
        for p in self.procs.iter() {
            p.parker.unpark();
        }
        self.watchdog.unpark();
    }

    /// Counts a fiber or task as started (+1) or finished (-1).
    pub(crate) fn count_live(&self, delta: isize) {
        match context() {
            Some(ctx) if ptr::eq(&*ctx.shared, self) => ctx.count_live_here(delta),
            _ => {
                self.live_external.fetch_add(delta, Ordering::Relaxed);
            }
        }
    }

    /// Counts a fiber as holding a stack, unless `max_fibers` are already running. Without a
    /// configured limit nothing is counted (the process-wide stack cap still applies).
    fn take_fiber_slot(&self) -> bool {
        if self.max_fibers == usize::MAX {
            return true;
        }
        // Relaxed: a counter checked against a limit.
        if self.running_fibers.fetch_add(1, Ordering::Relaxed) >= self.max_fibers {
            self.running_fibers.fetch_sub(1, Ordering::Relaxed);
            return false;
        }
        true
    }

    fn release_fiber_slot(&self) {
        if self.max_fibers != usize::MAX {
            self.running_fibers.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// A fiber or task has ended.
    pub(crate) fn thread_finished(&self) {
        self.count_live(-1);
    }

    /// Fibers and tasks alive now (exact only when every proc sleeps).
    pub(crate) fn live_count(&self) -> usize {
        let procs: isize = self
            .procs
            .iter()
            .map(|p| p.live.load(Ordering::Relaxed))
            .sum();
        (procs + self.live_external.load(Ordering::Relaxed)).max(0) as usize
    }

    /// Whether no proc of this runtime runs and nothing of its own can wake one: every proc
    /// sleeps, every queue is empty, no blocking job, timer or I/O source is pending; or it
    /// has shut down and its procs have stopped. Deadlock detection reads it for its own
    /// runtime and for the others (`outside`).
    pub(crate) fn is_quiescent(&self) -> bool {
        if self.is_shutdown() {
            // SeqCst: pairs with the increment at the end of `run_worker`.
            return self.exited.load(Ordering::SeqCst) == self.procs.len();
        }
        // SeqCst, all: read after the SeqCst fences of the sleepers (`idle`) and of the
        // pushers (`send_to`, `notify_idle`, `push_injector`), so a push before a proc's
        // sleep is seen here.
        self.num_sleeping.load(Ordering::SeqCst) == self.procs.len()
            && self.blocking.in_flight() == 0
            && self.wake_sources.load(Ordering::SeqCst) == 0
            // A registered socket or fd may become ready and wake a thread.
            && !self.io_pending()
            && self.injector.is_empty()
            && self.procs.iter().all(|p| {
                p.inbox.is_empty()
                    && p.stealer.is_empty()
                    && p.woken_stealer.is_empty()
                    && !p.held.is_full()
            })
    }
}

/// What the proc is running right now.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Current {
    /// The worker loop itself.
    Scheduler,
    Fiber {
        slot: usize,
        /// The running thread: the fiber's own, or one its joiner runs inline (`run_as`).
        id: ThreadId,
        main: bool,
        /// How many threads run inline on the fiber's stack, the running one included (0
        /// when the fiber itself runs).
        inlined: u32,
    },
    Task {
        id: ThreadId,
    },
}

/// A field of [`Context`] on a cache line of its own, for the few that the spawn and join
/// paths read and write as a whole: a value that straddles two lines is loaded and stored in
/// split halves, and a load that spans two earlier stores is not forwarded from them. (Where
/// the compiler happened to put `current` across a line, a spawn+join cost 128 cycles instead
/// of 107 in `examples/spawn1`.)
#[repr(align(64))]
struct OneLine<T>(T);

impl<T> OneLine<T> {
    const FITS: () = assert!(std::mem::size_of::<T>() <= 64);

    fn new(value: T) -> Self {
        let () = Self::FITS;
        Self(value)
    }
}

impl<T> std::ops::Deref for OneLine<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        &self.0
    }
}

/// A proc's private state; lives on its worker thread's stack for the thread's life.
pub(crate) struct Context {
    pub(crate) shared: Arc<Shared>,
    pub(crate) index: usize,
    /// `shared.procs[index]`, found once: it points into `shared`, which this context keeps
    /// alive, and the procs' slice never moves.
    me: ptr::NonNull<ProcShared>,
    local: Deque<Runnable>,
    /// New work of a one-proc runtime, newest last: nobody steals there, so it skips the
    /// deque's fences and read-modify-writes. Empty on a runtime of more procs.
    own: RefCell<Vec<Runnable>>,
    /// Started fibers that are runnable, by slot.
    ready: RefCell<VecDeque<usize>>,
    /// Tasks woken during their own poll (always `Runnable::Task`), oldest first. They run
    /// when there is no new work, and first every `INJECTOR_EVERY` turns.
    woken: Deque<Runnable>,
    /// Tasks woken here while this proc still had the work they spawned in their last poll
    /// to run (see `wake_here`), with the deque length at which they are due, ascending.
    deferred: RefCell<VecDeque<(TaskRef, usize)>>,
    /// The oldest deferred task at the last injector turn (see `turn`).
    deferred_oldest: Cell<Option<ThreadId>>,
    /// New work held on this proc, run before the local deque: fibers placed here
    /// (`spawn_on`), and an item taken off the deque's front while sweeping it.
    placed: RefCell<VecDeque<Runnable>>,
    /// The held fiber of a one-proc runtime (`hold_new`); with more procs it is held in the
    /// shared entry (`ProcShared::held`), where they can steal it.
    own_held: OneLine<RefCell<Option<NewFiber>>>,
    /// Whether this is the runtime's only proc.
    alone: bool,
    /// The length of `ready` before the running choice's commit, if turns were owed then
    /// (`usize::MAX` otherwise).
    ready_mark: Cell<usize>,
    /// Turns that fibers of other procs owe this one, and the fibers of this proc that wait
    /// for them (runnable, state `Ready`, but not in `ready`): see `owed`.
    owed: RefCell<Owed>,
    /// Another proc's held fiber as this proc last saw it: the victim's entry, its slot's
    /// ticket, and when (see `held_waited`).
    held_seen: Cell<Option<(usize, u32, Instant)>>,
    fibers: FiberTable,
    stacks: RefCell<StackPool>,
    inbox_buf: RefCell<Vec<InboxMsg>>,
    /// Turns left before the injector is looked at first.
    injector_turn: Cell<u32>,
    /// Turns left before due timers are looked at again.
    timer_turn: Cell<u32>,
    /// Set when a fiber yields: the next pick takes new work before ready fibers.
    prefer_new: Cell<bool>,
    next_token: Cell<u64>,
    budget: Cell<u32>,
    current: OneLine<Cell<Current>>,
    /// The running fiber's yielder; restored by the fiber itself after each suspension.
    yielder: Cell<*const Yielder>,
    /// The start of the running fiber's guard page (0: none), for the overflow handler.
    pub(crate) guard: Cell<usize>,
    /// Set while the worker drops its fibers at shutdown.
    shutting_down: Cell<bool>,
    /// A freed fiber cell's memory, for the next spawn here (`sched::spawn`).
    spare_cell: OneLine<SpareCell>,
    /// How far above its guard page's start a fiber's stack pointer must be for the fiber to
    /// run another thread's body inline (`inline_room`): the guard page, plus a quarter of the
    /// stack size (16 KiB at least).
    inline_margin: usize,
    /// How long the last proc to sleep waits before it checks again for a deadlock while
    /// something outside the runtime may act (doubles up to `outside::RECHECK_MAX`).
    recheck: Cell<Duration>,
}

thread_local! {
    static CONTEXT: Cell<*const Context> = const { Cell::new(ptr::null()) };
}

/// The current proc's context, if this OS thread is a worker.
#[inline(always)]
pub(crate) fn context() -> Option<&'static Context> {
    let p = CONTEXT.with(|c| c.get());
    // SAFETY: CONTEXT is set by `run_worker` to a Context on its own stack and cleared before
    // that frame ends; everything that runs on this thread in between (fibers, tasks) runs
    // inside that frame, so the reference is valid for as long as any caller can hold it.
    unsafe { p.as_ref() }
}

/// `(runtime id, proc, procs)` for the calling thread, if it is a worker.
pub(crate) fn location() -> Option<(u64, usize, usize)> {
    context().map(|c| (c.shared.id, c.index, c.shared.procs.len()))
}

/// What is running on this thread, if it is a worker.
pub(crate) fn current() -> Option<Current> {
    context().map(|c| c.current.get())
}

/// Why `block_fiber` could not block the caller as a fiber.
pub(crate) enum NotAFiber<P> {
    /// An async task: it must await.
    Task,
    /// Not a pcml thread: the caller should park the OS thread (with `prepare` back).
    OsThread(P),
    /// A fiber being dropped at shutdown tried to block.
    Shutdown,
}

/// Blocks the running fiber in `what` on the object at address `obj` (0: none; for a dump):
/// `prepare` gets its blocker, then the fiber suspends until the blocker is unblocked.
#[inline(always)]
pub(crate) fn block_fiber<P: FnOnce(Blocker)>(
    what: &str,
    obj: usize,
    prepare: P,
) -> Result<(), NotAFiber<P>> {
    let Some(ctx) = context() else {
        return Err(NotAFiber::OsThread(prepare));
    };
    match ctx.current.get() {
        Current::Fiber { slot, inlined, .. } => {
            if ctx.shutting_down.get() {
                return Err(NotAFiber::Shutdown);
            }
            let token = ctx.next_token.get();
            ctx.next_token.set(token + 1);
            let e = ctx
                .fibers
                .get(slot)
                .expect("pcml: the running fiber has a slot");
            if e.abort.get() {
                // Cancelled while it ran: unwind before anything is published (dropping
                // `prepare` releases what it holds).
                e.abort.set(false);
                drop(prepare);
                crate::sched::panic::raise_abort();
            }
            e.token.set(token);
            e.wake_pending.set(false);
            e.blocked_in.set(what);
            e.blocked_on.set(obj);
            ctx.budget.set(BUDGET);
            prepare(Blocker::fiber(ctx.shared.id, ctx.index, slot, token));
            // Threads run inline on this stack count as live while it is blocked (see
            // `ProcShared::live`).
            let inlined = inlined as isize;
            if inlined != 0 {
                ctx.count_live_here(inlined);
            }
            let cancelled = ctx.suspend(Suspend::Block, inlined != 0);
            if inlined != 0 {
                ctx.count_live_here(-inlined);
            }
            if cancelled {
                // Woken by its cancellation (or cancelled once woken): the caller's
                // destructors withdraw what `prepare` published.
                crate::sched::panic::raise_abort();
            }
            Ok(())
        }
        Current::Task { .. } => Err(NotAFiber::Task),
        Current::Scheduler => Err(NotAFiber::OsThread(prepare)),
    }
}

/// The bytes of stack left to the running fiber (down to its guard page), or `None` if the
/// caller is not a fiber.
pub(crate) fn fiber_stack_left() -> Option<usize> {
    let ctx = context()?;
    let guard = ctx.guard.get();
    if guard == 0 {
        return None;
    }
    // A local's address approximates the stack pointer (as in `fiber_room`).
    let marker = 0u8;
    let sp = std::hint::black_box(&marker) as *const u8 as usize;
    Some(sp.saturating_sub(guard + stack::page_size()))
}

/// Where the calling fiber lives, if it is one that a proc started and no thread runs inline
/// on it: `(runtime, proc, slot, id)`, what [`abort_fiber`] takes.
#[inline]
pub(crate) fn fiber_home() -> Option<(u64, usize, usize, ThreadId)> {
    let ctx = context()?;
    match ctx.current.get() {
        Current::Fiber {
            slot,
            id,
            main: false,
            inlined: 0,
        } => Some((ctx.shared.id, ctx.index, slot, id)),
        _ => None,
    }
}

/// Cancels fiber `id`, started in `slot` of proc `proc` of runtime `runtime`
/// (`JoinHandle::abort`): on its home proc, at once; from elsewhere through the home proc's
/// inbox. Does nothing if the fiber is gone (its slot empty or another fiber's).
pub(crate) fn abort_fiber(runtime: u64, proc: usize, slot: usize, id: ThreadId) {
    match context() {
        Some(ctx) if ctx.shared.id == runtime && ctx.index == proc => ctx.abort_local(slot, id),
        Some(ctx) if ctx.shared.id == runtime => {
            ctx.shared.send_to(proc, InboxMsg::Abort { slot, id })
        }
        _ => {
            if let Some(shared) = crate::sched::registry::lookup(runtime) {
                shared.send_to(proc, InboxMsg::Abort { slot, id });
            }
        }
    }
}

/// While alive, the event the running fiber blocks on (every branch of a general sync), for a
/// dump; its drop clears the note (an unwind included).
pub(crate) struct WaitNote<'a>(std::marker::PhantomData<&'a ()>);

impl<'a> WaitNote<'a> {
    pub(crate) fn new(detail: &'a dyn crate::sched::dump::Describe) -> Self {
        note_wait(Some(detail));
        WaitNote(std::marker::PhantomData)
    }
}

impl Drop for WaitNote<'_> {
    fn drop(&mut self) {
        note_wait(None);
    }
}

/// Records, for a dump, the event the running fiber is about to block on, or clears it
/// (`None`): see [`WaitNote`].
fn note_wait(detail: Option<&dyn crate::sched::dump::Describe>) {
    if let Some(ctx) = context()
        && let Current::Fiber { slot, .. } = ctx.current.get()
        && let Some(e) = ctx.fibers.get(slot)
    {
        // SAFETY: only the lifetime is erased; the pointer is read only while the fiber is
        // blocked, and cleared by the caller before the event moves.
        let p = detail.map(|d| unsafe {
            std::mem::transmute::<
                &dyn crate::sched::dump::Describe,
                *const (dyn crate::sched::dump::Describe + 'static),
            >(d)
        });
        e.wait_detail.set(p);
    }
}

/// Makes the fiber in `slot` of proc `proc` of runtime `runtime` runnable if its token is
/// still `token`. From the runtime's own procs this touches no shared reference count; from
/// elsewhere it looks the runtime up (and does nothing if the runtime is gone: so is the
/// fiber).
#[inline]
pub(crate) fn wake_fiber(runtime: u64, proc: usize, slot: usize, token: u64) {
    if let Some(ctx) = context()
        && ctx.shared.id == runtime
        && ctx.index == proc
    {
        // On the home proc: no need for the inbox.
        ctx.wake_local(slot, token);
        return;
    }
    wake_fiber_elsewhere(runtime, proc, slot, token);
}

/// [`wake_fiber`] from another proc or thread, through the home proc's inbox. Out of line, so
/// that the local wake-up's path saves no registers for it.
#[inline(never)]
fn wake_fiber_elsewhere(runtime: u64, proc: usize, slot: usize, token: u64) {
    if let Some(ctx) = context()
        && ctx.shared.id == runtime
    {
        metrics::bump(&ctx.me().metrics.sent_wakes);
        if CHOOSING.get() {
            // A choice took this fiber's offer: it owes this proc a turn (see `owed`).
            let epoch = ctx.owed.borrow_mut().owe(proc);
            OWED.set(OWED.get() + 1);
            // Sent once the chooser has suspended, as a fiber of this proc that the choice
            // woke would run no sooner: to this proc's own inbox, which its loop drains next.
            let msg = InboxMsg::SendOwed {
                proc,
                slot,
                token,
                epoch,
                after: usize::MAX,
            };
            ctx.me().inbox.push(msg);
            return;
        }
        ctx.shared.send_to(proc, InboxMsg::Wake { slot, token });
        return;
    }
    if let Some(shared) = crate::sched::registry::lookup(runtime) {
        shared.send_to(proc, InboxMsg::Wake { slot, token });
    }
}

thread_local! {
    /// Set while this thread commits a branch of a choice of several branches
    /// (`begin_choice_commit`).
    static CHOOSING: Cell<bool> = const { Cell::new(false) };
    /// On a proc's worker thread: `Owed::total` of its context, which a choice reads without
    /// looking the context up.
    static OWED: Cell<u32> = const { Cell::new(0) };
}

/// Begins the commit (`do` phase) of a branch of a choice of several branches: until
/// [`end_choice_commit`], fibers of other procs that it wakes owe this proc their turn, and
/// while some do, the fibers of this proc that it wakes wait for them (see the `sched` docs,
/// "Fair choice across procs"). Costs a thread-local store, load and test at each end when
/// nothing is owed (always, on a runtime of one proc); no state is kept in registers across
/// the commit, and nothing needs undoing if it unwinds (a flag left set only makes the next
/// remote wake-up from this thread ask for a `Paid`).
#[inline(always)]
pub(crate) fn begin_choice_commit() {
    CHOOSING.with(|c| c.set(true));
    if OWED.with(|o| o.get()) != 0 {
        mark_ready();
    }
}

/// At the start of a choice of several branches: while turns are owed to this proc, takes the
/// payments already in its inbox, so that fibers that waited for them are queued before the
/// choice looks at its branches (they were due to re-offer by then).
#[inline(always)]
pub(crate) fn settle_owed() {
    if OWED.with(|o| o.get()) != 0 {
        take_payments();
    }
}

#[cold]
fn take_payments() {
    if let Some(ctx) = context() {
        let mut paid = Vec::new();
        ctx.me()
            .inbox
            .take_if(|m| matches!(m, InboxMsg::Paid { .. }), &mut paid);
        for m in paid {
            if let InboxMsg::Paid { by, epoch } = m {
                ctx.paid(by, epoch);
            }
        }
    }
}

/// Ends what [`begin_choice_commit`] began.
#[inline(always)]
pub(crate) fn end_choice_commit() {
    CHOOSING.with(|c| c.set(false));
    if OWED.with(|o| o.get()) != 0 {
        hold_back_woken();
    }
}

/// Notes where the ready queue ends before a choice's commit, while turns are owed.
#[cold]
fn mark_ready() {
    if let Some(ctx) = context() {
        ctx.ready_mark.set(ctx.ready.borrow().len());
    }
}

/// After a choice's commit while turns are owed: the fibers that it woke here wait `behind`.
#[cold]
fn hold_back_woken() {
    if let Some(ctx) = context() {
        let mark = ctx.ready_mark.replace(usize::MAX);
        ctx.hold_back_woken(mark);
    }
}

/// The calling fiber's context and slot, if it may run another thread's body on its own
/// stack: a fiber of runtime `runtime` (on proc `proc` unless that is `usize::MAX`), not
/// shutting down, with at least a quarter of its stack (16 KiB at least) free.
fn inline_room(runtime: u64, proc: usize) -> Option<(&'static Context, usize, u32)> {
    let ctx = context()?;
    if ctx.shared.id != runtime || (proc != usize::MAX && proc != ctx.index) {
        return None;
    }
    fiber_room(ctx)
}

/// [`inline_room`] without the runtime and proc checks: for work known to be this proc's.
#[inline]
fn fiber_room(ctx: &'static Context) -> Option<(&'static Context, usize, u32)> {
    let Current::Fiber { slot, inlined, .. } = ctx.current.get() else {
        return None;
    };
    if ctx.shutting_down.get() {
        return None;
    }
    // The stack grows down to the guard page (of the running fiber: `guard`); a local's
    // address approximates the stack pointer.
    let marker = 0u8;
    let sp = std::hint::black_box(&marker) as *const u8 as usize;
    (sp >= ctx.guard.get() + ctx.inline_margin).then_some((ctx, slot, inlined))
}

/// Runs `body` as thread `id` on the calling fiber (slot `slot`, running `inlined` threads
/// inline already): `current()` names `id` while it runs. The thread is not counted live
/// (`ProcShared::live`) unless the fiber blocks while it runs.
///
/// `body` catches the thread's panics; it unwinds only at shutdown or when the host fiber is
/// cancelled, and `current` names the host again on the way.
#[inline(always)]
fn run_as<R>(
    ctx: &Context,
    slot: usize,
    inlined: u32,
    id: ThreadId,
    body: impl FnOnce() -> R,
) -> R {
    /// Names the host thread again when the inline thread ends, or when the host unwinds
    /// through it (a cancelled host, see `sched::panic::AbortSignal`).
    struct Restore<'a>(&'a Cell<Current>, Current);
    impl Drop for Restore<'_> {
        #[inline(always)]
        fn drop(&mut self) {
            self.0.set(self.1);
        }
    }
    let outer = ctx.current.replace(Current::Fiber {
        slot,
        id,
        main: false,
        inlined: inlined + 1,
    });
    let _restore = Restore(&ctx.current, outer);
    body()
}

/// Runs an unstarted fiber's body on the calling fiber's stack, if the caller may
/// ([`inline_room`]) and the body is still unclaimed; a fiber placed on a proc (`proc` other
/// than `usize::MAX`) is run inline only by a joiner on that proc. While it runs, `current()`
/// names the inlined thread.
pub(crate) fn run_inline(body: &dyn FiberBody, id: ThreadId, runtime: u64, proc: usize) -> bool {
    let Some((ctx, slot, inlined)) = inline_room(runtime, proc) else {
        return false;
    };
    if body.is_claimed() || !body.claim() {
        return false;
    }
    // Counted live since its spawn; from here on it is counted as an inline thread.
    ctx.count_live_here(-1);
    run_as(ctx, slot, inlined, id, || body.run());
    ctx.sweep_claimed();
    true
}

/// The joiner's fast path: if the fiber whose body is at `body` (any proc may run it) is the
/// one its proc holds back (`Context::hold_new`), and the caller may run it inline
/// ([`inline_room`]), takes it back and runs `run` as that thread on the caller's stack,
/// giving it the held reference to the body. Taking it from the slot is the claim: no other
/// thread can run it after that. `None` if it was not there. A held fiber is not counted
/// live, nor is an inline thread unless it blocks (`ProcShared::live`), so nothing is counted
/// for this one.
#[inline]
pub(crate) fn run_held<R>(
    body: *const (),
    id: ThreadId,
    run: impl FnOnce(BodyPtr) -> R,
) -> Option<R> {
    // Held work is this proc's, so of this runtime: no need to check.
    let (ctx, slot, inlined) = fiber_room(context()?)?;
    let held = ctx.take_held_if(|f| ptr::eq(f.body.addr(), body))?;
    // Not dropped as a `NewFiber`, which would cancel the unrun body.
    let held = held.into_body();
    Some(run_as(ctx, slot, inlined, id, || run(held)))
}

/// Arms a timer on the current proc that does `on_fire` at `deadline`; off the procs, on the
/// process-wide fallback timer thread.
pub(crate) fn arm_timer(deadline: Instant, on_fire: OnFire) -> Arc<TimerCell> {
    match context() {
        Some(ctx) => ctx
            .me()
            .timers
            .lock()
            .arm(&ctx.shared, deadline, Some(on_fire)),
        None => crate::sched::timer::arm_fallback(deadline, on_fire),
    }
}

/// Suspends the running fiber to the back of its proc's ready queue.
///
/// Returns `false` (doing nothing) if the caller is not a fiber.
#[inline(always)]
pub(crate) fn yield_fiber() -> bool {
    let Some(ctx) = context() else {
        return false;
    };
    match ctx.current.get() {
        Current::Fiber { inlined, .. } => {
            ctx.budget.set(BUDGET);
            if ctx.suspend(Suspend::Yield, inlined != 0) {
                crate::sched::panic::raise_abort();
            }
            true
        }
        _ => false,
    }
}

/// Counts one operation that completed without blocking; a fiber that has done `BUDGET` of them
/// in a row yields, so a loop over always-ready events cannot monopolise its proc.
#[allow(dead_code)] // called by the event layer's sync
#[inline]
pub(crate) fn consume_budget() {
    if let Some(ctx) = context()
        && matches!(ctx.current.get(), Current::Fiber { .. })
    {
        let left = ctx.budget.get();
        if left <= 1 {
            budget_spent(ctx);
        } else {
            ctx.budget.set(left - 1);
        }
    }
}

/// Shows the watchdog thread `id` as the one this proc runs (for a thread that runs on its
/// joiner's stack, which the worker does not see start) and returns what it showed before;
/// `None` off the procs. Not on the spawn and join path: for named threads only (`dump`).
pub(crate) fn show_running_here(id: u64) -> Option<u64> {
    let ctx = context()?;
    // Relaxed: as in `show_running`.
    let before = ctx.me().watch.running.load(Ordering::Relaxed);
    ctx.show_running(id);
    Some(before)
}

/// Counts one unit of a long computation (`pcml::consume_budget`) against the running
/// thread's budget; returns whether it should give way now: its budget is spent, or the
/// watchdog has marked its proc as hogged (then the budget starts again). `false` off the procs.
#[inline]
pub(crate) fn spend_budget_unit() -> bool {
    let Some(ctx) = context() else {
        return false;
    };
    let left = ctx.budget.get();
    if left <= 1 || ctx.me().watch.preempt_requested() {
        ctx.budget.set(BUDGET);
        return true;
    }
    ctx.budget.set(left - 1);
    false
}

/// The budget's yield, out of line: the switch clobbers every register, and inlined it made
/// each call of `consume_budget` save and restore them all.
#[cold]
#[inline(never)]
fn budget_spent(ctx: &Context) {
    ctx.budget.set(BUDGET);
    let inlined = matches!(ctx.current.get(), Current::Fiber { inlined: 1.., .. });
    if ctx.suspend(Suspend::Yield, inlined) {
        // Cancelled while it waited for its turn: what its last sync took goes with it.
        crate::sched::panic::raise_abort();
    }
}

/// Pushes stealable work (a task just spawned) from the current thread: to this proc's deque
/// on a worker, else to `shared`'s injector.
pub(crate) fn push_runnable(shared: &Arc<Shared>, r: Runnable) {
    match context() {
        Some(ctx) if ptr::eq(&*ctx.shared, &**shared) => {
            ctx.push_new(r);
        }
        _ => shared.push_injector(r),
    }
}

/// Schedules a woken task of runtime `runtime`: on this proc's queue from one of its procs
/// (no reference count on the runtime is touched), else through the runtime's injector;
/// dropped if the runtime is shutting down or gone.
pub(crate) fn push_task(runtime: u64, task: TaskRef) {
    if let Some(ctx) = context()
        && ctx.shared.id == runtime
    {
        if !ctx.shared.is_shutdown() {
            ctx.wake_here(task);
        }
        return;
    }
    if let Some(shared) = crate::sched::registry::lookup(runtime)
        && !shared.is_shutdown()
    {
        shared.push_injector(Runnable::Task(task));
    }
}

/// Registers a task that a poll left pending, so shutdown finds it. Called by the thread that
/// polled it, a proc of its runtime.
pub(crate) fn register_task(task: &TaskRef) {
    if let Some(ctx) = context() {
        ctx.shared.tasks.insert(task.clone());
    }
}

/// Drops queued work at shutdown: a task's future is dropped (completing its join as
/// cancelled) even if something else still holds the task.
pub(crate) fn cancel_runnable(r: Runnable) {
    match r {
        Runnable::Task(t) => t.drop_future(),
        Runnable::Fiber(f) => drop(f),
    }
}

/// Whether a fiber could get a stack on the current proc right now without mapping one, and
/// otherwise whether mapping one would be allowed. Maps one into the pool to find out.
pub(crate) fn reserve_stack(shared: &Shared) -> Result<(), NoStack> {
    match context() {
        Some(ctx) if ptr::eq(&*ctx.shared, shared) => ctx.reserve_stack(),
        _ => {
            let cap = stack::stack_cap();
            if stack::mapped() >= cap {
                Err(NoStack::Cap { cap })
            } else {
                Ok(())
            }
        }
    }
}

/// Frees a fiber cell's memory, or keeps it for the next spawn if this is a proc with room.
///
/// # Safety
/// As [`SpareCell::put`].
#[inline]
pub(crate) unsafe fn recycle_cell(block: ptr::NonNull<u8>, layout: std::alloc::Layout) {
    match context() {
        // SAFETY: as our caller promises.
        Some(ctx) => unsafe { ctx.spare_cell.put(block, layout) },
        // SAFETY: as our caller promises.
        None => unsafe { std::alloc::dealloc(block.as_ptr(), layout) },
    }
}

impl Context {
    /// This proc's spare fiber cell.
    #[inline]
    pub(crate) fn spare_cell(&self) -> &SpareCell {
        &self.spare_cell
    }

    /// [`reserve_stack`] on this proc.
    #[inline]
    pub(crate) fn reserve_stack(&self) -> Result<(), NoStack> {
        let mut pool = self.stacks.borrow_mut();
        if pool.has_free() {
            return Ok(());
        }
        let s = pool.take()?;
        pool.give(s);
        Ok(())
    }

    /// Counts a thread started (+1) or finished (-1) on this proc: `Shared::count_live`
    /// without looking the proc up.
    #[inline]
    pub(crate) fn count_live_here(&self, delta: isize) {
        let c = &self.me().live;
        // Relaxed load and store: only this proc's thread writes its counter; readers
        // (deadlock detection) read it after SeqCst fences once every proc sleeps.
        c.store(c.load(Ordering::Relaxed) + delta, Ordering::Relaxed);
    }

    /// Suspends the running fiber, telling the worker why; `inlined`: whether a thread runs
    /// inline on its stack (`Current::Fiber`). Returns what the worker said when it resumed
    /// the fiber: `true` if it was cancelled meanwhile and must unwind.
    #[inline(always)]
    #[must_use]
    fn suspend(&self, why: Suspend, inlined: bool) -> Resume {
        if inlined {
            return self.suspend_inlined(why);
        }
        self.switch_out(why)
    }

    /// [`suspend`](Self::suspend) while a thread runs inline on the fiber's stack: the worker
    /// names the fiber itself when it resumes it, so the inline thread is named again.
    ///
    /// Inline, not a cold call: with the switch inside a function of its own, every switch
    /// mispredicted a return (a yield ping-pong with one side inline took 74 cycles a yield
    /// instead of 33).
    #[inline(always)]
    fn suspend_inlined(&self, why: Suspend) -> Resume {
        let current = self.current.get();
        let r = self.switch_out(why);
        self.current.set(current);
        r
    }

    /// Hands control back to the worker until it resumes the fiber.
    #[inline(always)]
    fn switch_out(&self, why: Suspend) -> Resume {
        let y = self.yielder.get();
        debug_assert!(!y.is_null());
        // SAFETY: `y` is the running fiber's yielder, set when it first ran and restored after
        // each resumption; it lives on the fiber's stack, which is alive while the fiber runs.
        let r = unsafe { (*y).suspend(why) };
        // Resumed (always on this same proc: fibers never migrate). The worker has set
        // `current` for us; the yielder is ours to restore.
        self.yielder.set(y);
        r
    }

    /// Cancels fiber `id` in `slot` of this proc, if it is still there: a blocked fiber is
    /// made runnable at once (its token consumed, so its blocker's wake-up is stale), and it
    /// unwinds when resumed; a runnable or running one unwinds at its next blocking point or
    /// yield (`block_fiber`, `yield_fiber`).
    fn abort_local(&self, slot: usize, id: ThreadId) {
        let Some(e) = self.fibers.get(slot) else {
            // Finished (or dropped at shutdown).
            return;
        };
        if e.id != id {
            // The slot was reused: the cancelled fiber finished.
            return;
        }
        e.abort.set(true);
        if e.token.replace(0) == 0 {
            // Not blocked: it sees the flag when it next blocks or is resumed.
            return;
        }
        match e.state.get() {
            FiberState::Blocked => {
                e.state.set(FiberState::Ready);
                self.ready.borrow_mut().push_back(slot);
            }
            // Between publishing its blocker and suspending: requeued at once.
            FiberState::Running => e.wake_pending.set(true),
            FiberState::Ready => {}
        }
    }

    fn wake_local(&self, slot: usize, token: u64) {
        let Some(e) = self.fibers.get(slot) else {
            // The fiber is gone (dropped at shutdown): a stale wake-up.
            return;
        };
        if token == 0 || e.token.get() != token {
            // Stale or repeated wake-up.
            return;
        }
        e.token.set(0);
        match e.state.get() {
            FiberState::Blocked => {
                e.state.set(FiberState::Ready);
                self.ready.borrow_mut().push_back(slot);
            }
            // Woken before it finished suspending: the worker requeues it at once.
            FiberState::Running => e.wake_pending.set(true),
            // Already runnable (cannot happen with a fresh token, but harmless).
            FiberState::Ready => {}
        }
    }

    /// Fires the timers that are due, this proc's and those of procs the watchdog has marked
    /// as hogged; returns whether any fired (or were dropped).
    fn fire_due_timers(&self) -> bool {
        // Relaxed: a hint; the watchdog marks a hog at most every tick.
        let hogged = self.shared.hogs.load(Ordering::Relaxed) != 0;
        let mut fired = hogged && self.fire_hogged_timers();
        if self.me().timers.lock().is_empty() {
            return fired;
        }
        let now = Instant::now();
        // Locked only to pop: firing wakes threads, which may arm timers on this proc.
        let due = self.me().timers.lock().take_due(&self.shared, now);
        fired |= !due.is_empty();
        crate::sched::timer::fire_all(due);
        fired
    }

    /// Fires the due timers of the procs the watchdog has marked as hogged (their threads
    /// wake here, or through their home proc's inbox); returns whether any fired.
    #[cold]
    #[inline(never)]
    fn fire_hogged_timers(&self) -> bool {
        let now = Instant::now();
        let mut fired = false;
        for (i, p) in self.shared.procs.iter().enumerate() {
            // Relaxed: a hint, set by the watchdog.
            if i == self.index || p.watch.preempt.load(Ordering::Relaxed) == 0 {
                continue;
            }
            let due = p.timers.lock().take_due(&self.shared, now);
            fired |= !due.is_empty();
            crate::sched::timer::fire_all(due);
        }
        fired
    }

    /// The earliest timer deadline of this proc and of the procs marked as hogged.
    fn next_timer(&self) -> Option<Instant> {
        let mine = self.me().timers.lock().next_deadline();
        if self.shared.hogs.load(Ordering::Relaxed) == 0 {
            return mine;
        }
        self.shared
            .procs
            .iter()
            .filter(|p| p.watch.preempt.load(Ordering::Relaxed) != 0)
            .filter_map(|p| p.timers.lock().next_deadline())
            .chain(mine)
            .min()
    }

    /// Holds a fiber just spawned by this proc's running thread out of the deque, if none is
    /// held yet (else it goes to the deque, where the newest runs first; the held one, the
    /// oldest, runs before them all). Its joiner (typically the spawner, soon) takes it back
    /// with one CAS (none on a one-proc runtime) and runs it inline (`run_held`); otherwise it
    /// is the first new work this proc runs, unless an idle proc steals it first (idle procs
    /// are notified as for a deque push).
    ///
    /// A held fiber is not counted live until it leaves the slot for anything but its
    /// joiner's inline run (`ProcShared::live`); a fiber that goes to the deque is counted
    /// here.
    #[inline]
    pub(crate) fn hold_new(&self, f: NewFiber) {
        if self.alone {
            let mut held = self.own_held.borrow_mut();
            if held.is_none() {
                *held = Some(f);
                return;
            }
            drop(held);
            self.queue_new(f);
            return;
        }
        self.hold_new_shared(f);
    }

    /// [`hold_new`](Self::hold_new) on a runtime of several procs.
    #[inline(never)]
    fn hold_new_shared(&self, f: NewFiber) {
        if let Err(f) = self.me().held.try_put(f) {
            self.queue_new(f);
        }
        self.shared.notify_idle();
    }

    /// Pushes a fiber just spawned here to the local deque, counting it live.
    #[cold]
    fn queue_new(&self, f: NewFiber) {
        self.count_live_here(1);
        self.push_new_quiet(Runnable::Fiber(f));
    }

    /// Takes this proc's held fiber if `want` accepts it.
    #[inline]
    fn take_held_if(&self, want: impl FnOnce(&NewFiber) -> bool) -> Option<NewFiber> {
        if self.alone {
            let mut h = self.own_held.borrow_mut();
            match &*h {
                Some(f) if want(f) => h.take(),
                _ => None,
            }
        } else {
            self.me().held.take_if(want)
        }
    }

    /// Whether this proc holds a fiber (a hint off the one-proc case).
    #[inline]
    fn has_held(&self) -> bool {
        if self.alone {
            self.own_held.borrow().is_some()
        } else {
            self.me().held.is_full()
        }
    }

    /// Tells the watchdog which thread this proc runs (`TASK_BIT` set for a task), for its
    /// report.
    #[inline(always)]
    fn show_running(&self, id: u64) {
        // Relaxed: read only for a report; only this proc writes it.
        self.me().watch.running.store(id, Ordering::Relaxed);
    }

    /// This proc's shared entry.
    #[inline]
    pub(crate) fn me(&self) -> &ProcShared {
        // SAFETY: `me` points into `self.shared`, alive as long as `self` (see the field).
        unsafe { self.me.as_ref() }
    }

    /// Drops fibers at the end of the local deque that the proc pops (the newest) that were
    /// already run inline by their joiners, so a loop of spawns and joins does not grow the
    /// deque. Stops at the first live item, which it keeps, first in line, in `placed`.
    fn sweep_claimed(&self) {
        if !self.placed.borrow().is_empty() {
            // Something is already held first in line; keep the order simple.
            return;
        }
        while let Some(r) = self.pop_new() {
            match r {
                Runnable::Fiber(f) if f.body.is_claimed() => drop(f),
                live => {
                    self.placed.borrow_mut().push_front(live);
                    return;
                }
            }
        }
    }

    #[inline]
    fn drain_inbox(&self) {
        // Through `me`: no bounds check or index arithmetic on every turn.
        if !self.me().inbox.is_empty() {
            self.drain_inbox_slow();
        }
    }

    #[cold]
    fn drain_inbox_slow(&self) {
        let me = &self.shared.procs[self.index];
        let mut buf = std::mem::take(&mut *self.inbox_buf.borrow_mut());
        me.inbox.drain_into(&mut buf);
        let mut run_now = Vec::new();
        for msg in buf.drain(..) {
            match msg {
                InboxMsg::Wake { slot, token } => {
                    metrics::bump(&me.metrics.inbox_wakes);
                    self.wake_local(slot, token)
                }
                InboxMsg::Start(f) => self.placed.borrow_mut().push_back(Runnable::Fiber(f)),
                InboxMsg::Abort { slot, id } => self.abort_local(slot, id),
                InboxMsg::Dump(req) => self.answer_dump(&req),
                InboxMsg::WakeOwed {
                    slot,
                    token,
                    from,
                    epoch,
                } => {
                    if self.take_blocked(slot, token) {
                        run_now.push((slot, from, epoch));
                    } else {
                        // Stale: the fiber was woken otherwise (or is gone); nothing owed.
                        let by = self.index;
                        self.shared.send_to(from, InboxMsg::Paid { by, epoch });
                    }
                }
                InboxMsg::Paid { by, epoch } => self.paid(by, epoch),
                InboxMsg::SendOwed {
                    proc,
                    slot,
                    token,
                    epoch,
                    after,
                } if !self.shutting_down.get() && after != 0 => {
                    // One drain per turn while it waits (it keeps the inbox non-empty).
                    let after = if after == usize::MAX {
                        self.ready.borrow().len()
                    } else {
                        after - 1
                    };
                    let msg = InboxMsg::SendOwed {
                        proc,
                        slot,
                        token,
                        epoch,
                        after,
                    };
                    if after == 0 {
                        self.send_owed(msg);
                    } else {
                        me.inbox.push(msg);
                    }
                }
                msg @ InboxMsg::SendOwed { .. } => self.send_owed(msg),
            }
        }
        *self.inbox_buf.borrow_mut() = buf;
        for (slot, from, epoch) in run_now {
            if !self.shutting_down.get() {
                self.resume_fiber(slot);
            }
            let by = self.index;
            self.shared.send_to(from, InboxMsg::Paid { by, epoch });
        }
    }

    /// Sends the `WakeOwed` of a `SendOwed` whose turn has come.
    fn send_owed(&self, msg: InboxMsg) {
        if let InboxMsg::SendOwed {
            proc,
            slot,
            token,
            epoch,
            ..
        } = msg
        {
            let from = self.index;
            let msg = InboxMsg::WakeOwed {
                slot,
                token,
                from,
                epoch,
            };
            self.shared.send_to(proc, msg);
        }
    }

    /// Consumes the wake-up of the blocked fiber in `slot` if its token is still `token`,
    /// marking it `Ready` without queueing it (the caller runs it); whether it did.
    fn take_blocked(&self, slot: usize, token: u64) -> bool {
        let Some(e) = self.fibers.get(slot) else {
            return false;
        };
        if token == 0 || e.token.get() != token || e.state.get() != FiberState::Blocked {
            return false;
        }
        e.token.set(0);
        e.state.set(FiberState::Ready);
        true
    }

    /// The commit of a choice that ends woke the fibers queued in `ready` from `ready_before`
    /// on, while partners of other procs owed this proc their turn: they wait behind until
    /// those have run (see `owed`).
    fn hold_back_woken(&self, ready_before: usize) {
        let mut ready = self.ready.borrow_mut();
        if ready.len() <= ready_before {
            return;
        }
        if self
            .owed
            .borrow_mut()
            .hold(ready.drain(ready_before..), Instant::now())
        {
            // Counted as a source of wake-ups, so deadlock detection does not take a proc
            // parked with fibers behind for one with nothing to do. SeqCst: read by
            // `is_quiescent` after the sleepers' SeqCst fences.
            self.shared.wake_sources.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// A fiber of proc `by` woken by a choice here has run (`InboxMsg::Paid`).
    fn paid(&self, by: usize, epoch: u32) {
        let mut owed = self.owed.borrow_mut();
        let all_paid = owed.paid(by, epoch);
        OWED.set(owed.total());
        drop(owed);
        if all_paid {
            self.release_behind();
        }
    }

    /// Queues the fibers waiting behind (every debt is paid or given up).
    fn release_behind(&self) {
        let mut owed = self.owed.borrow_mut();
        if !owed.has_behind() {
            return;
        }
        self.ready.borrow_mut().extend(owed.take_behind());
        // SeqCst: as the increment in `hold_back_woken`.
        self.shared.wake_sources.fetch_sub(1, Ordering::SeqCst);
    }

    /// With fibers behind, looks at the procs that owe this one a turn when it is time to
    /// (`Owed::check`); returns whether it gave their debts up and released the fibers.
    fn check_owed(&self) -> bool {
        if !self.owed.borrow().has_behind() {
            return false;
        }
        let procs = &self.shared.procs;
        let check = self.owed.borrow_mut().check(Instant::now(), |p| {
            match procs[p].cpu_clock.load(Ordering::Relaxed) {
                NO_CLOCK => None,
                clock => owed::cpu_time(clock),
            }
        });
        if check == Check::GaveUp {
            OWED.set(0);
            self.release_behind();
            return true;
        }
        false
    }

    /// Adds this proc's threads to a dump: every started fiber with its state and, if blocked,
    /// what it waits on; unstarted and queued work by count. On the worker loop, or from the
    /// running fiber that asked for the dump (which then shows as running).
    pub(crate) fn answer_dump(&self, req: &crate::sched::dump::Request) {
        use crate::sched::dump::{ThreadState, fiber_dump};
        let mut threads = Vec::new();
        self.fibers.for_each(|_, e| {
            let state = match e.state.get() {
                FiberState::Running => ThreadState::Running,
                FiberState::Ready => ThreadState::Runnable,
                FiberState::Blocked => ThreadState::Blocked,
            };
            let blocked = state == ThreadState::Blocked;
            // SAFETY: read only while the fiber is blocked: the string and the described
            // event live in or beyond its suspended `block_fiber` call.
            let (what, detail) = if blocked {
                unsafe { (&*e.blocked_in.get(), e.wait_detail.get().map(|d| &*d)) }
            } else {
                ("", None)
            };
            let obj = e.blocked_on.get();
            threads.push(fiber_dump(e.id, self.index, state, what, obj, detail));
        });
        let unstarted = self.local.len()
            + self.own.borrow().len()
            + self.placed.borrow().len()
            + self.woken.len()
            + self.deferred.borrow().len()
            + usize::from(self.me().held.is_full())
            + usize::from(self.own_held.borrow().is_some());
        req.answer(self.index, threads, unstarted);
    }

    /// Takes one turn: runs the next thing, or returns `false` if this proc found no work.
    ///
    /// Ready fibers and new work (placed fibers, the local deque) take turns, so neither
    /// starves the other; after a yield new work goes first, so the yielder is behind
    /// everything runnable; due deferred tasks join the new work; tasks that yielded run when
    /// neither has anything; every 61st turn an overdue deferred task, yielded tasks, then the
    /// injector go first.
    #[inline]
    fn turn(&self) -> bool {
        // The turn counter, shown to the watchdog (a plain load and store: only this proc
        // writes it).
        let turns = &self.me().watch.turns;
        let tick = turns.load(Ordering::Relaxed).wrapping_add(1);
        turns.store(tick, Ordering::Relaxed);
        let t = self.timer_turn.get();
        if t == 0 {
            self.timer_turn.set(TIMER_EVERY);
            self.fire_due_timers();
            self.check_owed();
        } else {
            self.timer_turn.set(t - 1);
        }
        let countdown = self.injector_turn.get();
        if countdown == 0 {
            self.injector_turn.set(INJECTOR_EVERY);
            // A deferred task that was already the oldest at the last such turn has waited 61
            // turns or more: it runs now, so a proc that keeps spawning cannot starve it.
            let overdue = {
                let mut d = self.deferred.borrow_mut();
                let front = d.front().map(|(t, _)| t.header().id);
                if front.is_some() && front == self.deferred_oldest.replace(front) {
                    self.deferred_oldest.set(None);
                    d.pop_front()
                } else {
                    None
                }
            };
            if let Some((t, _)) = overdue {
                self.run_task(t);
                return true;
            }
            if let Some(r) = self.woken.pop() {
                self.run_new(r);
                return true;
            }
            if let Some(r) = self.steal_injector() {
                self.run_new(r);
                return true;
            }
        } else {
            self.injector_turn.set(countdown - 1);
        }
        let ready_first = !self.prefer_new.replace(false) && tick % 2 == 0;
        if ready_first || !self.has_new_work() {
            // The hot path of ping-pong and yield loops: no `Work` value, no new-work probe.
            let next = self.ready.borrow_mut().pop_front();
            if let Some(slot) = next {
                self.resume_fiber(slot);
                return true;
            }
        }
        self.release_deferred();
        if let Some(r) = self.new_work() {
            self.run_new(r);
            return true;
        }
        let next = self.ready.borrow_mut().pop_front();
        if let Some(slot) = next {
            self.resume_fiber(slot);
            return true;
        }
        if let Some(r) = self.woken.pop() {
            self.run_new(r);
            return true;
        }
        match self.steal_injector().or_else(|| self.steal_others()) {
            Some(r) => {
                self.run_new(r);
                true
            }
            None => false,
        }
    }

    /// Schedules `task`, woken on this proc. If this proc polled it last, and its deque of new
    /// work is longer now than when that poll began, the task waits (in `deferred`) until the
    /// deque is back to that length: what the task spawned before it waited runs first, as a
    /// depth-first run of a tree of spawns would have it. A parent woken by its first child's
    /// reply then takes all its children's replies in one poll, and a parent whose children
    /// block until it receives runs as soon as they have all blocked. Otherwise the task goes
    /// on top of the deque, to run next.
    fn wake_here(&self, task: TaskRef) {
        if let Some((proc, depth)) = task.header().polled_at()
            && proc == self.index
            && self.new_len() > depth
        {
            let mut d = self.deferred.borrow_mut();
            // Kept in ascending order of due length, so the back is the first due.
            let at = d.partition_point(|&(_, due)| due <= depth);
            d.insert(at, (task, depth));
            return;
        }
        self.push_new(Runnable::Task(task));
    }

    /// Moves the deferred tasks now due (their length reached) onto the deque, the one due at
    /// the greatest length (the most recent continuation) on top, where idle procs may also
    /// steal them.
    #[inline]
    fn release_deferred(&self) {
        let mut d = self.deferred.borrow_mut();
        let Some(&(_, due)) = d.back() else { return };
        let len = self.new_len();
        if len > due {
            return;
        }
        let first = d.partition_point(|&(_, due)| due < len);
        for (t, _) in d.drain(first..) {
            self.push_new_quiet(Runnable::Task(t));
        }
        drop(d);
        self.shared.notify_idle();
    }

    /// Pushes new work on this proc's deque (on a one-proc runtime, its private stack) and
    /// tells idle procs.
    #[inline]
    fn push_new(&self, r: Runnable) {
        self.push_new_quiet(r);
        self.shared.notify_idle();
    }

    /// [`push_new`](Self::push_new) without telling idle procs.
    #[inline]
    fn push_new_quiet(&self, r: Runnable) {
        if self.alone {
            self.own.borrow_mut().push(r);
        } else {
            self.local.push(r);
        }
    }

    /// The newest new work of this proc's private stack (one-proc runtimes) or deque.
    #[inline]
    fn pop_new(&self) -> Option<Runnable> {
        if self.alone
            && let Some(r) = self.own.borrow_mut().pop()
        {
            return Some(r);
        }
        // Work stolen from the injector lands in the deque, on a one-proc runtime too.
        if self.local.is_empty() {
            None
        } else {
            self.local.pop()
        }
    }

    /// How much new work this proc has queued (its private stack and its deque).
    #[inline]
    fn new_len(&self) -> usize {
        let own = if self.alone {
            self.own.borrow().len()
        } else {
            0
        };
        own + self.local.len()
    }

    /// Whether this proc's private stack and deque are empty (cheap loads only).
    #[inline]
    fn new_is_empty(&self) -> bool {
        (!self.alone || self.own.borrow().is_empty()) && self.local.is_empty()
    }

    /// Whether placed fibers or the local deque hold anything (cheap loads only).
    #[inline]
    fn has_new_work(&self) -> bool {
        self.has_held() || !self.new_is_empty() || !self.placed.borrow().is_empty()
    }

    /// The held fiber, a placed fiber or the local deque's next item, skipping fibers that
    /// their joiners already ran inline.
    #[inline]
    fn new_work(&self) -> Option<Runnable> {
        if let Some(f) = self.take_held_if(|_| true) {
            // Off the held slot: counted live from now on (see `hold_new`).
            self.count_live_here(1);
            return Some(Runnable::Fiber(f));
        }
        loop {
            let next = match self.placed.borrow_mut().pop_front() {
                Some(r) => Some(r),
                None => self.pop_new(),
            };
            match next {
                Some(Runnable::Fiber(f)) if f.body.is_claimed() => drop(f),
                other => return other,
            }
        }
    }

    fn steal_injector(&self) -> Option<Runnable> {
        loop {
            match self.shared.injector.steal_batch_and_pop(&self.local) {
                Steal::Success(r) => {
                    metrics::bump(&self.me().metrics.injector_pulls);
                    return Some(r);
                }
                Steal::Empty => return None,
                Steal::Retry => {}
            }
        }
    }

    fn steal_others(&self) -> Option<Runnable> {
        let n = self.shared.procs.len();
        for k in 1..n {
            let victim = &self.shared.procs[(self.index + k) % n];
            // Its new work first (the oldest: near the root of a tree of spawns, the most
            // work), then its woken tasks, each into the queue of the same kind here.
            let queued = [
                (&victim.stealer, &self.local),
                (&victim.woken_stealer, &self.woken),
            ];
            let waited = victim.has_queued() && self.left_there(victim);
            for (from, to) in queued.into_iter().filter(|_| waited) {
                loop {
                    match from.steal_batch_and_pop(to) {
                        Steal::Success(r) => {
                            metrics::bump(&self.me().metrics.steals);
                            return Some(r);
                        }
                        Steal::Empty => break,
                        Steal::Retry => {}
                    }
                }
            }
            // Its held fiber only once it has waited `HELD_GRACE`: the victim's joiner is
            // the likeliest to want it, and its spawner the likeliest to talk to it.
            if victim.held.is_full()
                && self.held_waited(victim)
                && let Some(f) = victim.held.take()
            {
                // Counted live from now on, here (see `hold_new`).
                self.count_live_here(1);
                metrics::bump(&self.me().metrics.steals);
                return Some(Runnable::Fiber(f));
            }
        }
        None
    }

    /// Whether `victim`'s held fiber is the one this proc saw held there [`HELD_GRACE`] ago or
    /// more. If it is another (or the first seen), remembers it and says no: the caller looks
    /// again on a later turn, or after a park of at most `HELD_GRACE` (`idle`).
    fn held_waited(&self, victim: &ProcShared) -> bool {
        let (v, ticket) = (victim as *const ProcShared as usize, victim.held.ticket());
        match self.held_seen.get() {
            Some((sv, st, since)) if sv == v && st == ticket => since.elapsed() >= HELD_GRACE,
            _ => {
                self.held_seen.set(Some((v, ticket, Instant::now())));
                false
            }
        }
    }

    /// Whether `victim`'s queued work stays there for [`STEAL_GRACE`]: the proc watches it
    /// that long (giving up at once if work of its own arrives, or if the victim runs or
    /// hands out what it had) before it takes any. See the module docs: work that its own
    /// proc is about to run is not moved away from the threads it talks to.
    #[inline(never)]
    fn left_there(&self, victim: &ProcShared) -> bool {
        let start = Instant::now();
        loop {
            for _ in 0..16 {
                if !victim.has_queued() || self.has_own_work() {
                    return false;
                }
                crate::loom::spin_loop();
            }
            if start.elapsed() >= STEAL_GRACE {
                return victim.has_queued();
            }
        }
    }

    /// Whether work for this proc alone arrived: its inbox, ready fibers, or anything in its
    /// own queues (cheap loads only).
    fn has_own_work(&self) -> bool {
        !self.me().inbox.is_empty()
            || !self.ready.borrow().is_empty()
            || !self.woken.is_empty()
            || self.has_new_work()
            || self.shared.is_shutdown()
    }

    /// Whether there is work this proc could take (cheap loads only).
    fn has_work(&self) -> bool {
        let sh = &*self.shared;
        !sh.procs[self.index].inbox.is_empty()
            || !self.ready.borrow().is_empty()
            || !self.woken.is_empty()
            || !self.deferred.borrow().is_empty()
            || self.has_held()
            || !self.placed.borrow().is_empty()
            || !self.new_is_empty()
            || !sh.injector.is_empty()
            || sh.procs.iter().any(|p| p.has_queued())
            || sh.is_shutdown()
    }

    fn run_new(&self, r: Runnable) {
        match r {
            Runnable::Fiber(f) => self.start_fiber(f),
            Runnable::Task(t) => self.run_task(t),
        }
    }

    fn run_task(&self, task: TaskRef) {
        metrics::bump(&self.me().metrics.polls);
        task.header().set_polled_at(self.index, self.new_len());
        let id = task.header().id;
        self.show_running(id.as_u64() | TASK_BIT);
        self.current.set(Current::Task { id });
        let outcome = task.run(&task);
        self.current.set(Current::Scheduler);
        match outcome {
            TaskRun::Idle => {}
            TaskRun::Reschedule => {
                self.woken.push(Runnable::Task(task));
                self.shared.notify_idle();
            }
            TaskRun::Finished => {
                self.shared.tasks.remove(&task);
                self.shared.thread_finished();
            }
        }
    }

    fn start_fiber(&self, f: NewFiber) {
        if f.body.is_claimed() {
            // Already run inline by its joiner: nothing left to do.
            return;
        }
        let sh = &*self.shared;
        if !sh.take_fiber_slot() {
            self.wait_for_stack(f);
            return;
        }
        let stack = match self.stacks.borrow_mut().take() {
            Ok(s) => s,
            Err(_) => {
                sh.release_fiber_slot();
                self.wait_for_stack(f);
                return;
            }
        };
        // The slot `insert` below gives: where a cancellation finds the fiber.
        let slot = self.fibers.vacant_key();
        if !f.body.claim_at(self.index, slot) {
            // Claimed by its joiner meanwhile.
            self.stacks.borrow_mut().give(stack);
            sh.release_fiber_slot();
            return;
        }
        let guard = stack::guard_range(&stack);
        let (id, main) = (f.id, f.main);
        let co = Coroutine::with_stack(stack, move |y: &Yielder, _: Resume| {
            let ctx = context().expect("pcml: a fiber started off its proc");
            ctx.yielder.set(y);
            // A cancellation that came before the start is the body's to see (`claim_at`).
            f.body.run();
            // `f` drops here, already claimed: nothing more happens.
        });
        // SAFETY: called from the worker loop, with no fiber running and no slot borrowed.
        let inserted = unsafe { self.fibers.insert(co, id, main, guard) };
        debug_assert_eq!(inserted, slot);
        metrics::add(&self.me().metrics.fibers, 1);
        self.resume_fiber(slot);
    }

    /// Parks an unstarted fiber until a stack is freed.
    fn wait_for_stack(&self, f: NewFiber) {
        let sh = &*self.shared;
        sh.stack_waiters.lock().unwrap().push_back(f);
        sh.stack_waiting.fetch_add(1, Ordering::SeqCst);
    }

    #[inline(always)]
    fn resume_fiber(&self, slot: usize) {
        let e = self
            .fibers
            .get(slot)
            .expect("pcml: resumed a fiber that has no slot");
        debug_assert_ne!(e.state.get(), FiberState::Running);
        metrics::bump(&self.me().metrics.resumes);
        e.state.set(FiberState::Running);
        self.show_running(e.id.as_u64());
        self.current.set(Current::Fiber {
            slot,
            id: e.id,
            main: e.main,
            inlined: 0,
        });
        self.guard.set(e.guard.0);
        // Cancelled since it last ran: it unwinds as soon as it resumes.
        let cancelled = e.abort.get();
        if cancelled {
            e.abort.set(false);
        }
        // SAFETY: the slot exists and its fiber is not running (we just set its state from a
        // state other than Running); the table does not change while the fiber runs
        // (fibers.rs invariants).
        let result = unsafe { (*e.coroutine()).resume(cancelled) };
        self.guard.set(0);
        self.current.set(Current::Scheduler);
        match result {
            CoroutineResult::Yield(Suspend::Yield) => {
                e.state.set(FiberState::Ready);
                self.ready.borrow_mut().push_back(slot);
                self.prefer_new.set(true);
            }
            CoroutineResult::Yield(Suspend::Block) => {
                if e.wake_pending.replace(false) {
                    e.state.set(FiberState::Ready);
                    self.ready.borrow_mut().push_back(slot);
                } else {
                    e.state.set(FiberState::Blocked);
                }
            }
            CoroutineResult::Return(()) => {
                // SAFETY: worker loop, no fiber running; `e` is not used after this.
                let (co, _, _) = unsafe { self.fibers.remove(slot) };
                self.stacks.borrow_mut().give(co.into_stack());
                metrics::add(&self.me().metrics.fibers, -1);
                self.fiber_finished();
            }
        }
    }

    fn fiber_finished(&self) {
        let sh = &*self.shared;
        sh.release_fiber_slot();
        sh.thread_finished();
        if sh.stack_waiting.load(Ordering::SeqCst) > 0
            && let Some(f) = sh.stack_waiters.lock().unwrap().pop_front()
        {
            sh.stack_waiting.fetch_sub(1, Ordering::SeqCst);
            self.push_new(Runnable::Fiber(f));
        }
    }

    /// No work found: spin a little, then park.
    fn idle(&self) {
        let sh = &*self.shared;
        let me = &sh.procs[self.index];
        // A turn for the watchdog: an idle proc is not running a thread.
        let turns = &me.watch.turns;
        turns.store(
            turns.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
        // Only `spin_limit` idle procs spin at once; the others look for `SPIN_OVER_LIMIT`
        // (becoming spinners if some stop meanwhile: a proc that just handed work to the
        // spinner is likely to get work back from it) and park. With more procs than cores,
        // idle procs that all spin keep the threads that have work off the cores, and one
        // spinner finds new work as soon as several would.
        let mut may_spin = sh.num_searching.fetch_add(1, Ordering::SeqCst) < sh.spin_limit;
        let start = Instant::now();
        let mut found = false;
        'spin: loop {
            for _ in 0..64 {
                if self.has_work() {
                    found = true;
                    break 'spin;
                }
                for _ in 0..8 {
                    crate::loom::spin_loop();
                }
            }
            if self.fire_due_timers() || self.check_owed() {
                found = true;
                break;
            }
            // Collect ready I/O here rather than wait for the driver thread to get a core
            // (it wakes our fibers through our own queue: `has_work` sees them next look).
            sh.poll_io_now();
            if !may_spin {
                // Relaxed: a hint; the count includes this proc.
                if sh.num_searching.load(Ordering::Relaxed) <= sh.spin_limit {
                    may_spin = true;
                } else if start.elapsed() >= SPIN_OVER_LIMIT {
                    break;
                }
                continue;
            }
            let spun = start.elapsed();
            if spun >= SPIN {
                break;
            }
            if spun >= SPIN_HOT {
                // Give the core away between looks: if the machine has more runnable threads
                // than cores (another proc of ours among them), spinning would keep the thread
                // that has our work off the core.
                std::thread::yield_now();
            }
        }
        sh.num_searching.fetch_sub(1, Ordering::SeqCst);
        if found {
            return;
        }
        // SeqCst: the sleeper's half of the Dekker pairs with `send_to` (inbox) and
        // `notify_idle` (deques, injector): set the flag, count ourselves, then look once more.
        me.sleeping.store(true, Ordering::SeqCst);
        sh.num_sleeping.fetch_add(1, Ordering::SeqCst);
        // SeqCst fence: pairs with the fences in `send_to`, `notify_idle` and `push_injector`.
        fence(Ordering::SeqCst);
        if !self.has_work() {
            let mut recheck = None;
            if sh.num_sleeping.load(Ordering::SeqCst) == sh.procs.len() {
                recheck = self.check_deadlock().map(|d| Instant::now() + d);
            }
            // Sleep exactly until the next timer, if any, or the next deadlock re-check, and
            // no longer than `HELD_GRACE` if another proc holds a fiber: it may be left
            // waiting there.
            let next = self.next_timer();
            let mut next = match (next, recheck) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if sh.procs.iter().any(|p| p.held.is_full()) {
                let grace = Instant::now() + HELD_GRACE;
                next = Some(next.map_or(grace, |d| d.min(grace)));
            }
            if let Some(due) = self.owed.borrow().next_check() {
                next = Some(next.map_or(due, |d| d.min(due)));
            }
            match next {
                Some(deadline) => {
                    let now = Instant::now();
                    if deadline > now {
                        metrics::bump(&me.metrics.parks);
                        me.parker.park(Some(deadline - now));
                    }
                }
                None => {
                    metrics::bump(&me.metrics.parks);
                    me.parker.park(None)
                }
            }
        }
        // Before anything this proc does awake is visible (deadlock detection across
        // runtimes, `outside`).
        crate::sched::outside::bump_epoch();
        if sh.num_sleeping.fetch_sub(1, Ordering::SeqCst) == sh.procs.len() {
            // The first proc awake: the watchdog may be asleep too.
            crate::sched::watchdog::wake_watchdog(sh);
        }
        me.sleeping.store(false, Ordering::SeqCst);
    }

    /// Called by the last proc to fall asleep: if main is blocked and nothing can ever wake
    /// anything, settle `block_on` with a deadlock. Returns when to look again if only
    /// something outside the runtime (an OS thread, another runtime) may still act.
    fn check_deadlock(&self) -> Option<Duration> {
        use crate::sched::outside::{self, Outside, RECHECK_MAX, RECHECK_MIN};
        let sh = &*self.shared;
        if !sh.detect_deadlock || !sh.main.is_waiting() || !sh.is_quiescent() {
            self.recheck.set(RECHECK_MIN);
            return None;
        }
        match outside::check(sh, self.recheck.get()) {
            Outside::Recheck(after) => {
                self.recheck.set((after * 2).min(RECHECK_MAX));
                Some(after)
            }
            Outside::Quiet => {
                let blocked = sh.live_count();
                let waiting_for_stack = sh.stack_waiting.load(Ordering::SeqCst);
                // Settling wakes the thread in `block_on`, which may act (`outside`).
                outside::bump_epoch();
                sh.main.settle_deadlock(blocked, waiting_for_stack);
                None
            }
        }
    }

    /// Drops everything left on this proc, fibers on their home proc as decision 2 requires.
    fn shutdown(&self) {
        self.shutting_down.set(true);
        self.drain_inbox();
        // Unstarted work: dropping a body completes its join state as cancelled.
        if let Some(f) = self.take_held_if(|_| true) {
            cancel_runnable(Runnable::Fiber(f));
        }
        for r in self.placed.borrow_mut().drain(..) {
            cancel_runnable(r);
        }
        while let Some(r) = self.pop_new() {
            cancel_runnable(r);
        }
        self.ready.borrow_mut().clear();
        self.release_behind();
        self.ready.borrow_mut().clear();
        while let Some(r) = self.woken.pop() {
            cancel_runnable(r);
        }
        for (t, _) in self.deferred.borrow_mut().drain(..) {
            cancel_runnable(Runnable::Task(t));
        }
        for slot in self.fibers.keys() {
            // SAFETY: worker loop, no fiber running.
            let (mut co, id, main) = unsafe { self.fibers.remove(slot) };
            self.current.set(Current::Fiber {
                slot,
                id,
                main,
                inlined: 0,
            });
            // Unwinds the suspended fiber's stack here, running its destructors.
            co.force_unwind();
            self.current.set(Current::Scheduler);
            self.stacks.borrow_mut().give(co.into_stack());
            self.shared.release_fiber_slot();
            self.shared.thread_finished();
        }
    }

    /// Whether this proc is dropping its fibers at shutdown.
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.get()
    }
}

/// The body of proc `index`'s OS thread.
pub(crate) fn run_worker(
    shared: Arc<Shared>,
    index: usize,
    local: Deque<Runnable>,
    woken: Deque<Runnable>,
) {
    let shared_stack_size = shared.stack_size;
    let shared_procs = shared.procs.len();
    let me = ptr::NonNull::from(&*shared.procs[index]);
    let ctx = Context {
        me,
        stacks: RefCell::new(StackPool::new(shared.stack_size)),
        shared,
        index,
        local,
        own: RefCell::new(Vec::new()),
        ready: RefCell::new(VecDeque::new()),
        woken,
        deferred: RefCell::new(VecDeque::new()),
        deferred_oldest: Cell::new(None),
        placed: RefCell::new(VecDeque::new()),
        own_held: OneLine::new(RefCell::new(None)),
        alone: shared_procs == 1,
        held_seen: Cell::new(None),
        ready_mark: Cell::new(usize::MAX),
        owed: RefCell::new(Owed::new(shared_procs)),
        fibers: FiberTable::new(),
        inbox_buf: RefCell::new(Vec::new()),
        injector_turn: Cell::new(INJECTOR_EVERY),
        prefer_new: Cell::new(false),
        timer_turn: Cell::new(TIMER_EVERY),
        next_token: Cell::new(1),
        budget: Cell::new(BUDGET),
        current: OneLine::new(Cell::new(Current::Scheduler)),
        yielder: Cell::new(ptr::null()),
        shutting_down: Cell::new(false),
        guard: Cell::new(0),
        spare_cell: OneLine::new(SpareCell::new()),
        inline_margin: stack::page_size() + (shared_stack_size / 4).max(16 * 1024),
        recheck: Cell::new(crate::sched::outside::RECHECK_MIN),
    };
    CONTEXT.with(|c| c.set(&ctx));
    if let Some(clock) = owed::this_thread_clock() {
        // Relaxed: read only as a hint (an unset clock makes a debt count as busy).
        ctx.me().cpu_clock.store(clock, Ordering::Relaxed);
    }
    let _own = crate::sched::outside::OwnThread::enter();
    overflow::install_for_this_thread(&ctx.guard, ctx.shared.stack_size);
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            overflow::uninstall_for_this_thread();
            CONTEXT.with(|c| c.set(ptr::null()));
        }
    }
    let _clear = Clear;
    while !ctx.shared.is_shutdown() {
        ctx.drain_inbox();
        if !ctx.turn() {
            ctx.idle();
        }
    }
    ctx.shutdown();
    // SeqCst: pairs with the load in `Shared::is_quiescent`.
    ctx.shared.exited.fetch_add(1, Ordering::SeqCst);
}
