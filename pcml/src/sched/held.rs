//! A proc's held fiber: the oldest unstarted fiber spawned on the proc, kept out of the
//! work-stealing deque so that a join soon after takes it back cheaply, yet still stealable by
//! an idle proc.
//!
//! The slot holds at most one item and a state byte. Only the owning proc puts; the owner and
//! thieves take. Taking is a CAS from `FULL` to `BUSY` (the taker then owns the item, moves it
//! out and stores `EMPTY`). A runtime of one proc has no thieves and keeps its held fiber in
//! its private context instead (`worker`), with no atomic operation at all.
//!
//! # Invariants
//! - `state` goes `EMPTY -> FULL` only by the owner's `try_put`, after it wrote `item`;
//!   `FULL -> BUSY` only by a successful take CAS; `BUSY -> EMPTY` or `BUSY -> FULL` only by
//!   that same taker. So `item` is written by the owner only while `EMPTY` (nobody else touches
//!   it then), and read by a taker only while it holds `BUSY`.
//! - `item` is `Some` exactly when `state` is `FULL` (outside a put or a take).

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicU8, AtomicU32, Ordering};

const EMPTY: u8 = 0;
const FULL: u8 = 1;
const BUSY: u8 = 2;

/// A one-item slot that its owner fills and anyone may empty.
pub(crate) struct HeldSlot<T> {
    state: AtomicU8,
    /// How many items the owner has put, wrapping: written only by the owner's `try_put`
    /// (a plain load and store), read by idle procs to tell one held item from the next
    /// (`ticket`).
    puts: AtomicU32,
    item: UnsafeCell<Option<T>>,
}

// SAFETY: `item` is reached by one thread at a time, as the module invariants say, and `T` is
// moved between threads (`T: Send`).
unsafe impl<T: Send> Sync for HeldSlot<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for HeldSlot<T> {}

impl<T> HeldSlot<T> {
    pub(crate) fn new() -> Self {
        Self {
            state: AtomicU8::new(EMPTY),
            puts: AtomicU32::new(0),
            item: UnsafeCell::new(None),
        }
    }

    /// Whether an item is (probably) held: a hint for idle procs and the owner's loop.
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.state.load(Ordering::Relaxed) == FULL
    }

    /// Puts `item` (owner only) if the slot is empty; gives it back if the slot holds one.
    #[inline]
    pub(crate) fn try_put(&self, item: T) -> Result<(), T> {
        loop {
            // Acquire: pairs with a taker's Release store of EMPTY, so its move out of `item`
            // happens before our write.
            match self.state.load(Ordering::Acquire) {
                EMPTY => break,
                FULL => return Err(item),
                // A thief is moving the item out (or looking at it); it stores EMPTY (or FULL)
                // in a few instructions.
                _ => crate::loom::spin_loop(),
            }
        }
        // SAFETY: the state is EMPTY and only the owner (us) leaves EMPTY, so nobody else
        // touches `item` (module invariants).
        // The item is `None` then (module invariants), so it is written without a drop.
        self.item.with_mut(|p| unsafe { p.write(Some(item)) });
        // Relaxed: only the owner writes `puts`; readers use it as a hint (see `ticket`).
        self.puts.store(
            self.puts.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
        // Release: publishes `item` to the Acquire half of a taker's CAS.
        self.state.store(FULL, Ordering::Release);
        Ok(())
    }

    /// Takes the held item, if any.
    /// A number that changes with every item put: an idle proc that sees the slot full with
    /// the same ticket twice, some time apart, knows the item waited all that time (barring
    /// 2^32 puts in between).
    #[inline]
    pub(crate) fn ticket(&self) -> u32 {
        // Relaxed: a hint; taking the item is what synchronizes.
        self.puts.load(Ordering::Relaxed)
    }

    #[inline]
    pub(crate) fn take(&self) -> Option<T> {
        self.take_if(|_| true)
    }

    /// Takes the held item if `want` accepts it.
    #[inline]
    pub(crate) fn take_if(&self, want: impl FnOnce(&T) -> bool) -> Option<T> {
        if self
            .state
            // Acquire: pairs with the owner's Release store of FULL in `put`, making `item`
            // visible. A failed CAS reads nothing from `item`.
            .compare_exchange(FULL, BUSY, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        // SAFETY: we hold BUSY: no one else touches `item`.
        let taken = self.item.with_mut(|p| unsafe {
            match &*p {
                Some(v) if want(v) => (*p).take(),
                _ => None,
            }
        });
        let next = if taken.is_some() { EMPTY } else { FULL };
        // Release: our move out of `item` (or our look at it) happens before the next owner
        // `put` (Acquire load) or taker (Acquire CAS).
        self.state.store(next, Ordering::Release);
        taken
    }
}
