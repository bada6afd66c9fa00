//! `JoinHandle::join_evt`: waiting for a thread as an event, from every kind of waiter.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use pcml::chan::Chan;
use pcml::event::select;
use pcml::time::timeout_evt;

#[test]
fn join_evt_yields_the_value_of_a_finished_or_running_thread() {
    pcml::run(|| {
        let done = pcml::spawn(|| 1);
        while !done.is_finished() {
            pcml::yield_now();
        }
        assert_eq!(done.join_evt().sync().unwrap(), 1);

        let gate = Chan::<()>::new();
        let g = gate.clone();
        let running = pcml::spawn(move || {
            g.recv();
            2
        });
        let opener = pcml::spawn(move || gate.send(()));
        assert_eq!(running.join_evt().sync().unwrap(), 2);
        opener.join().unwrap();
    });
}

#[test]
fn join_evt_reports_a_panic() {
    pcml::run(|| {
        let h = pcml::spawn(|| -> u8 { panic!("boom in a joined thread") });
        let err = h.join_evt().sync().unwrap_err();
        assert!(err.is_panic());
        assert_eq!(err.panic_message(), Some("boom in a joined thread"));
    });
}

#[test]
fn the_first_thread_to_finish_wins_a_choice_of_joins() {
    pcml::run(|| {
        let gate = Chan::<()>::new();
        let g = gate.clone();
        let slow = pcml::spawn(move || {
            g.recv();
            "slow"
        });
        let fast = pcml::spawn(|| "fast");
        let first = select([slow.join_evt(), fast.join_evt()]).unwrap();
        assert_eq!(first, "fast");
        // The losing join detached `slow`; it still runs to completion.
        gate.send(());
    });
}

#[test]
fn a_timeout_beats_a_thread_that_does_not_finish() {
    pcml::run(|| {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let gate = Chan::<()>::new();
        let g = gate.clone();
        let h = pcml::spawn(move || {
            g.recv();
            s.store(true, Ordering::Relaxed);
        });
        let got = select([
            h.join_evt().wrap(|_| "joined"),
            timeout_evt(Duration::from_millis(20)).wrap(|()| "timed out"),
        ]);
        assert_eq!(got, "timed out");
        // The detached thread still finishes when let go; joining it again is not possible,
        // so watch its side effect.
        gate.send(());
        while !stop.load(Ordering::Relaxed) {
            pcml::yield_now();
        }
    });
}

#[test]
fn join_evt_from_an_os_thread_outside_the_runtime() {
    pcml::run(|| {
        let gate = Chan::<()>::new();
        let g = gate.clone();
        let h = pcml::spawn(move || {
            g.recv();
            7u32
        });
        let os = std::thread::spawn(move || h.join_evt().sync());
        gate.send(());
        let got = pcml::spawn_blocking(move || os.join().unwrap())
            .join()
            .unwrap();
        assert_eq!(got.unwrap(), 7);
    });
}

#[test]
fn join_evt_awaited_in_tasks_and_tokio() {
    pcml::run(|| {
        let h = pcml::spawn(|| 5u8);
        let t = pcml::spawn_task(async move { h.join_evt().await.unwrap() + 1 });
        assert_eq!(t.join().unwrap(), 6);
    });

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    // A pcml runtime on a side thread, its thread joined from tokio.
    let (tx, rx) = std::sync::mpsc::channel();
    let (ack_tx, ack_rx) = std::sync::mpsc::channel::<()>();
    let side = std::thread::spawn(move || {
        pcml::run(move || {
            let gate = Chan::<()>::new();
            let g = gate.clone();
            let h = pcml::spawn(move || {
                g.recv();
                "from pcml"
            });
            tx.send(h).unwrap();
            gate.send(());
            // Keep the runtime up until the joiner has its answer.
            pcml::spawn_blocking(move || ack_rx.recv().unwrap())
                .join()
                .unwrap();
        })
    });
    let h = rx.recv().unwrap();
    let got = rt.block_on(async move { h.join_evt().await.unwrap() });
    ack_tx.send(()).unwrap();
    assert_eq!(got, "from pcml");
    side.join().unwrap();
}

#[test]
fn many_joins_race_completion_across_procs() {
    let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    rt.block_on(|| {
        for round in 0..2000u32 {
            let h = pcml::spawn_on((round % 2) as usize, move || round);
            let idle = Chan::<u32>::new();
            let got = select([h.join_evt().wrap(Result::unwrap), idle.recv_evt()]);
            assert_eq!(got, round);
            // Losing receives leave dead offers that the channel's sweep keeps bounded.
            assert!(
                idle.queue_lens().1 < 64,
                "dead offers piled up on the idle channel"
            );
        }
    })
    .unwrap();
}
