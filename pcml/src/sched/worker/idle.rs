//! A proc with nothing to do: spin, then park until woken or a timer is due; deadlock checks
//! and shutdown.

use super::*;

impl Context {
    /// No work found: spin a little, then park.
    pub(super) fn idle(&self) {
        let sh = &*self.shared;
        let me = &sh.procs[self.index];
        // Out of work: the wake-ups this proc held back leave now, before it spins or parks.
        self.pay_unparks();
        // A turn for the watchdog: an idle proc is not running a thread.
        let turns = &me.watch.turns;
        let tick = turns.load(Ordering::Relaxed).wrapping_add(1);
        turns.store(tick, Ordering::Relaxed);
        self.end_io_batch();
        // Park at once rather than spin, after one look at what a spin's first round would
        // have found (due timers, owed turns, ready I/O), when back from a park that timed
        // out with no turn since that ran anything (its failed turn and this call are the two
        // counted: nobody handed this proc work; a watcher of the held slots wakes every
        // `HELD_GRACE`), or when more threads are ready to run than the process has CPUs (a
        // spin would keep one of them off a core, quite likely the partner whose message
        // would end it: see `crowd` and the `sched` docs).
        if self.timed_out_at.take() == Some(tick.wrapping_sub(2)) || sh.crowding.is_crowded() {
            if self.fire_due_timers() || self.check_owed() {
                return;
            }
            self.io_dispatch(|| sh.poll_io_now());
            self.sleep();
            return;
        }
        // Only `spin_limit` idle procs spin at once; the others look for `SPIN_OVER_LIMIT`
        // (becoming spinners if some stop meanwhile: a proc that just handed work to the
        // spinner is likely to get work back from it) and park. With more procs than cores,
        // idle procs that all spin keep the threads that have work off the cores, and one
        // spinner finds new work as soon as several would. A proc whose recent idle gaps were
        // longer than a spin (`SpinHistory`) looks as the others do, and parks.
        let history = self.spin_history.get();
        let skip = !history.spin_pays();
        // First a short look at this proc's own queues alone (its inbox above all), writing
        // nothing another proc reads. A partner on another proc that answers within a couple
        // of microseconds (a ping-pong's reply) then finds this proc where it left it, and the
        // reply pays neither the two read-modify-writes of the shared searcher count, whose
        // line the other proc's own idle spells take away, nor a look at other procs' queues.
        if !skip && Self::quick_look(std::slice::from_ref(self)) {
            self.spin_history.set(history.record(true));
            return;
        }
        let mut may_spin = sh.num_searching.fetch_add(1, Ordering::SeqCst) < sh.spin_limit && !skip;
        // Relaxed: a hint (see the field).
        me.searching.store(true, Ordering::Relaxed);
        let start = Instant::now();
        let mut found = false;
        let mut spun = Duration::ZERO;
        'spin: loop {
            for look in 0..64u32 {
                // Other procs' queues only every `OTHERS_EVERY`th look (see `has_work_sparing`).
                if self.has_work_sparing(look % OTHERS_EVERY == 0) {
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
            // Collect ready I/O here without blocking (a proc that parks waits for it in the
            // poller, `sched::io`): it wakes our tasks and fibers onto our own queues, where
            // `has_work` sees them next look.
            self.io_dispatch(|| sh.poll_io_now());
            spun = start.elapsed();
            if !keep_spinning(sh, &mut may_spin, !skip, spun) {
                break;
            }
        }
        me.searching.store(false, Ordering::Relaxed);
        sh.num_searching.fetch_sub(1, Ordering::SeqCst);
        if found {
            // A spinner's look, or a skipper's, found work within a spin: spinning paid (or
            // would have). A look over the limit says nothing about this proc's own gaps.
            if may_spin || skip {
                self.spin_history.set(history.record(true));
            }
            return;
        }
        self.sleep();
        if may_spin {
            // The spin ran out. One that took much longer than `SPIN` lost its core meanwhile
            // (the wait was the OS's, not the work's): not counted.
            if spun < 2 * SPIN {
                self.spin_history.set(history.record(false));
            }
        } else if skip {
            // Would a spin have found the work that ended this park?
            self.spin_history
                .set(history.record(start.elapsed() < SPIN));
        }
    }

    /// Whether work of these procs' own arrives within `QUICK_LOOKS` looks, one pause apart.
    #[inline]
    fn quick_look(ctxs: &[Context]) -> bool {
        for _ in 0..QUICK_LOOKS {
            if ctxs.iter().any(Context::has_work_here) {
                return true;
            }
            crate::loom::spin_loop();
        }
        false
    }

    /// `idle` for the procs of a carrier (`run_carrier`), none of which found work: spin while
    /// any could find some, then sleep together on the first one's parker. As `idle`, a
    /// carrier back from a park that timed out parks again at once if none of its procs ran
    /// anything since.
    pub(super) fn idle_all(ctxs: &[Context]) {
        let head = &ctxs[0];
        let sh = &*head.shared;
        let mut timed_out = true;
        for ctx in ctxs {
            // As in `idle`: held-back wake-ups leave first.
            ctx.pay_unparks();
            ctx.end_io_batch();
            // A turn for the watchdog: an idle proc is not running a thread.
            let turns = &ctx.me().watch.turns;
            let tick = turns.load(Ordering::Relaxed).wrapping_add(1);
            turns.store(tick, Ordering::Relaxed);
            // As in `idle`: its failed turn and this call are the two counted since the park.
            timed_out &= ctx.timed_out_at.take() == Some(tick.wrapping_sub(2));
        }
        // As in `idle`: timed out with nothing run since, or on a crowded machine, one look
        // and park at once.
        if timed_out || sh.crowding.is_crowded() {
            if Self::carrier_timers_and_owed(ctxs) {
                return;
            }
            head.enter();
            head.io_dispatch(|| sh.poll_io_now());
            Self::sleep_all(ctxs);
            return;
        }
        // As in `idle`: first a short look at the carrier's own procs alone.
        if Self::quick_look(ctxs) {
            return;
        }
        // As in `idle`: one carrier counts once among the searchers.
        let mut may_spin = sh.num_searching.fetch_add(1, Ordering::SeqCst) < sh.spin_limit;
        // Relaxed: a hint (see the field); the carrier's first proc stands for all of them.
        head.me().searching.store(true, Ordering::Relaxed);
        let start = Instant::now();
        let mut found = false;
        'spin: loop {
            for _ in 0..64 {
                if Self::carrier_has_work(ctxs) {
                    found = true;
                    break 'spin;
                }
                for _ in 0..8 {
                    crate::loom::spin_loop();
                }
            }
            if Self::carrier_timers_and_owed(ctxs) {
                found = true;
                break;
            }
            head.enter();
            head.io_dispatch(|| sh.poll_io_now());
            if !keep_spinning(sh, &mut may_spin, true, start.elapsed()) {
                break;
            }
        }
        head.me().searching.store(false, Ordering::Relaxed);
        sh.num_searching.fetch_sub(1, Ordering::SeqCst);
        if !found {
            Self::sleep_all(ctxs);
        }
    }

    /// Fires the due timers and takes the owed turns of every proc of a carrier, each entered
    /// in turn (none skipped once one found work); true if any of them made work.
    fn carrier_timers_and_owed(ctxs: &[Context]) -> bool {
        let mut found = false;
        for ctx in ctxs {
            ctx.enter();
            found |= ctx.fire_due_timers() || ctx.check_owed();
        }
        found
    }

    /// `sleep` for the procs of a carrier: each counts itself asleep, then, if none has work,
    /// the thread parks on the first one's parker (where `Shared::unpark` wakes any of them)
    /// until the earliest of their timers and checks; the first one watches the held slots
    /// for all.
    fn sleep_all(ctxs: &[Context]) {
        let head = &ctxs[0];
        head.enter();
        let sh = &*head.shared;
        for ctx in ctxs {
            // SeqCst: as in `sleep`, for each proc of the carrier.
            ctx.me().sleeping.store(true, Ordering::SeqCst);
            sh.num_sleeping.fetch_add(1, Ordering::SeqCst);
        }
        // SeqCst fence: as in `sleep`.
        fence(Ordering::SeqCst);
        let mut polled = crate::sched::io::Polled::new();
        if !Self::carrier_has_work(ctxs) {
            let mut next = None;
            let mut earliest = |due: Option<Instant>| {
                if let Some(due) = due {
                    next = Some(next.map_or(due, |d: Instant| d.min(due)));
                }
            };
            if sh.num_sleeping.load(Ordering::SeqCst) == sh.procs.len() {
                earliest(head.check_deadlock().map(|d| Instant::now() + d));
            }
            for ctx in ctxs {
                earliest(ctx.next_timer());
                earliest(ctx.owed.borrow().next_check());
            }
            let mut watching = head.held_moved() && head.try_watch();
            let mut blind = false;
            if !watching {
                head.stop_watching();
                let blind_sleepers = &sh.held_watch.blind_sleepers;
                // SeqCst: as in `sleep`.
                blind_sleepers.fetch_add(1, Ordering::SeqCst);
                if head.held_moved() && head.try_watch() {
                    blind_sleepers.fetch_sub(1, Ordering::Relaxed);
                    watching = true;
                } else {
                    blind = true;
                }
            }
            if watching || ctxs.iter().any(|ctx| ctx.refused.get()) {
                earliest(Some(Instant::now() + HELD_GRACE));
            }
            let me = head.me();
            let woken = park_until(sh, me, next, &mut polled);
            if blind {
                // Relaxed: a hint for spawners.
                sh.held_watch.blind_sleepers.fetch_sub(1, Ordering::Relaxed);
            }
            if watching {
                head.stop_watching();
            }
            if !woken {
                for ctx in ctxs {
                    ctx.timed_out_at
                        .set(Some(ctx.me().watch.turns.load(Ordering::Relaxed)));
                }
            }
        }
        for ctx in ctxs {
            ctx.refused.set(false);
        }
        crate::sched::outside::bump_epoch();
        for ctx in ctxs {
            if sh.num_sleeping.fetch_sub(1, Ordering::SeqCst) == sh.procs.len() {
                crate::sched::watchdog::wake_watchdog(sh);
            }
            ctx.me().sleeping.store(false, Ordering::SeqCst);
        }
        head.io_dispatch(|| sh.dispatch_polled(&mut polled));
    }

    /// Whether another proc's held slot is full, or its ticket moved since this proc last
    /// looked (it spawns: its next held fiber may be left waiting); records the tickets.
    fn held_moved(&self) -> bool {
        let mut seen = self.held_tickets.borrow_mut();
        let mut moved = false;
        for (i, p) in self.shared.procs.iter().enumerate() {
            let t = p.held.ticket();
            moved |= i != self.index && (t != seen[i] || p.held.is_full());
            seen[i] = t;
        }
        moved
    }

    /// Claims the role of watching the held slots (see `sleep`), or keeps it.
    fn try_watch(&self) -> bool {
        let w = &self.shared.held_watch.watcher;
        // Relaxed: the role is a hint about who will look; the slots themselves are read
        // with their own orderings.
        match w.compare_exchange(NO_WATCHER, self.index, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => true,
            // Ours already.
            Err(i) if i == self.index => true,
            // Another proc watches.
            Err(_) => false,
        }
    }

    /// Gives up the role of watching the held slots, if this proc has it.
    fn stop_watching(&self) {
        let w = &self.shared.held_watch.watcher;
        // Relaxed: as in `try_watch`.
        let _ = w.compare_exchange(self.index, NO_WATCHER, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// Parks until woken, the next timer, a deadlock re-check, an owed turn's check, or, for
    /// the one proc that watches the held slots, `HELD_GRACE`.
    ///
    /// A fiber held by another proc may be taken only once it has waited there `HELD_GRACE`
    /// (`held_waited`), and a spawn wakes nobody for it (`hold_new_shared`). So while some
    /// proc spawns (its slot's ticket moves) or holds a fiber, one sleeping proc, the
    /// watcher, parks at most `HELD_GRACE` and looks again; the other sleepers are blind to
    /// held fibers and count themselves so, and a spawn wakes one of them only when nobody
    /// watches (`Shared::notify_held`). A watcher woken by a token goes to work and gives the
    /// role up; one whose park timed out looks again without spinning.
    fn sleep(&self) {
        let sh = &*self.shared;
        let me = &sh.procs[self.index];
        // SeqCst: the sleeper's half of the Dekker pairs with `send_to` (inbox) and
        // `notify_idle` (deques, injector): set the flag, count ourselves, then look once more.
        me.sleeping.store(true, Ordering::SeqCst);
        sh.num_sleeping.fetch_add(1, Ordering::SeqCst);
        // SeqCst fence: pairs with the fences in `send_to`, `notify_idle` and `push_injector`.
        fence(Ordering::SeqCst);
        // Readiness events that woke this proc in the I/O poller, dispatched once it counts
        // itself awake (so that the wake-ups they make do not pick it as a sleeper to wake).
        let mut polled = crate::sched::io::Polled::new();
        if !self.has_work() {
            let mut recheck = None;
            if sh.num_sleeping.load(Ordering::SeqCst) == sh.procs.len() {
                recheck = self.check_deadlock().map(|d| Instant::now() + d);
            }
            // Sleep exactly until the next timer, if any, the next deadlock re-check or owed
            // turns' check, and, as the watcher, no longer than `HELD_GRACE`.
            let next = self.next_timer();
            let mut next = match (next, recheck) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if let Some(due) = self.owed.borrow().next_check() {
                next = Some(next.map_or(due, |d| d.min(due)));
            }
            let mut watching = !self.alone && self.held_moved() && self.try_watch();
            let mut blind = false;
            if !watching && !self.alone {
                self.stop_watching();
                let blind_sleepers = &sh.held_watch.blind_sleepers;
                // SeqCst: a full barrier between the count and the second look at the slots
                // below (the spawner's side is a hint: see `Shared::notify_held`).
                blind_sleepers.fetch_add(1, Ordering::SeqCst);
                if self.held_moved() && self.try_watch() {
                    blind_sleepers.fetch_sub(1, Ordering::Relaxed);
                    watching = true;
                } else {
                    blind = true;
                }
            }
            // A refused steal (`refused`): look again after `HELD_GRACE`, when the victim
            // may have had its core back, or the watchdog may have found it hogged.
            if watching || self.refused.get() {
                let grace = Instant::now() + HELD_GRACE;
                next = Some(next.map_or(grace, |d| d.min(grace)));
            }
            let woken = park_until(sh, me, next, &mut polled);
            if blind {
                // Relaxed: a hint for spawners.
                sh.held_watch.blind_sleepers.fetch_sub(1, Ordering::Relaxed);
            }
            if watching {
                self.stop_watching();
            }
            if !woken {
                self.timed_out_at
                    .set(Some(me.watch.turns.load(Ordering::Relaxed)));
            }
        }
        self.refused.set(false);
        // Before anything this proc does awake is visible (deadlock detection across
        // runtimes, `outside`).
        crate::sched::outside::bump_epoch();
        if sh.num_sleeping.fetch_sub(1, Ordering::SeqCst) == sh.procs.len() {
            // The first proc awake: the watchdog may be asleep too.
            crate::sched::watchdog::wake_watchdog(sh);
        }
        me.sleeping.store(false, Ordering::SeqCst);
        self.io_dispatch(|| sh.dispatch_polled(&mut polled));
    }

    /// Called by the last proc to fall asleep: if main is blocked and nothing can ever wake
    /// anything, settle `block_on` with a deadlock. Returns when to look again if only
    /// something outside the runtime (an OS thread, another runtime) may still act.
    pub(super) fn check_deadlock(&self) -> Option<Duration> {
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
    pub(super) fn shutdown(&self) {
        self.shutting_down.set(true);
        // Queued tasks and unstarted fibers are dropped on this proc's thread, outside any
        // pcml thread: a destructor of theirs that would block panics (see `ShutdownDrops`).
        let _drops = crate::sched::blocker::ShutdownDrops::enter();
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
        self.ready.clear();
        self.release_behind();
        self.ready.clear();
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
}

/// After a look that found no work, whether an idle proc (or carrier) searching for `spun`
/// looks again. One that may not spin (`spin_limit` others do) becomes a spinner if some stop
/// meanwhile and it may be `promoted` (its spin history says spins pay), else gives up after
/// `SPIN_OVER_LIMIT`; a spinner gives up after `SPIN`, and gives the core away between looks
/// after `SPIN_HOT`: if the machine has more runnable threads than cores (another proc of ours
/// among them), spinning would keep the thread that has our work off the core.
fn keep_spinning(sh: &Shared, may_spin: &mut bool, promoted: bool, spun: Duration) -> bool {
    if !*may_spin {
        // Relaxed: a hint; the count includes the caller.
        if promoted && sh.num_searching.load(Ordering::Relaxed) <= sh.spin_limit {
            *may_spin = true;
            return true;
        }
        return spun < SPIN_OVER_LIMIT;
    }
    if spun >= SPIN {
        return false;
    }
    if spun >= SPIN_HOT {
        std::thread::yield_now();
    }
    true
}

/// Parks `me` (polling the OS for readiness where it may, into `polled`) until `deadline`, or
/// until woken if there is none, counting the park; true if woken. A deadline already past
/// is a time-out (false), without parking.
fn park_until<'a>(
    sh: &'a Shared,
    me: &ProcShared,
    deadline: Option<Instant>,
    polled: &mut crate::sched::io::Polled<'a>,
) -> bool {
    let timeout = match deadline {
        Some(deadline) => {
            let now = Instant::now();
            if deadline <= now {
                // Due already: a time-out, as if the park had run out (the caller then fires
                // what is due on its next idle look, before anything else). Counting it as a
                // wake-up sent a crowded proc, which parks without a look at its timers,
                // straight back to this park, and its due timer never fired.
                return false;
            }
            Some(deadline - now)
        }
        None => None,
    };
    metrics::bump(&me.metrics.parks);
    sh.park_proc(me, timeout, polled)
}
