//! Running pcml programs for real: threads that compute, memory limits, placement, allocators,
//! and seeing what a program is doing.
//!
//! # Threads that compute: `consume_budget` and the watchdog
//! pcml switches threads only where they synchronize, so a thread that computes for a second
//! without a sync point holds its proc for that second. Call
//! [`pcml::consume_budget()`](crate::consume_budget) in long loops (in a task,
//! [`consume_budget_async().await`](crate::consume_budget_async)): it yields every so many
//! calls, and at once when the thread has held its proc for a whole time slice. For work with no
//! loop to put it in, use [`pcml::spawn_blocking`](crate::spawn_blocking), which runs on OS
//! threads of its own.
//!
//! ```
//! let ready = pcml::run(|| {
//!     let other = pcml::spawn(|| "ran meanwhile");
//!     let mut x = 0u64;
//!     for i in 0..1_000_000u64 {
//!         x = x.wrapping_mul(31).wrapping_add(i);
//!         pcml::consume_budget();
//!     }
//!     assert!(other.is_finished()); // on any number of procs
//!     other.join().unwrap()
//! });
//! assert_eq!(ready, "ran meanwhile");
//! ```
//!
//! Each runtime also has a watchdog (as Go's `sysmon`): when a thread has held its proc for a
//! time slice, the other procs take that proc's due timers, queued tasks and unstarted fibers,
//! and the thread is reported with its name and spawn site. Started fibers cannot move to
//! another OS thread, and pcml does not preempt Rust code at arbitrary points: the
//! [`sched`](crate::sched) module docs say why.
//!
//! # The fiber cap
//! A fiber gets its stack (mapped with a guard page) when it first runs. Linux allows
//! `vm.max_map_count` mappings per process (65530 by default) and each stack takes two, so
//! about 30,000 fibers can be running or blocked at once; unstarted fibers cost only their
//! closure. At the cap [`try_spawn`](crate::try_spawn) returns an error and
//! [`spawn`](crate::spawn) panics saying which limit was hit. Raise it with
//! `sudo sysctl -w vm.max_map_count=262144` (about 129,000 fibers), or use async tasks, which
//! hold no stack, for very many threads. A fiber that overflows its stack is reported and the
//! process aborts; raise the size with [`Builder::stack_size`](crate::Builder::stack_size) or
//! `PCML_STACK_SIZE`.
//!
//! # Placement
//! A new thread starts on its spawner's proc; an idle proc takes another's queued work only when
//! it has waited there a little while, so threads that talk to each other stay together and work
//! spreads only where a proc leaves it waiting. [`spawn_on`](crate::spawn_on) places a fiber by
//! hand. The [`sched`](crate::sched) module docs give the policy and what each cross-proc
//! operation costs; the repository's `docs/performance.md` has the measurements.
//!
//! # An allocator for multi-proc programs
//! pcml does not choose a global allocator. glibc's malloc is a poor fit for message passing
//! across procs (memory freed on another proc than the one that allocated it takes a lock), so
//! programs that send many allocated messages across procs should use one built for threads,
//! as the benchmark suite does with mimalloc:
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
//! ```
//!
//! # Seeing inside
//! - [`pcml::dump()`](fn@crate::dump) (or [`Runtime::dump`](crate::Runtime::dump)) lists every
//!   thread: its name ([`SpawnBuilder`](crate::SpawnBuilder)), where it was spawned (every
//!   spawn records its caller's file and line, named or not, at the cost of one store), the
//!   actor it runs, its proc, its state, and what it waits on. A fiber that a `join` runs
//!   inline on its joiner's stack shows as itself, with its joiner blocked in the join. A
//!   deadlock is reported as [`RuntimeError::Deadlock`](crate::RuntimeError), carrying
//!   such a dump, and only when it is one: a thread outside the runtime that could still act (an
//!   OS thread holding a channel, another runtime) keeps it from being declared.
//! - [`pcml::sched::deadlocks()`](fn@crate::sched::deadlocks) (or
//!   [`Runtime::deadlocks`](crate::Runtime::deadlocks)) finds threads that wait on each other
//!   for ever while the rest of the program runs (a cycle of joins, a receiver left alone with
//!   its channel), and [`Builder::report_deadlocks`](crate::Builder::report_deadlocks) has the
//!   watchdog log them as they form. Only certain ones are reported: a channel handle pcml
//!   cannot place keeps the waits on its channel out ([`PartialDeadlock`](crate::sched::PartialDeadlock)
//!   says exactly what is found).
//! - [`pcml::sched::dump_on_sigquit()`](crate::sched::dump_on_sigquit) (or
//!   [`Builder::dump_on_sigquit`](crate::Builder::dump_on_sigquit)) prints every runtime's dump
//!   to stderr on `kill -QUIT <pid>` (Ctrl-\\ in a terminal), as Go does, and lets the process
//!   go on; it is never on unless asked for.
//! - With the `tracing` feature, pcml reports spawns and exits, panics, actor crashes,
//!   supervisor restarts, deadlocks and I/O driver errors as `tracing` events (the
//!   [`log`](crate::log) module lists them); without it, only what nobody else would see goes
//!   to stderr. An actor that calls
//!   [`Ctx::report_last_message`](crate::actor::Ctx::report_last_message) has its crash
//!   reported with the last message it received, as OTP's crash report has (at the cost of
//!   formatting every message it receives; nothing for the actors that do not ask); a
//!   supervisor's child asks through its spec,
//!   [`ChildSpec::with_last_message`](crate::actor::ChildSpec::with_last_message).
//! - [`pcml::sched::metrics()`](fn@crate::sched::metrics) and
//!   [`Runtime::metrics`](crate::Runtime::metrics) count, per proc, fiber resumes, task polls,
//!   steals, parks and wake-ups across procs, as tokio's `RuntimeMetrics` does; the benchmark
//!   report prints them per operation for its 2-proc rows, so a slow row says why.
//!
//! ```
//! pcml::run(|| {
//!     let worker = pcml::SpawnBuilder::new()
//!         .name("worker")
//!         .spawn(|| pcml::Chan::<u32>::new().recv())
//!         .unwrap();
//!     pcml::yield_now();
//!     let dump = pcml::dump().unwrap();
//!     assert!(dump.to_string().contains("worker"));
//!     worker.abort();
//! });
//! ```
