//! # pcml: Parallel Concurrent ML for Rust
//!
//! Lightweight threads on every core, first-class synchronous events, the CML library around
//! them, and Erlang-style actors on top. This release provides the runtime (procs, fibers,
//! async tasks, the scheduler), events and channels ([`event`], [`chan`]) with the Parallel
//! CML protocol (one-shot [`Event`]s and reusable [`event::SharedEvent`] values), time ([`time`]: sleeps and timeouts as events), sync variables
//! ([`sync_var`]: [`IVar`], [`MVar`], [`CVar`]), unbounded [`mailbox`]es, [`bounded`]
//! buffered channels, [`multicast`] channels, fiber-aware locks ([`lock`]: [`Mutex`],
//! [`Semaphore`], [`Barrier`]), RPC as events ([`rpc`]), and I/O as events ([`net`]: TCP
//! and UDP sockets whose operations block only the calling fiber; [`io`]: any file
//! descriptor's readiness), and Erlang-style [`actor`]s (typed pids, mailboxes with selective
//! receive, a registry, links, monitors, supervisors).
//!
//! ```
//! let total = pcml::run(|| {
//!     let workers: Vec<_> = (0..8u64).map(|i| pcml::spawn(move || i * 10)).collect();
//!     workers.into_iter().map(|w| w.join().unwrap()).sum::<u64>()
//! });
//! assert_eq!(total, 280);
//! ```
//!
//! ## Threads
//! - **Fibers** ([`spawn`]) are stackful: code in them blocks in direct style (`join`, `sync`,
//!   `send`, `recv`, `sleep`) by suspending only the fiber. A started fiber stays on
//!   the proc that first ran it; see [`fiber`] for why.
//! - **Async tasks** ([`spawn_task`]) are futures: no stack of their own, so millions fit; they
//!   migrate between procs freely.
//! - **Blocking work** ([`spawn_blocking`]) runs on a side pool of OS threads.
//!
//! ## The fiber cap
//! Each started, unfinished fiber holds a stack mapped with a guard page: two memory mappings.
//! Linux allows `vm.max_map_count` mappings per process (65530 by default), so about 30,000
//! fibers can be running or blocked at once. Unstarted fibers cost only their closure. Past the
//! cap [`try_spawn`] returns [`SpawnError`] and [`spawn`] panics saying so. Raise the cap with
//! `sysctl -w vm.max_map_count=262144` (as root), or use async tasks for very many threads.
//!
//! ## Platform
//! Linux only: the I/O driver is epoll, fiber stacks are `mmap`ed with guard pages and a stack
//! overflow is caught on a `sigaltstack`, and deadlock detection lists `/proc/self/task`. Building for any
//! other operating system stops with a compile error that says so. Tested on Debian 12, x86_64;
//! other architectures that the stack-switching crate `corosensei` supports (aarch64, riscv64,
//! ...) should work but are not tested.
//!
//! ## References
//! The docs cite these by author and year.
//! - Reppy, Russo and Xiao 2009: John Reppy, Claudio V. Russo and Yingqi Xiao, *Parallel
//!   Concurrent ML*, ICFP 2009. The event protocol (Waiting, Claimed, Synched), its model
//!   checking, and the spawn, ping-pong and primes benchmarks.
//! - Morrisett and Tolmach 1992: J. Gregory Morrisett and Andrew Tolmach, *A Portable
//!   Multiprocessor Interface for Standard ML of New Jersey*, Carnegie Mellon University
//!   technical report CMU-CS-92-155, 1992. Procs, proc-local data, spin locks.
//! - Deleuze 2010: Christophe Deleuze, *Light weight concurrency in OCaml: continuations,
//!   monads, events, and friends*, 2010. Direct and indirect style threads, MVars and FIFOs.
//! - Farvardin 2017: Kavon Farvardin, *Weighing Continuations for Concurrency*, 2017. Stack
//!   strategies for lightweight threads.
//! - Krook 2020: Robert Krook, *Region-based Memory Management and Actor Model Concurrency*,
//!   master's thesis, Chalmers University of Technology, 2020. The actor API and its benchmarks
//!   against Erlang.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

#[cfg(not(target_os = "linux"))]
compile_error!(
    "pcml runs on Linux only (epoll, mmap'd fiber stacks, /proc/self/task); \
     build on Linux, or use a Linux container or VM"
);

pub mod actor;
pub mod bounded;
pub mod chan;
pub mod event;
pub mod fiber;
pub mod guide;
pub mod io;
pub mod lock;
pub mod log;
pub(crate) mod loom;
pub mod mailbox;
pub mod mp;
pub mod multicast;
pub mod net;
pub mod rpc;
pub mod sched;
pub mod sync_var;
pub mod task;
pub mod time;

pub use bounded::BoundedChan;
pub use chan::Chan;
pub use event::{
    Event, always, choose, choose_biased, guard, never, select, select_biased, sync, with_nack,
};
pub use lock::{Barrier, Mutex, Semaphore};
pub use mailbox::Mailbox;
pub use mp::{ProcLocal, SpinLock, current_proc, procs};
pub use multicast::Multicast;
pub use sched::{
    BuildError, Builder, ConsumeBudget, Dump, JoinError, JoinHandle, ObjectId, Runtime,
    RuntimeError, SpawnBuilder, SpawnError, ThreadDump, ThreadId, ThreadKind, ThreadState,
    YieldAsync, consume_budget, consume_budget_async, current, current_name, dump, exit, run,
    spawn, spawn_blocking, spawn_on, spawn_task, try_current, try_spawn, try_spawn_on, yield_async,
    yield_now,
};
pub use sync_var::{CVar, IVar, MVar};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
