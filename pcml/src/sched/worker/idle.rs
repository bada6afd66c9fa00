//! A proc with nothing to do: spin, then park until woken or a timer is due; deadlock checks
//! and shutdown.

use super::*;

impl Context {
    /// No work found: spin a little, then park.
    pub(super) fn idle(&self) {
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
}
