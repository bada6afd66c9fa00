//! Actors failing the Erlang way: links, trapped exits, monitors, kills, under panics, in
//! fiber and async actors.

use std::time::Duration;

use pcml::actor::{self, Ctx, ExitReason, Received, Signal};

fn rt() -> pcml::Runtime {
    pcml::Runtime::builder().procs(2).build().unwrap()
}

fn panic_reason(m: &str) -> ExitReason {
    ExitReason::Panic(m.into())
}

/// A panic kills the linked peer (which does not trap), whose death reaches a trapping
/// observer with the chain of reasons.
#[test]
fn a_panic_kills_linked_peers_that_do_not_trap() {
    rt().block_on(|| {
        let mut me = Ctx::<()>::new();
        me.trap_exits(true);
        // `peer` links to `crasher` and waits; `me` links to `peer`.
        let crasher = actor::spawn(|mut ctx: Ctx<()>| {
            ctx.receive();
            panic!("crash");
        });
        let c = crasher.clone();
        let mut linked = Ctx::<()>::new();
        let ready = linked.pid();
        let peer = me.spawn_link(move |mut ctx: Ctx<u8>| {
            ctx.link(&c);
            ready.send(()).unwrap();
            ctx.receive(); // killed here
            unreachable!("a killed actor's receive never returns");
        });
        // The peer is linked before the crash.
        linked.receive();
        crasher.send(()).unwrap();
        match me.receive_signal() {
            Signal::Exit { from, reason } => {
                assert_eq!(from, peer.id());
                assert_eq!(
                    reason,
                    ExitReason::Linked {
                        from: crasher.id(),
                        reason: panic_reason("crash").into()
                    }
                );
            }
            s => panic!("unexpected {s:?}"),
        }
        assert!(!peer.is_alive() && !crasher.is_alive());
    })
    .unwrap();
}

/// Actors still blocked when their runtime shuts down are closed quietly: their pids report
/// them dead, sends fail, and nobody is told (their watchers are going too).
#[test]
fn blocked_actors_end_at_runtime_shutdown() {
    let pids = rt()
        .block_on(|| {
            let watcher = actor::spawn(|mut c: Ctx<()>| {
                c.trap_exits(true);
                c.receive_signal();
            });
            let mut pids = Vec::new();
            for _ in 0..10 {
                let p = actor::spawn(|mut c: Ctx<u8>| {
                    c.receive();
                });
                let q = actor::spawn_async(|mut c: Ctx<u8>| async move {
                    c.recv().await;
                });
                pids.push(p);
                pids.push(q);
            }
            // Let them block.
            pcml::time::sleep(Duration::from_millis(2));
            (pids, watcher)
        })
        .unwrap();
    let (pids, watcher) = pids;
    assert!(!watcher.is_alive());
    for p in pids {
        assert!(!p.is_alive());
        assert_eq!(p.send(1).unwrap_err().into_inner(), 1);
    }
}

/// A trapping actor survives its linked peer's panic and gets the exit as a signal; its
/// messages are untouched.
#[test]
fn trapping_actors_receive_exits_as_signals() {
    rt().block_on(|| {
        let mut me = Ctx::<String>::new();
        let reply = me.pid();
        let trapper = actor::spawn(move |mut ctx: Ctx<u32>| {
            ctx.trap_exits(true);
            let child = ctx.spawn_link(|mut c: Ctx<()>| {
                c.receive();
                panic!("child failed");
            });
            child.send(()).unwrap();
            let first = ctx.receive_any();
            let msg = match first {
                Received::Signal(Signal::Exit { from, reason }) => {
                    assert_eq!(from, child.id());
                    reason.to_string()
                }
                other => format!("unexpected {other:?}"),
            };
            reply.send(msg).unwrap();
            // Still alive and receiving.
            let n = ctx.receive();
            reply.send(format!("got {n}")).unwrap();
        });
        assert_eq!(me.receive(), "panicked: child failed");
        trapper.send(5).unwrap();
        assert_eq!(me.receive(), "got 5");
    })
    .unwrap();
}

/// A normal exit does not kill a linked peer that does not trap.
#[test]
fn normal_exits_do_not_kill_linked_peers() {
    rt().block_on(|| {
        let mut me = Ctx::<&'static str>::new();
        let reply = me.pid();
        let pid = actor::spawn(move |mut ctx: Ctx<u8>| {
            let child = ctx.spawn_link(|_: Ctx<()>| {});
            while child.is_alive() {
                pcml::yield_now();
            }
            ctx.receive();
            reply.send("survived").unwrap();
        });
        pid.send(0).unwrap();
        assert_eq!(me.receive(), "survived");
    })
    .unwrap();
}

/// Monitors get down signals with the reason for every way an actor ends; a monitor of a
/// dead actor reports NoActor at once; demonitor drops a queued down.
#[test]
fn monitors_report_every_end() {
    rt().block_on(|| {
        let mut me = Ctx::<()>::new();
        let cases: Vec<(ExitReason, actor::Pid<()>, actor::MonitorRef)> = vec![
            {
                let (p, m) = me.spawn_monitor(|_: Ctx<()>| {});
                (ExitReason::Normal, p, m)
            },
            {
                let (p, m) = me.spawn_monitor(|_: Ctx<()>| panic!("fiber"));
                (panic_reason("fiber"), p, m)
            },
            {
                let (p, m) = me.spawn_monitor_async(|_: Ctx<()>| async { panic!("task") });
                (panic_reason("task"), p, m)
            },
            {
                let (p, m) = me.spawn_monitor(|_: Ctx<()>| pcml::exit());
                (ExitReason::Exited, p, m)
            },
            {
                let (p, m) = me.spawn_monitor(|mut c: Ctx<()>| {
                    c.receive();
                });
                p.kill("stop");
                (ExitReason::Killed("stop".into()), p, m)
            },
        ];
        let mut downs = Vec::new();
        for _ in 0..cases.len() {
            downs.push(me.receive_signal());
        }
        for (reason, pid, mref) in cases {
            let expected = Signal::Down {
                monitor: mref,
                actor: pid.id(),
                reason,
            };
            assert!(
                downs.contains(&expected),
                "missing {expected:?} in {downs:?}"
            );
        }
        // Monitoring the dead.
        let dead = Ctx::<u8>::new().pid();
        let m = me.monitor(&dead);
        assert_eq!(
            me.receive_signal(),
            Signal::Down {
                monitor: m,
                actor: dead.id(),
                reason: ExitReason::NoActor
            }
        );
        // Demonitor before and after the death.
        let other = Ctx::<u8>::new();
        let m1 = me.monitor(&other.pid());
        let m2 = me.monitor(&other.pid());
        me.demonitor(&m1);
        drop(other);
        me.demonitor(&m2);
        assert_eq!(me.try_receive_signal(), None);
    })
    .unwrap();
}

/// A kill ends an actor blocked in each kind of receive: direct, selective, many, signal,
/// a receive event in a choice, and async.
#[test]
fn kills_interrupt_every_kind_of_receive() {
    rt().block_on(|| {
        let mut me = Ctx::<()>::new();
        let ch = pcml::Chan::<u8>::new();
        let mut pids = Vec::new();
        pids.push(me.spawn_monitor(|mut c: Ctx<u8>| {
            c.receive();
        }));
        pids.push(me.spawn_monitor(|mut c: Ctx<u8>| {
            c.receive_match(|m| *m == 9);
        }));
        pids.push(me.spawn_monitor(|mut c: Ctx<u8>| {
            c.recv_many(3);
        }));
        pids.push(me.spawn_monitor(|mut c: Ctx<u8>| {
            c.receive_signal();
        }));
        let ch2 = ch.clone();
        pids.push(me.spawn_monitor(move |c: Ctx<u8>| {
            pcml::select([c.receive_evt(), ch2.recv_evt()]);
        }));
        pids.push(me.spawn_monitor_async(|mut c: Ctx<u8>| async move {
            c.recv().await;
        }));
        pids.push(me.spawn_monitor_async(|c: Ctx<u8>| async move {
            c.receive_evt().await;
        }));
        // Let them block (a kill before they block works too), then kill them all.
        pcml::time::sleep(Duration::from_millis(5));
        for (p, _) in &pids {
            p.kill("test");
        }
        for _ in 0..pids.len() {
            let Signal::Down { reason, .. } = me.receive_signal() else {
                panic!("only downs expected")
            };
            assert_eq!(reason, ExitReason::Killed("test".into()));
        }
    })
    .unwrap();
}

/// Killed for sure while blocked: nobody sends them anything.
#[test]
fn kills_end_blocked_actors_with_the_kill_reason() {
    rt().block_on(|| {
        let mut me = Ctx::<()>::new();
        let ch = pcml::Chan::<u8>::new();
        let ch2 = ch.clone();
        let a = me.spawn_monitor(move |c: Ctx<u8>| {
            pcml::select([c.receive_evt(), ch2.recv_evt()]);
        });
        let b = me.spawn_monitor_async(|mut c: Ctx<u8>| async move {
            c.recv_match(|m| *m == 0).await;
        });
        let c = me.spawn_monitor(|mut c: Ctx<u8>| {
            c.receive_any();
        });
        pcml::time::sleep(Duration::from_millis(5));
        for p in [&a.0, &b.0, &c.0] {
            p.kill("why");
        }
        for _ in 0..3 {
            let Signal::Down { reason, .. } = me.receive_signal() else {
                unreachable!()
            };
            assert_eq!(reason, ExitReason::Killed("why".into()));
        }
    })
    .unwrap();
}

/// Linking to an actor that has ended gives a NoActor exit at once (trapped here).
#[test]
fn linking_to_the_dead_gives_no_actor() {
    let mut me = Ctx::<()>::new();
    me.trap_exits(true);
    let dead = Ctx::<u8>::new().pid();
    me.link(&dead);
    assert_eq!(
        me.receive_signal(),
        Signal::Exit {
            from: dead.id(),
            reason: ExitReason::NoActor
        }
    );
}

/// Unlinked actors are not told; a chain of links takes everyone down except the trapper at
/// its end.
#[test]
fn a_chain_of_links_falls_together() {
    rt().block_on(|| {
        let mut me = Ctx::<()>::new();
        me.trap_exits(true);
        // me <- a0 <- a1 <- ... <- a19, each linked to the previous; the last one panics.
        let mut prev = me.spawn_link(|mut c: Ctx<u8>| {
            c.receive();
        });
        let first = prev.clone();
        let mut all = vec![prev.clone()];
        for i in 0..19 {
            let p = prev.clone();
            let last = i == 18;
            let mut started = Ctx::<()>::new();
            let ready = started.pid();
            let next = actor::spawn(move |mut c: Ctx<u8>| {
                c.link(&p);
                ready.send(()).unwrap();
                c.receive();
                if last {
                    panic!("end of chain");
                }
            });
            started.receive();
            all.push(next.clone());
            prev = next;
        }
        prev.send(0).unwrap();
        let Signal::Exit { from, reason } = me.receive_signal() else {
            unreachable!()
        };
        assert_eq!(from, first.id());
        assert!(matches!(reason, ExitReason::Linked { .. }));
        for p in &all {
            while p.is_alive() {
                pcml::yield_now();
            }
        }
    })
    .unwrap();
}

/// Many linked pairs fail at once on both procs: every trapper sees exactly one exit.
#[test]
fn many_panics_under_links_and_monitors() {
    const N: usize = 500;
    rt().block_on(|| {
        let mut me = Ctx::<()>::new();
        me.trap_exits(true);
        let mut ids = std::collections::HashSet::new();
        for i in 0..N {
            let pid = if i % 2 == 0 {
                me.spawn_link(|mut c: Ctx<u32>| {
                    let n = c.receive();
                    assert!(n > 1_000, "small {n}");
                })
            } else {
                me.spawn_link_async(|mut c: Ctx<u32>| async move {
                    let n = c.recv().await;
                    assert!(n > 1_000, "small {n}");
                })
            };
            me.monitor(&pid);
            ids.insert(pid.id());
            pid.send(i as u32).unwrap();
        }
        let (mut exits, mut downs) = (ids.clone(), ids);
        for _ in 0..2 * N {
            match me.receive_signal() {
                Signal::Exit { from, reason } => {
                    assert!(matches!(reason, ExitReason::Panic(_)));
                    assert!(exits.remove(&from));
                }
                Signal::Down { actor, reason, .. } => {
                    assert!(matches!(reason, ExitReason::Panic(_)));
                    assert!(downs.remove(&actor));
                }
            }
        }
        assert!(exits.is_empty() && downs.is_empty());
    })
    .unwrap();
}

/// A `Ctx::new` context that is killed panics with a message saying why.
#[test]
fn a_killed_plain_context_panics_with_the_reason() {
    let mut me = Ctx::<u8>::new();
    me.pid().kill("from a test");
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| me.receive()))
        .expect_err("a killed context's receive panics");
    let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("killed: from a test"), "{msg}");
}

/// A receive predicate that panics while a sender tests its message (on the sender's thread)
/// fails the receive, not the send: the sender goes on, every message stays in the mailbox,
/// and the receiver's sync unwinds with the predicate's panic.
#[test]
fn a_predicate_panicking_on_a_senders_thread_fails_the_receive_not_the_send() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    let me = Ctx::<u32>::new();
    let home = std::thread::current().id();
    // On the receiver's own thread it rejects everything; on any other thread it panics.
    let evt = me.receive_match_evt(move |_: &u32| {
        assert!(std::thread::current().id() == home, "seven on a sender");
        false
    });
    let pid = me.pid();
    let done = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let sender = {
        let (done, sent) = (done.clone(), sent.clone());
        std::thread::spawn(move || {
            // Until the receiver has blocked, messages queue and it tests them itself.
            while !done.load(Ordering::Acquire) {
                pid.send(7).expect("the receiver is alive");
                sent.fetch_add(1, Ordering::Release);
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| evt.sync()))
        .expect_err("the receive fails");
    done.store(true, Ordering::Release);
    sender.join().expect("the sender never panics");
    let msg = unwound
        .downcast_ref::<String>()
        .expect("a panic with a message");
    assert!(msg.contains("seven on a sender"), "{msg}");
    let mut me = me;
    let mut kept = 0;
    while let Some(m) = me.try_receive() {
        assert_eq!(m, 7);
        kept += 1;
    }
    assert_eq!(kept, sent.load(Ordering::Acquire));
}

/// Expected: a kill reaches a fiber actor blocked anywhere in pcml, not only in its own
/// receives: a channel, a choice with a nack, an MVar, a join, a sleep, a yield loop. Its sync
/// loses (offers withdrawn, nacks fire, nothing taken), its destructors run, and its monitors
/// and links learn the kill's reason.
#[test]
fn kills_reach_fiber_actors_blocked_outside_their_mailbox() {
    use pcml::event::{choose, with_nack};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    struct Count(Arc<AtomicUsize>);
    impl Drop for Count {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    for procs in [1, 2] {
        pcml::Runtime::builder()
            .procs(procs)
            .build()
            .unwrap()
            .block_on(|| {
                let mut me = Ctx::<()>::new();
                me.trap_exits(true);
                let mut ready = Ctx::<()>::new();
                let dropped = Arc::new(AtomicUsize::new(0));
                let ch = pcml::Chan::<u8>::new();
                let mv = pcml::MVar::<u8>::new();
                let nacked = pcml::IVar::new();
                let forever = pcml::Chan::<()>::new();
                let mut pids = Vec::new();
                let spawn = |me: &Ctx<()>, body: Box<dyn FnOnce() + Send>| {
                    let (r, d) = (ready.pid(), Count(dropped.clone()));
                    me.spawn_link(move |_: Ctx<u8>| {
                        let _d = d;
                        r.send(()).unwrap();
                        body();
                    })
                };
                let c = ch.clone();
                pids.push(spawn(
                    &me,
                    Box::new(move || {
                        c.recv();
                    }),
                ));
                let (c, n) = (ch.clone(), nacked.clone());
                pids.push(spawn(
                    &me,
                    Box::new(move || {
                        choose([
                            with_nack(move |nack| {
                                pcml::spawn(move || {
                                    nack.sync();
                                    n.put(()).unwrap()
                                });
                                c.recv_evt()
                            }),
                            pcml::time::timeout_evt(Duration::from_secs(3600)).wrap(|()| 0),
                        ])
                        .sync();
                    }),
                ));
                let m = mv.clone();
                pids.push(spawn(
                    &me,
                    Box::new(move || {
                        m.take();
                    }),
                ));
                let f = forever.clone();
                pids.push(spawn(
                    &me,
                    Box::new(move || drop(pcml::spawn(move || f.recv()).join())),
                ));
                pids.push(spawn(
                    &me,
                    Box::new(|| pcml::time::sleep(Duration::from_secs(3600))),
                ));
                pids.push(spawn(
                    &me,
                    Box::new(|| {
                        loop {
                            pcml::yield_now();
                        }
                    }),
                ));
                for _ in 0..pids.len() {
                    ready.receive();
                }
                // Let them reach their blocking points (a kill before that is seen there).
                pcml::time::sleep(Duration::from_millis(10));
                for p in &pids {
                    p.kill("stop");
                }
                for _ in 0..pids.len() {
                    match me.receive_signal() {
                        Signal::Exit { reason, .. } => {
                            assert_eq!(reason, ExitReason::Killed("stop".into()))
                        }
                        other => panic!("unexpected {other:?}"),
                    }
                }
                assert_eq!(dropped.load(Ordering::SeqCst), pids.len());
                nacked.get();
                assert!(ch.send_evt(1).poll().is_none(), "no receive offer is left");
                mv.put(3);
                assert_eq!(mv.take(), 3, "nothing was taken from the MVar");
                // The joined child runs on, unless its joiner ran it inline (then it went with
                // the joiner).
                let _ = forever.send_evt(()).poll();
            })
            .unwrap();
    }
}

/// Expected: an actor killed before its fiber starts never blocks: it dies of the kill at its
/// first blocking point.
#[test]
fn a_fiber_actor_killed_before_it_starts_dies_at_its_first_blocking_point() {
    pcml::Runtime::builder()
        .procs(1)
        .build()
        .unwrap()
        .block_on(|| {
            let mut me = Ctx::<()>::new();
            let ch = pcml::Chan::<u8>::new();
            let c = ch.clone();
            let (pid, _) = me.spawn_monitor(move |_: Ctx<u8>| {
                c.recv();
            });
            pid.kill("early");
            let Signal::Down { reason, .. } = me.receive_signal() else {
                unreachable!()
            };
            assert_eq!(reason, ExitReason::Killed("early".into()));
            assert!(ch.send_evt(1).poll().is_none());
        })
        .unwrap();
}

/// Expected: a kill reaches an async actor wherever it awaits in pcml, not only in its own
/// receives: a channel event, a choice with a nack, an MVar, a join, a sleep, a socket, a
/// yield loop. The pending sync is dropped as a loss (offers withdrawn, nacks fire, nothing
/// taken), its destructors run, and its links and monitors learn the kill's reason.
#[test]
fn kills_reach_async_actors_awaiting_outside_their_mailbox() {
    use pcml::event::{choose, with_nack};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    struct Count(Arc<AtomicUsize>);
    impl Drop for Count {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }
    type Body = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;
    for procs in [1, 2] {
        pcml::Runtime::builder()
            .procs(procs)
            .build()
            .unwrap()
            .block_on(|| {
                let mut me = Ctx::<()>::new();
                me.trap_exits(true);
                let mut ready = Ctx::<()>::new();
                let dropped = Arc::new(AtomicUsize::new(0));
                let ch = pcml::Chan::<u8>::new();
                let mv = pcml::MVar::<u8>::new();
                let nacked = pcml::IVar::new();
                let forever = pcml::Chan::<()>::new();
                let socket = Arc::new(pcml::net::UdpSocket::bind("127.0.0.1:0").unwrap());
                let mut pids = Vec::new();
                let spawn = |me: &Ctx<()>, body: Body| {
                    let (r, d) = (ready.pid(), Count(dropped.clone()));
                    me.spawn_link_async(move |_: Ctx<u8>| async move {
                        let _d = d;
                        r.send(()).unwrap();
                        body.await;
                    })
                };
                let c = ch.clone();
                pids.push(spawn(
                    &me,
                    Box::pin(async move {
                        c.recv_evt().await;
                    }),
                ));
                let (c, n) = (ch.clone(), nacked.clone());
                pids.push(spawn(
                    &me,
                    Box::pin(async move {
                        choose([
                            with_nack(move |nack| {
                                pcml::spawn(move || {
                                    nack.sync();
                                    n.put(()).unwrap()
                                });
                                c.recv_evt()
                            }),
                            pcml::time::timeout_evt(Duration::from_secs(3600)).wrap(|()| 0),
                        ])
                        .await;
                    }),
                ));
                let m = mv.clone();
                pids.push(spawn(
                    &me,
                    Box::pin(async move {
                        m.take_evt().await;
                    }),
                ));
                let f = forever.clone();
                pids.push(spawn(
                    &me,
                    Box::pin(async move {
                        let _ = pcml::spawn_task(async move { f.recv_evt().await }).await;
                    }),
                ));
                pids.push(spawn(
                    &me,
                    Box::pin(pcml::time::sleep_async(Duration::from_secs(3600))),
                ));
                let s = socket.clone();
                pids.push(spawn(
                    &me,
                    Box::pin(async move {
                        let mut buf = [0u8; 16];
                        let _ = s.recv_from_async(&mut buf).await;
                    }),
                ));
                pids.push(spawn(
                    &me,
                    Box::pin(async {
                        loop {
                            pcml::yield_async().await;
                        }
                    }),
                ));
                for _ in 0..pids.len() {
                    ready.receive();
                }
                // Let them reach their awaits (a kill before that is seen there too).
                pcml::time::sleep(Duration::from_millis(10));
                for p in &pids {
                    p.kill("stop");
                }
                for _ in 0..pids.len() {
                    match me.receive_signal() {
                        Signal::Exit { reason, .. } => {
                            assert_eq!(reason, ExitReason::Killed("stop".into()))
                        }
                        other => panic!("unexpected {other:?}"),
                    }
                }
                assert_eq!(dropped.load(Ordering::SeqCst), pids.len());
                nacked.get();
                assert!(ch.send_evt(1).poll().is_none(), "no receive offer is left");
                mv.put(3);
                assert_eq!(mv.take(), 3, "nothing was taken from the MVar");
                // The datagram goes to the next reader, not to the dead actor.
                let to = socket.local_addr().unwrap();
                let sender = pcml::net::UdpSocket::bind("127.0.0.1:0").unwrap();
                sender.send_to(b"hi", to).unwrap();
                let mut buf = [0u8; 16];
                assert_eq!(socket.recv_from(&mut buf).unwrap().0, 2);
                // The joined task runs on: the join's loss does not cancel it.
                forever.send(());
            })
            .unwrap();
    }
}

/// Expected: an async actor killed before its first poll never runs its body: its monitor
/// gets the kill's reason, and nothing it would have awaited is touched.
#[test]
fn an_async_actor_killed_before_it_runs_dies_of_the_kill() {
    pcml::Runtime::builder()
        .procs(1)
        .build()
        .unwrap()
        .block_on(|| {
            let mut me = Ctx::<()>::new();
            let ch = pcml::Chan::<u8>::new();
            let c = ch.clone();
            let (pid, _) = me.spawn_monitor_async(move |_: Ctx<u8>| async move {
                c.recv_evt().await;
            });
            pid.kill("early");
            let Signal::Down { reason, .. } = me.receive_signal() else {
                unreachable!()
            };
            assert_eq!(reason, ExitReason::Killed("early".into()));
            assert!(ch.send_evt(1).poll().is_none());
        })
        .unwrap();
}
