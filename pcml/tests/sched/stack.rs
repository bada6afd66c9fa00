//! Fiber stacks: configured sizes, the per-runtime fiber limit, and errors instead of crashes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use pcml::{BuildError, Runtime, SpawnError};

#[test]
fn builder_validates_its_settings() {
    let b = || Runtime::builder();
    assert_eq!(b().procs(0).build().unwrap_err(), BuildError::Procs(0));
    assert_eq!(
        b().procs(pcml::sched::MAX_PROCS + 1).build().unwrap_err(),
        BuildError::Procs(pcml::sched::MAX_PROCS + 1)
    );
    assert_eq!(
        b().stack_size(100).build().unwrap_err(),
        BuildError::StackSize(100)
    );
    assert_eq!(
        b().stack_size(usize::MAX).build().unwrap_err(),
        BuildError::StackSize(usize::MAX)
    );
    assert_eq!(
        b().max_fibers(0).build().unwrap_err(),
        BuildError::MaxFibers
    );
    let e = b().stack_size(1).build().unwrap_err().to_string();
    assert!(e.contains("outside the allowed range"), "{e}");
}

#[test]
fn deep_recursion_fits_in_a_big_stack() {
    fn deep(n: u64) -> u64 {
        let pad = std::hint::black_box([n; 16]);
        if n == 0 {
            0
        } else {
            deep(n - 1) + pad[1] / n.max(1)
        }
    }
    // The same depth everywhere; ThreadSanitizer's instrumented debug frames are several
    // times larger than plain ones, so its builds (`cfg(pcml_tsan)`, set by pcml's build
    // script) give the fiber a larger stack instead.
    let stack = if cfg!(pcml_tsan) { 512 << 20 } else { 64 << 20 };
    let v = Runtime::builder()
        .procs(1)
        .stack_size(stack)
        .build()
        .unwrap()
        .block_on(|| pcml::spawn(|| deep(100_000)).join().unwrap())
        .unwrap();
    assert_eq!(v, 100_000);
}

/// A fiber can use its whole stack size, whatever offset its stack's top starts at (the
/// stacks' colours, see `fiber::stack`): 20 fibers alive at once on one proc, each on a
/// stack of its own, each recurse through 60 KiB of a 64 KiB stack (52 KiB in an unoptimised
/// build, where the frames of the fiber's entry, before the closure's, take 6 to 8 KiB).
#[test]
fn every_fiber_can_use_nearly_its_whole_stack_size() {
    /// Recurses until the frames reach `bytes` below `top`; returns the depth.
    #[inline(never)]
    fn dig(top: usize, bytes: usize) -> u64 {
        let pad = std::hint::black_box([0u8; 256]);
        let here = std::hint::black_box(&pad) as *const _ as usize;
        if top - here >= bytes {
            return 1;
        }
        dig(top, bytes) + u64::from(pad[7]) + 1
    }
    let dig_to = if cfg!(debug_assertions) { 52 } else { 60 } * 1024;
    let rt = Runtime::builder()
        .procs(1)
        .stack_size(64 * 1024)
        .build()
        .unwrap();
    rt.block_on(move || {
        let (dug, gate) = (pcml::Chan::<u64>::new(), pcml::Chan::<()>::new());
        let hs: Vec<_> = (0..20)
            .map(|_| {
                let (dug, gate) = (dug.clone(), gate.clone());
                pcml::spawn(move || {
                    let top = std::hint::black_box(&gate) as *const _ as usize;
                    dug.send(dig(top, dig_to));
                    // Stay alive (holding the stack) until all have dug.
                    gate.recv();
                })
            })
            .collect();
        for _ in 0..20 {
            // Frames of at least 256 bytes (`pad`, more unoptimised): the recursion ran.
            assert!(dug.recv() > 50);
        }
        for _ in 0..20 {
            gate.send(());
        }
        hs.into_iter().for_each(|h| h.join().unwrap());
    })
    .unwrap();
}

/// Spawns spinning fibers one at a time, each started before the next, until `try_spawn`
/// fails; returns how many were running then and the error.
fn fill_until_error(stop: Arc<AtomicBool>) -> (usize, SpawnError, Vec<pcml::JoinHandle<()>>) {
    let started = Arc::new(AtomicUsize::new(0));
    let mut hs = Vec::new();
    loop {
        let (s, st) = (started.clone(), stop.clone());
        match pcml::try_spawn(move || {
            s.fetch_add(1, Ordering::SeqCst);
            while !st.load(Ordering::SeqCst) {
                pcml::yield_now();
            }
        }) {
            Ok(h) => hs.push(h),
            Err(e) => return (started.load(Ordering::SeqCst), e, hs),
        }
        while started.load(Ordering::SeqCst) < hs.len() {
            pcml::yield_now();
        }
    }
}

#[test]
fn max_fibers_limits_started_fibers_and_try_spawn_says_so() {
    let rt = Runtime::builder().procs(1).max_fibers(8).build().unwrap();
    rt.block_on(|| {
        let stop = Arc::new(AtomicBool::new(false));
        let (running, err, hs) = fill_until_error(stop.clone());
        // Main holds one of the 8 stacks.
        assert_eq!(running, 7);
        assert!(
            matches!(err, SpawnError::FiberLimit { max_fibers: 8 }),
            "{err:?}"
        );
        assert!(err.to_string().contains("max_fibers"), "{err}");
        let panic = std::panic::catch_unwind(|| pcml::spawn(|| ())).unwrap_err();
        assert!(
            panic
                .downcast_ref::<String>()
                .unwrap()
                .contains("max_fibers")
        );
        stop.store(true, Ordering::SeqCst);
        for h in hs {
            h.join().unwrap();
        }
        // Room again.
        assert_eq!(pcml::spawn(|| 3).join().unwrap(), 3);
    })
    .unwrap();
}

#[test]
fn spawned_fibers_beyond_the_limit_wait_for_a_stack_and_all_finish() {
    // One proc, so no fiber starts while main spawns (spawning itself fails at the limit).
    let rt = Runtime::builder().procs(1).max_fibers(4).build().unwrap();
    let n = rt
        .block_on(|| {
            // Spawned before any starts: they queue for stacks instead of failing.
            let hs: Vec<_> = (0..1000)
                .map(|i| {
                    pcml::spawn(move || {
                        pcml::yield_now();
                        i
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
        })
        .unwrap();
    assert_eq!(n, 999 * 1000 / 2);
}
