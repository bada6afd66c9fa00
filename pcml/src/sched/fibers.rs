//! A proc's table of started fibers: where a fiber lives between its first run and its end.
//!
//! The worker resumes a fiber's coroutine in place, through a raw pointer, without moving it
//! and without holding a borrow of the table while the fiber runs; the fiber (and wake-ups
//! that land on this proc while it runs) touch only the `Cell` fields of slots.
//!
//! # Invariants
//! - The table (`Slab`) is changed (insert, remove) only by the worker loop, never while a
//!   fiber or task runs on this proc, so shared references to slots taken during a run stay
//!   valid and no `&mut` to the table coexists with them.
//! - A slot's coroutine is reached only by the worker (to resume or drop it), never while it is
//!   already running.
//! - Everything here is touched only by the proc's own worker thread.

use std::cell::{Cell, UnsafeCell};
use std::ptr::NonNull;

use slab::Slab;

use crate::ThreadId;
use crate::fiber::{Coroutine, Site};
use crate::sched::waitfor::WaitObject;
use crate::sched::worker::Current;

/// A started fiber's state, as its proc's worker keeps it. The running fiber (the slot that
/// the proc's `current` names) keeps the state it was resumed in, `Ready`, until it
/// suspends: the worker's resume does not store a `Running` state, nor a yield `Ready` again
/// (two of a yield's stores). The wake-ups tell the running fiber from a queued one by its
/// token, non-zero only while it blocks or is blocked (`worker`'s invariants), and a dump by
/// `current`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FiberState {
    /// Running, in the ready queue or waiting behind owed turns.
    Ready,
    Blocked,
}

/// A started fiber.
pub(crate) struct FiberSlot {
    co: UnsafeCell<Coroutine>,
    pub(crate) state: Cell<FiberState>,
    /// The pending block's token; 0 when none (see `worker`'s invariants).
    pub(crate) token: Cell<u64>,
    /// A wake-up for `token` arrived while the fiber was still running.
    pub(crate) wake_pending: Cell<bool>,
    /// The fiber is cancelled (`JoinHandle::abort`): it unwinds at its next blocking point or
    /// yield, or at once if it is blocked (the cancellation wakes it). Cleared when it starts
    /// unwinding, so that its destructors may block.
    pub(crate) abort: Cell<bool>,
    pub(crate) id: ThreadId,
    pub(crate) main: bool,
    /// This slot's key in the table.
    pub(crate) key: usize,
    /// What the proc runs while it runs this fiber itself (not a thread inline on its
    /// stack): built once here, so that each resume copies it whole (two stores) rather than
    /// storing its fields one by one (five).
    pub(crate) current: Current,
    pub(crate) guard: (usize, usize),
    /// Where the fiber was spawned (its body's site, taken when the proc claimed it).
    pub(crate) site: Site,
    /// The thread that runs inline on this fiber's stack (a fiber that `join` ran on its
    /// joiner's stack), as a `ThreadId` number, while the fiber is suspended with one running:
    /// set and cleared around the suspension by `Context::suspend_inlined`; 0 otherwise.
    /// Read by a dump, which then shows that thread as the one suspended.
    pub(crate) inline: Cell<u64>,
    /// With `inline`: the innermost inline run (`worker::calls::InlineRun`, on the fiber's
    /// stack), whose list names the joiners; null otherwise.
    pub(crate) inline_runs: Cell<*const crate::sched::worker::InlineRun>,
    /// What the fiber blocked in (`block_fiber`'s `what`): set at each block, read only by a
    /// dump while the fiber is blocked (the string outlives the suspension).
    pub(crate) blocked_in: Cell<*const str>,
    /// The object it blocked on (`block_fiber`'s `obj`): set at each block, read only by a
    /// dump while the fiber is blocked (the object outlives the suspension).
    pub(crate) blocked_on: Cell<Option<NonNull<dyn WaitObject>>>,
    /// The address of the handle it blocked through (`block_fiber`'s `handle`, 0 for none):
    /// set at each block, compared (never read through) by the wait-for graph.
    pub(crate) handle: Cell<usize>,

    /// The event of a general sync (every branch), set by the sync while it blocks and
    /// cleared after (`worker::note_wait`); points into the fiber's stack, read only by a dump
    /// while the fiber is blocked.
    pub(crate) wait_detail: Cell<Option<*const dyn crate::sched::dump::Describe>>,
}

impl FiberSlot {
    /// A raw pointer to the coroutine, for the worker to resume it in place.
    ///
    /// The pointer must not be used while the coroutine is already running, nor after the
    /// slot is removed.
    #[inline]
    pub(crate) fn coroutine(&self) -> *mut Coroutine {
        self.co.get()
    }
}

pub(crate) struct FiberTable {
    slots: UnsafeCell<Slab<FiberSlot>>,
}

impl FiberTable {
    pub(crate) fn new() -> Self {
        Self {
            slots: UnsafeCell::new(Slab::new()),
        }
    }

    /// The slot of fiber `key`, if it still exists.
    #[inline]
    pub(crate) fn get(&self, key: usize) -> Option<&FiberSlot> {
        // SAFETY: the table is only changed by `insert`/`remove`, which the worker calls when
        // no reference from `get` is alive (module invariants).
        unsafe { (*self.slots.get()).get(key) }
    }

    /// The slot of fiber `key`, without the check that it exists: for the worker's resume
    /// of a fiber it took from its ready queue, where the bounds and occupancy checks of
    /// [`get`](Self::get) cost 4 of a yield's 148 instructions.
    ///
    /// # Safety
    /// Slot `key` holds a fiber (as every slot named by the ready queue, by `owed` or by a
    /// wake-up just verified with `get` does, until that fiber ends: `worker`'s invariants).
    #[inline]
    pub(crate) unsafe fn get_unchecked(&self, key: usize) -> &FiberSlot {
        debug_assert!(
            self.get(key).is_some(),
            "pcml: resumed a fiber that has no slot"
        );
        // SAFETY: as in `get`; the caller says the slot is occupied. Said to the compiler
        // too, which then drops the occupancy test (and its panic) that
        // `Slab::get_unchecked` keeps: a compare and a branch of every resume and block.
        unsafe {
            let slots = &*self.slots.get();
            std::hint::assert_unchecked(slots.contains(key));
            slots.get_unchecked(key)
        }
    }

    /// Adds a fiber.
    ///
    /// # Safety
    /// Only the worker loop calls this, with no reference from `get` alive and no fiber running.
    pub(crate) unsafe fn insert(
        &self,
        co: Coroutine,
        id: ThreadId,
        main: bool,
        guard: (usize, usize),
        site: Site,
    ) -> usize {
        // SAFETY: the caller guarantees exclusive access to the table.
        let slots = unsafe { &mut *self.slots.get() };
        let key = slots.vacant_key();
        let inserted = slots.insert(FiberSlot {
            co: UnsafeCell::new(co),
            state: Cell::new(FiberState::Ready),
            token: Cell::new(0),
            wake_pending: Cell::new(false),
            abort: Cell::new(false),
            id,
            main,
            key,
            current: Current::Fiber {
                slot: key,
                id,
                main,
                inlined: 0,
            },
            guard,
            site,
            inline: Cell::new(0),
            inline_runs: Cell::new(std::ptr::null()),
            blocked_in: Cell::new(""),
            blocked_on: Cell::new(None),
            handle: Cell::new(0),
            wait_detail: Cell::new(None),
        });
        debug_assert_eq!(inserted, key);
        inserted
    }

    /// How many fibers live here (started and not yet finished).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        // SAFETY: a shared look at the table; see `get`.
        unsafe { (*self.slots.get()).len() }
    }

    /// The key the next `insert` will give.
    pub(crate) fn vacant_key(&self) -> usize {
        // SAFETY: a shared look at the table; see `get`.
        unsafe { (*self.slots.get()).vacant_key() }
    }

    /// Removes fiber `key`, returning its coroutine.
    ///
    /// # Safety
    /// As `insert`.
    pub(crate) unsafe fn remove(&self, key: usize) -> (Coroutine, ThreadId, bool) {
        // SAFETY: the caller guarantees exclusive access to the table.
        let slot = unsafe { (*self.slots.get()).remove(key) };
        (slot.co.into_inner(), slot.id, slot.main)
    }

    /// Calls `f` with every fiber's key and slot (a dump, on the worker loop).
    pub(crate) fn for_each(&self, mut f: impl FnMut(usize, &FiberSlot)) {
        // SAFETY: a shared look at the table; see `get`.
        for (k, s) in unsafe { (*self.slots.get()).iter() } {
            f(k, s);
        }
    }

    /// The keys of every fiber, for shutdown.
    pub(crate) fn keys(&self) -> Vec<usize> {
        // SAFETY: a shared look at the table; see `get`.
        unsafe { (*self.slots.get()).iter().map(|(k, _)| k).collect() }
    }
}
