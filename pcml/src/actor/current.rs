//! `self_pid`: which actor is running, without its context at hand.
//!
//! Async actors: the actor's root future sets a thread-local slot around each poll of its body
//! (tasks migrate between procs, but a poll runs on one OS thread). Fiber actors: a fiber
//! never migrates once started (DESIGN.md decision 2), so the table of running fiber actors is
//! a thread-local map of the OS thread the fiber lives on, keyed by pcml thread id; the fiber
//! enters itself when its body starts and leaves when it ends.
//!
//! # Invariants
//! - The slot holds the actor being polled on this OS thread during its poll and is restored
//!   afterwards (polls nest: an actor's poll never polls another actor's root).
//! - A fiber's entry is in the table of its own OS thread from its start to its end (a guard
//!   removes it, also when the fiber unwinds).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use super::Pid;
use super::link::Peer;
use super::record::Record;
use crate::sched::ThreadId;
use crate::sched::worker::{self, Current};

thread_local! {
    /// The async actor being polled on this OS thread.
    static POLLING: RefCell<Option<Arc<dyn Peer>>> = const { RefCell::new(None) };
    /// The fiber actors living on this OS thread.
    static FIBERS: RefCell<HashMap<ThreadId, Arc<dyn Peer>>> = RefCell::new(HashMap::new());
}

/// A supervisor starting a child, and the actors spawned meanwhile.
type Linking = Option<(Arc<dyn Peer>, Vec<Arc<dyn Peer>>)>;

thread_local! {
    /// While a supervisor starts a child: the supervisor, and the actors spawned meanwhile on
    /// this OS thread, each linked to it before it starts.
    static LINKING: RefCell<Linking> = const { RefCell::new(None) };
}

/// Runs `start` with every actor it spawns (on this OS thread) linked to `sup` before the
/// actor starts; returns its result and those actors.
pub(super) fn linking_spawns<R>(
    sup: Arc<dyn Peer>,
    start: impl FnOnce() -> R,
) -> (R, Vec<Arc<dyn Peer>>) {
    struct Reset(Linking);
    impl Drop for Reset {
        fn drop(&mut self) {
            let prev = self.0.take();
            let _ = LINKING.try_with(|l| *l.borrow_mut() = prev);
        }
    }
    let reset = Reset(LINKING.with(|l| l.replace(Some((sup, Vec::new())))));
    let r = start();
    let spawned = LINKING
        .with(|l| l.borrow_mut().as_mut().map(|(_, v)| std::mem::take(v)))
        .unwrap_or_default();
    drop(reset);
    (r, spawned)
}

/// Called for every new actor before it starts: links it to the supervisor starting a child
/// on this thread, if any.
#[inline]
pub(super) fn on_new_actor<M: Send + 'static>(rec: &Arc<Record<M>>) {
    LINKING.with(|l| {
        if let Some((sup, spawned)) = l.borrow_mut().as_mut() {
            let new: Arc<dyn Peer> = rec.clone();
            // Both alive: the new actor has not started, the supervisor is running this.
            new.add_link(sup.clone());
            sup.add_link(new.clone());
            spawned.push(new);
        }
    });
}

/// Marks an async actor as the one being polled, until dropped.
pub(super) struct Polling(Option<Arc<dyn Peer>>);

impl Polling {
    pub(super) fn enter(me: &Arc<dyn Peer>) -> Self {
        Polling(POLLING.with(|p| p.replace(Some(me.clone()))))
    }
}

impl Drop for Polling {
    fn drop(&mut self) {
        let prev = self.0.take();
        let _ = POLLING.try_with(|p| *p.borrow_mut() = prev);
    }
}

/// Enters a fiber actor in its OS thread's table, until dropped.
pub(super) struct FiberActor(Option<ThreadId>);

impl FiberActor {
    pub(super) fn enter<M: Send + 'static>(rec: Arc<Record<M>>) -> Self {
        let id = crate::try_current();
        if let Some(id) = id {
            FIBERS.with(|t| t.borrow_mut().insert(id, rec));
        }
        FiberActor(id)
    }
}

impl Drop for FiberActor {
    fn drop(&mut self) {
        if let Some(id) = self.0 {
            let _ = FIBERS.try_with(|t| t.borrow_mut().remove(&id));
        }
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
        Some(Current::Task { .. }) => POLLING.with(|p| p.borrow().clone()),
        Some(Current::Fiber { id, .. }) => FIBERS.with(|t| t.borrow().get(&id).cloned()),
        _ => None,
    };
    let Some(peer) = peer else {
        panic!(
            "pcml::actor::self_pid called outside a spawned actor; call it in the body of an actor from actor::spawn or spawn_async (a Ctx::new context has its pid: ctx.pid())"
        );
    };
    let actual = peer.msg_type();
    match peer.as_any().downcast::<Record<M>>() {
        Ok(rec) => Pid { rec },
        Err(_) => panic!(
            "pcml::actor::self_pid::<{}>: the calling actor takes {actual}; ask for Pid<{actual}>",
            std::any::type_name::<M>()
        ),
    }
}
