//! Wake-ups: a fiber woken on its own proc or through another proc's inbox, the inbox's
//! messages, and the turns a choice's remote wake-ups owe (see the `sched` docs, "Fair choice
//! across procs").

use super::*;

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

/// [`wake_fiber`], then [`consume_budget`]: the end of a commit that woke its partner (a direct
/// send or receive that found the other side blocked), with this proc's context looked up
/// once for both (4 instructions a message of a 1-proc fiber ping-pong, callgrind). The
/// budget's yield, if it is spent, comes after the wake-up, as with the two calls in turn.
/// Always inline (with `#[inline]` the compiler kept it out of line: a call and three saved
/// registers a message).
#[inline(always)]
pub(crate) fn wake_fiber_then_consume(runtime: u64, proc: usize, slot: usize, token: u64) {
    if let Some(ctx) = context()
        && ctx.shared.id == runtime
        && ctx.index == proc
    {
        ctx.wake_local(slot, token);
        consume_budget_in(ctx);
        return;
    }
    wake_fiber_elsewhere(runtime, proc, slot, token);
    consume_budget();
}

/// [`wake_fiber`] from another proc or thread, through the home proc's inbox. Out of line, so
/// that the local wake-up's path saves no registers for it.
#[inline(never)]
pub(super) fn wake_fiber_elsewhere(runtime: u64, proc: usize, slot: usize, token: u64) {
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
        ctx.send_wake(proc, InboxMsg::Wake { slot, token });
        return;
    }
    if let Some(shared) = crate::sched::registry::lookup(runtime) {
        shared.send_to(proc, InboxMsg::Wake { slot, token });
    }
}

impl Context {
    /// Sends a fiber's wake-up to proc `proc`'s inbox. If that proc sleeps on a crowded
    /// machine, it is not unparked now but owed an unpark (`ProcWatch::unparks_owed`), paid
    /// at this proc's next timer turn, when this proc runs out of work, or by the watchdog if
    /// this proc holds its thread: unparked at once, it would take this proc's core and run
    /// the one wake-up (see the `sched` docs, "On a crowded machine, a wake-up of a sleeping
    /// proc leaves when its waker's turn ends").
    #[inline]
    pub(super) fn send_wake(&self, proc: usize, msg: InboxMsg) {
        let sh = &*self.shared;
        let p = &sh.procs[proc];
        p.inbox.push(msg);
        // SeqCst fence: the pusher's half of the Dekker pair with the sleeper's fence in
        // `idle`, as in `Shared::send_all_to`.
        fence(Ordering::SeqCst);
        if p.sleeping.load(Ordering::Relaxed) {
            if proc < 64 && p.carrier != self.me().carrier && sh.crowding.is_crowded() {
                // Relaxed: see the field.
                self.me()
                    .watch
                    .unparks_owed
                    .fetch_or(1 << proc, Ordering::Relaxed);
            } else {
                sh.unpark(p);
            }
        }
    }

    /// Pays the unparks this proc owes (see [`send_wake`](Self::send_wake)).
    #[inline]
    pub(super) fn pay_unparks(&self) {
        self.shared.pay_unparks(self.me());
    }
}

thread_local! {
    /// Set while this thread commits a branch of a choice of several branches
    /// (`begin_choice_commit`).
    static CHOOSING: Cell<bool> = const { Cell::new(false) };
    /// On a proc's worker thread: `Owed::total` of the context it has entered, which a
    /// choice reads without looking the context up. A carrier of several procs sets it anew
    /// each time it enters one of them (`Context::mirror_owed`).
    static OWED: Cell<u32> = const { Cell::new(0) };
}

/// A choice of several branches polled as a future has gone pending: if a proc is polling an
/// async task, the task is marked, and a wake-up of it from another proc sends it back to
/// this one (see `Context::wake_here`). Nothing for a future polled by a fiber or outside the
/// procs.
#[inline]
pub(crate) fn choice_pending() {
    if let Some(ctx) = context()
        && let Current::Task { header, .. } = ctx.current.get()
    {
        // SAFETY: the proc is polling that task (`run_task`), which holds a reference to it.
        unsafe { header.as_ref() }.mark_choice_pending();
    }
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
pub(super) fn take_payments() {
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
pub(super) fn mark_ready() {
    if let Some(ctx) = context() {
        ctx.ready_mark.set(ctx.ready.len());
    }
}

/// After a choice's commit while turns are owed: the fibers that it woke here wait `behind`.
#[cold]
pub(super) fn hold_back_woken() {
    if let Some(ctx) = context() {
        let mark = ctx.ready_mark.replace(usize::MAX);
        ctx.hold_back_woken(mark);
    }
}

impl Context {
    /// Cancels fiber `id` in `slot` of this proc, if it is still there: a blocked fiber is
    /// made runnable at once (its token consumed, so its blocker's wake-up is stale), and it
    /// unwinds when resumed; a runnable or running one unwinds at its next blocking point or
    /// yield (`block_fiber`, `yield_fiber`).
    pub(super) fn abort_local(&self, slot: usize, id: ThreadId) {
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
                self.ready.push_back(slot);
            }
            // Between publishing its blocker and suspending (a non-zero token and `Ready`:
            // running, see `FiberState`): requeued at once.
            FiberState::Ready => e.wake_pending.set(true),
        }
    }

    #[inline]
    pub(super) fn wake_local(&self, slot: usize, token: u64) {
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
                self.ready.push_back(slot);
            }
            // Woken before it finished suspending (its token is fresh, so `Ready` means it
            // runs: see `FiberState`; a queued fiber's token is 0): the worker requeues it at
            // once.
            FiberState::Ready => e.wake_pending.set(true),
        }
    }

    /// Drops fibers at the end of the local deque that the proc pops (the newest) that were
    /// already run inline by their joiners, so a loop of spawns and joins does not grow the
    /// deque. Stops at the first live item, which it keeps, first in line, in `placed`.
    pub(super) fn sweep_claimed(&self) {
        if !self.placed.borrow().is_empty() {
            // Something is already held first in line; keep the order simple.
            return;
        }
        while let Some(r) = self.pop_new() {
            match r {
                Runnable::Fiber(f) if f.body.is_claimed() => drop(f),
                live => {
                    self.placed.borrow_mut().push_front(live);
                    self.note_new();
                    return;
                }
            }
        }
    }

    #[inline]
    pub(super) fn drain_inbox(&self) {
        // Through `me`: no bounds check or index arithmetic on every turn.
        if !self.me().inbox.is_empty() {
            self.drain_inbox_slow();
        }
    }

    #[cold]
    pub(super) fn drain_inbox_slow(&self) {
        let me = &self.shared.procs[self.index];
        let mut buf = std::mem::take(&mut *self.inbox_buf.borrow_mut());
        me.inbox.drain_into(&mut buf);
        let mut run_now = Vec::new();
        // Answered once the whole batch is in place: a task or fiber of a later message is
        // then in a queue the answer lists, not in this buffer.
        let mut dumps = Vec::new();
        for msg in buf.drain(..) {
            match msg {
                InboxMsg::Wake { slot, token } => {
                    metrics::bump(&me.metrics.inbox_wakes);
                    self.wake_local(slot, token)
                }
                InboxMsg::Start(f) => {
                    self.placed.borrow_mut().push_back(Runnable::Fiber(f));
                    self.note_new();
                }
                InboxMsg::Task(t) => self.wake_here(t),
                InboxMsg::Abort { slot, id } => self.abort_local(slot, id),
                InboxMsg::Dump(req) => dumps.push(req),
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
                        self.ready.len()
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
        for req in dumps {
            self.answer_dump(&req);
        }
        for (slot, from, epoch) in run_now {
            if !self.shutting_down.get() {
                self.resume_fiber(slot);
            }
            let by = self.index;
            self.shared.send_to(from, InboxMsg::Paid { by, epoch });
        }
    }

    /// Sends the `WakeOwed` of a `SendOwed` whose turn has come.
    pub(super) fn send_owed(&self, msg: InboxMsg) {
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
    pub(super) fn take_blocked(&self, slot: usize, token: u64) -> bool {
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
    pub(super) fn hold_back_woken(&self, ready_before: usize) {
        if self.ready.len() <= ready_before || self.owed.borrow().total() == 0 {
            // Nothing woken here; or nothing owed to this proc, so no payment would release
            // them before `OWED_CAP`.
            return;
        }
        let woken = self.ready.split_off(ready_before);
        if self
            .owed
            .borrow_mut()
            .hold(woken.into_iter(), Instant::now())
        {
            // Counted as a source of wake-ups, so deadlock detection does not take a proc
            // parked with fibers behind for one with nothing to do. SeqCst: read by
            // `is_quiescent` after the sleepers' SeqCst fences.
            self.shared.procs[self.index]
                .wake
                .pending
                .fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Sets the thread's `OWED` to this proc's owed turns: when the thread enters this proc.
    /// On a carrier of several procs, another proc's count left there would make a choice
    /// here hold its woken fibers behind while nothing is owed to this proc, until the
    /// `OWED_CAP` of `owed`, or take no turn that this proc is owed.
    pub(super) fn mirror_owed(&self) {
        OWED.set(self.owed.borrow().total());
    }

    /// A fiber of proc `by` woken by a choice here has run (`InboxMsg::Paid`).
    pub(super) fn paid(&self, by: usize, epoch: u32) {
        let mut owed = self.owed.borrow_mut();
        let all_paid = owed.paid(by, epoch);
        OWED.set(owed.total());
        drop(owed);
        if all_paid {
            self.release_behind();
        }
    }

    /// Queues the fibers waiting behind (every debt is paid or given up).
    pub(super) fn release_behind(&self) {
        let mut owed = self.owed.borrow_mut();
        if !owed.has_behind() {
            return;
        }
        self.ready.extend(owed.take_behind());
        // SeqCst: as the increment in `hold_back_woken`.
        self.shared.procs[self.index]
            .wake
            .pending
            .fetch_sub(1, Ordering::SeqCst);
    }

    /// With fibers behind, looks at the procs that owe this one a turn when it is time to
    /// (`Owed::check`); returns whether it gave their debts up and released the fibers.
    pub(super) fn check_owed(&self) -> bool {
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
        use crate::sched::dump::{SlotView, ThreadState, fiber_dump};
        if req.has_answered(self.index) {
            // Answered already, by a dumping task of this proc while it waited.
            return;
        }
        let mut threads = Vec::new();
        let mut edges = Vec::new();
        // The fiber that asked for the dump, if one did, runs (its state is `Ready`; see
        // `FiberState`).
        let running = match self.current.get() {
            Current::Fiber { slot, .. } => Some(slot),
            _ => None,
        };
        self.fibers.for_each(|slot, e| {
            let state = match e.state.get() {
                FiberState::Ready if running == Some(slot) => ThreadState::Running,
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
            let obj = e.blocked_on.get().filter(|_| blocked);
            if let (Some(o), true) = (obj, req.wants_edges()) {
                let waiter = crate::sched::waitfor::Waiter {
                    runtime: self.shared.id,
                    proc: self.index,
                    slot,
                    token: e.token.get(),
                };
                // SAFETY: the fiber is suspended in the block that set `blocked_on`, which
                // keeps the object alive (`waitfor`'s invariants).
                let wait = unsafe { o.as_ref() }.wait_for(&waiter);
                let handle = e.handle.get();
                let stack = crate::fiber::stack::span(e.guard.1, self.shared.stack_size);
                edges.push(crate::sched::waitfor::Edge {
                    id: e.id,
                    token: waiter.token,
                    obj: o.cast::<()>().as_ptr().addr(),
                    wait,
                    handle_here: e.guard.1 != 0 && stack.contains(&handle),
                });
            }
            let obj = obj.map_or(0, |o| o.cast::<()>().as_ptr().addr());
            // The thread suspended on this stack (noted by `suspend_inlined`), or running
            // on it: the dumper itself, when it runs inline.
            let inline = match self.current.get() {
                Current::Fiber {
                    slot: s,
                    id,
                    inlined: 1..,
                    ..
                } if s == slot && state == ThreadState::Running => {
                    // SAFETY: the running fiber's own runs, read on it.
                    Some((id, unsafe { inline_hosts(self.inline_top.get()) }))
                }
                _ if state == ThreadState::Running => None,
                // SAFETY: noted by `suspend_inlined` for this fiber, which is suspended.
                _ => ThreadId::from_u64(e.inline.get())
                    .map(|id| (id, unsafe { inline_hosts(e.inline_runs.get()) })),
            };
            let view = SlotView {
                id: e.id,
                slot,
                proc: self.index,
                site: e.site,
                state,
                inline,
                blocked_in: what,
                obj,
                detail,
            };
            fiber_dump(view, &mut threads);
        });
        // The thread that asked for the dump, if it is a task running here (a fiber that
        // asks shows as running above).
        if let Current::Task { id, .. } = self.current.get() {
            threads.push(crate::sched::dump::running_task(id, self.index));
        }
        self.dump_queued(&mut threads);
        req.answer(self.index, threads, 0, edges);
    }

    /// Adds the unstarted fibers and the tasks queued to run in this proc's queues and inbox
    /// to a dump, as runnable. Read at dump time only: the deques are emptied and refilled in their
    /// order (other procs may steal from them meanwhile, as at any time).
    fn dump_queued(&self, out: &mut Vec<crate::sched::dump::ThreadDump>) {
        use crate::sched::dump::queued_thread;
        let index = self.index;
        let fiber = |f: &NewFiber, out: &mut Vec<_>| {
            // A claimed one was run inline by its joiner, and is listed there.
            if !f.body.is_claimed() {
                out.push(queued_thread(f.id, f.body.site(), None, Some(index), false));
            }
        };
        let task = |t: &TaskRef, out: &mut Vec<_>| {
            let h = t.header();
            out.push(queued_thread(
                h.id,
                h.site,
                Some(h.actor()),
                Some(index),
                false,
            ));
        };
        let runnable = |r: &Runnable, out: &mut Vec<_>| match r {
            Runnable::Fiber(f) => fiber(f, out),
            Runnable::Task(t) => task(t, out),
        };
        self.own.borrow().iter().for_each(|r| runnable(r, out));
        self.placed.borrow().iter().for_each(|r| runnable(r, out));
        self.deferred
            .borrow()
            .iter()
            .for_each(|(t, _)| task(t, out));
        for (deque, lifo) in [(&self.local, true), (&self.woken, false)] {
            let mut items = Vec::new();
            while let Some(r) = deque.pop() {
                items.push(r);
            }
            items.iter().for_each(|r| runnable(r, out));
            // A LIFO deque pops newest first: push the oldest back first.
            if lifo {
                items.reverse();
            }
            items.into_iter().for_each(|r| deque.push(r));
        }
        self.note_new();
        if let Some(f) = self.own_held.borrow().as_ref() {
            fiber(f, out);
        }
        // Looked at in place, and left held.
        let _ = self.me().held.take_if(|f| {
            fiber(f, out);
            false
        });
        // Not yet drained from the inbox: tasks sent back here to run (woken elsewhere while
        // a choice they made here was pending, see `wake_here`) and fibers placed here.
        // Looked at in place, and left there.
        self.me().inbox.take_if(
            |m| {
                match m {
                    InboxMsg::Task(t) => task(t, out),
                    InboxMsg::Start(f) => fiber(f, out),
                    _ => {}
                }
                false
            },
            &mut Vec::new(),
        );
    }
}
