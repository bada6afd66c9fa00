//! The reference count of a cell that pcml allocates and frees by hand (a task cell, a fiber
//! cell, an actor record): `Arc`'s strong count without the weak one, so the cell and its count
//! are one allocation shared by several kinds of holder (run queues, wakers, handles, pids).
//!
//! # Invariants
//! - The count is the number of live references; the creator writes it (`new`) before it
//!   publishes any reference, so the first references cost no read-modify-write.
//! - A reference is only made from one the maker holds (`count`), so a count of 1 read by a
//!   holder stays 1: nobody else can reach the cell.

use std::sync::atomic::{AtomicUsize, Ordering, fence};

/// A count of the references to the cell that contains it; see the module docs.
pub(crate) struct RefCount(AtomicUsize);

impl RefCount {
    /// A count of `n` references, which the creator hands out.
    pub(crate) const fn new(n: usize) -> Self {
        Self(AtomicUsize::new(n))
    }

    /// Counts one more reference, made from one the caller holds.
    #[inline]
    pub(crate) fn count(&self) {
        // Relaxed, as `Arc::clone`: the new reference is made from one the caller holds, and
        // passing it to another thread synchronizes by whatever passes it.
        if self.0.fetch_add(1, Ordering::Relaxed) > isize::MAX as usize {
            // Leaked references by the billion: stop before the count wraps (as `Arc` does).
            std::process::abort();
        }
    }

    /// Drops one of the caller's references: true if it was the last, and the caller must
    /// free the cell (which nobody else can reach any more).
    #[inline]
    #[must_use]
    pub(crate) fn release(&self) -> bool {
        // When the caller's reference is the only one, no read-modify-write at all: the common
        // end of a cell, whose last holder is the proc that ran it to completion.
        if self.is_unique() {
            return true;
        }
        // Release: publishes our uses of the cell to whoever frees it.
        if self.0.fetch_sub(1, Ordering::Release) != 1 {
            return false;
        }
        // Ours was the last after all (the others were dropped since the load). Acquire:
        // orders the free after every holder's Release decrement.
        fence(Ordering::Acquire);
        true
    }

    /// Whether the caller's reference is the only one: then nobody else can reach the cell,
    /// now or later (invariants).
    #[inline]
    pub(crate) fn is_unique(&self) -> bool {
        // Acquire: pairs with the Release decrements of the earlier holders, so their uses of
        // the cell happen before whatever the caller does next (a free).
        self.0.load(Ordering::Acquire) == 1
    }

    /// Sets the count to `n`; only for a caller that knows nobody else holds a reference.
    #[inline]
    pub(crate) fn set(&self, n: usize) {
        self.0.store(n, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::RefCount;

    #[test]
    fn the_last_release_is_reported_once_from_any_thread() {
        let refs = RefCount::new(1);
        let lasts = std::sync::atomic::AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                refs.count();
            }
            for _ in 0..4 {
                s.spawn(|| {
                    if refs.release() {
                        lasts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                });
            }
        });
        // The four threads' references are gone; the first one is the last.
        assert_eq!(lasts.into_inner(), 0);
        assert!(refs.is_unique());
        assert!(refs.release());
    }
}
