//! Actors: spawning, sending, receiving (plain, selective, timed, many, as events), fiber and
//! async actors.

use std::collections::HashMap;
use std::time::Duration;

use pcml::actor::{self, Ctx, ExitReason, Pid};

fn rt(procs: usize) -> pcml::Runtime {
    pcml::Runtime::builder().procs(procs).build().unwrap()
}

/// Messages of one sender arrive in the order it sent them, with several senders interleaved.
#[test]
fn messages_from_one_sender_arrive_in_order() {
    const SENDERS: u32 = 8;
    const EACH: u32 = 2_000;
    rt(2)
        .block_on(|| {
            let mut me = Ctx::<(u32, u32)>::new();
            for s in 0..SENDERS {
                let pid = me.pid();
                pcml::spawn(move || {
                    for i in 0..EACH {
                        pid.send((s, i)).unwrap();
                        if i % 97 == 0 {
                            pcml::yield_now();
                        }
                    }
                });
            }
            let mut next: HashMap<u32, u32> = HashMap::new();
            for _ in 0..SENDERS * EACH {
                let (s, i) = me.receive();
                let n = next.entry(s).or_insert(0);
                assert_eq!(i, *n, "sender {s} out of order");
                *n += 1;
            }
            assert!(next.values().all(|&n| n == EACH));
            assert!(me.is_empty());
        })
        .unwrap();
}

/// A fiber actor and an async actor each echo a stream in order.
#[test]
fn fiber_and_async_actors_echo_in_order() {
    rt(2)
        .block_on(|| {
            let mut me = Ctx::<(u8, u32)>::new();
            let reply = me.pid();
            let fib = actor::spawn(move |mut ctx: Ctx<u32>| {
                for _ in 0..1000 {
                    let m = ctx.receive();
                    reply.send((0, m)).unwrap();
                }
            });
            let reply = me.pid();
            let task = actor::spawn_async(move |mut ctx: Ctx<u32>| async move {
                for _ in 0..1000 {
                    let m = ctx.recv().await;
                    reply.send((1, m)).unwrap();
                }
            });
            for i in 0..1000 {
                fib.send(i).unwrap();
                task.send(i).unwrap();
            }
            let mut next = [0u32; 2];
            for _ in 0..2000 {
                let (who, m) = me.receive();
                assert_eq!(m, next[who as usize]);
                next[who as usize] += 1;
            }
        })
        .unwrap();
}

/// Selective receive takes the first accepted message in arrival order and leaves the rest
/// in their order, whether the match is already there or arrives while blocked.
#[test]
fn selective_receive_leaves_the_rest_in_order() {
    rt(2)
        .block_on(|| {
            let mut me = Ctx::<u32>::new();
            me.pid().send_many(0..100).unwrap();
            assert_eq!(me.receive_match(|m| m % 10 == 7), 7);
            assert_eq!(me.receive_match(|m| m % 10 == 7), 17);
            assert_eq!(me.receive_match(|m| *m > 50), 51);
            // A match that is not there yet: blocks, and later tests only new messages.
            let pid = me.pid();
            pcml::spawn(move || {
                for i in 100..200 {
                    pid.send(i).unwrap();
                    pcml::yield_now();
                }
                pid.send(1_000).unwrap();
            });
            assert_eq!(me.receive_match(|m| *m >= 1_000), 1_000);
            let rest: Vec<u32> = me.recv_many(197);
            let expected: Vec<u32> = (0..200).filter(|m| ![7, 17, 51].contains(m)).collect();
            assert_eq!(rest, expected);
            assert!(me.is_empty());
        })
        .unwrap();
}

/// The async selective receive, the same way.
#[test]
fn async_selective_receive_leaves_the_rest_in_order() {
    rt(2)
        .block_on(|| {
            let mut me = Ctx::<Vec<u32>>::new();
            let reply = me.pid();
            let pid = actor::spawn_async(move |mut ctx: Ctx<u32>| async move {
                let first = ctx.recv_match(|m| *m == 5).await;
                let late = ctx.recv_match(|m| *m == 500).await;
                let mut rest = vec![first, late];
                rest.extend(ctx.recv_many_async(9).await);
                reply.send(rest).unwrap();
            });
            pid.send_many(0..10).unwrap();
            pcml::time::sleep(Duration::from_millis(2));
            pid.send(500).unwrap();
            assert_eq!(me.receive(), vec![5, 500, 0, 1, 2, 3, 4, 6, 7, 8, 9]);
        })
        .unwrap();
}

#[test]
fn sending_to_a_dead_actor_returns_the_message() {
    rt(1)
        .block_on(|| {
            let mut me = Ctx::<()>::new();
            let done = me.pid();
            let pid: Pid<String> = actor::spawn(move |mut ctx: Ctx<String>| {
                let _ = ctx.receive();
                done.send(()).unwrap();
            });
            assert!(pid.is_alive());
            pid.send("bye".into()).unwrap();
            me.receive();
            // The actor is ending or gone: once gone, sends fail with the message back.
            while pid.is_alive() {
                pcml::yield_now();
            }
            assert_eq!(pid.send("late".into()).unwrap_err().into_inner(), "late");
            let back = pid
                .send_many(["a".to_string(), "b".to_string()])
                .unwrap_err();
            assert_eq!(back.0, vec!["a", "b"]);
        })
        .unwrap();
}

// A pid's hash and order are its id's, which never change: the interior mutability clippy
// sees is the mailbox's, behind the reference count.
#[allow(clippy::mutable_key_type)]
#[test]
fn pids_compare_and_hash_by_actor() {
    rt(1)
        .block_on(|| {
            let a = actor::spawn(|mut ctx: Ctx<u8>| {
                ctx.receive();
            });
            let b = actor::spawn(|mut ctx: Ctx<u8>| {
                ctx.receive();
            });
            assert_ne!(a, b);
            assert_eq!(a, a.clone());
            assert_ne!(a.cmp(&b), std::cmp::Ordering::Equal);
            let set: std::collections::BTreeSet<_> = [a.clone(), b.clone(), a.clone()].into();
            assert_eq!(set.len(), 2);
            assert!(format!("{a:?}").starts_with("Pid<actor "));
            a.send(0).unwrap();
            b.send(0).unwrap();
        })
        .unwrap();
}

/// `receive_evt` in a choice with a channel and a timeout: whichever is ready wins, and the
/// losers take nothing.
#[test]
fn receive_evt_chooses_among_mailbox_channel_and_timeout() {
    rt(2)
        .block_on(|| {
            #[derive(Debug, PartialEq)]
            enum Got {
                Mail(u32),
                Chan(u32),
                Timeout,
            }
            let me = Ctx::<u32>::new();
            let ch = pcml::Chan::<u32>::new();
            let pick = |me: &Ctx<u32>| {
                pcml::select([
                    me.receive_evt().wrap(Got::Mail),
                    ch.recv_evt().wrap(Got::Chan),
                    pcml::time::timeout_evt(Duration::from_millis(5)).wrap(|()| Got::Timeout),
                ])
            };
            assert_eq!(pick(&me), Got::Timeout);
            me.pid().send(1).unwrap();
            assert_eq!(pick(&me), Got::Mail(1));
            let c = ch.clone();
            pcml::spawn(move || c.send(2));
            assert_eq!(pick(&me), Got::Chan(2));
            // A blocked receive event is completed by a later send.
            let pid = me.pid();
            pcml::spawn(move || {
                pcml::time::sleep(Duration::from_millis(2));
                pid.send(3).unwrap();
            });
            let got = pcml::select([
                me.receive_evt().wrap(Got::Mail),
                ch.recv_evt().wrap(Got::Chan),
            ]);
            assert_eq!(got, Got::Mail(3));
            assert!(me.is_empty());
        })
        .unwrap();
}

/// A blocked selective receive event is completed only by an accepted message; the others
/// are queued in order.
#[test]
fn receive_match_evt_waits_for_an_accepted_message() {
    rt(2)
        .block_on(|| {
            let mut me = Ctx::<i32>::new();
            let pid = me.pid();
            pcml::spawn(move || {
                pid.send_many([1, 2, 3]).unwrap();
                pcml::time::sleep(Duration::from_millis(1));
                pid.send(-1).unwrap();
                pid.send(4).unwrap();
            });
            let neg = me
                .receive_match_evt(|m| *m < 0)
                .sync_timeout(Duration::from_secs(30));
            assert_eq!(neg, Some(-1));
            assert_eq!(me.recv_many(4), vec![1, 2, 3, 4]);
        })
        .unwrap();
}

#[test]
fn receive_timeout_times_out_then_receives() {
    rt(1)
        .block_on(|| {
            let mut me = Ctx::<u8>::new();
            assert_eq!(me.receive_timeout(Duration::from_millis(1)), None);
            let pid = me.pid();
            pcml::spawn(move || pid.send(8).unwrap());
            assert_eq!(me.receive_timeout(Duration::from_secs(30)), Some(8));
        })
        .unwrap();
}

/// Many senders race receive events in choices with a channel: every message is received
/// exactly once.
#[test]
fn receive_events_race_senders_exactly_once() {
    const SENDERS: u64 = 4;
    const EACH: u64 = 2_000;
    rt(2)
        .block_on(|| {
            let me = Ctx::<u64>::new();
            let ch = pcml::Chan::<u64>::new();
            for s in 0..SENDERS {
                let pid = me.pid();
                let ch = ch.clone();
                pcml::spawn(move || {
                    for i in 0..EACH {
                        let v = s * EACH + i;
                        if i % 3 == 0 {
                            ch.send(v);
                        } else {
                            pid.send(v).unwrap();
                        }
                    }
                });
            }
            let mut seen = vec![false; (SENDERS * EACH) as usize];
            for _ in 0..SENDERS * EACH {
                let v = pcml::select([me.receive_evt(), ch.recv_evt()]);
                assert!(!seen[v as usize], "{v} received twice");
                seen[v as usize] = true;
            }
            assert!(seen.iter().all(|&s| s));
        })
        .unwrap();
}

/// An actor that panics dies alone: others keep working, its pid reports it dead.
#[test]
fn a_panicking_actor_dies_alone() {
    rt(2)
        .block_on(|| {
            let mut me = Ctx::<u32>::new();
            let reply = me.pid();
            let ok = actor::spawn(move |mut ctx: Ctx<u32>| {
                loop {
                    let m = ctx.receive();
                    reply.send(m).unwrap();
                }
            });
            let bad = actor::spawn(|mut ctx: Ctx<u32>| {
                let m = ctx.receive();
                assert!(m < 10, "too big");
            });
            bad.send(99).unwrap();
            while bad.is_alive() {
                pcml::yield_now();
            }
            ok.send(1).unwrap();
            assert_eq!(me.receive(), 1);
            assert!(bad.send(2).is_err());
            let _ = ExitReason::Normal;
        })
        .unwrap();
}

/// Contexts work on plain OS threads outside any runtime.
#[test]
fn contexts_work_on_os_threads() {
    let mut me = Ctx::<u32>::new();
    let pid = me.pid();
    let t = std::thread::spawn(move || {
        for i in 0..100 {
            pid.send(i).unwrap();
        }
    });
    assert_eq!(me.receive_match(|m| *m == 99), 99);
    assert_eq!(me.recv_many(99), (0..99).collect::<Vec<_>>());
    t.join().unwrap();
}

/// `self_pid` finds the calling actor in fibers (also after blocking, with other actors
/// running meanwhile) and in tasks (also after migrating), and refuses the wrong type or a
/// caller that is not an actor.
#[test]
fn self_pid_finds_the_calling_actor() {
    rt(2)
        .block_on(|| {
            let mut me = Ctx::<bool>::new();
            for i in 0..50 {
                let reply = me.pid();
                if i % 2 == 0 {
                    actor::spawn(move |mut ctx: Ctx<u8>| {
                        let before = actor::self_pid::<u8>() == ctx.pid();
                        ctx.receive();
                        pcml::yield_now();
                        let after = actor::self_pid::<u8>() == ctx.pid();
                        reply.send(before && after).unwrap();
                    })
                    .send(0)
                    .unwrap();
                } else {
                    actor::spawn_async(move |mut ctx: Ctx<u8>| async move {
                        let before = actor::self_pid::<u8>() == ctx.pid();
                        ctx.recv().await;
                        pcml::yield_async().await;
                        let after = actor::self_pid::<u8>() == ctx.pid();
                        reply.send(before && after).unwrap();
                    })
                    .send(0)
                    .unwrap();
                }
            }
            assert!(me.recv_many(50).into_iter().all(|ok| ok));
            // Not an actor: the main fiber, a plain task.
            assert!(std::panic::catch_unwind(actor::self_pid::<u8>).is_err());
            let t = pcml::spawn_task(async {
                std::panic::catch_unwind(actor::self_pid::<u8>).is_err()
            });
            assert!(t.join().unwrap());
            // The wrong type.
            let reply = me.pid();
            actor::spawn(move |_: Ctx<u8>| {
                let err = std::panic::catch_unwind(actor::self_pid::<String>).unwrap_err();
                let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
                reply.send(msg.contains("takes u8")).unwrap();
            });
            assert!(me.receive());
        })
        .unwrap();
}

/// A plain thread run on a fiber actor's stack (joined at once, so its joiner may run it
/// inline, in the actor's fiber slot) is not taken for that actor, and the actor is found
/// again after it; an actor spawned and ended meanwhile does not disturb the entry.
#[test]
fn self_pid_is_not_lent_to_a_thread_run_inline_on_the_actor() {
    rt(1)
        .block_on(|| {
            let mut me = Ctx::<bool>::new();
            let reply = me.pid();
            actor::spawn(move |mut ctx: Ctx<u8>| {
                let inner =
                    pcml::spawn(|| std::panic::catch_unwind(actor::self_pid::<u8>).is_err())
                        .join()
                        .unwrap();
                let back = ctx.pid();
                actor::spawn(move |_: Ctx<()>| back.send(1).unwrap());
                ctx.receive();
                let still = actor::self_pid::<u8>() == ctx.pid();
                reply.send(inner && still).unwrap();
            });
            assert!(me.receive());
        })
        .unwrap();
}

/// A receive event whose `.await` is dropped after a message was handed to it takes nothing:
/// the message goes back where it was, in order.
#[test]
fn a_dropped_receive_await_takes_nothing() {
    use std::future::{Future, IntoFuture};
    use std::task::{Context, Poll, Waker};

    let mut cx = Context::from_waker(Waker::noop());
    let drain = |me: &mut Ctx<u32>| std::iter::from_fn(|| me.try_receive()).collect::<Vec<_>>();
    // Selective: the handed-over message goes back after the older ones it skipped.
    let mut me = Ctx::<u32>::new();
    me.pid().send_many([1, 2]).unwrap();
    let mut fut = Box::pin(me.receive_match_evt(|m| *m > 10).into_future());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    me.pid().send(11).unwrap(); // handed to the blocked event
    me.pid().send(3).unwrap(); // queued
    drop(fut);
    assert_eq!(drain(&mut me), vec![1, 2, 11, 3]);

    // Plain: the handed-over message was the oldest; it goes back to the front.
    let mut fut = Box::pin(me.receive_evt().into_future());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    me.pid().send_many([4, 5]).unwrap();
    drop(fut);
    assert_eq!(drain(&mut me), vec![4, 5]);

    // Taken by the event's own commit (the message was there), then dropped unpolled after
    // completion: still nothing lost.
    me.pid().send(6).unwrap();
    let mut fut = Box::pin(me.receive_evt().into_future());
    match fut.as_mut().poll(&mut cx) {
        Poll::Ready(6) => {}
        other => panic!("expected Ready(6), got {other:?}"),
    }
    drop(fut);
    assert!(me.is_empty());
}

/// An actor that nobody holds a pid of any more when it ends (its end takes no lock then)
/// still drops the messages it never received, fiber and async alike.
#[test]
fn an_actor_nobody_holds_drops_its_unread_messages_when_it_ends() {
    struct Dropped(pcml::IVar<()>);
    impl Drop for Dropped {
        fn drop(&mut self) {
            let _ = self.0.put(());
        }
    }
    rt(1)
        .block_on(|| {
            for fibers in [true, false] {
                let gate = pcml::IVar::<()>::new();
                let dropped = pcml::IVar::<()>::new();
                let open = gate.clone();
                let pid = if fibers {
                    actor::spawn(move |_: Ctx<Dropped>| open.get())
                } else {
                    actor::spawn_async(move |_: Ctx<Dropped>| async move { open.get_evt().await })
                };
                pid.send(Dropped(dropped.clone())).unwrap();
                drop(pid);
                gate.put(()).unwrap();
                // Blocks until the actor's end dropped the message.
                dropped.get();
            }
        })
        .unwrap();
}
