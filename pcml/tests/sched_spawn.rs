//! Spawning and joining fibers, tasks and blocking jobs with real procs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pcml::{Runtime, SpawnError};

fn rt(procs: usize) -> Runtime {
    Runtime::builder().procs(procs).build().unwrap()
}

#[test]
fn hundred_thousand_fibers_spawn_and_join() {
    for procs in [1, 2] {
        let sum = rt(procs)
            .block_on(|| {
                let hs: Vec<_> = (0..100_000u64).map(|i| pcml::spawn(move || i)).collect();
                hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
            })
            .unwrap();
        assert_eq!(sum, 100_000 * 99_999 / 2, "procs = {procs}");
    }
}

#[test]
fn hundred_thousand_tasks_spawn_and_join() {
    let sum = rt(2)
        .block_on(|| {
            let hs: Vec<_> = (0..100_000u64)
                .map(|i| pcml::spawn_task(async move { i }))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
        })
        .unwrap();
    assert_eq!(sum, 100_000 * 99_999 / 2);
}

#[test]
fn nested_spawns_form_a_tree() {
    fn tree(depth: u32) -> u64 {
        if depth == 0 {
            return 1;
        }
        let l = pcml::spawn(move || tree(depth - 1));
        let r = pcml::spawn(move || tree(depth - 1));
        l.join().unwrap() + r.join().unwrap()
    }
    assert_eq!(rt(2).block_on(|| tree(12)).unwrap(), 4096);
}

#[test]
fn tasks_await_fibers_and_fibers_join_tasks() {
    let v = rt(2)
        .block_on(|| {
            let f = pcml::spawn(|| 40);
            let t = pcml::spawn_task(async move { f.await.unwrap() + 1 });
            t.join().unwrap() + 1
        })
        .unwrap();
    assert_eq!(v, 42);
}

#[test]
fn task_tree_of_async_joins() {
    fn tree(depth: u32) -> std::pin::Pin<Box<dyn std::future::Future<Output = u64> + Send>> {
        Box::pin(async move {
            if depth == 0 {
                return 1;
            }
            let l = pcml::spawn_task(tree(depth - 1));
            let r = pcml::spawn_task(tree(depth - 1));
            l.await.unwrap() + r.await.unwrap()
        })
    }
    let v = rt(2)
        .block_on(|| pcml::spawn_task(tree(14)).join().unwrap())
        .unwrap();
    assert_eq!(v, 1 << 14);
}

#[test]
fn spawn_on_places_fibers_on_the_named_proc() {
    rt(2)
        .block_on(|| {
            for proc in [0, 1, 1, 0] {
                let h = pcml::spawn_on(proc, pcml::current_proc);
                assert_eq!(h.join().unwrap(), Some(proc));
            }
            match pcml::try_spawn_on(5, || ()) {
                Err(SpawnError::NoSuchProc { proc: 5, procs: 2 }) => {}
                other => panic!("expected NoSuchProc, got {other:?}"),
            }
        })
        .unwrap();
}

#[test]
fn main_runs_on_proc_zero_and_procs_counts() {
    let (proc, procs) = rt(2)
        .block_on(|| (pcml::current_proc(), pcml::procs()))
        .unwrap();
    assert_eq!(proc, Some(0));
    assert_eq!(procs, 2);
    assert_eq!(pcml::current_proc(), None);
}

#[test]
fn spawn_blocking_runs_off_the_procs_and_joins() {
    rt(1)
        .block_on(|| {
            let h = pcml::spawn_blocking(|| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                (pcml::current_proc(), 9)
            });
            // The proc stays free while the job sleeps.
            let f = pcml::spawn(|| 1);
            assert_eq!(f.join().unwrap(), 1);
            assert_eq!(h.join().unwrap(), (None, 9));
            // A blocking job may spawn into its runtime.
            let inner = pcml::spawn_blocking(|| pcml::spawn(|| 5).join().unwrap());
            assert_eq!(inner.join().unwrap(), 5);
        })
        .unwrap();
}

#[test]
fn join_from_a_plain_os_thread_parks_it() {
    rt(2)
        .block_on(|| {
            let h = pcml::spawn(|| {
                for _ in 0..100 {
                    pcml::yield_now();
                }
                7
            });
            let os = std::thread::spawn(move || h.join().unwrap());
            // Wait for the OS thread without blocking the procs.
            let waiter = pcml::spawn_blocking(move || os.join().unwrap());
            assert_eq!(waiter.join().unwrap(), 7);
        })
        .unwrap();
}

#[test]
fn is_finished_and_ids() {
    rt(1)
        .block_on(|| {
            let me = pcml::current();
            let h = pcml::spawn(pcml::current);
            let id = h.id();
            while !h.is_finished() {
                pcml::yield_now();
            }
            let child = h.join().unwrap();
            assert_eq!(child, id);
            assert_ne!(child, me);
        })
        .unwrap();
}

#[test]
fn run_returns_mains_value_and_drops_the_rest() {
    let started = Arc::new(AtomicUsize::new(0));
    let s = started.clone();
    let v = pcml::run(move || {
        for _ in 0..10 {
            let s = s.clone();
            // Detached fibers that would run forever.
            drop(pcml::spawn(move || {
                s.fetch_add(1, Ordering::SeqCst);
                loop {
                    pcml::yield_now();
                }
            }));
        }
        while s.load(Ordering::SeqCst) < 10 {
            pcml::yield_now();
        }
        "done"
    });
    assert_eq!(v, "done");
    assert_eq!(started.load(Ordering::SeqCst), 10);
}

#[test]
fn many_runtimes_one_after_another_and_side_by_side() {
    for _ in 0..20 {
        assert_eq!(
            rt(2)
                .block_on(|| pcml::spawn(|| 3).join().unwrap())
                .unwrap(),
            3
        );
    }
    let ts: Vec<_> = (0..4)
        .map(|i| std::thread::spawn(move || rt(1).block_on(move || i * 2).unwrap()))
        .collect();
    let got: Vec<_> = ts.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(got, vec![0, 2, 4, 6]);
}
