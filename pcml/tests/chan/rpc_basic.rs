//! rpc: calls from fibers, OS threads, pcml tasks and tokio; a call that loses to a timeout
//! is cancelled (the server's reply reports it and does not block) and the server goes on
//! serving; servers choosing between requests and other events; a cross-proc stress.

use crate::common;

use std::time::Duration;

use pcml::rpc;

#[test]
fn a_call_that_loses_to_a_timeout_does_not_block_the_server() {
    let (outcomes, served) = common::run_on_procs(2, || {
        let (client, server) = rpc::channel::<u32, u32>();
        let outcomes = pcml::Mailbox::new();
        let gate: pcml::Chan<()> = pcml::Chan::new();
        let s = {
            let (outcomes, gate) = (outcomes.clone(), gate.clone());
            pcml::spawn(move || {
                // First request: hold it until the client has given up, then answer.
                let (n, reply) = server.recv();
                gate.recv();
                outcomes.send(reply.send(n * 2));
                // Next client: served normally.
                let (n, reply) = server.recv();
                outcomes.send(reply.send(n * 2));
                2
            })
        };
        let first = client.call_evt(1).sync_timeout(Duration::from_millis(5));
        assert_eq!(first, None);
        gate.send(());
        // The server's reply to the abandoned call reports it was not delivered.
        let o1 = outcomes.recv();
        let other = client.clone();
        let second = pcml::spawn(move || other.call(21)).join().unwrap();
        assert_eq!(second, 42);
        let o2 = outcomes.recv();
        ((o1, o2), s.join().unwrap())
    })
    .unwrap();
    assert_eq!(outcomes, (false, true));
    assert_eq!(served, 2);
}

#[test]
fn a_call_losing_a_choice_to_another_server_is_cancelled() {
    // Figure 2/4 of Reppy, Russo and Xiao 2009: ask two servers, take whichever answers first.
    let (c1, s1) = rpc::channel::<u32, &'static str>();
    let (c2, s2) = rpc::channel::<u32, &'static str>();
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let fast = std::thread::spawn(move || {
        let delivered = s1.serve(|_| "fast");
        done_tx.send(()).unwrap();
        delivered
    });
    let slow = std::thread::spawn(move || {
        let (_, reply) = s2.recv();
        // Answer only once the client's choice has completed with the fast server.
        done_rx.recv().unwrap();
        reply.send("slow")
    });
    let got = pcml::select([c1.call_evt(1), c2.call_evt(2)]);
    assert!(fast.join().unwrap());
    assert_eq!(got, "fast");
    assert!(
        !slow.join().unwrap(),
        "the slow server's reply must not be delivered"
    );
}

#[test]
fn servers_choose_between_requests_and_other_events() {
    let (client, server) = rpc::channel::<u64, u64>();
    let ticks: pcml::Chan<()> = pcml::Chan::new();
    let stop: pcml::Chan<()> = pcml::Chan::new();
    let s = {
        let (ticks, stop) = (ticks.clone(), stop.clone());
        std::thread::spawn(move || {
            enum Msg {
                Call(u64, rpc::Reply<u64>),
                Tick,
                Stop,
            }
            let mut count = 0;
            loop {
                match pcml::select([
                    server.recv_evt().wrap(|(n, r)| Msg::Call(n, r)),
                    ticks.recv_evt().wrap(|()| Msg::Tick),
                    stop.recv_evt().wrap(|()| Msg::Stop),
                ]) {
                    Msg::Call(n, r) => {
                        r.send(n + count);
                    }
                    Msg::Tick => count += 100,
                    Msg::Stop => return count,
                }
            }
        })
    };
    assert_eq!(client.call(1), 1);
    ticks.send(());
    assert_eq!(client.call(1), 101);
    stop.send(());
    assert_eq!(s.join().unwrap(), 100);
}

#[test]
fn calls_await_in_pcml_tasks_and_tokio_and_dropped_calls_are_cancelled() {
    let r = pcml::run(|| {
        let (client, server) = rpc::channel::<u32, u32>();
        let s = pcml::spawn_task(async move {
            for _ in 0..50 {
                let (n, reply) = server.recv_evt().await;
                assert!(reply.send_evt(n + 1).await);
            }
        });
        let c = pcml::spawn_task(async move {
            let mut sum = 0;
            for i in 0..50 {
                sum += client.call_evt(i).await;
            }
            sum
        });
        s.join().unwrap();
        c.join().unwrap()
    });
    assert_eq!(r, (1..=50).sum::<u32>());

    let rt = common::tokio_rt();
    rt.block_on(async {
        let (client, server) = rpc::channel::<u32, u32>();
        // A dropped call: its request is still queued, and answering it reports the loss.
        tokio::select! {
            _ = client.call_evt(7) => panic!("nobody serves yet"),
            _ = tokio::time::sleep(Duration::from_millis(1)) => {}
        }
        let (n, reply) = server.try_recv().expect("the dropped call's request");
        assert_eq!(n, 7);
        assert!(!reply.send_evt(0).await);
        // An OS thread serves tokio clients.
        let s = std::thread::spawn(move || (0..100).filter(|_| server.serve(|n| n * 3)).count());
        let hs: Vec<_> = (0..4u32)
            .map(|t| {
                let client = client.clone();
                tokio::spawn(async move {
                    for i in 0..25 {
                        assert_eq!(client.call_evt(t * 100 + i).await, 3 * (t * 100 + i));
                    }
                })
            })
            .collect();
        for h in hs {
            h.await.unwrap();
        }
        assert_eq!(s.join().unwrap(), 100);
    });
}

#[test]
fn stress_deliveries_match_completed_calls() {
    // Clients on fibers and tasks call with short timeouts; two server fibers count the
    // answers delivered. Every delivered answer is a completed call, and vice versa.
    let (delivered, completed) = common::run_on_procs(2, || {
        let (client, server) = rpc::channel::<u64, u64>();
        let stop: pcml::Chan<()> = pcml::Chan::new();
        let servers: Vec<_> = (0..2)
            .map(|_| {
                let (server, stop) = (server.clone(), stop.clone());
                pcml::spawn(move || {
                    let mut delivered = 0u64;
                    loop {
                        let req = pcml::select([
                            server.recv_evt().wrap(Some),
                            stop.recv_evt().wrap(|()| None),
                        ]);
                        let Some((n, reply)) = req else {
                            return delivered;
                        };
                        if n % 3 == 0 {
                            pcml::yield_now();
                        }
                        delivered += u64::from(reply.send(n));
                    }
                })
            })
            .collect();
        let mut clients = Vec::new();
        for c in 0..3u64 {
            let client = client.clone();
            clients.push(pcml::spawn(move || {
                let mut done = 0u64;
                for i in 0..1500 {
                    let t = Duration::from_micros(5 + 10 * c);
                    if let Some(v) = client.call_evt(i).sync_timeout(t) {
                        assert_eq!(v, i);
                        done += 1;
                    }
                }
                done
            }));
        }
        for _ in 0..2 {
            let client = client.clone();
            clients.push(pcml::spawn_task(async move {
                let mut done = 0u64;
                for i in 0..1500 {
                    let got = pcml::choose([
                        client.call_evt(i).wrap(Some),
                        pcml::time::timeout_evt(Duration::from_micros(10)).wrap(|_| None),
                    ])
                    .await;
                    done += u64::from(got.is_some());
                }
                done
            }));
        }
        let completed: u64 = clients.into_iter().map(|h| h.join().unwrap()).sum();
        // Answer whatever abandoned requests are left, then stop the servers.
        while !server.is_empty() {
            pcml::yield_now();
        }
        for _ in 0..2 {
            stop.send(());
        }
        let delivered: u64 = servers.into_iter().map(|h| h.join().unwrap()).sum();
        (delivered, completed)
    })
    .unwrap();
    assert_eq!(delivered, completed);
}

#[test]
fn dropped_awaits_after_they_won_keep_the_request_and_lose_only_the_answer() {
    use std::future::IntoFuture;
    use std::task::Poll;
    fn poll_once<F: std::future::Future + Unpin>(fut: &mut F) -> Poll<F::Output> {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        std::pin::Pin::new(fut).poll(&mut cx)
    }
    let (client, server) = rpc::channel::<u32, u32>();

    // The server's receive is handed the request, then dropped: the request goes back.
    let mut recv = server.recv_evt().into_future();
    assert!(poll_once(&mut recv).is_pending());
    let mut call = client.call_evt(5).into_future();
    assert!(poll_once(&mut call).is_pending());
    assert!(server.is_empty(), "the request went to the blocked receive");
    drop(recv);
    let (req, reply) = server.try_recv().expect("the request came back");
    assert_eq!(req, 5);
    assert!(reply.send(6));
    assert_eq!(poll_once(&mut call), Poll::Ready(6));

    // The call is handed the answer, then dropped: `send` said delivered, and the answer is
    // gone with the call (a synchronous reply cannot be given back).
    let mut call = client.call_evt(7).into_future();
    assert!(poll_once(&mut call).is_pending());
    let (req, reply) = server.try_recv().unwrap();
    assert!(reply.send(req + 1));
    drop(call);
    assert!(server.is_empty());
}
