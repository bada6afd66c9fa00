//! The I/O poller (Morrisett and Tolmach 1992, section 4.4, and "Smarter I/O" in section 8): one `mio` poller
//! per runtime, on a driver thread of its own, turns the kernel's readiness notifications into
//! calls on the readiness state of each registered source.
//!
//! A runtime's driver starts on the first registration made from one of its procs and stops
//! when the runtime is dropped (`Runtime::drop` stops it through a `mio::Waker` and joins its
//! thread). Sources created outside any runtime (plain OS threads, other executors such as
//! tokio, `spawn_blocking` jobs) register with one process-wide fallback driver, started on first
//! use and never stopped, like the fallback timer thread of `sched::timer`.
//!
//! This layer knows nothing of events or waiters: a source registers with an
//! `Arc` of something that implements [`Readiness`], and the driver keeps that in a table by
//! token. The source is registered edge-triggered for both directions; on an event the driver
//! calls `Readiness::ready` for each direction it reports (one virtual call per event, beside a
//! system call), and `Readiness::close` when the source is deregistered or the driver stops.
//! The layer above (`io::readiness`) implements it: it keeps per direction the readiness flag,
//! the generation, the queue of blocked syncs and the task waker slots, and commits the
//! waiters through the event protocol.//!
//! # Differences from the paper
//! Seed 004 calls `select` before each blocking operation on the proc that performs it and
//! relies on timer signals to preempt a thread stuck in I/O; its section 8 weighs handing I/O
//! to extra kernel threads, which either busy-wait (wasting cycles) or block (costing a wake-up).
//! Here one extra thread per runtime blocks in `epoll_wait` for all its sources, so a busy proc
//! never delays I/O wake-ups and no fiber ever blocks its proc, an idle proc parks exactly
//! as before (no second kind of sleep to wake), and OS threads outside any runtime get the same
//! service from the fallback driver. The cost is one thread per runtime that does I/O and a
//! cross-thread wake-up per readiness event. To cut that cost where it hurts, a proc that is
//! spinning for work also takes a non-blocking look at the poller (`Driver::poll_now`, Go's
//! `netpoll(0)`) and dispatches what it finds itself: with 100 loopback echo clients on one
//! proc this gave about 1.35x the round trips per second of leaving everything to the driver
//! thread, which on a machine with as many procs as cores waits for a core behind spinning
//! procs. A single client's ping-pong got about 15% slower (both threads race for each event),
//! measured on a loaded 2-core machine, so treat both as rough.
//!
//! # Not yet
//! A proc with nothing to do still parks on its futex and leaves the blocking wait to the
//! driver thread. Letting one idle proc block in `epoll_wait` itself (Go's blocking `netpoll`)
//! was tried in its simplest form and measured worse: the proc slept on an epoll set of its
//! own holding this poller's descriptor and an eventfd for its unpark, so readiness woke it
//! from the kernel. But the driver thread, still blocked on the poller, woke for every event
//! too, and the two raced for them: with `examples/echo_load` (100 connections, 64-byte round
//! trips, 1 proc, 5 alternating 2-second runs on the shared 2-core machine at load 9), 23.6 k
//! round trips/s median against 30.0 k with the futex park, and 28 against 23 us of the
//! process's CPU per round trip. Doing it properly means the driver thread stepping aside
//! while a proc polls, which moves a thread wake-up to every park of that proc instead.
//!
//! # Invariants
//! - `Readiness::close` is called for every source still registered when its driver stops, and
//!   for each source when its registration is dropped, so nothing blocks on a source that can
//!   never fire again.
//! - Tokens are slab keys and may be reused after a deregistration; a stale event for a reused
//!   token only causes a spurious readiness, which every operation tolerates (it retries).
//! - The driver holds no reference to a source's owner, only to its readiness state: sockets own
//!   their registration, never the other way round, so nothing leaks through a cycle.
//! - Whoever takes a driver's source count to 0 kicks the runtime it serves (every runtime,
//!   for the fallback) after a SeqCst fence: deadlock detection counts registered sources as
//!   able to wake a thread and parks without a re-check while there are any.

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use mio::event::Source;
use mio::{Events, Interest, Poll, Token, Waker};
use slab::Slab;

use crate::sched::worker::{self, Shared};

/// Locks a std mutex of the I/O layer, ignoring poisoning: no user code runs under these
/// locks except a listener's serve hook, which leaves the state consistent if it panics. (The
/// I/O layer uses std's mutexes, not the loom shim's: its driver is a real OS thread and
/// is not model checked.)
pub(crate) fn lock<X>(m: &Mutex<X>) -> std::sync::MutexGuard<'_, X> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The token of the driver's own `mio::Waker`.
const WAKER: Token = Token(usize::MAX);

/// A direction of readiness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    Read = 0,
    Write = 1,
}

/// One runtime's (or the fallback's) poller: the registry, the sources, the driver thread.
pub(crate) struct Driver {
    /// A clone of the poller's registry (the `Poll` itself is owned by the driver thread).
    registry: mio::Registry,
    /// Wakes the driver thread out of `poll` to stop it.
    waker: Waker,
    /// Registered sources by token.
    sources: Mutex<Slab<Arc<dyn Readiness>>>,
    /// `sources.len()`, readable without the lock by deadlock detection. Written under the
    /// `sources` lock.
    registered: AtomicUsize,
    /// The id of the runtime whose driver this is (`None`: the fallback's). When its last
    /// source goes, that runtime (every runtime, for the fallback) is kicked: deadlock
    /// detection counts registered sources as able to wake a thread, and a proc that found
    /// one parks without a re-check (`sources_gone`).
    owner: Option<u64>,
    /// Set once by `shutdown`. Release/Acquire: pairs the stop request with the driver
    /// thread's check after `poll` returns, and with `register`'s check.
    stopped: AtomicBool,
    /// The driver thread, taken and joined by `shutdown`.
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Driver")
            .field("registered", &self.registered.load(Ordering::Relaxed))
            .field("stopped", &self.stopped.load(Ordering::Relaxed))
            .finish()
    }
}

impl Driver {
    /// Creates a poller and starts its driver thread: runtime `owner`'s, or the fallback.
    fn start(name: String, owner: Option<u64>) -> io::Result<Arc<Driver>> {
        let poll = Poll::new()?;
        let registry = poll.registry().try_clone()?;
        let waker = Waker::new(poll.registry(), WAKER)?;
        let driver = Arc::new(Driver {
            registry,
            waker,
            sources: Mutex::new(Slab::new()),
            registered: AtomicUsize::new(0),
            owner,
            stopped: AtomicBool::new(false),
            thread: Mutex::new(None),
        });
        let d = driver.clone();
        let handle = std::thread::Builder::new().name(name).spawn(move || {
            let _own = crate::sched::outside::OwnThread::enter();
            d.run(poll)
        })?;
        *lock(&driver.thread) = Some(handle);
        Ok(driver)
    }

    /// The driver thread's loop.
    fn run(&self, mut poll: Poll) {
        let mut events = Events::with_capacity(256);
        loop {
            if let Err(e) = poll.poll(&mut events, None) {
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                // Nothing sensible to retry: stop, and let every waiter see its source closed
                // rather than hang.
                crate::log::io_driver_error("the I/O driver stopped: epoll_wait failed", &e);
                break;
            }
            for ev in events.iter() {
                if ev.token() == WAKER {
                    continue;
                }
                self.dispatch(
                    ev.token().0,
                    ev.is_readable() || ev.is_read_closed() || ev.is_error(),
                    ev.is_writable() || ev.is_write_closed() || ev.is_error(),
                    ev.is_read_closed() || ev.is_error(),
                );
            }
            // Acquire: pairs with the Release store in `shutdown`.
            if self.stopped.load(Ordering::Acquire) {
                break;
            }
        }
        self.stopped.store(true, Ordering::Release);
        // Nothing will fire any more: wake everything that waits, for good.
        let all: Vec<_> = lock(&self.sources).iter().map(|(_, s)| s.clone()).collect();
        for s in all {
            s.close();
        }
    }

    /// Delivers one readiness event of the source `token`.
    fn dispatch(&self, token: usize, readable: bool, writable: bool, read_closed: bool) {
        let sio = lock(&self.sources).get(token).cloned();
        let Some(sio) = sio else {
            // Deregistered since the kernel queued the event.
            return;
        };
        if readable || read_closed {
            sio.ready(Dir::Read, read_closed);
        }
        if writable {
            sio.ready(Dir::Write, false);
        }
    }

    /// One non-blocking look at the poller, by an idle proc of the runtime (Go's `netpoll(0)`
    /// in `findrunnable`): the events it collects are dispatched here, so their fibers wake
    /// without waiting for the driver thread to be scheduled (on a machine with as many procs
    /// as cores, spinning procs otherwise keep it off the cores). The driver thread, blocked
    /// in `epoll_wait` on the same poller, gets whatever this call does not take; an edge is
    /// delivered to one of them.
    fn poll_now(&self) {
        if self.registered() == 0 || self.is_stopped() {
            return;
        }
        const BATCH: usize = 32;
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; BATCH];
        // SAFETY: `evs` is valid for writes of BATCH entries; the descriptor is the registry's
        // own duplicate of the poller's, open while `self` lives; a zero timeout never blocks.
        let n = unsafe {
            libc::epoll_wait(
                std::os::fd::AsRawFd::as_raw_fd(&self.registry),
                evs.as_mut_ptr(),
                BATCH as libc::c_int,
                0,
            )
        };
        let Ok(n) = usize::try_from(n) else {
            // EINTR or similar: the driver thread will see the events.
            return;
        };
        for ev in &evs[..n] {
            // Copies: `epoll_event` is packed on x86-64.
            let (flags, token) = (ev.events as libc::c_int, ev.u64);
            if token == WAKER.0 as u64 {
                // The driver thread's stop request: pass it on.
                let _ = self.waker.wake();
                continue;
            }
            let err = flags & (libc::EPOLLERR | libc::EPOLLHUP) != 0;
            self.dispatch(
                token as usize,
                err || flags & (libc::EPOLLIN | libc::EPOLLPRI | libc::EPOLLRDHUP) != 0,
                err || flags & libc::EPOLLOUT != 0,
                err || flags & libc::EPOLLRDHUP != 0,
            );
        }
    }

    /// Whether the driver has stopped (its runtime shut down).
    pub(crate) fn is_stopped(&self) -> bool {
        // Acquire: pairs with the Release stores in `shutdown` and at the end of `run`.
        self.stopped.load(Ordering::Acquire)
    }

    /// Stops the driver thread and joins it; every source still registered becomes closed
    /// (ready for good), so nobody blocks on it forever.
    pub(crate) fn shutdown(&self) {
        // Release: pairs with the driver thread's Acquire load after `poll` returns.
        self.stopped.store(true, Ordering::Release);
        if let Err(e) = self.waker.wake() {
            crate::log::io_driver_error("could not wake the I/O driver to stop it", &e);
            return;
        }
        let handle = lock(&self.thread).take();
        if let Some(h) = handle {
            if h.thread().id() != std::thread::current().id() {
                let _ = h.join();
            }
        }
    }

    /// Registers `src` (edge-triggered, readable and writable); its readiness events go to
    /// `sio` until the returned registration is dropped.
    pub(crate) fn register<S: Source, R: Readiness>(
        self: &Arc<Self>,
        mut src: S,
        sio: Arc<R>,
    ) -> io::Result<Registered<S, R>> {
        if self.is_stopped() {
            return Err(stopped_error());
        }
        let token = {
            let mut sources = lock(&self.sources);
            let token = sources.insert(sio.clone());
            self.registered.store(sources.len(), Ordering::Relaxed);
            token
        };
        if let Err(e) = self.registry.register(
            &mut src,
            Token(token),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            let mut sources = lock(&self.sources);
            sources.remove(token);
            self.registered.store(sources.len(), Ordering::Relaxed);
            if sources.is_empty() {
                drop(sources);
                self.sources_gone();
            }
            return Err(e);
        }
        Ok(Registered {
            source: src,
            sio,
            token,
            driver: self.clone(),
        })
    }

    /// The driver's last source was deregistered: wake the runtimes whose deadlock check
    /// may have seen it. A check that finds a registered source takes the runtime for one
    /// that may still be woken and parks without a re-check, so whoever removes the last
    /// source must wake it to look again: otherwise a runtime that a socket made on an OS
    /// thread (the fallback's) kept from being declared deadlocked would hang for good once
    /// that socket is dropped, as would one whose own socket an OS thread dropped.
    #[cold]
    fn sources_gone(&self) {
        // SeqCst fence: the deregistering side of a Dekker with the last sleeper, which
        // counts itself in `num_sleeping`, fences, then reads `registered` (`idle::sleep`,
        // `Shared::is_quiescent`): it sees the count at 0, or `kick` sees it asleep.
        std::sync::atomic::fence(Ordering::SeqCst);
        match self.owner {
            Some(id) => {
                if let Some(sh) = crate::sched::registry::lookup(id) {
                    sh.kick();
                }
            }
            None => crate::sched::registry::all()
                .iter()
                .for_each(|sh| sh.kick()),
        }
    }

    /// Sources registered now (a hint for deadlock detection).
    fn registered(&self) -> usize {
        // Relaxed: a count read when every proc sleeps, after their SeqCst fences.
        self.registered.load(Ordering::Relaxed)
    }
}

fn stopped_error() -> io::Error {
    io::Error::other(
        "pcml: the I/O driver of this socket's runtime has stopped (the runtime shut down); \
         create sockets in the runtime or thread that uses them",
    )
}

/// The process-wide driver for threads outside any runtime (started on first use, never
/// stopped).
static FALLBACK: Mutex<Option<Arc<Driver>>> = Mutex::new(None);

fn fallback() -> io::Result<Arc<Driver>> {
    let mut slot = lock(&FALLBACK);
    if let Some(d) = &*slot {
        return Ok(d.clone());
    }
    let d = Driver::start("pcml-io".into(), None)?;
    *slot = Some(d.clone());
    Ok(d)
}

/// Whether the fallback driver has sources (without starting it).
fn fallback_registered() -> bool {
    lock(&FALLBACK).as_ref().is_some_and(|d| d.registered() > 0)
}

/// The driver for sources created by the calling thread: its runtime's if it is a proc,
/// else the process-wide fallback.
pub(crate) fn current_driver() -> io::Result<Arc<Driver>> {
    match worker::context() {
        Some(ctx) => ctx.shared.io_driver(),
        None => fallback(),
    }
}

/// Serializes the start of runtimes' drivers (rare: once per runtime).
static STARTING: Mutex<()> = Mutex::new(());

impl Shared {
    /// This runtime's driver, started on first use.
    pub(crate) fn io_driver(&self) -> io::Result<Arc<Driver>> {
        if let Some(d) = self.io.get() {
            return Ok(d.clone());
        }
        let _starting = lock(&STARTING);
        if let Some(d) = self.io.get() {
            return Ok(d.clone());
        }
        if self.is_shutdown() {
            return Err(stopped_error());
        }
        let d = Driver::start(format!("pcml-io-{}", self.id), Some(self.id))?;
        let _ = self.io.set(d.clone());
        Ok(d)
    }

    /// Stops this runtime's driver, if it was started (at runtime drop, procs joined).
    pub(crate) fn stop_io(&self) {
        if let Some(d) = self.io.get() {
            d.shutdown();
        }
    }

    /// Lets an idle proc collect ready I/O (see `Driver::poll_now`).
    pub(crate) fn poll_io_now(&self) {
        if let Some(d) = self.io.get() {
            d.poll_now();
        }
    }

    /// Whether registered I/O sources may still wake a thread (deadlock detection): this
    /// runtime's, or the fallback's (a socket made on an OS thread may be used by a fiber).
    pub(crate) fn io_pending(&self) -> bool {
        let own = self.io.get().is_some_and(|d| d.registered() > 0);
        own || fallback_registered()
    }
}

/// What the driver tells a registered source: the readiness state kept by the layer above
/// (`io::readiness`), called from the driver thread or from a proc polling the poller.
pub(crate) trait Readiness: Send + Sync + 'static {
    /// A readiness event for direction `d` arrived: record it and wake whoever waits for it.
    /// `peer_closed`: the event also said that the peer closed its side (EPOLLRDHUP,
    /// EPOLLHUP) or an error came, so this direction stays ready after its data is read.
    fn ready(&self, d: Dir, peer_closed: bool);

    /// No event will ever come again (source deregistered, or its driver stopped): make both
    /// directions ready for good and wake everyone waiting.
    fn close(&self);
}

/// A source registered with a driver; deregisters (and closes its readiness) on drop.
pub(crate) struct Registered<S: Source, R: Readiness> {
    source: S,
    sio: Arc<R>,
    token: usize,
    driver: Arc<Driver>,
}

impl<S: Source, R: Readiness> Registered<S, R> {
    pub(crate) fn source(&self) -> &S {
        &self.source
    }

    pub(crate) fn sio(&self) -> &Arc<R> {
        &self.sio
    }

    pub(crate) fn driver(&self) -> &Arc<Driver> {
        &self.driver
    }
}

impl<S: Source, R: Readiness> Drop for Registered<S, R> {
    fn drop(&mut self) {
        // The driver may have stopped; deregistering through its registry is still valid
        // (the registry holds its own descriptor of the poller).
        let _ = self.driver.registry.deregister(&mut self.source);
        {
            let mut sources = lock(&self.driver.sources);
            // The same allocation (compared by address: one side is a trait object).
            let mine = Arc::as_ptr(&self.sio).cast::<()>();
            if sources
                .get(self.token)
                .is_some_and(|s| Arc::as_ptr(s).cast::<()>() == mine)
            {
                sources.remove(self.token);
            }
            self.driver
                .registered
                .store(sources.len(), Ordering::Relaxed);
            if sources.is_empty() {
                drop(sources);
                self.driver.sources_gone();
            }
        }
        self.sio.close();
    }
}

impl<S: Source + fmt::Debug, R: Readiness> fmt::Debug for Registered<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registered")
            .field("source", &self.source)
            .field("token", &self.token)
            .finish()
    }
}

/// The error of an operation on a source whose driver stopped.
pub(crate) fn closed_error() -> io::Error {
    stopped_error()
}
