//! The node: its name, its connections, the actors it exports to Erlang and the proxies that
//! stand for Erlang processes here.
//!
//! # Implementation
//! - A local actor gets an Erlang pid when it is first exported ([`Node::erl_pid`],
//!   [`Node::register`], or a link or monitor that needs one): an entry that decodes terms
//!   into its message type and sends them to its mailbox. A node-private context monitors
//!   every exported actor, so entries of dead actors are dropped (when the node next exports
//!   one).
//! - A remote process gets a proxy per message type ([`Node::pid_of`]): a fiber actor that
//!   traps exits, whose mailbox takes `M`s and sends them as terms. The proxy monitors the
//!   remote process (one `MONITOR_P`) and ends with its exit reason, so local links and
//!   monitors on the proxy's `Pid` behave as links and monitors on the remote process. When
//!   a local actor linked to the proxy ends, the proxy sends the link and its exit signal to
//!   the remote process. The `Term` proxy of a process also holds the links and monitors
//!   that the process makes on local actors (`LINK`, `MONITOR_P` from Erlang).
//! - A connection that goes down ends every proxy of that node with `noconnection`. A proxy
//!   ends by a `Ctl::End` through its control channel, after the requests queued before it,
//!   so a `LINK` that a peer sends just before the `EXIT` it announces takes effect first.
//! - A `LINK` or `MONITOR_P` from a peer is made by the process's `Term` proxy while the
//!   connection's reader waits for it, so the peer's next message finds the link or monitor
//!   in place, as in Erlang.
//! - A proxy monitored from another node (the proxy, on a pcml peer, of a process that one
//!   of our proxies monitors) gets no proxy of its own for the watcher, which would monitor
//!   back and so on without end: the node keeps the watcher and its reference and sends it
//!   the `MONITOR_P_EXIT` when the proxy ends.
//!
//! # Invariants
//! - The state lock is never held while blocking, spawning a connection, or calling into
//!   an actor's lock other than by a non-blocking send.

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use pcml::actor::{self, ActorId, Ctx, ExitReason, MonitorRef, Pid, Signal};
use pcml::chan::{Receiver, Sender, unbounded};
use pcml::net::{TcpListener, TcpStream};

use crate::conn::{self, Conn};
use crate::handshake::{self, Admit};
use crate::term::{
    self, ErlPid, FromTerm, IntoTerm, Reference, Term, TermError, atom, is_atom, reason_from_term,
    reason_to_term,
};
use crate::{DistError, epmd, wire};

/// How a node starts: its name, cookie and settings. See [`Node`].
///
/// ```no_run
/// use std::time::Duration;
/// use pcml_dist::NodeBuilder;
///
/// pcml::run(|| {
///     let node = NodeBuilder::new("pcml@127.0.0.1")
///         .cookie("secret")
///         .net_ticktime(Duration::from_secs(60))
///         .start()
///         .unwrap();
///     println!("running as {}", node.name());
/// });
/// ```
#[derive(Clone, Debug)]
pub struct NodeBuilder {
    name: String,
    long: bool,
    cookie: Option<String>,
    ticktime: Duration,
    max_frame: usize,
    epmd_port: Option<u16>,
    port: u16,
}

impl NodeBuilder {
    /// A node named `name`: `alive@host`, or just `alive` for a short name on this host
    /// (as `erl -sname alive`; [`long_names`](Self::long_names) for `erl -name`).
    ///
    /// ```
    /// let b = pcml_dist::NodeBuilder::new("worker@127.0.0.1");
    /// # let _ = b;
    /// ```
    pub fn new(name: &str) -> Self {
        NodeBuilder {
            name: name.to_string(),
            long: false,
            cookie: None,
            ticktime: Duration::from_secs(60),
            max_frame: 32 << 20,
            epmd_port: None,
            port: 0,
        }
    }

    /// The cookie nodes must share to talk. Without it, the node reads `~/.erlang.cookie`
    /// as `erl` does.
    ///
    /// ```
    /// let b = pcml_dist::NodeBuilder::new("a@127.0.0.1").cookie("secret");
    /// # let _ = b;
    /// ```
    pub fn cookie(mut self, cookie: &str) -> Self {
        self.cookie = Some(cookie.to_string());
        self
    }

    /// A name without a host gets this machine's full host name (`erl -name`), not the
    /// short one (`erl -sname`).
    ///
    /// ```
    /// let b = pcml_dist::NodeBuilder::new("a").long_names();
    /// # let _ = b;
    /// ```
    pub fn long_names(mut self) -> Self {
        self.long = true;
        self
    }

    /// The cluster's `net_ticktime` (default 60 s, as Erlang's): the node ticks after a
    /// quarter of it without sending, and gives up a peer silent for all of it.
    ///
    /// ```
    /// let b = pcml_dist::NodeBuilder::new("a@127.0.0.1")
    ///     .net_ticktime(std::time::Duration::from_secs(20));
    /// # let _ = b;
    /// ```
    pub fn net_ticktime(mut self, d: Duration) -> Self {
        self.ticktime = d.max(Duration::from_millis(400));
        self
    }

    /// The longest frame accepted from a peer (default 32 MiB); a longer one closes that
    /// connection.
    ///
    /// ```
    /// let b = pcml_dist::NodeBuilder::new("a@127.0.0.1").max_frame(1 << 20);
    /// # let _ = b;
    /// ```
    pub fn max_frame(mut self, bytes: usize) -> Self {
        self.max_frame = bytes;
        self
    }

    /// The EPMD port (default: `ERL_EPMD_PORT`, else 4369).
    ///
    /// ```
    /// let b = pcml_dist::NodeBuilder::new("a@127.0.0.1").epmd_port(4370);
    /// # let _ = b;
    /// ```
    pub fn epmd_port(mut self, port: u16) -> Self {
        self.epmd_port = Some(port);
        self
    }

    /// The port to accept connections on (default 0: any free port).
    ///
    /// ```
    /// let b = pcml_dist::NodeBuilder::new("a@127.0.0.1").listen_port(0);
    /// # let _ = b;
    /// ```
    pub fn listen_port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Starts the node: listens, registers with EPMD (starting `epmd -daemon` if none
    /// answers) and accepts connections from then on. Call it in a pcml runtime.
    ///
    /// # Errors
    /// No cookie, an EPMD that cannot be reached or started, a name already registered.
    ///
    /// ```no_run
    /// pcml::run(|| {
    ///     let node = pcml_dist::NodeBuilder::new("a@127.0.0.1").cookie("c").start().unwrap();
    ///     # let _ = node;
    /// });
    /// ```
    pub fn start(self) -> Result<Node, DistError> {
        let (alive, host) = match self.name.split_once('@') {
            Some((a, h)) if !a.is_empty() && !h.is_empty() => (a.to_string(), h.to_string()),
            Some(_) => return Err(DistError::Name(self.name)),
            None => (self.name.clone(), local_host(self.long)),
        };
        if alive.is_empty()
            || !alive
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(DistError::Name(self.name));
        }
        let cookie = match self.cookie {
            Some(c) => c,
            None => read_cookie()?,
        };
        let epmd_port = self.epmd_port.unwrap_or_else(epmd::port_from_env);
        let listener = TcpListener::bind(("0.0.0.0", self.port)).map_err(DistError::io)?;
        let port = listener.local_addr().map_err(DistError::io)?.port();
        let (epmd_conn, creation) = epmd::register(&alive, port, epmd_port)?;
        let name = format!("{alive}@{host}");
        let (stop_tx, stop_rx) = unbounded::<()>();
        let inner = Arc::new(Inner {
            system: ErlPid::new(name.as_str(), 0, 0, creation),
            name,
            cookie,
            creation,
            ticktime: self.ticktime,
            max_frame: self.max_frame,
            epmd_port,
            port,
            epmd: Mutex::new(Some(epmd_conn)),
            stop: Mutex::new(Some(stop_tx)),
            janitor: Mutex::new(Ctx::new()),
            st: Mutex::new(State::default()),
        });
        let acceptor = inner.clone();
        pcml::spawn(move || acceptor.accept_loop(listener, stop_rx));
        Ok(Node {
            inner: inner.clone(),
            _guard: Arc::new(Guard(inner)),
        })
    }
}

fn local_host(long: bool) -> String {
    let h = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let h = if h.is_empty() {
        "localhost".to_string()
    } else {
        h
    };
    if long {
        h
    } else {
        h.split('.').next().unwrap_or("localhost").to_string()
    }
}

fn read_cookie() -> Result<String, DistError> {
    let home = std::env::var_os("HOME").ok_or(DistError::NoCookie)?;
    let p = std::path::Path::new(&home).join(".erlang.cookie");
    let c = std::fs::read_to_string(p).map_err(|_| DistError::NoCookie)?;
    let c = c.trim();
    if c.is_empty() {
        return Err(DistError::NoCookie);
    }
    Ok(c.to_string())
}

/// A running node of an Erlang cluster: remote processes get pcml [`Pid`]s
/// ([`pid_of`](Self::pid_of)), local actors get Erlang pids ([`erl_pid`](Self::erl_pid)) and
/// names ([`register`](Self::register)).
///
/// Cheap to clone; the node stops (unregisters from EPMD, closes its connections, kills
/// its proxies with `noconnection`) when the last clone is dropped or [`stop`](Self::stop)
/// is called.
///
/// ```no_run
/// use pcml::actor::{self, Ctx};
/// use pcml_dist::term::{ErlPid, Term, atom, tuple};
/// use pcml_dist::NodeBuilder;
///
/// pcml::run(|| {
///     let node = NodeBuilder::new("echo@127.0.0.1").cookie("secret").start().unwrap();
///     let n = node.clone();
///     let echo = actor::spawn(move |mut ctx: Ctx<(ErlPid, Term)>| loop {
///         let (from, t) = ctx.receive();
///         let reply = n.pid_of::<Term>(&from).unwrap();
///         let _ = reply.send(tuple(vec![atom("echo"), t]));
///     });
///     node.register("echo", &echo).unwrap();
///     // From Erlang: {echo, 'echo@127.0.0.1'} ! {self(), hello}.
/// # node.stop();
/// });
/// ```
#[derive(Clone)]
pub struct Node {
    inner: Arc<Inner>,
    _guard: Arc<Guard>,
}

/// Stops the node when the last `Node` goes.
struct Guard(Arc<Inner>);

impl Drop for Guard {
    fn drop(&mut self) {
        self.0.stop();
    }
}

pub(crate) struct Inner {
    name: String,
    cookie: String,
    creation: u32,
    ticktime: Duration,
    max_frame: usize,
    epmd_port: u16,
    /// The port it accepts on.
    port: u16,
    /// The node's own pid: the sender of registered sends.
    system: ErlPid,
    /// The kept EPMD registration (dropped: unregistered).
    epmd: Mutex<Option<TcpStream>>,
    /// Dropped to stop the accept loop.
    stop: Mutex<Option<Sender<()>>>,
    /// Monitors every exported actor, to forget the dead.
    janitor: Mutex<Ctx<()>>,
    st: Mutex<State>,
}

/// How many ended proxies [`Node::remote_of`] still answers for.
const ENDED_KEPT: usize = 1024;

#[derive(Default)]
struct State {
    conns: HashMap<String, Slot>,
    exports: HashMap<ActorId, Arc<Export>>,
    by_num: HashMap<u64, Arc<Export>>,
    names: HashMap<String, Arc<Export>>,
    proxies: HashMap<(ErlPid, TypeId), Proxy>,
    proxy_keys: HashMap<ActorId, (ErlPid, TypeId)>,
    /// The Erlang processes of the last [`ENDED_KEPT`] proxies that ended, oldest first in
    /// `ended_order`: [`Node::remote_of`] still answers for the id an exit signal carries
    /// after its proxy has been swept.
    ended: HashMap<ActorId, ErlPid>,
    ended_order: VecDeque<ActorId>,
    /// Remote processes monitoring a proxy (in practice the stand-in, on a pcml node, of
    /// a process that a proxy here monitors), with their references: told when the proxy
    /// ends, without a proxy of their own (which would monitor back, and so on forever).
    proxy_watchers: HashMap<ActorId, Vec<(ErlPid, Term)>>,
    watched: HashMap<MonitorRef, ActorId>,
    next_num: u64,
    next_ref: u64,
    stopped: bool,
}

enum Slot {
    Up(Arc<Conn>),
    Pending(Vec<Sender<Result<Arc<Conn>, DistError>>>),
}

/// A local actor as Erlang sees it.
pub(crate) struct Export {
    erl: ErlPid,
    actor: ActorId,
    handle: Box<dyn Handle>,
}

/// What the node does with an exported actor, whatever its message type.
trait Handle: Send + Sync {
    /// Decodes and delivers a message; false if it could not.
    fn deliver(&self, t: Term) -> Result<(), Undelivered>;
    fn link_from(&self, ctx: &Ctx<Term>);
    fn unlink_from(&self, ctx: &Ctx<Term>);
    fn monitor_from(&self, ctx: &Ctx<Term>) -> MonitorRef;
    fn exit_signal(&self, from: ActorId, reason: ExitReason);
    fn kill_with(&self, reason: ExitReason);
    fn is_alive(&self) -> bool;
    /// Whether messages to it are decoded and delivered.
    fn decodes(&self) -> bool;
    fn pid_any(&self) -> &dyn Any;
    fn type_name(&self) -> &'static str;
}

enum Undelivered {
    Dead,
    NotAMessage,
    WrongShape(TermError),
}

struct Typed<M: Send + 'static> {
    pid: Pid<M>,
    decode: Option<fn(Term) -> Result<M, TermError>>,
}

impl<M: Send + 'static> Handle for Typed<M> {
    fn deliver(&self, t: Term) -> Result<(), Undelivered> {
        let Some(decode) = self.decode else {
            return Err(Undelivered::NotAMessage);
        };
        let m = decode(t).map_err(Undelivered::WrongShape)?;
        self.pid.send(m).map_err(|_| Undelivered::Dead)
    }
    fn link_from(&self, ctx: &Ctx<Term>) {
        ctx.link(&self.pid);
    }
    fn unlink_from(&self, ctx: &Ctx<Term>) {
        ctx.unlink(&self.pid);
    }
    fn monitor_from(&self, ctx: &Ctx<Term>) -> MonitorRef {
        ctx.monitor(&self.pid)
    }
    fn exit_signal(&self, from: ActorId, reason: ExitReason) {
        self.pid.exit_signal(from, reason);
    }
    fn kill_with(&self, reason: ExitReason) {
        self.pid.kill_with(reason);
    }
    fn is_alive(&self) -> bool {
        self.pid.is_alive()
    }
    fn decodes(&self) -> bool {
        self.decode.is_some()
    }
    fn pid_any(&self) -> &dyn Any {
        &self.pid
    }
    fn type_name(&self) -> &'static str {
        std::any::type_name::<M>()
    }
}

/// A proxy's entry: its pid (a `Pid<M>` as `Any`), id, control channel.
struct Proxy {
    pid: Box<dyn Any + Send + Sync>,
    id: ActorId,
    alive: Box<dyn Fn() -> bool + Send + Sync>,
    kill: Box<dyn Fn(ExitReason) + Send + Sync>,
    ctl: Sender<Ctl>,
}

/// What the node asks of a `Term` proxy on behalf of its remote process.
enum Ctl {
    /// Link to the export; `done` is dropped once linked.
    Link(Arc<Export>, Sender<()>),
    Unlink(Arc<Export>),
    /// Monitor the export; `done` is dropped once monitoring.
    Monitor {
        target: Arc<Export>,
        /// What the `DOWN` names: the pid, or the registered name it was monitored by.
        down_from: Term,
        r: Term,
        done: Sender<()>,
    },
    Demonitor(Term),
    /// The remote process ended (or its node went down): end with this reason, after the
    /// requests sent before it (a `LINK` a peer sends just before its `EXIT` is made first,
    /// so the linked actor hears of the exit).
    End(ExitReason),
}

fn num_of(p: &ErlPid) -> Option<u64> {
    (p.id < 1 << 15 && p.serial < 1 << 13).then(|| u64::from(p.id) | u64::from(p.serial) << 15)
}

impl Node {
    /// The node's full name, `alive@host`.
    ///
    /// ```no_run
    /// pcml::run(|| {
    ///     let node = pcml_dist::NodeBuilder::new("a@127.0.0.1").cookie("c").start().unwrap();
    ///     assert_eq!(node.name(), "a@127.0.0.1");
    /// });
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The port the node accepts connections on (registered with EPMD).
    ///
    /// ```no_run
    /// pcml::run(|| {
    ///     let node = pcml_dist::NodeBuilder::new("a@127.0.0.1").cookie("c").start().unwrap();
    ///     assert_ne!(node.port(), 0);
    /// });
    /// ```
    pub fn port(&self) -> u16 {
        self.inner.port
    }

    /// The nodes connected now.
    ///
    /// ```no_run
    /// pcml::run(|| {
    ///     let node = pcml_dist::NodeBuilder::new("a@127.0.0.1").cookie("c").start().unwrap();
    ///     assert!(node.nodes().is_empty());
    /// });
    /// ```
    pub fn nodes(&self) -> Vec<String> {
        let st = self.inner.lock();
        let mut v: Vec<String> = st
            .conns
            .iter()
            .filter(|(_, s)| matches!(s, Slot::Up(_)))
            .map(|(n, _)| n.clone())
            .collect();
        v.sort();
        v
    }

    /// Connects to `node` if not connected yet (Erlang's `net_kernel:connect_node/1`, what
    /// `net_adm:ping/1` does). Blocks the calling fiber for the handshake.
    ///
    /// Two nodes that connect to each other at the same moment end with one connection that
    /// both use: while both handshakes are under way, the attempt of the node with the greater
    /// name wins (Erlang's `nok`); when one has finished first, the other is asked whether it
    /// already has a connection up (Erlang's `alive`) and the crossing one is dropped. Either
    /// way both calls return `Ok`.
    ///
    /// # Errors
    /// The node is not registered with its host's EPMD, refuses us, or its cookie differs
    /// ([`DistError::Cookie`]).
    ///
    /// ```no_run
    /// pcml::run(|| {
    ///     let node = pcml_dist::NodeBuilder::new("a@127.0.0.1").cookie("c").start().unwrap();
    ///     match node.connect("erl@127.0.0.1") {
    ///         Ok(()) => println!("pong"),
    ///         Err(e) => println!("pang: {e}"),
    ///     }
    /// });
    /// ```
    pub fn connect(&self, node: &str) -> Result<(), DistError> {
        self.inner.connection(node).map(drop)
    }

    /// Closes the connection to `node`, if any (Erlang's `erlang:disconnect_node/1`): its
    /// proxies end with `noconnection`, and the other side sees this node go down.
    ///
    /// ```no_run
    /// pcml::run(|| {
    ///     let node = pcml_dist::NodeBuilder::new("a@127.0.0.1").cookie("c").start().unwrap();
    ///     node.disconnect("erl@127.0.0.1");
    /// });
    /// ```
    pub fn disconnect(&self, node: &str) {
        let c = match self.inner.lock().conns.get(node) {
            Some(Slot::Up(c)) => Some(c.clone()),
            _ => None,
        };
        if let Some(c) = c {
            self.inner.conn_down(&c, "disconnected by this node");
        }
    }

    /// A pcml pid for the Erlang process `pid`: sending `M`s to it sends their terms; a link
    /// or monitor on it (from any local actor, with the ordinary [`Ctx::link`] and
    /// [`Ctx::monitor`]) is a link or monitor on the process, told its exit reason (see
    /// [`term`](crate::term) for how reasons map), or `noconnection` when its node goes down.
    ///
    /// The pid is a local proxy actor, one per process and message type, made on first use
    /// and ended with the process. If `pid` is a local actor's, this returns that actor's own
    /// pid.
    ///
    /// # Errors
    /// A local pid that is unknown, dead or of another message type.
    ///
    /// ```no_run
    /// use pcml_dist::term::{ErlPid, Term};
    ///
    /// fn reply(node: &pcml_dist::Node, to: &ErlPid, t: Term) {
    ///     let _ = node.pid_of::<Term>(to).unwrap().send(t);
    /// }
    /// ```
    pub fn pid_of<M: IntoTerm + Send + 'static>(&self, pid: &ErlPid) -> Result<Pid<M>, DistError> {
        self.inner.pid_of(pid).map(|(p, _)| p)
    }

    /// The Erlang pid of a local actor, for Erlang processes to send `M`s to (as terms that
    /// [`FromTerm`] decodes; a term that does not decode is dropped with a line on stderr).
    ///
    /// ```
    /// pcml::run(|| {
    ///     # return; // needs EPMD
    ///     let node = pcml_dist::NodeBuilder::new("a@127.0.0.1").cookie("c").start().unwrap();
    ///     let me = pcml::actor::Ctx::<u32>::new();
    ///     let erl = node.erl_pid(&me.pid());
    ///     assert_eq!(erl.node.name, "a@127.0.0.1");
    /// });
    /// ```
    pub fn erl_pid<M: FromTerm + Send + 'static>(&self, pid: &Pid<M>) -> ErlPid {
        self.inner.export(pid, Some(M::from_term)).erl.clone()
    }

    /// Registers a local actor under `name`, for this process (as [`actor::register`]) and
    /// for Erlang (`{Name, 'node@host'} ! Msg`). The name is freed when the actor ends.
    ///
    /// # Errors
    /// The name is taken, or the actor has ended ([`DistError::Registry`]).
    ///
    /// ```no_run
    /// pcml::run(|| {
    ///     let node = pcml_dist::NodeBuilder::new("a@127.0.0.1").cookie("c").start().unwrap();
    ///     let me = pcml::actor::Ctx::<pcml_dist::term::Term>::new();
    ///     node.register("inbox", &me.pid()).unwrap();
    /// });
    /// ```
    pub fn register<M: FromTerm + Send + 'static>(
        &self,
        name: &str,
        pid: &Pid<M>,
    ) -> Result<(), DistError> {
        actor::register(name, pid).map_err(DistError::Registry)?;
        let e = self.inner.export(pid, Some(M::from_term));
        self.inner.lock().names.insert(name.to_string(), e);
        Ok(())
    }

    /// Sends `msg` to the process registered as `name` on `node` (Erlang's
    /// `{Name, Node} ! Msg`), connecting first if needed. Like Erlang's, the send succeeds
    /// whether or not the name exists there.
    ///
    /// # Errors
    /// `node` cannot be reached, or it is this node and no actor has the name.
    ///
    /// ```no_run
    /// use pcml_dist::term::atom;
    ///
    /// pcml::run(|| {
    ///     let node = pcml_dist::NodeBuilder::new("a@127.0.0.1").cookie("c").start().unwrap();
    ///     node.send_named("erl@127.0.0.1", "logger", atom("hello")).unwrap();
    /// });
    /// ```
    pub fn send_named(&self, node: &str, name: &str, msg: impl IntoTerm) -> Result<(), DistError> {
        let t = msg.into_term();
        if node == self.inner.name {
            let e = self
                .inner
                .resolve_name(name)
                .ok_or_else(|| DistError::NoProcess(name.to_string()))?;
            return match e.handle.deliver(t) {
                Ok(()) => Ok(()),
                Err(Undelivered::Dead) => Err(DistError::NoProcess(name.to_string())),
                Err(Undelivered::NotAMessage) => Ok(()),
                Err(Undelivered::WrongShape(e)) => Err(DistError::Term(e)),
            };
        }
        let c = self.inner.connection(node)?;
        c.send(&wire::reg_send(&self.inner.system, name), Some(&t));
        Ok(())
    }

    /// Sends `msg` to the Erlang process `to` without making a proxy (untyped, and the
    /// cheapest way to answer a pid that came in a message).
    ///
    /// # Errors
    /// `to`'s node cannot be reached, or `to` is a dead local actor.
    ///
    /// ```no_run
    /// use pcml_dist::term::{ErlPid, atom};
    ///
    /// fn pong(node: &pcml_dist::Node, to: &ErlPid) {
    ///     let _ = node.send(to, atom("pong"));
    /// }
    /// ```
    pub fn send(&self, to: &ErlPid, msg: impl IntoTerm) -> Result<(), DistError> {
        let t = msg.into_term();
        if to.node.name == self.inner.name {
            let e = self
                .inner
                .local(to)
                .ok_or_else(|| DistError::NoProcess(format!("{to}")))?;
            return e
                .handle
                .deliver(t)
                .map_err(|_| DistError::NoProcess(format!("{to}")));
        }
        let c = self.inner.connection(&to.node.name)?;
        c.send(&wire::send(to), Some(&t));
        Ok(())
    }

    /// Calls the `gen_server` registered as `name` on `node` (Erlang's
    /// `gen_server:call({Name, Node}, Request, Timeout)`): sends
    /// `{'$gen_call', {Pid, Ref}, Request}` from `me` and waits for the `{Ref, Reply}`
    /// answer for at most `timeout`. Other messages stay in `me`'s mailbox, in order.
    ///
    /// # Errors
    /// [`DistError::Timeout`] if no answer comes in time (a late answer stays in the
    /// mailbox, as in Erlang), or the errors of [`send_named`](Self::send_named).
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use pcml::actor::Ctx;
    /// use pcml_dist::term::{Term, atom, tuple};
    ///
    /// pcml::run(|| {
    ///     let node = pcml_dist::NodeBuilder::new("a@127.0.0.1").cookie("c").start().unwrap();
    ///     let mut me = Ctx::<Term>::new();
    ///     let reply = node.call(&mut me, "erl@127.0.0.1", "my_server", atom("ping"), Duration::from_secs(5));
    ///     println!("{reply:?}");
    /// });
    /// ```
    pub fn call(
        &self,
        me: &mut Ctx<Term>,
        node: &str,
        name: &str,
        request: impl IntoTerm,
        timeout: Duration,
    ) -> Result<Term, DistError> {
        let r: Term = self.make_ref().into_term();
        let from = term::tuple(vec![self.erl_pid(&me.pid()).into(), r.clone()]);
        let msg = term::tuple(vec![atom("$gen_call"), from, request.into_term()]);
        self.send_named(node, name, msg)?;
        let want = r.clone();
        let is_reply = move |m: &Term| matches!(m, Term::Tuple(t) if t.elements.len() == 2 && t.elements[0] == want);
        match me.receive_match_timeout(timeout, is_reply) {
            Some(Term::Tuple(mut t)) => Ok(t.elements.pop().expect("a reply has two elements")),
            Some(_) => unreachable!("the predicate accepts only replies"),
            None => Err(DistError::Timeout),
        }
    }

    /// The Erlang process a proxy stands for, given the proxy's id (as a [`Signal::Exit`]
    /// or [`Signal::Down`] from it carries). It answers for a proxy that has ended too, as
    /// long as it is among the last 1,024 proxies of this node that ended.
    ///
    /// ```no_run
    /// use pcml::actor::Signal;
    ///
    /// fn who(node: &pcml_dist::Node, s: &Signal) {
    ///     if let Signal::Exit { from, .. } = s {
    ///         println!("{:?}", node.remote_of(*from));
    ///     }
    /// }
    /// ```
    pub fn remote_of(&self, id: ActorId) -> Option<ErlPid> {
        let st = self.inner.lock();
        st.proxy_keys
            .get(&id)
            .map(|(p, _)| p.clone())
            .or_else(|| st.ended.get(&id).cloned())
    }

    /// Stops the node now: unregisters from EPMD, closes every connection (their proxies end
    /// with `noconnection`) and stops accepting.
    ///
    /// ```no_run
    /// pcml::run(|| {
    ///     let node = pcml_dist::NodeBuilder::new("a@127.0.0.1").cookie("c").start().unwrap();
    ///     node.stop();
    /// });
    /// ```
    pub fn stop(&self) {
        self.inner.stop();
    }

    /// A new reference of this node, unique among its references.
    ///
    /// ```no_run
    /// pcml::run(|| {
    ///     let node = pcml_dist::NodeBuilder::new("a@127.0.0.1").cookie("c").start().unwrap();
    ///     assert_ne!(node.make_ref(), node.make_ref());
    /// });
    /// ```
    pub fn make_ref(&self) -> Reference {
        self.inner.make_ref()
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn make_ref(&self) -> Reference {
        let n = {
            let mut st = self.lock();
            st.next_ref += 1;
            st.next_ref
        };
        Reference {
            node: self.name.as_str().into(),
            id: vec![(n & 0x3ffff) as u32, (n >> 18) as u32, 0],
            creation: self.creation,
        }
    }

    fn stop(&self) {
        let conns: Vec<Arc<Conn>> = {
            let mut st = self.lock();
            if st.stopped {
                return;
            }
            st.stopped = true;
            st.conns
                .drain()
                .filter_map(|(_, s)| match s {
                    Slot::Up(c) => Some(c),
                    Slot::Pending(_) => None,
                })
                .collect()
        };
        drop(self.stop.lock().unwrap_or_else(|e| e.into_inner()).take());
        drop(self.epmd.lock().unwrap_or_else(|e| e.into_inner()).take());
        for c in conns {
            c.close_flushed();
        }
    }

    /// Drops entries of exported actors and proxies that have died (called with the state
    /// locked).
    fn sweep(&self, st: &mut State) {
        let janitor = self.janitor.lock().unwrap_or_else(|e| e.into_inner());
        while let Some(s) = janitor.try_receive_signal() {
            let Signal::Down { monitor, actor, .. } = s else {
                continue;
            };
            st.watched.remove(&monitor);
            if let Some(e) = st.exports.remove(&actor) {
                if let Some(n) = num_of(&e.erl) {
                    st.by_num.remove(&n);
                }
                st.names.retain(|_, x| x.actor != actor);
            }
            st.proxy_watchers.remove(&actor);
            if let Some(k) = st.proxy_keys.remove(&actor) {
                if st.proxies.get(&k).is_some_and(|p| p.id == actor) {
                    st.proxies.remove(&k);
                }
                if st.ended_order.len() == ENDED_KEPT
                    && let Some(old) = st.ended_order.pop_front()
                {
                    st.ended.remove(&old);
                }
                st.ended_order.push_back(actor);
                st.ended.insert(actor, k.0);
            }
        }
    }

    /// The export of a local actor (made on first use, or upgraded to decode messages).
    fn export<M: Send + 'static>(
        &self,
        pid: &Pid<M>,
        decode: Option<fn(Term) -> Result<M, TermError>>,
    ) -> Arc<Export> {
        let mut st = self.lock();
        self.sweep(&mut st);
        if let Some(e) = st.exports.get(&pid.id()) {
            if decode.is_none() || e.handle.decodes() {
                return e.clone();
            }
            // An identity-only entry (made for a link): from now on messages reach the actor.
            let up = Arc::new(Export {
                erl: e.erl.clone(),
                actor: e.actor,
                handle: Box::new(Typed {
                    pid: pid.clone(),
                    decode,
                }),
            });
            st.exports.insert(pid.id(), up.clone());
            if let Some(n) = num_of(&up.erl) {
                st.by_num.insert(n, up.clone());
            }
            return up;
        }
        st.next_num += 1;
        let n = st.next_num;
        let erl = ErlPid::new(
            self.name.as_str(),
            (n & 0x7fff) as u32,
            ((n >> 15) & 0x1fff) as u32,
            self.creation,
        );
        let e = Arc::new(Export {
            erl,
            actor: pid.id(),
            handle: Box::new(Typed {
                pid: pid.clone(),
                decode,
            }),
        });
        st.exports.insert(pid.id(), e.clone());
        st.by_num.insert(n, e.clone());
        let mref = self
            .janitor
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .monitor(pid);
        st.watched.insert(mref, pid.id());
        e
    }

    /// The Erlang pid of local actor `id`: its export's, or a fresh one for an actor never
    /// exported (it has ended, so nobody could address it anyway).
    fn erl_of(&self, id: ActorId) -> ErlPid {
        let mut st = self.lock();
        if let Some(e) = st.exports.get(&id) {
            return e.erl.clone();
        }
        st.next_num += 1;
        let n = st.next_num;
        ErlPid::new(
            self.name.as_str(),
            (n & 0x7fff) as u32,
            ((n >> 15) & 0x1fff) as u32,
            self.creation,
        )
    }

    /// The export a local pid names.
    fn local(&self, p: &ErlPid) -> Option<Arc<Export>> {
        if p.node.name != self.name || p.creation != self.creation {
            return None;
        }
        let n = num_of(p)?;
        self.lock().by_num.get(&n).cloned()
    }

    /// The export registered as `name`: by this node, or in pcml's registry with messages
    /// of type `Term`.
    fn resolve_name(&self, name: &str) -> Option<Arc<Export>> {
        if let Some(e) = self.lock().names.get(name)
            && e.handle.is_alive()
        {
            return Some(e.clone());
        }
        let pid = actor::whereis::<Term>(name)?;
        Some(self.export(&pid, Some(Term::from_term)))
    }

    /// The proxy of `pid` for messages of type `M`, and its control channel.
    fn pid_of<M: IntoTerm + Send + 'static>(
        self: &Arc<Self>,
        pid: &ErlPid,
    ) -> Result<(Pid<M>, Option<Sender<Ctl>>), DistError> {
        if pid.node.name == self.name {
            let e = self
                .local(pid)
                .ok_or_else(|| DistError::NoProcess(pid.to_string()))?;
            return match e.handle.pid_any().downcast_ref::<Pid<M>>() {
                Some(p) => Ok((p.clone(), None)),
                None => Err(DistError::WrongType {
                    pid: pid.to_string(),
                    actual: e.handle.type_name(),
                    expected: std::any::type_name::<M>(),
                }),
            };
        }
        let key = (pid.clone(), TypeId::of::<M>());
        let mut st = self.lock();
        if let Some(p) = st.proxies.get(&key)
            && (p.alive)()
        {
            let pid = p
                .pid
                .downcast_ref::<Pid<M>>()
                .expect("pcml-dist: proxies are keyed by their type")
                .clone();
            return Ok((pid, Some(p.ctl.clone())));
        }
        let (ctl_tx, ctl_rx) = unbounded::<Ctl>();
        let node = Arc::downgrade(self);
        let remote = pid.clone();
        let proxy = actor::spawn(move |ctx: Ctx<M>| proxy_body(node, remote, ctx, ctl_rx));
        let alive = proxy.clone();
        let kill = proxy.clone();
        st.proxies.insert(
            key.clone(),
            Proxy {
                pid: Box::new(proxy.clone()),
                id: proxy.id(),
                alive: Box::new(move || alive.is_alive()),
                kill: Box::new(move |r| kill.kill_with(r)),
                ctl: ctl_tx.clone(),
            },
        );
        st.proxy_keys.insert(proxy.id(), key);
        drop(st);
        Ok((proxy, Some(ctl_tx)))
    }

    /// Kills every proxy of `pid` with `reason`.
    fn kill_proxies(&self, pid: &ErlPid, reason: &ExitReason) {
        let ids: Vec<ActorId> = {
            let st = self.lock();
            st.proxies
                .iter()
                .filter(|((p, _), _)| p == pid)
                .map(|(_, proxy)| proxy.id)
                .collect()
        };
        let why = reason_to_term(reason);
        for id in ids {
            self.tell_watchers(id, &why);
        }
        let st = self.lock();
        for ((p, _), proxy) in &st.proxies {
            if p == pid && proxy.ctl.send(Ctl::End(reason.clone())).is_err() {
                (proxy.kill)(reason.clone());
            }
        }
    }

    /// Tells the remote processes that monitor the proxy `id` that it ends with `reason`
    /// (over connections that are up: a watcher whose node is gone needs no word).
    fn tell_watchers(&self, id: ActorId, reason: &Term) {
        let (watchers, me, conns) = {
            let mut st = self.lock();
            let Some(w) = st.proxy_watchers.remove(&id) else {
                return;
            };
            let Some(me) = st.exports.get(&id).map(|e| e.erl.clone()) else {
                return;
            };
            let conns: HashMap<String, Arc<Conn>> = st
                .conns
                .iter()
                .filter_map(|(n, s)| match s {
                    Slot::Up(c) => Some((n.clone(), c.clone())),
                    Slot::Pending(_) => None,
                })
                .collect();
            (w, me, conns)
        };
        for (watcher, r) in watchers {
            if let Some(c) = conns.get(&*watcher.node.name) {
                c.send(
                    &wire::monitor_exit(me.clone().into(), &watcher, r, reason.clone()),
                    None,
                );
            }
        }
    }

    /// The connection to `node`, made on demand.
    fn connection(self: &Arc<Self>, node: &str) -> Result<Arc<Conn>, DistError> {
        if node == self.name {
            return Err(DistError::Name(format!("{node} is this node")));
        }
        let wait = {
            let mut st = self.lock();
            if st.stopped {
                return Err(DistError::Stopped);
            }
            match st.conns.get_mut(node) {
                Some(Slot::Up(c)) => return Ok(c.clone()),
                Some(Slot::Pending(w)) => {
                    let (tx, rx) = unbounded();
                    w.push(tx);
                    Some(rx)
                }
                None => {
                    st.conns.insert(node.to_string(), Slot::Pending(Vec::new()));
                    None
                }
            }
        };
        if let Some(rx) = wait {
            return match rx.recv().unwrap_or(Err(DistError::Stopped)) {
                // The connection waited for (the peer's, being accepted) failed: dial.
                Err(DistError::Simultaneous(_)) => self.connection(node),
                r => r,
            };
        }
        let res = self.dial(node);
        let mut st = self.lock();
        let waiters = match st.conns.remove(node) {
            Some(Slot::Up(c)) => {
                // The peer's connection was accepted meanwhile: it wins.
                st.conns.insert(node.to_string(), Slot::Up(c.clone()));
                drop(st);
                if let Ok((mine, _)) = res {
                    mine.close();
                }
                return Ok(c);
            }
            Some(Slot::Pending(w)) => w,
            None => Vec::new(),
        };
        match res {
            Ok((c, reader)) => {
                st.conns.insert(node.to_string(), Slot::Up(c.clone()));
                drop(st);
                self.start_reader(c.clone(), reader);
                for w in waiters {
                    let _ = w.send(Ok(c.clone()));
                }
                Ok(c)
            }
            Err(DistError::Simultaneous(_)) => {
                st.conns.insert(node.to_string(), Slot::Pending(waiters));
                drop(st);
                // Wait for the accept to install the peer's connection.
                for _ in 0..100 {
                    pcml::time::sleep(Duration::from_millis(20));
                    if let Some(Slot::Up(c)) = self.lock().conns.get(node) {
                        return Ok(c.clone());
                    }
                }
                let mut st = self.lock();
                if let Some(Slot::Pending(w)) = st.conns.remove(node) {
                    for t in w {
                        let _ = t.send(Err(DistError::NoNode(node.to_string())));
                    }
                }
                Err(DistError::NoNode(node.to_string()))
            }
            Err(e) => {
                drop(st);
                for w in waiters {
                    let _ = w.send(Err(e.clone()));
                }
                Err(e)
            }
        }
    }

    /// Connects to `node` and does the initiator's handshake.
    fn dial(&self, node: &str) -> Result<(Arc<Conn>, conn::Reader), DistError> {
        let (alive, host) = node
            .split_once('@')
            .ok_or_else(|| DistError::Name(node.to_string()))?;
        let port = epmd::port_please(alive, host, self.epmd_port)?;
        let addr = epmd::node_addr(host, port)?;
        let s = TcpStream::connect(addr).map_err(DistError::io)?;
        let (s, _peer) = with_deadline(s, Duration::from_secs(10), |s| {
            handshake::initiate(s, &self.name, self.creation, &self.cookie, node, || {
                matches!(self.lock().conns.get(node), Some(Slot::Up(_)))
            })
        })?;
        Ok(conn::open(node.to_string(), s, self.ticktime))
    }

    fn accept_loop(self: Arc<Self>, listener: TcpListener, stop: Receiver<()>) {
        loop {
            let got = pcml::select([
                listener.accept_evt().wrap(Some),
                stop.recv_evt().wrap(|_| None),
            ]);
            let Some(Ok((s, _))) = got else {
                if got.is_none() {
                    return;
                }
                continue;
            };
            let me = self.clone();
            pcml::spawn(move || me.handle_incoming(s));
        }
    }

    fn handle_incoming(self: Arc<Self>, s: TcpStream) {
        // The peer this handshake reserved a pending slot for: a `connect` to it from here
        // waits for this connection instead of dialing a second one (two crossing
        // connections, each side keeping a different one, lose messages).
        let reserved = std::cell::RefCell::new(None::<String>);
        let admit = |peer: &str| -> Admit {
            let mut st = self.lock();
            match st.conns.get(peer) {
                // Both sides are connecting: the greater name's attempt wins.
                Some(Slot::Pending(_)) if self.name.as_str() > peer => Admit::Nok,
                Some(Slot::Pending(_)) => Admit::Ok,
                // Ours crossed theirs, or ours is stale: the peer knows which.
                Some(Slot::Up(_)) => Admit::Alive,
                None => {
                    st.conns.insert(peer.to_string(), Slot::Pending(Vec::new()));
                    *reserved.borrow_mut() = Some(peer.to_string());
                    Admit::Ok
                }
            }
        };
        let res = with_deadline(s, Duration::from_secs(10), |s| {
            handshake::accept(s, &self.name, self.creation, &self.cookie, admit)
        });
        let (s, peer) = match res {
            Ok(x) => x,
            Err(e) => {
                if let DistError::Cookie(why) = &e {
                    eprintln!("pcml-dist: {why}");
                }
                if let Some(peer) = reserved.take() {
                    // Whoever waits on the reservation dials itself.
                    let mut st = self.lock();
                    if let Some(Slot::Pending(w)) = st.conns.remove(&peer) {
                        drop(st);
                        for t in w {
                            let _ = t.send(Err(DistError::Simultaneous(
                                "the peer's own connection failed: dial again".into(),
                            )));
                        }
                    }
                }
                return;
            }
        };
        let (c, reader) = conn::open(peer.name.clone(), s, self.ticktime);
        let (old, waiters) = {
            let mut st = self.lock();
            if st.stopped {
                drop(st);
                c.close();
                return;
            }
            match st.conns.insert(peer.name.clone(), Slot::Up(c.clone())) {
                Some(Slot::Up(old)) => (Some(old), Vec::new()),
                Some(Slot::Pending(w)) => (None, w),
                None => (None, Vec::new()),
            }
        };
        if let Some(old) = old {
            // The peer came back (it restarted, or lost the old connection first).
            self.conn_down(&old, "replaced by a new connection from the same node");
        }
        for w in waiters {
            let _ = w.send(Ok(c.clone()));
        }
        self.start_reader(c, reader);
    }

    fn start_reader(self: &Arc<Self>, c: Arc<Conn>, reader: conn::Reader) {
        let me = self.clone();
        pcml::spawn(move || {
            let why = reader.run(me.max_frame, |ctrl| me.dispatch(&c, ctrl));
            if !c.is_closed() && (why.starts_with("malformed") || why.contains("longer than")) {
                eprintln!("pcml-dist: closed the connection to {}: {why}", c.peer);
            }
            me.conn_down(&c, &why);
        });
    }

    /// The connection `c` is down (or being closed): forget it, close it, and end every
    /// proxy of its node with `noconnection`.
    fn conn_down(&self, c: &Arc<Conn>, _why: &str) {
        {
            let mut st = self.lock();
            if let Some(Slot::Up(cur)) = st.conns.get(&c.peer)
                && Arc::ptr_eq(cur, c)
            {
                st.conns.remove(&c.peer);
            }
        }
        c.close();
        let ids: Vec<ActorId> = {
            let st = self.lock();
            st.proxies
                .iter()
                .filter(|((p, _), _)| p.node.name == c.peer)
                .map(|(_, proxy)| proxy.id)
                .collect()
        };
        for id in ids {
            self.tell_watchers(id, &atom("noconnection"));
        }
        let st = self.lock();
        for ((p, _), proxy) in &st.proxies {
            if p.node.name == c.peer {
                (proxy.kill)(ExitReason::Killed(Arc::from("noconnection")));
            }
        }
    }

    /// Acts on one control message from `c`.
    fn dispatch(self: &Arc<Self>, c: &Arc<Conn>, ctrl: wire::Ctrl) {
        use wire::Ctrl;
        match ctrl {
            Ctrl::Send { to, msg } => {
                if let Some(e) = self.local(&to) {
                    report(&e, e.handle.deliver(msg));
                }
            }
            Ctrl::RegSend { name, msg, .. } if name == "net_kernel" => {
                // `net_adm:ping/1` asks `net_kernel` `{is_auth, Node}` by `gen:call`:
                // `{'$gen_call', {From, Tag}, {is_auth, _}}`, answered `{Tag, yes}`.
                if let Term::Tuple(t) = msg
                    && let [tag, from_tag, _] = &t.elements[..]
                    && is_atom(tag, "$gen_call")
                    && let Term::Tuple(ft) = from_tag
                    && let [Term::Pid(from), tag] = &ft.elements[..]
                {
                    let reply = term::tuple(vec![tag.clone(), atom("yes")]);
                    c.send(&wire::send(from), Some(&reply));
                }
            }
            Ctrl::RegSend { name, msg, .. } => {
                if let Some(e) = self.resolve_name(&name) {
                    report(&e, e.handle.deliver(msg));
                }
            }
            Ctrl::Link { from, to } => match self.local(&to).filter(|e| e.handle.is_alive()) {
                Some(e) => {
                    if let Ok((_, Some(ctl))) = self.pid_of::<Term>(&from) {
                        // Linked before the peer's next message is delivered (Erlang's
                        // order: a message sent after `link/1` finds the link made).
                        let (done, made) = unbounded::<()>();
                        let _ = ctl.send(Ctl::Link(e, done));
                        let _ = made.recv();
                    }
                }
                None => {
                    c.send(&wire::exit(&to, &from, atom("noproc")), None);
                }
            },
            Ctrl::Unlink { id, from, to } => {
                if let Some(e) = self.local(&to) {
                    let ctl = self
                        .lock()
                        .proxies
                        .get(&(from.clone(), TypeId::of::<Term>()))
                        .map(|p| p.ctl.clone());
                    if let Some(ctl) = ctl {
                        let _ = ctl.send(Ctl::Unlink(e));
                    }
                }
                if let Some(id) = id {
                    c.send(&wire::unlink_id_ack(id, &to, &from), None);
                }
            }
            Ctrl::Exit { from, reason, .. } => {
                self.kill_proxies(&from, &reason_from_term(&reason));
            }
            Ctrl::Exit2 { from, to, reason } => {
                if let Some(e) = self.local(&to) {
                    if is_atom(&reason, "kill") {
                        e.handle.kill_with(ExitReason::Killed(Arc::from("killed")));
                    } else if let Ok((p, _)) = self.pid_of::<Term>(&from) {
                        e.handle.exit_signal(p.id(), reason_from_term(&reason));
                    }
                }
            }
            Ctrl::Monitor { to, .. } if is_atom(&to, "net_kernel") => {
                // `gen:call` (so `net_adm:ping`) monitors the `net_kernel` it calls; the one
                // of this node lives as long as the connection, whose end Erlang reports
                // itself (`noconnection`).
            }
            Ctrl::Monitor { from, to, r } => {
                let target = match &to {
                    Term::Pid(p) => self.local(p),
                    Term::Atom(a) => self.resolve_name(&a.name),
                    _ => None,
                }
                .filter(|e| e.handle.is_alive());
                if let Some(e) = &target {
                    let mut st = self.lock();
                    if st.proxy_keys.contains_key(&e.actor) {
                        // A proxy watched (by a proxy on the other node): remembered here.
                        st.proxy_watchers
                            .entry(e.actor)
                            .or_default()
                            .push((from, r));
                        return;
                    }
                }
                // No proxy is made for a watcher of a process that has ended.
                match target.map(|e| (e, self.pid_of::<Term>(&from))) {
                    Some((e, Ok((_, Some(ctl))))) => {
                        let down_from = match &to {
                            Term::Atom(_) => to.clone(),
                            _ => e.erl.clone().into(),
                        };
                        let (done, made) = unbounded::<()>();
                        let _ = ctl.send(Ctl::Monitor {
                            target: e,
                            down_from,
                            r,
                            done,
                        });
                        let _ = made.recv();
                    }
                    _ => {
                        c.send(&wire::monitor_exit(to, &from, r, atom("noproc")), None);
                    }
                }
            }
            Ctrl::Demonitor { from, r, .. } => {
                let mut st = self.lock();
                for w in st.proxy_watchers.values_mut() {
                    w.retain(|(p, x)| !(*p == from && *x == r));
                }
                drop(st);
                let ctl = self
                    .lock()
                    .proxies
                    .get(&(from, TypeId::of::<Term>()))
                    .map(|p| p.ctl.clone());
                if let Some(ctl) = ctl {
                    let _ = ctl.send(Ctl::Demonitor(r));
                }
            }
            Ctrl::MonitorExit { to, reason, .. } => {
                // `to` is the proxy that monitors the process that ended.
                if let Some(e) = self.local(&to) {
                    self.tell_watchers(e.actor, &reason);
                    let why = reason_from_term(&reason);
                    let ctl = {
                        let st = self.lock();
                        st.proxy_keys
                            .get(&e.actor)
                            .and_then(|k| st.proxies.get(k))
                            .filter(|p| p.id == e.actor)
                            .map(|p| p.ctl.clone())
                    };
                    if ctl.is_none_or(|c| c.send(Ctl::End(why.clone())).is_err()) {
                        e.handle.kill_with(why);
                    }
                }
            }
            Ctrl::UnlinkAck | Ctrl::Ignored(_) => {}
        }
    }
}

fn report(e: &Export, r: Result<(), Undelivered>) {
    if let Err(Undelivered::WrongShape(err)) = r {
        eprintln!(
            "pcml-dist: dropped a message to {} ({}), which takes {}: {err}",
            e.erl,
            e.actor,
            e.handle.type_name()
        );
    }
}

/// Runs `f` on `s`, shutting `s` down if it takes longer than `d` (so a silent peer cannot
/// hold a handshake forever).
fn with_deadline<T>(
    s: TcpStream,
    d: Duration,
    f: impl FnOnce(&TcpStream) -> Result<T, DistError>,
) -> Result<(TcpStream, T), DistError> {
    let s = Arc::new(s);
    let (done_tx, done_rx) = unbounded::<()>();
    let watch = s.clone();
    pcml::spawn(move || {
        let timed_out = pcml::select([
            done_rx.recv_evt().wrap(|_| false),
            pcml::time::timeout_evt(d).wrap(|()| true),
        ]);
        if timed_out {
            let _ = watch.shutdown(std::net::Shutdown::Both);
        }
    });
    let r = f(&s);
    drop(done_tx);
    let r = r?;
    // The watcher lets go of its clone once it has seen `done_tx` dropped.
    let mut s = s;
    loop {
        match Arc::try_unwrap(s) {
            Ok(s) => return Ok((s, r)),
            Err(back) => {
                s = back;
                pcml::yield_now();
            }
        }
    }
}

/// The body of a proxy for the remote process `remote`, taking `M`s.
fn proxy_body<M: IntoTerm + Send + 'static>(
    node: Weak<Inner>,
    remote: ErlPid,
    mut ctx: Ctx<M>,
    ctl: Receiver<Ctl>,
) {
    ctx.trap_exits(true);
    let noconnection = || ExitReason::Killed(Arc::from("noconnection"));
    let Some(n) = node.upgrade() else {
        ctx.pid().kill_with(noconnection());
        ctx.receive();
        return;
    };
    let conn = match n.connection(&remote.node.name) {
        Ok(c) => c,
        Err(_) => {
            ctx.pid().kill_with(noconnection());
            ctx.receive();
            return;
        }
    };
    // Our own Erlang pid, to monitor the remote process from.
    let me = n.export(&ctx.pid(), None).erl.clone();
    let mref: Term = n.make_ref().into_term();
    conn.send(&wire::monitor(&me, remote.clone().into(), mref), None);
    drop(n);
    let mut remote_links: HashSet<ActorId> = HashSet::new();
    let mut remote_mons: HashMap<MonitorRef, (Term, Term)> = HashMap::new();
    enum Ev<M> {
        Msg(M),
        Sig(Signal),
        Ctl(Option<Ctl>),
    }
    loop {
        let ev = pcml::select([
            ctx.receive_evt().wrap(Ev::Msg),
            ctx.signal_evt().wrap(Ev::Sig),
            ctl.recv_evt().wrap(|r| Ev::Ctl(r.ok())),
        ]);
        match ev {
            Ev::Msg(m) => {
                conn.send(&wire::send(&remote), Some(&m.into_term()));
            }
            Ev::Sig(Signal::Exit { from, reason }) => {
                let Some(n) = node.upgrade() else { continue };
                let local = n.erl_of(from);
                let exit = wire::exit(&local, &remote, reason_to_term(&reason));
                if remote_links.remove(&from) {
                    conn.send(&exit, None);
                } else {
                    // Linked here with `Ctx::link`: the remote side learns of the link now,
                    // in the same write as the exit (see `Conn::send_two`).
                    conn.send_two(&wire::link(&local, &remote), &exit);
                }
            }
            Ev::Sig(Signal::Down {
                monitor, reason, ..
            }) => {
                if let Some((down_from, r)) = remote_mons.remove(&monitor) {
                    conn.send(
                        &wire::monitor_exit(down_from, &remote, r, reason_to_term(&reason)),
                        None,
                    );
                }
            }
            Ev::Ctl(None) => {}
            Ev::Ctl(Some(Ctl::End(reason))) => {
                ctx.pid().kill_with(reason);
                ctx.receive();
                return;
            }
            Ev::Ctl(Some(c)) => {
                let Some(tctx) = (&ctx as &dyn Any).downcast_ref::<Ctx<Term>>() else {
                    continue;
                };
                match c {
                    Ctl::Link(e, done) => {
                        e.handle.link_from(tctx);
                        remote_links.insert(e.actor);
                        drop(done);
                    }
                    Ctl::Unlink(e) => {
                        e.handle.unlink_from(tctx);
                        remote_links.remove(&e.actor);
                    }
                    Ctl::Monitor {
                        target,
                        down_from,
                        r,
                        done,
                    } => {
                        let m = target.handle.monitor_from(tctx);
                        remote_mons.insert(m, (down_from, r));
                        drop(done);
                    }
                    Ctl::Demonitor(r) => {
                        if let Some(m) = remote_mons
                            .iter()
                            .find(|(_, (_, x))| *x == r)
                            .map(|(m, _)| m.clone())
                        {
                            tctx.demonitor(&m);
                            remote_mons.remove(&m);
                        }
                    }
                    Ctl::End(_) => unreachable!("handled above"),
                }
            }
        }
    }
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn f<T: Send + Sync>() {}
    f::<Node>();
    let _ = term::atom;
}
