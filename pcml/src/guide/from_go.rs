//! Coming from Go: goroutines, channels and `select`, and what pcml adds.
//!
//! pcml's fibers are goroutines: cheap, on every core, free to block. Its channels and
//! `select!` read almost as Go's. What pcml adds is that an operation is a value (an
//! [`Event`](crate::event::Event)) you can pass around and combine before anyone waits on it,
//! and negative acknowledgements that tell a server its client went another way.
//!
//! | Go | pcml |
//! | --- | --- |
//! | `go f()` | [`pcml::spawn(f)`](crate::spawn) (a fiber), [`pcml::spawn_task`](crate::spawn_task) (a future) |
//! | `ch := make(chan T)` | `let (tx, rx) = pcml::chan::channel::<T>();` or [`Chan::new()`](crate::Chan::new) |
//! | `make(chan T, n)` | [`pcml::chan::bounded(n)`](crate::chan::bounded) |
//! | `ch <- v`, `v := <-ch` | `tx.send(v)`, `rx.recv()` (a `Result`: `Err` once closed and empty) |
//! | `v, ok := <-ch` | `match rx.recv() { Ok(v) => .., Err(_) => /* closed */ }` |
//! | `close(ch)` | `tx.close()`, or drop the last sender |
//! | `for v := range ch` | `for v in &rx` |
//! | `select { case v := <-a: .. case b <- x: .. default: .. }` | `select! { recv(a) -> v => .., send(b, x) -> _ => .., default => .. }` |
//! | `time.After(d)`, `time.Tick(d)` | [`time::after(d)`](crate::time::after), [`time::tick(d)`](crate::time::tick) |
//! | `sync.WaitGroup` | keep the [`JoinHandle`](crate::JoinHandle)s and `join` them |
//! | `sync.Mutex` | [`pcml::Mutex`](crate::Mutex) (suspends the fiber, not the OS thread) |
//! | `context.Context` cancellation | a channel in the `select!`, [`JoinHandle::abort`](crate::JoinHandle::abort), or a nack ([`with_nack`](crate::event::with_nack)) |
//! | `GOMAXPROCS` | [`Builder::procs`](crate::Builder::procs), `PCML_PROCS` |
//! | `SIGQUIT` goroutine dump | [`pcml::dump()`](fn@crate::dump), and the deadlock report, which lists who waits on what |
//!
//! ```
//! use std::time::Duration;
//!
//! use pcml::time::after;
//!
//! // Go's "first response wins" with a deadline: query three replicas, take the fastest.
//! fn fastest(replicas: &[u32]) -> Option<u32> {
//!     let (tx, rx) = pcml::chan::bounded(replicas.len()); // buffered: losers never block
//!     for &r in replicas {
//!         let tx = tx.clone();
//!         pcml::spawn(move || {
//!             let _ = tx.send(r * 10);
//!         });
//!     }
//!     let deadline = after(Duration::from_secs(60));
//!     pcml::select! {
//!         recv(rx) -> v => v.ok(),
//!         recv(deadline) -> _ => None,
//!     }
//! }
//!
//! pcml::run(|| {
//!     let got = fastest(&[1, 2, 3]).unwrap();
//!     assert!([10, 20, 30].contains(&got));
//! });
//! ```
//!
//! # Differences to keep in mind
//! - Channels made with [`Chan::new()`](crate::Chan::new) are handles: clone one to share it.
//!   The halves from [`chan::channel`](crate::chan::channel) add Go's close semantics (the
//!   receiver sees the end when every sender is gone).
//! - A send on a closed channel is an error value (`Err(SendError(v))`, the message given back),
//!   not a panic.
//! - A fiber never moves to another core once started (Rust's thread-locals would break);
//!   unstarted fibers and tasks do move. [`spawn_on`](crate::spawn_on) places one by hand.
//! - Scheduling is cooperative: Go preempts a goroutine that computes for long, pcml cannot
//!   preempt Rust code safely. A long loop should call
//!   [`pcml::consume_budget()`](crate::consume_budget); a watchdog reports a thread that holds
//!   its proc too long and lets other procs take its queued work.
