//! Per-proc timers, driven by the scheduler (the time layer of Morrisett and Tolmach 1992, section 5).
//!
//! A timer lives on the proc that armed it, in a deadline heap that only that proc touches.
//! The worker fires due timers between threads, and an idle proc parks exactly until its
//! earliest deadline. A timer that is cancelled (its sleeper gave up, or a future was dropped)
//! is marked at once from any thread; the heap drops marked entries when it pops them, and
//! compacts itself when marked entries are three quarters of it, so a loop that arms and cancels
//! timers keeps memory bounded.
//!
//! Pending timers count as wake sources for deadlock detection: a thread that sleeps is not
//! deadlocked.
//!
//! # Invariants
//! - `TimerCell::state` goes `PENDING -> FIRED` (the owning proc, at the deadline) or
//!   `PENDING -> CANCELLED` (anyone), once; whoever makes that transition decrements the
//!   owning proc's count of wake sources (`ProcShared::wake`), which the arming incremented.
//! - The heap is touched only by its proc's worker thread.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use std::sync::{Condvar, Mutex, OnceLock};

use crossbeam_utils::CachePadded;

use crate::mp::SpinLock;
use crate::sched::blocker::Blocker;
use crate::sched::worker::{Shared, WakeSources};

const PENDING: u8 = 0;
const FIRED: u8 = 1;
const CANCELLED: u8 = 2;

/// What a timer does when it fires.
pub(crate) enum OnFire {
    /// Wake a blocked thread.
    Wake(Blocker),
    /// Run a short action (an event's commit); it must not block.
    Call(Box<dyn FnOnce() + Send>),
}

/// One armed timer, shared by its heap entry and whoever waits on it.
pub(crate) struct TimerCell {
    /// See the module invariants.
    state: AtomicU8,
    /// What to do when it fires; replaced by an async poller whose waker changed.
    waiter: SpinLock<Option<OnFire>>,
    /// The wake sources (`ProcShared::wake`) of the proc whose heap holds this timer, which
    /// count it (none for the fallback thread).
    owner: Option<Arc<CachePadded<WakeSources>>>,
}

impl TimerCell {
    /// Whether the timer has fired.
    pub(crate) fn has_fired(&self) -> bool {
        // Acquire: pairs with the Release CAS in `fire`.
        self.state.load(Ordering::Acquire) == FIRED
    }

    /// Makes `waker` the one woken at the deadline, unless the waiter already wakes the same
    /// task (the usual case of a future polled again by its task: no clone, no drop).
    pub(crate) fn set_waker(&self, waker: &std::task::Waker) {
        let mut w = self.waiter.lock();
        if let Some(OnFire::Wake(b)) = &*w
            && b.will_wake(waker)
        {
            return;
        }
        *w = Some(OnFire::Wake(Blocker::from_waker(waker.clone())));
    }

    /// Cancels the timer if it has not fired; returns whether this call cancelled it.
    pub(crate) fn cancel(&self) -> bool {
        // AcqRel: orders the cancellation with the owner's firing CAS (one of them wins).
        let won = self
            .state
            .compare_exchange(PENDING, CANCELLED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if won {
            self.waiter.lock().take();
            if let Some(wake) = &self.owner {
                // SeqCst: as in `fire`.
                wake.pending.fetch_sub(1, Ordering::SeqCst);
                // Relaxed: a hint for the owning proc's compaction.
                wake.timers_cancelled.fetch_add(1, Ordering::Relaxed);
            }
        }
        won
    }

    fn fire(&self) {
        // Release: publishes the firing to `has_fired`'s Acquire load in the woken thread.
        if self
            .state
            .compare_exchange(PENDING, FIRED, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            let waiter = self.waiter.lock().take();
            match waiter {
                Some(OnFire::Wake(w)) => w.unblock(),
                Some(OnFire::Call(f)) => f(),
                None => {}
            }
            if let Some(wake) = &self.owner {
                // SeqCst: deadlock detection reads this after the wake-up is visible.
                wake.pending.fetch_sub(1, Ordering::SeqCst);
            }
        }
        // Else cancelled meanwhile: nothing to do.
    }

    fn is_pending(&self) -> bool {
        self.state.load(Ordering::Acquire) == PENDING
    }
}

/// A proc's deadline heap.
pub(crate) struct TimerHeap {
    heap: BinaryHeap<Reverse<Entry>>,
    seq: u64,
    /// The proc that owns this heap.
    proc: usize,
}

struct Entry {
    deadline: Instant,
    seq: u64,
    cell: Arc<TimerCell>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.deadline, self.seq) == (other.deadline, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.deadline, self.seq).cmp(&(other.deadline, other.seq))
    }
}

impl TimerHeap {
    pub(crate) fn new(proc: usize) -> Self {
        Self {
            heap: BinaryHeap::new(),
            seq: 0,
            proc,
        }
    }

    /// Arms a timer of `shared` for `deadline` that does `on_fire` (if any).
    pub(crate) fn arm(
        &mut self,
        shared: &Arc<Shared>,
        deadline: Instant,
        on_fire: Option<OnFire>,
    ) -> Arc<TimerCell> {
        // SeqCst: a pending timer is a wake source from now on (deadlock detection).
        shared.procs[self.proc]
            .wake
            .pending
            .fetch_add(1, Ordering::SeqCst);
        let cell = Arc::new(TimerCell {
            state: AtomicU8::new(PENDING),
            waiter: SpinLock::new(on_fire),
            owner: Some(shared.procs[self.proc].wake.clone()),
        });
        // A thread that arms and cancels in a loop may not return to the worker for a long
        // time: compact here too, not only when timers fire.
        self.compact(shared);
        self.seq += 1;
        self.heap.push(Reverse(Entry {
            deadline,
            seq: self.seq,
            cell: cell.clone(),
        }));
        cell
    }

    /// The earliest deadline still in the heap (possibly of a cancelled timer).
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(e)| e.deadline)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Takes every timer due at `now` off the heap, for the caller to fire (with no borrow of
    /// the heap held, since firing may arm new timers).
    pub(crate) fn take_due(&mut self, shared: &Shared, now: Instant) -> Vec<Arc<TimerCell>> {
        let mut due = Vec::new();
        while let Some(Reverse(e)) = self.heap.peek() {
            if e.deadline > now {
                break;
            }
            let Reverse(e) = self.heap.pop().expect("peeked");
            due.push(e.cell);
        }
        self.compact(shared);
        due
    }

    /// Drops cancelled entries when they make up three quarters of the heap, in place.
    ///
    /// A compaction looks at every entry, so its cost a cancelled timer is the heap's size
    /// over the cancelled entries it drops: 4/3 of an entry at three quarters, against 2 at
    /// half, where this compacted before (with a copy of the heap into a new one). A server
    /// that arms a timeout a request and cancels it when the request comes (hyper's
    /// header-read timeout: 30 s, so none fires) pays this on every request; the heap then
    /// holds at most four times its live timers. Callgrind, `examples/hyper_server` on one
    /// proc under `wrk -t2 -c100`: the compaction took 205 instructions a request at half
    /// with the copy, about 95 at three quarters in place, of some 7,600 a request.
    fn compact(&mut self, shared: &Shared) {
        let counter = &shared.procs[self.proc].wake.timers_cancelled;
        // Relaxed: a hint; the filter below looks at each timer's own state.
        let cancelled = counter.load(Ordering::Relaxed);
        if cancelled > 64 && cancelled * 4 > self.heap.len() * 3 {
            counter.store(0, Ordering::Relaxed);
            self.heap.retain(|Reverse(e)| e.cell.is_pending());
        }
    }
}

/// Fires timers taken off a heap.
pub(crate) fn fire_all(cells: Vec<Arc<TimerCell>>) {
    for c in cells {
        c.fire();
    }
}

/// Timers for threads that are not on a proc (plain OS threads, other executors): one
/// process-wide thread, started on first use, fires them.
struct Fallback {
    heap: Mutex<BinaryHeap<Reverse<Entry>>>,
    cvar: Condvar,
}

/// Arms a timer on the fallback thread.
pub(crate) fn arm_fallback(deadline: Instant, on_fire: OnFire) -> Arc<TimerCell> {
    static FALLBACK: OnceLock<&'static Fallback> = OnceLock::new();
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let fb = *FALLBACK.get_or_init(|| {
        let fb: &'static Fallback = Box::leak(Box::new(Fallback {
            heap: Mutex::new(BinaryHeap::new()),
            cvar: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("pcml-timers".into())
            .spawn(move || fallback_thread(fb))
            .expect("pcml: could not start the timer thread");
        fb
    });
    let cell = Arc::new(TimerCell {
        state: AtomicU8::new(PENDING),
        waiter: SpinLock::new(Some(on_fire)),
        owner: None,
    });
    let mut heap = fb.heap.lock().unwrap();
    // Drop cancelled entries now and then so the heap stays bounded.
    if heap.len() > 64 && heap.len().is_power_of_two() {
        let live: Vec<_> = heap
            .drain()
            .filter(|Reverse(e)| e.cell.is_pending())
            .collect();
        *heap = live.into_iter().collect();
    }
    heap.push(Reverse(Entry {
        deadline,
        // Relaxed: only uniqueness matters.
        seq: SEQ.fetch_add(1, Ordering::Relaxed),
        cell: cell.clone(),
    }));
    drop(heap);
    fb.cvar.notify_one();
    cell
}

fn fallback_thread(fb: &'static Fallback) {
    let _own = crate::sched::outside::OwnThread::enter();
    let mut heap = fb.heap.lock().unwrap();
    loop {
        let now = Instant::now();
        let mut due = Vec::new();
        while let Some(Reverse(e)) = heap.peek() {
            if e.deadline > now {
                break;
            }
            due.push(heap.pop().expect("peeked").0.cell);
        }
        if !due.is_empty() {
            drop(heap);
            fire_all(due);
            heap = fb.heap.lock().unwrap();
            continue;
        }
        heap = match heap.peek().map(|Reverse(e)| e.deadline) {
            Some(d) => fb.cvar.wait_timeout(heap, d - now).unwrap().0,
            None => fb.cvar.wait(heap).unwrap(),
        };
    }
}
