//! The FIFO of a channel's waiting queue: a ring of slots with a power-of-two capacity.
//!
//! A channel's queue holds, nearly always, nothing or one offer: a rendezvous pushes an offer
//! and the partner pops it. `VecDeque` did that with wrap-around arithmetic (a compare and a
//! conditional move to wrap an index against a capacity that need not be a power of two) and
//! length bookkeeping on both ends; this ring wraps with a mask and keeps a head and a
//! length. Its slots are `Option`s, so every slot is a valid value; the unsafe claims are that
//! a masked index is in bounds, and that the slot a push fills is `None`, so that it is
//! overwritten without a drop (were it not, its item would leak, nothing worse). The
//! assignment it replaces tested the old value and kept a drop call on every rendezvous. The
//! rare operations (a removal or an insertion in the middle, the dead-offer sweep) rebuild the
//! ring; they run on choices and withdrawals, off the rendezvous path.
//!
//! What it saved, with the other changes measured with it: the channel module docs.
//!
//! # Invariants
//! - `buf.len()` is zero or a power of two; `len <= buf.len()`.
//! - The `len` slots from `head` on (wrapping at `buf.len()`) are `Some`, the others `None`;
//!   `head < buf.len()` when `buf` is not empty.

use std::ptr;

/// The capacity of a ring's first allocation (a power of two); it doubles when full.
const FIRST_CAPACITY: usize = 4;

/// A FIFO of `E` (see the module docs).
pub(super) struct Ring<E> {
    /// The slots; see the invariants.
    buf: Box<[Option<E>]>,
    /// Index of the front slot (when `len > 0`).
    head: usize,
    /// The number of queued items.
    len: usize,
}

impl<E> Default for Ring<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Ring<E> {
    /// An empty ring; allocates nothing until the first push.
    pub(super) fn new() -> Self {
        Ring {
            buf: Box::new([]),
            head: 0,
            len: 0,
        }
    }

    #[inline(always)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The slot `i` places after the front (wrapping), for `i < buf.len()`.
    #[inline(always)]
    fn at(&self, i: usize) -> usize {
        (self.head + i) & (self.buf.len() - 1)
    }

    #[inline(always)]
    pub(super) fn push_back(&mut self, e: E) {
        if self.len == self.buf.len() {
            self.grow();
        }
        let i = self.at(self.len);
        // SAFETY: `buf` is not empty (grown above if it was full, and an empty one is full),
        // and its length is a power of two, so `at` masks `i` below it.
        let slot = unsafe { self.buf.get_unchecked_mut(i) };
        debug_assert!(slot.is_none());
        // SAFETY: `slot` is valid for writes (a live `&mut`). The slot past the back is `None`
        // (invariants) and owns nothing, so overwriting it without a drop leaks nothing (an
        // assignment would test it for `Some` and keep a drop call on every push).
        unsafe { ptr::write(slot, Some(e)) };
        self.len += 1;
    }

    #[inline(always)]
    pub(super) fn pop_front(&mut self) -> Option<E> {
        if self.len == 0 {
            return None;
        }
        let h = self.head;
        // SAFETY: `len > 0`, so `buf` is not empty and `head < buf.len()` (invariants).
        let e = unsafe { self.buf.get_unchecked_mut(h) }.take();
        self.head = (h + 1) & (self.buf.len() - 1);
        self.len -= 1;
        e
    }

    /// The item `i` places after the front, if there is one.
    pub(super) fn get(&self, i: usize) -> Option<&E> {
        if i < self.len {
            self.buf[self.at(i)].as_ref()
        } else {
            None
        }
    }

    /// The items, front first.
    pub(super) fn iter(&self) -> impl Iterator<Item = &E> + '_ {
        (0..self.len).filter_map(move |i| self.buf[self.at(i)].as_ref())
    }

    /// Takes every item out, front first, leaving the ring empty (its memory kept).
    pub(super) fn drain(&mut self) -> Vec<E> {
        let mut out = Vec::with_capacity(self.len);
        while let Some(e) = self.pop_front() {
            out.push(e);
        }
        self.head = 0;
        out
    }

    /// Refills an empty ring with `items`, front first.
    fn refill(&mut self, items: Vec<E>) {
        debug_assert!(self.is_empty());
        for e in items {
            self.push_back(e);
        }
    }

    /// Removes and returns the item `i` places after the front; the others keep their order.
    pub(super) fn remove(&mut self, i: usize) -> Option<E> {
        if i == 0 {
            return self.pop_front();
        }
        if i >= self.len {
            return None;
        }
        let mut items = self.drain();
        let e = items.remove(i);
        self.refill(items);
        Some(e)
    }

    /// Inserts `e` so that it is `i` places after the front (at the back if `i >= len`).
    pub(super) fn insert(&mut self, i: usize, e: E) {
        let mut items = self.drain();
        items.insert(i.min(items.len()), e);
        self.refill(items);
    }

    /// Keeps only the items for which `keep` says true, in their order.
    pub(super) fn retain(&mut self, keep: impl FnMut(&E) -> bool) {
        let mut items = self.drain();
        items.retain(keep);
        self.refill(items);
    }

    /// Doubles the capacity (or makes the first one), moving the items to the front of the
    /// new slots in order.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let cap = (self.buf.len() * 2).max(FIRST_CAPACITY);
        let mut buf: Box<[Option<E>]> = (0..cap).map(|_| None).collect();
        for (k, slot) in buf.iter_mut().enumerate().take(self.len) {
            let i = self.at(k);
            *slot = self.buf[i].take();
        }
        self.buf = buf;
        self.head = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::Ring;
    use std::collections::VecDeque;

    /// A ring and a `VecDeque` fed the same operations hold the same items in the same order,
    /// across growth and wrap-around.
    #[test]
    fn ring_behaves_as_a_deque() {
        let mut r = Ring::new();
        let mut d = VecDeque::new();
        let mut next = 0u32;
        // A fixed pseudo-random walk of pushes, pops, removals, insertions and sweeps.
        let mut x = 12345u32;
        for _ in 0..5000 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            match (x >> 16) % 10 {
                0..=3 => {
                    r.push_back(next);
                    d.push_back(next);
                    next += 1;
                }
                4..=6 => assert_eq!(r.pop_front(), d.pop_front()),
                7 => {
                    let i = (x as usize >> 8) % (d.len() + 1);
                    assert_eq!(r.remove(i), d.remove(i));
                }
                8 => {
                    let i = (x as usize >> 8) % (d.len() + 1);
                    r.insert(i, next);
                    d.insert(i, next);
                    next += 1;
                }
                _ => {
                    r.retain(|v| v % 3 != 0);
                    d.retain(|v| v % 3 != 0);
                }
            }
            assert_eq!(r.len(), d.len());
            assert_eq!(r.is_empty(), d.is_empty());
            assert!(r.iter().eq(d.iter()));
            assert_eq!(r.get(0), d.front());
            assert_eq!(r.get(d.len()), None);
        }
        assert_eq!(r.drain(), d.drain(..).collect::<Vec<_>>());
        assert!(r.is_empty());
    }

    /// Dropping a ring drops what it still holds.
    #[test]
    fn ring_drops_its_items() {
        let item = std::sync::Arc::new(());
        let mut r = Ring::new();
        for _ in 0..10 {
            r.push_back(item.clone());
        }
        r.pop_front();
        assert_eq!(std::sync::Arc::strong_count(&item), 10);
        drop(r);
        assert_eq!(std::sync::Arc::strong_count(&item), 1);
    }
}
