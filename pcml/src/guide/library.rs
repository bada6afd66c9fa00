//! The CML library: every communication object pcml has, and which one to pick.
//!
//! Each object's operations come in the forms you need: a blocking call (`send`, `recv`) that
//! suspends a fiber or parks an OS thread, an event (`send_evt`, `recv_evt`) for choices and
//! `.await`, and usually a `try_` form that never waits.
//!
//! | object | what it is | Go / Rust counterpart |
//! | --- | --- | --- |
//! | [`Chan`](crate::Chan), [`chan::channel`](crate::chan::channel) | synchronous channel: a send waits for a receive | unbuffered `chan` |
//! | [`BoundedChan`](crate::BoundedChan), [`chan::bounded`](crate::chan::bounded) | FIFO buffer of fixed capacity; senders wait when full | buffered `chan`, `crossbeam_channel::bounded` |
//! | [`Mailbox`](crate::Mailbox), [`chan::unbounded`](crate::chan::unbounded) | unbounded FIFO; sends never wait | `crossbeam_channel::unbounded`, `tokio::sync::mpsc::unbounded_channel` |
//! | [`Multicast`](crate::Multicast) | one sender, many ports, each port sees every message sent after it was made | `tokio::sync::broadcast` |
//! | [`IVar`](crate::IVar) | write-once cell; reads wait until it is written | `tokio::sync::OnceCell`, a promise |
//! | [`MVar`](crate::MVar) | a cell that is full or empty; take empties, put fills | a one-slot channel |
//! | [`CVar`](crate::CVar) | a one-shot signal, enabled once signalled | a closed `chan struct{}` |
//! | [`Mutex`](crate::Mutex), [`Semaphore`](crate::Semaphore), [`Barrier`](crate::Barrier) | locks that suspend fibers and tasks, not OS threads | `sync.Mutex`, `tokio::sync::Semaphore` |
//! | [`rpc::channel`](crate::rpc::channel) | request and reply as one event, with cancellation | a request carrying a reply channel |
//! | [`time`](crate::time) | sleeps, timeouts, `after`, `tick` | `time.After`, `tokio::time` |
//! | [`net`](crate::net), [`io`](crate::io) | sockets and file descriptors as events | `net.Conn`, `tokio::net` |
//!
//! The `Sender`/`Receiver` halves ([`chan::channel`](crate::chan::channel), `bounded`,
//! `unbounded`) add closing: when every sender is dropped (or one calls `close`), receivers
//! drain what is buffered and then see the end, and `for msg in &rx` finishes. The objects
//! themselves (`Chan::new()` and the rest) are cloneable handles to one object, used from any
//! thread, and can be closed with `close()` too.
//!
//! # A pipeline with a fan-in
//!
//! ```
//! use pcml::chan;
//!
//! pcml::run(|| {
//!     let (numbers_tx, numbers) = chan::bounded::<u64>(64);
//!     let (squares_tx, squares) = chan::unbounded::<u64>();
//!     pcml::spawn(move || (1..=100).for_each(|n| numbers_tx.send(n).unwrap()));
//!     for _ in 0..4 {
//!         let (numbers, squares_tx) = (numbers.clone(), squares_tx.clone());
//!         pcml::spawn(move || {
//!             for n in &numbers {
//!                 squares_tx.send(n * n).unwrap();
//!             }
//!         });
//!     }
//!     drop(squares_tx);
//!     let total: u64 = squares.iter().sum();
//!     assert_eq!(total, 338_350);
//! });
//! ```
//!
//! # Sync variables, a multicast and a lock
//!
//! ```
//! use pcml::{IVar, MVar, Multicast, Mutex};
//! use std::sync::Arc;
//!
//! pcml::run(|| {
//!     // IVar: the result of a computation, for whoever asks, once it is there.
//!     let answer = IVar::new();
//!     let a = answer.clone();
//!     pcml::spawn(move || a.put(42).unwrap());
//!     assert_eq!(answer.get(), 42);
//!
//!     // MVar as a lock around a value: take, then put back.
//!     let counter = MVar::new_full(0u32);
//!     let workers: Vec<_> = (0..10)
//!         .map(|_| {
//!             let c = counter.clone();
//!             pcml::spawn(move || {
//!                 let n = c.take();
//!                 c.put(n + 1);
//!             })
//!         })
//!         .collect();
//!     workers.into_iter().for_each(|w| w.join().unwrap());
//!     assert_eq!(counter.take(), 10);
//!
//!     // Multicast: every port sees every message sent after it was made.
//!     let news = Multicast::new();
//!     let (p1, p2) = (news.port(), news.port());
//!     news.send("hello");
//!     assert_eq!((p1.recv(), p2.recv()), ("hello", "hello"));
//!
//!     // A Mutex that suspends the fiber (not the proc) while it waits.
//!     let log = Arc::new(Mutex::new(Vec::new()));
//!     let l = log.clone();
//!     pcml::spawn(move || l.lock().push("from a fiber")).join().unwrap();
//!     assert_eq!(*log.lock(), ["from a fiber"]);
//! });
//! ```
//!
//! # RPC as an event
//! A call that composes: with a timeout, or with calls to other servers, and a server that
//! knows when a client stopped waiting.
//!
//! ```
//! use std::time::Duration;
//!
//! pcml::run(|| {
//!     let (client, server) = pcml::rpc::channel::<u32, u32>();
//!     pcml::spawn(move || loop {
//!         let (n, reply) = server.recv();
//!         let _ = reply.send(n + 1); // false if the caller has gone
//!     });
//!     assert_eq!(client.call(1), 2);
//!     let answer = client.call_evt(41).sync_timeout(Duration::from_secs(60));
//!     assert_eq!(answer, Some(42));
//! });
//! ```
