//! `SharedEvent`: one event value synced many times, each time a fresh synchronization.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pcml::event::{Event, SharedEvent, always, never, select, with_nack};
use pcml::{Chan, Runtime};

#[test]
fn one_value_synced_many_times_receives_each_message_in_order() {
    pcml::run(|| {
        let ch = Chan::new();
        let c = ch.clone();
        pcml::spawn(move || (0..100u32).for_each(|i| c.send(i)));
        let recv = SharedEvent::recv(&ch).wrap(|x| x * 3);
        let got: Vec<u32> = (0..100).map(|_| recv.sync()).collect();
        assert_eq!(got, (0..100).map(|i| i * 3).collect::<Vec<_>>());
    });
}

#[test]
fn guards_and_nacks_are_fresh_at_each_sync() {
    let guards = Arc::new(AtomicUsize::new(0));
    let nacks: Arc<Mutex<Vec<Event<()>>>> = Arc::default();
    let (g, n) = (guards.clone(), nacks.clone());
    let losing = SharedEvent::new(move || {
        g.fetch_add(1, SeqCst);
        let n = n.clone();
        with_nack(move |nack| {
            n.lock().unwrap().push(nack);
            never()
        })
    });
    let ev = SharedEvent::choose([losing, SharedEvent::always(9)]);
    for _ in 0..5 {
        assert_eq!(ev.sync(), 9);
    }
    assert_eq!(guards.load(SeqCst), 5, "the guard runs once per sync");
    let nacks = std::mem::take(&mut *nacks.lock().unwrap());
    assert_eq!(nacks.len(), 5, "every sync made its own nack");
    for nack in nacks {
        assert_eq!(nack.poll(), Some(()), "the branch lost, so its nack fired");
    }
}

#[test]
fn a_nack_of_a_winning_sync_stays_quiet_while_later_syncs_get_their_own() {
    let nacks: Arc<Mutex<Vec<Event<()>>>> = Arc::default();
    let n = nacks.clone();
    let winning = SharedEvent::new(move || {
        let n = n.clone();
        with_nack(move |nack| {
            n.lock().unwrap().push(nack);
            always(1)
        })
    });
    // Alone, the with_nack branch always wins: none of its nacks may fire.
    assert_eq!(winning.sync() + winning.sync(), 2);
    let nacks = std::mem::take(&mut *nacks.lock().unwrap());
    assert_eq!(nacks.len(), 2);
    for nack in nacks {
        assert_eq!(nack.poll(), None);
    }
}

#[test]
fn concurrent_syncs_of_one_value_are_independent() {
    let rt = Runtime::builder().procs(2).build().unwrap();
    rt.block_on(|| {
        let ch = Chan::new();
        let recv = SharedEvent::recv(&ch);
        let receivers: Vec<_> = (0..4)
            .map(|_| {
                let recv = recv.clone();
                pcml::spawn(move || (0..250).map(|_| recv.sync()).collect::<Vec<u32>>())
            })
            .collect();
        let send_evts: Vec<_> = (0..1000u32).map(|i| SharedEvent::send(&ch, i)).collect();
        for s in &send_evts {
            s.sync();
        }
        let mut seen = HashSet::new();
        for h in receivers {
            for v in h.join().unwrap() {
                assert!(seen.insert(v), "message {v} received twice");
            }
        }
        assert_eq!(seen.len(), 1000, "every message received exactly once");
    })
    .unwrap();
}

#[test]
fn poll_and_timeout_leave_the_value_usable() {
    pcml::run(|| {
        let ch = Chan::<u8>::new();
        let recv = SharedEvent::recv(&ch);
        assert_eq!(recv.poll(), None);
        assert_eq!(recv.sync_timeout(Duration::from_millis(2)), None);
        let c = ch.clone();
        pcml::spawn(move || c.send(5));
        assert_eq!(recv.sync_timeout(Duration::from_secs(30)), Some(5));
    });
}

#[test]
fn awaited_in_pcml_tasks_and_in_tokio() {
    let got = pcml::run(|| {
        let ch = Chan::new();
        let recv = SharedEvent::recv(&ch);
        let t = pcml::spawn_task(async move { (&recv).await + (&recv).await });
        ch.send(20u32);
        ch.send(22);
        t.join().unwrap()
    });
    assert_eq!(got, 42);

    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let ev = SharedEvent::choose([SharedEvent::always(1), SharedEvent::always(2)]);
    let sum = tokio_rt.block_on(async move {
        let mut sum = 0;
        for _ in 0..10 {
            sum += (&ev).await;
        }
        sum
    });
    assert!((10..=20).contains(&sum));
}

#[test]
fn a_dropped_await_cancels_that_sync_only() {
    let tokio_rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let ch = Chan::<u32>::new();
    let recv = SharedEvent::recv(&ch);
    tokio_rt.block_on(async {
        let r = tokio::time::timeout(Duration::from_millis(5), async { (&recv).await }).await;
        assert!(r.is_err(), "nobody sent yet");
    });
    // The dropped sync left no offer behind: a send finds no receiver.
    assert_eq!(ch.try_send(1), Err(1));
    // The value syncs again, from an OS thread outside any runtime.
    let c = ch.clone();
    let sender = std::thread::spawn(move || c.send(7));
    assert_eq!(recv.sync(), 7);
    sender.join().unwrap();
}

#[test]
fn shared_and_one_shot_events_combine() {
    pcml::run(|| {
        let ch = Chan::new();
        let c = ch.clone();
        pcml::spawn(move || c.send("msg"));
        let recv = SharedEvent::recv(&ch);
        let got = select([recv.event(), never()]);
        assert_eq!(got, "msg");
        let ev: Event<&str> = SharedEvent::always("x").into();
        assert_eq!(ev.sync(), "x");
    });
}

#[test]
fn shared_events_are_send_sync_and_clone() {
    fn check<T: Send + Sync + Clone>() {}
    check::<SharedEvent<u32>>();
    check::<SharedEvent<String>>();
}
