//! Bounded buffered channels (Go's buffered channels; CML's library builds them as a server
//! thread over synchronous channels): a FIFO buffer of fixed capacity whose senders block
//! while it is full and whose receivers block while it is empty.
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

use crate::event::{BaseEvent, Blocked, Event, OwnWaiter, SelfSynch};
use crate::sched::worker;
use crate::sync_var::waiters::{
    Matched, Offers, Slot, complete_self, delivered, drop_offer, give_back, lock, now_or_sync,
};

#[cfg(all(test, pcml_loom))]
mod tests;

/// The error of [`BoundedChan::try_send`]: the buffer is full. Holds the message back.
///
/// # Examples
/// ```
/// use pcml::bounded::{BoundedChan, TrySendError};
/// let ch = BoundedChan::new(1);
/// ch.try_send(1).unwrap();
/// assert_eq!(ch.try_send(2), Err(TrySendError::Full(2)));
/// ```
#[derive(PartialEq, Eq, Clone, Copy)]
pub enum TrySendError<T> {
    /// The buffer is full and no receiver is waiting.
    Full(T),
}

impl<T> TrySendError<T> {
    /// The message that was not sent.
    ///
    /// # Examples
    /// ```
    /// let ch = pcml::BoundedChan::new(1);
    /// ch.send("a");
    /// assert_eq!(ch.try_send("b").unwrap_err().into_inner(), "b");
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) => v,
        }
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Full(..)")
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the bounded channel is full (send blocks until there is room)")
    }
}

impl<T> std::error::Error for TrySendError<T> {}

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

struct Inner<T> {
    /// The buffer's size limit, at least 1. Immutable.
    cap: usize,
    state: Mutex<State<T>>,
}

struct State<T> {
    /// Buffered messages, oldest first; at most `cap`.
    buf: VecDeque<T>,
    /// Blocked receivers (empty slots); live ones only while `buf` is empty.
    receivers: Offers<T>,
    /// Blocked senders (slots holding their messages); live ones only while `buf` is full.
    senders: Offers<T>,
}

impl<T> State<T> {
    /// Takes the oldest message, then lets the first live blocked sender's message in if that
    /// made room.
    fn pop(&mut self, cap: usize) -> Option<T> {
        let v = self.buf.pop_front()?;
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
}

impl<T> Clone for BoundedChan<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
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
    /// A channel whose buffer holds up to `capacity` messages.
    ///
    /// # Panics
    /// If `capacity` is 0: for a channel without a buffer (every send meets a receive) use
    /// [`Chan`](crate::Chan).
    ///
    /// # Examples
    /// ```
    /// let ch: pcml::BoundedChan<u8> = pcml::BoundedChan::new(16);
    /// assert_eq!(ch.capacity(), 16);
    /// ```
    pub fn new(capacity: usize) -> Self {
        assert!(
            capacity > 0,
            "pcml: BoundedChan::new(0): a bounded channel needs a capacity of at least 1; \
             use pcml::Chan for a rendezvous channel"
        );
        Self {
            inner: Arc::new(Inner {
                cap: capacity,
                state: Mutex::new(State {
                    buf: VecDeque::with_capacity(capacity.min(1024)),
                    receivers: Offers::new(),
                    senders: Offers::new(),
                }),
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
        lock(&self.inner.state).buf.len()
    }

    /// Whether no message is buffered.
    ///
    /// # Examples
    /// ```
    /// let ch: pcml::BoundedChan<u8> = pcml::BoundedChan::new(1);
    /// assert!(ch.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        lock(&self.inner.state).buf.is_empty()
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
}

impl<T: Send + 'static> BoundedChan<T> {
    /// Sends `v`, blocking while the buffer is full.
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
        // Fast path: room now (one lock, no event). A queued sender means the buffer is full,
        // so this cannot pass a blocked sender.
        match self.try_send(v) {
            // Like a sync that commits at once, count it against the fiber's budget.
            Ok(()) => worker::consume_budget(),
            Err(TrySendError::Full(v)) => self.send_evt(v).sync(),
        }
    }

    /// An event enabled while the buffer has room; syncing on it sends `v`. If it loses a
    /// choice (or its `.await` is dropped), `v` is dropped and never enters the buffer.
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
        Event::from_base(SendEvt {
            ch: self.inner.clone(),
            value: Some(v),
            slot: None,
        })
    }

    /// Sends `v` if the buffer has room; gives it back otherwise. Never blocks.
    ///
    /// # Examples
    /// ```
    /// let ch = pcml::BoundedChan::new(1);
    /// assert!(ch.try_send(1).is_ok());
    /// assert!(ch.try_send(2).is_err());
    /// ```
    pub fn try_send(&self, v: T) -> Result<(), TrySendError<T>> {
        let mut st = lock(&self.inner.state);
        if st.buf.len() >= self.inner.cap {
            return Err(TrySendError::Full(v));
        }
        st.push(v);
        Ok(())
    }

    /// Receives the oldest message, blocking while the buffer is empty.
    ///
    /// # Examples
    /// ```
    /// let ch = pcml::BoundedChan::new(1);
    /// ch.send('x');
    /// assert_eq!(ch.recv(), 'x');
    /// ```
    pub fn recv(&self) -> T {
        // Fast path: a message now (one lock, no event). While messages are buffered no
        // receiver is queued, so this cannot pass a blocked receiver.
        now_or_sync(self.try_recv(), || self.recv_evt())
    }

    /// An event enabled while a message is buffered; syncing on it receives the oldest one.
    /// A receive that loses a choice (or whose `.await` is dropped) takes nothing.
    ///
    /// # Examples
    /// ```
    /// let ch: pcml::BoundedChan<i32> = pcml::BoundedChan::new(1);
    /// assert_eq!(pcml::select([ch.recv_evt(), pcml::always(-1)]), -1);
    /// ch.send(5);
    /// assert_eq!(pcml::select([ch.recv_evt(), pcml::never()]), 5);
    /// ```
    pub fn recv_evt(&self) -> Event<T> {
        Event::from_base(RecvEvt {
            ch: self.inner.clone(),
            slot: None,
        })
    }

    /// Receives the oldest message if there is one. Never blocks.
    ///
    /// # Examples
    /// ```
    /// let ch = pcml::BoundedChan::new(2);
    /// assert_eq!(ch.try_recv(), None);
    /// ch.send(1);
    /// assert_eq!(ch.try_recv(), Some(1));
    /// ```
    pub fn try_recv(&self) -> Option<T> {
        lock(&self.inner.state).pop(self.inner.cap)
    }
}

/// The base event of [`BoundedChan::send_evt`].
struct SendEvt<T> {
    ch: Arc<Inner<T>>,
    /// The message, until it is sent or queued in `slot`.
    value: Option<T>,
    /// Our queued offer's slot (holding the message) while blocked.
    slot: Option<Slot<T>>,
}

impl<T: Send + 'static> BaseEvent for SendEvt<T> {
    type Output = ();

    fn poll(&mut self) -> bool {
        lock(&self.ch.state).buf.len() < self.ch.cap
    }

    fn try_do(&mut self) -> Option<()> {
        let mut st = lock(&self.ch.state);
        if st.buf.len() >= self.ch.cap {
            return None;
        }
        // Nothing of this sync is queued yet (commit phase), so any receiver is a partner.
        st.push(
            self.value
                .take()
                .expect("pcml: bounded send without a message"),
        );
        Some(())
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<()> {
        let mut st = lock(&self.ch.state);
        if st.buf.len() >= self.ch.cap {
            self.slot = Some(st.senders.push_offer(me, self.value.take()));
            return Blocked::Waiting;
        }
        // Room: hand the message to a blocked receiver of another sync (Figure 9), or else
        // complete our own sync and buffer it.
        let delivered = st.receivers.match_partner(me, |r, commit| {
            *lock(&r.slot) = self.value.take();
            commit.publish();
        });
        match delivered {
            Matched::Won(()) => return Blocked::Committed(()),
            Matched::SelfSynched => return Blocked::Synched,
            Matched::NoPartner => {}
        }
        match me.synch_self() {
            SelfSynch::Won => {
                // Receivers of our own sync may be queued (a choice of send and receive on
                // this channel); they are dead now, and `push` skips them.
                st.push(
                    self.value
                        .take()
                        .expect("pcml: bounded send without a message"),
                );
                Blocked::Committed(())
            }
            SelfSynch::AlreadySynched => Blocked::Synched,
        }
    }

    fn complete(&mut self) {}

    fn cancel(&mut self) {
        drop_offer(&mut self.slot);
    }
}

/// The base event of [`BoundedChan::recv_evt`].
struct RecvEvt<T> {
    ch: Arc<Inner<T>>,
    /// Our queued offer's slot while blocked.
    slot: Option<Slot<T>>,
}

impl<T: Send + 'static> BaseEvent for RecvEvt<T> {
    type Output = T;

    fn poll(&mut self) -> bool {
        !lock(&self.ch.state).buf.is_empty()
    }

    fn try_do(&mut self) -> Option<T> {
        lock(&self.ch.state).pop(self.ch.cap)
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<T> {
        let mut st = lock(&self.ch.state);
        if !st.buf.is_empty() {
            // Complete our sync first, so that a sender of our own sync queued here is dead
            // before `pop` looks for one to let in.
            return complete_self(me, || {
                st.pop(self.ch.cap).expect("pcml: bounded channel emptied")
            });
        }
        self.slot = Some(st.receivers.push_offer(me, None));
        Blocked::Waiting
    }

    fn complete(&mut self) -> T {
        delivered(
            self.slot
                .as_ref()
                .expect("pcml: bounded recv completed unblocked"),
        )
    }

    fn discard(&mut self, v: T) {
        // Our `.await` was dropped after a message was handed to us: it was the oldest, so it
        // goes back to the front (to a blocked receiver if the buffer is empty). The buffer
        // may hold one message over capacity until the next receive.
        let st = &mut *lock(&self.ch.state);
        give_back(&mut st.buf, &mut st.receivers, v);
    }
}
