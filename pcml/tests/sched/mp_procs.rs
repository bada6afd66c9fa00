//! Procs, per-proc data and spin locks with real procs.

use std::sync::Arc;

use pcml::Runtime;
use pcml::mp::{ProcLocal, SpinLock};

#[test]
fn spin_lock_counts_exactly_across_procs_and_os_threads() {
    let lock = Arc::new(SpinLock::new(0u64));
    let l = lock.clone();
    Runtime::builder()
        .procs(2)
        .build()
        .unwrap()
        .block_on(move || {
            let hs: Vec<_> = (0..8)
                .map(|_| {
                    let l = l.clone();
                    pcml::spawn(move || {
                        for _ in 0..10_000 {
                            *l.lock() += 1;
                            if l.try_lock().is_none() {
                                // Held by the other proc right now; fine.
                            }
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
        })
        .unwrap();
    let os: Vec<_> = (0..2)
        .map(|_| {
            let l = lock.clone();
            std::thread::spawn(move || {
                for _ in 0..10_000 {
                    *l.lock() += 1;
                }
            })
        })
        .collect();
    for t in os {
        t.join().unwrap();
    }
    assert_eq!(*lock.lock(), 100_000);
}

#[test]
fn a_held_spin_lock_fails_try_lock() {
    let lock = SpinLock::new(5);
    let g = lock.lock();
    assert!(lock.try_lock().is_none());
    assert!(lock.is_locked());
    assert!(format!("{lock:?}").contains("locked"));
    drop(g);
    assert_eq!(*lock.try_lock().unwrap(), 5);
}

#[test]
fn proc_local_gives_each_proc_its_own_slot() {
    let per_proc = Runtime::builder()
        .procs(2)
        .build()
        .unwrap()
        .block_on(|| {
            let counts = Arc::new(ProcLocal::new(|_| 0u32));
            assert_eq!(counts.len(), 2);
            let hs: Vec<_> = (0..2)
                .flat_map(|proc| (0..50).map(move |_| (proc, ())))
                .map(|(proc, ())| {
                    let c = counts.clone();
                    pcml::spawn_on(proc, move || c.with(|n| *n += 1))
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            let datum = ProcLocal::new(|p| p * 10);
            assert_eq!(datum.get(), 0);
            datum.set(7);
            assert_eq!(datum.get(), 7);
            let on_1 = Arc::new(datum);
            let d = on_1.clone();
            assert_eq!(pcml::spawn_on(1, move || d.get()).join().unwrap(), 10);
            Arc::try_unwrap(counts)
                .ok()
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>()
        })
        .unwrap();
    assert_eq!(per_proc, vec![50, 50]);
}

#[test]
fn proc_local_misuse_is_a_clear_panic() {
    let text = |p: Box<dyn std::any::Any + Send>| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap()
    };
    let p = std::panic::catch_unwind(|| ProcLocal::new(|_| 0)).unwrap_err();
    assert!(text(p).contains("outside a pcml runtime"));
    let datum = pcml::run(|| ProcLocal::new(|_| 1));
    // Used off the runtime that made it.
    let p = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| datum.get())).unwrap_err();
    assert!(text(p).contains("off the procs"));
    // Re-entered on the same proc.
    let e = pcml::run(|| {
        let d = Arc::new(ProcLocal::new(|_| 0));
        let d2 = d.clone();
        pcml::spawn(move || d2.with(|_| d.with(|_| ())))
            .join()
            .unwrap_err()
    });
    assert!(e.to_string().contains("re-entered"), "{e}");
}
