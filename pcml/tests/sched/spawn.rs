//! Spawning and joining fibers, tasks and blocking jobs with real procs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use pcml::{Runtime, SpawnError};

fn rt(procs: usize) -> Runtime {
    Runtime::builder().procs(procs).build().unwrap()
}

#[test]
fn hundred_thousand_fibers_spawn_and_join() {
    for procs in [1, 2] {
        let sum = rt(procs)
            .block_on(|| {
                let hs: Vec<_> = (0..100_000u64).map(|i| pcml::spawn(move || i)).collect();
                hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
            })
            .unwrap();
        assert_eq!(sum, 100_000 * 99_999 / 2, "procs = {procs}");
    }
}

#[test]
fn hundred_thousand_tasks_spawn_and_join() {
    let sum = rt(2)
        .block_on(|| {
            let hs: Vec<_> = (0..100_000u64)
                .map(|i| pcml::spawn_task(async move { i }))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
        })
        .unwrap();
    assert_eq!(sum, 100_000 * 99_999 / 2);
}

#[test]
fn nested_spawns_form_a_tree() {
    fn tree(depth: u32) -> u64 {
        if depth == 0 {
            return 1;
        }
        let l = pcml::spawn(move || tree(depth - 1));
        let r = pcml::spawn(move || tree(depth - 1));
        l.join().unwrap() + r.join().unwrap()
    }
    assert_eq!(rt(2).block_on(|| tree(12)).unwrap(), 4096);
}

#[test]
fn tasks_await_fibers_and_fibers_join_tasks() {
    let v = rt(2)
        .block_on(|| {
            let f = pcml::spawn(|| 40);
            let t = pcml::spawn_task(async move { f.await.unwrap() + 1 });
            t.join().unwrap() + 1
        })
        .unwrap();
    assert_eq!(v, 42);
}

#[test]
fn task_tree_of_async_joins() {
    fn tree(depth: u32) -> std::pin::Pin<Box<dyn std::future::Future<Output = u64> + Send>> {
        Box::pin(async move {
            if depth == 0 {
                return 1;
            }
            let l = pcml::spawn_task(tree(depth - 1));
            let r = pcml::spawn_task(tree(depth - 1));
            l.await.unwrap() + r.await.unwrap()
        })
    }
    let v = rt(2)
        .block_on(|| pcml::spawn_task(tree(14)).join().unwrap())
        .unwrap();
    assert_eq!(v, 1 << 14);
}

/// A task that awaits a task it has just spawned may run it inside its own poll (work-first
/// join): the child still sees its own id, the parent its own after the await, and a panic or
/// an abort still reaches the handle as a `JoinError`.
#[test]
fn awaiting_a_just_spawned_task_keeps_ids_panics_and_aborts() {
    for procs in [1, 2] {
        rt(procs)
            .block_on(|| {
                pcml::spawn_task(async {
                    let me = pcml::current();
                    for _ in 0..1_000 {
                        let h = pcml::spawn_task(async { pcml::current() });
                        let id = h.id();
                        assert_eq!(h.await.unwrap(), id);
                        assert_ne!(id, me);
                        assert_eq!(pcml::current(), me);
                    }
                    let e = pcml::spawn_task(async { panic!("child fails") })
                        .await
                        .unwrap_err();
                    assert!(e.is_panic(), "{e}");
                    assert_eq!(pcml::current(), me);
                    let h = pcml::spawn_task(async { 1 });
                    h.abort();
                    assert!(h.await.unwrap_err().is_cancelled());
                })
                .join()
                .unwrap();
            })
            .unwrap();
    }
}

/// A chain of tasks that each spawn and await the next, far deeper than the nesting that a
/// work-first join allows on a worker's stack, completes (on one proc and on two).
#[test]
fn a_deep_chain_of_tasks_awaiting_the_next_completes() {
    fn chain(n: u32) -> std::pin::Pin<Box<dyn std::future::Future<Output = u32> + Send>> {
        Box::pin(async move {
            if n == 0 {
                return 0;
            }
            pcml::spawn_task(chain(n - 1)).await.unwrap() + 1
        })
    }
    for procs in [1, 2] {
        let v = rt(procs)
            .block_on(|| pcml::spawn_task(chain(20_000)).join().unwrap())
            .unwrap();
        assert_eq!(v, 20_000, "procs = {procs}");
    }
}

/// A task that spawns and awaits children in a loop leaves its proc to other work now and
/// then: a task it queued before the loop (below every child) runs and stops the loop.
#[test]
fn a_spawn_and_await_loop_lets_a_task_queued_below_it_run() {
    use std::sync::atomic::AtomicBool;
    for procs in [1, 2] {
        let n = rt(procs)
            .block_on(|| {
                pcml::spawn_task(async {
                    let stop = Arc::new(AtomicBool::new(false));
                    let stop2 = stop.clone();
                    pcml::spawn_task(async move { stop2.store(true, Ordering::Relaxed) });
                    let mut n = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        n += pcml::spawn_task(async { 1 }).await.unwrap();
                    }
                    n
                })
                .join()
                .unwrap()
            })
            .unwrap();
        // On one proc the loop's first child runs before the stopper (the newest first).
        assert!(procs > 1 || n >= 1, "procs = {procs}: {n}");
    }
}

#[test]
fn spawn_on_places_fibers_on_the_named_proc() {
    rt(2)
        .block_on(|| {
            for proc in [0, 1, 1, 0] {
                let h = pcml::spawn_on(proc, pcml::current_proc);
                assert_eq!(h.join().unwrap(), Some(proc));
            }
            match pcml::try_spawn_on(5, || ()) {
                Err(SpawnError::NoSuchProc { proc: 5, procs: 2 }) => {}
                other => panic!("expected NoSuchProc, got {other:?}"),
            }
        })
        .unwrap();
}

#[test]
fn main_runs_on_proc_zero_and_procs_counts() {
    let (proc, procs) = rt(2)
        .block_on(|| (pcml::current_proc(), pcml::procs()))
        .unwrap();
    assert_eq!(proc, Some(0));
    assert_eq!(procs, 2);
    assert_eq!(pcml::current_proc(), None);
}

#[test]
fn spawn_blocking_runs_off_the_procs_and_joins() {
    rt(1)
        .block_on(|| {
            let h = pcml::spawn_blocking(|| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                (pcml::current_proc(), 9)
            });
            // The proc stays free while the job sleeps.
            let f = pcml::spawn(|| 1);
            assert_eq!(f.join().unwrap(), 1);
            assert_eq!(h.join().unwrap(), (None, 9));
            // A blocking job may spawn into its runtime.
            let inner = pcml::spawn_blocking(|| pcml::spawn(|| 5).join().unwrap());
            assert_eq!(inner.join().unwrap(), 5);
        })
        .unwrap();
}

#[test]
fn join_from_a_plain_os_thread_parks_it() {
    rt(2)
        .block_on(|| {
            let h = pcml::spawn(|| {
                for _ in 0..100 {
                    pcml::yield_now();
                }
                7
            });
            let os = std::thread::spawn(move || h.join().unwrap());
            // Wait for the OS thread without blocking the procs.
            let waiter = pcml::spawn_blocking(move || os.join().unwrap());
            assert_eq!(waiter.join().unwrap(), 7);
        })
        .unwrap();
}

#[test]
fn is_finished_and_ids() {
    rt(1)
        .block_on(|| {
            let me = pcml::current();
            let h = pcml::spawn(pcml::current);
            let id = h.id();
            while !h.is_finished() {
                pcml::yield_now();
            }
            let child = h.join().unwrap();
            assert_eq!(child, id);
            assert_ne!(child, me);
        })
        .unwrap();
}

#[test]
fn run_returns_mains_value_and_drops_the_rest() {
    let started = Arc::new(AtomicUsize::new(0));
    let s = started.clone();
    let v = pcml::run(move || {
        for _ in 0..10 {
            let s = s.clone();
            // Detached fibers that would run forever.
            drop(pcml::spawn(move || {
                s.fetch_add(1, Ordering::SeqCst);
                loop {
                    pcml::yield_now();
                }
            }));
        }
        while s.load(Ordering::SeqCst) < 10 {
            pcml::yield_now();
        }
        "done"
    });
    assert_eq!(v, "done");
    assert_eq!(started.load(Ordering::SeqCst), 10);
}

#[test]
fn many_runtimes_one_after_another_and_side_by_side() {
    for _ in 0..20 {
        assert_eq!(
            rt(2)
                .block_on(|| pcml::spawn(|| 3).join().unwrap())
                .unwrap(),
            3
        );
    }
    let ts: Vec<_> = (0..4)
        .map(|i| std::thread::spawn(move || rt(1).block_on(move || i * 2).unwrap()))
        .collect();
    let got: Vec<_> = ts.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(got, vec![0, 2, 4, 6]);
}

// ---- JoinHandle::abort ----

/// Counts its drops: shows that a cancelled thread's stack (or closure) was dropped.
struct DropCount(Arc<AtomicUsize>);
impl Drop for DropCount {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A fiber is started and blocked in `block`'s sync once `started.get()` returns (it puts
/// the IVar from a guard of the event, which runs at the start of the sync).
fn started_then<T: Send + 'static>(
    started: &pcml::IVar<()>,
    ev: pcml::event::Event<T>,
) -> pcml::event::Event<T> {
    let s = started.clone();
    let mut ev = Some(ev);
    pcml::event::guard(move || {
        s.put(()).unwrap();
        ev.take().unwrap()
    })
}

/// Spawns `f` and returns once it has started (its first act is to say so).
fn spawn_started<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> pcml::JoinHandle<T> {
    let started = pcml::IVar::new();
    let s = started.clone();
    let h = pcml::spawn(move || {
        s.put(()).unwrap();
        f()
    });
    started.get();
    h
}

#[test]
fn abort_before_start_drops_the_closure_unrun() {
    for procs in [1, 2] {
        rt(procs)
            .block_on(move || {
                let (ran, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
                let (r, d) = (ran.clone(), DropCount(dropped.clone()));
                let h = pcml::spawn(move || {
                    let _d = d;
                    r.fetch_add(1, Ordering::SeqCst);
                });
                h.abort();
                h.abort(); // twice is harmless
                let err = h.join().unwrap_err();
                assert!(err.is_cancelled() && !err.is_panic(), "{err}");
                assert!(err.to_string().contains("abort"), "{err}");
                assert_eq!(ran.load(Ordering::SeqCst), 0);
                assert_eq!(dropped.load(Ordering::SeqCst), 1);
                // A task too.
                let t = pcml::spawn_task(async { 1 });
                t.abort();
                // It may have run already (a task is stealable at once): either outcome is
                // allowed, a value or a cancellation.
                match t.join() {
                    Ok(v) => assert_eq!(v, 1),
                    Err(e) => assert!(e.is_cancelled()),
                }
            })
            .unwrap();
    }
}

#[test]
fn abort_of_a_finished_thread_keeps_its_outcome() {
    rt(2)
        .block_on(|| {
            let h = pcml::spawn(|| 7);
            while !h.is_finished() {
                pcml::yield_now();
            }
            h.abort();
            assert_eq!(h.join().unwrap(), 7);
            let b = pcml::spawn_blocking(|| 8);
            b.abort(); // blocking jobs run to their end
            assert_eq!(b.join().unwrap(), 8);
        })
        .unwrap();
}

#[test]
fn abort_of_a_fiber_blocked_in_recv_withdraws_its_offer_and_runs_its_destructors() {
    for procs in [1, 2] {
        rt(procs)
            .block_on(|| {
                let ch = pcml::Chan::<u32>::new();
                let started = pcml::IVar::new();
                let dropped = Arc::new(AtomicUsize::new(0));
                let (rx, d) = (ch.clone(), DropCount(dropped.clone()));
                let ev = started_then(&started, rx.recv_evt());
                let h = pcml::spawn(move || {
                    let _d = d;
                    ev.sync()
                });
                started.get();
                h.abort();
                assert!(h.join().unwrap_err().is_cancelled());
                assert_eq!(dropped.load(Ordering::SeqCst), 1);
                // Nobody receives any more: the offer is gone.
                assert!(ch.send_evt(1).poll().is_none());
                // The plain (direct) receive too.
                let rx = ch.clone();
                let h = spawn_started(move || rx.recv());
                h.abort();
                assert!(h.join().unwrap_err().is_cancelled());
                assert!(ch.send_evt(2).poll().is_none());
            })
            .unwrap();
    }
}

#[test]
fn abort_fires_the_nacks_of_a_blocked_choice() {
    use pcml::event::{choose, with_nack};
    rt(2)
        .block_on(|| {
            let (a, b) = (pcml::Chan::<u8>::new(), pcml::Chan::<u8>::new());
            let nacked = pcml::IVar::new();
            let started = pcml::IVar::new();
            let (ra, rb, n) = (a.clone(), b.clone(), nacked.clone());
            let ev = started_then(
                &started,
                choose([
                    with_nack(move |nack| {
                        pcml::spawn(move || {
                            nack.sync();
                            n.put(()).unwrap()
                        });
                        ra.recv_evt()
                    }),
                    rb.recv_evt(),
                    pcml::time::timeout_evt(std::time::Duration::from_secs(3600)).wrap(|()| 0),
                ]),
            );
            let h = pcml::spawn(move || ev.sync());
            started.get();
            h.abort();
            assert!(h.join().unwrap_err().is_cancelled());
            nacked.get();
            assert!(a.send_evt(1).poll().is_none());
            assert!(b.send_evt(1).poll().is_none());
        })
        .unwrap();
}

#[test]
fn abort_reaches_fibers_blocked_in_mvar_join_sleep_and_yield_loops() {
    use std::time::Duration;
    for procs in [1, 2] {
        rt(procs)
            .block_on(|| {
                let mv = pcml::MVar::<u32>::new();
                let forever = pcml::Chan::<()>::new();
                let f2 = forever.clone();
                // Started, so that the joiner below blocks in its join: one that found the
                // child unstarted would run it inline, and the child would go with it.
                let child = spawn_started(move || f2.recv());
                let m = mv.clone();
                let hs = vec![
                    pcml::spawn(move || {
                        m.take();
                    }),
                    pcml::spawn(move || {
                        child.join().ok();
                    }),
                    pcml::spawn(|| pcml::time::sleep(Duration::from_secs(3600))),
                    pcml::spawn(|| {
                        loop {
                            pcml::yield_now();
                        }
                    }),
                    pcml::spawn(|| {
                        // Always-ready syncs: yields by the budget.
                        let mb = pcml::Mailbox::new();
                        loop {
                            mb.send(1u8);
                            mb.recv();
                        }
                    }),
                ];
                pcml::time::sleep(Duration::from_millis(20));
                for h in &hs {
                    h.abort();
                }
                for h in hs {
                    assert!(h.join().unwrap_err().is_cancelled());
                }
                // Nothing was taken from the MVar.
                mv.put(5);
                assert_eq!(mv.take(), 5);
                // The child whose joiner was cancelled runs on, detached.
                forever.send(());
            })
            .unwrap();
    }
}

#[test]
fn a_cancelled_fibers_destructors_may_block() {
    struct SendOnDrop(pcml::Chan<&'static str>);
    impl Drop for SendOnDrop {
        fn drop(&mut self) {
            self.0.send("bye");
        }
    }
    rt(2)
        .block_on(|| {
            let ch = pcml::Chan::new();
            let block = pcml::Chan::<()>::new();
            let (g, b) = (SendOnDrop(ch.clone()), block.clone());
            let started = pcml::IVar::new();
            let ev = started_then(&started, b.recv_evt());
            let h = pcml::spawn(move || {
                let _g = g;
                ev.sync()
            });
            started.get();
            h.abort();
            assert_eq!(ch.recv(), "bye");
            assert!(h.join().unwrap_err().is_cancelled());
        })
        .unwrap();
}

#[test]
fn a_fiber_may_abort_itself_and_unwinds_at_its_next_yield() {
    rt(1)
        .block_on(|| {
            let me = pcml::IVar::<Arc<pcml::JoinHandle<()>>>::new();
            let m = me.clone();
            let reached = Arc::new(AtomicUsize::new(0));
            let r = reached.clone();
            let h = Arc::new(pcml::spawn(move || {
                m.get().abort();
                r.fetch_add(1, Ordering::SeqCst); // still running here
                pcml::yield_now();
                r.fetch_add(1, Ordering::SeqCst); // never reached
            }));
            me.put(h.clone()).unwrap();
            while !h.is_finished() {
                pcml::yield_now();
            }
            drop(me);
            let h = Arc::into_inner(h).expect("the fiber dropped its clone");
            assert!(h.join().unwrap_err().is_cancelled());
            assert_eq!(reached.load(Ordering::SeqCst), 1);
        })
        .unwrap();
}

#[test]
fn aborting_a_fiber_cancels_the_thread_it_runs_inline() {
    // On one proc, the fiber's join runs its unstarted child on its own stack; the child
    // blocks there, and the cancellation of the fiber unwinds through it.
    rt(1)
        .block_on(|| {
            let ch = pcml::Chan::<u8>::new();
            let started = pcml::IVar::new();
            let (rx, s) = (ch.clone(), started.clone());
            let dropped = Arc::new(AtomicUsize::new(0));
            let d = DropCount(dropped.clone());
            let h = pcml::spawn(move || {
                let child = pcml::spawn(move || {
                    let _d = d;
                    s.put(()).unwrap();
                    rx.recv()
                });
                child.join()
            });
            started.get();
            h.abort();
            assert!(h.join().unwrap_err().is_cancelled());
            assert_eq!(dropped.load(Ordering::SeqCst), 1);
            assert!(ch.send_evt(1).poll().is_none());
            // The proc is sound: a thread runs after.
            assert!(pcml::spawn(pcml::current).join().is_ok());
        })
        .unwrap();
}

#[test]
fn abort_of_a_task_drops_its_future_and_withdraws_its_offer() {
    for procs in [1, 2] {
        rt(procs)
            .block_on(|| {
                let ch = pcml::Chan::<u32>::new();
                let started = pcml::IVar::new();
                let dropped = Arc::new(AtomicUsize::new(0));
                let (rx, s, d) = (ch.clone(), started.clone(), DropCount(dropped.clone()));
                let t = pcml::spawn_task(async move {
                    let _d = d;
                    s.put(()).unwrap();
                    rx.recv_evt().await
                });
                started.get();
                t.abort();
                assert!(t.join().unwrap_err().is_cancelled());
                assert_eq!(dropped.load(Ordering::SeqCst), 1);
                assert!(ch.send_evt(1).poll().is_none());
            })
            .unwrap();
    }
}

/// Expected: a receiver cancelled while a sender races to deliver either got the message
/// (its join returns it) or left it in the mailbox: nothing is lost.
#[test]
fn abort_racing_a_delivery_loses_nothing_from_a_buffered_mailbox() {
    rt(2)
        .block_on(|| {
            let (mut got, mut back) = (0, 0);
            for i in 0..300u32 {
                let mb = pcml::Mailbox::new();
                let started = pcml::IVar::new();
                let ev = started_then(&started, mb.recv_evt());
                let h = pcml::spawn(move || ev.sync());
                started.get();
                if i % 2 == 0 {
                    // Delivered first: the receiver is woken, then cancelled before it runs.
                    mb.send(i);
                    h.abort();
                } else {
                    let m = mb.clone();
                    let sender = pcml::spawn(move || m.send(i));
                    h.abort();
                    sender.join().unwrap();
                }
                match h.join() {
                    Ok(v) => {
                        assert_eq!(v, i);
                        got += 1;
                    }
                    Err(e) => {
                        assert!(e.is_cancelled());
                        assert_eq!(mb.try_recv(), Some(i), "round {i}: the message was lost");
                        back += 1;
                    }
                }
            }
            assert_eq!(got + back, 300);
            eprintln!("abort raced a delivery: received {got}, left in the mailbox {back}");
        })
        .unwrap();
}

#[test]
fn yielding_fibers_take_turns_round_robin() {
    // More fibers than the ready queue first holds, so it grows while they run.
    const FIBERS: usize = 300;
    const ROUNDS: usize = 4;
    let late = rt(1)
        .block_on(|| {
            let started = Arc::new(AtomicUsize::new(0));
            let turns = Arc::new(AtomicUsize::new(0));
            let hs: Vec<_> = (0..FIBERS)
                .map(|_| {
                    let (started, turns) = (started.clone(), turns.clone());
                    pcml::spawn(move || {
                        started.fetch_add(1, Ordering::SeqCst);
                        while started.load(Ordering::SeqCst) < FIBERS {
                            pcml::yield_now();
                        }
                        // Between a yield and the fiber's next turn every other fiber takes
                        // exactly one turn (all but the last round, after which they end).
                        let mut late = 0;
                        for round in 0..ROUNDS {
                            let before = turns.fetch_add(1, Ordering::SeqCst);
                            pcml::yield_now();
                            if round + 1 < ROUNDS && turns.load(Ordering::SeqCst) != before + FIBERS
                            {
                                late += 1;
                            }
                        }
                        late
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
        })
        .unwrap();
    assert_eq!(late, 0);
}
