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

/// mimalloc, asked the way its fast path wants: a request whose alignment every mimalloc
/// block already has (8 bytes or less) goes to `mi_malloc`, the rest to `mi_malloc_aligned`.
///
/// `mimalloc::MiMalloc` passes every request to `mi_malloc_aligned`. In mimalloc 3 that
/// function takes its fast path only when the size class's free list happens to be non-empty;
/// otherwise, for a size that is not a power of two, it over-allocates into a larger size class
/// (`mi_theap_malloc_zero_aligned_at_overalloc`). In this suite about one allocation in three
/// went that way: Krook's skynet spent 16% of its instructions in `mi_malloc_aligned`
/// (callgrind, `examples/actors.rs skynet6 async`), and this allocator executes 9% fewer.
///
/// ```
/// use std::alloc::{GlobalAlloc, Layout};
/// let a = pcml_bench::alloc::MiMallocNatural;
/// let l = Layout::from_size_align(184, 8).unwrap();
/// // SAFETY: a non-zero size; the block is freed with the allocator and layout that gave it.
/// unsafe {
///     let p = a.alloc(l);
///     assert!(!p.is_null() && p as usize % 8 == 0);
///     a.dealloc(p, l);
/// }
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct MiMallocNatural;

/// Every mimalloc block is a multiple of the word size from a 16-byte-aligned page start
/// (`MI_PAGE_MIN_START_BLOCK_ALIGN`), so it has this alignment whatever its size.
const MI_WORD_ALIGN: usize = 8;

// SAFETY: `mi_malloc`, `mi_zalloc` and `mi_realloc` return blocks of at least the requested
// size, aligned to the word size, which is all a layout with `align <= MI_WORD_ALIGN` needs;
// larger alignments go to the `_aligned` functions, which honour them. Every block comes from
// mimalloc, so `mi_free` (which takes blocks of either kind) frees it.
unsafe impl GlobalAlloc for MiMallocNatural {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: plain C allocation calls; the caller's layout has a non-zero size.
        unsafe {
            if layout.align() <= MI_WORD_ALIGN {
                libmimalloc_sys::mi_malloc(layout.size()).cast()
            } else {
                libmimalloc_sys::mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        unsafe {
            if layout.align() <= MI_WORD_ALIGN {
                libmimalloc_sys::mi_zalloc(layout.size()).cast()
            } else {
                libmimalloc_sys::mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: the caller passes a block this allocator gave: a mimalloc block.
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller passes a block this allocator gave, and a valid new size.
        unsafe {
            if layout.align() <= MI_WORD_ALIGN {
                libmimalloc_sys::mi_realloc(ptr.cast(), new_size).cast()
            } else {
                libmimalloc_sys::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
            }
        }
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
