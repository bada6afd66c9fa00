//! The shared record of one actor: its mailbox (messages in arrival order, with a save pointer
//! for selective receive), its parked owner, its blocked receive events, and whether it lives.
//!
//! One counted `Record<M>` per actor: every [`Pid`](super::Pid) and the actor's
//! [`Ctx`](super::Ctx) point at it through a `RecRef<M>`, links, monitors and names through a
//! type-erased `PeerRef`. The record keeps its own reference count rather than living in an
//! `Arc`: the last holder (usually the actor's own end, when nobody kept its pid) frees it with
//! no atomic read-modify-write, where an `Arc` takes two (its strong count, then its weak). Links, monitors, signals and registered names live in an
//! extension allocated on first use, so an actor that uses none of them pays one pointer.
//!
//! # How a message travels
//! A send locks the record. If a receive *event* (`receive_evt`, `receive_match_evt`) is
//! blocked on the mailbox and accepts the message, the sender wins that event's sync and
//! hands the message into its slot (the CML way, so `choose` stays exact). Otherwise the
//! message is appended to the queue and the parked owner, if any, is taken out of `parked`
//! and woken after the lock is released: one wake per parked receive, no scan by the sender.
//!
//! A direct receive (`receive`, `receive_match`, `recv`, ...) runs in the owner. The owner
//! keeps a private part of the mailbox ([`Own`], in its `Ctx`): the oldest messages, which it
//! moved out of the shared queue in one lock. It scans the private part with no lock and takes
//! the first accepted message; if none, it locks the record, moves the whole shared queue in
//! behind the private part, and scans the rest; if still none, it parks (installs its
//! [`Blocker`] under the same lock, so no send can slip between the scan and the park) and
//! resumes its scan where it stopped when woken, as Erlang's save pointer does. So a burst of
//! `n` messages costs the receiver one lock, not `n`.
//!
//! Receive events read the shared queue from any thread, so while one is alive the owner
//! keeps nothing private: making one gives the private messages back to the front of the
//! shared queue, and the owner's receives scan the shared queue under the lock until every
//! event is dropped (`Record::events`). If a message was taken by someone else meanwhile (a
//! receive event synced on another thread), the scan restarts from the oldest message.
//!
//! # Invariants
//! - `State` is touched only under `Record::state`. User code runs under that lock only as a
//!   receive predicate; the only other lock taken under it is a blocked event's slot lock or
//!   predicate lock (leaves). No blocker is woken and no message is dropped under it.
//! - While `alive` is false the queue is empty and stays empty: sends return the message.
//! - No live receive event whose predicate accepts a queued message stays blocked on this
//!   mailbox: a send serves blocked events before queueing, a receive event that finds an
//!   accepted message takes it instead of blocking (for pure predicates).
//! - `taken` counts every removal from `queue`, so a parked scan whose count changed rescans.
//!   With the owner's private part, the mailbox is `Own::msgs` then `queue`, and its removal
//!   count is `Own::taken + taken` (see [`Own`] for when each part may hold messages).
//! - A kill sets `Record::killed` under the lock, so the owner's lock-free path sees it.
//! - A sender never unwinds from a receive predicate: if one panics on its thread, the message
//!   stays and the blocked event it belonged to completes with `ExitReason::Panic`.

use std::any::TypeId;
use std::collections::VecDeque;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use crate::loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::event::{BaseEvent, Blocked, OwnWaiter};
use crate::mp::{Counted, Counts, RefCount, SpinLock, SpinLockGuard};
use crate::sched::blocker::{self, Blocker};
use crate::sync_var::waiters::{Offer, Queue, Slot, complete_self, deliver, delivered};
use crate::task::{TaskAddr, TaskRef};

use super::link::{Ext, Peer};
use super::{ActorId, ExitReason};

/// What a receive event gets: a message with where it was in the mailbox, or the reason its
/// actor was killed.
pub(crate) type Delivery<M> = Result<(M, Pos), ExitReason>;

/// Where a message received by an event was, so an abandoned sync can put it back there.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pos {
    /// Its index in the queue (the queue's length for a message handed over directly).
    index: usize,
    /// `State::taken` just after it left (or was handed over).
    taken: u64,
}

/// A blocked receive event: its offer and its predicate (`None`: accept anything).
pub(crate) type RecvOffer<M> = (Offer<Delivery<M>>, Option<Pred<M>>);

/// A selective-receive predicate shared between a blocked event and the senders that test it.
/// (A std mutex even under loom: loom's cannot hold an unsized closure.)
pub(crate) type Pred<M> = Arc<std::sync::Mutex<dyn FnMut(&M) -> bool + Send>>;

/// Locks a predicate (a leaf lock; poisoning from a panicking predicate is ignored).
fn lock_pred<M>(p: &Pred<M>) -> std::sync::MutexGuard<'_, dyn FnMut(&M) -> bool + Send + 'static> {
    p.lock().unwrap_or_else(|e| e.into_inner())
}

/// Tests `m` with a blocked receive event's predicate on a sender's thread: `Err` with the
/// panic's message if the predicate panicked (the predicate's lock is then poisoned, which
/// `lock_pred` ignores).
fn test_pred<M>(p: &Pred<M>, m: &M) -> Result<bool, Arc<str>> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (lock_pred(p))(m))).map_err(|e| {
        let msg = e
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| e.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "Box<dyn Any>".to_string());
        Arc::from(format!(
            "a receive predicate panicked on a sender's thread: {msg}"
        ))
    })
}

/// The record's lock held.
pub(crate) type Guard<'a, M> = SpinLockGuard<'a, State<M>>;

/// The shared record of one actor.
pub(crate) struct Record<M> {
    /// Counted references alive (`RecRef`s and `PeerRef`s); the one that drops it to zero
    /// frees the record. A std atomic even under loom, as the `Arc` it replaces was.
    refs: RefCount,
    pub(crate) id: ActorId,
    /// Made by `Ctx::new` (not a spawned actor): a kill panics with a message instead of
    /// unwinding to an actor root.
    pub(crate) detached: bool,
    /// `M` is `AnyMsg`: signals are delivered as ordinary messages.
    pub(crate) untyped: bool,
    /// Receive events (`RecvEvt`) alive for this mailbox. Incremented by the owner when it
    /// makes one (after it gave its private messages back), decremented when one is dropped,
    /// on any thread. While it is not zero the owner keeps no private messages (see `Own`).
    pub(crate) events: AtomicUsize,
    /// Set (under the lock, never cleared) when a kill is recorded in the extension, so the
    /// owner's lock-free receive path notices it at its next receive.
    pub(crate) killed: AtomicBool,
    /// Where the actor's fiber runs, so that a kill reaches it wherever it blocks
    /// (`Record::enter_fiber`, `Record::abort_fiber`): `FIBER_KILLED` (set once by a kill),
    /// `FIBER_HOME` with the runtime, proc and slot (set once by the fiber when it starts).
    /// Both sides read-modify-write it, so either the kill comes first and the starting fiber
    /// cancels itself, or the kill finds where the fiber is. A std atomic even under loom:
    /// loom models have no fibers.
    fiber_home: AtomicU64,
    /// The actor's fiber's thread id, written (Relaxed) before `fiber_home`'s `FIBER_HOME`,
    /// read after it (the read-modify-writes order the two).
    fiber_id: AtomicU64,
    /// The mailbox's state. A spin lock: every section under it is short (a push, a swap of
    /// queues, a scan by the owner's predicate), so a send costs one atomic read-modify-write
    /// (the release of a spin lock is a plain store; a `std` mutex's is a swap).
    pub(crate) state: SpinLock<State<M>>,
}

pub(crate) struct State<M> {
    /// Messages in arrival order. Written by senders (push) and receivers (remove).
    pub(crate) queue: Msgs<M>,
    /// Removals from `queue` so far (see the invariants).
    pub(crate) taken: u64,
    /// The owner parked in a direct receive; taken and woken by the next send or signal.
    pub(crate) parked: Option<Blocker>,
    /// Blocked receive events with their predicates (`None`: accept anything), oldest first;
    /// allocated when the first one blocks (most actors never use receive events).
    pub(crate) offers: Option<Box<Queue<RecvOffer<M>>>>,
    /// False once the actor ended; set once, by its exit.
    pub(crate) alive: bool,
    /// Links, monitors, signals, names: allocated on first use.
    pub(crate) ext: Option<Box<Ext>>,
    /// An async actor's task, holding no reference count (`Record::enter_task`), so that a
    /// kill cancels it wherever it awaits. Set once, before the task is first scheduled;
    /// upgraded to a counted reference only under the lock while `alive`, that is while the
    /// actor's future, and so its task, exists (the future's drop ends the actor first).
    pub(crate) task: Option<TaskAddr>,
}

/// Where a parked selective receive stopped scanning.
pub(crate) struct Scan {
    /// `State::taken` when the scan was last updated.
    taken: u64,
    /// Index of the first message not yet tested.
    next: usize,
}

impl Scan {
    pub(crate) fn new() -> Self {
        Scan {
            taken: u64::MAX,
            next: 0,
        }
    }

    /// A scan that skips the messages that were queued when `mark` was taken (if none has
    /// been removed since: otherwise it starts from the oldest, which is still correct).
    pub(crate) fn since(mark: super::Mark) -> Self {
        Scan {
            taken: mark.taken,
            next: mark.len,
        }
    }
}

/// A fresh actor id. Ids are handed to each OS thread in blocks, so spawning an actor touches
/// no shared counter.
fn next_id() -> ActorId {
    use std::cell::Cell;
    const BLOCK: u64 = 1024;
    static NEXT_BLOCK: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        /// The next id of this thread's block, and the end of the block.
        static RANGE: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    }
    let n = RANGE.with(|r| {
        let (mut next, mut end) = r.get();
        if next >= end {
            // Once per block: dumps name actors through this (no cost per spawn).
            crate::sched::dump::set_actor_names(crate::sched::dump::ActorNames {
                fiber: super::current::fiber_actor,
                task: super::current::task_actor,
            });
            // Relaxed: only uniqueness matters.
            next = NEXT_BLOCK.fetch_add(BLOCK, Ordering::Relaxed);
            end = next + BLOCK;
        }
        r.set((next + 1, end));
        next
    });
    ActorId(std::num::NonZeroU64::new(n).expect("pcml: actor ids start at 1"))
}

impl<M: 'static> Record<M> {
    /// A new record and the one reference to it (`Ctx::new`'s).
    pub(crate) fn counted(detached: bool) -> RecRef<M> {
        // SAFETY: `alloc` boxed the record and counted this one reference.
        unsafe { RecRef::from_counted(Self::alloc(detached, 1)) }
    }

    /// A new record with `refs` references counted, which the caller hands out.
    fn alloc(detached: bool, refs: usize) -> NonNull<Self> {
        // Written straight into its block: `Box::new` built the record on the stack and
        // copied it (a `memcpy` call for its 200-odd bytes).
        let mut rec = Box::<Self>::new_uninit();
        rec.write(Record {
            refs: RefCount::new(refs),
            id: next_id(),
            detached,
            untyped: std::any::TypeId::of::<M>() == std::any::TypeId::of::<super::AnyMsg>(),
            events: AtomicUsize::new(0),
            killed: AtomicBool::new(false),
            fiber_home: AtomicU64::new(0),
            fiber_id: AtomicU64::new(0),
            state: SpinLock::new(State {
                queue: Msgs::new(),
                taken: 0,
                parked: None,
                offers: None,
                alive: true,
                ext: None,
                task: None,
            }),
        });
        // SAFETY: written just above.
        NonNull::from(Box::leak(unsafe { rec.assume_init() }))
    }
}

impl<M: Send + 'static> Record<M> {
    /// The record of a spawned actor, with its first three references: its pid's, its
    /// context's and its life's, all counted as it is made (no read-modify-write to clone
    /// them).
    pub(crate) fn new_spawned() -> (RecRef<M>, RecRef<M>, PeerRef) {
        let ptr = Self::alloc(false, 3);
        // SAFETY: `alloc` boxed the record and counted these three references.
        unsafe {
            (
                RecRef::from_counted(ptr),
                RecRef::from_counted(ptr),
                PeerRef::from_counted(ptr),
            )
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Counted references

/// A counted reference to the record of an actor whose messages are `M`s: what pids, contexts
/// and receive events hold. `Arc<Record<M>>` with the record's own count (see the module docs).
pub(crate) type RecRef<M> = Counted<Record<M>>;

/// A counted reference to the record of an actor of any message type: what links, monitors,
/// the registry and `self_pid`'s tables hold. `Arc<dyn Peer>` with the record's own count.
pub(crate) type PeerRef = Counted<dyn Peer>;

impl<M> Counts for Record<M> {
    #[inline]
    fn ref_count(&self) -> &RefCount {
        &self.refs
    }
}

impl Counts for dyn Peer + '_ {
    #[inline]
    fn ref_count(&self) -> &RefCount {
        self.refs()
    }
}

impl<M: Send + 'static> RecRef<M> {
    /// Another counted reference to the record, type-erased.
    #[inline]
    pub(crate) fn to_peer(&self) -> PeerRef {
        self.refs.count();
        // SAFETY: the record is alive (we count), and the reference just counted is handed to
        // the new `PeerRef`.
        unsafe { PeerRef::from_counted(self.as_non_null()) }
    }
}

impl PeerRef {
    /// The record as a `RecRef<M>`, if its actor takes `M`s; else the reference back.
    pub(crate) fn downcast<M: Send + 'static>(self) -> Result<RecRef<M>, PeerRef> {
        if self.msg_type_id() != TypeId::of::<M>() {
            return Err(self);
        }
        let ptr = self.into_non_null().cast::<Record<M>>();
        // SAFETY: the record is a `Record<M>` (its message type is `M`), and our count goes to
        // the typed reference.
        Ok(unsafe { RecRef::from_counted(ptr) })
    }
}

impl<M> Record<M> {
    /// The record's reference count (for `Peer::refs`).
    pub(crate) fn refs(&self) -> &RefCount {
        &self.refs
    }

    /// Whether the caller's reference is the only one: then nobody else can reach the record
    /// (that takes a reference), now or later.
    #[inline]
    pub(crate) fn is_sole_reference(&self) -> bool {
        self.refs.is_unique()
    }
}

impl<M> Record<M> {
    #[inline]
    pub(crate) fn lock(&self) -> Guard<'_, M> {
        self.state.lock()
    }

    /// Locks the record for a receive by its owner, raising a pending kill.
    #[inline]
    pub(crate) fn lock_owner(&self) -> Guard<'_, M> {
        let st = self.lock();
        if let Some(k) = st.kill() {
            let k = k.clone();
            drop(st);
            raise(self.id, self.detached, k);
        }
        st
    }

    pub(crate) fn is_alive(&self) -> bool {
        self.lock().alive
    }
}

/// The messages of a mailbox in arrival order, kept in two parts: `passed`, messages a
/// selective receive already passed over, then `fresh`, the rest. A receive that takes a
/// message from `fresh` moves the messages it passed over to the end of `passed` (each message
/// moves at most once that way), so a mailbox that keeps messages nobody takes does not shift
/// them again on every receive that takes a newer one, as one `VecDeque` would. Indices count
/// across both parts, `passed` first.
pub(crate) struct Msgs<M> {
    passed: VecDeque<M>,
    fresh: VecDeque<M>,
}

impl<M> Msgs<M> {
    const fn new() -> Self {
        Msgs {
            passed: VecDeque::new(),
            fresh: VecDeque::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.passed.len() + self.fresh.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.passed.is_empty() && self.fresh.is_empty()
    }

    fn push_back(&mut self, m: M) {
        self.fresh.push_back(m);
    }

    fn pop_back(&mut self) -> Option<M> {
        self.fresh.pop_back().or_else(|| self.passed.pop_back())
    }

    fn pop_front(&mut self) -> Option<M> {
        self.passed.pop_front().or_else(|| self.fresh.pop_front())
    }

    /// Removes the message at `i`; a message of `fresh` takes the ones before it into
    /// `passed` with it gone.
    fn remove(&mut self, i: usize) -> Option<M> {
        let p = self.passed.len();
        if i < p {
            return self.passed.remove(i);
        }
        let j = i - p;
        if j >= self.fresh.len() {
            return None;
        }
        move_front(&mut self.fresh, &mut self.passed, j);
        self.fresh.pop_front()
    }

    /// Inserts `m` at `i` (at most `len`).
    fn insert(&mut self, i: usize, m: M) {
        let p = self.passed.len();
        if i <= p {
            self.passed.insert(i, m);
        } else {
            self.fresh.insert(i - p, m);
        }
    }

    /// Moves the oldest `k` messages (at most `len`) into `out`.
    fn drain_front_into(&mut self, out: &mut Vec<M>, k: usize) {
        let a = k.min(self.passed.len());
        out.extend(self.passed.drain(..a));
        let b = (k - a).min(self.fresh.len());
        out.extend(self.fresh.drain(..b));
    }

    /// Moves every message of `other` to the end of `self`, in order.
    fn append(&mut self, other: &mut Msgs<M>) {
        let n = other.passed.len();
        move_front(&mut other.passed, &mut self.fresh, n);
        let n = other.fresh.len();
        move_front(&mut other.fresh, &mut self.fresh, n);
    }

    /// Every message, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &M> {
        self.passed.iter().chain(self.fresh.iter())
    }

    /// Empties the mailbox, returning its messages.
    fn take(&mut self) -> Msgs<M> {
        std::mem::replace(self, Msgs::new())
    }

    /// The index of the first message at or after `from` that `f` accepts. Walks each part's
    /// contiguous halves as slices (a selective receive may pass over many messages it
    /// leaves, and indexing a `VecDeque` one element at a time costs a wrap and a bounds check
    /// each).
    #[inline]
    fn position_from(&self, from: usize, f: &mut impl FnMut(&M) -> bool) -> Option<usize> {
        let p = self.passed.len();
        if from < p
            && let Some(i) = position_in(&self.passed, from, f)
        {
            return Some(i);
        }
        position_in(&self.fresh, from.saturating_sub(p), f).map(|i| p + i)
    }
}

/// Moves the oldest `k` messages of `from` (at most its length) to the end of `to`, in order:
/// one at a time when they are few, as a mailbox's usually are (a `VecDeque`'s `append` or
/// `drain` costs about a hundred instructions even for one element), in bulk otherwise.
#[inline]
fn move_front<M>(from: &mut VecDeque<M>, to: &mut VecDeque<M>, k: usize) {
    const FEW: usize = 4;
    if k <= FEW {
        for _ in 0..k {
            match from.pop_front() {
                Some(m) => to.push_back(m),
                None => return,
            }
        }
    } else if k >= from.len() {
        to.append(from);
    } else {
        to.extend(from.drain(..k));
    }
}

/// The index of the first message of `q` at or after `from` that `f` accepts, walking its two
/// contiguous halves as slices.
#[inline]
fn position_in<M>(q: &VecDeque<M>, from: usize, f: &mut impl FnMut(&M) -> bool) -> Option<usize> {
    let (a, b) = q.as_slices();
    if from < a.len() {
        if let Some(i) = a[from..].iter().position(&mut *f) {
            return Some(from + i);
        }
        b.iter().position(f).map(|i| a.len() + i)
    } else {
        let from = from - a.len();
        b.get(from..)?
            .iter()
            .position(f)
            .map(|i| a.len() + from + i)
    }
}

impl<M: std::fmt::Debug> std::fmt::Debug for Msgs<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<M> State<M> {
    /// The reason this actor is being killed, if it is.
    #[inline]
    pub(crate) fn kill(&self) -> Option<&ExitReason> {
        self.ext.as_ref()?.kill.as_ref()
    }

    /// The extension, allocated on first use.
    pub(crate) fn ext(&mut self) -> &mut Ext {
        self.ext.get_or_insert_with(Default::default)
    }

    /// Takes the oldest message.
    pub(crate) fn pop(&mut self) -> Option<M> {
        let m = self.queue.pop_front()?;
        self.taken += 1;
        Some(m)
    }

    /// Takes the first message `f` accepts, resuming `scan` where it stopped.
    pub(crate) fn take_match(
        &mut self,
        scan: &mut Scan,
        f: &mut impl FnMut(&M) -> bool,
    ) -> Option<M> {
        if scan.taken != self.taken {
            // Something was removed since we looked (or we never looked): start over.
            scan.taken = self.taken;
            scan.next = 0;
        }
        match self.queue.position_from(scan.next, f) {
            Some(0) => self.pop(),
            Some(i) => {
                self.taken += 1;
                self.queue.remove(i)
            }
            None => {
                scan.next = self.queue.len();
                None
            }
        }
    }

    /// Moves the oldest messages into `out` until it holds `n`.
    pub(crate) fn drain_into(&mut self, out: &mut Vec<M>, n: usize) {
        let k = n.saturating_sub(out.len()).min(self.queue.len());
        self.queue.drain_front_into(out, k);
        self.taken += k as u64;
    }

    /// Hands `m` to the first blocked receive event that accepts it, else queues it. Returns
    /// whether it was queued (so the parked owner must be woken).
    #[inline]
    pub(crate) fn push(&mut self, m: M) -> bool {
        if self.offers.as_ref().is_none_or(|o| o.q.is_empty()) {
            // No receive event is blocked here (the common case): queue it.
            self.queue.push_back(m);
            return true;
        }
        self.push_to_offers(m)
    }

    /// `push` with receive events blocked on the mailbox.
    #[cold]
    fn push_to_offers(&mut self, mut m: M) -> bool {
        let Some(offers) = self.offers.as_deref_mut() else {
            self.queue.push_back(m);
            return true;
        };
        let mut i = 0;
        while i < offers.q.len() {
            let (o, pred) = &offers.q[i];
            if o.w.is_synched() {
                // Dead offer: its sync completed elsewhere.
                offers.q.remove(i);
                continue;
            }
            let accepts = match pred {
                None => true,
                Some(p) => match test_pred(p, &m) {
                    Ok(a) => a,
                    Err(why) => {
                        // The receiver's predicate panicked here, on the sender's thread: the
                        // sender goes on and the message stays; that receive fails with the
                        // panic instead (its actor ends as if the predicate had panicked in it).
                        let (o, _) = offers.q.remove(i).expect("index in range");
                        let _ = deliver(&o, Err(ExitReason::Panic(why)));
                        continue;
                    }
                },
            };
            if !accepts {
                i += 1;
                continue;
            }
            let (o, _) = offers.q.remove(i).expect("index in range");
            let pos = Pos {
                index: self.queue.len(),
                taken: self.taken,
            };
            match deliver(&o, Ok((m, pos))) {
                Ok(()) => return false,
                // It died since we looked: try the next one.
                Err(back) => m = back.map(|(m, _)| m).unwrap_or_else(|_| unreachable!()),
            }
        }
        self.queue.push_back(m);
        true
    }

    /// Puts back a message whose receive was abandoned after it was taken (see
    /// `BaseEvent::discard`): to a blocked event that accepts it, else into the queue where it
    /// was, as nearly as the removals since allow. Returns whether it was queued.
    fn put_back(&mut self, m: M, pos: Pos) -> bool {
        if !self.alive {
            // Dropped with the rest of a dead actor's mailbox.
            return false;
        }
        // A live blocked event rejects every queued message, so if it accepts this one, this
        // one is the oldest it accepts: hand it over (`push` does exactly that first).
        let queued = self.push(m);
        if queued {
            let m = self.queue.pop_back().expect("just pushed");
            let removed = self.taken.saturating_sub(pos.taken);
            let index = (pos.index as u64)
                .saturating_sub(removed)
                .min(self.queue.len() as u64) as usize;
            self.queue.insert(index, m);
            // Not an append: parked scans must start over.
            self.taken += 1;
        }
        queued
    }

    /// Takes the parked owner's blocker, to wake after unlocking.
    #[inline]
    pub(crate) fn take_parked(&mut self) -> Option<Blocker> {
        // Nobody parked is the common case of a send (the owner is running, or has messages
        // still to take): a test, not a `take`, which moves the whole option out and writes
        // it back.
        self.parked.as_ref()?;
        self.parked.take()
    }
}

/// The owner's private messages: a prefix of the mailbox that the owner moved out of the
/// shared queue in one lock, so its direct receives take them with no lock and no atomic
/// read-modify-write. It lives in the actor's `Ctx`; only the owner touches it through
/// `&mut Ctx`, and `&Ctx` methods (`len`, `mark`, making a receive event) lock its mutex,
/// which never contends since they cannot run during a `&mut` receive.
///
/// The mailbox, oldest first, is `msgs` then `State::queue`; its removal count (what a
/// [`Scan`] and a [`super::Mark`] compare) is `taken + State::taken`.
///
/// # Invariants
/// - While `Record::events` is not zero, `msgs` is empty and `taken` is zero: making a
///   receive event first gives them back (`give_back`), and the owner does not take
///   messages private again until no event is left.
/// - While `msgs` is not empty, `State::taken` is zero and nobody but the owner removes from
///   the shared queue (only receive events and the owner's receives remove messages).
pub(crate) struct Own<M> {
    /// The oldest messages of the mailbox, taken out of the shared queue by `absorb`.
    msgs: Msgs<M>,
    /// Removals counted privately (see above).
    taken: u64,
}

impl<M> Own<M> {
    pub(crate) const fn new() -> Self {
        Own {
            msgs: Msgs::new(),
            taken: 0,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.msgs.len()
    }

    /// Removals counted privately.
    pub(crate) fn taken(&self) -> u64 {
        self.taken
    }

    /// Drops the private messages (the actor ended).
    pub(crate) fn clear(&mut self) {
        if !self.msgs.is_empty() {
            self.msgs = Msgs::new();
        }
    }

    /// Moves the shared queue and its removal count in behind the private messages (`st`
    /// is the locked state of the same record).
    fn absorb(&mut self, st: &mut State<M>) {
        self.taken += std::mem::take(&mut st.taken);
        if self.msgs.is_empty() {
            std::mem::swap(&mut self.msgs, &mut st.queue);
        } else {
            self.msgs.append(&mut st.queue);
        }
    }

    /// The oldest private message, if `scan` starts there (a new scan, or one reset by a
    /// removal) and `f` accepts it: the common receive, with no scan bookkeeping. If `f`
    /// rejects it, `scan` is set to go on after it, so `f` tests each message once.
    #[inline(always)]
    fn take_oldest(&mut self, scan: &mut Scan, f: &mut impl FnMut(&M) -> bool) -> Option<M> {
        if !self.msgs.passed.is_empty() || (scan.taken == self.taken && scan.next != 0) {
            return None;
        }
        let first = self.msgs.fresh.front()?;
        if f(first) {
            self.taken += 1;
            return self.msgs.fresh.pop_front();
        }
        *scan = Scan {
            taken: self.taken,
            next: 1,
        };
        None
    }

    /// Takes the first message `f` accepts from where `scan` stopped, in the private part.
    #[inline(always)]
    fn take_match(&mut self, scan: &mut Scan, f: &mut impl FnMut(&M) -> bool) -> Option<M> {
        if scan.taken != self.taken {
            scan.taken = self.taken;
            scan.next = 0;
        }
        if scan.next == 0 && self.msgs.passed.is_empty() {
            // Most receives take the oldest message: test it before walking the parts.
            let first = self.msgs.fresh.front()?;
            if f(first) {
                self.taken += 1;
                return self.msgs.fresh.pop_front();
            }
            // Tested: the walk goes on after it.
            scan.next = 1;
        }
        self.take_match_slow(scan, f)
    }

    /// `take_match` past the oldest message.
    #[inline(never)]
    fn take_match_slow(&mut self, scan: &mut Scan, f: &mut impl FnMut(&M) -> bool) -> Option<M> {
        match self.msgs.position_from(scan.next, f) {
            Some(0) => {
                self.taken += 1;
                self.msgs.pop_front()
            }
            Some(i) => {
                self.taken += 1;
                self.msgs.remove(i)
            }
            None => {
                // A mark may point past the private part, into the shared queue: everything
                // before `next` stays tested (or skipped) after the shared queue moves in.
                scan.next = scan.next.max(self.msgs.len());
                None
            }
        }
    }
}

/// The owner's private part, through `&mut Ctx` (no locking; poisoning from a panic in a
/// dropped message is ignored).
#[inline]
pub(crate) fn own_mut<M>(own: &mut std::sync::Mutex<Own<M>>) -> &mut Own<M> {
    own.get_mut().unwrap_or_else(|e| e.into_inner())
}

/// The owner's private part, through `&Ctx` (the lock never contends: see `Own`).
pub(crate) fn own_lock<M>(own: &std::sync::Mutex<Own<M>>) -> std::sync::MutexGuard<'_, Own<M>> {
    own.lock().unwrap_or_else(|e| e.into_inner())
}

impl<M> Record<M> {
    /// Whether the owner may keep messages private: no receive event is alive.
    #[inline]
    fn private_ok(&self) -> bool {
        // Acquire: pairs with the Release decrement in `RecvEvt::drop`, so what a dropped
        // event did to the mailbox (under the lock, which we take anyway before we look at
        // the shared queue) is behind us.
        self.events.load(Ordering::Acquire) == 0
    }

    /// The owner's receive: takes the oldest message `f` accepts, from where `scan` stopped;
    /// if there is none, returns the locked state (with no message left to test) so the
    /// caller parks under the same lock. Raises a pending kill.
    ///
    /// With no receive event alive, `f` tests the private messages with the lock released;
    /// the lock is held only to move the shared queue in (so senders never wait for `f`).
    #[inline]
    pub(crate) fn owner_take(
        &self,
        own: &mut Own<M>,
        scan: &mut Scan,
        f: &mut impl FnMut(&M) -> bool,
    ) -> Result<M, Guard<'_, M>> {
        // Acquire: pairs with the Release store in `Peer::kill`; the kill itself is read under
        // the lock by `lock_owner`, which raises it.
        if self.killed.load(Ordering::Acquire) {
            drop(self.lock_owner());
        }
        // Most receives take the oldest message, and private messages exist only while no
        // receive event is alive (see `Own`): no need to ask `private_ok` for it.
        if let Some(m) = own.take_oldest(scan, f) {
            return Ok(m);
        }
        if !self.private_ok() {
            // A receive event may take messages from the shared queue: scan it under the lock.
            let mut st = self.lock_owner();
            return match st.take_match(scan, f) {
                Some(m) => Ok(m),
                None => Err(st),
            };
        }
        loop {
            if let Some(m) = own.take_match(scan, f) {
                return Ok(m);
            }
            let mut st = self.lock_owner();
            if st.queue.is_empty() {
                return Err(st);
            }
            own.absorb(&mut st);
        }
    }

    /// Gives the owner's private messages back to the front of the shared queue, with their
    /// removal count, so receive events and the locked receive paths see the whole mailbox.
    pub(crate) fn give_back(&self, own: &mut Own<M>) {
        if own.msgs.is_empty() && own.taken == 0 {
            return;
        }
        let mut st = self.lock();
        st.taken += std::mem::take(&mut own.taken);
        let mut msgs = std::mem::replace(&mut own.msgs, Msgs::new());
        if !st.alive {
            // A dead actor's mailbox stays empty.
            drop(st);
            drop(msgs);
            return;
        }
        msgs.append(&mut st.queue);
        st.queue = msgs;
    }
}

/// Parks the calling fiber or OS thread (not a task) until the next send or signal. Takes the
/// lock guard so the blocker is installed before any sender can look.
pub(crate) fn park<M>(what: &str, mut st: Guard<'_, M>) {
    // The mailbox's state, for a dump: the same for every thread that parks on it.
    let obj: *const State<M> = &*st;
    blocker::block_current_on(what, obj, move |b| {
        st.parked = Some(b);
        drop(st);
    });
}

/// Wakes `b` if there is one (after the record's lock was released).
#[inline]
pub(crate) fn wake(b: Option<Blocker>) {
    if let Some(b) = b {
        b.unblock();
    }
}

impl<M: Send + 'static> Record<M> {
    /// Sends one message: `Err(m)` if the actor is dead.
    #[inline]
    pub(crate) fn send(&self, m: M) -> Result<(), M> {
        let mut st = self.lock();
        if !st.alive {
            return Err(m);
        }
        let b = if st.push(m) { st.take_parked() } else { None };
        drop(st);
        if b.is_some() {
            wake(b);
        }
        Ok(())
    }

    /// Marks the actor dead, empties its mailbox, and says what must be handled outside the
    /// lock.
    pub(crate) fn die(&self) -> Died<M> {
        let mut st = self.lock();
        if !st.alive {
            return Died::Before;
        }
        st.alive = false;
        if st.ext.is_none()
            && st.parked.is_none()
            && st.offers.as_ref().is_none_or(|o| o.q.is_empty())
            && st.queue.is_empty()
        {
            // The common end: no message left, no link, monitor or name, nobody blocked.
            // Nothing to move out (the queue's buffer goes with the record).
            return Died::Quietly;
        }
        let q = st.queue.take();
        if let Some(offers) = st.offers.as_mut() {
            offers.q.clear();
        }
        let ext = st.ext.take();
        let parked = st.parked.take();
        Died::Leaving(Remains {
            left: q,
            ext,
            parked,
        })
    }
}

/// What `Record::die` found.
pub(crate) enum Died<M> {
    /// The actor had already ended.
    Before,
    /// It ended with nothing left to drop or tell.
    Quietly,
    /// It ended leaving this.
    Leaving(Remains<M>),
}

/// What a dying actor leaves, to handle outside its lock.
pub(crate) struct Remains<M> {
    /// Messages never received: dropped.
    pub(crate) left: Msgs<M>,
    /// Links, monitors, names: to notify and clean up.
    pub(crate) ext: Option<Box<Ext>>,
    /// A stale blocker of the owner: dropped.
    pub(crate) parked: Option<Blocker>,
}

/// The base event of `receive_evt` and `receive_match_evt`. Its output is the message, or the
/// reason the actor is being killed (the public event unwraps it in a wrapper, which may
/// unwind; base-event phases never do).
pub(crate) struct RecvEvt<M> {
    pub(crate) rec: RecRef<M>,
    pub(crate) pred: Option<Pred<M>>,
    /// Our queued offer's slot while blocked.
    pub(crate) slot: Option<Slot<Delivery<M>>>,
}

impl<M> RecvEvt<M> {
    /// A receive event of `rec`'s owner, whose private part is `own`: counts it in
    /// `Record::events` and gives the private messages back, so the event sees them.
    pub(crate) fn new(
        rec: &RecRef<M>,
        own: &std::sync::Mutex<Own<M>>,
        pred: Option<Pred<M>>,
    ) -> Self {
        // Relaxed: only the owner reads the count to decide whether to keep messages
        // private, and it made this event (or got its context from whoever did, which orders
        // the increment before its next receive).
        rec.events.fetch_add(1, Ordering::Relaxed);
        rec.give_back(&mut own_lock(own));
        RecvEvt {
            rec: rec.clone(),
            pred,
            slot: None,
        }
    }

    /// The index of the first queued message the predicate accepts.
    fn find(&self, st: &State<M>) -> Option<usize> {
        match &self.pred {
            None => (!st.queue.is_empty()).then_some(0),
            Some(p) => {
                let mut p = lock_pred(p);
                let mut f = &mut *p;
                st.queue.position_from(0, &mut f)
            }
        }
    }

    /// A kill, or the first accepted message, taken now.
    fn take_now(&self, st: &mut State<M>) -> Option<Delivery<M>> {
        if let Some(k) = st.kill() {
            return Some(Err(k.clone()));
        }
        let i = self.find(st)?;
        let m = st.queue.remove(i)?;
        st.taken += 1;
        Some(Ok((
            m,
            Pos {
                index: i,
                taken: st.taken,
            },
        )))
    }
}

impl<M> Drop for RecvEvt<M> {
    fn drop(&mut self) {
        // Release: pairs with the Acquire load in `Record::private_ok`.
        self.rec.events.fetch_sub(1, Ordering::Release);
    }
}

impl<M: Send + 'static> BaseEvent for RecvEvt<M> {
    type Output = Delivery<M>;

    fn poll(&mut self) -> bool {
        let st = self.rec.lock();
        st.kill().is_some() || self.find(&st).is_some()
    }

    fn try_do(&mut self) -> Option<Delivery<M>> {
        self.take_now(&mut self.rec.lock())
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<Delivery<M>> {
        let mut st = self.rec.lock();
        if st.kill().is_some() || self.find(&st).is_some() {
            return complete_self(me, || {
                self.take_now(&mut st)
                    .expect("pcml: actor mailbox changed under its lock")
            });
        }
        let slot = Slot::default();
        st.offers
            .get_or_insert_with(|| Box::new(Queue::new()))
            .push((
                Offer {
                    w: me.waiter(),
                    slot: slot.clone(),
                    swap: false,
                },
                self.pred.clone(),
            ));
        self.slot = Some(slot);
        Blocked::Waiting
    }

    fn complete(&mut self) -> Delivery<M> {
        delivered(
            self.slot
                .as_ref()
                .expect("pcml: actor receive event completed unblocked"),
        )
    }

    fn discard(&mut self, out: Delivery<M>) {
        // Our sync was abandoned (a dropped `.await`) after it took a message: put it back.
        if let Ok((m, pos)) = out {
            let mut st = self.rec.lock();
            let b = if st.put_back(m, pos) {
                st.take_parked()
            } else {
                None
            };
            drop(st);
            wake(b);
        }
    }

    fn describe(&self) -> String {
        // The address `park` shows for a plain receive: the state inside the record's lock.
        let st = self.rec.lock();
        crate::sched::dump::on_object("actor receive_evt", &*st)
    }
}

/// `Record::fiber_home`: the actor was killed.
const FIBER_KILLED: u64 = 1;
/// `Record::fiber_home`: the actor's fiber started; the other bits say where.
const FIBER_HOME: u64 = 2;

#[cold]
#[inline(never)]
fn killed_before_start(runtime: u64, proc: usize, slot: usize, id: crate::ThreadId) {
    crate::sched::worker::abort_fiber(runtime, proc, slot, id);
}

/// `fiber_home`'s bits for `(runtime, proc, slot)`: 22, 10 and 30 bits above the two flags,
/// or `None` if one does not fit (the kill then reaches the actor only at its receives).
fn pack_home(runtime: u64, proc: usize, slot: usize) -> Option<u64> {
    (runtime < 1 << 22 && proc < 1 << 10 && slot < 1 << 30)
        .then_some(runtime << 42 | (proc as u64) << 32 | (slot as u64) << 2)
}

fn unpack_home(h: u64) -> (u64, usize, usize) {
    (
        h >> 42,
        (h >> 32) as usize & 0x3ff,
        (h >> 2) as usize & 0x3fff_ffff,
    )
}

impl<M> Record<M> {
    /// Called by the actor's fiber when it starts: records where it runs, so that a kill
    /// reaches it blocked anywhere; cancels it at once if a kill came first.
    #[inline]
    pub(crate) fn enter_fiber(&self) {
        let Some((runtime, proc, slot, id)) = crate::sched::worker::fiber_home() else {
            return;
        };
        let Some(home) = pack_home(runtime, proc, slot) else {
            return;
        };
        self.fiber_id.store(id.as_u64(), Ordering::Relaxed);
        // AcqRel: Release publishes `fiber_id` and `home` to a kill's Acquire half; Acquire
        // pairs with a kill that came first.
        let prev = self
            .fiber_home
            .fetch_or(FIBER_HOME | home, std::sync::atomic::Ordering::AcqRel);
        if prev & FIBER_KILLED != 0 {
            // Killed before it started: it unwinds at its first blocking point or yield.
            killed_before_start(runtime, proc, slot, id);
        }
    }

    /// Called with an async actor's task before it is first scheduled: from here a kill
    /// cancels the task wherever its body awaits (see `State::task`); killed already, the
    /// task is cancelled now and its body never runs.
    pub(crate) fn enter_task(&self, task: &TaskRef) {
        let mut st = self.lock();
        st.task = Some(TaskAddr::of(task));
        // Relaxed: written under this lock (`Peer::kill`).
        let killed = self.killed.load(Ordering::Relaxed);
        drop(st);
        if killed {
            task.abort();
        }
    }

    /// Called once by a kill: cancels the actor's fiber where it runs (`JoinHandle::abort`'s
    /// cancellation), so it stops waiting wherever it blocks; if it has not started, it
    /// cancels itself when it does (`enter_fiber`). Nothing for an async actor.
    pub(crate) fn abort_fiber(&self) {
        // AcqRel: pairs with `enter_fiber`'s.
        let prev = self
            .fiber_home
            .fetch_or(FIBER_KILLED, std::sync::atomic::Ordering::AcqRel);
        if prev & (FIBER_HOME | FIBER_KILLED) != FIBER_HOME {
            // Not started yet, or killed already.
            return;
        }
        let (runtime, proc, slot) = unpack_home(prev);
        if let Some(id) = crate::ThreadId::from_u64(self.fiber_id.load(Ordering::Relaxed)) {
            crate::sched::worker::abort_fiber(runtime, proc, slot, id);
        }
    }
}

/// Ends the calling actor's body because it was killed: unwinds to the actor's root, or, for
/// a context made with `Ctx::new`, panics saying why.
pub(crate) fn raise(id: ActorId, detached: bool, reason: ExitReason) -> ! {
    if detached {
        panic!(
            "pcml: actor {id} (a Ctx::new context) was killed: {reason}; trap exits with Ctx::trap_exits(true) to receive exit signals instead"
        );
    }
    std::panic::resume_unwind(Box::new(super::link::KillSignal(reason)))
}

/// Why an actor's body ended, from its caught unwind payload, with the full panic report
/// (message, location, backtrace if captured) when it panicked.
pub(crate) fn reason_of(payload: Box<dyn std::any::Any + Send>) -> (ExitReason, Option<String>) {
    if payload.is::<crate::sched::panic::AbortSignal>() {
        // Only a kill cancels an actor's fiber; the caller reads the kill's reason.
        return (ExitReason::Killed(Arc::from("cancelled")), None);
    }
    match payload.downcast::<super::link::KillSignal>() {
        Ok(k) => (k.0, None),
        Err(payload) => {
            let id = crate::try_current().unwrap_or_else(crate::sched::ThreadId::next);
            let err = crate::sched::panic::join_error(id, payload);
            if err.is_exit() {
                (ExitReason::Exited, None)
            } else {
                let msg = err.panic_message().unwrap_or("Box<dyn Any>").to_string();
                (ExitReason::Panic(Arc::from(msg)), Some(err.to_string()))
            }
        }
    }
}

#[cfg(all(test, not(pcml_loom)))]
mod unit {
    //! The mailbox state's transitions, one thread at a time.

    use super::*;

    fn state(msgs: impl IntoIterator<Item = u32>) -> RecRef<u32> {
        let rec = Record::<u32>::counted(true);
        for m in msgs {
            rec.send(m).unwrap();
        }
        rec
    }

    #[test]
    fn a_scan_resumes_where_it_stopped() {
        let rec = state([1, 3, 5]);
        let mut st = rec.lock();
        let mut scan = Scan::new();
        let mut tested = Vec::new();
        let mut even = |m: &u32| {
            tested.push(*m);
            m % 2 == 0
        };
        assert_eq!(st.take_match(&mut scan, &mut even), None);
        st.push(7);
        st.push(8);
        assert_eq!(st.take_match(&mut scan, &mut even), Some(8));
        // The second scan tested only the new messages.
        assert_eq!(tested, [1, 3, 5, 7, 8]);
        assert_eq!(st.queue.iter().copied().collect::<Vec<_>>(), [1, 3, 5, 7]);
    }

    #[test]
    fn a_removal_by_someone_else_restarts_the_scan() {
        let rec = state([1, 2, 3]);
        let mut st = rec.lock();
        let mut scan = Scan::new();
        assert_eq!(st.take_match(&mut scan, &mut |m| *m > 5), None);
        assert_eq!(st.pop(), Some(1));
        st.push(6);
        let mut tested = Vec::new();
        let got = st.take_match(&mut scan, &mut |m| {
            tested.push(*m);
            *m > 5
        });
        assert_eq!(got, Some(6));
        assert_eq!(tested, [2, 3, 6]);
    }

    #[test]
    fn a_scan_since_a_mark_skips_older_messages_unless_one_was_removed() {
        let rec = state([1, 2]);
        let mut st = rec.lock();
        let mark = super::super::Mark {
            taken: st.taken,
            len: st.queue.len(),
        };
        st.push(3);
        let mut tested = Vec::new();
        let got = st.take_match(&mut Scan::since(mark), &mut |m| {
            tested.push(*m);
            true
        });
        assert_eq!((got, &tested[..]), (Some(3), &[3][..]));
        // Since then a message was removed: the mark is stale, the scan starts over.
        let got = st.take_match(&mut Scan::since(mark), &mut |m| {
            tested.push(*m);
            true
        });
        assert_eq!((got, &tested[..]), (Some(1), &[3, 1][..]));
    }

    /// Every index and position of `m` agrees with its messages in order.
    fn check_positions(m: &Msgs<u32>) {
        let all: Vec<u32> = m.iter().copied().collect();
        assert_eq!(all.len(), m.len());
        for from in 0..=all.len() + 1 {
            for want in 0..12 {
                let got = m.position_from(from, &mut |x| *x == want);
                let slow = (from..all.len()).find(|&i| all[i] == want);
                assert_eq!(got, slow, "from {from}, looking for {want} in {all:?}");
            }
        }
    }

    #[test]
    fn the_two_parts_of_a_mailbox_keep_arrival_order() {
        let mut m = Msgs::new();
        let mut model: VecDeque<u32> = VecDeque::new();
        for x in 0..6 {
            m.push_back(x);
            model.push_back(x);
        }
        // Take from the fresh part (the ones before it are passed), then from the passed
        // part, wrap both deques, put one back, drain the front.
        for (i, model_i) in [(3, 3), (1, 1), (2, 2)] {
            assert_eq!(m.remove(i), model.remove(model_i));
            check_positions(&m);
        }
        assert!(!m.passed.is_empty() && !m.fresh.is_empty());
        for x in 6..10 {
            m.push_back(x);
            model.push_back(x);
        }
        assert_eq!(m.pop_front(), model.pop_front());
        m.insert(2, 11);
        model.insert(2, 11);
        check_positions(&m);
        assert_eq!(m.remove(m.len()), None);
        assert_eq!(m.pop_back(), model.pop_back());
        let mut out = Vec::new();
        m.drain_front_into(&mut out, 3);
        let want: Vec<u32> = model.drain(..3).collect();
        assert_eq!(out, want);
        assert_eq!(m.iter().copied().collect::<Vec<_>>(), Vec::from(model));
        check_positions(&m);
    }

    #[test]
    fn an_owner_receive_tests_each_message_once() {
        let rec = state([1, 2, 5, 4]);
        let mut own = Own::new();
        let mut tested = Vec::new();
        let mut even = |m: &u32| {
            tested.push(*m);
            m % 2 == 0
        };
        // Moves the shared queue in; the oldest (1) is tested first and rejected, the walk
        // goes on after it.
        let got = rec.owner_take(&mut own, &mut Scan::new(), &mut even);
        assert_eq!(got.ok(), Some(2));
        assert_eq!(tested, [1, 2]);
        // Takes 1, which the first receive passed over.
        let got = rec.owner_take(&mut own, &mut Scan::new(), &mut |m| *m == 1);
        assert_eq!(got.ok(), Some(1));
        // The oldest (5) is rejected by the quick test, and the walk goes on after it.
        tested.clear();
        let got = rec.owner_take(&mut own, &mut Scan::new(), &mut |m: &u32| {
            tested.push(*m);
            m % 2 == 0
        });
        assert_eq!(got.ok(), Some(4));
        assert_eq!(tested, [5, 4]);
        assert_eq!(own.len(), 1);
    }

    #[test]
    fn moving_the_front_keeps_order_one_at_a_time_or_in_bulk() {
        for k in [0, 1, 4, 5, 9, 12, 20] {
            let mut from: VecDeque<u32> = (0..12).collect();
            // Wrap `from` around its buffer first.
            for x in 12..16 {
                from.pop_front();
                from.push_back(x);
            }
            let mut to: VecDeque<u32> = VecDeque::from([100, 101]);
            let mut want_to: Vec<u32> = to.iter().copied().collect();
            let mut want_from: Vec<u32> = from.iter().copied().collect();
            let n = k.min(want_from.len());
            want_to.extend(want_from.drain(..n));
            move_front(&mut from, &mut to, k);
            assert_eq!(to.iter().copied().collect::<Vec<_>>(), want_to, "k = {k}");
            assert_eq!(
                from.iter().copied().collect::<Vec<_>>(),
                want_from,
                "k = {k}"
            );
        }
    }

    #[test]
    fn drain_fills_up_to_n() {
        let rec = state(0..5);
        let mut st = rec.lock();
        let mut out = vec![100];
        st.drain_into(&mut out, 3);
        assert_eq!(out, [100, 0, 1]);
        st.drain_into(&mut out, 10);
        assert_eq!(out, [100, 0, 1, 2, 3, 4]);
        assert_eq!(st.taken, 5);
    }

    #[test]
    fn the_last_reference_frees_the_record_once_from_any_thread() {
        use std::sync::atomic::AtomicUsize as Count;
        struct Counted(Arc<Count>);
        impl Drop for Counted {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        let drops = Arc::new(Count::new(0));
        let rec = Record::<Counted>::counted(true);
        assert!(rec.send(Counted(drops.clone())).is_ok());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let p = rec.to_peer();
                std::thread::spawn(move || {
                    for _ in 0..1000 {
                        drop(p.clone());
                    }
                })
            })
            .collect();
        let typed = rec.clone();
        drop(rec);
        for t in threads {
            t.join().unwrap();
        }
        // Still referenced: the queued message lives.
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        assert!(typed.to_peer().downcast::<u8>().is_err());
        let back = match typed.to_peer().downcast::<Counted>() {
            Ok(back) => back,
            Err(_) => panic!("a record downcasts to its own message type"),
        };
        drop(typed);
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        // The last reference frees the record, and the message with it, once.
        drop(back);
        assert_eq!(drops.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_dead_record_refuses_sends_and_dies_once() {
        let rec = state([1, 2]);
        let Died::Leaving(remains) = rec.die() else {
            panic!("it died with messages left");
        };
        assert_eq!(remains.left.iter().copied().collect::<Vec<_>>(), [1, 2]);
        assert!(matches!(rec.die(), Died::Before));
        assert_eq!(rec.send(3), Err(3));
        assert!(rec.lock().queue.is_empty());
        // With nothing left, nothing to hand back; dead all the same.
        let rec = state([]);
        assert!(matches!(rec.die(), Died::Quietly));
        assert!(matches!(rec.die(), Died::Before));
        assert_eq!(rec.send(3), Err(3));
    }
}

impl<M> crate::sched::waitfor::WaitObject for State<M> {}
