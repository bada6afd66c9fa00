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
