//! Channels from fibers, OS threads and async tasks: rendezvous, try_*, ordering, clones,
//! the dead-offer sweep.

use pcml::chan::Chan;
use pcml::event::{choose, select};

fn rt(procs: usize) -> pcml::Runtime {
    pcml::Runtime::builder().procs(procs).build().unwrap()
}

#[test]
fn fiber_ping_pong_one_proc() {
    rt(1)
        .block_on(|| {
            let (ping, pong) = (Chan::new(), Chan::new());
            let (p2, q2) = (ping.clone(), pong.clone());
            let h = pcml::spawn(move || {
                for _ in 0..1000 {
                    let v: u32 = p2.recv();
                    q2.send(v + 1);
                }
            });
            for i in 0..1000 {
                ping.send(i);
                assert_eq!(pong.recv(), i + 1);
            }
            h.join().unwrap();
        })
        .unwrap();
}

#[test]
fn fiber_ping_pong_two_procs() {
    rt(2)
        .block_on(|| {
            let (ping, pong) = (Chan::new(), Chan::new());
            let (p2, q2) = (ping.clone(), pong.clone());
            let h = pcml::spawn_on(1, move || {
                for _ in 0..2000 {
                    let v: u32 = p2.recv();
                    q2.send(v + 1);
                }
            });
            for i in 0..2000 {
                ping.send(i);
                assert_eq!(pong.recv(), i + 1);
            }
            h.join().unwrap();
        })
        .unwrap();
}

#[test]
fn os_threads_rendezvous() {
    let ch = Chan::new();
    let tx = ch.clone();
    let t = std::thread::spawn(move || {
        for i in 0..500u64 {
            tx.send(i);
        }
    });
    let sum: u64 = (0..500).map(|_| ch.recv()).sum();
    assert_eq!(sum, 500 * 499 / 2);
    t.join().unwrap();
}

#[test]
fn os_thread_and_fiber_meet() {
    let ch = Chan::new();
    let tx = ch.clone();
    let t = std::thread::spawn(move || {
        for i in 0..300u32 {
            tx.send(i);
        }
    });
    // pcml cannot see the OS thread, so deadlock detection must be off.
    let got = pcml::Runtime::builder()
        .procs(1)
        .detect_deadlock(false)
        .build()
        .unwrap()
        .block_on(move || (0..300).map(|_| ch.recv()).collect::<Vec<u32>>())
        .unwrap();
    assert_eq!(got, (0..300).collect::<Vec<_>>());
    t.join().unwrap();
}

#[test]
fn try_send_and_try_recv_need_a_waiting_partner() {
    let ch: Chan<i32> = Chan::new();
    assert_eq!(ch.try_send(1), Err(1));
    assert_eq!(ch.try_recv(), None);
    let rx = ch.clone();
    let t = std::thread::spawn(move || rx.recv());
    // Wait until the receiver is blocked, then hand over.
    let mut v = 7;
    loop {
        match ch.try_send(v) {
            Ok(()) => break,
            Err(back) => {
                v = back;
                std::thread::yield_now();
            }
        }
    }
    assert_eq!(t.join().unwrap(), 7);
    let tx = ch.clone();
    let t = std::thread::spawn(move || tx.send(9));
    let got = loop {
        if let Some(x) = ch.try_recv() {
            break x;
        }
        std::thread::yield_now();
    };
    assert_eq!(got, 9);
    t.join().unwrap();
}

#[test]
fn one_sender_messages_arrive_in_order() {
    pcml::run(|| {
        let ch = Chan::new();
        let tx = ch.clone();
        pcml::spawn(move || (0..1000u32).for_each(|i| tx.send(i)));
        for i in 0..1000 {
            assert_eq!(ch.recv(), i);
        }
    });
}

#[test]
fn async_tasks_send_and_receive() {
    let got = rt(2)
        .block_on(|| {
            let ch = Chan::new();
            let tx = ch.clone();
            let a = pcml::spawn_task(async move {
                for i in 0..500u32 {
                    tx.send_evt(i).await;
                }
            });
            let b = pcml::spawn_task(async move {
                let mut sum = 0u64;
                for _ in 0..500 {
                    sum += u64::from(ch.recv_evt().await);
                }
                sum
            });
            a.join().unwrap();
            b.join().unwrap()
        })
        .unwrap();
    assert_eq!(got, 500 * 499 / 2);
}

#[test]
fn tokio_task_meets_os_thread() {
    let ch = Chan::new();
    let tx = ch.clone();
    let t = std::thread::spawn(move || {
        for i in 0..200u32 {
            tx.send(i);
        }
    });
    let r = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let sum = r.block_on(async move {
        let mut s = 0u32;
        for _ in 0..200 {
            s += ch.recv_evt().await;
        }
        s
    });
    assert_eq!(sum, 200 * 199 / 2);
    t.join().unwrap();
}

#[test]
#[should_panic(expected = "use `.await`")]
fn blocking_recv_inside_a_task_panics_with_advice() {
    rt(1)
        .block_on(|| {
            let ch: Chan<u8> = Chan::new();
            let h = pcml::spawn_task(async move { ch.recv() });
            if let Err(e) = h.join() {
                std::panic::resume_unwind(e.into_panic());
            }
        })
        .unwrap();
}

#[test]
fn idle_channel_queue_stays_bounded() {
    pcml::run(|| {
        let busy = Chan::new();
        let idle: Chan<u32> = Chan::new();
        let tx = busy.clone();
        pcml::spawn(move || (0..2000u32).for_each(|i| tx.send(i)));
        let mut max_len = 0;
        for _ in 0..2000 {
            select([busy.recv_evt(), idle.recv_evt()]);
            max_len = max_len.max(idle.queue_lens().1);
        }
        assert!(max_len <= 16, "idle receive queue grew to {max_len}");
    });
}

#[test]
fn clones_are_the_same_channel() {
    let a: Chan<u8> = Chan::new();
    let b = a.clone();
    assert_eq!(a, b);
    assert_ne!(a, Chan::new());
    fn send_sync<T: Send + Sync + Clone>() {}
    send_sync::<Chan<Box<u8>>>();
    let _ = choose([a.recv_evt(), b.recv_evt()]);
}

/// A message that counts its drops.
struct Counted(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn fibers_dropped_while_blocked_withdraw_their_offers() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let drops = Arc::new(AtomicUsize::new(0));
    let (sends, recvs) = (Chan::<Counted>::new(), Chan::<Counted>::new());
    let (a, b, d) = (sends.clone(), recvs.clone(), drops.clone());
    rt(2)
        .block_on(move || {
            let (a2, b2) = (a.clone(), b.clone());
            // Blocked forever when main returns: a send holding its message, and a receive.
            drop(pcml::spawn_on(0, move || a2.send(Counted(d))));
            drop(pcml::spawn_on(1, move || drop(b2.recv())));
            while a.queue_lens() != (1, 0) || b.queue_lens() != (0, 1) {
                pcml::yield_now();
            }
        })
        .unwrap();
    // Shutdown dropped both fibers: each withdrew its offer, and the message was dropped once.
    assert_eq!(drops.load(Ordering::SeqCst), 1);
    assert_eq!(sends.queue_lens(), (0, 0));
    assert_eq!(recvs.queue_lens(), (0, 0));
    assert!(recvs.try_send(Counted(drops.clone())).is_err());
    assert_eq!(drops.load(Ordering::SeqCst), 2);
}

#[test]
fn many_senders_and_receivers_on_one_channel_meet_exactly_once() {
    // Direct sends and receives from fibers on two procs and an OS thread, and receive events
    // in a choice, all on one channel: every message is received exactly once.
    let got = rt(2)
        .block_on(|| {
            let ch = Chan::new();
            let other: Chan<u32> = Chan::new();
            let mut hs = Vec::new();
            for s in 0..4u32 {
                let tx = ch.clone();
                hs.push(pcml::spawn_on(s as usize % 2, move || {
                    for i in 0..500 {
                        tx.send(s * 1000 + i);
                    }
                    Vec::new()
                }));
            }
            let tx = ch.clone();
            let t = std::thread::spawn(move || (0..500).for_each(|i| tx.send(4000 + i)));
            for r in 0..3usize {
                let (rx, o) = (ch.clone(), other.clone());
                hs.push(pcml::spawn_on(r % 2, move || {
                    let mut v = Vec::new();
                    for _ in 0..500 {
                        if r == 0 {
                            v.push(select([rx.recv_evt(), o.recv_evt()]));
                        } else {
                            v.push(rx.recv());
                        }
                    }
                    v
                }));
            }
            let mut all: Vec<u32> = (0..1000).map(|_| ch.recv()).collect();
            for h in hs {
                all.extend(h.join().unwrap());
            }
            t.join().unwrap();
            all
        })
        .unwrap();
    let mut got = got;
    got.sort();
    let want: Vec<u32> = (0..5)
        .flat_map(|s| (0..500).map(move |i| s * 1000 + i))
        .collect();
    assert_eq!(got, want);
}
