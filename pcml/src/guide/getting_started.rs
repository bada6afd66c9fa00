//! Getting started: a runtime, threads, channels.
//!
//! # A runtime
//! A pcml program runs inside a runtime: one worker OS thread (a *proc*) per core, each running
//! many lightweight threads. [`pcml::run`](crate::run) starts one with the default settings,
//! runs the closure as the *main fiber*, and returns what it returns once it is done:
//!
//! ```
//! let answer = pcml::run(|| 6 * 7);
//! assert_eq!(answer, 42);
//! ```
//!
//! For settings, build one ([`Builder`](crate::Builder)); `block_on` returns an error instead
//! of panicking when the program deadlocks:
//!
//! ```
//! let rt = pcml::Runtime::builder().procs(2).build().unwrap();
//! assert_eq!(rt.block_on(pcml::procs).unwrap(), 2);
//! ```
//!
//! # Two kinds of thread
//! - A **fiber** ([`pcml::spawn`](crate::spawn)) runs a closure on a stack of its own. It may
//!   block anywhere (a channel, a lock, a join, a socket) and only the fiber waits, never its
//!   proc. Write ordinary blocking code.
//! - A **task** ([`pcml::spawn_task`](crate::spawn_task)) runs a future. It costs a few hundred
//!   bytes instead of a stack, so millions are fine; it waits with `.await`.
//!
//! Both give a [`JoinHandle`](crate::JoinHandle); `join` waits for the result, and a panic
//! comes back as an error instead of bringing the program down:
//!
//! ```
//! pcml::run(|| {
//!     let squares: Vec<_> = (1..=10u64).map(|i| pcml::spawn(move || i * i)).collect();
//!     let total: u64 = squares.into_iter().map(|h| h.join().unwrap()).sum();
//!     assert_eq!(total, 385);
//!
//!     let task = pcml::spawn_task(async { "from a task" });
//!     assert_eq!(task.join().unwrap(), "from a task");
//!
//!     let oops = pcml::spawn(|| -> u32 { panic!("bad input") });
//!     assert!(oops.join().unwrap_err().is_panic());
//! });
//! ```
//!
//! Work that blocks the OS thread (a blocking file read, a long computation in a library you
//! do not control) goes to [`pcml::spawn_blocking`](crate::spawn_blocking), which runs it on a
//! side pool so the procs keep running threads.
//!
//! # Channels
//! Threads talk over channels. [`pcml::chan::channel`](crate::chan::channel) is a rendezvous:
//! a send waits for a receive. `bounded(n)` buffers `n` messages, `unbounded()` any number.
//! When every sender is gone the receiver sees the end, so a `for` loop over it finishes:
//!
//! ```
//! pcml::run(|| {
//!     let (tx, rx) = pcml::chan::bounded(16);
//!     for worker in 0..4u64 {
//!         let tx = tx.clone();
//!         pcml::spawn(move || {
//!             for i in 0..10 {
//!                 tx.send(worker * 100 + i).unwrap();
//!             }
//!         });
//!     }
//!     drop(tx); // only the workers' senders are left
//!     let received: Vec<u64> = rx.iter().collect();
//!     assert_eq!(received.len(), 40);
//! });
//! ```
//!
//! The same channels work from plain OS threads (they block the OS thread) and from async code
//! (`send_async(v).await`, `recv_async().await`), so one channel can join a `std::thread`, a
//! fiber and a task.
//!
//! # Where next
//! - [`events`](super::events): waiting on several things at once, timeouts, cancellation.
//! - [`library`](super::library): every communication object pcml has.
//! - [`actors`](super::actors): mailboxes, links, supervisors.
//! - The chapters for those coming from [Go](super::from_go),
//!   [crossbeam-channel](super::from_crossbeam), [tokio](super::from_tokio) and
//!   [Erlang](super::from_erlang).
