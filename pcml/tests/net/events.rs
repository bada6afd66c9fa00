//! Socket events in choices: `accept_evt` and `readable_evt` against `timeout_evt` and
//! channels (the timeout wins when nothing arrives, the socket when something does, and
//! nothing is lost either way); closing sockets under blocked syncs; a socket outliving its
//! runtime.

use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::net::Shutdown;
use std::sync::Arc;
use std::time::Duration;

use pcml::net::{TcpListener, TcpStream};
use pcml::time::timeout_evt;
use pcml::{Chan, select};

fn runtime() -> pcml::Runtime {
    pcml::Runtime::builder().procs(2).build().unwrap()
}

#[test]
fn accept_or_timeout_loses_no_connection() {
    const N: u32 = 30;
    let got = runtime()
        .block_on(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            // Nothing is connecting yet: the timeout wins.
            assert!(
                l.accept_evt()
                    .sync_timeout(Duration::from_millis(5))
                    .is_none()
            );
            // Clients connect at staggered times and each sends its id.
            let clients = pcml::spawn(move || {
                let mut keep = Vec::new();
                for id in 0..N {
                    if id % 3 == 0 {
                        pcml::time::sleep(Duration::from_millis(1));
                    }
                    let s = TcpStream::connect(addr).unwrap();
                    s.write_all(&id.to_le_bytes()).unwrap();
                    keep.push(s);
                }
                keep
            });
            let mut ids = BTreeSet::new();
            let mut timeouts = 0u32;
            while ids.len() < N as usize {
                let got = select([
                    l.accept_evt().wrap(Some),
                    timeout_evt(Duration::from_micros(200)).wrap(|()| None),
                ]);
                match got {
                    Some(conn) => {
                        let (conn, _) = conn.unwrap();
                        let mut id = [0; 4];
                        conn.read_exact(&mut id).unwrap();
                        assert!(ids.insert(u32::from_le_bytes(id)), "accepted twice");
                    }
                    None => timeouts += 1,
                }
            }
            drop(clients.join().unwrap());
            // After everyone was accepted, nothing more is pending.
            assert!(
                l.accept_evt()
                    .sync_timeout(Duration::from_millis(5))
                    .is_none()
            );
            let _ = timeouts; // how often the timeout won depends on timing: not asserted
            ids
        })
        .unwrap();
    assert_eq!(got, (0..N).collect());
}

#[test]
fn accept_against_a_channel_never_drops_a_connection() {
    // Both branches are enabled: whichever wins, the connection stays for the next accept.
    runtime()
        .block_on(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap();
            let ch = Chan::<u32>::new();
            let mut by_channel = 0;
            for round in 0..50u32 {
                let c = TcpStream::connect(addr).unwrap();
                c.write_all(&round.to_le_bytes()).unwrap();
                let tx = ch.clone();
                pcml::spawn(move || tx.send(round));
                let first = select([
                    l.accept_evt().wrap(|r| Some(r.unwrap().0)),
                    ch.recv_evt().wrap(|_| None),
                ]);
                let conn = match first {
                    Some(conn) => {
                        // The channel's sender is still blocked: take its message.
                        assert_eq!(ch.recv(), round);
                        conn
                    }
                    None => {
                        by_channel += 1;
                        l.accept().unwrap().0
                    }
                };
                let mut id = [0; 4];
                conn.read_exact(&mut id).unwrap();
                assert_eq!(
                    u32::from_le_bytes(id),
                    round,
                    "a connection was lost or reordered"
                );
            }
            let _ = by_channel;
        })
        .unwrap();
}

#[test]
fn readable_or_timeout_loses_no_bytes() {
    const MESSAGES: u32 = 200;
    let total = runtime()
        .block_on(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (b, _) = l.accept().unwrap();
            // Nothing sent: the timeout wins, repeatedly.
            for _ in 0..3 {
                let idle = select([
                    a.readable_evt().wrap(|()| false),
                    timeout_evt(Duration::from_millis(2)).wrap(|()| true),
                ]);
                assert!(idle, "readable with nothing sent");
            }
            let writer = pcml::spawn(move || {
                for i in 0..MESSAGES {
                    b.write_all(&i.to_le_bytes()).unwrap();
                    if i % 50 == 0 {
                        pcml::time::sleep(Duration::from_millis(1));
                    }
                }
                b.shutdown(Shutdown::Write).unwrap();
                b
            });
            let mut bytes = Vec::new();
            let mut buf = [0u8; 64];
            'outer: loop {
                let readable = select([
                    a.readable_evt().wrap(|()| true),
                    timeout_evt(Duration::from_micros(300)).wrap(|()| false),
                ]);
                if !readable {
                    continue;
                }
                loop {
                    match a.try_read(&mut buf) {
                        Ok(0) => break 'outer,
                        Ok(n) => bytes.extend_from_slice(&buf[..n]),
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) => panic!("read failed: {e}"),
                    }
                }
            }
            drop(writer.join().unwrap());
            let words: Vec<u32> = bytes
                .chunks(4)
                .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            assert_eq!(words, (0..MESSAGES).collect::<Vec<_>>());
            words.len()
        })
        .unwrap();
    assert_eq!(total, MESSAGES as usize);
}

#[test]
fn readable_in_a_choice_from_tokio() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect_async(l.local_addr().unwrap())
            .await
            .unwrap();
        let (b, _) = l.accept_async().await.unwrap();
        let idle = pcml::choose([
            a.readable_evt().wrap(|()| false),
            timeout_evt(Duration::from_millis(3)).wrap(|()| true),
        ])
        .await;
        assert!(idle);
        b.write_all_async(b"data").await.unwrap();
        let idle = pcml::choose([
            a.readable_evt().wrap(|()| false),
            timeout_evt(Duration::from_secs(10)).wrap(|()| true),
        ])
        .await;
        assert!(!idle);
        assert_eq!(a.try_read(&mut [0; 8]).unwrap(), 4);
    });
}

#[test]
fn dropping_a_stream_wakes_a_fiber_waiting_on_it() {
    runtime()
        .block_on(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let _b = l.accept().unwrap();
            let ev = a.readable_evt();
            let waiter = pcml::spawn(move || ev.sync());
            pcml::time::sleep(Duration::from_millis(2));
            drop(a);
            waiter.join().unwrap(); // returns instead of hanging
        })
        .unwrap();
}

#[test]
fn dropping_a_listener_fails_a_blocked_accept() {
    runtime()
        .block_on(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let ev = l.accept_evt();
            let waiter = pcml::spawn(move || ev.sync());
            pcml::time::sleep(Duration::from_millis(2));
            drop(l);
            let err = waiter.join().unwrap().unwrap_err();
            assert!(err.to_string().contains("dropped"), "{err}");
        })
        .unwrap();
}

#[test]
fn shutdown_ends_a_blocked_read_with_eof() {
    runtime()
        .block_on(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let a = Arc::new(TcpStream::connect(l.local_addr().unwrap()).unwrap());
            let _b = l.accept().unwrap();
            let a2 = a.clone();
            let reader = pcml::spawn(move || a2.read(&mut [0; 8]));
            pcml::time::sleep(Duration::from_millis(2));
            a.shutdown(Shutdown::Both).unwrap();
            assert_eq!(reader.join().unwrap().unwrap(), 0);
        })
        .unwrap();
}

#[test]
fn a_blocked_fiber_on_io_is_not_a_deadlock() {
    // Main waits on a read that an OS thread outside the runtime satisfies later; deadlock
    // detection must not fire meanwhile.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let peer = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        std::thread::sleep(Duration::from_millis(30));
        std::io::Write::write_all(&mut s, b"late").unwrap();
        s
    });
    let got = pcml::Runtime::builder()
        .procs(1)
        .build()
        .unwrap()
        .block_on(move || {
            let s = TcpStream::connect(addr).unwrap();
            let mut buf = [0; 4];
            s.read_exact(&mut buf).unwrap();
            buf
        })
        .unwrap();
    assert_eq!(&got, b"late");
    drop(peer.join().unwrap());
}

#[test]
fn a_socket_outliving_its_runtime_errors_instead_of_hanging() {
    let (s, _peer) = pcml::Runtime::builder()
        .procs(1)
        .build()
        .unwrap()
        .block_on(|| {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let s = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let peer = l.accept().unwrap();
            (s, peer)
        })
        .unwrap();
    // The runtime and its I/O driver are gone; nothing will ever report readiness.
    let err = s.read(&mut [0; 4]).unwrap_err();
    assert!(err.to_string().contains("shut down"), "{err}");
}

#[test]
fn a_listener_outliving_its_runtime_fails_accepts_instead_of_hanging() {
    let (l, waiting) = pcml::Runtime::builder()
        .procs(1)
        .build()
        .unwrap()
        .block_on(|| {
            let l = Arc::new(TcpListener::bind("127.0.0.1:0").unwrap());
            // An OS thread blocks in accept while the runtime is still up.
            let l2 = l.clone();
            let waiting = std::thread::spawn(move || l2.accept().map(|_| ()));
            (l, waiting)
        })
        .unwrap();
    // The runtime and its I/O driver are gone: the blocked accept fails...
    let err = waiting.join().unwrap().unwrap_err();
    assert!(err.to_string().contains("has stopped"), "{err}");
    // ... and so do new ones, without a client and with one waiting.
    let err = l.accept().unwrap_err();
    assert!(err.to_string().contains("has stopped"), "{err}");
    let _c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let err = l.accept().unwrap_err();
    assert!(err.to_string().contains("has stopped"), "{err}");
    let err = l.accept_evt().sync().unwrap_err();
    assert!(err.to_string().contains("has stopped"), "{err}");
}

#[test]
fn competing_acceptors_in_choices_share_connections_exactly_once() {
    const N: u32 = 60;
    const ACCEPTORS: usize = 4;
    let ids = runtime()
        .block_on(|| {
            let l = Arc::new(TcpListener::bind("127.0.0.1:0").unwrap());
            let addr = l.local_addr().unwrap();
            let stop = Chan::<()>::new();
            let acceptors: Vec<_> = (0..ACCEPTORS)
                .map(|_| {
                    let (l, stop) = (l.clone(), stop.clone());
                    pcml::spawn(move || {
                        let mut mine = Vec::new();
                        loop {
                            let got = select([
                                l.accept_evt().wrap(|r| Some(Some(r.unwrap().0))),
                                stop.recv_evt().wrap(|()| None),
                                timeout_evt(Duration::from_micros(100)).wrap(|()| Some(None)),
                            ]);
                            match got {
                                Some(Some(conn)) => {
                                    let mut id = [0; 4];
                                    conn.read_exact(&mut id).unwrap();
                                    mine.push(u32::from_le_bytes(id));
                                }
                                Some(None) => {}
                                None => return mine,
                            }
                        }
                    })
                })
                .collect();
            let clients: Vec<_> = (0..N)
                .map(|id| {
                    pcml::spawn(move || {
                        let s = TcpStream::connect(addr).unwrap();
                        s.write_all(&id.to_le_bytes()).unwrap();
                        // Wait for the server side to close (the acceptor drops it).
                        assert_eq!(s.read(&mut [0; 1]).unwrap(), 0);
                    })
                })
                .collect();
            for c in clients {
                c.join().unwrap();
            }
            for _ in 0..ACCEPTORS {
                stop.send(());
            }
            let mut all = Vec::new();
            for a in acceptors {
                all.extend(a.join().unwrap());
            }
            all
        })
        .unwrap();
    let mut sorted = ids.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        (0..N).collect::<Vec<_>>(),
        "each connection accepted exactly once"
    );
}

#[test]
fn a_dropped_accept_future_gives_its_connection_back() {
    use std::future::{Future, IntoFuture};
    use std::task::{Context, Poll, Waker};

    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    let mut fut = Box::pin(l.accept_evt().into_future());
    // Nothing to accept: the accept is now queued on the listener.
    assert!(matches!(fut.as_mut().poll(&mut cx), Poll::Pending));
    let client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    // Give the I/O driver time to hand the connection to the queued accept (if it has not by
    // then, dropping the future withdraws the accept and the connection stays queued in the
    // kernel: the assertion below holds either way).
    std::thread::sleep(Duration::from_millis(50));
    drop(fut);
    let (conn, peer) = l
        .accept_evt()
        .sync_timeout(Duration::from_secs(10))
        .expect("the connection was lost with the dropped future")
        .unwrap();
    assert_eq!(peer, client.local_addr().unwrap());
    drop(conn);
}

#[test]
fn connecting_to_a_closed_port_fails_instead_of_hanging() {
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    }; // closed again: nobody listens there now
    let err = runtime()
        .block_on(move || TcpStream::connect(addr).unwrap_err())
        .unwrap();
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
    let err = TcpStream::connect(addr).unwrap_err(); // on a plain OS thread
    assert_eq!(err.kind(), ErrorKind::ConnectionRefused);
}

/// A connected pair on the calling thread's driver.
fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (b, _) = l.accept().unwrap();
    (a, b)
}

#[test]
fn read_line_or_timeout_assembles_lines_sent_in_pieces() {
    const LINES: usize = 200;
    runtime()
        .block_on(|| {
            let (a, b) = pair();
            let writer = pcml::spawn(move || {
                let text: String = (0..LINES).map(|k| format!("line {k}\n")).collect();
                // Pieces of 1 to 7 bytes, with yields between, so lines arrive in parts.
                let mut rest = text.as_bytes();
                let mut k = 0;
                while !rest.is_empty() {
                    let n = (k % 7 + 1).min(rest.len());
                    a.write_all(&rest[..n]).unwrap();
                    rest = &rest[n..];
                    k += 1;
                    if k % 3 == 0 {
                        pcml::time::sleep(Duration::from_micros(200));
                    }
                }
                a
            });
            let (mut got, mut timeouts) = (Vec::new(), 0);
            while got.len() < LINES {
                select([
                    b.read_line_evt(64).wrap(Some),
                    timeout_evt(Duration::from_micros(100)).wrap(|()| None),
                ])
                .map_or_else(|| timeouts += 1, |l| got.push(l.unwrap()));
            }
            let want: Vec<String> = (0..LINES).map(|k| format!("line {k}\n")).collect();
            assert_eq!(got, want);
            let a = writer.join().unwrap();
            drop(a);
            assert_eq!(b.read_line_evt(64).sync().unwrap(), "", "end of file");
            let _ = timeouts; // how often the timeout won does not matter
        })
        .unwrap();
}

#[test]
fn bytes_read_for_a_losing_read_event_come_first_to_the_next_read() {
    runtime()
        .block_on(|| {
            let (a, b) = pair();
            let ch = Chan::new();
            let c2 = ch.clone();
            a.write_all(b"first part, ").unwrap();
            // The channel is ready and the socket has bytes: whichever wins, nothing is lost.
            pcml::spawn(move || c2.send(()));
            let mut got = Vec::new();
            for _ in 0..2 {
                select([
                    b.read_exact_evt(6).wrap(Some),
                    ch.recv_evt().wrap(|()| None),
                ])
                .into_iter()
                .for_each(|r| got.extend(r.unwrap()));
            }
            a.write_all(b"second part").unwrap();
            drop(a);
            // Plain reads after read events: buffered bytes first, then the socket's.
            let mut rest = vec![0; 64];
            loop {
                let n = b.read(&mut rest).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&rest[..n]);
            }
            assert_eq!(String::from_utf8(got).unwrap(), "first part, second part");
        })
        .unwrap();
}

#[test]
fn an_overlong_line_is_an_error_and_buffers_at_most_its_limit() {
    runtime()
        .block_on(|| {
            let (a, b) = pair();
            let w = pcml::spawn(move || {
                // 8 MiB without a line end; the reader stops reading, so this write
                // eventually fails or blocks until the reader drops its end.
                let big = vec![b'x'; 8 << 20];
                let _ = a.write_all(&big);
            });
            let err = b.read_line_evt(4096).sync().unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidData);
            // What was buffered for the line is bounded by the limit plus one read chunk.
            let mut buf = vec![0; 1 << 20];
            let n = b.try_read(&mut buf).unwrap();
            assert!((4096..=4096 + 16 * 1024).contains(&n), "{n} bytes buffered");
            drop(b);
            w.join().unwrap();
        })
        .unwrap();
}

#[test]
fn a_read_event_blocked_on_a_dropped_stream_fails() {
    let (a, b) = pair();
    let evt = b.read_line_evt(64);
    let t = std::thread::spawn(move || evt.sync());
    std::thread::sleep(Duration::from_millis(20)); // let it block (either way it must fail)
    drop(b);
    let err = t.join().unwrap().unwrap_err();
    assert!(err.to_string().contains("dropped"), "{err}");
    drop(a);
}

#[test]
fn a_partial_last_line_is_delivered_at_end_of_file() {
    let (a, b) = pair();
    let t = std::thread::spawn(move || {
        let first = b.read_line_evt(64).sync().unwrap();
        let last = b.read_line_evt(64).sync().unwrap();
        let eof = b.read_line_evt(64).sync().unwrap();
        (first, last, eof)
    });
    a.write_all(b"complete\nno line end").unwrap();
    a.shutdown(Shutdown::Write).unwrap();
    let got = t.join().unwrap();
    assert_eq!(
        got,
        ("complete\n".into(), "no line end".into(), String::new())
    );
}

#[test]
fn a_dropped_read_future_gives_its_bytes_back() {
    use std::future::{Future, IntoFuture};
    use std::task::{Context, Waker};
    let (a, b) = pair();
    let mut fut = Box::pin(b.read_evt(64).into_future());
    let mut cx = Context::from_waker(Waker::noop());
    assert!(fut.as_mut().poll(&mut cx).is_pending());
    a.write_all(b"kept").unwrap();
    // The driver reads for the queued event and delivers; the future is then dropped unseen.
    std::thread::sleep(Duration::from_millis(50));
    drop(fut);
    let mut buf = [0; 8];
    let n = b.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"kept");
}

#[test]
fn read_events_from_tokio_tasks() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let (a, b) = pair();
        let w = tokio::task::spawn_blocking(move || {
            for k in 0..20 {
                a.write_all(format!("{k}\n").as_bytes()).unwrap();
            }
        });
        for k in 0..20 {
            assert_eq!(b.read_line_evt(8).await.unwrap(), format!("{k}\n"));
        }
        w.await.unwrap();
    });
}
