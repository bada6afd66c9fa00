//! The scheduler (seeds 003 and 004): runtimes, procs' run queues, work stealing, inboxes,
//! spawning, joining, deadlock detection.
//!
//! A runtime has one worker OS thread per proc (see `worker`). Work reaches a proc three ways:
//! its own deque and held slot (what it spawns, stealable by idle procs; see `held`), the
//! global injector (work from
//! outside the procs), and its inbox (wake-ups of its own fibers, and fibers placed on it with
//! `spawn_on`). A started fiber lives on its home proc for life (see `fiber`); tasks migrate.
//!
//! # Placement: where threads run, and why
//!
//! ```
//! // Let the scheduler place threads: a thread runs where it was spawned unless that proc
//! // leaves it waiting, so threads that talk to each other stay together.
//! let sum = pcml::run(|| {
//!     let ch = pcml::Chan::new();
//!     let tx = ch.clone();
//!     let producer = pcml::spawn(move || (1..=100u64).for_each(|i| tx.send(i)));
//!     let sum: u64 = (0..100).map(|_| ch.recv()).sum();
//!     producer.join().unwrap();
//!     sum
//! });
//! assert_eq!(sum, 5050);
//! ```
//!
//! The policy, most important first:
//! - **New work stays where it was spawned.** `spawn` and `spawn_task` put the new thread on
//!   the spawner's proc. A started fiber never moves (see `fiber`), so where a fiber first
//!   runs is where it talks to its partners for life.
//! - **An idle proc takes only work that waits.** A proc's newest spawned fiber is held
//!   (its joiner takes it back with one CAS, see `held`); an idle proc takes a held fiber only
//!   if it sees the same one held `HELD_GRACE` (2 ms) apart, and other queued work only if it
//!   is still there after `STEAL_GRACE` (20 us) of watching (giving up at once if work of its
//!   own arrives). A proc that spawns a thread and then blocks runs it within a microsecond or
//!   two, so the thread stays beside the threads it was spawned to talk to; a proc busy with
//!   something else leaves its queue waiting, and the idle proc takes it. The held fiber's
//!   longer grace covers a busy machine, where the OS may take the spawner's core away for a
//!   while: one fiber of seed 003's primes sieve stolen that way put a proc boundary in the
//!   middle of the chain of filters, and every later number crossed it twice; 2-proc runs
//!   then took 1.5-2x the 1-proc time (`examples/primes.rs spawn 1000 2` prints how many
//!   filters ran on proc 1: 1 of 999 before, 0 now, at about the 1-proc time). Go's scheduler
//!   likewise waits before it steals a goroutine's `runnext`, and tokio never steals its LIFO
//!   slot.
//! - **Woken tasks run on the waker's proc** (tasks migrate freely), so a task woken by a
//!   message runs next to its sender; woken fibers always go home, through their proc's inbox.
//! - **`spawn_on` is the exception**, for programs that know their layout: the thread runs on
//!   the named proc and is never stolen (seed 003's benchmarks place threads this way).
//!   Two threads that exchange a message per unit of work should not be split across procs:
//!   each message then costs a cross-proc wake-up (below), which is worth paying only for
//!   work much larger than it, or for threads that mostly run alone.
//! - **An idle proc spins, then parks.** It looks for work for 100 us (50 us on its core, then
//!   giving the core away between looks, so on a machine with more runnable threads than cores
//!   it does not keep the thread with work off a core), then sleeps until its next timer or a
//!   wake-up.
//!
//! ## A known limit: choices between a local and a remote partner
//!
//! A fiber woken on its own proc re-offers when that proc next runs it; a fiber of another
//! proc re-offers when its proc has drained its inbox and run it, which on a busy machine may
//! wait for the OS to give that proc a core. So a loop of `select` between a partner on the
//! chooser's proc and one on another proc, both always ready, favours the local one: with
//! `spawn_on` placing them so, the remote sender won 1 to 5 of 20,000 choices in runs on this
//! machine under load. Place such partners on one proc (or let the scheduler place them) when
//! a fair share between them matters.
//!
//! ## What crossing procs costs, and how it grows
//!
//! Measured on the 2-core VM this library is developed on, and modelled for bigger machines:
//! - a cache line moving between cores: about 80-200 ns (1.2 us in the VM's slow spells),
//!   against 1-5 ns for a line in the proc's own cache. A cross-proc rendezvous on a channel
//!   moves 3-4 lines (the channel's lock and queue, the partner's sync record, the inbox);
//! - waking a fiber of another proc: an inbox push (one line, plus the proc's `sleeping` flag
//!   read after a SeqCst fence), then the home proc's turn to drain it. If the home proc is
//!   spinning that is one more line; if it is parked it is a futex wake-up, about 45 us here,
//!   and if the OS has given its core to another process, one OS time slice (milliseconds);
//! - an idle proc's look for work reads one line per other proc (its deque ends, held slot
//!   and inbox): O(P) per look, so at 16 procs a look reads 16 lines; a steal then takes half
//!   the victim's deque in one batch, so spreading a tree of N spawns takes O(log N) steals
//!   per proc rather than one per thread;
//! - notifying idle procs of new work wakes at most one sleeper per push, and none while a
//!   proc is searching: the cost per spawn stays O(1) in P.
//!
//! On 16 procs (the Parallel CML paper's figures run on 16 to 48 cores) the per-operation
//! costs above stay the same except the idle look, which grows linearly; what grows is the
//! chance that a message's partner is remote. With scheduler placement a thread's partners
//! are, in the common case, the threads it spawned or was spawned with, so the share of
//! messages that cross procs is the share of threads that were stolen: each steal moves
//! half a queue, so in a tree-shaped program it falls as the tree grows. With round-robin
//! `spawn_on`, as in seed 003's primes, a share (P-1)/P of the messages cross procs: 15/16
//! at 16 procs, each paying a cross-proc wake-up, so that program scales only where the work
//! per message is larger than a wake-up (the paper's Manticore figures: primes-2000 in
//! 3.08 s on 1 proc, 0.92 s on 8).
//!
//! A thread that computes without a sync point holds its proc: see `watchdog` for
//! [`consume_budget`], and for the watchdog that lets the other procs take what such a proc
//! leaves waiting.
//!
//! Deadlock (seed 000's NoRunnableThreads; CML shuts down the same way): when the last proc goes
//! to sleep and main is blocked, every queue is empty and no blocking job, timer or I/O source
//! is pending, and nothing outside the runtime can act (no OS thread but pcml's own and those
//! waiting in `block_on`, no other runtime that is not idle: see `outside`), `block_on` returns
//! [`RuntimeError::Deadlock`] naming how many threads are blocked. [`Builder::detect_deadlock`]
//! says exactly what is and is not detected.
//!
//! # Invariants
//! - See `worker` for the run-queue and sleep invariants, `join` for results, `blocker` for
//!   wake-ups.

pub(crate) mod blocker;
pub(crate) mod blocking;
pub mod dump;
pub(crate) mod fibers;
pub(crate) mod held;
pub(crate) mod inbox;
pub(crate) mod io;
pub(crate) mod join;
pub(crate) mod outside;
pub(crate) mod panic;
pub(crate) mod registry;
pub(crate) mod runtime;
pub(crate) mod spawn;
pub(crate) mod timer;
pub mod watchdog;
pub(crate) mod worker;

#[cfg(all(test, pcml_loom))]
mod tests;

pub use dump::{Dump, SpawnBuilder, ThreadDump, ThreadKind, ThreadState, current_name, dump};
pub use join::{JoinError, JoinHandle, ThreadId};
pub use runtime::{BuildError, Builder, MAX_PROCS, Runtime, RuntimeError, run};
pub use spawn::{
    SpawnError, YieldAsync, current, exit, spawn, spawn_blocking, spawn_on, spawn_task,
    try_current, try_spawn, try_spawn_on, yield_async, yield_now,
};
pub use watchdog::{ConsumeBudget, consume_budget, consume_budget_async};

pub(crate) use runtime::default_procs;
pub(crate) use worker::location;
