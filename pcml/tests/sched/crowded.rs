//! On a crowded machine (more threads ready to run than CPUs, so that idle procs park at once
//! instead of spinning) timers still fire and I/O is still seen: a proc that parks straight
//! away must not park past what is due.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use pcml::time::timeout_evt;
use pcml::{Chan, Runtime, select};

/// Runs `f` beside enough busy OS threads to crowd every CPU twice over, and fails the test
/// if `f` has not returned within a minute (a hang, not a slow run: `f` needs milliseconds).
fn crowded(f: impl FnOnce() + Send + 'static) {
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let stop = Arc::new(AtomicBool::new(false));
    let busy: Vec<_> = (0..2 * cpus + 1)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        })
        .collect();
    let (done, finished) = mpsc::channel();
    let runner = std::thread::spawn(move || {
        f();
        let _ = done.send(());
    });
    let outcome = finished.recv_timeout(Duration::from_secs(60));
    stop.store(true, Ordering::Relaxed);
    for b in busy {
        b.join().unwrap();
    }
    assert!(
        outcome.is_ok(),
        "hung beside busy threads: a due timer or ready I/O was never seen"
    );
    runner.join().unwrap();
}

/// Short timeouts raced against a channel nobody sends on, many times over.
fn timeouts_win(rt: Runtime) {
    let got = rt
        .block_on(|| {
            let never: Chan<u32> = Chan::new();
            let mut timeouts = 0;
            for _ in 0..300 {
                let r = select([
                    never.recv_evt().wrap(Some),
                    timeout_evt(Duration::from_micros(200)).wrap(|()| None),
                ]);
                assert_eq!(r, None);
                timeouts += 1;
            }
            // And a fiber on the other proc that sleeps, joined from here.
            let h = pcml::spawn_on(pcml::procs() - 1, || {
                for _ in 0..50 {
                    pcml::time::sleep(Duration::from_micros(300));
                }
                7
            });
            (timeouts, h.join().unwrap())
        })
        .unwrap();
    assert_eq!(got, (300, 7));
}

#[test]
fn timers_fire_beside_busy_threads_on_two_procs() {
    crowded(|| timeouts_win(Runtime::builder().procs(2).build().unwrap()));
}

#[test]
fn timers_fire_beside_busy_threads_with_procs_sharing_threads() {
    crowded(|| {
        timeouts_win(
            Runtime::builder()
                .procs(4)
                .carrier_threads(2)
                .build()
                .unwrap(),
        )
    });
}

#[test]
fn accepts_and_timeouts_beside_busy_threads() {
    use pcml::net::{TcpListener, TcpStream};
    crowded(|| {
        let ids = Runtime::builder()
            .procs(2)
            .build()
            .unwrap()
            .block_on(|| {
                let l = TcpListener::bind("127.0.0.1:0").unwrap();
                let addr = l.local_addr().unwrap();
                let clients = pcml::spawn(move || {
                    let mut keep = Vec::new();
                    for id in 0..20u8 {
                        if id % 4 == 0 {
                            pcml::time::sleep(Duration::from_millis(1));
                        }
                        let s = TcpStream::connect(addr).unwrap();
                        s.write_all(&[id]).unwrap();
                        keep.push(s);
                    }
                    keep
                });
                let mut ids = Vec::new();
                while ids.len() < 20 {
                    let got = select([
                        l.accept_evt().wrap(Some),
                        timeout_evt(Duration::from_micros(200)).wrap(|()| None),
                    ]);
                    if let Some(conn) = got {
                        let (conn, _) = conn.unwrap();
                        let mut id = [0];
                        conn.read_exact(&mut id).unwrap();
                        ids.push(id[0]);
                    }
                }
                drop(clients.join().unwrap());
                ids.sort_unstable();
                ids
            })
            .unwrap();
        assert_eq!(ids, (0..20).collect::<Vec<u8>>());
    });
}

/// A fiber that wakes a fiber of another proc and then computes, never reaching a sync
/// point, does not hold the wake-up back until it stops: the woken fiber runs meanwhile
/// (beside busy threads a sleeping proc's unpark may wait for its waker's next turn, which
/// a computing fiber does not take; the watchdog then sends it).
#[test]
fn a_wake_up_across_procs_leaves_while_its_sender_computes() {
    crowded(|| {
        let seen = Runtime::builder()
            .procs(2)
            .build()
            .unwrap()
            .block_on(|| {
                let ch: Chan<u32> = Chan::new();
                let rx = ch.clone();
                let flag = Arc::new(AtomicBool::new(false));
                let set = flag.clone();
                // Let the receiver's proc go to sleep before the send.
                let receiver = pcml::spawn_on(1, move || {
                    let v = rx.recv();
                    set.store(true, Ordering::Release);
                    v
                });
                pcml::time::sleep(Duration::from_millis(5));
                let sender = pcml::spawn_on(0, move || {
                    ch.send(41);
                    // No sync point, no budget: the proc is held until the flag is seen.
                    let start = std::time::Instant::now();
                    while !flag.load(Ordering::Acquire) {
                        if start.elapsed() > Duration::from_secs(30) {
                            return false;
                        }
                        std::hint::spin_loop();
                    }
                    true
                });
                let seen = sender.join().unwrap();
                assert_eq!(receiver.join().unwrap(), 41);
                seen
            })
            .unwrap();
        assert!(
            seen,
            "the receiver on the other proc never ran while its sender computed"
        );
    });
}

/// The paper's parallel ping-pong (pairs split across the procs, every message a wake-up of
/// the other proc) beside busy threads: every reply arrives, in order.
#[test]
fn pairs_split_across_procs_finish_beside_busy_threads() {
    crowded(|| {
        let sums = Runtime::builder()
            .procs(2)
            .build()
            .unwrap()
            .block_on(|| {
                let pairs: Vec<_> = (0..8usize)
                    .map(|i| {
                        let (ping, pong) = (Chan::<u64>::new(), Chan::<u64>::new());
                        let (ping_rx, pong_tx) = (ping.clone(), pong.clone());
                        let ponger = pcml::spawn_on((i + 1) % 2, move || {
                            for _ in 0..2_000 {
                                let v = ping_rx.recv();
                                pong_tx.send(v + 1);
                            }
                        });
                        pcml::spawn_on(i % 2, move || {
                            let mut sum = 0;
                            for k in 0..2_000u64 {
                                ping.send(k);
                                let r = pong.recv();
                                assert_eq!(r, k + 1, "a reply out of order");
                                sum += r;
                            }
                            ponger.join().unwrap();
                            sum
                        })
                    })
                    .collect();
                pairs
                    .into_iter()
                    .map(|h| h.join().unwrap())
                    .collect::<Vec<_>>()
            })
            .unwrap();
        assert_eq!(sums, vec![2_000 * 2_001 / 2; 8]);
    });
}
