//! Closing channels, and the idioms that rely on it: worker pools that end with `for job in
//! &jobs`, fan-ins that end when every producer is gone, close waking blocked fibers, OS
//! threads and tasks, choices that see a closed channel, and nothing lost on the way.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use pcml::chan::{
    Chan, Receiver, RecvError, RecvTimeoutError, SendError, Sender, TryRecvError, TrySendError,
    bounded, channel, unbounded,
};
use pcml::event::select;

fn rt(procs: usize) -> pcml::Runtime {
    pcml::Runtime::builder().procs(procs).build().unwrap()
}

/// Makes a channel's two halves.
type Make<T> = fn() -> (Sender<T>, Receiver<T>);

/// The kinds of channel that have `Sender`/`Receiver` halves.
fn kinds<T: Send + 'static>() -> Vec<(&'static str, Make<T>)> {
    vec![
        ("rendezvous", channel::<T>),
        ("bounded(0)", || bounded::<T>(0)),
        ("bounded(1)", || bounded::<T>(1)),
        ("bounded(3)", || bounded::<T>(3)),
        ("unbounded", unbounded::<T>),
    ]
}

#[test]
fn worker_pool_for_job_in_jobs() {
    for (kind, make) in kinds::<u64>() {
        rt(2)
            .block_on(move || {
                let (jobs_tx, jobs) = make();
                let (done_tx, done) = make();
                let workers: Vec<_> = (0..4)
                    .map(|_| {
                        let (jobs, done_tx) = (jobs.clone(), done_tx.clone());
                        pcml::spawn(move || {
                            let mut n = 0;
                            for job in &jobs {
                                done_tx.send(job * 10).unwrap();
                                n += 1;
                            }
                            n
                        })
                    })
                    .collect();
                drop((jobs, done_tx));
                pcml::spawn(move || {
                    for j in 0..1000 {
                        jobs_tx.send(j).unwrap();
                    }
                });
                let mut got: Vec<u64> = done.iter().collect();
                got.sort_unstable();
                assert_eq!(got, (0..1000).map(|j| j * 10).collect::<Vec<_>>(), "{kind}");
                let per_worker: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
                assert_eq!(per_worker, 1000, "{kind}");
            })
            .unwrap();
    }
}

#[test]
fn worker_pool_on_os_threads() {
    for (kind, make) in kinds::<u32>() {
        let (jobs_tx, jobs) = make();
        let (done_tx, done) = make();
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let (jobs, done_tx) = (jobs.clone(), done_tx.clone());
                std::thread::spawn(move || {
                    for job in jobs {
                        done_tx.send(job + 1).unwrap();
                    }
                })
            })
            .collect();
        drop((jobs, done_tx));
        let feeder = std::thread::spawn(move || {
            for j in 0..300 {
                jobs_tx.send(j).unwrap();
            }
        });
        assert_eq!(
            done.iter().map(u64::from).sum::<u64>(),
            (1..=300).sum(),
            "{kind}"
        );
        feeder.join().unwrap();
        workers.into_iter().for_each(|w| w.join().unwrap());
    }
}

#[test]
fn fan_in_ends_when_every_producer_is_gone() {
    for (kind, make) in kinds::<(usize, usize)>() {
        rt(2)
            .block_on(move || {
                let (tx, rx) = make();
                for p in 0..5 {
                    let tx = tx.clone();
                    pcml::spawn(move || {
                        for i in 0..100 {
                            tx.send((p, i)).unwrap();
                        }
                    });
                }
                drop(tx);
                let mut last = [None; 5];
                let mut n = 0;
                for (p, i) in &rx {
                    // One producer's messages arrive in its order.
                    assert!(last[p].is_none_or(|l| l < i), "{kind}");
                    last[p] = Some(i);
                    n += 1;
                }
                assert_eq!(n, 500, "{kind}");
                assert_eq!(rx.recv(), Err(RecvError));
                assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
            })
            .unwrap();
    }
}

#[test]
fn close_wakes_blocked_fibers() {
    for (kind, make) in kinds::<u32>() {
        rt(2)
            .block_on(move || {
                let (tx, rx) = make();
                let receivers: Vec<_> = (0..3)
                    .map(|_| {
                        let rx = rx.clone();
                        pcml::spawn(move || rx.recv())
                    })
                    .collect();
                std::thread::sleep(Duration::from_millis(20));
                assert!(tx.close(), "{kind}");
                for r in receivers {
                    assert_eq!(r.join().unwrap(), Err(RecvError), "{kind}");
                }
                // Senders blocked when the channel closes get their messages back (an
                // unbounded channel's senders never block).
                let (tx, rx) = make();
                let Some(fill) = tx.capacity() else {
                    return;
                };
                for i in 0..fill {
                    tx.send(i as u32).unwrap();
                }
                let senders: Vec<_> = (0..3)
                    .map(|i| {
                        let tx = tx.clone();
                        pcml::spawn(move || tx.send(100 + i))
                    })
                    .collect();
                std::thread::sleep(Duration::from_millis(20));
                rx.close();
                let mut back: Vec<u32> = senders
                    .into_iter()
                    .map(|s| s.join().unwrap().unwrap_err().into_inner())
                    .collect();
                back.sort_unstable();
                assert_eq!(back, [100, 101, 102], "{kind}");
                // What was buffered before the close can still be received.
                for i in 0..fill {
                    assert_eq!(rx.recv(), Ok(i as u32), "{kind}");
                }
                assert_eq!(rx.recv(), Err(RecvError), "{kind}");
            })
            .unwrap();
    }
}

#[test]
fn close_wakes_blocked_os_threads() {
    for (kind, make) in kinds::<u32>() {
        let (tx, rx) = make();
        let r = {
            let rx = rx.clone();
            std::thread::spawn(move || rx.recv())
        };
        std::thread::sleep(Duration::from_millis(20));
        drop(tx); // the last sender
        assert_eq!(r.join().unwrap(), Err(RecvError), "{kind}");

        let (tx, rx) = make();
        let Some(cap) = tx.capacity() else {
            continue; // its senders never block
        };
        for i in 0..cap {
            tx.send(i as u32).unwrap();
        }
        let s = std::thread::spawn(move || tx.send(7));
        std::thread::sleep(Duration::from_millis(20));
        drop(rx); // the last receiver
        assert_eq!(s.join().unwrap(), Err(SendError(7)), "{kind}");
    }
}

#[test]
fn close_wakes_blocked_async_tasks() {
    for (kind, make) in kinds::<u32>() {
        rt(1)
            .block_on(move || {
                let (tx, rx) = make();
                let rx2 = rx.clone();
                let a = pcml::spawn_task(async move { rx2.recv_async().await });
                let rx3 = rx.clone();
                let b = pcml::spawn_task(async move { rx3.recv_evt().await });
                pcml::yield_now();
                pcml::yield_now();
                drop(tx);
                assert_eq!(a.join().unwrap(), Err(RecvError), "{kind}");
                assert_eq!(b.join().unwrap(), Err(RecvError), "{kind}");
            })
            .unwrap();
    }
    // In another executor.
    let tokio = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    for (kind, make) in kinds::<u32>() {
        let (tx, rx) = make();
        let got = tokio.block_on(async move {
            let h = tokio::spawn(async move { rx.recv_async().await });
            tokio::task::yield_now().await;
            std::thread::spawn(move || drop(tx)).join().unwrap();
            h.await.unwrap()
        });
        assert_eq!(got, Err(RecvError), "{kind}");
    }
}

#[test]
fn a_choice_sees_a_closed_channel() {
    for (kind, make) in kinds::<u32>() {
        let (tx, rx) = make();
        let (_idle_tx, idle) = make();
        drop(tx);
        // Enabled at once: a choice with an idle branch picks it.
        let got = select([rx.recv_evt(), idle.recv_evt()]);
        assert_eq!(got, Err(RecvError), "{kind}");
        assert_eq!(rx.recv_evt().poll(), Some(Err(RecvError)), "{kind}");

        // A choice blocked on two idle channels wakes when one closes.
        let (tx_a, a) = make();
        let (_tx_b, b) = make();
        let t = std::thread::spawn(move || {
            select([
                a.recv_evt().wrap(|r| ("a", r)),
                b.recv_evt().wrap(|r| ("b", r)),
            ])
        });
        std::thread::sleep(Duration::from_millis(20));
        drop(tx_a);
        assert_eq!(t.join().unwrap(), ("a", Err(RecvError)), "{kind}");

        // A blocked send in a choice gets its message back.
        let (tx, rx) = make();
        if tx.capacity().is_none() {
            continue; // its senders never block
        }
        for i in 0..tx.capacity().unwrap_or(0) {
            tx.send(i as u32).unwrap();
        }
        let (tx2, _rx2) = make();
        for i in 0..tx2.capacity().unwrap_or(0) {
            tx2.send(i as u32).unwrap();
        }
        let t = std::thread::spawn(move || select([tx.send_evt(1), tx2.send_evt(2)]));
        std::thread::sleep(Duration::from_millis(20));
        rx.close();
        assert_eq!(t.join().unwrap(), Err(SendError(1)), "{kind}");
    }
}

#[test]
fn nothing_is_lost_when_a_channel_closes_under_load() {
    for (kind, make) in kinds::<u64>() {
        for round in 0..20 {
            rt(2)
                .block_on(move || {
                    let (tx, rx) = make();
                    let senders: Vec<_> = (0..4u64)
                        .map(|s| {
                            let tx = tx.clone();
                            pcml::spawn(move || {
                                let mut back = Vec::new();
                                let mut sent = 0;
                                for i in 0..200 {
                                    match tx.send(s * 1000 + i) {
                                        Ok(()) => sent += 1,
                                        Err(e) => back.push(e.into_inner()),
                                    }
                                }
                                (sent, back)
                            })
                        })
                        .collect();
                    let receivers: Vec<_> = (0..2)
                        .map(|_| {
                            let rx = rx.clone();
                            pcml::spawn(move || {
                                let mut got = Vec::new();
                                while let Ok(v) = rx.recv() {
                                    got.push(v);
                                    if got.len() == 50 + round {
                                        rx.close();
                                    }
                                }
                                got
                            })
                        })
                        .collect();
                    drop((tx, rx));
                    let mut all = HashSet::new();
                    let mut received = 0;
                    for r in receivers {
                        for v in r.join().unwrap() {
                            assert!(all.insert(v), "{kind}: {v} received twice");
                            received += 1;
                        }
                    }
                    let mut sent_ok = 0;
                    for s in senders {
                        let (sent, back) = s.join().unwrap();
                        sent_ok += sent;
                        for v in back {
                            assert!(all.insert(v), "{kind}: {v} both received and returned");
                        }
                    }
                    assert_eq!(all.len(), 800, "{kind}: every message received or returned");
                    assert_eq!(sent_ok, received, "{kind}: Ok sends were all received");
                })
                .unwrap();
        }
    }
}

#[test]
fn dropping_the_last_sender_on_another_proc_wakes_the_receiver() {
    for (kind, make) in kinds::<u32>() {
        rt(2)
            .block_on(move || {
                let (tx, rx) = make();
                let gate = Chan::<()>::new();
                let g = gate.clone();
                let h = pcml::spawn_on(1, move || {
                    g.recv();
                    tx.send(1).unwrap();
                    assert_eq!(pcml::current_proc(), Some(1));
                    drop(tx);
                });
                let r = pcml::spawn_on(0, move || {
                    let first = rx.recv();
                    (first, rx.recv())
                });
                gate.send(());
                assert_eq!(r.join().unwrap(), (Ok(1), Err(RecvError)), "{kind}");
                h.join().unwrap();
            })
            .unwrap();
    }
}

#[test]
fn a_both_ends_handle_keeps_the_channel_open() {
    let ch = Chan::<u8>::new();
    let (tx, rx) = (ch.sender(), ch.receiver());
    drop(tx);
    assert!(!ch.is_closed());
    drop(rx);
    assert!(!ch.is_closed());
    let rx = ch.receiver();
    drop(ch); // the last sending handle
    assert_eq!(rx.recv(), Err(RecvError));

    let ch = Chan::<u8>::new();
    let tx = ch.sender();
    drop(ch); // the last receiving handle
    assert_eq!(tx.send(1), Err(SendError(1)));
}

#[test]
fn a_plain_recv_on_a_closed_chan_panics_with_advice() {
    let ch = Chan::<u8>::new();
    ch.close();
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ch.recv())).unwrap_err();
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(
        msg.contains("closed channel") && msg.contains("Receiver"),
        "{msg}"
    );
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ch.send(1))).unwrap_err();
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(
        msg.contains("closed channel") && msg.contains("Sender"),
        "{msg}"
    );
    assert_eq!(ch.try_recv(), None);
    assert_eq!(ch.try_send(3), Err(3));
}

#[test]
fn try_operations_tell_empty_from_closed() {
    for (kind, make) in kinds::<u8>() {
        let (tx, rx) = make();
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty), "{kind}");
        let cap = tx.capacity().unwrap_or(usize::MAX);
        for i in 0..cap.min(3) {
            tx.try_send(i as u8).unwrap();
        }
        if cap <= 3 {
            assert_eq!(tx.try_send(9), Err(TrySendError::Full(9)), "{kind}");
        }
        drop(rx);
        assert_eq!(tx.try_send(9), Err(TrySendError::Disconnected(9)), "{kind}");
        assert!(tx.is_closed());
    }
}

#[test]
fn recv_timeout_and_try_iter() {
    for (kind, make) in kinds::<u8>() {
        let (tx, rx) = make();
        assert_eq!(
            rx.recv_timeout(Duration::from_millis(5)),
            Err(RecvTimeoutError::Timeout),
            "{kind}"
        );
        let t = std::thread::spawn(move || {
            tx.send(1).unwrap();
            tx.send(2).unwrap();
        });
        assert_eq!(rx.recv_timeout(Duration::from_secs(60)), Ok(1), "{kind}");
        assert_eq!(rx.recv_timeout(Duration::from_secs(60)), Ok(2), "{kind}");
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(60)),
            Err(RecvTimeoutError::Disconnected),
            "{kind}"
        );
        t.join().unwrap();
        assert_eq!(rx.try_iter().count(), 0);
    }
}

#[test]
fn a_stream_ends_at_close() {
    use futures_core::Stream;
    for (kind, make) in kinds::<u32>() {
        let (tx, rx) = make();
        let t = std::thread::spawn(move || {
            for i in 0..5 {
                tx.send(i).unwrap();
            }
        });
        let tokio = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let got = tokio.block_on(async move {
            let mut s = rx.into_stream();
            let mut got = Vec::new();
            while let Some(v) = std::future::poll_fn(|cx| Pin::new(&mut s).poll_next(cx)).await {
                got.push(v);
            }
            got
        });
        assert_eq!(got, [0, 1, 2, 3, 4], "{kind}");
        t.join().unwrap();
    }
}

#[test]
fn a_pending_receive_dropped_takes_nothing_and_close_still_works() {
    for (kind, make) in kinds::<u32>() {
        let (tx, rx) = make();
        let mut cx = Context::from_waker(Waker::noop());
        let mut f = Box::pin(rx.recv_async());
        assert!(f.as_mut().poll(&mut cx).is_pending(), "{kind}");
        drop(f);
        drop(tx);
        let mut f = Box::pin(rx.recv_async());
        assert_eq!(
            f.as_mut().poll(&mut cx),
            Poll::Ready(Err(RecvError)),
            "{kind}"
        );
    }
}

#[test]
fn errors_are_debug_and_display_without_debug_messages() {
    struct Opaque;
    let (tx, rx) = channel::<Opaque>();
    drop(rx);
    let e = tx.send(Opaque).unwrap_err();
    assert_eq!(format!("{e:?}"), "SendError { .. }");
    assert_eq!(e.to_string(), "sending on a closed channel");
    let e = tx.try_send(Opaque).unwrap_err();
    assert!(e.is_disconnected());
    assert_eq!(format!("{e:?}"), "Disconnected(..)");
    let boxed: Box<dyn std::error::Error> = Box::new(RecvError);
    assert!(!boxed.to_string().is_empty());
}

#[test]
fn handles_count_across_clones_and_threads() {
    let (tx, rx) = channel::<usize>();
    let count = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let more = tx.clone();
                more.send(i).unwrap();
            })
        })
        .collect();
    drop(tx);
    for v in &rx {
        count.fetch_add(v + 1, Ordering::Relaxed);
    }
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(count.load(Ordering::Relaxed), (1..=8).sum());
}

#[test]
fn send_timeout_gives_the_message_back() {
    use pcml::chan::SendTimeoutError;
    for (kind, make) in kinds::<u32>() {
        let (tx, rx) = make();
        let Some(cap) = tx.capacity() else {
            // Unbounded: never full.
            assert_eq!(
                tx.send_timeout(1, Duration::from_millis(1)),
                Ok(()),
                "{kind}"
            );
            continue;
        };
        for i in 0..cap {
            tx.send(i as u32).unwrap();
        }
        assert_eq!(
            tx.send_timeout(99, Duration::from_millis(5)),
            Err(SendTimeoutError::Timeout(99)),
            "{kind}"
        );
        // The message that timed out never entered the channel.
        let got: Vec<u32> = rx.try_iter().collect();
        assert_eq!(got, (0..cap as u32).collect::<Vec<_>>(), "{kind}");
        // A receiver that comes in time takes it.
        for i in 0..cap {
            tx.send(i as u32).unwrap();
        }
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            rx.iter().collect::<Vec<u32>>()
        });
        assert_eq!(
            tx.send_timeout(7, Duration::from_secs(60)),
            Ok(()),
            "{kind}"
        );
        drop(tx);
        assert_eq!(t.join().unwrap().last(), Some(&7), "{kind}");
        // Closed: the message comes back too.
        let (tx, rx) = make();
        drop(rx);
        assert_eq!(
            tx.send_timeout(5, Duration::from_secs(60)),
            Err(SendTimeoutError::Disconnected(5)),
            "{kind}"
        );
    }
    // From fibers.
    rt(1)
        .block_on(|| {
            let (tx, _rx) = channel::<String>();
            let h = pcml::spawn(move || tx.send_timeout("x".into(), Duration::from_millis(2)));
            assert_eq!(h.join().unwrap().unwrap_err().into_inner(), "x");
        })
        .unwrap();
}
