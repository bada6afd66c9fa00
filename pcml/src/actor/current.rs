//! `self_pid`: which actor is running, without its context at hand.
//!
//! Async actors: the actor's root future sets a thread-local slot around each poll of its body
//! (tasks migrate between procs, but a poll runs on one OS thread). Fiber actors: a fiber
//! never migrates once started (ARCHITECTURE.md, "Invariants"), so the table of running fiber actors is
//! a thread-local vector of the OS thread the fiber lives on, indexed by the fiber's slot on
//! its proc (what the scheduler calls it by), each entry naming the pcml thread it belongs to;
//! the fiber enters itself when its body starts and leaves when it ends. The entry holds the
//! actor's `Life` (its record), so entering takes no reference count of its own, and no
//! hashing: an indexed store each way.
//!
//! # Invariants
//! - The slot holds the actor being polled on this OS thread during its poll and is restored
//!   afterwards (polls nest: an actor's poll never polls another actor's root).
//! - A fiber actor's entry is in the table of its own OS thread, at its fiber's slot, from its
//!   start to its end (a guard takes it out, also when the fiber unwinds). A thread run inline
//!   on another fiber's stack shares that fiber's slot: its entry shadows the outer one until
//!   it ends (the guard restores it; inline runs nest), and `self_pid` checks the entry's
//!   thread id, so a plain thread run inline on an actor's fiber is not taken for that actor.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;

use super::record::{PeerRef, RecRef};
use super::{Life, Pid};
use crate::sched::ThreadId;
use crate::sched::worker::{self, Current};

thread_local! {
    /// The async actor being polled on this OS thread: a pointer to the `PeerRef` its root
    /// future holds, or null. Non-null only while a `Polling` guard borrowing it lives.
    static POLLING: Cell<*const PeerRef> = const { Cell::new(std::ptr::null()) };
    /// The fiber actors living on this OS thread, by fiber slot: the actor's thread id and its
    /// record (the reference its `Life` held).
    static FIBERS: RefCell<Vec<Option<Entry>>> = const { RefCell::new(Vec::new()) };
}

/// A fiber actor's entry: its pcml thread and its record.
type Entry = (ThreadId, PeerRef);

/// A supervisor starting a child, the actors spawned meanwhile, and, if the child's spec asks
/// for it ([`ChildSpec::with_last_message`](super::ChildSpec::with_last_message)), the message
/// type whose actors keep their last message and how to format one.
type Linking = Option<(PeerRef, Vec<PeerRef>, Option<KeepLast>)>;

/// A message type, and the function that writes a message of it for a crash report.
pub(super) type KeepLast = (std::any::TypeId, fn(&dyn Any, &mut String));

thread_local! {
    /// While a supervisor starts a child: the supervisor, and the actors spawned meanwhile on
    /// this OS thread, each linked to it before it starts.
    static LINKING: RefCell<Linking> = const { RefCell::new(None) };
    /// Whether `LINKING` is set: what every spawn asks, cheaply (a cell with no destructor to
    /// register, where `LINKING` has one).
    static LINKING_ON: Cell<bool> = const { Cell::new(false) };
}

/// Runs `start` with every actor it spawns (on this OS thread) linked to `sup` before the
/// actor starts, and, with `keep_last`, keeping its last message if it takes messages of that
/// type; returns its result and those actors.
pub(super) fn linking_spawns<R>(
    sup: PeerRef,
    keep_last: Option<KeepLast>,
    start: impl FnOnce() -> R,
) -> (R, Vec<PeerRef>) {
    struct Reset(Linking);
    impl Drop for Reset {
        fn drop(&mut self) {
            let prev = self.0.take();
            let _ = LINKING_ON.try_with(|on| on.set(prev.is_some()));
            let _ = LINKING.try_with(|l| *l.borrow_mut() = prev);
        }
    }
    let reset = Reset(LINKING.with(|l| l.replace(Some((sup, Vec::new(), keep_last)))));
    LINKING_ON.with(|on| on.set(true));
    let r = start();
    let spawned = LINKING
        .with(|l| l.borrow_mut().as_mut().map(|(_, v, _)| std::mem::take(v)))
        .unwrap_or_default();
    drop(reset);
    (r, spawned)
}

/// Called for every new actor before it starts: links it to the supervisor starting a child
/// on this thread, if any. Returns whether the actor keeps its last message (the child's spec
/// asked for it, and the actor takes messages of the spec's type): its record is then set up
/// for it, and its context must note every message it receives.
#[inline]
pub(super) fn on_new_actor<M: Send + 'static>(rec: &RecRef<M>) -> bool {
    if !LINKING_ON.with(Cell::get) {
        return false;
    }
    LINKING.with(|l| {
        let mut l = l.borrow_mut();
        let Some((sup, spawned, keep_last)) = l.as_mut() else {
            return false;
        };
        let new: PeerRef = rec.to_peer();
        // Both alive: the new actor has not started, the supervisor is running this.
        new.add_link(sup.clone());
        sup.add_link(new.clone());
        spawned.push(new);
        match keep_last {
            Some((ty, fmt)) if *ty == std::any::TypeId::of::<M>() => {
                rec.lock().ext().last_message = Some((*fmt, std::sync::Arc::default()));
                true
            }
            _ => false,
        }
    })
}

/// Marks an async actor as the one being polled, until dropped (which restores the previous
/// value). It borrows the actor's `PeerRef` for its whole life, so the pointer in `POLLING` is
/// valid while it is set. No reference count is touched per poll: this runs around every poll
/// of every async actor.
pub(super) struct Polling<'a> {
    prev: *const PeerRef,
    _me: PhantomData<&'a PeerRef>,
}

impl<'a> Polling<'a> {
    pub(super) fn enter(me: &'a PeerRef) -> Self {
        Polling {
            prev: POLLING.with(|p| p.replace(me)),
            _me: PhantomData,
        }
    }
}

impl Drop for Polling<'_> {
    fn drop(&mut self) {
        let _ = POLLING.try_with(|p| p.set(self.prev));
    }
}

/// The async actor being polled on this OS thread, if any.
fn polling() -> Option<PeerRef> {
    let p = POLLING.with(|p| p.get());
    // SAFETY: a non-null pointer was set by a `Polling` guard that is still alive on this
    // thread (guards restore the previous value when dropped, also when unwinding, in LIFO
    // order since they are stack values), and the guard borrows the reference it points to, so
    // the reference is alive and unmoved.
    (!p.is_null()).then(|| unsafe { (*p).clone() })
}

/// The fiber actor that fiber slot `slot` of the calling proc runs, for a dump: its id and
/// its registered names (`<0.12.0> "name"`).
/// Gives the actor's thread too: a thread run inline on the slot's fiber may be the actor
/// instead of the fiber itself.
pub(crate) fn fiber_actor(slot: usize) -> Option<(ThreadId, String)> {
    let (thread, peer) = FIBERS
        .try_with(|t| t.borrow().get(slot).and_then(|e| e.clone()))
        .ok()
        .flatten()?;
    Some((thread, describe(peer.peer_id(), &peer.names())))
}

/// The async actor numbered `id` ([`ActorId::as_u64`](super::ActorId::as_u64)), for a dump
/// of its task: its id and the names the registry holds for it.
pub(crate) fn task_actor(id: u64) -> Option<String> {
    let id = super::ActorId(std::num::NonZeroU64::new(id)?);
    Some(describe(id, &super::registry::names_of(id)))
}

fn describe(id: super::ActorId, names: &[std::sync::Arc<str>]) -> String {
    let mut s = id.to_string();
    for n in names {
        s.push_str(&format!(" {n:?}"));
    }
    s
}

/// A fiber actor's entry in its OS thread's table, from its start to its end. It holds the
/// actor's [`Life`] there and gives it back: to [`end`](Self::end) the actor, or to drop it
/// (which closes the mailbox) if the fiber unwinds at shutdown.
pub(super) struct FiberActor {
    /// The fiber's slot, while the life is in the table.
    slot: Option<usize>,
    /// The entry this one shadows in the slot (an actor whose fiber runs this one inline).
    prev: Option<Entry>,
    /// The life, when it is not in the table (not on a fiber: no table to be found in).
    life: Option<Life>,
}

/// Makes room in a [`FIBERS`] table for slot `slot`. Out of line: the table grows to the
/// proc's most fibers once, and the common path stays small enough to inline.
#[cold]
#[inline(never)]
fn grow(t: &mut Vec<Option<Entry>>, slot: usize) {
    t.resize_with(slot + 1, || None);
}

impl FiberActor {
    /// Enters the calling fiber's actor, whose life is `life`.
    pub(super) fn enter(mut life: Life) -> Self {
        let Some(Current::Fiber { slot, id, .. }) = worker::current() else {
            return FiberActor {
                slot: None,
                prev: None,
                life: Some(life),
            };
        };
        let rec = life.rec.take().expect("pcml: a fiber actor started twice");
        let prev = FIBERS.with(|t| {
            let mut t = t.borrow_mut();
            if t.len() <= slot {
                grow(&mut t, slot);
            }
            t[slot].replace((id, rec))
        });
        FiberActor {
            slot: Some(slot),
            prev,
            life: None,
        }
    }

    /// Takes the life back out of the table, restoring the entry it shadowed.
    fn leave(&mut self) -> Option<Life> {
        let Some(slot) = self.slot.take() else {
            return self.life.take();
        };
        let prev = self.prev.take();
        // The table is gone only while the OS thread exits; the entry goes with it.
        let mine = FIBERS
            .try_with(|t| std::mem::replace(&mut t.borrow_mut()[slot], prev))
            .ok()
            .flatten();
        mine.map(|(_, rec)| Life { rec: Some(rec) })
    }

    /// Ends the actor: its body finished with `outcome`.
    pub(super) fn end(mut self, outcome: Result<(), Box<dyn Any + Send>>) {
        let life = self.leave();
        // `leave` emptied every field: `drop` would find nothing to do.
        std::mem::forget(self);
        if let Some(life) = life {
            life.end(outcome);
        }
    }
}

impl Drop for FiberActor {
    fn drop(&mut self) {
        // Not ended: the fiber is unwinding at shutdown; dropping the life closes the mailbox.
        drop(self.leave());
    }
}

/// The calling actor's pid (Erlang's `self()`), where its [`Ctx`](super::Ctx) is not at hand;
/// [`Ctx::pid`](super::Ctx::pid) is cheaper.
///
/// # Panics
/// Outside a spawned actor (contexts made with `Ctx::new` do not count), or if the actor's
/// message type is not `M`; the message says which.
///
/// ```
/// use pcml::actor::{self, Ctx, Pid};
///
/// fn reply_address() -> Pid<String> {
///     actor::self_pid()
/// }
///
/// pcml::run(|| {
///     let mut me = Ctx::<(Pid<String>, Pid<String>)>::new();
///     let reply = me.pid();
///     let fiber = actor::spawn(move |ctx: Ctx<String>| {
///         reply.send((ctx.pid(), reply_address())).unwrap();
///     });
///     let (a, b) = me.receive();
///     assert!(a == b && a == fiber);
///     let reply = me.pid();
///     let task = actor::spawn_async(move |ctx: Ctx<String>| async move {
///         pcml::yield_async().await;
///         reply.send((ctx.pid(), reply_address())).unwrap();
///     });
///     let (a, b) = me.receive();
///     assert!(a == b && a == task);
/// });
/// ```
pub fn self_pid<M: Send + 'static>() -> Pid<M> {
    let peer = match worker::current() {
        Some(Current::Task { .. }) => polling(),
        Some(Current::Fiber { slot, id, .. }) => FIBERS.with(|t| match t.borrow().get(slot) {
            Some(Some((owner, rec))) if *owner == id => Some(rec.clone()),
            _ => None,
        }),
        _ => None,
    };
    let Some(peer) = peer else {
        panic!(
            "pcml::actor::self_pid called outside a spawned actor; call it in the body of an actor from actor::spawn or spawn_async (a Ctx::new context has its pid: ctx.pid())"
        );
    };
    let actual = peer.msg_type();
    match peer.downcast::<M>() {
        Ok(rec) => Pid { rec },
        Err(_) => panic!(
            "pcml::actor::self_pid::<{}>: the calling actor takes {actual}; ask for Pid<{actual}>",
            std::any::type_name::<M>()
        ),
    }
}
