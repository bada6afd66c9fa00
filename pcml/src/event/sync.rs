//! The sync driver: the three phases of Reppy, Russo and Xiao's section 5 over a flattened event, for the
//! three kinds of waiter (fiber, OS thread, async), plus `poll` and cancellation.
//!
//! # Differences from the paper
//! - Polling and committing are interleaved branch by branch (poll branch i, and if it looks
//!   enabled try to commit it, then branch i+1): the same protocol without a list of enabled
//!   branches to allocate.
//! - Choice is fair by a random draw among the enabled branches: the polling pass polls every
//!   branch and the commit phase tries the enabled ones in a uniformly random order, so each
//!   enabled branch wins with the same probability whatever its position and whatever the
//!   readiness of the others, as Go's `select`, which polls its cases in a random
//!   permutation. (A random start and a walk round, which pcml did before, favours a ready
//!   branch that follows not-ready ones: with one idle and two ready branches the first ready
//!   one won two times in three.) The blocking pass begins at
//!   a random branch: it runs only when the commit phase found nothing, so what it meets
//!   arrived since. A biased choice (`choose_biased`) polls and blocks in order. Under loom
//!   the draws are always 0 (models must be deterministic).
//! - The sync record is allocated only when the commit phase fails (section 9.2's C# trick).
//! - A one-branch event whose base event has a direct path (`branch::DirectBase`: a channel
//!   event, wrapped or not) skips all of this: `sync` and the future hand it to the object
//!   (see `rep`'s "Direct syncs"). A future on that path owns the branch, whose base event owns
//!   its queued offer; dropping the future drops the branch, which withdraws the offer or
//!   discards what a partner already delivered.
//!
//! # Invariants
//! - A `Pending` that is dropped before `finish` (a dropped future, an unwinding fiber, a
//!   panicking base event) cancels the sync: it moves its own record to `Synched` so no partner
//!   can complete it; if a partner already did, it waits for the publication, hands the
//!   delivered value to the winner's `BaseEvent::discard` unwrapped (the sync completed, its
//!   result is discarded; a buffered object puts the value back), and cancels the rest.
//!   Either way every nack of a losing branch fires and no offer stays alive.
//! - Wrappers run only after losers are cancelled and nacks fired.

use std::cell::Cell;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::loom::sync::Arc;
use crate::sched::blocker::{self, Blocker};
use crate::sched::worker;

use super::branch::{BlockOutcome, Branch};
use super::inline::Inline;
use super::nack::Nack;
use super::rep::{OwnWaiter, SelfSynch, SyncRecord};
use super::{Event, Kind};

/// A flattened event: its branches (leaves) and the nacks of its `with_nack`s, each with the
/// range of branch indices it covers (a `with_nack` scope is contiguous when flattened).
pub(crate) struct Prepared<T> {
    pub(crate) branches: Vec<Option<Box<dyn Branch<T>>>>,
    pub(crate) nacks: Vec<(Arc<Nack>, usize, usize)>,
    /// Try the branches in order (a `choose_biased` was flattened into this sync), not in a
    /// random order.
    pub(crate) biased: bool,
}

impl<T> Prepared<T> {
    pub(crate) fn new() -> Self {
        Self {
            branches: Vec::new(),
            nacks: Vec::new(),
            biased: false,
        }
    }

    fn branch(&mut self, i: usize) -> &mut dyn Branch<T> {
        &mut **self.branches[i]
            .as_mut()
            .expect("pcml: branch already taken")
    }

    /// Fires every nack whose scope does not hold `winner` (all of them for `None`) and
    /// forgets all nacks.
    fn fire_nacks(&mut self, winner: Option<usize>) {
        for (nack, start, end) in self.nacks.drain(..) {
            if !winner.is_some_and(|w| (start..end).contains(&w)) {
                nack.fire();
            }
        }
    }

    /// Cancels every branch but `winner`, fires the losers' nacks, and returns the winner.
    fn settle(&mut self, winner: usize) -> Box<dyn Branch<T>> {
        let w = self.branches[winner]
            .take()
            .expect("pcml: branch already taken");
        for b in self.branches.iter_mut().flatten() {
            b.cancel();
        }
        self.branches.clear();
        self.fire_nacks(Some(winner));
        w
    }

    /// The sync completed on `winner`: settle, then run the winner's wrappers.
    fn finish(mut self, winner: usize) -> T {
        let w = self.settle(winner);
        drop(self);
        w.finish()
    }
}

impl<T> Drop for Prepared<T> {
    fn drop(&mut self) {
        // Abandoned before any branch won (a guard panicked, `poll` found nothing, a sync that
        // never blocked was dropped): every branch lost.
        self.fire_nacks(None);
    }
}

impl<T> crate::sched::dump::Describe for Prepared<T> {
    fn describe(&self, out: &mut Vec<String>) {
        for b in self.branches.iter().flatten() {
            out.push(format!("branch: {}", b.describe()));
        }
    }
}

/// Flattens `ev` into `out`, running guards and `with_nack` functions (section 4: they run at
/// each sync, before the protocol starts).
pub(crate) fn flatten<T: Send + 'static>(ev: Event<T>, out: &mut Prepared<T>) {
    match ev.kind {
        Kind::Never => {}
        Kind::Base(b) => out.branches.push(Some(b)),
        Kind::Inline(i) => out.branches.push(Some(i.into_branch())),
        Kind::Choose(evs) => {
            out.branches.reserve(evs.len());
            for e in evs {
                flatten(e, out);
            }
        }
        Kind::ChooseBiased(evs) => {
            out.biased = true;
            out.branches.reserve(evs.len());
            for e in evs {
                flatten(e, out);
            }
        }
        Kind::Guard(f) => flatten(f(), out),
        Kind::WithNack(f) => {
            let nack = Arc::new(Nack::new());
            let start = out.branches.len();
            let k = out.nacks.len();
            out.nacks.push((nack.clone(), start, start));
            let ev = f(Event::from_base(super::nack::NackEvt(nack)));
            flatten(ev, out);
            out.nacks[k].2 = out.branches.len();
        }
        Kind::Wrapped(w) => w.flatten_into(out),
    }
}

thread_local! {
    static RNG: Cell<u64> = const { Cell::new(0) };
}

/// A random start in `0..n` for fair choice (xorshift, per thread).
fn fair_start(n: usize) -> usize {
    if n <= 1 || cfg!(pcml_loom) {
        return 0;
    }
    random_below(n)
}

/// A random number in `0..n`, `n > 0` (xorshift, per thread; always 0 under loom, whose models
/// must be deterministic).
fn random_below(n: usize) -> usize {
    if cfg!(pcml_loom) {
        return 0;
    }
    RNG.with(|r| {
        let mut x = r.get();
        if x == 0 {
            // Seed from this thread's stack address and the time: distinct per thread.
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1);
            x = t ^ (r as *const _ as u64).rotate_left(32) | 1;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        r.set(x);
        ((x >> 32) as usize) % n
    })
}

/// Panics if the caller is a pcml async task, which cannot block: before anything of the
/// sync is published, so the panic leaves no offer behind.
pub(crate) fn assert_can_block(what: &str) {
    if matches!(worker::current(), Some(worker::Current::Task { .. })) {
        panic!(
            "pcml: {what} would block inside a pcml async task, which cannot block its proc; use `.await` instead"
        );
    }
}

/// The polling and commit phases. `Ok(output)` if a branch committed.
/// The polling and commit phases of a one-branch event (a base event with its wrappers),
/// without building a `Prepared`: most syncs are of one channel or mailbox event, and many
/// commit at once. `Err` gives the event back, its phases tried once, for the general path
/// to block (it need not poll again: `tried` says so). Equivalent to `poll_and_commit` on
/// that one branch: a plain base event has no nacks and no other branch to cancel.
fn commit_single<T>(ev: Event<T>) -> Result<T, (Event<T>, bool)> {
    match ev.kind {
        Kind::Base(mut b) => {
            if b.poll() && b.try_do() {
                Ok(b.finish())
            } else {
                Err((
                    Event {
                        kind: Kind::Base(b),
                    },
                    true,
                ))
            }
        }
        Kind::Inline(i) => commit_single(Event {
            kind: Kind::Base(i.into_branch()),
        }),
        kind => Err((Event { kind }, false)),
    }
}

/// The polling and commit phases of a flattened event: polls every branch, then tries to
/// commit the enabled ones, in order if `p.biased`, else in a uniformly random order, so each
/// enabled branch is equally likely to win whatever its position and whatever the readiness
/// of the others. A branch whose commit fails (its partner was taken since the poll) is
/// dropped from the candidates and another enabled one is drawn.
fn poll_and_commit<T>(p: Prepared<T>) -> Result<T, Prepared<T>> {
    let mut p = p;
    let n = p.branches.len();
    if n > 1 {
        worker::settle_owed();
    }
    if p.biased || n == 1 {
        for i in 0..n {
            let b = p.branch(i);
            if b.poll() && try_commit(b, n) {
                return Ok(p.finish(i));
            }
        }
        return Err(p);
    }
    if n <= 64 {
        // The enabled branches as a bit set: no allocation.
        let mut enabled = 0u64;
        for i in 0..n {
            if p.branch(i).poll() {
                enabled |= 1 << i;
            }
        }
        while enabled != 0 {
            let i = if enabled & (enabled - 1) == 0 {
                // One candidate: no draw.
                enabled.trailing_zeros() as usize
            } else {
                nth_set_bit(enabled, random_below(enabled.count_ones() as usize))
            };
            if try_commit(p.branch(i), n) {
                return Ok(p.finish(i));
            }
            enabled &= !(1 << i);
        }
    } else {
        let mut enabled: Vec<usize> = (0..n).filter(|&i| p.branch(i).poll()).collect();
        while !enabled.is_empty() {
            let i = enabled.swap_remove(random_below(enabled.len()));
            if try_commit(p.branch(i), n) {
                return Ok(p.finish(i));
            }
        }
    }
    Err(p)
}

/// Commits branch `b` of a choice of `n` branches (its `do` phase). Partners that a choice of
/// several branches wakes on other procs owe it their turn (see the `sched` docs, "Fair choice
/// across procs").
#[inline(always)]
fn try_commit<T>(b: &mut dyn Branch<T>, n: usize) -> bool {
    if n == 1 {
        return b.try_do();
    }
    worker::begin_choice_commit();
    let committed = b.try_do();
    worker::end_choice_commit();
    committed
}

/// The index of the `k`-th set bit of `bits` (from 0, lowest first); `k < bits.count_ones()`.
fn nth_set_bit(mut bits: u64, k: usize) -> usize {
    if k == 0 {
        return bits.trailing_zeros() as usize;
    }
    for _ in 0..k {
        bits &= bits - 1;
    }
    bits.trailing_zeros() as usize
}

/// A sync in its blocking phase: offers published under `rec`.
pub(crate) struct Pending<T> {
    p: Prepared<T>,
    rec: Arc<SyncRecord>,
    /// Set once the winner's output has been handed out (or discarded).
    done: bool,
}

impl<T> Pending<T> {
    fn new(p: Prepared<T>) -> Self {
        Self {
            p,
            rec: Arc::new(SyncRecord::new()),
            done: false,
        }
    }

    /// Blocks every branch from `start` round. `Some(i)` if branch `i` committed now.
    fn block_all(&mut self, start: usize) -> Option<usize> {
        // A branch that commits here (a partner came since the polling phase) takes part in
        // the fairness across procs as a commit of the polling phase does.
        let n = self.p.branches.len();
        if n > 1 {
            worker::begin_choice_commit();
        }
        let committed = self.block_each(start);
        if n > 1 {
            worker::end_choice_commit();
        }
        committed
    }

    /// [`block_all`](Self::block_all)'s loop.
    #[inline(always)]
    fn block_each(&mut self, start: usize) -> Option<usize> {
        let n = self.p.branches.len();
        for k in 0..n {
            let i = (start + k) % n;
            let me = OwnWaiter {
                rec: &self.rec,
                branch: i as u32,
            };
            match self.p.branch(i).block(&me) {
                // Offer published; go on to the next branch.
                BlockOutcome::Waiting => {}
                // We matched a partner now: our record is Synched by us.
                BlockOutcome::Committed => {
                    self.rec.set_own_winner(i);
                    return Some(i);
                }
                // A partner completed us through an earlier offer: stop publishing.
                BlockOutcome::Synched => return None,
            }
        }
        None
    }

    /// Our own record is `Synched` by us (`SelfSynch::Won`): no partner can complete any of
    /// our offers; withdraw them all. `Prepared`'s drop fires every nack.
    fn lose_all(mut self) {
        self.done = true;
        for b in self.p.branches.iter_mut().flatten() {
            b.cancel();
        }
        self.p.branches.clear();
    }

    /// The winner is published: settle and run its wrappers.
    fn finish(mut self, winner: usize) -> T {
        self.done = true;
        let p = std::mem::replace(&mut self.p, Prepared::new());
        drop(self);
        p.finish(winner)
    }
}

impl<T> Drop for Pending<T> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        // Abandoned while blocked: cancellation is a loss of every branch.
        match self.rec.synch_self() {
            SelfSynch::Won => {
                // Nobody can complete us now; `Prepared`'s drop fires every nack.
                for b in self.p.branches.iter_mut().flatten() {
                    b.cancel();
                }
                self.p.branches.clear();
            }
            SelfSynch::AlreadySynched => {
                // A partner won us: wait for its delivery, then drop the value unwrapped.
                let w = self.rec.wait_winner();
                let b = self.p.settle(w);
                b.discard();
            }
        }
    }
}

/// The polling and commit phases of a sync: the result if a branch committed now, else the
/// flattened event and the (fair) branch to start the blocking phase at.
fn poll_phases<T: Send + 'static>(ev: Event<T>) -> Result<T, (Prepared<T>, usize)> {
    let (ev, tried) = match commit_single(ev) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let mut p = Prepared::new();
    flatten(ev, &mut p);
    let start = if p.biased {
        0
    } else {
        fair_start(p.branches.len())
    };
    if tried {
        return Err((p, start));
    }
    poll_and_commit(p).map_err(|p| (p, start))
}

/// Synchronizes on `ev`, blocking the calling fiber or OS thread.
pub(crate) fn sync<T: Send + 'static>(ev: Event<T>) -> T {
    // A one-branch event whose base event has a direct path takes it (see `rep`'s "Direct
    // syncs"): no record, no `Prepared`.
    let ev = match ev.kind {
        Kind::Base(mut b) => {
            if b.sync_direct() {
                return b.finish();
            }
            Event {
                kind: Kind::Base(b),
            }
        }
        Kind::Inline(i) => return i.sync(),
        kind => Event { kind },
    };
    let (p, start) = match poll_phases(ev) {
        Ok(v) => {
            worker::consume_budget();
            return v;
        }
        Err(e) => e,
    };
    assert_can_block("sync");
    let mut pending = Pending::new(p);
    if let Some(i) = pending.block_all(start) {
        worker::consume_budget();
        return pending.finish(i);
    }
    {
        // A dump lists every branch while we wait; the note is cleared when this scope ends
        // (an unwind included), before `pending` moves.
        let _note = worker::WaitNote::new(&pending.p);
        wait_for_winner(&pending.rec, "sync");
    }
    let w = pending
        .rec
        .winner()
        .expect("pcml: a sync woke with no winner");
    pending.finish(w)
}

/// Commits `ev` only if one of its branches is enabled now; otherwise every branch loses.
pub(crate) fn poll<T: Send + 'static>(ev: Event<T>) -> Option<T> {
    let r = match commit_single(ev) {
        Ok(v) => Some(v),
        // Tried and not enabled: the one branch loses. It published no offer and has no
        // nack, so dropping it is all that losing takes (as in `poll_and_commit`'s `Err`).
        Err((_, true)) => None,
        Err((ev, false)) => match poll_phases(ev) {
            Ok(v) => Some(v),
            Err((p, start)) => poll_confirm(p, start),
        },
    };
    worker::consume_budget();
    r
}

/// The end of a `poll` whose polling and commit phases found nothing enabled: with one
/// branch (or none) that is the answer; with several, confirms it at one instant by offering
/// every branch and then withdrawing them all.
///
/// Why: the phases test the branches one after another, so each "not enabled" holds at its
/// own instant, and a branch may become enabled just after its test while another is
/// disabled just before its own: a token moving between two channels, always put into one
/// before it is taken from the other, is then missed in both although one of them held it at
/// every instant. Go's `select` with a `default` locks every channel of the choice (in address
/// order) to test them at once; here the objects' locks are their own business, so the sync
/// protocol does it instead, without touching the objects or the `sync` path:
///
/// 1. the blocking pass publishes an offer on each branch (the ordinary `block` phase, which
///    commits at once if it finds a partner: then the poll succeeds);
/// 2. then the poll moves its own record to `Synched`. If it wins that (`SelfSynch::Won`),
///    the instant of that move is one at which no branch was enabled: each branch `i` found no
///    partner when its offer was queued at `t_i`, and from `t_i` on any partner that came to
///    its object met our live offer and would have completed our record first. It answers
///    `None`, and every offer is withdrawn (they are dead: nobody can complete them). If a
///    partner completed the record first, the poll succeeds with that partner's value.
///
/// The price is paid only by a poll of a choice that finds nothing: a record, an offer per
/// branch and a lock of each object, as a blocking sync would pay; `sync` and a successful
/// poll are unchanged. Time is the exception: a timeout's deadline may pass between its offer
/// and step 2 without a partner coming, so a poll may answer `None` up to that window after
/// the deadline.
fn poll_confirm<T>(p: Prepared<T>, start: usize) -> Option<T> {
    if p.branches.len() <= 1 {
        // One test, at one instant: already linearizable. Dropping `p` loses the branch.
        return None;
    }
    let mut pending = Pending::new(p);
    if let Some(i) = pending.block_all(start) {
        return Some(pending.finish(i));
    }
    match pending.rec.synch_self() {
        // Nothing was enabled at this instant: every branch loses.
        SelfSynch::Won => {
            pending.lose_all();
            None
        }
        // A partner came while our offers were out: its value is on the way.
        SelfSynch::AlreadySynched => {
            let w = pending.rec.wait_winner();
            Some(pending.finish(w))
        }
    }
}

thread_local! {
    /// Syncs that completed at once in a row on this thread, for the async budget.
    static READY_IN_A_ROW: Cell<u32> = const { Cell::new(0) };
}

/// Counts an async sync that completed without waiting; after `BUDGET` of them in a row the
/// next one yields once (wakes itself and returns `Pending`), so a task looping on ready
/// events cannot hog its executor.
#[inline]
pub(crate) fn async_budget_exhausted() -> bool {
    if cfg!(pcml_loom) {
        // Models must be deterministic; thread-locals outlive a model's iterations.
        return false;
    }
    READY_IN_A_ROW.with(|c| {
        let n = c.get() + 1;
        if n >= worker::BUDGET {
            c.set(0);
            true
        } else {
            c.set(n);
            false
        }
    })
}

/// Called when a pcml future goes pending: resets the budget, and notes a thread outside
/// pcml's own (another executor's, or the process's first thread) as one that waits on pcml,
/// so deadlock detection counts it as able to act, as it does a thread blocked in a sync.
#[inline]
pub(crate) fn async_budget_reset() {
    READY_IN_A_ROW.with(|c| c.set(0));
    if worker::context().is_none() {
        crate::sched::outside::used_pcml();
    }
}

/// The future of `ev.await`: a sync whose waiter is the task's `Waker`.
///
/// Dropping it while pending is a loss of every branch: its offers are withdrawn and its
/// nacks fire. If a partner committed to it just before the drop, the sync had completed: the
/// wrappers do not run, and the delivered value goes to the winning base event's
/// [`BaseEvent::discard`](crate::event::BaseEvent::discard): a buffered object (a mailbox, an
/// MVar) puts it back, a synchronous channel drops it (see the `event` module's
/// "Cancellation").
#[must_use = "futures do nothing unless awaited"]
pub struct SyncFuture<T> {
    /// Dropped by [`SyncFuture`]'s `Drop`, which returns at once for `Done`: the state of
    /// every `.await` that completed, which the awaiting future drops right after.
    state: ManuallyDrop<FutState<T>>,
}

impl<T> Drop for SyncFuture<T> {
    /// Inline, so that dropping a completed sync (`Done`) is a test of its tag in the
    /// awaiting future's code, with no call: it was a call to the state's drop glue, about
    /// 19 instructions, four times a round trip of the task ping-pong (callgrind,
    /// `examples/taskpp`).
    #[inline]
    fn drop(&mut self) {
        if !matches!(*self.state, FutState::Done) {
            self.drop_state();
        }
    }
}

enum FutState<T> {
    Init(Event<T>),
    /// A one-branch sync of an inline event (see `inline`), on its direct path; `true` once
    /// a poll queued its offer (which the event owns and withdraws when dropped).
    Inline(Inline<T>, bool),
    /// A one-branch sync on its base event's direct path, its offer queued (owned by the
    /// branch, which withdraws it when dropped).
    Direct(Box<dyn Branch<T>>),
    Blocked(Pending<T>),
    Done,
}

impl<T> std::fmt::Debug for SyncFuture<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match *self.state {
            FutState::Init(_) | FutState::Inline(_, false) => "Init",
            FutState::Direct(_) | FutState::Blocked(_) | FutState::Inline(_, true) => "Blocked",
            FutState::Done => "Done",
        };
        f.debug_struct("SyncFuture").field("state", &s).finish()
    }
}

impl<T> SyncFuture<T> {
    pub(crate) fn new(ev: Event<T>) -> Self {
        let state = match ev.kind {
            Kind::Inline(i) => FutState::Inline(i, false),
            kind => FutState::Init(Event { kind }),
        };
        Self {
            state: ManuallyDrop::new(state),
        }
    }

    /// Drops a state that is not `Done` (a sync dropped before it completed, or never
    /// polled): out of line, as the drop of a completed one is not.
    #[inline(never)]
    fn drop_state(&mut self) {
        // SAFETY: called only from `drop`, once; the state is not used afterwards.
        unsafe { ManuallyDrop::drop(&mut self.state) }
    }
}

impl<T: Send + 'static> Future for SyncFuture<T> {
    type Output = T;

    /// Always inline: the inline path is a few tests and a call through the event's table
    /// (everything else is `poll_general`, out of line), and out of line in the awaiting
    /// future it costs a call and a frame per poll.
    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let this = self.get_mut();
        if let FutState::Inline(ev, queued) = &mut *this.state {
            // The channel event's own direct path, polled in place.
            if !*queued && async_budget_exhausted() {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            return match ev.poll(cx) {
                Poll::Ready(v) => {
                    // SAFETY: the event is spent (`Inline::poll`): the state holds nothing
                    // to drop, so it is overwritten without its drop glue.
                    unsafe { std::ptr::write(&mut *this.state, FutState::Done) };
                    Poll::Ready(v)
                }
                Poll::Pending => {
                    if !*queued {
                        *queued = true;
                        async_budget_reset();
                    }
                    Poll::Pending
                }
            };
        }
        this.poll_general(cx)
    }
}

impl<T: Send + 'static> SyncFuture<T> {
    /// Every sync but an inline event's: out of line, so that the inline path above stays
    /// small.
    #[inline(never)]
    fn poll_general(&mut self, cx: &mut Context<'_>) -> Poll<T> {
        let this = self;
        match std::mem::replace(&mut *this.state, FutState::Done) {
            FutState::Init(ev) => {
                if async_budget_exhausted() {
                    *this.state = FutState::Init(ev);
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                // A one-branch event whose base event has a direct path takes it.
                let ev = match ev.boxed().kind {
                    Kind::Base(mut b) => match b.poll_direct(cx) {
                        Some(Poll::Ready(())) => return Poll::Ready(b.finish()),
                        Some(Poll::Pending) => {
                            async_budget_reset();
                            *this.state = FutState::Direct(b);
                            return Poll::Pending;
                        }
                        None => Event {
                            kind: Kind::Base(b),
                        },
                    },
                    kind => Event { kind },
                };
                let (p, start) = match poll_phases(ev) {
                    Ok(v) => return Poll::Ready(v),
                    Err(e) => e,
                };
                let mut pending = Pending::new(p);
                if let Some(i) = pending.block_all(start) {
                    return Poll::Ready(pending.finish(i));
                }
                match pending
                    .rec
                    .install_blocker(Blocker::from_waker(cx.waker().clone()))
                {
                    Ok(()) => {
                        async_budget_reset();
                        if pending.p.branches.len() > 1 {
                            worker::choice_pending();
                        }
                        *this.state = FutState::Blocked(pending);
                        Poll::Pending
                    }
                    Err(_) => {
                        let w = pending.rec.wait_winner();
                        Poll::Ready(pending.finish(w))
                    }
                }
            }
            FutState::Direct(mut b) => match b.poll_direct(cx) {
                Some(Poll::Ready(())) => Poll::Ready(b.finish()),
                Some(Poll::Pending) => {
                    *this.state = FutState::Direct(b);
                    Poll::Pending
                }
                None => unreachable!("pcml: a direct branch lost its direct path"),
            },
            FutState::Inline(..) => unreachable!("pcml: an inline sync polled as another"),
            FutState::Blocked(pending) => {
                if let Some(w) = pending.rec.winner() {
                    return Poll::Ready(pending.finish(w));
                }
                if pending.rec.update_waker(cx.waker()) {
                    if pending.p.branches.len() > 1 {
                        worker::choice_pending();
                    }
                    *this.state = FutState::Blocked(pending);
                    return Poll::Pending;
                }
                let w = pending.rec.wait_winner();
                Poll::Ready(pending.finish(w))
            }
            FutState::Done => panic!("pcml: SyncFuture polled after completion"),
        }
    }
}

/// Blocks the caller until `rec`'s winner is published (by a partner, which wakes us).
///
/// Inlined into its callers: a call whose return spans the fiber switch costs a branch
/// misprediction on the way back.
#[inline(always)]
pub(crate) fn wait_for_winner(rec: &SyncRecord, what: &str) {
    blocker::block_current(what, |b| {
        if let Err(b) = rec.install_blocker(b) {
            // Published before we could install: do not wait.
            b.unblock();
        }
    });
    debug_assert!(rec.winner().is_some(), "pcml: a sync woke with no winner");
}
