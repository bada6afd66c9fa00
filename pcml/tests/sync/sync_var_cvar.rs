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

#[test]
fn wait_evt_in_a_choice_loses_to_a_timeout_until_signalled() {
    pcml::run(|| {
        let c = CVar::new();
        let before = pcml::event::select([
            c.wait_evt().wrap(|()| "signalled"),
            pcml::time::timeout_evt(Duration::from_millis(5)).wrap(|()| "timed out"),
        ]);
        assert_eq!(before, "timed out");
        let c2 = c.clone();
        pcml::spawn(move || c2.signal());
        let after = pcml::event::select([
            c.wait_evt().wrap(|()| "signalled"),
            pcml::time::timeout_evt(Duration::from_secs(60)).wrap(|()| "timed out"),
        ]);
        assert_eq!(after, "signalled");
        // A signalled CVar stays enabled: polling it succeeds at once.
        assert_eq!(c.wait_evt().poll(), Some(()));
    });
}

#[test]
fn tokio_tasks_await_the_signal() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let c = CVar::new();
    let waiters: Vec<_> = (0..8)
        .map(|_| {
            let c = c.clone();
            rt.spawn(async move { c.wait_evt().await })
        })
        .collect();
    let signaller = std::thread::spawn(move || c.signal());
    rt.block_on(async {
        for w in waiters {
            w.await.unwrap();
        }
    });
    signaller.join().unwrap();
}
