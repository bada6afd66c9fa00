//! Mailboxes (CML's `Mailbox`, seed 001's FIFO, seed 004's pipe): unbounded buffered channels.
//! [`Mailbox::send`] never blocks; [`Mailbox::recv_evt`] is an event enabled while a message is
//! buffered, so receiving composes in `choose`/`select` and works from fibers, OS threads and
//! async code (`.await`).
//!
//! Built on the public [`BaseEvent`] API: a `std::sync::Mutex` around the buffer and a queue
//! of blocked receivers, each with a one-value slot. A send hands its message straight to the
//! first live blocked receiver (winning its sync, delivering into its slot, publishing), else
//! appends it to the buffer.
//!
//! # Differences from the CML library
//! - Deliveries and wake-ups happen under the mailbox's lock, which keeps the FIFO order
//!   simple; a wake-up only schedules the receiver and never takes this lock.
//!
//! # Invariants
//! - The buffer and the receiver queue are touched only under the lock; the only lock taken
//!   under it is a receiver's slot lock, a leaf.
//! - While the buffer is non-empty no live receiver is queued (a send serves receivers first,
//!   a receive that finds a message takes it instead of queueing), so messages leave in the
//!   order they were sent: those of one sender arrive in its order.
//! - A receiver's slot is written once, by the sender that won its sync, before it publishes;
//!   its owner reads it in `complete`.

use std::collections::VecDeque;
use std::fmt;
// `Arc` and `Weak` are std's (loom has no `Weak`, and `Multicast` holds ports weakly); the
// mutex comes through the loom shim so the loom models check the protocol under it.
use std::sync::{Arc, Weak};

use crate::loom::sync::Mutex;

use crate::chan::closed_panic;
use crate::event::{BaseEvent, Blocked, Event, OwnWaiter};
use crate::sync_var::waiters::{Offers, Slot, complete_self, give_back, lock, now_or_sync};

/// An unbounded FIFO channel: `send` never blocks, `recv` blocks while it is empty.
///
/// Cheap to clone (a reference count); `Send + Sync` when `T: Send`.
///
/// # Examples
/// ```
/// let mb = pcml::Mailbox::new();
/// mb.send(1);
/// mb.send(2);
/// assert_eq!(mb.len(), 2);
/// assert_eq!(mb.recv(), 1);
/// assert_eq!(mb.recv(), 2);
/// ```
pub struct Mailbox<T> {
    inner: Arc<Inner<T>>,
}

struct Inner<T> {
    state: Mutex<State<T>>,
}

struct State<T> {
    /// Buffered messages, oldest first.
    buf: VecDeque<T>,
    /// Blocked receivers (dead ones swept as the queue grows); live ones only while `buf` is
    /// empty.
    receivers: Offers<T>,
    /// Set once, by `Mailbox::close`; then no receiver is queued any more.
    closed: bool,
}

impl<T> Clone for Mailbox<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Default for Mailbox<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for Mailbox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mailbox").field("len", &self.len()).finish()
    }
}

impl<T> Mailbox<T> {
    /// An empty mailbox.
    ///
    /// # Examples
    /// ```
    /// let mb: pcml::Mailbox<u8> = pcml::Mailbox::new();
    /// assert!(mb.is_empty());
    /// ```
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    buf: VecDeque::new(),
                    receivers: Offers::new(),
                    closed: false,
                }),
            }),
        }
    }

    /// How many messages are buffered (not yet received).
    ///
    /// # Examples
    /// ```
    /// let mb = pcml::Mailbox::new();
    /// mb.send("a");
    /// assert_eq!(mb.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        lock(&self.inner.state).buf.len()
    }

    /// Whether no message is buffered.
    ///
    /// # Examples
    /// ```
    /// let mb = pcml::Mailbox::new();
    /// assert!(mb.is_empty());
    /// mb.send(());
    /// assert!(!mb.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        lock(&self.inner.state).buf.is_empty()
    }

    /// Closes the mailbox: sends panic from now on, and receives take what is buffered,
    /// then find it closed (a blocked receive wakes): a plain [`recv`](Self::recv) panics,
    /// [`try_recv`](Self::try_recv) returns `None`, and [`recv_evt`](Self::recv_evt)'s
    /// sync panics. Whether this call closed it (`false` if it already was).
    ///
    /// # Examples
    /// ```
    /// let mb = pcml::Mailbox::new();
    /// mb.send(1);
    /// assert!(mb.close());
    /// assert!(mb.is_closed());
    /// assert_eq!(mb.try_recv(), Some(1)); // what was buffered is still there
    /// assert_eq!(mb.try_recv(), None);
    /// ```
    pub fn close(&self) -> bool {
        let mut st = lock(&self.inner.state);
        if st.closed {
            return false;
        }
        st.closed = true;
        for o in st.receivers.q.drain(..) {
            // An empty slot says "closed" to its owner.
            if let Some(commit) = o.w.synch_spinning() {
                commit.publish();
            }
            // Else dead: its sync completed elsewhere.
        }
        true
    }

    /// How many receivers are queued, dead ones included: for tests.
    #[doc(hidden)]
    pub fn queue_len_for_tests(&self) -> usize {
        lock(&self.inner.state).receivers.q.len()
    }

    /// Whether the mailbox is closed (messages may still be buffered).
    ///
    /// # Examples
    /// ```
    /// let mb = pcml::Mailbox::<u8>::new();
    /// assert!(!mb.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        lock(&self.inner.state).closed
    }
}

impl<T: Send + 'static> Mailbox<T> {
    /// Sends `v`: to the first blocked receiver if there is one, else into the buffer. Never
    /// blocks.
    ///
    /// # Examples
    /// ```
    /// let mb = pcml::Mailbox::new();
    /// let rx = mb.clone();
    /// let t = std::thread::spawn(move || rx.recv());
    /// mb.send(9);
    /// assert_eq!(t.join().unwrap(), 9);
    /// ```
    ///
    /// # Panics
    /// If the mailbox is closed.
    pub fn send(&self, v: T) {
        let mut st = lock(&self.inner.state);
        if st.closed {
            drop(st);
            closed_panic("send");
        }
        if let Err(v) = st.receivers.deliver_first(v) {
            st.buf.push_back(v);
        }
    }

    /// Receives the oldest message, blocking while the mailbox is empty.
    ///
    /// # Examples
    /// ```
    /// let mb = pcml::Mailbox::new();
    /// mb.send('x');
    /// assert_eq!(mb.recv(), 'x');
    /// ```
    ///
    /// # Panics
    /// If the mailbox is closed and drained.
    pub fn recv(&self) -> T {
        // Fast path: a buffered message now (one lock, no event). While messages are buffered
        // no receiver is queued, so this cannot pass a blocked receiver.
        now_or_sync(self.try_recv(), || self.recv_evt())
    }

    /// An event enabled while a message is buffered; syncing on it receives the oldest one.
    ///
    /// # Examples
    /// ```
    /// let mb: pcml::Mailbox<i32> = pcml::Mailbox::new();
    /// assert_eq!(pcml::select([mb.recv_evt(), pcml::always(-1)]), -1);
    /// mb.send(5);
    /// assert_eq!(pcml::select([mb.recv_evt(), pcml::never()]), 5);
    /// ```
    ///
    /// A closed, drained mailbox's event is enabled, and its sync panics.
    pub fn recv_evt(&self) -> Event<T> {
        Event::from_base(RecvEvt {
            mb: self.inner.clone(),
            slot: None,
        })
    }

    /// Receives the oldest message if there is one. Never blocks.
    ///
    /// # Examples
    /// ```
    /// let mb = pcml::Mailbox::new();
    /// assert_eq!(mb.try_recv(), None);
    /// mb.send(1);
    /// assert_eq!(mb.try_recv(), Some(1));
    /// ```
    pub fn try_recv(&self) -> Option<T> {
        lock(&self.inner.state).buf.pop_front()
    }
}

/// A mailbox that does not keep its buffer alive: what a [`Multicast`](crate::multicast::Multicast)
/// holds for each of its ports, so that a dropped port stops receiving.
pub(crate) struct WeakMailbox<T>(Weak<Inner<T>>);

impl<T> WeakMailbox<T> {
    /// The mailbox, if some handle or event still holds it.
    pub(crate) fn upgrade(&self) -> Option<Mailbox<T>> {
        self.0.upgrade().map(|inner| Mailbox { inner })
    }
}

impl<T> Mailbox<T> {
    /// A handle that does not keep the mailbox alive.
    pub(crate) fn downgrade(&self) -> WeakMailbox<T> {
        WeakMailbox(Arc::downgrade(&self.inner))
    }
}

impl<T: Clone> Mailbox<T> {
    /// A new mailbox holding clones of the messages buffered here now (oldest first).
    pub(crate) fn copy_buffered(&self) -> Mailbox<T> {
        let copy = Mailbox::new();
        let buf = lock(&self.inner.state).buf.clone();
        lock(&copy.inner.state).buf = buf;
        copy
    }
}

/// The base event of [`Mailbox::recv_evt`].
struct RecvEvt<T> {
    mb: Arc<Inner<T>>,
    /// Our queued offer's slot while blocked.
    slot: Option<Slot<T>>,
}

impl<T: Send + 'static> BaseEvent for RecvEvt<T> {
    type Output = T;

    fn poll(&mut self) -> bool {
        let st = lock(&self.mb.state);
        !st.buf.is_empty() || st.closed
    }

    fn try_do(&mut self) -> Option<T> {
        let mut st = lock(&self.mb.state);
        let v = st.buf.pop_front();
        if v.is_none() && st.closed {
            drop(st);
            closed_panic("receive");
        }
        v
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<T> {
        let mut st = lock(&self.mb.state);
        if !st.buf.is_empty() {
            return complete_self(me, || st.buf.pop_front().expect("pcml: mailbox emptied"));
        }
        if st.closed {
            drop(st);
            closed_panic("receive");
        }
        self.slot = Some(st.receivers.push_offer(me, None));
        Blocked::Waiting
    }

    fn complete(&mut self) -> T {
        let slot = self
            .slot
            .as_ref()
            .expect("pcml: mailbox recv completed unblocked");
        // Empty: the mailbox closed while we waited.
        let got = lock(slot).take();
        got.unwrap_or_else(|| closed_panic("receive"))
    }

    fn discard(&mut self, v: T) {
        // Our `.await` was dropped after a message was handed to us: it was the oldest, so it
        // goes back to the front (to a blocked receiver if the buffer is empty).
        let st = &mut *lock(&self.mb.state);
        give_back(&mut st.buf, &mut st.receivers, v);
    }
}
