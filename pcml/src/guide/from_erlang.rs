//! Coming from Erlang/OTP: processes, messages, links, monitors and supervisors, typed.
//!
//! pcml's actors follow Erlang's model (after Krook, *Region-based Memory Management and Actor
//! Model Concurrency*): an actor owns a mailbox, receives selectively, links and monitors
//! others, and lives under supervisors. The differences come from Rust: mailboxes are typed,
//! messages are moved instead of copied, and scheduling is cooperative.
//!
//! | Erlang | pcml |
//! | --- | --- |
//! | `spawn(fun)` | [`actor::spawn(\|ctx: Ctx<M>\| ..)`](crate::actor::spawn), [`actor::spawn_async`](crate::actor::spawn_async) |
//! | `self()` | [`ctx.pid()`](crate::actor::Ctx::pid), [`actor::self_pid()`](crate::actor::self_pid) |
//! | `Pid ! Msg` | [`pid.send(msg)`](crate::actor::Pid::send) (an error if the actor is gone) |
//! | `receive Pattern -> .. end` | [`ctx.receive_match(\|m\| matches!(m, Pattern))`](crate::actor::Ctx::receive_match) |
//! | `receive .. after T -> .. end` | [`ctx.receive_timeout(t)`](crate::actor::Ctx::receive_timeout), or a `select!` with `default(t)` |
//! | `link/1`, `spawn_link/1` | [`ctx.link(&pid)`](crate::actor::Ctx::link), [`ctx.spawn_link(..)`](crate::actor::Ctx::spawn_link) |
//! | `process_flag(trap_exit, true)` | [`ctx.trap_exits(true)`](crate::actor::Ctx::trap_exits), then [`Signal::Exit`](crate::actor::Signal::Exit) |
//! | `erlang:monitor(process, Pid)` | [`ctx.monitor(&pid)`](crate::actor::Ctx::monitor), then [`Signal::Down`](crate::actor::Signal::Down) |
//! | `exit(Pid, kill)` | [`pid.kill()`](crate::actor::Pid::kill) |
//! | `register/2`, `whereis/1`, `{Name, node()} ! Msg` | [`actor::register`](crate::actor::register), [`whereis`](crate::actor::whereis), [`send_named`](crate::actor::send_named) |
//! | `supervisor` with `one_for_one`, `one_for_all` | [`Supervisor`](crate::actor::Supervisor), [`Strategy`](crate::actor::Strategy), [`ChildSpec`](crate::actor::ChildSpec) |
//! | untyped messages matched by shape | `Ctx<AnyMsg>` and [`ctx.receive_type::<T>()`](crate::actor::Ctx::receive_type) |
//!
//! ```
//! use pcml::actor::{self, Ctx, ExitReason, Signal};
//!
//! pcml::run(|| {
//!     // A linked worker that crashes; we trap exits, so we get a message instead of dying.
//!     let mut me = Ctx::<()>::new();
//!     me.trap_exits(true);
//!     let worker = me.spawn_link(|mut ctx: Ctx<&'static str>| {
//!         if ctx.receive() == "crash" {
//!             panic!("asked to");
//!         }
//!     });
//!     actor::register("worker", &worker).unwrap();
//!     actor::send_named("worker", "crash").unwrap();
//!     match me.receive_signal() {
//!         Signal::Exit { from, reason: ExitReason::Panic(why) } => {
//!             assert_eq!(from, worker.id());
//!             assert!(why.contains("asked to"));
//!         }
//!         other => panic!("unexpected {other:?}"),
//!     }
//!     // Its name is freed with it.
//!     assert!(actor::whereis::<&'static str>("worker").is_none());
//! });
//! ```
//!
//! # What differs
//! - **Types.** A `Pid<M>` accepts only `M`s; a request carries a typed `Pid` to answer to.
//!   For Erlang-style code that matches on the shape of what arrives, use `Ctx<AnyMsg>`.
//! - **Shared memory.** Messages move between actors without copying; an actor can also hold
//!   `Arc`s, channels and locks. Nothing stops two actors from sharing state except discipline.
//! - **Cooperative scheduling.** The BEAM counts reductions and preempts; pcml cannot preempt
//!   Rust code. An actor that computes for long should call
//!   [`pcml::consume_budget()`](crate::consume_budget); a watchdog reports a proc held too long.
//! - **Exit signals and messages.** A typed actor reads signals from a queue of their own
//!   (`receive_signal`, or `receive_any`, signals first), so an `'EXIT'` may be seen before
//!   messages its sender sent earlier; an untyped actor gets both in arrival order.
