//! Timeouts as events: in choices, from fibers, OS threads, pcml tasks and tokio.

use std::time::{Duration, Instant};

use pcml::event::{always, choose};
use pcml::time::{at_time_evt, timeout_evt};
use pcml::{Chan, select};

fn recv_or_timeout(ch: &Chan<u32>, d: Duration) -> pcml::Event<Option<u32>> {
    choose([ch.recv_evt().wrap(Some), timeout_evt(d).wrap(|()| None)])
}

#[test]
fn a_timeout_wins_only_when_nothing_else_is_ready() {
    for procs in [1, 2] {
        pcml::Runtime::builder()
            .procs(procs)
            .build()
            .unwrap()
            .block_on(|| {
                let ch = Chan::new();
                assert_eq!(recv_or_timeout(&ch, Duration::from_millis(5)).sync(), None);
                let c = ch.clone();
                pcml::spawn(move || c.send(3));
                assert_eq!(
                    recv_or_timeout(&ch, Duration::from_secs(60)).sync(),
                    Some(3)
                );
                // A message that arrives while the choice is blocked beats a long timeout.
                let c = ch.clone();
                pcml::spawn(move || {
                    pcml::time::sleep(Duration::from_millis(5));
                    c.send(4)
                });
                assert_eq!(
                    recv_or_timeout(&ch, Duration::from_secs(60)).sync(),
                    Some(4)
                );
            })
            .unwrap();
    }
}

#[test]
fn timeouts_order_by_deadline_in_one_choice() {
    pcml::run(|| {
        let got = select([
            timeout_evt(Duration::from_millis(40)).wrap(|()| "long"),
            timeout_evt(Duration::from_millis(5)).wrap(|()| "short"),
        ]);
        assert_eq!(got, "short");
        // A deadline already passed is enabled at once.
        at_time_evt(Instant::now()).sync();
    });
}

#[test]
fn timeouts_work_on_plain_os_threads() {
    let ch = Chan::<u32>::new();
    let start = Instant::now();
    assert_eq!(recv_or_timeout(&ch, Duration::from_millis(10)).sync(), None);
    assert!(start.elapsed() >= Duration::from_millis(10));
    let c = ch.clone();
    let t = std::thread::spawn(move || c.send(8));
    assert_eq!(ch.recv_evt().sync_timeout(Duration::from_secs(60)), Some(8));
    t.join().unwrap();
}

#[test]
fn timeouts_work_in_pcml_tasks_and_in_tokio() {
    let got = pcml::run(|| {
        pcml::spawn_task(async {
            let ch = Chan::<u32>::new();
            recv_or_timeout(&ch, Duration::from_millis(5)).await
        })
        .join()
        .unwrap()
    });
    assert_eq!(got, None);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let got = rt.block_on(async {
        let ch = Chan::<u32>::new();
        let first = recv_or_timeout(&ch, Duration::from_millis(5)).await;
        pcml::time::sleep_async(Duration::from_millis(1)).await;
        first
    });
    assert_eq!(got, None);
}

#[test]
fn a_zero_or_past_timeout_is_enabled_when_polled() {
    assert_eq!(timeout_evt(Duration::ZERO).poll(), Some(()));
    let past = Instant::now() - Duration::from_millis(1);
    assert_eq!(at_time_evt(past).poll(), Some(()));
    assert_eq!(at_time_evt(Instant::now()).poll(), Some(()));
    // A future one is not.
    assert_eq!(timeout_evt(Duration::from_secs(60)).poll(), None);
}

#[test]
fn a_zero_timeout_takes_its_fair_share_of_a_choice() {
    // Against an always-enabled branch, a zero timeout wins about half the time, in `poll` and
    // in `sync` alike (bounds wide enough that a fair coin fails them with probability < 1e-9).
    let mut by_poll = 0;
    let mut by_sync = 0;
    for _ in 0..2000 {
        let ev = || choose([always(false), timeout_evt(Duration::ZERO).wrap(|()| true)]);
        by_poll += usize::from(ev().poll().expect("both branches are enabled"));
        by_sync += usize::from(ev().sync());
    }
    assert!(
        (700..=1300).contains(&by_poll),
        "zero timeout won {by_poll} of 2000 polls"
    );
    assert!(
        (700..=1300).contains(&by_sync),
        "zero timeout won {by_sync} of 2000 syncs"
    );
}
