//! Running out of memory mappings for fiber stacks gives an error, never a crash.
//!
//! This file is its own test binary (its own process), since it uses up the process's
//! mappings on purpose.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use pcml::SpawnError;

/// Each fiber spawns the next and joins it, so all but the last are blocked holding a stack;
/// the chain grows until `try_spawn` fails.
fn link(
    depth: usize,
    out: Arc<std::sync::Mutex<Option<(usize, SpawnError)>>>,
    stop: Arc<AtomicBool>,
    count: Arc<AtomicUsize>,
) {
    count.fetch_add(1, Ordering::SeqCst);
    let (o, s, c) = (out.clone(), stop.clone(), count.clone());
    match pcml::try_spawn(move || link(depth + 1, o, s, c)) {
        Ok(h) => h.join().unwrap(),
        Err(e) => {
            *out.lock().unwrap() = Some((depth, e));
            while !stop.load(Ordering::SeqCst) {
                pcml::yield_now();
            }
        }
    }
}

/// The system's `vm.max_map_count`, if readable.
fn max_map_count() -> Option<usize> {
    std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[test]
#[cfg_attr(
    pcml_tsan,
    ignore = "ThreadSanitizer is not told of fiber switches, so the frames of thousands of \
              blocked fibers overflow its shadow call stack of the proc's thread"
)]
fn exhausting_fiber_stacks_is_an_error_and_the_runtime_recovers() {
    // Reaching the cap maps about max_map_count / 2 stacks; past a few hundred thousand that
    // costs gigabytes of touched pages, so the test runs only where the cap is near Linux's
    // default (65530).
    match max_map_count() {
        Some(n) if n <= 300_000 => {}
        other => {
            eprintln!("skipping: vm.max_map_count is {other:?}, too large to exhaust in a test");
            return;
        }
    }
    let rt = pcml::Runtime::builder()
        .procs(1)
        .stack_size(64 * 1024)
        .build()
        .unwrap();
    rt.block_on(|| {
        let out = Arc::new(std::sync::Mutex::new(None));
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicUsize::new(0));
        let (o, s, c) = (out.clone(), stop.clone(), count.clone());
        let head = pcml::spawn(move || link(1, o, s, c));
        let (depth, err) = loop {
            if let Some(r) = out.lock().unwrap().take() {
                break r;
            }
            pcml::yield_now();
        };
        assert!(
            matches!(err, SpawnError::StackCap { .. } | SpawnError::StackMap(_)),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains("vm.max_map_count"), "{msg}");
        // Thousands of fibers were started and blocked before the limit.
        assert!(depth > 1000, "only {depth} fibers before the limit");
        stop.store(true, Ordering::SeqCst);
        head.join().unwrap();
        assert_eq!(count.load(Ordering::SeqCst), depth);
        // Stacks are free again.
        assert_eq!(pcml::spawn(|| 1).join().unwrap(), 1);
    })
    .unwrap();
}
