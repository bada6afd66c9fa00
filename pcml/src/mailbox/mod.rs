//! Mailboxes (CML's `Mailbox`, Deleuze's FIFO, Morrisett and Tolmach's pipe): unbounded buffered channels.
//! [`Mailbox::send`] never blocks; [`Mailbox::recv_evt`] is an event enabled while a message is
//! buffered, so receiving composes in `choose`/`select` and works from fibers, OS threads and
//! async code (`.await`).
//!
//! ```
//! use pcml::Mailbox;
//!
//! pcml::run(|| {
//!     let mb = Mailbox::new();
//!     (1..=3).for_each(|i| mb.send(i)); // never waits
//!     assert_eq!((mb.recv(), mb.recv(), mb.try_recv()), (1, 2, Some(3)));
//!     assert_eq!(mb.try_recv(), None);
//! });
//! ```
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

use std::marker::PhantomData;

use crate::chan::handles::{Handles, Kind};
use crate::chan::{Checked, Mode, Plain, Receiver, RecvError, Sender, TryRecvError, closed_panic};
use crate::event::{BaseEvent, Blocked, Event, OwnWaiter, SelfSynch};
use crate::sync_var::waiters::{Offers, Slot, complete_self, give_back, lock};

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

pub(crate) struct Inner<T> {
    state: Mutex<State<T>>,
    /// The counts of handles that decide when a drop closes the mailbox.
    handles: Handles,
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
        self.inner.add_handle(Kind::Both);
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Drop for Mailbox<T> {
    fn drop(&mut self) {
        self.inner.drop_handle(Kind::Both);
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
                handles: Handles::new(),
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
        self.inner.close()
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
        if self.inner.push(v).is_err() {
            closed_panic("send");
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
        Inner::recv::<Plain>(&self.inner)
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
        Inner::recv_evt::<Plain>(&self.inner)
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
        self.inner.try_pop().ok()
    }

    /// `recv`, with a closed, drained mailbox as an error.
    pub(crate) fn recv_checked(&self) -> Result<T, RecvError> {
        Inner::recv::<Checked>(&self.inner)
    }

    /// A sending half of this mailbox: its operations return `Result`s.
    ///
    /// # Examples
    /// ```
    /// let mb = pcml::Mailbox::new();
    /// let tx = mb.sender();
    /// tx.send(1).unwrap();
    /// assert_eq!(mb.recv(), 1);
    /// ```
    pub fn sender(&self) -> Sender<T> {
        self.inner.add_handle(Kind::Sender);
        Sender::from_mailbox(self.inner.clone())
    }

    /// A receiving half of this mailbox: its operations return `Result`s.
    ///
    /// # Examples
    /// ```
    /// let mb = pcml::Mailbox::new();
    /// let rx = mb.receiver();
    /// mb.send(1);
    /// drop(mb); // no both-ends handle and no Sender left: closed
    /// assert_eq!(rx.iter().collect::<Vec<_>>(), [1]);
    /// ```
    pub fn receiver(&self) -> Receiver<T> {
        self.inner.add_handle(Kind::Receiver);
        Receiver::from_mailbox(self.inner.clone())
    }

    /// Splits this handle into a sending and a receiving half.
    ///
    /// # Examples
    /// ```
    /// let (tx, rx) = pcml::Mailbox::new().split();
    /// tx.send("hi").unwrap();
    /// assert_eq!(rx.recv(), Ok("hi"));
    /// ```
    pub fn split(self) -> (Sender<T>, Receiver<T>) {
        let (tx, rx) = (self.sender(), self.receiver());
        drop(self);
        (tx, rx)
    }
}

/// A mailbox that does not keep its buffer alive: what a [`Multicast`](crate::multicast::Multicast)
/// holds for each of its ports, so that a dropped port stops receiving.
pub(crate) struct WeakMailbox<T>(Weak<Inner<T>>);

impl<T> WeakMailbox<T> {
    /// The mailbox, if some handle or event still holds it.
    pub(crate) fn upgrade(&self) -> Option<Mailbox<T>> {
        self.0.upgrade().map(|inner| {
            // A handle again (the last one may have been dropped meanwhile: a mailbox that
            // never had halves does not close by itself, so counting from zero is harmless).
            inner.add_handle(Kind::Both);
            Mailbox { inner }
        })
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
struct RecvEvt<T, M> {
    mb: Arc<Inner<T>>,
    /// Our queued offer's slot while blocked.
    slot: Option<Slot<T>>,
    mode: PhantomData<M>,
}

impl<T: Send + 'static, M: Mode> BaseEvent for RecvEvt<T, M> {
    type Output = M::Recv<T>;

    fn poll(&mut self) -> bool {
        let st = lock(&self.mb.state);
        !st.buf.is_empty() || st.closed
    }

    fn try_do(&mut self) -> Option<M::Recv<T>> {
        let mut st = lock(&self.mb.state);
        match st.buf.pop_front() {
            Some(v) => Some(M::recv(Some(v))),
            None if st.closed => {
                drop(st);
                Some(M::recv(None))
            }
            None => None,
        }
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<M::Recv<T>> {
        let mut st = lock(&self.mb.state);
        if !st.buf.is_empty() {
            return complete_self(me, || {
                M::recv(Some(st.buf.pop_front().expect("pcml: mailbox emptied")))
            });
        }
        if st.closed {
            drop(st);
            return complete_self(me, || M::recv(None));
        }
        self.slot = Some(st.receivers.push_offer(me, None));
        Blocked::Waiting
    }

    fn complete(&mut self) -> M::Recv<T> {
        let slot = self
            .slot
            .as_ref()
            .expect("pcml: mailbox recv completed unblocked");
        // Empty: the mailbox closed while we waited.
        let got = lock(slot).take();
        M::recv(got)
    }

    fn discard(&mut self, v: M::Recv<T>) {
        // Our `.await` was dropped after a message was handed to us: it was the oldest, so it
        // goes back to the front (to a blocked receiver if the buffer is empty).
        if let Some(v) = M::recv_value(v) {
            let st = &mut *lock(&self.mb.state);
            give_back(&mut st.buf, &mut st.receivers, v);
        }
    }

    fn describe(&self) -> String {
        crate::sched::dump::on_object("Mailbox::recv_evt", Arc::as_ptr(&self.mb))
    }
}

/// The base event of an unbounded [`Sender`]'s send: always enabled (a mailbox never
/// blocks a sender); it sends when chosen.
struct SendEvt<T, M> {
    mb: Arc<Inner<T>>,
    /// The message, until sent.
    value: Option<T>,
    mode: PhantomData<M>,
}

impl<T: Send + 'static, M: Mode> BaseEvent for SendEvt<T, M> {
    type Output = M::Sent<T>;

    fn poll(&mut self) -> bool {
        true
    }

    fn try_do(&mut self) -> Option<M::Sent<T>> {
        let v = self.value.take().expect("pcml: mailbox send event reused");
        Some(M::sent(self.mb.push(v).err()))
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<M::Sent<T>> {
        let v = self.value.take().expect("pcml: mailbox send event reused");
        let mb = &self.mb;
        match me.synch_self() {
            SelfSynch::Won => Blocked::Committed(M::sent(mb.push(v).err())),
            SelfSynch::AlreadySynched => Blocked::Synched,
        }
    }

    fn complete(&mut self) -> M::Sent<T> {
        unreachable!("pcml: a mailbox send never blocks")
    }

    fn describe(&self) -> String {
        crate::sched::dump::on_object("Mailbox::send_evt", Arc::as_ptr(&self.mb))
    }
}

impl<T> Inner<T> {
    /// Sends `v` unless the mailbox is closed (then gives it back).
    pub(crate) fn push(&self, v: T) -> Result<(), T> {
        let mut st = lock(&self.state);
        if st.closed {
            return Err(v);
        }
        if let Err(v) = st.receivers.deliver_first(v) {
            st.buf.push_back(v);
        }
        Ok(())
    }

    /// Receives without waiting.
    pub(crate) fn try_pop(&self) -> Result<T, TryRecvError> {
        let mut st = lock(&self.state);
        match st.buf.pop_front() {
            Some(v) => Ok(v),
            None if st.closed => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }

    /// Closes the mailbox; whether this call closed it.
    pub(crate) fn close(&self) -> bool {
        let mut st = lock(&self.state);
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

    pub(crate) fn is_closed(&self) -> bool {
        lock(&self.state).closed
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.state).buf.len()
    }

    pub(crate) fn add_handle(&self, k: Kind) {
        self.handles.add(k);
    }

    pub(crate) fn drop_handle(&self, k: Kind) {
        if self.handles.drop(k) {
            self.close();
        }
    }
}

impl<T: Send + 'static> Inner<T> {
    /// A blocking receive in mode `M`.
    pub(crate) fn recv<M: Mode>(this: &Arc<Self>) -> M::Recv<T> {
        // Fast path: a buffered message now (one lock, no event). While messages are buffered
        // no receiver is queued, so this cannot pass a blocked receiver.
        match this.try_pop() {
            Ok(v) => {
                crate::sched::worker::consume_budget();
                M::recv(Some(v))
            }
            Err(TryRecvError::Disconnected) => M::recv(None),
            Err(TryRecvError::Empty) => Self::recv_evt::<M>(this).sync(),
        }
    }

    pub(crate) fn recv_evt<M: Mode>(this: &Arc<Self>) -> Event<M::Recv<T>> {
        Event::from_base(RecvEvt::<T, M> {
            mb: this.clone(),
            slot: None,
            mode: PhantomData,
        })
    }

    pub(crate) fn send_evt<M: Mode>(this: &Arc<Self>, v: T) -> Event<M::Sent<T>> {
        Event::from_base(SendEvt::<T, M> {
            mb: this.clone(),
            value: Some(v),
            mode: PhantomData,
        })
    }
}
