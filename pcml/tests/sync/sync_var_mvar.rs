//! MVar: a full-or-empty cell, in fibers, OS threads, choices and async.

use std::time::Duration;

use pcml::{Chan, MVar, Runtime, RuntimeError};

#[test]
fn try_ops_succeed_only_when_possible() {
    let m = MVar::new();
    assert_eq!(m.try_take(), None);
    assert_eq!(m.try_put(1), Ok(()));
    assert_eq!(m.try_put(2), Err(2));
    assert_eq!(m.get(), 1);
    assert_eq!(m.try_take(), Some(1));
    assert_eq!(m.try_take(), None);
    let f = MVar::new_full(3);
    assert_eq!(f.swap(4), 3);
    assert_eq!(f.take(), 4);
}

#[test]
fn one_slot_buffer_between_fibers_passes_every_value_once_in_order() {
    for procs in [1, 4] {
        let got = Runtime::builder()
            .procs(procs)
            .build()
            .unwrap()
            .block_on(|| {
                let m = MVar::new();
                let p = m.clone();
                let prod = pcml::spawn(move || (0..2000u32).for_each(|i| p.put(i)));
                let got: Vec<u32> = (0..2000).map(|_| m.take()).collect();
                prod.join().unwrap();
                got
            })
            .unwrap();
        assert_eq!(got, (0..2000).collect::<Vec<_>>(), "procs = {procs}");
    }
}

#[test]
fn many_putters_and_takers_on_threads_exchange_each_value_once() {
    let m = MVar::new();
    let putters: Vec<_> = (0..4u32)
        .map(|t| {
            let m = m.clone();
            std::thread::spawn(move || (0..250).for_each(|i| m.put(t * 1000 + i)))
        })
        .collect();
    let takers: Vec<_> = (0..4)
        .map(|_| {
            let m = m.clone();
            std::thread::spawn(move || (0..250).map(|_| m.take()).collect::<Vec<_>>())
        })
        .collect();
    putters.into_iter().for_each(|t| t.join().unwrap());
    let mut all: Vec<u32> = takers.into_iter().flat_map(|t| t.join().unwrap()).collect();
    all.sort_unstable();
    let mut want: Vec<u32> = (0..4)
        .flat_map(|t| (0..250).map(move |i| t * 1000 + i))
        .collect();
    want.sort_unstable();
    assert_eq!(all, want);
    assert_eq!(m.try_take(), None);
}

#[test]
fn readers_see_the_value_and_leave_it() {
    let got = pcml::run(|| {
        let m = MVar::new();
        let rs: Vec<_> = (0..10)
            .map(|_| {
                let m = m.clone();
                pcml::spawn(move || m.get())
            })
            .collect();
        pcml::yield_now();
        m.put(9);
        let got: Vec<i32> = rs.into_iter().map(|h| h.join().unwrap()).collect();
        (got, m.take())
    });
    assert_eq!(got, (vec![9; 10], 9));
}

#[test]
fn take_and_put_evts_select_with_a_channel() {
    pcml::run(|| {
        let m = MVar::new();
        let ch = Chan::new();
        let tx = ch.clone();
        let h = pcml::spawn(move || tx.send(1));
        // The MVar is empty: only the channel can win.
        let r = pcml::select([
            m.take_evt().wrap(|v| ("mvar", v)),
            ch.recv_evt().wrap(|v| ("chan", v)),
        ]);
        assert_eq!(r, ("chan", 1));
        h.join().unwrap();
        m.put(2);
        let r = pcml::select([
            m.take_evt().wrap(|v| ("mvar", v)),
            ch.recv_evt().wrap(|v| ("chan", v)),
        ]);
        assert_eq!(r, ("mvar", 2));
        // A put that loses leaves the MVar empty; one that wins fills it.
        m.put(3);
        let rx = ch.clone();
        let h = pcml::spawn(move || rx.recv());
        let r = pcml::select([
            m.put_evt(4).wrap(|()| "put"),
            ch.send_evt(5).wrap(|()| "send"),
        ]);
        assert_eq!(r, "send");
        assert_eq!(h.join().unwrap(), 5);
        assert_eq!(m.take(), 3);
        let r = pcml::select([
            m.put_evt(6).wrap(|()| "put"),
            ch.send_evt(7).wrap(|()| "send"),
        ]);
        assert_eq!(r, "put");
        assert_eq!(m.take(), 6);
    });
}

#[test]
fn take_and_put_evts_select_with_a_timeout() {
    let m: MVar<u8> = MVar::new();
    let r = pcml::select([
        m.take_evt().wrap(Some),
        pcml::time::timeout_evt(Duration::from_millis(1)).wrap(|()| None),
    ]);
    assert_eq!(r, None);
    m.put(1);
    let r = pcml::select([
        m.put_evt(2).wrap(|()| true),
        pcml::time::timeout_evt(Duration::from_millis(1)).wrap(|()| false),
    ]);
    assert!(!r);
    assert_eq!(m.try_take(), Some(1));
    assert_eq!(m.try_take(), None, "the losing put left nothing behind");
}

#[test]
fn a_blocked_put_and_take_in_one_choice_never_match_each_other() {
    // A sync offering both put and take on one empty MVar takes nothing from itself: the put
    // wins at once (the cell is empty).
    let m = MVar::new();
    let r = pcml::select([m.put_evt(1).wrap(|()| 0), m.take_evt()]);
    assert_eq!(r, 0);
    assert_eq!(m.take(), 1);
}

#[test]
fn two_fibers_blocked_on_each_others_mvars_deadlock() {
    let r = Runtime::builder().procs(1).build().unwrap().block_on(|| {
        let (a, b) = (MVar::<u8>::new(), MVar::<u8>::new());
        let (a2, b2) = (a.clone(), b.clone());
        let x = pcml::spawn(move || {
            let v = b2.take();
            a2.put(v);
        });
        let y = pcml::spawn(move || {
            let v = a.take();
            b.put(v);
        });
        x.join().unwrap();
        y.join().unwrap();
    });
    assert!(matches!(r, Err(RuntimeError::Deadlock { .. })), "got {r:?}");
}

#[test]
fn events_await_in_pcml_tasks_and_tokio() {
    let r = pcml::run(|| {
        let m = MVar::new();
        let p = m.clone();
        let h = pcml::spawn_task(async move {
            let a = p.take_evt().await;
            p.put_evt(a + 1).await;
        });
        m.put(1);
        h.join().unwrap();
        m.take()
    });
    assert_eq!(r, 2);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let r = rt.block_on(async {
        let m = MVar::new();
        let p = m.clone();
        let h = tokio::spawn(async move {
            for i in 0..100 {
                p.put_evt(i).await;
            }
        });
        let mut got = Vec::new();
        for _ in 0..100 {
            got.push(m.take_evt().await);
        }
        h.await.unwrap();
        got
    });
    assert_eq!(r, (0..100).collect::<Vec<_>>());
}

#[test]
fn blocked_swappers_chain_their_values_each_once() {
    for procs in [1, 4] {
        let mut all = Runtime::builder()
            .procs(procs)
            .build()
            .unwrap()
            .block_on(|| {
                let m = MVar::new();
                let hs: Vec<_> = (1..=20u32)
                    .map(|i| {
                        let m = m.clone();
                        pcml::spawn(move || m.swap(i))
                    })
                    .collect();
                pcml::yield_now();
                m.put(0);
                let mut all: Vec<u32> = hs.into_iter().map(|h| h.join().unwrap()).collect();
                all.push(m.take());
                assert_eq!(m.try_take(), None);
                all
            })
            .unwrap();
        all.sort_unstable();
        assert_eq!(all, (0..=20).collect::<Vec<_>>(), "procs = {procs}");
    }
}

#[test]
fn swap_evt_in_choices() {
    let m: MVar<u8> = MVar::new();
    let r = pcml::select([
        m.swap_evt(1).wrap(Some),
        pcml::time::timeout_evt(Duration::from_millis(1)).wrap(|()| None),
    ]);
    assert_eq!(r, None);
    assert_eq!(m.try_take(), None, "a losing swap put nothing");
    m.put(2);
    assert_eq!(pcml::select([m.swap_evt(3), pcml::never()]), 2);
    assert_eq!(m.try_take(), Some(3));
}

#[test]
fn a_dropped_take_future_takes_nothing() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let m: MVar<u8> = MVar::new();
        tokio::select! {
            _ = m.take_evt() => panic!("nothing was put"),
            _ = tokio::time::sleep(Duration::from_millis(1)) => {}
        }
        m.put(1);
        assert_eq!(m.try_take(), Some(1));
    });
}

// ---------------------------------------------------------------------------------------------
// A take or swap whose `.await` is dropped after a put already handed it the value.

/// Polls `fut` once with a waker that does nothing.
fn poll_once<F: std::future::Future + Unpin>(fut: &mut F) -> std::task::Poll<F::Output> {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    std::pin::Pin::new(fut).poll(&mut cx)
}

/// A blocked `.await` of `ev`: polled once, pending.
fn blocked<T: Send + 'static>(ev: pcml::Event<T>) -> pcml::event::SyncFuture<T> {
    use std::future::IntoFuture;
    let mut fut = ev.into_future();
    assert!(poll_once(&mut fut).is_pending(), "the event was enabled");
    fut
}

fn drain<T: Send + 'static>(m: &MVar<T>) -> Vec<T> {
    std::iter::from_fn(|| m.try_take()).collect()
}

#[test]
fn a_take_dropped_after_it_won_gives_its_value_back() {
    // The MVar is still empty: the value fills it again.
    let m = MVar::new();
    let take = blocked(m.take_evt());
    m.put(1);
    assert_eq!(m.try_take(), None, "the put went to the blocked take");
    drop(take);
    assert_eq!(drain(&m), [1]);

    // A blocked reader and a second blocked take are served as a put would serve them.
    let (take, get, take2) = (
        blocked(m.take_evt()),
        blocked(m.get_evt()),
        blocked(m.take_evt()),
    );
    let (mut get, mut take2) = (get, take2);
    m.put(2);
    assert!(poll_once(&mut take2).is_pending(), "the first take won");
    drop(take);
    assert_eq!(poll_once(&mut get), std::task::Poll::Ready(2));
    assert_eq!(poll_once(&mut take2), std::task::Poll::Ready(2));
    assert_eq!(m.try_take(), None);
}

#[test]
fn a_take_dropped_after_the_mvar_was_refilled_goes_first_and_blocks_no_put() {
    let m = MVar::new();
    let take = blocked(m.take_evt());
    m.put(1);
    m.put(2); // the MVar was empty again
    let mut put3 = blocked(m.put_evt(3)); // full: this one waits
    drop(take);
    // 1 was taken before 2 was put: it comes first, then 2 (a put nobody waits on), then 3.
    assert_eq!(m.try_take(), Some(1));
    assert!(poll_once(&mut put3).is_pending(), "2 comes before 3");
    assert_eq!(m.try_take(), Some(2));
    assert_eq!(poll_once(&mut put3), std::task::Poll::Ready(()));
    assert_eq!(drain(&m), [3]);

    // Blocking takers on threads get every value once, in that order.
    let take = blocked(m.take_evt());
    m.put(4);
    m.put(5);
    drop(take);
    let t = {
        let m = m.clone();
        std::thread::spawn(move || (0..2).map(|_| m.take()).collect::<Vec<_>>())
    };
    assert_eq!(t.join().unwrap(), [4, 5]);
    assert_eq!(m.try_take(), None);
}

#[test]
fn a_swap_dropped_after_it_won_is_undone_while_its_value_is_untaken() {
    let m = MVar::new();
    // Its value is still in the cell (read, not taken): the whole swap is undone.
    let swap = blocked(m.swap_evt(10));
    m.put(1);
    assert_eq!(m.get(), 10, "the put went to the blocked swap");
    drop(swap);
    assert_eq!(drain(&m), [1]);

    // Its value was taken: its put stands, and the old value comes back.
    let swap = blocked(m.swap_evt(10));
    m.put(1);
    assert_eq!(m.take(), 10);
    drop(swap);
    assert_eq!(drain(&m), [1]);

    // Taken and refilled: the old value comes back first.
    let swap = blocked(m.swap_evt(10));
    m.put(1);
    assert_eq!(m.take(), 10);
    m.put(2);
    drop(swap);
    assert_eq!(drain(&m), [1, 2]);

    // The cell changed by another swap since: not ours to undo; nothing is lost.
    let swap = blocked(m.swap_evt(10));
    m.put(1);
    assert_eq!(m.swap(20), 10);
    drop(swap);
    assert_eq!(drain(&m), [1, 20]);

    // Two chained swaps, both dropped: every value survives once.
    let (s1, s2) = (blocked(m.swap_evt(11)), blocked(m.swap_evt(12)));
    m.put(0); // 0 to s1, 11 to s2, 12 to the cell
    drop(s1);
    drop(s2);
    let mut all = drain(&m);
    all.sort_unstable();
    assert_eq!(all, [0, 11, 12]);

    // Dropped in reverse order, the last swap is undone whole.
    let (s1, s2) = (blocked(m.swap_evt(11)), blocked(m.swap_evt(12)));
    m.put(0);
    drop(s2); // 12 was untouched: dropped, 11 back
    drop(s1); // 11 is back in the cell, but not as s1's exchange left it: 0 comes back too
    let mut all = drain(&m);
    all.sort_unstable();
    assert_eq!(all, [0, 11]);
}

#[test]
fn dropped_takes_and_swaps_give_back_from_pcml_tasks_and_tokio() {
    use std::future::{Future, IntoFuture};
    use std::task::Poll;

    // In a pcml task: block, let a fiber put, drop the future without polling it again.
    let r = pcml::run(|| {
        let m = MVar::new();
        let (m2, m3) = (m.clone(), m.clone());
        let h = pcml::spawn_task(async move {
            let mut take = std::pin::pin!(m2.take_evt().into_future());
            std::future::poll_fn(|cx| {
                assert!(take.as_mut().poll(cx).is_pending());
                Poll::Ready(())
            })
            .await;
            pcml::spawn(move || m3.put(1)).join_evt().await.unwrap();
            // `take` won; it is dropped here without seeing 1.
        });
        h.join().unwrap();
        drain(&m)
    });
    assert_eq!(r, [1]);

    // In tokio: a biased select whose other branch becomes ready with the same wake-up.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let m = MVar::new();
        for round in 0..2 {
            let (tx, rx) = tokio::sync::oneshot::channel();
            let p = m.clone();
            // On a current-thread runtime this runs once the select below is blocked.
            tokio::spawn(async move {
                p.put(1);
                tx.send(()).unwrap();
            });
            if round == 0 {
                tokio::select! {
                    biased;
                    _ = rx => {}
                    v = m.take_evt() => panic!("the take saw {v}, but the other branch was first"),
                }
                assert_eq!(drain(&m), [1]);
            } else {
                tokio::select! {
                    biased;
                    _ = rx => {}
                    v = m.swap_evt(10) => panic!("the swap saw {v}, but the other branch was first"),
                }
                assert_eq!(drain(&m), [1], "the swap was undone");
            }
        }
    });
}
