//! # Guide: making your own synchronization objects first class
//!
//! A communication object of your own (a latch, an exchanger, a pool of resources, a rate
//! limiter) becomes a full CML citizen by implementing [`BaseEvent`] for its event and wrapping
//! it with [`Event::from_base`]. The result composes with [`choose`](crate::event::choose),
//! [`wrap`](Event::wrap), [`guard`](crate::event::guard), [`with_nack`](crate::event::with_nack)
//! and timeouts, is synced from fibers, OS threads and async code (`.await`), and is cancelled
//! cleanly when another branch wins. No `unsafe` is needed: the protocol's state lives in pcml's
//! types, and your object only keeps a queue of [`Waiter`]s under its own lock.
//!
//! ## The pieces
//! - [`Waiter`]: a partner's handle on one blocked sync's offer; keep these in your queue.
//!   [`Waiter::synch_spinning`] (or [`Waiter::try_synch`]) wins it and returns a [`Commit`];
//!   [`Waiter::is_synched`] says it is dead (sweep it); [`Waiter::same_sync`] says it is an offer
//!   of the sync now blocking (never match it: a choice may name your object twice).
//! - [`OwnWaiter`]: the blocking sync's own handle, given to `block`. [`OwnWaiter::waiter`]
//!   makes the `Waiter` to enqueue; [`OwnWaiter::try_match`] claims our own state and wins a
//!   partner's (Figure 9 of the Parallel CML paper); [`OwnWaiter::synch_self`] completes our
//!   sync with no partner, when the object itself allows it.
//! - [`Commit`]: the right and duty to deliver to a won waiter, then publish (which wakes it).
//!   Deliver first, publish second; dropping a `Commit` publishes too.
//! - [`Blocked`]: what `block` did: `Waiting` (offer enqueued), `Committed(v)` (matched now),
//!   `Synched` (another branch of this sync already won).
//!
//! ## The four phases
//! A sync calls, for each branch of the choice (in a fair, rotating order):
//! 1. [`BaseEvent::poll`]: is it enabled now? Advisory and cheap: a short lock or an atomic
//!    load.
//! 2. [`BaseEvent::try_do`], for branches that polled enabled: commit now if you can. Your own
//!    sync is invisible to everyone, so just win a partner (`synch_spinning`), deliver,
//!    publish, and return the result; return `None` if the chance is gone.
//! 3. [`BaseEvent::block`], if nothing committed: now the sync is visible (its other branches
//!    may already have offers out). Under your lock, either match a partner with `try_match`,
//!    complete at once with `synch_self` if your object is enabled after all, or enqueue
//!    `me.waiter()` with whatever your offer carries, and return `Waiting`.
//! 4. Then exactly one of [`BaseEvent::complete`] (a partner won your offer: return what it
//!    delivered) or [`BaseEvent::cancel`] (another branch won, or the sync was abandoned: your
//!    offer is dead and nobody else will touch it; reclaim what it holds).
//! 5. Rarely, [`BaseEvent::discard`]: the event won, but its sync was abandoned before the
//!    value reached the syncing thread (an `.await` dropped right after a partner delivered).
//!    The default drops the value; a buffered object puts it back (a mailbox returns the
//!    message to the front of its queue, an MVar refills its cell), so nothing is lost. A
//!    rendezvous cannot: its partner has completed and moved on (`Chan` drops the message;
//!    see the `event` module's "Cancellation").
//!
//! ## The rules
//! - Never block, yield, sync or call user code inside a phase. Hold at most one lock at a
//!   time, and let slot locks be leaves (take nothing else while holding one).
//! - Whoever wins a waiter (a `Commit`, or `Match::Won`) delivers into that offer before
//!   publishing; afterwards only the offer's owner touches it.
//! - On `Match::SelfSynched`, put the partner back where it was: you did not take it.
//! - Sweep dead waiters (`is_synched`) as you scan, so a loop that keeps losing on your object
//!   keeps its queue bounded.
//!
//! ## Three shapes of object
//! - **A condition that becomes true** (a flag, a latch, a timer): `block` enqueues the waiter
//!   or, if the condition already holds, calls `synch_self`; whoever makes it true wins every
//!   queued waiter and publishes (nothing to deliver). See the example on [`BaseEvent`].
//! - **A buffer** (a mailbox, an MVar): offers carry a one-value slot; the producer wins a
//!   blocked consumer's waiter, writes the value into its slot, publishes.
//! - **A rendezvous** (a channel, the exchanger below): both sides may block, so `block` looks
//!   for a partner of the other kind and matches it with `try_match`.
//!
//! ## A whole example: an exchanger
//! Two threads meet and swap values. This is `pcml/examples/exchanger.rs` (run it with
//! `cargo run --release -p pcml --example exchanger`); the tests in
//! `pcml/tests/event/custom.rs` sync it from fibers on two procs, OS threads, pcml tasks and
//! tokio, in choices with itself and with timeouts, and drop pending `.await`s.
//!
#![doc = concat!("```\n", include_str!("../../examples/exchanger.rs"), "```")]

#[allow(unused_imports)] // for the intra-doc links above
use crate::event::{BaseEvent, Blocked, Commit, Event, OwnWaiter, Waiter};
