//! What running code asks of its proc: block the calling fiber, run a joined fiber inline, arm
//! a timer, yield, spend the budget, push new work.

use super::*;

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
    obj: Option<std::ptr::NonNull<dyn crate::sched::waitfor::WaitObject>>,
    handle: usize,
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
            // SAFETY: `current` names the running fiber, which holds its slot until it ends
            // (it is running, so it has not ended). Unchecked: the checks cost a blocking
            // send or receive 4 instructions.
            let e = unsafe { ctx.fibers.get_unchecked(slot) };
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
            e.handle.set(handle);
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
    // `guard` may still name the last suspended fiber's page while the worker or a task
    // runs (`resume_fiber`): `current` says whether a fiber runs.
    if !matches!(ctx.current.get(), Current::Fiber { .. }) {
        return None;
    }
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
pub(super) fn note_wait(detail: Option<&dyn crate::sched::dump::Describe>) {
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

/// The calling fiber's context and slot, if it may run another thread's body on its own
/// stack: a fiber of runtime `runtime` (on proc `proc` unless that is `usize::MAX`), not
/// shutting down, with at least a quarter of its stack (16 KiB at least) free.
pub(super) fn inline_room(runtime: u64, proc: usize) -> Option<(&'static Context, usize, u32)> {
    let ctx = context()?;
    if ctx.shared.id != runtime || (proc != usize::MAX && proc != ctx.index) {
        return None;
    }
    fiber_room(ctx)
}

/// [`inline_room`] without the runtime and proc checks: for work known to be this proc's.
#[inline]
pub(super) fn fiber_room(ctx: &'static Context) -> Option<(&'static Context, usize, u32)> {
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

/// One thread run inline on a fiber's stack ([`run_as`]), on that stack: the thread it runs
/// on (its joiner) and the run it is nested in. `Context::inline_top` points to the
/// innermost while the fiber runs; a dump walks the list (`inline_hosts`) to name every
/// joiner.
///
/// When dropped (the inline thread ended, or the host unwinds through it: a cancelled host,
/// see `sched::panic::AbortSignal`), it names the host thread again and pops itself.
pub(crate) struct InlineRun {
    ctx: &'static Context,
    /// `current` before the run: the joiner.
    outer: Current,
    /// The run this one is nested in, on the same stack; null if the joiner is the fiber
    /// itself.
    prev: *const InlineRun,
}

impl Drop for InlineRun {
    #[inline(always)]
    fn drop(&mut self) {
        self.ctx.current.set(self.outer);
        self.ctx.inline_top.set(self.prev);
    }
}

/// The joiners of the innermost inline run `top` (see [`InlineRun`]), innermost first: the
/// last is the fiber that owns the stack.
///
/// # Safety
/// `top` is null, or the `inline_top` of the running fiber (read on it), or what
/// `suspend_inlined` noted for a fiber that is still suspended: its runs live on its stack.
pub(crate) unsafe fn inline_hosts(mut top: *const InlineRun) -> Vec<ThreadId> {
    let mut hosts = Vec::new();
    while !top.is_null() {
        // SAFETY: as the caller promises, each run in the list is alive on its stack.
        let run = unsafe { &*top };
        if let Current::Fiber { id, .. } = run.outer {
            hosts.push(id);
        }
        top = run.prev;
    }
    hosts
}

/// Runs `body` as thread `id` on the calling fiber (slot `slot`, running `inlined` threads
/// inline already): `current()` names `id` while it runs. The thread is not counted live
/// (`ProcShared::live`) unless the fiber blocks while it runs.
///
/// `body` catches the thread's panics; it unwinds only at shutdown or when the host fiber is
/// cancelled, and `current` names the host again on the way.
#[inline(always)]
pub(super) fn run_as<R>(
    ctx: &'static Context,
    slot: usize,
    inlined: u32,
    id: ThreadId,
    body: impl FnOnce() -> R,
) -> R {
    let outer = ctx.current.replace(Current::Fiber {
        slot,
        id,
        main: false,
        inlined: inlined + 1,
    });
    let run = InlineRun {
        ctx,
        outer,
        prev: ctx.inline_top.get(),
    };
    // The run stays where it is until it drops, at the end of this call.
    ctx.inline_top.set(&run);
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
    let held = ctx.take_held_for_joiner(|f| ptr::eq(f.body.addr(), body))?;
    // Not dropped as a `NewFiber`, which would cancel the unrun body.
    let held = held.into_body();
    Some(run_as(ctx, slot, inlined, id, || run(held)))
}

/// Arms a timer on the current proc that does `on_fire` at `deadline`; off the procs, on the
/// process-wide fallback timer thread.
pub(crate) fn arm_timer(deadline: Instant, on_fire: OnFire) -> TimerRef {
    match context() {
        Some(ctx) => ctx.me().timers.lock().arm(deadline, Some(on_fire)),
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
    if let Some(ctx) = context() {
        consume_budget_in(ctx);
    }
}

/// [`consume_budget`] on this proc's context, already looked up.
#[inline(always)]
pub(super) fn consume_budget_in(ctx: &Context) {
    if matches!(ctx.current.get(), Current::Fiber { .. }) {
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
pub(super) fn budget_spent(ctx: &Context) {
    ctx.budget.set(BUDGET);
    let inlined = matches!(ctx.current.get(), Current::Fiber { inlined: 1.., .. });
    if ctx.suspend(Suspend::Yield, inlined) {
        // Cancelled while it waited for its turn: what its last sync took goes with it.
        crate::sched::panic::raise_abort();
    }
}

/// Pushes stealable work (a task just spawned) from the current thread: to this proc's deque
/// on a worker, else to `shared`'s injector.
#[inline(always)]
pub(crate) fn push_runnable(shared: &Arc<Shared>, r: Runnable) {
    match context() {
        Some(ctx) if ptr::eq(&*ctx.shared, &**shared) => match r {
            Runnable::Task(t) => ctx.push_task_here(t),
            r => ctx.push_new(r),
        },
        _ => shared.push_injector(r),
    }
}

/// Schedules a woken task of runtime `runtime`: on this proc's queue from one of its procs
/// (no reference count on the runtime is touched), else through the runtime's injector;
/// dropped if the runtime is shutting down or gone.
#[inline]
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

/// Whether the caller, cloning a waker of the task cell at `cell`, takes over the count of
/// the run-queue reference of that task's poll running on this thread (see
/// [`Context::run_task`]) instead of counting one more. At most one clone a poll takes it.
#[inline]
pub(crate) fn take_donated_count(cell: *const ()) -> bool {
    context().is_some_and(|ctx| {
        let take = ctx.donated.get() == cell;
        if take {
            ctx.donated.set(ptr::null());
        }
        take
    })
}

/// An `.await` of a task's join handle from a task: runs the joined task (its cell at
/// `cell`) here if its proc would run it next, or a task the awaiting task queued above it
/// (see [`Context::run_joined_task`]); says which.
#[inline]
pub(crate) fn run_joined_task(cell: ptr::NonNull<u8>) -> Joined {
    context().map_or(Joined::Nothing, |ctx| ctx.run_joined_task(cell))
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

/// The memory this proc keeps of a finished async wait's offer (see
/// [`recycle_offer`]), if it has `layout`; `None` off the procs. A task that waits over and
/// over (a `.await` of a channel event, `recv_async`) then reuses one block: reached through
/// the proc's context, this costs fewer instructions than the allocator, and than the
/// thread-local cache it replaced, whose type check and destructor registration took about
/// 24 instructions a wait more (callgrind, `examples/taskpp`; see the `chan` docs).
#[inline]
pub(crate) fn take_spare_offer(layout: std::alloc::Layout) -> Option<ptr::NonNull<u8>> {
    if cfg!(pcml_loom) {
        // Models must not keep state across runs.
        return None;
    }
    context().and_then(|ctx| ctx.spare_offer.take(layout))
}

/// Frees a finished async wait's offer memory, or keeps it for the next async wait if this
/// is a proc with room (see [`take_spare_offer`]).
///
/// # Safety
/// As [`SpareCell::put`].
#[inline]
pub(crate) unsafe fn recycle_offer(block: ptr::NonNull<u8>, layout: std::alloc::Layout) {
    match context() {
        // SAFETY: as our caller promises.
        Some(ctx) if !cfg!(pcml_loom) => unsafe { ctx.spare_offer.put(block, layout) },
        // SAFETY: as our caller promises.
        _ => unsafe { std::alloc::dealloc(block.as_ptr(), layout) },
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
