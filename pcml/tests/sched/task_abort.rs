//! Tasks as a user of tokio's tasks writes them: spawned and joined from fibers, from tasks
//! and from OS threads on 1, 2 and 4 procs; a panic reported to the join; abort of a task
//! waiting in a channel, a socket read or a timer (it ends, its offers are withdrawn and what
//! it held is dropped); detached tasks run to their end; a future woken from an OS thread;
//! an event raced against a future in `tokio::select!`.

use crate::common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::common::watchdog;
use common::run_on_procs;
use pcml::chan::Chan;
use pcml::net::{TcpListener, TcpStream};

const PROCS: [usize; 3] = [1, 2, 4];

/// Dropped with the future that owns it: counts the drops.
struct Held(Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
}

#[test]
fn tasks_spawned_and_joined_from_fibers_tasks_and_os_threads() {
    for procs in PROCS {
        let done = watchdog("spawn and join");
        let sum = run_on_procs(procs, || {
            // From a fiber, each task spawning and awaiting children of its own.
            let parents: Vec<_> = (0..8u64)
                .map(|i| {
                    pcml::spawn_task(async move {
                        let kids: Vec<_> = (0..8u64)
                            .map(|j| pcml::spawn_task(async move { i * 8 + j }))
                            .collect();
                        let mut s = 0;
                        for k in kids {
                            s += k.await.unwrap();
                        }
                        s
                    })
                })
                .collect();
            let mut sum: u64 = parents.into_iter().map(|p| p.join().unwrap()).sum();
            // Handles joined from an OS thread, and a task awaiting a fiber.
            let h = pcml::spawn_task(async { 1000u64 });
            // (spawn_blocking's thread is an OS thread; the fiber waits without holding its
            // proc, so the task can run on one proc too.)
            sum += pcml::spawn_blocking(move || h.join().unwrap())
                .join()
                .unwrap();
            let f = pcml::spawn(|| 2000u64);
            sum += pcml::spawn_task(async move { f.await.unwrap() })
                .join()
                .unwrap();
            sum
        })
        .unwrap();
        assert_eq!(sum, (0..64).sum::<u64>() + 3000, "on {procs} procs");
        done.store(true, Ordering::Release);
    }
}

#[test]
fn a_panicking_task_is_reported_to_its_join_and_the_runtime_goes_on() {
    for procs in PROCS {
        let done = watchdog("panicking task");
        run_on_procs(procs, || {
            let h = pcml::spawn_task(async {
                pcml::time::sleep_async(Duration::from_millis(1)).await;
                panic!("task boom");
            });
            let err = pcml::spawn_task(async move { h.await.unwrap_err() })
                .join()
                .unwrap();
            assert!(err.is_panic());
            assert!(!err.is_cancelled());
            assert_eq!(err.panic_message(), Some("task boom"));
            // The runtime still runs tasks and fibers.
            let again: Vec<_> = (0..16)
                .map(|i| pcml::spawn_task(async move { i }))
                .collect();
            let s: i32 = again.into_iter().map(|h| h.join().unwrap()).sum();
            assert_eq!(s, 120);
        })
        .unwrap();
        done.store(true, Ordering::Release);
    }
}

#[test]
fn abort_of_a_task_waiting_on_a_channel_withdraws_its_offer_and_drops_its_state() {
    for procs in PROCS {
        let done = watchdog("abort in a channel wait");
        run_on_procs(procs, move || {
            let drops = Arc::new(AtomicUsize::new(0));
            let ch = Chan::<u32>::new();
            let (rx, held) = (ch.clone(), Held(drops.clone()));
            let started = Chan::<()>::new();
            let s = started.clone();
            let h = pcml::spawn_task(async move {
                let _held = held;
                s.send_async(()).await;
                rx.recv_evt().await
            });
            started.recv();
            // Let it block in its recv.
            pcml::time::sleep(Duration::from_millis(2));
            h.abort();
            let err = pcml::spawn_task(async move { h.await.unwrap_err() })
                .join()
                .unwrap();
            assert!(err.is_cancelled());
            assert_eq!(drops.load(Ordering::Acquire), 1, "its future was dropped");
            // Its offer is gone: a send finds nobody.
            assert!(ch.send_evt(1).poll().is_none());
        })
        .unwrap();
        done.store(true, Ordering::Release);
    }
}

#[test]
fn abort_of_a_task_blocked_in_a_socket_read_leaves_the_stream_usable() {
    for procs in PROCS {
        let done = watchdog("abort in a socket read");
        run_on_procs(procs, move || {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let b = Arc::new(l.accept().unwrap().0);
            let drops = Arc::new(AtomicUsize::new(0));
            let (b2, held) = (b.clone(), Held(drops.clone()));
            let h = pcml::spawn_task(async move {
                let _held = held;
                let mut buf = [0; 16];
                b2.read_async(&mut buf).await
            });
            pcml::time::sleep(Duration::from_millis(5));
            assert!(!h.is_finished());
            h.abort();
            assert!(h.join().unwrap_err().is_cancelled());
            assert_eq!(drops.load(Ordering::Acquire), 1);
            // Only our reference to the stream is left, and it reads what comes next.
            assert_eq!(Arc::strong_count(&b), 1);
            a.write_all(b"after").unwrap();
            let mut buf = [0; 5];
            b.read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"after");
            // And a new task's read is served as well.
            a.write_all(b"again").unwrap();
            let b3 = b.clone();
            let got = pcml::spawn_task(async move {
                let mut buf = [0; 5];
                let mut n = 0;
                while n < 5 {
                    n += b3.read_async(&mut buf[n..]).await.unwrap();
                }
                buf
            })
            .join()
            .unwrap();
            assert_eq!(&got, b"again");
        })
        .unwrap();
        done.store(true, Ordering::Release);
    }
}

#[test]
fn abort_of_a_task_in_a_long_sleep_ends_it_now() {
    for procs in PROCS {
        let done = watchdog("abort in a sleep");
        run_on_procs(procs, move || {
            let drops = Arc::new(AtomicUsize::new(0));
            let held = Held(drops.clone());
            let h = pcml::spawn_task(async move {
                let _held = held;
                pcml::time::sleep_async(Duration::from_secs(3600)).await;
            });
            let t = pcml::spawn_task(async move {
                let _ =
                    pcml::time::timeout(Duration::from_secs(3600), std::future::pending::<()>())
                        .await;
            });
            pcml::time::sleep(Duration::from_millis(2));
            h.abort();
            t.abort();
            assert!(h.join().unwrap_err().is_cancelled());
            assert!(t.join().unwrap_err().is_cancelled());
            assert_eq!(drops.load(Ordering::Acquire), 1);
            // The runtime ends although those timers were set for an hour.
        })
        .unwrap();
        done.store(true, Ordering::Release);
    }
}

#[test]
fn abort_before_start_after_end_and_twice() {
    for procs in PROCS {
        run_on_procs(procs, || {
            let ran = Arc::new(AtomicBool::new(false));
            let r = ran.clone();
            // Spawned and aborted from a task before any proc could start it.
            let err = pcml::spawn_task(async move {
                let h = pcml::spawn_task(async move { r.store(true, Ordering::Release) });
                h.abort();
                h.abort();
                h.await
            })
            .join()
            .unwrap();
            if let Err(e) = err {
                assert!(e.is_cancelled());
                assert!(!ran.load(Ordering::Acquire));
            }
            let h = pcml::spawn_task(async { 5 });
            while !h.is_finished() {
                pcml::yield_now();
            }
            h.abort();
            assert_eq!(h.join().unwrap(), 5);
        })
        .unwrap();
    }
}

#[test]
fn a_dropped_join_handle_detaches_the_task_which_runs_to_its_end() {
    for procs in PROCS {
        let done = watchdog("detached task");
        let got = run_on_procs(procs, || {
            let out = Chan::<u32>::new();
            for i in 0..20 {
                let o = out.clone();
                drop(pcml::spawn_task(async move {
                    pcml::time::sleep_async(Duration::from_millis(1)).await;
                    o.send_async(i).await;
                }));
            }
            (0..20).map(|_| out.recv()).sum::<u32>()
        })
        .unwrap();
        assert_eq!(got, 190);
        done.store(true, Ordering::Release);
    }
}

/// Pending until an OS thread it starts at its first poll wakes it.
struct WokenFromThread {
    started: bool,
    flag: Arc<AtomicBool>,
}

impl Future for WokenFromThread {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.flag.load(Ordering::Acquire) {
            return Poll::Ready(());
        }
        if !self.started {
            self.started = true;
            let (flag, waker) = (self.flag.clone(), cx.waker().clone());
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(2));
                flag.store(true, Ordering::Release);
                waker.wake();
            });
        }
        Poll::Pending
    }
}

#[test]
fn a_future_woken_from_an_os_thread_and_wakers_kept_past_the_end() {
    for procs in PROCS {
        let done = watchdog("woken from an OS thread");
        let kept: Arc<Mutex<Vec<Waker>>> = Arc::default();
        let k = kept.clone();
        run_on_procs(procs, move || {
            let hs: Vec<_> = (0..16)
                .map(|_| {
                    let k = k.clone();
                    pcml::spawn_task(async move {
                        WokenFromThread {
                            started: false,
                            flag: Arc::default(),
                        }
                        .await;
                        std::future::poll_fn(|cx| {
                            k.lock().unwrap().push(cx.waker().clone());
                            Poll::Ready(())
                        })
                        .await;
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            // Wakers of ended tasks: waking them does nothing, inside the runtime...
            for w in k.lock().unwrap().iter() {
                w.wake_by_ref();
            }
        })
        .unwrap();
        // ... and after it ended, from another thread.
        std::thread::spawn(move || {
            for w in kept.lock().unwrap().drain(..) {
                // A clone made after the end, then the waker itself by value.
                let c = w.clone();
                c.wake_by_ref();
                drop(c);
                w.wake();
            }
        })
        .join()
        .unwrap();
        done.store(true, Ordering::Release);
    }
}

#[test]
fn an_event_raced_against_a_future_in_tokio_select() {
    for procs in PROCS {
        let done = watchdog("event against a future");
        run_on_procs(procs, || {
            let ch = Chan::<u32>::new();
            let (rx, ready) = (ch.clone(), Chan::<()>::new());
            let r = ready.clone();
            let h = pcml::spawn_task(async move {
                // The future wins; the event's offer must be withdrawn when its future drops.
                let first = tokio::select! {
                    v = rx.recv_evt() => Some(v),
                    () = pcml::time::sleep_async(Duration::from_millis(2)) => None,
                };
                assert_eq!(first, None);
                // Nobody receives now: the lost event's offer is gone.
                assert!(
                    rx.send_evt(6).poll().is_none(),
                    "the lost event's offer stayed"
                );
                r.send_async(()).await;
                // Then the event wins.
                tokio::select! {
                    v = rx.recv_evt() => v,
                    () = pcml::time::sleep_async(Duration::from_secs(3600)) => unreachable!(),
                }
            });
            ready.recv();
            ch.send(7);
            assert_eq!(h.join().unwrap(), 7);
            assert!(ch.send_evt(8).poll().is_none());
        })
        .unwrap();
        done.store(true, Ordering::Release);
    }
}

#[test]
fn abort_of_a_task_in_accept_or_a_read_event_loses_no_connection_and_no_byte() {
    for procs in PROCS {
        let done = watchdog("abort in accept / read event");
        run_on_procs(procs, move || {
            for _ in 0..10 {
                let l = Arc::new(TcpListener::bind("127.0.0.1:0").unwrap());
                let addr = l.local_addr().unwrap();
                let l2 = l.clone();
                let acceptor = pcml::spawn_task(async move { l2.accept_async().await });
                let reader_src = l.clone();
                pcml::time::sleep(Duration::from_millis(1));
                // The connection arrives about when the acceptor is aborted.
                let a = TcpStream::connect(addr).unwrap();
                acceptor.abort();
                let got = match acceptor.join() {
                    // It accepted first.
                    Ok(c) => c.unwrap().0,
                    // Cancelled: the connection is still there for the next accept.
                    Err(e) => {
                        assert!(e.is_cancelled());
                        reader_src
                            .accept_evt()
                            .sync_timeout(Duration::from_secs(20))
                            .expect("the connection was lost with the aborted accept")
                            .unwrap()
                            .0
                    }
                };
                // A task waits in a read event; bytes come about when it is aborted.
                let got = Arc::new(got);
                let g = got.clone();
                let reader = pcml::spawn_task(async move { g.read_exact_evt(4).await });
                pcml::time::sleep(Duration::from_millis(1));
                a.write_all(b"ab").unwrap();
                reader.abort();
                a.write_all(b"cd").unwrap();
                match reader.join() {
                    // It finished first: it has them all.
                    Ok(r) => assert_eq!(r.unwrap(), b"abcd"),
                    Err(e) => {
                        assert!(e.is_cancelled());
                        let mut buf = [0; 4];
                        got.read_exact(&mut buf).unwrap();
                        assert_eq!(&buf, b"abcd");
                    }
                }
            }
        })
        .unwrap();
        done.store(true, Ordering::Release);
    }
}
