//! Coming from crossbeam-channel: the same shapes, plus threads that cost almost nothing and
//! operations that are values.
//!
//! pcml's channel halves follow crossbeam-channel's API: `channel`/`bounded`/`unbounded`
//! return a `(Sender, Receiver)`, both cloneable; the errors give the message back; receivers
//! iterate; and `select!` takes the same `recv(r) -> v` and `send(s, m) -> res` arms. The
//! differences are the threads (fibers instead of OS threads, so a thousand blocked receivers
//! cost a thousand small stacks, not a thousand OS threads) and the events underneath.
//!
//! | crossbeam-channel | pcml |
//! | --- | --- |
//! | `unbounded()`, `bounded(n)` | [`chan::unbounded()`](crate::chan::unbounded), [`chan::bounded(n)`](crate::chan::bounded) |
//! | `bounded(0)` (rendezvous) | [`chan::channel()`](crate::chan::channel) (also `bounded(0)`) |
//! | `send`, `recv`, `try_*`, `recv_timeout`, `send_timeout` | the same names, the same error types' shapes |
//! | `select! { recv(r) -> v => .., default(d) => .. }` | [`pcml::select!`](macro@crate::select), the same arms; a random choice among ready arms |
//! | `Select` (dynamic number of operations) | [`choose`](crate::event::choose) over a `Vec` of events, or [`select`](crate::event::select) |
//! | `after(d)`, `tick(d)`, `never()` | [`time::after`](crate::time::after), [`time::tick`](crate::time::tick), [`event::never`](crate::event::never) |
//! | `std::thread::scope` workers | fibers ([`pcml::spawn`](crate::spawn)) joined before the scope ends |
//!
//! ```
//! use std::time::Duration;
//!
//! use pcml::chan::{RecvTimeoutError, bounded};
//! use pcml::event::{Event, select};
//!
//! pcml::run(|| {
//!     let (tx, rx) = bounded::<u32>(1);
//!     assert_eq!(rx.recv_timeout(Duration::ZERO), Err(RecvTimeoutError::Timeout));
//!     tx.send(7).unwrap();
//!     assert_eq!(rx.recv(), Ok(7));
//!
//!     // A dynamic set of receivers, as crossbeam's `Select`: one event each, then a choice.
//!     let chans: Vec<_> = (0..8).map(|_| bounded::<usize>(1)).collect();
//!     chans[5].0.send(5).unwrap();
//!     let branches: Vec<Event<(usize, usize)>> = chans
//!         .iter()
//!         .enumerate()
//!         .map(|(i, (_, rx))| rx.recv_evt().wrap(move |v| (i, v.unwrap())))
//!         .collect();
//!     assert_eq!(select(branches), (5, 5));
//! });
//! ```
//!
//! The same channels are also usable from plain OS threads (they block the thread, as
//! crossbeam's do) and from async code (`recv_async().await`), so moving a program over can be
//! gradual.
