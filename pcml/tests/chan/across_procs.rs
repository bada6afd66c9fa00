//! Channels with their parties placed on different procs (`spawn_on`), on runtimes of 2, 4 and
//! 8 procs: nothing lost or duplicated, FIFO per sender, a close wakes every blocked party
//! wherever it is, iteration ends, and the last handle's drop reaches choices on other procs.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::bounded_run;
use pcml::chan::{
    Receiver, RecvError, RecvTimeoutError, SendError, Sender, TryRecvError, bounded, channel,
    unbounded,
};
use pcml::event::{choose, select};
use pcml::time::timeout_evt;
use pcml::{BoundedChan, Chan, Mailbox, Multicast};

const PROCS: [usize; 3] = [2, 4, 8];

type Make = fn() -> (Sender<(usize, u64)>, Receiver<(usize, u64)>);

fn kinds() -> Vec<(&'static str, Make)> {
    vec![
        ("rendezvous", channel),
        ("bounded(0)", || bounded(0)),
        ("bounded(1)", || bounded(1)),
        ("bounded(7)", || bounded(7)),
        ("unbounded", unbounded),
    ]
}

/// N senders and K receivers on distinct procs; every message is received exactly once, and
/// each receiver sees each sender's messages in the order sent.
#[test]
fn n_senders_k_receivers_exactly_once_fifo_per_sender() {
    for procs in PROCS {
        for (kind, make) in kinds() {
            let (per_recv, total) = bounded_run(procs, move || {
                let (tx, rx) = make();
                const N: usize = 4;
                const M: u64 = 300;
                for s in 0..N {
                    let tx = tx.clone();
                    pcml::spawn_on(s % procs, move || {
                        for i in 0..M {
                            tx.send((s, i)).unwrap();
                        }
                    });
                }
                drop(tx);
                let receivers: Vec<_> = (0..3)
                    .map(|k| {
                        let rx = rx.clone();
                        pcml::spawn_on((k + 1) % procs, move || {
                            let mut last: HashMap<usize, u64> = HashMap::new();
                            let mut got = Vec::new();
                            for (s, i) in &rx {
                                if let Some(&prev) = last.get(&s) {
                                    assert!(i > prev, "sender {s}: {i} after {prev}");
                                }
                                last.insert(s, i);
                                got.push((s, i));
                            }
                            got
                        })
                    })
                    .collect();
                drop(rx);
                let mut all = Vec::new();
                let mut per_recv = Vec::new();
                for r in receivers {
                    let got = r.join().unwrap();
                    per_recv.push(got.len());
                    all.extend(got);
                }
                all.sort_unstable();
                let want: Vec<_> = (0..N).flat_map(|s| (0..M).map(move |i| (s, i))).collect();
                assert_eq!(all, want, "{kind} on {procs} procs");
                (per_recv, all.len())
            });
            assert_eq!(total, 1200, "{kind} on {procs} procs: {per_recv:?}");
        }
    }
}

/// Receivers blocked on several procs (plain recv, in a choice, and as an OS thread) all wake
/// when the last sender, on yet another proc, is dropped.
#[test]
fn last_sender_drop_wakes_receivers_on_every_proc() {
    for procs in PROCS {
        for (kind, make) in kinds() {
            bounded_run(procs, move || {
                let (tx, rx) = make();
                let woke = Arc::new(AtomicUsize::new(0));
                let (other_tx, other_rx) = unbounded::<(usize, u64)>();
                let mut hs = Vec::new();
                for p in 0..procs {
                    let (rx1, woke1) = (rx.clone(), woke.clone());
                    hs.push(pcml::spawn_on(p, move || {
                        assert_eq!(rx1.recv(), Err(RecvError));
                        woke1.fetch_add(1, Ordering::SeqCst);
                    }));
                    let (rx, woke, other_rx) = (rx.clone(), woke.clone(), other_rx.clone());
                    hs.push(pcml::spawn_on(p, move || {
                        let r = select([rx.recv_evt(), other_rx.recv_evt()]);
                        assert_eq!(r, Err(RecvError));
                        woke.fetch_add(1, Ordering::SeqCst);
                    }));
                }
                let t = {
                    let rx = rx.clone();
                    std::thread::spawn(move || rx.recv())
                };
                drop(rx);
                // Let them all block.
                for _ in 0..50 {
                    pcml::yield_now();
                }
                pcml::spawn_on(procs - 1, move || drop(tx)).join().unwrap();
                for h in hs {
                    h.join().unwrap();
                }
                assert_eq!(t.join().unwrap(), Err(RecvError), "{kind}");
                assert_eq!(woke.load(Ordering::SeqCst), 2 * procs, "{kind}");
                drop(other_tx);
            });
        }
    }
}

/// Senders blocked on several procs wake with their message back when the last receiver goes.
#[test]
fn last_receiver_drop_gives_senders_their_messages_back() {
    for procs in PROCS {
        for (kind, make) in kinds() {
            if kind == "unbounded" {
                continue;
            }
            bounded_run(procs, move || {
                let (tx, rx) = make();
                // Fill a bounded buffer so that the senders below block.
                let cap = tx.capacity().unwrap_or(0);
                for i in 0..cap {
                    tx.send((99, i as u64)).unwrap();
                }
                let mut hs = Vec::new();
                for p in 0..procs {
                    let tx1 = tx.clone();
                    hs.push(pcml::spawn_on(p, move || tx1.send((p, 1))));
                    let tx2 = tx.clone();
                    hs.push(pcml::spawn_on(p, move || {
                        select([
                            tx2.send_evt((p, 2)),
                            timeout_evt(Duration::from_secs(30))
                                .wrap(|()| panic!("the close did not reach the choice")),
                        ])
                    }));
                }
                for _ in 0..50 {
                    pcml::yield_now();
                }
                pcml::spawn_on(procs - 1, move || drop(rx)).join().unwrap();
                let mut back = Vec::new();
                for h in hs {
                    match h.join().unwrap() {
                        Err(SendError(m)) => back.push(m),
                        Ok(()) => panic!("{kind}: a send to a channel with no receiver succeeded"),
                    }
                }
                back.sort_unstable();
                let want: Vec<_> = (0..procs).flat_map(|p| [(p, 1), (p, 2)]).collect();
                assert_eq!(back, want, "{kind}");
                assert!(tx.is_closed());
            });
        }
    }
}

/// Every `Ok` send is received, every `Err` send comes back: a close in the middle of traffic
/// between procs loses nothing.
#[test]
fn close_mid_traffic_loses_nothing() {
    for procs in PROCS {
        for (kind, make) in kinds() {
            bounded_run(procs, move || {
                let (tx, rx) = make();
                let senders: Vec<_> = (0..4)
                    .map(|s| {
                        let tx = tx.clone();
                        pcml::spawn_on(s % procs, move || {
                            let (mut ok, mut back) = (0u64, 0u64);
                            for i in 0..500u64 {
                                match tx.send((s, i)) {
                                    Ok(()) => ok += 1,
                                    Err(SendError((s2, _))) => {
                                        assert_eq!(s2, s);
                                        back += 1;
                                    }
                                }
                            }
                            (ok, back)
                        })
                    })
                    .collect();
                let receivers: Vec<_> = (0..2)
                    .map(|k| {
                        let rx = rx.clone();
                        pcml::spawn_on((k + 1) % procs, move || rx.iter().count() as u64)
                    })
                    .collect();
                let closer = {
                    let rx = rx.clone();
                    pcml::spawn_on(procs - 1, move || {
                        // Take some, then close from the receiving side.
                        let mut n = 0u64;
                        while n < 300 && rx.recv().is_ok() {
                            n += 1;
                        }
                        assert!(rx.close() || rx.is_closed());
                        n + rx.iter().count() as u64
                    })
                };
                drop((tx, rx));
                let (mut ok, mut back) = (0, 0);
                for h in senders {
                    let (o, b) = h.join().unwrap();
                    ok += o;
                    back += b;
                }
                let mut received = closer.join().unwrap();
                for h in receivers {
                    received += h.join().unwrap();
                }
                assert_eq!(ok + back, 2000, "{kind}");
                assert_eq!(
                    received, ok,
                    "{kind} on {procs} procs: ok {ok}, back {back}"
                );
            });
        }
    }
}

/// `try_recv`, `recv_timeout` across procs: empty, then the value, then disconnected.
#[test]
fn try_recv_and_recv_timeout_across_procs() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let (tx, rx) = bounded::<u32>(1);
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
            assert_eq!(
                rx.recv_timeout(Duration::from_millis(5)),
                Err(RecvTimeoutError::Timeout)
            );
            let h = pcml::spawn_on(procs - 1, move || {
                tx.send(7).unwrap();
                tx.send(8).unwrap();
            });
            assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok(7));
            assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok(8));
            h.join().unwrap();
            assert_eq!(
                rx.recv_timeout(Duration::from_secs(30)),
                Err(RecvTimeoutError::Disconnected)
            );
            assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        });
    }
}

/// A receiver blocked in `recv_timeout` on one proc wakes at the close from another, before
/// its timeout.
#[test]
fn recv_timeout_wakes_on_close_from_another_proc() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let (tx, rx) = channel::<u32>();
            let h = pcml::spawn_on(1, move || rx.recv_timeout(Duration::from_secs(3600)));
            for _ in 0..20 {
                pcml::yield_now();
            }
            pcml::spawn_on(procs - 1, move || assert!(tx.close()))
                .join()
                .unwrap();
            assert_eq!(h.join().unwrap(), Err(RecvTimeoutError::Disconnected));
        });
    }
}

/// Plain `Chan` and `BoundedChan`/`Mailbox` handles: a sum over senders and receivers on
/// different procs, with receivers counting and a sentinel per receiver.
#[test]
fn plain_handles_sum_across_procs() {
    for procs in PROCS {
        bounded_run(procs, move || {
            fn check<S, R>(procs: usize, send: S, recv: R)
            where
                S: Fn(Option<u64>) + Clone + Send + 'static,
                R: Fn() -> Option<u64> + Clone + Send + 'static,
            {
                let senders: Vec<_> = (0..4u64)
                    .map(|s| {
                        let send = send.clone();
                        pcml::spawn_on(s as usize % procs, move || {
                            for i in 0..250 {
                                send(Some(s * 1000 + i));
                            }
                        })
                    })
                    .collect();
                let receivers: Vec<_> = (0..3)
                    .map(|k| {
                        let recv = recv.clone();
                        pcml::spawn_on((k + 1) % procs, move || {
                            let (mut n, mut sum) = (0u64, 0u64);
                            while let Some(v) = recv() {
                                n += 1;
                                sum += v;
                            }
                            (n, sum)
                        })
                    })
                    .collect();
                for s in senders {
                    s.join().unwrap();
                }
                for _ in 0..3 {
                    send(None);
                }
                let (mut n, mut sum) = (0, 0);
                for r in receivers {
                    let (a, b) = r.join().unwrap();
                    n += a;
                    sum += b;
                }
                let want: u64 = (0..4u64)
                    .flat_map(|s| (0..250).map(move |i| s * 1000 + i))
                    .sum();
                assert_eq!((n, sum), (1000, want));
            }
            let ch = Chan::new();
            let c2 = ch.clone();
            check(procs, move |v| ch.send(v), move || c2.recv());
            let ch = BoundedChan::new(3);
            let c2 = ch.clone();
            check(procs, move |v| ch.send(v), move || c2.recv());
            let mb = Mailbox::new();
            let m2 = mb.clone();
            check(procs, move |v| mb.send(v), move || m2.recv());
        });
    }
}

/// Multicast: every port, each read on its own proc, sees every message in order.
#[test]
fn multicast_ports_on_every_proc_see_everything_in_order() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let mc = Multicast::new();
            let readers: Vec<_> = (0..procs)
                .map(|p| {
                    let port = mc.port();
                    pcml::spawn_on(p, move || {
                        (0..500).map(|_| port.recv()).collect::<Vec<u32>>()
                    })
                })
                .collect();
            let m2 = mc.clone();
            pcml::spawn_on(procs - 1, move || (0..500).for_each(|i| m2.send(i)))
                .join()
                .unwrap();
            for r in readers {
                assert_eq!(r.join().unwrap(), (0..500).collect::<Vec<_>>());
            }
        });
    }
}

/// Multicast close: ports blocked on other procs stop iterating once what was sent is read.
#[test]
fn multicast_close_ends_iteration_on_every_proc() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let mc = Multicast::new();
            let readers: Vec<_> = (0..procs)
                .map(|p| {
                    let port = mc.port();
                    pcml::spawn_on(p, move || port.iter().collect::<Vec<u32>>())
                })
                .collect();
            for i in 0..10 {
                mc.send(i);
            }
            for _ in 0..20 {
                pcml::yield_now();
            }
            let m2 = mc.clone();
            pcml::spawn_on(procs - 1, move || assert!(m2.close()))
                .join()
                .unwrap();
            for r in readers {
                assert_eq!(r.join().unwrap(), (0..10).collect::<Vec<_>>());
            }
        });
    }
}

/// RPC: clients on every proc, servers on two procs; every call gets its own answer.
#[test]
fn rpc_calls_from_every_proc_get_their_own_answers() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let (client, server) = pcml::rpc::channel::<u64, u64>();
            let served = Arc::new(AtomicUsize::new(0));
            for p in 0..2 {
                let (server, served) = (server.clone(), served.clone());
                pcml::spawn_on(p % procs, move || {
                    loop {
                        if server.serve(|n| n * 3 + 1) {
                            served.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                });
            }
            let callers: Vec<_> = (0..procs)
                .map(|p| {
                    let client = client.clone();
                    pcml::spawn_on(p, move || {
                        for i in 0..200u64 {
                            let n = p as u64 * 10_000 + i;
                            assert_eq!(client.call(n), n * 3 + 1);
                        }
                    })
                })
                .collect();
            for c in callers {
                c.join().unwrap();
            }
            // A server counts its call after the reply, so after the caller may have seen it.
            while served.load(Ordering::SeqCst) < procs * 200 {
                pcml::yield_now();
            }
            assert_eq!(served.load(Ordering::SeqCst), procs * 200);
        });
    }
}

/// RPC calls raced against a timeout from another proc: a call that times out gets no
/// answer, and the server's reply to it reports the caller gone (the `with_nack` promise).
#[test]
fn rpc_call_that_loses_to_a_timeout_is_dropped() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let (client, server) = pcml::rpc::channel::<u64, u64>();
            let h = pcml::spawn_on(procs - 1, move || {
                select([
                    client.call_evt(1).wrap(Some),
                    timeout_evt(Duration::from_millis(1)).wrap(|()| None),
                ])
            });
            // The server takes the request only after the call has given up.
            assert_eq!(h.join().unwrap(), None);
            if let Some((req, reply)) = server.try_recv() {
                assert_eq!(req, 1);
                assert!(!reply.send(2), "a reply to a call that timed out was taken");
            }
        });
    }
}

/// A choice over many channels on one proc, fed from many procs, commits exactly one branch
/// a message: counts add up, no message is taken twice.
#[test]
fn choice_over_channels_fed_from_other_procs() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let chans: Vec<Chan<u64>> = (0..4).map(|_| Chan::new()).collect();
            for (c, ch) in chans.iter().enumerate() {
                let ch = ch.clone();
                pcml::spawn_on((c + 1) % procs, move || {
                    for i in 0..250 {
                        ch.send(c as u64 * 1000 + i);
                    }
                });
            }
            let mut counts = [0usize; 4];
            let mut seen = std::collections::HashSet::new();
            for _ in 0..1000 {
                let (c, v) = choose(
                    chans
                        .iter()
                        .enumerate()
                        .map(|(c, ch)| ch.recv_evt().wrap(move |v| (c, v))),
                )
                .sync();
                assert_eq!(v / 1000, c as u64);
                assert!(seen.insert(v), "{v} received twice");
                counts[c] += 1;
            }
            assert_eq!(counts, [250; 4]);
        });
    }
}

/// A message counted by its drops.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Every message is dropped exactly once, whether received on another proc, given back by a
/// failed send, or left buffered when the last handles go (crossbeam's `drops`).
#[test]
fn every_message_is_dropped_exactly_once() {
    for procs in PROCS {
        for cap in [0usize, 1, 5, 100] {
            bounded_run(procs, move || {
                let drops = Arc::new(AtomicUsize::new(0));
                let (tx, rx) = bounded::<Counted>(cap);
                let senders: Vec<_> = (0..3)
                    .map(|s| {
                        let (tx, drops) = (tx.clone(), drops.clone());
                        pcml::spawn_on(s % procs, move || {
                            let mut made = 0;
                            for _ in 0..200 {
                                made += 1;
                                // Full and timed out, or closed: dropping the error drops it.
                                let _ = tx
                                    .send_timeout(Counted(drops.clone()), Duration::from_millis(1));
                            }
                            made
                        })
                    })
                    .collect();
                let receiver = pcml::spawn_on(procs - 1, move || {
                    for _ in 0..150 {
                        if rx.recv_timeout(Duration::from_millis(1)).is_err() {
                            break;
                        }
                    }
                    // Dropping `rx` leaves what is buffered to the channel's drop.
                });
                drop(tx);
                let made: usize = senders.into_iter().map(|h| h.join().unwrap()).sum();
                receiver.join().unwrap();
                assert_eq!(drops.load(Ordering::SeqCst), made, "capacity {cap}");
            });
        }
    }
}

/// A send that returned `Ok` on one proc is visible to `try_recv` and to a `select!`
/// with `default` on another proc at once (Go's non-blocking receive race).
#[test]
fn a_completed_send_is_seen_by_a_nonblocking_receive_elsewhere() {
    for procs in PROCS {
        bounded_run(procs, move || {
            for i in 0..300u32 {
                let (tx, rx) = bounded::<u32>(1);
                pcml::spawn_on((i as usize % (procs - 1)) + 1, move || tx.send(i).unwrap())
                    .join()
                    .unwrap();
                if i % 2 == 0 {
                    assert_eq!(rx.try_recv(), Ok(i));
                } else {
                    let got = pcml::select! {
                        recv(rx) -> v => v.ok(),
                        default => None,
                    };
                    assert_eq!(got, Some(i));
                }
                assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
            }
        });
    }
}

/// One channel in two arms of one choice, fed from another proc: each message is taken once.
#[test]
fn a_channel_twice_in_one_choice() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let ch = Chan::<u32>::new();
            let c2 = ch.clone();
            pcml::spawn_on(procs - 1, move || (0..500).for_each(|i| c2.send(i)));
            let mut arms = [0usize; 3];
            let mut got = Vec::new();
            for _ in 0..500 {
                let (arm, v) = select([
                    ch.recv_evt().wrap(|v| (0, v)),
                    ch.recv_evt().wrap(|v| (1, v)),
                    ch.recv_evt().wrap(|v| (2, v)),
                ]);
                arms[arm] += 1;
                got.push(v);
            }
            assert_eq!(got, (0..500).collect::<Vec<_>>());
            assert!(arms.iter().all(|&n| n > 0), "an arm never won: {arms:?}");
        });
    }
}

/// `len` of a bounded channel never exceeds its capacity while senders and receivers on
/// other procs race.
#[test]
fn bounded_len_stays_within_capacity() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let (tx, rx) = bounded::<u32>(3);
            let s = {
                let tx = tx.clone();
                pcml::spawn_on(1, move || (0..2000).for_each(|i| tx.send(i).unwrap()))
            };
            let r = {
                let rx = rx.clone();
                pcml::spawn_on(procs - 1, move || {
                    (0..2000).for_each(|_| assert!(rx.recv().is_ok()))
                })
            };
            while !s.is_finished() || !r.is_finished() {
                assert!(rx.len() <= 3, "len {} of a channel of 3", rx.len());
                assert!(tx.len() <= 3);
                pcml::yield_now();
            }
            s.join().unwrap();
            r.join().unwrap();
            assert_eq!(rx.len(), 0);
        });
    }
}

/// Waits until the thread `id` is blocked (as a dump shows it).
fn wait_blocked(id: pcml::ThreadId) {
    let mut spins = 0;
    while !pcml::dump()
        .unwrap()
        .threads()
        .iter()
        .any(|t| t.id() == Some(id) && t.state() == pcml::ThreadState::Blocked)
    {
        pcml::yield_now();
        spins += 1;
        assert!(spins < 100_000, "{id:?} never blocked");
    }
}

/// On a rendezvous channel, the non-blocking operations and zero or past timeouts complete
/// with a partner already blocked on another proc (as crossbeam's do), and fail without one.
#[test]
fn nonblocking_operations_meet_a_partner_blocked_on_another_proc() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let (tx, rx) = channel::<u32>();
            assert!(tx.try_send(0).unwrap_err().is_full());
            assert!(tx.send_timeout(0, Duration::ZERO).unwrap_err().is_timeout());
            assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));

            let r = {
                let rx = rx.clone();
                pcml::spawn_on(procs - 1, move || rx.recv())
            };
            wait_blocked(r.id());
            tx.try_send(1).unwrap();
            assert_eq!(r.join().unwrap(), Ok(1));

            let r = {
                let rx = rx.clone();
                pcml::spawn_on(1, move || rx.recv())
            };
            wait_blocked(r.id());
            tx.send_timeout(2, Duration::ZERO).unwrap();
            assert_eq!(r.join().unwrap(), Ok(2));

            let r = {
                let rx = rx.clone();
                pcml::spawn_on(procs - 1, move || rx.recv())
            };
            wait_blocked(r.id());
            let past = std::time::Instant::now() - Duration::from_secs(1);
            tx.send_deadline(3, past).unwrap();
            assert_eq!(r.join().unwrap(), Ok(3));

            let s = {
                let tx = tx.clone();
                pcml::spawn_on(procs - 1, move || tx.send(4))
            };
            wait_blocked(s.id());
            assert_eq!(rx.try_recv(), Ok(4));
            s.join().unwrap().unwrap();

            let s = {
                let tx = tx.clone();
                pcml::spawn_on(1, move || tx.send(5))
            };
            wait_blocked(s.id());
            assert_eq!(rx.recv_timeout(Duration::ZERO), Ok(5));
            s.join().unwrap().unwrap();
            assert_eq!(rx.recv_deadline(past), Err(RecvTimeoutError::Timeout));
        });
    }
}

/// Timers made on one proc and waited on from another, and a ticker shared by fibers on
/// every proc: each tick is taken by one of them.
#[test]
fn timers_made_on_one_proc_are_waited_on_from_others() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let a = pcml::time::after(Duration::from_millis(3));
            let deadline = a.deadline();
            let h = pcml::spawn_on(procs - 1, move || a.recv());
            let fired = h.join().unwrap();
            assert!(fired >= deadline);
            assert!(std::time::Instant::now() >= deadline);

            let t = Arc::new(pcml::time::tick(Duration::from_millis(1)));
            let taken = Arc::new(AtomicUsize::new(0));
            let hs: Vec<_> = (0..procs)
                .map(|p| {
                    let (t, taken) = (t.clone(), taken.clone());
                    pcml::spawn_on(p, move || {
                        for _ in 0..5 {
                            t.recv();
                            taken.fetch_add(1, Ordering::SeqCst);
                        }
                    })
                })
                .collect();
            hs.into_iter().for_each(|h| h.join().unwrap());
            assert_eq!(taken.load(Ordering::SeqCst), 5 * procs);
        });
    }
}

/// Plain `Chan` operations blocked on other procs when the channel is closed do not wait for
/// ever: they panic with a message that points to the halves, and the runtime goes on.
#[test]
fn plain_operations_blocked_on_other_procs_end_at_a_close() {
    for procs in PROCS {
        bounded_run(procs, move || {
            let ch = Chan::<u32>::new();
            let mut hs = Vec::new();
            for p in 0..procs {
                let c = ch.clone();
                hs.push(pcml::spawn_on(p, move || {
                    c.recv();
                }));
                let c = ch.clone();
                hs.push(pcml::spawn_on(p, move || {
                    select([c.recv_evt(), pcml::never()]);
                }));
            }
            for h in &hs {
                wait_blocked(h.id());
            }
            pcml::spawn_on(procs - 1, move || assert!(ch.close()))
                .join()
                .unwrap();
            for h in hs {
                let e = h.join().unwrap_err();
                let msg = e.panic_message().unwrap_or_default().to_string();
                assert!(msg.contains("closed"), "{msg}");
            }
            assert_eq!(pcml::spawn_on(procs - 1, || 1).join().unwrap(), 1);
        });
    }
}
