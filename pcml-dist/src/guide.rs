//! A guide for Erlang users: from `net_adm:ping` to a supervised pcml worker serving an
//! Erlang client.
//!
//! # 1. Two nodes that see each other
//! A pcml node is a node like any other: it registers with EPMD (started with `epmd -daemon`
//! if none runs; `ERL_EPMD_PORT` is honoured) and shares the cluster's cookie.
//!
//! ```no_run
//! pcml::run(|| {
//!     let node = pcml_dist::NodeBuilder::new("pcml@127.0.0.1")
//!         .cookie("secret")
//!         .start()
//!         .expect("EPMD runs and the name is free");
//!     // From here `net_adm:ping('pcml@127.0.0.1')` on an Erlang node started with
//!     // `erl -name erl@127.0.0.1 -setcookie secret` answers `pong`, and this pings back:
//!     node.connect("erl@127.0.0.1").expect("pong");
//!     assert!(node.nodes().contains(&"erl@127.0.0.1".to_string()));
//! });
//! ```
//!
//! A short name (`erl -sname`) is `NodeBuilder::new("pcml")`; the host is this machine's.
//! A wrong cookie is refused on both sides: `net_adm:ping` answers `pang`, and
//! [`Node::connect`](crate::Node::connect) returns [`DistError::Cookie`](crate::DistError).
//!
//! # 2. Messages are terms
//! Erlang sends terms; a pcml actor takes Rust values. [`FromTerm`](crate::term::FromTerm)
//! and [`IntoTerm`](crate::term::IntoTerm) convert (see [`term`](crate::term) for the table:
//! atoms, integers, floats, binaries as `String`, lists as `Vec`, tuples, maps, `{ok, _}` as
//! `Result`). An actor that takes any term uses [`Term`](crate::term::Term) itself. Implement
//! the two traits for your own message types, usually as tagged tuples:
//!
//! ```
//! use pcml_dist::term::{Atom, ErlPid, FromTerm, Term, TermError, is_atom};
//!
//! /// `{add, From, N}` or `{total, From}`.
//! enum Req {
//!     Add(ErlPid, i64),
//!     Total(ErlPid),
//! }
//!
//! impl FromTerm for Req {
//!     fn from_term(t: Term) -> Result<Self, TermError> {
//!         if let Ok((tag, from, n)) = <(Atom, ErlPid, i64)>::from_term(t.clone())
//!             && tag.name == "add"
//!         {
//!             return Ok(Req::Add(from, n));
//!         }
//!         match <(Atom, ErlPid)>::from_term(t.clone()) {
//!             Ok((tag, from)) if tag.name == "total" => Ok(Req::Total(from)),
//!             _ => Err(TermError::new("{add, Pid, N} or {total, Pid}", &t)),
//!         }
//!     }
//! }
//! # let _ = is_atom;
//! ```
//!
//! A message that does not decode is dropped with a line on stderr (it never reaches the
//! actor's mailbox), as a typed mailbox cannot hold it.
//!
//! # 3. A supervised worker that Erlang calls
//! The worker is an ordinary pcml actor, under an ordinary pcml
//! [`Supervisor`](pcml::actor::Supervisor); it registers its name with the node, so Erlang
//! reaches it as `{counter, 'pcml@127.0.0.1'}` after each restart, and answers the pid in
//! each request (the test `supervised_worker_serves_erlang` runs this exchange):
//!
//! ```no_run
//! use pcml::actor::{self, ChildSpec, Ctx, Strategy, Supervisor};
//! use pcml_dist::term::{Atom, ErlPid, FromTerm, Term};
//! use pcml_dist::{Node, NodeBuilder};
//!
//! fn counter(node: Node) -> pcml::actor::Pid<Term> {
//!     actor::spawn(move |mut ctx: Ctx<Term>| {
//!         node.register("counter", &ctx.pid()).expect("one counter at a time");
//!         let mut total = 0i64;
//!         loop {
//!             let t = ctx.receive();
//!             if let Ok((_, from, n)) = <(Atom, ErlPid, i64)>::from_term(t.clone()) {
//!                 assert!(n >= 0, "negative add"); // a crash: the supervisor restarts us
//!                 total += n;
//!                 let _ = node.send(&from, (Atom::from("ok"), total));
//!             } else if let Ok((_, from)) = <(Atom, ErlPid)>::from_term(t) {
//!                 let _ = node.send(&from, (Atom::from("total"), total));
//!             }
//!         }
//!     })
//! }
//!
//! pcml::run(|| {
//!     let node = NodeBuilder::new("pcml@127.0.0.1").cookie("secret").start().unwrap();
//!     let n = node.clone();
//!     let _sup = Supervisor::new(Strategy::OneForOne)
//!         .child(ChildSpec::new("counter", move || counter(n.clone())))
//!         .start();
//!     // The node serves as long as this fiber keeps it (and the runtime) alive.
//!     loop {
//!         pcml::time::sleep(std::time::Duration::from_secs(3600));
//!     }
//! });
//! ```
//!
//! The Erlang client:
//!
//! ```text
//! 1> {counter, 'pcml@127.0.0.1'} ! {add, self(), 5}, flush().
//! Shell got {ok,5}
//! 2> Ref = monitor(process, {counter, 'pcml@127.0.0.1'}).
//! 3> {counter, 'pcml@127.0.0.1'} ! {add, self(), -1}, flush().
//! Shell got {'DOWN',Ref,process,{counter,'pcml@127.0.0.1'},{panic,<<"negative add">>}}
//! 4> {counter, 'pcml@127.0.0.1'} ! {total, self()}, flush().   % the restarted counter
//! Shell got {total,0}
//! ```
//!
//! # 4. Links, monitors and exits across nodes
//! - From Erlang, `link/1`, `monitor/2` (by pid or `{Name, Node}`), `exit/2` and `unlink/1`
//!   on a pcml actor work as on an Erlang process. Exit reasons map as the [`term`](crate::term)
//!   module says: `normal`, `noproc`, a panic as `{panic, <<"message">>}`, a kill with
//!   `Pid::kill(why)` as the atom `why`.
//! - From pcml, [`Node::pid_of`](crate::Node::pid_of) gives a pcml `Pid` for an Erlang pid;
//!   `Ctx::link`, `Ctx::monitor` and `send` on it work as on a local actor, and
//!   `Signal::Exit` / `Signal::Down` carry the Erlang reason (`noconnection` when its node goes
//!   down) as `ExitReason::Killed("reason")`.
//! - [`Node::call`](crate::Node::call) is `gen_server:call` with a timeout.
//!
//! # What is not supported
//! - Hot code loading, and so `rpc` and `spawn` into a pcml node: a pcml node has no modules
//!   to call (it answers `net_adm:ping`, not `rpc:call`).
//! - `global` (global names and locks) and `pg`: their servers do not run on a pcml node.
//! - Funs in messages (refused: the connection is closed), the atom cache, fragmented
//!   messages and aliases (not advertised, so peers do not use them).
//! - Erlang's group leader I/O to a pcml node, and `erlang:process_info` on pcml pids.
