//! Actors at scale: a million async actors (Krook's skynet, 10-ary, six levels), and a
//! message storm with selective receives. Release-mode sizes; debug builds run smaller ones.

use pcml::actor::{self, Ctx, Pid};

/// Skynet: actor `num` at `level` spawns `branch` children (numbers `num * branch + i`) and
/// sends its parent the sum of their sums; a leaf sends its own number.
fn skynet(parent: Pid<u64>, num: u64, level: u32, branch: u64) {
    actor::spawn_async(move |mut ctx: Ctx<u64>| async move {
        if level == 0 {
            let _ = parent.send(num);
            return;
        }
        for i in 0..branch {
            skynet(ctx.pid(), num * branch + i, level - 1, branch);
        }
        let sum: u64 = ctx.recv_many_async(branch as usize).await.into_iter().sum();
        let _ = parent.send(sum);
    });
}

#[test]
fn a_million_async_actors() {
    let levels = if cfg!(debug_assertions) { 4 } else { 6 };
    let leaves = 10u64.pow(levels);
    let total = pcml::Runtime::builder()
        .procs(2)
        .build()
        .unwrap()
        .block_on(move || {
            let mut me = Ctx::<u64>::new();
            skynet(me.pid(), 0, levels, 10);
            me.receive()
        })
        .unwrap();
    assert_eq!(total, leaves * (leaves - 1) / 2);
}

/// Many senders, many receivers with selective receives of their own tags: every message is
/// received exactly once, and each tag's messages in their sender's order.
#[test]
fn a_storm_of_selective_receives_loses_nothing() {
    const RECEIVERS: u64 = 8;
    const SENDERS: u64 = 8;
    const EACH: u64 = 1_000;
    let sums = pcml::Runtime::builder()
        .procs(2)
        .build()
        .unwrap()
        .block_on(|| {
            let mut me = Ctx::<(u64, u64)>::new();
            let receivers: Vec<Pid<(u64, u64)>> = (0..RECEIVERS)
                .map(|r| {
                    let reply = me.pid();
                    actor::spawn_async(move |mut ctx: Ctx<(u64, u64)>| async move {
                        // Take the senders' messages one sender at a time, by selective
                        // receive, checking each sender's order.
                        let mut sum = 0;
                        for s in 0..SENDERS {
                            for i in 0..EACH {
                                let (from, v) = ctx.recv_match(|m| m.0 == s).await;
                                assert_eq!((from, v), (s, i), "receiver {r}");
                                sum += v;
                            }
                        }
                        let _ = reply.send((r, sum));
                    })
                })
                .collect();
            for s in 0..SENDERS {
                let receivers = receivers.clone();
                pcml::spawn(move || {
                    for i in 0..EACH {
                        for r in &receivers {
                            r.send((s, i)).unwrap();
                        }
                        if i % 64 == 0 {
                            pcml::yield_now();
                        }
                    }
                });
            }
            me.recv_many(RECEIVERS as usize)
        })
        .unwrap();
    for (_, sum) in sums {
        assert_eq!(sum, SENDERS * EACH * (EACH - 1) / 2);
    }
}

/// Receive events polled once and dropped while senders race them: every message is received
/// exactly once, by a completed poll or later from the mailbox (a dropped `.await` that was
/// handed a message puts it back), and each sender's messages stay in order.
#[test]
fn dropped_receive_awaits_race_senders_exactly_once() {
    use std::future::{Future, IntoFuture};
    use std::task::{Context, Poll, Waker};

    const SENDERS: u64 = 2;
    const EACH: u64 = 20_000;
    let mut me = Ctx::<(u64, u64)>::new();
    let senders: Vec<_> = (0..SENDERS)
        .map(|s| {
            let pid = me.pid();
            std::thread::spawn(move || {
                for i in 0..EACH {
                    pid.send((s, i)).unwrap();
                }
            })
        })
        .collect();
    let mut cx = Context::from_waker(Waker::noop());
    let mut next = [0u64; SENDERS as usize];
    let mut got = 0;
    let mut check = |(s, i): (u64, u64)| {
        assert_eq!(i, next[s as usize], "sender {s} out of order");
        next[s as usize] += 1;
    };
    let mut k = 0u64;
    while got < SENDERS * EACH {
        k += 1;
        // Alternate plain and selective receives (the latter only wants sender 0).
        let ev = if k % 2 == 0 {
            me.receive_evt()
        } else {
            me.receive_match_evt(|m: &(u64, u64)| m.0 == 0)
        };
        let mut fut = Box::pin(ev.into_future());
        if let Poll::Ready(m) = fut.as_mut().poll(&mut cx) {
            check(m);
            got += 1;
        }
        std::hint::spin_loop();
        drop(fut);
        if k % 7 == 0
            && let Some(m) = me.try_receive()
        {
            check(m);
            got += 1;
        }
    }
    for t in senders {
        t.join().unwrap();
    }
    assert!(me.is_empty());
}
