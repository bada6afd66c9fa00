//! The tokio runtime the profiling examples compare pcml with, as the bench's peer rows run:
//! included by `#[path]` (not an example of its own; cargo only builds `examples/*.rs`).

/// A `current_thread` runtime for one proc, else a `multi_thread` one of `procs` workers.
pub fn runtime(procs: usize) -> tokio::runtime::Runtime {
    if procs <= 1 {
        tokio::runtime::Builder::new_current_thread().build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(procs)
            .build()
    }
    .expect("a tokio runtime")
}
