//! The representation of the event protocol: read this file to learn the whole protocol.
//!
//! This is pcml's `rep-types.sml`. It holds
//! - [`SyncRecord`], the *event-state variable* of one dynamic synchronization (Reppy, Russo and Xiao 2009,
//!   section 5), with its three states `Waiting`, `Claimed`, `Synched`, and every allowed
//!   transition of Figure 7 as a function returning a `#[must_use]` outcome;
//! - [`Waiter`], a partner's handle on one offer of a sync (what channel queues hold), and
//!   [`OwnWaiter`], the owner's handle during the blocking phase;
//! - [`Commit`], the right to deliver a value to a waiter and wake it, owned by whoever moved
//!   that waiter's state from `Waiting` to `Synched`;
//! - [`DirectRecord`], the lighter record of a *direct* sync (see "Direct syncs" below);
//! - [`BaseEvent`], the four phases (`poll`, `do`, `block`, `cancel`) through which every
//!   communication object (channels here; IVars, MVars, mailboxes, timers and I/O later, and
//!   users' own primitives) exposes its base events.
//!
//! # The protocol (section 5, Figures 7 to 9)
//! A sync first **polls** its base events without locks, then tries to **commit** (`do`) on
//! the enabled ones; its own state is not yet visible to anyone, so a commit only has to win
//! the partner's state (`Waiting -> Synched`, Figure 8; it spins on loads while the partner is
//! `Claimed`). If no commit succeeds it creates a `SyncRecord` and **blocks** on every base
//! event in turn; each `block` may find a partner, and then must first claim its own state
//! (`Waiting -> Claimed`), then win the partner's (`Waiting -> Synched`), then finish its own
//! (`Claimed -> Synched`), rolling back to `Waiting` if the partner was `Claimed` or `Synched`
//! (Figure 9). A partner that wins a waiter's state delivers the value into the waiter's
//! offer, then *publishes* the winning branch and wakes the waiter's [`Blocker`].
//!
//! # Differences from the paper
//! - The reference code throws to the waiter's continuation; here the winner of the CAS writes
//!   the value into the offer's slot, then stores the branch index into `winner` (Release) and
//!   unblocks the waiter, which reads the slot after an Acquire load of `winner` (the C#
//!   implementation's `DoFn(ref t)` in section 9.2).
//! - The blocker is installed *after* the offers are published, through a one-word hand-off
//!   (`hand`: empty, blocker installed, or winner published), so a sync that commits during
//!   its blocking phase never has to suspend, and a wake-up costs one atomic swap.
//!
//! # Direct syncs
//! A sync of one base event with no choice, no nack and no wrapper (the plain `Chan::send`
//! and `Chan::recv`) needs less of the protocol, because nothing else of the sync can win:
//! - it publishes at most one offer, and only after its own commit attempt failed, under the
//!   object's lock: so nobody has to CAS its state. Whoever takes the offer out of the
//!   object's queue, under that lock, has won it (a choice that takes it still completes its
//!   own record first, with a CAS on its own state, and puts the offer back if it lost);
//! - it installs its blocker before the offer is queued, under the same lock acquisition:
//!   so the winner finds the blocker there and no `hand` swap has to resolve a race with the
//!   owner's installation;
//! - the winner delivers, takes the blocker, marks the record done with a Release store and
//!   unblocks the owner; the owner reads the delivered value after seeing `done` (Acquire).
//!
//! A direct rendezvous thus costs the object's two lock acquisitions and no other
//! read-modify-write. The owner withdraws its offer (under the lock) only when it unwinds while
//! blocked (a fiber dropped at runtime shutdown) or drops a pending future.
//!
//! One-branch syncs of an object's events (with wrappers, but no choice, guard or nack) take
//! the same path when the object offers one (`branch::DirectBase`; channels do): `sync()`
//! blocks as the object's `send`/`recv`, and `.await` queues a direct offer whose blocker is
//! the task's waker. An async owner polled again while its offer is still queued replaces the
//! blocker under the object's lock, where no partner can be taking it.
//!
//! # Invariants
//! - A [`DirectRecord`]'s offer is in at most one queue, once; it is taken out of it only
//!   under the object's lock, by one partner (which then owns delivery) or by its owner
//!   (withdrawal); its blocker is written before it is queued (and replaced only by its
//!   owner, under the lock, while it is still queued) and read only by the one that took it
//!   out; `done` is set once, by the partner, after its last access to the offer.
//! - `state` goes `Waiting -> Claimed` and `Claimed -> Waiting | Synched` only by the owner of
//!   the sync; `Waiting -> Synched` by anyone (a partner committing, the owner cancelling, the
//!   owner committing an always-enabled base event); `Synched` is final (Figure 7).
//! - Exactly one thread moves a record to `Synched`. That thread, and only it, writes the
//!   winning offer's slot, then publishes `winner` once; nobody touches the slots of the other
//!   offers of the sync except its owner, after `winner` is known.
//! - The owner never holds `Claimed` while waiting for anything but a partner's state, and never
//!   across a lock acquisition, so two claimers cannot deadlock: each rolls back on `Claimed`.
//! - A channel lock is held by at most one sync at a time per thread (one channel locked at a
//!   time), and never across blocking or yielding.

use std::fmt;

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, Ordering};
use crate::sched::blocker::Blocker;

const WAITING: u8 = 0;
const CLAIMED: u8 = 1;
const SYNCHED: u8 = 2;

/// `hand`: no blocker, no winner yet.
const EMPTY: u32 = 0;
/// `hand`: the owner's blocker is in `blocker`, no winner yet.
const INSTALLED: u32 = 1;
/// `hand`: `PUBLISHED + branch` once the winning branch is published.
const PUBLISHED: u32 = 2;

/// The event-state variable of one synchronization (the paper's `event_state`), plus the
/// hand-off of its result.
pub(crate) struct SyncRecord {
    /// `WAITING`, `CLAIMED` or `SYNCHED`; see the module invariants for who writes what.
    state: AtomicU8,
    /// The hand-off of the result: `EMPTY`, `INSTALLED` (set by the owner once `blocker` is
    /// written), or `PUBLISHED + winner` (swapped in once, by the thread that moved the record
    /// to `Synched`, after it delivered the value; read with Acquire by the owner).
    hand: AtomicU32,
    /// How to wake the owner. Written by the owner while `hand` is `EMPTY` (nobody else
    /// touches it then); taken by the publisher only if its swap found `INSTALLED`.
    blocker: UnsafeCell<Option<Blocker>>,
}

impl fmt::Debug for SyncRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state.load(Ordering::Relaxed) {
            WAITING => "Waiting",
            CLAIMED => "Claimed",
            _ => "Synched",
        };
        f.debug_struct("SyncRecord")
            .field("state", &state)
            .field("hand", &self.hand.load(Ordering::Relaxed))
            .finish()
    }
}

/// What a partner's attempt to move a waiter from `Waiting` to `Synched` found (Figure 8).
#[must_use]
pub enum TrySynch<'a> {
    /// The waiter was `Waiting` and is now `Synched` by us: deliver, then publish.
    Won(Commit<'a>),
    /// The waiter's owner holds it `Claimed` (it is trying another partner); retry later.
    Claimed,
    /// The waiter was already synchronized by someone else: it is dead, skip it.
    Synched,
}

/// What the owner's attempt to match one partner found (Figure 9's inner loop).
#[must_use]
pub enum Match<'a> {
    /// Both states are `Synched`: we own the partner's delivery (`Commit`) and our own sync
    /// is complete on this branch.
    Won(Commit<'a>),
    /// The partner was already synchronized: drop it and look for another.
    PartnerGone,
    /// Our own sync was synchronized by someone else meanwhile: put the partner back and stop.
    SelfSynched,
}

/// What the owner's attempt to complete its own published sync found (Figure 15's blockFn,
/// and cancellation).
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub enum SelfSynch {
    /// We moved our own state from `Waiting` to `Synched`: no partner can complete it now.
    Won,
    /// A partner already moved it to `Synched`: its value is being (or has been) delivered.
    AlreadySynched,
}

// SAFETY: `blocker` is reached by one thread at a time, as the `hand` protocol says (the owner
// while not INSTALLED, the publisher after swapping out INSTALLED); a `Blocker` may be sent
// between threads.
unsafe impl Sync for SyncRecord {}
// SAFETY: as above.
unsafe impl Send for SyncRecord {}

/// The unsafe impls above rely on a `Blocker` being `Send`.
const _: fn() = || {
    fn send<X: Send>() {}
    send::<Blocker>();
};

impl SyncRecord {
    /// A fresh record in state `Waiting`.
    pub(crate) fn new() -> Self {
        Self {
            state: AtomicU8::new(WAITING),
            hand: AtomicU32::new(EMPTY),
            blocker: UnsafeCell::new(None),
        }
    }

    /// Figure 8's CAS, by a partner: `Waiting -> Synched`.
    fn try_synch(&self) -> u8 {
        // AcqRel: Acquire pairs with the owner's Release stores in `roll_back` and
        // `finish_claim`, so we act on its latest state; Release orders our prior protocol
        // writes before the state others will read. The value hand-off itself is ordered by
        // `winner`, not by this CAS.
        match self
            .state
            .compare_exchange(WAITING, SYNCHED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => WAITING,
            Err(s) => s,
        }
    }

    /// The owner's CAS `Waiting -> Claimed` (Figure 9). Returns false if already `Synched`
    /// (only the owner sets `Claimed`, so the CAS can fail only that way).
    fn try_claim(&self) -> bool {
        // Acquire: pairs with the AcqRel CAS of a partner that synchronized us, if it fails.
        self.state
            .compare_exchange(WAITING, CLAIMED, Ordering::Acquire, Ordering::Acquire)
            .is_ok()
    }

    /// The owner's `Claimed -> Waiting` roll-back.
    fn roll_back(&self) {
        // Release: pairs with the AcqRel CAS in a partner's `try_synch`.
        self.state.store(WAITING, Ordering::Release);
    }

    /// The owner's `Claimed -> Synched` after it won a partner.
    fn finish_claim(&self) {
        // Release: pairs with the Acquire loads of partners and sweepers that see us dead.
        self.state.store(SYNCHED, Ordering::Release);
    }

    /// Whether the record is `Synched` (a dead offer, for queue sweeping and polling).
    #[inline]
    pub(crate) fn is_synched(&self) -> bool {
        // Acquire: pairs with the Release/AcqRel writes of `SYNCHED`.
        self.state.load(Ordering::Acquire) == SYNCHED
    }

    fn is_claimed(&self) -> bool {
        self.state.load(Ordering::Relaxed) == CLAIMED
    }

    /// The owner completes its own sync (`Waiting -> Synched`): a base event that became
    /// enabled during its blocking phase (Figure 15), or cancellation.
    pub(crate) fn synch_self(&self) -> SelfSynch {
        match self.try_synch() {
            // We moved it: nobody else can.
            WAITING => SelfSynch::Won,
            // Only the owner (us) sets Claimed, and we are not holding it.
            CLAIMED => unreachable!("pcml: own sync record claimed by someone else"),
            // A partner won: its value is on the way.
            _ => SelfSynch::AlreadySynched,
        }
    }

    /// The winning branch, once published.
    pub(crate) fn winner(&self) -> Option<usize> {
        // Acquire: pairs with the AcqRel swap in `publish` (and the Release swap in
        // `set_own_winner`), so the winner's delivered value is visible to us.
        match self.hand.load(Ordering::Acquire) {
            EMPTY | INSTALLED => None,
            w => Some((w - PUBLISHED) as usize),
        }
    }

    /// Records the winner when the owner completed its own sync (no hand-off needed).
    pub(crate) fn set_own_winner(&self, branch: usize) {
        // Release: pairs with `winner`'s Acquire (only the owner reads it, but keep the pair).
        let prev = self.hand.swap(PUBLISHED + branch as u32, Ordering::AcqRel);
        debug_assert_ne!(prev, INSTALLED, "pcml: own winner set while waiting");
    }

    /// Spins until the thread that synchronized this record publishes the winner. Used only
    /// after seeing `Synched` set by a partner, which is between its CAS and its `publish`:
    /// a few instructions that never block.
    pub(crate) fn wait_winner(&self) -> usize {
        loop {
            if let Some(w) = self.winner() {
                return w;
            }
            crate::loom::spin_loop();
        }
    }

    /// Installs how to wake the owner. Fails (giving the blocker back) if the winner is
    /// already published, in which case the owner must not wait. Owner only, at most once
    /// per wait (`update_waker` replaces it).
    pub(crate) fn install_blocker(&self, b: Blocker) -> Result<(), Blocker> {
        // SAFETY: `hand` is not INSTALLED (we have not installed), so no publisher touches
        // the cell: it is ours.
        self.blocker.with_mut(|p| unsafe { *p = Some(b) });
        // Release: pairs with the AcqRel swap in `publish`, which then reads the cell.
        // Acquire on failure: pairs with that swap, so the winner's value is visible.
        match self
            .hand
            .compare_exchange(EMPTY, INSTALLED, Ordering::AcqRel, Ordering::Acquire)
        {
            // A publisher will find it.
            Ok(_) => Ok(()),
            // Already published: take it back and do not wait.
            Err(_) => {
                // SAFETY: the publisher saw no blocker, so it never touches the cell.
                let b = self.blocker.with_mut(|p| unsafe { (*p).take() });
                Err(b.expect("pcml: blocker vanished"))
            }
        }
    }

    /// Replaces an async owner's installed waker; false if the winner is published.
    pub(crate) fn update_waker(&self, waker: &std::task::Waker) -> bool {
        // Take the cell back: INSTALLED -> EMPTY. Acquire: pairs with our own Release install
        // (and, on failure, with the publisher's swap).
        if self
            .hand
            .compare_exchange(INSTALLED, EMPTY, Ordering::Acquire, Ordering::Acquire)
            .is_err()
        {
            // Published.
            return false;
        }
        self.install_blocker(Blocker::from_waker(waker.clone()))
            .is_ok()
    }

    /// Publishes `branch` as the winner and wakes the owner. Called once, by the thread that
    /// moved the record to `Synched`, after delivering the value.
    fn publish(&self, branch: u32) {
        // AcqRel: Release pairs with the Acquire load in `winner` (the delivered value is
        // visible to the owner when it sees the winner); Acquire pairs with the owner's
        // Release install, so the blocker in the cell is visible to us.
        let prev = self.hand.swap(PUBLISHED + branch, Ordering::AcqRel);
        if prev == INSTALLED {
            // SAFETY: the owner installed and can no longer touch the cell (its install
            // succeeded and `update_waker` would fail now): it is ours.
            let b = self.blocker.with_mut(|p| unsafe { (*p).take() });
            if let Some(b) = b {
                b.unblock();
            }
        }
    }
    /// One attempt of Figure 8's CAS by a partner, on this record's offer `branch`.
    pub(crate) fn try_synch_as(&self, branch: u32) -> TrySynch<'_> {
        match self.try_synch() {
            // It was waiting: ours now.
            WAITING => TrySynch::Won(Commit {
                rec: self,
                branch,
                published: false,
            }),
            // Its owner is trying another partner.
            CLAIMED => TrySynch::Claimed,
            // Someone else got it.
            _ => TrySynch::Synched,
        }
    }

    /// Figure 8 in full (see [`Waiter::synch_spinning`]).
    pub(crate) fn synch_spinning_as(&self, branch: u32) -> Option<Commit<'_>> {
        loop {
            if self.is_synched() {
                // Dead: no CAS needed.
                return None;
            }
            match self.try_synch_as(branch) {
                // Ours.
                TrySynch::Won(c) => return Some(c),
                // Spin on loads until its owner decides, then try again (section 8.4).
                TrySynch::Claimed => {
                    while self.is_claimed() {
                        crate::loom::spin_loop();
                    }
                }
                // Dead.
                TrySynch::Synched => return None,
            }
        }
    }

    /// Figure 9, by the owner of `self`: claim our own state, then try to synchronize the
    /// partner's offer `branch`; roll back and retry while the partner is `Claimed`.
    pub(crate) fn try_match<'p>(&self, partner: &'p SyncRecord, branch: u32) -> Match<'p> {
        loop {
            if !self.try_claim() {
                // Someone synchronized us since we published an earlier offer.
                return Match::SelfSynched;
            }
            match partner.try_synch_as(branch) {
                TrySynch::Won(c) => {
                    // Both ours: finish our own Claimed -> Synched.
                    self.finish_claim();
                    return Match::Won(c);
                }
                TrySynch::Claimed => {
                    // Its owner is trying someone (maybe us): back off to Waiting so it can
                    // make progress, wait on loads, retry.
                    self.roll_back();
                    while partner.is_claimed() {
                        crate::loom::spin_loop();
                    }
                }
                TrySynch::Synched => {
                    // Dead partner: roll back and look for another.
                    self.roll_back();
                    return Match::PartnerGone;
                }
            }
        }
    }
}

/// A partner's handle on one offer of one sync: what communication objects keep in their
/// waiting queues. Cheap to clone (one reference count).
///
/// # Examples
/// See [`BaseEvent`] for a whole base event built on waiters.
#[derive(Clone)]
pub struct Waiter {
    rec: Arc<SyncRecord>,
    branch: u32,
}

impl fmt::Debug for Waiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Waiter")
            .field("branch", &self.branch)
            .field("record", &*self.rec)
            .finish()
    }
}

impl Waiter {
    /// One attempt of Figure 8's CAS: move this waiter's sync from `Waiting` to `Synched`.
    ///
    /// On [`TrySynch::Won`], deliver whatever the waiter expects into its offer, then call
    /// [`Commit::publish`] (dropping the `Commit` publishes too).
    pub fn try_synch(&self) -> TrySynch<'_> {
        self.rec.try_synch_as(self.branch)
    }

    /// Figure 8 in full, for the commit phase (whose own state is private, so spinning cannot
    /// deadlock): spins on loads while the waiter is `Claimed` (section 8.4), then CASes.
    /// Returns `Some(commit)` if we won it, `None` if it is dead.
    pub fn synch_spinning(&self) -> Option<Commit<'_>> {
        self.rec.synch_spinning_as(self.branch)
    }

    /// A waiter of no sync: a fresh record in `Waiting` that nobody blocks on. An object
    /// queues it with an offer that carries a value but has no owner (a value given back by
    /// [`BaseEvent::discard`], queued as a put); a partner wins it like any waiter, and its
    /// publication wakes nobody.
    pub(crate) fn unowned() -> Self {
        Waiter {
            rec: Arc::new(SyncRecord::new()),
            branch: 0,
        }
    }

    /// Whether this waiter's sync is already complete (a dead entry, to be swept).
    #[inline]
    pub fn is_synched(&self) -> bool {
        self.rec.is_synched()
    }

    /// Whether `self` and `me` are offers of the same sync (section 4: a sync must never
    /// match an offer of its own).
    pub fn same_sync(&self, me: &OwnWaiter<'_>) -> bool {
        Arc::ptr_eq(&self.rec, me.rec)
    }
}

/// The owner's handle during the blocking phase: its own sync record and the index of the
/// base event being blocked.
pub struct OwnWaiter<'a> {
    pub(crate) rec: &'a Arc<SyncRecord>,
    pub(crate) branch: u32,
}

impl fmt::Debug for OwnWaiter<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnWaiter")
            .field("branch", &self.branch)
            .finish()
    }
}

impl<'a> OwnWaiter<'a> {
    /// The handle to store in a waiting queue for partners.
    pub fn waiter(&self) -> Waiter {
        Waiter {
            rec: self.rec.clone(),
            branch: self.branch,
        }
    }

    /// Figure 9: claim our own state, then try to synchronize `partner`; rolls back and
    /// retries while the partner is `Claimed`.
    ///
    /// Call with the communication object's lock held and `partner` taken out of its queue;
    /// on [`Match::SelfSynched`] put `partner` back.
    pub fn try_match<'p>(&self, partner: &'p Waiter) -> Match<'p> {
        debug_assert!(
            !partner.same_sync(self),
            "pcml: a sync matched its own offer"
        );
        self.rec.try_match(&partner.rec, partner.branch)
    }

    /// Completes our own sync on this base event with no partner (the event became enabled
    /// during the blocking phase, as in Figure 15's `waitEvt`).
    pub fn synch_self(&self) -> SelfSynch {
        self.rec.synch_self()
    }

    /// Whether our sync was already synchronized by a partner through an earlier offer.
    #[inline]
    pub fn is_synched(&self) -> bool {
        self.rec.is_synched()
    }
}

/// The right, and the duty, to publish a waiter's completion: held by the thread that moved
/// the waiter to `Synched`. Deliver the value first, then [`publish`](Commit::publish), which
/// wakes the waiter. Dropping a `Commit` publishes too, so a panic while delivering never
/// leaves the waiter asleep forever (it will find no value and panic in turn).
#[must_use = "a won waiter must be published, or it never wakes"]
pub struct Commit<'a> {
    rec: &'a SyncRecord,
    branch: u32,
    published: bool,
}

impl fmt::Debug for Commit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Commit")
            .field("branch", &self.branch)
            .finish()
    }
}

impl Commit<'_> {
    /// Publishes the completion and wakes the waiter.
    pub fn publish(mut self) {
        self.published = true;
        self.rec.publish(self.branch);
    }
}

impl Drop for Commit<'_> {
    fn drop(&mut self) {
        if !self.published {
            self.rec.publish(self.branch);
        }
    }
}

/// The record of a *direct* sync: a plain `send` or `recv` on one object, with one offer, no
/// choice and no nack (see "Direct syncs" in the module docs). It has no `Waiting`/`Claimed`/
/// `Synched` state: its one offer is won by whoever takes it out of the object's queue under
/// the object's lock, so nobody has to CAS it; and its blocker is installed before the offer
/// is queued, so nobody has to race the owner for the hand-off.
pub(crate) struct DirectRecord {
    /// `false` while the offer is queued or being delivered; set once (Release) by the partner
    /// that took the offer, after it delivered and took the blocker out; read (Acquire) by the
    /// owner, after which the partner never touches the record again.
    done: AtomicBool,
    /// How to wake the owner. Written by the owner before the offer is queued (published by
    /// the object lock's release); taken by the partner that took the offer out of the queue
    /// (after its acquire of the same lock), or back by the owner if it withdraws the offer.
    blocker: UnsafeCell<Option<Blocker>>,
}

// SAFETY: `blocker` is reached by one thread at a time, as the `DirectRecord` protocol says (the
// owner until its offer is queued, then whoever takes the offer out of the queue under the
// object's lock); a `Blocker` may be sent between threads.
unsafe impl Sync for DirectRecord {}
// SAFETY: as above.
unsafe impl Send for DirectRecord {}

impl fmt::Debug for DirectRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirectRecord")
            .field("done", &self.done.load(Ordering::Relaxed))
            .finish()
    }
}

impl DirectRecord {
    /// A fresh record: not done, no blocker.
    #[inline]
    pub(crate) fn new() -> Self {
        Self {
            done: AtomicBool::new(false),
            blocker: UnsafeCell::new(None),
        }
    }

    /// Installs how to wake the owner, before the offer is queued. Owner only, once per wait,
    /// while no partner can reach the record.
    #[inline]
    pub(crate) fn install(&self, b: Blocker) {
        // SAFETY: the offer is not queued yet, so no partner can reach the cell: it is ours.
        // The object lock's release, when the offer is queued, publishes the write. The cell
        // is empty (a finished record's blocker was taken: `reset`'s check), so writing over
        // it drops nothing.
        self.blocker.with_mut(|p| unsafe { p.write(Some(b)) });
    }

    /// Replaces the blocker of a queued offer (an async owner polled again with another
    /// waker) and returns the old one, to be dropped after the lock is released. Owner only,
    /// under the object's lock, with the offer still in its queue: no partner has taken it, and
    /// the one that takes it later reads the new blocker after its acquire of the same lock.
    pub(crate) fn replace_blocker(&self, b: Blocker) -> Option<Blocker> {
        // SAFETY: the offer is queued and we hold the object's lock, so no partner holds the
        // offer: the cell is ours until we release the lock.
        self.blocker.with_mut(|p| unsafe { (*p).replace(b) })
    }

    /// Takes back the blocker of an offer the owner withdrew from its object's queue (under
    /// the object's lock, so no partner took it).
    pub(crate) fn withdraw(&self) -> Option<Blocker> {
        // SAFETY: the owner removed the offer from the queue under the lock, so no partner
        // holds it; the lock's acquire orders our access after the install.
        self.blocker.with_mut(|p| unsafe { (*p).take() })
    }

    /// The partner that took the offer out of its queue: after delivering into the offer,
    /// takes the owner's blocker and marks the record done. The caller then unblocks the
    /// returned blocker and must not touch the record (nor its offer) again: the owner may
    /// reuse or free it as soon as it sees `done`.
    #[must_use = "the owner sleeps until the returned blocker is unblocked"]
    #[inline]
    pub(crate) fn finish(&self) -> Option<Blocker> {
        // SAFETY: we took the offer out of the queue under the object's lock, whose acquire
        // orders this after the owner's `install`; nobody else can take it.
        let b = self.blocker.with_mut(|p| unsafe { (*p).take() });
        // Release: pairs with the Acquire load in `is_done`, so the delivered value and the
        // cell's emptying happen before the owner's reuse.
        self.done.store(true, Ordering::Release);
        b
    }

    /// [`finish`](Self::finish), then the unblock of the blocker taken: for a fiber's
    /// blocker (the rendezvous of two fibers), its fields are read in place and the cell is
    /// emptied with one store, instead of the blocker being moved out, returned and matched
    /// again (the copies of its five words cost a 1-proc fiber ping-pong about 12
    /// instructions a message, callgrind `examples/pingpong1`). The same contract as
    /// `finish`: the caller must not touch the record (nor its offer) afterwards.
    ///
    /// With `CONSUME`, it then counts the caller's completed operation against its thread's
    /// budget (`worker::consume_budget`), looking the proc's context up once for the fiber's
    /// wake-up and the count.
    #[inline(always)]
    pub(crate) fn finish_wake<const CONSUME: bool>(&self) {
        // SAFETY: as in `finish`: the cell is ours (we took the offer out of its queue).
        let fiber = self
            .blocker
            .with(|p| unsafe { (*p).as_ref() }.and_then(Blocker::as_fiber));
        match fiber {
            Some(f) => {
                // SAFETY: as above. A fiber's blocker owns nothing, so writing over it
                // without a drop leaks nothing.
                self.blocker.with_mut(|p| unsafe { p.write(None) });
                // Release: pairs with the Acquire load in `is_done`, as in `finish`.
                self.done.store(true, Ordering::Release);
                if CONSUME {
                    f.wake_then_consume();
                } else {
                    f.wake();
                }
            }
            None => {
                if let Some(b) = self.finish() {
                    b.unblock();
                }
                if CONSUME {
                    crate::sched::worker::consume_budget();
                }
            }
        }
    }

    /// Whether this queued offer's owner is the fiber `w`, blocked in block `w.token` (a
    /// dump's question). Only under the object's lock, with the offer queued: its blocker
    /// is then installed and no partner holds it.
    pub(crate) fn queued_for(&self, w: &crate::sched::waitfor::Waiter) -> bool {
        // SAFETY: the offer is queued and the caller holds the object's lock, so the cell
        // is not being written (see `replace_blocker`).
        self.blocker
            .with(|p| unsafe { (*p).as_ref() }.is_some_and(|b| b.wakes(w)))
    }

    /// Whether the partner that took the offer has finished with it.
    #[inline]
    pub(crate) fn is_done(&self) -> bool {
        // Acquire: pairs with the Release store in `finish`.
        self.done.load(Ordering::Acquire)
    }

    /// Spins until the partner that took the offer has finished with it: between its taking
    /// the offer and `finish` it only delivers a value, a few instructions that never block.
    #[inline]
    pub(crate) fn wait_done(&self) {
        while !self.is_done() {
            crate::loom::spin_loop();
        }
    }
}

/// What a base event's blocking phase did.
#[must_use]
#[derive(Debug)]
pub enum Blocked<O> {
    /// The offer is enqueued; a partner may complete it later.
    Waiting,
    /// A partner was found and both sides committed: this is the sync's result.
    Committed(O),
    /// The sync was already completed by a partner through an earlier offer: stop blocking.
    Synched,
}

/// A source of base events: the four phases of the Parallel CML protocol (Reppy, Russo and Xiao 2009,
/// section 5). Channels implement it; so can your own communication objects, which then take
/// part in `choose`, `wrap`, `with_nack` and `sync` like any other event
/// ([`Event::from_base`](crate::event::Event::from_base)).
///
/// The sync that owns an implementation calls, in order:
/// 1. `poll`: is it enabled now? Lock-free and advisory.
/// 2. `try_do`, if `poll` said yes: commit now if possible. Nothing of this sync is visible
///    to other threads yet, so there is no own state to claim; win a partner's waiter with
///    [`Waiter::synch_spinning`].
/// 3. `block`, if no branch committed: publish an offer holding [`OwnWaiter::waiter`], or
///    find a partner and [`OwnWaiter::try_match`] it (never your own sync's offers:
///    [`Waiter::same_sync`]), or complete at once with [`OwnWaiter::synch_self`].
/// 4. Afterwards, exactly one of: `complete` if this event won through its published offer
///    (a partner delivered), or `cancel` if another branch won or the sync was abandoned;
///    if the sync was abandoned after this event won (a dropped `.await`), `discard` gets the
///    value that nobody will see.
///
/// Rules: never block, yield or sync inside these methods; hold at most one lock at a time;
/// a partner that wins a waiter ([`TrySynch::Won`]) delivers into the offer, then publishes.
///
/// # Examples
/// A one-shot flag whose event is enabled once set (Figure 15's `cvar`):
/// ```
/// use std::sync::{Arc, Mutex};
/// use pcml::event::{Event};
/// use pcml::event::base::{BaseEvent, Blocked, OwnWaiter, SelfSynch, Waiter};
///
/// #[derive(Default)]
/// struct Flag { state: Mutex<(bool, Vec<Waiter>)> }
/// impl Flag {
///     fn set(&self) {
///         let waiters = {
///             let mut s = self.state.lock().unwrap();
///             s.0 = true;
///             std::mem::take(&mut s.1)
///         };
///         for w in waiters {
///             if let Some(commit) = w.synch_spinning() {
///                 commit.publish(); // nothing to deliver but the wake-up
///             }
///         }
///     }
/// }
/// struct WaitEvt(Arc<Flag>);
/// impl BaseEvent for WaitEvt {
///     type Output = ();
///     fn poll(&mut self) -> bool { self.0.state.lock().unwrap().0 }
///     fn try_do(&mut self) -> Option<()> { self.poll().then_some(()) }
///     fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<()> {
///         let mut s = self.0.state.lock().unwrap();
///         if !s.0 {
///             s.1.push(me.waiter());
///             return Blocked::Waiting;
///         }
///         drop(s);
///         match me.synch_self() {
///             SelfSynch::Won => Blocked::Committed(()),
///             SelfSynch::AlreadySynched => Blocked::Synched,
///         }
///     }
///     fn complete(&mut self) {}
/// }
///
/// let flag = Arc::new(Flag::default());
/// let f = flag.clone();
/// let t = std::thread::spawn(move || Event::from_base(WaitEvt(f)).sync());
/// flag.set();
/// t.join().unwrap();
/// ```
pub trait BaseEvent: Send + 'static {
    /// What a sync on this event returns.
    type Output: Send + 'static;

    /// Polling phase: whether the event looks enabled now. Must not lock for long or block.
    fn poll(&mut self) -> bool;

    /// Commit phase: complete now if a partner or value is available; `None` if not (after
    /// a successful `poll`, the state may have changed: that is fine, the sync moves on).
    fn try_do(&mut self) -> Option<Self::Output>;

    /// Blocking phase: publish an offer for `me`, or commit with a partner found now.
    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<Self::Output>;

    /// The sync was completed through this event's published offer: return what the partner
    /// delivered. Called once, after the partner published.
    fn complete(&mut self) -> Self::Output;

    /// This event did not win (another branch did, or the sync was abandoned): withdraw the
    /// offer, if any. The sync is `Synched`, so no partner can complete the offer any more;
    /// reclaim whatever it holds. Called at most once; the default does nothing (dead offers
    /// are then swept by their object).
    fn cancel(&mut self) {}

    /// This event won, but its sync was abandoned before the value reached the syncing thread
    /// (a dropped `.await` whose partner had already delivered): `out` is that value. The
    /// default drops it; an object whose values must not vanish (a listener's accepted
    /// connection) takes it back. Called at most once, instead of returning the value.
    fn discard(&mut self, out: Self::Output) {
        drop(out);
    }

    /// How a thread blocked on this event shows in a dump ([`Dump`](crate::Dump)): by
    /// default the event's type name. Override it to name the object (and its state).
    ///
    /// ```
    /// use pcml::event::base::{BaseEvent, Blocked, OwnWaiter};
    /// struct Forever;
    /// impl BaseEvent for Forever {
    ///     type Output = ();
    ///     fn poll(&mut self) -> bool { false }
    ///     fn try_do(&mut self) -> Option<()> { None }
    ///     fn block(&mut self, _: &OwnWaiter<'_>) -> Blocked<()> { Blocked::Waiting }
    ///     fn complete(&mut self) {}
    ///     fn describe(&self) -> String { "the end of time".into() }
    /// }
    /// assert_eq!(Forever.describe(), "the end of time");
    /// ```
    fn describe(&self) -> String {
        std::any::type_name::<Self>().to_string()
    }
}

#[cfg(all(test, not(pcml_loom)))]
mod unit {
    //! The transitions of Figure 7, one thread at a time.

    use super::*;

    fn waiter(rec: &Arc<SyncRecord>, branch: u32) -> Waiter {
        Waiter {
            rec: rec.clone(),
            branch,
        }
    }

    #[test]
    fn partner_wins_a_waiting_record_once() {
        let rec = Arc::new(SyncRecord::new());
        let w = waiter(&rec, 3);
        match w.try_synch() {
            TrySynch::Won(c) => c.publish(),
            _ => panic!("a fresh record is Waiting"),
        }
        assert!(rec.is_synched());
        assert_eq!(rec.winner(), Some(3));
        assert!(matches!(w.try_synch(), TrySynch::Synched));
        assert!(w.synch_spinning().is_none());
        assert_eq!(rec.synch_self(), SelfSynch::AlreadySynched);
    }

    #[test]
    fn dropping_a_commit_publishes() {
        let rec = Arc::new(SyncRecord::new());
        let w = waiter(&rec, 1);
        drop(w.synch_spinning());
        assert_eq!(rec.winner(), Some(1));
    }

    #[test]
    fn match_claims_then_wins_both() {
        let (mine, theirs) = (Arc::new(SyncRecord::new()), Arc::new(SyncRecord::new()));
        let me = OwnWaiter {
            rec: &mine,
            branch: 0,
        };
        let partner = waiter(&theirs, 2);
        match me.try_match(&partner) {
            Match::Won(c) => c.publish(),
            _ => panic!("both were Waiting"),
        }
        assert!(mine.is_synched() && theirs.is_synched());
        assert_eq!(theirs.winner(), Some(2));
    }

    #[test]
    fn match_rolls_back_on_a_dead_partner() {
        let (mine, theirs) = (Arc::new(SyncRecord::new()), Arc::new(SyncRecord::new()));
        assert_eq!(theirs.synch_self(), SelfSynch::Won);
        let me = OwnWaiter {
            rec: &mine,
            branch: 0,
        };
        assert!(matches!(
            me.try_match(&waiter(&theirs, 0)),
            Match::PartnerGone
        ));
        // Rolled back to Waiting: still available to others.
        assert!(!mine.is_synched());
        assert!(matches!(waiter(&mine, 0).try_synch(), TrySynch::Won(_)));
    }

    #[test]
    fn match_reports_self_synched() {
        let (mine, theirs) = (Arc::new(SyncRecord::new()), Arc::new(SyncRecord::new()));
        drop(waiter(&mine, 1).synch_spinning());
        let me = OwnWaiter {
            rec: &mine,
            branch: 0,
        };
        assert!(matches!(
            me.try_match(&waiter(&theirs, 0)),
            Match::SelfSynched
        ));
        // The partner was not touched.
        assert!(!theirs.is_synched());
    }

    #[test]
    fn blocker_installs_only_before_publication() {
        let rec = Arc::new(SyncRecord::new());
        assert!(
            rec.install_blocker(Blocker::from_waker(std::task::Waker::noop().clone()))
                .is_ok()
        );
        drop(waiter(&rec, 0).synch_spinning());
        assert!(
            rec.install_blocker(Blocker::from_waker(std::task::Waker::noop().clone()))
                .is_err()
        );
        assert!(!rec.update_waker(std::task::Waker::noop()));
    }
}
