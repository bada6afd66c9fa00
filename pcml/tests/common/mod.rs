//! Helpers shared by the integration tests (`mod common;` in each test file that uses them).

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

/// Spins (yielding the OS thread) until `f` holds.
pub fn wait_until(f: impl Fn() -> bool) {
    while !f() {
        std::thread::yield_now();
    }
}

/// Runs `main` as the main fiber of a fresh pcml runtime with `procs` procs, and returns what
/// it returned (or the runtime's error, such as a reported deadlock).
pub fn run_on_procs<F, T>(procs: usize, main: F) -> Result<T, pcml::RuntimeError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    pcml::Runtime::builder()
        .procs(procs)
        .build()
        .unwrap()
        .block_on(main)
}

/// A tokio runtime with two worker threads and timers, to sync pcml events from async code in
/// a foreign executor.
pub fn tokio_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap()
}
