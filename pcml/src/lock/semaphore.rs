//! The counting [`Semaphore`]: see the [module docs](super).

use crate::loom::sync::{Arc, Mutex as StateLock};
use std::fmt;

use crate::event::{BaseEvent, Blocked, Event, OwnWaiter};
use crate::sync_var::waiters::{Offers, Slot, complete_self, delivered, lock, now_or_sync};

/// A counting semaphore: [`acquire`](Semaphore::acquire) takes one permit, blocking (only its
/// own fiber, OS thread or task) while none is free; the returned [`Permit`] gives it back
/// when dropped. Waiters are served first come first served.
///
/// A cheap handle (a reference count): clone it to share it.
///
/// # Examples
/// At most two workers at a time:
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
/// use std::sync::Arc;
///
/// let sem = pcml::Semaphore::new(2);
/// let (now, max) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
/// pcml::run(move || {
///     let hs: Vec<_> = (0..6)
///         .map(|_| {
///             let (sem, now, max) = (sem.clone(), now.clone(), max.clone());
///             pcml::spawn(move || {
///                 let _p = sem.acquire();
///                 max.fetch_max(now.fetch_add(1, SeqCst) + 1, SeqCst);
///                 pcml::yield_now();
///                 now.fetch_sub(1, SeqCst);
///             })
///         })
///         .collect();
///     hs.into_iter().for_each(|h| h.join().unwrap());
///     assert!(max.load(SeqCst) <= 2);
/// });
/// ```
#[derive(Clone)]
pub struct Semaphore {
    inner: Arc<Inner>,
}

struct Inner {
    state: StateLock<State>,
}

struct State {
    /// Free permits; while positive, no live waiter is queued.
    permits: usize,
    /// Blocked acquirers (empty slots), served in order.
    waiters: Offers<Permit>,
}

/// One permit of a [`Semaphore`]; dropping it releases the permit (to the next waiter, if
/// any).
///
/// # Examples
/// ```
/// let sem = pcml::Semaphore::new(1);
/// let p = sem.acquire();
/// assert!(sem.try_acquire().is_none());
/// drop(p);
/// assert!(sem.try_acquire().is_some());
/// ```
pub struct Permit {
    /// The semaphore to release to; `None` once forgotten or released.
    sem: Option<Arc<Inner>>,
}

impl fmt::Debug for Semaphore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("available", &self.available_permits())
            .finish()
    }
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Permit")
    }
}

/// Gives one permit back to `sem`: to the first live waiter (as a `Permit` in its slot), else
/// to the count.
fn release_one(sem: &Arc<Inner>) {
    release_n(sem, 1);
}

/// Gives `n` permits back to `sem`: one to each live waiter, first come first served, the rest
/// to the count, which saturates at `usize::MAX` (a semaphore that full is unbounded).
fn release_n(sem: &Arc<Inner>, mut n: usize) {
    let mut st = lock(&sem.state);
    while n > 0
        && st.waiters.complete_first(|| Permit {
            sem: Some(sem.clone()),
        })
    {
        n -= 1;
    }
    // No live waiter left: the rest are free.
    st.permits = st.permits.saturating_add(n);
}

impl Semaphore {
    /// A semaphore with `permits` free permits (0 is allowed: acquirers then wait for a
    /// [`release`](Semaphore::release)).
    ///
    /// # Examples
    /// ```
    /// let sem = pcml::Semaphore::new(3);
    /// assert_eq!(sem.available_permits(), 3);
    /// ```
    pub fn new(permits: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                state: StateLock::new(State {
                    permits,
                    waiters: Offers::new(),
                }),
            }),
        }
    }

    /// The length of the queue of blocked acquirers, dead offers included: for tests.
    #[doc(hidden)]
    pub fn queue_len(&self) -> usize {
        lock(&self.inner.state).waiters.q.len()
    }

    /// How many permits are free now (advisory: it may change at once).
    ///
    /// # Examples
    /// ```
    /// let sem = pcml::Semaphore::new(2);
    /// let _p = sem.acquire();
    /// assert_eq!(sem.available_permits(), 1);
    /// ```
    pub fn available_permits(&self) -> usize {
        lock(&self.inner.state).permits
    }

    /// Takes a permit if one is free now. Never blocks.
    ///
    /// # Examples
    /// ```
    /// let sem = pcml::Semaphore::new(1);
    /// let p = sem.try_acquire();
    /// assert!(p.is_some());
    /// assert!(sem.try_acquire().is_none());
    /// ```
    pub fn try_acquire(&self) -> Option<Permit> {
        let mut st = lock(&self.inner.state);
        if st.permits == 0 {
            return None;
        }
        st.permits -= 1;
        Some(Permit {
            sem: Some(self.inner.clone()),
        })
    }

    /// Takes a permit, blocking (only the calling fiber or OS thread) while none is free. In
    /// async code use `sem.acquire_evt().await`.
    ///
    /// # Examples
    /// ```
    /// let sem = pcml::Semaphore::new(1);
    /// let p = sem.acquire();
    /// drop(p);
    /// let _again = sem.acquire();
    /// ```
    pub fn acquire(&self) -> Permit {
        // Fast path: a free permit now (no event). While waiters are queued no permit is free
        // (a release hands it over), so this cannot pass them.
        now_or_sync(self.try_acquire(), || self.acquire_evt())
    }

    /// An event enabled while a permit is free; syncing on it takes one. If it loses a
    /// choice, or its `.await` is dropped, no permit is kept.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let sem = pcml::Semaphore::new(0);
    /// assert!(sem.acquire_evt().sync_timeout(Duration::from_millis(1)).is_none());
    /// sem.release(1);
    /// assert!(sem.acquire_evt().sync_timeout(Duration::from_secs(60)).is_some());
    /// ```
    pub fn acquire_evt(&self) -> Event<Permit> {
        Event::from_base(AcquireEvt {
            sem: self.inner.clone(),
            slot: None,
        })
    }

    /// Adds `n` permits, serving blocked acquirers first (e.g. to grow the semaphore, or to
    /// give back permits [forgotten](Permit::forget)). The count of free permits saturates at
    /// `usize::MAX` instead of wrapping: a semaphore created with `usize::MAX` permits stays
    /// unbounded whatever is released.
    ///
    /// # Examples
    /// ```
    /// let sem = pcml::Semaphore::new(0);
    /// sem.release(2);
    /// assert_eq!(sem.available_permits(), 2);
    ///
    /// let unbounded = pcml::Semaphore::new(usize::MAX);
    /// unbounded.release(1);
    /// assert_eq!(unbounded.available_permits(), usize::MAX);
    /// ```
    pub fn release(&self, n: usize) {
        release_n(&self.inner, n);
    }
}

impl Permit {
    /// Gives the permit up without releasing it: the semaphore has one permit fewer for good
    /// (until a [`release`](Semaphore::release)).
    ///
    /// # Examples
    /// ```
    /// let sem = pcml::Semaphore::new(1);
    /// sem.acquire().forget();
    /// assert_eq!(sem.available_permits(), 0);
    /// ```
    pub fn forget(mut self) {
        self.sem = None;
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if let Some(sem) = self.sem.take() {
            release_one(&sem);
        }
    }
}

/// The base event of [`Semaphore::acquire_evt`].
struct AcquireEvt {
    sem: Arc<Inner>,
    /// Our queued offer's slot while blocked; a releaser puts our permit in it.
    slot: Option<Slot<Permit>>,
}

impl AcquireEvt {
    fn permit(&self) -> Permit {
        Permit {
            sem: Some(self.sem.clone()),
        }
    }
}

impl BaseEvent for AcquireEvt {
    type Output = Permit;

    fn poll(&mut self) -> bool {
        lock(&self.sem.state).permits > 0
    }

    fn try_do(&mut self) -> Option<Permit> {
        let mut st = lock(&self.sem.state);
        if st.permits == 0 {
            return None;
        }
        st.permits -= 1;
        drop(st);
        Some(self.permit())
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<Permit> {
        let mut st = lock(&self.sem.state);
        if st.permits > 0 {
            // Released since our poll: take one ourselves.
            return complete_self(me, || {
                st.permits -= 1;
                drop(st);
                self.permit()
            });
        }
        self.slot = Some(st.waiters.push_offer(me, None));
        Blocked::Waiting
    }

    fn complete(&mut self) -> Permit {
        delivered(
            self.slot
                .as_ref()
                .expect("pcml: semaphore acquire completed unblocked"),
        )
    }
}
