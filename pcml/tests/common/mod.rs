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

/// The variable that names, in a child process of a test binary, the one test it runs (see
/// [`child`]).
const CHILD_VAR: &str = "PCML_TEST_CHILD";

/// The name libtest gives test function `name` of the module whose `module_path!()` is
/// `module` (the path without the crate's name: `time::timer_churn::x` in binary `time` is
/// `timer_churn::x`).
pub fn test_name(module: &str, name: &str) -> String {
    match module.split_once("::") {
        Some((_, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    }
}

/// A command that runs this test binary again with only the test `name` of `module` (its
/// `module_path!()`) selected, for a test that must be alone in its process: one that changes
/// process-wide state (environment variables, resource limits, signal handlers), aborts, or
/// measures the process (its memory, its threads).
///
/// The child test starts with `if !common::is_child(module_path!(), "name") { return; }`, so
/// that it does nothing when the whole suite runs; the parent sets what the child needs
/// (`.env(..)`), runs it, and checks what it printed and how it exited ([`output_text`]).
pub fn child(module: &str, name: &str) -> std::process::Command {
    let test = test_name(module, name);
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, &test);
    cmd
}

/// [`child`], started by `sh` after `ulimit <limit>` (for example `-n 64`).
pub fn child_with_ulimit(module: &str, name: &str, limit: &str) -> std::process::Command {
    let test = test_name(module, name);
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit {limit} && exec \"$0\" \"$@\""))
        .arg(std::env::current_exe().unwrap())
        .args([test.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, &test);
    cmd
}

/// Whether this process is the child that runs the test `name` of `module` (see [`child`]).
pub fn is_child(module: &str, name: &str) -> bool {
    std::env::var(CHILD_VAR).is_ok_and(|c| c == test_name(module, name))
}

/// For a test that must run alone in its process: true in the child that runs it (the test's
/// body goes on), false in the parent, which has run that child and checked that the test
/// ran there and passed (the test returns).
pub fn alone(module: &str, name: &str) -> bool {
    if is_child(module, name) {
        return true;
    }
    let out = child(module, name).output().unwrap();
    let text = output_text(&out);
    let test = test_name(module, name);
    assert!(out.status.success(), "{test} failed alone:\n{text}");
    assert!(
        text.contains("1 passed"),
        "{test} did not run alone:\n{text}"
    );
    false
}

/// What a child printed and how it exited, for an assertion's message.
pub fn output_text(o: &std::process::Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Runs `main` on a runtime of `procs` procs in an OS thread, failing (instead of hanging)
/// if it has not returned within 60 s.
pub fn bounded_run<T: Send + 'static>(
    procs: usize,
    main: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = pcml::Runtime::builder()
            .procs(procs)
            .build()
            .unwrap()
            .block_on(main);
        let _ = tx.send(r);
    });
    match rx.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(r) => r.unwrap(),
        Err(_) => panic!("the runtime of {procs} procs did not finish within 60 s"),
    }
}

/// Aborts the process (failing the test instead of hanging it) unless `done` is set in 30 s,
/// after a dump of every runtime (`SIGQUIT`) to say who waited on what.
pub fn watchdog(what: &'static str) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    pcml::sched::dump_on_sigquit().unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d = done.clone();
    std::thread::spawn(move || {
        for _ in 0..3000 {
            if d.load(std::sync::atomic::Ordering::Acquire) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "watchdog: {what} hung; runtimes:");
        let _ = std::process::Command::new("kill")
            .args(["-QUIT", &std::process::id().to_string()])
            .status();
        std::thread::sleep(std::time::Duration::from_secs(3));
        std::process::abort();
    });
    done
}
