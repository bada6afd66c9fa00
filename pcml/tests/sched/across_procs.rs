//! The scheduler seen by a program that places its fibers on several procs (2, 4 and 8 on any
//! machine): placement errors, joins and panics across procs, shutdown with fibers blocked
//! elsewhere, runtimes one after another, and deadlock reports that say who waits on what.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pcml::chan::Chan;
use pcml::{Runtime, RuntimeError, SpawnError};

const PROCS: [usize; 3] = [2, 4, 8];

fn rt(procs: usize) -> Runtime {
    Runtime::builder().procs(procs).build().unwrap()
}

/// Runs `f` in an OS thread, failing (instead of hanging) if it has not returned in 60 s.
fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(v)) => v,
        Ok(Err(p)) => std::panic::resume_unwind(p),
        Err(_) => panic!("did not finish within 60 s"),
    }
}

#[test]
fn spawn_on_a_proc_out_of_range_says_which_and_how_many() {
    for procs in PROCS {
        rt(procs)
            .block_on(move || {
                match pcml::try_spawn_on(procs, || ()) {
                    Err(e @ SpawnError::NoSuchProc { .. }) => {
                        let msg = e.to_string();
                        assert!(
                            msg.contains(&procs.to_string()),
                            "the message does not name the procs: {msg}"
                        );
                    }
                    other => panic!("spawn on proc {procs} of {procs}: {:?}", other.map(|_| ())),
                }
                let p = std::panic::catch_unwind(|| pcml::spawn_on(procs + 5, || ()))
                    .expect_err("spawn_on out of range did not panic");
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                assert!(msg.contains(&(procs + 5).to_string()), "{msg}");
                // The runtime goes on.
                assert_eq!(pcml::spawn_on(procs - 1, || 7).join().unwrap(), 7);
            })
            .unwrap();
    }
}

/// Panics in fibers on every other proc come back through their joins (with the message);
/// the procs keep running fibers afterwards.
#[test]
fn panics_on_other_procs_are_reported_by_their_joins_and_the_runtime_survives() {
    for procs in PROCS {
        bounded(move || {
            rt(procs)
                .block_on(move || {
                    for round in 0..3 {
                        let hs: Vec<_> = (0..procs)
                            .map(|p| {
                                pcml::spawn_on(p, move || {
                                    if p % 2 == 1 {
                                        panic!("boom on {p} in {round}");
                                    }
                                    p
                                })
                            })
                            .collect();
                        for (p, h) in hs.into_iter().enumerate() {
                            match h.join() {
                                Ok(v) => assert_eq!((v, p % 2), (p, 0)),
                                Err(e) => {
                                    assert!(e.is_panic() && p % 2 == 1);
                                    let want = format!("boom on {p} in {round}");
                                    assert_eq!(e.panic_message(), Some(want.as_str()));
                                }
                            }
                        }
                    }
                    // A panic in a fiber blocked in a choice with partners elsewhere.
                    let ch = Chan::<u32>::new();
                    let c2 = ch.clone();
                    let h = pcml::spawn_on(procs - 1, move || {
                        let v = c2.recv();
                        panic!("got {v}");
                    });
                    ch.send(3);
                    assert_eq!(h.join().unwrap_err().panic_message(), Some("got 3"));
                    let sum: usize = (0..procs)
                        .map(|p| pcml::spawn_on(p, move || p))
                        .map(|h| h.join().unwrap())
                        .sum();
                    assert_eq!(sum, procs * (procs - 1) / 2);
                })
                .unwrap();
        });
    }
}

/// Main returns while fibers on every proc are blocked (on channels, a choice, a sleep):
/// `block_on` returns main's value, and the blocked fibers' stacks are unwound (what they
/// held is dropped).
#[test]
fn shutdown_with_fibers_blocked_on_other_procs_returns_and_drops_their_stacks() {
    for procs in PROCS {
        let held = Arc::new(());
        let h2 = held.clone();
        let v = bounded(move || {
            rt(procs)
                .block_on(move || {
                    let ch = Chan::<u32>::new();
                    let started = Chan::<()>::new();
                    for p in 0..procs {
                        for kind in 0..3 {
                            let (ch, started, held) = (ch.clone(), started.clone(), h2.clone());
                            pcml::spawn_on(p, move || {
                                let _held = held;
                                started.send(());
                                match kind {
                                    0 => {
                                        ch.recv();
                                    }
                                    1 => {
                                        pcml::select([ch.recv_evt(), pcml::never()]);
                                    }
                                    _ => pcml::time::sleep(Duration::from_secs(3600)),
                                }
                                unreachable!("woken at shutdown");
                            });
                        }
                    }
                    for _ in 0..3 * procs {
                        started.recv();
                    }
                    42
                })
                .unwrap()
        });
        assert_eq!(v, 42);
        assert_eq!(
            Arc::strong_count(&held),
            1,
            "{procs} procs: a blocked fiber's stack was not unwound"
        );
    }
}

/// Runtimes one after another, and two at once on different OS threads, each with fibers
/// on all its procs.
#[test]
fn runtimes_in_sequence_and_side_by_side() {
    let work = |procs: usize| {
        rt(procs)
            .block_on(move || {
                let hs: Vec<_> = (0..procs)
                    .map(|p| {
                        pcml::spawn_on(p, move || {
                            let ch = Chan::new();
                            let c2 = ch.clone();
                            pcml::spawn_on((p + 1) % pcml::procs(), move || c2.send(p));
                            ch.recv()
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
            })
            .unwrap()
    };
    bounded(move || {
        for procs in PROCS {
            assert_eq!(work(procs), procs * (procs - 1) / 2);
            assert_eq!(work(procs), procs * (procs - 1) / 2);
        }
        let a = std::thread::spawn(move || work(4));
        let b = std::thread::spawn(move || work(8));
        assert_eq!(a.join().unwrap(), 6);
        assert_eq!(b.join().unwrap(), 28);
    });
}

/// `block_on` inside a runtime is refused with a panic that says so, and the outer runtime
/// goes on.
#[test]
fn block_on_inside_a_runtime_panics_and_the_runtime_goes_on() {
    bounded(|| {
        rt(2)
            .block_on(|| {
                let h = pcml::spawn_on(1, || {
                    let inner = rt(2);
                    inner.block_on(|| 1).unwrap()
                });
                let e = h.join().unwrap_err();
                assert!(e.is_panic(), "{e:?}");
                let msg = e.panic_message().unwrap_or_default().to_string();
                assert!(msg.contains("runtime"), "{msg}");
                assert_eq!(pcml::spawn_on(1, || 5).join().unwrap(), 5);
            })
            .unwrap();
    });
}

/// A program whose fibers on several procs all wait ends with a deadlock report that counts
/// them and names, for each, what it waits on.
#[test]
fn a_deadlock_across_procs_is_reported_with_who_waits_on_what() {
    for procs in PROCS {
        // Not under `bounded`: its waiting OS thread could send, so no deadlock would be
        // reported while it lives (see `Builder::detect_deadlock`). The report is the bound.
        let err = {
            rt(procs)
                .block_on(move || {
                    let a = Chan::<u32>::new();
                    let b = Chan::<u32>::new();
                    let mut hs = Vec::new();
                    for p in 0..procs {
                        let (a, b) = (a.clone(), b.clone());
                        hs.push(
                            pcml::SpawnBuilder::new()
                                .name(format!("waiter-{p}"))
                                .spawn_on(p, move || {
                                    if p % 2 == 0 {
                                        a.recv()
                                    } else {
                                        pcml::select([a.recv_evt(), b.recv_evt()])
                                    }
                                })
                                .unwrap(),
                        );
                    }
                    for h in hs {
                        h.join().unwrap();
                    }
                })
                .unwrap_err()
        };
        match &err {
            RuntimeError::Deadlock { blocked, dump, .. } => {
                assert_eq!(*blocked, procs + 1, "{err}");
                for p in 0..procs {
                    let name = format!("waiter-{p}");
                    let t = dump
                        .threads()
                        .iter()
                        .find(|t| t.name() == Some(name.as_str()))
                        .unwrap_or_else(|| panic!("{name} missing from the report:\n{err}"));
                    assert_eq!(t.proc(), Some(p), "{err}");
                    assert_eq!(t.state(), pcml::ThreadState::Blocked, "{err}");
                    assert!(!t.waits_on().is_empty(), "{name} waits on nothing?\n{err}");
                    if p % 2 == 1 {
                        let branches = t
                            .waits_on()
                            .iter()
                            .filter(|w| w.starts_with("branch"))
                            .count();
                        assert_eq!(branches, 2, "{name}: a choice of 2\n{err}");
                    }
                }
                let text = err.to_string();
                assert!(text.contains("waiter-0"), "{text}");
            }
            other => panic!("{other:?}"),
        }
    }
}

/// A fiber on one proc joins threads on every other proc, fibers and tasks, some of which
/// finish before the join and some after.
#[test]
fn joins_across_procs_of_fibers_and_tasks() {
    for procs in PROCS {
        bounded(move || {
            rt(procs)
                .block_on(move || {
                    let gate = Chan::<()>::new();
                    let mut hs = Vec::new();
                    for p in 0..procs {
                        let g = gate.clone();
                        hs.push(pcml::spawn_on(p, move || {
                            if p % 2 == 0 {
                                g.recv();
                            }
                            p * 10
                        }));
                    }
                    let tasks: Vec<_> = (0..procs)
                        .map(|p| {
                            let g = gate.clone();
                            pcml::spawn_on(p, move || {
                                pcml::spawn_task(async move {
                                    g.recv_async().await;
                                    p
                                })
                            })
                            .join()
                            .unwrap()
                        })
                        .collect();
                    let opener = {
                        let g = gate.clone();
                        let n = procs.div_ceil(2) + procs;
                        pcml::spawn_on(procs - 1, move || (0..n).for_each(|_| g.send(())))
                    };
                    let joiner = pcml::spawn_on(1, move || {
                        let a: usize = hs.into_iter().map(|h| h.join().unwrap()).sum();
                        let b: usize = tasks.into_iter().map(|h| h.join().unwrap()).sum();
                        (a, b)
                    });
                    opener.join().unwrap();
                    let (a, b) = joiner.join().unwrap();
                    assert_eq!(a, 10 * procs * (procs - 1) / 2);
                    assert_eq!(b, procs * (procs - 1) / 2);
                })
                .unwrap();
        });
    }
}

/// `abort` of fibers blocked on other procs: each join reports a cancellation, and what the
/// fiber held is dropped.
#[test]
fn abort_of_fibers_blocked_on_other_procs() {
    for procs in PROCS {
        bounded(move || {
            rt(procs)
                .block_on(move || {
                    let held = Arc::new(());
                    let started = Chan::<()>::new();
                    let never = Chan::<()>::new();
                    let hs: Vec<_> = (0..procs)
                        .map(|p| {
                            let (held, started, never) =
                                (held.clone(), started.clone(), never.clone());
                            pcml::spawn_on(p, move || {
                                let _h = held;
                                started.send(());
                                never.recv();
                            })
                        })
                        .collect();
                    for _ in 0..procs {
                        started.recv();
                    }
                    for h in &hs {
                        h.abort();
                    }
                    for h in hs {
                        assert!(h.join().unwrap_err().is_cancelled());
                    }
                    assert_eq!(Arc::strong_count(&held), 1);
                })
                .unwrap();
        });
    }
}

/// Many small fibers spawned from every proc onto every proc: each runs exactly once.
#[test]
fn spawns_from_every_proc_onto_every_proc_run_once() {
    for procs in PROCS {
        bounded(move || {
            rt(procs)
                .block_on(move || {
                    let count = Arc::new(AtomicUsize::new(0));
                    let spawners: Vec<_> = (0..procs)
                        .map(|p| {
                            let count = count.clone();
                            pcml::spawn_on(p, move || {
                                let hs: Vec<_> = (0..200)
                                    .map(|i| {
                                        let count = count.clone();
                                        let to = (p + i) % pcml::procs();
                                        pcml::spawn_on(to, move || {
                                            assert_eq!(pcml::current_proc(), Some(to));
                                            count.fetch_add(1, Ordering::SeqCst);
                                        })
                                    })
                                    .collect();
                                hs.into_iter().for_each(|h| h.join().unwrap());
                            })
                        })
                        .collect();
                    spawners.into_iter().for_each(|h| h.join().unwrap());
                    assert_eq!(count.load(Ordering::SeqCst), procs * 200);
                })
                .unwrap();
        });
    }
}

/// An OS thread blocked on a channel whose senders live in fibers and tasks blocked on every
/// proc: when the runtime ends, their stacks and futures are dropped with the senders, and the
/// OS thread's receive ends.
#[test]
fn shutdown_drops_senders_held_by_blocked_threads_and_wakes_an_outside_receiver() {
    for procs in PROCS {
        bounded(move || {
            let (tx, rx) = pcml::chan::channel::<u32>();
            let outside = std::thread::spawn(move || rx.recv());
            rt(procs)
                .block_on(move || {
                    let started = Chan::<()>::new();
                    for p in 0..procs {
                        let (tx1, tx2, s1, s2) =
                            (tx.clone(), tx.clone(), started.clone(), started.clone());
                        pcml::spawn_on(p, move || {
                            let _tx = tx1;
                            s1.send(());
                            pcml::never::<()>().sync();
                        });
                        pcml::spawn_on(p, move || {
                            pcml::spawn_task(async move {
                                let _tx = tx2;
                                s2.send_async(()).await;
                                pcml::never::<()>().await;
                            })
                        });
                    }
                    drop(tx);
                    for _ in 0..2 * procs {
                        started.recv();
                    }
                })
                .unwrap();
            assert_eq!(outside.join().unwrap(), Err(pcml::chan::RecvError));
        });
    }
}

/// A runtime run from a `spawn_blocking` job of another runtime (not from a proc) works.
#[test]
fn a_runtime_inside_a_blocking_job_of_another() {
    bounded(|| {
        let v = rt(2)
            .block_on(|| {
                pcml::spawn_blocking(|| {
                    rt(4)
                        .block_on(|| {
                            let hs: Vec<_> =
                                (0..4).map(|p| pcml::spawn_on(p, move || p * 2)).collect();
                            hs.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
                        })
                        .unwrap()
                })
                .join()
                .unwrap()
            })
            .unwrap();
        assert_eq!(v, 12);
    });
}
