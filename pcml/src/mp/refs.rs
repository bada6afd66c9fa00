//! The reference count of a cell that pcml allocates and frees by hand (a task cell, a fiber
//! cell, an actor record): `Arc`'s strong count without the weak one, so the cell and its count
//! are one allocation shared by several kinds of holder (run queues, wakers, handles, pids).
//!
//! # Invariants
//! - The count is the number of live references; the creator writes it (`new`) before it
//!   publishes any reference, so the first references cost no read-modify-write.
//! - A reference is only made from one the maker holds (`count`), so a count of 1 read by a
//!   holder stays 1: nobody else can reach the cell.

use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

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
        acquire_after_last(&self.0);
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

/// Orders what follows (the free) after every Release decrement of `count`, once the
/// caller's `fetch_sub` took it to 0: a fence, as `Arc::drop` does.
#[cfg(not(pcml_tsan))]
#[inline(always)]
fn acquire_after_last(_count: &AtomicUsize) {
    std::sync::atomic::fence(Ordering::Acquire);
}

/// Under ThreadSanitizer (`cfg(pcml_tsan)`, set by the build script), which does not model
/// fences: an Acquire load of the count instead, as std's `Arc` does under TSan. It reads
/// the 0 our `fetch_sub` wrote (nobody else holds a reference to write another); every
/// earlier holder's Release decrement heads a release sequence that our read-modify-write
/// continues, so the load synchronizes with all of them, as the fence does.
#[cfg(pcml_tsan)]
#[inline(always)]
fn acquire_after_last(count: &AtomicUsize) {
    let _ = count.load(Ordering::Acquire);
}

/// A value that keeps the count of its own references (for [`Counted`]).
pub(crate) trait Counts {
    fn ref_count(&self) -> &RefCount;
}

/// A counted reference to a `T` that keeps its own count ([`Counts`]): what `Arc<T>` is, with
/// the count inside `T` and no weak count. Clone it to count another reference; dropping the
/// last one drops and frees the `T`. Task references, actor records' typed and type-erased
/// references are all `Counted`.
///
/// # Invariants
/// - `ptr` points to a `T` allocated as a `Box` (of the concrete type behind it, for a `dyn`
///   `T`), alive while this reference is counted in its `ref_count`.
pub(crate) struct Counted<T: ?Sized + Counts> {
    ptr: NonNull<T>,
    /// Owns a `T` as far as drop checking and auto traits go.
    _owns: PhantomData<T>,
}

// SAFETY: a counted reference is a shared reference to a `T` that the last holder frees, as an
// `Arc` is, and the count is atomic: so it may move to and be used from any thread when the
// `T` may be shared between threads.
unsafe impl<T: ?Sized + Counts + Send + Sync> Send for Counted<T> {}
// SAFETY: as above.
unsafe impl<T: ?Sized + Counts + Send + Sync> Sync for Counted<T> {}

impl<T: ?Sized + Counts> Counted<T> {
    /// Takes over one counted reference to `ptr`.
    ///
    /// # Safety
    /// `ptr` points to a live `T` allocated as a `Box` (see the invariants), and its count
    /// includes a reference the caller gives up.
    #[inline]
    pub(crate) unsafe fn from_counted(ptr: NonNull<T>) -> Self {
        Counted {
            ptr,
            _owns: PhantomData,
        }
    }

    /// The pointer, for comparisons and casts; this reference stays counted.
    #[inline]
    pub(crate) fn as_non_null(&self) -> NonNull<T> {
        self.ptr
    }

    /// Gives up this reference without releasing it: the count still includes it, for the
    /// caller to hand over ([`from_counted`](Self::from_counted)).
    #[inline]
    pub(crate) fn into_non_null(self) -> NonNull<T> {
        std::mem::ManuallyDrop::new(self).ptr
    }
}

impl<T: ?Sized + Counts> Deref for Counted<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: the `T` is alive while this reference is counted (invariants).
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: ?Sized + Counts> Clone for Counted<T> {
    #[inline]
    fn clone(&self) -> Self {
        self.ref_count().count();
        Counted {
            ptr: self.ptr,
            _owns: PhantomData,
        }
    }
}

impl<T: ?Sized + Counts> Drop for Counted<T> {
    #[inline]
    fn drop(&mut self) {
        if self.ref_count().release() {
            // SAFETY: that was the last reference: nobody else can reach the `T`, which was
            // allocated as a `Box` of its type (for a `dyn` `T`, the vtable gives its layout).
            drop(unsafe { Box::from_raw(self.ptr.as_ptr()) });
        }
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
