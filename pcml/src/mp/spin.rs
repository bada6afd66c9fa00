//! A test-and-test-and-set spin lock (Morrisett and Tolmach 1992, section 4.3; Reppy, Russo and Xiao 2009, section 8.4).
//!
//! Waiters spin on a plain load with exponential backoff and only retry the atomic exchange
//! once the lock looks free, so a contended lock's cache line is shared while it is held rather
//! than bounced between cores by failing read-modify-writes.
//!
//! # Invariants
//! - `locked` is `true` exactly while a [`SpinLockGuard`] exists.
//! - The value is touched only through a guard.

use std::fmt;
use std::ops::{Deref, DerefMut};

use crossbeam_utils::Backoff;

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicBool, Ordering};

/// A spin lock for short critical sections on a proc.
///
/// `lock` spins (it never parks or suspends), so hold it only for a few instructions, and never
/// across a blocking operation, a `yield_now` or a `sync`: another fiber on the same proc that
/// wants the lock would spin forever. For locks held across blocking, use a fiber-aware mutex.
///
/// # Examples
/// ```
/// use pcml::mp::SpinLock;
///
/// let counter = SpinLock::new(0u64);
/// *counter.lock() += 1;
/// assert_eq!(*counter.lock(), 1);
/// assert!(counter.try_lock().is_some());
/// ```
pub struct SpinLock<T: ?Sized> {
    /// Written by `lock`/`try_lock` (Acquire CAS) and by the guard's drop (Release store).
    locked: AtomicBool,
    /// Read and written only by the holder of the guard.
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `value` to one thread at a time, so sharing the lock
// only requires that the value may be sent between threads.
unsafe impl<T: ?Sized + Send> Sync for SpinLock<T> {}
// SAFETY: the lock owns its value.
unsafe impl<T: ?Sized + Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    /// Makes an unlocked spin lock around `value`.
    ///
    /// ```
    /// let lock = pcml::mp::SpinLock::new(vec![1, 2]);
    /// assert_eq!(lock.into_inner(), vec![1, 2]);
    /// ```
    pub fn new(value: T) -> Self {
        Self {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Consumes the lock and returns its value.
    ///
    /// ```
    /// let lock = pcml::mp::SpinLock::new(7);
    /// assert_eq!(lock.into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> T {
        self.value.into_inner()
    }
}

impl<T: ?Sized> SpinLock<T> {
    /// Acquires the lock, spinning until it is free.
    ///
    /// ```
    /// let lock = pcml::mp::SpinLock::new(1);
    /// let mut guard = lock.lock();
    /// *guard += 1;
    /// drop(guard);
    /// assert_eq!(*lock.lock(), 2);
    /// ```
    #[inline]
    pub fn lock(&self) -> SpinLockGuard<'_, T> {
        if let Some(guard) = self.try_lock() {
            return guard;
        }
        self.lock_contended()
    }

    #[cold]
    fn lock_contended(&self) -> SpinLockGuard<'_, T> {
        let backoff = Backoff::new();
        loop {
            // Spin on a load until the lock looks free: no cache-line traffic while it is held.
            while self.locked.load(Ordering::Relaxed) {
                if backoff.is_completed() {
                    crate::loom::thread::yield_now();
                } else {
                    backoff.snooze();
                }
                #[cfg(pcml_loom)]
                crate::loom::spin_loop();
            }
            if let Some(guard) = self.try_lock() {
                return guard;
            }
        }
    }

    /// Acquires the lock if it is free now, without spinning.
    ///
    /// ```
    /// let lock = pcml::mp::SpinLock::new(());
    /// let held = lock.lock();
    /// assert!(lock.try_lock().is_none());
    /// drop(held);
    /// assert!(lock.try_lock().is_some());
    /// ```
    #[inline]
    pub fn try_lock(&self) -> Option<SpinLockGuard<'_, T>> {
        // Acquire: pairs with the Release store in `SpinLockGuard::drop`, so the previous
        // holder's writes to `value` are visible to us.
        match self
            .locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(_) => Some(SpinLockGuard { lock: self }),
            // Held by someone else.
            Err(_) => None,
        }
    }

    /// Whether the lock is held right now (a racy snapshot, for diagnostics).
    ///
    /// ```
    /// let lock = pcml::mp::SpinLock::new(0);
    /// assert!(!lock.is_locked());
    /// ```
    pub fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }

    /// Returns a mutable reference to the value; no locking is needed with `&mut self`.
    ///
    /// ```
    /// let mut lock = pcml::mp::SpinLock::new(0);
    /// *lock.get_mut() = 5;
    /// assert_eq!(*lock.lock(), 5);
    /// ```
    #[cfg(not(pcml_loom))]
    pub fn get_mut(&mut self) -> &mut T {
        // SAFETY: `&mut self` proves no guard exists.
        self.value.with_mut(|p| unsafe { &mut *p })
    }
}

impl<T: Default> Default for SpinLock<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for SpinLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.try_lock() {
            Some(guard) => f.debug_struct("SpinLock").field("value", &&*guard).finish(),
            None => f.write_str("SpinLock { <locked> }"),
        }
    }
}

/// Access to the value of a held [`SpinLock`]; unlocks when dropped.
#[must_use = "the lock is released as soon as the guard is dropped"]
pub struct SpinLockGuard<'a, T: ?Sized> {
    lock: &'a SpinLock<T>,
}

impl<T: ?Sized> Deref for SpinLockGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard is the only access to the value while the lock is held.
        self.lock.value.with(|p| unsafe { &*p })
    }
}

impl<T: ?Sized> DerefMut for SpinLockGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard is the only access to the value while the lock is held.
        self.lock.value.with_mut(|p| unsafe { &mut *p })
    }
}

impl<T: ?Sized> Drop for SpinLockGuard<'_, T> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire CAS in `try_lock` of the next holder.
        self.lock.locked.store(false, Ordering::Release);
    }
}

impl<T: ?Sized + fmt::Debug> fmt::Debug for SpinLockGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

#[cfg(all(test, not(pcml_loom)))]
mod tests {
    use super::SpinLock;
    use std::sync::Arc;

    #[test]
    fn threads_count_exactly_under_the_lock() {
        let lock = Arc::new(SpinLock::new(0u32));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        *lock.lock() += 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*lock.lock(), 800);
    }

    #[test]
    fn try_lock_fails_while_held_and_succeeds_after() {
        let lock = SpinLock::new(String::from("a"));
        let mut g = lock.lock();
        g.push('b');
        assert!(lock.try_lock().is_none());
        drop(g);
        assert_eq!(&*lock.try_lock().unwrap(), "ab");
    }
}
