//! A counting wrapper around the global allocator, for the memory probes: while [`track`]
//! runs its closure, every allocation and free of every thread adjusts a count of live heap
//! bytes, and the highest count is kept. The `pcml-bench` binary installs it around mimalloc;
//! outside [`track`] it costs one relaxed load of a read-only cache line per allocation.
//!
//! What it counts: the bytes asked of the allocator (not its rounding), net of frees, from the
//! start of [`track`]; frees of blocks allocated before then lower the count, so the peak is
//! the highest net growth. Fiber stacks are not heap allocations (pcml maps them from a
//! per-proc pool) and are not counted.
//!
//! # Invariants
//! - The counters are statistics, not synchronization: every access is `Relaxed`. [`track`]
//!   reads them after its closure returned, and the closure's threads' last allocations are
//!   ordered before that by whatever told the closure they were done (a join, an IVar).

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};

/// The global allocator `A`, counting live bytes while [`track`] runs.
#[derive(Debug, Default)]
pub struct Counting<A>(pub A);

/// The counters, on a cache line of their own: outside [`track`] an allocation only reads
/// `tracking`, and no unrelated write should keep evicting that line.
#[repr(align(128))]
struct Counters {
    /// Whether [`track`] is running.
    tracking: AtomicBool,
    /// Whether an allocation was counted during [`track`] (so a `Counting` is installed).
    counted: AtomicBool,
    /// Live bytes since [`track`] began, net of frees.
    live: AtomicI64,
    /// The highest `live` since [`track`] began.
    peak: AtomicI64,
}

static COUNTERS: Counters = Counters {
    tracking: AtomicBool::new(false),
    counted: AtomicBool::new(false),
    live: AtomicI64::new(0),
    peak: AtomicI64::new(0),
};

#[inline(always)]
fn account(delta: i64) {
    if COUNTERS.tracking.load(Relaxed) {
        count(delta);
    }
}

#[cold]
#[inline(never)]
fn count(delta: i64) {
    COUNTERS.counted.store(true, Relaxed);
    let now = COUNTERS.live.fetch_add(delta, Relaxed) + delta;
    COUNTERS.peak.fetch_max(now, Relaxed);
}

fn size(layout: Layout) -> i64 {
    i64::try_from(layout.size()).unwrap_or(i64::MAX)
}

// SAFETY: every method forwards to `A` with the caller's arguments unchanged, so `A`'s
// guarantees are ours; the counting touches only atomics and never allocates.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract (non-zero size), which is `A`'s.
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            account(size(layout));
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            account(size(layout));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller passes a block this allocator (hence `A`) gave, with its layout.
        unsafe { self.0.dealloc(ptr, layout) };
        account(-size(layout));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller passes a block `A` gave, its layout and a valid new size.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            account(i64::try_from(new_size).unwrap_or(i64::MAX) - size(layout));
        }
        p
    }
}

/// Runs `f` and returns its result with the peak growth of live heap bytes during it, or
/// `None` when no [`Counting`] allocator is installed (the tests). Not reentrant: one probe
/// per process.
///
/// ```
/// let (v, peak) = pcml_bench::alloc::track(|| vec![0u8; 1 << 20].len());
/// assert_eq!(v, 1 << 20);
/// // The doctest's process runs on the system allocator, which is not counted.
/// assert_eq!(peak, None);
/// ```
pub fn track<T>(f: impl FnOnce() -> T) -> (T, Option<u64>) {
    COUNTERS.counted.store(false, Relaxed);
    COUNTERS.live.store(0, Relaxed);
    COUNTERS.peak.store(0, Relaxed);
    COUNTERS.tracking.store(true, Relaxed);
    let out = f();
    COUNTERS.tracking.store(false, Relaxed);
    let peak = COUNTERS
        .counted
        .load(Relaxed)
        .then(|| u64::try_from(COUNTERS.peak.load(Relaxed).max(0)).unwrap_or(0));
    (out, peak)
}
