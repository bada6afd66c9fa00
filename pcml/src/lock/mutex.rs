//! The fiber-aware [`Mutex`]: see the [module docs](super).

use crate::loom::sync::{Arc, Mutex as StateLock};
use std::fmt;
use std::ops::{Deref, DerefMut};

use crate::event::{BaseEvent, Blocked, Event, OwnWaiter};
use crate::sync_var::waiters::{Offers, Slot, complete_self, delivered, lock, now_or_sync};

/// A mutual-exclusion lock whose waiters block only their own fiber, OS thread or task, and
/// are served first come first served.
///
/// `Mutex` is a cheap handle (a reference count): clone it to share it. Its guard,
/// [`MutexGuard`], owns a handle too, so it is `'static` and can come out of an event
/// ([`lock_evt`](Mutex::lock_evt)) or be held across `.await`s and moved between threads.
/// While the mutex is locked its value lives in the guard (locking and unlocking move it, a
/// copy of `size_of::<T>()` bytes; box a large `T`). No poisoning: see the
/// [module docs](super#poisoning).
///
/// # Examples
/// ```
/// let m = pcml::Mutex::new(0);
/// let total = pcml::run(move || {
///     let hs: Vec<_> = (0..4)
///         .map(|_| {
///             let m = m.clone();
///             pcml::spawn(move || {
///                 for _ in 0..100 {
///                     *m.lock() += 1;
///                     pcml::yield_now();
///                 }
///             })
///         })
///         .collect();
///     hs.into_iter().for_each(|h| h.join().unwrap());
///     *m.lock()
/// });
/// assert_eq!(total, 400);
/// ```
pub struct Mutex<T> {
    inner: Arc<Inner<T>>,
}

struct Inner<T> {
    state: StateLock<State<T>>,
}

struct State<T> {
    /// The protected value while unlocked; `None` while a guard holds it.
    value: Option<T>,
    /// Blocked lockers (empty slots), served in order; live ones only while locked.
    waiters: Offers<MutexGuard<T>>,
}

/// Exclusive access to a [`Mutex`]'s value; dropping it unlocks (handing the lock to the next
/// waiter, if any).
///
/// # Examples
/// ```
/// let m = pcml::Mutex::new(vec![1]);
/// let mut g = m.lock();
/// g.push(2);
/// assert!(m.try_lock().is_none());
/// drop(g);
/// assert_eq!(*m.lock(), [1, 2]);
/// ```
pub struct MutexGuard<T> {
    /// The value, taken out of the mutex; `None` only inside `drop`.
    value: Option<T>,
    mutex: Arc<Inner<T>>,
}

impl<T> Clone for Mutex<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<T: Default> Default for Mutex<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> fmt::Debug for Mutex<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let locked = lock(&self.inner.state).value.is_none();
        f.debug_struct("Mutex").field("locked", &locked).finish()
    }
}

impl<T: fmt::Debug> fmt::Debug for MutexGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("MutexGuard").field(&**self).finish()
    }
}

impl<T> Mutex<T> {
    /// An unlocked mutex holding `value`.
    ///
    /// # Examples
    /// ```
    /// let m = pcml::Mutex::new(1);
    /// assert_eq!(*m.lock(), 1);
    /// ```
    pub fn new(value: T) -> Self {
        Self {
            inner: Arc::new(Inner {
                state: StateLock::new(State {
                    value: Some(value),
                    waiters: Offers::new(),
                }),
            }),
        }
    }

    /// Locks the mutex if it is unlocked now. Never blocks.
    ///
    /// # Examples
    /// ```
    /// let m = pcml::Mutex::new(());
    /// let g = m.try_lock().unwrap();
    /// assert!(m.try_lock().is_none());
    /// drop(g);
    /// assert!(m.try_lock().is_some());
    /// ```
    pub fn try_lock(&self) -> Option<MutexGuard<T>> {
        let value = lock(&self.inner.state).value.take()?;
        Some(MutexGuard {
            value: Some(value),
            mutex: self.inner.clone(),
        })
    }

    /// The length of the queue of blocked lockers, dead offers included: for tests.
    #[doc(hidden)]
    pub fn queue_len(&self) -> usize {
        lock(&self.inner.state).waiters.q.len()
    }

    /// Whether the mutex is locked now (advisory: it may change at once).
    ///
    /// # Examples
    /// ```
    /// let m = pcml::Mutex::new(0);
    /// let g = m.lock();
    /// assert!(m.is_locked());
    /// drop(g);
    /// assert!(!m.is_locked());
    /// ```
    pub fn is_locked(&self) -> bool {
        lock(&self.inner.state).value.is_none()
    }
}

impl<T: Send + 'static> Mutex<T> {
    /// Locks the mutex, blocking (only the calling fiber or OS thread) while another holds
    /// it. In async code use `m.lock_evt().await`.
    ///
    /// # Examples
    /// ```
    /// let m = pcml::Mutex::new(String::new());
    /// m.lock().push_str("hi");
    /// assert_eq!(*m.lock(), "hi");
    /// ```
    pub fn lock(&self) -> MutexGuard<T> {
        // Fast path: unlocked now (no event). While waiters are queued the mutex stays
        // locked (an unlock hands it over), so this cannot pass them.
        now_or_sync(self.try_lock(), || self.lock_evt())
    }

    /// An event enabled while the mutex is unlocked; syncing on it locks the mutex. If it
    /// loses a choice, or its `.await` is dropped, the mutex is not taken (or, if it was
    /// handed over at that instant, passed on at once).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let m = pcml::Mutex::new(5);
    /// let held = m.lock();
    /// assert!(m.lock_evt().sync_timeout(Duration::from_millis(1)).is_none());
    /// drop(held);
    /// let g = pcml::select([m.lock_evt().wrap(Some), pcml::never()]).unwrap();
    /// assert_eq!(*g, 5);
    /// ```
    pub fn lock_evt(&self) -> Event<MutexGuard<T>> {
        Event::from_base(LockEvt {
            mutex: self.inner.clone(),
            slot: None,
        })
    }
}

impl<T> MutexGuard<T> {
    /// A handle on the mutex this guard locks.
    ///
    /// # Examples
    /// ```
    /// let m = pcml::Mutex::new(1);
    /// let g = m.lock();
    /// let m2 = pcml::lock::MutexGuard::mutex(&g);
    /// drop(g);
    /// assert_eq!(*m2.lock(), 1);
    /// ```
    pub fn mutex(this: &Self) -> Mutex<T> {
        Mutex {
            inner: this.mutex.clone(),
        }
    }
}

impl<T> Deref for MutexGuard<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value
            .as_ref()
            .expect("pcml: a MutexGuard without its value")
    }
}

impl<T> DerefMut for MutexGuard<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value
            .as_mut()
            .expect("pcml: a MutexGuard without its value")
    }
}

impl<T> Drop for MutexGuard<T> {
    fn drop(&mut self) {
        let Some(v) = self.value.take() else {
            return;
        };
        let mut st = lock(&self.mutex.state);
        // Hand the value to the first live waiter, as a new guard in its slot.
        let mut v = Some(v);
        let handed = st.waiters.complete_first(|| MutexGuard {
            value: v.take(),
            mutex: self.mutex.clone(),
        });
        if !handed {
            // No live waiter: the mutex is unlocked.
            st.value = v;
        }
    }
}

/// The base event of [`Mutex::lock_evt`].
struct LockEvt<T> {
    mutex: Arc<Inner<T>>,
    /// Our queued offer's slot while blocked; an unlocker puts our guard in it.
    slot: Option<Slot<MutexGuard<T>>>,
}

impl<T: Send + 'static> LockEvt<T> {
    fn guard(&self, value: T) -> MutexGuard<T> {
        MutexGuard {
            value: Some(value),
            mutex: self.mutex.clone(),
        }
    }
}

impl<T: Send + 'static> BaseEvent for LockEvt<T> {
    type Output = MutexGuard<T>;

    fn poll(&mut self) -> bool {
        lock(&self.mutex.state).value.is_some()
    }

    fn try_do(&mut self) -> Option<MutexGuard<T>> {
        let v = lock(&self.mutex.state).value.take()?;
        Some(self.guard(v))
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<MutexGuard<T>> {
        let mut st = lock(&self.mutex.state);
        if st.value.is_some() {
            // Unlocked since our poll: take it ourselves.
            return complete_self(me, || {
                let v = st
                    .value
                    .take()
                    .expect("pcml: mutex value vanished under its lock");
                self.guard(v)
            });
        }
        self.slot = Some(st.waiters.push_offer(me, None));
        Blocked::Waiting
    }

    fn complete(&mut self) -> MutexGuard<T> {
        delivered(
            self.slot
                .as_ref()
                .expect("pcml: mutex lock completed unblocked"),
        )
    }
}
