//! Supervisors (Erlang/OTP's `supervisor`): an actor that starts children from
//! [`ChildSpec`]s, links to them, traps their exits, and restarts them by a [`Strategy`],
//! giving up when they fail too often.
//!
//! - [`Strategy::OneForOne`]: only the child that ended is restarted.
//! - [`Strategy::OneForAll`]: every other child is killed, then all are restarted in order.
//! - [`Restart`] per child: `Permanent` (always restarted), `Transient` (restarted only after
//!   an abnormal end), `Temporary` (never).
//! - Restart intensity: more than `max_restarts` restarts within `period` and the supervisor
//!   kills its children and ends with [`ExitReason::Killed`], so its own supervisor (or
//!   monitor) sees it fail.
//!
//! The supervisor is an async actor; its children are whatever their start functions spawn
//! (fiber or async actors of any message type). A start function runs inside the supervisor:
//! it should spawn and return at once. Children are linked to the supervisor, so if it is
//! killed they die with it (unless they trap exits).
//!
//! ```
//! use pcml::actor::{self, ChildSpec, Ctx, Strategy, Supervisor};
//!
//! pcml::run(|| {
//!     let sup = Supervisor::new(Strategy::OneForOne)
//!         .child(ChildSpec::new("doc-sup-worker", || {
//!             actor::spawn(|mut ctx: Ctx<u32>| {
//!                 actor::register("doc-sup-worker", &ctx.pid()).unwrap();
//!                 loop {
//!                     let n = ctx.receive();
//!                     assert!(n != 0, "zero");
//!                 }
//!             })
//!         }))
//!         .start();
//!     // Crash the worker; the supervisor starts a new one under the same name.
//!     let first = loop {
//!         if let Some(p) = actor::whereis::<u32>("doc-sup-worker") {
//!             break p;
//!         }
//!         pcml::yield_now();
//!     };
//!     first.send(0).unwrap();
//!     let second = loop {
//!         match actor::whereis::<u32>("doc-sup-worker") {
//!             Some(p) if p != first => break p,
//!             _ => pcml::yield_now(),
//!         }
//!     };
//!     assert!(second.is_alive());
//!     sup.send(actor::SupervisorMsg::Stop).unwrap();
//! });
//! ```
//!
//! A start function that panics takes the supervisor down (and, through the links, the children
//! already started). Killing a child is cooperative (it ends wherever it blocks or awaits in
//! pcml, or at its next blocking point), and the supervisor waits for each killed child's
//! exit, so a child that computes forever without synchronizing holds up a one-for-all restart or a stop: Erlang's brutal kill after a shutdown
//! timeout has no equivalent here.
//!
//! # Invariants
//! - The supervisor traps exits, so every child's end reaches it as one `Signal::Exit`. A child
//!   spawned by its start function is linked before it starts, so the exit carries its real
//!   reason (a returned pid spawned elsewhere is linked afterwards, and gives `NoActor` if it
//!   had already ended).
//! - `Running::child` is `Some` exactly while the supervisor has not yet seen that child's
//!   exit; restarts and `terminate_all` keep it so, which is how an exit is matched to its
//!   child.

use std::collections::VecDeque;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::record::{PeerRef, raise};
use super::{ActorId, Ctx, ExitReason, Pid, Received, Signal};

/// How a supervisor restarts its children when one ends.
///
/// ```
/// let s = pcml::actor::Supervisor::new(pcml::actor::Strategy::OneForAll);
/// # drop(s);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Restart only the child that ended.
    OneForOne,
    /// Kill the other children, then restart all of them in order.
    OneForAll,
}

/// When a child is restarted.
///
/// ```
/// use pcml::actor::{ChildSpec, Restart};
///
/// let spec = ChildSpec::new("doc-restart", || pcml::actor::Ctx::<()>::new().pid())
///     .restart(Restart::Transient);
/// # drop(spec);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    /// Always (the default).
    Permanent,
    /// Only after an abnormal end.
    Transient,
    /// Never.
    Temporary,
}

/// A started child, type-erased: any [`Pid`] converts into it.
///
/// ```
/// let me = pcml::actor::Ctx::<u8>::new();
/// let child: pcml::actor::Child = me.pid().into();
/// assert_eq!(child.id(), me.id());
/// ```
pub struct Child(PeerRef);

impl Child {
    /// The child actor's id.
    ///
    /// ```
    /// let me = pcml::actor::Ctx::<()>::new();
    /// assert_eq!(pcml::actor::Child::from(me.pid()).id(), me.id());
    /// ```
    pub fn id(&self) -> ActorId {
        self.0.peer_id()
    }
}

impl<M: Send + 'static> From<Pid<M>> for Child {
    fn from(p: Pid<M>) -> Self {
        Child(p.peer())
    }
}

impl fmt::Debug for Child {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Child({})", self.id())
    }
}

type StartFn = Box<dyn FnMut() -> Child + Send>;

/// How to start one child, and when to restart it.
///
/// ```
/// use pcml::actor::{self, ChildSpec, Ctx};
///
/// let spec = ChildSpec::new("doc-spec", || actor::spawn(|mut ctx: Ctx<u8>| { ctx.receive(); }));
/// assert_eq!(spec.name(), "doc-spec");
/// ```
pub struct ChildSpec {
    name: String,
    restart: Restart,
    start: StartFn,
    /// Set by `with_last_message`: the child's message type and its formatter.
    keep_last: Option<super::current::KeepLast>,
}

impl fmt::Debug for ChildSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChildSpec")
            .field("name", &self.name)
            .field("restart", &self.restart)
            .field("last_message", &self.keep_last.is_some())
            .finish_non_exhaustive()
    }
}

impl ChildSpec {
    /// A permanent child named `name` (for reports), started by calling `start`.
    ///
    /// ```
    /// let spec = pcml::actor::ChildSpec::new("doc-new", || pcml::actor::Ctx::<()>::new().pid());
    /// # drop(spec);
    /// ```
    pub fn new<M, F>(name: impl Into<String>, mut start: F) -> Self
    where
        M: Send + 'static,
        F: FnMut() -> Pid<M> + Send + 'static,
    {
        ChildSpec {
            name: name.into(),
            restart: Restart::Permanent,
            start: Box::new(move || Child::from(start())),
            keep_last: None,
        }
    }

    /// As [`new`](Self::new), and the child keeps the `Debug` text of the last message it
    /// received, so that the report of its crash names it, as
    /// [`Ctx::report_last_message`](super::Ctx::report_last_message)`(true)` called by the
    /// child itself does (see there for the cost and for which receives count), from its
    /// first message on and in every restart. It applies to the actors of message type `M`
    /// that `start` spawns (the child, and any helper of the same type it spawns); not to a
    /// returned pid spawned elsewhere, whose context was made before the supervisor asked.
    ///
    /// ```
    /// use pcml::actor::{self, ChildSpec, Ctx, Strategy, Supervisor};
    ///
    /// pcml::run(|| {
    ///     let sup = Supervisor::new(Strategy::OneForOne)
    ///         .child(ChildSpec::with_last_message("parser", || {
    ///             actor::spawn(|mut ctx: Ctx<String>| loop {
    ///                 let line = ctx.receive();
    ///                 // A crash prints: pcml: <actor N> crashed (last message received:
    ///                 // "not a number"): ...
    ///                 let _n: u32 = line.parse().expect("a number");
    ///             })
    ///         }))
    ///         .start();
    ///     # drop(sup);
    /// });
    /// ```
    pub fn with_last_message<M, F>(name: impl Into<String>, start: F) -> Self
    where
        M: fmt::Debug + Send + 'static,
        F: FnMut() -> Pid<M> + Send + 'static,
    {
        let keep: super::current::KeepLast = (
            std::any::TypeId::of::<M>(),
            super::debug_text::<M> as fn(&dyn std::any::Any, &mut String),
        );
        ChildSpec {
            keep_last: Some(keep),
            ..Self::new(name, start)
        }
    }

    /// Sets when the child is restarted.
    ///
    /// ```
    /// use pcml::actor::{ChildSpec, Restart};
    /// let spec = ChildSpec::new("doc-temp", || pcml::actor::Ctx::<()>::new().pid())
    ///     .restart(Restart::Temporary);
    /// # drop(spec);
    /// ```
    pub fn restart(mut self, r: Restart) -> Self {
        self.restart = r;
        self
    }

    /// The child's name.
    ///
    /// ```
    /// let spec = pcml::actor::ChildSpec::new("doc-name", || pcml::actor::Ctx::<()>::new().pid());
    /// assert_eq!(spec.name(), "doc-name");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// What a supervisor's mailbox takes.
///
/// ```
/// use pcml::actor::{ChildInfo, Ctx, Strategy, Supervisor, SupervisorMsg};
///
/// pcml::run(|| {
///     let sup = Supervisor::new(Strategy::OneForOne).start();
///     let mut me = Ctx::<Vec<ChildInfo>>::new();
///     sup.send(SupervisorMsg::WhichChildren(me.pid())).unwrap();
///     assert!(me.receive().is_empty());
///     sup.send(SupervisorMsg::Stop).unwrap();
/// });
/// ```
#[derive(Debug)]
pub enum SupervisorMsg {
    /// Reply with the children's state.
    WhichChildren(Pid<Vec<ChildInfo>>),
    /// Kill the children (last first) and end normally.
    Stop,
}

/// A child's state, as [`SupervisorMsg::WhichChildren`] reports it.
///
/// ```
/// let info = pcml::actor::ChildInfo { name: "w".into(), id: None, restarts: 0 };
/// assert!(info.id.is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildInfo {
    /// The spec's name.
    pub name: String,
    /// The running actor, if any.
    pub id: Option<ActorId>,
    /// How many times this child was restarted.
    pub restarts: u32,
}

/// A supervisor's configuration: strategy, restart intensity, children. [`start`] spawns it.
///
/// [`start`]: Supervisor::start
///
/// ```
/// use std::time::Duration;
/// use pcml::actor::{Strategy, Supervisor};
///
/// let s = Supervisor::new(Strategy::OneForOne).intensity(5, Duration::from_secs(10));
/// # drop(s);
/// ```
#[derive(Debug)]
pub struct Supervisor {
    strategy: Strategy,
    max_restarts: u32,
    period: Duration,
    children: Vec<ChildSpec>,
}

struct Running {
    spec: ChildSpec,
    child: Option<Child>,
    restarts: u32,
}

impl Supervisor {
    /// A supervisor with no children and the default intensity: at most 3 restarts in 5 s.
    ///
    /// ```
    /// let s = pcml::actor::Supervisor::new(pcml::actor::Strategy::OneForOne);
    /// # drop(s);
    /// ```
    pub fn new(strategy: Strategy) -> Self {
        Supervisor {
            strategy,
            max_restarts: 3,
            period: Duration::from_secs(5),
            children: Vec::new(),
        }
    }

    /// Gives up when more than `max_restarts` restarts happen within `period`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let s = pcml::actor::Supervisor::new(pcml::actor::Strategy::OneForAll)
    ///     .intensity(0, Duration::from_secs(1)); // any failure ends the supervisor
    /// # drop(s);
    /// ```
    pub fn intensity(mut self, max_restarts: u32, period: Duration) -> Self {
        self.max_restarts = max_restarts;
        self.period = period;
        self
    }

    /// Adds a child; children start in the order added.
    ///
    /// ```
    /// use pcml::actor::{ChildSpec, Strategy, Supervisor};
    /// let s = Supervisor::new(Strategy::OneForOne)
    ///     .child(ChildSpec::new("doc-child", || pcml::actor::Ctx::<()>::new().pid()));
    /// # drop(s);
    /// ```
    pub fn child(mut self, spec: ChildSpec) -> Self {
        self.children.push(spec);
        self
    }

    /// Spawns the supervisor (an async actor), which starts its children in order.
    ///
    /// # Panics
    /// Outside a pcml runtime.
    ///
    /// ```
    /// use pcml::actor::{Ctx, ExitReason, Signal, Strategy, Supervisor, SupervisorMsg};
    ///
    /// pcml::run(|| {
    ///     let mut me = Ctx::<()>::new();
    ///     let sup = Supervisor::new(Strategy::OneForOne).start();
    ///     me.monitor(&sup);
    ///     sup.send(SupervisorMsg::Stop).unwrap();
    ///     let Signal::Down { reason, .. } = me.receive_signal() else { unreachable!() };
    ///     assert_eq!(reason, ExitReason::Normal);
    /// });
    /// ```
    pub fn start(self) -> Pid<SupervisorMsg> {
        super::spawn_async(move |ctx| self.run(ctx, None))
    }

    /// Spawns the supervisor linked to `parent` before it starts.
    ///
    /// ```
    /// use pcml::actor::{Ctx, Strategy, Supervisor, SupervisorMsg};
    ///
    /// pcml::run(|| {
    ///     let mut me = Ctx::<()>::new();
    ///     me.trap_exits(true);
    ///     let sup = Supervisor::new(Strategy::OneForOne).start_link(&me);
    ///     sup.send(SupervisorMsg::Stop).unwrap();
    ///     me.receive_signal();
    /// });
    /// ```
    pub fn start_link<N: Send + 'static>(self, parent: &Ctx<N>) -> Pid<SupervisorMsg> {
        let parent_id = parent.id();
        parent.spawn_link_async(move |ctx| self.run(ctx, Some(parent_id)))
    }

    async fn run(self, mut ctx: Ctx<SupervisorMsg>, parent: Option<ActorId>) {
        ctx.trap_exits(true);
        let Supervisor {
            strategy,
            max_restarts,
            period,
            children,
        } = self;
        let mut kids: Vec<Running> = children
            .into_iter()
            .map(|spec| Running {
                spec,
                child: None,
                restarts: 0,
            })
            .collect();
        for k in kids.iter_mut() {
            start_child(&ctx, k);
        }
        let mut recent: VecDeque<Instant> = VecDeque::new();
        loop {
            let (from, reason) = match ctx.recv_any().await {
                Received::Msg(SupervisorMsg::WhichChildren(reply)) => {
                    let info = kids
                        .iter()
                        .map(|k| ChildInfo {
                            name: k.spec.name.clone(),
                            id: k.child.as_ref().map(Child::id),
                            restarts: k.restarts,
                        })
                        .collect();
                    let _ = reply.send(info);
                    continue;
                }
                Received::Msg(SupervisorMsg::Stop) => {
                    terminate_all(&mut ctx, &mut kids, None).await;
                    return;
                }
                Received::Signal(Signal::Exit { from, reason }) => (from, reason),
                Received::Signal(Signal::Down { .. }) => continue,
            };
            let Some(i) = kids
                .iter()
                .position(|k| k.child.as_ref().is_some_and(|c| c.id() == from))
            else {
                // Not a child. If it is our parent and it failed, so do we (after the
                // children); anything else linked to us (someone called `link`) is ignored.
                if Some(from) == parent && reason.is_abnormal() {
                    terminate_all(&mut ctx, &mut kids, None).await;
                    raise(
                        ctx.id(),
                        false,
                        ExitReason::Linked {
                            from,
                            reason: Arc::new(reason),
                        },
                    );
                }
                continue;
            };
            kids[i].child = None;
            let restart = match kids[i].spec.restart {
                Restart::Permanent => true,
                Restart::Transient => reason.is_abnormal(),
                Restart::Temporary => false,
            };
            if !restart {
                continue;
            }
            // Restart intensity: at most `max_restarts` within `period`.
            let now = Instant::now();
            while recent.front().is_some_and(|&t| now - t > period) {
                recent.pop_front();
            }
            recent.push_back(now);
            if recent.len() > max_restarts as usize {
                crate::log::supervisor_gave_up(
                    ctx.id(),
                    &kids[i].spec.name,
                    &reason,
                    max_restarts,
                    period,
                );
                terminate_all(&mut ctx, &mut kids, None).await;
                raise(
                    ctx.id(),
                    false,
                    ExitReason::Killed(Arc::from(format!(
                        "supervisor gave up: more than {max_restarts} restarts within {period:?} (last: child {:?} {reason})",
                        kids[i].spec.name
                    ))),
                );
            }
            match strategy {
                Strategy::OneForOne => {
                    kids[i].restarts += 1;
                    crate::log::child_restarted(
                        ctx.id(),
                        &kids[i].spec.name,
                        &reason,
                        kids[i].restarts,
                    );
                    start_child(&ctx, &mut kids[i]);
                }
                Strategy::OneForAll => {
                    terminate_all(&mut ctx, &mut kids, Some(i)).await;
                    for k in kids.iter_mut() {
                        k.restarts += 1;
                        crate::log::child_restarted(ctx.id(), &k.spec.name, &reason, k.restarts);
                        start_child(&ctx, k);
                    }
                }
            }
        }
    }
}

/// Starts a child. Every actor its start function spawns is linked to the supervisor before
/// it starts (so even a child that ends at once reports its real reason); the ones that are
/// not the returned child are unlinked again. A returned pid that was not spawned by the call
/// is linked now.
fn start_child(ctx: &Ctx<SupervisorMsg>, k: &mut Running) {
    let me = ctx.peer();
    let keep_last = k.spec.keep_last;
    let (child, spawned) =
        super::current::linking_spawns(me.clone(), keep_last, || (k.spec.start)());
    let mut linked = false;
    for s in spawned {
        if s.peer_id() == child.id() {
            linked = true;
        } else {
            s.remove_link(me.peer_id());
            me.remove_link(s.peer_id());
        }
    }
    if !linked {
        ctx.link_peer(child.0.clone());
    }
    k.child = Some(child);
}

/// Kills the running children, last first, and waits for each one's exit signal. Other
/// children's exits that arrive meanwhile are recorded (they are restarted with the rest, or
/// not at all when stopping). `except` is a child already known dead.
async fn terminate_all(ctx: &mut Ctx<SupervisorMsg>, kids: &mut [Running], except: Option<usize>) {
    for j in (0..kids.len()).rev() {
        if Some(j) == except {
            continue;
        }
        let Some(peer) = kids[j].child.as_ref().map(|c| c.0.clone()) else {
            continue;
        };
        let id = peer.peer_id();
        peer.kill(ExitReason::Killed(Arc::from("shutdown by its supervisor")));
        // Wait for its exit signal (links deliver one however it ends).
        loop {
            match ctx.recv_signal().await {
                Signal::Exit { from, .. } if from == id => break,
                Signal::Exit { from, .. } => {
                    if let Some(k) = kids
                        .iter_mut()
                        .find(|k| k.child.as_ref().is_some_and(|c| c.id() == from))
                    {
                        k.child = None;
                    }
                }
                Signal::Down { .. } => {}
            }
        }
        kids[j].child = None;
    }
}
