//! Who closes a channel when handles are dropped: the counts of a channel's both-ends handles
//! ([`Chan`](super::Chan), [`BoundedChan`](crate::BoundedChan), [`Mailbox`](crate::Mailbox))
//! and of its [`Sender`](super::Sender) and [`Receiver`](super::Receiver) halves.
//!
//! The rule: a channel closes on a drop that leaves no both-ends handle and no sender, or no
//! both-ends handle and no receiver, *provided a half was ever made*. A channel used only
//! through both-ends handles (a CML program) never closes by itself: its events may still be
//! synchronized after every handle is gone (an RPC reply channel lives on in the events of the
//! call and of the answer), and events do not count as handles, so that making an event costs
//! no count.
//!
//! # Invariants
//! - `both` and `halves` count live handles; a handle is made only from a live handle of the
//!   same channel, so a count never rises from zero for a kind that a live handle cannot make
//!   (a `Sender` comes from a `Sender` or a both-ends handle).
//! - Of two concurrent drops that together leave the channel without senders or receivers,
//!   at least one sees the other's decrement (both read-modify-writes and the loads that
//!   follow them are `SeqCst`), so at least one closes; closing twice is harmless.

use crate::loom::sync::atomic::{AtomicUsize, Ordering};

/// One `Sender` in `Handles::halves` (the low half).
const ONE_SENDER: usize = 1;
/// One `Receiver` in `Handles::halves` (the high half).
const ONE_RECEIVER: usize = 1 << (usize::BITS / 2);
/// One half of `Handles::halves`.
const HALF_MASK: usize = ONE_RECEIVER - 1;

/// A kind of handle.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// A both-ends handle (`Chan`, `BoundedChan`, `Mailbox`).
    Both,
    /// A `Sender`.
    Sender,
    /// A `Receiver`.
    Receiver,
}

/// The handle counts of one channel.
pub(crate) struct Handles {
    /// Live both-ends handles. Changed by their clones and drops.
    both: AtomicUsize,
    /// Live `Sender`s (low half) and `Receiver`s (high half). Changed by their clones and
    /// drops, and by a both-ends handle's `sender()`, `receiver()` and `split()`.
    halves: AtomicUsize,
}

impl Handles {
    /// The counts of a new channel: one both-ends handle.
    pub(crate) fn new() -> Self {
        Handles {
            both: AtomicUsize::new(1),
            halves: AtomicUsize::new(0),
        }
    }

    /// Counts a new handle of kind `k`, made from a live handle of the channel.
    pub(crate) fn add(&self, k: Kind) {
        // Relaxed: the new handle is made from a live one, which keeps the counts it needs
        // above zero meanwhile (as `Arc::clone`).
        let (old, limit) = match k {
            Kind::Both => (self.both.fetch_add(1, Ordering::Relaxed), usize::MAX / 2),
            Kind::Sender => (
                self.halves.fetch_add(ONE_SENDER, Ordering::Relaxed) & HALF_MASK,
                HALF_MASK / 2,
            ),
            Kind::Receiver => (
                self.halves.fetch_add(ONE_RECEIVER, Ordering::Relaxed) >> (usize::BITS / 2),
                HALF_MASK / 2,
            ),
        };
        if old >= limit {
            // As `Arc`: so many handles can only come from leaked clones.
            std::process::abort();
        }
    }

    /// Forgets a handle of kind `k`; whether the channel must close now (module docs).
    #[must_use]
    pub(crate) fn drop(&self, k: Kind) -> bool {
        // SeqCst on the decrement and on the load of the other count: acquire/release would
        // let two concurrent last drops (the last both-ends handle and the last sender, say)
        // each read the other's count from before its decrement, and nobody would close. In
        // the single total order of SeqCst operations one of the two loads comes after both
        // decrements.
        match k {
            Kind::Both => {
                if self.both.fetch_sub(1, Ordering::SeqCst) != 1 {
                    return false;
                }
                let h = self.halves.load(Ordering::SeqCst);
                h != 0 && (h & HALF_MASK == 0 || h >> (usize::BITS / 2) == 0)
            }
            Kind::Sender => {
                let old = self.halves.fetch_sub(ONE_SENDER, Ordering::SeqCst);
                old & HALF_MASK == 1 && self.both.load(Ordering::SeqCst) == 0
            }
            Kind::Receiver => {
                let old = self.halves.fetch_sub(ONE_RECEIVER, Ordering::SeqCst);
                old >> (usize::BITS / 2) == 1 && self.both.load(Ordering::SeqCst) == 0
            }
        }
    }
}

#[cfg(all(test, not(pcml_loom)))]
mod unit {
    use super::*;

    #[test]
    fn both_ends_handles_alone_never_close() {
        let h = Handles::new();
        h.add(Kind::Both);
        assert!(!h.drop(Kind::Both));
        assert!(!h.drop(Kind::Both));
    }

    #[test]
    fn the_last_sender_or_receiver_closes_once_no_both_ends_handle_is_left() {
        let h = Handles::new();
        h.add(Kind::Sender);
        h.add(Kind::Receiver);
        h.add(Kind::Receiver);
        assert!(!h.drop(Kind::Receiver));
        assert!(!h.drop(Kind::Both)); // a sender and a receiver are left
        assert!(h.drop(Kind::Sender)); // no sender left

        let h = Handles::new();
        h.add(Kind::Receiver);
        assert!(h.drop(Kind::Both)); // only a receiver is left
    }

    #[test]
    fn a_half_dropped_while_a_both_ends_handle_lives_does_not_close() {
        let h = Handles::new();
        h.add(Kind::Sender);
        assert!(!h.drop(Kind::Sender));
        assert!(!h.drop(Kind::Both)); // no half left: as if none had been made
    }
}
