//! Running threads: one turn of the loop, starting, resuming and finishing fibers, polling
//! tasks, suspending the running fiber, and firing due timers.

use super::*;

impl Context {
    /// Suspends the running fiber, telling the worker why; `inlined`: whether a thread runs
    /// inline on its stack (`Current::Fiber`). Returns what the worker said when it resumed
    /// the fiber: `true` if it was cancelled meanwhile and must unwind.
    #[inline(always)]
    #[must_use]
    pub(super) fn suspend(&self, why: Suspend, inlined: bool) -> Resume {
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
    pub(super) fn suspend_inlined(&self, why: Suspend) -> Resume {
        let current = self.current.get();
        // The inline runs stay on this stack; nothing else runs inline meanwhile.
        let top = self.inline_top.replace(std::ptr::null());
        // Shows a dump which thread is suspended here, and its joiners (the fiber's slot
        // names only its owner).
        let note = |id: u64, runs| {
            if let Current::Fiber { slot, .. } = current
                && let Some(e) = self.fibers.get(slot)
            {
                e.inline.set(id);
                e.inline_runs.set(runs);
            }
        };
        if let Current::Fiber { id, .. } = current {
            note(id.as_u64(), top);
        }
        let r = self.switch_out(why);
        note(0, std::ptr::null());
        self.inline_top.set(top);
        self.current.set(current);
        r
    }

    /// Hands control back to the worker until it resumes the fiber.
    #[inline(always)]
    pub(super) fn switch_out(&self, why: Suspend) -> Resume {
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

    /// Takes one turn: runs the next thing, or returns `false` if this proc found no work.
    ///
    /// Ready fibers and new work (placed fibers, the local deque) take turns, so neither
    /// starves the other; after a yield new work queued by then goes first, so the yielder
    /// is behind everything runnable; due deferred tasks join the new work; tasks that
    /// yielded run when neither has anything; every 64th turn an overdue deferred task, the
    /// oldest new work (every fourth such turn, if more is queued above it), yielded tasks,
    /// then the injector go first.
    #[inline(always)]
    pub(super) fn turn(&self) -> bool {
        self.step::<false>() == Step::Ran
    }

    /// [`turn`](Self::turn) for the loop of a proc with an OS thread of its own
    /// (`run_worker`), which also learns here whether the runtime shut down: if `STOP`, the
    /// shutdown flag is read on the turns that fire due timers (every `TIMER_EVERY`th), not
    /// on every turn (a load and a branch of every fiber switch, 4 of a yield's 140
    /// instructions). A busy proc so stops within `TIMER_EVERY` turns of the flag's store;
    /// an idle one reads it in its look for work (`has_work_sparing`) and before it parks,
    /// and its caller reads it again after `idle` returns.
    #[inline(always)]
    pub(super) fn step<const STOP: bool>(&self) -> Step {
        // The turn counter, shown to the watchdog (a plain load and store: only this proc
        // writes it).
        let turns = &self.me().watch.turns;
        let tick = turns.load(Ordering::Relaxed).wrapping_add(1);
        turns.store(tick, Ordering::Relaxed);
        // Every `TIMER_EVERY`th turn, read off the turn counter (a power of two: a test of its
        // low bits, no countdown of its own to load and store); the injector's turn is a
        // multiple of it, tested only here.
        if tick % TIMER_EVERY == 0 {
            if STOP && self.shared.is_shutdown() {
                return Step::Stop;
            }
            self.fire_due_timers();
            self.check_owed();
            self.pay_unparks();
            // Ready I/O every `IO_EVERY`th turn, unless an idle proc waits for it in the
            // poller (`sched::io`).
            if tick % IO_EVERY == 0 {
                self.io_dispatch(|| self.shared.poll_io_busy());
            }
            if tick % INJECTOR_EVERY == 0 && self.injector_turn() {
                return Step::Ran;
            }
        }
        let prefer_new = self.prefer_new.get();
        if prefer_new {
            // Cleared only when set: a store saved on every turn that no yield preceded.
            self.prefer_new.set(false);
        }
        // The ready queue's emptiness first: with no ready fiber (tasks only) the branch on
        // the turn's parity below is never reached, and this one always goes the same way.
        // (Tested first, the parity alternated at every turn: a mispredicted branch a poll
        // under callgrind's branch simulation.) Written with `new_maybe` tested first, the
        // pick still branched on the parity first (the compiler orders the pure tests), and a
        // yield took 2 instructions more.
        if !self.ready.is_empty() && ((!prefer_new && tick % 2 == 0) || !self.has_new_work()) {
            // The hot path of ping-pong and yield loops: no `Work` value, no new-work probe.
            // SAFETY: not empty, just tested; `has_new_work` only reads other queues.
            let slot = unsafe { self.ready.pop_front_nonempty() };
            self.resume_fiber(slot);
            return Step::Ran;
        }
        self.release_deferred();
        if let Some(task) = self.pop_own_task() {
            // A one-proc runtime's task on top of its own stack: what `new_work` would take.
            self.run_task(task);
            return Step::Ran;
        }
        if let Some(r) = self.new_work() {
            // The hot path of task ping-pong: the run inline in the loop (out of line, its
            // call and the moves of the `Runnable` into it cost a 1-proc `.await` ping-pong
            // about 40 instructions a round trip).
            self.run_new_inline(r);
            return Step::Ran;
        }
        let next = self.ready.pop_front();
        if let Some(slot) = next {
            self.resume_fiber(slot);
            return Step::Ran;
        }
        if let Some(r) = self.woken.pop() {
            self.run_new(r);
            return Step::Ran;
        }
        // A proc sharing its OS thread takes other procs' work only once none of its carrier
        // has any (`steal_for_carrier`).
        let stolen = self.steal_injector().or_else(|| {
            if self.mates {
                None
            } else {
                self.steal_others()
            }
        });
        match stolen {
            Some(r) => {
                self.run_new(r);
                Step::Ran
            }
            None => Step::Idle,
        }
    }

    /// The injector's turn (every `INJECTOR_EVERY`th): an overdue deferred task, every
    /// `OLDEST_EVERY`th time the oldest new work, then woken tasks, then the injector go
    /// before the proc's own queues. Whether it ran something (the turn is then taken).
    #[inline(never)]
    fn injector_turn(&self) -> bool {
        // A deferred task that was already the oldest at the last such turn has waited 64
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
        // Every `OLDEST_EVERY`th such turn, the oldest new work, if more is queued above
        // it: the deque runs newest first, and a pair of tasks that talk keeps one of them
        // on top, so what was queued below (a task woken just before its partner, a child
        // spawned before a wake-up) would wait until the pair stops.
        let oldest = self.oldest_turn.get();
        if oldest <= 1 {
            self.oldest_turn.set(OLDEST_EVERY);
            if let Some(r) = self.take_oldest_new() {
                self.run_new(r);
                return true;
            }
        } else {
            self.oldest_turn.set(oldest - 1);
        }
        if let Some(r) = self.woken.pop() {
            self.run_new(r);
            return true;
        }
        if let Some(r) = self.steal_injector() {
            self.run_new(r);
            return true;
        }
        false
    }

    /// `turn` for a proc of a carrier of several (`run_carrier`), out of line. `turn` is
    /// inlined into both loops: with a second caller the compiler left it out of line, and a
    /// 1-proc ping-pong ran 862 instructions a round trip instead of 817.
    #[inline(never)]
    pub(super) fn carrier_turn(&self) -> bool {
        self.turn()
    }

    /// A carrier's turn of this proc (`run_carrier`) when it has nothing to do: counts the
    /// turn (for the watchdog: a proc whose count stands still while awake is taken for a
    /// hog) and returns true, without entering the proc or looking at its queues one by one,
    /// unless its inbox, its queues or the injector hold something, or the turn is one on
    /// which due timers fire (then false: the caller takes a full turn). The idle mates of a
    /// busy proc are passed over this way on every rotation of their carrier: a full turn
    /// each cost as much as the busy proc's message to another thread.
    #[inline]
    pub(super) fn pass_idle_turn(&self) -> bool {
        let turns = &self.me().watch.turns;
        let tick = turns.load(Ordering::Relaxed).wrapping_add(1);
        if tick % TIMER_EVERY == 0 || self.has_work_here() || !self.shared.injector.is_empty() {
            return false;
        }
        // A plain load and store: only this proc's thread writes its counter.
        turns.store(tick, Ordering::Relaxed);
        true
    }

    /// For a carrier whose procs all found nothing to do in their turns: takes work that
    /// waits on another carrier's procs for this proc, and runs it; returns whether it did.
    /// The carrier's first proc is its thief, for all of its procs (`run_carrier`).
    pub(super) fn steal_for_carrier(&self) -> bool {
        self.enter();
        match self.steal_others() {
            Some(r) => {
                self.run_new(r);
                self.show_running(0);
                true
            }
            None => false,
        }
    }

    pub(super) fn run_new(&self, r: Runnable) {
        self.run_new_inline(r);
    }

    /// [`run_new`](Self::run_new), inline where it is called.
    #[inline(always)]
    fn run_new_inline(&self, r: Runnable) {
        match r {
            Runnable::Fiber(f) => self.start_fiber(f),
            Runnable::Task(t) => self.run_task(t),
        }
    }

    #[inline(always)]
    pub(super) fn run_task(&self, task: TaskRef) {
        self.run_task_as::<true>(task);
    }

    /// `run_task`, offering the task's count to the first waker clone of its poll if
    /// `OFFER` (see below).
    #[inline(always)]
    fn run_task_as<const OFFER: bool>(&self, task: TaskRef) {
        metrics::bump(&self.me().metrics.polls);
        task.header().set_polled_at(self.index, self.new_len());
        let id = task.header().id;
        self.show_running(id.as_u64() | TASK_BIT);
        let header = ptr::NonNull::from(task.header());
        self.current.set(Current::Task { id, header });
        // The count this reference holds may go to the first waker the poll clones (the one
        // it leaves with what it waits for), where it would otherwise count one more and drop
        // this one after the poll: two locked instructions a wait. Only for a registered
        // task: the registry's count keeps the cell alive through the poll even if that
        // waker is woken and dropped on another proc meanwhile.
        let cell = if OFFER && task.header().is_registered() {
            task.as_non_null().cast::<()>().as_ptr().cast_const()
        } else {
            ptr::null()
        };
        if OFFER {
            self.donated.set(cell);
        }
        let outcome = task.run(&task);
        // Taken if the slot no longer holds the cell offered (a null offer stays null).
        let donated = OFFER && self.donated.replace(ptr::null()) != cell;
        self.current.set(Current::Scheduler);
        match outcome {
            TaskRun::Idle => {
                if donated {
                    // A waker owns its count now.
                    std::mem::forget(task);
                }
            }
            TaskRun::Reschedule => self.reschedule_task(task, donated),
            TaskRun::Finished => {
                self.shared.tasks.remove(&task);
                self.shared.thread_finished();
                if donated {
                    // A waker owns its count; the cell may be gone already.
                    std::mem::forget(task);
                }
            }
        }
    }

    /// The end of a poll of `task` that was woken while it ran: it goes back to the queue of
    /// woken tasks. `donated`: whether a waker took the count of the caller's reference.
    ///
    /// Out of line (a rare end), so that the loop that runs a task inline (`run_new_inline`
    /// in `turn`) stays small. With it inline there, the worker's loop grew by 1.4 KiB, and
    /// the benchmark binary's 1-proc skynet over channels missed the instruction cache about
    /// once a leaf (callgrind's cache simulation, `pcml-bench --probe skynet tasks 100000
    /// 10`: 118 k misses, against 23 k before the inline run and 9 k with this out of line)
    /// and ran 5% slower in time, at 2.5% fewer instructions. Such counts depend on where
    /// the code lands, so recheck them after changing this loop. A finished task's end stays
    /// inline: out of line it cost a spawn and await 24 instructions (`examples/taskspawn`).
    #[inline(never)]
    fn reschedule_task(&self, task: TaskRef, donated: bool) {
        if donated {
            // The queue needs a count of its own again (the task is still registered, so the
            // cell is alive).
            task.header().count_ref();
        }
        self.woken.push(Runnable::Task(task));
        self.shared.notify_idle();
    }

    /// Work-first join of a task: polls the task whose cell is at `cell` here, inside the
    /// running task's poll (which awaits its join handle), if it is the newest new work of
    /// this proc, the one this proc's next turn would run anyway. The awaiting task then
    /// takes its result in the same poll, where it would otherwise register its waker, go
    /// idle, be woken by the child's end and be polled again.
    ///
    /// If the newest new work is another task queued since the awaiting task's poll began
    /// (what it spawned after the one it awaits, as a parent that spawns its children and
    /// awaits them in order does), that task runs here instead ([`Joined::Other`]): this
    /// proc's next turns would run them in that order anyway once the awaiting task went
    /// idle, and it would then be woken and polled again only to find them done. The caller
    /// asks again until the awaited task ran or finished, or nothing is left to run here
    /// (the newest work is older than the poll, or a fiber, or gone to a thief).
    ///
    /// Bounded: at most `JOIN_DEPTH_MAX` such runs nest (a chain of tasks that each await
    /// the next), and one in `BUDGET` (or any, once the watchdog finds the proc hogged) is
    /// left to the queue, so that a task that spawns and awaits in a loop still gives its
    /// proc a turn now and then.
    #[inline(never)]
    pub(super) fn run_joined_task(&self, cell: ptr::NonNull<u8>) -> Joined {
        let parent = self.current.get();
        let Current::Task { id, header } = parent else {
            return Joined::Nothing;
        };
        let depth = self.join_depth.get();
        if depth >= JOIN_DEPTH_MAX {
            return Joined::Nothing;
        }
        let left = self.budget.get();
        if left <= 1 || self.me().watch.preempt_requested() {
            self.budget.set(BUDGET);
            return Joined::Nothing;
        }
        // The length of this proc's new work when the awaiting task's poll began (what is
        // queued above it was queued during that poll), read only if the newest work is not
        // the awaited task.
        let since = || {
            // SAFETY: `current` names the task this proc polls, whose cell outlives its poll.
            match unsafe { header.as_ref() }.polled_at() {
                Some(at) if at.proc == self.index => at.depth,
                _ => usize::MAX,
            }
        };
        let Some((task, joined)) = self.pop_new_task_for_join(cell, since) else {
            return Joined::Nothing;
        };
        self.budget.set(left - 1);
        self.join_depth.set(depth + 1);
        // Without the offer of its count to a waker clone (see `run_task`): the awaiting
        // task's offer stays in place through the child's run (a clone of the child's waker
        // does not match it), and a child just spawned is not registered anyway.
        self.run_task_as::<false>(task);
        self.join_depth.set(depth);
        self.current.set(parent);
        self.show_running(id.as_u64() | TASK_BIT);
        joined
    }

    pub(super) fn start_fiber(&self, f: NewFiber) {
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
        let Some(site) = f.body.claim_at(self.index, slot) else {
            // Claimed by its joiner meanwhile.
            self.stacks.borrow_mut().give(stack);
            sh.release_fiber_slot();
            return;
        };
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
        let inserted = unsafe { self.fibers.insert(co, id, main, guard, site) };
        debug_assert_eq!(inserted, slot);
        metrics::add(&self.me().metrics.fibers, 1);
        self.resume_fiber(slot);
    }

    /// Parks an unstarted fiber until a stack is freed.
    pub(super) fn wait_for_stack(&self, f: NewFiber) {
        let sh = &*self.shared;
        sh.stack_waiters.lock().unwrap().push_back(f);
        sh.stack_waiting.fetch_add(1, Ordering::SeqCst);
    }

    /// Resumes the fiber of `slot`, which must hold a started fiber that is not running:
    /// every caller takes `slot` from the ready queue, from a just-checked wake-up, or from
    /// the insert that started the fiber (see `FiberTable::get_unchecked`).
    #[inline(always)]
    pub(super) fn resume_fiber(&self, slot: usize) {
        // SAFETY: a started fiber keeps its slot until it ends (the removal below, after its
        // last resume), and the callers name only such slots (above).
        let e = unsafe { self.fibers.get_unchecked(slot) };
        // Ready, and stays so while it runs (see `FiberState`).
        debug_assert_eq!(e.state.get(), FiberState::Ready);
        // The stores other threads read first, both through `me`: the metrics' count and the
        // watchdog's name of the running thread, relaxed hints whose order against this
        // proc's private stores below nobody can observe (the fiber's and the wake-ups'
        // `Cell`s are read on this thread alone). Before a store to the slot's `Cell`s, the
        // compiler loads `me` once for both; after one, which it cannot tell from a store to
        // `me`, it loaded it again.
        let me = self.me();
        metrics::bump(&me.metrics.resumes);
        // Relaxed: as in `show_running`.
        me.watch.running.store(e.id.as_u64(), Ordering::Relaxed);
        debug_assert!(matches!(e.current, Current::Fiber { slot: s, inlined: 0, .. } if s == slot));
        self.current.set(e.current);
        self.guard.set(e.guard.0);
        // Cancelled since it last ran: it unwinds as soon as it resumes. (Cleared only when
        // set: a store saved on every resume.)
        let cancelled = e.abort.get();
        if cancelled {
            e.abort.set(false);
        }
        // SAFETY: the slot exists and its fiber is not running (we just set its state from a
        // state other than Running); the table does not change while the fiber runs
        // (fibers.rs invariants).
        let result = unsafe { (*e.coroutine()).resume(cancelled) };
        // Read back from the slot rather than kept across the switch: `slot` kept was a
        // store (its spill) on every resume.
        let slot = e.key;
        // `guard` keeps naming the suspended fiber's guard page until the next resume (or
        // its end, below) rewrites it: nothing the worker runs meanwhile touches that page,
        // and the readers that ask whether a fiber runs look at `current` first (the
        // overflow handler only words its message from it). Clearing it was a store of
        // every switch.
        self.current.set(Current::Scheduler);
        match result {
            CoroutineResult::Yield(Suspend::Yield) => {
                // Still `Ready` (`FiberState`).
                self.ready.push_back(slot);
                // The next pick prefers new work only if there may be some (`new_maybe`):
                // without any, the flag would change no pick, and its store and the next
                // turn's clearing store were two of a yield's stores. New work that comes in
                // before that pick (a fiber placed through the inbox, a task a due timer
                // wakes) takes its turn at the pick after, by the parity, as it does after
                // any other turn.
                if self.new_maybe.get() {
                    self.prefer_new.set(true);
                }
            }
            CoroutineResult::Yield(Suspend::Block) => {
                // Cleared only when set: a store saved on the common block.
                if e.wake_pending.get() {
                    e.wake_pending.set(false);
                    // Still `Ready` (`FiberState`).
                    self.ready.push_back(slot);
                } else {
                    e.state.set(FiberState::Blocked);
                }
            }
            CoroutineResult::Return(()) => {
                // The stack goes back to the pool (and may be unmapped): no guard page names it.
                self.guard.set(0);
                // SAFETY: worker loop, no fiber running; `e` is not used after this.
                let (co, _, _) = unsafe { self.fibers.remove(slot) };
                self.stacks.borrow_mut().give(co.into_stack());
                metrics::add(&self.me().metrics.fibers, -1);
                self.fiber_finished();
            }
        }
    }

    pub(super) fn fiber_finished(&self) {
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

    /// Fires the timers that are due, this proc's and those of procs the watchdog has marked
    /// as hogged; returns whether any fired (or were dropped).
    pub(super) fn fire_due_timers(&self) -> bool {
        // Relaxed: a hint; the watchdog marks a hog at most every tick.
        let hogged = self.shared.hogs.load(Ordering::Relaxed) != 0;
        let mut fired = hogged && self.fire_hogged_timers();
        if self.me().timers.lock().is_empty() {
            return fired;
        }
        let now = Instant::now();
        // Locked only to pop: firing wakes threads, which may arm timers on this proc.
        let due = self.me().timers.lock().take_due(now);
        fired |= !due.is_empty();
        crate::sched::timer::fire_all(due);
        fired
    }

    /// Fires the due timers of the procs the watchdog has marked as hogged (their threads
    /// wake here, or through their home proc's inbox); returns whether any fired.
    #[cold]
    #[inline(never)]
    pub(super) fn fire_hogged_timers(&self) -> bool {
        let now = Instant::now();
        let mut fired = false;
        for (i, p) in self.shared.procs.iter().enumerate() {
            // Relaxed: a hint, set by the watchdog.
            if i == self.index || p.watch.preempt.load(Ordering::Relaxed) == 0 {
                continue;
            }
            let due = p.timers.lock().take_due(now);
            fired |= !due.is_empty();
            crate::sched::timer::fire_all(due);
        }
        fired
    }

    /// The earliest timer deadline of this proc and of the procs marked as hogged.
    pub(super) fn next_timer(&self) -> Option<Instant> {
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
}
