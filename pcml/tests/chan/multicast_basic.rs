//! Multicast: every port sees every later message, in order; copies; dropped ports; fibers,
//! OS threads, choices, pcml tasks and tokio; a cross-proc stress.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use pcml::Multicast;

#[test]
fn each_port_sees_the_messages_sent_after_it_was_made() {
    let mc = Multicast::new();
    mc.send(0); // no port yet: dropped
    let a = mc.port();
    mc.send(1);
    let b = mc.port();
    mc.send(2);
    assert_eq!(a.len(), 2);
    assert_eq!((a.recv(), a.recv(), a.try_recv()), (1, 2, None));
    assert_eq!((b.recv(), b.try_recv()), (2, None));
}

#[test]
fn copy_starts_where_the_original_is() {
    let mc = Multicast::new();
    let a = mc.port();
    mc.send(1);
    mc.send(2);
    assert_eq!(a.recv(), 1);
    let b = a.copy();
    mc.send(3);
    assert_eq!(a.try_recv(), Some(2));
    assert_eq!(b.try_recv(), Some(2));
    let c = b.copy();
    assert_eq!(b.try_recv(), Some(3));
    assert_eq!(c.try_recv(), Some(3));
    assert_eq!(a.try_recv(), Some(3));
    assert!(a.is_empty() && b.is_empty() && c.is_empty());
    assert_eq!(mc.live_ports(), 3);
}

#[test]
fn a_dropped_port_stops_receiving_and_frees_its_messages() {
    let mc = Multicast::new();
    let keep = mc.port();
    let gone = mc.port();
    let token = Arc::new(());
    for _ in 0..10 {
        mc.send(token.clone());
    }
    // Ten clones in each port, plus ours.
    assert_eq!(Arc::strong_count(&token), 21);
    drop(gone);
    assert_eq!(Arc::strong_count(&token), 11);
    for _ in 0..10 {
        mc.send(token.clone());
    }
    assert_eq!(Arc::strong_count(&token), 21);
    assert_eq!(mc.live_ports(), 1);
    assert_eq!(keep.len(), 20);
    drop(keep);
    assert_eq!(Arc::strong_count(&token), 1);
    mc.send(token.clone());
    assert_eq!(Arc::strong_count(&token), 1);
    assert_eq!(mc.live_ports(), 0);
}

#[test]
fn ports_in_fibers_see_every_message_in_order() {
    for procs in [1, 2] {
        let got = common::run_on_procs(procs, || {
            let mc = Multicast::new();
            let readers: Vec<_> = (0..4)
                .map(|_| {
                    let p = mc.port();
                    pcml::spawn(move || (0..1000).map(|_| p.recv()).collect::<Vec<u32>>())
                })
                .collect();
            let tx = mc.clone();
            let s = pcml::spawn(move || (0..1000u32).for_each(|i| tx.send(i)));
            s.join().unwrap();
            readers
                .into_iter()
                .map(|r| r.join().unwrap())
                .collect::<Vec<_>>()
        })
        .unwrap();
        for r in got {
            assert_eq!(r, (0..1000).collect::<Vec<_>>(), "procs = {procs}");
        }
    }
}

#[test]
fn concurrent_senders_are_seen_in_one_order_by_all_ports() {
    let mc = Multicast::new();
    let ports: Vec<_> = (0..3).map(|_| mc.port()).collect();
    let senders: Vec<_> = (0..3u32)
        .map(|t| {
            let mc = mc.clone();
            std::thread::spawn(move || (0..300).for_each(|i| mc.send(t * 1000 + i)))
        })
        .collect();
    let readers: Vec<_> = ports
        .into_iter()
        .map(|p| std::thread::spawn(move || (0..900).map(|_| p.recv()).collect::<Vec<u32>>()))
        .collect();
    senders.into_iter().for_each(|t| t.join().unwrap());
    let seen: Vec<Vec<u32>> = readers.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[1], seen[2]);
    for t in 0..3 {
        let mine: Vec<u32> = seen[0].iter().copied().filter(|m| m / 1000 == t).collect();
        assert_eq!(mine, (0..300).map(|i| t * 1000 + i).collect::<Vec<_>>());
    }
}

#[test]
fn recv_evt_in_choices_takes_nothing_when_it_loses() {
    let mc: Multicast<u8> = Multicast::new();
    let p = mc.port();
    let r = pcml::select([
        p.recv_evt().wrap(Some),
        pcml::time::timeout_evt(Duration::from_millis(1)).wrap(|()| None),
    ]);
    assert_eq!(r, None);
    // Loses to a ready channel... or wins: either way nothing is lost.
    let ch: pcml::Chan<u8> = pcml::Chan::new();
    let tx = ch.clone();
    let h = std::thread::spawn(move || tx.send(9));
    mc.send(1);
    let first = pcml::select([p.recv_evt(), ch.recv_evt()]);
    let second = pcml::select([p.recv_evt(), ch.recv_evt()]);
    h.join().unwrap();
    let mut both = [first, second];
    both.sort_unstable();
    assert_eq!(both, [1, 9]);
    assert_eq!(p.try_recv(), None);
    // Two ports in one choice: exactly one message is taken.
    let q = mc.port();
    mc.send(5);
    assert_eq!(pcml::select([p.recv_evt(), q.recv_evt()]), 5);
    assert_eq!(p.len() + q.len(), 1);
}

#[test]
fn recv_evt_awaits_in_pcml_tasks_and_tokio() {
    let r = pcml::run(|| {
        let mc = Multicast::new();
        let p = mc.port();
        let h = pcml::spawn_task(async move { p.recv_evt().await + p.recv_evt().await });
        mc.send(1);
        mc.send(2);
        h.join().unwrap()
    });
    assert_eq!(r, 3);

    let rt = common::tokio_rt();
    rt.block_on(async {
        let mc = Multicast::new();
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let p = mc.port();
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    for _ in 0..100 {
                        got.push(p.recv_evt().await);
                    }
                    got
                })
            })
            .collect();
        for i in 0..100 {
            mc.send(i);
            if i % 10 == 0 {
                tokio::task::yield_now().await;
            }
        }
        for h in hs {
            assert_eq!(h.await.unwrap(), (0..100).collect::<Vec<_>>());
        }
        // A dropped receive takes nothing.
        let p = mc.port();
        tokio::select! {
            _ = p.recv_evt() => panic!("nothing was sent"),
            _ = tokio::time::sleep(Duration::from_millis(1)) => {}
        }
        mc.send(7);
        assert_eq!(p.try_recv(), Some(7));
    });
}

#[test]
fn stress_across_procs_every_port_gets_every_message_once() {
    const N: u32 = 20_000;
    let sums = common::run_on_procs(2, || {
        let mc = Multicast::new();
        // Fibers and tasks read; some ports are copies taken mid-stream.
        let first = mc.port();
        let copy_src = mc.port();
        let fiber_readers: Vec<_> = (0..3)
            .map(|_| {
                let p = mc.port();
                pcml::spawn(move || (0..N).map(|_| u64::from(p.recv())).sum::<u64>())
            })
            .collect();
        let task_readers: Vec<_> = (0..3)
            .map(|_| {
                let p = mc.port();
                pcml::spawn_task(async move {
                    let mut s = 0u64;
                    for _ in 0..N {
                        s += u64::from(p.recv_evt().await);
                    }
                    s
                })
            })
            .collect();
        let tx = mc.clone();
        let sender = pcml::spawn(move || (0..N).for_each(|i| tx.send(i)));
        let copy = copy_src.copy();
        sender.join().unwrap();
        let mut sums: Vec<u64> = fiber_readers
            .into_iter()
            .chain(task_readers)
            .map(|h| h.join().unwrap())
            .collect();
        sums.push((0..N).map(|_| u64::from(first.recv())).sum());
        // The copy holds what `copy_src` held when it was made, and everything later.
        let rest_src: u64 = std::iter::from_fn(|| copy_src.try_recv())
            .map(u64::from)
            .sum();
        let rest_copy: u64 = std::iter::from_fn(|| copy.try_recv()).map(u64::from).sum();
        assert_eq!(rest_src, rest_copy);
        sums
    })
    .unwrap();
    let want: u64 = (0..u64::from(N)).sum();
    assert!(sums.iter().all(|&s| s == want), "{sums:?}");
}

#[test]
fn a_receive_dropped_after_it_won_gives_its_message_back() {
    use std::future::IntoFuture;
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mc = Multicast::new();
    let p = mc.port();
    let mut fut = Box::pin(p.recv_evt().into_future());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    mc.send(1);
    mc.send(2);
    drop(fut);
    assert_eq!(
        (p.try_recv(), p.try_recv(), p.try_recv()),
        (Some(1), Some(2), None)
    );
}

#[test]
fn dropping_the_last_multicast_ends_every_port_loop() {
    let mc = pcml::Multicast::new();
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let p = mc.port();
            std::thread::spawn(move || p.iter().collect::<Vec<u32>>())
        })
        .collect();
    let mc2 = mc.clone();
    for i in 0..10 {
        mc2.send(i);
    }
    drop(mc2);
    assert!(!mc.is_closed()); // another handle lives
    let late = mc.port();
    drop(mc);
    for r in readers {
        assert_eq!(r.join().unwrap(), (0..10).collect::<Vec<_>>());
    }
    assert!(late.is_closed());
    assert_eq!(late.try_recv(), None);
}

#[test]
fn a_closed_multicast_refuses_sends_and_closes_new_ports() {
    let mc = pcml::Multicast::new();
    let p = mc.port();
    mc.send(1);
    assert!(mc.close());
    assert!(!mc.close());
    let q = mc.port();
    assert!(q.is_closed());
    assert_eq!(q.iter().count(), 0);
    assert_eq!(p.iter().collect::<Vec<_>>(), [1]);
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| mc.send(2))).unwrap_err();
    assert!(err.downcast_ref::<String>().unwrap().contains("closed"));
}
