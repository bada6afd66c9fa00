//! A stream's edges as a user of tokio's sockets meets them, on 1, 2 and 4 procs: partial
//! reads and writes, a peer that closes half-way (end of file, then a write error, never a
//! hang), `read_exact` on a short stream, megabytes to a slow reader, a few hundred
//! connections, a read that loses to a timeout in `tokio::select!`, an address in use, UDP
//! with a timeout, a stream dropped under a task's read, and futures-io's and tokio's
//! extension traits over pcml streams.

use std::future::IntoFuture;
use std::io::ErrorKind;
use std::net::{Shutdown, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::common::watchdog;
use pcml::net::{TcpListener, TcpStream, UdpSocket};
use pcml::time::timeout_evt;

const PROCS: [usize; 3] = [1, 2, 4];

fn run_on<T: Send + 'static>(procs: usize, f: impl FnOnce() -> T + Send + 'static) -> T {
    pcml::Runtime::builder()
        .procs(procs)
        .build()
        .unwrap()
        .block_on(f)
        .unwrap()
}

fn pair() -> (TcpStream, TcpStream) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (b, _) = l.accept().unwrap();
    (a, b)
}

fn pattern(i: usize) -> u8 {
    (i * 7 % 251) as u8
}

#[test]
fn a_peer_that_closes_half_way_gives_eof_then_a_write_error() {
    for procs in PROCS {
        let done = watchdog("half-way close");
        run_on(procs, || {
            let (a, b) = pair();
            a.write_all(b"abc").unwrap();
            drop(a);
            let mut buf = [0; 10];
            let err = b.read_exact(&mut buf).unwrap_err();
            assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
            assert_eq!(b.read(&mut buf).unwrap(), 0);
            assert_eq!(b.read(&mut buf).unwrap(), 0, "end of file stays");
            // Writes to a closed peer fail (the first may still be accepted by the kernel).
            let mut err = None;
            for _ in 0..100 {
                if let Err(e) = b.write(b"x") {
                    err = Some(e);
                    break;
                }
                pcml::time::sleep(Duration::from_millis(1));
            }
            let err = err.expect("writes to a closed peer kept succeeding");
            assert!(
                matches!(
                    err.kind(),
                    ErrorKind::BrokenPipe | ErrorKind::ConnectionReset
                ),
                "{err}"
            );
            // The same from a task, through the async methods.
            let (a, b) = pair();
            let t = pcml::spawn_task(async move {
                let mut buf = [0; 8];
                let mut got = Vec::new();
                loop {
                    let n = b.read_async(&mut buf).await.unwrap();
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                let mut werr = None;
                for _ in 0..100 {
                    if let Err(e) = b.write_all_async(b"y").await {
                        werr = Some(e.kind());
                        break;
                    }
                    pcml::time::sleep_async(Duration::from_millis(1)).await;
                }
                (got, werr)
            });
            a.write_all(b"partial").unwrap();
            a.shutdown(Shutdown::Both).unwrap();
            drop(a);
            let (got, werr) = t.join().unwrap();
            assert_eq!(got, b"partial");
            assert!(matches!(
                werr,
                Some(ErrorKind::BrokenPipe | ErrorKind::ConnectionReset)
            ));
        });
        done.store(true, Ordering::Release);
    }
}

#[test]
fn megabytes_to_a_slow_reader_arrive_whole_and_in_order() {
    const LEN: usize = 4 << 20;
    for procs in PROCS {
        let done = watchdog("large write");
        run_on(procs, || {
            let (a, b) = pair();
            let w = pcml::spawn_task(async move {
                let data: Vec<u8> = (0..LEN).map(pattern).collect();
                a.write_all_async(&data).await.unwrap();
                // And a partial write reports what it took.
                let n = a.write_async(&data[..10]).await.unwrap();
                assert!(0 < n && n <= 10);
                n
            });
            // A slow reader: small reads, a pause now and then.
            let mut got = 0;
            let mut buf = [0; 1500];
            let mut reads = 0;
            while got < LEN {
                let want = buf.len().min(LEN - got);
                let n = b.read(&mut buf[..want]).unwrap();
                assert!(n > 0, "end of file after {got} bytes");
                for (k, &byte) in buf[..n].iter().enumerate() {
                    assert_eq!(byte, pattern(got + k), "byte {}", got + k);
                }
                got += n;
                reads += 1;
                if reads % 500 == 0 {
                    pcml::time::sleep(Duration::from_millis(1));
                }
            }
            let extra = w.join().unwrap();
            let mut tail = vec![0; extra];
            b.read_exact(&mut tail).unwrap();
            assert_eq!(tail, (0..extra).map(pattern).collect::<Vec<_>>());
        });
        done.store(true, Ordering::Release);
    }
}

#[test]
fn a_few_hundred_connections_are_accepted_and_served() {
    const CONNS: usize = 300;
    for procs in [2, 4] {
        let done = watchdog("many connections");
        let (tx, rx) = std::sync::mpsc::channel::<SocketAddr>();
        let clients = std::thread::spawn(move || {
            let addr = rx.recv().unwrap();
            let threads: Vec<_> = (0..10)
                .map(|t| {
                    std::thread::spawn(move || {
                        use std::io::{Read, Write};
                        let mut open = Vec::new();
                        for c in 0..CONNS / 10 {
                            let mut s = std::net::TcpStream::connect(addr).unwrap();
                            s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                            let msg = format!("{t}:{c}\n");
                            s.write_all(msg.as_bytes()).unwrap();
                            let mut got = vec![0; msg.len()];
                            s.read_exact(&mut got).unwrap();
                            assert_eq!(got, msg.as_bytes());
                            // Half stay open until the end: many connections at once.
                            if c % 2 == 0 {
                                open.push(s);
                            }
                        }
                        open.len()
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().unwrap())
                .sum::<usize>()
        });
        let served = run_on(procs, move || {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            let mut conns = Vec::new();
            for _ in 0..CONNS {
                let (c, _) = l.accept().unwrap();
                conns.push(pcml::spawn_task(async move {
                    let mut buf = [0; 64];
                    let mut total = 0;
                    loop {
                        let n = c.read_async(&mut buf).await.unwrap();
                        if n == 0 {
                            return total;
                        }
                        total += n;
                        c.write_all_async(&buf[..n]).await.unwrap();
                    }
                }));
                // The clients keep half open until all are served: stop waiting for those.
                if conns.len() == CONNS {
                    break;
                }
            }
            let open = clients.join().unwrap();
            assert_eq!(open, CONNS / 2);
            conns.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
        });
        assert!(served > 0);
        done.store(true, Ordering::Release);
    }
}

#[test]
fn an_async_read_that_loses_to_a_timeout_loses_no_byte() {
    for procs in PROCS {
        let done = watchdog("read against a timeout");
        run_on(procs, || {
            let (a, b) = pair();
            let (a, b) = (Arc::new(a), Arc::new(b));
            let bb = b.clone();
            let reader = pcml::spawn_task(async move {
                let mut got = Vec::new();
                let mut timeouts = 0;
                let mut buf = [0; 3];
                while got.len() < 1000 {
                    tokio::select! {
                        r = bb.read_async(&mut buf) => got.extend_from_slice(&buf[..r.unwrap()]),
                        () = pcml::time::sleep_async(Duration::from_micros(200)) => timeouts += 1,
                    }
                    // And the read event, as a choice with a timeout.
                    let ev = bb.read_evt(2).into_future();
                    if let Ok(r) = pcml::time::timeout(Duration::from_micros(100), ev).await {
                        got.extend_from_slice(&r.unwrap());
                    }
                }
                let _ = timeouts;
                got
            });
            for i in 0..1000 {
                a.write_all(&[pattern(i)]).unwrap();
                if i % 50 == 0 {
                    pcml::time::sleep(Duration::from_millis(1));
                }
            }
            let got = reader.join().unwrap();
            assert_eq!(got, (0..1000).map(pattern).collect::<Vec<_>>());
            // The stream is still usable both ways.
            b.write_all(b"ok").unwrap();
            let mut two = [0; 2];
            a.read_exact(&mut two).unwrap();
            assert_eq!(&two, b"ok");
            // A plain select of the read event against a timeout, from a fiber.
            let r = pcml::select([
                b.read_evt(10).wrap(|r| Some(r.unwrap())),
                timeout_evt(Duration::from_millis(2)).wrap(|()| None),
            ]);
            assert_eq!(r, None);
        });
        done.store(true, Ordering::Release);
    }
}

#[test]
fn binding_an_address_in_use_says_so() {
    run_on(2, || {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let err = TcpListener::bind(l.local_addr().unwrap()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AddrInUse, "{err}");
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        let err = UdpSocket::bind(u.local_addr().unwrap()).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::AddrInUse, "{err}");
    });
}

#[test]
fn udp_send_recv_and_recv_with_a_timeout() {
    for procs in PROCS {
        let done = watchdog("udp");
        run_on(procs, || {
            let a = UdpSocket::bind("127.0.0.1:0").unwrap();
            let b = Arc::new(UdpSocket::bind("127.0.0.1:0").unwrap());
            let (aa, ba) = (a.local_addr().unwrap(), b.local_addr().unwrap());
            // Nothing comes: the readiness event loses to the timeout.
            assert!(
                b.readable_evt()
                    .sync_timeout(Duration::from_millis(5))
                    .is_none()
            );
            let mut buf = [0; 64];
            assert_eq!(
                b.try_recv_from(&mut buf).unwrap_err().kind(),
                ErrorKind::WouldBlock
            );
            // A task receives while a fiber sends.
            let bt = b.clone();
            let t = pcml::spawn_task(async move {
                let mut got = Vec::new();
                let mut buf = [0; 64];
                for _ in 0..10 {
                    let (n, from) =
                        pcml::time::timeout(Duration::from_secs(20), bt.recv_from_async(&mut buf))
                            .await
                            .expect("a datagram was lost on loopback")
                            .unwrap();
                    assert_eq!(from, aa);
                    got.push(buf[..n].to_vec());
                    bt.send_to_async(b"ack", from).await.unwrap();
                }
                got
            });
            for i in 0..10u8 {
                a.send_to(&[i; 3], ba).unwrap();
                let (n, from) = a.recv_from(&mut buf).unwrap();
                assert_eq!((&buf[..n], from), (&b"ack"[..], ba));
            }
            let got = t.join().unwrap();
            assert_eq!(got, (0..10u8).map(|i| vec![i; 3]).collect::<Vec<_>>());
            // Connected sockets.
            a.connect(ba).unwrap();
            b.connect(aa).unwrap();
            a.send(b"hi").unwrap();
            assert_eq!(b.recv(&mut buf).unwrap(), 2);
        });
        done.store(true, Ordering::Release);
    }
}

#[test]
fn dropping_a_stream_fails_a_tasks_read_event_on_it() {
    for procs in PROCS {
        let done = watchdog("drop under a read");
        run_on(procs, || {
            let (_a, b) = pair();
            let ev = b.read_evt(16);
            let t = pcml::spawn_task(async move { ev.await });
            pcml::time::sleep(Duration::from_millis(2));
            drop(b);
            let r = t.join().unwrap();
            assert!(r.is_err(), "{r:?}");
        });
        done.store(true, Ordering::Release);
    }
}

#[test]
fn read_exact_on_a_short_stream_from_a_task_and_over_the_traits() {
    use futures_io::AsyncRead;
    for procs in PROCS {
        let done = watchdog("read_exact short");
        run_on(procs, || {
            let (a, b) = pair();
            a.write_all(b"0123").unwrap();
            a.shutdown(Shutdown::Write).unwrap();
            let t = pcml::spawn_task(async move {
                let e = b.read_exact_evt(8).await.unwrap_err();
                assert_eq!(e.kind(), ErrorKind::UnexpectedEof);
                // The bytes that came stay buffered, and come to a trait read.
                let mut buf = [0; 8];
                let mut s = &b;
                let n =
                    std::future::poll_fn(|cx| std::pin::Pin::new(&mut s).poll_read(cx, &mut buf))
                        .await
                        .unwrap();
                assert_eq!(&buf[..n], b"0123");
                let n =
                    std::future::poll_fn(|cx| std::pin::Pin::new(&mut s).poll_read(cx, &mut buf))
                        .await
                        .unwrap();
                assert_eq!(n, 0);
            });
            t.join().unwrap();
        });
        done.store(true, Ordering::Release);
    }
}

#[cfg(feature = "tokio")]
#[test]
fn tokio_lines_copy_and_shutdown_over_pcml_streams() {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    for procs in PROCS {
        let done = watchdog("tokio traits");
        run_on(procs, || {
            let (a, b) = pair();
            // An echo server through tokio::io::copy over the split halves.
            let server = pcml::spawn_task(async move {
                let (mut r, mut w) = (&b, &b);
                let n = tokio::io::copy(&mut r, &mut w).await.unwrap();
                AsyncWriteExt::shutdown(&mut w).await.unwrap();
                n
            });
            let client = pcml::spawn_task(async move {
                let (r, mut w) = (&a, &a);
                let writer = async {
                    for i in 0..200 {
                        AsyncWriteExt::write_all(&mut w, format!("line {i}\n").as_bytes())
                            .await
                            .unwrap();
                    }
                    AsyncWriteExt::shutdown(&mut w).await.unwrap();
                };
                let reader = async {
                    let mut lines = BufReader::new(r).lines();
                    let mut n = 0;
                    while let Some(l) = lines.next_line().await.unwrap() {
                        assert_eq!(l, format!("line {n}"));
                        n += 1;
                    }
                    n
                };
                let ((), n) = tokio::join!(writer, reader);
                // After both shut down, a read is end of file.
                let mut rest = Vec::new();
                let mut r2 = &a;
                assert_eq!(r2.read_to_end(&mut rest).await.unwrap(), 0);
                n
            });
            assert_eq!(client.join().unwrap(), 200);
            let copied = server.join().unwrap();
            assert_eq!(
                copied as usize,
                (0..200).map(|i| format!("line {i}\n").len()).sum()
            );
        });
        done.store(true, Ordering::Release);
    }
}

#[test]
fn a_half_closed_stream_still_carries_the_other_direction() {
    const LEN: usize = 1 << 20;
    for procs in PROCS {
        let done = watchdog("half-closed");
        run_on(procs, || {
            let (a, b) = pair();
            // b says it is done writing; a reads the end of file, then sends a megabyte back.
            b.shutdown(Shutdown::Write).unwrap();
            let t = pcml::spawn_task(async move {
                let mut buf = [0; 8];
                assert_eq!(a.read_async(&mut buf).await.unwrap(), 0);
                let data: Vec<u8> = (0..LEN).map(pattern).collect();
                a.write_all_async(&data).await.unwrap();
                drop(a);
            });
            let mut got = Vec::new();
            let mut buf = vec![0; 64 * 1024];
            loop {
                let n = b.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            t.join().unwrap();
            assert_eq!(got.len(), LEN);
            assert!(got.iter().enumerate().all(|(i, &x)| x == pattern(i)));
        });
        done.store(true, Ordering::Release);
    }
}

/// Fills `s`'s send path (the peer reads nothing) until a write would block.
fn fill(s: &TcpStream) -> usize {
    let chunk = vec![0u8; 64 * 1024];
    let mut total = 0;
    loop {
        match s.try_write(&chunk) {
            Ok(n) => total += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return total,
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn a_write_blocked_on_a_full_stream_fails_when_the_peer_goes() {
    for procs in PROCS {
        let done = watchdog("blocked write, peer gone");
        run_on(procs, || {
            // A fiber's write.
            let (a, b) = pair();
            fill(&a);
            let w = pcml::spawn(move || a.write_all(&vec![1; 1 << 20]));
            pcml::time::sleep(Duration::from_millis(5));
            drop(b);
            let e = w.join().unwrap().unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset),
                "{e}"
            );
            // A task's.
            let (a, b) = pair();
            fill(&a);
            let w = pcml::spawn_task(async move { a.write_all_async(&vec![1; 1 << 20]).await });
            pcml::time::sleep(Duration::from_millis(5));
            drop(b);
            let e = w.join().unwrap().unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::BrokenPipe | ErrorKind::ConnectionReset),
                "{e}"
            );
        });
        done.store(true, Ordering::Release);
    }
}

#[test]
fn shutting_down_a_stream_ends_a_blocked_write_and_blocked_task_reads() {
    use futures_io::AsyncRead;
    for procs in PROCS {
        let done = watchdog("shutdown under blocked ops");
        run_on(procs, || {
            // A write blocked on a full stream, ended by shutting the write half.
            let (a, _b) = pair();
            let a = Arc::new(a);
            fill(&a);
            let a2 = a.clone();
            let w = pcml::spawn(move || a2.write_all(&vec![1; 1 << 20]));
            pcml::time::sleep(Duration::from_millis(5));
            a.shutdown(Shutdown::Write).unwrap();
            let e = w.join().unwrap().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::BrokenPipe, "{e}");
            // A task's read, a read event's await and a trait read, ended by shutting the
            // read half.
            for kind in 0..3 {
                let (_a, b) = pair();
                let b = Arc::new(b);
                let b2 = b.clone();
                let r = pcml::spawn_task(async move {
                    let mut buf = [0; 8];
                    match kind {
                        0 => b2.read_async(&mut buf).await.unwrap(),
                        1 => b2.read_evt(8).await.unwrap().len(),
                        _ => {
                            let mut s = &*b2;
                            std::future::poll_fn(|cx| {
                                std::pin::Pin::new(&mut s).poll_read(cx, &mut buf)
                            })
                            .await
                            .unwrap()
                        }
                    }
                });
                pcml::time::sleep(Duration::from_millis(5));
                b.shutdown(Shutdown::Read).unwrap();
                assert_eq!(r.join().unwrap(), 0, "read {kind} sees end of file");
            }
        });
        done.store(true, Ordering::Release);
    }
}

#[cfg(feature = "tokio")]
#[test]
fn async_operations_on_sockets_outliving_their_runtime_fail_instead_of_hanging() {
    use tokio::io::AsyncReadExt;
    let done = watchdog("sockets after their runtime");
    // `a` has filled its send path to `_a_peer`, which reads nothing; `b`'s peer sends
    // nothing.
    let (l, a, _a_peer, b, _b_peer, u) = run_on(2, || {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let (a, a_peer) = pair();
        fill(&a);
        let (b, b_peer) = pair();
        let u = UdpSocket::bind("127.0.0.1:0").unwrap();
        (l, a, a_peer, b, b_peer, u)
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut buf = [0; 8];
        let e = b.read_async(&mut buf).await.unwrap_err();
        assert!(e.to_string().contains("shut down"), "read_async: {e}");
        let e = AsyncReadExt::read(&mut &b, &mut buf).await.unwrap_err();
        assert!(e.to_string().contains("shut down"), "AsyncRead: {e}");
        let e = b.read_evt(8).await.unwrap_err();
        assert!(e.to_string().contains("shut down"), "read_evt: {e}");
        let e = a.write_all_async(&[0; 1 << 20]).await.unwrap_err();
        assert!(e.to_string().contains("shut down"), "write_all_async: {e}");
        let e = l.accept_async().await.unwrap_err();
        assert!(e.to_string().contains("stopped"), "accept_async: {e}");
        let e = u.recv_from_async(&mut buf).await.unwrap_err();
        assert!(e.to_string().contains("shut down"), "recv_from_async: {e}");
        // Readiness events are enabled (a hint), and the operation after them fails.
        a.writable_evt().await;
        b.readable_evt().await;
    });
    done.store(true, Ordering::Release);
}

/// A read event whose task is aborted while the I/O driver is reading for it: the bytes it
/// read come back to the stream, and a plain read that starts once the abort is joined gets
/// them (it used to find the bytes put back unannounced and wait for the socket for ever).
#[test]
fn bytes_read_for_an_aborted_tasks_read_event_reach_the_next_plain_read() {
    for procs in [2, 4] {
        let done = watchdog("read after an aborted read event");
        run_on(procs, || {
            for round in 0..200 {
                let (a, b) = pair();
                let b = Arc::new(b);
                let b2 = b.clone();
                let reader = pcml::spawn_task(async move { b2.read_exact_evt(4).await });
                a.write_all(b"ab").unwrap();
                if round % 2 == 0 {
                    pcml::yield_now();
                }
                reader.abort();
                a.write_all(b"cd").unwrap();
                match reader.join() {
                    Ok(r) => assert_eq!(r.unwrap(), b"abcd"),
                    Err(e) => {
                        assert!(e.is_cancelled());
                        let mut buf = [0; 4];
                        match round % 3 {
                            0 => b.read_exact(&mut buf).unwrap(),
                            1 => {
                                let b3 = b.clone();
                                buf = pcml::spawn_task(async move {
                                    let mut buf = [0; 4];
                                    let mut n = 0;
                                    while n < 4 {
                                        n += b3.read_async(&mut buf[n..]).await.unwrap();
                                    }
                                    buf
                                })
                                .join()
                                .unwrap();
                            }
                            _ => {
                                let mut n = 0;
                                while n < 4 {
                                    n += pcml::select([
                                        b.readable_evt().wrap(|()| 0),
                                        timeout_evt(Duration::from_secs(20))
                                            .wrap(|()| panic!("readable_evt never came")),
                                    ]);
                                    match b.try_read(&mut buf[n..]) {
                                        Ok(k) => n += k,
                                        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                                        Err(e) => panic!("{e}"),
                                    }
                                }
                            }
                        }
                        assert_eq!(&buf, b"abcd", "round {round}");
                    }
                }
            }
        });
        done.store(true, Ordering::Release);
    }
}
