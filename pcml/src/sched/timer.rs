//! Per-proc timers, driven by the scheduler (the time layer of Morrisett and Tolmach 1992, section 5).
//!
//! A timer lives on the proc that armed it, in a deadline heap that mostly only that proc
//! touches (see the invariants).
//! The worker fires due timers between threads, and an idle proc parks exactly until its
//! earliest deadline. A timer that is cancelled (its sleeper gave up, or a future was dropped)
//! is marked at once from any thread; the heap drops marked entries when it pops them, and
//! compacts itself when it grows past four times the timers it held at its last compaction
//! (`Deadlines::compact`), so a loop that arms and cancels timers keeps memory bounded.
//!
//! Pending timers count as wake sources for deadlock detection: a thread that sleeps is not
//! deadlocked. Nothing counts them as they are armed and cancelled: deadlock detection, once
//! every proc sleeps, looks in each proc's heap for a pending timer
//! (`TimerHeap::has_pending`).
//!
//! # Invariants
//! - `TimerCell::state` goes `PENDING -> FIRED` (the owning proc, at the deadline) or
//!   `PENDING -> CANCELLED` (anyone), once, and only under the cell's `waiter` lock (which
//!   decides between a firing and a cancel: no compare-and-swap on the state); whoever makes
//!   that transition takes the waiter. Reading the state needs no lock.
//! - A pending timer of a proc is in its heap, or in a batch taken off the heap by a proc that
//!   is awake until it has fired them (`take_due`, `fire_all`): so when every proc sleeps,
//!   its pending timers are the pending cells in its heap.
//! - The heap is touched by its proc's worker thread; by another proc's while the watchdog
//!   has marked this one as hogged; by deadlock detection once every proc sleeps.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::Instant;

use std::sync::{Condvar, Mutex, OnceLock};

use crate::mp::SpinLock;
use crate::sched::blocker::Blocker;

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
}

/// A reference to a timer cell, one of exactly two: its heap entry's and its waiter's.
///
/// Not an `Arc`, whose clone at arming is a read-modify-write and whose two drops are one
/// each: the count starts at 2 (no write to arm), and the reference dropped last sees the
/// count at 1 and frees the cell without writing it. So a timer costs one read-modify-write
/// on its count, the drop of the first reference to go (hyper's header-read timeout: the
/// sleep's drop, cancelling it; the heap's entry goes later, at compaction).
///
/// # Invariants
/// `refs` is the number of `TimerRef`s to the cell still alive: 2 at `TimerRef::pair`, and
/// no reference is ever cloned.
pub(crate) struct TimerRef(NonNull<Counted>);

/// A timer cell with its count of references.
struct Counted {
    refs: AtomicUsize,
    cell: TimerCell,
}

// SAFETY: a `TimerRef` gives shared access to a `TimerCell` (which is `Send + Sync`: atomics
// and a spin lock around a `Send` waiter), and frees it from whichever thread drops the last
// reference, as an `Arc<TimerCell>` does.
unsafe impl Send for TimerRef {}
// SAFETY: as for `Send`.
unsafe impl Sync for TimerRef {}

impl TimerRef {
    /// The two references to a new pending cell that does `on_fire` (if any) when it fires.
    fn pair(on_fire: Option<OnFire>) -> (TimerRef, TimerRef) {
        let counted = NonNull::from(Box::leak(Box::new(Counted {
            refs: AtomicUsize::new(2),
            cell: TimerCell {
                state: AtomicU8::new(PENDING),
                waiter: SpinLock::new(on_fire),
            },
        })));
        (TimerRef(counted), TimerRef(counted))
    }
}

impl std::ops::Deref for TimerRef {
    type Target = TimerCell;

    fn deref(&self) -> &TimerCell {
        // SAFETY: the cell lives while a reference does (see `Drop`).
        unsafe { &self.0.as_ref().cell }
    }
}

impl Drop for TimerRef {
    fn drop(&mut self) {
        // SAFETY: alive while this reference is.
        let refs = unsafe { &self.0.as_ref().refs };
        // Acquire: pairs with the Release decrement of the other reference, so its uses of
        // the cell happen before the free below. At 1 the other reference is gone, and none
        // can be made (no clones): this one is the last, and frees with no write.
        if refs.load(Ordering::Acquire) != 1 {
            // Release: publishes this reference's uses of the cell to the thread that frees
            // it (the Acquire load above or the fence below, on the other reference's drop).
            if refs.fetch_sub(1, Ordering::Release) != 1 {
                return;
            }
            // Acquire: pairs with the other reference's Release decrement (both dropped at
            // once: this one came second).
            std::sync::atomic::fence(Ordering::Acquire);
        }
        // SAFETY: the last reference (see above), to a cell made by `Box` in `pair`.
        drop(unsafe { Box::from_raw(self.0.as_ptr()) });
    }
}

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
    /// Nothing is counted, on the owning proc's lines or elsewhere: the heap finds cancelled
    /// entries by their state (`Deadlines::compact`), and so does deadlock detection
    /// (`TimerHeap::has_pending`). So a cancel writes only the cell (hyper cancels a timer a
    /// request, often on another proc than the one that armed it).
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
        // Release: pairs with the Acquire load in `is_pending` (deadlock detection, and
        // compaction, which needs only the state); read under the lock by `fire`.
        self.state.store(CANCELLED, Ordering::Release);
        let waiter = w.take();
        drop(w);
        // Dropped unlocked: a waker's drop may do anything (free its task).
        drop(waiter);
        true
    }

    fn fire(&self) {
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
    }

    fn is_pending(&self) -> bool {
        // Acquire: pairs with the Release stores in `cancel` and `fire`. The state leaves
        // `PENDING` once, for good: an entry seen not pending may be dropped (the cell lives
        // on in its other owners), and one seen pending at worst is kept a while longer (or
        // delays a deadlock's report to the next look).
        self.state.load(Ordering::Acquire) == PENDING
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
    cell: TimerRef,
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
    fn push(&mut self, deadline: Instant, cell: TimerRef) {
        self.compact();
        self.seq += 1;
        self.heap.push(Reverse(Entry {
            deadline,
            seq: self.seq,
            cell,
        }));
    }

    /// Takes off the heap its earliest entry, if due at `now`.
    fn pop_due(&mut self, now: Instant) -> Option<TimerRef> {
        if self.heap.peek()?.0.deadline > now {
            return None;
        }
        let Reverse(e) = self.heap.pop()?;
        self.live_hint = self.live_hint.saturating_sub(1);
        Some(e.cell)
    }

    /// Takes off the heap every entry due at `now`, earliest first.
    fn take_due(&mut self, now: Instant) -> Vec<TimerRef> {
        let mut due = Vec::new();
        while let Some(cell) = self.pop_due(now) {
            due.push(cell);
        }
        due
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
}

impl TimerHeap {
    pub(crate) fn new() -> Self {
        Self {
            timers: Deadlines::new(),
        }
    }

    /// Arms a timer for `deadline` that does `on_fire` (if any).
    pub(crate) fn arm(&mut self, deadline: Instant, on_fire: Option<OnFire>) -> TimerRef {
        let (cell, entry) = TimerRef::pair(on_fire);
        self.timers.push(deadline, entry);
        cell
    }

    /// The earliest deadline still in the heap (possibly of a cancelled timer).
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.timers.next_deadline()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.timers.heap.is_empty()
    }

    /// Whether a timer of this heap is pending: for deadlock detection, once every proc
    /// sleeps (then this heap holds all of its proc's pending timers: see the module
    /// invariants). It looks at the entries until it finds a pending one: at most every
    /// entry, at most four times the live timers (and `COMPACT_MIN`), on a path where every
    /// proc is idle; in exchange, arming and cancelling count nothing.
    pub(crate) fn has_pending(&self) -> bool {
        self.timers
            .heap
            .iter()
            .any(|Reverse(e)| e.cell.is_pending())
    }

    /// How many entries the heap holds, cancelled ones included.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.timers.heap.len()
    }

    /// Takes every timer due at `now` off the heap, for the caller to fire with [`fire_all`]
    /// before it sleeps (with no borrow of the heap held, since firing may arm new timers).
    pub(crate) fn take_due(&mut self, now: Instant) -> Vec<TimerRef> {
        let due = self.timers.take_due(now);
        self.timers.compact();
        due
    }
}

/// Fires timers taken off a heap.
pub(crate) fn fire_all(cells: Vec<TimerRef>) {
    for c in cells {
        c.fire();
    }
}

/// Timers for threads that are not on a proc (plain OS threads, other executors): one
/// process-wide thread, started on first use, fires them.
struct Fallback {
    timers: Mutex<Deadlines>,
    cvar: Condvar,
}

/// Arms a timer on the fallback thread.
pub(crate) fn arm_fallback(deadline: Instant, on_fire: OnFire) -> TimerRef {
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
    let (cell, entry) = TimerRef::pair(Some(on_fire));
    // Compacts as a proc's heap does, so the heap stays bounded.
    fb.timers.lock().unwrap().push(deadline, entry);
    fb.cvar.notify_one();
    cell
}

fn fallback_thread(fb: &'static Fallback) {
    let _own = crate::sched::outside::OwnThread::enter();
    let mut timers = fb.timers.lock().unwrap();
    loop {
        let now = Instant::now();
        let due = timers.take_due(now);
        if !due.is_empty() {
            drop(timers);
            fire_all(due);
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
    use std::sync::Arc;
    use std::time::Duration;

    /// The two references to a cell of no heap that counts its firings.
    fn cell(fired: &Arc<AtomicUsize>) -> (TimerRef, TimerRef) {
        let fired = fired.clone();
        TimerRef::pair(Some(OnFire::Call(Box::new(move || {
            fired.fetch_add(1, Ordering::Relaxed);
        }))))
    }

    /// The cell goes with its second reference, whichever goes first, on whichever thread
    /// (run under `valgrind` to see no leak and no use after the free).
    #[test]
    fn a_cell_is_freed_with_its_last_reference() {
        struct Flag(Arc<AtomicUsize>);
        impl Drop for Flag {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::Relaxed);
            }
        }
        let freed = Arc::new(AtomicUsize::new(0));
        let pair = || {
            let flag = Flag(freed.clone());
            TimerRef::pair(Some(OnFire::Call(Box::new(move || drop(flag)))))
        };
        let (a, b) = pair();
        drop(a);
        assert_eq!(freed.load(Ordering::Relaxed), 0);
        drop(b);
        assert_eq!(freed.load(Ordering::Relaxed), 1);
        let (a, b) = pair();
        drop(b);
        assert_eq!(freed.load(Ordering::Relaxed), 1);
        drop(a);
        assert_eq!(freed.load(Ordering::Relaxed), 2);
        for round in 0..1_000 {
            let (a, b) = pair();
            let t = std::thread::spawn(move || drop(b));
            drop(a);
            t.join().unwrap();
            assert_eq!(freed.load(Ordering::Relaxed), 3 + round);
        }
    }

    #[test]
    fn a_cancelled_timer_does_not_fire_and_a_fired_one_does_not_cancel() {
        let fired = Arc::new(AtomicUsize::new(0));
        let (a, _entry) = cell(&fired);
        assert!(a.cancel());
        assert!(!a.cancel());
        a.fire();
        assert!(!a.has_fired());
        assert_eq!(fired.load(Ordering::Relaxed), 0);
        // The waiter went with the cancel.
        assert!(a.waiter.lock().is_none());

        let (b, _entry) = cell(&fired);
        b.fire();
        assert!(b.has_fired());
        assert_eq!(fired.load(Ordering::Relaxed), 1);
        assert!(!b.cancel());
        b.fire();
        assert_eq!(fired.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn fire_and_cancel_racing_make_one_transition() {
        for _ in 0..2_000 {
            let fired = Arc::new(AtomicUsize::new(0));
            let (c, c2) = cell(&fired);
            let canceller = std::thread::spawn(move || c2.cancel());
            c.fire();
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
            let (c, entry) = cell(&fired);
            d.push(at, entry);
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
        let live: Vec<_> = (0..1_000)
            .map(|_| {
                let (c, entry) = cell(&fired);
                d.push(at, entry);
                c
            })
            .collect();
        let mut longest = 0;
        for _ in 0..100_000 {
            let (c, entry) = cell(&fired);
            d.push(at, entry);
            c.cancel();
            longest = longest.max(d.heap.len());
        }
        assert!(longest <= 4 * live.len() + 1, "heap grew to {longest}");
        // The live timers are all still there, and fire when due.
        while let Some(c) = d.pop_due(at) {
            c.fire();
        }
        assert_eq!(fired.load(Ordering::Relaxed), live.len());
        assert!(live.iter().all(|c| c.has_fired()));
    }

    /// A timer armed on a proc and cancelled after its runtime is gone (and a sleep dropped
    /// then): the cancel touches only the cell.
    #[test]
    fn a_timer_can_be_cancelled_after_its_runtime() {
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
        assert!(cell.cancel());
        assert!(!cell.has_fired());
        assert!(cell.waiter.lock().is_none());
        assert_eq!(fired.load(Ordering::Relaxed), 0);
        drop(sleep);
    }

    #[test]
    fn a_heap_has_pending_timers_until_they_are_cancelled() {
        let mut heap = TimerHeap::new();
        assert!(!heap.has_pending());
        let at = Instant::now() + Duration::from_secs(3600);
        let a = heap.arm(at, None);
        let b = heap.arm(at, None);
        assert!(heap.has_pending());
        a.cancel();
        assert!(heap.has_pending());
        b.cancel();
        assert!(!heap.has_pending());
        assert_eq!(heap.len(), 2);
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
