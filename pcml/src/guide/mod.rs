//! The pcml guide: from a first program to servers and actor systems, and how pcml reads to
//! those who come from Go, crossbeam-channel, tokio or Erlang.
//!
//! Every example in these chapters is compiled and run as a test, so what you read works.
//!
//! | chapter | what it covers |
//! | --- | --- |
//! | [`getting_started`] | runtimes, fibers, tasks, channels: a first program |
//! | [`events`] | events as values: `select!`, choice, `wrap`, `guard`, `with_nack`, timeouts |
//! | [`library`] | the CML library: channels of every kind, sync variables, locks, RPC, time |
//! | [`actors`] | Erlang-style actors: mailboxes, selective receive, links, monitors, supervisors |
//! | [`sockets`] | TCP and UDP as events: a server with idle timeouts in one `select!` |
//! | [`production`] | long computations, the fiber cap, placement, allocators, dumps and logs |
//! | [`from_go`] | goroutines, channels, `select`, `close` and `range`, `time.After` |
//! | [`from_crossbeam`] | crossbeam-channel's API next to pcml's |
//! | [`from_tokio`] | tasks, `.await`, `tokio::select!`, timeouts, mixing the two runtimes |
//! | [`from_erlang`] | processes, `!`, `receive`, links, monitors, supervisors, names |
//!
//! Writing a communication object of your own (a base event) has a guide of its own:
//! [`event::guide`](crate::event::guide).

pub mod actors;
pub mod events;
pub mod from_crossbeam;
pub mod from_erlang;
pub mod from_go;
pub mod from_tokio;
pub mod getting_started;
pub mod library;
pub mod production;
pub mod sockets;
