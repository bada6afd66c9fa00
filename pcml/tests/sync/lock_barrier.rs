//! lock::Barrier: rounds with one leader each, reused; fibers, OS threads, pcml tasks and
//! tokio in one barrier; a dropped wait_async withdraws its arrival.

use std::time::Duration;

use pcml::Barrier;

#[test]
fn each_round_has_one_leader_and_nobody_runs_ahead() {
    for procs in [1, 2] {
        let per_round = pcml::Runtime::builder()
            .procs(procs)
            .build()
            .unwrap()
            .block_on(|| {
                let b = Barrier::new(4);
                let log = pcml::Mailbox::new();
                let hs: Vec<_> = (0..4)
                    .map(|_| {
                        let (b, log) = (b.clone(), log.clone());
                        pcml::spawn(move || {
                            for round in 0..50u32 {
                                log.send(round);
                                let leader = b.wait();
                                log.send(1000 + u32::from(leader));
                            }
                        })
                    })
                    .collect();
                hs.into_iter().for_each(|h| h.join().unwrap());
                std::iter::from_fn(|| log.try_recv()).collect::<Vec<u32>>()
            })
            .unwrap();
        // No thread logs round r+1 before all four logged round r.
        let mut arrived = [0u32; 50];
        let mut highest = 0;
        for &e in per_round.iter().filter(|&&e| e < 1000) {
            assert!(e <= highest + 1 && (e == 0 || arrived[e as usize - 1] == 4));
            arrived[e as usize] += 1;
            highest = highest.max(e);
        }
        let leaders = per_round.iter().filter(|&&e| e == 1001).count();
        assert_eq!(leaders, 50, "procs = {procs}");
    }
}

#[test]
fn fibers_os_threads_and_tasks_share_a_barrier() {
    let b = Barrier::new(4);
    let os = {
        let b = b.clone();
        std::thread::spawn(move || (0..20).filter(|_| b.wait()).count())
    };
    // The OS threads are invisible to deadlock detection: while pcml's threads wait for
    // them, the runtime must not report a deadlock.
    let rt = pcml::Runtime::builder()
        .detect_deadlock(false)
        .build()
        .unwrap();
    let leaders = rt
        .block_on({
            let b = b.clone();
            move || {
                let f = {
                    let b = b.clone();
                    pcml::spawn(move || (0..20).filter(|_| b.wait()).count())
                };
                let t = {
                    let b = b.clone();
                    pcml::spawn_task(async move {
                        let mut n = 0;
                        for _ in 0..20 {
                            n += usize::from(b.wait_async().await);
                        }
                        n
                    })
                };
                let rt = tokio::runtime::Builder::new_current_thread()
                    .build()
                    .unwrap();
                let tok = std::thread::spawn(move || {
                    rt.block_on(async move {
                        let mut n = 0;
                        for _ in 0..20 {
                            n += usize::from(b.wait_async().await);
                        }
                        n
                    })
                });
                f.join().unwrap() + t.join().unwrap() + tok.join().unwrap()
            }
        })
        .unwrap();
    assert_eq!(leaders + os.join().unwrap(), 20);
}

#[test]
fn a_dropped_wait_async_withdraws_its_arrival() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let b = Barrier::new(2);
        tokio::select! {
            _ = b.wait_async() => panic!("alone at a barrier of two"),
            _ = tokio::time::sleep(Duration::from_millis(1)) => {}
        }
        // Had the arrival stayed, this wait would lead a round with a thread that left.
        let b2 = b.clone();
        let t = std::thread::spawn(move || b2.wait());
        let me = b.wait_async().await;
        assert!(me != t.join().unwrap());
    });
}

#[test]
fn zero_threads_is_refused() {
    assert!(std::panic::catch_unwind(|| Barrier::new(0)).is_err());
}

#[test]
fn wait_evt_rounds_on_two_procs_have_one_leader_each() {
    let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    let leaders = rt
        .block_on(|| {
            let b = Barrier::new(4);
            let hs: Vec<_> = (0..4usize)
                .map(|i| {
                    let b = b.clone();
                    pcml::spawn_on(i % 2, move || {
                        (0..200).filter(|_| b.wait_evt().sync()).count()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
        })
        .unwrap();
    assert_eq!(leaders, 200);
}

#[test]
fn wait_evt_from_os_threads_and_async_code() {
    let b = Barrier::new(3);
    let (b1, b2) = (b.clone(), b.clone());
    let os = std::thread::spawn(move || b1.wait_evt().sync());
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let tokio_side = std::thread::spawn(move || rt.block_on(async move { b2.wait_evt().await }));
    // The other two parties are outside the runtime, which cannot see them: its deadlock
    // detection would fire while they have not arrived yet.
    let rt = pcml::Runtime::builder()
        .detect_deadlock(false)
        .build()
        .unwrap();
    let me = rt
        .block_on(move || {
            pcml::spawn_task(async move { b.wait_evt().await })
                .join()
                .unwrap()
        })
        .unwrap();
    let leaders = [me, os.join().unwrap(), tokio_side.join().unwrap()];
    assert_eq!(leaders.iter().filter(|l| **l).count(), 1);
}

#[test]
fn a_wait_evt_that_loses_to_a_timeout_is_withdrawn() {
    pcml::run(|| {
        let b = Barrier::new(2);
        for _ in 0..20 {
            let got = pcml::event::select([
                b.wait_evt().wrap(|_| "passed"),
                pcml::time::timeout_evt(Duration::from_millis(1)).wrap(|()| "timed out"),
            ]);
            assert_eq!(got, "timed out");
        }
        // Twenty withdrawn arrivals: the next round still needs two threads.
        let b2 = b.clone();
        let other = pcml::spawn(move || b2.wait());
        let me = b.wait();
        assert!(me != other.join().unwrap());
    });
}
