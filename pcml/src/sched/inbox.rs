//! A proc's inbox: the landing pad of Reppy, Russo and Xiao 2009 section 9.1.
//!
//! Another proc (or an OS thread) cannot touch a proc's run queue of started fibers, because a
//! started fiber never leaves its home proc. Instead it drops a message here: wake the fiber in
//! slot `s` with token `t`, or start this new fiber here (explicit placement). The owner drains
//! the inbox between threads and acts on each message.
//!
//! # Invariants
//! - `len` equals `items.len()` whenever `items` is unlocked; it is a hint for the owner's
//!   cheap emptiness check, and one side of the Dekker pair with `ProcShared::sleeping`, made
//!   with SeqCst fences on both sides (`Shared::send_to`, `Context::idle`).
//! - Only the owning proc drains.

use crate::loom::sync::atomic::{AtomicUsize, Ordering};
#[cfg(not(pcml_loom))]
use crate::mp::SpinLock as Lock;
// Under loom a blocking mutex in its place: the models check the hand-off around the lock
// (see `loom_inbox`), and a spin lock's waiter, a yield per look, multiplies their paths.
#[cfg(pcml_loom)]
use crate::loom::sync::Mutex as Lock;

/// Messages kept in the inbox itself, beside its lock, before any go to the spill vector.
const INLINE: usize = 2;

/// An inbox, aligned to a pair of cache lines so that nothing else shares them.
///
/// A message between two procs is the commonest cross-core hand-off of the runtime (a
/// fiber woken on another proc), so the inbox is laid out to move as few cache lines as
/// possible: the count, the lock and the first messages sit together, and a push of one
/// message into an empty inbox writes only those lines, which the owner then reads. The
/// first version (a `std::sync::Mutex` around a `Vec`, swapped with the owner's buffer on
/// each drain) also moved the vector's buffer and paid the mutex's read-modify-write to
/// unlock: two threads handing one message back and forth through a pair of inboxes took
/// 540 ns a round trip on the 2-core VM, against 190 ns with this layout and 160 ns for a
/// bare atomic store and load.
#[repr(C, align(128))]
pub(crate) struct Inbox<T> {
    /// Written under `items`' lock by `push` and the drains; read without it by `is_empty`.
    len: AtomicUsize,
    items: Lock<Slots<T>>,
}

/// The messages: the first `INLINE` in `inline`, in order, the rest in `spill`, in order.
struct Slots<T> {
    inline: [Option<T>; INLINE],
    spill: Vec<T>,
}

impl<T> Slots<T> {
    /// Appends `item` behind the `len` messages held.
    fn put(&mut self, len: usize, item: T) {
        match self.inline.get_mut(len) {
            Some(slot) => *slot = Some(item),
            None => self.spill.push(item),
        }
    }

    /// Moves all `len` messages held to `out`, in order.
    fn take_all(&mut self, len: usize, out: &mut Vec<T>) {
        out.extend(self.inline.iter_mut().take(len).filter_map(Option::take));
        // `append` keeps the spill vector's buffer here for the next overflow.
        out.append(&mut self.spill);
    }

    /// Moves the messages of the `len` held that `take` selects to `out`, in order, and closes
    /// up the others, in order; returns how many are left. Allocates nothing unless messages
    /// have spilled.
    fn take_selected(
        &mut self,
        len: usize,
        mut take: impl FnMut(&T) -> bool,
        out: &mut Vec<T>,
    ) -> usize {
        let mut kept = 0;
        for i in 0..len.min(INLINE) {
            if let Some(item) = self.inline[i].take() {
                if take(&item) {
                    out.push(item);
                } else {
                    self.inline[kept] = Some(item);
                    kept += 1;
                }
            }
        }
        for item in std::mem::take(&mut self.spill) {
            if take(&item) {
                out.push(item);
            } else {
                self.put(kept, item);
                kept += 1;
            }
        }
        kept
    }
}

impl<T> std::fmt::Debug for Inbox<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox")
            .field("len", &self.len.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<T> Inbox<T> {
    pub(crate) fn new() -> Self {
        Self {
            len: AtomicUsize::new(0),
            items: Lock::new(Slots {
                inline: std::array::from_fn(|_| None),
                spill: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> impl std::ops::DerefMut<Target = Slots<T>> + '_ {
        #[cfg(not(pcml_loom))]
        return self.items.lock();
        #[cfg(pcml_loom)]
        return self.items.lock().unwrap();
    }

    /// Adds a message. The caller then checks whether the owner sleeps (see `wake_proc`).
    pub(crate) fn push(&self, item: T) {
        let mut items = self.lock();
        // Relaxed: under the lock, which orders it with every other write of `len`.
        let len = self.len.load(Ordering::Relaxed);
        items.put(len, item);
        // Relaxed: under the lock. The Dekker pair with the owner's `sleeping` flag is made by
        // the SeqCst fences in `Shared::send_to` and `Context::idle`: either the owner sees this
        // message or the pusher sees it sleeping.
        self.len.store(len + 1, Ordering::Relaxed);
    }

    /// Whether the inbox looks empty.
    pub(crate) fn is_empty(&self) -> bool {
        // Relaxed: a hint; callers that must not miss a push put a SeqCst fence before this load
        // (see `push`). Draining takes the lock, which orders it with every push.
        self.len.load(Ordering::Relaxed) == 0
    }

    /// Moves the messages that `take` selects into `out` (the owner only; the others stay, in
    /// order).
    pub(crate) fn take_if(&self, take: impl FnMut(&T) -> bool, out: &mut Vec<T>) {
        if self.is_empty() {
            return;
        }
        let mut items = self.lock();
        // Relaxed: under the lock, which orders it with every push.
        let kept = items.take_selected(self.len.load(Ordering::Relaxed), take, out);
        // Relaxed: under the lock, which orders it with every push.
        self.len.store(kept, Ordering::Relaxed);
    }

    /// Moves every message into `out`, in order, behind what it holds.
    pub(crate) fn drain_into(&self, out: &mut Vec<T>) {
        if self.is_empty() {
            return;
        }
        let mut items = self.lock();
        // Relaxed: under the lock, which orders it with every push.
        items.take_all(self.len.load(Ordering::Relaxed), out);
        // Relaxed: under the lock, which orders it with every push.
        self.len.store(0, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(pcml_loom)))]
mod tests {
    use super::Inbox;
    use std::sync::Arc;

    #[test]
    fn a_proc_inbox_fits_its_pair_of_cache_lines() {
        let size = std::mem::size_of::<Inbox<crate::sched::worker::InboxMsg>>();
        assert_eq!(
            size, 128,
            "the inbox grew past its two cache lines: {size} bytes"
        );
    }

    #[test]
    fn messages_keep_their_order_past_the_inline_slots_and_through_take_if() {
        let inbox = Inbox::new();
        for i in 0..7u32 {
            inbox.push(i);
        }
        let mut even = Vec::new();
        inbox.take_if(|&i| i % 2 == 0, &mut even);
        assert_eq!(even, [0, 2, 4, 6]);
        inbox.push(7);
        let mut rest = vec![99];
        inbox.drain_into(&mut rest);
        assert_eq!(
            rest,
            [99, 1, 3, 5, 7],
            "drained behind what the buffer held, in order"
        );
        assert!(inbox.is_empty());
        inbox.push(8);
        let mut again = Vec::new();
        inbox.drain_into(&mut again);
        assert_eq!(again, [8]);
    }

    #[test]
    fn every_push_from_every_thread_is_drained_once() {
        let inbox = Arc::new(Inbox::new());
        let threads: Vec<_> = (0..3u32)
            .map(|t| {
                let inbox = inbox.clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        inbox.push(t * 100 + i);
                    }
                })
            })
            .collect();
        let mut got = Vec::new();
        while got.len() < 150 {
            let mut batch = Vec::new();
            inbox.drain_into(&mut batch);
            got.extend(batch);
            std::thread::yield_now();
        }
        for t in threads {
            t.join().unwrap();
        }
        inbox.drain_into(&mut got);
        got.sort();
        let want: Vec<u32> = (0..3)
            .flat_map(|t| (0..50).map(move |i| t * 100 + i))
            .collect();
        assert_eq!(got, want);
        assert!(inbox.is_empty());
    }
}
