//! Failure, the Erlang way: links, monitors, exit signals, trapping exits, kills.
//!
//! - A **link** joins two actors both ways. When one ends, the other gets an exit signal with
//!   the reason: if it traps exits ([`Ctx::trap_exits`]) the signal is queued as
//!   [`Signal::Exit`]; if not, an abnormal reason kills it (reason [`ExitReason::Linked`]) and
//!   a normal one is ignored.
//! - A **monitor** watches one way: when the watched actor ends, the watcher gets
//!   [`Signal::Down`] with the reason. Monitoring an actor that already ended gives an
//!   immediate `Down` with [`ExitReason::NoActor`].
//! - [`Pid::kill`] kills an actor whether or not it traps exits.
//!
//! Signals are not `M`s: a typed actor has a second queue for them, read with
//! [`Ctx::receive_signal`], [`Ctx::signal_evt`], [`Ctx::recv_signal`], or together with
//! messages by [`Ctx::receive_any`] (signals first). An untyped actor (`M` = [`AnyMsg`]) gets
//! its signals as ordinary messages: a `Box<Signal>` in the mailbox, matched by type.
//!
//! # Differences from Erlang
//! - Actors are scheduled cooperatively: an actor computing without synchronizing is not
//!   interrupted. A kill completes the actor's blocked receives (direct, async, or a receive
//!   event it syncs on) and, for a fiber actor, also cancels the fiber wherever else it is
//!   blocked or at its next blocking point or yield (`Record::abort_fiber`, the cancellation
//!   of `JoinHandle::abort`); an async actor's task is cancelled the same way
//!   (`Record::enter_task` keeps its address), so it drops its body's future instead of
//!   polling it again.
//! - A killed actor unwinds its stack (destructors run) with a private payload that its root
//!   catches; do not `catch_unwind` around receives and carry on, or the next receive unwinds
//!   again.
//!
//! # Invariants
//! - The extension (`Ext`) of an actor is touched only under its record's lock; link and
//!   monitor set-up lock one record at a time, never two.
//! - An actor's death takes its extension out under its lock (with `alive = false`), so a link
//!   or monitor added to it either is in the taken extension (and is notified) or finds it dead
//!   (and gets `NoActor`).
//! - Names are removed from the registry before links and monitors are notified, so a
//!   supervisor restarting a child can register the child's name again at once.

use std::any::{Any, TypeId};
use std::collections::VecDeque;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::Poll;

use crate::event::{BaseEvent, Blocked, Event, OwnWaiter};
use crate::sched::blocker::Blocker;
use crate::sync_var::waiters::{Offer, Offers, Slot, complete_self, deliver, delivered};

use super::record::{PeerRef, RecRef, Record, State, park, raise, wake};
use super::{ActorId, AnyMsg, Ctx, ExitReason, Pid};

/// The unwind payload with which a killed actor's receive ends its body.
pub(crate) struct KillSignal(pub(crate) ExitReason);

/// A notification about another actor's end, delivered to linked actors that trap exits and
/// to monitors.
///
/// ```
/// use pcml::actor::{self, Ctx, ExitReason, Signal};
///
/// pcml::run(|| {
///     let mut me = Ctx::<()>::new();
///     let (pid, mref) = me.spawn_monitor(|_: Ctx<()>| panic!("oops"));
///     match me.receive_signal() {
///         Signal::Down { monitor, actor, reason } => {
///             assert_eq!((monitor, actor), (mref, pid.id()));
///             assert_eq!(reason, ExitReason::Panic("oops".into()));
///         }
///         other => panic!("unexpected {other:?}"),
///     }
/// });
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Signal {
    /// A linked actor ended (delivered only while trapping exits).
    Exit {
        /// The linked actor.
        from: ActorId,
        /// Why it ended.
        reason: ExitReason,
    },
    /// A monitored actor ended.
    Down {
        /// The monitor, as [`Ctx::monitor`] returned it.
        monitor: MonitorRef,
        /// The actor that ended.
        actor: ActorId,
        /// Why it ended.
        reason: ExitReason,
    },
}

/// What [`Ctx::receive_any`] returns: a message or a signal.
///
/// ```
/// use pcml::actor::{Ctx, Received};
///
/// let mut me = Ctx::new();
/// me.pid().send(3).unwrap();
/// assert!(matches!(me.receive_any(), Received::Msg(3)));
/// ```
#[derive(Debug)]
pub enum Received<M> {
    /// A message from the mailbox.
    Msg(M),
    /// A signal (exit or down).
    Signal(Signal),
}

/// The identity of one monitor, returned by [`Ctx::monitor`] and carried by its
/// [`Signal::Down`]. Cheap to clone; compared and hashed by its number.
///
/// ```
/// use pcml::actor::Ctx;
///
/// let me = Ctx::<()>::new();
/// let other = Ctx::<u8>::new();
/// let a = me.monitor(&other.pid());
/// let b = me.monitor(&other.pid());
/// assert_ne!(a, b);
/// ```
#[derive(Clone)]
pub struct MonitorRef {
    n: u64,
    /// The watched actor, to withdraw the monitor from.
    target: PeerRef,
}

impl PartialEq for MonitorRef {
    fn eq(&self, other: &Self) -> bool {
        self.n == other.n
    }
}

impl Eq for MonitorRef {}

impl Hash for MonitorRef {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.n.hash(state)
    }
}

impl fmt::Debug for MonitorRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MonitorRef({} on {})", self.n, self.target.peer_id())
    }
}

impl MonitorRef {
    /// The monitored actor.
    ///
    /// ```
    /// let me = pcml::actor::Ctx::<()>::new();
    /// let other = pcml::actor::Ctx::<()>::new();
    /// assert_eq!(me.monitor(&other.pid()).actor(), other.id());
    /// ```
    pub fn actor(&self) -> ActorId {
        self.target.peer_id()
    }
}

/// Monitor numbers (Relaxed: only uniqueness matters).
static NEXT_MONITOR: AtomicU64 = AtomicU64::new(1);

/// Per-actor extension, allocated on first use of links, monitors, trapping, names or kills.
pub(crate) struct Ext {
    /// Actors linked to this one.
    links: Vec<PeerRef>,
    /// Monitors watching this actor: their refs and watchers.
    monitors: Vec<(MonitorRef, PeerRef)>,
    /// Registered names, removed from the registry at death.
    pub(crate) names: Vec<Arc<str>>,
    /// Whether exit signals from links are queued instead of killing.
    trap: bool,
    /// Set when the actor is killed; every later receive raises it.
    pub(crate) kill: Option<ExitReason>,
    /// Signals not yet received (typed actors only).
    signals: VecDeque<Signal>,
    /// Blocked signal events.
    signal_offers: Offers<Result<Signal, ExitReason>>,
    /// The text of the last message received, kept by the actor's context when it asked
    /// (`Ctx::report_last_message`), for its crash report.
    pub(crate) last_message: Option<super::LastMessage>,
}

impl Ext {
    /// The last message's text, if the actor keeps it and has received one.
    pub(crate) fn last_message_text(&self) -> Option<String> {
        let (_, t) = self.last_message.as_ref()?;
        let t = t.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        (!t.is_empty()).then(|| t.clone())
    }
}

impl Default for Ext {
    fn default() -> Self {
        Ext {
            links: Vec::new(),
            monitors: Vec::new(),
            names: Vec::new(),
            trap: false,
            kill: None,
            signals: VecDeque::new(),
            signal_offers: Offers::new(),
            last_message: None,
        }
    }
}

impl Ext {
    /// Whether anyone is told of this actor's death (then a panic is not printed).
    pub(crate) fn has_observers(&self) -> bool {
        !self.links.is_empty() || !self.monitors.is_empty()
    }

    /// Tells names, linked and monitoring actors that `id` ended with `reason`.
    pub(crate) fn notify(self, id: ActorId, reason: &ExitReason) {
        for name in &self.names {
            super::registry::remove_if(name, id);
        }
        for peer in self.links {
            peer.exit_signal(id, reason);
        }
        for (mref, watcher) in self.monitors {
            let actor = mref.actor();
            watcher.signal(Signal::Down {
                monitor: mref,
                actor,
                reason: reason.clone(),
            });
        }
    }
}

/// An actor of any message type, as links, monitors and the registry see it.
pub(crate) trait Peer: Send + Sync + 'static {
    fn peer_id(&self) -> ActorId;
    /// The name of the message type, for registry errors.
    fn msg_type(&self) -> &'static str;
    /// The message type's id, to downcast a `PeerRef` to a `RecRef<M>`.
    fn msg_type_id(&self) -> TypeId;
    /// The record's reference count, for `PeerRef`.
    fn refs(&self) -> &crate::mp::RefCount;
    /// Whether the actor has not ended yet.
    fn alive(&self) -> bool;
    /// Adds `other` to the links; false if this actor is dead.
    fn add_link(&self, other: PeerRef) -> bool;
    fn remove_link(&self, other: ActorId);
    /// Adds a monitor; false if this actor is dead.
    fn add_monitor(&self, mref: MonitorRef, watcher: PeerRef) -> bool;
    fn remove_monitor(&self, mref: &MonitorRef);
    /// Records a registered name; false if this actor is dead.
    fn add_name(&self, name: Arc<str>) -> bool;
    fn remove_name(&self, name: &str);
    /// Its registered names (a dump).
    fn names(&self) -> Vec<Arc<str>>;
    /// The linked actor `from` ended with `reason`.
    fn exit_signal(&self, from: ActorId, reason: &ExitReason);
    /// Queues a signal (or, untyped, a message holding it).
    fn signal(&self, s: Signal);
    /// Kills the actor with `reason`, trapping or not.
    fn kill(&self, reason: ExitReason);
    /// The reason the actor was killed with, if it was.
    fn kill_reason(&self) -> Option<ExitReason>;

    /// Ends the actor (its body is done): see `actor::finish`.
    fn finish(&self, reason: ExitReason, report: Option<String>);
    /// Closes the mailbox of an actor dropped unfinished at shutdown, telling nobody.
    fn close(&self);
}

impl<M: Send + 'static> Record<M> {
    /// Gives a typed actor's signal to its first live blocked signal event, or else queues it
    /// (`front`: one given back by an abandoned receive, which was the oldest) and wakes a
    /// parked receiver. A dead actor drops it.
    fn hand_signal(&self, mut s: Signal, front: bool) {
        let mut st = self.lock();
        if !st.alive {
            return;
        }
        let ext = st.ext();
        while let Some((_, o)) = ext.signal_offers.take_match(None) {
            match deliver(&o, Ok(s)) {
                Ok(()) => return,
                // Dead offer: next.
                Err(back) => s = back.unwrap_or_else(|_| unreachable!("we sent Ok")),
            }
        }
        if front {
            ext.signals.push_front(s);
        } else {
            ext.signals.push_back(s);
        }
        let b = st.take_parked();
        drop(st);
        wake(b);
    }
}

impl<M: Send + 'static> Peer for Record<M> {
    fn peer_id(&self) -> ActorId {
        self.id
    }

    fn finish(&self, reason: ExitReason, report: Option<String>) {
        super::finish(self, reason, report);
    }

    fn kill_reason(&self) -> Option<ExitReason> {
        self.lock().kill().cloned()
    }

    fn close(&self) {
        drop(self.die());
    }

    fn msg_type(&self) -> &'static str {
        std::any::type_name::<M>()
    }

    fn msg_type_id(&self) -> TypeId {
        TypeId::of::<M>()
    }

    fn refs(&self) -> &crate::mp::RefCount {
        Record::refs(self)
    }

    fn alive(&self) -> bool {
        self.is_alive()
    }

    fn add_link(&self, other: PeerRef) -> bool {
        let mut st = self.lock();
        if !st.alive {
            return false;
        }
        let id = other.peer_id();
        let ext = st.ext();
        if !ext.links.iter().any(|p| p.peer_id() == id) {
            ext.links.push(other);
        }
        true
    }

    fn remove_link(&self, other: ActorId) {
        let mut st = self.lock();
        if let Some(ext) = st.ext.as_mut() {
            ext.links.retain(|p| p.peer_id() != other);
        }
    }

    fn add_monitor(&self, mref: MonitorRef, watcher: PeerRef) -> bool {
        let mut st = self.lock();
        if !st.alive {
            return false;
        }
        st.ext().monitors.push((mref, watcher));
        true
    }

    fn remove_monitor(&self, mref: &MonitorRef) {
        let mut st = self.lock();
        if let Some(ext) = st.ext.as_mut() {
            ext.monitors.retain(|(m, _)| m != mref);
        }
    }

    fn add_name(&self, name: Arc<str>) -> bool {
        let mut st = self.lock();
        if !st.alive {
            return false;
        }
        st.ext().names.push(name);
        true
    }

    fn names(&self) -> Vec<Arc<str>> {
        let st = self.lock();
        st.ext.as_ref().map_or_else(Vec::new, |e| e.names.clone())
    }

    fn remove_name(&self, name: &str) {
        let mut st = self.lock();
        if let Some(ext) = st.ext.as_mut() {
            ext.names.retain(|n| &**n != name);
        }
    }

    fn exit_signal(&self, from: ActorId, reason: &ExitReason) {
        let trap = {
            let mut st = self.lock();
            if !st.alive {
                return;
            }
            let ext = st.ext();
            ext.links.retain(|p| p.peer_id() != from);
            ext.trap
        };
        if trap {
            self.signal(Signal::Exit {
                from,
                reason: reason.clone(),
            });
        } else if reason.is_abnormal() {
            self.kill(ExitReason::Linked {
                from,
                reason: Arc::new(reason.clone()),
            });
        }
    }

    fn signal(&self, s: Signal) {
        if self.untyped {
            let boxed: Box<dyn Any> = Box::new(Box::new(s) as AnyMsg);
            let m = *boxed
                .downcast::<M>()
                .unwrap_or_else(|_| unreachable!("untyped means M is AnyMsg"));
            // A dead actor drops it.
            let _ = self.send(m);
            return;
        }
        self.hand_signal(s, false);
    }

    fn kill(&self, reason: ExitReason) {
        let mut st = self.lock();
        if !st.alive || st.kill().is_some() {
            return;
        }
        st.ext().kill = Some(reason.clone());
        // Release: pairs with the Acquire load in `Record::owner_take`, whose slow path then
        // reads the kill under the lock.
        self.killed.store(true, Ordering::Release);
        // Complete every blocked receive event with the kill: its wrapper raises it.
        if let Some(offers) = st.offers.as_mut() {
            for (o, _) in std::mem::take(&mut offers.q) {
                let _ = deliver(&o, Err(reason.clone()));
            }
        }
        let ext = st.ext();
        for o in std::mem::take(&mut ext.signal_offers.q) {
            let _ = deliver(&o, Err(reason.clone()));
        }
        let b = st.take_parked();
        // An async actor awaiting anything: its task is cancelled, so its next run drops
        // the body's future (every pending sync in it loses) instead of polling it, and the
        // actor's `Life` ends it with this kill's reason.
        // SAFETY: the actor is alive (checked above, under the lock), so its future, and the
        // task holding it, exist (`State::task`).
        let task = st.task.as_ref().map(|t| unsafe { t.upgrade() });
        drop(st);
        wake(b);
        if let Some(t) = task {
            t.abort();
        }
        // A fiber actor blocked anywhere else (a channel, a choice, a join, a sleep...) is
        // cancelled there: its sync loses every branch and it unwinds to its root, which
        // ends it with this kill's reason.
        self.abort_fiber();
    }
}

/// The base event of `signal_evt` (output: the signal, or the kill reason).
struct SignalEvt<M> {
    rec: RecRef<M>,
    slot: Option<Slot<Result<Signal, ExitReason>>>,
}

impl<M> SignalEvt<M> {
    fn take_now(&self, st: &mut super::record::State<M>) -> Option<Result<Signal, ExitReason>> {
        let ext = st.ext.as_mut()?;
        if let Some(k) = &ext.kill {
            return Some(Err(k.clone()));
        }
        ext.signals.pop_front().map(Ok)
    }
}

impl<M: Send + 'static> BaseEvent for SignalEvt<M> {
    type Output = Result<Signal, ExitReason>;

    fn poll(&mut self) -> bool {
        let st = self.rec.lock();
        st.ext
            .as_ref()
            .is_some_and(|e| e.kill.is_some() || !e.signals.is_empty())
    }

    fn try_do(&mut self) -> Option<Self::Output> {
        self.take_now(&mut self.rec.lock())
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<Self::Output> {
        let mut st = self.rec.lock();
        if self.poll_locked(&st) {
            return complete_self(me, || {
                self.take_now(&mut st)
                    .expect("pcml: signal queue changed under its lock")
            });
        }
        let slot = Slot::default();
        st.ext().signal_offers.push(Offer {
            w: me.waiter(),
            slot: slot.clone(),
            swap: false,
        });
        self.slot = Some(slot);
        Blocked::Waiting
    }

    fn complete(&mut self) -> Self::Output {
        delivered(
            self.slot
                .as_ref()
                .expect("pcml: signal event completed unblocked"),
        )
    }

    fn discard(&mut self, out: Self::Output) {
        // Our sync was abandoned after it took a signal: it goes back (to the front: it was
        // the oldest).
        if let Ok(s) = out {
            self.rec.hand_signal(s, true);
        }
    }
}

impl<M> SignalEvt<M> {
    fn poll_locked(&self, st: &super::record::State<M>) -> bool {
        st.ext
            .as_ref()
            .is_some_and(|e| e.kill.is_some() || !e.signals.is_empty())
    }
}

impl<M: Send + 'static> Pid<M> {
    /// Kills the actor with reason [`ExitReason::Killed`]`(why)`, whether or not it traps
    /// exits (Erlang's `exit(Pid, kill)`). It ends where it blocks or awaits in pcml (what it
    /// waited for there is abandoned as a loss), or, if it is running, at its next blocking
    /// point; its links and monitors are told. Killing a dead actor does nothing.
    ///
    /// ```
    /// use pcml::actor::{self, Ctx, ExitReason, Signal};
    ///
    /// pcml::run(|| {
    ///     let mut me = Ctx::<()>::new();
    ///     let (pid, _) = me.spawn_monitor(|mut ctx: Ctx<u8>| {
    ///         ctx.receive();
    ///     });
    ///     pid.kill("enough");
    ///     let Signal::Down { reason, .. } = me.receive_signal() else { unreachable!() };
    ///     assert_eq!(reason, ExitReason::Killed("enough".into()));
    /// });
    /// ```
    pub fn kill(&self, why: impl Into<Arc<str>>) {
        Peer::kill(&*self.rec, ExitReason::Killed(why.into()));
    }

    pub(crate) fn peer(&self) -> PeerRef {
        self.rec.to_peer()
    }

    /// Kills the actor with `reason`, whether or not it traps exits: [`kill`](Self::kill)
    /// with a reason of the caller's choosing. Meant for bridges whose local actor stands in
    /// for something that lives elsewhere (a process on another node): when that ends, the
    /// stand-in ends with the same reason, and its links and monitors are told that reason.
    /// Killing a dead actor does nothing.
    ///
    /// ```
    /// use pcml::actor::{Ctx, ExitReason, Signal};
    ///
    /// pcml::run(|| {
    ///     let mut me = Ctx::<()>::new();
    ///     let (pid, _) = me.spawn_monitor(|mut ctx: Ctx<u8>| {
    ///         ctx.receive();
    ///     });
    ///     pid.kill_with(ExitReason::NoActor);
    ///     let Signal::Down { reason, .. } = me.receive_signal() else { unreachable!() };
    ///     assert_eq!(reason, ExitReason::NoActor);
    /// });
    /// ```
    pub fn kill_with(&self, reason: ExitReason) {
        Peer::kill(&*self.rec, reason);
    }

    /// Sends the actor an exit signal from `from` with `reason`, as the end of a linked actor
    /// does, whether the two are linked or not (Erlang's `exit(Pid, Reason)`): an actor that
    /// traps exits gets [`Signal::Exit`]`{ from, reason }`; one that does not is killed with
    /// [`ExitReason::Linked`] if `reason` is abnormal and ignores it if it is
    /// [`ExitReason::Normal`]. A link between the two, if any, is removed. For bridges that
    /// relay signals from outside the process; use [`kill`](Self::kill) for a kill that
    /// cannot be trapped.
    ///
    /// ```
    /// use pcml::actor::{Ctx, ExitReason, Signal};
    ///
    /// let mut me = Ctx::<()>::new();
    /// me.trap_exits(true);
    /// let other = Ctx::<()>::new();
    /// me.pid().exit_signal(other.id(), ExitReason::Killed("bye".into()));
    /// assert_eq!(
    ///     me.receive_signal(),
    ///     Signal::Exit { from: other.id(), reason: ExitReason::Killed("bye".into()) }
    /// );
    /// ```
    pub fn exit_signal(&self, from: ActorId, reason: ExitReason) {
        Peer::exit_signal(&*self.rec, from, &reason);
    }
}

impl<M: Send + 'static> Ctx<M> {
    pub(super) fn peer(&self) -> PeerRef {
        self.rec.to_peer()
    }

    /// Raises a pending kill (called with the record unlocked).
    fn check_kill(&self) {
        let k = self.rec.lock().kill().cloned();
        if let Some(reason) = k {
            raise(self.rec.id, self.rec.detached, reason);
        }
    }

    /// Whether exit signals from linked actors are queued as [`Signal::Exit`] (true) or kill
    /// this actor when abnormal (false, the default). Returns the previous setting.
    ///
    /// ```
    /// let mut me = pcml::actor::Ctx::<()>::new();
    /// assert!(!me.trap_exits(true));
    /// assert!(me.trap_exits(true));
    /// ```
    pub fn trap_exits(&mut self, on: bool) -> bool {
        std::mem::replace(&mut self.rec.lock().ext().trap, on)
    }

    /// Links this actor and `pid` both ways. If `pid` has already ended, this actor gets an
    /// exit signal with [`ExitReason::NoActor`] at once (as Erlang's `link` does).
    ///
    /// ```
    /// use pcml::actor::{self, Ctx, ExitReason, Signal};
    ///
    /// pcml::run(|| {
    ///     let mut me = Ctx::<()>::new();
    ///     me.trap_exits(true);
    ///     let pid = actor::spawn(|mut ctx: Ctx<()>| {
    ///         ctx.receive();
    ///         panic!("crash");
    ///     });
    ///     me.link(&pid);
    ///     pid.send(()).unwrap();
    ///     let Signal::Exit { from, reason } = me.receive_signal() else { unreachable!() };
    ///     assert_eq!(from, pid.id());
    ///     assert_eq!(reason, ExitReason::Panic("crash".into()));
    /// });
    /// ```
    pub fn link<N: Send + 'static>(&self, pid: &Pid<N>) {
        self.link_peer(pid.peer());
    }

    pub(crate) fn link_peer(&self, other: PeerRef) {
        if other.peer_id() == self.id() {
            return;
        }
        if other.add_link(self.peer()) {
            self.rec.add_link(other);
        } else {
            self.rec.exit_signal(other.peer_id(), &ExitReason::NoActor);
        }
    }

    /// Removes the link between this actor and `pid`, if any.
    ///
    /// ```
    /// let me = pcml::actor::Ctx::<()>::new();
    /// let other = pcml::actor::Ctx::<()>::new();
    /// me.link(&other.pid());
    /// me.unlink(&other.pid());
    /// drop(other); // no exit signal reaches `me`
    /// ```
    pub fn unlink<N: Send + 'static>(&self, pid: &Pid<N>) {
        pid.rec.remove_link(self.id());
        self.rec.remove_link(pid.id());
    }

    /// Monitors `pid`: when it ends, this actor gets [`Signal::Down`] with the returned ref and
    /// the reason; at once, with [`ExitReason::NoActor`], if it has already ended.
    ///
    /// ```
    /// use pcml::actor::{Ctx, ExitReason, Signal};
    ///
    /// let mut me = Ctx::<()>::new();
    /// let other = Ctx::<()>::new();
    /// let mref = me.monitor(&other.pid());
    /// drop(other);
    /// assert_eq!(
    ///     me.receive_signal(),
    ///     Signal::Down { actor: mref.actor(), monitor: mref, reason: ExitReason::Normal }
    /// );
    /// ```
    pub fn monitor<N: Send + 'static>(&self, pid: &Pid<N>) -> MonitorRef {
        self.monitor_peer(pid.peer())
    }

    pub(crate) fn monitor_peer(&self, target: PeerRef) -> MonitorRef {
        let mref = MonitorRef {
            n: NEXT_MONITOR.fetch_add(1, Ordering::Relaxed),
            target: target.clone(),
        };
        if !target.add_monitor(mref.clone(), self.peer()) {
            self.rec.signal(Signal::Down {
                monitor: mref.clone(),
                actor: target.peer_id(),
                reason: ExitReason::NoActor,
            });
        }
        mref
    }

    /// Withdraws a monitor, and drops its `Down` signal if one is already queued.
    ///
    /// ```
    /// let me = pcml::actor::Ctx::<()>::new();
    /// let other = pcml::actor::Ctx::<()>::new();
    /// let mref = me.monitor(&other.pid());
    /// me.demonitor(&mref);
    /// drop(other);
    /// assert_eq!(me.try_receive_signal(), None);
    /// ```
    pub fn demonitor(&self, mref: &MonitorRef) {
        mref.target.remove_monitor(mref);
        let mut st = self.rec.lock();
        if let Some(ext) = st.ext.as_mut() {
            ext.signals
                .retain(|s| !matches!(s, Signal::Down { monitor, .. } if monitor == mref));
        }
    }

    /// Spawns a fiber actor linked to this one before it starts (Erlang's `spawn_link`).
    ///
    /// ```
    /// use pcml::actor::{Ctx, Signal};
    ///
    /// pcml::run(|| {
    ///     let mut me = Ctx::<()>::new();
    ///     me.trap_exits(true);
    ///     let child = me.spawn_link(|_: Ctx<u8>| {});
    ///     assert!(matches!(me.receive_signal(), Signal::Exit { from, .. } if from == child.id()));
    /// });
    /// ```
    #[track_caller]
    pub fn spawn_link<N, F>(&self, f: F) -> Pid<N>
    where
        N: Send + 'static,
        F: FnOnce(Ctx<N>) + Send + 'static,
    {
        let (pid, ctx, life) = super::new_actor();
        self.link(&pid);
        super::start_fiber(ctx, life, f, std::panic::Location::caller());
        pid
    }

    /// Spawns an async actor linked to this one before it starts.
    ///
    /// ```
    /// use pcml::actor::{Ctx, ExitReason, Signal};
    ///
    /// pcml::run(|| {
    ///     let mut me = Ctx::<()>::new();
    ///     me.trap_exits(true);
    ///     let child = me.spawn_link_async(|_: Ctx<u8>| async { panic!("no") });
    ///     assert_eq!(
    ///         me.receive_signal(),
    ///         Signal::Exit { from: child.id(), reason: ExitReason::Panic("no".into()) }
    ///     );
    /// });
    /// ```
    #[track_caller]
    pub fn spawn_link_async<N, F, Fut>(&self, f: F) -> Pid<N>
    where
        N: Send + 'static,
        F: FnOnce(Ctx<N>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (pid, ctx, life) = super::new_actor();
        self.link(&pid);
        super::start_task(ctx, life, f, std::panic::Location::caller());
        pid
    }

    /// Spawns a fiber actor monitored by this one before it starts.
    ///
    /// ```
    /// use pcml::actor::{Ctx, ExitReason, Signal};
    ///
    /// pcml::run(|| {
    ///     let mut me = Ctx::<()>::new();
    ///     let (_, mref) = me.spawn_monitor(|_: Ctx<u8>| {});
    ///     assert!(matches!(
    ///         me.receive_signal(),
    ///         Signal::Down { monitor, reason: ExitReason::Normal, .. } if monitor == mref
    ///     ));
    /// });
    /// ```
    #[track_caller]
    pub fn spawn_monitor<N, F>(&self, f: F) -> (Pid<N>, MonitorRef)
    where
        N: Send + 'static,
        F: FnOnce(Ctx<N>) + Send + 'static,
    {
        let (pid, ctx, life) = super::new_actor();
        let mref = self.monitor(&pid);
        super::start_fiber(ctx, life, f, std::panic::Location::caller());
        (pid, mref)
    }

    /// Spawns an async actor monitored by this one before it starts.
    ///
    /// ```
    /// use pcml::actor::{Ctx, Signal};
    ///
    /// pcml::run(|| {
    ///     let mut me = Ctx::<()>::new();
    ///     let (pid, _) = me.spawn_monitor_async(|_: Ctx<u8>| async {});
    ///     assert!(matches!(me.receive_signal(), Signal::Down { actor, .. } if actor == pid.id()));
    /// });
    /// ```
    #[track_caller]
    pub fn spawn_monitor_async<N, F, Fut>(&self, f: F) -> (Pid<N>, MonitorRef)
    where
        N: Send + 'static,
        F: FnOnce(Ctx<N>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (pid, ctx, life) = super::new_actor();
        let mref = self.monitor(&pid);
        super::start_task(ctx, life, f, std::panic::Location::caller());
        (pid, mref)
    }

    /// Receives the oldest signal, blocking until one comes. (An untyped actor gets its
    /// signals as messages instead, so this would wait forever there.)
    ///
    /// # Panics
    /// In an async task (use [`recv_signal`](Self::recv_signal)).
    ///
    /// ```
    /// use pcml::actor::{Ctx, Signal};
    ///
    /// let mut me = Ctx::<()>::new();
    /// let other = Ctx::<()>::new();
    /// me.monitor(&other.pid());
    /// drop(other);
    /// assert!(matches!(me.receive_signal(), Signal::Down { .. }));
    /// ```
    pub fn receive_signal(&mut self) -> Signal {
        self.receive_with("actor receive_signal", take_signal)
    }

    /// Takes the oldest signal if there is one. Never blocks.
    ///
    /// ```
    /// let mut me = pcml::actor::Ctx::<()>::new();
    /// assert_eq!(me.try_receive_signal(), None);
    /// ```
    pub fn try_receive_signal(&self) -> Option<Signal> {
        self.check_kill();
        self.rec.lock().ext.as_mut()?.signals.pop_front()
    }

    /// Receives a signal or a message, whichever is there (signals first), blocking until
    /// one comes.
    ///
    /// # Panics
    /// In an async task (use [`recv_any`](Self::recv_any)).
    ///
    /// ```
    /// use pcml::actor::{Ctx, Received};
    ///
    /// let mut me = Ctx::<&str>::new();
    /// let other = Ctx::<()>::new();
    /// me.monitor(&other.pid());
    /// me.pid().send("hi").unwrap();
    /// drop(other);
    /// assert!(matches!(me.receive_any(), Received::Signal(_)));
    /// assert!(matches!(me.receive_any(), Received::Msg("hi")));
    /// ```
    pub fn receive_any(&mut self) -> Received<M> {
        self.rec.give_back(super::record::own_mut(&mut self.own));
        let r = self.receive_with("actor receive_any", take_any);
        self.noted_any(r)
    }

    /// `r`, its message noted first as the last one received if the actor asked for it
    /// ([`report_last_message`](Self::report_last_message)).
    #[inline(always)]
    fn noted_any(&self, r: Received<M>) -> Received<M> {
        match r {
            Received::Msg(m) => Received::Msg(super::noted(self.last, &self.rec, m)),
            signal => signal,
        }
    }

    /// Blocks, as a fiber actor (`what` names the call in the misuse panic), until `take`
    /// finds something in the actor's state (a kill pending ends the actor first): the
    /// blocking twin of `recv_with`.
    fn receive_with<R>(
        &mut self,
        what: &str,
        mut take: impl FnMut(&mut State<M>) -> Option<R>,
    ) -> R {
        loop {
            let mut st = self.rec.lock();
            if let Some(k) = st.kill().cloned() {
                drop(st);
                raise(self.rec.id, self.rec.detached, k);
            }
            if let Some(r) = take(&mut st) {
                return r;
            }
            park(what, st);
        }
    }

    /// Receiving a signal, as an event (to `choose` with messages, channels, timeouts).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// pcml::run(|| {
    ///     let me = pcml::actor::Ctx::<()>::new();
    ///     assert_eq!(me.signal_evt().sync_timeout(Duration::from_millis(1)), None);
    /// });
    /// ```
    pub fn signal_evt(&self) -> Event<Signal> {
        let (id, detached) = (self.rec.id, self.rec.detached);
        Event::from_base(SignalEvt {
            rec: self.rec.clone(),
            slot: None,
        })
        .wrap(move |r| r.unwrap_or_else(|reason| raise(id, detached, reason)))
    }

    /// A message or a signal, as an event (signals are offered beside messages; if both are
    /// ready the choice between them is fair).
    ///
    /// ```
    /// use pcml::actor::{Ctx, Received};
    ///
    /// pcml::run(|| {
    ///     let me = Ctx::new();
    ///     me.pid().send(1).unwrap();
    ///     assert!(matches!(me.receive_any_evt().sync(), Received::Msg(1)));
    /// });
    /// ```
    pub fn receive_any_evt(&self) -> Event<Received<M>> {
        crate::choose([
            self.signal_evt().wrap(Received::Signal),
            self.receive_evt().wrap(Received::Msg),
        ])
    }

    /// Receives a signal, for async actors.
    ///
    /// ```
    /// use pcml::actor::{Ctx, Signal};
    ///
    /// pcml::run(|| {
    ///     let mut me = Ctx::<()>::new();
    ///     let pid = pcml::actor::spawn_async(|mut ctx: Ctx<()>| async move {
    ///         ctx.trap_exits(true);
    ///         let _child = ctx.spawn_link_async(|_: Ctx<()>| async {});
    ///         assert!(matches!(ctx.recv_signal().await, Signal::Exit { .. }));
    ///     });
    ///     me.monitor(&pid);
    ///     me.receive_signal();
    /// });
    /// ```
    pub async fn recv_signal(&mut self) -> Signal {
        self.recv_with(take_signal).await
    }

    /// Receives a signal or a message (signals first), for async actors.
    ///
    /// ```
    /// use pcml::actor::{Ctx, Received};
    ///
    /// pcml::run(|| {
    ///     pcml::spawn_task(async {
    ///         let mut me = Ctx::new();
    ///         me.pid().send(5).unwrap();
    ///         assert!(matches!(me.recv_any().await, Received::Msg(5)));
    ///     })
    ///     .join()
    ///     .unwrap();
    /// });
    /// ```
    pub async fn recv_any(&mut self) -> Received<M> {
        self.rec.give_back(super::record::own_mut(&mut self.own));
        let r = self.recv_with(take_any).await;
        self.noted_any(r)
    }

    /// Waits, as an async actor, until `take` finds something in the actor's state (a kill
    /// pending ends the actor first).
    async fn recv_with<R>(&mut self, mut take: impl FnMut(&mut State<M>) -> Option<R>) -> R {
        let rec = &self.rec;
        std::future::poll_fn(|cx| {
            let mut st = rec.lock();
            if let Some(k) = st.kill().cloned() {
                drop(st);
                raise(rec.id, rec.detached, k);
            }
            if let Some(r) = take(&mut st) {
                return Poll::Ready(r);
            }
            st.parked = Some(Blocker::from_waker(cx.waker().clone()));
            Poll::Pending
        })
        .await
    }
}

/// The oldest signal, for `receive_signal` and `recv_signal`.
fn take_signal<M>(st: &mut State<M>) -> Option<Signal> {
    st.ext.as_mut().and_then(|e| e.signals.pop_front())
}

/// The oldest signal, else the oldest message, for `receive_any` and `recv_any`.
fn take_any<M>(st: &mut State<M>) -> Option<Received<M>> {
    take_signal(st)
        .map(Received::Signal)
        .or_else(|| st.pop().map(Received::Msg))
}
