//! A proc's ready queue: the slots of its runnable started fibers, oldest first.
//!
//! A ring of slot numbers with a power-of-two capacity, indexed by two free-running counters
//! masked to the capacity. Every method takes `&self` and copies slot numbers in or out, as a
//! `Cell` does, so the queue needs no borrow flag: the `RefCell<VecDeque<usize>>` it replaces
//! set and cleared its flag around every push and pop (two in each fiber switch), and
//! `VecDeque`'s wrap-around arithmetic cost a compare and a conditional move where a mask
//! does; its `push_back` also stayed out of line in the wake-up of a blocked fiber. A fiber's
//! yield (one pop and one push) went from 171 instructions to 156, and a message of a 1-proc
//! fiber ping-pong from 393 to 364 (callgrind, `examples/yield_only` and `examples/pingpong1`,
//! the difference of two run lengths); in time, 5% and 3-5% less (alternated runs).

use std::cell::{Cell, UnsafeCell};

/// The ready queue's first capacity (a power of two); it doubles when full.
const FIRST_CAPACITY: usize = 64;

/// A FIFO of fiber slots, private to one proc (not `Sync`: see the module docs).
pub(super) struct ReadyQueue {
    /// The count of pops since the queue was made (wrapping); the front is at `head & mask`.
    head: Cell<usize>,
    /// The count of pushes since the queue was made (wrapping); `tail - head` is the length.
    tail: Cell<usize>,
    /// The ring's length less one (its length is a power of two, never zero): kept rather
    /// than computed from the slice's length, a load and a decrement on every push and pop.
    mask: Cell<usize>,
    /// The ring.
    buf: UnsafeCell<Box<[usize]>>,
}

impl ReadyQueue {
    pub(super) fn new() -> Self {
        ReadyQueue {
            head: Cell::new(0),
            tail: Cell::new(0),
            mask: Cell::new(FIRST_CAPACITY - 1),
            buf: UnsafeCell::new(vec![0; FIRST_CAPACITY].into_boxed_slice()),
        }
    }

    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.tail.get().wrapping_sub(self.head.get())
    }

    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.tail.get() == self.head.get()
    }

    #[inline(always)]
    pub(super) fn push_back(&self, slot: usize) {
        let mut tail = self.tail.get();
        if tail.wrapping_sub(self.head.get()) > self.mask.get() {
            // Full. Moves the front to index 0 and the back to the old length.
            self.grow();
            tail = self.tail.get();
        }
        // SAFETY: no reference to the ring is alive outside a method of this queue, and no
        // method of it runs while another does (the queue is not `Sync`, and none calls out);
        // the index is masked to the ring's length less one, a power of two less one.
        unsafe {
            let buf = &mut *self.buf.get();
            *buf.get_unchecked_mut(tail & self.mask.get()) = slot;
        }
        self.tail.set(tail.wrapping_add(1));
    }

    #[inline(always)]
    pub(super) fn pop_front(&self) -> Option<usize> {
        if self.is_empty() {
            return None;
        }
        // SAFETY: just found not empty.
        Some(unsafe { self.pop_front_nonempty() })
    }

    /// [`pop_front`](Self::pop_front) for a caller that knows the queue is not empty (it
    /// just asked `is_empty`, and pushed or popped nothing since): the test of `pop_front`,
    /// repeated after the caller's, cost a load, a compare and a branch.
    ///
    /// # Safety
    /// The queue must not be empty. (From an empty one it would return a stale slot number
    /// and make the length wrap: in bounds here, but the slot would go on to
    /// `resume_fiber`, whose unchecked lookup needs the slot of a started fiber.)
    #[inline(always)]
    pub(super) unsafe fn pop_front_nonempty(&self) -> usize {
        let head = self.head.get();
        debug_assert_ne!(head, self.tail.get());
        // SAFETY: as in `push_back`.
        let slot = unsafe {
            let buf = &*self.buf.get();
            *buf.get_unchecked(head & self.mask.get())
        };
        self.head.set(head.wrapping_add(1));
        slot
    }

    pub(super) fn clear(&self) {
        self.head.set(self.tail.get());
    }

    /// Removes the slots from position `at` (0: the front) to the back and returns them in
    /// order; nothing if the queue is no longer than `at`.
    pub(super) fn split_off(&self, at: usize) -> Vec<usize> {
        let len = self.len();
        let mut out = Vec::with_capacity(len.saturating_sub(at));
        if at >= len {
            return out;
        }
        let head = self.head.get();
        let mask = self.mask.get();
        // SAFETY: as in `push_back`.
        let buf = unsafe { &*self.buf.get() };
        out.extend((at..len).map(|k| buf[head.wrapping_add(k) & mask]));
        self.tail.set(head.wrapping_add(at));
        out
    }

    pub(super) fn extend(&self, slots: impl IntoIterator<Item = usize>) {
        for s in slots {
            self.push_back(s);
        }
    }

    /// Doubles the ring, keeping the queue's order (its front moves to index 0).
    #[cold]
    #[inline(never)]
    fn grow(&self) {
        let (head, len) = (self.head.get(), self.len());
        // SAFETY: as in `push_back`.
        let buf = unsafe { &mut *self.buf.get() };
        let mask = self.mask.get();
        debug_assert_eq!(mask + 1, buf.len());
        let mut new = vec![0; buf.len() * 2].into_boxed_slice();
        for (k, s) in new.iter_mut().take(len).enumerate() {
            *s = buf[head.wrapping_add(k) & mask];
        }
        self.mask.set(new.len() - 1);
        *buf = new;
        self.head.set(0);
        self.tail.set(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_across_growth_and_wrap() {
        let q = ReadyQueue::new();
        let mut model = std::collections::VecDeque::new();
        let mut next = 0;
        // Pushes outnumber pops, so the ring wraps and grows several times.
        for round in 0..2000 {
            for _ in 0..(1 + round % 3) {
                q.push_back(next);
                model.push_back(next);
                next += 1;
            }
            if round % 2 == 0 {
                assert_eq!(q.pop_front(), model.pop_front());
            }
            assert_eq!(q.len(), model.len());
        }
        while let Some(s) = model.pop_front() {
            assert_eq!(q.pop_front(), Some(s));
        }
        assert!(q.is_empty());
        assert_eq!(q.pop_front(), None);
    }

    #[test]
    fn split_off_takes_the_back_in_order() {
        let q = ReadyQueue::new();
        // Wrap the counters past the ring's end first.
        for s in 0..100 {
            q.push_back(s);
            q.pop_front();
        }
        q.extend([1, 2, 3, 4, 5]);
        assert!(q.split_off(5).is_empty());
        assert_eq!(q.split_off(2), vec![3, 4, 5]);
        assert_eq!(q.len(), 2);
        q.push_back(6);
        assert_eq!(q.pop_front(), Some(1));
        assert_eq!(q.pop_front(), Some(2));
        assert_eq!(q.pop_front(), Some(6));
        q.extend([7, 8]);
        q.clear();
        assert!(q.is_empty());
        assert_eq!(q.pop_front(), None);
    }
}
