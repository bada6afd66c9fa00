//! The combinators and sync operations: always, never, choose, wrap, guard, with_nack, poll,
//! fairness, self-matching, panics, cancellation of dropped futures.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use pcml::chan::Chan;
use pcml::event::{
    Event, always, choose, choose_biased, guard, never, select, select_biased, with_nack,
};
use pcml::mailbox::Mailbox;

type NackSlot = Arc<Mutex<Vec<Event<()>>>>;

/// `ev` under a with_nack that stores its nack event in `slot`.
fn noting_nack<T: Send + 'static>(slot: &NackSlot, ev: Event<T>) -> Event<T> {
    let slot = slot.clone();
    with_nack(move |nack| {
        slot.lock().unwrap().push(nack);
        ev
    })
}

fn nack_fired(slot: &NackSlot) -> Vec<bool> {
    slot.lock()
        .unwrap()
        .drain(..)
        .map(|n| n.poll().is_some())
        .collect()
}

#[test]
fn always_wrap_and_nested_choose() {
    assert_eq!(always(2).wrap(|x| x * 3).wrap(|x| x + 1).sync(), 7);
    let v = choose([never(), choose([never(), always(5)]).wrap(|x| x * 2)]).sync();
    assert_eq!(v, 10);
    assert_eq!(pcml::event::sync(always("s")), "s");
    assert_eq!(never::<u8>().poll(), None);
    assert_eq!(choose(Vec::<Event<u8>>::new()).poll(), None);
}

#[test]
fn choice_is_fair() {
    let mut counts = [0usize; 3];
    for _ in 0..3000 {
        let i = select([always(0), always(1), always(2)]);
        counts[i] += 1;
    }
    for c in counts {
        assert!(c > 500, "unfair choice: {counts:?}");
    }
}

/// Counts, over `trials` runs of `run` (a sync or poll yielding a tag), how often each of `k`
/// tags won.
fn tally(k: usize, trials: usize, mut run: impl FnMut() -> usize) -> Vec<usize> {
    let mut counts = vec![0; k];
    for _ in 0..trials {
        counts[run()] += 1;
    }
    counts
}

#[test]
fn choice_is_fair_whatever_the_position_of_idle_branches() {
    // Each enabled branch is equally likely, wherever the branches that are not enabled sit
    // (a walk round from a random start gave the ready branch after an idle one 2/3 of the
    // wins). 3000 trials, expected 1500 each: 1200..=1800 fails a fair coin with p < 1e-20.
    let idle = Chan::<usize>::new();
    let layouts: [[Option<usize>; 4]; 4] = [
        [None, Some(0), Some(1), None],
        [Some(0), None, None, Some(1)],
        [None, None, None, Some(0)],
        [None, None, Some(0), Some(1)],
    ];
    for layout in layouts {
        let ready = layout.iter().flatten().count();
        let mk = || {
            choose(layout.map(|b| match b {
                Some(tag) => always(tag),
                None => idle.recv_evt(),
            }))
        };
        for counts in [
            tally(ready, 3000, || mk().sync()),
            tally(ready, 3000, || mk().poll().unwrap()),
        ] {
            assert!(
                ready == 1 || counts.iter().all(|c| (1200..=1800).contains(c)),
                "unfair choice for {layout:?}: {counts:?}"
            );
        }
    }
}

#[test]
fn choice_is_fair_between_buffered_channels() {
    // The reproduction with real objects: an idle channel first, then two mailboxes
    // that always hold messages.
    let idle = Chan::<usize>::new();
    let (a, b) = (Mailbox::new(), Mailbox::new());
    for _ in 0..3000 {
        a.send(0);
        b.send(1);
    }
    let counts = tally(2, 3000, || {
        select([idle.recv_evt(), a.recv_evt(), b.recv_evt()])
    });
    assert!(
        counts.iter().all(|c| (1200..=1800).contains(c)),
        "unfair choice: {counts:?}"
    );
}

#[test]
fn biased_choice_takes_the_first_enabled_branch() {
    let idle = Chan::<u8>::new();
    for _ in 0..200 {
        assert_eq!(select_biased([idle.recv_evt(), always(1), always(2)]), 1);
        assert_eq!(
            choose_biased([idle.recv_evt(), always(1), always(2)]).poll(),
            Some(1)
        );
        // Nested choices take their place in the order.
        assert_eq!(
            choose_biased([choose([idle.recv_evt(), always(3)]), always(4)]).sync(),
            3
        );
    }
    // Nothing enabled: it waits for all and the first to become enabled wins.
    pcml::run(|| {
        let (a, b) = (Chan::new(), Chan::new());
        let b2 = b.clone();
        let s = pcml::spawn(move || b2.send(7u8));
        assert_eq!(select_biased([a.recv_evt(), b.recv_evt()]), 7);
        s.join().unwrap();
    });
}

#[test]
fn guard_runs_at_each_sync_not_before() {
    let runs = Arc::new(AtomicUsize::new(0));
    let mk = || {
        let r = runs.clone();
        guard(move || {
            r.fetch_add(1, SeqCst);
            always(())
        })
    };
    let evs: Vec<_> = (0..5).map(|_| mk()).collect();
    assert_eq!(runs.load(SeqCst), 0);
    for e in evs {
        e.sync();
    }
    assert_eq!(runs.load(SeqCst), 5);
}

#[test]
fn nack_fires_exactly_when_its_branch_loses() {
    let slot: NackSlot = Arc::default();
    // The nacked branch wins: no nack.
    let v = select([noting_nack(&slot, always(1)), never()]);
    assert_eq!(v, 1);
    assert_eq!(nack_fired(&slot), vec![false]);
    // It loses: the nack fires.
    let v = select([noting_nack(&slot, never()), always(2)]);
    assert_eq!(v, 2);
    assert_eq!(nack_fired(&slot), vec![true]);
    // Nested: the inner wins, both scopes hold the winner.
    let v = select([
        noting_nack(&slot, choose([noting_nack(&slot, always(3)), never()])),
        never(),
    ]);
    assert_eq!(v, 3);
    assert_eq!(nack_fired(&slot), vec![false, false]);
    // Nested: a sibling of the inner scope wins inside the outer scope.
    let v = select([
        noting_nack(&slot, choose([noting_nack(&slot, never()), always(4)])),
        never(),
    ]);
    assert_eq!(v, 4);
    assert_eq!(nack_fired(&slot), vec![false, true]);
    // A wrapped choice keeps the scopes right.
    let v = select([
        choose([noting_nack(&slot, never()), always(5)]).wrap(|x| x + 1),
        noting_nack(&slot, never()),
    ]);
    assert_eq!(v, 6);
    assert_eq!(nack_fired(&slot), vec![true, true]);
    // poll that finds nothing: every branch lost.
    assert_eq!(noting_nack(&slot, never::<u8>()).poll(), None);
    assert_eq!(nack_fired(&slot), vec![true]);
}

#[test]
fn nack_wakes_a_blocked_waiter() {
    pcml::run(|| {
        let slot: NackSlot = Arc::default();
        let ch = Chan::<u8>::new();
        let s2 = slot.clone();
        let waiter = pcml::spawn(move || {
            // Wait until the nack exists, then block on it.
            let nack = loop {
                if let Some(n) = s2.lock().unwrap().pop() {
                    break n;
                }
                pcml::yield_now();
            };
            nack.sync();
            "nacked"
        });
        let tx = ch.clone();
        let sender = pcml::spawn(move || {
            for _ in 0..3 {
                pcml::yield_now();
            }
            tx.send(1)
        });
        let v = select([noting_nack(&slot, never::<u8>()).wrap(|_| 0), ch.recv_evt()]);
        assert_eq!(v, 1);
        assert_eq!(waiter.join().unwrap(), "nacked");
        sender.join().unwrap();
    });
}

#[test]
fn a_choice_never_talks_to_itself() {
    pcml::run(|| {
        let ch = Chan::new();
        let other = ch.clone();
        // With nobody else on the channel this would block forever if it matched itself;
        // the partner receives our send.
        let h = pcml::spawn(move || {
            for _ in 0..3 {
                pcml::yield_now();
            }
            other.recv()
        });
        let r = select([ch.recv_evt().wrap(Some), ch.send_evt(42).wrap(|()| None)]);
        assert_eq!(r, None);
        assert_eq!(h.join().unwrap(), 42);
    });
}

#[test]
fn same_channel_twice_in_a_choice() {
    pcml::run(|| {
        let ch = Chan::new();
        let tx = ch.clone();
        pcml::spawn(move || (0..200u32).for_each(|i| tx.send(i)));
        let mut tags = [0; 2];
        for i in 0..200 {
            let (tag, v) = select([
                ch.recv_evt().wrap(|x| (0, x)),
                ch.recv_evt().wrap(|x| (1, x)),
            ]);
            assert_eq!(v, i);
            tags[tag] += 1;
        }
        assert_eq!(tags[0] + tags[1], 200);
    });
}

#[test]
fn panic_in_wrap_propagates_and_the_channel_still_works() {
    pcml::run(|| {
        let ch = Chan::new();
        let tx = ch.clone();
        let h = pcml::spawn(move || {
            tx.send(1);
            tx.send(2);
        });
        let r = catch_unwind(AssertUnwindSafe(|| {
            ch.recv_evt()
                .wrap(|_: i32| -> i32 { panic!("boom") })
                .sync()
        }));
        assert!(r.is_err());
        // The first message was taken by the sync that panicked in its wrapper (it did
        // complete); the second is still there.
        assert_eq!(ch.recv(), 2);
        h.join().unwrap();
    });
}

#[test]
fn panic_in_guard_fires_earlier_nacks_and_takes_nothing() {
    let slot: NackSlot = Arc::default();
    let ch = Chan::<u8>::new();
    let r = catch_unwind(AssertUnwindSafe(|| {
        select([
            noting_nack(&slot, ch.recv_evt()),
            guard(|| -> Event<u8> { panic!("guard") }),
        ])
    }));
    assert!(r.is_err());
    assert_eq!(nack_fired(&slot), vec![true]);
    assert_eq!(ch.queue_lens(), (0, 0));
}

fn noop_cx() -> Context<'static> {
    Context::from_waker(std::task::Waker::noop())
}

#[test]
fn dropping_a_pending_future_withdraws_and_fires_nacks() {
    let ch = Chan::<String>::new();
    let slot: NackSlot = Arc::default();
    let mut fut = Box::pin(select_fut([noting_nack(&slot, ch.recv_evt()), never()]));
    assert!(fut.as_mut().poll(&mut noop_cx()).is_pending());
    assert_eq!(ch.queue_lens(), (0, 1));
    drop(fut);
    assert_eq!(nack_fired(&slot), vec![true]);
    // Nobody takes a message for the dropped sync.
    assert_eq!(ch.try_send("x".to_string()), Err("x".to_string()));
}

fn select_fut<T: Send + 'static>(
    evs: impl IntoIterator<Item = Event<T>>,
) -> impl std::future::Future<Output = T> {
    choose(evs).into_future()
}

use std::future::{Future, IntoFuture};

#[test]
fn a_pending_future_completes_when_a_partner_arrives() {
    let ch = Chan::<u32>::new();
    let mut fut = Box::pin(ch.recv_evt().wrap(|x| x + 1).into_future());
    assert!(fut.as_mut().poll(&mut noop_cx()).is_pending());
    assert_eq!(ch.try_send(5), Ok(()));
    assert_eq!(fut.as_mut().poll(&mut noop_cx()), Poll::Ready(6));
}

#[test]
fn tokio_select_drops_the_loser() {
    let r = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let ch = Chan::<u8>::new();
    let c2 = ch.clone();
    r.block_on(async move {
        tokio::select! {
            _ = c2.recv_evt().into_future() => panic!("nobody sent"),
            _ = tokio::time::sleep(std::time::Duration::from_millis(1)) => {}
        }
    });
    // The dropped receive is dead: a try_send finds no live receiver.
    assert_eq!(ch.try_send(1), Err(1));
}

#[test]
fn events_and_their_futures_are_send() {
    fn send<T: Send + 'static>(_: &T) {}
    let ev = Chan::<Box<u8>>::new().recv_evt();
    send(&ev);
    send(&ev.into_future());
    let r = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let ch = Chan::<u32>::new();
    let rx = ch.clone();
    let h = r.spawn(async move { rx.recv_evt().await });
    ch.send(11);
    assert_eq!(r.block_on(h).unwrap(), 11);
}

#[test]
fn poll_commits_only_what_is_enabled_now() {
    let ch = Chan::<u8>::new();
    // Nothing enabled: nothing published, nothing left behind.
    assert_eq!(select_poll(&ch), None);
    assert_eq!(ch.queue_lens(), (0, 0));
    let tx = ch.clone();
    let t = std::thread::spawn(move || tx.send(4));
    while ch.queue_lens().0 == 0 {
        std::thread::yield_now();
    }
    assert_eq!(select_poll(&ch), Some(4));
    t.join().unwrap();
}

fn select_poll(ch: &Chan<u8>) -> Option<u8> {
    choose([ch.recv_evt(), never()]).poll()
}

#[test]
fn poll_of_a_choice_finds_nothing_only_when_nothing_was_enabled() {
    // A token moves between two mailboxes, always put into one before it is taken from the
    // other, so at every instant one of them holds a message. A poll of the choice over both
    // that tests them at different instants can miss it in both (branch-by-branch testing
    // missed it 12 times in 2,000,000 polls of this loop); a linearizable one never does.
    // Whatever the poll takes it gives back.
    let (a, b) = (Mailbox::new(), Mailbox::new());
    a.send(());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mover = {
        let (a, b, stop) = (a.clone(), b.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(SeqCst) {
                b.send(());
                a.recv();
                a.send(());
                b.recv();
            }
        })
    };
    let mut misses = 0;
    for _ in 0..200_000 {
        match choose([a.recv_evt().wrap(|()| 0), b.recv_evt().wrap(|()| 1)]).poll() {
            Some(0) => a.send(()),
            Some(_) => b.send(()),
            None => misses += 1,
        }
    }
    stop.store(true, SeqCst);
    mover.join().unwrap();
    assert_eq!(misses, 0, "poll found neither mailbox enabled");
}

// `select!` and `select_biased!`: arms whose bodies run in the caller's scope.

#[test]
fn select_macro_arms_borrow_and_mutate_locals() {
    pcml::run(|| {
        let (nums, words, done) = (Chan::new(), Chan::new(), Chan::new());
        for p in 0..3u32 {
            let (n, w, d) = (nums.clone(), words.clone(), done.clone());
            pcml::spawn(move || {
                for i in 0..10 {
                    n.send(p * 100 + i);
                }
                w.send(format!("p{p}"));
                d.send(());
            });
        }
        let (mut total, mut names, mut finished) = (0u32, Vec::new(), 0);
        while finished < 3 {
            pcml::select! {
                recv(nums) -> x => total += x,
                recv(words) -> s => { names.push(s); }
                recv(done) -> () => finished += 1,
            }
        }
        names.sort();
        assert_eq!(total, 3 * 45 + 10 * (100 + 200));
        assert_eq!(names, ["p0", "p1", "p2"]);
    });
}

#[test]
fn select_macro_block_bodies_may_end_with_a_comma() {
    // `=> { .. },` as in a `match`: every kind of arm, in the middle and last, and the
    // default arms, in `select!`, `select_biased!` and `select_async!`.
    let (a, b) = (Mailbox::new(), Mailbox::new());
    let mut log = Vec::new();
    a.send(1u32);
    pcml::select! {
        recv(a) -> v => { log.push(v); },
        v = b.recv_evt() => { log.push(v); },
    }
    b.send(2u32);
    pcml::select_biased! {
        recv(a) -> v => { log.push(v); },
        recv(b) -> v => { log.push(v); },
        default => { log.push(0); },
    }
    pcml::select! {
        recv(a) -> v => { log.push(v); },
        default(std::time::Duration::from_millis(1)) => { log.push(3); },
    }
    let ch = Chan::<u32>::new();
    pcml::select! {
        send(ch, 9) -> _r => { log.push(9); },
        default => { log.push(4); },
    }
    pcml::run(move || {
        let m = Mailbox::new();
        m.send(5u32);
        let got = pcml::spawn_task(async move {
            pcml::select_async! {
                recv(m) -> v => { v },
            }
        })
        .join()
        .unwrap();
        log.push(got);
        assert_eq!(log, [1, 2, 3, 4, 5]);
    });
}

#[test]
fn select_macro_send_arms_and_event_arms() {
    pcml::run(|| {
        let (out, back) = (Chan::new(), Chan::new());
        let (o, b) = (out.clone(), back.clone());
        let echo = pcml::spawn(move || {
            for _ in 0..2 {
                let v: u32 = o.recv();
                b.send(v * 2);
            }
        });
        let mut sent = 0;
        let mut got = Vec::new();
        for i in 1..=2 {
            pcml::select! {
                send(out, i) -> () => sent += 1,
            }
            // Any event, with a destructuring pattern.
            pcml::select! {
                (tag, v) = back.recv_evt().wrap(|v| ("echo", v)) => got.push((tag, v)),
            }
        }
        echo.join().unwrap();
        assert_eq!(sent, 2);
        assert_eq!(got, [("echo", 2), ("echo", 4)]);
    });
}

#[test]
fn select_macro_loop_with_a_default_arm_drains_then_stops() {
    let jobs = Mailbox::new();
    (0..100).for_each(|i| jobs.send(i));
    let idle = Chan::<u32>::new();
    let (mut sum, mut idle_seen) = (0, 0);
    loop {
        pcml::select! {
            recv(jobs) -> j => sum += j,
            recv(idle) -> _ => unreachable!(),
            default => { idle_seen += 1; break }
        }
    }
    assert_eq!((sum, idle_seen), (4950, 1));
    // Only a default arm: it runs at once.
    assert_eq!(pcml::select! { default => 7 }, 7);
}

#[test]
fn select_macro_loop_with_a_timeout_arm_ends_when_producers_go_quiet() {
    pcml::run(|| {
        let ch = Chan::new();
        let tx = ch.clone();
        pcml::spawn(move || (0..5u32).for_each(|i| tx.send(i)));
        let mut got = Vec::new();
        let mut timeouts = 0;
        loop {
            pcml::select! {
                recv(ch) -> v => got.push(v),
                default(std::time::Duration::from_millis(20)) => { timeouts += 1; break }
            }
        }
        assert_eq!(timeouts, 1);
        // The loop ended at the first gap of 20 ms: after the last message, or earlier if the
        // sender was held up (a loaded machine). Nothing was lost or reordered either way.
        while got.len() < 5 {
            got.push(ch.recv());
        }
        assert_eq!(got, [0, 1, 2, 3, 4]);
        // Only a timeout: a sleep.
        pcml::select! { default(std::time::Duration::from_millis(1)) => () }
    });
}

#[test]
fn select_macro_bodies_can_return_continue_and_nest() {
    fn first_even(ch: &Mailbox<u32>) -> Option<u32> {
        loop {
            pcml::select! {
                recv(ch) -> v => {
                    if v % 2 == 1 {
                        continue;
                    }
                    return Some(v);
                }
                default => return None,
            }
        }
    }
    let ch = Mailbox::new();
    [1, 3, 4, 5].into_iter().for_each(|v| ch.send(v));
    assert_eq!(first_even(&ch), Some(4));
    assert_eq!(first_even(&ch), None);

    let (a, b) = (Mailbox::new(), Mailbox::new());
    a.send(1);
    b.send(2);
    let got = pcml::select! {
        recv(a) -> x => pcml::select! {
            recv(b) -> y => x + y,
            default => x,
        },
    };
    assert_eq!(got, 3);
}

#[test]
fn select_macro_is_fair_and_select_biased_is_ordered() {
    let idle = Chan::<u8>::new();
    let (a, b) = (Mailbox::new(), Mailbox::new());
    for _ in 0..3000 {
        a.send(0u8);
        b.send(1u8);
    }
    let mut counts = [0usize; 2];
    for _ in 0..3000 {
        pcml::select! {
            recv(idle) -> _ => unreachable!(),
            recv(a) -> v => counts[usize::from(v)] += 1,
            recv(b) -> v => counts[usize::from(v)] += 1,
        }
    }
    assert!(
        counts.iter().all(|c| (1200..=1800).contains(c)),
        "unfair select!: {counts:?}"
    );
    // Biased: `a` (1000 left after `b` gives up its share) wins while it has messages.
    let left_in_a = 3000 - counts[0];
    let mut order = Vec::new();
    for _ in 0..left_in_a + 3 {
        pcml::select_biased! {
            recv(idle) -> _ => unreachable!(),
            recv(a) -> v => order.push(v),
            recv(b) -> v => order.push(v),
        }
    }
    assert!(order[..left_in_a].iter().all(|&v| v == 0));
    assert_eq!(order[left_in_a..], [1, 1, 1]);
}

#[test]
fn select_macro_with_sender_and_receiver_halves_sees_disconnection() {
    // A fan-in that ends when every producer is gone: a closed channel's receive is enabled
    // and carries the error, so the `select!` loop sees it.
    pcml::run(|| {
        let (tx_a, rx_a) = pcml::chan::channel::<u32>();
        let (tx_b, rx_b) = pcml::chan::channel::<u32>();
        pcml::spawn(move || (0..5).for_each(|i| tx_a.send(i).unwrap()));
        pcml::spawn(move || (10..15).for_each(|i| tx_b.send(i).unwrap()));
        let (mut sum, mut open) = (0, [true, true]);
        while open.iter().any(|&o| o) {
            pcml::select! {
                recv(rx_a) -> v => match v {
                    Ok(v) => sum += v,
                    Err(_) => open[0] = false,
                },
                recv(rx_b) -> v => match v {
                    Ok(v) => sum += v,
                    Err(_) => open[1] = false,
                },
            }
        }
        assert_eq!(sum, 10 + 60);
        // A send arm on a half yields the send's result.
        let (tx, rx) = pcml::chan::channel::<u8>();
        drop(rx);
        let res = pcml::select! { send(tx, 1) -> res => res };
        assert_eq!(res.map_err(|e| e.into_inner()), Err(1));
    });
}

async fn sum_until_done(ch: Chan<u32>, done: Chan<()>, idle: Chan<u32>) -> (u32, bool) {
    let mut total = 0;
    loop {
        pcml::select_async! {
            recv(ch) -> v => total += v,
            recv(done) -> () => break,
            recv(idle) -> _ => unreachable!(),
            default(std::time::Duration::from_secs(60)) => panic!("the sender never finished"),
        }
    }
    let nothing = pcml::select_async! { recv(idle) -> _ => false, default => true };
    (total, nothing)
}

fn send_then_done(ch: Chan<u32>, done: Chan<()>) {
    (1..=4).for_each(|i| ch.send(i));
    done.send(());
}

#[test]
fn select_async_macro_in_pcml_tasks_and_tokio() {
    let got = pcml::run(|| {
        let (ch, done, idle) = (Chan::new(), Chan::new(), Chan::new());
        let (c, d) = (ch.clone(), done.clone());
        pcml::spawn(move || send_then_done(c, d));
        pcml::spawn_task(sum_until_done(ch, done, idle))
            .join()
            .unwrap()
    });
    assert_eq!(got, (10, true));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let got = rt.block_on(async {
        let (ch, done, idle) = (Chan::new(), Chan::new(), Chan::new());
        let (c, d) = (ch.clone(), done.clone());
        let sender = std::thread::spawn(move || send_then_done(c, d));
        let got = sum_until_done(ch, done, idle).await;
        sender.join().unwrap();
        got
    });
    assert_eq!(got, (10, true));
}
