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

use crate::loom::sync::Mutex;
use crate::loom::sync::atomic::{AtomicUsize, Ordering};

#[derive(Debug)]
pub(crate) struct Inbox<T> {
    /// Written under `items`' lock by `push` and `drain`; read without it by `is_empty`.
    len: AtomicUsize,
    items: Mutex<Vec<T>>,
}

impl<T> Inbox<T> {
    pub(crate) fn new() -> Self {
        Self {
            len: AtomicUsize::new(0),
            items: Mutex::new(Vec::new()),
        }
    }

    /// Adds a message. The caller then checks whether the owner sleeps (see `wake_proc`).
    pub(crate) fn push(&self, item: T) {
        let mut items = self.items.lock().unwrap();
        items.push(item);
        // Relaxed: under the lock. The Dekker pair with the owner's `sleeping` flag is made by
        // the SeqCst fences in `Shared::send_to` and `Context::idle`: either the owner sees this
        // message or the pusher sees it sleeping.
        self.len.store(items.len(), Ordering::Relaxed);
    }

    /// Whether the inbox looks empty.
    pub(crate) fn is_empty(&self) -> bool {
        // Relaxed: a hint; callers that must not miss a push put a SeqCst fence before this load
        // (see `push`). Draining takes the lock, which orders it with every push.
        self.len.load(Ordering::Relaxed) == 0
    }

    /// Moves the messages that `take` selects into `out` (the owner only; the others stay, in
    /// order).
    pub(crate) fn take_if(&self, mut take: impl FnMut(&T) -> bool, out: &mut Vec<T>) {
        if self.is_empty() {
            return;
        }
        let mut items = self.items.lock().unwrap();
        let mut i = 0;
        while i < items.len() {
            if take(&items[i]) {
                out.push(items.remove(i));
            } else {
                i += 1;
            }
        }
        // Relaxed: under the lock, which orders it with every push.
        self.len.store(items.len(), Ordering::Relaxed);
    }

    /// Moves every message into `out` (which the owner keeps to reuse its buffer).
    pub(crate) fn drain_into(&self, out: &mut Vec<T>) {
        if self.is_empty() {
            return;
        }
        let mut items = self.items.lock().unwrap();
        std::mem::swap(&mut *items, out);
        // Relaxed: under the lock, which orders it with every push.
        self.len.store(0, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(pcml_loom)))]
mod tests {
    use super::Inbox;
    use std::sync::Arc;

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
