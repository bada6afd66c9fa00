//! Sync variables and locks shared by fibers spawned on every proc (2, 4 and 8 procs):
//! exactly one put wins, every reader sees it, mutual exclusion and permit counts hold,
//! barriers have one leader a round, and choices over them commit once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::bounded_run;
use pcml::event::select;
use pcml::{Barrier, CVar, IVar, MVar, Mutex, Semaphore};

const PROCS: [usize; 3] = [2, 4, 8];

/// Readers blocked on every proc (plain, in a choice, and a task) all see the one put that
/// won among putters on every proc.
#[test]
fn ivar_one_put_wins_and_every_reader_on_every_proc_sees_it() {
    for procs in PROCS {
        bounded_run(procs, move || {
            for _ in 0..20 {
                let iv = IVar::<usize>::new();
                let mut readers = Vec::new();
                for p in 0..procs {
                    let iv1 = iv.clone();
                    readers.push(pcml::spawn_on(p, move || iv1.get()));
                    let iv2 = iv.clone();
                    readers.push(pcml::spawn_on(p, move || {
                        select([iv2.get_evt(), pcml::never()])
                    }));
                    let iv3 = iv.clone();
                    readers.push(
                        pcml::spawn_on(p, move || {
                            pcml::spawn_task(async move { iv3.get_evt().await })
                        })
                        .join()
                        .unwrap(),
                    );
                }
                let putters: Vec<_> = (0..procs)
                    .map(|p| {
                        let iv = iv.clone();
                        pcml::spawn_on(p, move || iv.put(100 + p).is_ok())
                    })
                    .collect();
                let wins = putters
                    .into_iter()
                    .map(|h| h.join().unwrap())
                    .filter(|&won| won)
                    .count();
                assert_eq!(wins, 1);
                let v = iv.get();
                assert!((100..100 + procs).contains(&v));
                for r in readers {
                    assert_eq!(r.join().unwrap(), v);
                }
            }
        });
    }
}

/// An MVar used as a lock by fibers on every proc: the count is exact and no two hold it.
#[test]
fn mvar_as_a_lock_across_procs() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let mv = MVar::new_full(0u64);
            let inside = Arc::new(AtomicUsize::new(0));
            let hs: Vec<_> = (0..2 * procs)
                .map(|i| {
                    let (mv, inside) = (mv.clone(), inside.clone());
                    pcml::spawn_on(i % procs, move || {
                        for _ in 0..200 {
                            let v = if i % 3 == 0 {
                                select([mv.take_evt(), pcml::never()])
                            } else {
                                mv.take()
                            };
                            assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                            if i % 5 == 0 {
                                pcml::yield_now();
                            }
                            inside.fetch_sub(1, Ordering::SeqCst);
                            mv.put(v + 1);
                        }
                    })
                })
                .collect();
            hs.into_iter().for_each(|h| h.join().unwrap());
            assert_eq!(mv.take(), 2 * procs as u64 * 200);
        });
    }
}

/// MVar put/take pairs between procs: every value put is taken once.
#[test]
fn mvar_handoff_between_procs_loses_and_duplicates_nothing() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let mv = MVar::<u64>::new();
            let putters: Vec<_> = (0..procs)
                .map(|p| {
                    let mv = mv.clone();
                    pcml::spawn_on(p, move || {
                        (0..300).for_each(|i| mv.put(p as u64 * 1000 + i))
                    })
                })
                .collect();
            let takers: Vec<_> = (0..procs)
                .map(|p| {
                    let mv = mv.clone();
                    pcml::spawn_on((p + 1) % procs, move || {
                        (0..300).map(|_| mv.take()).collect::<Vec<_>>()
                    })
                })
                .collect();
            putters.into_iter().for_each(|h| h.join().unwrap());
            let mut all: Vec<u64> = takers.into_iter().flat_map(|h| h.join().unwrap()).collect();
            all.sort_unstable();
            let want: Vec<u64> = (0..procs as u64)
                .flat_map(|p| (0..300).map(move |i| p * 1000 + i))
                .collect();
            assert_eq!(all, want);
        });
    }
}

/// A pcml mutex held across blocking operations by fibers on every proc: exclusion holds and
/// the count is exact; `lock_evt` in a choice takes the lock at most once.
#[test]
fn mutex_excludes_across_procs() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let m = Mutex::new(0u64);
            let inside = Arc::new(AtomicUsize::new(0));
            let hs: Vec<_> = (0..2 * procs)
                .map(|i| {
                    let (m, inside) = (m.clone(), inside.clone());
                    pcml::spawn_on(i % procs, move || {
                        for _ in 0..200 {
                            let mut g = if i % 2 == 0 {
                                m.lock()
                            } else {
                                select([m.lock_evt(), pcml::never()])
                            };
                            assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                            *g += 1;
                            if i % 3 == 0 {
                                pcml::yield_now();
                            }
                            inside.fetch_sub(1, Ordering::SeqCst);
                            drop(g);
                        }
                    })
                })
                .collect();
            hs.into_iter().for_each(|h| h.join().unwrap());
            assert_eq!(*m.lock(), 2 * procs as u64 * 200);
            assert!(!m.is_locked());
        });
    }
}

/// A semaphore of 3 permits shared by fibers on every proc: never more than 3 inside, and
/// every permit is back at the end.
#[test]
fn semaphore_never_gives_more_permits_than_it_has() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let s = Semaphore::new(3);
            let inside = Arc::new(AtomicUsize::new(0));
            let max = Arc::new(AtomicUsize::new(0));
            let hs: Vec<_> = (0..3 * procs)
                .map(|i| {
                    let (s, inside, max) = (s.clone(), inside.clone(), max.clone());
                    pcml::spawn_on(i % procs, move || {
                        for _ in 0..100 {
                            let permit = if i % 2 == 0 {
                                s.acquire()
                            } else {
                                select([s.acquire_evt(), pcml::never()])
                            };
                            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            max.fetch_max(now, Ordering::SeqCst);
                            assert!(now <= 3, "{now} holders of 3 permits");
                            pcml::yield_now();
                            inside.fetch_sub(1, Ordering::SeqCst);
                            drop(permit);
                        }
                    })
                })
                .collect();
            hs.into_iter().for_each(|h| h.join().unwrap());
            assert_eq!(s.available_permits(), 3);
            assert!(max.load(Ordering::SeqCst) >= 1);
        });
    }
}

/// A barrier of one party per proc, for many rounds: one leader a round, and nobody passes
/// a round before everyone has arrived at it.
#[test]
fn barrier_has_one_leader_a_round_across_procs() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let b = Barrier::new(procs);
            let arrived = Arc::new(AtomicUsize::new(0));
            let hs: Vec<_> = (0..procs)
                .map(|p| {
                    let (b, arrived) = (b.clone(), arrived.clone());
                    pcml::spawn_on(p, move || {
                        let mut led = 0;
                        for round in 0..100 {
                            arrived.fetch_add(1, Ordering::SeqCst);
                            let leader = if p % 2 == 0 {
                                b.wait()
                            } else {
                                select([b.wait_evt(), pcml::never()])
                            };
                            assert!(
                                arrived.load(Ordering::SeqCst) >= (round + 1) * procs,
                                "passed round {round} before everyone arrived"
                            );
                            led += usize::from(leader);
                        }
                        led
                    })
                })
                .collect();
            let leaders: usize = hs.into_iter().map(|h| h.join().unwrap()).sum();
            assert_eq!(leaders, 100);
        });
    }
}

/// A condition variable signalled from one proc wakes waiters on every proc.
#[test]
fn cvar_signal_wakes_waiters_on_every_proc() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let cv = CVar::new();
            let hs: Vec<_> = (0..2 * procs)
                .map(|i| {
                    let cv = cv.clone();
                    pcml::spawn_on(i % procs, move || {
                        if i % 2 == 0 {
                            cv.wait()
                        } else {
                            select([cv.wait_evt(), pcml::never()])
                        }
                    })
                })
                .collect();
            for _ in 0..20 {
                pcml::yield_now();
            }
            let c2 = cv.clone();
            pcml::spawn_on(procs - 1, move || c2.signal())
                .join()
                .unwrap();
            hs.into_iter().for_each(|h| h.join().unwrap());
            assert!(cv.is_signalled());
        });
    }
}
