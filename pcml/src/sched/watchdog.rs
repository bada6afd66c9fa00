//! Starvation freedom: long loops give way with [`consume_budget`], and a watchdog keeps a
//! thread that computes without a sync point from holding up the rest of the runtime.
//!
//! ```
//! // A long computation on a fiber: `consume_budget` lets the other threads of its proc run
//! // now and then (it yields every 128 calls, or at once when the thread has held its proc
//! // for a whole time slice).
//! let total = pcml::run(|| {
//!     let worker = pcml::spawn(|| {
//!         let mut sum = 0u64;
//!         for i in 0..1_000_000u64 {
//!             sum = sum.wrapping_add(i * i);
//!             pcml::consume_budget();
//!         }
//!         sum
//!     });
//!     // The same in an async task.
//!     let task = pcml::spawn_task(async {
//!         let mut n = 0u64;
//!         for i in 0..100_000u64 {
//!             n += i % 7;
//!             pcml::consume_budget_async().await;
//!         }
//!         n
//!     });
//!     worker.join().unwrap() + task.join().unwrap()
//! });
//! assert!(total > 0);
//! ```
//!
//! pcml switches threads only at sync points: a blocking operation, a `yield_now`, a sync
//! that completes at once 128 times in a row. A thread that computes for a second without one
//! holds its proc for that second. What then happens to the proc's other work:
//! - **Work that may move, moves.** Every runtime has a watchdog thread (as Go's `sysmon`)
//!   that looks at each proc every [`TICK`] (10 ms). A proc that has run the same thread for
//!   a whole [`TIME_SLICE`] (10 ms; so seen after 10 to 20 ms) is marked as hogged: the other
//!   procs then fire its due timers (a task whose `sleep` was armed there wakes on time, on
//!   another proc), and take its queued async tasks and unstarted fibers as idle procs always
//!   do (the watchdog wakes one to look). [`consume_budget`] yields at once on a hogged proc,
//!   whatever its count.
//! - **Work that cannot move, waits.** A started fiber never leaves its proc (its stack holds
//!   addresses of the proc's thread-local data), nor does a fiber placed with `spawn_on`.
//!   Nor, today, does a task that the hog itself woke on its proc while work the task had
//!   spawned was still queued there (the proc keeps such a task in a private list until that
//!   work has run). On a runtime of one proc nothing can move at all. Then the watchdog says so on stderr, once
//!   per episode, naming the thread (its id, name and spawn site if it was spawned through a
//!   [`SpawnBuilder`](crate::SpawnBuilder); a thread that `join` runs on its joiner's stack
//!   is named as itself if it was spawned so, else as its joiner) when it sees work held up: wake-ups of the proc's fibers waiting in
//!   its inbox, and on a runtime of one proc also due timers and work sent from outside the
//!   runtime. (What the hog itself made runnable or spawned on its proc is private to the
//!   proc: it is moved if it may move, as above, but not seen, so not reported.) [`Builder::watchdog`](crate::Builder::watchdog)
//!   turns the watchdog off.
//!
//! What to do about a hog: call [`consume_budget`] (or `consume_budget_async().await` in a
//! task) in the loop, or run the computation on the blocking pool with
//! [`spawn_blocking`](crate::spawn_blocking), which has OS threads of its own.
//!
//! # Why pcml does not preempt fibers
//!
//! Go preempts a goroutine anywhere by sending its OS thread a signal and switching stacks in
//! the handler; the Manticore runtime of the Parallel CML paper preempts on a timer signal
//! too. Both compile every function they may interrupt, so they know at each instruction
//! where the pointers are and that no lock or half-written structure is live. Rust code
//! compiled by rustc has no such safepoints, and switching a fiber out at an arbitrary
//! instruction is unsound in general:
//! - the fiber may hold a `std::sync::Mutex` guard, a `RefCell` borrow or a spin lock:
//!   the next fiber on that OS thread that takes it deadlocks or panics, since a lock's owner is
//!   the OS thread, not the fiber;
//! - the fiber may be inside `malloc`, the stdout lock or any code that is not
//!   async-signal-safe: a signal handler that switches stacks there runs other code in the
//!   middle of it;
//! - thread-local data (`thread_local!`, `!Send` values on the stack) is tied to the OS thread:
//!   a fiber switched out in the middle of a `with` on a thread-local lets another fiber see
//!   or change it half-updated;
//! - the compiler may keep values in registers across what it believes is straight-line code;
//!   only a function call that the compiler sees (a sync point) is a place where switching
//!   stacks is known to preserve them as the calling convention says.
//!
//! So preemption stays cooperative, as in tokio and in CML's original implementation on
//! SML/NJ's cooperative threads: [`consume_budget`] is the cheap preemption point a long loop
//! offers (a decrement and two loads; a yield when the budget is spent or the watchdog has
//! asked).
//!
//! # Implementation
//! Each proc stores its turn counter (the count of threads it has picked to run) and the id of
//! the thread it runs into `ProcWatch`, a cache line only it writes on the hot path (the
//! turn counter replaced a private one, so a turn costs one more store: the running id). The
//! watchdog reads both every tick; a proc that is not asleep and whose counter has not moved
//! for [`TIME_SLICE`] is hogged. The watchdog then stores the counter's value in `preempt`
//! (which [`consume_budget`] compares with the counter), counts the proc in `Shared::hogs`,
//! and wakes a sleeping proc. At every look at a hogged proc it also notes in `computes`
//! whether the proc's OS thread used three quarters of a time slice of CPU since the proc's
//! last turn: a proc whose thread waits for a core stops taking turns too, and is marked so
//! that its queued work moves, but it computes nothing (only a computing hog is reported, and
//! a task's pending choice leaves only a computing hog, see the `sched` docs, "Fair choice
//! across procs"). Procs fire the due timers of hogged procs with their own (every
//! 32 turns and when idle, and an idle proc parks no later than a hogged proc's next timer):
//! each proc's timer heap is behind a spin lock for that, held only to arm and to take due
//! timers. When the counter moves again, the watchdog unmarks the proc. Once every proc has
//! slept through `QUIET_TICKS` ticks in a row, the watchdog sleeps too, until the first proc
//! to wake wakes it.
//!
//! # Invariants
//! - `ProcWatch::turns` and `running` are written only by their proc's worker thread.
//! - `preempt` and `computes` are written only by the watchdog, which clears `computes` when
//!   it unmarks the proc; `Shared::hogs` counts the procs it has marked and not yet unmarked.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::sched::worker::{self, ProcShared, Shared};

/// How often the watchdog looks at the procs.
pub const TICK: Duration = Duration::from_millis(10);

/// How long a proc may run one thread before the watchdog marks it as hogged (Go's `sysmon`
/// preempts after 10 ms too).
pub const TIME_SLICE: Duration = Duration::from_millis(10);

/// How many looks in a row must find every proc asleep, none of them having taken a turn
/// since the look before, before the watchdog sleeps until a proc wakes it: 100 ms of a
/// runtime gone quiet. Before, it slept at the first look that found every proc asleep, and
/// the first proc to wake then woke it through a futex, on the proc's way back to work: a
/// server whose proc sleeps in the I/O poller between bursts of readiness paid that often.
/// Worse, a look that found a proc between its two flags (`sleeping` set, not yet counted in
/// `num_sleeping`, or the reverse on waking) neither ticked nor slept but looked again at
/// once, for as long as that proc's thread had no core: under callgrind, which runs one
/// thread at a time, `examples/echo_load pcml 1 0 N` spent 44% of the process's
/// instructions in the watchdog's loop (6,768 instructions a round trip, whole process,
/// difference of N = 200 and 600; 3,571 now, tokio `current_thread` 3,050).
const QUIET_TICKS: u32 = 10;

/// `preempt`'s mark bit: set with the turn counter it was taken at.
const MARK: u64 = 1 << 63;

/// Marks a task's id in `ProcWatch::running` (ids are far below 2^62).
pub(crate) const TASK_BIT: u64 = 1 << 62;

/// What a proc shows the watchdog: on a cache line of its own, written by the proc on every
/// turn and read by the watchdog every tick.
#[derive(Debug, Default)]
pub(crate) struct ProcWatch {
    /// Turns the proc has taken, wrapping (also its turn parity, `Context::turn`). Written by
    /// the proc only (a plain load and store).
    pub(crate) turns: AtomicU32,
    /// The id of the thread the proc runs or last ran (`TASK_BIT` set for a task). Written by
    /// the proc only.
    pub(crate) running: AtomicU64,
    /// `MARK | turns` when the watchdog marked the proc as hogged at that turn count, else 0.
    /// Written by the watchdog only.
    pub(crate) preempt: AtomicU64,
    /// Whether the hogged proc's OS thread computed (used three quarters of a time slice of
    /// CPU since the proc's last turn) when the watchdog last looked, rather than waiting for
    /// a core. Written by the watchdog only; false while the proc is not marked.
    pub(crate) computes: AtomicBool,
    /// Procs (bit `i` for proc `i`, procs below 64) whose inbox this proc filled while they
    /// slept on a crowded machine, and which it has not unparked yet: it does at its next
    /// timer turn or when it runs out of work, and the watchdog does for a hogged proc (see
    /// the `sched` docs, "On a crowded machine, a wake-up of a sleeping proc leaves when its
    /// waker's turn ends"). Set by the proc; taken (swapped out) by the proc or the watchdog,
    /// either of which then unparks those procs. Relaxed throughout: a bit only says an unpark is owed. The messages were
    /// pushed, and the push's fence paired with the sleeper's, before the bit was set; the
    /// unpark that pays it is what the sleeper waits for, and one paid twice (taken by one
    /// side while the other set it again) only wakes a proc that finds nothing new.
    pub(crate) unparks_owed: AtomicU64,
}

impl ProcWatch {
    /// Whether the watchdog has asked the running thread to give way: it marked the proc at
    /// the turn that is still running.
    #[inline]
    pub(crate) fn preempt_requested(&self) -> bool {
        // Relaxed, both: a hint; the worst a stale value does is one yield too many or too few.
        let p = self.preempt.load(Ordering::Relaxed);
        p == MARK | u64::from(self.turns.load(Ordering::Relaxed))
    }

    /// Whether the proc is hogged by a thread that computes ([`preempt_requested`], and its OS
    /// thread used the CPU meanwhile), not merely left without a core by a busy machine.
    ///
    /// [`preempt_requested`]: Self::preempt_requested
    #[inline]
    pub(crate) fn computing_hog(&self) -> bool {
        // Relaxed: a hint, as `preempt_requested`.
        self.preempt_requested() && self.computes.load(Ordering::Relaxed)
    }
}

/// Counts one unit of work of a long computation, and lets the other threads of the proc run
/// now and then: a fiber yields (as [`yield_now`](crate::yield_now)) when it has counted 128
/// units since it last gave way, or at once when it has held its proc for a whole time slice
/// (see the [module docs](self)).
///
/// Call it in loops that do not sync. It costs a decrement and two loads when it does not
/// yield. In an async task it cannot suspend: use [`consume_budget_async`]. Outside a runtime
/// it does nothing.
///
/// ```
/// pcml::run(|| {
///     let ch = pcml::Chan::new();
///     let tx = ch.clone();
///     // On one proc, the receiver runs only when the computing fiber gives way.
///     let rx = pcml::spawn(move || ch.recv());
///     let mut x = 0u64;
///     for i in 0..10_000u64 {
///         x = x.wrapping_mul(31).wrapping_add(i);
///         pcml::consume_budget();
///     }
///     tx.send(x);
///     assert_eq!(rx.join().unwrap(), x);
/// });
/// ```
#[inline]
pub fn consume_budget() {
    if worker::spend_budget_unit() {
        // Not in a fiber (a task, the worker loop), `yield_fiber` does nothing.
        worker::yield_fiber();
    }
}

/// The async [`consume_budget`]: counts one unit of work, and is pending once (letting the
/// proc run other threads) when the budget is spent or the watchdog has asked the running
/// task to give way. Ready at once outside a runtime and in other executors.
///
/// ```
/// pcml::run(|| {
///     let sum = pcml::spawn_task(async {
///         let mut sum = 0u64;
///         for i in 0..10_000u64 {
///             sum += i;
///             pcml::consume_budget_async().await;
///         }
///         sum
///     });
///     assert_eq!(sum.join().unwrap(), 49_995_000);
/// });
/// ```
pub fn consume_budget_async() -> ConsumeBudget {
    ConsumeBudget { yielded: false }
}

/// The future of [`consume_budget_async`]: `.await` it once per unit of work in a long loop.
///
/// ```
/// use pcml::ConsumeBudget;
///
/// async fn checksum(data: &[u8]) -> u64 {
///     let mut sum = 0u64;
///     for chunk in data.chunks(1024) {
///         sum += chunk.iter().map(|&b| u64::from(b)).sum::<u64>();
///         let turn: ConsumeBudget = pcml::consume_budget_async();
///         turn.await; // lets other threads of this proc run when the budget is spent
///     }
///     sum
/// }
///
/// pcml::run(|| {
///     let data = vec![7u8; 64 * 1024];
///     let h = pcml::spawn_task(async move { checksum(&data).await });
///     assert_eq!(h.join().unwrap(), 7 * 64 * 1024);
/// });
/// ```
#[derive(Debug)]
#[must_use = "futures do nothing unless awaited"]
pub struct ConsumeBudget {
    yielded: bool,
}

impl Future for ConsumeBudget {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.yielded || !worker::spend_budget_unit() {
            return std::task::Poll::Ready(());
        }
        self.yielded = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

/// The watchdog's view of one proc.
struct Seen {
    /// The proc's turn counter when last seen moving.
    turns: u32,
    /// When it was first seen at that value.
    since: Instant,
    /// The CPU time of the proc's thread then (`None` if its clock cannot be read).
    cpu_since: Option<Duration>,
    /// Whether the watchdog has marked the proc as hogged.
    hogged: bool,
    /// Whether it has reported this episode.
    reported: bool,
}

/// How often the watchdog looks for partial deadlocks, when asked to
/// ([`Builder::report_deadlocks`](crate::Builder::report_deadlocks)).
pub(crate) const DEADLOCK_CHECK: Duration = Duration::from_secs(1);

/// The watchdog's search for partial deadlocks (`waitfor`), when on.
struct DeadlockCheck {
    /// When to look next.
    next: Instant,
    /// The threads already reported: each is stuck for good, so it is reported once.
    reported: std::collections::HashSet<crate::ThreadId>,
}

impl DeadlockCheck {
    /// Looks, if it is time and no proc is hogged (a hogged proc answers a dump late, and the
    /// watchdog must not wait for it), and logs what it had not reported yet.
    fn tick(&mut self, shared: &Arc<Shared>, seen: &[Seen]) {
        let now = Instant::now();
        if now < self.next || seen.iter().any(|s| s.hogged) {
            return;
        }
        self.next = now + DEADLOCK_CHECK;
        for d in crate::sched::waitfor::find(shared) {
            let mut new = false;
            for id in d.threads().iter().filter_map(|t| t.id()) {
                new |= self.reported.insert(id);
            }
            if new {
                crate::log::partial_deadlock(&d);
            }
        }
    }
}

/// Starts `shared`'s watchdog thread; it also looks for partial deadlocks every
/// [`DEADLOCK_CHECK`] if `report_deadlocks`.
pub(crate) fn start(
    shared: Arc<Shared>,
    report_deadlocks: bool,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("pcml-watchdog".into())
        .spawn(move || run(&shared, report_deadlocks))
}

/// The watchdog's loop: until the runtime shuts down, look at every proc each tick.
fn run(shared: &Arc<Shared>, report_deadlocks: bool) {
    let mut check = report_deadlocks.then(|| DeadlockCheck {
        next: Instant::now() + DEADLOCK_CHECK,
        reported: Default::default(),
    });
    let _own = crate::sched::outside::OwnThread::enter();
    let now = Instant::now();
    let mut seen: Vec<Seen> = shared
        .procs
        .iter()
        .map(|p| Seen {
            turns: p.watch.turns.load(Ordering::Relaxed),
            since: now,
            cpu_since: proc_cpu(p),
            hogged: false,
            reported: false,
        })
        .collect();
    // Looks in a row that found every proc asleep and none had taken a turn since the last.
    let mut quiet = 0;
    while !shared.is_shutdown() {
        let (awake, moved) = look(shared, &mut seen);
        quiet = if awake || moved { 0 } else { quiet + 1 };
        if quiet < QUIET_TICKS {
            // A proc is awake, or was since the last look, or the runtime has just gone
            // quiet: tick on. A server whose procs sleep in the poller between bursts of
            // readiness keeps its watchdog on this timer, instead of waking it through a
            // futex at each proc's wake-up (below).
            shared.watchdog.park(Some(TICK));
            if let Some(c) = &mut check {
                c.tick(shared, &seen);
            }
            continue;
        }
        quiet = 0;
        // Every proc has slept for `QUIET_TICKS` ticks: sleep until the first to wake wakes
        // us (`wake_watchdog`). (If one is waking meanwhile, it is counted awake and we look
        // again, then tick: a proc between its two flags in `sleep` is never waited for in
        // a loop.)
        // SeqCst: pairs with the SeqCst swap in `wake_watchdog` and the procs' SeqCst
        // updates of `num_sleeping`: either the waking proc sees the flag, or we see it
        // awake below.
        shared.watchdog_asleep.store(true, Ordering::SeqCst);
        if shared.num_sleeping.load(Ordering::SeqCst) == shared.procs.len() && !shared.is_shutdown()
        {
            // Looking for partial deadlocks, wake up for that at least.
            shared.watchdog.park(check.as_ref().map(|_| DEADLOCK_CHECK));
        }
        shared.watchdog_asleep.store(false, Ordering::Relaxed);
        if let Some(c) = &mut check {
            c.tick(shared, &seen);
        }
        let now = Instant::now();
        for (s, p) in seen.iter_mut().zip(shared.procs.iter()) {
            s.turns = p.watch.turns.load(Ordering::Relaxed);
            s.since = now;
            s.cpu_since = proc_cpu(p);
        }
    }
}

/// Wakes `shared`'s watchdog if it sleeps because every proc slept: called by a proc that
/// wakes.
pub(crate) fn wake_watchdog(shared: &Shared) {
    // SeqCst: see `run`.
    if shared.watchdog_asleep.load(Ordering::SeqCst)
        && shared.watchdog_asleep.swap(false, Ordering::SeqCst)
    {
        shared.watchdog.unpark();
    }
}

/// One look at every proc; returns whether any proc was awake, and whether any proc's turn
/// counter moved since the last look.
fn look(shared: &Shared, seen: &mut [Seen]) -> (bool, bool) {
    let now = Instant::now();
    let (mut awake, mut moved) = (false, false);
    for (index, (s, p)) in seen.iter_mut().zip(shared.procs.iter()).enumerate() {
        let turns = p.watch.turns.load(Ordering::Relaxed);
        // Relaxed: a hint; a proc that has just gone to sleep is seen asleep next tick.
        let asleep = p.sleeping.load(Ordering::Relaxed);
        awake |= !asleep;
        moved |= turns != s.turns;
        if asleep || turns != s.turns {
            s.turns = turns;
            s.since = now;
            s.cpu_since = proc_cpu(p);
            if s.hogged {
                s.hogged = false;
                p.watch.preempt.store(0, Ordering::Relaxed);
                p.watch.computes.store(false, Ordering::Relaxed);
                shared.hogs.fetch_sub(1, Ordering::Relaxed);
            }
            continue;
        }
        // A proc that holds its thread pays no owed unpark until it takes a turn: the
        // watchdog pays them for it.
        shared.pay_unparks(p);
        if s.hogged {
            // Still hogged: let a sleeping proc look at what it left waiting.
            if p.has_queued() || p.held.is_full() || p.timers_due(now) {
                shared.wake_sleeper();
            }
        } else if now.duration_since(s.since) >= TIME_SLICE {
            s.hogged = true;
            s.reported = false;
            p.watch
                .preempt
                .store(MARK | u64::from(turns), Ordering::Relaxed);
            // Relaxed: procs read it as a hint before they lock the hogged proc's timers.
            shared.hogs.fetch_add(1, Ordering::Relaxed);
            shared.wake_sleeper();
        } else {
            continue;
        }
        // What the proc's OS thread computed since its last turn: a proc whose thread had no
        // core (a busy machine) also stops taking turns, and moving its queued work helps
        // then too, but its thread is no hog. Without a readable clock, wall time stands in.
        let ran = match (s.cpu_since, proc_cpu(p)) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => now.duration_since(s.since),
        };
        let computes = ran >= TIME_SLICE * 3 / 4;
        // Relaxed: a hint, as `preempt`.
        p.watch.computes.store(computes, Ordering::Relaxed);
        // A proc that shares its OS thread and runs nothing now waits for a carrier mate:
        // the mate that runs is the one to name.
        let waits_for_mate = p.watch.running.load(Ordering::Relaxed) == 0
            && shared
                .procs
                .iter()
                .filter(|q| q.carrier == p.carrier)
                .count()
                > 1;
        // Report only a thread that computed.
        if !s.reported && !waits_for_mate && computes && stuck_work(shared, p, now) {
            s.reported = true;
            report(shared, index, ran);
        }
    }
    (awake, moved)
}

/// The CPU time the thread of proc `p` has used so far, if its clock can be read.
fn proc_cpu(p: &ProcShared) -> Option<Duration> {
    match p.cpu_clock.load(Ordering::Relaxed) {
        crate::sched::worker::NO_CLOCK => None,
        clock => crate::sched::owed::cpu_time(clock),
    }
}

/// Whether hogged proc `p` is seen holding up work that no other proc can take: wake-ups of
/// its fibers in its inbox; on a runtime of one proc also due timers and work pushed from
/// outside the runtime. (What the hog queued on a one-proc runtime is private to the proc.)
fn stuck_work(shared: &Shared, p: &ProcShared, now: Instant) -> bool {
    // Its own wake-ups, or those of the procs sharing its OS thread.
    if shared
        .procs
        .iter()
        .any(|q| q.carrier == p.carrier && !q.inbox.is_empty())
    {
        return true;
    }
    shared.procs.len() == 1 && (p.timers_due(now) || p.has_queued() || !shared.injector.is_empty())
}

/// Says on stderr that proc `index` has run one thread for `ran` and holds up work that
/// cannot move.
fn report(shared: &Shared, index: usize, ran: Duration) {
    let p = &shared.procs[index];
    let alone = shared.procs.len() == 1;
    let running = p.watch.running.load(Ordering::Relaxed);
    let kind = if running & TASK_BIT != 0 {
        "task"
    } else {
        "fiber"
    };
    let thread = crate::sched::dump::describe_thread(running & !TASK_BIT);
    let what = if alone {
        "it is the runtime's only proc, so nothing else of the runtime runs meanwhile (its \
         other threads, timers and I/O wake-ups wait)"
    } else {
        "its fibers wait for it (started fibers never move); other procs take its queued \
         tasks, unstarted fibers and due timers"
    };
    crate::log::hog(
        index,
        ran,
        &format!(
            "pcml: {kind} {thread} has computed on proc {index} for {} ms of CPU time without \
             a sync point; {what}. Call pcml::consume_budget() in long loops \
             (consume_budget_async().await in a task), or run the computation with \
             pcml::spawn_blocking",
            ran.as_millis()
        ),
    );
}
