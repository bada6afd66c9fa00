//! Fiber stacks: mmap'd with a guard page, taken on first run from a per-proc pool.
//!
//! Every stack costs two memory mappings (the guard page and the rest). Linux caps mappings per
//! process at `vm.max_map_count` (65530 by default), so the number of stacks mapped at once is
//! capped process-wide at `(max_map_count - RESERVED_MAPPINGS) / 2`, leaving room for the rest
//! of the program. Reaching the cap is an error value or a clear message, never a crash.
//!
//! # Stack colours
//! Each stack's top (where a fiber's hottest frames live: the coroutine's saved registers,
//! its body and the few calls a rendezvous makes) starts at one of 16 offsets below the
//! mapping's end, 256 bytes apart, in turn as a pool maps them. Every mapping ends on a page
//! boundary, so without the offsets the hot lines of every fiber's stack fell into the same
//! few sets of the L1 data cache (a 32 KiB 8-way cache maps addresses 4 KiB apart to one
//! set): with 16 fibers taking turns, the ninth evicted the first. The offsets spread them
//! over the 4 KiB of sets. A stack is mapped one page larger than asked, so that what a fiber
//! can use is never less than the size asked for. Measured with Reppy, Russo and Xiao's
//! parallel ping-pong on one proc (8 pairs, 16 fibers; `examples/parpp`, callgrind's cache
//! simulation, the difference of two run lengths): 16.5 L1 data misses a round trip without
//! the offsets, against none for a single pair (`examples/pingpong1`). In time, on the 2-core
//! test machine (`examples/parpp 100000`, 5 runs alternating with and without the offsets):
//! 29.5-29.9 M messages a second on one proc became 31.7-32.5 M, and 3.25-3.30 M on two procs
//! became 3.35-3.80 M; spawn+join's CPU time (`examples/spawn1`) stayed 16.0-16.5 ns.
//!
//! # Invariants
//! - `MAPPED` counts every stack mapped by pcml and not yet unmapped, pooled or in use.
//! - A pool belongs to one proc and is touched only on that proc's worker thread.

use std::io;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use corosensei::stack::{DefaultStack, Stack, StackPointer};

/// The distance between two stack colours, in bytes (a multiple of the stack alignment).
const COLOUR_STEP: usize = 256;
/// The number of colours: `COLOURS * COLOUR_STEP` is the 4 KiB over which an L1 data cache
/// of 64-byte lines and 64 sets spreads addresses.
const COLOURS: usize = 16;

/// A fiber's stack: a mapping with a guard page, whose top starts `colour` bytes below the
/// mapping's end (see "Stack colours").
pub(crate) struct FiberStack {
    stack: DefaultStack,
    /// The mapping's base less the colour, computed once: corosensei reads it at every
    /// resume.
    base: StackPointer,
}

impl FiberStack {
    fn new(stack: DefaultStack, colour: usize) -> Self {
        let base = StackPointer::new(stack.base().get() - colour)
            .expect("a stack's base is far above address zero");
        Self { stack, base }
    }
}

// SAFETY: `base` is the colour (less than a page, a multiple of the stack alignment) below
// the base of a valid stack mapped one page larger than the size asked for, so it lies inside
// the usable range `(limit, base]` of that stack, aligned; `limit` is the mapping's own.
unsafe impl Stack for FiberStack {
    #[inline]
    fn base(&self) -> StackPointer {
        self.base
    }

    #[inline]
    fn limit(&self) -> StackPointer {
        self.stack.limit()
    }
}

/// Mappings left for everything that is not a fiber stack.
const RESERVED_MAPPINGS: usize = 4096;
/// Stacks a proc keeps for reuse; beyond that a finished fiber's stack is unmapped.
const POOL_MAX: usize = 256;
/// The smallest stack size accepted by the builder. A panic in a fiber whose stack has less
/// than 40 KiB left is reported without a backtrace, even with `RUST_BACKTRACE` set: printing
/// one would overflow the stack (it did on a 16 KiB stack).
///
/// ```
/// assert_eq!(pcml::fiber::MIN_STACK_SIZE, 16 * 1024);
/// ```
pub const MIN_STACK_SIZE: usize = 16 * 1024;
/// The largest stack size accepted by the builder.
pub const MAX_STACK_SIZE: usize = 1 << 30;
/// The default stack size: address space only; pages are touched as the fiber uses them.
pub const DEFAULT_STACK_SIZE: usize = 256 * 1024;

/// Stacks mapped by pcml in this process, pooled or in use.
static MAPPED: AtomicUsize = AtomicUsize::new(0);

/// `vm.max_map_count`, if the system tells.
pub(crate) fn max_map_count() -> Option<usize> {
    static COUNT: OnceLock<Option<usize>> = OnceLock::new();
    *COUNT.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/vm/max_map_count")
            .ok()
            .and_then(|s| s.trim().parse().ok())
    })
}

/// The process-wide cap on mapped fiber stacks.
pub(crate) fn stack_cap() -> usize {
    match max_map_count() {
        Some(n) => n.saturating_sub(RESERVED_MAPPINGS) / 2,
        None => usize::MAX,
    }
}

/// Stacks currently mapped by pcml in this process.
pub(crate) fn mapped() -> usize {
    MAPPED.load(Ordering::Relaxed)
}

pub(crate) fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    // SAFETY: sysconf has no preconditions.
    *PAGE.get_or_init(|| unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize })
}

/// Why no stack could be had.
#[derive(Debug)]
pub(crate) enum NoStack {
    /// The process-wide cap derived from `vm.max_map_count` is reached.
    Cap { cap: usize },
    /// `mmap` itself failed (the mapping limit or memory).
    Mmap(io::Error),
}

/// A proc's pool of stacks of one size.
pub(crate) struct StackPool {
    size: usize,
    free: Vec<FiberStack>,
    /// How many stacks this pool has mapped: the next one's colour.
    made: usize,
}

impl StackPool {
    pub(crate) fn new(size: usize) -> Self {
        Self {
            size,
            free: Vec::new(),
            made: 0,
        }
    }

    /// Whether a stack is ready in the pool (so a start cannot fail for want of one).
    pub(crate) fn has_free(&self) -> bool {
        !self.free.is_empty()
    }

    /// Takes a stack from the pool or maps a new one.
    pub(crate) fn take(&mut self) -> Result<FiberStack, NoStack> {
        if let Some(s) = self.free.pop() {
            return Ok(s);
        }
        let cap = stack_cap();
        // Relaxed: a counter; the cap is a limit, not a synchronization point.
        if MAPPED.fetch_add(1, Ordering::Relaxed) >= cap {
            MAPPED.fetch_sub(1, Ordering::Relaxed);
            return Err(NoStack::Cap { cap });
        }
        match DefaultStack::new(usable(self.size)) {
            Ok(stack) => {
                let colour = (self.made % COLOURS) * COLOUR_STEP;
                self.made = self.made.wrapping_add(1);
                Ok(FiberStack::new(stack, colour))
            }
            Err(e) => {
                MAPPED.fetch_sub(1, Ordering::Relaxed);
                Err(NoStack::Mmap(e))
            }
        }
    }

    /// Returns a stack for reuse.
    pub(crate) fn give(&mut self, stack: FiberStack) {
        if self.free.len() < POOL_MAX {
            self.free.push(stack);
        } else {
            drop(stack);
            MAPPED.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for StackPool {
    fn drop(&mut self) {
        MAPPED.fetch_sub(self.free.len(), Ordering::Relaxed);
    }
}

/// What a stack of `size` bytes maps above its guard page: the size rounded up to whole
/// pages, and one page more, room for the colour (see "Stack colours").
fn usable(size: usize) -> usize {
    let page = page_size();
    size.div_ceil(page)
        .saturating_mul(page)
        .saturating_add(page)
}

/// The addresses a fiber's frames may occupy on a stack of `size` bytes whose guard page ends
/// at `guard_end` (see [`guard_range`]): up to the mapping's end.
pub(crate) fn span(guard_end: usize, size: usize) -> std::ops::Range<usize> {
    guard_end..guard_end.saturating_add(usable(size))
}

/// The guard page at the low end of a stack: `[start, end)`. corosensei's `limit()` is the
/// start of the whole mapping, whose first page is the guard.
pub(crate) fn guard_range(stack: &FiberStack) -> (usize, usize) {
    let start = stack.limit().get();
    (start, start + page_size())
}
