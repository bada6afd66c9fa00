//! Erlang-style actors (Krook 2020): processes with typed mailboxes, selective receive, a
//! registry, links, monitors and supervisors, on pcml's fibers, tasks and events.
//!
//! An actor is a pcml thread (a fiber from [`spawn`], or an async task from [`spawn_async`])
//! that owns a mailbox. Its body receives a [`Ctx<M>`], its own end of the mailbox; everyone
//! else holds a [`Pid<M>`], a cheap, cloneable, comparable address to send `M`s to.
//!
//! ```
//! use pcml::actor::{self, Ctx, Pid};
//!
//! enum Msg {
//!     Add(u64),
//!     Total(Pid<u64>),
//! }
//!
//! pcml::run(|| {
//!     let counter = actor::spawn(|mut ctx: Ctx<Msg>| {
//!         let mut sum = 0;
//!         loop {
//!             match ctx.receive() {
//!                 Msg::Add(n) => sum += n,
//!                 Msg::Total(reply) => {
//!                     let _ = reply.send(sum);
//!                     return;
//!                 }
//!             }
//!         }
//!     });
//!     let mut me = Ctx::new(); // a mailbox for the main fiber
//!     for i in 1..=10 {
//!         counter.send(Msg::Add(i)).unwrap();
//!     }
//!     counter.send(Msg::Total(me.pid())).unwrap();
//!     assert_eq!(me.receive(), 55);
//! });
//! ```
//!
//! # Receiving
//! - [`Ctx::receive`] takes the oldest message; [`Ctx::receive_match`] the oldest one a
//!   predicate accepts (selective receive, section 3.2.3 of Krook 2020): the others stay in the
//!   mailbox, in their order. A blocked selective receive that is woken tests only the new
//!   messages (Erlang's save pointer).
//! - [`Ctx::receive_timeout`], [`Ctx::recv_many`] (Krook's `recv_many n`: `n` messages,
//!   blocking only while fewer are there).
//! - [`Ctx::receive_evt`] and [`Ctx::receive_match_evt`] are receives as CML events, so an
//!   actor can `choose` between its mailbox, channels and a timeout in one sync.
//! - Async actors use [`Ctx::recv`], [`Ctx::recv_match`], [`Ctx::recv_timeout`] and
//!   [`Ctx::recv_many_async`], or `.await` the events.
//!
//! Each new `receive_match` starts from the oldest message, as Erlang's `receive` does, so a
//! mailbox that keeps many messages nobody accepts makes every selective receive scan them
//! (Krook's message-bombing benchmark measures that cost). A reply to a request can skip
//! them: take a [`Ctx::mark`] before sending the request, then
//! [`Ctx::receive_match_since`] the mark (Erlang's fresh-reference optimisation).
//!
//! # Failure
//! An actor ends when its body returns ([`ExitReason::Normal`]), panics (the panic is caught:
//! the actor dies alone, [`ExitReason::Panic`]), calls [`pcml::exit`](crate::exit), or is
//! killed. Then its mailbox is closed, its names are freed, and whoever watches it is told:
//! - **Links** ([`Ctx::link`], [`Ctx::spawn_link`]) join two actors both ways. When one ends
//!   abnormally the other is killed too ([`ExitReason::Linked`]), unless it traps exits
//!   ([`Ctx::trap_exits`]); then it gets a [`Signal::Exit`] with the reason. A normal end
//!   kills nobody.
//! - **Monitors** ([`Ctx::monitor`], [`Ctx::spawn_monitor`]) watch one way: a
//!   [`Signal::Down`] with the reason when the watched actor ends ([`ExitReason::NoActor`] at
//!   once if it already has).
//! - [`Pid::kill`] kills an actor whether it traps exits or not.
//! - A panic that nobody links to or monitors is printed to stderr.
//!
//! Signals are not `M`s: a typed actor keeps them in a second queue, read with
//! [`Ctx::receive_signal`], [`Ctx::signal_evt`] and [`Ctx::recv_signal`], or together with
//! messages (signals first) by [`Ctx::receive_any`] and [`Ctx::recv_any`]. An untyped actor
//! (`M` = [`AnyMsg`]) gets them as ordinary messages of type [`Signal`], matched by type
//! ([`Ctx::receive_type`]). Unlike Erlang, where an `'EXIT'` message queues behind the dead
//! actor's earlier messages, a typed actor's signal may be received before messages its
//! sender sent earlier (`receive_any` takes signals first); an untyped actor gets both in
//! arrival order.
//!
//! A [`Supervisor`] starts children from [`ChildSpec`]s, links to them, and restarts them
//! ([`Strategy::OneForOne`] or [`Strategy::OneForAll`], [`Restart`] per child) until they fail
//! more often than its restart intensity allows. [`register`], [`whereis`] and [`send_named`]
//! give actors process-wide names; [`SpawnBuilder::spawn_actor`](crate::SpawnBuilder::spawn_actor)
//! and [`spawn_actor_async`](crate::SpawnBuilder::spawn_actor_async) name an actor at spawn for
//! dumps and logs, as fibers and tasks are named.
//!
//! # Differences from Krook 2020 and Erlang
//! - Mailboxes are typed: a `Pid<M>` accepts only `M`s, so there is no serialisation. For
//!   Erlang-like code that matches on types, use `M = Box<dyn Any + Send>` (see [`AnyMsg`]).
//! - Actors share memory (messages are moved, not copied) and are scheduled cooperatively: an
//!   actor that computes without synchronizing is not interrupted. A kill reaches a fiber
//!   actor wherever it blocks in pcml, as in Erlang: its own receives (a receive event in a
//!   `select` too), and also a channel, a choice, an `MVar`, a join, a sleep, a socket. Its
//!   sync there is abandoned as a loss (offers withdrawn, negative acknowledgements fired,
//!   nothing taken), and a running fiber actor dies at its next blocking point or yield. An
//!   async actor likewise dies wherever it awaits in pcml: its task is cancelled, and the
//!   body's future dropped, which abandons every pending sync in it as a loss; a running one
//!   dies when it next returns pending.
//!   A killed actor unwinds its stack (destructors run) with a private payload that its
//!   root catches: do not catch it and carry on, or the next receive unwinds again.
//! - Erlang's `self()` is [`Ctx::pid`], or the free function [`self_pid`] where no context is
//!   at hand (it costs a lookup: fiber actors are found by pcml thread id in a table of the
//!   OS thread they live on, async actors through a slot set around each poll).
//! - Fiber actors that are blocked hold a stack each (see the crate docs on the fiber cap);
//!   use [`spawn_async`] for millions of actors.
//!
//! # Invariants
//! - One shared record per actor (`record`): the mailbox and its state behind one spin lock,
//!   plus the owner's private part of the mailbox in its `Ctx` (messages its receives took
//!   out of the shared queue in one lock). See `record` for the send and receive protocol and
//!   its invariants.
//! - An actor is alive until its body returns, panics or is killed; then its mailbox is emptied
//!   and closed (sends return [`SendError`]) before anyone is told of its death.

use std::any::Any;
use std::fmt;
use std::future::{Future, poll_fn};
use std::hash::{Hash, Hasher};
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use crate::event::Event;
use crate::sched::blocker::Blocker;

mod any;
mod current;

mod link;
mod record;
mod registry;
mod supervisor;

#[cfg(all(test, pcml_loom))]
mod tests;

pub use current::self_pid;
pub use link::{MonitorRef, Received, Signal};
pub use registry::{
    NamedSendError, RegistryError, register, send_named, try_whereis, unregister, whereis,
};
pub use supervisor::{Child, ChildInfo, ChildSpec, Restart, Strategy, Supervisor, SupervisorMsg};

use record::{Died, Own, RecRef, Record, RecvEvt, Scan, own_lock, own_mut, park, wake};

/// Pids are `Send + Sync` and contexts `Send` for any `Send` message type, `Sync` or not.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Pid<std::cell::Cell<u8>>>();
    send::<Ctx<std::cell::Cell<u8>>>();
    send_sync::<Signal>();
    send_sync::<MonitorRef>();
};

/// An alias for the message type of untyped, Erlang-like actors.
///
/// ```
/// use pcml::actor::{AnyMsg, Ctx};
///
/// let mut me: Ctx<AnyMsg> = Ctx::new();
/// me.pid().send(Box::new(7u32)).unwrap();
/// assert_eq!(*me.receive().downcast::<u32>().unwrap(), 7);
/// ```
pub type AnyMsg = Box<dyn Any + Send>;

// ---------------------------------------------------------------------------------------------
// Ids, pids, errors

/// The identity of an actor, unique within the process. Cheap to copy; ordered by creation on
/// each OS thread.
///
/// ```
/// let a = pcml::actor::Ctx::<()>::new();
/// let b = pcml::actor::Ctx::<()>::new();
/// assert_ne!(a.id(), b.id());
/// assert_eq!(a.pid().id(), a.id());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ActorId(pub(crate) std::num::NonZeroU64);

impl ActorId {
    /// The id as a number.
    ///
    /// ```
    /// let me = pcml::actor::Ctx::<()>::new();
    /// assert!(me.id().as_u64() > 0);
    /// ```
    pub fn as_u64(self) -> u64 {
        self.0.get()
    }
}

impl fmt::Debug for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<actor {}>", self.0)
    }
}

impl fmt::Display for ActorId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<actor {}>", self.0)
    }
}

/// The address of an actor whose mailbox takes `M`s.
///
/// Cheap to clone (a reference count), `Send + Sync`, and compared, ordered and hashed by
/// the actor's [`ActorId`]. Holding a pid does not keep the actor alive; sending to a dead
/// actor returns the message in a [`SendError`].
///
/// Clippy's `mutable_key_type` lint fires on sets and maps keyed by pids because the mailbox
/// behind the pid is mutable; the key (the id) never changes, so allow the lint or key by
/// [`Pid::id`].
///
/// ```
/// use std::collections::HashSet;
/// use pcml::actor::Ctx;
///
/// let a = Ctx::<u8>::new();
/// let b = Ctx::<u8>::new();
/// let set: HashSet<_> = [a.pid(), a.pid(), b.pid()].into_iter().collect();
/// assert_eq!(set.len(), 2);
/// assert!(a.pid() == a.pid() && a.pid() != b.pid());
/// ```
pub struct Pid<M> {
    rec: RecRef<M>,
}

impl<M> Clone for Pid<M> {
    fn clone(&self) -> Self {
        Pid {
            rec: self.rec.clone(),
        }
    }
}

impl<M> PartialEq for Pid<M> {
    fn eq(&self, other: &Self) -> bool {
        self.rec.id == other.rec.id
    }
}

impl<M> Eq for Pid<M> {}

impl<M> PartialOrd for Pid<M> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<M> Ord for Pid<M> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rec.id.cmp(&other.rec.id)
    }
}

impl<M> Hash for Pid<M> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.rec.id.hash(state)
    }
}

impl<M> fmt::Debug for Pid<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pid{}", self.rec.id)
    }
}

impl<M> Pid<M> {
    /// The actor's id.
    ///
    /// ```
    /// let me = pcml::actor::Ctx::<()>::new();
    /// assert_eq!(me.pid().id(), me.id());
    /// ```
    pub fn id(&self) -> ActorId {
        self.rec.id
    }

    /// Whether the actor is still running (it may die right after this returns true).
    ///
    /// ```
    /// let me = pcml::actor::Ctx::<()>::new();
    /// let pid = me.pid();
    /// assert!(pid.is_alive());
    /// drop(me);
    /// assert!(!pid.is_alive());
    /// ```
    pub fn is_alive(&self) -> bool {
        self.rec.is_alive()
    }
}

impl<M: Send + 'static> Pid<M> {
    /// Sends `m` to the actor's mailbox. Never blocks: the mailbox is unbounded.
    ///
    /// Messages from one sender arrive in the order sent. Returns the message in a
    /// [`SendError`] if the actor has ended (ignore it with `let _ =` if that is fine, as
    /// Erlang's `!` does); a message sent just before the actor ends may be dropped unread.
    ///
    /// ```
    /// let me = pcml::actor::Ctx::new();
    /// let pid = me.pid();
    /// assert!(pid.send(1).is_ok());
    /// drop(me);
    /// assert_eq!(pid.send(2).unwrap_err().0, 2);
    /// ```
    #[inline]
    pub fn send(&self, m: M) -> Result<(), SendError<M>> {
        self.rec.send(m).map_err(SendError)
    }

    /// Sends every message of `ms`, in order, under one lock and with at most one wake-up.
    ///
    /// Returns the messages not delivered if the actor has ended.
    ///
    /// ```
    /// let mut me = pcml::actor::Ctx::new();
    /// me.pid().send_many([1, 2, 3]).unwrap();
    /// assert_eq!(me.recv_many(3), vec![1, 2, 3]);
    /// ```
    pub fn send_many(&self, ms: impl IntoIterator<Item = M>) -> Result<(), SendError<Vec<M>>> {
        let mut ms = ms.into_iter();
        let mut st = self.rec.lock();
        if !st.alive {
            drop(st);
            return Err(SendError(ms.collect()));
        }
        let mut queued = false;
        for m in ms.by_ref() {
            queued |= st.push(m);
        }
        let b = if queued { st.take_parked() } else { None };
        drop(st);
        wake(b);
        Ok(())
    }
}

/// A position in an actor's mailbox, from [`Ctx::mark`]: receives "since" it test only the
/// messages that arrived after it.
///
/// ```
/// let me = pcml::actor::Ctx::<u8>::new();
/// let mark: pcml::actor::Mark = me.mark();
/// # let _ = mark;
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    /// The mailbox's removal count when marked.
    taken: u64,
    /// The mailbox's length when marked.
    len: usize,
}

/// The error of a send to an actor that has ended: holds the message(s) back.
///
/// ```
/// let pid = pcml::actor::Ctx::<&str>::new().pid(); // the context is dropped at once
/// let err = pid.send("hello").unwrap_err();
/// assert_eq!(err.into_inner(), "hello");
/// ```
#[derive(PartialEq, Eq, Clone, Copy)]
pub struct SendError<M>(pub M);

impl<M> SendError<M> {
    /// The message that was not delivered.
    ///
    /// ```
    /// let pid = pcml::actor::Ctx::<u8>::new().pid();
    /// assert_eq!(pid.send(3).unwrap_err().into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> M {
        self.0
    }
}

impl<M> fmt::Debug for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

impl<M> fmt::Display for SendError<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("sending to an actor that has ended")
    }
}

impl<M> std::error::Error for SendError<M> {}

/// Why an actor ended: given to linked actors that trap exits and to monitors.
///
/// ```
/// use pcml::actor::ExitReason;
///
/// assert!(!ExitReason::Normal.is_abnormal());
/// assert!(ExitReason::Panic("boom".into()).is_abnormal());
/// assert_eq!(ExitReason::Panic("boom".into()).to_string(), "panicked: boom");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExitReason {
    /// Its body returned.
    Normal,
    /// Its body panicked, with this message.
    Panic(Arc<str>),
    /// It called [`pcml::exit`](crate::exit).
    Exited,
    /// It was killed because the linked actor `from` ended abnormally with `reason`.
    Linked {
        /// The linked actor that died.
        from: ActorId,
        /// Why it died.
        reason: Arc<ExitReason>,
    },
    /// It was killed ([`Pid::kill`], or its supervisor shutting it down), with this reason.
    Killed(Arc<str>),
    /// It had already ended when it was linked or monitored (Erlang's `noproc`).
    NoActor,
}

impl ExitReason {
    /// Whether the reason is abnormal, i.e. kills linked actors that do not trap exits (every
    /// reason but [`Normal`](ExitReason::Normal)).
    ///
    /// ```
    /// assert!(pcml::actor::ExitReason::Exited.is_abnormal());
    /// ```
    pub fn is_abnormal(&self) -> bool {
        !matches!(self, ExitReason::Normal)
    }
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExitReason::Normal => f.write_str("normal"),
            ExitReason::Panic(m) => write!(f, "panicked: {m}"),
            ExitReason::Exited => f.write_str("ended itself with pcml::exit"),
            ExitReason::Linked { from, reason } => {
                write!(f, "linked actor {from} ended ({reason})")
            }
            ExitReason::Killed(why) => write!(f, "killed: {why}"),
            ExitReason::NoActor => f.write_str("no such actor (it had already ended)"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Spawning and ending

/// Ends an actor: closes its mailbox, drops what was left in it, tells whoever watches it.
/// `report` is a panic's full report, printed if nobody watches.
pub(crate) fn finish<M: Send + 'static>(
    rec: &Record<M>,
    reason: ExitReason,
    report: Option<String>,
) {
    if rec.is_sole_reference() {
        // The caller's reference (the actor's life's, or its `Ctx::new` context's) is the
        // last: whoever could send to the actor, link to it, watch it or name it would hold
        // one. So there is nobody to tell and nothing to close: the mailbox goes with the
        // record when that reference is dropped, right after, and the lock `die` takes (an
        // atomic read-modify-write) is not needed. The common end of an actor nobody kept.
        if reason.is_abnormal() {
            let last = rec.lock().ext.as_ref().and_then(|e| e.last_message_text());
            crate::log::actor_ended(rec.id, &reason, report.as_deref(), false, last.as_deref());
        }
        return;
    }
    let remains = match rec.die() {
        Died::Leaving(remains) => remains,
        Died::Quietly => {
            // Nobody watches it, nor asked for its last message (both are in `ext`).
            if reason.is_abnormal() {
                crate::log::actor_ended(rec.id, &reason, report.as_deref(), false, None);
            }
            return;
        }
        Died::Before => return,
    };
    drop(remains.parked);
    drop(remains.left);
    let ext = remains.ext;
    if reason.is_abnormal() {
        let observed = ext.as_ref().is_some_and(|e| e.has_observers());
        let last = ext.as_ref().and_then(|e| e.last_message_text());
        crate::log::actor_ended(
            rec.id,
            &reason,
            report.as_deref(),
            observed,
            last.as_deref(),
        );
    }
    if let Some(ext) = ext {
        (*ext).notify(rec.id, &reason);
    }
}

/// Ends the actor silently if its thread is dropped unfinished (runtime shutdown). Holds the
/// record as a `dyn Peer`, so an async actor's root borrows it for `self_pid` instead of
/// holding a second reference count.
struct Life {
    rec: Option<record::PeerRef>,
}

impl Life {
    fn end(mut self, outcome: Result<(), Box<dyn Any + Send>>) {
        let rec = self.rec.take().expect("pcml: actor ended twice");
        crate::sched::metrics::count_actor(-1);
        let (reason, report) = match outcome {
            Ok(()) => (ExitReason::Normal, None),
            // Cancelled by a kill where it blocked: it dies of that kill.
            Err(p) if p.is::<crate::sched::panic::AbortSignal>() => match rec.kill_reason() {
                Some(reason) => (reason, None),
                None => record::reason_of(p),
            },
            Err(p) => record::reason_of(p),
        };
        rec.finish(reason, report);
    }
}

impl Drop for Life {
    fn drop(&mut self) {
        if let Some(rec) = self.rec.take() {
            crate::sched::metrics::count_actor(-1);
            if let Some(reason) = rec.kill_reason() {
                // An async actor's task cancelled by a kill (`Peer::kill`): its body's future
                // has been dropped (its pending syncs lost); it dies of the kill.
                rec.finish(reason, None);
                return;
            }
            // Dropped unfinished: the runtime is shutting down. Close the mailbox (breaking
            // cycles of pids held in messages) and tell nobody: their threads are going too.
            rec.close();
        }
    }
}

fn shutting_down() -> bool {
    crate::sched::worker::context().is_some_and(|c| c.is_shutting_down())
}

/// Spawns an actor on a fiber: `f` runs with the actor's [`Ctx`] and may block in direct
/// style. Returns its pid at once.
///
/// The actor ends when `f` returns (reason [`ExitReason::Normal`]) or panics (the panic is
/// caught: the actor dies alone, and its links and monitors are told). A panic nobody links
/// to or monitors is printed to stderr.
///
/// # Panics
/// Outside a pcml runtime, or when no fiber stack can be had (see the crate docs on the fiber
/// cap; [`spawn_async`] has no cap).
///
/// ```
/// use pcml::actor::{self, Ctx, Pid};
///
/// pcml::run(|| {
///     let echo = actor::spawn(|mut ctx: Ctx<(u32, Pid<u32>)>| {
///         let (n, reply) = ctx.receive();
///         let _ = reply.send(n + 1);
///     });
///     let mut me = Ctx::new();
///     echo.send((41, me.pid())).unwrap();
///     assert_eq!(me.receive(), 42);
/// });
/// ```
#[track_caller]
pub fn spawn<M, F>(f: F) -> Pid<M>
where
    M: Send + 'static,
    F: FnOnce(Ctx<M>) + Send + 'static,
{
    let (pid, ctx, life) = new_actor();
    start_fiber(ctx, life, f, std::panic::Location::caller());
    pid
}

/// A new actor's pid, context and life, sharing one record.
fn new_actor<M: Send + 'static>() -> (Pid<M>, Ctx<M>, Life) {
    let (pid, rec, life) = Record::new_spawned();
    let last = current::on_new_actor(&rec);
    crate::sched::metrics::count_actor(1);
    (
        Pid { rec: pid },
        Ctx {
            rec,
            last,
            detached: false,
            own: std::sync::Mutex::new(Own::new()),
        },
        Life { rec: Some(life) },
    )
}

fn start_fiber<M, F>(ctx: Ctx<M>, life: Life, f: F, site: crate::fiber::Site)
where
    M: Send + 'static,
    F: FnOnce(Ctx<M>) + Send + 'static,
{
    let body = move || {
        // Holds the life from here on, in the table `self_pid` reads.
        let me = current::FiberActor::enter(life);
        // From here a kill reaches the fiber wherever it blocks.
        ctx.rec.enter_fiber();
        match catch_unwind(AssertUnwindSafe(move || f(ctx))) {
            // The fiber is being dropped at shutdown: `me` ends it silently as the unwind
            // goes on to the fiber's root.
            Err(p) if shutting_down() => resume_unwind(p),
            outcome => me.end(outcome),
        }
    };
    // On a proc, a fiber with no join state; elsewhere (a blocking-pool thread, or no room for
    // a fiber, which `spawn` reports) the general spawn, its handle dropped.
    if let Err(body) = crate::sched::spawn::spawn_unjoined(body, site) {
        drop(crate::sched::spawn::spawn_at(body, site));
    }
}

/// Spawns an actor on an async task: `f` gets the actor's [`Ctx`] and returns the future
/// that is the actor's body. Tasks have no stack of their own, so millions of actors fit.
/// Receive with `.await` ([`Ctx::recv`] and friends); the blocking forms panic in a task.
///
/// Ends and fails as [`spawn`] does.
///
/// # Panics
/// Outside a pcml runtime.
///
/// ```
/// use pcml::actor::{self, Ctx};
///
/// pcml::run(|| {
///     let mut me = Ctx::new();
///     let parent = me.pid();
///     for i in 0..1000u64 {
///         let parent = parent.clone();
///         actor::spawn_async(move |mut ctx: Ctx<u64>| async move {
///             let x = ctx.recv().await;
///             let _ = parent.send(x * 2);
///         })
///         .send(i)
///         .unwrap();
///     }
///     let sum: u64 = me.recv_many(1000).into_iter().sum();
///     assert_eq!(sum, 999_000);
/// });
/// ```
#[track_caller]
pub fn spawn_async<M, F, Fut>(f: F) -> Pid<M>
where
    M: Send + 'static,
    F: FnOnce(Ctx<M>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (pid, ctx, life) = new_actor();
    start_task(ctx, life, f, std::panic::Location::caller());
    pid
}

fn start_task<M, F, Fut>(ctx: Ctx<M>, life: Life, f: F, site: crate::fiber::Site)
where
    M: Send + 'static,
    F: FnOnce(Ctx<M>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    // The record, for `enter` below: it runs while the task (not yet scheduled) holds the
    // body, whose context holds the record.
    let rec: *const record::Record<M> = &*ctx.rec;
    let id = ctx.rec.id.as_u64();
    let body = async move {
        // A local declared before the body's future, so that a cancelled task (a kill, see
        // `Peer::kill`) drops that future, withdrawing its pending syncs, before `life` ends
        // the actor.
        let life = life;
        let me = life
            .rec
            .as_ref()
            .expect("pcml: an actor's life ends after its body");
        let outcome = match catch_unwind(AssertUnwindSafe(|| {
            let _current = current::Polling::enter(me);
            f(ctx)
        })) {
            Ok(fut) => {
                let mut fut = std::pin::pin!(fut);
                poll_fn(|cx| {
                    match catch_unwind(AssertUnwindSafe(|| {
                        let _current = current::Polling::enter(me);
                        fut.as_mut().poll(cx)
                    })) {
                        Ok(Poll::Pending) => Poll::Pending,
                        Ok(Poll::Ready(())) => Poll::Ready(Ok(())),
                        Err(p) => Poll::Ready(Err(p)),
                    }
                })
                .await
            }
            Err(p) => Err(p),
        };
        life.end(outcome);
    };
    // On a proc, a task with no join state; elsewhere (a blocking-pool thread, or no runtime,
    // which panics) the general detached spawn. From before its first run a kill cancels it.
    // The task's header names the actor, for dumps.
    let enter = move |task: &crate::task::TaskRef| {
        task.header().set_actor(id);
        // SAFETY: see `rec` above: the record is alive while `enter` runs.
        unsafe { (*rec).enter_task(task) }
    };
    if let Err((body, enter)) = crate::task::spawn_unjoined(body, enter, site) {
        crate::sched::spawn::spawn_task_detached(body, enter, site);
    }
}

/// Named actors: [`SpawnBuilder`](crate::SpawnBuilder) spawns actors too, so that an actor's
/// name shows in dumps, deadlock reports, the watchdog's reports, tracing's spawn events and
/// [`current_name`](crate::current_name), as a fiber's or a task's does. The name is a label
/// for people; to find an actor by name, [`register`] it.
impl crate::SpawnBuilder {
    /// Spawns an actor on a fiber, as [`spawn`], with this builder's name.
    ///
    /// # Panics
    /// As [`spawn`]: outside a pcml runtime, or when no fiber stack can be had.
    ///
    /// ```
    /// use pcml::actor::Ctx;
    ///
    /// pcml::run(|| {
    ///     let mut me = Ctx::new();
    ///     let reply = me.pid();
    ///     let logger = pcml::SpawnBuilder::new()
    ///         .name("logger")
    ///         .spawn_actor(move |mut ctx: Ctx<&'static str>| {
    ///             let line = ctx.receive();
    ///             let _ = reply.send(format!("{:?}: {line}", pcml::current_name()));
    ///         });
    ///     logger.send("started").unwrap();
    ///     assert_eq!(me.receive(), r#"Some("logger"): started"#);
    /// });
    /// ```
    #[track_caller]
    pub fn spawn_actor<M, F>(self, f: F) -> Pid<M>
    where
        M: Send + 'static,
        F: FnOnce(Ctx<M>) + Send + 'static,
    {
        let site = std::panic::Location::caller();
        let Some(name) = self.into_name() else {
            let (pid, ctx, life) = new_actor();
            start_fiber(ctx, life, f, site);
            return pid;
        };
        crate::log::with_spawn_label(&name.clone(), || {
            let (pid, ctx, life) = new_actor();
            let body = move |ctx: Ctx<M>| {
                let _named = crate::sched::dump::Labelled::enter(name, site);
                f(ctx)
            };
            start_fiber(ctx, life, body, site);
            pid
        })
    }

    /// Spawns an actor on an async task, as [`spawn_async`], with this builder's name.
    ///
    /// # Panics
    /// As [`spawn_async`]: outside a pcml runtime.
    ///
    /// ```
    /// use pcml::actor::Ctx;
    ///
    /// pcml::run(|| {
    ///     let mut me = Ctx::new();
    ///     let reply = me.pid();
    ///     let counter = pcml::SpawnBuilder::new()
    ///         .name("counter")
    ///         .spawn_actor_async(move |mut ctx: Ctx<u32>| async move {
    ///             let n = ctx.recv().await;
    ///             let _ = reply.send((pcml::current_name(), n + 1));
    ///         });
    ///     counter.send(1).unwrap();
    ///     assert_eq!(me.receive(), (Some("counter".to_string()), 2));
    /// });
    /// ```
    #[track_caller]
    pub fn spawn_actor_async<M, F, Fut>(self, f: F) -> Pid<M>
    where
        M: Send + 'static,
        F: FnOnce(Ctx<M>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let site = std::panic::Location::caller();
        let Some(name) = self.into_name() else {
            let (pid, ctx, life) = new_actor();
            start_task(ctx, life, f, site);
            return pid;
        };
        crate::log::with_spawn_label(&name.clone(), || {
            let (pid, ctx, life) = new_actor();
            let body = move |ctx: Ctx<M>| {
                let fut = f(ctx);
                async move {
                    let _named = crate::sched::dump::Labelled::enter(name, site);
                    fut.await
                }
            };
            start_task(ctx, life, body, site);
            pid
        })
    }
}

// ---------------------------------------------------------------------------------------------
// The actor's own end

/// An actor's own end of its mailbox: what its body receives with. Not cloneable: only the
/// actor receives. `Send`, so async actors' futures are `Send`.
///
/// [`Ctx::new`] makes a context for code that is not a spawned actor (the main fiber, an OS
/// thread, a test), so it can have a pid and receive replies.
///
/// The blocking receives (`receive*`, `recv_many`) block the calling fiber, or the calling OS
/// thread outside a runtime, and panic in an async task; there use the `recv*` futures.
///
/// ```
/// let mut me = pcml::actor::Ctx::new();
/// me.pid().send("hi").unwrap();
/// assert_eq!(me.receive(), "hi");
/// ```
pub struct Ctx<M: Send + 'static> {
    rec: RecRef<M>,
    /// Made by `Ctx::new`: the actor ends when the context is dropped.
    detached: bool,
    /// Whether the actor keeps the `Debug` text of the last message it receives
    /// ([`report_last_message`](Self::report_last_message)), in its record's extension.
    last: bool,
    /// The oldest messages, taken out of the shared queue by the owner's receives (see
    /// `record::Own`).
    pub(crate) own: std::sync::Mutex<Own<M>>,
}

/// How an actor that asked for it ([`Ctx::report_last_message`]) keeps the `Debug` text of
/// the last message it received, in its record's extension (`Ext::last_message`), where its
/// crash report reads it: the function that formats a message of its type, and the text (a
/// buffer reused from message to message).
pub(crate) type LastMessage = (fn(&dyn Any, &mut String), Arc<std::sync::Mutex<String>>);

/// The longest text of a last message kept for a crash report, in bytes.
const LAST_MESSAGE_MAX: usize = 1000;

/// Writes the `Debug` text of `m` (an `M`) into `out`, cut at [`LAST_MESSAGE_MAX`] bytes
/// (formatting stops there).
fn debug_text<M: fmt::Debug + 'static>(m: &dyn Any, out: &mut String) {
    struct Capped<'a>(&'a mut String);
    impl fmt::Write for Capped<'_> {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            let room = LAST_MESSAGE_MAX.saturating_sub(self.0.len());
            if s.len() <= room {
                self.0.push_str(s);
                return Ok(());
            }
            let mut cut = room;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            self.0.push_str(&s[..cut]);
            self.0.push_str("...");
            Err(fmt::Error)
        }
    }
    if let Some(m) = m.downcast_ref::<M>() {
        let _ = fmt::write(&mut Capped(out), format_args!("{m:?}"));
    }
}

/// `m`, noted first as the last message received if the actor asked for it (`keep`).
#[inline(always)]
fn noted<M: Send + 'static>(keep: bool, rec: &Record<M>, m: M) -> M {
    if keep {
        note_last(rec, &m);
    }
    m
}

/// Notes `m` as the last message `rec`'s actor received. The text is formatted outside the
/// record's lock (a `Debug` impl may do anything).
#[cold]
#[inline(never)]
fn note_last<M: Send + 'static>(rec: &Record<M>, m: &M) {
    let slot = rec.lock().ext.as_ref().and_then(|e| e.last_message.clone());
    if let Some((fmt, text)) = slot {
        let mut t = text
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        t.clear();
        fmt(m, &mut t);
    }
}

impl<M: Send + 'static> fmt::Debug for Ctx<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ctx{}", self.rec.id)
    }
}

impl<M: Send + 'static> Default for Ctx<M> {
    fn default() -> Self {
        Self::new()
    }
}

impl<M: Send + 'static> Drop for Ctx<M> {
    fn drop(&mut self) {
        // The actor is ending: its private messages go first, as its mailbox's do in `finish`.
        own_mut(&mut self.own).clear();
        if self.detached {
            let reason = if std::thread::panicking() {
                ExitReason::Panic(Arc::from("the thread owning the context panicked"))
            } else {
                ExitReason::Normal
            };
            finish(&self.rec, reason, None);
        }
    }
}

impl<M: Send + 'static> Ctx<M> {
    /// A mailbox and pid for the calling code, which need not be a spawned actor: the main
    /// fiber, an OS thread, a test. The "actor" ends (normally) when the context is dropped.
    ///
    /// ```
    /// let mut me = pcml::actor::Ctx::new();
    /// let pid = me.pid();
    /// std::thread::spawn(move || pid.send(5).unwrap()).join().unwrap();
    /// assert_eq!(me.receive(), 5);
    /// ```
    pub fn new() -> Self {
        Ctx {
            rec: Record::counted(true),
            last: false,
            detached: true,
            own: std::sync::Mutex::new(Own::new()),
        }
    }

    /// This actor's pid (Erlang's `self()`).
    ///
    /// ```
    /// let me = pcml::actor::Ctx::<()>::new();
    /// assert_eq!(me.pid(), me.pid());
    /// ```
    pub fn pid(&self) -> Pid<M> {
        Pid {
            rec: self.rec.clone(),
        }
    }

    /// This actor's id.
    ///
    /// ```
    /// let me = pcml::actor::Ctx::<()>::new();
    /// println!("I am {}", me.id());
    /// ```
    pub fn id(&self) -> ActorId {
        self.rec.id
    }

    /// How many messages wait in the mailbox.
    ///
    /// ```
    /// let me = pcml::actor::Ctx::new();
    /// me.pid().send_many([1, 2]).unwrap();
    /// assert_eq!(me.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        own_lock(&self.own).len() + self.rec.lock().queue.len()
    }

    /// Whether the mailbox is empty.
    ///
    /// ```
    /// let me = pcml::actor::Ctx::<u8>::new();
    /// assert!(me.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Keeps the `Debug` text of the last message this actor received (its first 1,000
    /// bytes), so that the report of its crash names it, as OTP's crash report does; `false`
    /// stops. Off by default: it costs a lock and the formatting of every message received.
    ///
    /// The crash report is the `actor crashed` event of the [`log`](crate::log) module (its
    /// `last_message` field); without a `tracing` subscriber it goes to stderr, even for an
    /// actor that is linked or monitored (a supervisor's child, say), whose crash is not
    /// printed otherwise. Messages taken by every receive of this context count:
    /// `receive*`, `try_receive*`, `recv*`, `recv_many*`, `receive_any`, `recv_any` and the
    /// receive events. A supervisor's child can be given this from its spec:
    /// [`ChildSpec::with_last_message`].
    ///
    /// ```
    /// use pcml::actor::{self, Ctx, ExitReason, Signal};
    ///
    /// pcml::run(|| {
    ///     let mut me = Ctx::<()>::new();
    ///     me.trap_exits(true);
    ///     let pid = me.spawn_link(|mut ctx: Ctx<(u32, &'static str)>| {
    ///         ctx.report_last_message(true);
    ///         loop {
    ///             let (n, what) = ctx.receive();
    ///             // Prints: pcml: <actor N> crashed (last message received: (7, "seven")): ...
    ///             assert!(n < 3, "too big");
    ///         }
    ///     });
    ///     pid.send((1, "one")).unwrap();
    ///     pid.send((7, "seven")).unwrap();
    ///     let Signal::Exit { reason, .. } = me.receive_signal() else { unreachable!() };
    ///     assert!(matches!(reason, ExitReason::Panic(_)));
    /// });
    /// ```
    pub fn report_last_message(&mut self, on: bool)
    where
        M: fmt::Debug,
    {
        self.last = on;
        let slot: Option<LastMessage> =
            on.then(|| (debug_text::<M> as fn(&dyn Any, &mut String), Arc::default()));
        self.rec.lock().ext().last_message = slot;
    }

    /// Receives the oldest message, blocking while the mailbox is empty.
    ///
    /// # Panics
    /// In an async task (use [`recv`](Self::recv)).
    ///
    /// ```
    /// let mut me = pcml::actor::Ctx::new();
    /// me.pid().send_many(['a', 'b']).unwrap();
    /// assert_eq!(me.receive(), 'a');
    /// assert_eq!(me.receive(), 'b');
    /// ```
    #[inline]
    pub fn receive(&mut self) -> M {
        let mut scan = Scan::new();
        loop {
            match self
                .rec
                .owner_take(own_mut(&mut self.own), &mut scan, &mut |_| true)
            {
                Ok(m) => return noted(self.last, &self.rec, m),
                Err(st) => park("actor receive", st),
            }
        }
    }

    /// Receives the oldest message if there is one. Never blocks.
    ///
    /// ```
    /// let mut me = pcml::actor::Ctx::new();
    /// assert_eq!(me.try_receive(), None);
    /// me.pid().send(1).unwrap();
    /// assert_eq!(me.try_receive(), Some(1));
    /// ```
    pub fn try_receive(&mut self) -> Option<M> {
        self.rec
            .owner_take(own_mut(&mut self.own), &mut Scan::new(), &mut |_| true)
            .ok()
            .map(|m| noted(self.last, &self.rec, m))
    }

    /// Selective receive: takes the oldest message `f` accepts, blocking until one arrives.
    /// The messages it skips stay in the mailbox, in their order.
    ///
    /// `f` usually runs with the mailbox unlocked, on messages the call took out of the
    /// shared queue; while a receive event of this actor is alive (not yet synced or dropped)
    /// it runs under the mailbox's lock, where senders wait for it. So keep it short, and do
    /// not send to this actor from it. A blocked call that is woken by new messages tests
    /// only those (the save pointer); each new call starts from the oldest message, as
    /// Erlang's `receive` does.
    ///
    /// # Panics
    /// In an async task (use [`recv_match`](Self::recv_match)).
    ///
    /// ```
    /// let mut me = pcml::actor::Ctx::new();
    /// me.pid().send_many([1, 2, 3, 4]).unwrap();
    /// assert_eq!(me.receive_match(|m| m % 2 == 0), 2);
    /// assert_eq!(me.receive(), 1);
    /// assert_eq!(me.receive(), 3);
    /// ```
    #[inline]
    pub fn receive_match(&mut self, mut f: impl FnMut(&M) -> bool) -> M {
        let mut scan = Scan::new();
        loop {
            match self
                .rec
                .owner_take(own_mut(&mut self.own), &mut scan, &mut f)
            {
                Ok(m) => return noted(self.last, &self.rec, m),
                Err(st) => park("actor receive_match", st),
            }
        }
    }

    /// A mark of the mailbox's current end, for [`receive_match_since`](Self::receive_match_since).
    ///
    /// ```
    /// let mut me = pcml::actor::Ctx::new();
    /// me.pid().send(1).unwrap();
    /// let mark = me.mark();
    /// me.pid().send(2).unwrap();
    /// assert_eq!(me.receive_match_since(mark, |_| true), 2);
    /// ```
    pub fn mark(&self) -> Mark {
        let own = own_lock(&self.own);
        let st = self.rec.lock();
        Mark {
            taken: own.taken() + st.taken,
            len: own.len() + st.queue.len(),
        }
    }

    /// Selective receive of a message that arrived after `mark` was taken: the oldest such
    /// message `f` accepts. The messages queued before the mark are not tested (Erlang's
    /// optimisation of a receive that matches a fresh reference), so a request-reply exchange
    /// costs the same however many other messages wait; older messages stay in order.
    ///
    /// If a message was removed from the mailbox between the mark and this call, the scan
    /// starts from the oldest message instead (still correct, no longer cheaper).
    ///
    /// ```
    /// use pcml::actor::{self, Ctx, Pid};
    ///
    /// pcml::run(|| {
    ///     let server = actor::spawn(|mut ctx: Ctx<(u64, Pid<(u64, u64)>)>| loop {
    ///         let (n, reply) = ctx.receive();
    ///         let _ = reply.send((n, n * n));
    ///     });
    ///     let mut me = Ctx::new();
    ///     me.pid().send_many((0..1000).map(|i| (i, 0))).unwrap(); // noise nobody wants
    ///     let mark = me.mark();
    ///     server.send((12, me.pid())).unwrap();
    ///     assert_eq!(me.receive_match_since(mark, |m| m.0 == 12), (12, 144));
    ///     assert_eq!(me.len(), 1000);
    /// });
    /// ```
    pub fn receive_match_since(&mut self, mark: Mark, mut f: impl FnMut(&M) -> bool) -> M {
        let mut scan = Scan::since(mark);
        loop {
            match self
                .rec
                .owner_take(own_mut(&mut self.own), &mut scan, &mut f)
            {
                Ok(m) => return noted(self.last, &self.rec, m),
                Err(st) => park("actor receive_match_since", st),
            }
        }
    }

    /// Selective receive without blocking: takes the oldest message `f` accepts, if any.
    ///
    /// ```
    /// let mut me = pcml::actor::Ctx::new();
    /// me.pid().send_many([1, 2]).unwrap();
    /// assert_eq!(me.try_receive_match(|m| *m == 3), None);
    /// assert_eq!(me.try_receive_match(|m| *m == 2), Some(2));
    /// ```
    pub fn try_receive_match(&mut self, mut f: impl FnMut(&M) -> bool) -> Option<M> {
        self.rec
            .owner_take(own_mut(&mut self.own), &mut Scan::new(), &mut f)
            .ok()
            .map(|m| noted(self.last, &self.rec, m))
    }

    /// Receives the oldest message, or `None` if none arrives within `d`.
    ///
    /// # Panics
    /// In an async task (use [`recv_timeout`](Self::recv_timeout)).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// pcml::run(|| {
    ///     let mut me = pcml::actor::Ctx::<u8>::new();
    ///     assert_eq!(me.receive_timeout(Duration::from_millis(1)), None);
    ///     me.pid().send(4).unwrap();
    ///     assert_eq!(me.receive_timeout(Duration::from_secs(5)), Some(4));
    /// });
    /// ```
    pub fn receive_timeout(&mut self, d: Duration) -> Option<M> {
        if let Some(m) = self.try_receive() {
            return Some(m);
        }
        self.receive_evt().sync_timeout(d)
    }

    /// Selective receive with a timeout: the oldest message `f` accepts, or `None` if none
    /// arrives within `d`. `f` may run on sending threads too (see
    /// [`receive_match_evt`](Self::receive_match_evt)).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// pcml::run(|| {
    ///     let mut me = pcml::actor::Ctx::new();
    ///     me.pid().send(1).unwrap();
    ///     assert_eq!(me.receive_match_timeout(Duration::from_millis(1), |m| *m > 1), None);
    ///     assert_eq!(me.receive(), 1);
    /// });
    /// ```
    pub fn receive_match_timeout(
        &mut self,
        d: Duration,
        f: impl FnMut(&M) -> bool + Send + 'static,
    ) -> Option<M> {
        self.receive_match_evt(f).sync_timeout(d)
    }

    /// Receives `n` messages, oldest first (Krook's `recv_many n`): takes all that are
    /// there at once and blocks only while fewer than `n` have arrived.
    ///
    /// # Panics
    /// In an async task (use [`recv_many_async`](Self::recv_many_async)).
    ///
    /// ```
    /// let mut me = pcml::actor::Ctx::new();
    /// me.pid().send_many(0..5).unwrap();
    /// assert_eq!(me.recv_many(3), vec![0, 1, 2]);
    /// assert_eq!(me.len(), 2);
    /// ```
    pub fn recv_many(&mut self, n: usize) -> Vec<M> {
        let mut out = Vec::with_capacity(n);
        self.rec.give_back(own_mut(&mut self.own));
        loop {
            let mut st = self.rec.lock_owner();
            st.drain_into(&mut out, n);
            if out.len() == n {
                drop(st);
                if let (true, Some(m)) = (self.last, out.last()) {
                    note_last(&self.rec, m);
                }
                return out;
            }
            park("actor recv_many", st);
        }
    }

    /// Receiving the oldest message, as an event: enabled while the mailbox is non-empty.
    /// Compose it with `choose`, `wrap`, channels and timeouts; syncing it takes the message.
    ///
    /// ```
    /// use pcml::actor::Ctx;
    ///
    /// pcml::run(|| {
    ///     let me = Ctx::<u32>::new();
    ///     let ch = pcml::Chan::<u32>::new();
    ///     let c = ch.clone();
    ///     pcml::spawn(move || c.send(1));
    ///     let got = pcml::select([
    ///         me.receive_evt().wrap(|m| ("mailbox", m)),
    ///         ch.recv_evt().wrap(|m| ("channel", m)),
    ///     ]);
    ///     assert_eq!(got, ("channel", 1));
    /// });
    /// ```
    pub fn receive_evt(&self) -> Event<M> {
        self.recv_evt_with(None)
    }

    fn recv_evt_with(&self, pred: Option<record::Pred<M>>) -> Event<M> {
        let (id, detached) = (self.rec.id, self.rec.detached);
        let keep = self.last.then(|| self.rec.clone());
        Event::from_base(RecvEvt::new(&self.rec, &self.own, pred)).wrap(move |r| match r {
            Ok((m, _)) => match &keep {
                Some(rec) => noted(true, rec, m),
                None => m,
            },
            Err(reason) => record::raise(id, detached, reason),
        })
    }

    /// Selective receive as an event: enabled while the mailbox holds a message `f` accepts;
    /// syncing takes the oldest such message and leaves the others in order.
    ///
    /// While the event is blocked, senders test their messages with `f` (under the mailbox's
    /// lock, on their own thread): keep it short and pure. If `f` panics there, the sender is
    /// not affected and its message stays in the mailbox; the sync of this event unwinds
    /// instead, ending a spawned actor with [`ExitReason::Panic`] (the message says the
    /// predicate panicked), or panicking in the thread of a [`Ctx::new`] context.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// pcml::run(|| {
    ///     let me = pcml::actor::Ctx::new();
    ///     me.pid().send_many([1, 20, 3]).unwrap();
    ///     let big = me.receive_match_evt(|m: &i32| *m >= 10);
    ///     assert_eq!(big.sync_timeout(Duration::from_secs(1)), Some(20));
    ///     assert_eq!(me.len(), 2);
    /// });
    /// ```
    pub fn receive_match_evt(&self, f: impl FnMut(&M) -> bool + Send + 'static) -> Event<M> {
        let pred: record::Pred<M> = Arc::new(std::sync::Mutex::new(f));
        self.recv_evt_with(Some(pred))
    }

    /// Receives the oldest message, for async actors.
    ///
    /// ```
    /// pcml::run(|| {
    ///     let pid = pcml::actor::spawn_async(|mut ctx: pcml::actor::Ctx<u8>| async move {
    ///         assert_eq!(ctx.recv().await, 1);
    ///     });
    ///     pid.send(1).unwrap();
    /// });
    /// ```
    pub async fn recv(&mut self) -> M {
        self.recv_scan(Scan::new(), |_| true).await
    }

    /// Selective receive for async actors: the oldest message `f` accepts.
    ///
    /// ```
    /// pcml::run(|| {
    ///     let mut me = pcml::actor::Ctx::new();
    ///     let reply = me.pid();
    ///     let pid = pcml::actor::spawn_async(move |mut ctx: pcml::actor::Ctx<i32>| async move {
    ///         let neg = ctx.recv_match(|m| *m < 0).await;
    ///         let _ = reply.send(neg);
    ///     });
    ///     pid.send_many([1, 2, -3]).unwrap();
    ///     assert_eq!(me.receive(), -3);
    /// });
    /// ```
    pub async fn recv_match(&mut self, f: impl FnMut(&M) -> bool) -> M {
        self.recv_scan(Scan::new(), f).await
    }

    /// The oldest message `f` accepts from where `scan` starts, for async actors.
    async fn recv_scan(&mut self, mut scan: Scan, mut f: impl FnMut(&M) -> bool) -> M {
        let (rec, last) = (&self.rec, self.last);
        let own = own_mut(&mut self.own);
        poll_fn(|cx| match rec.owner_take(own, &mut scan, &mut f) {
            Ok(m) => Poll::Ready(noted(last, rec, m)),
            Err(mut st) => {
                st.parked = Some(Blocker::from_waker(cx.waker().clone()));
                Poll::Pending
            }
        })
        .await
    }

    /// [`receive_match_since`](Self::receive_match_since) for async actors.
    ///
    /// ```
    /// pcml::run(|| {
    ///     pcml::spawn_task(async {
    ///         let mut me = pcml::actor::Ctx::new();
    ///         me.pid().send(1).unwrap();
    ///         let mark = me.mark();
    ///         me.pid().send(1).unwrap();
    ///         me.recv_match_since(mark, |m| *m == 1).await;
    ///         assert_eq!(me.len(), 1);
    ///     })
    ///     .join()
    ///     .unwrap();
    /// });
    /// ```
    pub async fn recv_match_since(&mut self, mark: Mark, f: impl FnMut(&M) -> bool) -> M {
        self.recv_scan(Scan::since(mark), f).await
    }

    /// Receives the oldest message or `None` after `d`, for async actors.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// pcml::run(|| {
    ///     pcml::spawn_task(async {
    ///         let mut me = pcml::actor::Ctx::<u8>::new();
    ///         assert_eq!(me.recv_timeout(Duration::from_millis(1)).await, None);
    ///     })
    ///     .join()
    ///     .unwrap();
    /// });
    /// ```
    pub async fn recv_timeout(&mut self, d: Duration) -> Option<M> {
        if let Some(m) = self.try_receive() {
            return Some(m);
        }
        crate::event::choose([
            self.receive_evt().wrap(Some),
            crate::time::timeout_evt(d).wrap(|()| None),
        ])
        .await
    }

    /// Receives `n` messages, oldest first, for async actors (see [`recv_many`](Self::recv_many)).
    ///
    /// ```
    /// pcml::run(|| {
    ///     pcml::spawn_task(async {
    ///         let mut me = pcml::actor::Ctx::new();
    ///         me.pid().send_many([1, 2, 3]).unwrap();
    ///         assert_eq!(me.recv_many_async(2).await, vec![1, 2]);
    ///     })
    ///     .join()
    ///     .unwrap();
    /// });
    /// ```
    pub async fn recv_many_async(&mut self, n: usize) -> Vec<M> {
        self.rec.give_back(own_mut(&mut self.own));
        let rec = &self.rec;
        let mut out = Vec::with_capacity(n);
        poll_fn(|cx| {
            let mut st = rec.lock_owner();
            st.drain_into(&mut out, n);
            if out.len() == n {
                drop(st);
                if let (true, Some(m)) = (self.last, out.last()) {
                    note_last(rec, m);
                }
                return Poll::Ready(std::mem::take(&mut out));
            }
            st.parked = Some(Blocker::from_waker(cx.waker().clone()));
            Poll::Pending
        })
        .await
    }
}
