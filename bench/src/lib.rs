//! # pcml-bench: the seeds' evaluations, reproduced beside real peers
//!
//! `cargo run --release -p pcml-bench` runs the quick suite: every program of
//! `shared/BENCHMARKS.md` that pcml can run today, the peers (SML/NJ's CML, Go, Erlang, OS
//! threads with crossbeam-channel, tokio tasks with its channels) measured in the same run,
//! and a plain "not yet measured" row for each program that waits on a later layer (a mutex)
//! or is not written yet. It prints one markdown table per paper and writes
//! `target/pcml-report/report.md` with SVG charts.
//!
//! The crate is a library (so that `tests/` can run each program's answer check at small
//! sizes) and a thin binary, [`cli::main`].
//!
//! # Layout
//! - [`alloc`]: the counting allocator the memory probes read.
//! - [`cli`]: flags, the run over every selected program, exit status.
//! - [`runner`]: timing one operation count over several runs; medians and spread.
//! - [`table`]: what a run produces: sections, rows, ratios and the papers' figures.
//! - [`programs`]: one module per benchmark program, grouped by paper.
//! - [`peers`]: the peer programs of `bench/peers/`, built and run through its scripts.
//! - [`machine`]: cores, CPU model and tool versions, for the report's header.
//! - [`report`]: markdown tables and SVG charts.
//!
//! # Invariants
//! - A program that computes a wrong answer returns `Err`, and the run exits non-zero.
//! - Every ratio in a report compares figures measured in the same invocation.

pub mod alloc;
pub mod cli;
pub mod coload;
pub mod machine;
pub mod peers;
pub mod programs;
pub mod report;
pub mod runner;
pub mod table;
