//! Mailbox: unbounded FIFO, in fibers, OS threads, choices and async.

use std::time::Duration;

use pcml::Mailbox;

#[test]
fn try_recv_len_and_order() {
    let mb = Mailbox::new();
    assert!(mb.is_empty());
    assert_eq!(mb.try_recv(), None);
    for i in 0..5 {
        mb.send(i);
    }
    assert_eq!(mb.len(), 5);
    assert_eq!(
        (0..5).map(|_| mb.recv()).collect::<Vec<_>>(),
        [0, 1, 2, 3, 4]
    );
    assert_eq!(mb.try_recv(), None);
}

#[test]
fn one_sender_arrives_in_order_across_fibers() {
    for procs in [1, 4] {
        let got = pcml::Runtime::builder()
            .procs(procs)
            .build()
            .unwrap()
            .block_on(|| {
                let mb = Mailbox::new();
                let tx = mb.clone();
                let s = pcml::spawn(move || (0..5000u32).for_each(|i| tx.send(i)));
                let got: Vec<u32> = (0..5000).map(|_| mb.recv()).collect();
                s.join().unwrap();
                got
            })
            .unwrap();
        assert_eq!(got, (0..5000).collect::<Vec<_>>(), "procs = {procs}");
    }
}

#[test]
fn several_senders_and_receivers_deliver_each_message_once() {
    let mb = Mailbox::new();
    let receivers: Vec<_> = (0..4)
        .map(|_| {
            let mb = mb.clone();
            std::thread::spawn(move || (0..500).map(|_| mb.recv()).collect::<Vec<u32>>())
        })
        .collect();
    let senders: Vec<_> = (0..4u32)
        .map(|t| {
            let mb = mb.clone();
            std::thread::spawn(move || (0..500).for_each(|i| mb.send(t * 10_000 + i)))
        })
        .collect();
    senders.into_iter().for_each(|t| t.join().unwrap());
    let per: Vec<Vec<u32>> = receivers.into_iter().map(|t| t.join().unwrap()).collect();
    // Each receiver sees each sender's messages in that sender's order.
    for r in &per {
        for t in 0..4 {
            let mine: Vec<u32> = r.iter().copied().filter(|m| m / 10_000 == t).collect();
            assert!(mine.windows(2).all(|w| w[0] < w[1]));
        }
    }
    let mut all: Vec<u32> = per.into_iter().flatten().collect();
    all.sort_unstable();
    let want: Vec<u32> = (0..4)
        .flat_map(|t| (0..500).map(move |i| t * 10_000 + i))
        .collect();
    assert_eq!(all, want);
    assert!(mb.is_empty());
}

#[test]
fn recv_evt_selects_with_a_timeout_and_a_channel() {
    let mb: Mailbox<u8> = Mailbox::new();
    let r = pcml::select([
        mb.recv_evt().wrap(Some),
        pcml::time::timeout_evt(Duration::from_millis(1)).wrap(|()| None),
    ]);
    assert_eq!(r, None);
    mb.send(3);
    let ch: pcml::Chan<u8> = pcml::Chan::new();
    assert_eq!(pcml::select([mb.recv_evt(), ch.recv_evt()]), 3);
    // A receive that loses to the channel takes nothing.
    let tx = ch.clone();
    let h = std::thread::spawn(move || tx.send(9));
    assert_eq!(pcml::select([mb.recv_evt(), ch.recv_evt()]), 9);
    h.join().unwrap();
    mb.send(4);
    assert_eq!(mb.try_recv(), Some(4));
    assert_eq!(mb.try_recv(), None);
}

#[test]
fn recv_evt_awaits_in_pcml_tasks_and_tokio() {
    let r = pcml::run(|| {
        let mb = Mailbox::new();
        let rx = mb.clone();
        let h = pcml::spawn_task(async move { rx.recv_evt().await + rx.recv_evt().await });
        mb.send(1);
        mb.send(2);
        h.join().unwrap()
    });
    assert_eq!(r, 3);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let r = rt.block_on(async {
        let mb = Mailbox::new();
        let rx = mb.clone();
        let h = tokio::spawn(async move {
            let mut got = Vec::new();
            for _ in 0..100 {
                got.push(rx.recv_evt().await);
            }
            got
        });
        for i in 0..100 {
            mb.send(i);
            if i % 10 == 0 {
                tokio::task::yield_now().await;
            }
        }
        h.await.unwrap()
    });
    assert_eq!(r, (0..100).collect::<Vec<_>>());
}

#[test]
fn a_dropped_recv_future_takes_no_message() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let mb: Mailbox<u8> = Mailbox::new();
        tokio::select! {
            _ = mb.recv_evt() => panic!("nothing was sent"),
            _ = tokio::time::sleep(Duration::from_millis(1)) => {}
        }
        mb.send(1);
        assert_eq!(mb.try_recv(), Some(1));
    });
}

#[test]
fn close_drains_then_wakes_blocked_receivers_with_a_panic_that_says_why() {
    let mb = Mailbox::<u32>::new();
    let rx = mb.clone();
    let t = std::thread::spawn(move || rx.recv());
    while mb.queue_len_for_tests() == 0 {
        std::thread::yield_now();
    }
    mb.send(1);
    assert_eq!(t.join().unwrap(), 1);
    let rx = mb.clone();
    let t = std::thread::spawn(move || rx.recv());
    while mb.queue_len_for_tests() == 0 {
        std::thread::yield_now();
    }
    assert!(mb.close());
    let err = t.join().unwrap_err();
    let msg = err.downcast_ref::<String>().unwrap();
    assert!(msg.contains("closed channel"), "{msg}");
    assert_eq!(mb.try_recv(), None);
    assert!(mb.is_closed());
}
