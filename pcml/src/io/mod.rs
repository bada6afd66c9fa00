//! I/O readiness as events: any file descriptor's readable and writable states as
//! [`Event`]s that compose in `choose` with timeouts and channels, and operations that block
//! only the calling fiber (Morrisett and Tolmach's section 4.4 asks that I/O never block a proc; here it
//! does not, and is first class in CML's style).
//!
//! [`Async`] wraps a non-blocking file descriptor (a pipe end, a terminal, an `eventfd`, a
//! socket made elsewhere) and registers it with pcml's I/O poller; [`Async::readable_evt`] and
//! [`Async::writable_evt`] are events enabled when the poller reports it ready, and
//! [`Async::read_with`]/[`Async::write_with`] run a non-blocking operation, waiting for
//! readiness whenever it says `WouldBlock`. Sockets have their own types in [`crate::net`],
//! built the same way.
//!
//! ```
//! use std::io::{Read, Write};
//! use std::os::unix::net::UnixStream;
//! use pcml::io::Async;
//!
//! let (a, mut b) = UnixStream::pair().unwrap();
//! a.set_nonblocking(true).unwrap();
//! let a = Async::new(a).unwrap();
//! b.write_all(b"hi").unwrap();
//! a.readable_evt().sync(); // works on a plain OS thread, a fiber, or with `.await`
//! let mut buf = [0; 2];
//! let n = a.read_with(|mut s| s.read(&mut buf)).unwrap();
//! assert_eq!(&buf[..n], b"hi");
//! ```
//!
//! # How it works
//! Each runtime has one `mio` poller (epoll), made with the first registration on one of the
//! runtime's procs and closed when the runtime is dropped. The procs poll it themselves, as
//! tokio's workers do: an idle proc sleeps in `epoll_wait` (one at a time; the others sleep
//! on their futexes), so readiness wakes it from the kernel and the tasks and fibers it wakes
//! run on it with no hand-off; a spinning proc looks without blocking, and a busy one every
//! 32nd turn; only one thread polls at a time, and it wakes whoever the events concern. A
//! thread of the driver looks too, but only when no proc has for a while (every proc busy in
//! one long turn). An event reaches its descriptor's state through the epoll token, which
//! holds the address of the registration, as tokio's does: no table lookup, lock or
//! reference count per event (the registration's memory is freed only once no event
//! collected before its deregistration can still name it). The tasks one `epoll_wait` wakes
//! go on the polling proc's queue in one batch, each ready to run, and idle procs are told
//! once; they may take half of such a batch at once, without the grace they give other
//! queued work (see `sched`): each task of it waited on its own descriptor, so none has a
//! partner on the polling proc to stay beside (a 2-proc echo server spent 30% of its CPU
//! time in that grace). Descriptors registered outside any runtime (plain OS threads,
//! tokio tasks, `spawn_blocking` jobs) use one process-wide driver instead, whose thread
//! blocks in `epoll_wait`, like the timers of such threads. A descriptor is
//! registered edge-triggered; per direction it has a readiness flag, set by the driver when the
//! kernel reports an edge and cleared by an operation that sees `WouldBlock`, and a queue of
//! blocked syncs. A readiness event's `poll` reads the flag; its `block` enqueues the sync
//! unless the flag is set (checked under the same lock, so no edge is lost); the driver commits
//! queued syncs through the event protocol, so a readiness event that loses a choice is simply
//! skipped and swept, never woken twice. Deadlock detection treats a runtime with registered
//! descriptors as never deadlocked, since the outside world may wake it.
//!
//! The async operations (`read_with_async`, `write_with_async`, and the sockets' `read_async`,
//! `write_async`, `send_to_async`, `recv_from_async`, `connect_async`) skip the event protocol
//! when they wait: as tokio's sockets do, the task parks its waker in a slot of the direction
//! (one lock, nothing allocated) and the driver wakes it with the next edge. One task holds
//! the slot at a time; another task waiting on the same direction meanwhile (two readers of
//! one UDP socket, say) waits through the queue, so every waiter is woken. A loopback echo
//! server of 100 connections (`examples/echo_load pcml 1 0 N`, callgrind, difference of
//! N = 200 and 400 round trips per client) spent 2,120 instructions per round trip polling its
//! tasks when they waited through readiness events, 885 with the slot.
//!
//! What a round trip costs such a server now: one read, which never fails (a short read
//! clears the readiness, so the next read waits for the next edge), one write, and a wait in
//! `epoll_wait` every 4 to 8 round trips, as tokio's sockets make (`perf` counts of each
//! system call by thread, 100 connections of 64-byte messages on 1 and 2 procs); about 88%
//! of the server thread's CPU time is then the kernel's loopback TCP. Its proc sleeps less
//! often than tokio's (0.006 to 0.010 context switches a round trip on 1 proc against 0.027
//! to 0.075), since an idle proc spins, looking at the poller, before it sleeps, so the
//! clients' writes seldom have to wake it.
//!
//! # Readiness is a hint
//! A readiness event means "the last operation may now make progress": it can be spurious (the
//! data was read by someone else, or an event for a closed descriptor arrived late), and it
//! stays enabled until an operation sees `WouldBlock`. After syncing on one, use a
//! non-blocking operation (`read_with`, or `try_read` on sockets) and wait again on
//! `WouldBlock`. A descriptor that hung up or failed is ready in both directions for good, so
//! that the operation that follows reports end of file or the error.
//!
//! # Reading in a choice
//! The events here are readiness hints: a read is not a commit that can be undone, so an event
//! that reads must keep the bytes it consumed for a branch that lost. [`crate::net::TcpStream`]
//! does (its `read_evt`, `read_line_evt`, `read_until_evt` and `read_exact_evt` keep a read
//! buffer); with `Async`, use `readable_evt` in the choice and read in the branch's body.
//! [`crate::net::TcpListener::accept_evt`] likewise hands an accepted connection back to the
//! listener when it loses, so no connection is ever dropped.
//!
//! # Invariants
//! - See `readiness` for the readiness state's; here: every operation takes the direction's generation
//!   before its system call and clears readiness with it, so an edge that arrives during the
//!   call keeps the flag set.

use std::fmt;
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use mio::event::Source;
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

use crate::event::{BaseEvent, Blocked, Event, OwnWaiter};
use crate::sched::io::{Dir, closed_error};
use crate::sync_var::waiters::complete_self;

pub(crate) mod readiness;

use readiness::{Park, Registered, ScheduledIo};

/// The base event of every readiness event: enabled while its source's direction is ready.
struct ReadyEvt {
    sio: Arc<ScheduledIo>,
    dir: Dir,
}

impl BaseEvent for ReadyEvt {
    type Output = ();

    fn poll(&mut self) -> bool {
        self.sio.is_ready(self.dir)
    }

    fn try_do(&mut self) -> Option<()> {
        self.poll().then_some(())
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<()> {
        if me.is_synched() {
            return Blocked::Synched;
        }
        if self.sio.enqueue_unless_ready(self.dir, me.waiter()) {
            return Blocked::Waiting;
        }
        complete_self(me, || ())
    }

    fn complete(&mut self) {}
}

/// The readiness event of `dir` on `sio`.
pub(crate) fn ready_evt(sio: &Arc<ScheduledIo>, dir: Dir) -> Event<()> {
    Event::from_base(ReadyEvt {
        sio: sio.clone(),
        dir,
    })
}

/// Runs `f` once; on `WouldBlock` clears `dir`'s readiness (unless an edge arrived meanwhile).
pub(crate) fn try_io<S: Source, R>(
    reg: &Registered<S>,
    dir: Dir,
    f: impl FnOnce(&S) -> io::Result<R>,
) -> io::Result<R> {
    let generation = reg.sio().generation(dir);
    let r = f(reg.source());
    if matches!(&r, Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
        reg.sio().clear_ready(dir, generation);
    }
    r
}

/// A read of a stream, `read`, into a buffer of `len` bytes. One that returns fewer bytes
/// than it asked for (but some) drained the socket's buffer (the poller is edge-triggered), so
/// the read direction's readiness is cleared (`ScheduledIo::clear_drained`: not if an edge
/// came meanwhile or the peer closed its side) and the next read waits for the next edge
/// instead of making a system call that fails with `WouldBlock`, as tokio's sockets do on
/// epoll. An echo server made one such call a round trip before (`strace -c -f
/// examples/echo_load pcml 1 0 200`: 39,838 `recvfrom` calls that failed, of 79,938, against
/// 20,000 of 60,100 on tokio; today 51 of 40,151 against tokio's 155 of 40,255, the load's
/// own included).
pub(crate) fn read_stream(
    sio: &ScheduledIo,
    len: usize,
    read: impl FnOnce() -> io::Result<usize>,
) -> io::Result<usize> {
    let generation = sio.generation(Dir::Read);
    let r = read();
    if let Ok(n) = r
        && 0 < n
        && n < len
    {
        sio.clear_drained(Dir::Read, generation);
    }
    r
}

/// What one attempt of an operation says to do next.
enum Attempt<R> {
    Done(io::Result<R>),
    Wait,
}

fn attempt<S: Source, R>(
    reg: &Registered<S>,
    dir: Dir,
    mut f: impl FnMut(&S) -> io::Result<R>,
) -> Attempt<R> {
    loop {
        return match try_io(reg, dir, &mut f) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if reg.sio().is_closed() {
                    Attempt::Done(Err(closed_error()))
                } else {
                    Attempt::Wait
                }
            }
            // A signal: try again at once.
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => Attempt::Done(r),
        };
    }
}

/// Runs `f` until it does not say `WouldBlock`, syncing on `dir`'s readiness in between:
/// blocks the calling fiber or OS thread (panics in an async task, as every sync does).
pub(crate) fn blocking_io<S: Source, R>(
    reg: &Registered<S>,
    dir: Dir,
    mut f: impl FnMut(&S) -> io::Result<R>,
) -> io::Result<R> {
    let mut waited = false;
    loop {
        match attempt(reg, dir, &mut f) {
            Attempt::Done(r) => {
                if !waited {
                    // Done without blocking: count it, so a fiber reading a stream that is
                    // always ready still lets the other threads of its proc run.
                    crate::sched::worker::consume_budget();
                }
                return r;
            }
            Attempt::Wait => {
                waited = true;
                ready_evt(reg.sio(), dir).sync();
            }
        }
    }
}

/// [`blocking_io`] for async code: awaits readiness instead of blocking. The task waits in
/// the direction's own waker slot, as tokio's sockets do (one lock, no event, nothing
/// allocated); a second task waiting on the same direction meanwhile waits through the
/// readiness event's queue, as blocking threads do, so every waiter is woken.
pub(crate) async fn async_io<S: Source, R>(
    reg: &Registered<S>,
    dir: Dir,
    mut f: impl FnMut(&S) -> io::Result<R>,
) -> io::Result<R> {
    loop {
        match attempt(reg, dir, &mut f) {
            Attempt::Done(r) => return r,
            Attempt::Wait => {
                if !parked_until_ready(reg.sio(), dir).await {
                    ready_evt(reg.sio(), dir).await;
                }
            }
        }
    }
}

/// Waits in `dir`'s waker slot (see [`ScheduledIo::park_unless_ready`]) until the task is
/// polled again: `true` then, or at once if `dir` is ready; `false` at once if another task
/// holds the slot. A poll after the wake-up may be spurious: the caller tries again anyway.
fn parked_until_ready(sio: &ScheduledIo, dir: Dir) -> impl Future<Output = bool> + '_ {
    let mut parked = false;
    std::future::poll_fn(move |cx| {
        if parked {
            return std::task::Poll::Ready(true);
        }
        match sio.park_unless_ready(dir, cx.waker()) {
            Park::Ready => std::task::Poll::Ready(true),
            Park::Taken => std::task::Poll::Ready(false),
            Park::Parked => {
                parked = true;
                std::task::Poll::Pending
            }
        }
    })
}

/// [`async_io`] for a read of a stream (`read` is one attempt, which calls [`read_stream`]):
/// waits for readiness *before* the system call when the last read showed the socket drained
/// (a `WouldBlock`, or a short read: [`read_stream`]), where `async_io` would try the call
/// first and see it fail.
pub(crate) async fn async_read_stream<S: Source>(
    reg: &Registered<S>,
    mut read: impl FnMut(&S) -> io::Result<usize>,
) -> io::Result<usize> {
    let sio = reg.sio();
    loop {
        // At once if the direction is ready (or closed).
        if !parked_until_ready(sio, Dir::Read).await {
            ready_evt(sio, Dir::Read).await;
        }
        match attempt(reg, Dir::Read, &mut read) {
            Attempt::Done(r) => return r,
            Attempt::Wait => {}
        }
    }
}

/// [`poll_io`] for a read of a stream (`AsyncRead`; `read` is one attempt, which calls
/// [`read_stream`]), waiting for readiness before the system call as [`async_read_stream`]
/// does.
pub(crate) fn poll_read_stream<S: Source>(
    reg: &Registered<S>,
    cx: &mut std::task::Context<'_>,
    read: impl FnMut(&S) -> io::Result<usize>,
) -> std::task::Poll<io::Result<usize>> {
    if reg.sio().park_task_unless_ready(Dir::Read, cx.waker()) {
        return std::task::Poll::Pending;
    }
    poll_io(reg, Dir::Read, cx, read)
}

/// One poll of an operation, for `AsyncRead`/`AsyncWrite`: runs `f` until it does not say
/// `WouldBlock` (or `Interrupted`); on `WouldBlock` parks the task to be woken by the next
/// readiness event of `dir` and returns `Pending`.
pub(crate) fn poll_io<S: Source, R>(
    reg: &Registered<S>,
    dir: Dir,
    cx: &mut std::task::Context<'_>,
    mut f: impl FnMut(&S) -> io::Result<R>,
) -> std::task::Poll<io::Result<R>> {
    use std::task::Poll;
    loop {
        let generation = reg.sio().generation(dir);
        match f(reg.source()) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if reg.sio().is_closed() {
                    return Poll::Ready(Err(closed_error()));
                }
                if reg.sio().clear_and_park(dir, generation, cx.waker()) {
                    return Poll::Pending;
                }
                // An edge arrived during the call: try again.
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            r => return Poll::Ready(r),
        }
    }
}

/// A file descriptor as a `mio` source.
struct FdSource<T>(T);

impl<T: AsRawFd> Source for FdSource<T> {
    fn register(
        &mut self,
        registry: &Registry,
        token: Token,
        interests: Interest,
    ) -> io::Result<()> {
        SourceFd(&self.0.as_raw_fd()).register(registry, token, interests)
    }

    fn reregister(
        &mut self,
        registry: &Registry,
        token: Token,
        interests: Interest,
    ) -> io::Result<()> {
        SourceFd(&self.0.as_raw_fd()).reregister(registry, token, interests)
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        SourceFd(&self.0.as_raw_fd()).deregister(registry)
    }
}

/// A non-blocking file descriptor registered with pcml's I/O poller: its readiness as events,
/// and operations that wait for it by blocking only the calling fiber (or OS thread), or by
/// `.await`.
///
/// `T` is anything with a descriptor: an owned one (`OwnedFd`, `File`, `UnixStream`, a
/// socket), or a bare [`RawFd`].
///
/// # The caller's obligations
/// - The descriptor must be in non-blocking mode (`O_NONBLOCK`; `set_nonblocking(true)` on
///   std's types): pcml does not change it ([`Async::new`] refuses a blocking one, which would
///   block a whole proc in `read_with`), and it must stay non-blocking.
/// - It must stay open while the `Async` lives. With an owning `T` that is automatic; with a
///   bare [`RawFd`] it is yours to ensure (closing it first can make the number name another
///   file, whose readiness the poller would then report).
/// - One `Async` per descriptor at a time: the poller refuses a second registration of the same
///   descriptor with an error.
///
/// The descriptor is registered with the I/O driver of the calling thread's runtime (the
/// process-wide one outside any runtime) when the `Async` is made, and deregistered when it is
/// dropped; syncs blocked on its readiness events then wake (the events become enabled).
///
/// # Examples
/// A socket pair's end, on a fiber, with a timeout:
/// ```
/// use std::io::{Read, Write};
/// use std::time::Duration;
/// use pcml::io::Async;
///
/// pcml::run(|| {
///     let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
///     a.set_nonblocking(true).unwrap();
///     let a = Async::new(a).unwrap();
///     // Nothing written yet: the timeout wins.
///     assert!(a.readable_evt().sync_timeout(Duration::from_millis(10)).is_none());
///     pcml::spawn(move || b.write_all(b"x").unwrap());
///     let mut buf = [0; 1];
///     assert_eq!(a.read_with(|mut s| s.read(&mut buf)).unwrap(), 1);
/// });
/// ```
pub struct Async<T: AsRawFd> {
    reg: Registered<FdSource<T>>,
}

impl<T: AsRawFd> fmt::Debug for Async<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Async")
            .field("fd", &self.reg.source().0.as_raw_fd())
            .finish()
    }
}

impl<T: AsRawFd> Async<T> {
    /// Registers `io`'s descriptor with the calling thread's I/O driver.
    ///
    /// # Errors
    /// `InvalidInput` if the descriptor is in blocking mode; else if the poller refuses it
    /// (already registered, not pollable such as a regular file), or the driver cannot be
    /// started.
    ///
    /// # Examples
    /// ```
    /// let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
    /// a.set_nonblocking(true).unwrap();
    /// let a = pcml::io::Async::new(a).unwrap();
    /// assert!(a.get_ref().peer_addr().is_ok());
    /// ```
    pub fn new(io: T) -> io::Result<Async<T>> {
        let fd = io.as_raw_fd();
        // SAFETY: F_GETFL only reads the flags of `fd`, which `io` keeps open (or, for a bare
        // descriptor, the caller promises is open); an invalid one yields -1 and EBADF.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        if flags & libc::O_NONBLOCK == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "pcml: descriptor {fd} is in blocking mode, which would block a whole proc; \
                     make it non-blocking first (set_nonblocking(true), or O_NONBLOCK)"
                ),
            ));
        }
        let reg = readiness::register(FdSource(io))?;
        Ok(Async { reg })
    }

    /// The wrapped descriptor's owner.
    ///
    /// # Examples
    /// ```
    /// use std::os::fd::AsRawFd;
    /// let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
    /// let fd = a.as_raw_fd();
    /// a.set_nonblocking(true).unwrap();
    /// let a = pcml::io::Async::new(a).unwrap();
    /// assert_eq!(a.get_ref().as_raw_fd(), fd);
    /// ```
    pub fn get_ref(&self) -> &T {
        &self.reg.source().0
    }

    #[cfg(all(test, not(pcml_loom)))]
    pub(crate) fn sio(&self) -> &Arc<ScheduledIo> {
        self.reg.sio()
    }

    /// An event enabled when the descriptor is readable (or hung up, or failed): see the
    /// module docs on why it is only a hint.
    ///
    /// # Examples
    /// ```
    /// use std::io::Write;
    /// use std::time::Duration;
    ///
    /// let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
    /// a.set_nonblocking(true).unwrap();
    /// let a = pcml::io::Async::new(a).unwrap();
    /// assert_eq!(a.readable_evt().sync_timeout(Duration::from_millis(5)), None);
    /// b.write_all(b"!").unwrap();
    /// assert_eq!(a.readable_evt().sync_timeout(Duration::from_secs(10)), Some(()));
    /// ```
    pub fn readable_evt(&self) -> Event<()> {
        ready_evt(self.reg.sio(), Dir::Read)
    }

    /// An event enabled when the descriptor is writable (or hung up, or failed).
    ///
    /// # Examples
    /// ```
    /// let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
    /// a.set_nonblocking(true).unwrap();
    /// let a = pcml::io::Async::new(a).unwrap();
    /// a.writable_evt().sync(); // an empty socket buffer is writable
    /// ```
    pub fn writable_evt(&self) -> Event<()> {
        ready_evt(self.reg.sio(), Dir::Write)
    }

    /// Runs the non-blocking read `f` until it does not fail with `WouldBlock`, waiting for
    /// readability in between; blocks only the calling fiber (or OS thread).
    ///
    /// # Errors
    /// `f`'s error, or an error if the runtime whose driver registered the descriptor has shut
    /// down.
    ///
    /// # Panics
    /// In a pcml async task, which cannot block: use [`read_with_async`](Self::read_with_async).
    ///
    /// # Examples
    /// ```
    /// use std::io::{Read, Write};
    ///
    /// let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
    /// a.set_nonblocking(true).unwrap();
    /// let a = pcml::io::Async::new(a).unwrap();
    /// let t = std::thread::spawn(move || b.write_all(b"late"));
    /// let mut buf = [0; 4];
    /// let n = a.read_with(|mut s| s.read(&mut buf)).unwrap();
    /// assert!(n > 0);
    /// t.join().unwrap().unwrap();
    /// ```
    pub fn read_with<R>(&self, f: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        let mut f = f;
        blocking_io(&self.reg, Dir::Read, |s| f(&s.0))
    }

    /// Runs the non-blocking write `f` until it does not fail with `WouldBlock`, waiting for
    /// writability in between.
    ///
    /// # Errors
    /// As [`read_with`](Self::read_with).
    ///
    /// # Panics
    /// In a pcml async task: use [`write_with_async`](Self::write_with_async).
    ///
    /// # Examples
    /// ```
    /// use std::io::Write;
    ///
    /// let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
    /// a.set_nonblocking(true).unwrap();
    /// let a = pcml::io::Async::new(a).unwrap();
    /// assert_eq!(a.write_with(|mut s| s.write(b"abc")).unwrap(), 3);
    /// ```
    pub fn write_with<R>(&self, f: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        let mut f = f;
        blocking_io(&self.reg, Dir::Write, |s| f(&s.0))
    }

    /// [`read_with`](Self::read_with) for async code, in pcml tasks or any executor.
    ///
    /// # Examples
    /// ```
    /// use std::io::{Read, Write};
    ///
    /// let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
    /// a.set_nonblocking(true).unwrap();
    /// b.write_all(b"z").unwrap();
    /// let got = pcml::run(move || {
    ///     pcml::spawn_task(async move {
    ///         let a = pcml::io::Async::new(a).unwrap();
    ///         let mut buf = [0; 1];
    ///         a.read_with_async(|mut s| s.read(&mut buf)).await.unwrap();
    ///         buf[0]
    ///     })
    ///     .join()
    ///     .unwrap()
    /// });
    /// assert_eq!(got, b'z');
    /// ```
    pub async fn read_with_async<R>(&self, f: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        let mut f = f;
        async_io(&self.reg, Dir::Read, |s| f(&s.0)).await
    }

    /// [`write_with`](Self::write_with) for async code.
    ///
    /// # Examples
    /// ```
    /// use std::io::Write;
    ///
    /// let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
    /// a.set_nonblocking(true).unwrap();
    /// let n = pcml::run(move || {
    ///     pcml::spawn_task(async move {
    ///         let a = pcml::io::Async::new(a).unwrap();
    ///         a.write_with_async(|mut s| s.write(b"ok")).await.unwrap()
    ///     })
    ///     .join()
    ///     .unwrap()
    /// });
    /// assert_eq!(n, 2);
    /// ```
    pub async fn write_with_async<R>(&self, f: impl FnMut(&T) -> io::Result<R>) -> io::Result<R> {
        let mut f = f;
        async_io(&self.reg, Dir::Write, |s| f(&s.0)).await
    }
}

/// The descriptor of the wrapped object.
impl<T: AsRawFd> AsRawFd for Async<T> {
    fn as_raw_fd(&self) -> RawFd {
        self.reg.source().0.as_raw_fd()
    }
}
