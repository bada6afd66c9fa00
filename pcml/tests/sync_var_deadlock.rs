//! Deadlock detection sees threads blocked on sync variables.

use pcml::{MVar, Runtime, RuntimeError};

#[test]
fn two_fibers_taking_each_others_empty_mvar_deadlock() {
    for procs in [1, 2] {
        let r = Runtime::builder()
            .procs(procs)
            .build()
            .unwrap()
            .block_on(|| {
                let (a, b) = (MVar::<u32>::new(), MVar::<u32>::new());
                let (a2, b2) = (a.clone(), b.clone());
                // Each takes from the other's MVar before filling its own.
                let f1 = pcml::spawn(move || {
                    let v = b2.take();
                    a2.put(v);
                });
                let f2 = pcml::spawn(move || {
                    let v = a.take();
                    b.put(v);
                });
                f1.join().unwrap();
                f2.join().unwrap();
            });
        assert!(
            matches!(r, Err(RuntimeError::Deadlock { blocked: 3, .. })),
            "procs = {procs}: {r:?}"
        );
    }
}
