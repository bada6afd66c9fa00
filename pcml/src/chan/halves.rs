//! [`Sender`] and [`Receiver`]: the halves of a channel, whose operations return `Result`s, as
//! crossbeam-channel's and tokio's do. See the [module docs](super) for when a channel closes.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::bounded::{self, BoundedChan};
use crate::event::{Event, SyncFuture, select};
use crate::loom::sync::Arc;
use crate::mailbox::{self, Mailbox};
use crate::time::at_time_evt;

use super::handles::Kind;
use super::{
    ChanInner, Checked, InlineRecv, InlineSend, Mode, RecvError, RecvFuture, RecvTimeoutError,
    SendError, SendEvt, SendFuture, SendTimeoutError, TryRecvError, TrySendError,
};

/// Makes a rendezvous channel and returns its two halves: a send and a receive meet, and the
/// message passes, in one step (a [`Chan`](super::Chan) split in two).
///
/// The channel closes when every [`Sender`] or every [`Receiver`] is dropped (or on
/// [`Sender::close`] / [`Receiver::close`]): receivers then get [`RecvError`], senders get
/// their message back in a [`SendError`], and whoever was blocked wakes.
///
/// # Examples
/// The worker-pool idiom: workers take jobs until the channel closes.
/// ```
/// let (jobs, rx) = pcml::chan::channel::<u32>();
/// let (done, results) = pcml::chan::channel::<u32>();
/// pcml::run(move || {
///     for _ in 0..3 {
///         let (rx, done) = (rx.clone(), done.clone());
///         pcml::spawn(move || {
///             for job in &rx {
///                 done.send(job * 2).unwrap();
///             }
///         });
///     }
///     drop((rx, done)); // only the workers hold these now
///     pcml::spawn(move || {
///         for j in 1..=10 {
///             jobs.send(j).unwrap();
///         }
///         // `jobs` dropped: the workers' loops end, then so does the results loop below.
///     });
///     assert_eq!(results.iter().sum::<u32>(), 110);
/// });
/// ```
pub fn channel<T: Send + 'static>() -> (Sender<T>, Receiver<T>) {
    super::Chan::new().split()
}

/// Makes a channel with a buffer of `capacity` messages (a [`BoundedChan`]) and returns its
/// two halves: a send waits while the buffer is full. Capacity 0 is a rendezvous channel, as
/// [`channel()`] makes (which is faster at it).
///
/// # Examples
/// ```
/// let (tx, rx) = pcml::chan::bounded(2);
/// tx.send(1).unwrap();
/// tx.send(2).unwrap();
/// assert!(tx.is_full());
/// drop(tx);
/// assert_eq!(rx.iter().collect::<Vec<_>>(), [1, 2]);
/// ```
pub fn bounded<T: Send + 'static>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    BoundedChan::new(capacity).split()
}

/// Makes an unbounded channel (a [`Mailbox`]) and returns its two halves: a send never
/// waits.
///
/// # Examples
/// ```
/// let (tx, rx) = pcml::chan::unbounded();
/// for i in 0..1000 {
///     tx.send(i).unwrap(); // never blocks
/// }
/// drop(tx);
/// assert_eq!(rx.iter().count(), 1000);
/// ```
pub fn unbounded<T: Send + 'static>() -> (Sender<T>, Receiver<T>) {
    Mailbox::new().split()
}

/// The channel behind a half.
enum Flavor<T> {
    /// A rendezvous channel.
    Zero(Arc<ChanInner<T>>),
    /// A bounded buffered channel.
    Bounded(Arc<bounded::Inner<T>>),
    /// An unbounded channel (a mailbox).
    Unbounded(std::sync::Arc<mailbox::Inner<T>>),
}

impl<T> Flavor<T> {
    /// Closes the channel; whether this call closed it.
    fn close(&self) -> bool {
        match self {
            Flavor::Zero(ch) => ch.close(),
            Flavor::Bounded(ch) => ch.close(),
            Flavor::Unbounded(mb) => mb.close(),
        }
    }

    /// Whether the channel is closed.
    fn is_closed(&self) -> bool {
        match self {
            Flavor::Zero(ch) => ch.is_closed(),
            Flavor::Bounded(ch) => ch.is_closed(),
            Flavor::Unbounded(mb) => mb.is_closed(),
        }
    }

    /// How many messages are buffered (always 0 on a rendezvous channel).
    fn len(&self) -> usize {
        match self {
            Flavor::Zero(_) => 0,
            Flavor::Bounded(ch) => ch.len(),
            Flavor::Unbounded(mb) => mb.len(),
        }
    }

    /// Whether the buffer is full (always on a rendezvous channel, never on an unbounded one).
    fn is_full(&self) -> bool {
        match self {
            Flavor::Zero(_) => true,
            Flavor::Bounded(ch) => ch.len() >= ch.cap(),
            Flavor::Unbounded(_) => false,
        }
    }

    /// The buffer's capacity: `Some(0)` for a rendezvous channel, `None` for an unbounded one.
    fn capacity(&self) -> Option<usize> {
        match self {
            Flavor::Zero(_) => Some(0),
            Flavor::Bounded(ch) => Some(ch.cap()),
            Flavor::Unbounded(_) => None,
        }
    }

    /// Whether both are the same channel.
    fn same_channel(&self, other: &Flavor<T>) -> bool {
        match (self, other) {
            (Flavor::Zero(a), Flavor::Zero(b)) => Arc::ptr_eq(a, b),
            (Flavor::Bounded(a), Flavor::Bounded(b)) => Arc::ptr_eq(a, b),
            (Flavor::Unbounded(a), Flavor::Unbounded(b)) => std::sync::Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// The sending half of a channel: its operations return `Result`s, giving the message back
/// if the channel is closed. Cheap to clone; the channel closes when the last `Sender` is
/// dropped and no both-ends handle is left.
///
/// # Examples
/// ```
/// let (tx, rx) = pcml::chan::channel();
/// let t = std::thread::spawn(move || rx.recv());
/// tx.send(1).unwrap();
/// assert_eq!(t.join().unwrap(), Ok(1));
/// assert_eq!(tx.send(2), Err(pcml::chan::SendError(2))); // the receiver is gone
/// ```
pub struct Sender<T> {
    flavor: Flavor<T>,
}

/// The receiving half of a channel: its operations return `Result`s, reporting a closed,
/// drained channel as [`RecvError`]. Cheap to clone (every clone competes for the same
/// messages); iterate it with `for msg in &rx`.
///
/// # Examples
/// ```
/// let (tx, rx) = pcml::chan::channel();
/// std::thread::spawn(move || {
///     for i in 0..3 {
///         tx.send(i).unwrap();
///     }
/// });
/// assert_eq!(rx.iter().collect::<Vec<_>>(), [0, 1, 2]);
/// ```
pub struct Receiver<T> {
    flavor: Flavor<T>,
}

impl<T> Sender<T> {
    /// A sender of a rendezvous channel whose sending count already includes it.
    pub(super) fn from_chan(ch: Arc<ChanInner<T>>) -> Self {
        Sender {
            flavor: Flavor::Zero(ch),
        }
    }

    /// A sender of a bounded channel whose sending count already includes it.
    pub(crate) fn from_bounded(ch: Arc<bounded::Inner<T>>) -> Self {
        Sender {
            flavor: Flavor::Bounded(ch),
        }
    }

    /// A sender of a mailbox whose sending count already includes it.
    pub(crate) fn from_mailbox(mb: std::sync::Arc<mailbox::Inner<T>>) -> Self {
        Sender {
            flavor: Flavor::Unbounded(mb),
        }
    }
}

impl<T> Receiver<T> {
    /// A receiver of a rendezvous channel whose receiving count already includes it.
    pub(super) fn from_chan(ch: Arc<ChanInner<T>>) -> Self {
        Receiver {
            flavor: Flavor::Zero(ch),
        }
    }

    /// A receiver of a bounded channel whose receiving count already includes it.
    pub(crate) fn from_bounded(ch: Arc<bounded::Inner<T>>) -> Self {
        Receiver {
            flavor: Flavor::Bounded(ch),
        }
    }

    /// A receiver of a mailbox whose receiving count already includes it.
    pub(crate) fn from_mailbox(mb: std::sync::Arc<mailbox::Inner<T>>) -> Self {
        Receiver {
            flavor: Flavor::Unbounded(mb),
        }
    }
}

impl<T: Send + 'static> Sender<T> {
    /// Sends `msg`, blocking until a receiver takes it (or, on a buffered channel, until
    /// there is room). On a closed channel it returns the message in the error, and a send
    /// blocked when the channel closes wakes with it.
    ///
    /// # Panics
    /// If it would block inside a pcml async task (use [`send_async`](Self::send_async)).
    ///
    /// # Examples
    /// ```
    /// let (tx, rx) = pcml::chan::channel();
    /// std::thread::spawn(move || drop(rx));
    /// // Blocks until the receiver takes it or is dropped.
    /// assert_eq!(tx.send(1), Err(pcml::chan::SendError(1)));
    /// ```
    pub fn send(&self, msg: T) -> Result<(), SendError<T>> {
        match &self.flavor {
            Flavor::Zero(ch) => {
                let left = ch.direct(
                    super::Side::Recv,
                    super::Side::Send,
                    Some(msg),
                    "send",
                    std::ptr::from_ref(ch).addr(),
                );
                Checked::sent(left)
            }
            Flavor::Bounded(ch) => bounded::Inner::send::<Checked>(ch, msg),
            Flavor::Unbounded(mb) => mb.push(msg).map_err(SendError),
        }
    }

    /// Sends `msg`, waiting at most `timeout` for a receiver (or room); on timeout or on a
    /// closed channel the message comes back in the error.
    ///
    /// # Panics
    /// If it would block inside a pcml async task.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// use pcml::chan::SendTimeoutError;
    /// let (tx, _rx) = pcml::chan::channel();
    /// // Nobody receives: the message comes back.
    /// assert_eq!(tx.send_timeout(1, Duration::from_millis(5)), Err(SendTimeoutError::Timeout(1)));
    /// ```
    pub fn send_timeout(&self, msg: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        match Instant::now().checked_add(timeout) {
            Some(at) => self.send_deadline(msg, at),
            // Too far to be represented: no deadline.
            None => self.send(msg).map_err(SendTimeoutError::from),
        }
    }

    /// Sends `msg`, waiting until `deadline` at most (see [`send_timeout`](Self::send_timeout)).
    ///
    /// # Panics
    /// If it would block inside a pcml async task.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    /// let (tx, rx) = pcml::chan::bounded(1);
    /// let t = std::thread::spawn(move || rx.recv());
    /// assert_eq!(tx.send_deadline(7, Instant::now() + Duration::from_secs(60)), Ok(()));
    /// assert_eq!(t.join().unwrap(), Ok(7));
    /// ```
    pub fn send_deadline(&self, msg: T, deadline: Instant) -> Result<(), SendTimeoutError<T>> {
        let msg = match self.try_send(msg) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Disconnected(m)) => return Err(SendTimeoutError::Disconnected(m)),
            Err(TrySendError::Full(m)) => m,
        };
        let back: super::Back<T> = Default::default();
        let send = match &self.flavor {
            Flavor::Zero(ch) => {
                Event::from_direct_base(SendEvt::<T, Checked>::with_back(ch, msg, back.clone()))
            }
            Flavor::Bounded(ch) => {
                bounded::Inner::send_evt_with_back::<Checked>(ch, msg, back.clone())
            }
            // Never full: `try_send` sent it or found the channel closed.
            Flavor::Unbounded(mb) => mailbox::Inner::send_evt::<Checked>(mb, msg),
        };
        let timed_out = select([
            send.wrap(|r| r.map_err(SendTimeoutError::from).map(|()| false)),
            at_time_evt(deadline).wrap(|()| Ok(true)),
        ])?;
        if !timed_out {
            return Ok(());
        }
        // The send lost: its event, dropped with the choice, left the message in `back`.
        let m = back.lock().unwrap_or_else(|e| e.into_inner()).take();
        Err(SendTimeoutError::Timeout(
            m.expect("pcml: a send that timed out lost its message"),
        ))
    }

    /// Sends `msg` only if that needs no wait now.
    ///
    /// # Examples
    /// ```
    /// use pcml::chan::TrySendError;
    /// let (tx, rx) = pcml::chan::channel();
    /// assert_eq!(tx.try_send(1), Err(TrySendError::Full(1))); // no receiver waiting
    /// drop(rx);
    /// assert_eq!(tx.try_send(1), Err(TrySendError::Disconnected(1)));
    /// ```
    pub fn try_send(&self, msg: T) -> Result<(), TrySendError<T>> {
        match &self.flavor {
            Flavor::Zero(ch) => ch.try_send(msg),
            Flavor::Bounded(ch) => ch.try_send(msg),
            Flavor::Unbounded(mb) => mb.push(msg).map_err(TrySendError::Disconnected),
        }
    }

    /// The event of sending `msg`: enabled when a receiver is waiting (or there is room),
    /// and also when the channel is closed, carrying the message back in the error. If it
    /// loses a choice, the message is dropped.
    ///
    /// # Examples
    /// ```
    /// let (tx, rx) = pcml::chan::channel();
    /// drop(rx);
    /// let r = pcml::select([tx.send_evt(5), pcml::never()]);
    /// assert_eq!(r, Err(pcml::chan::SendError(5)));
    /// ```
    pub fn send_evt(&self, msg: T) -> Event<Result<(), SendError<T>>> {
        match &self.flavor {
            Flavor::Zero(ch) => Event::from_inline(InlineSend::<T, Checked>::new(ch, msg)),
            Flavor::Bounded(ch) => bounded::Inner::send_evt::<Checked>(ch, msg),
            Flavor::Unbounded(mb) => mailbox::Inner::send_evt::<Checked>(mb, msg),
        }
    }

    /// Sends `msg` from async code (any executor): the same as `self.send_evt(msg).await`,
    /// and cheaper, but not an event.
    ///
    /// # Examples
    /// ```
    /// pcml::run(|| {
    ///     let (tx, rx) = pcml::chan::channel();
    ///     pcml::spawn(move || rx.recv().unwrap());
    ///     let h = pcml::spawn_task(async move { tx.send_async(3).await });
    ///     assert_eq!(h.join().unwrap(), Ok(()));
    /// });
    /// ```
    pub fn send_async(&self, msg: T) -> SendFut<'_, T> {
        match &self.flavor {
            Flavor::Zero(ch) => SendFut {
                inner: SendFutInner::Zero(SendFuture {
                    wait: None,
                    ch,
                    msg: Some(msg),
                    done: false,
                }),
            },
            Flavor::Bounded(ch) => SendFut {
                inner: SendFutInner::Event(
                    bounded::Inner::send_evt::<Checked>(ch, msg).into_future(),
                ),
            },
            Flavor::Unbounded(mb) => SendFut {
                inner: SendFutInner::Ready(Some(mb.push(msg).map_err(SendError))),
            },
        }
    }
}

impl<T> Sender<T> {
    /// Closes the channel (see [`Chan::close`](super::Chan::close)); whether this call closed
    /// it. Messages already buffered can still be received.
    ///
    /// # Examples
    /// ```
    /// let (tx, rx) = pcml::chan::channel::<u8>();
    /// tx.close();
    /// assert!(rx.is_closed());
    /// ```
    pub fn close(&self) -> bool {
        self.flavor.close()
    }

    /// Whether the channel is closed.
    ///
    /// # Examples
    /// ```
    /// let (tx, rx) = pcml::chan::channel::<u8>();
    /// assert!(!tx.is_closed());
    /// drop(rx);
    /// assert!(tx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.flavor.is_closed()
    }

    /// How many messages are buffered (always 0 on a rendezvous channel).
    ///
    /// # Examples
    /// ```
    /// let (tx, _rx) = pcml::chan::channel::<u8>();
    /// assert_eq!(tx.len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.flavor.len()
    }

    /// Whether no message is buffered (always true on a rendezvous channel).
    ///
    /// # Examples
    /// ```
    /// let (tx, _rx) = pcml::chan::channel::<u8>();
    /// assert!(tx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the buffer is full (always true on a rendezvous channel, whose every send
    /// waits for a receiver; never on an unbounded one).
    ///
    /// # Examples
    /// ```
    /// let (tx, _rx) = pcml::chan::channel::<u8>();
    /// assert!(tx.is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        self.flavor.is_full()
    }

    /// The buffer's capacity: `Some(0)` for a rendezvous channel, `None` for an unbounded
    /// one.
    ///
    /// # Examples
    /// ```
    /// let (tx, _rx) = pcml::chan::channel::<u8>();
    /// assert_eq!(tx.capacity(), Some(0));
    /// ```
    pub fn capacity(&self) -> Option<usize> {
        self.flavor.capacity()
    }

    /// Whether `self` and `other` send on the same channel.
    ///
    /// # Examples
    /// ```
    /// let (tx, _rx) = pcml::chan::channel::<u8>();
    /// assert!(tx.same_channel(&tx.clone()));
    /// ```
    pub fn same_channel(&self, other: &Sender<T>) -> bool {
        self.flavor.same_channel(&other.flavor)
    }
}

impl<T: Send + 'static> Receiver<T> {
    /// Receives a message, blocking until one comes; [`RecvError`] once the channel is closed
    /// and drained (a receive blocked when the channel closes wakes with it).
    ///
    /// # Panics
    /// If it would block inside a pcml async task (use [`recv_async`](Self::recv_async)).
    ///
    /// # Examples
    /// ```
    /// let (tx, rx) = pcml::chan::channel();
    /// std::thread::spawn(move || tx.send(7).unwrap());
    /// assert_eq!(rx.recv(), Ok(7));
    /// assert_eq!(rx.recv(), Err(pcml::chan::RecvError));
    /// ```
    pub fn recv(&self) -> Result<T, RecvError> {
        match &self.flavor {
            Flavor::Zero(ch) => {
                let handle = std::ptr::from_ref(ch).addr();
                Checked::recv(ch.direct(super::Side::Send, super::Side::Recv, None, "recv", handle))
            }
            Flavor::Bounded(ch) => bounded::Inner::recv::<Checked>(ch),
            Flavor::Unbounded(mb) => mailbox::Inner::recv::<Checked>(mb),
        }
    }

    /// Receives a message only if that needs no wait now.
    ///
    /// # Examples
    /// ```
    /// use pcml::chan::TryRecvError;
    /// let (tx, rx) = pcml::chan::channel::<u8>();
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
    /// drop(tx);
    /// assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
    /// ```
    pub fn try_recv(&self) -> Result<T, TryRecvError> {
        match &self.flavor {
            Flavor::Zero(ch) => ch.try_recv(),
            Flavor::Bounded(ch) => ch.try_recv(),
            Flavor::Unbounded(mb) => mb.try_pop(),
        }
    }

    /// Receives a message, waiting at most `timeout`.
    ///
    /// # Panics
    /// If it would block inside a pcml async task.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let (tx, rx) = pcml::chan::channel();
    /// std::thread::spawn(move || tx.send(1).unwrap());
    /// assert_eq!(rx.recv_timeout(Duration::from_secs(60)), Ok(1));
    /// ```
    pub fn recv_timeout(&self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        match Instant::now().checked_add(timeout) {
            Some(at) => self.recv_deadline(at),
            // Too far to be represented: no deadline.
            None => self.recv().map_err(RecvTimeoutError::from),
        }
    }

    /// Receives a message, waiting until `deadline` at most.
    ///
    /// # Panics
    /// If it would block inside a pcml async task.
    ///
    /// # Examples
    /// ```
    /// use std::time::{Duration, Instant};
    /// use pcml::chan::RecvTimeoutError;
    /// let (_tx, rx) = pcml::chan::channel::<u8>();
    /// let at = Instant::now() + Duration::from_millis(5);
    /// assert_eq!(rx.recv_deadline(at), Err(RecvTimeoutError::Timeout));
    /// assert!(Instant::now() >= at);
    /// ```
    pub fn recv_deadline(&self, deadline: Instant) -> Result<T, RecvTimeoutError> {
        match self.try_recv() {
            Ok(v) => return Ok(v),
            Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
            Err(TryRecvError::Empty) => {}
        }
        select([
            self.recv_evt().wrap(|r| r.map_err(RecvTimeoutError::from)),
            at_time_evt(deadline).wrap(|()| Err(RecvTimeoutError::Timeout)),
        ])
    }

    /// The event of receiving a message: enabled when a message can be taken, and also when
    /// the channel is closed and drained, carrying [`RecvError`], so a choice sees the close.
    ///
    /// # Examples
    /// ```
    /// let (tx, rx) = pcml::chan::channel::<u8>();
    /// drop(tx);
    /// assert_eq!(pcml::select([rx.recv_evt(), pcml::never()]), Err(pcml::chan::RecvError));
    /// ```
    pub fn recv_evt(&self) -> Event<Result<T, RecvError>> {
        match &self.flavor {
            Flavor::Zero(ch) => Event::from_inline(InlineRecv::<T, Checked>::new(ch)),
            Flavor::Bounded(ch) => bounded::Inner::recv_evt::<Checked>(ch),
            Flavor::Unbounded(mb) => mailbox::Inner::recv_evt::<Checked>(mb),
        }
    }

    /// Receives a message from async code (any executor): the same as
    /// `self.recv_evt().await`, and cheaper, but not an event.
    ///
    /// # Examples
    /// ```
    /// pcml::run(|| {
    ///     let (tx, rx) = pcml::chan::channel();
    ///     pcml::spawn(move || tx.send("hi").unwrap());
    ///     let h = pcml::spawn_task(async move { (rx.recv_async().await, rx.recv_async().await) });
    ///     assert_eq!(h.join().unwrap(), (Ok("hi"), Err(pcml::chan::RecvError)));
    /// });
    /// ```
    pub fn recv_async(&self) -> RecvFut<'_, T> {
        match &self.flavor {
            Flavor::Zero(ch) => RecvFut {
                inner: RecvFutInner::Zero(RecvFuture {
                    wait: None,
                    ch,
                    done: false,
                }),
            },
            Flavor::Bounded(ch) => RecvFut {
                inner: RecvFutInner::Event(bounded::Inner::recv_evt::<Checked>(ch).into_future()),
            },
            Flavor::Unbounded(mb) => RecvFut {
                inner: RecvFutInner::Event(mailbox::Inner::recv_evt::<Checked>(mb).into_future()),
            },
        }
    }

    /// A blocking iterator over the messages: it ends when the channel is closed and drained.
    ///
    /// # Examples
    /// ```
    /// let (tx, rx) = pcml::chan::channel();
    /// std::thread::spawn(move || (0..4).for_each(|i| tx.send(i).unwrap()));
    /// assert_eq!(rx.iter().sum::<i32>(), 6);
    /// ```
    pub fn iter(&self) -> Iter<'_, T> {
        Iter { rx: self }
    }

    /// An iterator over the messages available now: it ends when a receive would wait, or
    /// when the channel is closed and drained.
    ///
    /// # Examples
    /// ```
    /// let (tx, rx) = pcml::chan::channel::<u8>();
    /// assert_eq!(rx.try_iter().count(), 0);
    /// # drop(tx);
    /// ```
    pub fn try_iter(&self) -> TryIter<'_, T> {
        TryIter { rx: self }
    }

    /// A [`Stream`](futures_core::Stream) of the messages of a clone of this receiver: it
    /// ends when the channel is closed and drained.
    ///
    /// # Examples
    /// ```
    /// use futures_core::Stream;
    /// use std::pin::Pin;
    /// use std::task::{Context, Poll, Waker};
    ///
    /// let (tx, rx) = pcml::chan::channel::<u8>();
    /// let mut s = rx.stream();
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(Pin::new(&mut s).poll_next(&mut cx).is_pending());
    /// assert_eq!(tx.try_send(4), Ok(())); // the pending stream's receive takes it
    /// assert_eq!(Pin::new(&mut s).poll_next(&mut cx), Poll::Ready(Some(4)));
    /// drop(tx);
    /// assert_eq!(Pin::new(&mut s).poll_next(&mut cx), Poll::Ready(None));
    /// ```
    pub fn stream(&self) -> RecvStream<T> {
        self.clone().into_stream()
    }

    /// This receiver as a [`Stream`](futures_core::Stream) of its messages: it ends when the
    /// channel is closed and drained.
    ///
    /// # Examples
    /// ```
    /// let (tx, rx) = pcml::chan::channel::<u8>();
    /// let s = rx.into_stream();
    /// # drop((tx, s));
    /// ```
    pub fn into_stream(self) -> RecvStream<T> {
        RecvStream {
            rx: self,
            pending: None,
            ended: false,
        }
    }
}

impl<T> Receiver<T> {
    /// Closes the channel (see [`Chan::close`](super::Chan::close)); whether this call closed
    /// it. Messages already buffered can still be received.
    ///
    /// # Examples
    /// ```
    /// let (tx, rx) = pcml::chan::channel::<u8>();
    /// rx.close();
    /// assert_eq!(tx.send(1), Err(pcml::chan::SendError(1)));
    /// ```
    pub fn close(&self) -> bool {
        self.flavor.close()
    }

    /// Whether the channel is closed (messages may still be buffered).
    ///
    /// # Examples
    /// ```
    /// let (tx, rx) = pcml::chan::channel::<u8>();
    /// drop(tx);
    /// assert!(rx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.flavor.is_closed()
    }

    /// How many messages are buffered (always 0 on a rendezvous channel).
    ///
    /// # Examples
    /// ```
    /// let (_tx, rx) = pcml::chan::channel::<u8>();
    /// assert_eq!(rx.len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.flavor.len()
    }

    /// Whether no message is buffered.
    ///
    /// # Examples
    /// ```
    /// let (_tx, rx) = pcml::chan::channel::<u8>();
    /// assert!(rx.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the buffer is full (always true on a rendezvous channel; never on an
    /// unbounded one).
    ///
    /// # Examples
    /// ```
    /// let (_tx, rx) = pcml::chan::channel::<u8>();
    /// assert!(rx.is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        self.flavor.is_full()
    }

    /// The buffer's capacity: `Some(0)` for a rendezvous channel, `None` for an unbounded
    /// one.
    ///
    /// # Examples
    /// ```
    /// let (_tx, rx) = pcml::chan::channel::<u8>();
    /// assert_eq!(rx.capacity(), Some(0));
    /// ```
    pub fn capacity(&self) -> Option<usize> {
        self.flavor.capacity()
    }

    /// Whether `self` and `other` receive from the same channel.
    ///
    /// # Examples
    /// ```
    /// let (_tx, rx) = pcml::chan::channel::<u8>();
    /// assert!(rx.same_channel(&rx.clone()));
    /// ```
    pub fn same_channel(&self, other: &Receiver<T>) -> bool {
        self.flavor.same_channel(&other.flavor)
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        match &self.flavor {
            Flavor::Zero(ch) => {
                ch.add_handle(Kind::Sender);
                Sender::from_chan(ch.clone())
            }
            Flavor::Bounded(ch) => {
                ch.add_handle(Kind::Sender);
                Sender::from_bounded(ch.clone())
            }
            Flavor::Unbounded(mb) => {
                mb.add_handle(Kind::Sender);
                Sender::from_mailbox(mb.clone())
            }
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        match &self.flavor {
            Flavor::Zero(ch) => ch.drop_handle(Kind::Sender),
            Flavor::Bounded(ch) => ch.drop_handle(Kind::Sender),
            Flavor::Unbounded(mb) => mb.drop_handle(Kind::Sender),
        }
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        match &self.flavor {
            Flavor::Zero(ch) => {
                ch.add_handle(Kind::Receiver);
                Receiver::from_chan(ch.clone())
            }
            Flavor::Bounded(ch) => {
                ch.add_handle(Kind::Receiver);
                Receiver::from_bounded(ch.clone())
            }
            Flavor::Unbounded(mb) => {
                mb.add_handle(Kind::Receiver);
                Receiver::from_mailbox(mb.clone())
            }
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        match &self.flavor {
            Flavor::Zero(ch) => ch.drop_handle(Kind::Receiver),
            Flavor::Bounded(ch) => ch.drop_handle(Kind::Receiver),
            Flavor::Unbounded(mb) => mb.drop_handle(Kind::Receiver),
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sender")
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Receiver")
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

/// The future of [`Sender::send_async`].
///
/// # Examples
/// ```
/// let (tx, rx) = pcml::chan::bounded(1);
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(async { tx.send_async(1).await.unwrap() });
/// assert_eq!(rx.try_recv(), Ok(1));
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct SendFut<'a, T> {
    inner: SendFutInner<'a, T>,
}

enum SendFutInner<'a, T> {
    Zero(SendFuture<'a, T>),
    /// A mailbox's send, done when the future was made (it never waits).
    Ready(Option<Result<(), SendError<T>>>),
    Event(SyncFuture<Result<(), SendError<T>>>),
}

// The message is never pinned: the future moves it into the channel or back out.
impl<T> Unpin for SendFut<'_, T> {}

impl<T: Send + 'static> Future for SendFut<'_, T> {
    type Output = Result<(), SendError<T>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().inner {
            SendFutInner::Zero(f) => f.poll_raw(cx).map(Checked::sent),
            SendFutInner::Ready(r) => {
                Poll::Ready(r.take().expect("pcml: SendFut polled after completion"))
            }
            SendFutInner::Event(f) => Pin::new(f).poll(cx),
        }
    }
}

impl<T> fmt::Debug for SendFut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendFut").finish_non_exhaustive()
    }
}

/// The future of [`Receiver::recv_async`].
///
/// # Examples
/// ```
/// let (tx, rx) = pcml::chan::unbounded();
/// tx.send(5).unwrap();
/// drop(tx);
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// rt.block_on(async {
///     assert_eq!(rx.recv_async().await, Ok(5));
///     assert_eq!(rx.recv_async().await, Err(pcml::chan::RecvError));
/// });
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct RecvFut<'a, T> {
    inner: RecvFutInner<'a, T>,
}

enum RecvFutInner<'a, T> {
    Zero(RecvFuture<'a, T>),
    Event(SyncFuture<Result<T, RecvError>>),
}

impl<T: Send + 'static> Future for RecvFut<'_, T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().inner {
            RecvFutInner::Zero(f) => f.poll_raw(cx).map(Checked::recv),
            RecvFutInner::Event(f) => Pin::new(f).poll(cx),
        }
    }
}

impl<T> fmt::Debug for RecvFut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvFut").finish_non_exhaustive()
    }
}

/// A blocking iterator over a [`Receiver`]'s messages ([`Receiver::iter`]); it ends when the
/// channel is closed and drained.
///
/// # Examples
/// ```
/// let (tx, rx) = pcml::chan::bounded(4);
/// (1..=3).for_each(|i| tx.send(i).unwrap());
/// drop(tx);
/// let mut it = rx.iter();
/// assert_eq!((it.next(), it.next(), it.next(), it.next()), (Some(1), Some(2), Some(3), None));
/// ```
pub struct Iter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T: Send + 'static> Iterator for Iter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

impl<T> fmt::Debug for Iter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter").finish_non_exhaustive()
    }
}

/// An iterator over the messages a [`Receiver`] has now ([`Receiver::try_iter`]).
///
/// # Examples
/// ```
/// let (tx, rx) = pcml::chan::unbounded();
/// tx.send(1).unwrap();
/// tx.send(2).unwrap();
/// assert_eq!(rx.try_iter().collect::<Vec<_>>(), [1, 2]); // the sender is still alive
/// ```
pub struct TryIter<'a, T> {
    rx: &'a Receiver<T>,
}

impl<T: Send + 'static> Iterator for TryIter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

impl<T> fmt::Debug for TryIter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TryIter").finish_non_exhaustive()
    }
}

/// A blocking iterator that owns its [`Receiver`] (`for msg in rx`).
///
/// # Examples
/// ```
/// let (tx, rx) = pcml::chan::unbounded();
/// tx.send("a").unwrap();
/// drop(tx);
/// let t = std::thread::spawn(move || rx.into_iter().collect::<Vec<_>>());
/// assert_eq!(t.join().unwrap(), ["a"]);
/// ```
pub struct IntoIter<T> {
    rx: Receiver<T>,
}

impl<T: Send + 'static> Iterator for IntoIter<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.rx.recv().ok()
    }
}

impl<T> fmt::Debug for IntoIter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntoIter").finish_non_exhaustive()
    }
}

impl<'a, T: Send + 'static> IntoIterator for &'a Receiver<T> {
    type Item = T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T: Send + 'static> IntoIterator for Receiver<T> {
    type Item = T;
    type IntoIter = IntoIter<T>;

    fn into_iter(self) -> IntoIter<T> {
        IntoIter { rx: self }
    }
}

/// A [`Receiver`] as a [`Stream`](futures_core::Stream) ([`Receiver::into_stream`]): each
/// item is a receive event's `.await`. Dropping it while an item is pending withdraws the
/// receive, as dropping that `.await` does. It ends when the channel is closed and drained.
///
/// # Examples
/// ```
/// use futures_core::Stream;
/// use std::pin::Pin;
///
/// let (tx, rx) = pcml::chan::bounded(2);
/// tx.send(1).unwrap();
/// drop(tx);
/// let mut s = rx.into_stream();
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let next = |s: &mut pcml::chan::RecvStream<i32>| {
///     rt.block_on(std::future::poll_fn(|cx| Pin::new(&mut *s).poll_next(cx)))
/// };
/// assert_eq!(next(&mut s), Some(1));
/// assert_eq!(next(&mut s), None);
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct RecvStream<T> {
    rx: Receiver<T>,
    /// The receive in progress, if a poll left one pending.
    pending: Option<SyncFuture<Result<T, RecvError>>>,
    /// Set once the channel was found closed and drained.
    ended: bool,
}

impl<T: Send + 'static> futures_core::Stream for RecvStream<T> {
    type Item = T;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self.get_mut();
        if this.ended {
            return Poll::Ready(None);
        }
        let fut = this
            .pending
            .get_or_insert_with(|| std::future::IntoFuture::into_future(this.rx.recv_evt()));
        match Pin::new(fut).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(r) => {
                this.pending = None;
                this.ended = r.is_err();
                Poll::Ready(r.ok())
            }
        }
    }
}

impl<T: Send + 'static> futures_core::FusedStream for RecvStream<T> {
    fn is_terminated(&self) -> bool {
        self.ended
    }
}

impl<T> fmt::Debug for RecvStream<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvStream")
            .field("pending", &self.pending.is_some())
            .field("ended", &self.ended)
            .finish()
    }
}
