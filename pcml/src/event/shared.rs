//! [`SharedEvent`]: an event value that may be synchronized many times, each time a fresh
//! synchronization (CML's events are values in this sense).
//!
//! An [`Event`] is the one-shot form: a sync consumes it, because it may own what it offers
//! (the message of a `send_evt`) and its wrappers are `FnOnce` closures that may move what
//! they capture. A `SharedEvent` is the reusable form: it holds a function that builds the
//! one-shot event, and every sync builds a new one. So a `SharedEvent`'s guards and
//! `with_nack` functions run again at each sync, each sync gets new nack events, and nothing
//! of one sync carries over to the next, as in CML.
//!
//! # Invariants
//! - A `SharedEvent` owns no offer: every sync, poll or await builds its own [`Event`] by
//!   calling the shared function, and drops it (or consumes it) before returning.

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use super::sync::SyncFuture;
use super::{Event, always, choose};

/// An event value that may be synchronized any number of times, each time a fresh
/// synchronization.
///
/// It holds a function that builds the one-shot [`Event`]; [`sync`](SharedEvent::sync),
/// [`poll`](SharedEvent::poll), [`sync_timeout`](SharedEvent::sync_timeout) and `.await` (on
/// `&SharedEvent`) each build a new one. It is cheap to clone (a reference count) and may be
/// used from many threads at once: concurrent syncs of one `SharedEvent` are independent
/// syncs. Combine shared events with [`SharedEvent::wrap`] and [`SharedEvent::choose`], or
/// take the one-shot form with [`SharedEvent::event`] to combine it with other events.
///
/// # Examples
/// A server loop that syncs the same event value at each turn:
/// ```
/// use pcml::Chan;
/// use pcml::event::SharedEvent;
///
/// pcml::run(|| {
///     let (ints, words) = (Chan::<u32>::new(), Chan::<&str>::new());
///     let next = SharedEvent::choose([
///         SharedEvent::recv(&ints).wrap(|n| n.to_string()),
///         SharedEvent::recv(&words).wrap(|w| w.to_uppercase()),
///     ]);
///     let (i, w) = (ints.clone(), words.clone());
///     pcml::spawn(move || {
///         i.send(1);
///         w.send("two");
///         i.send(3);
///     });
///     let got: Vec<String> = (0..3).map(|_| next.sync()).collect();
///     assert_eq!(got, ["1", "TWO", "3"]);
/// });
/// ```
pub struct SharedEvent<T> {
    make: Arc<dyn Fn() -> Event<T> + Send + Sync>,
}

impl<T> Clone for SharedEvent<T> {
    fn clone(&self) -> Self {
        SharedEvent {
            make: self.make.clone(),
        }
    }
}

impl<T> std::fmt::Debug for SharedEvent<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedEvent").finish_non_exhaustive()
    }
}

impl<T: Send + 'static> SharedEvent<T> {
    /// Makes a shared event of a function that builds its one-shot form. `make` runs once
    /// per sync (and once per [`event`](SharedEvent::event) call), in the thread that
    /// syncs, like a [`guard`](super::guard) that may run many times.
    ///
    /// ```
    /// use pcml::event::{SharedEvent, always};
    /// use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
    /// use std::sync::Arc;
    ///
    /// let built = Arc::new(AtomicU32::new(0));
    /// let b = built.clone();
    /// let ev = SharedEvent::new(move || {
    ///     b.fetch_add(1, Relaxed);
    ///     always(7)
    /// });
    /// assert_eq!(ev.sync() + ev.sync(), 14);
    /// assert_eq!(built.load(Relaxed), 2);
    /// ```
    pub fn new<F>(make: F) -> Self
    where
        F: Fn() -> Event<T> + Send + Sync + 'static,
    {
        SharedEvent {
            make: Arc::new(make),
        }
    }

    /// An event that is always enabled with a clone of `v` (CML's `alwaysEvt`).
    ///
    /// ```
    /// let ev = pcml::event::SharedEvent::always(String::from("hi"));
    /// assert_eq!(ev.sync(), "hi");
    /// assert_eq!(ev.sync(), "hi");
    /// ```
    pub fn always(v: T) -> Self
    where
        T: Clone + Sync,
    {
        SharedEvent::new(move || always(v.clone()))
    }

    /// Receives from `ch` (CML's `recvEvt ch`, kept as a value).
    ///
    /// ```
    /// use pcml::{Chan, event::SharedEvent};
    ///
    /// pcml::run(|| {
    ///     let ch = Chan::new();
    ///     let c = ch.clone();
    ///     pcml::spawn(move || (0..3).for_each(|i| c.send(i)));
    ///     let recv = SharedEvent::recv(&ch);
    ///     assert_eq!([recv.sync(), recv.sync(), recv.sync()], [0, 1, 2]);
    /// });
    /// ```
    pub fn recv(ch: &crate::chan::Chan<T>) -> Self {
        let ch = ch.clone();
        SharedEvent::new(move || ch.recv_evt())
    }

    /// The choice of several shared events (CML's `choose`), itself a shared event: each
    /// sync is a fresh choice among fresh events. An empty choice is never enabled.
    ///
    /// ```
    /// use pcml::event::SharedEvent;
    ///
    /// let ev = SharedEvent::choose([SharedEvent::always(1), SharedEvent::always(2)]);
    /// for _ in 0..10 {
    ///     assert!((1..=2).contains(&ev.sync()));
    /// }
    /// ```
    pub fn choose(evs: impl IntoIterator<Item = SharedEvent<T>>) -> Self {
        let evs: Vec<SharedEvent<T>> = evs.into_iter().collect();
        SharedEvent::new(move || choose(evs.iter().map(SharedEvent::event)))
    }

    /// Applies `f` to the result each time this event is chosen (CML's `wrap`). `f` may run
    /// many times, so it is `Fn`; it runs in the syncing thread after the sync completes.
    ///
    /// ```
    /// let ev = pcml::event::SharedEvent::always(20).wrap(|x| x + 1);
    /// assert_eq!((ev.sync(), ev.sync()), (21, 21));
    /// ```
    pub fn wrap<U, F>(&self, f: F) -> SharedEvent<U>
    where
        U: Send + 'static,
        F: Fn(T) -> U + Send + Sync + 'static,
    {
        let inner = self.clone();
        let f = Arc::new(f);
        SharedEvent::new(move || {
            let f = f.clone();
            inner.event().wrap(move |x| f(x))
        })
    }

    /// Builds this value's one-shot [`Event`], to combine it with other events or sync it
    /// once; calls the shared function now.
    ///
    /// ```
    /// use pcml::event::{SharedEvent, never, select};
    ///
    /// let one = SharedEvent::always(1);
    /// assert_eq!(select([never(), one.event()]), 1);
    /// ```
    pub fn event(&self) -> Event<T> {
        (self.make)()
    }

    /// Synchronizes on a fresh instance of this event (see [`Event::sync`]).
    ///
    /// # Panics
    /// As [`Event::sync`]: inside a pcml async task (await `&shared` there), or if a
    /// guard, `with_nack` or wrapper function panics.
    ///
    /// ```
    /// let ev = pcml::event::SharedEvent::always(3);
    /// assert_eq!(ev.sync() + ev.sync(), 6);
    /// ```
    pub fn sync(&self) -> T {
        self.event().sync()
    }

    /// Synchronizes on a fresh instance only if a branch is enabled now (see
    /// [`Event::poll`]).
    ///
    /// ```
    /// use pcml::{Chan, event::SharedEvent};
    ///
    /// let recv = SharedEvent::recv(&Chan::<u8>::new());
    /// assert_eq!(recv.poll(), None);
    /// assert_eq!(recv.poll(), None);
    /// ```
    pub fn poll(&self) -> Option<T> {
        self.event().poll()
    }

    /// Synchronizes on a fresh instance for at most `d` (see [`Event::sync_timeout`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use pcml::{Chan, event::SharedEvent};
    ///
    /// pcml::run(|| {
    ///     let recv = SharedEvent::recv(&Chan::<u8>::new());
    ///     assert_eq!(recv.sync_timeout(Duration::from_millis(1)), None);
    ///     assert_eq!(recv.sync_timeout(Duration::from_millis(1)), None);
    /// });
    /// ```
    pub fn sync_timeout(&self, d: Duration) -> Option<T> {
        self.event().sync_timeout(d)
    }
}

impl SharedEvent<()> {
    /// Sends a clone of `v` on `ch` at each sync (CML's `sendEvt (ch, v)`, kept as a value).
    ///
    /// ```
    /// use pcml::{Chan, event::SharedEvent};
    ///
    /// pcml::run(|| {
    ///     let ch = Chan::new();
    ///     let c = ch.clone();
    ///     let h = pcml::spawn(move || c.recv() + c.recv());
    ///     let send = SharedEvent::send(&ch, 4);
    ///     send.sync();
    ///     send.sync();
    ///     assert_eq!(h.join().unwrap(), 8);
    /// });
    /// ```
    pub fn send<M>(ch: &crate::chan::Chan<M>, v: M) -> Self
    where
        M: Clone + Send + Sync + 'static,
    {
        let ch = ch.clone();
        SharedEvent::new(move || ch.send_evt(v.clone()))
    }
}

impl<T: Send + 'static> From<SharedEvent<T>> for Event<T> {
    /// The one-shot form, built now (see [`SharedEvent::event`]).
    fn from(ev: SharedEvent<T>) -> Event<T> {
        ev.event()
    }
}

impl<T: Send + 'static> IntoFuture for &SharedEvent<T> {
    type Output = T;
    type IntoFuture = SyncFuture<T>;

    /// Synchronizes on a fresh instance in async code: `(&ev).await`. Dropping the future
    /// cancels that one sync, as for an [`Event`].
    ///
    /// ```
    /// use pcml::event::SharedEvent;
    ///
    /// let ev = SharedEvent::always(5);
    /// let twice = async move { (&ev).await + (&ev).await };
    /// assert_eq!(pcml::run(|| pcml::spawn_task(twice).join().unwrap()), 10);
    /// ```
    fn into_future(self) -> SyncFuture<T> {
        self.event().into_future()
    }
}
