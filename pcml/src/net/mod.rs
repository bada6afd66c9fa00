//! TCP and UDP sockets whose blocking-looking operations suspend only the calling fiber, with
//! their readiness (and a listener's accept) as events that compose in `choose` with timeouts
//! and channels. The same sockets work from plain OS threads (the operations park the thread)
//! and from async code in pcml tasks or any executor (the `*_async` methods, and `.await` on
//! the events).
//!
//! ```
//! use pcml::net::{TcpListener, TcpStream};
//!
//! pcml::run(|| {
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     let server = pcml::spawn(move || {
//!         let (conn, _) = listener.accept().unwrap();
//!         let mut buf = [0; 64];
//!         let n = conn.read(&mut buf).unwrap();
//!         conn.write_all(&buf[..n]).unwrap(); // echo
//!     });
//!     let client = TcpStream::connect(addr).unwrap();
//!     client.write_all(b"ping").unwrap();
//!     let mut buf = [0; 4];
//!     client.read_exact(&mut buf).unwrap();
//!     assert_eq!(&buf, b"ping");
//!     server.join().unwrap();
//! });
//! ```
//!
//! # Reading in a choice
//! [`TcpStream::read_evt`], [`read_line_evt`](TcpStream::read_line_evt),
//! [`read_until_evt`](TcpStream::read_until_evt) and
//! [`read_exact_evt`](TcpStream::read_exact_evt) are events that yield bytes, not readiness
//! hints: a read with an idle timeout is one `select`, and a line that arrives in pieces is
//! assembled in the stream's buffer while the choice waits, so a partial line never hangs it.
//! Bytes read for an event that lost its choice stay buffered and come first to the stream's
//! next read of any kind.
//!
//! ```
//! use std::time::Duration;
//! use pcml::net::{TcpListener, TcpStream};
//! use pcml::time::timeout_evt;
//!
//! pcml::run(|| {
//!     let l = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
//!     let (b, _) = l.accept().unwrap();
//!     a.write_all(b"half a li").unwrap();
//!     let idle = Duration::from_millis(20);
//!     let line = pcml::select([
//!         b.read_line_evt(1024).wrap(|l| Some(l.unwrap())),
//!         timeout_evt(idle).wrap(|()| None),
//!     ]);
//!     assert_eq!(line, None); // idle: the timeout won, the partial line stays buffered
//!     a.write_all(b"ne\n").unwrap();
//!     assert_eq!(b.read_line_evt(1024).sync().unwrap(), "half a line\n");
//! });
//! ```
//!
//! The `limit` of a line bounds what one peer can make the server buffer. A stream's read
//! events keep the socket open while they exist (dropping the `TcpStream` fails blocked ones).
//!
//! # Async I/O traits
//! [`TcpStream`] (and `&TcpStream`, so one task can read while another writes) implements
//! `futures-io`'s `AsyncRead` and `AsyncWrite`, and with the `tokio` feature tokio's, so
//! codecs, buffered readers, `copy`, hyper and TLS crates run on pcml sockets, in pcml tasks
//! or any executor. One reader and one writer task can wait on a stream at a time. Where a
//! trait method has the name of an inherent one (`write_all`, `shutdown`), the inherent
//! (blocking) one wins a method call: call the trait's by its path
//! (`AsyncWriteExt::write_all(&mut s, buf).await`).
//!
//! # How it works
//! Sockets are `mio`'s, registered with pcml's I/O poller when they are made (see
//! [`crate::io`] for the poller, and why readiness events are hints). Every operation first
//! tries its system call; on `WouldBlock` it clears the direction's readiness and syncs on its
//! readiness event, then tries again. `try_*` methods make one attempt and return the
//! `WouldBlock` error, for use after a readiness event won a choice.
//!
//! A read of a stream that returns fewer bytes than its buffer holds has drained the socket
//! (the poller is edge-triggered), so it clears the read readiness too, unless the peer has
//! closed its side (the end of the stream is then still to be read, and no edge follows it).
//! Async reads (`read_async`, `AsyncRead`) wait for readiness *before* their system call
//! when it is clear, as tokio's do, instead of making a call that fails: a loopback echo
//! server of 64-byte messages made one failing `recvfrom` a round trip before (`strace -c -f`
//! on `examples/echo_load pcml 1 0 200`: 79,938 `recvfrom` calls, 39,838 of them failing,
//! with the load's own; 59,266 and 19,166 after, against tokio's 60,100 and 20,000; today,
//! with a load that reads only what a readiness event announced, 40,151 and 51 against
//! tokio's 40,255 and 155).
//!
//! # Accepting in a choice
//! [`TcpListener::accept_evt`] is a real event, not only a readiness hint: it yields an
//! accepted connection. It accepts only while committing, and a connection that a losing
//! branch accepted (it won the system call, then found its sync completed by another branch) is
//! handed back to the listener's queue, where the next accept takes it first: a choice between
//! accepting and a timeout never drops a connection. So is a connection delivered to an
//! `accept_evt().await` whose future is dropped before it sees it. While accepts are blocked,
//! the I/O driver accepts on their behalf when the listener becomes readable and hands each
//! connection to the first live blocked accept.
//!
//! # Which poller
//! A socket registers, when it is made, with the I/O driver of the runtime whose proc makes it,
//! or with the process-wide driver if an OS thread or another executor makes it; accepted
//! connections register with their listener's. Any thread may then use it. A socket made in a
//! runtime that is later dropped stops getting readiness: its operations then fail with an
//! error saying so instead of blocking forever, so make long-lived sockets where they live.
//!
//! A runtime's sockets are served best by the runtime itself: its idle procs wait for their
//! readiness in `epoll_wait` and run the woken tasks and fibers on the spot (see [`crate::io`],
//! "How it works"), so a server's sockets should be made (bound, accepted) on its procs. A
//! socket of the process-wide driver gets its readiness through that driver's thread and a
//! wake-up of the proc, a hop more per event.
//!
//! # Closing
//! Dropping a socket deregisters it; syncs blocked on its readiness events wake (the events
//! become enabled), and accepts blocked on a dropped listener return an error. A blocked
//! `read` keeps its socket borrowed, so it cannot be dropped under it; to end it from another
//! thread, [`TcpStream::shutdown`] the socket and the read returns end of file.
//!
//! # Invariants
//! - A listener's `pending` connections and blocked accepts change only under its queue lock;
//!   while a live blocked accept is queued, `pending` is served to it before the lock is
//!   released (a connection handed back is followed by a serve).
//! - Lock order: a listener's queue lock, then its readiness lock (`io::readiness`); the driver
//!   never holds a readiness lock while it runs the listener's serve hook.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::{Context, Poll};

mod read;
mod sys;

use crate::event::{BaseEvent, Blocked, Event, OwnWaiter, SelfSynch};
use crate::io::readiness::{self, Registered};
use crate::io::{
    async_io, async_read_stream, blocking_io, poll_io, poll_read_stream, read_stream, ready_evt,
    try_io,
};
use crate::sched::io::{Dir, Driver, closed_error, current_driver, lock};
use crate::sync_var::waiters::{Offers, Slot, deliver, delivered};

/// What an accept yields.
type Accepted = (TcpStream, SocketAddr);

/// Tries each address of `addrs` with `f`, returning the first success or the last error.
fn each_addr<T>(
    addrs: impl ToSocketAddrs,
    mut f: impl FnMut(SocketAddr) -> io::Result<T>,
) -> io::Result<T> {
    let mut last = None;
    for a in addrs.to_socket_addrs()? {
        match f(a) {
            Ok(v) => return Ok(v),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "pcml: the address resolved to no socket address",
        )
    }))
}

fn listener_closed() -> io::Error {
    io::Error::other("pcml: the TcpListener was dropped while this accept waited on it")
}

/// A TCP socket listening for connections.
///
/// Dropping it wakes blocked accepts with an error. Cheap to share by reference: every method
/// takes `&self`, and it is `Send + Sync`.
///
/// # Examples
/// ```
/// use pcml::net::{TcpListener, TcpStream};
///
/// let listener = TcpListener::bind("127.0.0.1:0").unwrap();
/// let addr = listener.local_addr().unwrap();
/// let client = std::thread::spawn(move || TcpStream::connect(addr).unwrap());
/// let (conn, peer) = listener.accept().unwrap(); // on a plain OS thread
/// assert_eq!(peer, client.join().unwrap().local_addr().unwrap());
/// assert_eq!(conn.local_addr().unwrap(), addr);
/// ```
pub struct TcpListener {
    inner: Arc<ListenerInner>,
}

struct ListenerInner {
    io: Registered<mio::net::TcpListener>,
    queue: Mutex<AcceptQueue>,
}

/// Connections accepted but not yet handed out, and the accepts waiting for one.
struct AcceptQueue {
    /// Accepted by a branch that then lost its choice; taken first by the next accept.
    pending: VecDeque<Accepted>,
    /// Blocked `accept_evt` syncs, served first come first served.
    receivers: Offers<io::Result<Accepted>>,
    /// Set once when the `TcpListener` is dropped.
    closed: bool,
}

impl fmt::Debug for TcpListener {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpListener")
            .field("local_addr", &self.local_addr().ok())
            .finish()
    }
}

impl TcpListener {
    /// Binds to `addr` (the first of its addresses that works) and listens, registering the
    /// socket with the calling thread's I/O driver.
    ///
    /// # Errors
    /// As `std::net::TcpListener::bind`, or if the I/O driver cannot be started.
    ///
    /// # Examples
    /// ```
    /// let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// assert_ne!(l.local_addr().unwrap().port(), 0);
    /// ```
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<TcpListener> {
        let l = each_addr(addr, mio::net::TcpListener::bind)?;
        Self::from_mio(l)
    }

    /// Takes over a listening std socket (made non-blocking here).
    ///
    /// # Errors
    /// If the socket cannot be made non-blocking or registered.
    ///
    /// # Examples
    /// ```
    /// let std_l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let addr = std_l.local_addr().unwrap();
    /// let l = pcml::net::TcpListener::from_std(std_l).unwrap();
    /// assert_eq!(l.local_addr().unwrap(), addr);
    /// ```
    pub fn from_std(l: std::net::TcpListener) -> io::Result<TcpListener> {
        l.set_nonblocking(true)?;
        Self::from_mio(mio::net::TcpListener::from_std(l))
    }

    fn from_mio(l: mio::net::TcpListener) -> io::Result<TcpListener> {
        let io = readiness::register(l)?;
        let inner = Arc::new(ListenerInner {
            io,
            queue: Mutex::new(AcceptQueue {
                pending: VecDeque::new(),
                receivers: Offers::new(),
                closed: false,
            }),
        });
        let weak: Weak<ListenerInner> = Arc::downgrade(&inner);
        inner.io.sio().set_on_readable(Box::new(move || {
            if let Some(l) = weak.upgrade() {
                let mut q = lock(&l.queue);
                l.serve(&mut q);
            }
        }));
        Ok(TcpListener { inner })
    }

    /// The local address.
    ///
    /// # Errors
    /// As `std::net::TcpListener::local_addr`.
    ///
    /// # Examples
    /// ```
    /// let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// assert!(l.local_addr().unwrap().ip().is_loopback());
    /// ```
    ///
    /// ```
    /// pcml::run(|| {
    ///     let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
    ///     assert_ne!(l.local_addr().unwrap().port(), 0); // the port the OS chose
    /// });
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.io.source().local_addr()
    }

    /// Accepts a connection, blocking only the calling fiber (or OS thread) until one comes.
    ///
    /// # Errors
    /// As `accept(2)`, or if the listener's runtime shut down.
    ///
    /// # Panics
    /// In a pcml async task: `.await` [`accept_evt`](Self::accept_evt) or use
    /// [`accept_async`](Self::accept_async).
    ///
    /// # Examples
    /// See [`TcpListener`].
    ///
    /// ```
    /// use pcml::net::{TcpListener, TcpStream};
    ///
    /// pcml::run(|| {
    ///     let l = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    ///     let (b, _) = l.accept().unwrap();
    ///     assert_eq!(b.peer_addr().unwrap(), a.local_addr().unwrap());
    /// });
    /// ```
    pub fn accept(&self) -> io::Result<(TcpStream, SocketAddr)> {
        self.accept_evt().sync()
    }

    /// [`accept`](Self::accept) for async code, in pcml tasks or any executor.
    ///
    /// # Errors
    /// As [`accept`](Self::accept).
    ///
    /// # Examples
    /// ```
    /// use pcml::net::{TcpListener, TcpStream};
    ///
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// rt.block_on(async {
    ///     let l = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let addr = l.local_addr().unwrap();
    ///     let c = tokio::task::spawn_blocking(move || TcpStream::connect(addr).unwrap());
    ///     let (_conn, peer) = l.accept_async().await.unwrap();
    ///     assert_eq!(peer, c.await.unwrap().local_addr().unwrap());
    /// });
    /// ```
    pub async fn accept_async(&self) -> io::Result<(TcpStream, SocketAddr)> {
        self.accept_evt().await
    }

    /// An event that accepts a connection: enabled while one is waiting. If it loses a choice
    /// after accepting, the connection goes back to the listener for the next accept (see the
    /// module docs), so nothing is lost.
    ///
    /// # Examples
    /// Accept or time out:
    /// ```
    /// use std::time::Duration;
    /// use pcml::net::{TcpListener, TcpStream};
    ///
    /// pcml::run(|| {
    ///     let l = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     assert!(l.accept_evt().sync_timeout(Duration::from_millis(10)).is_none());
    ///     let _c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    ///     let got = l.accept_evt().sync_timeout(Duration::from_secs(10));
    ///     assert!(got.unwrap().is_ok());
    /// });
    /// ```
    pub fn accept_evt(&self) -> Event<io::Result<(TcpStream, SocketAddr)>> {
        Event::from_base(AcceptEvt {
            l: self.inner.clone(),
            slot: None,
        })
    }

    /// An event enabled when the listener looks readable (a connection may be waiting): a hint,
    /// see [`crate::io`]. Prefer [`accept_evt`](Self::accept_evt).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// assert!(l.readable_evt().sync_timeout(Duration::from_millis(5)).is_none());
    /// ```
    pub fn readable_evt(&self) -> Event<()> {
        ready_evt(self.inner.io.sio(), Dir::Read)
    }
}

impl Drop for TcpListener {
    fn drop(&mut self) {
        self.inner.close();
    }
}

impl ListenerInner {
    fn driver(&self) -> &Arc<Driver> {
        self.io.driver()
    }

    /// The next connection: a handed-back one, or a fresh `accept(2)`. `None` on `WouldBlock`
    /// (readiness cleared). Call with the queue locked.
    fn next_conn(&self, q: &mut AcceptQueue) -> Option<io::Result<Accepted>> {
        if let Some(c) = q.pending.pop_front() {
            return Some(Ok(c));
        }
        loop {
            let r = try_io(&self.io, Dir::Read, |l| l.accept());
            return match r {
                Ok((s, addr)) => Some(TcpStream::register(self.driver(), s).map(|s| (s, addr))),
                // Nothing to accept. If the driver has stopped (its runtime was dropped), no
                // readiness will ever come: fail as every other operation does then.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.io.sio().is_closed().then(|| Err(closed_error()))
                }
                // The peer gave up before we accepted, or a signal: try the next one.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted
                    ) =>
                {
                    continue;
                }
                Err(e) => Some(Err(e)),
            };
        }
    }

    /// Hands connections to blocked accepts while both exist. Queue locked.
    fn serve(&self, q: &mut AcceptQueue) {
        if q.closed {
            while let Some((_, r)) = q.receivers.take_match(None) {
                let _ = deliver(&r, Err(listener_closed()));
            }
            return;
        }
        while let Some((_, r)) = q.receivers.take_match(None) {
            match self.next_conn(q) {
                // Nothing to accept now: put the receiver back at the front and wait for the
                // next readiness event.
                None => {
                    q.receivers.q.push_front(r);
                    return;
                }
                Some(v) => match deliver(&r, v) {
                    Ok(()) => {}
                    // The receiver's sync completed elsewhere meanwhile: keep the connection.
                    Err(Ok(c)) => q.pending.push_front(c),
                    // An accept error for nobody: drop it.
                    Err(Err(_)) => {}
                },
            }
        }
    }

    /// The owner dropped the listener: fail blocked accepts, drop pending connections, wake
    /// readiness waiters.
    fn close(&self) {
        {
            let mut q = lock(&self.queue);
            q.closed = true;
            q.pending.clear();
            self.serve(&mut q);
        }
        self.io.sio().close();
    }
}

/// The base event of [`TcpListener::accept_evt`].
struct AcceptEvt {
    l: Arc<ListenerInner>,
    /// Our queued offer's slot while blocked.
    slot: Option<Slot<io::Result<Accepted>>>,
}

impl BaseEvent for AcceptEvt {
    type Output = io::Result<Accepted>;

    fn poll(&mut self) -> bool {
        let q = lock(&self.l.queue);
        q.closed || !q.pending.is_empty() || self.l.io.sio().is_ready(Dir::Read)
    }

    fn try_do(&mut self) -> Option<io::Result<Accepted>> {
        let mut q = lock(&self.l.queue);
        if q.closed {
            return Some(Err(listener_closed()));
        }
        // Our sync is private during this phase: whatever we accept is ours.
        self.l.next_conn(&mut q)
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<io::Result<Accepted>> {
        let mut q = lock(&self.l.queue);
        if me.is_synched() {
            // An earlier branch already won: do not accept for nothing.
            return Blocked::Synched;
        }
        let v = if q.closed {
            Some(Err(listener_closed()))
        } else {
            self.l.next_conn(&mut q)
        };
        match v {
            Some(v) => match me.synch_self() {
                SelfSynch::Won => Blocked::Committed(v),
                SelfSynch::AlreadySynched => {
                    // We lost after accepting: hand the connection back, to a blocked accept
                    // if there is one.
                    if let Ok(c) = v {
                        q.pending.push_front(c);
                        self.l.serve(&mut q);
                    }
                    Blocked::Synched
                }
            },
            None => {
                self.slot = Some(q.receivers.push_offer(me, None));
                Blocked::Waiting
            }
        }
    }

    fn complete(&mut self) -> io::Result<Accepted> {
        delivered(
            self.slot
                .as_ref()
                .expect("pcml: accept completed without blocking"),
        )
    }

    fn discard(&mut self, out: io::Result<Accepted>) {
        // Our `.await` was dropped after a connection was handed to us: give it back.
        if let Ok(c) = out {
            let mut q = lock(&self.l.queue);
            if !q.closed {
                q.pending.push_front(c);
                self.l.serve(&mut q);
            }
        }
    }

    fn describe(&self) -> String {
        use std::os::fd::AsRawFd;
        let src = self.l.io.source();
        match src.local_addr() {
            Ok(a) => format!("TcpListener::accept_evt on fd {} ({a})", src.as_raw_fd()),
            Err(_) => format!("TcpListener::accept_evt on fd {}", src.as_raw_fd()),
        }
    }
}

/// A TCP connection.
///
/// `read`, `write` and `write_all` block only the calling fiber (or OS thread); `try_read`
/// and `try_write` never block; `read_async`, `write_async` and `write_all_async` are for
/// async code. `std::io::Read` and `Write` are implemented for `TcpStream` and `&TcpStream`
/// with the blocking behaviour. Every method takes `&self`: one fiber may read while another
/// writes.
///
/// # Examples
/// ```
/// use pcml::net::{TcpListener, TcpStream};
///
/// let l = TcpListener::bind("127.0.0.1:0").unwrap();
/// let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
/// let (b, _) = l.accept().unwrap();
/// a.write_all(b"hello").unwrap();
/// let mut buf = [0; 5];
/// b.read_exact(&mut buf).unwrap();
/// assert_eq!(&buf, b"hello");
/// ```
pub struct TcpStream {
    inner: Arc<StreamInner>,
}

/// A stream's registration and its read events' state (shared with those events and the
/// driver's read hook).
struct StreamInner {
    io: Registered<mio::net::TcpStream>,
    /// The read buffer and blocked read events, made by the first read event (see `read`).
    rx: OnceLock<Mutex<read::ReadQueue>>,
    /// Whether `rx` holds buffered bytes, so plain reads skip its lock when it does not.
    /// Written under `rx`'s lock (Release), read before plain reads (Acquire).
    buffered: AtomicBool,
}

impl Drop for TcpStream {
    fn drop(&mut self) {
        // Read events may keep the registration alive: fail the blocked ones now.
        self.inner.close_reads();
    }
}

impl fmt::Debug for TcpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TcpStream")
            .field("local_addr", &self.local_addr().ok())
            .field("peer_addr", &self.peer_addr().ok())
            .finish()
    }
}

/// Whether a connecting socket has connected: `WouldBlock` while in progress.
fn connected(s: &mio::net::TcpStream) -> io::Result<()> {
    if let Some(e) = s.take_error()? {
        return Err(e);
    }
    match s.peer_addr() {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotConnected => Err(io::ErrorKind::WouldBlock.into()),
        Err(e) => Err(e),
    }
}

impl TcpStream {
    /// Bytes a read event read and left buffered come before the socket's.
    #[inline]
    fn take_buffered(&self, buf: &mut [u8]) -> Option<usize> {
        // Acquire: pairs with the Release store in `StreamInner::set_buffered`.
        if self.inner.buffered.load(Ordering::Acquire) {
            self.inner.read_buffered(buf)
        } else {
            None
        }
    }

    /// One attempt of a plain read: buffered bytes first, else one `recv`. Every read calls
    /// it inside `try_io`'s window (after the readiness generation is read). On a stream that
    /// has used read events, the attempt holds the read lock, as the I/O driver's read hook
    /// does while it reads for a queued event (`read::StreamInner::serve`): a hook that took
    /// an event's offer just before its sync was cancelled (a task aborted, whose join has
    /// returned) may still read the socket for it, and the plain read then waits for the
    /// lock and finds those bytes buffered, instead of reading the next ones first or
    /// waiting for a socket that the hook drained. A stream that never used a read event
    /// takes no lock.
    #[inline]
    fn read_once(&self, s: &mio::net::TcpStream, buf: &mut [u8]) -> io::Result<usize> {
        let sio = self.inner.io.sio();
        let len = buf.len();
        match self.inner.rx.get() {
            None => read_stream(sio, len, || sys::recv(s, buf)),
            Some(rx) => self
                .inner
                .read_locked(rx, buf, |b| read_stream(sio, len, || sys::recv(s, b))),
        }
    }

    /// An event that reads: enabled once bytes are available (or end of file, or an error),
    /// it yields up to `max` of them (none at end of file). Unlike
    /// [`readable_evt`](Self::readable_evt) it is never spurious, and if it loses a choice
    /// after reading, the bytes stay buffered for the stream's next read.
    ///
    /// # Examples
    /// Data or an idle timeout, in one select:
    /// ```
    /// use std::time::Duration;
    /// use pcml::net::{TcpListener, TcpStream};
    ///
    /// pcml::run(|| {
    ///     let l = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    ///     let (b, _) = l.accept().unwrap();
    ///     assert!(b.read_evt(4096).sync_timeout(Duration::from_millis(10)).is_none());
    ///     a.write_all(b"data").unwrap();
    ///     let got = b.read_evt(4096).sync_timeout(Duration::from_secs(10));
    ///     assert_eq!(got.unwrap().unwrap(), b"data");
    ///     drop(a);
    ///     assert!(b.read_evt(4096).sync().unwrap().is_empty()); // end of file
    /// });
    /// ```
    pub fn read_evt(&self, max: usize) -> Event<io::Result<Vec<u8>>> {
        read::ReadEvt::event(self, read::Want::Some(max.max(1)))
    }

    /// An event that reads exactly `n` bytes: enabled once they have all arrived.
    ///
    /// # Errors
    /// `UnexpectedEof` if the stream ends first (the bytes that came stay buffered); else as
    /// [`read`](Self::read).
    ///
    /// # Examples
    /// ```
    /// use pcml::net::{TcpListener, TcpStream};
    ///
    /// pcml::run(|| {
    ///     let l = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    ///     let (b, _) = l.accept().unwrap();
    ///     pcml::spawn(move || {
    ///         a.write_all(&[0, 5]).unwrap(); // a length prefix...
    ///         a.write_all(b"hello").unwrap(); // ... then the frame
    ///     });
    ///     let len = b.read_exact_evt(2).sync().unwrap();
    ///     let len = u16::from_be_bytes([len[0], len[1]]) as usize;
    ///     assert_eq!(b.read_exact_evt(len).sync().unwrap(), b"hello");
    /// });
    /// ```
    pub fn read_exact_evt(&self, n: usize) -> Event<io::Result<Vec<u8>>> {
        read::ReadEvt::event(self, read::Want::Exact(n))
    }

    /// An event that reads up to and including `delim`: enabled once it has arrived (or end
    /// of file: then it yields what is left, maybe nothing). At most `limit` bytes: a longer
    /// record is an error, so a peer cannot make the stream buffer without bound.
    ///
    /// # Errors
    /// `InvalidData` if `limit` bytes came without `delim` (they stay buffered: read them with
    /// [`read`](Self::read), or drop the connection); else as [`read`](Self::read).
    ///
    /// # Examples
    /// ```
    /// use pcml::net::{TcpListener, TcpStream};
    ///
    /// pcml::run(|| {
    ///     let l = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    ///     let (b, _) = l.accept().unwrap();
    ///     a.write_all(b"one\0two\0").unwrap();
    ///     assert_eq!(b.read_until_evt(0, 64).sync().unwrap(), b"one\0");
    ///     assert_eq!(b.read_until_evt(0, 64).sync().unwrap(), b"two\0");
    ///     a.write_all(&[b'x'; 100]).unwrap();
    ///     let err = b.read_until_evt(0, 64).sync().unwrap_err();
    ///     assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    /// });
    /// ```
    pub fn read_until_evt(&self, delim: u8, limit: usize) -> Event<io::Result<Vec<u8>>> {
        read::ReadEvt::event(
            self,
            read::Want::Until {
                delim,
                limit: limit.max(1),
            },
        )
    }

    /// An event that reads a line: [`read_until_evt`](Self::read_until_evt) for `b'\n'`,
    /// as text. The line keeps its `\n` (none on an unterminated last line; an empty string
    /// at end of file), like `BufRead::read_line`. See the [module docs](crate::net#reading-in-a-choice)
    /// for an idle timeout.
    ///
    /// # Errors
    /// `InvalidData` if the line is longer than `limit` bytes (they stay buffered) or is not
    /// UTF-8 (it is consumed); else as [`read`](Self::read).
    ///
    /// # Examples
    /// ```
    /// use pcml::net::{TcpListener, TcpStream};
    ///
    /// pcml::run(|| {
    ///     let l = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    ///     let (b, _) = l.accept().unwrap();
    ///     a.write_all(b"hello\nwor").unwrap();
    ///     assert_eq!(b.read_line_evt(80).sync().unwrap(), "hello\n");
    ///     a.write_all(b"ld").unwrap();
    ///     drop(a);
    ///     assert_eq!(b.read_line_evt(80).sync().unwrap(), "world");
    ///     assert_eq!(b.read_line_evt(80).sync().unwrap(), "");
    /// });
    /// ```
    pub fn read_line_evt(&self, limit: usize) -> Event<io::Result<String>> {
        self.read_until_evt(b'\n', limit).wrap(|r| {
            r.and_then(|bytes| {
                String::from_utf8(bytes)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
            })
        })
    }

    fn register(driver: &Arc<Driver>, s: mio::net::TcpStream) -> io::Result<TcpStream> {
        Ok(TcpStream {
            inner: Arc::new(StreamInner {
                io: readiness::register_with(driver, s)?,
                rx: OnceLock::new(),
                buffered: AtomicBool::new(false),
            }),
        })
    }

    fn start_connect(addr: SocketAddr) -> io::Result<TcpStream> {
        let s = mio::net::TcpStream::connect(addr)?;
        Self::register(&current_driver()?, s)
    }

    /// Connects to `addr` (each of its addresses in turn), blocking only the calling fiber (or
    /// OS thread) while the connection is made.
    ///
    /// # Errors
    /// The last address's error (refused, unreachable, ...).
    ///
    /// # Examples
    /// ```
    /// let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let addr = l.local_addr().unwrap();
    /// let peer = pcml::run(move || {
    ///     let s = pcml::net::TcpStream::connect(addr).unwrap();
    ///     s.peer_addr().unwrap()
    /// });
    /// assert_eq!(peer, addr);
    /// ```
    pub fn connect(addr: impl ToSocketAddrs) -> io::Result<TcpStream> {
        each_addr(addr, |a| {
            let s = Self::start_connect(a)?;
            blocking_io(&s.inner.io, Dir::Write, connected)?;
            Ok(s)
        })
    }

    /// [`connect`](Self::connect) for async code, to one address (resolve names beforehand:
    /// name resolution blocks).
    ///
    /// # Errors
    /// As [`connect`](Self::connect).
    ///
    /// # Examples
    /// ```
    /// let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let addr = l.local_addr().unwrap();
    /// let peer = pcml::run(move || {
    ///     pcml::spawn_task(async move {
    ///         let s = pcml::net::TcpStream::connect_async(addr).await.unwrap();
    ///         s.peer_addr().unwrap()
    ///     })
    ///     .join()
    ///     .unwrap()
    /// });
    /// assert_eq!(peer, addr);
    /// ```
    pub async fn connect_async(addr: SocketAddr) -> io::Result<TcpStream> {
        let s = Self::start_connect(addr)?;
        async_io(&s.inner.io, Dir::Write, connected).await?;
        Ok(s)
    }

    /// Takes over a connected std socket (made non-blocking here).
    ///
    /// # Errors
    /// If the socket cannot be made non-blocking or registered.
    ///
    /// # Examples
    /// ```
    /// let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let s = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    /// let s = pcml::net::TcpStream::from_std(s).unwrap();
    /// assert_eq!(s.peer_addr().unwrap(), l.local_addr().unwrap());
    /// ```
    pub fn from_std(s: std::net::TcpStream) -> io::Result<TcpStream> {
        s.set_nonblocking(true)?;
        Self::register(&current_driver()?, mio::net::TcpStream::from_std(s))
    }

    /// The local address.
    ///
    /// # Errors
    /// As `std::net::TcpStream::local_addr`.
    ///
    /// # Examples
    /// See [`TcpListener`].
    ///
    /// ```
    /// use pcml::net::{TcpListener, TcpStream};
    ///
    /// pcml::run(|| {
    ///     let l = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    ///     let (b, _) = l.accept().unwrap();
    ///     assert_eq!(a.local_addr().unwrap(), b.peer_addr().unwrap());
    /// });
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.io.source().local_addr()
    }

    /// The peer's address.
    ///
    /// # Errors
    /// As `std::net::TcpStream::peer_addr`.
    ///
    /// # Examples
    /// See [`connect`](Self::connect).
    ///
    /// ```
    /// use pcml::net::{TcpListener, TcpStream};
    ///
    /// pcml::run(|| {
    ///     let l = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    ///     let (b, _) = l.accept().unwrap();
    ///     assert_eq!(a.peer_addr().unwrap(), l.local_addr().unwrap());
    /// });
    /// ```
    pub fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.io.source().peer_addr()
    }

    /// Shuts down the read half, the write half, or both. A read blocked on this socket in
    /// another thread then returns (end of file once the read half is shut).
    ///
    /// # Errors
    /// As `std::net::TcpStream::shutdown`.
    ///
    /// # Examples
    /// ```
    /// use std::net::Shutdown;
    ///
    /// let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let a = pcml::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    /// let (b, _) = l.accept().unwrap();
    /// a.shutdown(Shutdown::Write).unwrap();
    /// assert_eq!(b.read(&mut [0; 8]).unwrap(), 0); // end of file
    /// ```
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        self.inner.io.source().shutdown(how)
    }

    /// Sets `TCP_NODELAY` (no Nagle delay for small writes).
    ///
    /// # Errors
    /// As `std::net::TcpStream::set_nodelay`.
    ///
    /// # Examples
    /// ```
    /// let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let a = pcml::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    /// a.set_nodelay(true).unwrap();
    /// assert!(a.nodelay().unwrap());
    /// ```
    pub fn set_nodelay(&self, on: bool) -> io::Result<()> {
        self.inner.io.source().set_nodelay(on)
    }

    /// Whether `TCP_NODELAY` is set.
    ///
    /// # Errors
    /// As `std::net::TcpStream::nodelay`.
    ///
    /// # Examples
    /// See [`set_nodelay`](Self::set_nodelay).
    ///
    /// ```
    /// use pcml::net::{TcpListener, TcpStream};
    ///
    /// pcml::run(|| {
    ///     let l = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    ///     let (b, _) = l.accept().unwrap();
    ///     a.set_nodelay(true).unwrap();
    ///     assert!(a.nodelay().unwrap());
    /// });
    /// ```
    pub fn nodelay(&self) -> io::Result<bool> {
        self.inner.io.source().nodelay()
    }

    /// Reads into `buf`, blocking only the calling fiber (or OS thread) until some data, end
    /// of file (`Ok(0)`) or an error.
    ///
    /// # Errors
    /// As `read(2)`, or if the socket's runtime shut down.
    ///
    /// # Panics
    /// In a pcml async task: use [`read_async`](Self::read_async).
    ///
    /// # Examples
    /// See [`shutdown`](Self::shutdown).
    ///
    /// ```
    /// use pcml::net::{TcpListener, TcpStream};
    ///
    /// pcml::run(|| {
    ///     let l = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    ///     let (b, _) = l.accept().unwrap();
    ///     a.write_all(b"hi").unwrap();
    ///     let (mut got, mut buf) = (Vec::new(), [0; 8]);
    ///     while got.len() < 2 {
    ///         let n = b.read(&mut buf).unwrap(); // what has arrived, at least one byte
    ///         got.extend_from_slice(&buf[..n]);
    ///     }
    ///     assert_eq!(got, b"hi");
    /// });
    /// ```
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        blocking_io(&self.inner.io, Dir::Read, |s| self.read_once(s, buf))
    }

    /// Reads exactly `buf.len()` bytes, blocking as [`read`](Self::read).
    ///
    /// # Errors
    /// `UnexpectedEof` if the stream ends first; else as [`read`](Self::read).
    ///
    /// # Examples
    /// See [`TcpStream`].
    ///
    /// ```
    /// use pcml::net::{TcpListener, TcpStream};
    ///
    /// pcml::run(|| {
    ///     let l = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    ///     let (b, _) = l.accept().unwrap();
    ///     a.write_all(b"hello").unwrap();
    ///     let mut buf = [0; 5];
    ///     b.read_exact(&mut buf).unwrap();
    ///     assert_eq!(&buf, b"hello");
    /// });
    /// ```
    pub fn read_exact(&self, buf: &mut [u8]) -> io::Result<()> {
        let mut me = self;
        Read::read_exact(&mut me, buf)
    }

    /// Writes some of `buf`, blocking only the calling fiber (or OS thread) while the send
    /// buffer is full.
    ///
    /// # Errors
    /// As `write(2)`, or if the socket's runtime shut down.
    ///
    /// # Panics
    /// In a pcml async task: use [`write_async`](Self::write_async).
    ///
    /// # Examples
    /// ```
    /// let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let a = pcml::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    /// assert_eq!(a.write(b"abc").unwrap(), 3);
    /// ```
    pub fn write(&self, buf: &[u8]) -> io::Result<usize> {
        blocking_io(&self.inner.io, Dir::Write, |s| sys::send(s, buf))
    }

    /// Writes all of `buf`, blocking as [`write`](Self::write).
    ///
    /// # Errors
    /// As [`write`](Self::write); `WriteZero` if the socket accepts no more.
    ///
    /// # Examples
    /// See [`TcpStream`].
    ///
    /// ```
    /// use pcml::net::{TcpListener, TcpStream};
    ///
    /// pcml::run(|| {
    ///     let l = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    ///     let (b, _) = l.accept().unwrap();
    ///     // More than the socket buffers hold: the writer waits for the reader.
    ///     let writer = pcml::spawn(move || b.write_all(&[7u8; 1 << 20]).unwrap());
    ///     let mut buf = vec![0u8; 1 << 20];
    ///     a.read_exact(&mut buf).unwrap();
    ///     writer.join().unwrap();
    ///     assert!(buf.iter().all(|&x| x == 7));
    /// });
    /// ```
    pub fn write_all(&self, buf: &[u8]) -> io::Result<()> {
        let mut me = self;
        Write::write_all(&mut me, buf)
    }

    /// One non-blocking read: `WouldBlock` if nothing is buffered (and the readable event is
    /// then disabled until data arrives).
    ///
    /// # Errors
    /// As `read(2)`.
    ///
    /// # Examples
    /// ```
    /// let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let a = pcml::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    /// let e = a.try_read(&mut [0; 4]).unwrap_err();
    /// assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
    /// ```
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        try_io(&self.inner.io, Dir::Read, |s| self.read_once(s, buf))
    }

    /// One non-blocking write: `WouldBlock` if the send buffer is full.
    ///
    /// # Errors
    /// As `write(2)`.
    ///
    /// # Examples
    /// ```
    /// let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let a = pcml::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    /// assert_eq!(a.try_write(b"x").unwrap(), 1);
    /// ```
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        try_io(&self.inner.io, Dir::Write, |s| sys::send(s, buf))
    }

    /// [`read`](Self::read) for async code, in pcml tasks or any executor.
    ///
    /// # Errors
    /// As [`read`](Self::read).
    ///
    /// # Examples
    /// ```
    /// let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let a = pcml::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    /// let (b, _) = l.accept().unwrap();
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// let n = rt.block_on(async move {
    ///     b.write_all_async(b"hey").await.unwrap();
    ///     let mut buf = [0; 8];
    ///     a.read_async(&mut buf).await.unwrap()
    /// });
    /// assert!(n > 0);
    /// ```
    pub async fn read_async(&self, buf: &mut [u8]) -> io::Result<usize> {
        // Buffered bytes before any wait for the socket, which they may have drained.
        if let Some(n) = self.take_buffered(buf) {
            return Ok(n);
        }
        async_read_stream(&self.inner.io, |s| self.read_once(s, buf)).await
    }

    /// [`write`](Self::write) for async code.
    ///
    /// # Errors
    /// As [`write`](Self::write).
    ///
    /// # Examples
    /// ```
    /// let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let a = pcml::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    /// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    /// assert_eq!(rt.block_on(a.write_async(b"ab")).unwrap(), 2);
    /// ```
    pub async fn write_async(&self, buf: &[u8]) -> io::Result<usize> {
        async_io(&self.inner.io, Dir::Write, |s| sys::send(s, buf)).await
    }

    /// [`write_all`](Self::write_all) for async code.
    ///
    /// # Errors
    /// As [`write_all`](Self::write_all).
    ///
    /// # Examples
    /// See [`read_async`](Self::read_async).
    ///
    /// ```
    /// use pcml::net::{TcpListener, TcpStream};
    ///
    /// pcml::run(|| {
    ///     let l = TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    ///     let (b, _) = l.accept().unwrap();
    ///     pcml::spawn_task(async move { b.write_all_async(b"ping").await.unwrap() })
    ///         .join()
    ///         .unwrap();
    ///     let mut buf = [0; 4];
    ///     a.read_exact(&mut buf).unwrap();
    ///     assert_eq!(&buf, b"ping");
    /// });
    /// ```
    pub async fn write_all_async(&self, mut buf: &[u8]) -> io::Result<()> {
        while !buf.is_empty() {
            match self.write_async(buf).await? {
                0 => return Err(io::ErrorKind::WriteZero.into()),
                n => buf = &buf[n..],
            }
        }
        Ok(())
    }

    /// An event enabled when the stream looks readable (data, end of file, or an error): a
    /// hint, see [`crate::io`]. Follow it with [`try_read`](Self::try_read).
    ///
    /// # Examples
    /// Data or a timeout, whichever comes first:
    /// ```
    /// use std::time::Duration;
    /// use pcml::select;
    /// use pcml::time::timeout_evt;
    ///
    /// pcml::run(|| {
    ///     let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
    ///     let a = pcml::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    ///     let (b, _) = l.accept().unwrap();
    ///     let idle = select([
    ///         a.readable_evt().wrap(|()| false),
    ///         timeout_evt(Duration::from_millis(10)).wrap(|()| true),
    ///     ]);
    ///     assert!(idle);
    ///     b.write_all(b"x").unwrap();
    ///     a.readable_evt().sync();
    ///     assert_eq!(a.try_read(&mut [0; 4]).unwrap(), 1);
    /// });
    /// ```
    pub fn readable_evt(&self) -> Event<()> {
        ready_evt(self.inner.io.sio(), Dir::Read)
    }

    /// An event enabled when the stream looks writable (room in the send buffer, or an error).
    ///
    /// # Examples
    /// ```
    /// let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
    /// let a = pcml::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    /// a.writable_evt().sync();
    /// assert_eq!(a.try_write(b"ok").unwrap(), 2);
    /// ```
    pub fn writable_evt(&self) -> Event<()> {
        ready_evt(self.inner.io.sio(), Dir::Write)
    }
}

/// Blocking reads, as [`TcpStream::read`].
impl Read for &TcpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        TcpStream::read(self, buf)
    }
}

/// Blocking writes, as [`TcpStream::write`].
impl Write for &TcpStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        TcpStream::write(self, buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Blocking reads, as [`TcpStream::read`].
impl Read for TcpStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        TcpStream::read(self, buf)
    }
}

/// Blocking writes, as [`TcpStream::write`].
impl Write for TcpStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        TcpStream::write(self, buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The poll-style operations behind the async I/O traits: one reader and one writer task may
/// be parked at a time (a second task polling the same direction replaces the first's wake-up,
/// as in tokio's sockets).
impl TcpStream {
    fn poll_read_buf(&self, cx: &mut Context<'_>, buf: &mut [u8]) -> Poll<io::Result<usize>> {
        // Buffered bytes before any wait for the socket, which they may have drained.
        if let Some(n) = self.take_buffered(buf) {
            return Poll::Ready(Ok(n));
        }
        poll_read_stream(&self.inner.io, cx, |s| self.read_once(s, buf))
    }

    fn poll_write_buf(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        poll_io(&self.inner.io, Dir::Write, cx, |s| sys::send(s, buf))
    }

    fn poll_write_bufs(
        &self,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        poll_io(&self.inner.io, Dir::Write, cx, |s| sys::writev(s, bufs))
    }

    /// Shuts the write half (`poll_close`/`poll_shutdown`): the peer reads end of file.
    fn poll_shutdown_write(&self) -> Poll<io::Result<()>> {
        match self.shutdown(Shutdown::Write) {
            // Already shut, or the peer reset the connection: nothing left to close.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Poll::Ready(Ok(())),
            r => Poll::Ready(r),
        }
    }
}

/// `futures`' async reads, for codecs, `BufReader`, `copy` and every crate written against
/// `futures-io`; in pcml tasks or any executor.
///
/// # Examples
/// ```
/// use futures_io::{AsyncRead, AsyncWrite};
/// use std::pin::Pin;
/// use pcml::net::{TcpListener, TcpStream};
///
/// let l = TcpListener::bind("127.0.0.1:0").unwrap();
/// let addr = l.local_addr().unwrap();
/// let got = pcml::run(move || {
///     pcml::spawn_task(async move {
///         let mut a = TcpStream::connect_async(addr).await.unwrap();
///         let (mut b, _) = l.accept_async().await.unwrap();
///         std::future::poll_fn(|cx| Pin::new(&mut a).poll_write(cx, b"hi")).await.unwrap();
///         let mut buf = [0; 2];
///         let n = std::future::poll_fn(|cx| Pin::new(&mut b).poll_read(cx, &mut buf))
///             .await
///             .unwrap();
///         buf[..n].to_vec()
///     })
///     .join()
///     .unwrap()
/// });
/// assert_eq!(got, b"hi");
/// ```
impl futures_io::AsyncRead for TcpStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_read_buf(cx, buf)
    }
}

/// As for `TcpStream`: a reader task and a writer task can share one stream by reference.
impl futures_io::AsyncRead for &TcpStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_read_buf(cx, buf)
    }
}

/// `futures`' async writes; `poll_flush` has nothing to do (writes go straight to the
/// socket), `poll_close` shuts the write half.
impl futures_io::AsyncWrite for TcpStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_buf(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_bufs(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_shutdown_write()
    }
}

/// As for `TcpStream`.
impl futures_io::AsyncWrite for &TcpStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_buf(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_bufs(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_shutdown_write()
    }
}

/// tokio's `ReadBuf` read through a pcml stream, into its unfilled part without zeroing it.
#[cfg(feature = "tokio")]
fn poll_read_tokio(
    s: &TcpStream,
    cx: &mut Context<'_>,
    buf: &mut tokio::io::ReadBuf<'_>,
) -> Poll<io::Result<()>> {
    // SAFETY: the slice is only written: by `read(2)` (through mio's `read`, which passes it
    // to the kernel) or by a copy from the read buffer, never read; `assume_init` and
    // `advance` below cover exactly the bytes written.
    let dst =
        unsafe { &mut *(buf.unfilled_mut() as *mut [std::mem::MaybeUninit<u8>] as *mut [u8]) };
    let n = match s.poll_read_buf(cx, dst) {
        Poll::Ready(Ok(n)) => n,
        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
        Poll::Pending => return Poll::Pending,
    };
    // SAFETY: the first `n` unfilled bytes were just written.
    unsafe { buf.assume_init(n) };
    buf.advance(n);
    Poll::Ready(Ok(()))
}

/// tokio's async reads (with the `tokio` feature): tokio's codecs, `tokio::io::copy`, and
/// crates written against tokio's traits run on pcml sockets.
///
/// # Examples
/// ```
/// # #[cfg(feature = "tokio")] {
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
/// use pcml::net::{TcpListener, TcpStream};
///
/// let l = TcpListener::bind("127.0.0.1:0").unwrap();
/// let addr = l.local_addr().unwrap();
/// let got = pcml::run(move || {
///     pcml::spawn_task(async move {
///         let mut a = TcpStream::connect_async(addr).await.unwrap();
///         let (mut b, _) = l.accept_async().await.unwrap();
///         // The trait's method by its path: `TcpStream::write_all` is the blocking one.
///         AsyncWriteExt::write_all(&mut a, b"tokio traits").await.unwrap();
///         AsyncWriteExt::shutdown(&mut a).await.unwrap(); // b then reads end of file
///         let mut got = String::new();
///         b.read_to_string(&mut got).await.unwrap();
///         got
///     })
///     .join()
///     .unwrap()
/// });
/// assert_eq!(got, "tokio traits");
/// # }
/// ```
#[cfg(feature = "tokio")]
impl tokio::io::AsyncRead for TcpStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        poll_read_tokio(&self, cx, buf)
    }
}

/// As for `TcpStream`.
#[cfg(feature = "tokio")]
impl tokio::io::AsyncRead for &TcpStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        poll_read_tokio(&self, cx, buf)
    }
}

/// tokio's async writes (with the `tokio` feature); `poll_shutdown` shuts the write half.
#[cfg(feature = "tokio")]
impl tokio::io::AsyncWrite for TcpStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_buf(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_bufs(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_shutdown_write()
    }
}

/// As for `TcpStream`.
#[cfg(feature = "tokio")]
impl tokio::io::AsyncWrite for &TcpStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_buf(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_bufs(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_shutdown_write()
    }
}

/// A UDP socket.
///
/// # Examples
/// ```
/// use pcml::net::UdpSocket;
///
/// let a = UdpSocket::bind("127.0.0.1:0").unwrap();
/// let b = UdpSocket::bind("127.0.0.1:0").unwrap();
/// a.send_to(b"hi", b.local_addr().unwrap()).unwrap();
/// let mut buf = [0; 8];
/// let (n, from) = b.recv_from(&mut buf).unwrap();
/// assert_eq!((&buf[..n], from), (&b"hi"[..], a.local_addr().unwrap()));
/// ```
pub struct UdpSocket {
    io: Registered<mio::net::UdpSocket>,
}

impl fmt::Debug for UdpSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UdpSocket")
            .field("local_addr", &self.local_addr().ok())
            .finish()
    }
}

impl UdpSocket {
    /// Binds to `addr` (the first of its addresses that works).
    ///
    /// # Errors
    /// As `std::net::UdpSocket::bind`, or if the I/O driver cannot be started.
    ///
    /// # Examples
    /// See [`UdpSocket`].
    ///
    /// ```
    /// pcml::run(|| {
    ///     let s = pcml::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    ///     assert!(s.local_addr().unwrap().ip().is_loopback());
    /// });
    /// ```
    pub fn bind(addr: impl ToSocketAddrs) -> io::Result<UdpSocket> {
        let s = each_addr(addr, mio::net::UdpSocket::bind)?;
        Ok(UdpSocket {
            io: readiness::register(s)?,
        })
    }

    /// Takes over a std socket (made non-blocking here).
    ///
    /// # Errors
    /// If the socket cannot be made non-blocking or registered.
    ///
    /// # Examples
    /// ```
    /// let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    /// let addr = s.local_addr().unwrap();
    /// assert_eq!(pcml::net::UdpSocket::from_std(s).unwrap().local_addr().unwrap(), addr);
    /// ```
    pub fn from_std(s: std::net::UdpSocket) -> io::Result<UdpSocket> {
        s.set_nonblocking(true)?;
        Ok(UdpSocket {
            io: readiness::register(mio::net::UdpSocket::from_std(s))?,
        })
    }

    /// The local address.
    ///
    /// # Errors
    /// As `std::net::UdpSocket::local_addr`.
    ///
    /// # Examples
    /// See [`UdpSocket`].
    ///
    /// ```
    /// pcml::run(|| {
    ///     let s = pcml::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    ///     assert_ne!(s.local_addr().unwrap().port(), 0);
    /// });
    /// ```
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.io.source().local_addr()
    }

    /// Sets the default peer for [`send`](Self::send) and the only source
    /// [`recv`](Self::recv) accepts.
    ///
    /// # Errors
    /// As `connect(2)`.
    ///
    /// # Examples
    /// ```
    /// use pcml::net::UdpSocket;
    ///
    /// let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    /// let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    /// a.connect(b.local_addr().unwrap()).unwrap();
    /// b.connect(a.local_addr().unwrap()).unwrap();
    /// a.send(b"1").unwrap();
    /// let mut buf = [0; 1];
    /// assert_eq!(b.recv(&mut buf).unwrap(), 1);
    /// ```
    pub fn connect(&self, addr: SocketAddr) -> io::Result<()> {
        self.io.source().connect(addr)
    }

    /// Sends a datagram to `target`, blocking only the calling fiber (or OS thread) while the
    /// send buffer is full.
    ///
    /// # Errors
    /// As `sendto(2)`.
    ///
    /// # Panics
    /// In a pcml async task: use [`send_to_async`](Self::send_to_async).
    ///
    /// # Examples
    /// See [`UdpSocket`].
    ///
    /// ```
    /// use pcml::net::UdpSocket;
    ///
    /// pcml::run(|| {
    ///     let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    ///     let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    ///     a.send_to(b"hi", b.local_addr().unwrap()).unwrap();
    ///     let mut buf = [0; 8];
    ///     let (n, from) = b.recv_from(&mut buf).unwrap();
    ///     assert_eq!((&buf[..n], from), (&b"hi"[..], a.local_addr().unwrap()));
    /// });
    /// ```
    pub fn send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        blocking_io(&self.io, Dir::Write, |s| s.send_to(buf, target))
    }

    /// Receives a datagram, blocking only the calling fiber (or OS thread) until one comes.
    ///
    /// # Errors
    /// As `recvfrom(2)`.
    ///
    /// # Panics
    /// In a pcml async task: use [`recv_from_async`](Self::recv_from_async).
    ///
    /// # Examples
    /// See [`UdpSocket`].
    ///
    /// ```
    /// use pcml::net::UdpSocket;
    ///
    /// pcml::run(|| {
    ///     let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    ///     let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    ///     a.send_to(b"hi", b.local_addr().unwrap()).unwrap();
    ///     let mut buf = [0; 8];
    ///     let (n, from) = b.recv_from(&mut buf).unwrap();
    ///     assert_eq!((&buf[..n], from), (&b"hi"[..], a.local_addr().unwrap()));
    /// });
    /// ```
    pub fn recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        blocking_io(&self.io, Dir::Read, |s| s.recv_from(buf))
    }

    /// Sends to the connected peer (see [`connect`](Self::connect)).
    ///
    /// # Errors
    /// As `send(2)`.
    ///
    /// # Examples
    /// See [`connect`](Self::connect).
    ///
    /// ```
    /// use pcml::net::UdpSocket;
    ///
    /// pcml::run(|| {
    ///     let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    ///     let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    ///     a.connect(b.local_addr().unwrap()).unwrap();
    ///     b.connect(a.local_addr().unwrap()).unwrap();
    ///     a.send(b"hi").unwrap();
    ///     let mut buf = [0; 8];
    ///     let n = b.recv(&mut buf).unwrap();
    ///     assert_eq!(&buf[..n], b"hi");
    /// });
    /// ```
    pub fn send(&self, buf: &[u8]) -> io::Result<usize> {
        blocking_io(&self.io, Dir::Write, |s| s.send(buf))
    }

    /// Receives from the connected peer (see [`connect`](Self::connect)).
    ///
    /// # Errors
    /// As `recv(2)`.
    ///
    /// # Examples
    /// See [`connect`](Self::connect).
    ///
    /// ```
    /// use pcml::net::UdpSocket;
    ///
    /// pcml::run(|| {
    ///     let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    ///     let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    ///     a.connect(b.local_addr().unwrap()).unwrap();
    ///     b.connect(a.local_addr().unwrap()).unwrap();
    ///     b.send(b"yo").unwrap();
    ///     let mut buf = [0; 8];
    ///     let n = a.recv(&mut buf).unwrap();
    ///     assert_eq!(&buf[..n], b"yo");
    /// });
    /// ```
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        blocking_io(&self.io, Dir::Read, |s| s.recv(buf))
    }

    /// One non-blocking receive: `WouldBlock` if no datagram is queued.
    ///
    /// # Errors
    /// As `recvfrom(2)`.
    ///
    /// # Examples
    /// ```
    /// let a = pcml::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    /// let e = a.try_recv_from(&mut [0; 8]).unwrap_err();
    /// assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
    /// ```
    pub fn try_recv_from(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        try_io(&self.io, Dir::Read, |s| s.recv_from(buf))
    }

    /// One non-blocking send: `WouldBlock` if the send buffer is full.
    ///
    /// # Errors
    /// As `sendto(2)`.
    ///
    /// # Examples
    /// ```
    /// let a = pcml::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    /// assert_eq!(a.try_send_to(b"x", a.local_addr().unwrap()).unwrap(), 1);
    /// ```
    pub fn try_send_to(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        try_io(&self.io, Dir::Write, |s| s.send_to(buf, target))
    }

    /// [`send_to`](Self::send_to) for async code.
    ///
    /// # Errors
    /// As [`send_to`](Self::send_to).
    ///
    /// # Examples
    /// See [`recv_from_async`](Self::recv_from_async).
    ///
    /// ```
    /// use pcml::net::UdpSocket;
    ///
    /// pcml::run(|| {
    ///     let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    ///     let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    ///     let to = b.local_addr().unwrap();
    ///     pcml::spawn_task(async move { a.send_to_async(b"hi", to).await.unwrap() })
    ///         .join()
    ///         .unwrap();
    ///     let mut buf = [0; 8];
    ///     let (n, _) = b.recv_from(&mut buf).unwrap();
    ///     assert_eq!(&buf[..n], b"hi");
    /// });
    /// ```
    pub async fn send_to_async(&self, buf: &[u8], target: SocketAddr) -> io::Result<usize> {
        async_io(&self.io, Dir::Write, |s| s.send_to(buf, target)).await
    }

    /// [`recv_from`](Self::recv_from) for async code.
    ///
    /// # Errors
    /// As [`recv_from`](Self::recv_from).
    ///
    /// # Examples
    /// ```
    /// use pcml::net::UdpSocket;
    ///
    /// let got = pcml::run(|| {
    ///     pcml::spawn_task(async {
    ///         let a = UdpSocket::bind("127.0.0.1:0").unwrap();
    ///         let b = UdpSocket::bind("127.0.0.1:0").unwrap();
    ///         a.send_to_async(b"dgram", b.local_addr().unwrap()).await.unwrap();
    ///         let mut buf = [0; 16];
    ///         let (n, _) = b.recv_from_async(&mut buf).await.unwrap();
    ///         buf[..n].to_vec()
    ///     })
    ///     .join()
    ///     .unwrap()
    /// });
    /// assert_eq!(got, b"dgram");
    /// ```
    pub async fn recv_from_async(&self, buf: &mut [u8]) -> io::Result<(usize, SocketAddr)> {
        async_io(&self.io, Dir::Read, |s| s.recv_from(buf)).await
    }

    /// An event enabled when a datagram looks available: a hint (see [`crate::io`]); follow it
    /// with [`try_recv_from`](Self::try_recv_from).
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    ///
    /// let a = pcml::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    /// assert!(a.readable_evt().sync_timeout(Duration::from_millis(5)).is_none());
    /// a.send_to(b"me", a.local_addr().unwrap()).unwrap();
    /// a.readable_evt().sync();
    /// assert_eq!(a.try_recv_from(&mut [0; 4]).unwrap().0, 2);
    /// ```
    pub fn readable_evt(&self) -> Event<()> {
        ready_evt(self.io.sio(), Dir::Read)
    }

    /// An event enabled when a datagram can likely be sent.
    ///
    /// # Examples
    /// ```
    /// let a = pcml::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    /// a.writable_evt().sync();
    /// ```
    pub fn writable_evt(&self) -> Event<()> {
        ready_evt(self.io.sio(), Dir::Write)
    }
}
