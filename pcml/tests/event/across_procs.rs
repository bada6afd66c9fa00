//! Events with their partners placed on other procs (`spawn_on`), on runtimes of 2, 4 and 8
//! procs: exactly one branch commits, nacks fire exactly for the losers, wrappers and guards
//! run once, choice stays fair, timeouts work wherever the parties are.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::bounded_run;
use pcml::chan::Chan;
use pcml::event::{Event, always, choose, guard, never, select, with_nack};
use pcml::time::timeout_evt;
use pcml::{BoundedChan, Mailbox};

const PROCS: [usize; 3] = [2, 4, 8];

/// The nacks of one sync's branches, by branch.
type Nacks = Arc<Mutex<Vec<(char, Event<()>)>>>;

/// A receiver's choice between two channels fed from other procs: for each sync, the nack of
/// the losing branch fires, the winner's never does.
#[test]
fn nack_fires_exactly_when_its_branch_loses_across_procs() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let (a, b) = (Chan::<u32>::new(), Chan::<u32>::new());
            const N: u32 = 400;
            {
                let a = a.clone();
                pcml::spawn_on(1 % procs, move || (0..N).for_each(|i| a.send(i)));
            }
            {
                let b = b.clone();
                pcml::spawn_on((procs - 1).max(1) % procs, move || {
                    (0..N).for_each(|i| b.send(i))
                });
            }
            let (mut won_a, mut won_b) = (0, 0);
            for _ in 0..2 * N {
                let nacks: Nacks = Arc::default();
                let (na, nb) = (nacks.clone(), nacks.clone());
                let (a2, b2) = (a.clone(), b.clone());
                let won = select([
                    with_nack(move |nack| {
                        na.lock().unwrap().push(('a', nack));
                        a2.recv_evt().wrap(|_| 'a')
                    }),
                    with_nack(move |nack| {
                        nb.lock().unwrap().push(('b', nack));
                        b2.recv_evt().wrap(|_| 'b')
                    }),
                ]);
                let nacks = std::mem::take(&mut *nacks.lock().unwrap());
                assert_eq!(nacks.len(), 2);
                for (who, nack) in nacks {
                    if who == won {
                        assert_eq!(nack.poll(), None, "the winner's nack fired");
                    } else {
                        assert_eq!(
                            nack.sync_timeout(Duration::from_secs(30)),
                            Some(()),
                            "the loser's nack did not fire"
                        );
                    }
                }
                match won {
                    'a' => won_a += 1,
                    _ => won_b += 1,
                }
            }
            assert_eq!((won_a, won_b), (N, N));
        });
    }
}

/// Senders on every proc each offer one message on two channels at once; the two receivers
/// together get exactly one message per sender, and each sender's sync reports the branch
/// that the receiver saw.
#[test]
fn exactly_one_branch_commits_under_contention() {
    for procs in PROCS {
        bounded_run(procs, move || {
            for round in 0..50u32 {
                let (c1, c2) = (Chan::<(usize, u32)>::new(), Chan::<(usize, u32)>::new());
                let parties = 8;
                let senders: Vec<_> = (0..parties)
                    .map(|s| {
                        let (c1, c2) = (c1.clone(), c2.clone());
                        pcml::spawn_on(s % procs, move || {
                            select([
                                c1.send_evt((s, round)).wrap(|()| 1),
                                c2.send_evt((s, round)).wrap(|()| 2),
                            ])
                        })
                    })
                    .collect();
                let done = Chan::<()>::new();
                let rx = |c: Chan<(usize, u32)>, p: usize| {
                    let done = done.clone();
                    pcml::spawn_on(p, move || {
                        let mut got = Vec::new();
                        loop {
                            match select([c.recv_evt().wrap(Some), done.recv_evt().wrap(|()| None)])
                            {
                                Some(m) => got.push(m),
                                None => return got,
                            }
                        }
                    })
                };
                let r1 = rx(c1.clone(), (procs - 1) % procs);
                let r2 = rx(c2.clone(), (procs / 2) % procs);
                let said: Vec<u32> = senders.into_iter().map(|h| h.join().unwrap()).collect();
                done.send(());
                done.send(());
                let (g1, g2) = (r1.join().unwrap(), r2.join().unwrap());
                let mut seen = HashSet::new();
                for &(s, r) in g1.iter() {
                    assert_eq!(r, round);
                    assert!(seen.insert(s), "sender {s} committed twice");
                    assert_eq!(said[s], 1);
                }
                for &(s, r) in g2.iter() {
                    assert_eq!(r, round);
                    assert!(seen.insert(s), "sender {s} committed twice");
                    assert_eq!(said[s], 2);
                }
                assert_eq!(seen.len(), parties);
            }
        });
    }
}

/// Parties on several procs each choose between sending and receiving on one channel (CML's
/// swap without a partner channel): they pair up, nobody matches itself, and every sent value
/// is received once.
#[test]
fn send_or_receive_on_one_channel_pairs_distinct_parties() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let ch = Chan::<usize>::new();
            let parties = 8;
            let hs: Vec<_> = (0..parties)
                .map(|p| {
                    let ch = ch.clone();
                    pcml::spawn_on(p % procs, move || {
                        let mut log = Vec::new();
                        for _ in 0..100 {
                            // The last party may be left with nobody to pair with.
                            let Some(r) =
                                choose([ch.send_evt(p).wrap(|()| None), ch.recv_evt().wrap(Some)])
                                    .sync_timeout(Duration::from_millis(200))
                            else {
                                break;
                            };
                            if let Some(from) = r {
                                assert_ne!(from, p, "party {p} received its own offer");
                            }
                            log.push(r);
                        }
                        log
                    })
                })
                .collect();
            let logs: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            let sent = logs.iter().flatten().filter(|r| r.is_none()).count();
            let recvd = logs.iter().flatten().filter(|r| r.is_some()).count();
            assert_eq!(sent, recvd);
            assert!(sent + recvd >= parties * 100 - 100);
        });
    }
}

/// Wrappers of the winning branch run once, those of the losers never; guards run once a sync,
/// on the syncing fiber's proc.
#[test]
fn wrap_and_guard_run_once_per_sync() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let chans: Vec<BoundedChan<u32>> = (0..4).map(|_| BoundedChan::new(4)).collect();
            for (i, c) in chans.iter().enumerate() {
                let c = c.clone();
                pcml::spawn_on(i % procs, move || (0..200).for_each(|v| c.send(v)));
            }
            let wraps = Arc::new(AtomicUsize::new(0));
            let guards = Arc::new(AtomicUsize::new(0));
            let me = pcml::current_proc();
            for n in 0..800 {
                let evs = chans.iter().map(|c| {
                    let (c, wraps, guards) = (c.clone(), wraps.clone(), guards.clone());
                    guard(move || {
                        assert_eq!(pcml::current_proc(), me, "a guard ran elsewhere");
                        guards.fetch_add(1, Ordering::SeqCst);
                        c.recv_evt().wrap(move |v| {
                            wraps.fetch_add(1, Ordering::SeqCst);
                            v
                        })
                    })
                });
                select(evs);
                assert_eq!(wraps.load(Ordering::SeqCst), n + 1);
                assert_eq!(guards.load(Ordering::SeqCst), 4 * (n + 1));
            }
        });
    }
}

/// Always-ready branches (buffered mailboxes filled from other procs): each of four gets at
/// least a quarter of its fair share.
#[test]
fn choice_between_ready_branches_is_fair() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let boxes: Vec<Mailbox<usize>> = (0..4).map(|_| Mailbox::new()).collect();
            let fills: Vec<_> = boxes
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    let b = b.clone();
                    pcml::spawn_on(i % procs, move || (0..2000).for_each(|_| b.send(i)))
                })
                .collect();
            for f in fills {
                f.join().unwrap();
            }
            let mut counts = [0usize; 4];
            for _ in 0..2000 {
                counts[select(boxes.iter().map(|b| b.recv_evt()))] += 1;
            }
            for c in counts {
                assert!(c >= 2000 / 4 / 4, "unfair: {counts:?}");
            }
            // And `always` against a ready channel event.
            let mut hits = [0usize; 2];
            for _ in 0..2000 {
                hits[select([always(0), boxes[0].recv_evt().wrap(|_| 1)])] += 1;
            }
            assert!(hits[0] >= 250 && hits[1] >= 250, "unfair: {hits:?}");
        });
    }
}

/// `select!` arms borrow and mutate locals while the senders run on other procs; a
/// `default(d)` arm fires once they are all done.
#[test]
fn select_macro_with_borrowing_arms_across_procs() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let (nums, words) = (Chan::<u64>::new(), Chan::<String>::new());
            {
                let nums = nums.clone();
                pcml::spawn_on(procs - 1, move || (1..=100).for_each(|i| nums.send(i)));
            }
            {
                let words = words.clone();
                pcml::spawn_on(1, move || (0..10).for_each(|i| words.send(format!("w{i}"))));
            }
            let mut total = 0u64;
            let mut seen: Vec<String> = Vec::new();
            let mut timeouts = 0;
            loop {
                pcml::select! {
                    recv(nums) -> x => total += x,
                    recv(words) -> w => seen.push(w),
                    default(Duration::from_millis(300)) => {
                        timeouts += 1;
                        if total == 5050 && seen.len() == 10 {
                            break;
                        }
                        assert!(timeouts < 100, "nothing arrived");
                    }
                }
            }
            assert_eq!(seen, (0..10).map(|i| format!("w{i}")).collect::<Vec<_>>());
        });
    }
}

/// `sync_timeout` and timer events from fibers on every proc: a never-ready event times out,
/// one made ready from another proc does not; a choice of timer and channel commits once.
#[test]
fn timeouts_on_every_proc() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let hs: Vec<_> = (0..procs)
                .map(|p| {
                    pcml::spawn_on(p, move || {
                        assert_eq!(never::<u32>().sync_timeout(Duration::from_millis(5)), None);
                        let ch = Chan::<u32>::new();
                        let c2 = ch.clone();
                        pcml::spawn_on((p + 1) % pcml::procs(), move || c2.send(p as u32));
                        assert_eq!(
                            ch.recv_evt().sync_timeout(Duration::from_secs(30)),
                            Some(p as u32)
                        );
                        // A timer that fires while a sender is blocked on another proc: the
                        // sender's message is not lost, the timer branch is taken once.
                        let ch = Chan::<u32>::new();
                        let c2 = ch.clone();
                        let sender = pcml::spawn_on((p + 1) % pcml::procs(), move || {
                            c2.send_evt(1)
                                .sync_timeout(Duration::from_millis(20))
                                .is_some()
                        });
                        let r = select([
                            timeout_evt(Duration::from_millis(10)).wrap(|()| None),
                            ch.recv_evt().wrap(Some),
                        ]);
                        let sent = sender.join().unwrap();
                        match r {
                            Some(v) => assert!(sent && v == 1),
                            None => {
                                // The receive lost; the send may have found nobody.
                                if sent {
                                    panic!("a send committed with a receiver that timed out");
                                }
                            }
                        }
                        let a = pcml::time::after(Duration::from_millis(2));
                        a.recv();
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
        });
    }
}

/// A choice abandoned when its `sync_timeout` expires fires its nack, seen from another proc.
#[test]
fn nack_fires_when_a_sync_is_abandoned_by_a_timeout() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let slot: Arc<Mutex<Option<Event<()>>>> = Arc::default();
            let s = slot.clone();
            let h = pcml::spawn_on(procs - 1, move || {
                choose([with_nack(move |nack| {
                    *s.lock().unwrap() = Some(nack);
                    never::<()>()
                })])
                .sync_timeout(Duration::from_millis(5))
            });
            assert_eq!(h.join().unwrap(), None);
            let nack = slot.lock().unwrap().take().unwrap();
            assert_eq!(nack.sync_timeout(Duration::from_secs(30)), Some(()));
        });
    }
}

/// A fiber aborted while blocked in a choice with nacks: its nacks fire (the sync is
/// abandoned), seen from a fiber on another proc.
#[test]
fn abort_of_a_fiber_blocked_in_a_choice_fires_its_nacks() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let nacked = Chan::<usize>::new();
            let started = Chan::<()>::new();
            let victim = {
                let (nacked, started) = (nacked.clone(), started.clone());
                pcml::spawn_on(procs - 1, move || {
                    let evs = (0..3).map(|i| {
                        let nacked = nacked.clone();
                        with_nack(move |nack| {
                            pcml::spawn(move || {
                                nack.sync();
                                nacked.send(i);
                            });
                            never::<()>()
                        })
                    });
                    let started = started.clone();
                    select(evs.chain([guard(move || {
                        started.send(());
                        never()
                    })]));
                })
            };
            started.recv();
            victim.abort();
            assert!(victim.join().unwrap_err().is_cancelled());
            let mut got: Vec<usize> = (0..3)
                .map(|_| {
                    nacked
                        .recv_evt()
                        .sync_timeout(Duration::from_secs(30))
                        .expect("a nack of an aborted sync did not fire")
                })
                .collect();
            got.sort_unstable();
            assert_eq!(got, [0, 1, 2]);
        });
    }
}

/// Async tasks spawned from every proc choose (`select_async!`) between channels fed by
/// fibers on other procs: every message is taken once, and the tasks' nacks fire for the
/// losers only.
#[test]
fn tasks_choosing_across_procs_take_every_message_once() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let (a_tx, a_rx) = pcml::chan::bounded::<u64>(2);
            let (b_tx, b_rx) = pcml::chan::channel::<u64>();
            for (i, tx) in [a_tx, b_tx].into_iter().enumerate() {
                pcml::spawn_on((i + 1) % procs, move || {
                    for v in 0..500 {
                        tx.send(i as u64 * 1000 + v).unwrap();
                    }
                });
            }
            let tasks: Vec<_> = (0..procs)
                .map(|p| {
                    let (a, b) = (a_rx.clone(), b_rx.clone());
                    pcml::spawn_on(p, move || {
                        pcml::spawn_task(async move {
                            let mut got = Vec::new();
                            let (mut a_open, mut b_open) = (true, true);
                            while a_open || b_open {
                                pcml::select_async! {
                                    recv(a) -> v => match v {
                                        Ok(v) => got.push(v),
                                        Err(_) => a_open = false,
                                    },
                                    recv(b) -> v => match v {
                                        Ok(v) => got.push(v),
                                        Err(_) => b_open = false,
                                    },
                                    default(Duration::from_secs(30)) => panic!("stuck"),
                                }
                            }
                            got
                        })
                    })
                    .join()
                    .unwrap()
                })
                .collect();
            drop((a_rx, b_rx));
            let mut all: Vec<u64> = tasks.into_iter().flat_map(|t| t.join().unwrap()).collect();
            all.sort_unstable();
            let want: Vec<u64> = (0..2u64)
                .flat_map(|i| (0..500).map(move |v| i * 1000 + v))
                .collect();
            assert_eq!(all, want);
        });
    }
}

/// A `select!` sending on a channel that a receiver on another proc closes: the send arm
/// sees the close and gets its message back; nothing sent before the close is lost.
#[test]
fn select_send_arm_sees_a_close_from_another_proc() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let (tx, rx) = pcml::chan::bounded::<u32>(4);
            let receiver = pcml::spawn_on(procs - 1, move || {
                let got: Vec<u32> = (0..50).map(|_| rx.recv().unwrap()).collect();
                rx.close();
                got.len() + rx.iter().count()
            });
            let other = Chan::<u32>::new();
            let mut sent = 0;
            let back;
            let mut i = 0;
            loop {
                pcml::select! {
                    send(tx, i) -> r => match r {
                        Ok(()) => sent += 1,
                        Err(e) => {
                            back = e.into_inner();
                            break;
                        }
                    },
                    recv(other) -> _ => unreachable!(),
                }
                i += 1;
            }
            assert_eq!(back, i);
            assert_eq!(receiver.join().unwrap(), sent as usize);
        });
    }
}

/// A sync abandoned because a later guard panics fires the nacks of the branches already
/// made, and the panic comes back through the join on another proc.
#[test]
fn a_panicking_guard_abandons_the_sync_and_fires_earlier_nacks() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let slot: Arc<Mutex<Option<Event<()>>>> = Arc::default();
            let s = slot.clone();
            let ch = Chan::<u32>::new();
            let c2 = ch.clone();
            let h = pcml::spawn_on(procs - 1, move || {
                select([
                    with_nack(move |nack| {
                        *s.lock().unwrap() = Some(nack);
                        c2.recv_evt()
                    }),
                    guard(|| panic!("guard failed")),
                ])
            });
            let e = h.join().unwrap_err();
            assert_eq!(e.panic_message(), Some("guard failed"));
            let nack = slot.lock().unwrap().take().expect("the with_nack ran");
            assert_eq!(nack.sync_timeout(Duration::from_secs(30)), Some(()));
            // The abandoned receive took nothing: a send finds no partner.
            assert!(ch.send_evt(1).poll().is_none());
        });
    }
}
