//! Fiber stacks: mmap'd with a guard page, taken on first run from a per-proc pool.
//!
//! Every stack costs two memory mappings (the guard page and the rest). Linux caps mappings per
//! process at `vm.max_map_count` (65530 by default), so the number of stacks mapped at once is
//! capped process-wide at `(max_map_count - RESERVED_MAPPINGS) / 2`, leaving room for the rest
//! of the program. Reaching the cap is an error value or a clear message, never a crash.
//!
//! # Invariants
//! - `MAPPED` counts every stack mapped by pcml and not yet unmapped, pooled or in use.
//! - A pool belongs to one proc and is touched only on that proc's worker thread.

use std::io;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use corosensei::stack::{DefaultStack, Stack};

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
    free: Vec<DefaultStack>,
}

impl StackPool {
    pub(crate) fn new(size: usize) -> Self {
        Self {
            size,
            free: Vec::new(),
        }
    }

    /// Whether a stack is ready in the pool (so a start cannot fail for want of one).
    pub(crate) fn has_free(&self) -> bool {
        !self.free.is_empty()
    }

    /// Takes a stack from the pool or maps a new one.
    pub(crate) fn take(&mut self) -> Result<DefaultStack, NoStack> {
        if let Some(s) = self.free.pop() {
            return Ok(s);
        }
        let cap = stack_cap();
        // Relaxed: a counter; the cap is a limit, not a synchronization point.
        if MAPPED.fetch_add(1, Ordering::Relaxed) >= cap {
            MAPPED.fetch_sub(1, Ordering::Relaxed);
            return Err(NoStack::Cap { cap });
        }
        DefaultStack::new(self.size).map_err(|e| {
            MAPPED.fetch_sub(1, Ordering::Relaxed);
            NoStack::Mmap(e)
        })
    }

    /// Returns a stack for reuse.
    pub(crate) fn give(&mut self, stack: DefaultStack) {
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

/// The guard page at the low end of a stack: `[start, end)`. corosensei's `limit()` is the
/// start of the whole mapping, whose first page is the guard.
pub(crate) fn guard_range(stack: &DefaultStack) -> (usize, usize) {
    let start = stack.limit().get();
    (start, start + page_size())
}
