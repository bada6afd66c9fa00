//! A dump of every runtime on `SIGQUIT`, as Go prints its goroutines (opt-in): see
//! [`dump_on_sigquit`].
//!
//! # Implementation
//! The signal handler itself (from the `signal-hook` crate) only writes to a pipe; a thread
//! of its own, `pcml-sigquit`, reads the pipe and, for each signal, dumps every live runtime
//! (`Runtime::dump`, which asks each proc through its inbox, a second at most per runtime) and
//! writes the dumps to stderr in one piece. The thread counts as one of pcml's own, so it
//! does not keep deadlocks from being reported.

use std::io::Write;
use std::sync::{Mutex, PoisonError};

/// Whether the handler is installed (installing is idempotent).
static INSTALLED: Mutex<bool> = Mutex::new(false);

/// Prints a dump of every runtime of the process to stderr whenever it receives `SIGQUIT`,
/// from now on.
///
/// ```no_run
/// // Once, early in main: from now on `kill -QUIT <pid>` (or Ctrl-\ in a terminal) prints
/// // every runtime's threads and what each waits on to stderr; the process goes on.
/// pcml::sched::dump_on_sigquit().unwrap();
/// pcml::run(|| {
///     // ... a program that may hang ...
/// });
/// ```
///
/// Or per runtime, with [`Builder::dump_on_sigquit`](crate::Builder::dump_on_sigquit). The
/// handler is process-wide and stays installed for the life of the process: it replaces the
/// default action of `SIGQUIT` (which ends the process with a core dump), so the process no
/// longer ends on `SIGQUIT`. Unlike Go, which prints and exits, pcml prints and goes on, as
/// the JVM does for `jstack`: kill the process with another signal once you have read the
/// dump. Nothing is installed unless asked for.
///
/// Installing twice is harmless (the second call does nothing).
///
/// # Errors
/// If the signal handler or its thread cannot be set up (the error from the OS).
///
/// ```
/// pcml::sched::dump_on_sigquit().unwrap();
/// pcml::sched::dump_on_sigquit().unwrap(); // already installed: nothing to do
/// ```
pub fn dump_on_sigquit() -> std::io::Result<()> {
    let mut installed = INSTALLED.lock().unwrap_or_else(PoisonError::into_inner);
    if *installed {
        return Ok(());
    }
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGQUIT])?;
    std::thread::Builder::new()
        .name("pcml-sigquit".into())
        .spawn(move || {
            let _own = crate::sched::outside::OwnThread::enter();
            for _ in signals.forever() {
                print_dumps();
            }
        })?;
    *installed = true;
    Ok(())
}

/// Writes every live runtime's dump to stderr.
fn print_dumps() {
    let runtimes = crate::sched::registry::all();
    let mut text = format!(
        "pcml: SIGQUIT: {} runtime{}\n",
        runtimes.len(),
        if runtimes.len() == 1 { "" } else { "s" }
    );
    for rt in &runtimes {
        let dump = crate::sched::dump::dump_runtime(rt);
        text.push_str(&format!(
            "runtime {} ({} procs): {dump}\n",
            rt.id,
            rt.procs.len()
        ));
    }
    // One write, so the dump is not interleaved with other threads' output line by line.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}
