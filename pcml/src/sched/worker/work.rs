//! New work: the held fiber, placed fibers, the `local` deque (or the private stack of a
//! one-proc runtime), deferred and woken tasks, and stealing from other procs (see the `sched`
//! docs, "Placement").

use super::*;

impl Context {
    /// Holds a fiber just spawned by this proc's running thread out of the deque, if none is
    /// held yet (else it goes to the deque, where the newest runs first; the held one, the
    /// oldest, runs before them all). Its joiner (typically the spawner, soon) takes it back
    /// with no read-modify-write (see `held`) and runs it inline (`run_held`); otherwise it
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
                self.note_new();
                return;
            }
            drop(held);
            self.queue_new(f);
            return;
        }
        self.hold_new_shared(f);
    }

    /// [`hold_new`](Self::hold_new) on a runtime of several procs.
    ///
    /// A held fiber wakes no idle proc: none may take it before `HELD_GRACE`, and its joiner
    /// usually takes it back within nanoseconds. Waking one per spawn made a spawn+join loop
    /// on 2 procs keep the other proc cycling between a futex wake-up, a spin and a park
    /// (see `idle`: a watcher looks at the held slots instead). Only when no proc watches
    /// and one sleeps with no deadline is one woken, to start watching.
    ///
    /// Its common case (few fibers live here, the slot empty, no proc to wake) calls nothing,
    /// so it saves no registers; the rest is out of line.
    #[inline(never)]
    pub(super) fn hold_new_shared(&self, f: NewFiber) {
        if self.fibers.len() >= SPILL_WATCH {
            return self.hold_new_spill(f);
        }
        let held = &self.me().held;
        if held.can_put() {
            held.put(f);
            self.note_new();
            self.shared.notify_held();
        } else {
            self.queue_new_notify(f);
        }
    }

    /// [`hold_new_shared`](Self::hold_new_shared) once `SPILL_WATCH` started fibers live here.
    #[inline(never)]
    fn hold_new_spill(&self, f: NewFiber) {
        if let Some(to) = self.spill_to() {
            self.count_live_here(1);
            self.shared.send_to(to, InboxMsg::Start(f));
            return;
        }
        match self.me().held.try_put(f) {
            Ok(()) => {
                self.note_new();
                self.shared.notify_held();
            }
            Err(f) => self.queue_new_notify(f),
        }
    }

    /// Queues a spawned fiber that found the held slot full, and tells idle procs.
    #[cold]
    #[inline(never)]
    fn queue_new_notify(&self, f: NewFiber) {
        self.queue_new(f);
        self.burst.set(true);
        self.burst_spawns.set(self.burst_spawns.get() + 1);
        self.shared.notify_idle();
    }

    /// Whether the fibers queued below `part` (popped off this proc's deque, the newest
    /// first) were spawned at the same sites, in the same order, as `part`, as far as the
    /// deque goes: a burst that repeats one group of spawns (a ponger and its pinger, eight
    /// times over; the rows of a matrix) rather than a team whose members differ (4 workers
    /// and the producer that feeds them, spawned last, all talking through two channels:
    /// dealt, the producer and a worker went to the other proc, and every job crossed procs
    /// twice). Tasks below end the comparison.
    fn repeats_below(&self, part: &[Runnable]) -> bool {
        let site = |r: &Runnable| match r {
            Runnable::Fiber(f) => Some(f.body.site()),
            Runnable::Task(_) => None,
        };
        let below = self.pop_local(part.len());
        let same = !below.is_empty()
            && part
                .iter()
                .zip(&below)
                .all(|(a, b)| matches!((site(a), site(b)), (Some(x), Some(y)) if x == y));
        self.unpop_local(below);
        same
    }

    /// Up to `n` items popped off this proc's deque, the newest first.
    fn pop_local(&self, n: usize) -> Vec<Runnable> {
        let mut popped = Vec::with_capacity(n);
        while popped.len() < n
            && let Some(r) = self.local.pop()
        {
            popped.push(r);
        }
        popped
    }

    /// Puts back what [`pop_local`](Self::pop_local) took, as it was: the newest on top.
    fn unpop_local(&self, popped: Vec<Runnable>) {
        self.note_new();
        popped.into_iter().rev().for_each(|r| self.local.push(r));
    }

    /// Splits the burst of fibers that the thread which ran last spawned (see "A burst of
    /// spawns is split with idle procs" in the `sched` docs), before any of them starts: if
    /// the spawn sequence (the deque, and the oldest spawn, held or run inline by its joiner)
    /// is `BURST_MIN` long or more and procs of other OS threads are idle (parked, spinning,
    /// or awake with nothing queued and not hogged), the newest part goes to each of them,
    /// one part per proc, through its inbox (each then starts and stays there, as a
    /// `spawn_on` fiber does, and no joiner runs it inline meanwhile: `FiberBody::deal`), and
    /// this proc keeps the oldest. Parts are of an even length: fibers spawned two by two (a
    /// ponger and its pinger) stay two by two, since the newest spawn ends a pair. Nothing
    /// is dealt from a part that holds a task (tasks migrate, and stealing spreads them),
    /// runs short, or differs in its spawn sites from the spawns below it (`repeats_below`),
    /// nor from a sequence less than half of which the last thread spawned (a tree
    /// unfolding, left to steals).
    #[cold]
    #[inline(never)]
    fn deal_burst(&self) {
        self.burst.set(false);
        let own = self.burst_spawns.replace(0);
        let sh = &*self.shared;
        let n = self.local.len() + usize::from(self.has_held() || self.held_joined.get());
        if n < BURST_MIN {
            return;
        }
        // Most of the sequence was queued by earlier threads, a few spawns each: a tree
        // unfolding (each node spawns its children, then waits for them). Its newest spawns
        // are its smallest subtrees, each of whose sums would cross back to its parent, and
        // dealing them again at every turn an idle proc showed up made a 2-proc fiber
        // skynet twice as slow as 1 proc; an idle proc's steal takes the oldest, the largest
        // subtrees, instead (see "A burst of spawns is split" in the `sched` docs).
        if 2 * own < n {
            return;
        }
        let carrier = self.me().carrier;
        // Relaxed, both: hints (see the fields); the inbox push publishes the fibers.
        let idle = |p: &ProcShared| {
            p.sleeping.load(Ordering::Relaxed) || p.searching.load(Ordering::Relaxed)
        };
        // Awake, but with nothing queued (deques and held slot) and not hogged: its thread
        // takes the part at its next turn (see "A burst of spawns is split" in the `sched`
        // docs: a proc still ending the fibers of an earlier burst, or whose thread the OS
        // has not run since its spawner's wake-up, is not idle yet, and a steal split a pair
        // later).
        let free = |c: usize| {
            sh.procs
                .iter()
                .filter(|p| p.carrier == c)
                .all(|p| !p.has_queued() && !p.held.is_full() && !p.watch.computing_hog())
        };
        // One proc per other OS thread: the first of its carrier, which stands for all.
        let targets = sh
            .procs
            .iter()
            .enumerate()
            .filter(move |&(i, p)| p.carrier == i && p.carrier != carrier && (idle(p) || free(i)))
            .map(|(i, _)| i);
        let idle_procs = targets.clone().count();
        // The most parts that leave each an even length of two or more.
        let Some((parts, len)) = (2..=idle_procs + 1)
            .rev()
            .map(|parts| (parts, (n / parts) & !1))
            .find(|&(_, len)| len >= 2)
        else {
            return;
        };
        let mut dealt = false;
        for to in targets.take(parts - 1) {
            let part = self.pop_local(len);
            if part.len() < len
                || part.iter().any(|r| matches!(r, Runnable::Task(_)))
                || !self.repeats_below(&part)
            {
                self.unpop_local(part);
                break;
            }
            // Oldest first, so that the receiver starts them in spawn order; fibers their
            // joiners already ran inline are dropped, as `new_work` drops them.
            sh.send_all_to(
                to,
                part.into_iter().rev().filter_map(|r| match r {
                    Runnable::Fiber(f) if !f.body.is_claimed() => {
                        f.body.deal();
                        Some(InboxMsg::Start(f))
                    }
                    _ => None,
                }),
            );
            dealt = true;
        }
        if dealt {
            metrics::bump(&self.me().metrics.bursts_dealt);
        }
    }

    /// The proc a fiber spawned here goes to, if not this one: once `SPILL_FROM` started
    /// fibers live here, spawns are dealt in blocks of `SPILL_BLOCK` to each OS thread
    /// (carrier) in turn, the next one first and this one included, a block for another
    /// carrier going to its first proc and one for this carrier staying on this proc, each
    /// block only while this proc's thread has a core to itself and the receiver's thread
    /// would have one (see "Many long-lived fibers are dealt out in long blocks" in the
    /// `sched` docs); a block the tests keep here leaves the turn with the carrier it was
    /// for. A fiber sent elsewhere starts there as
    /// `spawn_on`'s do. From `SPILL_WATCH` started fibers, the first call reads this thread's
    /// wait for a core, so that the first block's test looks at the time since then rather
    /// than at the thread's start-up.
    #[inline]
    fn spill_to(&self) -> Option<usize> {
        if self.fibers.len() < SPILL_FROM {
            if !self.sched_watched.replace(true) {
                self.sched_seen.set(schedstat().unwrap_or_default());
            }
            return None;
        }
        let n = self.spilled.get();
        self.spilled.set(n.wrapping_add(1));
        let at = n % SPILL_BLOCK;
        if at == 0 {
            // The turn goes round the OS threads, not the procs: procs of one carrier share
            // its core, so a block dealt to this carrier's other procs would only add hops
            // on the same thread. Another carrier's block goes to its first proc, this
            // carrier's stays here.
            let (carrier, carriers) = (self.me().carrier, self.shared.carriers());
            let c = (carrier + 1 + self.spill_turn.get()) % carriers;
            let to = if c == carrier { self.index } else { c };
            self.spill_wanted.set(to);
            self.spill_target.set(self.index);
            self.offer_block(to);
        } else if at % SPILL_RETRY == 0 && self.spill_wanted.get() != self.spill_target.get() {
            // A block kept here is offered again after `SPILL_RETRY` spawns: the tests read
            // the machine at one instant, and a thread that was runnable for a moment (a
            // compiler's, a timer's) kept whole blocks on a machine that had the cores.
            self.offer_block(self.spill_wanted.get());
        }
        let to = self.spill_target.get();
        (to != self.index).then_some(to)
    }

    /// Deals the rest of the current block to proc `to` and moves the turn on, unless the
    /// tests keep it here: a block stays here when this thread waited for a core (the procs'
    /// threads would not all run at once, and a chain pinned across them would go at the pace
    /// of the one the OS left waiting). A block for this proc itself is always taken.
    fn offer_block(&self, to: usize) {
        if to == self.index || self.cores_to_spare(to) {
            self.spill_turn.set(self.spill_turn.get().wrapping_add(1));
            self.spill_target.set(to);
        }
    }

    /// Whether this proc's thread spent at most a tenth of its time since the last call
    /// (since `spill_to` first looked, the first time) waiting in the OS's run queue, by the
    /// kernel's count (`/proc/thread-self/schedstat`: CPU time, then run-queue wait, in ns),
    /// and proc `to`'s thread would have a core too ([`core_free_for`](Self::core_free_for)).
    /// The kernel adds to both times only when the thread is switched out or at a timer
    /// tick, so a short window may read 0 of 0: no wait seen. `false` where the counts
    /// cannot be read. Counts its answer and its reason in this proc's metrics.
    #[cold]
    fn cores_to_spare(&self, to: usize) -> bool {
        #[cfg(test)]
        if let Some(spare) = tests::SPARE.with(Cell::get) {
            return spare && tests::REFUSE.with(|r| r.replace(r.get().saturating_sub(1))) == 0;
        }
        let counters = &self.me().metrics;
        let Some((cpu, wait)) = schedstat() else {
            metrics::bump(&counters.blocks_kept_waited);
            return false;
        };
        let (cpu0, wait0) = self.sched_seen.replace((cpu, wait));
        let (dcpu, dwait) = (cpu.saturating_sub(cpu0), wait.saturating_sub(wait0));
        if dwait.saturating_mul(10) > dcpu.saturating_add(dwait) {
            metrics::bump(&counters.blocks_kept_waited);
            return false;
        }
        if !self.core_free_for(to) {
            metrics::bump(&counters.blocks_kept_no_core);
            return false;
        }
        metrics::bump(&counters.blocks_dealt);
        true
    }

    /// Whether proc `to`'s thread would have a core to itself: this thread runs at a
    /// real-time priority (`SCHED_FIFO` or `SCHED_RR`, which the procs' threads share: the
    /// OS runs them ahead of every normally scheduled thread, so only another real-time
    /// thread could take their cores, and the wait test sees that), or the threads runnable
    /// on the machine right now (`/proc/loadavg`'s fourth field) other than this runtime's
    /// awake ones, plus this runtime's with `to` awake, are no more than the process can run
    /// at once. The wait test looks back, and a spawner whose partner procs are parked has
    /// its core to itself even beside a busy process: dealing a block would then wake a
    /// proc thread for which no core is free. `false` where the count cannot be read.
    fn core_free_for(&self, to: usize) -> bool {
        // SAFETY: sched_getscheduler has no preconditions; 0 is the calling thread.
        let policy = unsafe { libc::sched_getscheduler(0) };
        if policy == libc::SCHED_FIFO || policy == libc::SCHED_RR {
            return true;
        }
        static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
        let cores =
            *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
        let Some(running) = super::crowd::runnable() else {
            return false;
        };
        let sh = &self.shared;
        // This runtime's threads awake: its carriers, each asleep only when all its procs
        // are, and then with its first proc marked asleep (`sleep`, `sleep_all`). Counted
        // by procs, the awake idle mates of this proc's carrier counted as threads that
        // would give up their cores, so on 4 procs over 2 threads a block was dealt beside
        // one other runnable thread, where on 2 procs it was kept.
        // Relaxed: a guess for a placement, not a hand-off.
        let asleep = |c: usize| sh.procs[c].sleeping.load(Ordering::Relaxed);
        let ours_now = (0..sh.carriers()).filter(|&c| !asleep(c)).count();
        let ours_after = ours_now + usize::from(asleep(sh.procs[to].carrier));
        running.saturating_sub(ours_now) + ours_after <= cores
    }

    /// Pushes a fiber just spawned here to the local deque, counting it live.
    #[cold]
    pub(super) fn queue_new(&self, f: NewFiber) {
        self.count_live_here(1);
        self.push_new_quiet(Runnable::Fiber(f));
    }

    /// Takes this proc's held fiber if `want` accepts it.
    #[inline]
    pub(super) fn take_held_if(&self, want: impl FnOnce(&NewFiber) -> bool) -> Option<NewFiber> {
        if self.alone {
            self.take_own_held_if(want)
        } else {
            self.me().held.take_if(want)
        }
    }

    /// The one-proc case of [`take_held_if`](Self::take_held_if): the slot is a plain cell.
    #[inline(always)]
    fn take_own_held_if(&self, want: impl FnOnce(&NewFiber) -> bool) -> Option<NewFiber> {
        // SAFETY: as in `has_new_work`: no borrow of `own_held` is alive here, and only its
        // discriminant is read (the common turn finds it empty).
        if unsafe { (*self.own_held.as_ptr()).is_none() } {
            return None;
        }
        let mut h = self.own_held.borrow_mut();
        match &*h {
            Some(f) if want(f) => h.take(),
            _ => None,
        }
    }

    /// [`take_held_if`](Self::take_held_if) for a joiner that runs the fiber inline: on a
    /// runtime of several procs, the next look for new work then runs the oldest queued
    /// spawn first (`held_joined`).
    #[inline]
    pub(super) fn take_held_for_joiner(
        &self,
        want: impl FnOnce(&NewFiber) -> bool,
    ) -> Option<NewFiber> {
        if self.alone {
            return self.take_own_held_if(want);
        }
        let f = self.me().held.take_if(want)?;
        self.held_joined.set(true);
        Some(f)
    }

    /// Whether this proc holds a fiber (a hint off the one-proc case).
    #[inline]
    pub(super) fn has_held(&self) -> bool {
        if self.alone {
            self.own_held.borrow().is_some()
        } else {
            self.me().held.is_full()
        }
    }

    /// Schedules `task`, woken on this proc. If this proc polled it last, and its deque of new
    /// work is longer now than when that poll began, the task waits (in `deferred`) until the
    /// deque is back to that length: what the task spawned before it waited runs first, as a
    /// depth-first run of a tree of spawns would have it. A parent woken by its first child's
    /// reply then takes all its children's replies in one poll, and a parent whose children
    /// block until it receives runs as soon as they have all blocked. Otherwise the task goes
    /// on top of the deque, to run next; idle procs are told only if the deque held new work
    /// already.
    ///
    /// A task woken by readiness events that this proc dispatches is never deferred: the
    /// deque is longer only by the other tasks the same events woke, and the sorted insert
    /// cost a 100-connection echo server, whose every task waits in a socket, 128
    /// instructions a round trip (callgrind, `examples/echo_load pcml 1 0 600`).
    ///
    /// A task whose last poll left a choice of several branches pending stays with the proc
    /// that polled it (see the `sched` docs, "Fair choice across procs"): woken there, it
    /// waits in the proc's own queue of placed work, which no other proc takes from; woken
    /// elsewhere, it goes back through that proc's inbox. A chooser that followed each
    /// partner that woke it, or that an idle proc took while its own proc's thread waited
    /// for a core, would sit beside one partner, whose next offers then come first.
    ///
    /// A one-proc runtime takes a path of its own: its tasks have no other proc to stay away
    /// from or be sent back to, and nobody to tell (a 1-proc `.await` ping-pong's every
    /// wake-up comes here).
    #[inline]
    pub(super) fn wake_here(&self, task: TaskRef) {
        let polled = task.header().polled_at();
        if self.alone {
            if let Some(at) = polled
                && at.proc == self.index
                && !self.io_dispatch.get()
                && self.new_len() > at.depth
            {
                self.defer(task, at.depth);
                return;
            }
            // SAFETY: as in `pop_new`: no borrow of `own` is alive (a wake-up comes from a
            // poll or a turn of this proc, never from under one of its borrows).
            unsafe { (*self.own.as_ptr()).push(Runnable::Task(task)) };
            self.note_new();
            return;
        }
        if let Some(at) = polled {
            if at.proc == self.index {
                if at.choice {
                    self.placed.borrow_mut().push_back(Runnable::Task(task));
                    self.note_new();
                    return;
                }
                if !self.io_dispatch.get() && self.new_len() > at.depth {
                    self.defer(task, at.depth);
                    return;
                }
            } else if at.choice && at.proc < self.shared.procs.len() {
                self.send_home(at.proc, task);
                return;
            }
        }
        self.push_task_here(task);
    }

    /// Keeps `task`, woken here, in `deferred` until this proc's deque of new work is back to
    /// `depth` items (see [`wake_here`](Self::wake_here)).
    #[inline(never)]
    fn defer(&self, task: TaskRef, depth: usize) {
        let mut d = self.deferred.borrow_mut();
        // Kept in ascending order of due length, so the back is the first due.
        let i = d.partition_point(|&(_, due)| due <= depth);
        d.insert(i, (task, depth));
    }

    /// Runs `f`, which dispatches readiness events on this proc (see `io_dispatch`). The
    /// tasks it wakes go on the deque without telling idle procs one by one; if it queued
    /// two or more, idle procs may take them at once (`io_batch`): each waited on its own
    /// source, none is the continuation of what this proc runs next, so there is no partner
    /// to keep them beside, as there is for a thread just spawned or woken by a message.
    /// Waiting `STEAL_GRACE` for them cost the idle proc of a 2-proc echo server a third of
    /// the process's CPU time (`examples/echo_load pcml 2`).
    ///
    /// A sleeping proc is woken for them (once) only while the machine has a core to spare
    /// (`Crowding::is_crowded`, as an idle proc's spin asks): on a crowded machine the wake-up
    /// takes a core from another runnable thread, quite likely the clients whose requests
    /// the batch answers. A 2-proc hyper server under `wrk -t2 -c100` on the 2-core machine
    /// (crowded throughout) woke its other proc 1,400-2,100 times a second for such batches;
    /// without those wake-ups it took 5,564 ns of CPU a request against 5,817 (tokio
    /// `multi_thread(2)` 5,578), at 178 k requests/s against 171 k (tokio 179 k), 8
    /// alternations; never waking at all: 5,604 ns, 173 k. The 2-proc echo server moved
    /// within its noise (server CPU 3.64-3.81 us a round trip against 3.53-3.88, 4
    /// alternations).
    #[inline]
    pub(super) fn io_dispatch(&self, f: impl FnOnce()) {
        if self.alone {
            self.io_dispatch.set(true);
            f();
            self.io_dispatch.set(false);
            return;
        }
        let before = self.local.len();
        self.io_dispatch.set(true);
        f();
        self.io_dispatch.set(false);
        let after = self.local.len();
        if after > before && after >= 2 {
            let batch = &self.me().io_batch;
            // Relaxed: a hint for thieves; the work itself is published by the deque.
            if !batch.load(Ordering::Relaxed) {
                batch.store(true, Ordering::Relaxed);
            }
            if !self.shared.crowding.is_crowded() {
                self.shared.notify_idle();
            }
        }
    }

    /// Clears `io_batch` (see `io_dispatch`): this proc ran out of work.
    #[inline]
    pub(super) fn end_io_batch(&self) {
        let batch = &self.me().io_batch;
        // Relaxed: as in `io_dispatch`.
        if batch.load(Ordering::Relaxed) {
            batch.store(false, Ordering::Relaxed);
        }
    }

    /// Sends `task`, woken here, back to proc `home`, where its pending choice was made;
    /// runs it here instead if the watchdog found `home` running one thread for a time slice
    /// and that thread computing. A home proc whose OS thread merely waits for a core is
    /// waited for, as a fiber's home always is: a task run here meanwhile would take only the
    /// offers of the partners here.
    #[cold]
    #[inline(never)]
    fn send_home(&self, home: usize, task: TaskRef) {
        if self.shared.procs[home].watch.computing_hog() {
            self.push_task_here(task);
            return;
        }
        self.shared.send_to(home, InboxMsg::Task(task));
    }

    /// Pushes a task (woken or spawned here) on this proc's deque, and tells idle procs only
    /// if the deque already held new work (tokio's rule for its LIFO slot): a lone task runs
    /// here at this proc's next turn, after the running thread's, so waking another proc for
    /// it would only move it away from the thread it talks to (a woken task's waker, a new
    /// task's joiner), and costs this proc a SeqCst fence. It stays stealable; if this proc's
    /// thread computes on, the watchdog wakes a sleeper to take it after a time slice. A second
    /// task pushed before this proc's next turn tells them, so a burst of spawns still spreads.
    #[inline(always)]
    pub(crate) fn push_task_here(&self, task: TaskRef) {
        if self.alone {
            // Nobody to tell.
            self.own.borrow_mut().push(Runnable::Task(task));
            self.note_new();
            return;
        }
        let lone = self.new_is_empty();
        self.push_new_quiet(Runnable::Task(task));
        // During a dispatch of readiness events, `io_dispatch` tells them once at its end.
        if !lone && !self.io_dispatch.get() {
            self.shared.notify_idle();
        }
    }

    /// Moves the deferred tasks now due (their length reached) onto the deque, the one due at
    /// the greatest length (the most recent continuation) on top, where idle procs may also
    /// steal them.
    #[inline(always)]
    pub(super) fn release_deferred(&self) {
        // SAFETY: only a length is read, and no borrow of `deferred` is alive here (it is
        // borrowed only inside this proc's own methods, never across a poll, a switch or a
        // call of this one). Saves the borrow flag's test and writes on the common turn,
        // which finds it empty.
        if unsafe { (*self.deferred.as_ptr()).is_empty() } {
            return;
        }
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
    pub(super) fn push_new(&self, r: Runnable) {
        self.push_new_quiet(r);
        self.shared.notify_idle();
    }

    /// [`push_new`](Self::push_new) without telling idle procs.
    #[inline]
    pub(super) fn push_new_quiet(&self, r: Runnable) {
        if self.alone {
            self.own.borrow_mut().push(r);
        } else {
            self.local.push(r);
        }
        self.note_new();
    }

    /// The newest new work of this proc's private stack (one-proc runtimes) or deque.
    #[inline]
    pub(super) fn pop_new(&self) -> Option<Runnable> {
        // SAFETY: no borrow of `own` is alive here (it is borrowed only inside this proc's
        // own methods, never across a poll, a switch or a call of this one), so this is the
        // only reference while the pop runs. Unchecked: the borrow flag's test and writes
        // were 4 instructions of every turn that runs a task on a one-proc runtime.
        if self.alone
            && let Some(r) = unsafe { (*self.own.as_ptr()).pop() }
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

    /// For a join of the task at `cell` ([`Context::run_joined_task`]): the newest new work
    /// of this proc (as [`pop_new`](Self::pop_new) takes it) if it is that task (then with
    /// [`Joined::Target`]), or if it is another task and more new work is queued than
    /// `since()` ([`Joined::Other`]); otherwise it stays where it is.
    #[inline]
    pub(super) fn pop_new_task_for_join(
        &self,
        cell: ptr::NonNull<u8>,
        since: impl FnOnce() -> usize,
    ) -> Option<(TaskRef, Joined)> {
        let is_target = |t: &TaskRef| t.as_non_null().cast::<u8>() == cell;
        if self.alone {
            let mut own = self.own.borrow_mut();
            if !own.is_empty() {
                let joined = match own.last() {
                    Some(Runnable::Task(t)) if is_target(t) => Joined::Target,
                    Some(Runnable::Task(_)) => Joined::Other,
                    _ => return None,
                };
                if joined == Joined::Other && own.len() + self.local.len() <= since() {
                    return None;
                }
                return match own.pop() {
                    Some(Runnable::Task(t)) => Some((t, joined)),
                    _ => None,
                };
            }
        }
        if self.local.is_empty() {
            return None;
        }
        match self.local.pop()? {
            Runnable::Task(t) if is_target(&t) => Some((t, Joined::Target)),
            // Counted with itself, as before the pop.
            Runnable::Task(t) if self.local.len() + 1 > since() => Some((t, Joined::Other)),
            // Back on top, where it was.
            other => {
                self.local.push(other);
                self.note_new();
                None
            }
        }
    }

    /// How much new work this proc has queued (its private stack and its deque).
    #[inline]
    pub(super) fn new_len(&self) -> usize {
        let own = if self.alone {
            // SAFETY: only a length is read, and no mutable borrow of `own` is alive here
            // (see `pop_new`).
            unsafe { (*self.own.as_ptr()).len() }
        } else {
            0
        };
        own + self.local.len()
    }

    /// Whether this proc's private stack and deque are empty (cheap loads only).
    #[inline]
    pub(super) fn new_is_empty(&self) -> bool {
        (!self.alone || self.own.borrow().is_empty()) && self.local.is_empty()
    }

    /// Whether the held slot, placed fibers, the private stack or the local deque hold
    /// anything (cheap loads only).
    ///
    /// Reads the private queues' lengths without their `RefCell` borrow flags: `turn` asks
    /// this after every yield (to run new work before the yielder), and the flags' checks
    /// were a quarter of its cost (6 of 25 instructions; the yield went from 156 to 148
    /// instructions, `examples/yield_only` under callgrind). Before them all, `new_maybe`
    /// (see the field): with it a yield took 119 instructions instead of 136, a 1-proc fiber
    /// ping-pong 610 a round trip instead of 630 (callgrind, as above).
    #[inline]
    pub(super) fn has_new_work(&self) -> bool {
        if !self.new_maybe.get() {
            // Nothing was pushed since they were last all seen empty (see the field).
            return false;
        }
        // SAFETY: no mutable borrow of `own_held`, `own` or `placed` is alive here: they are
        // borrowed only inside this proc's own methods, never across a switch, a poll or a
        // call of this one (the closures run under them are predicates on one item), and
        // this only reads a length or a discriminant.
        let placed = unsafe { !(*self.placed.as_ptr()).is_empty() };
        let any = if self.alone {
            // SAFETY: as above.
            let own =
                unsafe { (*self.own_held.as_ptr()).is_some() || !(*self.own.as_ptr()).is_empty() };
            own || !self.local.is_empty() || placed
        } else {
            self.me().held.is_full() || !self.local.is_empty() || placed
        };
        if !any {
            self.new_maybe.set(false);
        }
        any
    }

    /// Notes a push of new work onto the held slot, `own`, `local` or `placed` (see the
    /// `new_maybe` field); every such push calls it.
    #[inline(always)]
    pub(super) fn note_new(&self) {
        self.new_maybe.set(true);
    }

    /// On a one-proc runtime, the task on top of this proc's own stack if that is what
    /// [`new_work`](Self::new_work) would return next (nothing to deal, no held fiber, no
    /// oldest spawn to run first, no placed work), taken as a `TaskRef`. The common turn of
    /// a task ping-pong: `new_work`'s `Option<Runnable>`, moved through the stack on its
    /// way to `run_task` and tested for a fiber twice, cost about 20 instructions a turn
    /// (callgrind, `examples/taskpp`).
    #[inline(always)]
    pub(super) fn pop_own_task(&self) -> Option<TaskRef> {
        if !self.alone || self.burst.get() || self.held_joined.get() {
            return None;
        }
        // SAFETY: as in `pop_new`: no borrow of `own`, `own_held` or `placed` is alive here,
        // so these are the only references while they are used.
        let (own, held, placed) = unsafe {
            (
                &mut *self.own.as_ptr(),
                &*self.own_held.as_ptr(),
                &*self.placed.as_ptr(),
            )
        };
        if held.is_some() || !placed.is_empty() {
            return None;
        }
        let Some(Runnable::Task(top)) = own.last() else {
            return None;
        };
        // SAFETY: the top item's one field is moved out, and the item is then forgotten by
        // the length's decrement (a `Runnable::Task` owns nothing else), so it is neither
        // dropped nor read again.
        unsafe {
            let task = std::ptr::read(top);
            own.set_len(own.len() - 1);
            Some(task)
        }
    }

    /// The held fiber, a placed fiber or the local deque's next item, skipping fibers that
    /// their joiners already ran inline.
    #[inline(always)]
    pub(super) fn new_work(&self) -> Option<Runnable> {
        if self.burst.get() {
            self.deal_burst();
        }
        if let Some(f) = self.take_held_if(|_| true) {
            // Off the held slot: counted live from now on (see `hold_new`).
            self.count_live_here(1);
            return Some(Runnable::Fiber(f));
        }
        // A joiner took the held fiber, the oldest spawn queued here, and ran it inline: the
        // spawn after it, now the oldest in the deque and the first a thief would take,
        // runs next, here, beside it.
        let oldest = if self.held_joined.replace(false) {
            self.take_oldest_queued()
        } else {
            None
        };
        if oldest.is_some() {
            return oldest;
        }
        loop {
            // SAFETY: as in `has_new_work`: no borrow of `placed` is alive here, and only
            // its length is read (saves the borrow flag's test and writes on the common
            // turn, which finds it empty).
            let placed = unsafe { !(*self.placed.as_ptr()).is_empty() };
            let next = match placed
                .then(|| self.placed.borrow_mut().pop_front())
                .flatten()
            {
                Some(r) => Some(r),
                None => self.pop_new(),
            };
            match next {
                Some(Runnable::Fiber(f)) if f.body.is_claimed() => drop(f),
                other => return other,
            }
        }
    }

    /// Takes the oldest item of this proc's new work if two or more are queued (on a
    /// one-proc runtime the newest takes its place at the bottom of the private stack: O(1),
    /// and it is the next one taken so). Every `OLDEST_EVERY` injector turns (`turn`): the deque
    /// runs newest first, so without it an item below the top waits for as long as something
    /// is pushed above it at every turn, as a pair of tasks that talk does.
    pub(super) fn take_oldest_new(&self) -> Option<Runnable> {
        if self.alone {
            let mut own = self.own.borrow_mut();
            return (own.len() >= 2).then(|| own.swap_remove(0));
        }
        if self.local.len() < 2 {
            return None;
        }
        // The deque's oldest end is the one thieves take from.
        loop {
            match self.me().stealer.steal() {
                Steal::Success(r) => return Some(r),
                Steal::Empty => return None,
                Steal::Retry => {}
            }
        }
    }

    /// The oldest item of this proc's deque (the end thieves take from), skipping fibers
    /// that their joiners already ran inline; a runtime of several procs only.
    #[cold]
    fn take_oldest_queued(&self) -> Option<Runnable> {
        while !self.local.is_empty() {
            match self.me().stealer.steal() {
                Steal::Success(Runnable::Fiber(f)) if f.body.is_claimed() => drop(f),
                Steal::Success(r) => return Some(r),
                Steal::Empty => return None,
                Steal::Retry => {}
            }
        }
        None
    }

    pub(super) fn steal_injector(&self) -> Option<Runnable> {
        // Two loads first: a steal from an empty injector costs a SeqCst fence, and idle
        // procs (a carrier's idle mates on every rotation) look at it on every turn. Work
        // pushed meanwhile is seen by the next look, or by `has_work` after the sleeper's
        // fence (`push_injector`).
        if self.shared.injector.is_empty() {
            return None;
        }
        loop {
            match self.shared.injector.steal_batch_and_pop(&self.local) {
                Steal::Success(r) => {
                    // The rest of the batch went to the deque.
                    self.note_new();
                    metrics::bump(&self.me().metrics.injector_pulls);
                    return Some(r);
                }
                Steal::Empty => return None,
                Steal::Retry => {}
            }
        }
    }

    pub(super) fn steal_others(&self) -> Option<Runnable> {
        let n = self.shared.procs.len();
        for k in 1..n {
            let victim = &self.shared.procs[(self.index + k) % n];
            if victim.carrier == self.me().carrier {
                // Its work runs on this OS thread anyway, at its own proc's turn.
                continue;
            }
            // Its new work first (the oldest: near the root of a tree of spawns, the most
            // work), then its woken tasks, each into the queue of the same kind here.
            let queued = [
                (&victim.stealer, &self.local),
                (&victim.woken_stealer, &self.woken),
            ];
            let left = if victim.has_queued() {
                self.left_there(victim)
            } else {
                Left::No
            };
            for (from, to) in queued.into_iter().filter(|_| left != Left::No) {
                // Taken from a proc whose thread has no core: a lone item of new work may
                // be the second of a pair spawned back to back (a pinger whose ponger is
                // held), which its spawner runs as soon as it has a core again.
                if left == Left::Starved && from.len() < 2 && ptr::eq(from, &victim.stealer) {
                    continue;
                }
                loop {
                    match from.steal_batch_and_pop(to) {
                        Steal::Success(r) => {
                            // The rest of the batch went to the deque (or to `woken`).
                            self.note_new();
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
                && let Some(f) = victim.held.steal()
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
    /// more, and the victim's thread has since spent [`HELD_BUSY`] of CPU time on other work
    /// (or its CPU clock cannot be read). If it is another (or the first seen), remembers it
    /// and says no: the caller looks again on a later turn, or after a park of at most
    /// `HELD_GRACE` (`idle`). A victim whose thread had no core meanwhile (a busy machine)
    /// keeps its fiber: it runs it as soon as it gets a core back, where the fiber's partners
    /// are. The watchdog marks a proc as hogged after `TIME_SLICE` without a turn, and the
    /// fiber of one whose thread computes or sleeps in the OS then moves whatever the clock
    /// says; that of one whose thread is runnable and waits for a core stays
    /// (`ProcShared::movable_hog`).
    pub(super) fn held_waited(&self, victim: &ProcShared) -> bool {
        let (v, ticket) = (victim as *const ProcShared as usize, victim.held.ticket());
        match self.held_seen.get() {
            Some(seen) if seen.victim == v && seen.ticket == ticket => {
                if seen.when.elapsed() < HELD_GRACE {
                    return false;
                }
                match (seen.cpu, victim.cpu_time()) {
                    (Some(then), Some(now)) => {
                        now.saturating_sub(then) >= HELD_BUSY || victim.movable_hog()
                    }
                    _ => true,
                }
            }
            _ => {
                self.held_seen.set(Some(HeldSeen {
                    victim: v,
                    ticket,
                    when: Instant::now(),
                    cpu: victim.cpu_time(),
                }));
                false
            }
        }
    }

    /// Whether `victim`'s queued work stays there for [`STEAL_GRACE`]: the proc watches it
    /// that long (giving up at once if work of its own arrives, or if the victim runs or
    /// hands out what it had) before it takes any, and only if the victim's thread ran on a
    /// core meanwhile (its CPU clock moved by a quarter of the grace, or cannot be read, or
    /// the watchdog marked it hogged and its thread does not merely wait for a core). See
    /// the module docs: work that its own proc is about to run is not moved away from the
    /// threads it talks to, and a victim whose thread had no core (a busy machine, or more
    /// procs than cores) runs its work itself once it gets one back, unless this proc has
    /// been refused its work for [`STARVED_AFTER`] with its queue never seen empty: then
    /// its backlog is taken ([`Left::Starved`]). Surplus that a dispatch of readiness events
    /// queued (`io_batch`, see `io_dispatch`) is taken at once.
    #[inline(never)]
    pub(super) fn left_there(&self, victim: &ProcShared) -> Left {
        // This proc has no work of its own while it watches: a proc about to start a burst
        // of spawns may deal it a part (`deal_burst`), which ends the watch at once.
        let searching = &self.me().searching;
        // Relaxed, both: a hint (see the field).
        let was = searching.load(Ordering::Relaxed);
        searching.store(true, Ordering::Relaxed);
        let left = self.watch_left_there(victim);
        searching.store(was, Ordering::Relaxed);
        left
    }

    /// [`left_there`](Self::left_there) while this proc shows itself idle.
    #[inline(always)]
    fn watch_left_there(&self, victim: &ProcShared) -> Left {
        // Relaxed: a hint (see the field); a batch of tasks woken by readiness events has no
        // partner to stay beside.
        if victim.io_batch.load(Ordering::Relaxed) && victim.has_surplus() {
            return Left::Waited;
        }
        let start = Instant::now();
        let cpu_then = victim.cpu_time();
        // Relaxed: a hint (see below).
        let turns_then = victim.watch.turns.load(Ordering::Relaxed);
        let v = victim as *const ProcShared as usize;
        // The victim ran out of queued work: a later refusal starts a new count.
        let emptied = || {
            if self.refused_since.get().is_some_and(|r| r.victim == v) {
                self.refused_since.set(None);
            }
            Left::No
        };
        loop {
            // The victim's queue is read once a round, this proc's own every few pauses: each
            // read of the victim's lines takes them from its core, and its next push or pop
            // then misses (see `has_work_sparing`).
            if !victim.has_queued() {
                return emptied();
            }
            for _ in 0..16 {
                if self.has_own_work() || self.mates_have_work() {
                    return Left::No;
                }
                for _ in 0..8 {
                    crate::loom::spin_loop();
                }
            }
            // A victim that takes turns runs its one queued item itself, next turn: the task
            // not running of a pair that talks, say, which a steal would move away from the
            // other (and the pair then either moves with it or talks across procs).
            if !victim.has_surplus() && victim.watch.turns.load(Ordering::Relaxed) != turns_then {
                return emptied();
            }
            if start.elapsed() >= STEAL_GRACE {
                if !victim.has_queued() {
                    return emptied();
                }
                let ran = match (cpu_then, victim.cpu_time()) {
                    (Some(then), Some(now)) => {
                        now.saturating_sub(then) >= STEAL_GRACE / 4 || victim.movable_hog()
                    }
                    _ => true,
                };
                if ran {
                    self.refused.set(false);
                    return Left::Waited;
                }
                let now = Instant::now();
                match self.refused_since.get() {
                    // A count goes on only while the looks at the queue are close enough
                    // together to say that it stayed full: one looked at again only after
                    // a while may have emptied and filled again meanwhile.
                    Some(r) if r.victim == v && now - r.last <= STARVED_AFTER * 4 => {
                        self.refused_since.set(Some(Refusals { last: now, ..r }));
                        if now - r.first >= STARVED_AFTER && victim.has_backlog() {
                            // The count goes on: the victim's next refusal takes its backlog
                            // at once too.
                            self.refused.set(false);
                            return Left::Starved;
                        }
                    }
                    _ => self.refused_since.set(Some(Refusals {
                        victim: v,
                        first: start,
                        last: now,
                    })),
                }
                self.refused.set(true);
                return Left::No;
            }
        }
    }

    /// Whether work for this proc alone arrived: its inbox, ready fibers, or anything in its
    /// own queues (cheap loads only).
    pub(super) fn has_own_work(&self) -> bool {
        !self.me().inbox.is_empty()
            || !self.ready.is_empty()
            || !self.woken.is_empty()
            || self.has_new_work()
            || self.shared.is_shutdown()
    }

    /// Whether a proc sharing this one's OS thread got work from elsewhere (its inbox; what
    /// it makes itself arises only in its own turn). False at once without mates.
    #[inline]
    pub(super) fn mates_have_work(&self) -> bool {
        self.mates
            && self
                .carrier_mates()
                .iter()
                .any(|m| !m.me().inbox.is_empty() || !m.new_is_empty())
    }

    /// [`has_work`](Self::has_work), looking at other procs' queues only if `others`. An
    /// idle proc's spin looks at its own queues and inbox at every look but at the others'
    /// only every `OTHERS_EVERY`th: a read of another proc's deque takes the line of its
    /// indices from that proc's core, and its next push or pop misses. Read every 200 ns, a
    /// 2-proc skynet whose second proc spun beside the first (`examples/skynet 729
    /// tasks-once 2000 3 2`) took twice as long as on one proc.
    #[inline]
    pub(super) fn has_work_sparing(&self, others: bool) -> bool {
        let sh = &*self.shared;
        self.has_work_here()
            || !sh.injector.is_empty()
            || (others && !self.refused.get() && self.others_waiting())
            || sh.is_shutdown()
    }

    /// Whether there is work this proc could take (cheap loads only).
    pub(super) fn has_work(&self) -> bool {
        self.has_work_sparing(true)
    }

    /// Whether this proc's own inbox or queues hold anything (cheap loads only).
    #[inline]
    pub(super) fn has_work_here(&self) -> bool {
        !self.me().inbox.is_empty()
            || !self.ready.is_empty()
            || !self.woken.is_empty()
            || !self.deferred.borrow().is_empty()
            || self.has_held()
            || !self.placed.borrow().is_empty()
            || !self.new_is_empty()
    }

    /// `has_work` for the procs of a carrier (`run_carrier`) as one: their own inboxes and
    /// queues, then once for all of them the injector and the surplus of the procs of other
    /// carriers (the only ones they take work from), as their first proc, their thief
    /// (`steal_for_carrier`), sees it. Asking `has_work` of each proc read every proc's
    /// queues once per proc of the carrier: on 8 procs over 2 threads, 28 looks at other
    /// procs' deques per look, where 4 do.
    pub(super) fn carrier_has_work(ctxs: &[Context]) -> bool {
        let head = &ctxs[0];
        let sh = &*head.shared;
        let carrier = head.me().carrier;
        ctxs.iter().any(Context::has_work_here)
            || !sh.injector.is_empty()
            || (!head.refused.get()
                && sh
                    .procs
                    .iter()
                    .any(|p| p.carrier != carrier && p.has_surplus()))
            || sh.is_shutdown()
    }

    /// Whether another proc has more work waiting than its next turn takes (cheap loads
    /// only; see [`ProcShared::has_surplus`]). One task or fiber queued alone is its own
    /// proc's to run at its next turn: a proc running a pair of tasks that talk has the one
    /// not running queued there about half the time, and an idle proc that counted that as
    /// work never parked: it spun on the other proc's queue (bouncing its cache lines), and
    /// took a task of the pair whenever the queue looked full through a whole `STEAL_GRACE`.
    /// A proc that finds nothing of its own on a turn still looks at lone items
    /// (`steal_others`), and the watchdog wakes a sleeper for one left behind a thread that
    /// computes for a time slice.
    pub(super) fn others_waiting(&self) -> bool {
        self.shared
            .procs
            .iter()
            .enumerate()
            .any(|(i, p)| i != self.index && p.has_surplus())
    }
}

/// What [`Context::left_there`] found of another proc's queued work.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Left {
    /// Not to be taken: it went, this proc got work of its own, or the victim's thread had
    /// no core.
    No,
    /// It waited while the victim's thread ran (or it is a batch of readiness wake-ups).
    Waited,
    /// Its backlog waited through refusals for `STARVED_AFTER`, the victim's thread off its
    /// core: woken tasks, and new work only from a deque of two items or more.
    Starved,
}

/// The shortest spawn sequence that `deal_burst` splits with idle procs: four pairs. A
/// shorter burst is as likely a small team that talks through shared channels (a worker
/// pool of 4 and its producer) as independent groups.
const BURST_MIN: usize = 8;
/// Started fibers living on a proc from which its spawns are dealt to the procs in blocks.
const SPILL_FROM: usize = 100;
/// Started fibers living on a proc from which `spill_to` reads the thread's wait for a core,
/// the start of the first block's window.
const SPILL_WATCH: usize = SPILL_FROM / 2;
/// Fibers in each such block.
const SPILL_BLOCK: usize = 100;
/// Spawns between two offers of a block that the tests kept here (see `spill_to`): one
/// more offer, halfway through the block, for its second half.
const SPILL_RETRY: usize = 50;

/// This thread's CPU time and run-queue wait in ns, by the kernel's count.
fn schedstat() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let mut it = s.split_whitespace().map(|x| x.parse::<u64>().ok());
    Some((it.next()??, it.next()??))
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::{SPILL_BLOCK, SPILL_RETRY};
    use crate::chan::Chan;

    thread_local! {
        /// What `cores_to_spare` answers on this thread, if set (a fiber pinned there sets it).
        pub(super) static SPARE: Cell<Option<bool>> = const { Cell::new(None) };
        /// How many of its next calls `cores_to_spare` answers `false` first, where `SPARE`
        /// is `Some(true)`.
        pub(super) static REFUSE: Cell<usize> = const { Cell::new(0) };
    }

    /// A chain of `n` fibers on 2 procs whose threads answer `spare` to `cores_to_spare`
    /// (after `refuse` answers `false`), each spawned by main once the one before has
    /// started, as the primes sieve spawns its filters; returns the proc each fiber started
    /// on, after checking that a message down the chain found every fiber still there.
    fn chain(n: usize, spare: bool, refuse: usize) -> Vec<usize> {
        chain_on(2, 2, n, spare, refuse)
    }

    /// [`chain`] on `procs` procs over `carriers` OS threads.
    fn chain_on(procs: usize, carriers: usize, n: usize, spare: bool, refuse: usize) -> Vec<usize> {
        let rt = crate::Runtime::builder()
            .procs(procs)
            .carrier_threads(carriers)
            .build()
            .unwrap();
        rt.block_on(move || {
            for p in 0..2 {
                crate::spawn_on(p, move || {
                    SPARE.with(|s| s.set(Some(spare)));
                    REFUSE.with(|r| r.set(refuse));
                })
                .join()
                .unwrap();
            }
            let report: Chan<usize> = Chan::new();
            let first: Chan<bool> = Chan::new();
            let mut last = first.clone();
            let mut procs = Vec::with_capacity(n);
            for _ in 0..n {
                let (output, reply) = (Chan::new(), report.clone());
                let input = std::mem::replace(&mut last, output.clone());
                drop(crate::spawn(move || {
                    let here = crate::current_proc().unwrap();
                    reply.send(here);
                    loop {
                        let ok = input.recv();
                        output.send(ok && crate::current_proc() == Some(here));
                    }
                }));
                procs.push(report.recv());
            }
            first.send(true);
            assert!(last.recv(), "a fiber of the chain moved");
            procs
        })
        .unwrap()
    }

    /// Whether every fiber of `range` in a [`chain`]'s report ran on `proc`.
    fn all_on(procs: &[usize], range: std::ops::Range<usize>, proc: usize) -> bool {
        range.into_iter().all(|i| procs[i] == proc)
    }

    #[test]
    fn spawns_are_dealt_in_blocks_once_many_fibers_live_here() {
        let procs = chain(350, true, 0);
        // Main and the first 99 fibers live on proc 0 (give or take a stolen one); then
        // blocks of 100 go to proc 1, proc 0 and proc 1.
        let on = |range, proc| all_on(&procs, range, proc);
        assert!(on(110..190, 1), "{procs:?}");
        assert!(on(210..290, 0), "{procs:?}");
        assert!(on(310..350, 1), "{procs:?}");
    }

    #[test]
    fn a_block_kept_here_leaves_the_turn_to_the_proc_it_was_for() {
        // Refused at its start and at each later offer within it.
        let procs = chain(450, true, 1 + (SPILL_BLOCK / SPILL_RETRY - 1));
        // The first block, for proc 1, is refused and stays on proc 0; the next goes to
        // proc 1 (not back to proc 0 by turn), then proc 0, then proc 1.
        let on = |range, proc| all_on(&procs, range, proc);
        assert!(on(110..190, 0), "{procs:?}");
        assert!(on(210..290, 1), "{procs:?}");
        assert!(on(310..390, 0), "{procs:?}");
        assert!(on(410..450, 1), "{procs:?}");
    }

    #[test]
    fn a_kept_block_is_offered_again_and_its_rest_dealt() {
        let procs = chain(450, true, 1);
        // The first block, for proc 1, is refused at its start (chain fiber 99: main and
        // 99 fibers live on proc 0 then) and dealt at its next offer, `SPILL_RETRY` spawns
        // later; the turn then goes on as if the whole block had been dealt.
        let on = |range, proc| all_on(&procs, range, proc);
        assert!(on(100..140, 0), "{procs:?}");
        assert!(on(155..190, 1), "{procs:?}");
        assert!(on(210..290, 0), "{procs:?}");
        assert!(on(310..390, 1), "{procs:?}");
    }

    #[test]
    fn blocks_go_to_the_os_threads_in_turn_when_procs_share_them() {
        // 4 procs over 2 threads: procs 0 and 2 share one, 1 and 3 the other. Blocks of 100
        // go to the other thread's first proc, back to the spawner's proc (not to proc 2 on
        // its thread, nor to proc 3), and again to proc 1: the layout of 2 procs.
        let procs = chain_on(4, 2, 350, true, 0);
        let on = |range, proc| all_on(&procs, range, proc);
        assert!(on(110..190, 1), "{procs:?}");
        assert!(on(210..290, 0), "{procs:?}");
        assert!(on(310..350, 1), "{procs:?}");
        assert!(procs.iter().all(|&p| p < 2), "{procs:?}");
    }

    #[test]
    fn one_thread_keeps_every_block_on_the_spawners_proc() {
        // 3 procs on one thread: dealing a block to another proc of it would add hops on
        // the same thread and no core.
        let rt = crate::Runtime::builder()
            .procs(3)
            .carrier_threads(1)
            .build()
            .unwrap();
        let procs = rt
            .block_on(|| {
                SPARE.with(|s| s.set(Some(true)));
                let report: Chan<usize> = Chan::new();
                let mut procs = Vec::new();
                for _ in 0..250 {
                    let reply = report.clone();
                    drop(crate::spawn(move || {
                        reply.send(crate::current_proc().unwrap());
                        crate::event::never::<()>().sync();
                    }));
                    procs.push(report.recv());
                }
                procs
            })
            .unwrap();
        let main = procs[0];
        assert!(procs.iter().all(|&p| p == main), "{procs:?}");
    }

    /// The thread state that `ProcShared::movable_hog` reads: a running thread is runnable
    /// (`R`), one blocked in the OS (a channel receive) is not.
    #[test]
    fn a_thread_blocked_in_the_os_is_not_runnable() {
        use crate::sched::worker::shared::thread_state;
        // SAFETY: gettid has no preconditions.
        assert_eq!(thread_state(unsafe { libc::gettid() }), Some('R'));
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            // SAFETY: as above.
            tid_tx.send(unsafe { libc::gettid() }).unwrap();
            rx.recv().unwrap();
        });
        let tid = tid_rx.recv().unwrap();
        // It blocks in the OS soon after it sent its id; a busy machine may delay that.
        let mut state = None;
        for _ in 0..10_000 {
            state = thread_state(tid);
            if state == Some('S') {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(state, Some('S'), "a thread blocked in recv");
        tx.send(()).unwrap();
        t.join().unwrap();
    }

    #[test]
    fn spawns_stay_here_while_the_thread_waits_for_a_core() {
        let procs = chain(250, false, 0);
        // Only an idle proc's steal of a fiber left waiting moves one.
        assert!(procs.iter().filter(|&&p| p == 1).count() <= 10, "{procs:?}");
    }
}
