//! The errors of channel operations on a closed, empty or full channel, shared by
//! [`Chan`](super::Chan), [`BoundedChan`](crate::BoundedChan), [`Mailbox`](crate::Mailbox) and
//! their [`Sender`](super::Sender) and [`Receiver`](super::Receiver) halves.
//!
//! A send that fails gives its message back inside the error ([`SendError::into_inner`],
//! [`TrySendError::into_inner`]), so nothing is lost. The errors are `Debug` whatever the
//! message type (the message shows as `..`), so `unwrap` works on them for any `T`.

use std::error::Error;
use std::fmt;

/// The error of a receive on a channel that is closed and drained: no message will ever
/// come.
///
/// # Examples
/// ```
/// let (tx, rx) = pcml::chan::channel::<u8>();
/// drop(tx);
/// assert_eq!(rx.recv(), Err(pcml::chan::RecvError));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct RecvError;

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("receiving on a closed and empty channel")
    }
}

impl Error for RecvError {}

/// The error of a send on a closed channel (closed explicitly, or every receiving handle
/// dropped): the message comes back in it.
///
/// # Examples
/// ```
/// let (tx, rx) = pcml::chan::channel();
/// drop(rx);
/// let err = tx.send(String::from("lost?")).unwrap_err();
/// assert_eq!(err.into_inner(), "lost?");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SendError<T>(pub T);

impl<T> SendError<T> {
    /// The message that was not sent.
    ///
    /// # Examples
    /// ```
    /// let err = pcml::chan::SendError(5);
    /// assert_eq!(err.into_inner(), 5);
    /// ```
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError { .. }")
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sending on a closed channel")
    }
}

impl<T> Error for SendError<T> {}

/// The error of a receive that does not wait (`try_recv`).
///
/// # Examples
/// ```
/// use pcml::chan::TryRecvError;
/// let (tx, rx) = pcml::chan::channel::<u8>();
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
/// drop(tx);
/// assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TryRecvError {
    /// No message now; one may come later.
    Empty,
    /// The channel is closed and drained: no message will ever come.
    Disconnected,
}

impl TryRecvError {
    /// Whether the channel was only empty.
    ///
    /// # Examples
    /// ```
    /// assert!(pcml::chan::TryRecvError::Empty.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        matches!(self, TryRecvError::Empty)
    }

    /// Whether the channel is closed and drained.
    ///
    /// # Examples
    /// ```
    /// assert!(pcml::chan::TryRecvError::Disconnected.is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        matches!(self, TryRecvError::Disconnected)
    }
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TryRecvError::Empty => f.write_str("receiving on an empty channel"),
            TryRecvError::Disconnected => RecvError.fmt(f),
        }
    }
}

impl Error for TryRecvError {}

impl From<RecvError> for TryRecvError {
    fn from(_: RecvError) -> Self {
        TryRecvError::Disconnected
    }
}

/// The error of a send that does not wait (`try_send`): the message comes back in it.
///
/// # Examples
/// ```
/// use pcml::chan::TrySendError;
/// let (tx, rx) = pcml::chan::channel();
/// assert_eq!(tx.try_send(2), Err(TrySendError::Full(2))); // no receiver waiting
/// drop(rx);
/// assert_eq!(tx.try_send(3), Err(TrySendError::Disconnected(3)));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum TrySendError<T> {
    /// No room now (a full buffer, or no receiver waiting on a rendezvous channel).
    Full(T),
    /// The channel is closed: no send will ever succeed.
    Disconnected(T),
}

impl<T> TrySendError<T> {
    /// The message that was not sent.
    ///
    /// # Examples
    /// ```
    /// let (tx, _rx) = pcml::chan::channel();
    /// assert_eq!(tx.try_send("b").unwrap_err().into_inner(), "b");
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            TrySendError::Full(v) | TrySendError::Disconnected(v) => v,
        }
    }

    /// Whether there was only no room.
    ///
    /// # Examples
    /// ```
    /// assert!(pcml::chan::TrySendError::Full(()).is_full());
    /// ```
    pub fn is_full(&self) -> bool {
        matches!(self, TrySendError::Full(_))
    }

    /// Whether the channel is closed.
    ///
    /// # Examples
    /// ```
    /// assert!(pcml::chan::TrySendError::Disconnected(()).is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        matches!(self, TrySendError::Disconnected(_))
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("Full(..)"),
            TrySendError::Disconnected(_) => f.write_str("Disconnected(..)"),
        }
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrySendError::Full(_) => f.write_str("sending on a full channel"),
            TrySendError::Disconnected(_) => f.write_str("sending on a closed channel"),
        }
    }
}

impl<T> Error for TrySendError<T> {}

impl<T> From<SendError<T>> for TrySendError<T> {
    fn from(e: SendError<T>) -> Self {
        TrySendError::Disconnected(e.0)
    }
}

/// The error of a receive with a time limit (`recv_timeout`, `recv_deadline`).
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use pcml::chan::RecvTimeoutError;
/// let (tx, rx) = pcml::chan::channel::<u8>();
/// assert_eq!(rx.recv_timeout(Duration::from_millis(1)), Err(RecvTimeoutError::Timeout));
/// drop(tx);
/// assert_eq!(rx.recv_timeout(Duration::from_secs(60)), Err(RecvTimeoutError::Disconnected));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecvTimeoutError {
    /// No message came in time; one may come later.
    Timeout,
    /// The channel is closed and drained: no message will ever come.
    Disconnected,
}

impl RecvTimeoutError {
    /// Whether the time ran out.
    ///
    /// # Examples
    /// ```
    /// assert!(pcml::chan::RecvTimeoutError::Timeout.is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self, RecvTimeoutError::Timeout)
    }

    /// Whether the channel is closed and drained.
    ///
    /// # Examples
    /// ```
    /// assert!(pcml::chan::RecvTimeoutError::Disconnected.is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        matches!(self, RecvTimeoutError::Disconnected)
    }
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecvTimeoutError::Timeout => f.write_str("timed out waiting for a message"),
            RecvTimeoutError::Disconnected => RecvError.fmt(f),
        }
    }
}

impl Error for RecvTimeoutError {}

impl From<RecvError> for RecvTimeoutError {
    fn from(_: RecvError) -> Self {
        RecvTimeoutError::Disconnected
    }
}

/// The error of a send with a time limit (`send_timeout`, `send_deadline`): the message comes
/// back in it.
///
/// # Examples
/// ```
/// use std::time::Duration;
/// use pcml::chan::SendTimeoutError;
/// let (tx, rx) = pcml::chan::bounded(1);
/// tx.send(1).unwrap();
/// let err = tx.send_timeout(2, Duration::from_millis(1)).unwrap_err();
/// assert_eq!(err, SendTimeoutError::Timeout(2));
/// drop(rx);
/// assert_eq!(tx.send_timeout(3, Duration::from_secs(60)), Err(SendTimeoutError::Disconnected(3)));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum SendTimeoutError<T> {
    /// No room (or no receiver) came in time.
    Timeout(T),
    /// The channel is closed: no send will ever succeed.
    Disconnected(T),
}

impl<T> SendTimeoutError<T> {
    /// The message that was not sent.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(pcml::chan::SendTimeoutError::Timeout(4).into_inner(), 4);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            SendTimeoutError::Timeout(v) | SendTimeoutError::Disconnected(v) => v,
        }
    }

    /// Whether the time ran out.
    ///
    /// # Examples
    /// ```
    /// assert!(pcml::chan::SendTimeoutError::Timeout(()).is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(self, SendTimeoutError::Timeout(_))
    }

    /// Whether the channel is closed.
    ///
    /// # Examples
    /// ```
    /// assert!(pcml::chan::SendTimeoutError::Disconnected(()).is_disconnected());
    /// ```
    pub fn is_disconnected(&self) -> bool {
        matches!(self, SendTimeoutError::Disconnected(_))
    }
}

impl<T> fmt::Debug for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendTimeoutError::Timeout(_) => f.write_str("Timeout(..)"),
            SendTimeoutError::Disconnected(_) => f.write_str("Disconnected(..)"),
        }
    }
}

impl<T> fmt::Display for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SendTimeoutError::Timeout(_) => f.write_str("timed out waiting to send"),
            SendTimeoutError::Disconnected(_) => f.write_str("sending on a closed channel"),
        }
    }
}

impl<T> Error for SendTimeoutError<T> {}

impl<T> From<SendError<T>> for SendTimeoutError<T> {
    fn from(e: SendError<T>) -> Self {
        SendTimeoutError::Disconnected(e.0)
    }
}

/// What a channel operation's result looks like to its caller: the both-ends handles' plain
/// `T` and `()` (a closed channel is a panic that says what to use instead), or the halves'
/// `Result`s. The base events and futures are generic over it, so each kind of handle gets the
/// result type it promises at no cost.
pub(crate) trait Mode: Send + Sync + 'static {
    /// A receive's result.
    type Recv<T: Send + 'static>: Send + 'static;
    /// A send's result.
    type Sent<T: Send + 'static>: Send + 'static;
    /// A receive that got `Some(message)`, or `None` on a closed, drained channel.
    fn recv<T: Send + 'static>(got: Option<T>) -> Self::Recv<T>;
    /// A send that left `None` (delivered), or `Some(message)` back from a closed channel.
    fn sent<T: Send + 'static>(left: Option<T>) -> Self::Sent<T>;
    /// The message a receive's result holds, if any.
    fn recv_value<T: Send + 'static>(r: Self::Recv<T>) -> Option<T>;
}

/// The both-ends handles' mode: plain results, a panic on a closed channel.
pub(crate) enum Plain {}

/// The halves' mode: `Result`s.
pub(crate) enum Checked {}

impl Mode for Plain {
    type Recv<T: Send + 'static> = T;
    type Sent<T: Send + 'static> = ();

    #[inline(always)]
    fn recv<T: Send + 'static>(got: Option<T>) -> T {
        match got {
            Some(v) => v,
            None => closed_panic("receive"),
        }
    }

    #[inline(always)]
    fn sent<T: Send + 'static>(left: Option<T>) {
        if left.is_some() {
            closed_panic("send");
        }
    }

    fn recv_value<T: Send + 'static>(r: T) -> Option<T> {
        Some(r)
    }
}

impl Mode for Checked {
    type Recv<T: Send + 'static> = Result<T, RecvError>;
    type Sent<T: Send + 'static> = Result<(), SendError<T>>;

    #[inline(always)]
    fn recv<T: Send + 'static>(got: Option<T>) -> Result<T, RecvError> {
        got.ok_or(RecvError)
    }

    #[inline(always)]
    fn sent<T: Send + 'static>(left: Option<T>) -> Result<(), SendError<T>> {
        match left {
            None => Ok(()),
            Some(v) => Err(SendError(v)),
        }
    }

    fn recv_value<T: Send + 'static>(r: Result<T, RecvError>) -> Option<T> {
        r.ok()
    }
}

/// The panic of a both-ends handle's plain operation on a closed channel.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn closed_panic(what: &str) -> ! {
    panic!(
        "pcml: {what} on a closed channel; a plain send or receive of a both-ends handle \
         cannot report it: use the channel's Sender and Receiver halves (`channel()`, \
         `sender()`, `receiver()`), whose operations return a Result, or `try_recv`"
    )
}
