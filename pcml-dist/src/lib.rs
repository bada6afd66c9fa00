//! pcml nodes in an Erlang/OTP cluster.
//!
//! A [`Node`] speaks the Erlang distribution protocol: Erlang nodes (and other pcml nodes)
//! connect to it as to any node, and its actors talk to Erlang processes as Erlang processes
//! talk to each other. Start one in a pcml runtime, register an actor, and Erlang reaches it
//! as `{echo, 'echo@127.0.0.1'}`:
//!
//! ```no_run
//! use pcml::actor::{self, Ctx};
//! use pcml_dist::term::{ErlPid, FromTerm, Term, atom, is_atom, tuple};
//! use pcml_dist::NodeBuilder;
//!
//! pcml::run(|| {
//!     let node = NodeBuilder::new("echo@127.0.0.1").cookie("secret").start().unwrap();
//!     let n = node.clone();
//!     let echo = actor::spawn(move |mut ctx: Ctx<Term>| loop {
//!         match ctx.receive() {
//!             t if is_atom(&t, "stop") => return,
//!             t => {
//!                 if let Ok((from, msg)) = <(ErlPid, Term)>::from_term(t) {
//!                     let _ = n.send(&from, tuple(vec![atom("echo"), msg]));
//!                 }
//!             }
//!         }
//!     });
//!     node.register("echo", &echo).unwrap();
//!     // erl -name e@127.0.0.1 -setcookie secret
//!     // > {echo, 'echo@127.0.0.1'} ! {self(), hi}, flush().
//!     // Shell got {echo,hi}
//! # node.stop();
//! });
//! ```
//!
//! - **Messages** are Erlang terms. A local actor of message type `M: FromTerm` gets an
//!   Erlang pid from [`Node::erl_pid`] or a name from [`Node::register`]; what Erlang sends
//!   it arrives in its ordinary mailbox, so `receive`, `receive_match` and `receive_evt` in
//!   a `select` work unchanged. [`term`] gives the mapping of Rust types to terms and the raw
//!   [`Term`](term::Term) for untyped actors.
//! - **Remote processes** get pcml pids from [`Node::pid_of`]: `send` on one sends to the
//!   process; [`Ctx::link`](pcml::actor::Ctx::link) and
//!   [`Ctx::monitor`](pcml::actor::Ctx::monitor) on one link to and monitor the process, with
//!   its exit reason in `Signal::Exit` / `Signal::Down`, or `noconnection` when its node
//!   goes down. [`Node::send_named`] is Erlang's `{Name, Node} ! Msg`.
//! - **Erlang processes** can `link/1` to, `monitor/2` (by pid or by `{Name, Node}`) and
//!   `exit/2` pcml actors, and are told their exit reasons.
//! - **Nodes** connect on demand ([`Node::connect`] is `net_adm:ping`), tick at the
//!   cluster's `net_ticktime`, and see each other go down.
//!
//! The [`guide`] takes an Erlang user from `net_adm:ping` to a supervised pcml worker serving
//! an Erlang client.
//!
//! # Not supported
//! Hot code loading, `global`, `rpc` calls and `spawn` into a pcml node (a pcml node has no
//! modules to call), the atom cache and fragmented messages (not advertised, so peers do not
//! use them), funs in messages (refused), and the `alias` send.
//!
//! # Implementation
//! The node is built on pcml's sockets (`pcml::net`) and actors: a fiber accepts
//! connections, each connection has a reader fiber and a writer actor, and each remote
//! process a proxy actor (see [`Node`]). Terms are encoded and decoded by the `eetf` crate,
//! after a non-recursive check of every term from a peer ([`wire::check_term`]).

#![deny(unsafe_op_in_unsafe_fn)]
#![forbid(unsafe_code)]

mod conn;
mod epmd;
pub mod guide;
mod handshake;
mod node;
pub mod term;
pub mod wire;

use std::fmt;
use std::sync::Arc;

pub use node::{Node, NodeBuilder};

/// What went wrong starting a node or talking to another.
///
/// ```
/// let e = pcml_dist::DistError::NoNode("x@127.0.0.1".into());
/// assert_eq!(e.to_string(), "no node x@127.0.0.1 is registered with its host's EPMD");
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum DistError {
    /// A node name that is not `alive@host` (or `alive` alone for this host).
    Name(String),
    /// No cookie was given and `~/.erlang.cookie` cannot be read.
    NoCookie,
    /// EPMD could not be reached, started or understood.
    Epmd(String),
    /// EPMD already has a node of this name.
    NameTaken(String),
    /// A host name that does not resolve.
    Host(String),
    /// No node of that name is registered with its host's EPMD.
    NoNode(String),
    /// The handshake failed (the peer is too old, refused us, or broke the protocol).
    Handshake(String),
    /// Both nodes connected to each other at once and the peer's connection won.
    Simultaneous(String),
    /// The two nodes' cookies differ.
    Cookie(String),
    /// A socket error.
    Io(Arc<std::io::Error>),
    /// Registering a name failed.
    Registry(pcml::actor::RegistryError),
    /// No such local process (a pid or name of this node that is unknown or dead).
    NoProcess(String),
    /// A local pid asked for with another message type than its actor's.
    WrongType {
        /// The pid.
        pid: String,
        /// Its actor's message type.
        actual: &'static str,
        /// The type asked for.
        expected: &'static str,
    },
    /// A term that does not fit the Rust type.
    Term(term::TermError),
    /// The node has been stopped.
    Stopped,
    /// A call got no answer in time.
    Timeout,
}

impl DistError {
    fn io(e: std::io::Error) -> Self {
        DistError::Io(Arc::new(e))
    }
}

impl fmt::Display for DistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistError::Name(n) => write!(
                f,
                "bad node name {n:?}: use alive@host (or alive alone for this host)"
            ),
            DistError::NoCookie => f.write_str(
                "no cookie: give one with NodeBuilder::cookie, or put it in ~/.erlang.cookie",
            ),
            DistError::Epmd(why) => write!(f, "EPMD: {why}"),
            DistError::NameTaken(n) => write!(
                f,
                "EPMD already has a node named {n} (is another node running with that name?)"
            ),
            DistError::Host(h) => write!(f, "the host {h:?} does not resolve"),
            DistError::NoNode(n) => write!(f, "no node {n} is registered with its host's EPMD"),
            DistError::Handshake(why) => write!(f, "handshake failed: {why}"),
            DistError::Simultaneous(why) => write!(f, "handshake: {why}"),
            DistError::Cookie(why) => write!(f, "wrong cookie: {why}"),
            DistError::Io(e) => write!(f, "socket error: {e}"),
            DistError::Registry(e) => write!(f, "{e}"),
            DistError::NoProcess(p) => write!(f, "no process {p} on this node"),
            DistError::WrongType {
                pid,
                actual,
                expected,
            } => write!(f, "{pid} takes {actual}, not {expected}"),
            DistError::Term(e) => write!(f, "{e}"),
            DistError::Stopped => f.write_str("the node has been stopped"),
            DistError::Timeout => f.write_str("no answer in time"),
        }
    }
}

impl std::error::Error for DistError {}
