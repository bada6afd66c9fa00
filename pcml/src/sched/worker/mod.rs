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
//!   deferred task still the oldest after 64 turns runs anyway. A task woken during its own
//!   poll (a yield) goes to `woken`, a work-stealing deque run oldest first when there is no
//!   new work;
//! - a held fiber: the oldest unstarted fiber spawned on the proc, kept out of the deque (see
//!   `Context::hold_new`), so that the usual spawn-then-join costs no read-modify-write: the
//!   joiner takes the fiber back with plain stores and loads (an asymmetric barrier puts the
//!   cost on the rare thief, see `held`) and runs it inline. It is held in the proc's shared
//!   entry (`held`), where idle procs may steal it, or, on a runtime of one proc, in its
//!   private context (`own_held`), with no atomic operation at all;
//! - an [`Inbox`]: the landing pad through which others wake this proc's fibers;
//! - its fibers' slots (`fibers`), its stack pool, and a [`Parker`] to sleep on.
//!
//! A global injector takes work pushed from outside the procs. The loop drains the inbox, then
//! alternates between `ready` and new work (held, placed, `local`) so that neither starves the
//! other (a fiber spinning on `yield_now` goes to the back of `ready`, so everything else
//! runnable runs first), moves due `deferred` tasks onto `local` before it takes new work,
//! runs `woken` when both are empty, and every 64th turn looks at an overdue deferred task,
//! `woken` and the injector first (as Go does for its global queue) so they are not starved
//! by local work. Before a proc starts a burst of fibers that its last thread spawned, it
//! deals parts of it to idle procs (`Context::deal_burst`; the `sched` docs, "A burst of
//! spawns is split with idle procs"). Due timers (`timer`) fire between threads. With
//! nothing to do the proc steals (only work that has waited `STEAL_GRACE` in its victim's
//! queues: see the `sched` docs), spins briefly (a futex wake-up costs about 45 us on this
//! machine against 200 ns for a cache-line round trip), then parks until its next timer, or
//! until woken; on a machine with more threads ready to run than CPUs it parks without
//! spinning (`crowd`).
//!
//! # Files
//! - `mod.rs`: the [`Context`] (a proc's private state), the loop (`run_worker`), and the
//!   messages procs send each other;
//! - `shared.rs`: what a proc shares with the others ([`ProcShared`]) and what the runtime's
//!   procs share ([`Shared`]);
//! - `run.rs`: one turn of the loop; starting, resuming, suspending and finishing fibers;
//!   polling tasks; due timers;
//! - `work.rs`: new work (held, placed, `local`, deferred and woken tasks) and stealing;
//! - `wake.rs`: wake-ups, the inbox, and turns owed by a choice's remote wake-ups;
//! - `idle.rs`: spinning, parking, deadlock checks, shutdown;
//! - `ready.rs`: the ready queue, a ring of fiber slots with no borrow flag;
//! - `crowd.rs`: whether the machine is crowded (idle procs then do not spin);
//! - `calls.rs`: what running code asks of its proc (block, run a joined fiber inline, arm a
//!   timer, yield, spend the budget, push work).
//!
//! # Invariants
//! - A started fiber is in exactly one of: running (state `Ready`, the slot `current` names),
//!   its proc's `ready` queue (state `Ready`), waiting behind turns owed to its proc (state
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
use crate::sched::timer::{OnFire, TimerHeap, TimerRef};
use crate::sched::watchdog::{ProcWatch, TASK_BIT};
use crate::task::{TaskRef, TaskRegistry, TaskRun};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering, fence};
use std::sync::{Arc, Mutex};

mod calls;
mod crowd;
mod idle;
mod ready;
mod run;
mod shared;
mod wake;
mod work;

pub(crate) use calls::*;
pub(crate) use crowd::Crowding;
pub(crate) use shared::*;
pub(crate) use wake::*;

/// How long an idle proc looks for work before it parks. A futex wake-up costs about 45 us on
/// this machine, so two procs passing work back and forth must not park between hand-offs.
const SPIN: Duration = Duration::from_micros(100);
/// For this long the idle proc spins on its core; after it, until `SPIN`, it yields the core
/// between looks, so that on an oversubscribed machine (more runnable threads than cores) the
/// thread that has the work can run. Yielding sooner made cross-proc hand-offs 4x slower on an
/// idle machine here (ping-pong across 2 procs: 0.76 M against 3.4 M msgs/s), so the hot phase
/// covers ordinary hand-off latencies.
const SPIN_HOT: Duration = Duration::from_micros(50);
/// How many looks at its own queues alone an idle proc takes, one `spin_loop` pause apart,
/// before it counts itself among the searchers and looks further (see `idle`): about 2 us.
const QUICK_LOOKS: u32 = 64;
/// How long an idle proc looks for work when `spin_limit` others already spin (see `idle`).
const SPIN_OVER_LIMIT: Duration = Duration::from_micros(10);
/// How an idle proc's recent spins fared, as adaptive mutexes learn how long to spin from
/// their own history: a running share of the recent idle gaps that a spin covered (work came
/// within `SPIN` of the look's start), in 1/1024ths, each new gap weighing 1/8. A proc spins
/// while that share is at least a half, and otherwise only looks as a proc over the spin limit
/// does (`SPIN_OVER_LIMIT`), then parks, and learns from the park how long the gap was (see
/// `Context::idle`). Where work comes within microseconds (an echo server's next request, a
/// partner's message) spins pay and go on; where gaps outlast the spin (a server whose load
/// generator shares the cores, a quiet program) the proc parks at once and leaves the core.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SpinHistory(u16);

impl SpinHistory {
    /// The whole share: every recent gap was covered.
    const FULL: u16 = 1024;

    /// A fresh proc spins.
    pub(crate) const fn new() -> SpinHistory {
        SpinHistory(Self::FULL)
    }

    /// Whether this proc's next idle look spins.
    #[inline]
    pub(crate) fn spin_pays(self) -> bool {
        self.0 >= Self::FULL / 2
    }

    /// The history with one more gap, `covered` if a spin found (or would have found) its work.
    #[inline]
    pub(crate) fn record(self, covered: bool) -> SpinHistory {
        let kept = self.0 - self.0 / 8;
        SpinHistory(if covered { kept + Self::FULL / 8 } else { kept })
    }
}

#[cfg(test)]
mod spin_history_tests {
    use super::SpinHistory;

    /// `n` gaps, each covered or not by `pattern`, in turn.
    fn after(mut h: SpinHistory, pattern: &[bool], n: usize) -> SpinHistory {
        for i in 0..n {
            h = h.record(pattern[i % pattern.len()]);
        }
        h
    }

    #[test]
    fn a_proc_spins_until_its_gaps_outlast_the_spin() {
        let fresh = SpinHistory::new();
        assert!(fresh.spin_pays());
        // One long gap in a run of short ones changes nothing.
        assert!(after(fresh, &[false], 1).spin_pays());
        assert!(after(fresh, &[true, true, true, false], 100).spin_pays());
        // A run of long gaps stops the spin within a few idle looks ...
        let long = after(fresh, &[false], 8);
        assert!(!long.spin_pays());
        assert!(!after(fresh, &[false, false, true], 100).spin_pays());
        // ... and a few short ones bring it back.
        assert!(after(long, &[true], 3).spin_pays());
        // The share stays within its bounds however long the history.
        assert!(after(fresh, &[true], 1000).spin_pays());
        assert!(after(after(fresh, &[false], 1000), &[true], 6).spin_pays());
    }
}

/// How long work must wait in another proc's queues before an idle proc takes it (see
/// `Context::left_there`). A proc that spawns a thread and then blocks runs it within a
/// microsecond or two; an idle proc that took it at once would pin it far from the threads it
/// talks to, and every message between them would then cross procs.
const STEAL_GRACE: Duration = Duration::from_micros(20);
/// How long another proc's held fiber (the one its spawner is likeliest to join or talk to
/// next) must stay held before an idle proc takes it: short enough that a thread computing
/// without a sync point does not hold it back for long. One stolen filter of the primes
/// sieve made every later number cross procs twice: 2-proc runs of `examples/primes.rs
/// spawn` took 1.5x the 1-proc time on a busy machine.
const HELD_GRACE: Duration = Duration::from_millis(2);
/// The CPU time the held fiber's proc must have spent on other work while the fiber waited
/// before an idle proc takes it (see `Context::held_waited`): a proc that kept the fiber
/// waiting only because the OS gave its thread no core will run it as soon as it gets one,
/// beside the threads it was spawned to talk to, so it is not moved then.
const HELD_BUSY: Duration = Duration::from_millis(1);
/// How long an idle proc's refusals of another proc's queued work (its thread had no core,
/// `Context::left_there`) must go on, that proc's queue never seen empty by looks at most
/// four times this apart, before it takes the work all the same, if that is more than a
/// pair's second half: woken tasks, or two items of new work or more
/// (`ProcShared::has_backlog`). A hundred times `STEAL_GRACE`: a spawner that the OS took
/// off its core right after spawning a pair runs it once it has a core again, but a queue
/// still full a hundred graces later waits on a thread that the OS keeps from running it,
/// and the idle proc that keeps looking at it is the one that can (its own wake-up from a
/// park is often what took the victim's core: the two threads then share one core's run
/// queue, and the victim's clock stands still at every look).
const STARVED_AFTER: Duration = HELD_GRACE;
/// Every this many turns a proc with armed timers fires the due ones (a power of two: `turn`
/// tests the turn counter's low bits).
const TIMER_EVERY: u32 = 32;
const _: () = assert!(TIMER_EVERY.is_power_of_two());
/// Every this many turns a proc looks at the injector before its own queues (Go uses 61).
///
/// A multiple of `TIMER_EVERY` read off the same turn counter: `turn` tests it only inside
/// the timers' branch, so the common turn pays one test of the counter's low bits for both.
/// (A countdown of its own, every 62nd turn, cost each turn a load, a test, a decrement and a
/// store: 5 of a fiber yield's 146 instructions, callgrind `examples/yield_only`.) Being a
/// power of two, the injector turn always falls on an even turn, one on which the alternation
/// of `turn` would have looked at the ready fibers first: they lose one such turn in 64 to
/// work that waits longer anyway.
const INJECTOR_EVERY: u32 = 2 * TIMER_EVERY;
const _: () = assert!(INJECTOR_EVERY % TIMER_EVERY == 0 && INJECTOR_EVERY.is_power_of_two());
/// Every this many turns a busy proc looks for ready I/O (`Driver::poll_now`, unless an idle
/// proc waits in the poller; tokio's workers look every 61 ticks). A multiple of `TIMER_EVERY`,
/// tested inside the timers' branch of `turn` as the injector's turn is.
///
/// Every 32nd turn, as the timers, a 2-proc hyper server under `wrk -t2 -c100` on the 2-core
/// machine settled with each proc sharing its core with one `wrk` thread, and each response the
/// proc wrote woke that thread, which took the core from the proc at once (a preemption, two
/// context switches, a request). A busy proc that looks less often leaves more of the events
/// to the proc that waits in the poller: its server's threads were preempted 0.0055-0.019
/// times a request instead of 0.014-0.067 (10 alternations), and it took 5,613 ns of CPU a
/// request instead of 6,017 (tokio `multi_thread(2)`: 5,464) for 178 k requests/s instead of
/// 169 k (tokio 183 k), each run measured after a 1 s warm-up run. Every 128th turn it took
/// more again (5,448 ns against 5,288, 6 alternations); one proc moved within the noise
/// (5,280 ns against 5,274). Measured from a fresh server, as the bench does, the gain is
/// smaller: with the next rule (an I/O batch wakes a sleeping proc only on an uncrowded
/// machine), 4,849 ns against 4,949 (tokio 4,642), preemptions 0.004-0.013 a request
/// against 0.026-0.050 (tokio 0.005-0.021), 8 alternations; and the bench's 2-proc ratios
/// (`pcml-bench --only http --procs 2 --runs 6`, 5 alternations) moved within their noise:
/// requests/s 0.923x-0.975x of tokio (median 0.952x) against 0.919x-0.975x (0.951x), tokio's
/// CPU a request over pcml's 0.924x-0.981x (0.962x) against 0.913x-0.963x (0.951x).
const IO_EVERY: u32 = 2 * TIMER_EVERY;
const _: () = assert!(IO_EVERY % TIMER_EVERY == 0 && IO_EVERY.is_power_of_two());
/// Every this many injector turns (`INJECTOR_EVERY`), a proc runs its oldest new work first
/// if more is queued above it (`Context::take_oldest_new`): an item below the top of the deque
/// waits 244 turns at most. Every injector turn cost a skynet of tasks 17 instructions a leaf
/// (1.7%, callgrind, `examples/skynet 10000|100000 tasks-once`: the pick starts a subtree
/// near the root early), every fourth 3 (0.3%).
const OLDEST_EVERY: u32 = 4;
/// An idle proc's spin looks at other procs' queues every this many looks at its own
/// (`Context::has_work_sparing`): about every 1.6 us.
const OTHERS_EVERY: u32 = 8;
/// Syncs that complete without blocking before a fiber yields anyway.
pub(crate) const BUDGET: u32 = 128;

/// How many joined tasks may run nested inside awaiting tasks' polls at once on a proc
/// ([`Context::run_joined_task`]): each adds the joined task's poll to the worker's stack.
const JOIN_DEPTH_MAX: u32 = 8;

/// What an `.await` of a task's join handle ran in its place ([`Context::run_joined_task`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Joined {
    /// Nothing: the caller waits for the task.
    Nothing,
    /// The awaited task itself (finished or not).
    Target,
    /// Another task queued since the awaiting task's poll began: the caller asks again
    /// unless the awaited task finished meanwhile.
    Other,
}

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
    /// Schedule this task here: woken elsewhere while a choice it made here was pending
    /// (`Context::wake_here`).
    Task(TaskRef),
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
        /// The task's header, alive while the proc polls it.
        header: ptr::NonNull<crate::task::Header>,
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

/// Another proc's held fiber as an idle proc saw it first (`Context::held_waited`).
#[derive(Clone, Copy)]
struct HeldSeen {
    /// The victim's entry, as an address.
    victim: usize,
    /// Its held slot's ticket.
    ticket: u32,
    when: Instant,
    /// The CPU time of the victim's thread then, if its clock could be read.
    cpu: Option<Duration>,
}

/// A run of refused steals from one victim (`Context::left_there`).
#[derive(Clone, Copy)]
struct Refusals {
    /// The victim's entry, as an address.
    victim: usize,
    /// When the first refused look began, and when the last ended.
    first: Instant,
    last: Instant,
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
    ready: ready::ReadyQueue,
    /// Tasks woken during their own poll (always `Runnable::Task`), oldest first. They run
    /// when there is no new work, and first every `INJECTOR_EVERY` turns.
    woken: Deque<Runnable>,
    /// Tasks woken here while this proc still had the work they spawned in their last poll
    /// to run (see `wake_here`), with the deque length at which they are due, ascending.
    deferred: RefCell<VecDeque<(TaskRef, usize)>>,
    /// Set while this proc dispatches readiness events (`io_dispatch`): the tasks they wake
    /// are not continuations of work they spawned, so `wake_here` does not defer them.
    io_dispatch: Cell<bool>,
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
    /// Whether other procs share this proc's OS thread (a carrier of several procs: see
    /// `run_carrier`); then it takes no work from other procs in its own turn, only when
    /// every proc of its carrier is out of work.
    mates: bool,
    /// The contexts of the procs sharing this proc's OS thread, this one included, when
    /// `mates` (null otherwise): they live in `run_carrier`'s frame.
    carrier: Cell<*const [Context]>,
    /// The length of `ready` before the running choice's commit, if turns were owed then
    /// (`usize::MAX` otherwise).
    ready_mark: Cell<usize>,
    /// Turns that fibers of other procs owe this one, and the fibers of this proc that wait
    /// for them (runnable, state `Ready`, but not in `ready`): see `owed`.
    owed: RefCell<Owed>,
    /// Another proc's held fiber as this proc last saw it: the victim's entry, its slot's
    /// ticket, when, and the CPU time the victim's thread had used then (see `held_waited`).
    held_seen: Cell<Option<HeldSeen>>,
    /// Each proc's held-slot ticket when this proc last decided how to park (`idle`): a
    /// ticket that moved since means that proc spawns, so its next held fiber may be left
    /// waiting there.
    held_tickets: RefCell<Vec<u32>>,
    /// The watchdog's turn count of this proc (`ProcWatch::turns`) after its last park that
    /// ended by timeout: if no turn ran anything since, the next `idle` parks at once
    /// instead of spinning (nobody handed this proc work, so none is on its way).
    timed_out_at: Cell<Option<u32>>,
    /// How this proc's recent idle gaps compared with a spin: whether its next `idle` spins.
    spin_history: Cell<SpinHistory>,
    /// Set when a steal was refused because the victim's thread had no core (`left_there`):
    /// until this proc's next park ends, other procs' queued work does not count as work for
    /// it (`has_work`), and that park lasts `HELD_GRACE` at most. Otherwise the idle proc,
    /// seeing the work, would look, be refused, and look again without ever parking, on a
    /// core the victim's thread may be waiting for.
    refused: Cell<bool>,
    /// This proc's refused steals from one victim since its queue was last seen empty
    /// (`left_there`): once the first is `STARVED_AFTER` ago, its backlog is taken even with
    /// its clock standing still.
    refused_since: Cell<Option<Refusals>>,
    /// Set when a joiner took this proc's held fiber to run it inline (`run_held`), on a
    /// runtime of several procs; cleared by the next look for new work (`new_work`), which
    /// then runs the oldest queued spawn first: the one spawned right after the held one,
    /// likely its partner (see "Partners spawned back to back stay together" in the `sched`
    /// docs).
    held_joined: Cell<bool>,
    /// Set when a fiber spawned by the running thread went to the deque (the held slot was
    /// full), on a runtime of several procs; cleared by the next look for new work
    /// (`new_work`), which first splits the burst with idle procs if it is one
    /// (`deal_burst`).
    burst: Cell<bool>,
    /// Fibers the running thread queued on the deque since the last look for new work
    /// (`queue_new_notify`); read and cleared by `deal_burst`.
    burst_spawns: Cell<usize>,
    fibers: FiberTable,
    /// Fibers spawned here while `SPILL_FROM` started fibers or more lived here, the proc
    /// their current block goes to, the blocks dealt so far (the turn: a block kept here by
    /// the tests does not take one), whether `sched_seen` has been read, and this thread's
    /// CPU and run-queue wait times at the last block's decision, or when `SPILL_WATCH`
    /// started fibers first lived here (see `spill_to`).
    spilled: Cell<usize>,
    spill_target: Cell<usize>,
    spill_wanted: Cell<usize>,
    spill_turn: Cell<usize>,
    sched_watched: Cell<bool>,
    sched_seen: Cell<(u64, u64)>,
    stacks: RefCell<StackPool>,
    inbox_buf: RefCell<Vec<InboxMsg>>,
    /// Injector turns left before the oldest new work is run first (see `turn`).
    oldest_turn: Cell<u32>,
    /// Set when a fiber yields while new work may be queued (`new_maybe`): the next pick
    /// takes new work before ready fibers.
    prefer_new: Cell<bool>,
    /// Set by every push of new work onto the held slot (`own_held` or this proc's shared
    /// one), `own`, `local` or `placed` ([`Context::note_new`]); cleared by `has_new_work`
    /// when it finds them all empty. So it is set whenever any of them holds something, and
    /// `has_new_work`, asked at every yield and every other turn, answers false with one
    /// load while none does, as it nearly always does in a fiber loop. A plain `Cell`: only
    /// this proc's thread pushes onto them (a fiber placed here from another proc or from
    /// outside comes through the inbox, which this thread drains into `placed`; the deque's
    /// and the held slot's other ends only take), and a taker that empties them meanwhile
    /// leaves it set, which only costs the next look its loads.
    new_maybe: Cell<bool>,
    next_token: Cell<u64>,
    budget: Cell<u32>,
    /// How many joined tasks run nested inside awaiting tasks' polls right now
    /// ([`Context::run_joined_task`]).
    join_depth: Cell<u32>,
    current: OneLine<Cell<Current>>,
    /// The cell of the task polled now whose run-queue reference count the first waker clone
    /// made on this thread may take over instead of counting one more (null: none); see
    /// [`Context::run_task`] and [`calls::take_donated_count`]. Null whenever no task runs.
    donated: Cell<*const ()>,
    /// The innermost thread run inline on the running fiber's stack ([`calls::InlineRun`]),
    /// or null: set by `run_as`, popped when the run ends; `suspend_inlined` notes it in the
    /// fiber's slot and nulls it while the fiber is suspended, so it is null whenever
    /// anything but a fiber with an inline run is running.
    inline_top: Cell<*const calls::InlineRun>,
    /// The running fiber's yielder; restored by the fiber itself after each suspension.
    yielder: Cell<*const Yielder>,
    /// The start of the running fiber's guard page, for the overflow handler: the last
    /// fiber's while the loop or a task runs (not cleared at a switch; `current` says whether
    /// a fiber runs), 0 before any ran and once one ended.
    pub(crate) guard: Cell<usize>,
    /// Set while the worker drops its fibers at shutdown.
    shutting_down: Cell<bool>,
    /// A freed fiber cell's memory, for the next spawn here (`sched::spawn`).
    spare_cell: OneLine<SpareCell>,
    /// A finished async wait's offer memory, for the next async wait here (`chan`'s
    /// `DirectWait`; see [`calls::take_spare_offer`]).
    spare_offer: SpareCell,
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
    // SAFETY: CONTEXT is set by `run_worker` to a Context on its own stack (by `run_carrier`
    // to one of the contexts in its frame, which never move) and cleared before that frame
    // ends; everything that runs on this thread in between (fibers, tasks) runs
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

    /// The contexts of the procs sharing this proc's OS thread, this one included (empty
    /// unless `mates`).
    pub(crate) fn carrier_mates(&self) -> &[Context] {
        // SAFETY: null-free: a dangling empty slice, or `run_carrier`'s vector of contexts,
        // which is built before any of them is entered and lives until its frame ends; every
        // caller runs on that thread inside that frame.
        unsafe { &*self.carrier.get() }
    }

    /// Whether this proc is dropping its fibers at shutdown.
    pub(crate) fn is_shutting_down(&self) -> bool {
        self.shutting_down.get()
    }
}

impl Context {
    /// Proc `index`'s private state, with its deques' owner ends; `mates`: whether other procs
    /// share its OS thread (see `run_carrier`).
    fn new(
        shared: Arc<Shared>,
        index: usize,
        local: Deque<Runnable>,
        woken: Deque<Runnable>,
        mates: bool,
    ) -> Self {
        let shared_stack_size = shared.stack_size;
        let shared_procs = shared.procs.len();
        let me = ptr::NonNull::from(&*shared.procs[index]);
        Context {
            me,
            stacks: RefCell::new(StackPool::new(shared.stack_size)),
            shared,
            index,
            local,
            own: RefCell::new(Vec::new()),
            ready: ready::ReadyQueue::new(),
            woken,
            deferred: RefCell::new(VecDeque::new()),
            io_dispatch: Cell::new(false),
            deferred_oldest: Cell::new(None),
            placed: RefCell::new(VecDeque::new()),
            own_held: OneLine::new(RefCell::new(None)),
            alone: shared_procs == 1,
            mates,
            carrier: Cell::new(ptr::slice_from_raw_parts(
                ptr::NonNull::<Context>::dangling().as_ptr(),
                0,
            )),
            held_seen: Cell::new(None),
            held_tickets: RefCell::new(vec![0; shared_procs]),
            timed_out_at: Cell::new(None),
            spin_history: Cell::new(SpinHistory::new()),
            refused: Cell::new(false),
            refused_since: Cell::new(None),
            held_joined: Cell::new(false),
            burst: Cell::new(false),
            burst_spawns: Cell::new(0),
            ready_mark: Cell::new(usize::MAX),
            owed: RefCell::new(Owed::new(shared_procs)),
            fibers: FiberTable::new(),
            spilled: Cell::new(0),
            spill_target: Cell::new(index),
            spill_wanted: Cell::new(index),
            spill_turn: Cell::new(0),
            sched_watched: Cell::new(false),
            sched_seen: Cell::new((0, 0)),
            inbox_buf: RefCell::new(Vec::new()),
            oldest_turn: Cell::new(OLDEST_EVERY),
            prefer_new: Cell::new(false),
            new_maybe: Cell::new(true),
            next_token: Cell::new(1),
            budget: Cell::new(BUDGET),
            join_depth: Cell::new(0),
            current: OneLine::new(Cell::new(Current::Scheduler)),
            donated: Cell::new(ptr::null()),
            inline_top: Cell::new(ptr::null()),
            yielder: Cell::new(ptr::null()),
            shutting_down: Cell::new(false),
            guard: Cell::new(0),
            spare_cell: OneLine::new(SpareCell::new()),
            spare_offer: SpareCell::new(),
            inline_margin: stack::page_size() + (shared_stack_size / 4).max(16 * 1024),
            recheck: Cell::new(crate::sched::outside::RECHECK_MIN),
        }
    }

    /// Makes this context the thread's current proc (a carrier switching procs).
    #[inline]
    fn enter(&self) {
        CONTEXT.with(|c| c.set(self));
        overflow::point_at(&self.guard);
        // The thread's mirror of the owed turns is this proc's, not those of the proc of the
        // same carrier that ran before it.
        self.mirror_owed();
    }
}

/// What a turn of a proc's loop did ([`Context::step`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Step {
    /// It ran a fiber or a task.
    Ran,
    /// It found nothing to do.
    Idle,
    /// The runtime is shutting down: the loop ends.
    Stop,
}

/// One proc's deques, owner ends: new work and woken tasks.
pub(crate) type ProcDeques = (usize, Deque<Runnable>, Deque<Runnable>);

/// How many turns in a row a proc of a carrier of several procs may take while it has work.
const CARRIER_BATCH: usize = 32;

/// The body of an OS thread that runs `procs` (a carrier: see the `sched` docs' placement
/// policy). With one proc, its worker loop; with several, their turns in rotation.
pub(crate) fn run_carrier(shared: Arc<Shared>, mut procs: Vec<ProcDeques>) {
    if procs.len() == 1 {
        let (index, local, woken) = procs.pop().expect("one proc");
        return run_worker(shared, index, local, woken);
    }
    // Built whole before any is entered: the vector never moves afterwards.
    let ctxs: Vec<Context> = procs
        .into_iter()
        .map(|(index, local, woken)| Context::new(shared.clone(), index, local, woken, true))
        .collect();
    let thread = ThisThread::get();
    for ctx in &ctxs {
        thread.record(ctx.me());
        ctx.carrier.set(ptr::from_ref(&ctxs[..]));
    }
    let _own = crate::sched::outside::OwnThread::enter();
    overflow::install_for_this_thread(&ctxs[0].guard, shared.stack_size);
    ctxs[0].enter();
    let _clear = ClearContext;
    while !shared.is_shutdown() {
        let mut ran = false;
        for ctx in &ctxs {
            if ctx.pass_idle_turn() {
                continue;
            }
            ctx.enter();
            // A proc with work keeps the thread for up to `CARRIER_BATCH` turns, so that the
            // empty turns of its idle mates (an inbox drain and a look at empty queues each)
            // are paid once per batch, not once per switch of its threads.
            for _ in 0..CARRIER_BATCH {
                ctx.drain_inbox();
                if !ctx.carrier_turn() {
                    break;
                }
                ran = true;
            }
            // Nothing of this proc runs until its next turn: the watchdog must not name its
            // last thread as the one holding the carrier.
            ctx.show_running(0);
        }
        // One thief for the carrier: its procs share one thread, so whichever of them runs
        // stolen work, it runs there; each steal looks at every proc of other carriers
        // once (`carrier_has_work` looks as the same proc).
        if !ran && !ctxs[0].steal_for_carrier() {
            Context::idle_all(&ctxs);
        }
    }
    for ctx in &ctxs {
        ctx.enter();
        ctx.shutdown();
    }
    for _ in &ctxs {
        // SeqCst: pairs with the load in `Shared::is_quiescent`.
        shared.exited.fetch_add(1, Ordering::SeqCst);
    }
}

/// Clears the thread's context and overflow registration when a worker's frame ends.
struct ClearContext;

impl Drop for ClearContext {
    fn drop(&mut self) {
        overflow::uninstall_for_this_thread();
        CONTEXT.with(|c| c.set(ptr::null()));
    }
}

/// What the procs run by the calling OS thread record of it for the others.
struct ThisThread {
    /// Its CPU clock, if it can be had: procs owed a turn read it (`owed`).
    clock: Option<libc::clockid_t>,
    /// The kernel's id of the thread: idle procs read its state by it (`movable_hog`).
    tid: libc::pid_t,
}

impl ThisThread {
    fn get() -> Self {
        Self {
            clock: owed::this_thread_clock(),
            // SAFETY: gettid has no preconditions.
            tid: unsafe { libc::gettid() },
        }
    }

    /// Records the thread in `proc`, one of the procs it runs.
    fn record(&self, proc: &ProcShared) {
        // Relaxed, both: read only as hints (an unset clock makes a debt count as busy; an
        // unset id, the thread as not runnable).
        if let Some(clock) = self.clock {
            proc.cpu_clock.store(clock, Ordering::Relaxed);
        }
        proc.os_tid.store(self.tid, Ordering::Relaxed);
    }
}

/// The body of proc `index`'s OS thread.
#[inline(never)]
pub(crate) fn run_worker(
    shared: Arc<Shared>,
    index: usize,
    local: Deque<Runnable>,
    woken: Deque<Runnable>,
) {
    let ctx = Context::new(shared, index, local, woken, false);
    CONTEXT.with(|c| c.set(&ctx));
    ThisThread::get().record(ctx.me());
    let _own = crate::sched::outside::OwnThread::enter();
    overflow::install_for_this_thread(&ctx.guard, ctx.shared.stack_size);
    let _clear = ClearContext;
    // The shutdown flag is read by the turns that fire timers (`Context::step`) and after an
    // idle look or park, not on every turn.
    if !ctx.shared.is_shutdown() {
        loop {
            ctx.drain_inbox();
            match ctx.step::<true>() {
                Step::Ran => {}
                Step::Idle => {
                    ctx.idle();
                    if ctx.shared.is_shutdown() {
                        break;
                    }
                }
                Step::Stop => break,
            }
        }
    }
    ctx.shutdown();
    // SeqCst: pairs with the load in `Shared::is_quiescent`.
    ctx.shared.exited.fetch_add(1, Ordering::SeqCst);
}
