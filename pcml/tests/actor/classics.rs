//! Classic actor programs, written for pcml's API: a token ring (Armstrong's ring
//! benchmark), ping-pong between fiber and async actors, and a priority mailbox built from
//! selective receive.

use pcml::actor::{self, Ctx, Pid};

fn rt() -> pcml::Runtime {
    pcml::Runtime::builder().procs(2).build().unwrap()
}

/// A ring of N actors (half fibers, half tasks) passes a token around LAPS times.
#[test]
fn a_token_ring() {
    const N: usize = 1_000;
    const LAPS: u64 = 10;
    let total = rt()
        .block_on(|| {
            let mut me = Ctx::<u64>::new();
            let done = me.pid();
            // A chain of N actors, built from its end; the main fiber closes the ring, passing
            // the token from the end back to the head for the next lap.
            let last = actor::spawn_async(move |mut ctx: Ctx<u64>| async move {
                loop {
                    let n = ctx.recv().await;
                    if n == 0 {
                        return;
                    }
                    let _ = done.send(n);
                }
            });
            let mut next = last.clone();
            for i in 0..N - 1 {
                let to = next.clone();
                next = if i % 2 == 0 {
                    actor::spawn_async(move |mut ctx: Ctx<u64>| async move {
                        loop {
                            let n = ctx.recv().await;
                            let _ = to.send(n);
                            if n == 0 {
                                return;
                            }
                        }
                    })
                } else {
                    actor::spawn(move |mut ctx: Ctx<u64>| {
                        loop {
                            let n = ctx.receive();
                            let _ = to.send(n);
                            if n == 0 {
                                return;
                            }
                        }
                    })
                };
            }
            // `next` is the head of the chain; send the token around LAPS times.
            let mut token = 1u64;
            for _ in 0..LAPS {
                next.send(token).unwrap();
                token = me.receive() + 1;
            }
            next.send(0).unwrap();
            token - 1
        })
        .unwrap();
    assert_eq!(total, LAPS);
}

/// Ping-pong between a fiber actor and an async actor, each message a round trip's half.
#[test]
fn ping_pong_between_fiber_and_async_actors() {
    const ROUNDS: u32 = 10_000;
    let last = rt()
        .block_on(|| {
            let mut me = Ctx::<u32>::new();
            let report = me.pid();
            let pong = actor::spawn_async(|mut ctx: Ctx<(u32, Pid<u32>)>| async move {
                loop {
                    let (n, from) = ctx.recv().await;
                    if from.send(n + 1).is_err() || n + 1 >= ROUNDS {
                        return;
                    }
                }
            });
            actor::spawn(move |mut ctx: Ctx<u32>| {
                let mut n = 0;
                while n < ROUNDS {
                    pong.send((n, ctx.pid())).unwrap();
                    n = ctx.receive() + 1;
                }
                report.send(n).unwrap();
            });
            me.receive()
        })
        .unwrap();
    assert!(last >= ROUNDS);
}

/// A server that always serves urgent requests first, by selective receive: whatever order
/// they arrive in, every urgent one is answered before any normal one that waited with it.
#[test]
fn a_priority_server_by_selective_receive() {
    #[derive(Debug)]
    enum Req {
        Urgent(u32),
        Normal(u32),
        Go(Pid<Vec<u32>>),
    }
    let order = rt()
        .block_on(|| {
            let server = actor::spawn(|mut ctx: Ctx<Req>| {
                // Wait for the go-ahead, so everything below is queued first.
                let Req::Go(reply) = ctx.receive_match(|m| matches!(m, Req::Go(_))) else {
                    unreachable!()
                };
                let mut served = Vec::new();
                while !ctx.is_empty() {
                    let r = match ctx.try_receive_match(|m| matches!(m, Req::Urgent(_))) {
                        Some(r) => r,
                        None => ctx.receive(),
                    };
                    match r {
                        Req::Urgent(n) | Req::Normal(n) => served.push(n),
                        Req::Go(_) => unreachable!(),
                    }
                }
                let _ = reply.send(served);
            });
            for i in 0..20 {
                let req = if i % 3 == 0 {
                    Req::Urgent(i)
                } else {
                    Req::Normal(i)
                };
                server.send(req).unwrap();
            }
            let mut me = Ctx::new();
            server.send(Req::Go(me.pid())).unwrap();
            me.receive()
        })
        .unwrap();
    let urgent: Vec<u32> = (0..20).filter(|i| i % 3 == 0).collect();
    let normal: Vec<u32> = (0..20).filter(|i| i % 3 != 0).collect();
    assert_eq!(order, [urgent, normal].concat());
}
