//! BoundedChan: FIFO with a capacity; blocked senders in order; events in choices (a losing
//! send never enqueues); fibers, OS threads, pcml tasks and tokio; a cross-proc stress.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use pcml::BoundedChan;
use pcml::bounded::TrySendError;

#[test]
fn capacity_zero_is_a_rendezvous() {
    let ch = BoundedChan::<u32>::new(0);
    assert_eq!(ch.capacity(), 0);
    assert!(ch.is_empty() && ch.is_full());
    assert_eq!(ch.try_send(1), Err(TrySendError::Full(1))); // nobody is receiving
    assert_eq!(ch.try_recv(), None);
    // A send waits for a receive, and a receive for a send, in both orders.
    let rx = ch.clone();
    let t = std::thread::spawn(move || (rx.recv(), rx.recv()));
    ch.send(1);
    std::thread::sleep(Duration::from_millis(10));
    ch.send(2);
    assert_eq!(t.join().unwrap(), (1, 2));
    let tx = ch.clone();
    let t = std::thread::spawn(move || tx.send(3));
    assert_eq!(ch.recv(), 3);
    t.join().unwrap();
    assert!(ch.is_empty());
    // In a choice: a waiting receiver enables the send event.
    let rx = ch.clone();
    let t = std::thread::spawn(move || rx.recv());
    while ch.queue_lens().1 == 0 {
        std::thread::yield_now();
    }
    assert!(pcml::select([
        ch.send_evt(4).wrap(|()| true),
        pcml::never()
    ]));
    assert_eq!(t.join().unwrap(), 4);
    assert_eq!(pcml::select([ch.recv_evt(), pcml::always(0)]), 0);
}

#[test]
fn try_ops_len_capacity_and_fifo() {
    let ch = BoundedChan::new(3);
    assert_eq!(ch.capacity(), 3);
    assert!(ch.is_empty());
    assert_eq!(ch.try_recv(), None);
    for i in 0..3 {
        assert_eq!(ch.try_send(i), Ok(()));
    }
    assert_eq!(ch.len(), 3);
    assert_eq!(ch.try_send(9), Err(TrySendError::Full(9)));
    assert_eq!(ch.try_recv(), Some(0));
    ch.send(3);
    assert_eq!((0..3).map(|_| ch.recv()).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(ch.try_recv(), None);
}

#[test]
fn blocked_senders_enter_the_buffer_in_the_order_they_blocked() {
    let ch = BoundedChan::new(2);
    ch.send(0);
    ch.send(1);
    let mut senders = Vec::new();
    for i in 2..6 {
        let tx = ch.clone();
        senders.push(std::thread::spawn(move || tx.send(i)));
        // Wait until this sender is queued before starting the next.
        common::wait_until(|| ch.queue_lens().0 == (i - 1) as usize);
    }
    assert_eq!(ch.len(), 2);
    let got: Vec<i32> = (0..6).map(|_| ch.recv()).collect();
    assert_eq!(got, [0, 1, 2, 3, 4, 5]);
    senders.into_iter().for_each(|t| t.join().unwrap());
    assert!(ch.is_empty());
}

#[test]
fn blocked_receivers_are_served_in_order() {
    let ch = BoundedChan::new(1);
    let mut receivers = Vec::new();
    for i in 0..3 {
        let rx = ch.clone();
        receivers.push(std::thread::spawn(move || rx.recv()));
        common::wait_until(|| ch.queue_lens().1 == i + 1);
    }
    for i in 0..3 {
        ch.send(i);
    }
    let got: Vec<usize> = receivers.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(got, [0, 1, 2]);
}

#[test]
fn fibers_keep_one_senders_order_across_procs() {
    for procs in [1, 2] {
        let got = common::run_on_procs(procs, || {
            let ch = BoundedChan::new(4);
            let tx = ch.clone();
            let s = pcml::spawn(move || (0..5000u32).for_each(|i| tx.send(i)));
            let got: Vec<u32> = (0..5000).map(|_| ch.recv()).collect();
            s.join().unwrap();
            got
        })
        .unwrap();
        assert_eq!(got, (0..5000).collect::<Vec<_>>(), "procs = {procs}");
    }
}

#[test]
fn a_losing_send_never_enters_the_buffer() {
    let token = Arc::new(());
    let ch = BoundedChan::new(1);
    ch.send(token.clone());
    // Full: the send loses to always, at once...
    let r = pcml::select([
        ch.send_evt(token.clone()).wrap(|()| "sent"),
        pcml::always("full"),
    ]);
    assert_eq!(r, "full");
    // ... and after blocking, to a timeout.
    let r = pcml::select([
        ch.send_evt(token.clone()).wrap(|()| "sent"),
        pcml::time::timeout_evt(Duration::from_millis(2)).wrap(|()| "timeout"),
    ]);
    assert_eq!(r, "timeout");
    // The losers' messages were dropped, and room does not bring them back.
    assert_eq!(Arc::strong_count(&token), 2);
    drop(ch.recv());
    assert_eq!(ch.try_recv(), None);
    assert_eq!(Arc::strong_count(&token), 1);
}

#[test]
fn events_choose_against_other_channels() {
    let ch: BoundedChan<u8> = BoundedChan::new(1);
    let other: pcml::Chan<u8> = pcml::Chan::new();
    // A receive loses to a timeout and takes nothing.
    let r = pcml::select([
        ch.recv_evt().wrap(Some),
        pcml::time::timeout_evt(Duration::from_millis(1)).wrap(|()| None),
    ]);
    assert_eq!(r, None);
    // A blocked receive in a choice with a synchronous channel: either branch may fire, and
    // each message is taken once.
    let (a, b) = (ch.clone(), other.clone());
    let t = std::thread::spawn(move || {
        (0..2)
            .map(|_| pcml::select([a.recv_evt(), b.recv_evt()]))
            .collect::<Vec<u8>>()
    });
    ch.send(1);
    other.send(2);
    let mut got = t.join().unwrap();
    got.sort_unstable();
    assert_eq!(got, [1, 2]);
    // A send waiting for room, in a choice with a receive elsewhere.
    ch.send(3);
    let (a, b) = (ch.clone(), other.clone());
    let t = std::thread::spawn(move || {
        pcml::select([
            a.send_evt(4).wrap(|()| "sent"),
            b.recv_evt().wrap(|_| "received"),
        ])
    });
    common::wait_until(|| ch.queue_lens().0 == 1);
    assert_eq!(ch.recv(), 3);
    assert_eq!(t.join().unwrap(), "sent");
    assert_eq!(ch.recv(), 4);
}

#[test]
fn events_await_in_pcml_tasks_and_tokio() {
    let r = pcml::run(|| {
        let ch = BoundedChan::new(2);
        let tx = ch.clone();
        let p = pcml::spawn_task(async move {
            for i in 0..100u32 {
                tx.send_evt(i).await;
            }
        });
        let rx = ch.clone();
        let c = pcml::spawn_task(async move {
            let mut got = Vec::new();
            for _ in 0..100 {
                got.push(rx.recv_evt().await);
            }
            got
        });
        p.join().unwrap();
        c.join().unwrap()
    });
    assert_eq!(r, (0..100).collect::<Vec<_>>());

    let rt = common::tokio_rt();
    rt.block_on(async {
        let ch = BoundedChan::new(3);
        let tx = ch.clone();
        let p = tokio::spawn(async move {
            for i in 0..200u32 {
                tx.send_evt(i).await;
            }
        });
        let mut got = Vec::new();
        for _ in 0..200 {
            got.push(ch.recv_evt().await);
        }
        p.await.unwrap();
        assert_eq!(got, (0..200).collect::<Vec<_>>());

        // Dropped futures: a send does not enqueue, a receive takes nothing.
        let ch = BoundedChan::new(1);
        let token = Arc::new(());
        ch.send(token.clone());
        tokio::select! {
            _ = ch.send_evt(token.clone()) => panic!("the channel is full"),
            _ = tokio::time::sleep(Duration::from_millis(1)) => {}
        }
        assert_eq!(Arc::strong_count(&token), 2);
        drop(ch.recv());
        tokio::select! {
            _ = ch.recv_evt() => panic!("the channel is empty"),
            _ = tokio::time::sleep(Duration::from_millis(1)) => {}
        }
        ch.send(token.clone());
        assert_eq!(ch.len(), 1);
    });
}

#[test]
fn stress_across_procs_every_message_once() {
    const PER: u32 = 25_000;
    const PRODUCERS: u32 = 4;
    let mut got = common::run_on_procs(2, || {
        let ch = BoundedChan::new(8);
        let stop: pcml::Chan<()> = pcml::Chan::new();
        // Producers: fibers and tasks, some sending in choices with a channel nobody uses.
        let idle: pcml::Chan<u32> = pcml::Chan::new();
        let mut producers = Vec::new();
        for p in 0..PRODUCERS {
            let (tx, idle) = (ch.clone(), idle.clone());
            if p % 2 == 0 {
                producers.push(pcml::spawn(move || {
                    for i in 0..PER {
                        pcml::select([tx.send_evt(p * PER + i), idle.send_evt(0)]);
                    }
                }));
            } else {
                producers.push(pcml::spawn_task(async move {
                    for i in 0..PER {
                        tx.send_evt(p * PER + i).await;
                    }
                }));
            }
        }
        // Consumers: two fibers that also race a stop channel, and one task.
        let mut consumers = Vec::new();
        for _ in 0..2 {
            let (rx, stop) = (ch.clone(), stop.clone());
            consumers.push(pcml::spawn(move || {
                let mut mine = Vec::new();
                loop {
                    match pcml::select([rx.recv_evt().wrap(Some), stop.recv_evt().wrap(|()| None)])
                    {
                        Some(v) => mine.push(v),
                        None => return mine,
                    }
                }
            }));
        }
        let rx = ch.clone();
        let stop_t = stop.clone();
        consumers.push(pcml::spawn_task(async move {
            let mut mine = Vec::new();
            loop {
                match pcml::choose([rx.recv_evt().wrap(Some), stop_t.recv_evt().wrap(|()| None)])
                    .await
                {
                    Some(v) => mine.push(v),
                    None => return mine,
                }
            }
        }));
        producers.into_iter().for_each(|h| h.join().unwrap());
        // Let the consumers drain, then stop them.
        while !ch.is_empty() {
            pcml::yield_now();
        }
        for _ in 0..3 {
            stop.send(());
        }
        consumers
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect::<Vec<u32>>()
    })
    .unwrap();
    got.sort_unstable();
    assert_eq!(got, (0..PRODUCERS * PER).collect::<Vec<_>>());
}

/// Polls `fut` once with a waker that does nothing.
fn poll_once<F: std::future::Future + Unpin>(fut: &mut F) -> std::task::Poll<F::Output> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    std::pin::Pin::new(fut).poll(&mut cx)
}

#[test]
fn a_receive_dropped_after_it_won_gives_its_message_back() {
    use std::future::IntoFuture;
    // Blocked, handed a message directly by a send, then dropped before it saw it.
    let ch = BoundedChan::new(2);
    let mut fut = Box::pin(ch.recv_evt().into_future());
    assert!(poll_once(&mut fut).is_pending());
    ch.send(1);
    assert_eq!(ch.len(), 0); // the message went to the blocked receive
    drop(fut);
    assert_eq!(ch.try_recv(), Some(1));

    // Meanwhile the buffer filled up: the message goes back to the front, over capacity,
    // and a blocked sender waits until there is room again.
    let mut fut = Box::pin(ch.recv_evt().into_future());
    assert!(poll_once(&mut fut).is_pending());
    for i in 1..=3 {
        ch.send(i);
    }
    drop(fut);
    assert_eq!(ch.len(), 3);
    let tx = ch.clone();
    let t = std::thread::spawn(move || tx.send(4));
    common::wait_until(|| ch.queue_lens().0 == 1);
    assert_eq!(ch.recv(), 1);
    assert_eq!(ch.queue_lens().0, 1, "no room yet: the sender still waits");
    assert_eq!(ch.recv(), 2);
    t.join().unwrap();
    assert_eq!((ch.recv(), ch.recv(), ch.try_recv()), (3, 4, None));
}

#[test]
fn a_fiber_that_never_blocks_still_lets_others_run() {
    // One proc: a fiber looping on operations that never block must yield now and then.
    common::run_on_procs(1, || {
        use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
        let (started, stop) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (st, sp) = (started.clone(), stop.clone());
        let busy = pcml::spawn(move || {
            st.store(true, Relaxed);
            let ch = BoundedChan::new(1);
            let (m, sem) = (pcml::Mutex::new(0u64), pcml::Semaphore::new(1));
            let mc = pcml::Multicast::new();
            let port = mc.port();
            while !sp.load(Relaxed) {
                ch.send(1u64);
                let _p = sem.acquire();
                mc.send(ch.recv());
                *m.lock() += port.recv();
            }
        });
        // Once the busy fiber has started, we run again only if it yields.
        while !started.load(Relaxed) {
            pcml::yield_now();
        }
        stop.store(true, Relaxed);
        busy.join().unwrap();
    })
    .unwrap();
}
