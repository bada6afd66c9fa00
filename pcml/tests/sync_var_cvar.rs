//! The one-shot condition variable: every waiter, before or after the signal, returns.

use std::time::Duration;

use pcml::sync_var::CVar;

#[test]
fn waiters_before_and_after_the_signal_all_return() {
    for procs in [1, 2] {
        pcml::Runtime::builder()
            .procs(procs)
            .build()
            .unwrap()
            .block_on(|| {
                let c = CVar::new();
                let early: Vec<_> = (0..20)
                    .map(|_| {
                        let c = c.clone();
                        pcml::spawn(move || c.wait())
                    })
                    .collect();
                let os = {
                    let c = c.clone();
                    std::thread::spawn(move || c.wait())
                };
                assert!(!c.is_signalled());
                c.signal();
                c.signal();
                for h in early {
                    h.join().unwrap();
                }
                os.join().unwrap();
                // After the signal, waits return at once, in fibers and in tasks.
                c.wait();
                let c2 = c.clone();
                pcml::spawn_task(async move { c2.wait_evt().await })
                    .join()
                    .unwrap();
            })
            .unwrap();
    }
}

#[test]
fn wait_evt_composes_with_timeouts() {
    pcml::run(|| {
        let c = CVar::new();
        assert_eq!(c.wait_evt().sync_timeout(Duration::from_millis(2)), None);
        let c2 = c.clone();
        pcml::spawn(move || {
            pcml::time::sleep(Duration::from_millis(2));
            c2.signal();
        });
        assert_eq!(c.wait_evt().sync_timeout(Duration::from_secs(60)), Some(()));
    });
}
