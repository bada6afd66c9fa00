//! One-branch channel event syncs on the direct path: `ch.recv_evt().sync()`,
//! `ch.send_evt(v).sync()` and their `.await`s, from fibers, OS threads, pcml tasks and
//! tokio; cancellation of a pending `.await` (offer withdrawn, or the delivered message
//! dropped once), and a new waker at each poll. Also `Chan::recv_async`/`Chan::send_async`,
//! which take the same path without an event.

use crate::common;

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use common::{run_on_procs, tokio_rt};
use pcml::chan::Chan;
use pcml::event::select;

/// Ping-pong between two pcml tasks over `.await`s of one-branch events; the reply is `v + 1`.
fn task_pingpong(rounds: u64) -> u64 {
    let (ping, pong) = (Chan::new(), Chan::new());
    let (p2, q2) = (ping.clone(), pong.clone());
    pcml::spawn_task(async move {
        for _ in 0..rounds {
            let v: u64 = p2.recv_evt().await;
            q2.send_evt(v + 1).await;
        }
    });
    pcml::spawn_task(async move {
        let mut sum = 0;
        for i in 0..rounds {
            ping.send_evt(i).await;
            sum += pong.recv_evt().wrap(|x: u64| x * 2).await;
        }
        sum
    })
    .join()
    .unwrap()
}

fn expected(rounds: u64) -> u64 {
    // Sum over i of 2 * (i + 1).
    rounds * (rounds + 1)
}

#[test]
fn pcml_tasks_ping_pong_over_awaited_events_on_one_and_two_procs() {
    for procs in [1, 2] {
        let got = run_on_procs(procs, || task_pingpong(2000)).unwrap();
        assert_eq!(got, expected(2000), "procs = {procs}");
    }
}

#[test]
fn fibers_ping_pong_over_synced_events() {
    for procs in [1, 2] {
        let got = run_on_procs(procs, || {
            let (ping, pong) = (Chan::new(), Chan::new());
            let (p2, q2) = (ping.clone(), pong.clone());
            pcml::spawn(move || {
                for _ in 0..1000 {
                    let v: u64 = p2.recv_evt().sync();
                    q2.send_evt(v + 1).sync();
                }
            });
            (0..1000)
                .map(|i| {
                    ping.send_evt(i).sync();
                    pong.recv_evt().wrap(|x: u64| x * 2).sync()
                })
                .sum::<u64>()
        })
        .unwrap();
        assert_eq!(got, expected(1000), "procs = {procs}");
    }
}

#[test]
fn os_threads_sync_one_branch_events_against_plain_send_and_recv() {
    let (ping, pong) = (Chan::new(), Chan::new());
    let (p2, q2) = (ping.clone(), pong.clone());
    let t = std::thread::spawn(move || {
        for _ in 0..500 {
            let v: u64 = p2.recv();
            q2.send(v + 1);
        }
    });
    let mut sum = 0;
    for i in 0..500 {
        ping.send_evt(i).sync();
        sum += pong.recv_evt().wrap(|x: u64| x * 2).sync();
    }
    t.join().unwrap();
    assert_eq!(sum, expected(500));
}

#[test]
fn tokio_tasks_ping_pong_over_awaited_events_and_with_a_blocked_os_thread() {
    let rt = tokio_rt();
    let (ping, pong) = (Chan::new(), Chan::new());
    let (p2, q2) = (ping.clone(), pong.clone());
    // Two tokio tasks on a two-worker runtime: they move between workers, so their syncs are
    // polled with new wakers.
    rt.spawn(async move {
        for _ in 0..2000 {
            let v: u64 = p2.recv_evt().await;
            q2.send_evt(v + 1).await;
        }
    });
    let sum = rt.block_on(async move {
        let mut sum = 0;
        for i in 0..2000u64 {
            let pong = pong.clone();
            // Each round trip in a fresh task, so tasks start on either worker.
            let ping = ping.clone();
            sum += tokio::spawn(async move {
                ping.send_evt(i).await;
                pong.recv_evt().wrap(|x: u64| x * 2).await
            })
            .await
            .unwrap();
        }
        sum
    });
    assert_eq!(sum, expected(2000));

    // An OS thread blocked in a direct `recv` and `send` against tokio's awaits.
    let (a, b) = (Chan::new(), Chan::new());
    let (a2, b2) = (a.clone(), b.clone());
    let t = std::thread::spawn(move || {
        for _ in 0..200 {
            let v: u64 = a2.recv();
            b2.send(v + 1);
        }
    });
    let sum = rt.block_on(async move {
        let mut sum = 0;
        for i in 0..200 {
            a.send_evt(i).await;
            sum += b.recv_evt().wrap(|x: u64| x * 2).await;
        }
        sum
    });
    t.join().unwrap();
    assert_eq!(sum, expected(200));
}

#[test]
fn an_awaited_receive_meets_a_choosing_sender_and_a_synced_send_meets_a_choosing_receiver() {
    let rt = tokio_rt();
    let (a, b) = (Chan::new(), Chan::<u8>::new());
    let (a2, b2) = (a.clone(), b.clone());
    let t = std::thread::spawn(move || {
        select([a2.send_evt(1u8).wrap(|()| 'a'), b2.recv_evt().wrap(|_| 'b')])
    });
    assert_eq!(rt.block_on(a.recv_evt().into_future()), 1);
    assert_eq!(t.join().unwrap(), 'a');
    // The choice's losing receive is dead: a one-branch send finds no receiver.
    assert_eq!(b.queue_lens().0, 0);

    let (c, d) = (Chan::new(), Chan::new());
    let (c2, d2) = (c.clone(), d.clone());
    let t = std::thread::spawn(move || select([c2.recv_evt(), d2.recv_evt()]));
    c.send_evt(7u8).sync();
    assert_eq!(t.join().unwrap(), 7);
    assert_eq!(d.try_recv(), None);
}

/// Counts its drops.
struct Tracked {
    drops: Arc<AtomicUsize>,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        self.drops.fetch_add(1, SeqCst);
    }
}

#[test]
fn a_dropped_pending_receive_withdraws_its_offer() {
    let rt = tokio_rt();
    let ch: Chan<u32> = Chan::new();
    let r = rt.block_on(async {
        tokio::time::timeout(Duration::from_millis(20), ch.recv_evt().into_future()).await
    });
    assert!(r.is_err(), "nobody sent");
    assert_eq!(ch.queue_lens(), (0, 0));
    assert_eq!(ch.try_send(1), Err(1));
}

#[test]
fn a_dropped_pending_send_withdraws_its_offer_and_drops_its_message() {
    let rt = tokio_rt();
    let ch: Chan<Tracked> = Chan::new();
    let drops = Arc::new(AtomicUsize::new(0));
    let msg = Tracked {
        drops: drops.clone(),
    };
    let r = rt.block_on(async {
        tokio::time::timeout(Duration::from_millis(20), ch.send_evt(msg).into_future()).await
    });
    assert!(r.is_err(), "nobody received");
    assert_eq!(drops.load(SeqCst), 1);
    assert_eq!(ch.queue_lens(), (0, 0));
    assert!(ch.try_recv().is_none());
}

#[test]
fn a_receive_dropped_after_a_sender_delivered_drops_the_message_once() {
    let ch: Chan<Tracked> = Chan::new();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut recv = Box::pin(ch.recv_evt().into_future());
    let mut cx = Context::from_waker(Waker::noop());
    assert!(recv.as_mut().poll(&mut cx).is_pending());
    let msg = Tracked {
        drops: drops.clone(),
    };
    assert!(ch.try_send(msg).is_ok(), "the pending receive takes it");
    assert_eq!(drops.load(SeqCst), 0);
    drop(recv);
    assert_eq!(drops.load(SeqCst), 1);
    assert_eq!(ch.queue_lens(), (0, 0));
}

/// Counts its wake-ups.
struct CountWakes(AtomicUsize);

impl Wake for CountWakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

#[test]
fn a_pending_sync_polled_with_a_new_waker_wakes_that_waker() {
    for send_side in [false, true] {
        let ch: Chan<u32> = Chan::new();
        let (old, new) = (
            Arc::new(CountWakes(AtomicUsize::new(0))),
            Arc::new(CountWakes(AtomicUsize::new(0))),
        );
        let (old_w, new_w) = (Waker::from(old.clone()), Waker::from(new.clone()));
        let mut fut: Pin<Box<dyn Future<Output = Option<u32>> + Send>> = if send_side {
            Box::pin(async {
                ch.send_evt(5).await;
                None
            })
        } else {
            Box::pin(async { Some(ch.recv_evt().await) })
        };
        assert!(
            fut.as_mut()
                .poll(&mut Context::from_waker(&old_w))
                .is_pending()
        );
        assert!(
            fut.as_mut()
                .poll(&mut Context::from_waker(&new_w))
                .is_pending()
        );
        if send_side {
            assert_eq!(ch.try_recv(), Some(5));
        } else {
            assert_eq!(ch.try_send(9), Ok(()));
        }
        assert_eq!((old.0.load(SeqCst), new.0.load(SeqCst)), (0, 1));
        let want = if send_side { None } else { Some(9) };
        assert_eq!(
            fut.as_mut().poll(&mut Context::from_waker(&new_w)),
            Poll::Ready(want)
        );
    }
}

#[test]
fn a_synced_event_that_would_block_in_a_pcml_task_panics_and_leaves_no_offer() {
    let ch: Chan<u8> = Chan::new();
    let rx = ch.clone();
    let r = run_on_procs(1, move || {
        pcml::spawn_task(async move { rx.recv_evt().sync() }).join()
    })
    .unwrap();
    let msg = r.unwrap_err().to_string();
    assert!(
        msg.contains("would block inside a pcml async task"),
        "{msg}"
    );
    assert_eq!(ch.queue_lens(), (0, 0));
}

/// Many tokio senders and receivers, the receives under short timeouts that cancel some of
/// them: every message is dropped exactly once, either by the receiver that got it or with a
/// cancelled send or a receive cancelled after delivery; nothing is left queued.
#[test]
fn cancelled_awaits_lose_no_message_and_duplicate_none() {
    const SENDERS: usize = 4;
    const PER: usize = 300;
    let rt = tokio_rt();
    let ch: Chan<Tracked> = Chan::new();
    let drops = Arc::new(AtomicUsize::new(0));
    let received = Arc::new(AtomicUsize::new(0));
    rt.block_on(async {
        let mut hs = Vec::new();
        for _ in 0..SENDERS {
            let (ch, drops) = (ch.clone(), drops.clone());
            hs.push(tokio::spawn(async move {
                for _ in 0..PER {
                    let m = Tracked {
                        drops: drops.clone(),
                    };
                    let _ = tokio::time::timeout(
                        Duration::from_micros(300),
                        ch.send_evt(m).into_future(),
                    )
                    .await;
                }
            }));
        }
        for _ in 0..2 {
            let (ch, received) = (ch.clone(), received.clone());
            hs.push(tokio::spawn(async move {
                for _ in 0..SENDERS * PER {
                    let r = tokio::time::timeout(
                        Duration::from_micros(200),
                        ch.recv_evt().into_future(),
                    )
                    .await;
                    if r.is_ok() {
                        received.fetch_add(1, SeqCst);
                    }
                }
            }));
        }
        for h in hs {
            h.await.unwrap();
        }
    });
    // Every task is done, and with it every future: each message was dropped by now.
    assert_eq!(drops.load(SeqCst), SENDERS * PER);
    assert!(received.load(SeqCst) <= SENDERS * PER);
    assert_eq!(ch.queue_lens(), (0, 0));
}

#[test]
fn recv_async_and_send_async_ping_pong_in_pcml_tasks_and_tokio() {
    for procs in [1, 2] {
        let got = run_on_procs(procs, || {
            let (ping, pong) = (Chan::new(), Chan::new());
            let (p2, q2) = (ping.clone(), pong.clone());
            pcml::spawn_task(async move {
                for _ in 0..2000 {
                    let v: u64 = p2.recv_async().await;
                    q2.send_async(v + 1).await;
                }
            });
            pcml::spawn_task(async move {
                let mut sum = 0;
                for i in 0..2000 {
                    ping.send_async(i).await;
                    sum += 2 * pong.recv_async().await;
                }
                sum
            })
            .join()
            .unwrap()
        })
        .unwrap();
        assert_eq!(got, expected(2000), "procs = {procs}");
    }

    let rt = tokio_rt();
    let (ping, pong) = (Chan::new(), Chan::new());
    let (p2, q2) = (ping.clone(), pong.clone());
    // Against a fiber-free OS thread using the events, so both paths meet.
    let t = std::thread::spawn(move || {
        for _ in 0..500 {
            let v: u64 = p2.recv_evt().sync();
            q2.send(v + 1);
        }
    });
    let sum = rt.block_on(async move {
        tokio::spawn(async move {
            let mut sum = 0;
            for i in 0..500 {
                ping.send_async(i).await;
                sum += 2 * pong.recv_async().await;
            }
            sum
        })
        .await
        .unwrap()
    });
    t.join().unwrap();
    assert_eq!(sum, expected(500));
}

#[test]
fn dropped_recv_async_and_send_async_withdraw_or_drop_once() {
    let ch: Chan<Tracked> = Chan::new();
    let drops = Arc::new(AtomicUsize::new(0));
    let mut cx = Context::from_waker(Waker::noop());

    // A pending receive dropped with nobody sending: its offer goes.
    let mut recv = Box::pin(ch.recv_async());
    assert!(recv.as_mut().poll(&mut cx).is_pending());
    drop(recv);
    assert_eq!(ch.queue_lens(), (0, 0));

    // A pending receive dropped after a sender delivered: the message is dropped once.
    let mut recv = Box::pin(ch.recv_async());
    assert!(recv.as_mut().poll(&mut cx).is_pending());
    let msg = Tracked {
        drops: drops.clone(),
    };
    assert!(ch.try_send(msg).is_ok());
    drop(recv);
    assert_eq!(drops.load(SeqCst), 1);

    // A pending send dropped with nobody receiving: its offer and message go.
    let msg = Tracked {
        drops: drops.clone(),
    };
    let mut send = Box::pin(ch.send_async(msg));
    assert!(send.as_mut().poll(&mut cx).is_pending());
    drop(send);
    assert_eq!(drops.load(SeqCst), 2);
    assert_eq!(ch.queue_lens(), (0, 0));
    assert!(ch.try_recv().is_none());
}

#[test]
fn a_pending_recv_async_polled_with_a_new_waker_wakes_that_waker() {
    let ch: Chan<u32> = Chan::new();
    let (old, new) = (
        Arc::new(CountWakes(AtomicUsize::new(0))),
        Arc::new(CountWakes(AtomicUsize::new(0))),
    );
    let (old_w, new_w) = (Waker::from(old.clone()), Waker::from(new.clone()));
    let mut recv = Box::pin(ch.recv_async());
    assert!(
        recv.as_mut()
            .poll(&mut Context::from_waker(&old_w))
            .is_pending()
    );
    assert!(
        recv.as_mut()
            .poll(&mut Context::from_waker(&new_w))
            .is_pending()
    );
    assert_eq!(ch.try_send(4), Ok(()));
    assert_eq!((old.0.load(SeqCst), new.0.load(SeqCst)), (0, 1));
    assert_eq!(
        recv.as_mut().poll(&mut Context::from_waker(&new_w)),
        Poll::Ready(4)
    );
}

/// A pending `.await` moved to another place between polls (its future is `Unpin`) still
/// completes, with the value a partner delivered while it was being moved, on both sides.
#[test]
fn a_pending_await_moved_between_polls_completes() {
    let mut cx = Context::from_waker(Waker::noop());
    let ch: Chan<String> = Chan::new();
    let mut recv = ch.recv_evt().into_future();
    assert!(Pin::new(&mut recv).poll(&mut cx).is_pending());
    let mut moved = vec![recv];
    assert_eq!(ch.try_send("hi".to_string()), Ok(()));
    let mut recv = moved.pop().unwrap();
    assert_eq!(
        Pin::new(&mut recv).poll(&mut cx),
        Poll::Ready("hi".to_string())
    );

    let mut send = ch.send_evt("yo".to_string()).into_future();
    assert!(Pin::new(&mut send).poll(&mut cx).is_pending());
    let mut send = Box::new(send);
    assert_eq!(ch.try_recv().as_deref(), Some("yo"));
    assert_eq!(Pin::new(&mut *send).poll(&mut cx), Poll::Ready(()));
    assert_eq!(ch.queue_lens(), (0, 0));
}

/// One-branch events of the halves take the same path: awaited in tasks on 1 and 2 procs
/// until the senders are gone, then the pending receive wakes with the close.
#[test]
fn awaited_events_of_the_halves_ping_pong_and_see_the_close() {
    for procs in [1, 2] {
        let got = run_on_procs(procs, || {
            let (tx, rx) = pcml::chan::channel::<u64>();
            let consumer = pcml::spawn_task(async move {
                let mut sum = 0;
                while let Ok(v) = rx.recv_evt().await {
                    sum += v;
                }
                sum
            });
            pcml::spawn_task(async move {
                for i in 1..=500 {
                    tx.send_evt(i).await.unwrap();
                }
            })
            .join()
            .unwrap();
            consumer.join().unwrap()
        })
        .unwrap();
        assert_eq!(got, 500 * 501 / 2, "procs = {procs}");
    }
    // A send event of a closed channel gives its message back.
    let (tx, rx) = pcml::chan::channel::<u64>();
    drop(rx);
    let rt = tokio_rt();
    assert_eq!(
        rt.block_on(tx.send_evt(3).into_future()),
        Err(pcml::chan::SendError(3))
    );
}

/// The events `recv_evt`/`send_evt` make are ordinary events everywhere but a one-branch
/// sync: a poll, a wrap, a choice of them, and messages too large to be held inline.
#[test]
fn channel_events_poll_wrap_choose_and_carry_large_messages() {
    let ch: Chan<[u64; 8]> = Chan::new();
    assert_eq!(ch.recv_evt().poll(), None);
    assert_eq!(ch.send_evt([1; 8]).poll(), None);
    assert_eq!(ch.queue_lens(), (0, 0));
    let got = run_on_procs(2, move || {
        let (a, b) = (ch.clone(), Chan::<u8>::new());
        let b2 = b.clone();
        pcml::spawn_task(async move {
            a.send_evt([7; 8]).await;
            b2.send_evt(1).wrap(|()| ()).await;
        });
        let first = select([
            ch.recv_evt().wrap(|x: [u64; 8]| x.iter().sum::<u64>()),
            b.recv_evt().wrap(u64::from),
        ]);
        let second = pcml::spawn_task(async move { b.recv_evt().wrap(|x| x + 1).await })
            .join()
            .unwrap();
        (first, second)
    })
    .unwrap();
    assert_eq!(got, (56, 2));
}

/// Two tasks take turns waiting in `.await`s of channel events of three message types (a
/// byte, a pair of words, a `String`), so each proc's next wait finds the memory of a wait of
/// another type: every message arrives whole, on 1 and 2 procs, and a pending `.await` of
/// another type dropped in between changes nothing.
#[test]
fn awaits_of_several_message_types_in_turn_deliver_each_whole() {
    for procs in [1, 2] {
        let sum = run_on_procs(procs, || {
            let (bytes, pairs, texts) = (Chan::<u8>::new(), Chan::<(u64, u64)>::new(), Chan::new());
            let (b2, p2, t2) = (bytes.clone(), pairs.clone(), texts.clone());
            let echo = pcml::spawn_task(async move {
                for i in 0..200u64 {
                    let b = b2.recv_evt().await;
                    p2.send_evt((u64::from(b), !i)).await;
                    let t: String = t2.recv_evt().await;
                    assert_eq!(t, format!("text {i}"));
                    b2.send_evt(b.wrapping_add(1)).await;
                }
            });
            pcml::spawn_task(async move {
                let mut sum = 0u64;
                for i in 0..200u64 {
                    bytes.send_evt(i as u8).await;
                    let (b, not_i) = pairs.recv_evt().await;
                    assert_eq!((b, not_i), (i % 256, !i));
                    // A pending wait of another type, dropped: its offer is withdrawn.
                    {
                        let mut abandoned = Box::pin(texts.recv_evt().into_future());
                        let mut cx = Context::from_waker(Waker::noop());
                        assert!(abandoned.as_mut().poll(&mut cx).is_pending());
                    }
                    texts.send_evt(format!("text {i}")).await;
                    sum += u64::from(bytes.recv_evt().await);
                }
                echo.await.unwrap();
                sum
            })
            .join()
            .unwrap()
        })
        .unwrap();
        assert_eq!(sum, (0..200u64).map(|i| (i + 1) % 256).sum::<u64>());
    }
}

/// An event owns a count of its channel: built in a pcml task from a channel whose every
/// handle is dropped before the `.await`, it still completes, channel after channel.
#[test]
fn awaited_events_whose_channel_handles_are_gone_still_complete() {
    for procs in [1, 2] {
        let sum = run_on_procs(procs, || {
            pcml::spawn_task(async {
                let mut sum = 0u64;
                for i in 0..40u64 {
                    let (recv, echo) = {
                        let ch = Chan::new();
                        let tx = ch.clone();
                        let echo = pcml::spawn_task(async move {
                            let send = tx.send_evt(i);
                            drop(tx);
                            send.await;
                        });
                        (ch.recv_evt(), echo)
                    };
                    sum += recv.await;
                    echo.await.unwrap();
                }
                sum
            })
            .join()
            .unwrap()
        })
        .unwrap();
        assert_eq!(sum, (0..40).sum::<u64>(), "procs = {procs}");
    }
}

/// In a pcml task, a pending `.await` of a channel event that is dropped withdraws its offer
/// (a send's message is dropped, once), time after time on the same channels.
#[test]
fn dropped_pending_awaits_in_pcml_tasks_withdraw_their_offers() {
    for procs in [1, 2] {
        run_on_procs(procs, || {
            pcml::spawn_task(async {
                let (ch, out) = (Chan::<u32>::new(), Chan::<Tracked>::new());
                let drops = Arc::new(AtomicUsize::new(0));
                let mut cx = Context::from_waker(Waker::noop());
                for i in 0..10 {
                    let mut recv = Box::pin(ch.recv_evt().into_future());
                    assert!(recv.as_mut().poll(&mut cx).is_pending());
                    assert_eq!(ch.queue_lens(), (0, 1));
                    drop(recv);
                    assert_eq!(ch.queue_lens(), (0, 0));
                    assert_eq!(ch.try_send(1), Err(1));
                    let msg = Tracked {
                        drops: drops.clone(),
                    };
                    let mut send = Box::pin(out.send_evt(msg).into_future());
                    assert!(send.as_mut().poll(&mut cx).is_pending());
                    drop(send);
                    assert_eq!(drops.load(SeqCst), i + 1);
                    assert_eq!(out.queue_lens(), (0, 0));
                    assert!(out.try_recv().is_none());
                }
            })
            .join()
            .unwrap()
        })
        .unwrap();
    }
}

/// In a pcml task, an awaited choice of channel events takes the branch whose partner came
/// and cancels the others: nobody can meet their offers, and a losing send's message is
/// dropped.
#[test]
fn awaited_choices_in_pcml_tasks_cancel_their_losing_branches() {
    for procs in [1, 2] {
        run_on_procs(procs, || {
            pcml::spawn_task(async {
                let (a, b, c) = (
                    Chan::<u32>::new(),
                    Chan::<u32>::new(),
                    Chan::<Tracked>::new(),
                );
                let drops = Arc::new(AtomicUsize::new(0));
                for i in 0..10u32 {
                    let a2 = a.clone();
                    let sender = pcml::spawn_task(async move { a2.send_evt(i).await });
                    let msg = Tracked {
                        drops: drops.clone(),
                    };
                    let got = pcml::event::choose([
                        a.recv_evt(),
                        b.recv_evt().wrap(|x| x + 1000),
                        c.send_evt(msg).wrap(|()| u32::MAX),
                    ])
                    .await;
                    assert_eq!(got, i);
                    sender.await.unwrap();
                    assert_eq!(
                        drops.load(SeqCst),
                        i as usize + 1,
                        "the losing send's message"
                    );
                    // (Losing offers may stay queued, dead, until a sweep: nobody meets them.)
                    assert_eq!(a.try_send(1), Err(1));
                    assert_eq!(b.try_send(1), Err(1));
                    assert!(c.try_recv().is_none());
                }
            })
            .join()
            .unwrap()
        })
        .unwrap();
    }
}
