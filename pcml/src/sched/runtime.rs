//! Starting and stopping a runtime: the builder, `block_on`, `run` (Deleuze's start/stop).
//!
//! # Invariants
//! - `MainSlot` settles once: main finished, main panicked, main exited, or deadlock. The first
//!   settlement wins; `block_on` then shuts the runtime down.
//! - Shutdown joins every worker thread before `block_on` returns, and each worker drops its own
//!   fibers (on their home proc); unstarted work and task futures are dropped after, then the
//!   I/O driver thread (if one was started) is stopped and joined.

use std::any::Any;
use std::collections::VecDeque;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle as OsJoinHandle;

use crossbeam_deque::{Injector, Worker as Deque};
use crossbeam_utils::CachePadded;

use crate::ThreadId;
use crate::fiber::stack::{self, DEFAULT_STACK_SIZE, MAX_STACK_SIZE, MIN_STACK_SIZE};
use crate::fiber::{BodyPtr, FiberBody, NewFiber};
use crate::mp::Parker;
use crate::mp::SpinLock;
use crate::sched::blocking::BlockingPool;
use crate::sched::held::HeldSlot;
use crate::sched::inbox::Inbox;
use crate::sched::timer::TimerHeap;
use crate::sched::worker::NO_CLOCK;
use crate::sched::worker::{self, InboxMsg, ProcShared, Shared};
use crate::task::TaskRegistry;

/// The most procs a runtime may have.
pub const MAX_PROCS: usize = 1024;

/// The number of procs a default runtime has: `PCML_PROCS` if set, else the number of cores.
/// An invalid `PCML_PROCS` counts as unset here (`pcml::procs()` only reports); building a
/// runtime with it is an error ([`BuildError::Env`]).
pub(crate) fn default_procs() -> usize {
    env_procs().ok().flatten().unwrap_or_else(cores)
}

fn cores() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// `PCML_PROCS`, checked as strictly as [`Builder::procs`]: `Ok(None)` if unset or empty.
fn env_procs() -> Result<Option<usize>, BuildError> {
    env_usize("PCML_PROCS", 1, MAX_PROCS)
}

/// `PCML_STACK_SIZE`, checked as strictly as [`Builder::stack_size`].
fn env_stack_size() -> Result<Option<usize>, BuildError> {
    env_usize("PCML_STACK_SIZE", MIN_STACK_SIZE, MAX_STACK_SIZE)
}

/// The environment variable `var` as a number in `min..=max`: `Ok(None)` if it is unset or
/// empty, an error naming the variable and its value if it is anything but such a number.
fn env_usize(var: &'static str, min: usize, max: usize) -> Result<Option<usize>, BuildError> {
    let value = match std::env::var(var) {
        Ok(v) => v,
        Err(std::env::VarError::NotPresent) => return Ok(None),
        Err(std::env::VarError::NotUnicode(v)) => {
            return Err(BuildError::Env {
                var,
                value: v.to_string_lossy().into_owned(),
                expected: format!("a whole number in {min}..={max}"),
            });
        }
    };
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    match trimmed.parse::<usize>() {
        Ok(n) if (min..=max).contains(&n) => Ok(Some(n)),
        _ => Err(BuildError::Env {
            var,
            value,
            expected: format!("a whole number in {min}..={max}"),
        }),
    }
}

/// How the main fiber ended, or why the runtime stopped without it ending.
enum MainState {
    Running,
    Finished,
    Panicked(Box<dyn Any + Send>),
    Exited,
    Deadlock {
        blocked: usize,
        waiting_for_stack: usize,
    },
}

/// Where `block_on` waits for the main fiber.
pub(crate) struct MainSlot {
    state: Mutex<MainState>,
    cvar: Condvar,
    /// Mirrors `state != Running` for lock-free checks.
    settled: AtomicBool,
    /// Set by `block_on` once main is in proc 0's inbox: until then idle procs are not a
    /// deadlock.
    submitted: AtomicBool,
}

impl MainSlot {
    fn new() -> Self {
        Self {
            state: Mutex::new(MainState::Running),
            cvar: Condvar::new(),
            settled: AtomicBool::new(false),
            submitted: AtomicBool::new(false),
        }
    }

    /// Whether main has been submitted and has not settled: only then can a deadlock be.
    pub(crate) fn is_waiting(&self) -> bool {
        // Acquire: pairs with the Release store in `submit`.
        self.submitted.load(Ordering::Acquire) && !self.is_settled()
    }

    fn submit(&self) {
        // Release: pairs with the Acquire load in `is_waiting`, so a proc that sees the flag
        // also sees the inbox push of main that came before it.
        self.submitted.store(true, Ordering::Release);
    }

    pub(crate) fn is_settled(&self) -> bool {
        self.settled.load(Ordering::Acquire)
    }

    fn settle(&self, outcome: MainState) {
        let mut st = self.state.lock().unwrap();
        if matches!(*st, MainState::Running) {
            *st = outcome;
            // Release: pairs with the Acquire in `is_settled`.
            self.settled.store(true, Ordering::Release);
            self.cvar.notify_all();
        }
    }

    pub(crate) fn settle_deadlock(&self, blocked: usize, waiting_for_stack: usize) {
        self.settle(MainState::Deadlock {
            blocked,
            waiting_for_stack,
        });
    }

    fn wait(&self) -> MainState {
        let mut st = self.state.lock().unwrap();
        while matches!(*st, MainState::Running) {
            st = self.cvar.wait(st).unwrap();
        }
        std::mem::replace(&mut *st, MainState::Finished)
    }
}

/// Why a runtime stopped without main's value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RuntimeError {
    /// Main was blocked, every proc idle, and nothing (no timer, I/O or blocking job, no OS
    /// thread outside the runtime, no other runtime) could wake anything: CML's "no runnable
    /// threads". See [`Builder::detect_deadlock`] for exactly what is counted.
    Deadlock {
        /// Threads alive and blocked, main included.
        blocked: usize,
        /// Of those, fibers that never started because no stack could be had.
        waiting_for_stack: usize,
        /// Every thread and what each waits on, taken when the deadlock was found.
        dump: crate::sched::dump::Dump,
    },
    /// Main ended itself with [`exit`](crate::exit), so there is no value to return.
    MainExited,
}

impl fmt::Display for RuntimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuntimeError::Deadlock {
                blocked,
                waiting_for_stack,
                dump,
            } => {
                write!(
                    f,
                    "pcml: deadlock: the main thread is blocked and so are all {blocked} live threads \
                     (main included); every proc is idle and no timer, I/O, blocking job, OS thread or other runtime can wake them"
                )?;
                if *waiting_for_stack > 0 {
                    write!(
                        f,
                        "; {waiting_for_stack} of them never started because no fiber stack could be had \
                         (raise vm.max_map_count or Builder::max_fibers, or use spawn_task)"
                    )?;
                }
                write!(f, "\n{dump}")
            }
            RuntimeError::MainExited => f.write_str(
                "pcml: the main thread ended itself with pcml::exit, so it has no value",
            ),
        }
    }
}

impl std::error::Error for RuntimeError {}

/// A bad runtime setting.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// `procs` was 0 or above [`MAX_PROCS`].
    Procs(usize),
    /// `stack_size` was outside [`MIN_STACK_SIZE`]..=[`MAX_STACK_SIZE`].
    StackSize(usize),
    /// `max_fibers` was 0.
    MaxFibers,
    /// A worker thread could not be started.
    Thread(String),
    /// The `SIGQUIT` handler asked for by [`Builder::dump_on_sigquit`] could not be set up
    /// (the OS's error).
    Signal(String),
    /// `carrier_threads` was 0 or more than the runtime's procs (the second field).
    CarrierThreads(usize, usize),
    /// A `PCML_*` environment variable that sets a default (`PCML_PROCS`,
    /// `PCML_STACK_SIZE`) holds something other than a valid value. Unset or empty, it does
    /// not count.
    Env {
        /// The variable's name.
        var: &'static str,
        /// What it holds.
        value: String,
        /// What it may hold.
        expected: String,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Procs(n) => write!(
                f,
                "pcml: a runtime needs between 1 and {MAX_PROCS} procs, not {n}"
            ),
            BuildError::StackSize(n) => write!(
                f,
                "pcml: fiber stack size {n} bytes is outside the allowed range \
                 {MIN_STACK_SIZE}..={MAX_STACK_SIZE} bytes"
            ),
            BuildError::MaxFibers => f.write_str("pcml: max_fibers must be at least 1"),
            BuildError::CarrierThreads(n, procs) => write!(
                f,
                "pcml: carrier_threads must be between 1 and the runtime's {procs} procs, not \
                 {n}"
            ),
            BuildError::Thread(e) => write!(
                f,
                "pcml: could not start a worker thread: {e}; ask for fewer procs, or raise \
                 the limits on threads and memory (ulimit -u, ulimit -v)"
            ),
            BuildError::Signal(e) => {
                write!(f, "pcml: could not set up the SIGQUIT dump handler: {e}")
            }
            BuildError::Env {
                var,
                value,
                expected,
            } => write!(
                f,
                "pcml: the environment variable {var}={value:?} is invalid: it must be \
                 {expected}, or unset for the default"
            ),
        }
    }
}

impl std::error::Error for BuildError {}

/// Settings for a [`Runtime`].
///
/// # Examples
/// ```
/// let rt = pcml::Runtime::builder()
///     .procs(2)
///     .stack_size(128 * 1024)
///     .build()
///     .unwrap();
/// assert_eq!(rt.block_on(|| pcml::procs()).unwrap(), 2);
///
/// let err = pcml::Runtime::builder().procs(0).build().unwrap_err();
/// assert!(err.to_string().contains("procs"));
/// ```
#[derive(Debug, Clone)]
pub struct Builder {
    procs: Option<usize>,
    carrier_threads: Option<usize>,
    stack_size: Option<usize>,
    max_fibers: Option<usize>,
    detect_deadlock: bool,
    watchdog: bool,
    dump_on_sigquit: bool,
    report_deadlocks: bool,
    /// Entered on every proc thread (`tokio_handle`).
    #[cfg(feature = "tokio")]
    tokio: Option<tokio::runtime::Handle>,
}

impl Builder {
    /// The number of procs (schedulers, each with its own run queues), `1..=`[`MAX_PROCS`].
    /// Default: `PCML_PROCS`, else the core count. Each proc gets an OS thread of its own up
    /// to the number the process can run at once; beyond it procs share threads (see
    /// [`carrier_threads`](Self::carrier_threads)). `build` fails if it is out of range, or if it is not set here and
    /// `PCML_PROCS` holds anything but such a number ([`BuildError::Env`]).
    pub fn procs(mut self, n: usize) -> Self {
        self.procs = Some(n);
        self
    }

    /// How many OS threads run the procs, `1..=procs`. Default: one per proc, but no more
    /// than the process can run at once (`std::thread::available_parallelism()`, which
    /// follows CPU affinity and cgroup quotas), and at least two when there are two procs or
    /// more.
    ///
    /// With fewer threads than procs, proc `p` runs on thread `p % threads`, taking turns with
    /// the other procs of its thread: [`spawn_on`](crate::spawn_on) keeps its meaning (the
    /// fiber lives on proc `p`, and [`current_proc`](crate::current_proc) says so), a message
    /// between two procs of one thread costs a queue push instead of an OS wake-up, and
    /// `procs(8)` on a 2-core machine costs what `procs(2)` does. The price: a fiber that
    /// computes without a sync point, or blocks its OS thread in a system call, holds up
    /// every proc of its thread, not only its own (see `watchdog`). Set this to `procs` for
    /// one OS thread per proc whatever the machine, as before.
    ///
    /// ```
    /// let rt = pcml::Runtime::builder().procs(4).carrier_threads(2).build().unwrap();
    /// let procs = rt
    ///     .block_on(|| {
    ///         let hs: Vec<_> = (0..4)
    ///             .map(|p| pcml::spawn_on(p, pcml::current_proc))
    ///             .collect();
    ///         hs.into_iter().map(|h| h.join().unwrap().unwrap()).collect::<Vec<_>>()
    ///     })
    ///     .unwrap();
    /// assert_eq!(procs, [0, 1, 2, 3]);
    ///
    /// let err = pcml::Runtime::builder().procs(2).carrier_threads(3).build().unwrap_err();
    /// assert!(err.to_string().contains("carrier_threads"));
    /// ```
    pub fn carrier_threads(mut self, n: usize) -> Self {
        self.carrier_threads = Some(n);
        self
    }

    /// The size of each fiber stack in bytes, rounded up to whole pages. Default:
    /// `PCML_STACK_SIZE`, else [`DEFAULT_STACK_SIZE`] (256 KiB of address space; only the
    /// pages a fiber touches use memory). `build` fails if it is outside
    /// [`MIN_STACK_SIZE`]`..=`[`MAX_STACK_SIZE`], or if it is not set here and
    /// `PCML_STACK_SIZE` holds anything but such a number ([`BuildError::Env`]).
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }

    /// The most fibers of this runtime that may be started and unfinished at once. Default:
    /// what `vm.max_map_count` allows (about 30,000 with the default 65530). Above this, `try_spawn`
    /// fails and spawned fibers wait to start.
    pub fn max_fibers(mut self, n: usize) -> Self {
        self.max_fibers = Some(n);
        self
    }

    /// Whether `block_on` reports a deadlock (default on).
    ///
    /// A deadlock is reported only when main is blocked and nothing can ever wake a thread of
    /// the runtime: every proc is idle, no timer, I/O source or blocking job is pending, and
    /// nothing outside the runtime can act. An I/O source is any open pcml socket of this
    /// runtime, or made outside any runtime (on an OS thread), wherever it is held: it may
    /// become ready; the check is made again when the last one is closed. Outside the
    /// runtime, pcml counts
    /// - every OS thread of the process, alive, that is not one of pcml's own (procs, I/O
    ///   drivers, blocking pools, the timer thread) and is not waiting in `block_on`: such a
    ///   thread may hold a channel handle and send later (after a sleep, after a slow start,
    ///   after a pcml `recv` that a fiber has just completed). pcml cannot see where handles
    ///   were moved, so it counts the threads, not the handles. The one exception is the
    ///   process's first thread while it sleeps, as long as it has never built a runtime nor
    ///   waited on a pcml event (so that a test harness's main thread does not stop
    ///   detection);
    /// - every other runtime of the process, unless all its procs are idle with nothing pending
    ///   at the same instant as this one's, or it has shut down.
    ///
    /// While one of them is alive, the runtime waits, looking again now and then (every
    /// millisecond at first, then up to every 100 ms), and reports the deadlock once they are
    /// gone. So a program whose fibers are fed by plain OS threads is never told it
    /// deadlocked while a feeder lives; the price is that a deadlock is not reported while any
    /// unrelated OS thread lives (a thread pool, another executor's workers), and that two
    /// runtimes blocked on each other are reported only together. What is not seen: a thread
    /// that existed when the process started (its first thread) and never used pcml, yet
    /// holds a handle it will use: turn detection off for such a program.
    ///
    /// ```
    /// let ch = pcml::Chan::<u32>::new();
    /// let c = ch.clone();
    /// // Sleeps, then sends: not a deadlock, however long it sleeps.
    /// let feeder = std::thread::spawn(move || {
    ///     std::thread::sleep(std::time::Duration::from_millis(20));
    ///     c.send(7);
    /// });
    /// let rt = pcml::Runtime::builder().detect_deadlock(true).build().unwrap();
    /// assert_eq!(rt.block_on(move || ch.recv()), Ok(7));
    /// feeder.join().unwrap();
    /// ```
    pub fn detect_deadlock(mut self, on: bool) -> Self {
        self.detect_deadlock = on;
        self
    }

    /// Whether the runtime has a watchdog (default on): a thread that wakes every 10 ms
    /// while a proc is awake, and, when a thread has held its proc for a whole time slice
    /// without a sync point, lets the other procs take that proc's due timers and queued work,
    /// makes [`consume_budget`](crate::consume_budget) yield, and reports on stderr work that
    /// cannot move (see [`watchdog`](crate::sched::watchdog)). Off, a thread that computes
    /// without a sync point holds up its proc's timers until it gives way, and nothing is
    /// reported.
    ///
    /// ```
    /// let rt = pcml::Runtime::builder().procs(1).watchdog(false).build().unwrap();
    /// assert_eq!(rt.block_on(|| 2 + 2).unwrap(), 4);
    /// ```
    pub fn watchdog(mut self, on: bool) -> Self {
        self.watchdog = on;
        self
    }

    /// Whether `SIGQUIT` prints a dump of every runtime to stderr (default off), as
    /// [`dump_on_sigquit`](crate::sched::dump_on_sigquit) sets up: `kill -QUIT <pid>` (or
    /// Ctrl-\\ in a terminal) then shows every thread and what it waits on, and the process
    /// goes on. The handler is process-wide and stays installed once a runtime asked for it.
    ///
    /// ```
    /// let rt = pcml::Runtime::builder().procs(1).dump_on_sigquit(true).build().unwrap();
    /// assert_eq!(rt.block_on(|| 1).unwrap(), 1);
    /// ```
    pub fn dump_on_sigquit(mut self, on: bool) -> Self {
        self.dump_on_sigquit = on;
        self
    }

    /// Whether the watchdog looks for partial deadlocks every second and logs those it finds
    /// (default off): threads that wait on each other for ever while the rest of the program
    /// runs, as [`Runtime::deadlocks`] finds them (see
    /// [`PartialDeadlock`](crate::sched::PartialDeadlock) for what is and is not found). Each
    /// is logged once, through [`log`](crate::log): an ERROR event with the `tracing`
    /// feature and a subscriber, else a report on stderr. Needs the [`watchdog`](Self::watchdog).
    ///
    /// A look asks every proc to describe its fibers, three times, and locks each channel a
    /// fiber is blocked on; it wakes sleeping procs to answer. It is skipped while a proc is
    /// held by one thread (see [`watchdog`](crate::sched::watchdog)).
    ///
    /// ```
    /// let rt = pcml::Runtime::builder().procs(1).report_deadlocks(true).build().unwrap();
    /// assert_eq!(rt.block_on(|| 1).unwrap(), 1);
    /// ```
    pub fn report_deadlocks(mut self, on: bool) -> Self {
        self.report_deadlocks = on;
        self
    }

    /// Enters `handle` on every proc thread (with the `tokio` feature), so that tokio-based
    /// code runs in pcml's fibers and tasks: tokio's timers (`tokio::time::sleep`), sockets
    /// (`tokio::net`), `tokio::spawn` (onto the tokio runtime) and crates built on them. The
    /// tokio runtime does that I/O and timing on its own threads and wakes pcml's tasks
    /// through their wakers, so give it at least one worker (`new_multi_thread` with
    /// `enable_all`) and keep it alive while the pcml runtime uses it; a `current_thread`
    /// runtime drives its I/O only inside its own `block_on`.
    ///
    /// Without it, tokio's functions panic in pcml's threads with tokio's message ("there is
    /// no reactor running, must be called from the context of a Tokio 1.x runtime"): pass a
    /// handle here, or use pcml's own sockets and timers ([`crate::net`], [`crate::time`]),
    /// which need no tokio at all. Other threads (OS threads, the blocking pool) enter a handle
    /// themselves with `Handle::enter`.
    ///
    /// ```
    /// # #[cfg(feature = "tokio")] {
    /// use std::time::Duration;
    ///
    /// let tokio_rt = tokio::runtime::Builder::new_multi_thread()
    ///     .worker_threads(1)
    ///     .enable_all()
    ///     .build()
    ///     .unwrap();
    /// let rt = pcml::Runtime::builder()
    ///     .tokio_handle(tokio_rt.handle().clone())
    ///     .build()
    ///     .unwrap();
    /// let slept = rt.block_on(|| {
    ///     pcml::spawn_task(async {
    ///         tokio::time::sleep(Duration::from_millis(1)).await; // tokio's timer
    ///         true
    ///     })
    ///     .join()
    ///     .unwrap()
    /// });
    /// assert_eq!(slept, Ok(true));
    /// # }
    /// ```
    #[cfg(feature = "tokio")]
    pub fn tokio_handle(mut self, handle: tokio::runtime::Handle) -> Self {
        self.tokio = Some(handle);
        self
    }

    /// Starts the runtime's procs.
    pub fn build(self) -> Result<Runtime, BuildError> {
        crate::sched::outside::used_pcml();
        let procs = match self.procs {
            Some(n) => n,
            None => env_procs()?.unwrap_or_else(cores),
        };
        if !(1..=MAX_PROCS).contains(&procs) {
            return Err(BuildError::Procs(procs));
        }
        let carriers = match self.carrier_threads {
            Some(n) if (1..=procs).contains(&n) => n,
            Some(n) => return Err(BuildError::CarrierThreads(n, procs)),
            None => procs.min(cores().max(2)),
        };
        let stack_size = match self.stack_size {
            Some(n) => n,
            None => env_stack_size()?.unwrap_or(DEFAULT_STACK_SIZE),
        };
        if !(MIN_STACK_SIZE..=MAX_STACK_SIZE).contains(&stack_size) {
            return Err(BuildError::StackSize(stack_size));
        }
        let page = stack::page_size();
        let stack_size = stack_size.div_ceil(page) * page;
        let max_fibers = self.max_fibers.unwrap_or(usize::MAX);
        if max_fibers == 0 {
            return Err(BuildError::MaxFibers);
        }
        crate::sched::panic::install_hook();
        if procs > 1 {
            // Before any worker thread starts (see `held`).
            crate::sched::held::prepare_thieves();
        }
        if self.dump_on_sigquit {
            crate::sched::sigquit::dump_on_sigquit()
                .map_err(|e| BuildError::Signal(e.to_string()))?;
        }

        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        // Per proc: new work, newest first (a tree of spawns runs depth first on its proc and
        // thieves take the oldest, largest, pieces), and woken tasks, oldest first.
        let deques: Vec<(Deque<_>, Deque<_>)> = (0..procs)
            .map(|_| (Deque::new_lifo(), Deque::new_fifo()))
            .collect();
        let shared = Arc::new(Shared {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            procs: deques
                .iter()
                .enumerate()
                .map(|(i, (d, w))| {
                    CachePadded::new(ProcShared {
                        stealer: d.stealer(),
                        woken_stealer: w.stealer(),
                        inbox: Inbox::new(),
                        parker: Parker::new(),
                        carrier: i % carriers,
                        sleeping: AtomicBool::new(false),
                        live: CachePadded::new(AtomicIsize::new(0)),
                        wake: CachePadded::new(Default::default()),
                        held: HeldSlot::new(),
                        watch: CachePadded::new(Default::default()),
                        timers: CachePadded::new(SpinLock::new(TimerHeap::new())),
                        cpu_clock: std::sync::atomic::AtomicI32::new(NO_CLOCK),
                        os_tid: std::sync::atomic::AtomicI32::new(0),
                        io_batch: AtomicBool::new(false),
                        searching: AtomicBool::new(false),
                        metrics: CachePadded::new(Default::default()),
                    })
                })
                .collect(),
            injector: Injector::new(),
            stack_size,
            max_fibers,
            detect_deadlock: self.detect_deadlock,
            shutdown: AtomicBool::new(false),
            num_searching: AtomicUsize::new(0),
            spin_limit: (procs.min(cores()) / 2).max(1),
            num_sleeping: AtomicUsize::new(0),
            crowding: crate::sched::worker::Crowding::new(),
            held_watch: CachePadded::new(crate::sched::worker::HeldWatch::new()),
            live_external: AtomicIsize::new(0),
            running_fibers: AtomicUsize::new(0),
            stack_waiters: Mutex::new(VecDeque::new()),
            dumps: Mutex::new(Vec::new()),
            stack_waiting: AtomicUsize::new(0),
            tasks: TaskRegistry::new(),
            blocking: BlockingPool::new(),
            io: std::sync::OnceLock::new(),
            main: MainSlot::new(),
            exited: AtomicUsize::new(0),
            watchdog: Parker::new(),
            watchdog_asleep: AtomicBool::new(false),
            hogs: AtomicUsize::new(0),
            tasks_external: Default::default(),
            actors_external: Default::default(),
        });
        crate::sched::registry::register(&shared);
        // Carrier `c` runs procs c, c + carriers, c + 2 carriers, ...
        let mut groups: Vec<Vec<worker::ProcDeques>> = (0..carriers).map(|_| Vec::new()).collect();
        for (i, (deque, woken)) in deques.into_iter().enumerate() {
            groups[i % carriers].push((i, deque, woken));
        }
        let mut threads = Vec::with_capacity(carriers);
        for (c, group) in groups.into_iter().enumerate() {
            let sh = shared.clone();
            #[cfg(feature = "tokio")]
            let tokio = self.tokio.clone();
            let spawned = std::thread::Builder::new()
                .name(format!("pcml-proc-{c}"))
                .spawn(move || {
                    // Entered for the thread's whole life: fibers and tasks of every stack on
                    // it see the handle (tokio's context is per thread).
                    #[cfg(feature = "tokio")]
                    let _tokio = tokio.as_ref().map(|h| h.enter());
                    worker::run_carrier(sh, group)
                });
            match spawned {
                Ok(t) => threads.push(t),
                Err(e) => {
                    let rt = Runtime { shared, threads };
                    drop(rt);
                    return Err(BuildError::Thread(e.to_string()));
                }
            }
        }
        if self.watchdog {
            match crate::sched::watchdog::start(shared.clone(), self.report_deadlocks) {
                Ok(t) => threads.push(t),
                Err(e) => {
                    let rt = Runtime { shared, threads };
                    drop(rt);
                    return Err(BuildError::Thread(e.to_string()));
                }
            }
        }
        Ok(Runtime { shared, threads })
    }
}

/// A pcml runtime: procs running fibers and tasks.
///
/// `block_on` runs a main fiber and returns its value when it returns, dropping whatever
/// threads are left, like a Rust `main`.
///
/// # Examples
/// ```
/// let rt = pcml::Runtime::builder().procs(1).build().unwrap();
/// let sum = rt.block_on(|| {
///     let hs: Vec<_> = (1..=10u64).map(|i| pcml::spawn(move || i)).collect();
///     hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
/// });
/// assert_eq!(sum.unwrap(), 55);
/// ```
pub struct Runtime {
    shared: Arc<Shared>,
    threads: Vec<OsJoinHandle<()>>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("procs", &self.shared.procs.len())
            .field("stack_size", &self.shared.stack_size)
            .finish()
    }
}

impl Runtime {
    /// A builder with default settings.
    pub fn builder() -> Builder {
        Builder {
            procs: None,
            carrier_threads: None,
            stack_size: None,
            max_fibers: None,
            detect_deadlock: true,
            watchdog: true,
            dump_on_sigquit: false,
            report_deadlocks: false,
            #[cfg(feature = "tokio")]
            tokio: None,
        }
    }

    /// A runtime with default settings.
    ///
    /// ```
    /// let rt = pcml::Runtime::new().unwrap();
    /// assert_eq!(rt.block_on(|| 1 + 1).unwrap(), 2);
    /// ```
    pub fn new() -> Result<Runtime, BuildError> {
        Self::builder().build()
    }

    /// The number of procs.
    pub fn procs(&self) -> usize {
        self.shared.procs.len()
    }

    /// Runs `main` as the main fiber on proc 0 and returns its value once it returns; then
    /// shuts the runtime down, dropping every thread that is left.
    ///
    /// Returns `Err` if the runtime deadlocked (main blocked, every proc idle, nothing that could
    /// wake anything) or main ended itself with `exit`. A panic in main is resumed here.
    ///
    /// Shutdown drops the threads that are left and joins the procs, the blocking pool and
    /// the I/O driver before this returns. A destructor that panics while an async task's
    /// future or an unstarted fiber's closure is dropped does not stop it: the panic becomes
    /// that thread's join error (printed if nobody joins it). Nor does one that would block:
    /// nothing is left to wake it, so the blocking call panics instead, and that panic is the
    /// thread's join error. A started fiber's stack is unwound; a destructor that blocks there
    /// panics too, and a destructor that panics during an unwind aborts the process, as
    /// anywhere in Rust. A destructor may spawn: the new thread never runs, it is cancelled
    /// (its body dropped, its join a cancellation), and the spawn does not panic (see the
    /// [scheduler docs](crate::sched#what-a-destructor-may-do-at-shutdown)).
    ///
    /// ```
    /// use std::sync::mpsc;
    ///
    /// /// Reports its owner's end by spawning a clean-up.
    /// struct Guard(mpsc::Sender<pcml::JoinHandle<()>>);
    /// impl Drop for Guard {
    ///     fn drop(&mut self) {
    ///         self.0.send(pcml::spawn_task(async {})).unwrap();
    ///     }
    /// }
    ///
    /// let (tx, rx) = mpsc::channel();
    /// let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    /// rt.block_on(move || {
    ///     let ready = pcml::Mailbox::new();
    ///     let r = ready.clone();
    ///     let waiting = pcml::spawn_task(async move {
    ///         let _g = Guard(tx);
    ///         r.send(());
    ///         pcml::never::<()>().await;
    ///     });
    ///     ready.recv();
    ///     drop(waiting);
    /// })
    /// .unwrap();
    /// // The shutdown dropped the waiting task; its guard's spawn was cancelled at once.
    /// assert!(rx.recv().unwrap().join().unwrap_err().is_cancelled());
    /// ```
    ///
    /// # Panics
    /// If called from inside a pcml runtime (it would block a proc), or with main's panic.
    #[track_caller]
    pub fn block_on<F, T>(self, main: F) -> Result<T, RuntimeError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        assert!(
            worker::context().is_none(),
            "pcml: Runtime::block_on called from inside a pcml runtime, which would block a proc; \
             spawn a thread and join it instead"
        );
        // This thread waits for main from now on: it cannot act (deadlock detection).
        let passive = crate::sched::outside::InBlockOn::enter();
        let value = Arc::new(Mutex::new(None));
        let id = ThreadId::next();
        crate::sched::dump::label_main(id);
        self.shared.count_live(1);
        self.shared.send_to(
            0,
            InboxMsg::Start(NewFiber {
                id,
                main: true,
                // SAFETY: a fresh box is the one reference `release` (below) frees.
                body: unsafe {
                    BodyPtr::from_raw(NonNull::from(Box::leak(Box::new(MainBody {
                        f: Mutex::new(Some(main)),
                        site: std::panic::Location::caller(),
                        value: value.clone(),
                        shared: self.shared.clone(),
                    })) as &mut dyn FiberBody))
                },
            }),
        );
        // After the push: a proc that sees `submitted` also sees main in proc 0's inbox.
        self.shared.main.submit();
        self.shared.unpark(&self.shared.procs[0]);
        let outcome = self.shared.main.wait();
        drop(passive);
        // The procs still run (asleep): ask them what each thread waits on.
        let dump = matches!(outcome, MainState::Deadlock { .. })
            .then(|| crate::sched::dump::dump_runtime(&self.shared));
        crate::sched::dump::unlabel(id);
        drop(self);
        match outcome {
            MainState::Finished => Ok(value
                .lock()
                .unwrap()
                .take()
                .expect("pcml: main finished without a value")),
            MainState::Panicked(p) => resume_unwind(p),
            MainState::Exited => Err(RuntimeError::MainExited),
            MainState::Deadlock {
                blocked,
                waiting_for_stack,
            } => {
                let dump = dump.unwrap_or_default();
                crate::log::deadlock(blocked, waiting_for_stack, &dump);
                Err(RuntimeError::Deadlock {
                    blocked,
                    waiting_for_stack,
                    dump,
                })
            }
            MainState::Running => unreachable!("MainSlot::wait returns settled states"),
        }
    }
}

impl Runtime {
    /// A snapshot of the runtime's metrics: per proc, resumes, polls, steals, parks and
    /// cross-proc wake-ups; live fibers, tasks and actors. See
    /// [`RuntimeMetrics`](crate::sched::RuntimeMetrics).
    ///
    /// ```
    /// let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    /// let m = rt.metrics();
    /// assert_eq!(m.procs().len(), 2);
    /// assert_eq!(m.live_fibers() + m.live_tasks() + m.live_actors(), 0);
    /// // While it runs, from its threads:
    /// let polls = rt
    ///     .block_on(|| {
    ///         pcml::spawn_task(async { 1 }).join().unwrap();
    ///         pcml::sched::metrics().unwrap().total().polls
    ///     })
    ///     .unwrap();
    /// assert!(polls >= 1);
    /// ```
    pub fn metrics(&self) -> crate::sched::RuntimeMetrics {
        crate::sched::metrics::snapshot(&self.shared)
    }

    /// Every thread of the runtime and what each waits on: see [`Dump`](crate::Dump). From
    /// any thread; while main runs or after a deadlock (the procs answer from their loops).
    ///
    /// ```
    /// let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    /// let d = rt.dump();
    /// assert!(d.threads().is_empty());
    /// ```
    pub fn dump(&self) -> crate::Dump {
        crate::sched::dump::dump_runtime(&self.shared)
    }

    /// Threads of the runtime that wait on each other for ever while the rest may run: see
    /// [`PartialDeadlock`](crate::sched::PartialDeadlock). From any thread.
    ///
    /// ```
    /// let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    /// assert!(rt.deadlocks().is_empty());
    /// ```
    pub fn deadlocks(&self) -> Vec<crate::sched::PartialDeadlock> {
        crate::sched::waitfor::find(&self.shared)
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.shared.begin_shutdown();
        for t in self.threads.drain(..) {
            // A worker panics only on an internal bug; report it rather than hide it.
            if let Err(p) = t.join() {
                if !std::thread::panicking() {
                    resume_unwind(p);
                }
            }
        }
        // The procs are stopped: drop what is left outside them (destructors that would block
        // panic: see `ShutdownDrops`).
        let _drops = crate::sched::blocker::ShutdownDrops::enter();
        while !self.shared.injector.is_empty() {
            if let crossbeam_deque::Steal::Success(r) = self.shared.injector.steal() {
                crate::sched::worker::cancel_runnable(r);
            }
        }
        for p in self.shared.procs.iter() {
            let mut left = Vec::new();
            p.inbox.drain_into(&mut left);
            drop(left);
        }
        let waiting: Vec<_> = self
            .shared
            .stack_waiters
            .lock()
            .unwrap()
            .drain(..)
            .collect();
        drop(waiting);
        self.shared.tasks.shutdown();
        self.shared.blocking.shutdown();
        // Last: fibers and tasks dropped above may have deregistered their sockets.
        self.shared.stop_io();
    }
}

/// The main fiber's body.
struct MainBody<F, T> {
    f: Mutex<Option<F>>,
    /// `block_on`'s caller.
    site: crate::fiber::Site,
    value: Arc<Mutex<Option<T>>>,
    shared: Arc<Shared>,
}

// SAFETY: a main body is boxed and has a single reference (`block_on`'s `BodyPtr`), which
// `release` frees.
unsafe impl<F, T> FiberBody for MainBody<F, T>
where
    F: FnOnce() -> T + Send,
    T: Send,
{
    unsafe fn release(&self) {
        // SAFETY: the body came from `Box::leak` and this was its only reference.
        drop(unsafe { Box::from_raw(self as *const Self as *mut Self) });
    }

    fn claim(&self) -> bool {
        true
    }

    fn is_claimed(&self) -> bool {
        false
    }

    fn cancel(&self) {}

    fn site(&self) -> crate::fiber::Site {
        self.site
    }

    fn run(&self) {
        let f = self.f.lock().unwrap().take().expect("main body runs once");
        match catch_unwind(AssertUnwindSafe(f)) {
            Ok(v) => {
                *self.value.lock().unwrap() = Some(v);
                self.shared.main.settle(MainState::Finished);
            }
            Err(p) if worker::context().is_some_and(|c| c.is_shutting_down()) => {
                // Dropped at shutdown (after a deadlock): let the unwind finish.
                resume_unwind(p);
            }
            Err(p) => {
                if p.is::<crate::sched::panic::ExitSignal>() {
                    self.shared.main.settle(MainState::Exited);
                } else {
                    self.shared.main.settle(MainState::Panicked(p));
                }
            }
        }
    }
}

/// Runs `main` on a new runtime with default settings and returns its value (Deleuze's
/// `start`): the procs stop when main returns, dropping whatever threads are left.
///
/// # Panics
/// If the runtime deadlocks (with a message naming how many threads are blocked), if main
/// ends itself with `exit`, or with main's own panic.
///
/// # Examples
/// ```
/// let answer = pcml::run(|| {
///     let child = pcml::spawn(|| 21);
///     child.join().unwrap() * 2
/// });
/// assert_eq!(answer, 42);
/// ```
#[track_caller]
pub fn run<F, T>(main: F) -> T
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let rt = Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    match rt.block_on(main) {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}
