//! Events and choice: waiting on several things at once.
//!
//! An [`Event<T>`](crate::event::Event) is a value that *describes* a synchronous operation
//! yielding a `T`: a receive on a channel, a send, a timeout, a join. Nothing happens until it
//! is synchronized. Because it is a value, it can be combined before anyone waits on it, and a
//! function can return "the operation" for its caller to choose among others. This is Concurrent
//! ML's idea (John Reppy), made parallel in pcml after Reppy, Russo and Xiao, *Parallel
//! Concurrent ML*.
//!
//! # `select!`: the first of several
//! The everyday form is the [`select!`](macro@crate::select) macro: arms of operations, the first
//! one ready runs its body. Bodies run in your scope, so they may borrow, mutate, `break` and
//! `return`. When several arms are ready, each is equally likely to win.
//!
//! ```
//! use std::time::Duration;
//!
//! pcml::run(|| {
//!     let (jobs_tx, jobs) = pcml::chan::bounded::<u32>(8);
//!     let (stop_tx, stop) = pcml::chan::channel::<()>();
//!     pcml::spawn(move || {
//!         (1..=5).for_each(|j| jobs_tx.send(j).unwrap());
//!         stop_tx.send(()).unwrap();
//!     });
//!     let mut done = Vec::new();
//!     loop {
//!         pcml::select! {
//!             recv(jobs) -> job => done.push(job.unwrap()),
//!             recv(stop) -> _ => break,
//!             default(Duration::from_secs(5)) => panic!("nothing for five seconds"),
//!         }
//!     }
//!     // The stop may win while jobs are still buffered: take what is left.
//!     done.extend(jobs.try_iter());
//!     assert_eq!(done, [1, 2, 3, 4, 5]);
//! });
//! ```
//!
//! `default => ...` makes it a poll (run that arm if nothing is ready now), `default(d)` waits at
//! most `d`. In async code, [`select_async!`](macro@crate::select_async) is the same with
//! `.await`.
//!
//! # Events as values
//! The functions behind the macro take events you build and keep:
//! - [`choose`](crate::event::choose)`([a, b, ...])` is an event that is the first of several;
//!   [`select`](crate::event::select) syncs it at once.
//! - [`ev.wrap(f)`](crate::event::Event::wrap) maps the result, once that branch has won.
//! - [`guard(f)`](crate::event::guard) runs `f` at sync time to build the event (a fresh
//!   request id, the current time).
//! - [`with_nack(f)`](crate::event::with_nack) gives `f` a *negative acknowledgement*: an event
//!   that becomes enabled if this branch loses. A server can then stop working on a request
//!   whose client went another way.
//! - [`ev.sync()`](crate::event::Event::sync), [`ev.poll()`](crate::event::Event::poll),
//!   [`ev.sync_timeout(d)`](crate::event::Event::sync_timeout), or `ev.await` in async code.
//!
//! ```
//! use pcml::event::{Event, choose, with_nack};
//! use pcml::time::timeout_evt;
//! use pcml::{Chan, IVar};
//! use std::time::Duration;
//!
//! /// A request to a slow server: the reply, or `None` after `limit`. If the timeout wins,
//! /// the nack tells the server its answer is no longer wanted.
//! fn ask(server: &Chan<(u32, Chan<u32>, Event<()>)>, q: u32, limit: Duration) -> Event<Option<u32>> {
//!     let server = server.clone();
//!     choose([
//!         with_nack(move |nack| {
//!             let reply = Chan::new();
//!             server.send((q, reply.clone(), nack));
//!             reply.recv_evt().wrap(Some)
//!         }),
//!         timeout_evt(limit).wrap(|()| None),
//!     ])
//! }
//!
//! pcml::run(|| {
//!     let server = Chan::new();
//!     let (open, gave_up) = (IVar::new(), IVar::new());
//!     let (s, o, g) = (server.clone(), open.clone(), gave_up.clone());
//!     pcml::spawn(move || loop {
//!         let (q, reply, nack): (u32, Chan<u32>, Event<()>) = s.recv();
//!         o.get(); // the server is slow to start
//!         // Answer, unless the client has stopped waiting.
//!         let answered = pcml::event::select([
//!             reply.send_evt(q * 2).wrap(|()| true),
//!             nack.wrap(|()| false),
//!         ]);
//!         if !answered {
//!             g.put(q).unwrap();
//!         }
//!     });
//!     // A client that will not wait: the timeout wins, and the server, once it gets to the
//!     // request, sees the nack instead of blocking on a client that left.
//!     assert_eq!(ask(&server, 5, Duration::ZERO).sync(), None);
//!     open.put(()).unwrap();
//!     assert_eq!(gave_up.get(), 5);
//!     // A patient client gets its answer.
//!     assert_eq!(ask(&server, 21, Duration::from_secs(60)).sync(), Some(42));
//! });
//! ```
//!
//! # Timeouts
//! - [`time::timeout_evt(d)`](crate::time::timeout_evt) is an event enabled after `d`: a branch
//!   of any choice.
//! - [`time::after(d)`](crate::time::after) and [`time::tick(d)`](crate::time::tick) are
//!   receivers of the time, as Go's `time.After` and `time.Tick`, usable in `recv` arms.
//! - [`time::timeout(d, future)`](crate::time::timeout) bounds any future.
//!
//! # Cancellation, the rule
//! A branch that loses takes nothing: its offers are withdrawn, its nacks fire, what it carried
//! (a send's message) is dropped. Dropping a pending `.await` loses every branch. So a choice
//! never leaves half an operation behind, which is what makes events compose.
//!
//! # Reusable events
//! An [`Event`](crate::event::Event) is consumed by its sync. For one value synced many times,
//! each time fresh (as CML's events are), use [`SharedEvent`](crate::event::SharedEvent).
//!
//! Going further: the [`event`](crate::event) module, and [`event::base`](crate::event::base)
//! to write a communication object of your own.
