//! Actors: processes with mailboxes, in the style of Erlang.
//!
//! An actor is a pcml thread that owns a mailbox. [`actor::spawn`](crate::actor::spawn) starts
//! a fiber actor; its body gets a [`Ctx<M>`](crate::actor::Ctx), its end of the mailbox. Others
//! hold a [`Pid<M>`](crate::actor::Pid): cheap to clone, comparable, and typed, so only `M`s can
//! be sent to it. [`actor::spawn_async`](crate::actor::spawn_async) starts an async actor
//! instead (a task: use it for very many actors).
//!
//! # Requests and replies
//! A request carries the `Pid` to answer to; the main fiber gets a mailbox with `Ctx::new()`.
//! [`Ctx::receive_match`](crate::actor::Ctx::receive_match) takes the first message a test
//! accepts and leaves the others in order (Erlang's selective receive):
//!
//! ```
//! use pcml::actor::{self, Ctx, Pid};
//!
//! enum Counter {
//!     Add(u64),
//!     Get(Pid<Reply>),
//! }
//! #[derive(Debug, PartialEq)]
//! enum Reply {
//!     Total(u64),
//!     Other(&'static str),
//! }
//!
//! pcml::run(|| {
//!     let counter = actor::spawn(|mut ctx: Ctx<Counter>| {
//!         let mut total = 0;
//!         loop {
//!             match ctx.receive() {
//!                 Counter::Add(n) => total += n,
//!                 Counter::Get(to) => {
//!                     let _ = to.send(Reply::Total(total));
//!                 }
//!             }
//!         }
//!     });
//!     let mut me = Ctx::new();
//!     me.pid().send(Reply::Other("noise")).unwrap();
//!     (1..=10).for_each(|n| counter.send(Counter::Add(n)).unwrap());
//!     counter.send(Counter::Get(me.pid())).unwrap();
//!     // The total, skipping the message that came first.
//!     let total = me.receive_match(|m| matches!(m, Reply::Total(_)));
//!     assert_eq!(total, Reply::Total(55));
//!     assert_eq!(me.receive(), Reply::Other("noise"));
//! });
//! ```
//!
//! A receive is also an event ([`Ctx::receive_evt`](crate::actor::Ctx::receive_evt)), so an
//! actor can wait for its mailbox, a channel and a timeout in one `select!`.
//!
//! # Failure: links, monitors, supervisors
//! An actor ends when its body returns, panics, or is killed. A panic is caught: the actor dies
//! alone and the rest of the program goes on. Whoever watches it is told why:
//! - a **monitor** gets a [`Signal::Down`](crate::actor::Signal::Down) with the
//!   [`ExitReason`](crate::actor::ExitReason);
//! - a **link** kills the other side too, unless it traps exits, in which case it gets a
//!   [`Signal::Exit`](crate::actor::Signal::Exit).
//!
//! ```
//! use pcml::actor::{Ctx, ExitReason, Signal};
//!
//! pcml::run(|| {
//!     let mut me = Ctx::<()>::new();
//!     let (worker, _monitor) = me.spawn_monitor(|mut ctx: Ctx<u32>| {
//!         let n = ctx.receive();
//!         assert!(n < 10, "too big: {n}");
//!     });
//!     worker.send(99).unwrap();
//!     match me.receive_signal() {
//!         Signal::Down { reason: ExitReason::Panic(why), .. } => assert!(why.contains("too big")),
//!         other => panic!("unexpected {other:?}"),
//!     }
//! });
//! ```
//!
//! A [`Supervisor`](crate::actor::Supervisor) restarts children that fail, one for one or all
//! for one, until they fail more often than its intensity allows; supervisors nest into trees.
//! [`actor::register`](crate::actor::register), [`whereis`](crate::actor::whereis) and
//! [`send_named`](crate::actor::send_named) give actors names, so a restarted child is found
//! under the same name. The [`actor`](crate::actor) module page has the whole API, including
//! untyped mailboxes (`Ctx<AnyMsg>`) for Erlang-like code that receives by type.
//!
//! # How actors differ from Erlang's
//! - Mailboxes are typed, and messages are moved, not copied.
//! - Scheduling is cooperative: an actor that computes for a long time without receiving or
//!   synchronizing holds its proc (call [`pcml::consume_budget`](crate::consume_budget) in
//!   long loops). A kill reaches an actor wherever it waits in pcml.
