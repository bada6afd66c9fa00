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

// Time as channels: after, tick, interval, timeout.

#[test]
fn after_fires_once_its_deadline_passes_and_stays_enabled() {
    assert_eq!(
        pcml::time::after(Duration::from_secs(60)).recv_evt().poll(),
        None
    );
    let a = pcml::time::after(Duration::from_millis(5));
    let at = a.recv();
    assert_eq!(at, a.deadline());
    assert!(Instant::now() >= at);
    // It does not empty: every later receive returns at once, with the same instant.
    assert_eq!(a.recv_evt().poll(), Some(at));
    assert_eq!(a.recv(), at);
}

#[test]
fn a_select_loop_bounded_by_one_after() {
    pcml::run(|| {
        let ch = Chan::new();
        let tx = ch.clone();
        pcml::spawn(move || (0..10u32).for_each(|i| tx.send(i)));
        let deadline = pcml::time::after(Duration::from_millis(30));
        let (mut got, mut ended) = (Vec::new(), 0);
        loop {
            pcml::select! {
                recv(ch) -> v => got.push(v),
                recv(deadline) -> at => { assert!(Instant::now() >= at); ended += 1; break }
            }
        }
        assert_eq!(ended, 1);
        // Ended by the deadline, with everything received unless the sender was held up for
        // 30 ms (a loaded machine): receive the rest, nothing lost or reordered.
        while got.len() < 10 {
            got.push(ch.recv());
        }
        assert_eq!(got, (0..10).collect::<Vec<_>>());
    });
}

#[test]
fn ticks_stay_on_their_grid_and_skip_what_was_missed() {
    let period = Duration::from_millis(3);
    let on_grid = |t: Instant, start: Instant| (t - start).as_nanos() % period.as_nanos() == 0;
    let start = Instant::now();
    let t = pcml::time::Ticker::starting_at(start, period);
    // The first tick is due at once: the start, or, if this thread lost its core for a period
    // or more since (beside two busy loops it once came 6 ms late), the latest point of the
    // grid due by then. Then each receive waits for a later point of the grid.
    let first = t.recv();
    assert!(first >= start && first <= Instant::now() && on_grid(first, start));
    let mut last = first;
    for _ in 0..3 {
        let next = t.recv();
        assert!(next > last && on_grid(next, start) && Instant::now() >= next);
        last = next;
    }
    // Fall behind by several periods: one tick at once, the latest due (the missed ones are
    // skipped, not queued), and the grid goes on from there.
    std::thread::sleep(5 * period);
    let late = t.recv_evt().poll().expect("a tick is due");
    assert!(late >= last + 5 * period && late <= Instant::now() && on_grid(late, start));
    let after = t.recv();
    assert!(after > late && on_grid(after, start));
}

#[test]
fn a_tick_driven_loop_in_a_fiber_and_a_shared_ticker() {
    pcml::run(|| {
        // A worker that does a unit of work per tick until told to stop.
        let (stop, done) = (Chan::new(), Chan::new());
        let (s, d) = (stop.clone(), done.clone());
        let ticker = pcml::time::tick(Duration::from_millis(1));
        let worker = pcml::spawn(move || {
            let mut last = None;
            let mut n = 0u32;
            loop {
                pcml::select! {
                    recv(ticker) -> at => {
                        // Strictly increasing: each tick once, in order.
                        assert!(last.is_none_or(|l| at > l));
                        last = Some(at);
                        n += 1;
                        if n == 5 {
                            d.send(());
                        }
                    }
                    recv(s) -> () => return n,
                }
            }
        });
        done.recv();
        stop.send(());
        assert!(worker.join().unwrap() >= 5);

        // One ticker, two receivers: every tick goes to exactly one of them.
        let ticker = pcml::time::tick(Duration::from_millis(1));
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let t = ticker.clone();
                pcml::spawn(move || (0..5).map(|_| t.recv()).collect::<Vec<_>>())
            })
            .collect();
        let mut all: Vec<Instant> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 10, "a tick was delivered twice");
    });
}

#[test]
fn interval_and_timeout_in_async_code() {
    let run = || async {
        let iv = pcml::time::interval(Duration::from_millis(2));
        let first = iv.tick().await;
        let second = iv.tick().await;
        assert!(second > first && (second - first).as_nanos() % 2_000_000 == 0);
        let ok = pcml::time::timeout(Duration::from_secs(60), async { 5 }).await;
        let late = pcml::time::timeout(
            Duration::from_millis(2),
            pcml::time::sleep_async(Duration::from_secs(60)),
        )
        .await;
        (ok, late)
    };
    let (ok, late) = pcml::run(move || pcml::spawn_task(run()).join().unwrap());
    assert_eq!(ok, Ok(5));
    assert_eq!(late, Err(pcml::time::Elapsed::default()));
    // In another executor too.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let (ok, late) = rt.block_on(run());
    assert_eq!(ok, Ok(5));
    assert!(late.is_err());
}
