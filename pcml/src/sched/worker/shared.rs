//! What a proc shares with the others ([`ProcShared`]) and what all procs of a runtime share
//! ([`Shared`]): the steal ends of the deques, the inbox, the parker, counters.

use super::*;

/// `ProcShared::cpu_clock` before the proc's thread has set it.
pub(crate) const NO_CLOCK: i32 = i32::MIN;

/// Sources other than pcml threads that may wake a thread of one proc, counted for deadlock
/// detection (`Shared::is_quiescent`); its pending timers are not counted here, but found in
/// its heap (`TimerHeap::has_pending`).
///
/// Timers are not counted: a server arms and cancels a timer on every request (hyper's
/// header-read timeout), and a count of them was two read-modify-writes a request, the
/// cancel's from whatever proc ran the request (first on one runtime-wide line, then on the
/// arming proc's). The count of proc `p` goes up only on `p`'s own thread (fibers it holds
/// back), and down on it too. Deadlock detection reads the counts one at a time only after
/// it saw every proc asleep: then no count can go up, and each count is at least the number
/// of `p`'s sources still pending (a source is counted before it exists and uncounted after
/// it ended), so the reading is exact where it matters: it says zero only if no source is
/// pending. (As for `live`, the check is repeated before a deadlock is reported.)
#[derive(Default)]
pub(crate) struct WakeSources {
    /// 1 while the proc holds fibers back (`hold_back_woken`).
    pub(crate) pending: AtomicUsize,
}

/// What a proc shares with the others.
pub(crate) struct ProcShared {
    /// The steal end of the proc's `local` deque.
    pub(crate) stealer: Stealer<Runnable>,
    /// The steal end of the proc's `woken` deque.
    pub(crate) woken_stealer: Stealer<Runnable>,
    /// Wake-ups and placed fibers from elsewhere.
    pub(crate) inbox: Inbox<InboxMsg>,
    /// What the proc sleeps on when idle (for procs sharing an OS thread, the parker of the
    /// first of them, `carrier`, is the one used).
    pub(crate) parker: Parker,
    /// The index of the first proc run by this proc's OS thread (itself unless more procs
    /// than the process can run at once share threads: see the `sched` docs). Procs with the
    /// same `carrier` share one thread and sleep on that proc's parker.
    pub(crate) carrier: usize,
    /// Set (SeqCst) by the proc before its last look for work, cleared after it wakes.
    pub(crate) sleeping: AtomicBool,
    /// Set by the proc (by a carrier, on its first proc) while it spins idle or watches
    /// another proc's queued work (`Context::left_there`), cleared when that ends (it found
    /// work, or it is about to park and sets `sleeping`). Relaxed
    /// both ways: a hint for a proc about to split a burst of spawns with idle procs
    /// (`Context::deal_burst`), which hands the fibers over through the inbox, whose own
    /// fence makes the hand-off safe whatever the flag said.
    pub(crate) searching: AtomicBool,
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
    /// Sources other than pcml threads that may wake a thread of this proc (see
    /// [`WakeSources`]); on a line of its own, written by the proc, away from the fields idle
    /// procs poll. (Armed timers held a reference to it, to uncount themselves, until timers
    /// stopped being counted: a reference count that a server on pcml raised and dropped on
    /// every request.)
    pub(crate) wake: CachePadded<WakeSources>,
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
    /// The kernel's id of the proc's OS thread (0 until it starts): idle procs read the
    /// thread's state by it (`movable_hog`).
    pub(crate) os_tid: std::sync::atomic::AtomicI32,
    /// Set by the proc when one dispatch of readiness events queued two or more tasks here,
    /// cleared when it next runs out of work: its queued work may be taken at once, without
    /// `STEAL_GRACE` (see `Context::left_there`). Written only on those changes.
    pub(crate) io_batch: AtomicBool,
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
    /// Whether the machine has more ready threads than CPUs: idle procs then park without
    /// spinning (see `Context::idle`).
    pub(crate) crowding: super::Crowding,
    /// The proc that watches the other procs' held slots while it sleeps (it parks at most
    /// `HELD_GRACE` and looks again: see `Context::idle`), or `NO_WATCHER`. Claimed and
    /// released by idle procs; read (Relaxed, a hint) by every spawn on a runtime of several
    /// procs (`notify_held`). On a line of its own with `blind_sleepers`, which change only
    /// when a proc parks or wakes.
    pub(crate) held_watch: CachePadded<HeldWatch>,
    /// Threads started minus finished by threads that are not this runtime's procs; with the
    /// procs' own `live` counters, the fibers and tasks alive (main included).
    pub(crate) live_external: AtomicIsize,
    /// Fibers holding a stack (started, not finished); counted only under a `max_fibers` limit.
    pub(crate) running_fibers: AtomicUsize,
    /// Fibers that found no stack when they were to start; they start when one is freed.
    pub(crate) stack_waiters: Mutex<VecDeque<NewFiber>>,
    /// `stack_waiters.len()`, readable without the lock.
    pub(crate) stack_waiting: AtomicUsize,
    /// Dumps being gathered: a dumper that waits on its proc without yielding it (a task)
    /// answers the others' requests from here, so two such dumpers do not wait for each other.
    pub(crate) dumps: Mutex<Vec<Arc<crate::sched::dump::Request>>>,
    /// Every live async task, so shutdown can drop them.
    pub(crate) tasks: TaskRegistry,
    /// The side pool of `spawn_blocking`.
    pub(crate) blocking: BlockingPool,
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

/// `Shared::held_watch`: who looks at the held slots while idle.
pub(crate) struct HeldWatch {
    /// The watching proc's index, or `NO_WATCHER`.
    pub(crate) watcher: AtomicUsize,
    /// Procs parked with no `HELD_GRACE` bound that are not the watcher: a held fiber is seen
    /// by them only once woken. Incremented before such a park, decremented after it.
    pub(crate) blind_sleepers: AtomicUsize,
}

/// `HeldWatch::watcher` when no proc watches.
pub(crate) const NO_WATCHER: usize = usize::MAX;

/// The kernel's one-letter state of OS thread `tid` of this process (`R` runnable, `S`
/// sleeping, `D` in an uninterruptible wait, ...), if it can be read.
pub(crate) fn thread_state(tid: libc::pid_t) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    // "tid (name) S ...": the name may hold spaces and parentheses; the state follows the
    // last ')'.
    stat.get(stat.rfind(')')? + 1..)?
        .trim_start()
        .chars()
        .next()
}

impl HeldWatch {
    pub(crate) fn new() -> Self {
        Self {
            watcher: AtomicUsize::new(NO_WATCHER),
            blind_sleepers: AtomicUsize::new(0),
        }
    }
}

impl ProcShared {
    /// Whether other procs may take this proc's held fiber and queued work whatever its OS
    /// thread's CPU clock says: the watchdog marked it as hogged (no turn for a time slice)
    /// and its thread does not wait for a core (the kernel has it blocked in a system call,
    /// not runnable). A thread whose clock does not move though it is runnable waits for a
    /// core on a busy machine, and its proc keeps its work: it runs it when it gets the core
    /// back, beside the threads that work talks to (see the `sched` docs, "An idle proc takes
    /// only work that waits"). One that computes shows it on its clock, which the callers
    /// test first. Reads the thread's state from `/proc` (a few system calls): for idle
    /// procs, after their grace, only.
    #[cold]
    pub(crate) fn movable_hog(&self) -> bool {
        self.watch.preempt_requested() && self.thread_runnable() != Some(true)
    }

    /// Whether this proc's OS thread is runnable by the kernel's account (state `R` in
    /// `/proc/self/task/<tid>/stat`: on a core or waiting for one, where a thread blocked in
    /// a system call is `S` or `D`); `None` if it has not started or the file cannot be read.
    pub(crate) fn thread_runnable(&self) -> Option<bool> {
        // Relaxed: a hint (see the field).
        match self.os_tid.load(Ordering::Relaxed) {
            0 => None,
            tid => thread_state(tid).map(|s| s == 'R'),
        }
    }

    /// The CPU time this proc's thread has used, if its clock can be read (a system call).
    pub(crate) fn cpu_time(&self) -> Option<std::time::Duration> {
        match self.cpu_clock.load(Ordering::Relaxed) {
            NO_CLOCK => None,
            clock => crate::sched::owed::cpu_time(clock),
        }
    }

    /// Whether this proc's deques hold work that others may take (cheap loads only); its held
    /// fiber is not counted (see `Context::held_waited`).
    #[inline]
    pub(crate) fn has_queued(&self) -> bool {
        !self.stealer.is_empty() || !self.woken_stealer.is_empty()
    }

    /// Whether this proc has more work waiting than the one item its next turn takes: tasks
    /// woken during their own poll (queued for others to take), or two or more items of new
    /// work, its held fiber counted (cheap loads only).
    #[inline]
    pub(crate) fn has_surplus(&self) -> bool {
        !self.woken_stealer.is_empty()
            || match self.stealer.len() {
                0 => false,
                1 => self.held.is_full(),
                _ => true,
            }
    }

    /// Whether this proc's queues hold more than the second of two fibers spawned back to
    /// back (the first held): tasks woken during their own poll, or two items of new work
    /// or more in its deque, its held fiber not counted (cheap loads only). What an idle proc
    /// takes from a proc whose thread stayed off its core for `STARVED_AFTER`
    /// (`Context::left_there`).
    #[inline]
    pub(crate) fn has_backlog(&self) -> bool {
        !self.woken_stealer.is_empty() || self.stealer.len() >= 2
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
    /// The OS threads that run the procs, the carriers: proc `p` runs on carrier `p % C`,
    /// whose first proc is `p % C` itself (see "Procs beyond the cores share OS threads" in
    /// the `sched` docs).
    pub(crate) fn carriers(&self) -> usize {
        self.procs
            .iter()
            .map(|p| p.carrier)
            .max()
            .map_or(1, |c| c + 1)
    }

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

    /// A fiber was just held (`Context::hold_new_shared`): wakes a sleeping proc to watch the
    /// held slots if none watches and one sleeps blind to them. No fence: a put that races
    /// with a proc going to sleep blind can be missed (the sleeper's look at the slots may
    /// run before the put is visible, and this load before the sleeper's count); the fiber
    /// then waits for its own proc's next turn, or for the watchdog, which wakes a sleeper
    /// when a proc with a held fiber has taken no turn for a time slice. A held fiber is the
    /// one its spawner is likeliest to join next, so nothing else is delayed.
    #[inline]
    pub(crate) fn notify_held(&self) {
        let w = &self.held_watch;
        // Relaxed, both: hints (see above).
        if w.blind_sleepers.load(Ordering::Relaxed) > 0
            && w.watcher.load(Ordering::Relaxed) == NO_WATCHER
        {
            self.wake_sleeper();
        }
    }

    /// Wakes one sleeping proc, if any.
    pub(crate) fn wake_sleeper(&self) {
        for p in self.procs.iter() {
            // SeqCst: pairs with the sleeper's SeqCst store before it looks for work.
            if p.sleeping.load(Ordering::SeqCst) {
                self.unpark(p);
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

    /// Sends every message of `msgs` to proc `proc`'s inbox, then wakes the proc if it sleeps:
    /// one fence for the lot.
    pub(crate) fn send_all_to(&self, proc: usize, msgs: impl IntoIterator<Item = InboxMsg>) {
        let p = &self.procs[proc];
        for msg in msgs {
            p.inbox.push(msg);
        }
        // SeqCst fence: the pusher's half of the Dekker pair with the sleeper's fence in `idle`
        // (flag store, fence, inbox load): either it sees our messages or we see its flag.
        fence(Ordering::SeqCst);
        if p.sleeping.load(Ordering::Relaxed) {
            self.unpark(p);
        }
    }

    /// Unparks the procs whose unpark proc `p` owes (`ProcWatch::unparks_owed`), if any.
    #[inline]
    pub(crate) fn pay_unparks(&self, p: &ProcShared) {
        // Relaxed: see the field. A load first: nothing is owed but on a crowded machine.
        if p.watch.unparks_owed.load(Ordering::Relaxed) == 0 {
            return;
        }
        let mut owed = p.watch.unparks_owed.swap(0, Ordering::Relaxed);
        while owed != 0 {
            let i = owed.trailing_zeros() as usize;
            owed &= owed - 1;
            self.unpark(&self.procs[i]);
        }
    }

    /// Sends `msg` to proc `proc`'s inbox and wakes the proc if it sleeps.
    #[inline]
    pub(crate) fn send_to(&self, proc: usize, msg: InboxMsg) {
        self.send_all_to(proc, [msg]);
    }

    /// Asks one proc to look again (after an outside event that may end a deadlock check).
    pub(crate) fn kick(&self) {
        if self.num_sleeping.load(Ordering::SeqCst) == self.procs.len() {
            self.unpark(&self.procs[0]);
        }
    }

    #[inline]
    pub(crate) fn is_shutdown(&self) -> bool {
        // Acquire: pairs with the Release store in `begin_shutdown`.
        self.shutdown.load(Ordering::Acquire)
    }

    pub(crate) fn begin_shutdown(&self) {
        // Release: pairs with the Acquire loads of `is_shutdown`.
        self.shutdown.store(true, Ordering::Release);
        for p in self.procs.iter() {
            self.unpark(p);
        }
        self.watchdog.unpark();
    }

    /// Counts a fiber or task as started (+1) or finished (-1).
    #[inline]
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
    pub(super) fn take_fiber_slot(&self) -> bool {
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

    pub(super) fn release_fiber_slot(&self) {
        if self.max_fibers != usize::MAX {
            self.running_fibers.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// A fiber or task has ended.
    #[inline]
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
            // A registered socket or fd may become ready and wake a thread.
            && !self.io_pending()
            && self.injector.is_empty()
            && self.procs.iter().all(|p| {
                // SeqCst: as above; see `WakeSources` for why a sum of per-proc counts
                // read one at a time is exact here.
                p.wake.pending.load(Ordering::SeqCst) == 0
                    // Every proc sleeps: its pending timers are in its heap (`sched::timer`).
                    // Locked after the loads above, so the arming of any timer before the
                    // proc slept is seen.
                    && !p.timers.lock().has_pending()
                    && p.inbox.is_empty()
                    && p.stealer.is_empty()
                    && p.woken_stealer.is_empty()
                    && !p.held.is_full()
            })
    }
}
