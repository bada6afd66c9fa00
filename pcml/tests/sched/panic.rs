//! Panics and exits of pcml threads: caught, reported through join, printed once if unjoined.

use pcml::{Runtime, RuntimeError};

use crate::common;

fn rt(procs: usize) -> Runtime {
    Runtime::builder().procs(procs).build().unwrap()
}

#[test]
fn a_fiber_panic_is_a_join_error_and_the_runtime_goes_on() {
    rt(2)
        .block_on(|| {
            let e = pcml::spawn(|| -> u32 { panic!("fiber boom {}", 7) })
                .join()
                .unwrap_err();
            assert!(e.is_panic());
            assert_eq!(e.panic_message(), Some("fiber boom 7"));
            let shown = e.to_string();
            assert!(shown.contains("fiber boom 7"), "{shown}");
            assert!(shown.contains(file!()), "location missing: {shown}");
            // The runtime keeps running.
            assert_eq!(pcml::spawn(|| 1).join().unwrap(), 1);
        })
        .unwrap();
}

#[test]
fn a_task_panic_is_a_join_error() {
    rt(1)
        .block_on(|| {
            let e = pcml::spawn_task(async { panic!("task boom") })
                .join()
                .unwrap_err();
            assert!(e.is_panic());
            assert_eq!(e.panic_message(), Some("task boom"));
            let payload = e.into_panic();
            assert_eq!(payload.downcast_ref::<&str>(), Some(&"task boom"));
        })
        .unwrap();
}

#[test]
fn a_blocking_job_panic_is_a_join_error() {
    rt(1)
        .block_on(|| {
            let e = pcml::spawn_blocking(|| panic!("job boom"))
                .join()
                .unwrap_err();
            assert_eq!(e.panic_message(), Some("job boom"));
        })
        .unwrap();
}

#[test]
fn exit_ends_a_fiber_or_task_and_runs_destructors() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    rt(1)
        .block_on(|| {
            let dropped = Arc::new(AtomicBool::new(false));
            let d = dropped.clone();
            let e = pcml::spawn(move || -> u8 {
                let _guard = SetOnDrop(d);
                pcml::exit();
            })
            .join()
            .unwrap_err();
            assert!(e.is_exit() && !e.is_panic());
            assert!(dropped.load(Ordering::SeqCst));
            let e = pcml::spawn_task(async { pcml::exit() }).join().unwrap_err();
            assert!(e.is_exit());
        })
        .unwrap();
}

#[test]
fn exit_in_main_is_reported_by_block_on() {
    assert_eq!(
        rt(1).block_on(|| -> () { pcml::exit() }).unwrap_err(),
        RuntimeError::MainExited
    );
}

#[test]
fn a_panic_in_main_reaches_the_caller_of_block_on() {
    let r = std::panic::catch_unwind(|| rt(1).block_on(|| -> () { panic!("main boom") }));
    let payload = r.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"main boom"));
}

#[test]
fn fiber_only_functions_outside_a_runtime_say_so() {
    let msg = |f: fn()| {
        let p = std::panic::catch_unwind(f).unwrap_err();
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap()
    };
    assert!(msg(pcml::yield_now).contains("outside a pcml fiber"));
    assert!(
        msg(|| {
            pcml::current();
        })
        .contains("outside a pcml fiber or task")
    );
    assert!(msg(|| pcml::exit()).contains("outside a pcml thread"));
    assert!(
        msg(|| {
            pcml::spawn(|| ());
        })
        .contains("outside a pcml runtime")
    );
    assert!(
        msg(|| {
            pcml::spawn_task(async {});
        })
        .contains("outside a pcml runtime")
    );
    // Inside a task, blocking calls point to .await.
    let e = pcml::run(|| {
        pcml::spawn_task(async {
            pcml::spawn(|| 1).join().unwrap();
        })
        .join()
        .unwrap_err()
    });
    assert!(e.to_string().contains("use `.await`"), "{e}");
    let e = pcml::run(|| {
        pcml::spawn_task(async { pcml::yield_now() })
            .join()
            .unwrap_err()
    });
    assert!(e.to_string().contains("yield_async"), "{e}");
}

/// Runs the child test `name` of this module alone in a fresh process of this test binary,
/// returning how it exited and its stderr.
fn child(name: &str) -> (std::process::ExitStatus, String) {
    let out = common::child(module_path!(), name).output().unwrap();
    (
        out.status,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Child: a fiber that nobody joins panics, and one that panicked is dropped after it ended.
#[test]
fn child_detached_panic() {
    if !common::is_child(module_path!(), "child_detached_panic") {
        return;
    }
    pcml::run(|| {
        drop(pcml::spawn(|| panic!("nobody joins me")));
        let h = pcml::spawn(|| panic!("dropped after it ended"));
        while !h.is_finished() {
            pcml::yield_now();
        }
        drop(h);
        for _ in 0..10 {
            pcml::yield_now();
        }
    });
}

/// Child: a fiber panics and is joined.
#[test]
fn child_joined_panic() {
    if !common::is_child(module_path!(), "child_joined_panic") {
        return;
    }
    pcml::run(|| {
        let e = pcml::spawn(|| panic!("somebody joins me"))
            .join()
            .unwrap_err();
        assert!(e.is_panic());
    });
}

/// Child: a fiber recurses until it overflows its stack.
#[test]
fn child_overflow() {
    if !common::is_child(module_path!(), "child_overflow") {
        return;
    }
    pcml::run(|| {
        fn deep(n: u64) -> u64 {
            let pad = [n; 64];
            if n == 0 {
                0
            } else {
                std::hint::black_box(&pad);
                deep(n - 1) + pad[3]
            }
        }
        pcml::spawn(|| deep(u64::MAX)).join().unwrap();
    });
}

#[test]
fn an_unjoined_panic_is_printed_once() {
    let (status, err) = child("child_detached_panic");
    assert!(status.success(), "child failed: {err}");
    assert_eq!(err.matches("nobody joins me").count(), 1, "{err}");
    assert_eq!(err.matches("dropped after it ended").count(), 1, "{err}");
    assert!(err.contains("nobody joined it"), "{err}");
}

#[test]
fn a_joined_panic_is_not_printed() {
    let (status, err) = child("child_joined_panic");
    assert!(status.success(), "child failed: {err}");
    assert!(!err.contains("somebody joins me"), "{err}");
}

#[test]
fn a_stack_overflow_says_what_happened_and_aborts() {
    let (status, err) = child("child_overflow");
    assert!(!status.success());
    assert!(err.contains("a fiber overflowed its stack"), "{err}");
    assert!(err.contains("stack_size"), "{err}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc_sigabrt()), "{err}");
    }
}

fn libc_sigabrt() -> i32 {
    6
}
