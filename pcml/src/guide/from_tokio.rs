//! Coming from tokio: tasks and `.await` as you know them, plus blocking-style fibers and
//! events that are values.
//!
//! pcml runs async tasks as tokio does (a work-stealing pool, one worker per core), and beside
//! them fibers: threads with stacks, where a blocking-looking call suspends only the fiber. Use
//! tasks where you want millions of them or existing async code; fibers where straight-line
//! blocking code is clearer. Both use the same channels and events.
//!
//! | tokio | pcml |
//! | --- | --- |
//! | `#[tokio::main]`, `Runtime::block_on(fut)` | [`pcml::run(f)`](crate::run) runs a closure as the main fiber; inside it, [`spawn_task`](crate::spawn_task) and `join` |
//! | `tokio::spawn(fut)` | [`pcml::spawn_task(fut)`](crate::spawn_task) |
//! | `JoinHandle::abort()` | [`JoinHandle::abort()`](crate::JoinHandle::abort) |
//! | `spawn_blocking` | [`pcml::spawn_blocking`](crate::spawn_blocking) |
//! | `mpsc::channel(n)`, `mpsc::unbounded_channel()` | [`chan::bounded(n)`](crate::chan::bounded), [`chan::unbounded()`](crate::chan::unbounded): `send_async(v).await`, `recv_async().await` |
//! | `oneshot` | [`IVar`](crate::IVar) |
//! | `broadcast` | [`Multicast`](crate::Multicast) |
//! | `tokio::select!` | [`select_async!`](macro@crate::select_async); or build the choice as an [`Event`](crate::event::Event) and `.await` it |
//! | `time::sleep`, `time::timeout`, `time::interval` | [`time::sleep_async`](crate::time::sleep_async), [`time::timeout`](crate::time::timeout), [`time::interval`](crate::time::interval) |
//! | `tokio::net` | [`pcml::net`](crate::net) (`futures_io` traits; tokio's `AsyncRead`/`AsyncWrite` with the `tokio` feature) |
//! | `task::yield_now`, `coop` budget | [`yield_async`](crate::yield_async), [`consume_budget_async`](crate::consume_budget_async) |
//!
//! ```
//! use std::time::Duration;
//!
//! pcml::run(|| {
//!     let (tx, rx) = pcml::chan::bounded::<u32>(4);
//!     let producer = pcml::spawn_task(async move {
//!         for i in 1..=3 {
//!             tx.send_async(i).await.unwrap();
//!         }
//!     });
//!     let consumer = pcml::spawn_task(async move {
//!         let mut sum = 0;
//!         loop {
//!             pcml::select_async! {
//!                 recv(rx) -> v => match v {
//!                     Ok(v) => sum += v,
//!                     Err(_) => break sum, // closed: the producer is done
//!                 },
//!                 default(Duration::from_secs(60)) => panic!("stuck"),
//!             }
//!         }
//!     });
//!     producer.join().unwrap();
//!     assert_eq!(consumer.join().unwrap(), 6);
//! });
//! ```
//!
//! # pcml events inside tokio
//! Every pcml event is a future: `.await` it in any executor, tokio included. A tokio task
//! and a pcml fiber can meet on one channel, and a dropped `.await` (a `tokio::select!` that
//! took another branch) withdraws its offer cleanly.
//!
//! ```
//! let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! let ch = pcml::Chan::<u32>::new();
//! let tx = ch.clone();
//! let fiber_side = std::thread::spawn(move || pcml::run(move || tx.send(5)));
//! assert_eq!(rt.block_on(async { ch.recv_evt().await }), 5);
//! fiber_side.join().unwrap();
//! ```
//!
//! # tokio inside pcml
//! tokio's own timers and sockets (and crates built on them) need a tokio runtime's context.
//! With the `tokio` feature, `Builder::tokio_handle(handle)` enters a tokio runtime's handle
//! on pcml's threads, so they work inside pcml tasks: the tokio runtime does that I/O and
//! timing on its own threads and wakes pcml's tasks through their wakers. Without it, tokio
//! panics with its own "there is no reactor running" message; pcml's [`time`](crate::time)
//! and [`net`](crate::net) need no tokio at all. `pcml/examples/hyper_server.rs` runs hyper's
//! HTTP/1.1 server on pcml tasks and sockets.
