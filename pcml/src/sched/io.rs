//! The I/O poller (Morrisett and Tolmach 1992, section 4.4, and "Smarter I/O" in section 8): one
//! `mio` poller per runtime turns the kernel's readiness notifications into calls on the
//! readiness state of each registered source. The runtime's procs poll it themselves: an idle
//! proc sleeps in `epoll_wait`, a busy one looks every few turns, and a backstop thread looks
//! only when no proc has for a while.
//!
//! A runtime's driver starts on the first registration made from one of its procs and stops
//! when the runtime is dropped (`Runtime::drop` stops its thread and joins it, after the
//! procs). Sources created outside any runtime (plain OS threads, other executors such as
//! tokio, `spawn_blocking` jobs) register with one process-wide fallback driver, started on
//! first use and never stopped, whose thread blocks in `epoll_wait` for them, like the fallback
//! timer thread of `sched::timer`.
//!
//! This layer knows nothing of events or waiters: a source registers with an
//! `Arc` of something that implements [`Readiness`], which the driver keeps in a small heap
//! entry whose address is the source's epoll token, as tokio puts its `ScheduledIo`'s
//! address there: an event reaches the source's state with no table lookup, lock or reference
//! count. The source is registered edge-triggered for both directions; on an event the driver
//! calls `Readiness::ready` for each direction it reports (one virtual call per event, beside a
//! system call), and `Readiness::close` when the source is deregistered or the driver stops.
//!
//! # Poll sections, and when an entry is freed
//! One thread at a time polls a driver: it takes the driver's poll section (a flag taken by
//! compare-exchange), calls `epoll_wait` and dispatches what it collected, then ends the
//! section; a thread that finds it taken does not poll (the holder collects the events and
//! wakes whoever they concern). A deregistered source's entry is queued, after
//! `epoll_ctl(EPOLL_CTL_DEL)` returned, and freed at the end of a section (by the
//! deregistering thread itself if it can take the section at once). The kernel serializes
//! the copy of ready events to user space with the removal, so an event that names the entry
//! was collected before the removal, in a section that began before the entry was queued:
//! that section has dispatched it before any section can free the entry. A thread that holds
//! the section while it blocks in `epoll_wait` (an idle proc, the fallback's thread) frees
//! what was queued meanwhile when it wakes; past `RELEASE_WAKE` queued entries the
//! deregistering thread wakes it through the waker. Before, the token was a slab key and each
//! event took the table's mutex and cloned an `Arc` (4 atomic read-modify-writes an event);
//! callgrind counts little for them (`examples/echo_load pcml 1 0 N`, whole process,
//! difference of N = 200 and 600: 3,547 -> 3,512 instructions a round trip), since it counts
//! an atomic read-modify-write as one instruction.
//! The layer above (`io::readiness`) implements it: it keeps per direction the readiness flag,
//! the generation, the queue of blocked syncs and the task waker slots, and commits the
//! waiters through the event protocol.
//!
//! # Who polls
//! As tokio's and Go's schedulers do, the procs are the poller's first users:
//! - A proc about to park (`Context::sleep`) takes the poller role if no other proc has it
//!   (`Driver::park_proc`) and sleeps in `epoll_wait` instead of on its futex, for as long as
//!   it would have parked. Readiness wakes it from the kernel, and it dispatches the events
//!   itself once it counts itself awake: a task or fiber of its own that they wake goes on its
//!   own queues, with no other thread in between. The other idle procs park on their futexes.
//!   Waking the proc in the poller (`Shared::unpark`, for an inbox message, new work, a
//!   shutdown) leaves the parker's token and writes the poller's `mio::Waker`, an eventfd; the
//!   token is looked at after taking the role and before each wait, and the waker is written
//!   after leaving the token, with a SeqCst fence between on both sides, so no wake-up is lost.
//!   `epoll_wait` counts in milliseconds: a park shorter than one (a timer due sooner) sleeps
//!   on the futex, and a longer one wakes at the whole millisecond before its deadline and
//!   parks again for the rest.
//! - A spinning proc takes a non-blocking look (`Driver::poll_now`, Go's `netpoll(0)`) between
//!   its looks for work, and a busy proc every 64th turn (every other timers' turn, see
//!   `worker::IO_EVERY`), unless a proc waits in the poller (the kernel wakes that one) or
//!   another thread holds the poll section. Every 32nd turn cost a 2-proc hyper server 7% more
//!   CPU time a request: its procs' cores were each shared with a `wrk` thread, which took
//!   the core at every response written.
//! - The driver's thread (`Driver::run_backstop`) never blocks in `epoll_wait`: it wakes every
//!   1 ms to 100 ms (doubling while it finds nothing) and looks only if no proc looked since
//!   its last wake and none waits in the poller: every proc is then busy in one long turn
//!   (a fiber computing), and a thread outside the runtime that waits on one of its sockets
//!   would otherwise wait for that turn to end. What it finds wakes procs through the
//!   injector and inboxes, as any wake-up from outside.
//!
//! Before, the driver thread blocked in `epoll_wait` and woke the procs through their futexes:
//! every readiness event crossed from it to a proc. With `examples/echo_load` (100 loopback
//! connections, each 500 round trips of 64 bytes, against a tokio client in the same
//! process; `/usr/bin/time`, 7 runs alternating with the old binary and with tokio on the
//! shared 2-core machine at load 10-12), the process's CPU time per round trip went from
//! 28.0 us to 21.6 us median on 1 proc (tokio `current_thread`: 18.2 us) and from 27.2 us to
//! 23.0 us on 2 procs (tokio `multi_thread(2)`: 21.4 us). `strace -c -f` over 100 x 200
//! round trips on 1 proc: 30,376 `epoll_wait` and 1,836 `futex` calls before, 11,296 and
//! 1,111 after, tokio 7,538 and none; on 2 procs 26,077 and 3,762 before, 10,162 and 503
//! after. The same `strace -c -f examples/echo_load pcml 1 0 200` today (its load reads only
//! what a readiness event announced; the machine at load 10-12): 11,008 `epoll_wait` and 269
//! `futex` calls on 1 proc, tokio 12,583 and 4; on 2 procs 6,948 and 5,781, tokio
//! `multi_thread(2)` 9,352 and 9,908. An earlier try had the idle proc sleep on an epoll set
//! of its own holding the poller's descriptor while the driver thread still blocked in the
//! poller: both woke for every event and raced for it, and it measured slower than the futex
//! park (23.6 k against 30.0 k round trips/s). Here only one thread ever blocks in the
//! poller.
//!
//! Under the hyper server of `examples/hyper_server` (`wrk -t2 -c100` on loopback; `perf stat
//! --per-thread` of the `syscalls` tracepoints over a 4 s run), a request costs the proc on 1
//! proc one `recvfrom` (0.0004 of them failing), one `writev`, 0.049 `epoll_wait` (0.017 that
//! found nothing: an idle proc's looks) and 0.009 `pread64` (the crowding look,
//! `worker::crowd`): 2.062 system calls in all, against 2.024 on tokio's `current_thread`
//! (0.018 `epoll_wait`). The watchdog's thread adds 0.004 a request (100 wake-ups a second,
//! each a timed `futex` wait and a read of a proc's CPU clock) and this driver's backstop
//! thread 0.0002. On 2 procs: 2.126 against tokio's 2.073.
//!
//! # Differences from the paper
//! Seed 004 calls `select` before each blocking operation on the proc that performs it and
//! relies on timer signals to preempt a thread stuck in I/O; its section 8 weighs handing I/O
//! to extra kernel threads, which either busy-wait (wasting cycles) or block (costing a
//! wake-up). Here no fiber ever blocks its proc in a system call: an idle proc waits for all
//! the runtime's sources at once, and the backstop thread covers procs that are all busy.
//!
//! # Invariants
//! - `Readiness::close` is called for every source still registered when its driver stops, and
//!   for each source when its registration is dropped, so nothing blocks on a source that can
//!   never fire again.
//! - A token is the address of a live entry: an entry is freed only at the end of a poll
//!   section that began after its source was deregistered (see above). An event for a source
//!   deregistered since (its readiness already closed) only makes it ready again, which every
//!   operation tolerates.
//! - Only the holder of the poll section calls `epoll_wait` on a driver's poller.
//! - The driver holds no reference to a source's owner, only to its readiness state: sockets own
//!   their registration, never the other way round, so nothing leaks through a cycle.
//! - Whoever takes a driver's source count to 0 kicks the runtime it serves (every runtime,
//!   for the fallback) after a SeqCst fence: deadlock detection counts registered sources as
//!   able to wake a thread and parks without a re-check while there are any.

use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering, fence};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::event::Source;
use mio::{Interest, Poll, Token, Waker};
use slab::Slab;

use crate::sched::worker::{self, ProcShared, Shared};

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
    /// The poller. Every `epoll_ctl` and `epoll_wait` goes through its one descriptor, never
    /// a duplicate (`Registry::try_clone` duplicates it with `fcntl(F_DUPFD_CLOEXEC)`):
    /// ThreadSanitizer orders a registration before the waits that may return its token by
    /// the descriptor, and it does not follow that `fcntl`, so with a duplicate it reported
    /// every dispatch's read of an `Entry` as a race with its allocation.
    poll: Poll,
    /// Wakes the driver thread out of `poll` to stop it.
    waker: Waker,
    /// Registered sources, by slab key (for `finish` and the count; dispatch goes through
    /// the epoll token, the address of the registration's `Entry`).
    sources: Mutex<Slab<Arc<dyn Readiness>>>,
    /// Held by the one thread that polls the poller and dispatches what it collected (a
    /// "poll section": `try_poll_section`): a proc in `park_proc` (until `dispatch_polled`),
    /// a look by `poll_now`, or the fallback's thread. CAS Acquire, store Release: a section
    /// that frees the entries in `released` happens after every earlier section's
    /// dispatches, which may have read them.
    polling: AtomicBool,
    /// Entries of deregistered sources, freed by a thread that holds the poll section when
    /// it ends (or by the deregistering thread if it can take the section at once): an
    /// event collected before the deregistration may still point at one until then.
    released: Mutex<Vec<EntryPtr>>,
    /// `released.len()`, a hint read without the lock. Relaxed: an entry missed is freed by
    /// a later section, never early.
    released_len: AtomicUsize,
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
    /// The proc that holds the poller role (blocked in `epoll_wait`, or about to be), as the
    /// address of its `ProcShared`; 0 when none. Taken by a SeqCst compare-exchange in
    /// `park_proc` (its half of the Dekker pair with `unpark_poller`), released Relaxed (an
    /// unparker that still sees the proc there only makes a spurious wake-up).
    poller: AtomicUsize,
    /// Counts the looks at the poller by procs, so the backstop thread knows whether anyone
    /// looked during its last interval. Relaxed: a hint.
    polls: AtomicUsize,
    /// Set if `epoll_wait` failed in a proc: procs no longer park in the poller.
    proc_poll_failed: AtomicBool,
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
        let waker = Waker::new(poll.registry(), WAKER)?;
        let driver = Arc::new(Driver {
            poll,
            waker,
            sources: Mutex::new(Slab::new()),
            polling: AtomicBool::new(false),
            released: Mutex::new(Vec::new()),
            released_len: AtomicUsize::new(0),
            registered: AtomicUsize::new(0),
            owner,
            stopped: AtomicBool::new(false),
            thread: Mutex::new(None),
            poller: AtomicUsize::new(0),
            polls: AtomicUsize::new(0),
            proc_poll_failed: AtomicBool::new(false),
        });
        let d = driver.clone();
        let handle = std::thread::Builder::new().name(name).spawn(move || {
            let _own = crate::sched::outside::OwnThread::enter();
            // A runtime's procs poll its driver themselves: its thread is only a backstop.
            // The fallback's thread blocks in `epoll_wait` for the threads it serves.
            if d.owner.is_some() {
                d.run_backstop()
            } else {
                d.run()
            }
        })?;
        *lock(&driver.thread) = Some(handle);
        Ok(driver)
    }

    /// The fallback driver thread's loop.
    fn run(&self) {
        let mut polled = Polled::new();
        loop {
            // The only thread that polls the fallback, but a deregistering thread may hold
            // the section for a moment to free entries.
            let section = self.poll_section();
            // A signal's interruption collects nothing and is no error.
            if let Err(e) = polled.wait(self.registry(), -1) {
                // Nothing sensible to retry: stop, and let every waiter see its source closed
                // rather than hang.
                crate::log::io_driver_error("the I/O driver stopped: epoll_wait failed", &e);
                break;
            }
            // SAFETY: collected in `section`, held until after the dispatch.
            unsafe { polled.dispatch(self) };
            drop(section);
            // Acquire: pairs with the Release store in `shutdown`.
            if self.stopped.load(Ordering::Acquire) {
                break;
            }
        }
        self.finish();
    }

    /// The thread of a runtime's driver: its procs poll the poller themselves (an idle proc
    /// blocks in `epoll_wait`, `park_proc`; a busy one looks every few turns, `poll_busy`),
    /// so this thread only looks when none did for a whole interval (every proc busy in one
    /// long turn, or asleep on its futex with no proc in the poller), for the threads outside
    /// the runtime that may wait on its sockets. Its interval doubles from `BACKSTOP_MIN` up
    /// to `BACKSTOP_MAX` while it finds nothing to do.
    fn run_backstop(&self) {
        let mut interval = BACKSTOP_MIN;
        // Relaxed: hints (see the fields).
        let mut seen = self.polls.load(Ordering::Relaxed);
        while !self.is_stopped() {
            std::thread::park_timeout(interval);
            if self.is_stopped() {
                break;
            }
            let polls = self.polls.load(Ordering::Relaxed);
            let found = if polls != seen || self.poller.load(Ordering::Relaxed) != 0 {
                0
            } else {
                self.poll_now()
            };
            seen = self.polls.load(Ordering::Relaxed);
            interval = if found > 0 {
                BACKSTOP_MIN
            } else {
                (interval * 2).min(BACKSTOP_MAX)
            };
        }
        self.finish();
    }

    /// The end of the driver thread: nothing will fire any more, so every source's waiters
    /// wake, for good.
    fn finish(&self) {
        self.stopped.store(true, Ordering::Release);
        let all: Vec<_> = lock(&self.sources).iter().map(|(_, s)| s.clone()).collect();
        for s in all {
            s.close();
        }
    }

    /// Delivers one readiness event of the source whose token is `token`: no lock, no
    /// reference count, as tokio does (the token is the address of the registration's
    /// `Entry`).
    ///
    /// # Safety
    /// The caller holds the poll section in which `token` was collected by `epoll_wait`.
    unsafe fn dispatch(&self, token: usize, readable: bool, writable: bool, read_closed: bool) {
        // SAFETY: the token was registered as the address of an `Entry` (`register`), and an
        // entry is freed only after `epoll_ctl(EPOLL_CTL_DEL)` returned for its source and
        // then only by a holder of the poll section, at its end (`release`, `free_released`).
        // The kernel serializes the copy of ready events to user space with the removal, so
        // an event that names this entry was collected before the removal returned, in a
        // section that began before it: this one (still held by the caller), since every
        // section is exclusive and the entry was queued for release after the removal. The
        // section's Acquire on entry orders earlier sections' frees before our read. (The
        // source may be deregistered already: its readiness is then closed, and this event
        // only makes it ready again, which nothing waits for.)
        let sio = &*unsafe { &*(token as *const Entry) }.sio;
        if readable || read_closed {
            sio.ready(Dir::Read, read_closed);
        }
        if writable {
            sio.ready(Dir::Write, false);
        }
    }

    /// One non-blocking look at the poller (Go's `netpoll(0)` in `findrunnable`), by a
    /// spinning proc, a busy one every few turns, or the backstop thread: the events it
    /// collects are dispatched here (on a proc, their tasks and fibers wake onto its own
    /// queues). Returns how many events it dispatched.
    fn poll_now(&self) -> usize {
        if self.registered() == 0 || self.is_stopped() {
            return 0;
        }
        // Another thread polls (a proc asleep in `epoll_wait` is woken by the kernel for
        // what we would collect).
        let Some(section) = self.try_poll_section() else {
            return 0;
        };
        // Relaxed: a hint for the backstop.
        self.polls.fetch_add(1, Ordering::Relaxed);
        let mut polled = Polled::new();
        // An error: the next look will see the events. The waker's event, if it came, is
        // stale: the proc it was meant for waits in the poller only in a section of its own,
        // and takes its token itself.
        let _ = polled.wait(self.registry(), 0);
        // SAFETY: collected in `section`, held until after the dispatch.
        let n = unsafe { polled.dispatch(self) };
        drop(section);
        n
    }

    /// Takes the poll section (see `polling`) if no other thread holds it.
    fn try_poll_section(&self) -> Option<PollSection<'_>> {
        // Acquire: pairs with the Release store of the previous section's end, so its
        // dispatches happen before any entry this section frees.
        self.polling
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| PollSection(self))
    }

    /// Takes the poll section, waiting for its holder (the fallback's thread, against a
    /// deregistering thread that frees entries: a moment).
    fn poll_section(&self) -> PollSection<'_> {
        loop {
            if let Some(s) = self.try_poll_section() {
                return s;
            }
            std::thread::yield_now();
        }
    }

    /// Frees the entries of deregistered sources. The caller holds the poll section and has
    /// dispatched every event it collected in it.
    fn free_released(&self) {
        // Relaxed: a hint; an entry pushed meanwhile is freed by a later section.
        if self.released_len.load(Ordering::Relaxed) == 0 {
            return;
        }
        let gone = {
            let mut released = lock(&self.released);
            self.released_len.store(0, Ordering::Relaxed);
            std::mem::take(&mut *released)
        };
        // Outside the lock: dropping a source's readiness may drop another registration,
        // which queues its entry here.
        for e in gone {
            // SAFETY: see `dispatch`: the source was deregistered before its entry was
            // queued, and no section but ours runs, with no event of ours left.
            unsafe { e.free() };
        }
    }

    /// Frees the entry of a source deregistered from the poller, now if no thread polls,
    /// else when the section that polls ends.
    fn release(&self, e: EntryPtr) {
        let queued = {
            let mut released = lock(&self.released);
            released.push(e);
            self.released_len.store(released.len(), Ordering::Relaxed);
            released.len()
        };
        match self.try_poll_section() {
            // Frees at its end.
            Some(section) => drop(section),
            // The holder may be blocked in `epoll_wait` for long (an idle proc, the
            // fallback's thread): past a few entries, have it look.
            None if queued >= RELEASE_WAKE => {
                let _ = self.waker.wake();
            }
            // Freed by the section that polls.
            None => {}
        }
    }

    /// Parks the idle proc `p` (its `Parker`'s protocol: true if a token woke it, false if
    /// `timeout` passed), in `epoll_wait` on this poller if no other proc is there, so that
    /// readiness wakes it from the kernel with no other thread in between; the events it
    /// brings back are left in `polled`, for the proc to dispatch once it counts itself
    /// awake. An `unpark` reaches it through the poller's waker (`Shared::unpark`). A wait
    /// shorter than a millisecond (`epoll_wait`'s unit), or with another proc in the poller,
    /// parks on the futex as before.
    fn park_proc<'a>(
        &'a self,
        p: &ProcShared,
        timeout: Option<Duration>,
        polled: &mut Polled<'a>,
    ) -> bool {
        let ms = match timeout {
            None => -1,
            Some(t) => match t.as_millis() {
                0 => return p.parker.park(timeout),
                ms => ms.min(i32::MAX as u128) as i32,
            },
        };
        // Relaxed: a flag set once, on an error that should not happen.
        if self.registered() == 0
            || self.is_stopped()
            || self.proc_poll_failed.load(Ordering::Relaxed)
        {
            return p.parker.park(timeout);
        }
        // One thread polls at a time (see `polling`); the one that does collects the events
        // this proc would have, and wakes whoever they concern.
        let Some(section) = self.try_poll_section() else {
            return p.parker.park(timeout);
        };
        let me = std::ptr::from_ref(p) as usize;
        // SeqCst, and the fence: the sleeper's half of the Dekker pair with `unpark_poller`
        // (role taken, then the token looked at; the unparker leaves the token, then looks
        // at the role), so a token is either seen here or followed by a wake of the poller.
        if self
            .poller
            .compare_exchange(0, me, Ordering::SeqCst, Ordering::Relaxed)
            .is_err()
        {
            drop(section);
            return p.parker.park(timeout);
        }
        fence(Ordering::SeqCst);
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut ms = ms;
        let woken = loop {
            if p.parker.take_token() {
                break true;
            }
            // No event of this section is left undispatched between two waits: released
            // entries may go (a waker's event asked for that, `release`).
            self.free_released();
            if let Err(e) = polled.wait(self.registry(), ms) {
                // Not expected (the descriptor is ours): sleep on the futex instead, and
                // leave the poller to the others and the backstop.
                if !self.proc_poll_failed.swap(true, Ordering::Relaxed) {
                    crate::log::io_driver_error(
                        "epoll_wait failed in an idle proc; procs now sleep on their futex",
                        &e,
                    );
                }
                self.poller.store(0, Ordering::Relaxed);
                drop(section);
                let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
                return p.parker.park(left);
            }
            if polled.len > 0 {
                // Readiness counts as a wake-up (a token that came too is consumed: the proc
                // looks for work next anyway).
                p.parker.take_token();
                break true;
            }
            // The waker without a token (a stale unpark), events that a spinning proc took
            // first, a signal, or the timeout.
            match deadline {
                None => {}
                Some(d) => match d.saturating_duration_since(Instant::now()).as_millis() {
                    0 => break p.parker.take_token(),
                    left => ms = left.min(i32::MAX as u128) as i32,
                },
            }
        };
        // Relaxed: see the field.
        self.poller.store(0, Ordering::Relaxed);
        self.polls.fetch_add(1, Ordering::Relaxed);
        if polled.len > 0 {
            // The section ends once the proc dispatched them (`Shared::dispatch_polled`).
            polled.section = Some(section);
        }
        woken
    }

    /// After `p`'s parker got a token: if `p` waits in `epoll_wait` (`park_proc`), wake it
    /// through the poller's waker.
    fn unpark_poller(&self, p: &ProcShared) {
        // SeqCst fence: the unparker's half of the Dekker pair with `park_proc` (the token is
        // left, by `Parker::unpark`, before this fence; the role is read after it).
        fence(Ordering::SeqCst);
        if self.poller.load(Ordering::Relaxed) == std::ptr::from_ref(p) as usize {
            let _ = self.waker.wake();
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
            // The backstop thread sleeps on its thread parker.
            h.thread().unpark();
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
        let entry = EntryPtr::new(sio.clone());
        let key = {
            let mut sources = lock(&self.sources);
            let key = sources.insert(sio.clone());
            self.registered.store(sources.len(), Ordering::Relaxed);
            key
        };
        if let Err(e) = self.registry().register(
            &mut src,
            entry.token(),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            // SAFETY: never registered with the poller, so no event names it.
            unsafe { entry.free() };
            let mut sources = lock(&self.sources);
            sources.remove(key);
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
            key,
            entry,
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

    /// The poller's registry: its descriptor, for `epoll_ctl` and `epoll_wait` (see `poll`).
    fn registry(&self) -> &mio::Registry {
        self.poll.registry()
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

    /// Lets a busy proc collect ready I/O every few turns, unless an idle proc waits in the
    /// poller (it is woken by the kernel for that).
    #[inline]
    pub(crate) fn poll_io_busy(&self) {
        if let Some(d) = self.io.get()
            // Relaxed: a hint.
            && d.poller.load(Ordering::Relaxed) == 0
        {
            d.poll_now();
        }
    }

    /// Parks proc `p` of this runtime, in the I/O poller when it can (`Driver::park_proc`);
    /// returns whether a token woke it. Events it brought back are left in `polled`, with
    /// the poll section: dispatch them soon (`dispatch_polled`), other procs do not poll
    /// meanwhile.
    pub(crate) fn park_proc<'a>(
        &'a self,
        p: &ProcShared,
        timeout: Option<Duration>,
        polled: &mut Polled<'a>,
    ) -> bool {
        match self.io.get() {
            Some(d) => d.park_proc(p, timeout, polled),
            None => p.parker.park(timeout),
        }
    }

    /// Dispatches the events a park left in `polled` and ends its poll section (see
    /// `park_proc`).
    pub(crate) fn dispatch_polled(&self, polled: &mut Polled<'_>) {
        polled.end();
    }

    /// Leaves a token for proc `p` and wakes it, from its futex or from the I/O poller.
    pub(crate) fn unpark(&self, p: &ProcShared) {
        // Procs that share an OS thread sleep on the first one's parker.
        let p = &*self.procs[p.carrier];
        p.parker.unpark();
        if let Some(d) = self.io.get() {
            d.unpark_poller(p);
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
    /// Its key in the driver's `sources`.
    key: usize,
    /// Its entry, whose address is its epoll token: released (freed once no event can name
    /// it) on drop.
    entry: EntryPtr,
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
        // (the driver, which this registration holds, keeps the poller open).
        let deregistered = self.driver.registry().deregister(&mut self.source);
        {
            let mut sources = lock(&self.driver.sources);
            // The same allocation (compared by address: one side is a trait object).
            let mine = Arc::as_ptr(&self.sio).cast::<()>();
            if sources
                .get(self.key)
                .is_some_and(|s| Arc::as_ptr(s).cast::<()>() == mine)
            {
                sources.remove(self.key);
            }
            self.driver
                .registered
                .store(sources.len(), Ordering::Relaxed);
            if sources.is_empty() {
                drop(sources);
                self.driver.sources_gone();
            }
        }
        // If deregistering failed (not expected: the descriptor is ours and open), the
        // poller may still hold the token: the entry is kept for good (a few bytes) rather
        // than freed under an event that may still name it.
        if deregistered.is_ok() {
            self.driver.release(self.entry);
        }
        self.sio.close();
    }
}

impl<S: Source + fmt::Debug, R: Readiness> fmt::Debug for Registered<S, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registered")
            .field("source", &self.source)
            .field("key", &self.key)
            .finish()
    }
}

/// The error of an operation on a source whose driver stopped.
pub(crate) fn closed_error() -> io::Error {
    stopped_error()
}

/// How long the backstop thread of a runtime's driver first waits between its looks (see
/// `Driver::run_backstop`), and again after a look that found events.
const BACKSTOP_MIN: Duration = Duration::from_millis(1);
/// The longest it waits.
const BACKSTOP_MAX: Duration = Duration::from_millis(100);

/// How many entries of deregistered sources may wait for a thread blocked in the poller
/// before the deregistering thread wakes it to free them (`Driver::release`).
const RELEASE_WAKE: usize = 64;

/// Events collected by one `epoll_wait` (up to `Polled::CAP`), not yet dispatched.
pub(crate) struct Polled<'a> {
    evs: [libc::epoll_event; Polled::CAP],
    /// Events in `evs`, the waker's left out.
    len: usize,
    /// The poll section they were collected in, when `park_proc` hands them over: ended
    /// (after a dispatch of what is left) by `end`, or on drop.
    section: Option<PollSection<'a>>,
}

impl<'a> Polled<'a> {
    const CAP: usize = 64;

    pub(crate) fn new() -> Self {
        Self {
            evs: [libc::epoll_event { events: 0, u64: 0 }; Self::CAP],
            len: 0,
            section: None,
        }
    }

    /// Dispatches what `park_proc` left here, and ends its section.
    fn end(&mut self) {
        if let Some(section) = self.section.take() {
            // SAFETY: collected in `section`, held until after the dispatch.
            unsafe { self.dispatch(section.0) };
            drop(section);
        }
    }

    /// One `epoll_wait` on the poller of `registry`, for at most `ms` milliseconds (-1:
    /// no limit); replaces what `self` held. An error collects nothing, and is returned
    /// unless it was a signal's interruption.
    fn wait(&mut self, registry: &mio::Registry, ms: i32) -> io::Result<()> {
        // SAFETY: `evs` is valid for writes of CAP entries; the descriptor is the poller's,
        // open while the registry (borrowed from it) lives.
        let n = unsafe {
            libc::epoll_wait(
                std::os::fd::AsRawFd::as_raw_fd(registry),
                self.evs.as_mut_ptr(),
                Self::CAP as libc::c_int,
                ms,
            )
        };
        let Ok(n) = usize::try_from(n) else {
            self.len = 0;
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::Interrupted => Ok(()),
                _ => Err(e),
            };
        };
        let mut len = 0;
        for i in 0..n {
            let ev = self.evs[i];
            // A copy of the field: `epoll_event` is packed on x86-64.
            if { ev.u64 } != WAKER.0 as u64 {
                self.evs[len] = ev;
                len += 1;
            }
        }
        self.len = len;
        Ok(())
    }

    /// Delivers the collected events; returns how many.
    ///
    /// # Safety
    /// The caller holds the poll section of `driver` in which they were collected.
    unsafe fn dispatch(&mut self, driver: &Driver) -> usize {
        let n = std::mem::take(&mut self.len);
        for ev in &self.evs[..n] {
            // Copies: `epoll_event` is packed on x86-64.
            let (flags, token) = (ev.events as libc::c_int, ev.u64);
            let err = flags & (libc::EPOLLERR | libc::EPOLLHUP) != 0;
            // SAFETY: the caller's promise.
            unsafe {
                driver.dispatch(
                    token as usize,
                    err || flags & (libc::EPOLLIN | libc::EPOLLPRI | libc::EPOLLRDHUP) != 0,
                    err || flags & libc::EPOLLOUT != 0,
                    err || flags & libc::EPOLLRDHUP != 0,
                );
            }
        }
        n
    }
}

impl Drop for Polled<'_> {
    fn drop(&mut self) {
        // Nothing collected is lost, and the section never stays held.
        self.end();
    }
}

/// A registration's entry in the driver: what its epoll token points to, so a readiness
/// event reaches the source's state with no lookup (tokio's `ScheduledIo` address in the
/// token). Owned by the registration until it deregisters, then by the driver's `released`
/// list until a poll section frees it (see `Driver::dispatch` for why that is late enough).
struct Entry {
    sio: Arc<dyn Readiness>,
}

/// The address of a heap-allocated [`Entry`] (see there for who frees it).
#[derive(Clone, Copy)]
struct EntryPtr(std::ptr::NonNull<Entry>);

// SAFETY: an `Entry` is `Send` and `Sync` (an `Arc` of a `Send + Sync` trait object); the
// pointer is only read through shared references until its single `free`.
unsafe impl Send for EntryPtr {}
// SAFETY: as for `Send`.
unsafe impl Sync for EntryPtr {}

impl EntryPtr {
    fn new(sio: Arc<dyn Readiness>) -> Self {
        Self(std::ptr::NonNull::from(Box::leak(Box::new(Entry { sio }))))
    }

    /// The epoll token that names it.
    fn token(self) -> Token {
        Token(self.0.as_ptr() as usize)
    }

    /// Frees the entry.
    ///
    /// # Safety
    /// Called once, when no event can name it any more and no thread reads it.
    unsafe fn free(self) {
        // SAFETY: allocated by `Box` in `new`, freed once (the caller's promise).
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

/// The poll section of a driver, held (see `Driver::polling`); ends on drop, freeing the
/// entries released meanwhile.
struct PollSection<'a>(&'a Driver);

impl Drop for PollSection<'_> {
    fn drop(&mut self) {
        self.0.free_released();
        // Release: pairs with the Acquire of the next `try_poll_section`.
        self.0.polling.store(false, Ordering::Release);
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        // No registration (each holds the driver) and no section (each borrows it) is left.
        for e in lock(&self.released).drain(..) {
            // SAFETY: deregistered, and nothing can poll any more.
            unsafe { e.free() };
        }
    }
}

#[cfg(all(test, not(pcml_loom)))]
mod tests {
    use super::*;

    /// Sources dropped while the driver's thread blocks in the poller, holding the poll
    /// section, some with an event on its way: their entries are freed once the thread
    /// wakes, and at most `RELEASE_WAKE` of them wait for it.
    #[test]
    fn entries_of_dropped_sources_are_freed() {
        use std::io::Write;
        // A driver of its own, run as the fallback's: its thread blocks in `epoll_wait`.
        let d = Driver::start("pcml-io-test".into(), None).unwrap();
        for i in 0..1000 {
            let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
            a.set_nonblocking(true).unwrap();
            let reg =
                crate::io::readiness::register_with(&d, mio::net::UnixStream::from_std(a)).unwrap();
            if i % 2 == 0 {
                // An event for the source, which the driver may dispatch after the drop.
                b.write_all(b"x").unwrap();
            }
            drop(reg);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        // Relaxed: written under the `released` lock; a hint is enough to poll on.
        while d.released_len.load(Ordering::Relaxed) >= RELEASE_WAKE {
            assert!(
                Instant::now() < deadline,
                "{} entries not freed",
                d.released_len.load(Ordering::Relaxed)
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(d.registered(), 0);
        d.shutdown();
    }
}
