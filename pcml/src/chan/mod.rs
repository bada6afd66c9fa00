//! Synchronous channels (CML's `chan`), their [`Sender`] and [`Receiver`] halves, and closing.
//!
//! A [`Chan`] is a rendezvous channel: a send and a receive meet and the message passes in one
//! step. It is one cheap, clone-able handle for both ends, the CML way: `send` and `recv`
//! return plain values, and `send_evt`/`recv_evt` are events for `choose`/`select`.
//!
//! ```
//! use pcml::chan::Chan;
//! pcml::run(|| {
//!     let ch = Chan::new();
//!     let tx = ch.clone();
//!     pcml::spawn(move || tx.send("ping"));
//!     assert_eq!(ch.recv(), "ping");
//! });
//! ```
//!
//! # Closing, and the halves
//! Programs that stop consuming when the producers are done (a worker pool, a fan-in) use the
//! halves, as with crossbeam-channel or tokio: [`channel()`] (or [`Chan::split`],
//! [`Chan::sender`], [`Chan::receiver`]) gives a [`Sender`] and a [`Receiver`] whose operations
//! return `Result`s, and `for msg in &rx` runs until the channel is closed and drained.
//!
//! ```
//! use pcml::chan::{channel, RecvError};
//! pcml::run(|| {
//!     let (tx, rx) = channel();
//!     for w in 0..3 {
//!         let tx = tx.clone();
//!         pcml::spawn(move || tx.send(w).unwrap());
//!     }
//!     drop(tx); // the producers hold the only senders now
//!     assert_eq!(rx.iter().sum::<i32>(), 3); // ends when the last producer is gone
//!     assert_eq!(rx.recv(), Err(RecvError));
//! });
//! ```
//!
//! The rules, the same for every kind of channel ([`Chan`], a
//! [`BoundedChan`](crate::BoundedChan) or [`bounded`], a [`Mailbox`](crate::Mailbox) or
//! [`unbounded`]):
//! - A channel closes when `close` is called on any handle, or when a drop leaves it with
//!   no way to send or no way to receive: no both-ends handle (a `Chan`) and no `Sender`, or
//!   no `Chan` and no `Receiver`. A `Chan` can do both, so while one lives the channel stays
//!   open unless closed explicitly. Events do not count as handles: an event made from a
//!   `Sender` does not keep the channel open once the last `Sender` is gone.
//! - A channel that never had a half never closes by itself: a CML program drops its `Chan`s
//!   while their events still wait (an RPC's reply channel lives on in the call's receive
//!   event and the answer's send event), and closing then would break it.
//! - After the close, a receive takes what is still buffered, then fails with [`RecvError`]
//!   (`TryRecvError::Disconnected`); a send fails and gives its message back in the error
//!   ([`SendError`], `TrySendError::Disconnected`). A message is never lost: every send that
//!   returned `Ok` is received, and every other one comes back to its sender.
//! - Whoever is blocked when the channel closes wakes: fibers, OS threads and async tasks
//!   (pcml's or another executor's), in a plain operation or in a choice.
//! - A closed channel's receive event is *enabled* and carries the error, so a choice sees
//!   the close (as Go's `select` sees a closed channel); so is its send event, carrying the
//!   message back.
//! - The both-ends handle keeps CML's plain results, so it cannot report a close: its `send`
//!   and `recv` (and a sync of its events) on a closed channel panic with a message that
//!   says to use the halves; its `try_send`/`try_recv` return the message back / `None`.
//!   A blocked plain operation never waits forever on a closed channel.
//!
//! Why halves as well as the CML handle: CML programs pass one channel value around and
//! never close it, and the plain handle costs nothing for that (closing adds no cache miss
//! to the direct path: the closed flag lives under the channel's lock, and in the polling
//! phase it is a bit of the queue-length word the poll already reads). Programs written
//! the crossbeam or Go way need "no more senders" to end a loop, which only a count of
//! sending handles can tell; the halves make that count exact and give `Result`s, iterators
//! and a [`Stream`](futures_core::Stream) ([`Receiver::into_stream`]).
//!
//! # Implementation
//! A channel's base events, `send_evt` and `recv_evt`, go through the four phases of
//! [`BaseEvent`] (Reppy, Russo and Xiao 2009, section 6.5, Figures 13 and 14).
//!
//! A channel is a spin lock around two waiting queues, one of blocked senders (each offer
//! holding its message) and one of blocked receivers (each offer holding an empty slot for
//! one). The phases:
//! - `poll` reads the other queue's length without locking (advisory);
//! - `do` locks, takes the first live offer of the other queue and tries to win its sync
//!   (Figure 8), spinning on loads while it is `Claimed`;
//! - `block` locks, looks for a live offer of the other queue that is not of its own sync
//!   (section 4), and tries to match it (Figure 9); finding none, it enqueues its own offer;
//! - `cancel` takes back a losing send offer's message.
//!
//! Each waiting queue is a ring of slots with a power-of-two capacity (`ring`), not a
//! `VecDeque`: a rendezvous pushes one offer and pops it, and the mask, a head and a length
//! do that in fewer instructions than `VecDeque`'s wrap-around arithmetic. With the partner's
//! in-place wake of a fiber's blocker (`DirectRecord::finish_wake`) and the prepare step of a
//! blocking direct sync kept inline, a 1-proc fiber ping-pong message went from 360 to 336
//! instructions (callgrind, `examples/pingpong1`, the difference of two run lengths).
//!
//! # Direct sends and receives
//! The plain [`Chan::send`] and [`Chan::recv`] are one-branch syncs with no choice and no nack,
//! and skip what only a choice needs (the event module's "Direct syncs"). They lock once: if
//! the other queue holds a live offer they win it and deliver (the commit phase); if not they
//! block at once, under the same lock acquisition, with their offer's blocker installed before
//! the offer is queued. Their offer is a `DirectOffer` owned by the syncing thread (in
//! the frame of the blocking call, which stays put while it waits, so blocking allocates
//! nothing) and the queue holds a pointer to it, not a reference count. A direct offer has no `Waiting`/`Claimed`/`Synched`
//! state: taking it out of the queue under the lock is winning it. So a rendezvous between two
//! direct syncs costs two lock acquisitions (the blocker's and the committer's) and no other
//! read-modify-write: the partner delivers, takes the blocker, marks the offer done with a
//! store, and wakes its owner.
//!
//! A one-branch sync of a channel event (`ch.recv_evt().sync()`, `ch.send_evt(v).sync()`,
//! with any `wrap`s) takes the same path, and so does its `.await`: the first poll commits or
//! queues a direct offer whose blocker is the task's waker, and the future (through its base
//! event) owns that offer. A later poll that finds the offer still queued replaces the waker
//! under the lock (a task moved to another executor thread must be woken through its new
//! waker); one that finds it taken waits for the partner's `done`. Dropping the pending future
//! withdraws the offer under the lock, or, if a partner already took it, waits for `done` and
//! drops the slot's content: a delivered message nobody will see, as `recv_evt`'s
//! "Cancellation" says (the `BaseEvent::discard` of a channel receive).
//!
//! The event of `recv_evt`/`send_evt` holds its base event inline, with no box, when the
//! message is small (up to two words): its `.await` polls the channel in place, through the
//! `SyncFuture`, and only a choice, a `wrap` or a `poll` boxes it as an ordinary branch
//! (see `event::inline`). What such an `.await` still pays beyond [`Chan::recv_async`] and
//! [`Chan::send_async`], the same async path without an event (a future that borrows the
//! channel), is the event's reference count on the channel (an `Arc` clone and drop) and the
//! general future's state: 1,310 against 1,225 instructions a round trip of four awaits in a
//! one-proc task ping-pong (`examples/taskpp`, callgrind), down from 2,657 when the event was
//! boxed. A per-proc cache of those counts was tried and not kept: an event dropped on a proc
//! left its count in a few slots of the worker's context, and the next event built there on
//! the same channel took it over, so the ping-pong's events took no locked instruction (8 of
//! the 16 a round trip). It cost 1,402 instructions a round trip, and was no faster in time on
//! the AMD EPYC machine measured, where an uncontended locked instruction is cheap (45 runs of
//! `taskpp 300000 1 3` each, alternated at load 10: median 66.1 ns a message against 65.6,
//! minimum 53.2 against 54.2). It also made the partial-deadlock search give cached counts
//! back before reading reference counts.
//!
//! An async wait's offer (one whose future may move between polls, so not in its frame)
//! lives on the heap, in memory the proc keeps of its last finished one (a spare block in
//! the worker's context, reused for a wait of the same layout) or freshly allocated off the
//! procs; so a task that waits over and over allocates nothing after its first wait. It was
//! a thread-local cache, whose type check and lazily registered destructor cost about 24
//! instructions a wait more (`examples/taskpp`: 1,550 -> 1,502 a round trip).
//!
//! # A channel on cache lines of its own
//! A channel's state (`ChanInner`) is aligned to 64 bytes, the cache line, so no other object
//! shares a line with it. Why: the channels and fiber cells of a burst of spawns are all
//! allocated by the spawning proc, next to each other (a rendezvous channel is 144 bytes with
//! its reference counts, so with 16-byte allocation every channel straddles two or three
//! lines and shares the end ones with its neighbours), and after a first burst is freed the
//! next one reuses those blocks in an order that depends on which thread freed which. The
//! scheduler then deals half of the burst to another proc, and where a channel used on proc
//! 0 shares a line with one used on proc 1, the line moves between the two cores on every
//! message of either (false sharing: inferred from the measurements below, the machine has
//! no hardware counters to show the misses). On the parallel ping-pong of 8 scheduler-placed pairs on 2 procs
//! (`examples/parpp 400000 spawn warm`, glibc's allocator, 20 runs alternated with the
//! unaligned build at load 6 to 9) some runs took up to twice as long on both procs as others,
//! depending on that layout: 31.4-56.2 M msgs/s (median 46.1) before, 38.3-63.5 (median 49.4)
//! after; and proc 1's thread, which ran 9.7 ms longer than proc 0's in the median run (and
//! longer in 15 of 20), now runs as long (median difference -0.1 ms, longer in 9 of 20). The
//! 1-proc paths keep their instruction counts within one a message (callgrind, difference of
//! two run lengths: `examples/pingpong1` 649 -> 651 a round trip, `examples/spawn1` 199 a
//! spawn); making a channel costs about 17 more (`examples/skynet N chan-once`, which makes
//! one a node: 2,119 -> 2,138 a leaf). Aligning to 128 bytes (crossbeam's `CachePadded` on
//! x86_64, for prefetchers that fetch lines in pairs) measured no better on the AMD EPYC
//! machine used (10 runs alternated: median 42.1 against 45.9 at 64 and 43.6 unaligned) and
//! costs 256 bytes a channel instead of 192 (144 before).
//! Only the rendezvous channel is aligned so far; the bounded channel and the mailbox are
//! not.
//!
//! # Dead offers
//! An offer whose sync completed elsewhere stays queued until someone meets it (and drops it)
//! or a sweep removes it: when a push finds the queue at its threshold, dead offers are removed
//! and the threshold reset to `max(n + K1, K2 * n)` for the `n` offers left, with `K1 = 10`,
//! `K2 = 1.5` (section 8.3). A loop choosing over a busy and an idle channel thus keeps the
//! idle channel's queue below about `K1` dead offers. Direct offers are never dead while
//! queued: only a partner (taking it out) or its owner (withdrawing it, under the lock)
//! completes one.
//!
//! # Invariants
//! - The queues are touched only under the channel's lock; the lock is never held across a
//!   block, a yield, a wake-up or user code, and no other channel's lock is taken under it. A
//!   direct sync that blocks holds it from its commit attempt until its offer is queued, which
//!   includes making its blocker (for an OS thread, one allocation), but never across the
//!   suspension itself.
//! - An offer's slot is written by its owner before it is enqueued, and afterwards only by the
//!   thread that won the offer's sync (a partner, after `TrySynch::Won`/`Match::Won`, or after
//!   taking a direct offer out of its queue) or by its owner once its sync is settled and this
//!   offer lost (`cancel`) or won (`complete`, or a direct offer's `DirectRecord::is_done`).
//! - A queued direct offer stays allocated until its owner sees it done (after the partner's
//!   last access) or withdraws it from the queue under the lock; nobody but that owner frees
//!   or reuses it.
//! - `senders`/`receivers` equal the queue lengths as of the last update under the lock, or
//!   are `CLOSED` once the channel is closed.
//! - Closing sets `closed` under the lock and empties both queues in the same critical
//!   section; nothing is queued on a closed channel afterwards (every path that queues checks
//!   `closed` under the same lock acquisition), so a closed channel's queues stay empty. The
//!   closer completes the offers it took out as a partner would, leaving their slots as they
//!   are: a receive offer's empty slot and a send offer's message say "closed" to their owners.
//! - The handle counts (`handles`, see `handles`'s invariants) only decide who closes on
//!   drop; they take no part in matching offers.

use std::alloc::Layout;
use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::ops::Deref;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

use crate::event::Event;
use crate::event::branch::{Branch, DirectBase};
use crate::event::direct_branch;
use crate::event::inline::InlineBase;
use crate::event::rep::{
    BaseEvent, Blocked, DirectRecord, Match, OwnWaiter, SelfSynch, SyncRecord,
};
use crate::loom::cell::UnsafeCell;
use crate::loom::sync::Arc;
use crate::loom::sync::atomic::{AtomicUsize, Ordering};
use crate::mp::{SpinLock, SpinLockGuard};
use crate::sched::waitfor::{WaitFor, WaitObject, Waiter};
use crate::sched::{blocker, worker};
use handles::{Handles, Kind};

mod error;
mod halves;
pub(crate) mod handles;
mod ring;

pub(crate) use error::{Checked, Mode, Plain, closed_panic};
pub use error::{
    RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};
pub use halves::{
    IntoIter, Iter, Receiver, RecvFut, RecvStream, SendFut, Sender, TryIter, bounded, channel,
    unbounded,
};

/// The bit of `ChanInner::senders`/`receivers` that says the channel is closed: a closed
/// channel's events are enabled, so the lock-free polling phase sees it in the same load.
const CLOSED: usize = 1 << (usize::BITS - 1);

/// Dead-offer sweep: the threshold's additive term.
const K1: usize = 10;

/// A synchronous channel: a send and a receive meet, and the message passes, in one step.
///
/// Cheap to clone (a reference count); `Send + Sync` when `T: Send`. Usable from fibers, OS
/// threads and (through its events and `.await`) async code.
///
/// # Examples
/// ```
/// use pcml::chan::Chan;
///
/// let ch = Chan::new();
/// let tx = ch.clone();
/// let t = std::thread::spawn(move || tx.send("ping"));
/// assert_eq!(ch.recv(), "ping");
/// t.join().unwrap();
/// ```
pub struct Chan<T> {
    inner: Arc<ChanInner<T>>,
}

/// The state of a rendezvous channel. Aligned to the 64-byte cache line so that no other
/// object (another proc's channel) shares its lines: see the module docs, "A channel on cache
/// lines of its own".
#[repr(align(64))]
pub(crate) struct ChanInner<T> {
    queues: SpinLock<Queues<T>>,
    /// `queues.sendq` length, with the `CLOSED` bit once the channel is closed (Relaxed: a
    /// hint for the lock-free polling phase only; written under the lock).
    senders: AtomicUsize,
    /// `queues.recvq` length and the `CLOSED` bit (Relaxed, as `senders`).
    receivers: AtomicUsize,
    /// The counts of handles that decide when a drop closes the channel.
    handles: Handles,
}

type Guard<'a, T> = SpinLockGuard<'a, Queues<T>>;

struct Queues<T> {
    sendq: WaitQueue<T>,
    recvq: WaitQueue<T>,
    /// Set once, by `ChanInner::close`; then both queues stay empty (nothing is queued on a
    /// closed channel).
    closed: bool,
}

/// Which of a channel's two queues an operation looks in or queues on: a queue selector.
///
/// A value rather than a function pointer picking the field: where the compiler does not
/// carry the selector as a constant (a blocking fiber's prepare step, handed to the
/// scheduler's `block_fiber`), a pointer left an indirect call a blocked send or receive
/// (`examples/pingpong1`), while a value leaves a predictable branch.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    /// The senders' queue.
    Send,
    /// The receivers' queue.
    Recv,
}

impl<T> Queues<T> {
    /// The queue of `side`.
    #[inline(always)]
    fn side(&mut self, side: Side) -> &mut WaitQueue<T> {
        match side {
            Side::Send => &mut self.sendq,
            Side::Recv => &mut self.recvq,
        }
    }
}

/// A queue of offers with the dead-offer sweep of section 8.3.
struct WaitQueue<T> {
    q: ring::Ring<Entry<T>>,
    /// Sweep when a push finds `q.len()` at this.
    threshold: usize,
}

/// A queued offer.
enum Entry<T> {
    /// The one offer of a direct `send`/`recv`, owned by its syncing thread.
    Direct(DirectPtr<T>),
    /// An offer of an `Event` sync, shared with the sync's base event.
    Event(Arc<Offer<T>>),
}

/// A message slot: a send offer's message, or a receive offer's delivered message; see the
/// module invariants for who may touch it when.
struct Slot<T>(UnsafeCell<Option<T>>);

impl<T> Slot<T> {
    fn new(v: Option<T>) -> Self {
        Slot(UnsafeCell::new(v))
    }

    /// Takes the slot's content.
    ///
    /// # Safety
    /// The caller has the right to the slot (module invariants).
    unsafe fn take(&self) -> Option<T> {
        // SAFETY: the caller has exclusive access to the slot.
        self.0.with_mut(|p| unsafe { (*p).take() })
    }

    /// Swaps the slot's content with `v`.
    ///
    /// # Safety
    /// The caller has the right to the slot (module invariants).
    unsafe fn swap(&self, v: &mut Option<T>) {
        // SAFETY: the caller has exclusive access to the slot.
        self.0.with_mut(|p| unsafe { std::ptr::swap(p, v) });
    }

    /// Fills the slot.
    ///
    /// # Safety
    /// The caller has the right to the slot (module invariants).
    unsafe fn put(&self, v: T) {
        // SAFETY: the caller has exclusive access to the slot.
        self.0.with_mut(|p| unsafe { *p = Some(v) });
    }
}

/// One offer of one `Event` sync on this channel.
struct Offer<T> {
    /// The record of the sync this offer belongs to.
    rec: Arc<SyncRecord>,
    /// The offer's branch index within its sync.
    branch: u32,
    slot: Slot<T>,
}

// SAFETY: the slot is reached by one thread at a time (module invariants: its owner before
// publication and after settlement, the winner of its sync in between), and the message is
// `Send`; the record is made of atomics.
unsafe impl<T: Send> Sync for Offer<T> {}
// SAFETY: as above; all fields may move between threads when `T: Send`.
unsafe impl<T: Send> Send for Offer<T> {}

impl<T> Offer<T> {
    /// An offer of branch `me` of an `Event` sync.
    fn of(me: &OwnWaiter<'_>, msg: Option<T>) -> Arc<Self> {
        Arc::new(Offer {
            rec: me.rec.clone(),
            branch: me.branch,
            slot: Slot::new(msg),
        })
    }
}

/// The one offer of a direct `send`/`recv`: owned by the syncing thread (through a
/// [`DirectWait`]), pointed to by the queue while queued.
struct DirectOffer<T> {
    rec: DirectRecord,
    slot: Slot<T>,
}

// SAFETY: the slot is reached by one thread at a time (module invariants: the owner until it
// is queued and after it is done or withdrawn, the partner that took it out of the queue in
// between), and the message is `Send`; the record is `Sync`.
unsafe impl<T: Send> Sync for DirectOffer<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for DirectOffer<T> {}

/// A queued direct offer: a pointer to its owner's allocation.
struct DirectPtr<T>(NonNull<DirectOffer<T>>);

// SAFETY: the pointee is `Send + Sync` when `T: Send` (above), and it stays allocated while
// queued (module invariants), so the pointer may move between threads with the queue.
unsafe impl<T: Send> Send for DirectPtr<T> {}

impl<T> Entry<T> {
    /// Whether the offer's sync completed elsewhere (a dead offer, to be dropped).
    fn is_dead(&self) -> bool {
        match self {
            // Completed only by being taken out of the queue, or withdrawn from it.
            Entry::Direct(_) => false,
            Entry::Event(o) => o.rec.is_synched(),
        }
    }

    /// Whether this is an offer of the `Event` sync whose record is `me`.
    fn is_of(&self, me: &SyncRecord) -> bool {
        match self {
            Entry::Direct(_) => false,
            Entry::Event(o) => std::ptr::eq(&*o.rec, me),
        }
    }
}

impl<T> WaitQueue<T> {
    fn new() -> Self {
        Self {
            q: ring::Ring::new(),
            threshold: K1,
        }
    }

    #[inline]
    fn push(&mut self, e: Entry<T>) {
        if self.q.len() >= self.threshold {
            self.q.retain(|e| !e.is_dead());
            let n = self.q.len();
            self.threshold = (n + K1).max(n + n / 2);
        }
        self.q.push_back(e);
    }

    /// Removes and returns the first live offer not of sync `me`, with its position; drops
    /// dead offers met on the way.
    fn take_match(&mut self, me: &SyncRecord) -> Option<(usize, Entry<T>)> {
        let mut i = 0;
        while let Some(e) = self.q.get(i) {
            if e.is_dead() {
                self.q.remove(i);
                continue;
            }
            if e.is_of(me) {
                i += 1;
                continue;
            }
            let e = if i == 0 {
                self.q.pop_front()
            } else {
                self.q.remove(i)
            };
            return e.map(|e| (i, e));
        }
        None
    }

    /// Removes and returns the first live offer; drops dead offers met on the way.
    #[inline]
    fn pop_live(&mut self) -> Option<Entry<T>> {
        while let Some(e) = self.q.pop_front() {
            if !e.is_dead() {
                return Some(e);
            }
        }
        None
    }

    /// Whether the direct offer `p` is queued here.
    fn holds_direct(&self, p: NonNull<DirectOffer<T>>) -> bool {
        self.q
            .iter()
            .any(|e| matches!(e, Entry::Direct(d) if d.0 == p))
    }

    /// Removes the direct offer `p` if it is still queued; whether it was.
    fn withdraw_direct(&mut self, p: NonNull<DirectOffer<T>>) -> bool {
        let at = self
            .q
            .iter()
            .position(|e| matches!(e, Entry::Direct(d) if d.0 == p));
        at.map(|i| self.q.remove(i)).is_some()
    }
}

/// What a blocking phase on the channel did.
enum BlockOn<R> {
    /// Our offer is enqueued.
    Waiting,
    /// We matched a partner: the result.
    Committed(R),
    /// Our sync was completed elsewhere meanwhile; our offer was not enqueued.
    Synched,
    /// The channel is closed: we completed our own sync with that result, and our offer was
    /// not enqueued.
    Closed,
}

/// An async direct sync's wait: owns its queued offer, on the heap (the future may move
/// between polls). Dropped without `finish` (the future is dropped; its task is dropped at
/// shutdown), it withdraws the offer if still queued, or waits for the partner that took it
/// to be done with it, then frees it (dropping what the slot holds: a send's message nobody
/// took, or a message delivered to a receive nobody will see). `C` is how it reaches the
/// channel: borrowed by `recv_async`/`send_async`, through its event's reference by an event.
///
/// Two words: a wait exists only once its offer is queued, so it needs no flag for that (an
/// inline event holds one: see `event::inline`).
struct DirectWait<T, C: Deref<Target = ChanInner<T>>> {
    ch: C,
    /// Allocated and queued by `DirectWait::queue`, freed (or kept by the proc) only by
    /// `finish` or `drop`.
    offer: NonNull<DirectOffer<T>>,
}

// SAFETY: a `DirectWait` owns its offer as a `Box` would (module invariants: only its owner
// frees or reuses it), and the offer is `Send + Sync` when `T: Send`; so it may move to another
// thread with its owner (an async task moving between executor threads) when `C` may.
unsafe impl<T: Send, C: Deref<Target = ChanInner<T>> + Send> Send for DirectWait<T, C> {}

// No `T: 'static` bound here (nor on the struct and its `Send`): a future holding a wait of
// `&str`s must be `Send` for every lifetime the compiler may give the `&str` in an `async`
// block's state.
impl<T, C: Deref<Target = ChanInner<T>>> DirectWait<T, C> {
    fn offer(&self) -> &DirectOffer<T> {
        // SAFETY: the allocation lives until `finish` or `drop` frees it (field doc), and is
        // only reached through shared references.
        unsafe { self.offer.as_ref() }
    }
}

impl<T: Send + 'static, C: Deref<Target = ChanInner<T>>> DirectWait<T, C> {
    /// Queues a fresh offer holding `msg` (in the memory the proc kept of its last one, else
    /// new) in `ch`'s queue `q`, under the lock held in `qs`, which it releases, with `b`
    /// installed: the prepare step of blocking.
    ///
    /// Inline, so that `q` is a constant where it is called (`poll_direct`) and the push
    /// goes to the queue directly; the offer comes from [`fresh_offer`](Self::fresh_offer)
    /// (inline too; only a new allocation is out of line). (Out of line with `q` a pointer,
    /// it cost a call through that pointer.)
    #[inline(always)]
    fn queue(ch: C, msg: Option<T>, b: blocker::Blocker, qs: Guard<'_, T>, q: Side) -> Self {
        let offer = Self::fresh_offer(msg);
        // SAFETY: from `fresh_offer`: alive until the wait made below frees it.
        queue_offer(&ch, unsafe { offer.as_ref() }, b, qs, q);
        DirectWait { ch, offer }
    }

    /// A fresh offer holding `msg`, on the heap for a wait to own (freed by `free_offer`):
    /// in the memory of the proc's last finished offer if it keeps one, else a new one
    /// ([`new_offer`](Self::new_offer), out of line).
    ///
    /// Inline: out of line, its call cost `examples/taskpp` about 10 instructions a wait
    /// (callgrind).
    #[inline(always)]
    fn fresh_offer(msg: Option<T>) -> NonNull<DirectOffer<T>> {
        match worker::take_spare_offer(Layout::new::<DirectOffer<T>>()) {
            Some(block) => {
                let p = block.cast::<DirectOffer<T>>();
                // SAFETY: the block was allocated with this type's layout and holds no value.
                unsafe {
                    p.write(DirectOffer {
                        rec: DirectRecord::new(),
                        slot: Slot::new(msg),
                    })
                };
                p
            }
            None => Self::new_offer(msg),
        }
    }

    /// A fresh offer holding `msg` in new memory.
    #[inline(never)]
    fn new_offer(msg: Option<T>) -> NonNull<DirectOffer<T>> {
        NonNull::from(Box::leak(Box::new(DirectOffer {
            rec: DirectRecord::new(),
            slot: Slot::new(msg),
        })))
    }

    /// Woken: the partner delivered. Returns the slot's content and recycles the offer.
    ///
    /// Always inline into the event's poll: out of line (the compiler's choice, even with a
    /// plain `#[inline]`) it cost `examples/taskpp` 1,446 against 1,412 instructions a round
    /// trip (callgrind).
    #[inline(always)]
    fn finish(self) -> Option<T> {
        // A panic here drops `self`, which withdraws the offer.
        assert_delivered(self.offer());
        let me = std::mem::ManuallyDrop::new(self);
        // SAFETY: the partner is done with the offer (`is_done`): the slot is ours.
        let v = unsafe { me.offer().slot.take() };
        // SAFETY: the offer came from `fresh_offer` and nobody else references it any more;
        // `me` is not dropped, so it is not freed again.
        unsafe { free_offer(me.offer) };
        // SAFETY: `ch` is read once, out of a value that is never dropped.
        drop(unsafe { std::ptr::read(&me.ch) });
        v
    }
}

impl<T, C: Deref<Target = ChanInner<T>>> Drop for DirectWait<T, C> {
    fn drop(&mut self) {
        abandon_direct(&self.ch, self.offer);
        // SAFETY: the offer is not queued and no partner holds it (above): the slot is ours.
        drop(unsafe { self.offer().slot.take() });
        // SAFETY: the offer came from `fresh_offer` and nobody references it any more.
        unsafe { free_offer(self.offer) };
    }
}

/// Drops the offer `p` of a finished or abandoned wait and frees its memory (or keeps it on
/// the proc for the next wait: `worker::recycle_offer`).
///
/// # Safety
/// `p` came from `DirectWait::fresh_offer`, and nobody else references it any more.
#[inline]
unsafe fn free_offer<T>(p: NonNull<DirectOffer<T>>) {
    // SAFETY: as the caller promises: the offer is valid and ours alone; afterwards its
    // memory holds no value.
    unsafe {
        p.as_ptr().drop_in_place();
        worker::recycle_offer(p.cast(), Layout::new::<DirectOffer<T>>());
    }
}

/// Queues `offer` in `ch`'s queue `q` (under the lock held in `qs`, which it releases) with `b`
/// installed: the prepare step of blocking, for both kinds of direct wait.
#[inline(always)]
fn queue_offer<T>(
    ch: &ChanInner<T>,
    offer: &DirectOffer<T>,
    b: blocker::Blocker,
    mut qs: Guard<'_, T>,
    q: Side,
) {
    offer.rec.install(b);
    qs.side(q)
        .push(Entry::Direct(DirectPtr(NonNull::from(offer))));
    // Both counts, though only `q`'s changed: `q` is not a constant here (a blocking fiber's
    // prepare step captures it), and one count picked by a value cost more than both.
    ch.update_counts(&qs);
    drop(qs);
}

/// Checks that a woken direct wait's partner did deliver into `offer`. A wake-up without a
/// partner breaks `block_current`'s contract; the wait's `drop` then withdraws the offer.
#[inline(always)]
fn assert_delivered<T>(offer: &DirectOffer<T>) {
    if !offer.rec.is_done() {
        panic!("pcml: a blocked send/recv woke before a partner took its offer");
    }
}

/// Takes back the queued direct offer `p` of an abandoned wait (its owner unwinds, or drops its
/// future): withdraws it from `ch`'s queue if it is still there, or else waits until the
/// partner that took it is done with it. Afterwards nobody else touches the offer.
#[cold]
fn abandon_direct<T>(ch: &ChanInner<T>, p: NonNull<DirectOffer<T>>) {
    let mut qs = ch.queues.lock();
    let withdrawn = qs.sendq.withdraw_direct(p) || qs.recvq.withdraw_direct(p);
    ch.update_counts_any(&qs);
    drop(qs);
    // SAFETY: the offer stays allocated until its owner (our caller) is done with it.
    let o = unsafe { p.as_ref() };
    if withdrawn {
        // Nobody took it: the blocker is ours again; dropping it wakes nobody.
        drop(o.rec.withdraw());
    } else {
        // A partner took it: wait until it is done with the offer.
        o.rec.wait_done();
    }
}

/// A direct send/recv blocked in place (`ChanInner::direct`): its offer lives in the blocking
/// call's own frame, which stays put until the wait ends (a fiber's stack never moves, and
/// neither does an OS thread's), so blocking allocates nothing and touches no cache. Declared
/// after the offer, it is dropped before it: dropped without `finish` (the thread unwinds
/// while waiting: a fiber dropped at shutdown), it withdraws the offer if still queued, or
/// waits for the partner that took it to be done with it; the offer's own drop then drops
/// what its slot holds.
struct InPlaceWait<'a, T> {
    ch: &'a ChanInner<T>,
    offer: &'a DirectOffer<T>,
    /// Whether the offer was queued.
    queued: Cell<bool>,
}

impl<'a, T> InPlaceWait<'a, T> {
    fn new(ch: &'a ChanInner<T>, offer: &'a DirectOffer<T>) -> Self {
        InPlaceWait {
            ch,
            offer,
            queued: Cell::new(false),
        }
    }

    /// Queues the offer in `q` (under the lock held in `qs`, which it releases) with `b`
    /// installed: the prepare step of blocking.
    #[inline(always)]
    fn queue(&self, b: blocker::Blocker, qs: Guard<'_, T>, q: Side) {
        queue_offer(self.ch, self.offer, b, qs, q);
        self.queued.set(true);
    }

    /// Woken: the partner delivered. Returns the slot's content.
    #[inline(always)]
    fn finish(self) -> Option<T> {
        assert_delivered(self.offer);
        let offer = self.offer;
        // Nothing left for `drop` to do: the partner is done with the offer.
        std::mem::forget(self);
        // SAFETY: the partner is done with the offer (`is_done`): the slot is ours.
        unsafe { offer.slot.take() }
    }
}

impl<T> Drop for InPlaceWait<'_, T> {
    fn drop(&mut self) {
        if self.queued.get() {
            abandon_direct(self.ch, NonNull::from(self.offer));
        }
    }
}

impl<T> WaitObject for ChanInner<T> {
    /// A direct send or receive ends only when a holder of a reference acts; open while the
    /// waiter's offer is queued (taking it out is winning it: module docs).
    fn wait_for(&self, waiter: &Waiter) -> WaitFor {
        let open = {
            let qs = self.queues.lock();
            let mine = |q: &WaitQueue<T>| {
                q.q.iter().any(|e| match e {
                    // SAFETY: a queued direct offer stays allocated while queued (module
                    // invariants), and we hold the lock, so nobody takes it meanwhile.
                    Entry::Direct(p) => unsafe { p.0.as_ref() }.rec.queued_for(waiter),
                    Entry::Event(_) => false,
                })
            };
            mine(&qs.sendq) || mine(&qs.recvq)
        };
        WaitFor::Refs {
            refs: self.refs(),
            open,
        }
    }
}

impl<T> ChanInner<T> {
    /// The number of references to this channel (handles, halves, events' clones).
    fn refs(&self) -> usize {
        #[cfg(not(pcml_loom))]
        {
            // SAFETY: every `ChanInner` lives in an `Arc` (`new_arc`), and `self` points at
            // its value, as `Arc::into_raw` gives; `ManuallyDrop` leaves the count as it was.
            let arc =
                std::mem::ManuallyDrop::new(unsafe { Arc::from_raw(std::ptr::from_ref(self)) });
            Arc::strong_count(&arc)
        }
        #[cfg(pcml_loom)]
        {
            usize::MAX
        }
    }

    /// Publishes the queue lengths for the polling phase; only while the channel is open (a
    /// closed channel's counts stay `CLOSED`). The commit and blocking paths call it only
    /// after they found a partner or queued an offer, which a closed channel never has.
    #[inline(always)]
    fn update_counts(&self, qs: &Queues<T>) {
        debug_assert!(!qs.closed, "pcml: counts of a closed channel overwritten");
        self.senders.store(qs.sendq.q.len(), Ordering::Relaxed);
        self.receivers.store(qs.recvq.q.len(), Ordering::Relaxed);
    }

    /// [`update_counts`](Self::update_counts) of one queue, the only one an operation changed:
    /// a store where both cost two loads and two stores a commit or a block (4 instructions
    /// a message of a 1-proc fiber ping-pong, callgrind).
    #[inline(always)]
    fn update_count(&self, qs: &Queues<T>, side: Side) {
        debug_assert!(!qs.closed, "pcml: counts of a closed channel overwritten");
        match side {
            Side::Send => self.senders.store(qs.sendq.q.len(), Ordering::Relaxed),
            Side::Recv => self.receivers.store(qs.recvq.q.len(), Ordering::Relaxed),
        }
    }

    /// `update_counts` where the channel may be closed.
    fn update_counts_any(&self, qs: &Queues<T>) {
        if !qs.closed {
            self.update_counts(qs);
        }
    }

    /// A new channel, with the handle counts of one both-ends handle.
    pub(crate) fn new_arc() -> Arc<Self> {
        Arc::new(ChanInner {
            queues: SpinLock::new(Queues {
                sendq: WaitQueue::new(),
                recvq: WaitQueue::new(),
                closed: false,
            }),
            senders: AtomicUsize::new(0),
            receivers: AtomicUsize::new(0),
            handles: Handles::new(),
        })
    }

    /// Counts one more handle of kind `k`.
    pub(crate) fn add_handle(&self, k: Kind) {
        self.handles.add(k);
    }

    /// Forgets one handle of kind `k`, closing the channel if that was the last one that
    /// kept it open.
    pub(crate) fn drop_handle(&self, k: Kind) {
        if self.handles.drop(k) {
            self.close();
        }
    }

    /// Closes the channel: nothing will be queued on it any more, and every queued offer is
    /// completed with the closed result (a blocked receiver gets nothing, a blocked sender
    /// its message back). Whether this call closed it.
    pub(crate) fn close(&self) -> bool {
        let mut qs = self.queues.lock();
        if qs.closed {
            return false;
        }
        qs.closed = true;
        let sendq = qs.sendq.q.drain();
        let recvq = qs.recvq.q.drain();
        self.senders.store(CLOSED, Ordering::Relaxed);
        self.receivers.store(CLOSED, Ordering::Relaxed);
        drop(qs);
        // Out of the queues under the lock, the offers are ours to complete (as a partner's
        // in `commit`), with their slots left as they are.
        for e in sendq.into_iter().chain(recvq) {
            match e {
                Entry::Direct(p) => finish_direct::<T, false>(p, |_| {}),
                Entry::Event(o) => {
                    if let Some(commit) = o.rec.synch_spinning_as(o.branch) {
                        commit.publish();
                    }
                    // Else dead: its sync completed elsewhere.
                }
            }
        }
        true
    }

    /// Whether the channel is closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.senders.load(Ordering::Relaxed) & CLOSED != 0
    }
}

impl<T: Send + 'static> ChanInner<T> {
    /// A send that does not wait: the polling phase, then the commit phase.
    pub(crate) fn try_send(&self, msg: T) -> Result<(), TrySendError<T>> {
        let r = if self.poll_send() {
            self.do_send(msg)
        } else {
            Err(TrySendError::Full(msg))
        };
        worker::consume_budget();
        r
    }

    /// A receive that does not wait: the polling phase, then the commit phase.
    pub(crate) fn try_recv(&self) -> Result<T, TryRecvError> {
        let r = if self.poll_recv() {
            self.do_recv()
        } else {
            Err(TryRecvError::Empty)
        };
        worker::consume_budget();
        r
    }

    /// Polling phase of a send: a receiver is queued, or the channel is closed (`CLOSED`).
    fn poll_send(&self) -> bool {
        self.receivers.load(Ordering::Relaxed) > 0
    }

    /// Polling phase of a receive: a sender is queued, or the channel is closed (`CLOSED`).
    fn poll_recv(&self) -> bool {
        self.senders.load(Ordering::Relaxed) > 0
    }

    /// Commit phase (Figure 13), under the lock held in `qs`: wins the first live offer of
    /// queue `q`, releases the lock, lets `deliver` fill or empty the offer's slot, and
    /// publishes (wakes the offer's owner). Gives the lock back if `q` has no live offer, with
    /// `q`'s count published if dead offers were dropped (the other queue is untouched).
    ///
    /// Always inline: out of line (which the compiler chose once `direct` was inlined into
    /// user loops) it cost a one-proc ping-pong 79 more instructions and 13% more cycles a
    /// message.
    ///
    /// With `CONSUME`, the caller's completed operation is then counted against its thread's
    /// budget (`worker::consume_budget`; see `DirectRecord::finish_wake`).
    #[inline(always)]
    fn commit<'g, const CONSUME: bool>(
        &self,
        mut qs: Guard<'g, T>,
        q: Side,
        deliver: impl FnOnce(&Slot<T>),
    ) -> Result<(), Guard<'g, T>> {
        if qs.side(q).q.is_empty() {
            // Nothing dropped: the counts stand (and a closed channel's queues are empty).
            return Err(qs);
        }
        loop {
            let Some(e) = qs.side(q).pop_live() else {
                // Only dead offers were queued, and they are gone.
                self.update_count(&qs, q);
                return Err(qs);
            };
            match e {
                Entry::Direct(p) => {
                    self.update_count(&qs, q);
                    drop(qs);
                    finish_direct::<T, CONSUME>(p, deliver);
                    return Ok(());
                }
                Entry::Event(o) => {
                    if let Some(commit) = o.rec.synch_spinning_as(o.branch) {
                        self.update_count(&qs, q);
                        drop(qs);
                        deliver(&o.slot);
                        commit.publish();
                        if CONSUME {
                            worker::consume_budget();
                        }
                        return Ok(());
                    }
                    // Dead: it is out of the queue; try the next.
                }
            }
        }
    }

    /// Commit phase of a send event or `try_send`: give `msg` to a blocked receiver, if any.
    fn do_send(&self, msg: T) -> Result<(), TrySendError<T>> {
        let mut msg = Some(msg);
        let qs = self.queues.lock();
        // SAFETY (in `deliver`): `commit` hands over a slot it won the right to.
        let r = self.commit::<false>(qs, Side::Recv, |slot| unsafe {
            slot.put(msg.take().expect("pcml: message delivered twice"))
        });
        match r {
            Ok(()) => Ok(()),
            Err(qs) => {
                self.update_counts_any(&qs);
                let msg = msg.expect("pcml: message lost by a failed send");
                Err(if qs.closed {
                    TrySendError::Disconnected(msg)
                } else {
                    TrySendError::Full(msg)
                })
            }
        }
    }

    /// Commit phase of a receive event or `try_recv`: take a blocked sender's message, if any.
    fn do_recv(&self) -> Result<T, TryRecvError> {
        let mut got = None;
        let qs = self.queues.lock();
        // SAFETY (in `deliver`): `commit` hands over a slot it won the right to.
        let r = self.commit::<false>(qs, Side::Send, |slot| got = unsafe { slot.take() });
        match r {
            Ok(()) => Ok(got.expect("pcml: a send offer without a message")),
            Err(qs) => {
                self.update_counts_any(&qs);
                Err(if qs.closed {
                    TryRecvError::Disconnected
                } else {
                    TryRecvError::Empty
                })
            }
        }
    }

    /// Blocking phase of a send event (Figure 14): `offer` holds the message and our record.
    fn block_send(&self, offer: &Arc<Offer<T>>) -> BlockOn<()> {
        // SAFETY (in `deliver`): our offer is unpublished, so its slot is ours; the partner's
        // slot is handed over by `block_with`, which won it.
        self.block_with(offer, Side::Recv, Side::Send, |slot| unsafe {
            slot.put(offer.slot.take().expect("pcml: send offer without message"))
        })
    }

    /// Blocking phase of a receive event (Figure 14, mirrored): `offer` has an empty slot.
    fn block_recv(&self, offer: &Arc<Offer<T>>) -> BlockOn<T> {
        let mut got = None;
        // SAFETY (in `deliver`): the partner's slot is handed over by `block_with`.
        let r = self.block_with(offer, Side::Send, Side::Recv, |slot| {
            got = unsafe { slot.take() }
        });
        match r {
            BlockOn::Committed(()) => {
                BlockOn::Committed(got.expect("pcml: a send offer without a message"))
            }
            BlockOn::Waiting => BlockOn::Waiting,
            BlockOn::Synched => BlockOn::Synched,
            BlockOn::Closed => BlockOn::Closed,
        }
    }

    /// Figure 14 for an `Event` sync's `offer`: under the lock, look in `theirs` for a live
    /// offer of another sync and match it (then `deliver` into its slot, after unlocking);
    /// finding none, queue `offer` in `ours`.
    fn block_with(
        &self,
        offer: &Arc<Offer<T>>,
        theirs: Side,
        ours: Side,
        deliver: impl FnOnce(&Slot<T>),
    ) -> BlockOn<()> {
        let me = &*offer.rec;
        let mut qs = self.queues.lock();
        loop {
            let Some((i, e)) = qs.side(theirs).take_match(me) else {
                if qs.closed {
                    // Nothing is queued on a closed channel: our sync ends with the closed
                    // result, if it is still ours to end.
                    return match me.synch_self() {
                        SelfSynch::Won => BlockOn::Closed,
                        SelfSynch::AlreadySynched => BlockOn::Synched,
                    };
                }
                qs.side(ours).push(Entry::Event(offer.clone()));
                self.update_counts(&qs);
                return BlockOn::Waiting;
            };
            let e = match e {
                // A direct offer is ours once taken out of the queue: we need only complete
                // our own sync (Figure 9 with a partner nobody else can reach).
                Entry::Direct(p) => match me.synch_self() {
                    // Our sync is ours (Waiting -> Synched): deliver to the direct offer.
                    SelfSynch::Won => {
                        self.update_counts(&qs);
                        drop(qs);
                        finish_direct::<T, false>(p, deliver);
                        return BlockOn::Committed(());
                    }
                    // A partner completed our sync through an earlier offer: give it back.
                    SelfSynch::AlreadySynched => Entry::Direct(p),
                },
                Entry::Event(o) => {
                    match me.try_match(&o.rec, o.branch) {
                        Match::Won(commit) => {
                            self.update_counts(&qs);
                            drop(qs);
                            deliver(&o.slot);
                            commit.publish();
                            return BlockOn::Committed(());
                        }
                        // Dead partner, already out of the queue: look again.
                        Match::PartnerGone => continue,
                        Match::SelfSynched => {}
                    }
                    Entry::Event(o)
                }
            };
            // Someone completed our sync through another offer: put the partner back where it
            // was (the paper's `undequeue`) and stop.
            qs.side(theirs).q.insert(i, e);
            self.update_counts(&qs);
            return BlockOn::Synched;
        }
    }

    /// A direct send or receive: the commit phase, then, with no partner, the blocking phase
    /// under the same lock acquisition. Delivery swaps the partner's slot with `msg` (a send's
    /// message goes in, a receive's message comes out); returns what `msg` holds afterwards,
    /// or after a wait what our own offer's slot holds (the received message).
    ///
    /// Always inline, with `send` and `recv`, into the caller's code, for two reasons: the
    /// queue selectors become constants instead of values to test; and a
    /// fiber that blocks here suspends and later resumes with no call frame of ours between
    /// its own code and the switch. A frame in between makes the return after each resumption
    /// (and the switch's own return to the worker) mispredict, since the processor's return
    /// stack was filled on the other stack: two mispredicted returns a message, about a third
    /// of a one-proc ping-pong's cycles (156 against 114 cycles a message, `examples/pingpong1`).
    #[inline(always)]
    fn direct(
        &self,
        theirs: Side,
        ours: Side,
        mut msg: Option<T>,
        what: &str,
        handle: usize,
    ) -> Option<T> {
        let qs = self.queues.lock();
        // SAFETY (in `deliver`): `commit` hands over a slot it won the right to.
        // Committed, the operation counts against the thread's budget (`consume_budget`).
        let qs = match self.commit::<true>(qs, theirs, |slot| unsafe { slot.swap(&mut msg) }) {
            Ok(()) => return msg,
            Err(qs) => qs,
        };
        if qs.closed {
            // Nothing is queued on a closed channel: a send keeps its message, a receive
            // gets none.
            return msg;
        }
        // Blocking phase with the lock still held: the offer is queued, with its blocker
        // installed, by `block_current`'s prepare step, which releases the lock. If the caller
        // cannot block, `block_current` drops the prepare step (releasing the lock) and
        // panics before anything was queued.
        let offer = DirectOffer {
            rec: DirectRecord::new(),
            slot: Slot::new(msg),
        };
        let wait = InPlaceWait::new(self, &offer);
        // The prepare step inline in the fiber's path (the compiler's choice left it out of
        // line once the queue's push was a ring's: a call and six saved registers a block).
        blocker::block_current_through(
            what,
            self,
            handle,
            #[inline(always)]
            |b| wait.queue(b, qs, ours),
        );
        wait.finish()
    }
}

/// Delivers into the direct offer `p`, which we took out of its queue (so it is ours to
/// deliver to), marks it done and wakes its owner; with `CONSUME`, then counts the caller's
/// operation against its budget (`DirectRecord::finish_wake`).
///
/// Always inline: the compiler kept it out of line under the commit phase of a send or
/// receive, an extra call a message (callgrind, `examples/taskpp`: 1,468 against 1,446
/// instructions a round trip inline; `examples/pingpong1`: 397 against 392 a message; the
/// examples' code grows by under 4 KiB).
#[inline(always)]
fn finish_direct<T, const CONSUME: bool>(p: DirectPtr<T>, deliver: impl FnOnce(&Slot<T>)) {
    // SAFETY: a queued direct offer stays allocated until its owner sees it done or withdraws
    // it (module invariants); we took it out of the queue, so it cannot be withdrawn, and it
    // is not done before our `finish` below, after which we do not touch it.
    let o = unsafe { p.0.as_ref() };
    deliver(&o.slot);
    o.rec.finish_wake::<CONSUME>();
}

/// An async direct sync's queued offer: a field of its event, reaching the channel through
/// the event's own reference count.
type AsyncWait<T> = DirectWait<T, ChanRef<T>>;

/// The channel of an [`AsyncWait`]: a pointer to the `ChanInner` that the wait's event keeps
/// alive in its `ch` field. The wait is the event's `direct` field, declared before `ch` so it
/// is dropped first, and is taken out of it only to be finished while the event still holds
/// `ch`; so the pointee outlives every use. (Saves a reference count increment and decrement
/// per async wait.)
struct ChanRef<T>(NonNull<ChanInner<T>>);

impl<T> ChanRef<T> {
    /// A pointer to `ch`'s channel, to be used only while `ch` is alive (type docs).
    fn new(ch: &Arc<ChanInner<T>>) -> Self {
        ChanRef(NonNull::from(&**ch))
    }
}

impl<T> Deref for ChanRef<T> {
    type Target = ChanInner<T>;

    fn deref(&self) -> &ChanInner<T> {
        // SAFETY: the event that holds this wait keeps the channel alive (type docs).
        unsafe { self.0.as_ref() }
    }
}

// SAFETY: a `ChanRef` is a shared reference to a `ChanInner<T>`, which is `Sync` when
// `T: Send` (its queues are behind a lock, its counters atomic).
unsafe impl<T: Send> Send for ChanRef<T> {}

/// An async direct send or receive (a `.await` of a one-branch channel event), polled with
/// `cx`. The first poll is the commit phase and, with no partner, the blocking phase under the
/// same lock acquisition, as in `ChanInner::direct`, with `cx`'s waker as the offer's blocker;
/// `wait` then owns the queued offer. Later polls return the delivered result once the
/// partner is done, or install the new waker while the offer is still queued. Delivery swaps
/// the partner's slot with `msg`; `Ready` holds what `msg` holds afterwards, or our own
/// offer's slot after a wait (the received message).
///
/// Always inline: the queue selectors then become constants (callgrind, `examples/taskpp`:
/// out of line under an inline event's `.await` it cost 2,179 instructions a round trip
/// against 2,070 inline).
#[inline(always)]
fn poll_direct<T: Send + 'static, C: Deref<Target = ChanInner<T>>>(
    ch: &ChanInner<T>,
    handle: impl FnOnce() -> C,
    wait: &mut Option<DirectWait<T, C>>,
    theirs: Side,
    ours: Side,
    msg: &mut Option<T>,
    cx: &mut Context<'_>,
) -> Poll<Option<T>> {
    if let Some(w) = wait {
        if !w.offer().rec.is_done() {
            let mut qs = ch.queues.lock();
            if qs.side(ours).holds_direct(w.offer) {
                // Still queued, so nobody took it: the blocker is still ours to replace (a
                // task moved to another executor thread, or a spurious poll). The old one is
                // dropped after unlocking: a waker's drop is foreign code.
                let old = w
                    .offer()
                    .rec
                    .replace_blocker(blocker::Blocker::from_waker(cx.waker().clone()));
                drop(qs);
                drop(old);
                return Poll::Pending;
            }
            drop(qs);
            // A partner took it out of the queue and is delivering: a few instructions.
            w.offer().rec.wait_done();
        }
        let w = wait.take().expect("pcml: a direct wait vanished");
        return Poll::Ready(w.finish());
    }
    let qs = ch.queues.lock();
    // SAFETY (in `deliver`): `commit` hands over a slot it won the right to.
    let qs = match ch.commit::<false>(qs, theirs, |slot| unsafe { slot.swap(msg) }) {
        Ok(()) => return Poll::Ready(msg.take()),
        Err(qs) => qs,
    };
    if qs.closed {
        // As in `ChanInner::direct`: a send keeps its message, a receive gets none.
        return Poll::Ready(msg.take());
    }
    let b = blocker::Blocker::from_waker(cx.waker().clone());
    *wait = Some(DirectWait::queue(handle(), msg.take(), b, qs, ours));
    Poll::Pending
}

/// The base event of [`Chan::send_evt`] (mode [`Plain`]) and [`Sender::send_evt`]
/// ([`Checked`]).
pub(crate) struct SendEvt<T, M> {
    /// Our queued offer on the async direct path (`poll_direct`), if one is queued. Declared
    /// before `ch`, which it points into, so it is dropped first.
    direct: Option<AsyncWait<T>>,
    ch: Arc<ChanInner<T>>,
    /// The message until it is offered or delivered.
    msg: Option<T>,
    /// Our published offer, if `block` published one.
    offer: Option<Arc<Offer<T>>>,
    /// Where the message goes if the event is dropped unsent (`Sender::send_timeout`).
    back: Option<Back<T>>,
    mode: PhantomData<M>,
}

/// Where a send event that did not send leaves its message when dropped.
pub(crate) type Back<T> = std::sync::Arc<std::sync::Mutex<Option<T>>>;

impl<T: Send + 'static, M: Mode> SendEvt<T, M> {
    pub(crate) fn new(ch: &Arc<ChanInner<T>>, msg: T) -> Self {
        SendEvt {
            ch: ch.clone(),
            msg: Some(msg),
            offer: None,
            direct: None,
            back: None,
            mode: PhantomData,
        }
    }

    /// A send event that leaves its message in `back` if it is dropped unsent.
    pub(crate) fn with_back(ch: &Arc<ChanInner<T>>, msg: T, back: Back<T>) -> Self {
        let mut e = Self::new(ch, msg);
        e.back = Some(back);
        e
    }
}

impl<T, M> Drop for SendEvt<T, M> {
    fn drop(&mut self) {
        if let (Some(back), Some(m)) = (&self.back, self.msg.take()) {
            *back.lock().unwrap_or_else(|e| e.into_inner()) = Some(m);
        }
    }
}

/// A send event's blocking one-branch sync ([`SendEvt`]'s and [`InlineSend`]'s).
#[inline(always)]
fn send_sync_direct<T: Send + 'static, M: Mode>(
    ch: &ChanInner<T>,
    msg: &mut Option<T>,
) -> M::Sent<T> {
    let msg = msg.take().expect("pcml: send event reused");
    M::sent(ch.direct(Side::Recv, Side::Send, Some(msg), "sync", 0))
}

/// A send event's async one-branch sync ([`SendEvt`]'s and [`InlineSend`]'s): `poll_direct`
/// with the event's channel, queued offer and message.
#[inline(always)]
fn send_poll_direct<T: Send + 'static, M: Mode>(
    ch: &Arc<ChanInner<T>>,
    direct: &mut Option<AsyncWait<T>>,
    msg: &mut Option<T>,
    cx: &mut Context<'_>,
) -> Poll<M::Sent<T>> {
    poll_direct(
        ch,
        || ChanRef::new(ch),
        direct,
        Side::Recv,
        Side::Send,
        msg,
        cx,
    )
    .map(M::sent)
}

/// A receive event's blocking one-branch sync ([`RecvEvt`]'s and [`InlineRecv`]'s).
#[inline(always)]
fn recv_sync_direct<T: Send + 'static, M: Mode>(ch: &ChanInner<T>) -> M::Recv<T> {
    M::recv(ch.direct(Side::Send, Side::Recv, None, "sync", 0))
}

/// A receive event's async one-branch sync ([`RecvEvt`]'s and [`InlineRecv`]'s).
#[inline(always)]
fn recv_poll_direct<T: Send + 'static, M: Mode>(
    ch: &Arc<ChanInner<T>>,
    direct: &mut Option<AsyncWait<T>>,
    cx: &mut Context<'_>,
) -> Poll<M::Recv<T>> {
    let mut none = None;
    poll_direct(
        ch,
        || ChanRef::new(ch),
        direct,
        Side::Send,
        Side::Recv,
        &mut none,
        cx,
    )
    .map(M::recv)
}

impl<T: Send + 'static, M: Mode> DirectBase for SendEvt<T, M> {
    fn sync_direct(&mut self) -> M::Sent<T> {
        send_sync_direct::<T, M>(&self.ch, &mut self.msg)
    }

    fn poll_direct(&mut self, cx: &mut Context<'_>) -> Poll<M::Sent<T>> {
        send_poll_direct::<T, M>(&self.ch, &mut self.direct, &mut self.msg, cx)
    }
}

impl<T: Send + 'static, M: Mode> BaseEvent for SendEvt<T, M> {
    type Output = M::Sent<T>;

    fn poll(&mut self) -> bool {
        self.ch.poll_send()
    }

    fn try_do(&mut self) -> Option<M::Sent<T>> {
        let msg = self.msg.take().expect("pcml: send event reused");
        match self.ch.do_send(msg) {
            Ok(()) => Some(M::sent(None)),
            Err(TrySendError::Full(msg)) => {
                self.msg = Some(msg);
                None
            }
            Err(TrySendError::Disconnected(msg)) => Some(M::sent(Some(msg))),
        }
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<M::Sent<T>> {
        let offer = Offer::of(me, self.msg.take());
        match self.ch.block_send(&offer) {
            BlockOn::Waiting => {
                self.offer = Some(offer);
                Blocked::Waiting
            }
            BlockOn::Committed(()) => Blocked::Committed(M::sent(None)),
            BlockOn::Synched => {
                // SAFETY: the offer was never published.
                self.msg = unsafe { offer.slot.take() };
                Blocked::Synched
            }
            // SAFETY: the offer was never published.
            BlockOn::Closed => Blocked::Committed(M::sent(unsafe { offer.slot.take() })),
        }
    }

    fn complete(&mut self) -> M::Sent<T> {
        // A receiver took the message out of our offer, or the channel closed and left it.
        let o = self
            .offer
            .take()
            .expect("pcml: send completed without an offer");
        // SAFETY: our sync is settled through this offer and its partner published: the slot
        // is ours again.
        M::sent(unsafe { o.slot.take() })
    }

    fn cancel(&mut self) {
        if let Some(o) = self.offer.take() {
            // SAFETY: our sync is settled and this offer lost: no partner touches its slot.
            // The message stays with the event (dropped with it, or given back by `Drop`).
            self.msg = unsafe { o.slot.take() };
        }
    }

    fn describe(&self) -> String {
        crate::sched::dump::on_object("Chan::send_evt", Arc::as_ptr(&self.ch))
    }
}

/// The base event of [`Chan::recv_evt`] (mode [`Plain`]) and [`Receiver::recv_evt`]
/// ([`Checked`]).
pub(crate) struct RecvEvt<T, M> {
    /// Our queued offer on the async direct path (`poll_direct`), if one is queued. Declared
    /// before `ch`, which it points into, so it is dropped first.
    direct: Option<AsyncWait<T>>,
    ch: Arc<ChanInner<T>>,
    /// Our published offer, if `block` published one.
    offer: Option<Arc<Offer<T>>>,
    mode: PhantomData<M>,
}

impl<T: Send + 'static, M: Mode> DirectBase for RecvEvt<T, M> {
    fn sync_direct(&mut self) -> M::Recv<T> {
        recv_sync_direct::<T, M>(&self.ch)
    }

    fn poll_direct(&mut self, cx: &mut Context<'_>) -> Poll<M::Recv<T>> {
        recv_poll_direct::<T, M>(&self.ch, &mut self.direct, cx)
    }
}

impl<T: Send + 'static, M: Mode> BaseEvent for RecvEvt<T, M> {
    type Output = M::Recv<T>;

    fn poll(&mut self) -> bool {
        self.ch.poll_recv()
    }

    fn try_do(&mut self) -> Option<M::Recv<T>> {
        match self.ch.do_recv() {
            Ok(v) => Some(M::recv(Some(v))),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => Some(M::recv(None)),
        }
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<M::Recv<T>> {
        let offer = Offer::of(me, None);
        match self.ch.block_recv(&offer) {
            BlockOn::Waiting => {
                self.offer = Some(offer);
                Blocked::Waiting
            }
            BlockOn::Committed(v) => Blocked::Committed(M::recv(Some(v))),
            BlockOn::Synched => Blocked::Synched,
            BlockOn::Closed => Blocked::Committed(M::recv(None)),
        }
    }

    fn complete(&mut self) -> M::Recv<T> {
        let o = self
            .offer
            .take()
            .expect("pcml: receive completed without an offer");
        // SAFETY: the sender (or the closer, who leaves the slot empty) published after
        // delivering, and we saw the publication.
        M::recv(unsafe { o.slot.take() })
    }

    fn cancel(&mut self) {
        // An empty slot: nothing to reclaim; the dead offer is swept.
        self.offer = None;
    }

    fn describe(&self) -> String {
        crate::sched::dump::on_object("Chan::recv_evt", Arc::as_ptr(&self.ch))
    }
}

/// The inline form of [`SendEvt`] (no box, see `event::inline`), for a send event with no
/// message to give back: the channel and the message, and on the async direct path its
/// queued offer. Anything but a one-branch sync turns it into a boxed `SendEvt`.
pub(crate) struct InlineSend<T, M> {
    /// As `SendEvt::direct`; declared before `ch`, which it points into.
    direct: Option<AsyncWait<T>>,
    ch: Arc<ChanInner<T>>,
    msg: Option<T>,
    mode: PhantomData<M>,
}

impl<T: Send + 'static, M: Mode> InlineSend<T, M> {
    pub(crate) fn new(ch: &Arc<ChanInner<T>>, msg: T) -> Self {
        InlineSend {
            direct: None,
            ch: ch.clone(),
            msg: Some(msg),
            mode: PhantomData,
        }
    }
}

impl<T: Send + 'static, M: Mode> InlineBase for InlineSend<T, M> {
    type Output = M::Sent<T>;

    fn into_branch(self) -> Box<dyn Branch<M::Sent<T>>> {
        let InlineSend {
            direct, ch, msg, ..
        } = self;
        debug_assert!(
            direct.is_none(),
            "pcml: a polled inline send turned into a branch"
        );
        direct_branch(SendEvt::<T, M> {
            direct: None,
            ch,
            msg,
            offer: None,
            back: None,
            mode: PhantomData,
        })
    }

    fn sync_direct(mut self) -> M::Sent<T> {
        send_sync_direct::<T, M>(&self.ch, &mut self.msg)
    }

    #[inline]
    fn poll_direct(&mut self, cx: &mut Context<'_>) -> Poll<M::Sent<T>> {
        send_poll_direct::<T, M>(&self.ch, &mut self.direct, &mut self.msg, cx)
    }
}

/// The inline form of [`RecvEvt`], as [`InlineSend`] is of `SendEvt`.
pub(crate) struct InlineRecv<T, M> {
    /// As `RecvEvt::direct`; declared before `ch`, which it points into.
    direct: Option<AsyncWait<T>>,
    ch: Arc<ChanInner<T>>,
    mode: PhantomData<M>,
}

impl<T: Send + 'static, M: Mode> InlineRecv<T, M> {
    pub(crate) fn new(ch: &Arc<ChanInner<T>>) -> Self {
        InlineRecv {
            direct: None,
            ch: ch.clone(),
            mode: PhantomData,
        }
    }
}

impl<T: Send + 'static, M: Mode> InlineBase for InlineRecv<T, M> {
    type Output = M::Recv<T>;

    fn into_branch(self) -> Box<dyn Branch<M::Recv<T>>> {
        let InlineRecv { direct, ch, .. } = self;
        debug_assert!(
            direct.is_none(),
            "pcml: a polled inline receive turned into a branch"
        );
        direct_branch(RecvEvt::<T, M> {
            direct: None,
            ch,
            offer: None,
            mode: PhantomData,
        })
    }

    fn sync_direct(self) -> M::Recv<T> {
        recv_sync_direct::<T, M>(&self.ch)
    }

    #[inline]
    fn poll_direct(&mut self, cx: &mut Context<'_>) -> Poll<M::Recv<T>> {
        recv_poll_direct::<T, M>(&self.ch, &mut self.direct, cx)
    }
}

/// The future of [`Chan::send_async`]: a direct send from async code, borrowing the channel.
///
/// Dropping it while pending withdraws its offer and drops the message (nobody took it); if a
/// receiver took the message just before the drop, the send completed.
///
/// ```
/// use std::future::Future;
/// use std::task::{Context, Waker};
///
/// let ch = pcml::chan::Chan::new();
/// let mut send = Box::pin(ch.send_async(1));
/// assert!(send.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
/// assert_eq!(ch.try_recv(), Some(1));
/// assert!(send.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_ready());
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct SendFuture<'a, T> {
    /// Our queued offer, once a poll queued it (it borrows the channel for `'a`).
    wait: Option<DirectWait<T, &'a ChanInner<T>>>,
    ch: &'a ChanInner<T>,
    /// The message until it is offered or delivered.
    msg: Option<T>,
    done: bool,
}

/// The future of [`Chan::recv_async`]: a direct receive from async code, borrowing the
/// channel.
///
/// Dropping it while pending withdraws its offer; if a sender delivered just before the drop,
/// the message is dropped with it (as in [`Chan::recv_evt`]'s "Cancellation").
///
/// ```
/// use std::future::Future;
/// use std::task::{Context, Poll, Waker};
///
/// let ch = pcml::chan::Chan::new();
/// let mut recv = Box::pin(ch.recv_async());
/// assert!(recv.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
/// assert_eq!(ch.try_send(7), Ok(()));
/// assert_eq!(recv.as_mut().poll(&mut Context::from_waker(Waker::noop())), Poll::Ready(7));
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct RecvFuture<'a, T> {
    /// Our queued offer, once a poll queued it (it borrows the channel for `'a`).
    wait: Option<DirectWait<T, &'a ChanInner<T>>>,
    ch: &'a ChanInner<T>,
    done: bool,
}

// The message is never pinned: the future moves it into an offer or a partner's slot.
impl<T> Unpin for SendFuture<'_, T> {}

impl<T: Send + 'static> fmt::Debug for SendFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SendFuture")
            .field("queued", &self.wait.is_some())
            .field("done", &self.done)
            .finish()
    }
}

impl<T: Send + 'static> fmt::Debug for RecvFuture<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecvFuture")
            .field("queued", &self.wait.is_some())
            .field("done", &self.done)
            .finish()
    }
}

impl<T: Send + 'static> Future for SendFuture<'_, T> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.get_mut().poll_raw(cx).map(Plain::sent)
    }
}

impl<T: Send + 'static> SendFuture<'_, T> {
    /// Polls the send: `Ready(None)` once delivered, `Ready(Some(msg))` on a closed channel.
    pub(crate) fn poll_raw(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self;
        assert!(!this.done, "pcml: SendFuture polled after completion");
        // As a `.await` of an event: a task looping on ready sends yields now and then.
        if this.wait.is_none() && crate::event::sync::async_budget_exhausted() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let ch = this.ch;
        let (theirs, ours) = (Side::Recv, Side::Send);
        match poll_direct(ch, || ch, &mut this.wait, theirs, ours, &mut this.msg, cx) {
            Poll::Ready(left) => {
                this.done = true;
                Poll::Ready(left)
            }
            Poll::Pending => {
                crate::event::sync::async_budget_reset();
                Poll::Pending
            }
        }
    }
}

impl<T: Send + 'static> Future for RecvFuture<'_, T> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        self.get_mut().poll_raw(cx).map(Plain::recv)
    }
}

impl<T: Send + 'static> RecvFuture<'_, T> {
    /// Polls the receive: `Ready(Some(msg))`, or `Ready(None)` on a closed, drained channel.
    pub(crate) fn poll_raw(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        let this = self;
        assert!(!this.done, "pcml: RecvFuture polled after completion");
        // As a `.await` of an event: a task looping on ready receives yields now and then.
        if this.wait.is_none() && crate::event::sync::async_budget_exhausted() {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let ch = this.ch;
        let (theirs, ours) = (Side::Send, Side::Recv);
        let mut none = None;
        match poll_direct(ch, || ch, &mut this.wait, theirs, ours, &mut none, cx) {
            Poll::Ready(got) => {
                this.done = true;
                Poll::Ready(got)
            }
            Poll::Pending => {
                crate::event::sync::async_budget_reset();
                Poll::Pending
            }
        }
    }
}

impl<T: Send + 'static> Chan<T> {
    /// Makes a channel.
    ///
    /// ```
    /// let ch: pcml::chan::Chan<u8> = pcml::chan::Chan::new();
    /// assert_eq!(ch.try_recv(), None);
    /// ```
    pub fn new() -> Self {
        Chan {
            inner: ChanInner::new_arc(),
        }
    }

    /// Sends `msg`, blocking until a receiver takes it.
    ///
    /// # Panics
    /// If it would block inside a pcml async task (use `ch.send_evt(msg).await` there), and
    /// if the channel is closed (a [`Sender`]'s `send` returns the message in an error
    /// instead).
    ///
    /// ```
    /// pcml::run(|| {
    ///     let ch = pcml::chan::Chan::new();
    ///     let rx = ch.clone();
    ///     let h = pcml::spawn(move || rx.recv());
    ///     ch.send(5);
    ///     assert_eq!(h.join().unwrap(), 5);
    /// });
    /// ```
    // Always inline: see `ChanInner::direct`.
    #[inline(always)]
    pub fn send(&self, msg: T) {
        let handle = std::ptr::from_ref(&self.inner).addr();
        let left = self
            .inner
            .direct(Side::Recv, Side::Send, Some(msg), "send", handle);
        Plain::sent(left)
    }

    /// Receives a message, blocking until a sender offers one.
    ///
    /// # Panics
    /// If it would block inside a pcml async task (use `ch.recv_evt().await` there), and if
    /// the channel is closed (a [`Receiver`]'s `recv` returns [`RecvError`] instead).
    ///
    /// ```
    /// pcml::run(|| {
    ///     let ch = pcml::chan::Chan::new();
    ///     let tx = ch.clone();
    ///     pcml::spawn(move || tx.send("hi"));
    ///     assert_eq!(ch.recv(), "hi");
    /// });
    /// ```
    // Always inline: see `ChanInner::direct`.
    #[inline(always)]
    pub fn recv(&self) -> T {
        let handle = std::ptr::from_ref(&self.inner).addr();
        Plain::recv(
            self.inner
                .direct(Side::Send, Side::Recv, None, "recv", handle),
        )
    }

    /// Sends `msg` from async code: the same as `self.send_evt(msg).await`, and cheaper (the
    /// future borrows the channel and allocates nothing per send; about 40% fewer cycles in a
    /// one-proc task ping-pong), but not an event: it cannot be part of a choice. Usable in
    /// pcml tasks and any executor.
    ///
    /// ```
    /// pcml::run(|| {
    ///     let ch = pcml::chan::Chan::new();
    ///     let rx = ch.clone();
    ///     let h = pcml::spawn(move || rx.recv());
    ///     pcml::spawn_task(async move { ch.send_async(3).await }).join().unwrap();
    ///     assert_eq!(h.join().unwrap(), 3);
    /// });
    /// ```
    pub fn send_async(&self, msg: T) -> SendFuture<'_, T> {
        SendFuture {
            wait: None,
            ch: &self.inner,
            msg: Some(msg),
            done: false,
        }
    }

    /// Receives a message from async code: the same as `self.recv_evt().await`, and cheaper
    /// (the future borrows the channel and allocates nothing per receive), but not an event:
    /// it cannot be part of a choice. Usable in pcml tasks and any executor.
    ///
    /// ```
    /// pcml::run(|| {
    ///     let ch = pcml::chan::Chan::new();
    ///     let tx = ch.clone();
    ///     pcml::spawn(move || tx.send("hi"));
    ///     let got = pcml::spawn_task(async move { ch.recv_async().await });
    ///     assert_eq!(got.join().unwrap(), "hi");
    /// });
    /// ```
    pub fn recv_async(&self) -> RecvFuture<'_, T> {
        RecvFuture {
            wait: None,
            ch: &self.inner,
            done: false,
        }
    }

    /// The event of sending `msg` (CML's `sendEvt`).
    ///
    /// ```
    /// use pcml::event::select;
    /// pcml::run(|| {
    ///     let (a, b) = (pcml::chan::Chan::new(), pcml::chan::Chan::<u8>::new());
    ///     let a2 = a.clone();
    ///     let h = pcml::spawn(move || a2.recv());
    ///     select([a.send_evt(1).wrap(|()| "a"), b.send_evt(2).wrap(|()| "b")]);
    ///     assert_eq!(h.join().unwrap(), 1);
    /// });
    /// ```
    ///
    /// # Panics
    /// A sync of it panics if the channel is closed ([`Sender::send_evt`]'s event returns
    /// the message in an error instead).
    pub fn send_evt(&self, msg: T) -> Event<()> {
        Event::from_inline(InlineSend::<T, Plain>::new(&self.inner, msg))
    }

    /// The event of receiving a message (CML's `recvEvt`).
    ///
    /// ```
    /// pcml::run(|| {
    ///     let ch = pcml::chan::Chan::new();
    ///     let tx = ch.clone();
    ///     pcml::spawn(move || tx.send(2));
    ///     assert_eq!(ch.recv_evt().wrap(|x: i32| x * 2).sync(), 4);
    /// });
    /// ```
    ///
    /// # Cancellation
    /// A receive that loses a choice, or whose `.await` is dropped before a sender reached it,
    /// takes nothing. But if the `.await` is dropped just after a sender handed it a message
    /// (the two syncs met: the sender's send has completed and returned), the message is
    /// dropped with the future. It cannot go back to the sender, which has moved on, and the
    /// channel does not put it back in its queue either: that would turn the rendezvous into a
    /// buffer, and a message could then be received after its sender's later messages on other
    /// channels, breaking the causal order a completed send guarantees. Where a message must
    /// not be lost, receive from a [`Mailbox`](crate::mailbox::Mailbox) or a
    /// [`BoundedChan`](crate::bounded::BoundedChan), which give it back.
    ///
    /// ```
    /// use std::future::{Future, IntoFuture};
    /// use std::task::{Context, Waker};
    ///
    /// let ch = pcml::chan::Chan::new();
    /// let mut recv = Box::pin(ch.recv_evt().into_future());
    /// assert!(recv.as_mut().poll(&mut Context::from_waker(Waker::noop())).is_pending());
    /// assert_eq!(ch.try_send(1), Ok(())); // the blocked receive took it: the send is done
    /// drop(recv); // never polled again: the message is dropped with it
    /// assert_eq!(ch.try_recv(), None);
    /// ```
    ///
    /// # Panics
    /// A sync of it panics if the channel is closed: a closed channel's receive event is
    /// enabled, and [`Receiver::recv_evt`]'s carries a [`RecvError`].
    pub fn recv_evt(&self) -> Event<T> {
        Event::from_inline(InlineRecv::<T, Plain>::new(&self.inner))
    }

    /// Sends `msg` only if a receiver is blocked on the channel now; gives it back otherwise
    /// (also when the channel is closed: [`Sender::try_send`] tells the two apart).
    ///
    /// ```
    /// let ch = pcml::chan::Chan::new();
    /// assert_eq!(ch.try_send(1), Err(1));
    /// ```
    pub fn try_send(&self, msg: T) -> Result<(), T> {
        self.inner.try_send(msg).map_err(TrySendError::into_inner)
    }

    /// Receives a message only if a sender is blocked on the channel now (`None` also when
    /// the channel is closed: [`Receiver::try_recv`] tells the two apart).
    ///
    /// ```
    /// let ch: pcml::chan::Chan<i32> = pcml::chan::Chan::new();
    /// assert_eq!(ch.try_recv(), None);
    /// ```
    pub fn try_recv(&self) -> Option<T> {
        self.inner.try_recv().ok()
    }

    /// Closes the channel: from now on sends fail (a blocked sender wakes and gets its
    /// message back) and receives find nothing (a blocked receiver wakes with the closed
    /// result). Whether this call closed it (`false` if it already was).
    ///
    /// A channel with halves also closes when the last `Chan` is gone and so is the last
    /// [`Sender`] or the last [`Receiver`] (see the [module docs](self)).
    ///
    /// ```
    /// let ch = pcml::chan::Chan::<u8>::new();
    /// let rx = ch.receiver();
    /// assert!(ch.close());
    /// assert!(!ch.close());
    /// assert_eq!(rx.recv(), Err(pcml::chan::RecvError));
    /// ```
    pub fn close(&self) -> bool {
        self.inner.close()
    }

    /// Whether the channel is closed.
    ///
    /// ```
    /// let ch = pcml::chan::Chan::<u8>::new();
    /// assert!(!ch.is_closed());
    /// ch.close();
    /// assert!(ch.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.inner.is_closed()
    }

    /// A sending half of this channel: its operations return `Result`s. It keeps the channel
    /// open while it lives, as this handle does.
    ///
    /// ```
    /// let ch = pcml::chan::Chan::new();
    /// let tx = ch.sender();
    /// std::thread::spawn(move || tx.send(1).unwrap());
    /// assert_eq!(ch.recv(), 1);
    /// ```
    pub fn sender(&self) -> Sender<T> {
        self.inner.add_handle(Kind::Sender);
        Sender::from_chan(self.inner.clone())
    }

    /// A receiving half of this channel: its operations return `Result`s.
    ///
    /// ```
    /// let ch = pcml::chan::Chan::new();
    /// let rx = ch.receiver();
    /// let t = std::thread::spawn(move || rx.iter().sum::<i32>());
    /// ch.send(1);
    /// ch.send(2);
    /// drop(ch); // no Chan and no Sender left: the channel closes, the loop ends
    /// assert_eq!(t.join().unwrap(), 3);
    /// ```
    pub fn receiver(&self) -> Receiver<T> {
        self.inner.add_handle(Kind::Receiver);
        Receiver::from_chan(self.inner.clone())
    }

    /// Splits this handle into a sending and a receiving half.
    ///
    /// ```
    /// let (tx, rx) = pcml::chan::Chan::new().split();
    /// std::thread::spawn(move || tx.send("hi").unwrap());
    /// assert_eq!(rx.recv(), Ok("hi"));
    /// ```
    pub fn split(self) -> (Sender<T>, Receiver<T>) {
        let (tx, rx) = (self.sender(), self.receiver());
        drop(self);
        (tx, rx)
    }

    /// The lengths of the waiting queues `(senders, receivers)`, dead offers included: for
    /// tests of the sweep.
    #[doc(hidden)]
    pub fn queue_lens(&self) -> (usize, usize) {
        let qs = self.inner.queues.lock();
        (qs.sendq.q.len(), qs.recvq.q.len())
    }
}

impl<T: Send + 'static> Default for Chan<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for Chan<T> {
    fn clone(&self) -> Self {
        self.inner.add_handle(Kind::Both);
        Chan {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Drop for Chan<T> {
    fn drop(&mut self) {
        self.inner.drop_handle(Kind::Both);
    }
}

impl<T> PartialEq for Chan<T> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl<T> Eq for Chan<T> {}

impl<T> fmt::Debug for Chan<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chan")
            .field(
                "senders",
                &(self.inner.senders.load(Ordering::Relaxed) & !CLOSED),
            )
            .field(
                "receivers",
                &(self.inner.receivers.load(Ordering::Relaxed) & !CLOSED),
            )
            .field("closed", &self.inner.is_closed())
            .finish()
    }
}

#[cfg(all(test, not(pcml_loom)))]
mod layout_tests {
    use super::{Arc, ChanInner};

    /// A channel's state starts a cache line and fills whole lines, so channels used on
    /// different procs never share one (module docs, "A channel on cache lines of its own").
    #[test]
    fn channel_state_is_on_lines_of_its_own() {
        assert_eq!(std::mem::align_of::<ChanInner<u64>>(), 64);
        assert_eq!(std::mem::size_of::<ChanInner<u64>>() % 64, 0);
        let chans: Vec<_> = (0..8).map(|_| ChanInner::<u64>::new_arc()).collect();
        for ch in &chans {
            assert_eq!(Arc::as_ptr(ch) as usize % 64, 0);
        }
    }
}
