//! Runtime shutdown beside reentrant destructors: threads dropped at shutdown whose
//! destructors wake, spawn and send, and fibers unwinding out of a choice.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use pcml::{Chan, Mailbox, Runtime};

fn rt(procs: usize) -> Runtime {
    Runtime::builder().procs(procs).build().unwrap()
}

/// On drop: sends on a mailbox (never blocks), spawns a fiber and a task that hold `alive`.
struct Noisy {
    mb: Mailbox<u32>,
    alive: Arc<()>,
}
impl Drop for Noisy {
    fn drop(&mut self) {
        self.mb.send(1);
        let a = self.alive.clone();
        drop(pcml::spawn(move || {
            let _a = a;
        }));
        let a = self.alive.clone();
        drop(pcml::spawn_task(async move {
            let _a = a;
        }));
    }
}

/// Main returns while fibers and tasks are blocked (on a mailbox, in `never`, in a `select!`
/// with an hour's timeout); the ones holding a `Noisy` wake a blocked fiber and spawn a fiber
/// and a task as shutdown drops them. `block_on` returns, and everything that held `alive`
/// (what was spawned during the shutdown included) is dropped by then.
#[test]
fn destructors_that_wake_and_spawn_at_shutdown_leak_nothing() {
    for procs in [1, 2, 3] {
        for _ in 0..20 {
            let alive = Arc::new(());
            let started = Arc::new(AtomicUsize::new(0));
            let (a, s) = (alive.clone(), started.clone());
            rt(procs)
                .block_on(move || {
                    let mb = Mailbox::<u32>::new();
                    // Blocked on the mailbox when shutdown comes: woken by a Noisy's drop.
                    for _ in 0..3 {
                        let (m, a, s) = (mb.clone(), a.clone(), s.clone());
                        drop(pcml::spawn(move || {
                            let _a = a;
                            s.fetch_add(1, Ordering::SeqCst);
                            loop {
                                m.recv();
                            }
                        }));
                    }
                    for _ in 0..3 {
                        let (m, a, s) = (mb.clone(), a.clone(), s.clone());
                        drop(pcml::spawn(move || {
                            let _n = Noisy { mb: m, alive: a };
                            s.fetch_add(1, Ordering::SeqCst);
                            pcml::never::<()>().sync();
                        }));
                    }
                    for _ in 0..2 {
                        let (m, a, s) = (mb.clone(), a.clone(), s.clone());
                        drop(pcml::spawn_task(async move {
                            let _n = Noisy { mb: m, alive: a };
                            s.fetch_add(1, Ordering::SeqCst);
                            pcml::never::<()>().await;
                        }));
                    }
                    while s.load(Ordering::SeqCst) < 8 {
                        pcml::yield_now();
                    }
                    let c = Chan::<u32>::new();
                    let a2 = a.clone();
                    drop(pcml::spawn(move || {
                        let _a = a2;
                        pcml::select! {
                            recv(c) -> _v => {},
                            _ = pcml::time::timeout_evt(Duration::from_secs(3600)) => {},
                        }
                    }));
                    pcml::yield_now();
                })
                .unwrap();
            assert_eq!(
                Arc::strong_count(&alive),
                1,
                "procs {procs}: something leaked"
            );
        }
    }
}

#[test]
fn a_fiber_panicking_out_of_a_select_runs_destructors_that_spawn_and_join() {
    rt(2)
        .block_on(|| {
            let c = Chan::<u32>::new();
            let c2 = c.clone();
            let h = pcml::spawn(move || {
                struct SpawnsOnDrop;
                impl Drop for SpawnsOnDrop {
                    fn drop(&mut self) {
                        // Runs while its fiber unwinds from the panic below.
                        assert_eq!(pcml::spawn(|| 5).join().unwrap(), 5);
                    }
                }
                let _d = SpawnsOnDrop;
                let v: u32 = pcml::select! {
                    recv(c2) -> v => v,
                };
                panic!("got {v}");
            });
            c.send(3);
            let e = h.join().unwrap_err();
            assert_eq!(e.panic_message(), Some("got 3"));
        })
        .unwrap();
}

/// Sends on a channel when dropped: blocks until a receiver comes (none ever does).
struct SendsOnDrop(Chan<u32>);
impl Drop for SendsOnDrop {
    fn drop(&mut self) {
        self.0.send(1);
    }
}

/// Runs `f` on a thread of its own; fails the test if it has not returned within a minute
/// (a hang, not a slow run: `f` needs milliseconds).
fn returns(f: impl FnOnce() + Send + 'static) {
    let (done, finished) = std::sync::mpsc::channel();
    let runner = std::thread::spawn(move || {
        f();
        let _ = done.send(());
    });
    let outcome = finished.recv_timeout(Duration::from_secs(60));
    assert!(
        outcome != Err(std::sync::mpsc::RecvTimeoutError::Timeout),
        "block_on hung in the runtime's shutdown"
    );
    runner.join().unwrap();
}

/// Runs a runtime of `procs` procs whose main fiber starts a task that holds `guard` and
/// awaits forever, and returns when main does (the runtime shut down with the task pending):
/// the task's handle, to see how its end was reported.
fn left_awaiting<G: Send + 'static>(procs: usize, guard: G) -> pcml::JoinHandle<()> {
    rt(procs)
        .block_on(move || {
            let started = Mailbox::new();
            let s = started.clone();
            let awaiting = pcml::spawn_task(async move {
                let _g = guard;
                s.send(());
                pcml::never::<()>().await;
            });
            started.recv();
            awaiting
        })
        .unwrap()
}

/// What a runtime's shutdown drops outside any pcml thread (here an async task blocked in an
/// `.await`) has a destructor that blocks. Nothing is left to wake it: the blocking call
/// panics, the task's join reports the panic, and `block_on` returns (it hung in the
/// runtime's drop).
#[test]
fn a_destructor_that_blocks_at_shutdown_panics_instead_of_hanging() {
    for procs in [1, 2] {
        returns(move || {
            let e = left_awaiting(procs, SendsOnDrop(Chan::new()))
                .join()
                .unwrap_err();
            let msg = e.panic_message().unwrap_or_else(|| panic!("{e}"));
            assert!(msg.contains("send would block"), "procs {procs}: {msg}");
            assert!(msg.contains("runtime shutdown"), "procs {procs}: {msg}");
        });
    }
}

/// As above, for a task still queued and a fiber not yet started when main returns: dropped
/// from the proc's queue by the proc itself (where the blocking call hung the proc, and so
/// `block_on`'s join of it), unless the proc ran them first. Either way `block_on` returns
/// and their joins say they did not finish.
#[test]
fn a_queued_thread_whose_destructor_blocks_does_not_hang_shutdown() {
    for _ in 0..20 {
        returns(|| {
            let (tx, rx) = std::sync::mpsc::channel();
            rt(1)
                .block_on(move || {
                    let g = SendsOnDrop(Chan::new());
                    let queued = pcml::spawn_task(async move {
                        let _g = g;
                    });
                    let g = SendsOnDrop(Chan::new());
                    let unstarted = pcml::spawn(move || drop(g));
                    // Main returns without a yield: both are still queued.
                    tx.send([queued, unstarted]).unwrap();
                })
                .unwrap();
            for h in rx.recv().unwrap() {
                let e = h.join().unwrap_err();
                match e.panic_message() {
                    Some(msg) => assert!(msg.contains("send would block"), "{msg}"),
                    None => assert!(e.is_cancelled(), "{e}"),
                }
            }
        });
    }
}

/// Counts its drops: held by the bodies spawned at shutdown, to see that none leaks.
struct Counted(Arc<AtomicUsize>);
impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// On drop: spawns a fiber (with `spawn` and `try_spawn`), a task, a fiber placed on proc 0
/// and a blocking job, each holding a [`Counted`], and sends their handles out (with whether
/// the thread may run even if the spawn came at shutdown).
struct SpawnsOnDropAtShutdown {
    out: std::sync::mpsc::Sender<(pcml::JoinHandle<()>, bool)>,
    dropped: Arc<AtomicUsize>,
}

/// How many bodies a [`SpawnsOnDropAtShutdown`] spawns.
const SPAWNED: usize = 5;

impl Drop for SpawnsOnDropAtShutdown {
    fn drop(&mut self) {
        let c = Counted(self.dropped.clone());
        let fiber = pcml::spawn(move || drop(c));
        let c = Counted(self.dropped.clone());
        let tried = pcml::try_spawn(move || drop(c)).expect("a spawn at shutdown succeeds");
        let c = Counted(self.dropped.clone());
        let task = pcml::spawn_task(async move { drop(c) });
        let c = Counted(self.dropped.clone());
        let placed = pcml::spawn_on(0, move || drop(c));
        let c = Counted(self.dropped.clone());
        let job = pcml::spawn_blocking(move || drop(c));
        // A blocking job may run: the blocking pool outlives the procs' shutdown.
        for h in [
            (fiber, false),
            (tried, false),
            (task, false),
            (placed, false),
            (job, true),
        ] {
            self.out.send(h).unwrap();
        }
    }
}

/// Checks what became of the threads that the [`SpawnsOnDropAtShutdown`] guards spawned: each
/// spawn returned a handle (it did not panic), each join reports a cancellation (or success,
/// where `may_run`: a guard dropped before the shutdown spawned in a live runtime), and each
/// body was dropped once. Returns how many were cancelled.
fn check_spawned_at_shutdown(
    handles: std::sync::mpsc::Receiver<(pcml::JoinHandle<()>, bool)>,
    dropped: &AtomicUsize,
    guards: usize,
    may_run: bool,
) -> usize {
    let handles: Vec<_> = handles.try_iter().collect();
    assert_eq!(handles.len(), guards * SPAWNED);
    let mut cancelled = 0;
    for (h, job) in handles {
        match h.join() {
            Ok(()) => assert!(may_run || job, "a thread spawned at shutdown ran"),
            Err(e) => {
                assert!(e.is_cancelled(), "{e}");
                cancelled += 1;
            }
        }
    }
    assert_eq!(dropped.load(Ordering::SeqCst), guards * SPAWNED);
    cancelled
}

/// An async task left waiting when main returns is dropped by the runtime's drop, outside the
/// procs; a guard of its future that spawns there gets handles of threads cancelled at once
/// (it panicked: "called outside a pcml runtime"), and the task itself ends cancelled.
#[test]
fn a_pending_task_whose_destructor_spawns_is_cancelled_without_a_panic() {
    for procs in [1, 2] {
        returns(move || {
            let (out, spawned) = std::sync::mpsc::channel();
            let dropped = Arc::new(AtomicUsize::new(0));
            let d = dropped.clone();
            let e = left_awaiting(procs, SpawnsOnDropAtShutdown { out, dropped: d })
                .join()
                .unwrap_err();
            assert!(e.is_cancelled(), "procs {procs}: {e}");
            assert_eq!(
                check_spawned_at_shutdown(spawned, &dropped, 1, false),
                SPAWNED
            );
        });
    }
}

/// As above, for a task still queued and a fiber not yet started when main returns (dropped
/// by their proc's shutdown, or by the runtime's drop).
#[test]
fn a_queued_thread_whose_destructor_spawns_is_cancelled_without_a_panic() {
    for _ in 0..20 {
        returns(|| {
            let (out, spawned) = std::sync::mpsc::channel();
            let (tx, rx) = std::sync::mpsc::channel();
            let dropped = Arc::new(AtomicUsize::new(0));
            let d = dropped.clone();
            rt(1)
                .block_on(move || {
                    let g = SpawnsOnDropAtShutdown {
                        out: out.clone(),
                        dropped: d.clone(),
                    };
                    let queued = pcml::spawn_task(async move {
                        let _g = g;
                    });
                    let g = SpawnsOnDropAtShutdown { out, dropped: d };
                    let unstarted = pcml::spawn(move || drop(g));
                    // Main returns without a yield: both are still queued.
                    tx.send([queued, unstarted]).unwrap();
                })
                .unwrap();
            let mut ran = 0;
            for h in rx.recv().unwrap() {
                match h.join() {
                    Ok(()) => ran += 1,
                    Err(e) => assert!(e.is_cancelled(), "{e}"),
                }
            }
            check_spawned_at_shutdown(spawned, &dropped, 2, ran > 0);
        });
    }
}

/// On drop: spawns a fiber actor and an async actor, each holding a [`Counted`], and sends
/// their pids out.
struct SpawnsActorsOnDrop {
    out: std::sync::mpsc::Sender<pcml::actor::Pid<u32>>,
    dropped: Arc<AtomicUsize>,
}

impl Drop for SpawnsActorsOnDrop {
    fn drop(&mut self) {
        let c = Counted(self.dropped.clone());
        let fiber = pcml::actor::spawn(move |mut ctx: pcml::actor::Ctx<u32>| {
            let _c = c;
            ctx.receive();
        });
        let c = Counted(self.dropped.clone());
        let task = pcml::actor::spawn_async(move |mut ctx: pcml::actor::Ctx<u32>| async move {
            let _c = c;
            ctx.recv().await;
        });
        self.out.send(fiber).unwrap();
        self.out.send(task).unwrap();
    }
}

/// The actor spawns of a destructor that shutdown runs off the procs (a pending task's guard)
/// return pids at once, of actors that never run: their bodies are dropped, their mailboxes
/// closed (a send fails instead of queuing a message nobody reads), and they are not alive.
#[test]
fn actors_spawned_by_a_destructor_at_shutdown_never_run_and_refuse_messages() {
    for procs in [1, 2] {
        returns(move || {
            let (out, spawned) = std::sync::mpsc::channel();
            let dropped = Arc::new(AtomicUsize::new(0));
            let d = dropped.clone();
            rt(procs)
                .block_on(move || {
                    let started = Mailbox::new();
                    let s = started.clone();
                    let g = SpawnsActorsOnDrop { out, dropped: d };
                    drop(pcml::spawn_task(async move {
                        let _g = g;
                        s.send(());
                        pcml::never::<()>().await;
                    }));
                    started.recv();
                })
                .unwrap();
            let pids: Vec<_> = spawned.try_iter().collect();
            assert_eq!(pids.len(), 2, "procs {procs}");
            for pid in pids {
                assert!(
                    !pid.is_alive(),
                    "procs {procs}: an actor spawned at shutdown lives"
                );
                assert_eq!(pid.send(7).unwrap_err().0, 7, "procs {procs}");
            }
            assert_eq!(dropped.load(Ordering::SeqCst), 2, "procs {procs}");
        });
    }
}
