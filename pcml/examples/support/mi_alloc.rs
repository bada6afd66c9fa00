//! mimalloc as the global allocator, through `mi_malloc` for word-aligned requests, as the
//! bench binary allocates: profiling examples include it (`#[path]`) so that their counts match
//! the benchmark's. Not an example of its own (cargo only builds `examples/*.rs`).

/// mimalloc through `mi_malloc` for word-aligned requests.
pub struct Natural;

// SAFETY: `mi_malloc` returns word-aligned blocks of at least the size asked, which is all a
// layout with alignment up to 8 needs; larger alignments go to `mi_malloc_aligned`; `mi_free`
// frees blocks of either kind.
unsafe impl std::alloc::GlobalAlloc for Natural {
    unsafe fn alloc(&self, l: std::alloc::Layout) -> *mut u8 {
        // SAFETY: plain C allocation calls with the caller's non-zero size.
        unsafe {
            if l.align() <= 8 {
                libmimalloc_sys::mi_malloc(l.size()).cast()
            } else {
                libmimalloc_sys::mi_malloc_aligned(l.size(), l.align()).cast()
            }
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, _: std::alloc::Layout) {
        // SAFETY: every block came from mimalloc.
        unsafe { libmimalloc_sys::mi_free(p.cast()) }
    }

    unsafe fn realloc(&self, p: *mut u8, l: std::alloc::Layout, size: usize) -> *mut u8 {
        // SAFETY: a mimalloc block, a valid new size.
        unsafe {
            if l.align() <= 8 {
                libmimalloc_sys::mi_realloc(p.cast(), size).cast()
            } else {
                libmimalloc_sys::mi_realloc_aligned(p.cast(), size, l.align()).cast()
            }
        }
    }
}
