//! The guide's user-defined base event (`examples/exchanger.rs`) in every context: it must
//! behave like a built-in communication object.

#[path = "../../examples/exchanger.rs"]
mod exchanger;

use std::time::Duration;

use exchanger::Exchanger;
use pcml::chan::Chan;
use pcml::event::{choose, select};
use pcml::time::timeout_evt;

#[test]
fn pairs_of_fibers_on_two_procs_swap_every_value_once() {
    // Four exchangers, each shared by one fiber on each proc. (One exchanger shared by all
    // eight fibers could strand the last fiber with exchanges left and nobody to meet: the
    // runtime then reports a deadlock, correctly.)
    let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    let pairs = rt
        .block_on(|| {
            let hs: Vec<_> = (0..4u32)
                .map(|p| {
                    let ex = Exchanger::new();
                    let side = |proc: u32| {
                        let ex = ex.clone();
                        pcml::spawn_on(proc as usize, move || {
                            let base = p * 10_000 + proc * 1000;
                            (0..500u32)
                                .map(|i| ex.exchange(base + i))
                                .collect::<Vec<_>>()
                        })
                    };
                    (p, side(0), side(1))
                })
                .collect();
            hs.into_iter()
                .map(|(p, a, b)| (p, a.join().unwrap(), b.join().unwrap()))
                .collect::<Vec<_>>()
        })
        .unwrap();
    for (p, got0, got1) in pairs {
        // Each side got the other's values, in the other's order.
        assert_eq!(
            got0,
            (0..500).map(|i| p * 10_000 + 1000 + i).collect::<Vec<_>>()
        );
        assert_eq!(got1, (0..500).map(|i| p * 10_000 + i).collect::<Vec<_>>());
    }
}

#[test]
fn a_choice_naming_the_exchanger_twice_never_swaps_with_itself() {
    pcml::run(|| {
        let ex = Exchanger::new();
        let got = select([
            ex.exchange_evt(1).wrap(Some),
            ex.exchange_evt(2).wrap(Some),
            timeout_evt(Duration::from_millis(20)).wrap(|()| None),
        ]);
        assert_eq!(got, None);
        // The dead offers left behind do not match a later pair.
        let e2 = ex.clone();
        let h = pcml::spawn(move || e2.exchange(10));
        assert_eq!(ex.exchange(20), 10);
        assert_eq!(h.join().unwrap(), 20);
    });
}

#[test]
fn an_exchange_races_a_channel_in_a_choice() {
    pcml::run(|| {
        for round in 0..200u32 {
            let (ex, ch) = (Exchanger::new(), Chan::new());
            let (e2, c2) = (ex.clone(), ch.clone());
            let chooser = pcml::spawn(move || {
                select([
                    e2.exchange_evt(round).wrap(|v| ("ex", v)),
                    c2.recv_evt().wrap(|v| ("ch", v)),
                ])
            });
            // Offer both; exactly one is taken, the other withdrawn.
            let offered = select([
                ex.exchange_evt(7).wrap(|v| ("ex", v)),
                ch.send_evt(8).wrap(|()| ("ch", 0)),
            ]);
            let got = chooser.join().unwrap();
            match offered {
                ("ex", v) => assert_eq!((got, v), (("ex", 7), round)),
                _ => assert_eq!(got, ("ch", 8)),
            }
        }
    });
}

#[test]
fn os_threads_outside_any_runtime_exchange() {
    let ex = Exchanger::new();
    let e2 = ex.clone();
    let t = std::thread::spawn(move || e2.exchange(String::from("thread")));
    assert_eq!(ex.exchange(String::from("main")), "thread");
    assert_eq!(t.join().unwrap(), "main");
}

#[test]
fn tasks_and_tokio_await_exchanges_and_dropping_one_withdraws_it() {
    pcml::run(|| {
        let ex = Exchanger::new();
        let e2 = ex.clone();
        let t = pcml::spawn_task(async move { e2.exchange_evt(1u8).await });
        assert_eq!(ex.exchange(2), 1);
        assert_eq!(t.join().unwrap(), 2);
    });

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let ex = Exchanger::new();
        // A pending exchange dropped by a tokio timeout: its value must not reach anyone.
        let pending = ex.exchange_evt("dropped");
        let r = tokio::time::timeout(Duration::from_millis(10), pending.into_future()).await;
        assert!(r.is_err());
        let e2 = ex.clone();
        let side = std::thread::spawn(move || e2.exchange("side"));
        assert_eq!(ex.exchange_evt("tokio").await, "side");
        assert_eq!(side.join().unwrap(), "tokio");
    });
}

#[test]
fn poll_exchanges_only_with_a_waiting_partner() {
    pcml::run(|| {
        let ex = Exchanger::new();
        assert_eq!(ex.exchange_evt(1).poll(), None);
        let e2 = ex.clone();
        let h = pcml::spawn(move || e2.exchange(2));
        // Wait until the partner is blocked, then poll succeeds.
        loop {
            if let Some(v) = choose([ex.exchange_evt(3)]).poll() {
                assert_eq!(v, 2);
                break;
            }
            pcml::yield_now();
        }
        assert_eq!(h.join().unwrap(), 3);
    });
}
