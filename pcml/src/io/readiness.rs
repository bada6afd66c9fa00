//! The readiness state of a registered source: what the I/O driver (`sched::io`) reports
//! through [`Readiness`], kept here where the readiness events and the blocking and async
//! operations of `io` and `net` read it.
//!
//! Make one [`ScheduledIo`] per source and register it with the source ([`register`]); then
//! take the direction's generation before each system call, clear readiness with it on
//! `WouldBlock` (`clear_ready`, `clear_and_park`), and wait through a readiness event
//! (`enqueue_unless_ready`) or a task waker slot (`park_unless_ready`, `clear_and_park`).
//!
//! Per direction (read, write) a source keeps a readiness flag, a generation counter, a FIFO
//! queue of blocked waiters (the `Queue` of `sync_var::waiters`), and two task waker slots, one
//! for the poll-style operations (`AsyncRead`/`AsyncWrite`) and one for the async operations
//! (`io::async_io`). On an event the driver calls [`Readiness::ready`], which sets the flag,
//! bumps the generation and commits every queued waiter of that direction through the event
//! protocol (`Waiter::synch_spinning`, then `Commit::publish`); waiters whose sync already
//! completed elsewhere are skipped (and swept from queues as they grow). An operation that hits
//! `WouldBlock` clears the flag only if the generation it saw before its system call is still
//! current, so an edge that arrives meanwhile is never lost.
//!
//! # Invariants
//! - A direction's flags and generation live in one atomic word (`READY`, `CLOSED`,
//!   `PEER_CLOSED`, the generation above them), read without the lock. Events (`set_ready`,
//!   `close`) change it only under the direction's lock, with the waiter queue and slots;
//!   an operation that saw `WouldBlock` clears `READY` with a compare-and-swap that fails if
//!   the generation moved, with or without the lock. So a waiter that checks `READY` under
//!   the lock and parks is woken by the next event, and no edge is lost to a stale clear.
//!   Waiters are committed after the lock is released (the protocol never takes the lock,
//!   so holding it would be safe too, but a wake-up can be slow).
//! - `closed` is set once per direction (source deregistered, or its driver stopped) and makes
//!   the direction permanently ready, so nothing blocks on a source that can never fire again.

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use mio::event::Source;

use crate::event::Waiter;
use crate::sched::io::{Dir, Readiness, current_driver, lock};
use crate::sync_var::waiters::Queue;

/// A source registered with its thread's driver, its readiness kept by a [`ScheduledIo`].
pub(crate) type Registered<S> = crate::sched::io::Registered<S, ScheduledIo>;

/// Registers `src` with the calling thread's driver (its runtime's, or the process-wide
/// fallback's), with a fresh readiness state.
pub(crate) fn register<S: Source>(src: S) -> io::Result<Registered<S>> {
    register_with(&current_driver()?, src)
}

/// Registers `src` with `driver`, with a fresh readiness state.
pub(crate) fn register_with<S: Source>(
    driver: &Arc<crate::sched::io::Driver>,
    src: S,
) -> io::Result<Registered<S>> {
    driver.register(src, Arc::new(ScheduledIo::new()))
}

/// The readiness state of one registered source.
pub(crate) struct ScheduledIo {
    /// Indexed by `Dir`.
    dirs: [Mutex<DirState>; 2],
    /// Indexed by `Dir`: the direction's flags and generation (see the module's
    /// invariants). Operations read it before and after every system call, so it is read
    /// and cleared without the lock.
    words: [AtomicU64; 2],
    /// Run by the driver after each read-readiness event (a listener serves its queued
    /// accepts). Set once, before any event can reach it matters, by the source's owner.
    on_readable: OnceLock<Box<dyn Fn() + Send + Sync>>,
}

/// One direction of a source. Written under its lock by the driver (set ready), by
/// operations (clear on `WouldBlock`), by readiness events (enqueue) and by `close`.
struct DirState {
    /// Syncs blocked on this direction's readiness event.
    waiters: Queue<Waiter>,
    /// The task parked by the last poll-style operation (`AsyncRead`/`AsyncWrite`) that saw
    /// `WouldBlock`: one per direction, as in tokio's `poll_read_ready` (a second poller
    /// replaces the first).
    task: Option<std::task::Waker>,
    /// The task of an async operation (`read_async` & co., `io::async_io`) waiting for the
    /// next readiness event of this direction: one task at a time takes this slot, others
    /// wait through `waiters` (see `park_unless_ready`). Apart from `task`, so a poll-style
    /// operation never displaces it.
    awaiting: Option<std::task::Waker>,
}

/// A direction's word: the last event said ready and no operation has seen `WouldBlock`
/// since.
const READY: u64 = 1;
/// The source was deregistered or its driver stopped: ready for good.
const CLOSED: u64 = 2;
/// An event said that the peer closed this direction (or an error came): a read that
/// returns less than it asked for no longer shows the buffer drained (`clear_drained`),
/// since no edge will follow the end of the stream. Never reset.
const PEER_CLOSED: u64 = 4;
/// The generation, bumped by every readiness event (so a stale clear does nothing), is the
/// word's bits from here up.
const GEN_SHIFT: u32 = 3;

/// What [`ScheduledIo::park_unless_ready`] did.
pub(crate) enum Park {
    /// The direction is ready (an edge came since the operation's `WouldBlock`): try again.
    Ready,
    /// The waker is parked; the next readiness event wakes it.
    Parked,
    /// Another task's waker holds the slot: wait through the queue instead.
    Taken,
}

impl ScheduledIo {
    fn new() -> Self {
        let dir = || {
            Mutex::new(DirState {
                waiters: Queue::new(),
                task: None,
                awaiting: None,
            })
        };
        Self {
            dirs: [dir(), dir()],
            words: [AtomicU64::new(0), AtomicU64::new(0)],
            on_readable: OnceLock::new(),
        }
    }

    fn dir(&self, d: Dir) -> &Mutex<DirState> {
        &self.dirs[d as usize]
    }

    fn word(&self, d: Dir) -> &AtomicU64 {
        &self.words[d as usize]
    }

    /// Under `d`'s lock: sets `flags` in its word and bumps its generation (an event).
    fn bump(&self, d: Dir, flags: u64) {
        // AcqRel: pairs with the Acquire loads of `generation`, `is_ready` and the clears
        // (the clears' compare-and-swaps may race with this one: hence the loop).
        let _ = self
            .word(d)
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                Some((w | flags).wrapping_add(1 << GEN_SHIFT))
            });
    }

    /// Clears `READY` in `d`'s word unless the generation moved from `generation` or a flag
    /// of `keep` is set; false if it did not (the flag may already have been clear).
    fn clear_if(&self, d: Dir, generation: u64, keep: u64) -> bool {
        // AcqRel: as in `bump`.
        self.word(d)
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                (w >> GEN_SHIFT == generation && w & keep == 0).then_some(w & !READY)
            })
            .is_ok()
    }

    /// Sets the hook the driver runs after each read-readiness event (once).
    pub(crate) fn set_on_readable(&self, f: Box<dyn Fn() + Send + Sync>) {
        let _ = self.on_readable.set(f);
    }

    /// Marks `d` ready (for good against `clear_drained` if `peer_closed`) and commits every
    /// waiter queued on it.
    fn set_ready(&self, d: Dir, peer_closed: bool) {
        let waiters = {
            let mut st = lock(self.dir(d));
            self.bump(d, READY | if peer_closed { PEER_CLOSED } else { 0 });
            (
                take_queue(&mut st.waiters.q),
                st.task.take(),
                st.awaiting.take(),
            )
        };
        wake_all(waiters);
        if d == Dir::Read {
            if let Some(f) = self.on_readable.get() {
                f();
            }
        }
    }

    /// Marks `d` ready and wakes its waiters as an edge does, without the read hook: bytes
    /// came to a stream's read buffer by another way than the socket (a read event that lost
    /// gave them back on the driver's thread, see `net::read`), so a plain read that is
    /// waiting for the socket, which those bytes have drained, looks again and finds them.
    /// The generation moves on too, so a read that checked the buffer before the bytes came
    /// does not clear this readiness with its `WouldBlock`.
    pub(crate) fn announce(&self, d: Dir) {
        let waiters = {
            let mut st = lock(self.dir(d));
            self.bump(d, READY);
            (
                take_queue(&mut st.waiters.q),
                st.task.take(),
                st.awaiting.take(),
            )
        };
        wake_all(waiters);
    }

    /// Makes both directions ready for good and wakes their waiters (deregistration, driver
    /// stop, or a listener closed by its owner).
    pub(crate) fn close(&self) {
        for d in [Dir::Read, Dir::Write] {
            let waiters = {
                let mut st = lock(self.dir(d));
                self.bump(d, READY | CLOSED);
                (
                    take_queue(&mut st.waiters.q),
                    st.task.take(),
                    st.awaiting.take(),
                )
            };
            wake_all(waiters);
        }
        if let Some(f) = self.on_readable.get() {
            f();
        }
    }

    /// Whether the source is closed (see `close`).
    pub(crate) fn is_closed(&self) -> bool {
        // Acquire: as in `bump`.
        self.word(Dir::Read).load(Ordering::Acquire) & CLOSED != 0
    }

    /// Whether `d` looks ready (or is closed).
    pub(crate) fn is_ready(&self, d: Dir) -> bool {
        // Acquire: as in `bump`.
        self.word(d).load(Ordering::Acquire) & READY != 0
    }

    /// The current generation of `d`: take it before an operation's system call.
    pub(crate) fn generation(&self, d: Dir) -> u64 {
        // Acquire: as in `bump`.
        self.word(d).load(Ordering::Acquire) >> GEN_SHIFT
    }

    /// Clears `d`'s readiness after an operation saw `WouldBlock`, unless an event arrived
    /// since `generation` was read (or the source is closed).
    pub(crate) fn clear_ready(&self, d: Dir, generation: u64) {
        self.clear_if(d, generation, CLOSED);
    }

    /// Clears `d`'s readiness after a read of a stream returned less than it asked for
    /// (edge-triggered epoll: the socket's buffer was drained), as `clear_ready` does after
    /// `WouldBlock`, unless an event arrived since `generation` was read or the peer closed
    /// its side (then the end of the stream is still to be read, and no edge will come).
    pub(crate) fn clear_drained(&self, d: Dir, generation: u64) {
        self.clear_if(d, generation, CLOSED | PEER_CLOSED);
    }

    /// After a poll-style operation saw `WouldBlock`: unless an event arrived since
    /// `generation` was read (or the source is closed), clears `d`'s readiness and parks
    /// `waker` to be woken by the next event, returning `true`; else returns `false` (try
    /// again). Clearing and parking under one lock, so no edge falls between them.
    pub(crate) fn clear_and_park(&self, d: Dir, generation: u64, waker: &std::task::Waker) -> bool {
        let mut st = lock(self.dir(d));
        if !self.clear_if(d, generation, CLOSED) {
            return false;
        }
        match &mut st.task {
            Some(t) if t.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
        true
    }

    /// For a poll-style read that waits for readiness before its system call: unless `d` is
    /// ready (or closed), parks `waker` in the poll-style slot, as `clear_and_park` does, and
    /// returns `true`; `false` (go ahead) if it is ready. One lock, so no event is missed.
    pub(crate) fn park_task_unless_ready(&self, d: Dir, waker: &std::task::Waker) -> bool {
        let mut st = lock(self.dir(d));
        if self.is_ready(d) {
            return false;
        }
        match &mut st.task {
            Some(t) if t.will_wake(waker) => {}
            slot => *slot = Some(waker.clone()),
        }
        true
    }

    /// Parks `waker` to be woken by `d`'s next readiness event, unless `d` is ready (checked
    /// under the same lock, so no event is missed) or another task's waker is parked there.
    /// A waker left by an async operation that was dropped stays until the next event wakes
    /// it (a spurious wake-up of its task); meanwhile other tasks wait through the queue.
    pub(crate) fn park_unless_ready(&self, d: Dir, waker: &std::task::Waker) -> Park {
        let mut st = lock(self.dir(d));
        if self.is_ready(d) {
            return Park::Ready;
        }
        match &mut st.awaiting {
            Some(t) if t.will_wake(waker) => Park::Parked,
            Some(_) => Park::Taken,
            slot => {
                *slot = Some(waker.clone());
                Park::Parked
            }
        }
    }

    /// Enqueues `w` on `d` unless `d` is ready; returns whether it was enqueued. The check and
    /// the enqueue are under one lock, so a readiness event is never missed.
    pub(crate) fn enqueue_unless_ready(&self, d: Dir, w: Waiter) -> bool {
        let mut st = lock(self.dir(d));
        if self.is_ready(d) {
            return false;
        }
        st.waiters.push(w);
        true
    }
}

/// The waiters to commit (`None`: the queue was empty) and the parked tasks to wake; nothing
/// to deliver but the wake-up.
type Woken = (
    Option<VecDeque<Waiter>>,
    Option<std::task::Waker>,
    Option<std::task::Waker>,
);

/// Takes the queued waiters, if any: an empty queue keeps its buffer, and nothing is dropped
/// (a readiness event usually finds no blocked sync: tasks wait in the waker slots).
fn take_queue(q: &mut VecDeque<Waiter>) -> Option<VecDeque<Waiter>> {
    (!q.is_empty()).then(|| std::mem::take(q))
}

/// Commits each waiter (skipping dead ones) and wakes the parked tasks.
fn wake_all((waiters, task, awaiting): Woken) {
    if let Some(t) = task {
        t.wake();
    }
    if let Some(t) = awaiting {
        t.wake();
    }
    if let Some(q) = waiters {
        commit_waiters(q);
    }
}

/// Commits each queued waiter, skipping dead ones. Out of line: a readiness event usually
/// finds no blocked sync, and the common path then has no queue to drop.
#[cold]
#[inline(never)]
fn commit_waiters(q: VecDeque<Waiter>) {
    for w in q {
        if let Some(commit) = w.synch_spinning() {
            commit.publish();
        }
    }
}

impl Readiness for ScheduledIo {
    fn ready(&self, d: Dir, peer_closed: bool) {
        self.set_ready(d, peer_closed);
    }

    fn close(&self) {
        ScheduledIo::close(self);
    }
}

#[cfg(all(test, not(pcml_loom)))]
mod tests {
    use std::future::{Future, IntoFuture};
    use std::task::{Context, Waker};

    use super::*;

    impl ScheduledIo {
        fn queued(&self, d: Dir) -> usize {
            lock(self.dir(d)).waiters.q.len()
        }
    }

    #[test]
    fn abandoned_readiness_waits_are_swept_not_kept() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        let a = crate::io::Async::new(a).unwrap();
        let sio = a.sio().clone();
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..1000 {
            // Queue a readiness wait, then abandon it (a dropped `.await`).
            let mut fut = Box::pin(a.readable_evt().into_future());
            assert!(fut.as_mut().poll(&mut cx).is_pending());
        }
        assert!(
            sio.queued(Dir::Read) <= 2 * crate::sync_var::waiters::SWEEP_AT,
            "{} dead waiters kept",
            sio.queued(Dir::Read)
        );
    }

    #[test]
    fn a_stale_clear_keeps_a_newer_edge() {
        let sio = ScheduledIo::new();
        let before = sio.generation(Dir::Read);
        sio.set_ready(Dir::Read, false); // an edge arrives during the operation
        sio.clear_ready(Dir::Read, before); // the operation saw WouldBlock
        assert!(sio.is_ready(Dir::Read), "the edge was lost");
        sio.clear_ready(Dir::Read, sio.generation(Dir::Read));
        assert!(!sio.is_ready(Dir::Read));
        sio.close();
        sio.clear_ready(Dir::Read, sio.generation(Dir::Read));
        assert!(
            sio.is_ready(Dir::Read) && sio.is_ready(Dir::Write),
            "closed stays ready"
        );
    }
}
