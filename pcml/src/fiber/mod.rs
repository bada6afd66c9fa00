//! Fibers: stackful threads in direct style (Farvardin 2017; Morrisett and Tolmach 1992), on corosensei.
//!
//! You do not use this module directly: [`pcml::spawn`](crate::spawn) makes a fiber, and any
//! pcml operation may suspend it.
//!
//! ```
//! pcml::run(|| {
//!     // Each fiber blocks in a join or a receive without holding up its proc.
//!     let ch = pcml::Chan::new();
//!     let c = ch.clone();
//!     let producer = pcml::spawn(move || (0..3).for_each(|i| c.send(i)));
//!     let sum: u32 = (0..3).map(|_| ch.recv()).sum();
//!     producer.join().unwrap();
//!     assert_eq!(sum, 3);
//! });
//! ```
//!
//! A fiber runs a closure on a contiguous stack of its own and can suspend anywhere, deep in
//! ordinary Rust code, which is what lets `ev.sync()`, `ch.recv()` and `h.join()` look like
//! plain blocking calls. Seed 002 weighs this representation (a contiguous stack per thread)
//! against heap frames; pcml offers both: fibers here, async tasks in `task`.
//!
//! # Why a started fiber never moves (ARCHITECTURE.md, "Invariants")
//! Rust code may cache the address of a thread-local across a call that suspends the fiber:
//! the compiler assumes the OS thread cannot change under a function, so `thread_local!`
//! accesses are hoisted and reused (this was observed in release builds on our machine). If a
//! suspended fiber resumed on another OS thread, it would then read and write the *previous*
//! thread's thread-locals: a data race the type system cannot see. So the proc that first runs
//! a fiber is its home for life; it is resumed only there, and wake-ups from other procs go
//! through the home proc's inbox. An *unstarted* fiber is only a boxed `Send` closure, with no
//! stack and no cached addresses, so it may be stolen by any idle proc, which is what spreads
//! work. Async tasks hold no stack and are `Send`, so they migrate freely. This is Manticore's
//! per-vproc design (Parallel CML paper, section 9.1) made sound for Rust.
//!
//! # Joining an unstarted fiber
//! A fiber that is joined before any proc has started it is run by its joiner, on the
//! joiner's stack, when the joiner is a fiber with room to spare (see `JoinHandle::join`).
//! This is Cilk's work-first join: a spawn followed soon by its join costs a call, not a stack
//! and two context switches. The fiber's cell (its closure and result slot) is heap-allocated,
//! but a proc keeps the memory of the last cell freed on it for its next spawn, so a loop of
//! spawns and joins allocates nothing after the first.
//!
//! # The held fiber
//! A fiber spawned by a thread running on a proc whose held slot is empty is held there rather
//! than pushed into the proc's deque: a join that follows takes it back with one atomic
//! compare-and-swap (none on a runtime of one proc, where nobody can steal) and runs it inline.
//! Otherwise it is the next new work the proc runs, at the spawner's next switch (block, yield
//! or end), unless an idle proc steals it from the slot first (only after it has waited there
//! 2 ms while its proc's thread spent 1 ms of CPU time on other work: see `sched`). Later spawns go on the deque, which the proc runs newest first (a tree
//! of spawns runs depth first) and idle procs steal from oldest first, once it has waited
//! 20 us. pcml promises no order among runnable threads; only a join, a message or
//! another synchronization orders them.
//!
//! # Stacks
//! A stack is mapped with a guard page when the fiber first runs (ARCHITECTURE.md, "Invariants"), from a
//! per-proc pool, and returned to the pool when the fiber ends. Each stack takes two memory
//! mappings and Linux allows `vm.max_map_count` (65530 by default) per process, so about 30,000
//! fibers can be started and unfinished at once; unstarted fibers cost only their closure. When
//! no stack can be had, [`try_spawn`](crate::try_spawn) fails and [`spawn`](crate::spawn)
//! panics with what to do, and a fiber that is already spawned waits for a stack to be freed.
//! A stack overflow hits the guard page, and a signal handler prints that a fiber overflowed
//! its stack and how to raise the size, then aborts.
//!
//! # Invariants
//! - A started fiber's coroutine is touched only by its home proc's worker thread.
//! - While a fiber runs, its proc's `GUARD` thread-local names its guard page.

pub(crate) mod overflow;
pub(crate) mod stack;

pub use stack::{DEFAULT_STACK_SIZE, MAX_STACK_SIZE, MIN_STACK_SIZE};

/// Why a fiber handed control back to its proc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Suspend {
    /// `yield_now`: runnable again at once, behind the others.
    Yield,
    /// Blocked: runnable again when its token's wake-up arrives.
    Block,
}

/// What a suspended fiber is told when its proc resumes it: `true` if it was cancelled
/// (`JoinHandle::abort`) and must unwind (see `sched::panic::AbortSignal`).
pub(crate) type Resume = bool;

/// The coroutine type of a fiber.
pub(crate) type Coroutine = corosensei::Coroutine<Resume, Suspend, (), stack::FiberStack>;
/// What a running fiber suspends through.
pub(crate) type Yielder = corosensei::Yielder<Resume, Suspend>;

/// Where a thread was spawned: the caller of the function that spawned it (`#[track_caller]`),
/// kept for dumps. One pointer to a constant, so recording it costs one store.
pub(crate) type Site = &'static std::panic::Location<'static>;

/// The body of a spawned, unstarted fiber: a `Send` closure, type-erased.
///
/// A body runs at most once: whoever `claim`s it first runs it, either a proc starting it as
/// a fiber of its own or a joiner running it inline (see `sched::join`).
///
/// # Safety
/// Implementors live in a heap allocation owned through counted references ([`BodyPtr`] and,
/// for spawned fibers, the join handle's), and `release` drops one reference, freeing the
/// allocation with the last.
pub(crate) unsafe trait FiberBody: Send + Sync {
    /// Takes the right to run the body; `false` if someone already has.
    fn claim(&self) -> bool;
    /// [`claim`](Self::claim) by a proc that starts the body as a fiber of its own, in slot
    /// `slot` of proc `proc`: a body that can be cancelled records where, so that its
    /// cancellation can reach it there. Gives the body's spawn site (for the fiber's slot,
    /// which a dump reads) when the claim succeeds: one virtual call for both.
    fn claim_at(&self, proc: usize, slot: usize) -> Option<Site> {
        let _ = (proc, slot);
        self.claim().then(|| self.site())
    }
    /// Where the body's thread was spawned.
    fn site(&self) -> Site;
    /// Whether the body has been claimed (a hint: `claim` decides).
    fn is_claimed(&self) -> bool;
    /// Marks the unstarted body as dealt to another proc with a part of a burst of spawns
    /// (the `sched` docs, "A burst of spawns is split with idle procs"): from now on a
    /// joiner waits for it to run there instead of running it inline.
    fn deal(&self) {}
    /// Runs the claimed body to its end on the current stack, catching panics.
    fn run(&self);
    /// Reports the claimed body as never run (dropped at shutdown).
    fn cancel(&self);
    /// Drops one counted reference to this body.
    ///
    /// # Safety
    /// The caller owns a reference and does not use `self` after the call.
    unsafe fn release(&self);
}

/// An owned, counted reference to a fiber body (as `Arc` would be, but with the count kept by
/// the body itself, so that a spawned fiber's body and its join handle share one count that
/// starts at two without an atomic read-modify-write; see `sched::spawn`).
pub(crate) struct BodyPtr(std::ptr::NonNull<dyn FiberBody>);

// SAFETY: a `FiberBody` is `Send + Sync`, and the reference count is atomic.
unsafe impl Send for BodyPtr {}
// SAFETY: as above.
unsafe impl Sync for BodyPtr {}

impl BodyPtr {
    /// Takes over one counted reference to `body`.
    ///
    /// # Safety
    /// `body` points to a live body whose count includes a reference the caller gives up.
    pub(crate) unsafe fn from_raw(body: std::ptr::NonNull<dyn FiberBody>) -> Self {
        Self(body)
    }

    /// The body's address, for identity comparisons.
    pub(crate) fn addr(&self) -> *const () {
        self.0.as_ptr() as *const ()
    }

    /// Gives up the reference without releasing it (the count still includes it): for the one
    /// caller that knows it owns every reference and settles the count itself.
    pub(crate) fn forget(self) {
        std::mem::forget(self);
    }
}

impl std::ops::Deref for BodyPtr {
    type Target = dyn FiberBody;

    fn deref(&self) -> &(dyn FiberBody + 'static) {
        // SAFETY: we own a counted reference, so the body is alive.
        unsafe { self.0.as_ref() }
    }
}

impl Drop for BodyPtr {
    fn drop(&mut self) {
        // SAFETY: we own one reference and never use it again.
        unsafe { self.0.as_ref().release() }
    }
}

/// An unstarted fiber.
pub(crate) struct NewFiber {
    pub(crate) id: crate::ThreadId,
    /// The runtime's main fiber (its panics are not captured: they reach `block_on`).
    pub(crate) main: bool,
    pub(crate) body: BodyPtr,
}

impl Drop for NewFiber {
    fn drop(&mut self) {
        // Dropped before anyone ran it (shutdown): its joiner learns it was cancelled. The
        // load first spares the common case (already run) an atomic read-modify-write.
        if !self.body.is_claimed() && self.body.claim() {
            self.body.cancel();
        }
    }
}

impl NewFiber {
    /// Gives up the fiber without cancelling it: for a caller that will run (or has run) its
    /// body itself and holds another reference to it.
    pub(crate) fn into_body(self) -> BodyPtr {
        let this = std::mem::ManuallyDrop::new(self);
        // SAFETY: `this` is never used or dropped again, so the reference is moved out exactly
        // once; the other fields are `Copy`.
        unsafe { std::ptr::read(&this.body) }
    }
}

impl std::fmt::Debug for NewFiber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NewFiber").field("id", &self.id).finish()
    }
}
