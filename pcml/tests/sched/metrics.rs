//! Runtime metrics (`pcml::sched::metrics`, `Runtime::metrics`): the counters count what
//! the program did, and the live counts follow fibers, tasks and actors.

use std::time::{Duration, Instant};

use pcml::actor::{self, Ctx};
use pcml::sched::{RuntimeMetrics, metrics};

fn rt(procs: usize) -> pcml::Runtime {
    pcml::Runtime::builder().procs(procs).build().unwrap()
}

/// Yields until `pred` holds of the metrics (a minute at most).
fn wait_until(what: &str, pred: impl Fn(&RuntimeMetrics) -> bool) -> RuntimeMetrics {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let m = metrics().unwrap();
        if pred(&m) {
            return m;
        }
        assert!(Instant::now() < deadline, "never {what}:\n{m}");
        pcml::time::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_ping_pong_across_procs_counts_its_cross_proc_wake_ups() {
    const ROUNDS: u64 = 200;
    let m = rt(2)
        .block_on(|| {
            let before = metrics().unwrap();
            let (ping, pong) = (pcml::Chan::<u64>::new(), pcml::Chan::<u64>::new());
            let (pi, po) = (ping.clone(), pong.clone());
            let echo = pcml::spawn_on(1, move || {
                for _ in 0..ROUNDS {
                    po.send(pi.recv() + 1);
                }
            });
            let on_0 = pcml::spawn_on(0, move || {
                (0..ROUNDS)
                    .map(|i| {
                        ping.send(i);
                        pong.recv()
                    })
                    .sum::<u64>()
            });
            assert_eq!(on_0.join().unwrap(), ROUNDS * (ROUNDS + 1) / 2);
            echo.join().unwrap();
            metrics().unwrap().since(&before)
        })
        .unwrap();
    let (p0, p1) = (m.procs()[0], m.procs()[1]);
    // Every round blocks one side at least while the other runs on the other proc, so
    // wake-ups cross both ways; both fibers were resumed at least once per wake-up received.
    assert!(p0.sent_wakes > 0 && p1.sent_wakes > 0, "{m}");
    assert!(p0.inbox_wakes > 0 && p1.inbox_wakes > 0, "{m}");
    assert!(p1.resumes >= p1.inbox_wakes, "{m}");
    assert!(m.total().resumes >= 2, "{m}");
}

#[test]
fn live_fibers_tasks_and_actors_are_counted_while_they_live() {
    rt(2)
        .block_on(|| {
            let base = metrics().unwrap();
            let gate = pcml::Chan::<()>::new();
            let fibers: Vec<_> = (0..5)
                .map(|_| {
                    let g = gate.clone();
                    pcml::spawn(move || g.recv())
                })
                .collect();
            let tasks: Vec<_> = (0..3)
                .map(|_| {
                    let g = gate.clone();
                    pcml::spawn_task(async move { g.recv_evt().await })
                })
                .collect();
            let actors: Vec<_> = (0..4)
                .map(|_| {
                    actor::spawn(|mut ctx: Ctx<()>| {
                        ctx.receive();
                    })
                })
                .collect();
            // Main is a live fiber too; fibers count once started.
            let m = wait_until("all started", |m| {
                m.live_fibers() >= base.live_fibers() + 5 + 4
            });
            assert_eq!(m.live_tasks(), base.live_tasks() + 3, "{m}");
            assert_eq!(m.live_actors(), base.live_actors() + 4, "{m}");
            assert_eq!(m.live_fibers(), base.live_fibers() + 5 + 4, "{m}");
            for _ in 0..8 {
                gate.send(());
            }
            for a in &actors {
                a.send(()).unwrap();
            }
            fibers.into_iter().for_each(|f| f.join().unwrap());
            tasks.into_iter().for_each(|t| t.join().unwrap());
            let m = wait_until("all ended", |m| {
                m.live_actors() == base.live_actors() && m.live_fibers() == base.live_fibers()
            });
            assert_eq!(m.live_tasks(), base.live_tasks(), "{m}");
        })
        .unwrap();
}

#[test]
fn polls_parks_and_steals_are_counted() {
    let m = rt(2)
        .block_on(|| {
            let before = metrics().unwrap();
            assert_eq!(pcml::spawn_task(async { 7 }).join().unwrap(), 7);
            // The other proc has nothing to do: it parks.
            pcml::time::sleep(Duration::from_millis(20));
            // Work queued behind a proc that keeps busy is taken by the idle one.
            let workers: Vec<_> = (0..4)
                .map(|_| pcml::spawn(|| std::thread::sleep(Duration::from_millis(5))))
                .collect();
            let until = Instant::now() + Duration::from_millis(50);
            while Instant::now() < until {
                std::hint::spin_loop();
            }
            workers.into_iter().for_each(|w| w.join().unwrap());
            metrics().unwrap().since(&before)
        })
        .unwrap();
    let t = m.total();
    assert!(t.polls >= 1, "{m}");
    assert!(t.parks >= 1, "{m}");
    assert!(t.steals >= 1, "{m}");
}

#[test]
fn outside_a_runtime_there_are_no_metrics_and_a_fresh_runtime_is_idle() {
    assert!(metrics().is_none());
    let m = rt(3).metrics();
    assert_eq!(m.procs().len(), 3);
    assert_eq!(m.total().resumes, 0);
    assert_eq!(m.live_fibers() + m.live_tasks() + m.live_actors(), 0);
    assert!(m.to_string().contains("proc 2:"), "{m}");
}
