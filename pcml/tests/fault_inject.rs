//! Fault injection: bad configuration, exhausted resources and misbehaving user code, each
//! with the outcome a user can rely on stated in the test.
//!
//! Cases that change process-wide state (environment variables, resource limits) run in a
//! child process: the test binary runs itself again with only that case selected
//! (`common::child`), and the parent checks what the child printed and how it exited.

use std::process::Output;

mod common;

/// Runs the child case `case` (a test of this file whose body starts with `child_case`) in a
/// fresh process of this test binary, with `env` set and the runtime's own variables
/// (`PCML_PROCS`, `PCML_STACK_SIZE`) removed unless `env` sets them.
fn run_child(case: &str, env: &[(&str, &str)]) -> Output {
    let mut cmd = common::child(module_path!(), case);
    cmd.env_remove("PCML_PROCS").env_remove("PCML_STACK_SIZE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// Whether this process is the child running `case`; in the parent the test returns at once.
fn child_case(case: &str) -> bool {
    common::is_child(module_path!(), case)
}

fn text(o: &Output) -> String {
    common::output_text(o)
}

/// Prints what building a default runtime gives, for the parent to read.
#[test]
fn child_build_default_runtime() {
    if !child_case("child_build_default_runtime") {
        return;
    }
    match pcml::Runtime::new() {
        Ok(rt) => println!("BUILT procs={}", rt.procs()),
        Err(e) => println!("ERROR {e}"),
    }
}

/// Expected: every invalid `PCML_PROCS` or `PCML_STACK_SIZE` makes `Runtime::new` fail with an
/// error naming the variable and the value; valid values are used; empty means unset.
#[test]
fn invalid_environment_variables_are_errors_that_name_them() {
    let case = "child_build_default_runtime";
    for (var, value) in [
        ("PCML_PROCS", "0"),
        ("PCML_PROCS", "-1"),
        ("PCML_PROCS", "abc"),
        ("PCML_PROCS", "100000"),
        ("PCML_PROCS", "2.5"),
        ("PCML_STACK_SIZE", "abc"),
        ("PCML_STACK_SIZE", "0"),
        ("PCML_STACK_SIZE", "1024"),
        ("PCML_STACK_SIZE", "-5"),
    ] {
        let o = run_child(case, &[(var, value)]);
        let out = text(&o);
        assert!(o.status.success(), "{out}");
        let stdout = String::from_utf8_lossy(&o.stdout);
        let line = stdout
            .lines()
            .find_map(|l| {
                ["ERROR", "BUILT"]
                    .iter()
                    .find_map(|k| l.find(k).map(|i| &l[i..]))
            })
            .unwrap_or_default();
        assert!(line.starts_with("ERROR"), "{var}={value}: {out}");
        assert!(
            line.contains(var) && line.contains(&format!("{value:?}")),
            "{var}={value}: {line}"
        );
    }
    for (env, procs) in [
        (vec![("PCML_PROCS", "3")], 3),
        (vec![("PCML_PROCS", " 2 ")], 2),
        (vec![("PCML_PROCS", "1"), ("PCML_STACK_SIZE", "65536")], 1),
    ] {
        let o = run_child(case, &env);
        assert!(
            String::from_utf8_lossy(&o.stdout).contains(&format!("BUILT procs={procs}")),
            "{}",
            text(&o)
        );
    }
    let o = run_child(case, &[("PCML_PROCS", "")]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("BUILT"),
        "{}",
        text(&o)
    );
}

/// Expected: the builder's own setting wins over an invalid environment variable, which is
/// then never read.
#[test]
fn child_builder_settings_override_the_environment() {
    if !child_case("child_builder_settings_override_the_environment") {
        return;
    }
    let rt = pcml::Runtime::builder()
        .procs(1)
        .stack_size(64 * 1024)
        .build()
        .unwrap();
    assert_eq!(rt.block_on(|| 5).unwrap(), 5);
    println!("OK");
}

#[test]
fn builder_settings_override_invalid_environment_variables() {
    let case = "child_builder_settings_override_the_environment";
    let o = run_child(case, &[("PCML_PROCS", "abc"), ("PCML_STACK_SIZE", "x")]);
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout).contains("OK"),
        "{}",
        text(&o)
    );
}

/// Expected: `pcml::run` with an invalid `PCML_PROCS` panics with the error's message.
#[test]
fn child_run_with_invalid_procs() {
    if !child_case("child_run_with_invalid_procs") {
        return;
    }
    pcml::run(|| ());
}

#[test]
fn run_panics_naming_an_invalid_variable() {
    let o = run_child("child_run_with_invalid_procs", &[("PCML_PROCS", "-1")]);
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("PCML_PROCS") && err.contains("\"-1\""),
        "{}",
        text(&o)
    );
}

/// Expected: a semaphore's count saturates at `usize::MAX` instead of wrapping to 0, and a
/// huge release returns at once.
#[test]
fn semaphore_count_saturates_instead_of_wrapping() {
    let sem = pcml::Semaphore::new(usize::MAX);
    sem.release(1);
    assert_eq!(sem.available_permits(), usize::MAX);
    let p = sem.try_acquire().expect("permits are free");
    assert_eq!(sem.available_permits(), usize::MAX - 1);
    sem.release(usize::MAX);
    assert_eq!(sem.available_permits(), usize::MAX);
    drop(p);
    assert_eq!(sem.available_permits(), usize::MAX);
}

/// Expected: with `max_fibers(10)` and main (which holds one stack) waiting for 20 fibers
/// that block for good, the deadlock report counts all 21 blocked threads, and says that
/// exactly the fibers whose body never ran "never started". (Main's join runs the first
/// fiber on main's own stack, so on one proc 10 fibers run, 9 on stacks of their own, and 10
/// never start: the count the report gives.)
#[test]
fn deadlock_report_counts_the_fibers_that_never_started() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    for procs in [1, 2] {
        let rt = pcml::Runtime::builder()
            .procs(procs)
            .max_fibers(10)
            .build()
            .unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let err = rt
            .block_on(move || {
                let ch = pcml::Chan::<()>::new();
                let hs: Vec<_> = (0..20)
                    .map(|_| {
                        let (ch, r) = (ch.clone(), r.clone());
                        pcml::spawn(move || {
                            r.fetch_add(1, Ordering::SeqCst);
                            ch.recv()
                        })
                    })
                    .collect();
                for h in hs {
                    h.join().unwrap();
                }
            })
            .unwrap_err();
        let ran = ran.load(Ordering::SeqCst);
        assert!((9..=10).contains(&ran), "{procs} procs: {ran} ran");
        assert!(
            matches!(
                err,
                pcml::RuntimeError::Deadlock {
                    blocked: 21,
                    waiting_for_stack,
                    ..
                } if waiting_for_stack == 20 - ran
            ),
            "{procs} procs: {err}"
        );
        assert!(
            err.to_string()
                .contains(&format!("{} of them never started", 20 - ran)),
            "{err}"
        );
        // The dump lists each of those, waiting for a stack, with its spawn site.
        let pcml::RuntimeError::Deadlock { dump, .. } = &err else {
            unreachable!()
        };
        let no_stack: Vec<_> = dump
            .threads()
            .iter()
            .filter(|t| {
                t.waits_on()
                    .first()
                    .is_some_and(|w| w.starts_with("a fiber stack"))
            })
            .collect();
        assert_eq!(no_stack.len(), 20 - ran, "{err}");
        assert!(
            no_stack.iter().all(|t| t
                .spawned_at()
                .is_some_and(|s| s.contains("fault_inject.rs"))),
            "{err}"
        );
    }
}

fn os_threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// Panics when dropped: a misbehaving destructor.
struct PanicOnDrop(&'static str);
impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("{}", self.0);
        }
    }
}

/// Prints main's value and the OS threads alive before and after a runtime whose shutdown
/// drops a blocked task, an unstarted fiber and a detached task whose destructors panic, with
/// a socket registered and a blocking job in flight.
#[test]
fn child_shutdown_with_panicking_destructors() {
    if !child_case("child_shutdown_with_panicking_destructors") {
        return;
    }
    let before = os_threads();
    let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    let value = rt
        .block_on(|| {
            let ch = pcml::Chan::<()>::new();
            let c = ch.clone();
            let g = PanicOnDrop("task destructor");
            let t = pcml::spawn_task(async move {
                let _g = g;
                c.recv_evt().await
            });
            let c = ch.clone();
            let g = PanicOnDrop("detached task destructor");
            drop(pcml::spawn_task(async move {
                let _g = g;
                c.recv_evt().await
            }));
            let g = PanicOnDrop("unstarted fiber closure");
            let unstarted = pcml::spawn(move || drop(g));
            let socket = pcml::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let _blocking =
                pcml::spawn_blocking(|| std::thread::sleep(std::time::Duration::from_millis(20)));
            // Let the tasks block; the fiber stays unstarted (this fiber never yields again).
            pcml::time::sleep(std::time::Duration::from_millis(10));
            std::mem::forget((t, unstarted, socket));
            42
        })
        .unwrap();
    // A joined thread's /proc entry can outlive the join a little (the kernel releases it
    // after waking the joiner): give it two seconds to go.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    while os_threads() != before && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    println!("VALUE {value} THREADS {before} {}", os_threads());
}

/// Expected: destructors that panic while the runtime drops unfinished threads do not stop
/// the shutdown: `block_on` returns main's value, and the procs, the blocking pool and the
/// I/O driver are all joined (the process has as many OS threads as before the runtime).
#[test]
fn shutdown_survives_panicking_destructors_and_joins_its_threads() {
    let o = run_child("child_shutdown_with_panicking_destructors", &[]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.find("VALUE").map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("{out}"));
    let nums: Vec<usize> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(nums[0], 42, "{out}");
    assert_eq!(nums[1], nums[2], "threads before and after: {out}");
}

/// Joins a panicking fiber that runs on the smallest stack, and prints what the join says.
#[test]
fn child_panic_on_the_smallest_stack() {
    if !child_case("child_panic_on_the_smallest_stack") {
        return;
    }
    let rt = pcml::Runtime::builder()
        .procs(1)
        .stack_size(pcml::fiber::MIN_STACK_SIZE)
        .build()
        .unwrap();
    let err = rt
        .block_on(|| {
            pcml::spawn(|| -> u8 { panic!("small boom") })
                .join()
                .unwrap_err()
        })
        .unwrap();
    println!("JOINED panic={} {}", err.is_panic(), err);
}

/// Expected: with backtraces on (`RUST_BACKTRACE=1` or `full`), a plain panic in a fiber
/// with the smallest stack is caught and reported (its report says why it has no
/// backtrace) instead of overflowing the stack and aborting the process.
#[test]
fn a_panic_on_the_smallest_stack_with_backtraces_on_is_reported() {
    for bt in ["1", "full", "0"] {
        let o = run_child(
            "child_panic_on_the_smallest_stack",
            &[("RUST_BACKTRACE", bt)],
        );
        let out = text(&o);
        assert!(o.status.success(), "RUST_BACKTRACE={bt}: {out}");
        assert!(out.contains("JOINED panic=true"), "{out}");
        assert!(out.contains("small boom"), "{out}");
        if bt != "0" {
            assert!(out.contains("backtrace: not captured"), "{out}");
        }
    }
}

/// Binds listeners under a low limit of open files until one fails, then frees some and
/// binds again; prints what happened.
#[test]
fn child_fd_exhaustion() {
    if !child_case("child_fd_exhaustion") {
        return;
    }
    pcml::Runtime::builder()
        .procs(1)
        .build()
        .unwrap()
        .block_on(|| {
            let mut held = Vec::new();
            let err = loop {
                match pcml::net::TcpListener::bind("127.0.0.1:0") {
                    Ok(l) => held.push(l),
                    Err(e) => break e,
                }
                assert!(
                    held.len() < 10_000,
                    "the limit of open files was not applied"
                );
            };
            println!("FD_ERR after {} listeners: {err}", held.len());
            held.truncate(held.len() / 2);
            let l = pcml::net::TcpListener::bind("127.0.0.1:0").expect("binds again");
            // The freed descriptors are usable by the runtime's poller too: accept with a
            // timeout event completes.
            let addr = l.local_addr().unwrap();
            let c = pcml::spawn(move || pcml::net::TcpStream::connect(addr).is_ok());
            let _conn = l.accept().unwrap();
            assert!(c.join().unwrap());
            println!("RECOVERED");
        })
        .unwrap();
}

/// Expected: when the process runs out of file descriptors, binding a socket is an
/// `io::Error` (no panic, no abort), and the runtime works again once some are closed.
#[test]
fn fd_exhaustion_is_an_error_and_the_runtime_recovers() {
    let o = common::child_with_ulimit(module_path!(), "child_fd_exhaustion", "-n 64")
        .output()
        .unwrap();
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("FD_ERR") && out.contains("RECOVERED"), "{out}");
}

/// Expected: OS threads that still hold a fiber's join handle and a channel after the
/// runtime is gone are not left hanging: the join returns a cancellation, and the channel
/// has no receiver any more (the dropped fiber's offer was withdrawn).
#[test]
fn handles_held_by_os_threads_outlive_the_runtime() {
    let (tx, rx) = std::sync::mpsc::channel();
    let outside = std::thread::spawn(move || {
        let (h, ch): (pcml::JoinHandle<u8>, pcml::Chan<u8>) = rx.recv().unwrap();
        // Until the runtime is gone (it cancels the fiber when it shuts down).
        while !h.is_finished() {
            std::thread::yield_now();
        }
        (h.join(), ch.send_evt(1).poll().is_none())
    });
    let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    rt.block_on(move || {
        let ch = pcml::Chan::<u8>::new();
        let rx = ch.clone();
        let h = pcml::spawn(move || rx.recv());
        pcml::yield_now();
        tx.send((h, ch)).unwrap();
    })
    .unwrap();
    let (joined, no_receiver) = outside.join().unwrap();
    assert!(joined.unwrap_err().is_cancelled());
    assert!(no_receiver);
}

/// Builds a runtime of 1024 procs, one OS thread each, under a small address-space limit,
/// then one of one proc.
#[test]
fn child_proc_threads_cannot_start() {
    if !child_case("child_proc_threads_cannot_start") {
        return;
    }
    // One thread per proc: by default procs beyond the cores share threads.
    match pcml::Runtime::builder()
        .procs(1024)
        .carrier_threads(1024)
        .build()
    {
        Ok(_) => println!("BUILT 1024"),
        Err(e) => println!("BUILD_ERR {e}"),
    }
    let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    assert_eq!(rt.block_on(|| 7).unwrap(), 7);
    println!("SMALL_OK");
}

/// Expected: when a proc's OS thread cannot be started (here the address space is too small
/// for 1024 thread stacks), `build` returns `BuildError::Thread` saying so, after stopping
/// the procs it had started, and a smaller runtime still works.
#[test]
#[cfg_attr(
    pcml_tsan,
    ignore = "ThreadSanitizer cannot run under an address-space limit (`ulimit -v`)"
)]
fn a_proc_thread_that_cannot_start_is_a_build_error() {
    // Under the limit, any allocation that needs more address space fails, also one made by
    // a proc thread that has just started while the builder meets the limit: Rust then aborts
    // the child ("memory allocation of N bytes failed"), about 1 run in 10 on a quiet machine.
    // One malloc arena with 64 MiB of head room keeps small allocations from needing more
    // address space; a run that still aborts that way says nothing of pcml and is run again.
    // So does one whose just-started proc thread could not map std's signal stack ("failed to
    // allocate an alternative stack", an abort: once in a soak beside two busy loops).
    let mut tries = 0;
    let (o, out) = loop {
        let o = common::child_with_ulimit(
            module_path!(),
            "child_proc_threads_cannot_start",
            "-v 600000",
        )
        .env("MALLOC_ARENA_MAX", "1")
        .env("MALLOC_TOP_PAD_", "67108864")
        .output()
        .unwrap();
        let out = text(&o);
        tries += 1;
        let allocator_abort = !o.status.success()
            && (out.contains("memory allocation of")
                || out.contains("failed to allocate an alternative stack"));
        if !allocator_abort || tries == 5 {
            break (o, out);
        }
    };
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains("BUILD_ERR pcml: could not start a worker thread"),
        "{out}"
    );
    assert!(out.contains("SMALL_OK"), "{out}");
}

/// On a one-proc runtime, a named fiber computes without a sync point until the watchdog's
/// report reaches stderr (read back through a pipe), while a sleeping fiber's timer comes due;
/// prints what was reported.
#[test]
fn child_hog_on_one_proc() {
    if !child_case("child_hog_on_one_proc") {
        return;
    }
    use std::io::Read;
    use std::os::fd::FromRawFd;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut fds = [0; 2];
    // SAFETY: a plain pipe(2) into a two-int array.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: stderr now writes to the pipe; nothing else in this process holds fd 2's file.
    assert!(unsafe { libc::dup2(fds[1], 2) } >= 0);
    let seen = Arc::new(AtomicBool::new(false));
    let s = seen.clone();
    std::thread::spawn(move || {
        // SAFETY: the read end is ours alone.
        let mut r = unsafe { std::fs::File::from_raw_fd(fds[0]) };
        let mut buf = [0u8; 4096];
        let mut all = String::new();
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.push_str(&String::from_utf8_lossy(&buf[..n]));
            if all.contains("has computed on proc 0") {
                println!("REPORT {}", all.trim());
                s.store(true, Ordering::SeqCst);
            }
        }
    });
    let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    let saw = rt
        .block_on(move || {
            // A fiber whose sleep comes due while the hog runs.
            let other = pcml::spawn(|| {
                pcml::time::sleep(std::time::Duration::from_millis(1));
                1
            });
            pcml::yield_now();
            let hog = pcml::SpawnBuilder::new()
                .name("number-cruncher")
                .spawn(move || {
                    let start = std::time::Instant::now();
                    while !seen.load(Ordering::SeqCst)
                        && start.elapsed() < std::time::Duration::from_secs(60)
                    {
                        std::hint::spin_loop();
                    }
                    seen.load(Ordering::SeqCst)
                })
                .unwrap();
            let saw = hog.join().unwrap();
            assert_eq!(other.join().unwrap(), 1);
            saw
        })
        .unwrap();
    println!("HOG_SAW_REPORT {saw}");
}

/// Expected: a thread that computes without a sync point on a one-proc runtime is reported on
/// stderr while it runs, by name and spawn site, with what to do about it.
#[test]
fn a_hog_on_a_one_proc_runtime_is_reported() {
    let o = run_child("child_hog_on_one_proc", &[]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("HOG_SAW_REPORT true"), "{out}");
    let report = stdout
        .lines()
        .find_map(|l| l.find("REPORT").map(|i| &l[i..]))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(report.contains("\"number-cruncher\""), "{out}");
    assert!(report.contains("fault_inject.rs"), "spawn site: {out}");
    assert!(report.contains("consume_budget"), "{out}");
}

/// An allocator that fails one allocation, the `FAIL_AT`-th after it is armed (only in the
/// child case below; otherwise it is the system allocator).
struct FailOnce;

static FAIL_ARMED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
static FAIL_AT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

// SAFETY: every call is passed to the system allocator, except one allocation that returns
// null, which `GlobalAlloc` allows.
unsafe impl std::alloc::GlobalAlloc for FailOnce {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        use std::sync::atomic::Ordering::Relaxed;
        if FAIL_ARMED.load(Relaxed) && FAIL_AT.fetch_sub(1, Relaxed) == 0 {
            FAIL_ARMED.store(false, Relaxed);
            return std::ptr::null_mut();
        }
        // SAFETY: as the caller promises.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: `ptr` came from `System.alloc` with `layout`.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: FailOnce = FailOnce;

/// Runs a small program (fibers, tasks, channels, timers, an actor on two procs) with the
/// `PCML_FAIL_AT`-th allocation after the runtime starts failing, and prints `DONE` if it
/// finished.
#[test]
fn child_allocation_failure() {
    if !child_case("child_allocation_failure") {
        return;
    }
    let at: usize = std::env::var("PCML_FAIL_AT").unwrap().parse().unwrap();
    let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    FAIL_AT.store(at, std::sync::atomic::Ordering::Relaxed);
    FAIL_ARMED.store(true, std::sync::atomic::Ordering::Relaxed);
    let sum = rt
        .block_on(|| {
            let ch = pcml::Chan::new();
            let hs: Vec<_> = (0..20u64)
                .map(|i| {
                    let c = ch.clone();
                    pcml::spawn(move || c.send(i))
                })
                .collect();
            let t = pcml::spawn_task(async {
                pcml::time::sleep_async(std::time::Duration::from_millis(1)).await;
                7u64
            });
            let mut me = pcml::actor::Ctx::<u64>::new();
            let pid = me.pid();
            pcml::actor::spawn(move |_: pcml::actor::Ctx<()>| pid.send(1).unwrap());
            let sum: u64 = (0..20).map(|_| ch.recv()).sum();
            hs.into_iter().for_each(|h| h.join().unwrap());
            sum + t.join().unwrap() + me.receive()
        })
        .unwrap();
    FAIL_ARMED.store(false, std::sync::atomic::Ordering::Relaxed);
    println!("DONE {sum}");
}

/// Expected: an allocation that fails anywhere in pcml (a proc, a fiber, a task, the
/// watchdog) ends the process the way Rust's standard library does, with "memory allocation
/// of N bytes failed" on stderr and an abort (SIGABRT): never a crash of another kind, a hang
/// or a wrong result. (Rust gives a library no way to recover from a failed `Box` or `Vec`
/// allocation; pcml returns errors for the resources it can see run out: stacks, threads,
/// file descriptors.) A failure late enough hits nothing and the program finishes.
#[test]
fn allocation_failure_aborts_with_a_clear_message() {
    use std::os::unix::process::ExitStatusExt;
    let mut aborted = 0;
    for at in [0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 100_000_000] {
        let o = run_child(
            "child_allocation_failure",
            &[("PCML_FAIL_AT", &at.to_string())],
        );
        let out = text(&o);
        if o.status.success() {
            assert!(
                String::from_utf8_lossy(&o.stdout).contains("DONE 198"),
                "{out}"
            );
            continue;
        }
        aborted += 1;
        assert_eq!(o.status.signal(), Some(6), "SIGABRT at {at}: {out}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("memory allocation of"),
            "at {at}: {out}"
        );
    }
    assert!(aborted > 0, "no injected failure hit an allocation");
}

/// Child: installs the SIGQUIT dump, blocks a named fiber on a channel, raises SIGQUIT at its
/// own process and waits (the parent kills it once it has read the dump).
#[test]
fn child_sigquit_dump() {
    if !child_case("child_sigquit_dump") {
        return;
    }
    let rt = pcml::Runtime::builder()
        .procs(1)
        .dump_on_sigquit(true)
        .build()
        .unwrap();
    let _ = rt.block_on(|| {
        let ch = pcml::Chan::<u32>::new();
        let c = ch.clone();
        let _stuck = pcml::SpawnBuilder::new()
            .name("stuck")
            .spawn(move || c.recv())
            .unwrap();
        pcml::yield_now(); // it blocks
        // SAFETY: raise has no preconditions; the handler is installed above.
        assert_eq!(unsafe { libc::raise(libc::SIGQUIT) }, 0);
        println!("RAISED");
        // Stay alive, and keep the proc answering, until the parent has read the dump.
        for _ in 0..6000 {
            pcml::time::sleep(std::time::Duration::from_millis(10));
        }
        ch.send(0);
    });
}

/// Expected: with the handler installed (here by `Builder::dump_on_sigquit`), SIGQUIT prints
/// every runtime's dump to stderr and the process goes on (it does not die of the signal).
#[test]
fn sigquit_prints_every_runtimes_dump_to_stderr() {
    use std::io::Read;
    let mut child = common::child(module_path!(), "child_sigquit_dump")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = child.stderr.take().unwrap();
    let mut text = String::new();
    let mut buf = [0u8; 4096];
    // Read until the dump's line for the blocked fiber has come, or the child ended.
    while !text.lines().any(|l| l.contains("\"stuck\"")) {
        let n = err.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        text.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    let still_running = child.try_wait().unwrap().is_none();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(still_running, "the child died of SIGQUIT:\n{text}");
    assert!(text.contains("pcml: SIGQUIT: 1 runtime"), "{text}");
    let stuck = text.lines().find(|l| l.contains("\"stuck\"")).unwrap();
    assert!(stuck.contains("Blocked"), "{text}");
    assert!(stuck.contains("recv"), "{text}");
    let main = text.lines().find(|l| l.contains("\"main\"")).unwrap();
    assert!(
        main.contains("spawned at pcml/tests/fault_inject.rs"),
        "{text}"
    );
}

/// Child: a runtime that reports partial deadlocks, with a fiber left alone on a channel
/// while main sleeps; prints DONE once the report had time to come.
#[test]
fn child_report_deadlocks() {
    if !child_case("child_report_deadlocks") {
        return;
    }
    let rt = pcml::Runtime::builder()
        .procs(1)
        .report_deadlocks(true)
        .build()
        .unwrap();
    rt.block_on(|| {
        pcml::SpawnBuilder::new()
            .name("forgotten")
            .spawn(|| {
                let ch = pcml::Chan::<u8>::new();
                ch.recv()
            })
            .unwrap();
        // Main sleeps (so the runtime is not deadlocked as a whole) past a few checks.
        pcml::time::sleep(std::time::Duration::from_millis(3500));
    })
    .unwrap();
    println!("DONE");
}

/// Expected: with `Builder::report_deadlocks`, the watchdog logs a partial deadlock once, on
/// stderr without a subscriber, naming the stuck thread and what it waits on.
#[test]
fn report_deadlocks_logs_a_partial_deadlock_once() {
    let o = run_child("child_report_deadlocks", &[]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.matches("pcml: partial deadlock").count(), 1, "{out}");
    let line = err.lines().find(|l| l.contains("\"forgotten\"")).unwrap();
    assert!(line.contains("recv"), "{out}");
}

/// A supervisor whose child keeps its last message (asked by the child itself with
/// `report_last_message`, or by its spec with `with_last_message`, the child then receiving
/// with `receive_any`); the child crashes on its second message. Waits for the restart.
fn supervised_crash_with_last_message(by_spec: bool) {
    use pcml::actor::{self, ChildSpec, Ctx, Received, Strategy, Supervisor};
    pcml::run(move || {
        let start = move || {
            actor::spawn(move |mut ctx: Ctx<(u32, String)>| {
                if !by_spec {
                    ctx.report_last_message(true);
                }
                actor::register("kept-last", &ctx.pid()).unwrap();
                loop {
                    let n = match ctx.receive_any() {
                        Received::Msg((n, _)) => n,
                        Received::Signal(_) => continue,
                    };
                    assert!(n < 3, "too big");
                }
            })
        };
        let spec = if by_spec {
            ChildSpec::with_last_message("kept-last", start)
        } else {
            ChildSpec::new("kept-last", start)
        };
        let sup = Supervisor::new(Strategy::OneForOne).child(spec).start();
        let first = loop {
            if let Some(p) = actor::whereis::<(u32, String)>("kept-last") {
                break p;
            }
            pcml::yield_now();
        };
        first.send((1, "small".to_string())).unwrap();
        first.send((7, "the culprit".to_string())).unwrap();
        // Restarted: a new actor holds the name.
        while actor::whereis::<(u32, String)>("kept-last").is_none_or(|p| p.id() == first.id()) {
            pcml::time::sleep(std::time::Duration::from_millis(1));
        }
        drop(sup);
    });
    println!("DONE");
}

/// Child: see `supervised_crash_with_last_message` (asked by the child).
#[test]
fn child_supervised_crash_with_last_message() {
    if child_case("child_supervised_crash_with_last_message") {
        supervised_crash_with_last_message(false);
    }
}

/// Child: see `supervised_crash_with_last_message` (asked by the child's spec).
#[test]
fn child_supervised_crash_with_last_message_by_spec() {
    if child_case("child_supervised_crash_with_last_message_by_spec") {
        supervised_crash_with_last_message(true);
    }
}

/// Expected: without a tracing subscriber, the crash of a supervised actor that keeps its last
/// message (asked by the actor or by its child spec, received with `receive_any`) is printed
/// on stderr with its report and that message (an observed actor's crash is not printed
/// otherwise).
#[test]
fn a_supervised_crash_prints_the_last_message() {
    for child in [
        "child_supervised_crash_with_last_message",
        "child_supervised_crash_with_last_message_by_spec",
    ] {
        let o = run_child(child, &[]);
        let out = text(&o);
        assert!(o.status.success(), "{child}: {out}");
        let err = String::from_utf8_lossy(&o.stderr);
        let line = err.lines().find(|l| l.contains("crashed"));
        let line = line.unwrap_or_else(|| panic!("{child}: {out}"));
        assert!(
            line.contains("(last message received: (7, \"the culprit\")): "),
            "{child}: {out}"
        );
        assert!(err.contains("too big"), "{child}: {out}");
    }
}
