//! Bounded buffered channels (Go's buffered channels; CML's library builds them as a server
//! thread over synchronous channels): a FIFO buffer of fixed capacity whose senders block
//! while it is full and whose receivers block while it is empty.
//!
//! ```
//! use pcml::BoundedChan;
//!
//! pcml::run(|| {
//!     let ch = BoundedChan::new(2);
//!     ch.send(1);
//!     ch.send(2); // the buffer is full now: a third send would wait for a receive
//!     assert_eq!(ch.try_send(3), Err(pcml::bounded::TrySendError::Full(3)));
//!     let c = ch.clone();
//!     let late = pcml::spawn(move || c.send(3)); // waits for room
//!     assert_eq!((ch.recv(), ch.recv(), ch.recv()), (1, 2, 3));
//!     late.join().unwrap();
//! });
//! ```
//!
//! Both directions are events: [`BoundedChan::send_evt`] is enabled while there is room (or a
//! receiver is waiting), [`BoundedChan::recv_evt`] while a message is buffered, so either
//! composes in `choose`/`select` and works from fibers, OS threads and async code (`.await`).
//!
//! Built on the public [`BaseEvent`] API and the waiter queues of `sync_var`, like an
//! [`MVar`](crate::MVar), which is this channel at capacity one: a `std::sync::Mutex` around
//! the buffer and two queues of blocked syncs, receivers with an empty slot and senders with
//! their message in a slot. A send hands its message straight to the first live blocked
//! receiver, else appends it to the buffer; a receive that makes room moves the first live
//! blocked sender's message to the back of the buffer in the same step.
//!
//! # Differences from the CML library
//! - No server thread: the buffer is shared state under a lock, as in Go's `chan.go`.
//! - Capacity 0 is refused (a panic): a rendezvous channel is [`Chan`](crate::Chan).
//!
//! # Invariants
//! - The buffer and both queues are touched only under the lock; the lock is never held
//!   across a block or a yield, and the only lock taken under it is a waiter's slot lock, a
//!   leaf. Deliveries and wake-ups happen under the lock (a wake-up only schedules its thread).
//! - `buf.len() <= cap`, except after a receive whose `.await` was dropped once it had won
//!   gives its message back to the front of a buffer that filled up meanwhile (`cap + 1`
//!   until the next receive). While the buffer has room, no live sender is queued (a receive that
//!   makes room refills from the first live sender at once); while it is non-empty, no live
//!   receiver is queued (a send serves receivers first). So messages leave in the order they
//!   entered, and blocked senders enter in the order they blocked.
//! - A queued sender's message stays in its slot until a receive wins its sync and moves it
//!   to the buffer; a sender whose sync completes elsewhere drops it in `cancel`. A losing send
//!   therefore never reaches the buffer.
//! - A sync never matches an offer of its own ([`Waiter::same_sync`](crate::event::Waiter::same_sync)).

use crate::loom::sync::{Arc, Mutex};
use std::collections::VecDeque;
use std::fmt;

use std::marker::PhantomData;

use crate::chan::handles::{Handles, Kind};
use crate::chan::{Back, Mode, Plain, Receiver, Sender, TryRecvError};
use crate::event::{BaseEvent, Blocked, Event, OwnWaiter, SelfSynch};
use crate::sched::worker;
use crate::sync_var::waiters::{Matched, Offers, Slot, complete_self, give_back, lock};

#[cfg(all(test, pcml_loom))]
mod tests;

pub use crate::chan::TrySendError;

/// A FIFO channel with a buffer of fixed capacity: `send` blocks while the buffer is full,
/// `recv` while it is empty.
///
/// Cheap to clone (a reference count); `Send + Sync` when `T: Send`.
///
/// # Examples
/// ```
/// let ch = pcml::BoundedChan::new(2);
/// ch.send(1);
/// ch.send(2); // full now: a third send would block
/// assert_eq!(ch.len(), 2);
/// assert_eq!(ch.recv(), 1);
/// assert_eq!(ch.recv(), 2);
/// ```
pub struct BoundedChan<T> {
    inner: Arc<Inner<T>>,
}

pub(crate) struct Inner<T> {
    /// The buffer's size limit; 0 for a rendezvous channel. Immutable.
    cap: usize,
    state: Mutex<State<T>>,
    /// The counts of handles that decide when a drop closes the channel.
    handles: Handles,
}

struct State<T> {
    /// Buffered messages, oldest first; at most `cap`.
    buf: VecDeque<T>,
    /// Blocked receivers (empty slots); live ones only while `buf` is empty.
    receivers: Offers<T>,
    /// Blocked senders (slots holding their messages); live ones only while `buf` is full.
    senders: Offers<T>,
    /// Set once, by `Inner::close`; then both queues stay empty.
    closed: bool,
}

impl<T> State<T> {
    /// Takes the oldest message, then lets the first live blocked sender's message in if that
    /// made room.
    fn pop(&mut self, cap: usize) -> Option<T> {
        let Some(v) = self.buf.pop_front() else {
            // Empty: only a rendezvous channel (capacity 0) has live senders queued now, and
            // one hands its message straight over.
            return self.senders.take_first();
        };
        if self.buf.len() >= cap {
            // Over capacity (a message given back by a dropped receive): no room yet.
            return Some(v);
        }
        if let Some(m) = self.senders.take_first() {
            self.buf.push_back(m);
        }
        Some(v)
    }

    /// Sends `v` with room in the buffer (and no sync of ours queued here): to the first live
    /// blocked receiver, else into the buffer.
    fn push(&mut self, v: T) {
        if let Err(v) = self.receivers.deliver_first(v) {
            self.buf.push_back(v);
        }
    }

    /// A send that does not wait, with nothing of its sync queued here: to a blocked
    /// receiver or into the buffer if there is room; else back.
    fn try_push(&mut self, cap: usize, v: T) -> Result<(), TrySendError<T>> {
        if self.closed {
            return Err(TrySendError::Disconnected(v));
        }
        if self.buf.len() < cap {
            self.push(v);
            return Ok(());
        }
        // Full: only a rendezvous channel (capacity 0) has live receivers queued now.
        self.receivers.deliver_first(v).map_err(TrySendError::Full)
    }

    /// A receive that does not wait.
    fn try_pop(&mut self, cap: usize) -> Result<T, TryRecvError> {
        match self.pop(cap) {
            Some(v) => Ok(v),
            None if self.closed => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }

    /// Whether a live offer is queued in `q`.
    fn has_live(q: &Offers<T>) -> bool {
        q.q.iter().any(|o| !o.w.is_synched())
    }
}

impl<T> Inner<T> {
    /// Closes the channel: completes every queued offer with the closed result (a receiver's
    /// slot stays empty, a sender's keeps its message). Whether this call closed it.
    pub(crate) fn close(&self) -> bool {
        let mut st = lock(&self.state);
        if st.closed {
            return false;
        }
        st.closed = true;
        let st = &mut *st;
        for o in st.receivers.q.drain(..).chain(st.senders.q.drain(..)) {
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

    pub(crate) fn cap(&self) -> usize {
        self.cap
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
    pub(crate) fn try_send(&self, v: T) -> Result<(), TrySendError<T>> {
        lock(&self.state).try_push(self.cap, v)
    }

    pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
        lock(&self.state).try_pop(self.cap)
    }

    /// A blocking send in mode `M`.
    pub(crate) fn send<M: Mode>(this: &Arc<Self>, v: T) -> M::Sent<T> {
        // Fast path: room now (one lock, no event). A queued sender means the buffer is full,
        // so this cannot pass a blocked sender.
        match this.try_send(v) {
            Ok(()) => {
                // Like a sync that commits at once, count it against the fiber's budget.
                worker::consume_budget();
                M::sent(None)
            }
            Err(TrySendError::Disconnected(v)) => M::sent(Some(v)),
            Err(TrySendError::Full(v)) => Self::send_evt::<M>(this, v).sync(),
        }
    }

    /// A blocking receive in mode `M`.
    pub(crate) fn recv<M: Mode>(this: &Arc<Self>) -> M::Recv<T> {
        // Fast path: a message now (one lock, no event). While messages are buffered no
        // receiver is queued, so this cannot pass a blocked receiver.
        match this.try_recv() {
            Ok(v) => {
                worker::consume_budget();
                M::recv(Some(v))
            }
            Err(TryRecvError::Disconnected) => M::recv(None),
            Err(TryRecvError::Empty) => Self::recv_evt::<M>(this).sync(),
        }
    }

    pub(crate) fn send_evt<M: Mode>(this: &Arc<Self>, v: T) -> Event<M::Sent<T>> {
        Event::from_base(SendEvt::<T, M> {
            ch: this.clone(),
            value: Some(v),
            slot: None,
            back: None,
            mode: PhantomData,
        })
    }

    /// A send event that leaves its message in `back` if it is dropped unsent.
    pub(crate) fn send_evt_with_back<M: Mode>(
        this: &Arc<Self>,
        v: T,
        back: Back<T>,
    ) -> Event<M::Sent<T>> {
        Event::from_base(SendEvt::<T, M> {
            ch: this.clone(),
            value: Some(v),
            slot: None,
            back: Some(back),
            mode: PhantomData,
        })
    }

    pub(crate) fn recv_evt<M: Mode>(this: &Arc<Self>) -> Event<M::Recv<T>> {
        Event::from_base(RecvEvt::<T, M> {
            ch: this.clone(),
            slot: None,
            mode: PhantomData,
        })
    }
}

impl<T> Clone for BoundedChan<T> {
    fn clone(&self) -> Self {
        self.inner.add_handle(Kind::Both);
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Drop for BoundedChan<T> {
    fn drop(&mut self) {
        self.inner.drop_handle(Kind::Both);
    }
}

impl<T> fmt::Debug for BoundedChan<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BoundedChan")
            .field("len", &self.len())
            .field("capacity", &self.inner.cap)
            .finish()
    }
}

impl<T> BoundedChan<T> {
    /// A channel whose buffer holds up to `capacity` messages. Capacity 0 makes a
    /// rendezvous channel: every send waits for a receive (as a [`Chan`](crate::Chan), which
    /// is faster at it).
    ///
    /// # Examples
    /// ```
    /// let ch: pcml::BoundedChan<u8> = pcml::BoundedChan::new(16);
    /// assert_eq!(ch.capacity(), 16);
    /// ```
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                cap: capacity,
                state: Mutex::new(State {
                    buf: VecDeque::with_capacity(capacity.min(1024)),
                    receivers: Offers::new(),
                    senders: Offers::new(),
                    closed: false,
                }),
                handles: Handles::new(),
            }),
        }
    }

    /// How many messages are buffered (blocked senders' messages not counted). At most the
    /// capacity, or one more just after a receive whose `.await` was dropped once it had won
    /// gave its message back to a full buffer.
    ///
    /// # Examples
    /// ```
    /// let ch = pcml::BoundedChan::new(4);
    /// ch.send(());
    /// assert_eq!(ch.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    /// Whether no message is buffered.
    ///
    /// # Examples
    /// ```
    /// let ch: pcml::BoundedChan<u8> = pcml::BoundedChan::new(1);
    /// assert!(ch.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the buffer is full, so a send would wait (always, at capacity 0, unless a
    /// receiver is waiting).
    ///
    /// # Examples
    /// ```
    /// let ch = pcml::BoundedChan::new(1);
    /// assert!(!ch.is_full());
    /// ch.send(1);
    /// assert!(ch.is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        self.len() >= self.inner.cap
    }

    /// The lengths of the queues of blocked `(senders, receivers)`, dead offers included: for
    /// tests.
    #[doc(hidden)]
    pub fn queue_lens(&self) -> (usize, usize) {
        let st = lock(&self.inner.state);
        (st.senders.q.len(), st.receivers.q.len())
    }

    /// The buffer's size limit.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(pcml::BoundedChan::<u8>::new(3).capacity(), 3);
    /// ```
    pub fn capacity(&self) -> usize {
        self.inner.cap
    }

    /// Closes the channel: sends fail from now on (a blocked sender wakes and gets its
    /// message back), and receives take what is buffered, then fail (a blocked receiver
    /// wakes). Whether this call closed it. See [`chan`](crate::chan) for when a channel
    /// closes by itself.
    ///
    /// # Examples
    /// ```
    /// let ch = pcml::BoundedChan::new(2);
    /// let rx = ch.receiver();
    /// ch.send(1);
    /// ch.close();
    /// assert_eq!(rx.recv(), Ok(1));
    /// assert_eq!(rx.recv(), Err(pcml::chan::RecvError));
    /// ```
    pub fn close(&self) -> bool {
        self.inner.close()
    }

    /// Whether the channel is closed (messages may still be buffered).
    ///
    /// # Examples
    /// ```
    /// let ch = pcml::BoundedChan::<u8>::new(1);
    /// ch.close();
    /// assert!(ch.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// A sending half of this channel: its operations return `Result`s.
    ///
    /// # Examples
    /// ```
    /// let ch = pcml::BoundedChan::new(1);
    /// let tx = ch.sender();
    /// tx.send(1).unwrap();
    /// assert_eq!(ch.recv(), 1);
    /// ```
    pub fn sender(&self) -> Sender<T> {
        self.inner.add_handle(Kind::Sender);
        Sender::from_bounded(self.inner.clone())
    }

    /// A receiving half of this channel: its operations return `Result`s.
    ///
    /// # Examples
    /// ```
    /// let ch = pcml::BoundedChan::new(4);
    /// let rx = ch.receiver();
    /// ch.send(1);
    /// ch.send(2);
    /// drop(ch); // no both-ends handle and no Sender left: closed
    /// assert_eq!(rx.iter().collect::<Vec<_>>(), [1, 2]);
    /// ```
    pub fn receiver(&self) -> Receiver<T> {
        self.inner.add_handle(Kind::Receiver);
        Receiver::from_bounded(self.inner.clone())
    }

    /// Splits this handle into a sending and a receiving half.
    ///
    /// # Examples
    /// ```
    /// let (tx, rx) = pcml::BoundedChan::new(1).split();
    /// tx.send("hi").unwrap();
    /// assert_eq!(rx.recv(), Ok("hi"));
    /// ```
    pub fn split(self) -> (Sender<T>, Receiver<T>) {
        let (tx, rx) = (self.sender(), self.receiver());
        drop(self);
        (tx, rx)
    }
}

impl<T: Send + 'static> BoundedChan<T> {
    /// Sends `v`, blocking while the buffer is full.
    ///
    /// # Panics
    /// If the channel is closed (a [`Sender`]'s `send` returns the message in an error).
    ///
    /// # Examples
    /// ```
    /// let ch = pcml::BoundedChan::new(1);
    /// let rx = ch.clone();
    /// let t = std::thread::spawn(move || (rx.recv(), rx.recv()));
    /// ch.send(1);
    /// ch.send(2); // may wait for the receiver to make room
    /// assert_eq!(t.join().unwrap(), (1, 2));
    /// ```
    pub fn send(&self, v: T) {
        Inner::send::<Plain>(&self.inner, v)
    }

    /// An event enabled while the buffer has room (or a receiver waits); syncing on it sends
    /// `v`. If it loses a choice (or its `.await` is dropped), `v` is dropped and never
    /// enters the buffer. A sync of it panics on a closed channel.
    ///
    /// # Examples
    /// ```
    /// let ch = pcml::BoundedChan::new(1);
    /// ch.send(1);
    /// let r = pcml::select([ch.send_evt(2).wrap(|()| "sent"), pcml::always("full")]);
    /// assert_eq!(r, "full");
    /// assert_eq!(ch.len(), 1);
    /// ```
    pub fn send_evt(&self, v: T) -> Event<()> {
        Inner::send_evt::<Plain>(&self.inner, v)
    }

    /// Sends `v` if the buffer has room (or a receiver waits); gives it back otherwise.
    /// Never blocks.
    ///
    /// # Examples
    /// ```
    /// let ch = pcml::BoundedChan::new(1);
    /// assert!(ch.try_send(1).is_ok());
    /// assert!(ch.try_send(2).unwrap_err().is_full());
    /// ch.close();
    /// assert!(ch.try_send(3).unwrap_err().is_disconnected());
    /// ```
    pub fn try_send(&self, v: T) -> Result<(), TrySendError<T>> {
        self.inner.try_send(v)
    }

    /// Receives the oldest message, blocking while the buffer is empty.
    ///
    /// # Panics
    /// If the channel is closed and drained (a [`Receiver`]'s `recv` returns an error).
    ///
    /// # Examples
    /// ```
    /// let ch = pcml::BoundedChan::new(1);
    /// ch.send('x');
    /// assert_eq!(ch.recv(), 'x');
    /// ```
    pub fn recv(&self) -> T {
        Inner::recv::<Plain>(&self.inner)
    }

    /// An event enabled while a message is buffered (or a sender waits); syncing on it
    /// receives the oldest one. A receive that loses a choice (or whose `.await` is dropped)
    /// takes nothing. A sync of it panics on a closed, drained channel.
    ///
    /// # Examples
    /// ```
    /// let ch: pcml::BoundedChan<i32> = pcml::BoundedChan::new(1);
    /// assert_eq!(pcml::select([ch.recv_evt(), pcml::always(-1)]), -1);
    /// ch.send(5);
    /// assert_eq!(pcml::select([ch.recv_evt(), pcml::never()]), 5);
    /// ```
    pub fn recv_evt(&self) -> Event<T> {
        Inner::recv_evt::<Plain>(&self.inner)
    }

    /// Receives the oldest message if there is one (`None` also on a closed, drained
    /// channel). Never blocks.
    ///
    /// # Examples
    /// ```
    /// let ch = pcml::BoundedChan::new(2);
    /// assert_eq!(ch.try_recv(), None);
    /// ch.send(1);
    /// assert_eq!(ch.try_recv(), Some(1));
    /// ```
    pub fn try_recv(&self) -> Option<T> {
        self.inner.try_recv().ok()
    }
}

/// The base event of a bounded send: [`BoundedChan::send_evt`] (mode [`Plain`]) and a
/// [`Sender`]'s ([`Checked`]).
struct SendEvt<T, M> {
    ch: Arc<Inner<T>>,
    /// The message, until it is sent or queued in `slot`.
    value: Option<T>,
    /// Our queued offer's slot (holding the message) while blocked.
    slot: Option<Slot<T>>,
    /// Where the message goes if the event is dropped unsent (`Sender::send_timeout`).
    back: Option<Back<T>>,
    mode: PhantomData<M>,
}

impl<T, M> Drop for SendEvt<T, M> {
    fn drop(&mut self) {
        if let (Some(back), Some(m)) = (&self.back, self.value.take()) {
            *back.lock().unwrap_or_else(|e| e.into_inner()) = Some(m);
        }
    }
}

impl<T: Send + 'static, M: Mode> BaseEvent for SendEvt<T, M> {
    type Output = M::Sent<T>;

    fn poll(&mut self) -> bool {
        let st = lock(&self.ch.state);
        st.buf.len() < self.ch.cap || st.closed || State::has_live(&st.receivers)
    }

    fn try_do(&mut self) -> Option<M::Sent<T>> {
        let v = self
            .value
            .take()
            .expect("pcml: bounded send without a message");
        // Nothing of this sync is queued yet (commit phase), so any receiver is a partner.
        match lock(&self.ch.state).try_push(self.ch.cap, v) {
            Ok(()) => Some(M::sent(None)),
            Err(TrySendError::Disconnected(v)) => Some(M::sent(Some(v))),
            Err(TrySendError::Full(v)) => {
                self.value = Some(v);
                None
            }
        }
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<M::Sent<T>> {
        let mut st = lock(&self.ch.state);
        if st.closed {
            let v = self.value.take();
            return complete_self(me, || M::sent(v));
        }
        // Hand the message to a blocked receiver of another sync (Figure 9): while the buffer
        // has room, or at capacity 0.
        let delivered = st.receivers.match_partner(me, |r, commit| {
            *lock(&r.slot) = self.value.take();
            commit.publish();
        });
        match delivered {
            Matched::Won(()) => return Blocked::Committed(M::sent(None)),
            Matched::SelfSynched => return Blocked::Synched,
            Matched::NoPartner => {}
        }
        if st.buf.len() >= self.ch.cap {
            self.slot = Some(st.senders.push_offer(me, self.value.take()));
            return Blocked::Waiting;
        }
        // Room: complete our own sync and buffer it.
        match me.synch_self() {
            SelfSynch::Won => {
                // Receivers of our own sync may be queued (a choice of send and receive on
                // this channel); they are dead now, and `push` skips them.
                st.push(
                    self.value
                        .take()
                        .expect("pcml: bounded send without a message"),
                );
                Blocked::Committed(M::sent(None))
            }
            SelfSynch::AlreadySynched => Blocked::Synched,
        }
    }

    fn complete(&mut self) -> M::Sent<T> {
        // A receive moved the message out of our slot, or the channel closed and left it.
        let slot = self
            .slot
            .take()
            .expect("pcml: bounded send completed unblocked");
        let left = lock(&slot).take();
        M::sent(left)
    }

    fn cancel(&mut self) {
        // Our sync is settled and this offer lost: nobody else touches the slot now. The
        // message stays with the event (dropped with it, or given back by `Drop`).
        if let Some(slot) = self.slot.take() {
            self.value = lock(&slot).take();
        }
    }

    fn describe(&self) -> String {
        crate::sched::dump::on_object("BoundedChan::send_evt", Arc::as_ptr(&self.ch))
    }
}

/// The base event of a bounded receive: [`BoundedChan::recv_evt`] (mode [`Plain`]) and a
/// [`Receiver`]'s ([`Checked`]).
struct RecvEvt<T, M> {
    ch: Arc<Inner<T>>,
    /// Our queued offer's slot while blocked.
    slot: Option<Slot<T>>,
    mode: PhantomData<M>,
}

impl<T: Send + 'static, M: Mode> BaseEvent for RecvEvt<T, M> {
    type Output = M::Recv<T>;

    fn poll(&mut self) -> bool {
        let st = lock(&self.ch.state);
        !st.buf.is_empty() || st.closed || State::has_live(&st.senders)
    }

    fn try_do(&mut self) -> Option<M::Recv<T>> {
        match lock(&self.ch.state).try_pop(self.ch.cap) {
            Ok(v) => Some(M::recv(Some(v))),
            Err(TryRecvError::Disconnected) => Some(M::recv(None)),
            Err(TryRecvError::Empty) => None,
        }
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<M::Recv<T>> {
        let mut st = lock(&self.ch.state);
        if !st.buf.is_empty() {
            // Complete our sync first, so that a sender of our own sync queued here is dead
            // before `pop` looks for one to let in.
            return complete_self(me, || {
                M::recv(Some(
                    st.pop(self.ch.cap).expect("pcml: bounded channel emptied"),
                ))
            });
        }
        // Empty: at capacity 0 a blocked sender of another sync hands its message over.
        let taken = st.senders.match_partner(me, |o, commit| {
            let v = lock(&o.slot).take();
            commit.publish();
            v
        });
        match taken {
            Matched::Won(v) => return Blocked::Committed(M::recv(v)),
            Matched::SelfSynched => return Blocked::Synched,
            Matched::NoPartner => {}
        }
        if st.closed {
            return complete_self(me, || M::recv(None));
        }
        self.slot = Some(st.receivers.push_offer(me, None));
        Blocked::Waiting
    }

    fn complete(&mut self) -> M::Recv<T> {
        // A sender delivered into our slot, or the channel closed and left it empty.
        let slot = self
            .slot
            .as_ref()
            .expect("pcml: bounded recv completed unblocked");
        let got = lock(slot).take();
        M::recv(got)
    }

    fn discard(&mut self, v: M::Recv<T>) {
        // Our `.await` was dropped after a message was handed to us: it was the oldest, so it
        // goes back to the front (to a blocked receiver if the buffer is empty). The buffer
        // may hold one message over capacity until the next receive.
        if let Some(v) = M::recv_value(v) {
            let st = &mut *lock(&self.ch.state);
            give_back(&mut st.buf, &mut st.receivers, v);
        }
    }

    fn describe(&self) -> String {
        crate::sched::dump::on_object("BoundedChan::recv_evt", Arc::as_ptr(&self.ch))
    }
}
