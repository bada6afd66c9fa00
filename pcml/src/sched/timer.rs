//! Per-proc timers, driven by the scheduler (the time layer of Morrisett and Tolmach 1992, section 5).
//!
//! A timer lives on the proc that armed it, in a deadline heap that only that proc touches.
//! The worker fires due timers between threads, and an idle proc parks exactly until its
//! earliest deadline. A timer that is cancelled (its sleeper gave up, or a future was dropped)
//! is marked at once from any thread; the heap drops marked entries when it pops them, and
//! compacts itself when it grows past four times the timers it held at its last compaction
//! (`Deadlines::compact`), so a loop that arms and cancels timers keeps memory bounded.
//!
//! Pending timers count as wake sources for deadlock detection: a thread that sleeps is not
//! deadlocked.
//!
//! # Invariants
//! - `TimerCell::state` goes `PENDING -> FIRED` (the owning proc, at the deadline) or
//!   `PENDING -> CANCELLED` (anyone), once, and only under the cell's `waiter` lock (which
//!   decides between a firing and a cancel: no compare-and-swap on the state); whoever makes
//!   that transition takes the waiter and decrements the owning proc's count of wake sources
//!   (`ProcShared::wake`), which the arming incremented. Reading the state needs no lock.
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
use crate::sched::worker::WakeSources;

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
    owner: Option<Owner>,
}

/// A timer's pointer to its proc's wake sources, held without a reference count: a count a
/// timer was two read-modify-writes on the proc's wake line (the clone when armed, the drop
/// when the cell was freed). The heap holds the count for all its timers.
///
/// # Invariants
/// The pointee is alive while the cell is pending: a pending cell is in its heap, whose
/// `TimerHeap::wake` owns the wake sources and which, when dropped, takes every pending cell
/// out of `PENDING` under its lock (`TimerHeap::drop`), or in a `Due` batch taken off the
/// heap, which owns them too until it has fired them. So the pointer is followed only by
/// `cancel`, under the cell's lock, having seen the cell pending.
#[derive(Clone, Copy)]
struct Owner(std::ptr::NonNull<WakeSources>);

// SAFETY: `Owner` only points at atomics (`WakeSources` is `Sync`), followed while alive (see
// the invariants): sending or sharing it is sending or sharing a `&WakeSources`.
unsafe impl Send for Owner {}
// SAFETY: as for `Send`.
unsafe impl Sync for Owner {}

impl TimerCell {
    /// Whether the timer has fired.
    pub(crate) fn has_fired(&self) -> bool {
        // Acquire: pairs with the Release store of `FIRED` in `fire`, so whatever the firing
        // proc wrote before firing is visible to the thread that sees it fired.
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
    ///
    /// The transition is made under the waiter's lock, as `fire`'s is: the lock decides
    /// which of the two makes it (no compare-and-swap on the state besides the lock's own).
    /// Nothing is counted for the heap's compaction: the heap finds cancelled entries by
    /// their state (`Deadlines::compact`).
    pub(crate) fn cancel(&self) -> bool {
        // Acquire: pairs with the Release store in `fire` (a fired timer is left as it is
        // without the lock); a stale `PENDING` only sends us to the lock, which decides.
        if self.state.load(Ordering::Acquire) != PENDING {
            return false;
        }
        let mut w = self.waiter.lock();
        // Relaxed: the state changes only under this lock, which orders it here.
        if self.state.load(Ordering::Relaxed) != PENDING {
            return false;
        }
        // Relaxed: read under the lock by `fire`, and lock-free by `is_pending` (a hint for
        // compaction, which needs nothing else the canceller wrote).
        self.state.store(CANCELLED, Ordering::Relaxed);
        let waiter = w.take();
        if let Some(owner) = self.owner {
            // SAFETY: the cell was pending, and the lock is held: its heap (or the batch that
            // took it off the heap) still owns the wake sources (see `Owner`).
            let wake = unsafe { owner.0.as_ref() };
            // SeqCst: as in `fire`. Under the lock, since the heap may go once it is released.
            wake.pending.fetch_sub(1, Ordering::SeqCst);
        }
        drop(w);
        // Dropped unlocked: a waker's drop may do anything (free its task).
        drop(waiter);
        true
    }

    /// Fires the timer if it is pending; `wake` is its owner's wake sources (from the `Due`
    /// batch that holds them), none for the fallback thread's.
    fn fire(&self, wake: Option<&WakeSources>) {
        debug_assert_eq!(
            wake.map(|w| w as *const WakeSources),
            self.owner.map(|o| o.0.as_ptr().cast_const())
        );
        let mut w = self.waiter.lock();
        // Relaxed: the state changes only under this lock, which orders it here.
        if self.state.load(Ordering::Relaxed) != PENDING {
            // Cancelled meanwhile: nothing to do.
            return;
        }
        // Release: publishes the firing to `has_fired`'s (and `cancel`'s) Acquire load.
        self.state.store(FIRED, Ordering::Release);
        let waiter = w.take();
        drop(w);
        // Run unlocked: an action may arm or cancel timers, and a waker may do anything.
        match waiter {
            Some(OnFire::Wake(w)) => w.unblock(),
            Some(OnFire::Call(f)) => f(),
            None => {}
        }
        if let Some(wake) = wake {
            // SeqCst: deadlock detection reads this after the wake-up is visible.
            wake.pending.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Takes the timer out of `PENDING` for good, as a cancel that counts nothing: its heap
    /// is being dropped (with its runtime).
    fn orphan(&self) {
        let mut w = self.waiter.lock();
        if self.state.load(Ordering::Relaxed) != PENDING {
            return;
        }
        // Relaxed: as in `cancel`.
        self.state.store(CANCELLED, Ordering::Relaxed);
        let waiter = w.take();
        drop(w);
        drop(waiter);
    }

    fn is_pending(&self) -> bool {
        // Relaxed: a hint for compaction; the state leaves `PENDING` once, for good, so an
        // entry seen not pending may be dropped (the cell lives on in its other owners).
        self.state.load(Ordering::Relaxed) == PENDING
    }
}

/// The least length of a heap that compaction looks at: below it, cancelled entries stay
/// until popped (or until the heap grows).
const COMPACT_MIN: usize = 64;

/// Timers by deadline, the heap of a proc ([`TimerHeap`]) and of the fallback thread: a
/// binary heap whose cancelled entries are dropped when popped, or all at once when the heap
/// outgrows its live timers (`compact`).
struct Deadlines {
    heap: BinaryHeap<Reverse<Entry>>,
    seq: u64,
    /// The heap's length right after its last compaction (then every entry was pending),
    /// lowered by one for each entry popped since: a guess at its live timers that costs
    /// nothing to keep (cancelling a timer counts nothing anywhere).
    live_hint: usize,
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

impl Deadlines {
    fn new() -> Self {
        Self {
            heap: BinaryHeap::new(),
            seq: 0,
            live_hint: 0,
        }
    }

    /// Adds `cell`, due at `deadline`; compacts first if the heap has outgrown its live timers
    /// (a thread that arms and cancels in a loop may not return to its worker for a long
    /// time, so this is not left to the popping).
    fn push(&mut self, deadline: Instant, cell: Arc<TimerCell>) {
        self.compact();
        self.seq += 1;
        self.heap.push(Reverse(Entry {
            deadline,
            seq: self.seq,
            cell,
        }));
    }

    /// Takes off the heap its earliest entry, if due at `now`.
    fn pop_due(&mut self, now: Instant) -> Option<Arc<TimerCell>> {
        if self.heap.peek()?.0.deadline > now {
            return None;
        }
        let Reverse(e) = self.heap.pop()?;
        self.live_hint = self.live_hint.saturating_sub(1);
        Some(e.cell)
    }

    /// The earliest deadline still in the heap (possibly of a cancelled timer).
    fn next_deadline(&self) -> Option<Instant> {
        self.heap.peek().map(|Reverse(e)| e.deadline)
    }

    /// Drops the cancelled (and fired) entries once the heap is longer than
    /// `max(COMPACT_MIN, 4 * live_hint)`.
    ///
    /// Bounded memory: the heap holds at most four times the timers that were live at its
    /// last compaction (at most `COMPACT_MIN + 1` entries for a loop that arms and cancels).
    /// Bounded cost: a pop lowers both the length and the hint by one (or only the length,
    /// at a hint of 0), so the length exceeds the hint by at most the pushes since the last
    /// compaction; compacting at a length over four times the hint, those pushes are over
    /// three quarters of the entries looked at, and a compaction costs at most 4/3 of an
    /// entry looked at per push, whichever timers were cancelled. Nothing is counted to
    /// decide it: a count of cancelled timers, kept by whoever cancelled, was a
    /// read-modify-write a cancel on the owning proc's line, from any thread.
    #[inline]
    fn compact(&mut self) {
        if self.heap.len() > COMPACT_MIN.max(4 * self.live_hint) {
            self.compact_now();
        }
    }

    #[cold]
    #[inline(never)]
    fn compact_now(&mut self) {
        self.heap.retain(|Reverse(e)| e.cell.is_pending());
        self.live_hint = self.heap.len();
    }
}

/// A proc's deadline heap.
pub(crate) struct TimerHeap {
    timers: Deadlines,
    /// The wake sources of the proc that owns this heap, which its timers point at (see
    /// `Owner`).
    wake: Arc<CachePadded<WakeSources>>,
}

impl TimerHeap {
    /// The heap of the proc whose wake sources are `wake`.
    pub(crate) fn new(wake: Arc<CachePadded<WakeSources>>) -> Self {
        Self {
            timers: Deadlines::new(),
            wake,
        }
    }

    /// Arms a timer for `deadline` that does `on_fire` (if any).
    pub(crate) fn arm(&mut self, deadline: Instant, on_fire: Option<OnFire>) -> Arc<TimerCell> {
        // SeqCst: a pending timer is a wake source from now on (deadlock detection).
        self.wake.pending.fetch_add(1, Ordering::SeqCst);
        let cell = Arc::new(TimerCell {
            state: AtomicU8::new(PENDING),
            waiter: SpinLock::new(on_fire),
            owner: Some(Owner(std::ptr::NonNull::from(&**self.wake))),
        });
        self.timers.push(deadline, cell.clone());
        cell
    }

    /// The earliest deadline still in the heap (possibly of a cancelled timer).
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.timers.next_deadline()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.timers.heap.is_empty()
    }

    /// How many entries the heap holds, cancelled ones included.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.timers.heap.len()
    }

    /// Takes every timer due at `now` off the heap, for the caller to fire with [`fire_all`]
    /// (with no borrow of the heap held, since firing may arm new timers).
    pub(crate) fn take_due(&mut self, now: Instant) -> Due {
        let mut cells = Vec::new();
        while let Some(cell) = self.timers.pop_due(now) {
            cells.push(cell);
        }
        self.timers.compact();
        Due {
            wake: (!cells.is_empty()).then(|| self.wake.clone()),
            cells,
        }
    }
}

impl Drop for TimerHeap {
    /// Leaves no timer pending that points at the wake sources (see `Owner`): the runtime is
    /// going, and a sleep that outlives it (moved out of it) then finds its timer cancelled.
    fn drop(&mut self) {
        for Reverse(e) in self.timers.heap.drain() {
            e.cell.orphan();
        }
    }
}

/// Timers taken off a heap, due, with what keeps their owner's wake sources alive until they
/// have fired (see `Owner`).
pub(crate) struct Due {
    cells: Vec<Arc<TimerCell>>,
    /// A reference to the wake sources of the heap, if any cell came off it.
    wake: Option<Arc<CachePadded<WakeSources>>>,
}

impl Due {
    pub(crate) fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }
}

/// Fires timers taken off a heap.
pub(crate) fn fire_all(due: Due) {
    let wake = due.wake.as_deref().map(|w| &**w);
    for c in due.cells {
        c.fire(wake);
    }
}

/// Timers for threads that are not on a proc (plain OS threads, other executors): one
/// process-wide thread, started on first use, fires them.
struct Fallback {
    timers: Mutex<Deadlines>,
    cvar: Condvar,
}

/// Arms a timer on the fallback thread.
pub(crate) fn arm_fallback(deadline: Instant, on_fire: OnFire) -> Arc<TimerCell> {
    static FALLBACK: OnceLock<&'static Fallback> = OnceLock::new();
    let fb = *FALLBACK.get_or_init(|| {
        let fb: &'static Fallback = Box::leak(Box::new(Fallback {
            timers: Mutex::new(Deadlines::new()),
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
    // Compacts as a proc's heap does, so the heap stays bounded.
    fb.timers.lock().unwrap().push(deadline, cell.clone());
    fb.cvar.notify_one();
    cell
}

fn fallback_thread(fb: &'static Fallback) {
    let _own = crate::sched::outside::OwnThread::enter();
    let mut timers = fb.timers.lock().unwrap();
    loop {
        let now = Instant::now();
        let mut due = Vec::new();
        while let Some(cell) = timers.pop_due(now) {
            due.push(cell);
        }
        if !due.is_empty() {
            drop(timers);
            // The fallback's cells have no owner.
            for c in due {
                c.fire(None);
            }
            timers = fb.timers.lock().unwrap();
            continue;
        }
        timers = match timers.next_deadline() {
            Some(d) => fb.cvar.wait_timeout(timers, d - now).unwrap().0,
            None => fb.cvar.wait(timers).unwrap(),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    /// A cell of no proc (as the fallback thread's are) that counts its firings.
    fn cell(fired: &Arc<AtomicUsize>) -> Arc<TimerCell> {
        let fired = fired.clone();
        Arc::new(TimerCell {
            state: AtomicU8::new(PENDING),
            waiter: SpinLock::new(Some(OnFire::Call(Box::new(move || {
                fired.fetch_add(1, Ordering::Relaxed);
            })))),
            owner: None,
        })
    }

    #[test]
    fn a_cancelled_timer_does_not_fire_and_a_fired_one_does_not_cancel() {
        let fired = Arc::new(AtomicUsize::new(0));
        let a = cell(&fired);
        assert!(a.cancel());
        assert!(!a.cancel());
        a.fire(None);
        assert!(!a.has_fired());
        assert_eq!(fired.load(Ordering::Relaxed), 0);
        // The waiter went with the cancel.
        assert!(a.waiter.lock().is_none());

        let b = cell(&fired);
        b.fire(None);
        assert!(b.has_fired());
        assert_eq!(fired.load(Ordering::Relaxed), 1);
        assert!(!b.cancel());
        b.fire(None);
        assert_eq!(fired.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn fire_and_cancel_racing_make_one_transition() {
        for _ in 0..2_000 {
            let fired = Arc::new(AtomicUsize::new(0));
            let c = cell(&fired);
            let c2 = c.clone();
            let canceller = std::thread::spawn(move || c2.cancel());
            c.fire(None);
            let cancelled = canceller.join().unwrap();
            assert_eq!(usize::from(cancelled) + fired.load(Ordering::Relaxed), 1);
            assert_eq!(c.has_fired(), !cancelled);
        }
    }

    #[test]
    fn arming_and_cancelling_keeps_the_heap_bounded() {
        let fired = Arc::new(AtomicUsize::new(0));
        let mut d = Deadlines::new();
        let at = Instant::now() + Duration::from_secs(3600);
        let mut longest = 0;
        for _ in 0..1_000_000 {
            let c = cell(&fired);
            d.push(at, c.clone());
            assert!(c.cancel());
            longest = longest.max(d.heap.len());
        }
        assert!(longest <= COMPACT_MIN + 1, "heap grew to {longest}");
    }

    #[test]
    fn the_heap_stays_within_four_times_its_live_timers() {
        let fired = Arc::new(AtomicUsize::new(0));
        let mut d = Deadlines::new();
        let at = Instant::now() + Duration::from_secs(3600);
        let live: Vec<_> = (0..1_000).map(|_| cell(&fired)).collect();
        for c in &live {
            d.push(at, c.clone());
        }
        let mut longest = 0;
        for _ in 0..100_000 {
            let c = cell(&fired);
            d.push(at, c.clone());
            c.cancel();
            longest = longest.max(d.heap.len());
        }
        assert!(longest <= 4 * live.len() + 1, "heap grew to {longest}");
        // The live timers are all still there, and fire when due.
        while let Some(c) = d.pop_due(at) {
            c.fire(None);
        }
        assert_eq!(fired.load(Ordering::Relaxed), live.len());
        assert!(live.iter().all(|c| c.has_fired()));
    }

    /// A timer armed on a proc and cancelled after its runtime: the heap went with the
    /// runtime and left the timer cancelled, so the cancel follows no pointer to the proc
    /// (run under `valgrind` to see no read of freed memory). A sleep likewise.
    #[test]
    fn a_timer_cancelled_after_its_runtime_is_already_cancelled() {
        use std::task::{Context, Poll, Waker};
        let fired = Arc::new(AtomicUsize::new(0));
        let f = fired.clone();
        // `block_on` consumes the runtime: it is gone when this returns.
        let (cell, sleep) = crate::Runtime::builder()
            .procs(1)
            .build()
            .unwrap()
            .block_on(move || {
                let at = Instant::now() + Duration::from_secs(3600);
                let cell = crate::sched::worker::arm_timer(
                    at,
                    OnFire::Call(Box::new(move || {
                        f.fetch_add(1, Ordering::Relaxed);
                    })),
                );
                let sleep = crate::spawn_task(async {
                    let mut s = Box::pin(crate::time::sleep_async(Duration::from_secs(3600)));
                    let mut cx = Context::from_waker(Waker::noop());
                    assert_eq!(s.as_mut().poll(&mut cx), Poll::Pending);
                    // Not the bare future: the task's output is not for awaiting.
                    Some(s)
                })
                .join()
                .unwrap();
                (cell, sleep.expect("returned"))
            })
            .unwrap();
        assert!(cell.owner.is_some(), "armed on the proc, not the fallback");
        assert!(!cell.cancel());
        assert!(!cell.has_fired());
        assert!(cell.waiter.lock().is_none());
        assert_eq!(fired.load(Ordering::Relaxed), 0);
        drop(sleep);
    }

    /// On a proc: a task that arms and cancels a million sleeps leaves the proc's heap short.
    #[test]
    fn a_proc_heap_stays_bounded_under_arm_and_cancel() {
        use std::task::{Context, Poll, Waker};
        let len = crate::Runtime::builder()
            .procs(1)
            .build()
            .unwrap()
            .block_on(|| {
                crate::spawn_task(async {
                    let mut cx = Context::from_waker(Waker::noop());
                    let mut longest = 0;
                    for _ in 0..1_000_000 {
                        {
                            let mut s =
                                std::pin::pin!(crate::time::sleep_async(Duration::from_secs(3600)));
                            assert_eq!(s.as_mut().poll(&mut cx), Poll::Pending);
                        } // Dropped: cancelled.
                        let heap = crate::sched::worker::context()
                            .expect("a task runs on a proc")
                            .me()
                            .timers
                            .lock()
                            .len();
                        longest = longest.max(heap);
                    }
                    longest
                })
                .join()
                .unwrap()
            })
            .unwrap();
        assert!(len <= COMPACT_MIN + 1, "the proc's heap grew to {len}");
    }
}
