//! More procs than OS threads (`Builder::carrier_threads`): procs keep their identity, work
//! crosses procs of one thread and of two, dumps, deadlocks and shutdown still hold.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pcml::{Chan, Runtime};

fn rt(procs: usize, threads: usize) -> Runtime {
    Runtime::builder()
        .procs(procs)
        .carrier_threads(threads)
        .build()
        .unwrap()
}

#[test]
fn a_fiber_placed_on_a_proc_runs_there_whatever_thread_carries_it() {
    for (procs, threads) in [(4, 2), (8, 2), (3, 1), (5, 3)] {
        let got = rt(procs, threads)
            .block_on(move || {
                assert_eq!(pcml::procs(), procs);
                let hs: Vec<_> = (0..procs)
                    .map(|p| {
                        pcml::spawn_on(p, move || {
                            let first = pcml::current_proc();
                            // Still there after blocking and yielding.
                            pcml::yield_now();
                            pcml::time::sleep(std::time::Duration::from_millis(1));
                            assert_eq!(pcml::current_proc(), first);
                            first.unwrap()
                        })
                    })
                    .collect();
                hs.into_iter()
                    .map(|h| h.join().unwrap())
                    .collect::<Vec<_>>()
            })
            .unwrap();
        assert_eq!(got, (0..procs).collect::<Vec<_>>(), "{procs} procs");
    }
}

#[test]
fn a_chain_of_filters_round_robin_over_procs_finds_the_primes() {
    // Reppy, Russo and Xiao's sieve with filter k on proc k mod P: every message crosses
    // procs, some of one thread, some of two.
    for (procs, threads) in [(4, 2), (8, 2), (8, 3)] {
        let primes = rt(procs, threads)
            .block_on(move || {
                let src = Chan::<u64>::new();
                let tx = src.clone();
                pcml::spawn_on(0, move || {
                    for i in 2.. {
                        tx.send(i);
                    }
                });
                let mut ch = src;
                let mut primes = Vec::new();
                for k in 0..50 {
                    let p = ch.recv();
                    primes.push(p);
                    let out = Chan::new();
                    let (inp, o) = (ch.clone(), out.clone());
                    pcml::spawn_on(k % procs, move || {
                        loop {
                            let v = inp.recv();
                            if v % p != 0 {
                                o.send(v);
                            }
                        }
                    });
                    ch = out;
                }
                primes
            })
            .unwrap();
        assert_eq!(primes.len(), 50);
        assert_eq!(primes[..6], [2, 3, 5, 7, 11, 13]);
        assert_eq!(primes[49], 229, "{procs} procs on {threads} threads");
    }
}

#[test]
fn pairs_on_procs_of_one_thread_and_of_two_exchange_every_message() {
    for (procs, threads) in [(4, 2), (8, 2)] {
        let total = rt(procs, threads)
            .block_on(move || {
                let hs: Vec<_> = (0..procs)
                    .flat_map(|i| {
                        let (ping, pong) = (Chan::<u64>::new(), Chan::<u64>::new());
                        let (p2, q2) = (ping.clone(), pong.clone());
                        // Pair i: procs i and i + threads (one thread), or i + 1 (two).
                        let other = if i % 2 == 0 { i + threads } else { i + 1 } % procs;
                        [
                            pcml::spawn_on(i, move || {
                                let mut sum = 0;
                                for v in 0..2_000u64 {
                                    ping.send(v);
                                    sum += pong.recv();
                                }
                                sum
                            }),
                            pcml::spawn_on(other, move || {
                                for _ in 0..2_000 {
                                    let v = p2.recv();
                                    q2.send(v + 1);
                                }
                                0
                            }),
                        ]
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
            })
            .unwrap();
        assert_eq!(total, procs as u64 * (1..=2_000u64).sum::<u64>());
    }
}

#[test]
fn scheduler_placed_work_spreads_and_completes() {
    let done = Arc::new(AtomicUsize::new(0));
    let d = done.clone();
    let sum = rt(8, 2)
        .block_on(move || {
            let hs: Vec<_> = (0..200u64)
                .map(|i| {
                    let d = d.clone();
                    pcml::spawn(move || {
                        pcml::yield_now();
                        d.fetch_add(1, Ordering::Relaxed);
                        i
                    })
                })
                .collect();
            let tasks: Vec<_> = (0..200u64)
                .map(|i| pcml::spawn_task(async move { i }))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
                + tasks.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
        })
        .unwrap();
    assert_eq!(sum, 2 * (0..200u64).sum::<u64>());
    assert_eq!(done.load(Ordering::Relaxed), 200);
}

#[test]
fn a_dump_from_a_task_hears_from_every_proc_of_its_thread() {
    let d = rt(4, 2)
        .block_on(|| {
            // A fiber blocked on each proc.
            let c = Chan::<()>::new();
            let hs: Vec<_> = (0..4)
                .map(|p| {
                    let c = c.clone();
                    pcml::spawn_on(p, move || c.recv())
                })
                .collect();
            let ids: Vec<_> = hs.iter().map(|h| h.id()).collect();
            // Wait until every one is blocked (a dump lists them so).
            let d = loop {
                let d = pcml::spawn_task(async { pcml::dump().unwrap() })
                    .join()
                    .unwrap();
                // The procs sharing the task's thread answer at once: none is silent.
                assert_eq!(d.silent_procs(), &[] as &[usize], "{d}");
                let blocked = d
                    .threads()
                    .iter()
                    .filter(|t| t.state() == pcml::ThreadState::Blocked)
                    .filter(|t| t.id().is_some_and(|id| ids.contains(&id)))
                    .count();
                if blocked == 4 {
                    break (d, ids);
                }
                pcml::time::sleep(std::time::Duration::from_millis(1));
            };
            for _ in 0..4 {
                c.send(());
            }
            hs.into_iter().for_each(|h| h.join().unwrap());
            d
        })
        .unwrap();
    let (d, ids) = d;
    let mut procs: Vec<_> = d
        .threads()
        .iter()
        .filter(|t| t.id().is_some_and(|id| ids.contains(&id)))
        .filter_map(|t| t.proc())
        .collect();
    procs.sort();
    procs.dedup();
    assert_eq!(procs, [0, 1, 2, 3]);
}

#[test]
fn a_deadlock_across_procs_of_one_thread_is_reported() {
    let r = rt(4, 2).block_on(|| {
        let c = Chan::<()>::new();
        let c2 = c.clone();
        let h = pcml::spawn_on(2, move || c2.recv());
        h.join().unwrap();
    });
    assert!(
        matches!(r, Err(pcml::RuntimeError::Deadlock { .. })),
        "{r:?}"
    );
}

#[test]
fn carrier_threads_out_of_range_is_a_build_error_that_names_the_setting() {
    for (procs, threads) in [(2, 0), (2, 3), (1, 2)] {
        let err = Runtime::builder()
            .procs(procs)
            .carrier_threads(threads)
            .build()
            .unwrap_err();
        assert!(err.to_string().contains("carrier_threads"), "{err}");
    }
    // The default on any machine: every proc there, whatever the threads.
    let rt = Runtime::builder().procs(8).build().unwrap();
    assert_eq!(rt.procs(), 8);
    let last = rt.block_on(|| pcml::spawn_on(7, pcml::current_proc).join().unwrap());
    assert_eq!(last.unwrap(), Some(7));
}

#[test]
fn procs_beside_a_busy_proc_on_its_thread_get_their_timers_and_wake_ups() {
    // Every proc on one thread; proc 0 always has a fiber ready, so the thread never idles,
    // and the others' timers and wake-ups are seen only in its rotation.
    for (procs, threads) in [(4, 1), (8, 2)] {
        let (slept, woken) = rt(procs, threads)
            .block_on(move || {
                let slept = Arc::new(AtomicUsize::new(0));
                let woken = Arc::new(AtomicUsize::new(0));
                let to_waiter: Chan<u64> = Chan::new();
                let (s, w, rx) = (slept.clone(), woken.clone(), to_waiter.clone());
                let sleeper = pcml::spawn_on(procs - 2, move || {
                    pcml::time::sleep(std::time::Duration::from_millis(1));
                    s.fetch_add(1, Ordering::SeqCst);
                });
                let waiter = pcml::spawn_on(procs - 1, move || {
                    assert_eq!(rx.recv(), 7);
                    w.fetch_add(1, Ordering::SeqCst);
                });
                let (s, w) = (slept.clone(), woken.clone());
                let busy = pcml::spawn_on(0, move || {
                    // A guard against a hang, not a measure: the two arrive long before.
                    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(60);
                    while (s.load(Ordering::SeqCst) == 0 || w.load(Ordering::SeqCst) == 0)
                        && std::time::Instant::now() < give_up
                    {
                        pcml::yield_now();
                    }
                });
                // A send from an OS thread: the waiter's wake-up comes through its inbox.
                let sender = std::thread::spawn(move || to_waiter.send(7));
                busy.join().unwrap();
                sender.join().unwrap();
                sleeper.join().unwrap();
                waiter.join().unwrap();
                (slept.load(Ordering::SeqCst), woken.load(Ordering::SeqCst))
            })
            .unwrap();
        assert_eq!((slept, woken), (1, 1), "{procs} procs on {threads} threads");
    }
}

/// A turn owed to one proc of a thread does not hold back the fibers of another proc of that
/// thread. Proc 0's choice takes the offer of `remote`, a fiber of proc 1 (so proc 1 owes
/// proc 0 a turn, see the `sched` docs, "Fair choice across procs"); `remote`, run for that
/// turn, makes a choice that wakes `local`, another fiber of proc 1, which owes nothing to
/// anyone and must run at proc 1's next turn. On one thread the turns come in a fixed
/// rotation, so `local` runs long before proc 0's fiber has yielded 100,000 times (once it
/// waited for the 500 ms limit on owed turns, through millions of yields).
#[test]
fn a_turn_owed_to_one_proc_of_a_thread_does_not_hold_back_its_neighbours_fibers() {
    for round in 0..20 {
        rt(2, 1)
            .block_on(move || {
                let (a, a2) = (Chan::<u32>::new(), Chan::<u32>::new());
                let (b, b2) = (Chan::<u32>::new(), Chan::<u32>::new());
                let ran = Arc::new(AtomicUsize::new(0));
                let local = {
                    let (b, ran) = (b.clone(), ran.clone());
                    pcml::spawn_on(1, move || {
                        assert_eq!(b.recv(), 2);
                        ran.store(1, Ordering::SeqCst);
                    })
                };
                let remote = {
                    let (a, b, b2) = (a.clone(), b.clone(), b2.clone());
                    pcml::spawn_on(1, move || {
                        a.send(1);
                        pcml::event::select([b.send_evt(2), b2.send_evt(2)]);
                    })
                };
                // Both fibers of proc 1 block (`local` on `b`, `remote` on `a`).
                let blocked = |id| {
                    pcml::dump()
                        .unwrap()
                        .threads()
                        .iter()
                        .any(|t| t.id() == Some(id) && t.state() == pcml::ThreadState::Blocked)
                };
                let mut spins = 0;
                while !blocked(remote.id()) || !blocked(local.id()) {
                    pcml::yield_now();
                    spins += 1;
                    assert!(spins < 100_000, "proc 1's fibers never blocked");
                }
                assert_eq!(pcml::event::select([a.recv_evt(), a2.recv_evt()]), 1);
                let mut yields = 0;
                while ran.load(Ordering::SeqCst) == 0 {
                    pcml::yield_now();
                    yields += 1;
                    assert!(
                        yields < 100_000,
                        "round {round}: proc 1's `local` was held back by a turn owed to proc 0"
                    );
                }
                remote.join().unwrap();
                local.join().unwrap();
            })
            .unwrap();
    }
}
