//! Loopback TCP echo through pcml's sockets: from fibers on two procs, from plain OS threads,
//! from pcml async tasks and from tokio; every byte sent comes back, in order.

use std::net::{Shutdown, SocketAddr};

use pcml::net::{TcpListener, TcpStream};

const CLIENTS: usize = 40;
const ROUNDS: usize = 20;

/// The message client `c` sends in round `r`.
fn message(c: usize, r: usize) -> Vec<u8> {
    format!("client {c} round {r};").into_bytes()
}

/// Echoes one connection until end of file (blocking style: fibers or OS threads).
fn echo(conn: TcpStream) {
    let mut buf = [0u8; 512];
    loop {
        let n = conn.read(&mut buf).expect("server read");
        if n == 0 {
            return;
        }
        conn.write_all(&buf[..n]).expect("server write");
    }
}

/// One client's session (blocking style): each round writes a message and reads it back.
fn client(addr: SocketAddr, c: usize) -> usize {
    let s = TcpStream::connect(addr).expect("connect");
    let mut echoed = 0;
    for r in 0..ROUNDS {
        let m = message(c, r);
        s.write_all(&m).expect("client write");
        let mut back = vec![0; m.len()];
        s.read_exact(&mut back).expect("client read");
        assert_eq!(back, m, "client {c} round {r} got someone else's bytes");
        echoed += 1;
    }
    s.shutdown(Shutdown::Write).unwrap();
    assert_eq!(
        s.read(&mut [0; 8]).unwrap(),
        0,
        "server closes after our EOF"
    );
    echoed
}

#[test]
fn fibers_on_two_procs() {
    let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    let total = rt
        .block_on(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let server = pcml::spawn(move || {
                let handlers: Vec<_> = (0..CLIENTS)
                    .map(|_| {
                        let (conn, _) = listener.accept().unwrap();
                        pcml::spawn(move || echo(conn))
                    })
                    .collect();
                for h in handlers {
                    h.join().unwrap();
                }
            });
            let clients: Vec<_> = (0..CLIENTS)
                .map(|c| pcml::spawn(move || client(addr, c)))
                .collect();
            let total: usize = clients.into_iter().map(|h| h.join().unwrap()).sum();
            server.join().unwrap();
            total
        })
        .unwrap();
    assert_eq!(total, CLIENTS * ROUNDS);
}

#[test]
fn os_threads_outside_any_runtime() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let n = 8;
    let server = std::thread::spawn(move || {
        let hs: Vec<_> = (0..n)
            .map(|_| {
                let (conn, _) = listener.accept().unwrap();
                std::thread::spawn(move || echo(conn))
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    });
    let clients: Vec<_> = (0..n)
        .map(|c| std::thread::spawn(move || client(addr, c)))
        .collect();
    let total: usize = clients.into_iter().map(|h| h.join().unwrap()).sum();
    server.join().unwrap();
    assert_eq!(total, n * ROUNDS);
}

/// Echo for async code.
async fn echo_async(conn: TcpStream) {
    let mut buf = [0u8; 512];
    loop {
        let n = conn.read_async(&mut buf).await.expect("server read");
        if n == 0 {
            return;
        }
        conn.write_all_async(&buf[..n]).await.expect("server write");
    }
}

/// A client session for async code.
async fn client_async(addr: SocketAddr, c: usize) -> usize {
    let s = TcpStream::connect_async(addr).await.expect("connect");
    let mut echoed = 0;
    for r in 0..ROUNDS {
        let m = message(c, r);
        s.write_all_async(&m).await.expect("client write");
        let mut back = Vec::new();
        let mut buf = [0u8; 64];
        while back.len() < m.len() {
            let k = s.read_async(&mut buf).await.expect("client read");
            assert!(k > 0, "unexpected EOF");
            back.extend_from_slice(&buf[..k]);
        }
        assert_eq!(back, m);
        echoed += 1;
    }
    s.shutdown(Shutdown::Write).unwrap();
    assert_eq!(s.read_async(&mut [0; 8]).await.unwrap(), 0);
    echoed
}

#[test]
fn pcml_async_tasks() {
    let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    let total = rt
        .block_on(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            let server = pcml::spawn_task(async move {
                let mut handlers = Vec::new();
                for _ in 0..CLIENTS {
                    let (conn, _) = listener.accept_async().await.unwrap();
                    handlers.push(pcml::spawn_task(echo_async(conn)));
                }
                for h in handlers {
                    h.await.unwrap();
                }
            });
            let clients: Vec<_> = (0..CLIENTS)
                .map(|c| pcml::spawn_task(client_async(addr, c)))
                .collect();
            let total: usize = clients.into_iter().map(|h| h.join().unwrap()).sum();
            server.join().unwrap();
            total
        })
        .unwrap();
    assert_eq!(total, CLIENTS * ROUNDS);
}

#[test]
fn tokio_tasks() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let total = rt.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let mut handlers = Vec::new();
            for _ in 0..CLIENTS {
                // The accept event itself, awaited.
                let (conn, _) = listener.accept_evt().await.unwrap();
                handlers.push(tokio::spawn(echo_async(conn)));
            }
            for h in handlers {
                h.await.unwrap();
            }
        });
        let clients: Vec<_> = (0..CLIENTS)
            .map(|c| tokio::spawn(client_async(addr, c)))
            .collect();
        let mut total = 0;
        for h in clients {
            total += h.await.unwrap();
        }
        server.await.unwrap();
        total
    });
    assert_eq!(total, CLIENTS * ROUNDS);
}

#[test]
fn fiber_server_with_os_thread_and_tokio_clients() {
    let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let os_client = std::thread::spawn(move || client(addr, 1000));
    let tokio_client = std::thread::spawn(move || {
        let trt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        trt.block_on(client_async(addr, 2000))
    });
    // The listener was made outside the runtime (fallback driver); fibers use it all the same.
    rt.block_on(move || {
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let (conn, _) = listener.accept().unwrap();
                pcml::spawn(move || echo(conn))
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
    })
    .unwrap();
    assert_eq!(os_client.join().unwrap(), ROUNDS);
    assert_eq!(tokio_client.join().unwrap(), ROUNDS);
}

/// The byte at offset `i` of the test streams below.
fn pattern(i: usize) -> u8 {
    (i % 251) as u8
}

#[test]
fn futures_io_traits_move_a_megabyte_with_backpressure() {
    use futures_io::{AsyncRead, AsyncWrite};
    use std::future::poll_fn;
    use std::pin::Pin;

    const LEN: usize = 1 << 20;
    let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    let got = rt
        .block_on(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            // The writer fills the socket buffers long before the reader starts, so its
            // polls return Pending and it is woken by writability.
            let writer = pcml::spawn_task(async move {
                let mut s = TcpStream::connect_async(addr).await.unwrap();
                let data: Vec<u8> = (0..LEN).map(pattern).collect();
                let mut sent = 0;
                while sent < LEN {
                    let end = (sent + 100_000).min(LEN);
                    let chunk = &data[sent..end];
                    sent += poll_fn(|cx| Pin::new(&mut s).poll_write(cx, chunk))
                        .await
                        .unwrap();
                }
                poll_fn(|cx| Pin::new(&mut s).poll_flush(cx)).await.unwrap();
                poll_fn(|cx| Pin::new(&mut s).poll_close(cx)).await.unwrap();
            });
            let reader = pcml::spawn_task(async move {
                let (s, _) = listener.accept_async().await.unwrap();
                pcml::time::sleep_async(std::time::Duration::from_millis(20)).await;
                // By reference, as a reader half.
                let mut r = &s;
                let mut got = Vec::new();
                let mut buf = [0u8; 7000];
                loop {
                    let n = poll_fn(|cx| Pin::new(&mut r).poll_read(cx, &mut buf))
                        .await
                        .unwrap();
                    if n == 0 {
                        return got;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
            });
            writer.join().unwrap();
            reader.join().unwrap()
        })
        .unwrap();
    assert_eq!(got.len(), LEN);
    assert!(got.iter().enumerate().all(|(i, &b)| b == pattern(i)));
}

#[cfg(feature = "tokio")]
#[test]
fn tokio_traits_copy_echo_and_buffered_lines_in_pcml_tasks() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    let lines = rt
        .block_on(|| {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = listener.local_addr().unwrap();
            // An echo server made of tokio::io::copy over the stream's two halves.
            let server = pcml::spawn_task(async move {
                let (conn, _) = listener.accept_async().await.unwrap();
                let (mut r, mut w) = (&conn, &conn);
                tokio::io::copy(&mut r, &mut w).await.unwrap()
            });
            let client = pcml::spawn_task(async move {
                let s = TcpStream::connect_async(addr).await.unwrap();
                let mut w = &s;
                let mut lines = BufReader::new(&s);
                let mut got = Vec::new();
                for k in 0..100 {
                    // A line in two writes: the reader sees a partial line first.
                    let line = format!("line {k} {}\n", "x".repeat(k * 37));
                    let (a, b) = line.as_bytes().split_at(line.len() / 2);
                    AsyncWriteExt::write_all(&mut w, a).await.unwrap();
                    w.flush().await.unwrap();
                    AsyncWriteExt::write_all(&mut w, b).await.unwrap();
                    let mut back = String::new();
                    lines.read_line(&mut back).await.unwrap();
                    assert_eq!(back, line);
                    got.push(back);
                }
                AsyncWriteExt::shutdown(&mut w).await.unwrap();
                let mut rest = String::new();
                assert_eq!(
                    lines.read_line(&mut rest).await.unwrap(),
                    0,
                    "EOF after shutdown"
                );
                got.len()
            });
            let n = client.join().unwrap();
            let copied = server.join().unwrap();
            assert!(copied > 100 * 37 * 49);
            n
        })
        .unwrap();
    assert_eq!(lines, 100);
}

#[cfg(feature = "tokio")]
#[test]
fn tokio_timers_and_sockets_inside_pcml_tasks_with_a_tokio_handle() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let tokio_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let rt = pcml::Runtime::builder()
        .procs(2)
        .tokio_handle(tokio_rt.handle().clone())
        .build()
        .unwrap();
    let got = rt
        .block_on(|| {
            // tokio's sockets and timer, in pcml tasks on both procs and in a fiber.
            let server = pcml::spawn_task(async {
                let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let addr = l.local_addr().unwrap();
                let serve = pcml::spawn_task(async move {
                    let (mut c, _) = l.accept().await.unwrap();
                    let mut buf = [0; 5];
                    c.read_exact(&mut buf).await.unwrap();
                    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                    c.write_all(&buf).await.unwrap();
                });
                (addr, serve)
            })
            .join()
            .unwrap();
            let (addr, serve) = server;
            let client = pcml::spawn_task(async move {
                let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
                s.write_all(b"hello").await.unwrap();
                let mut back = [0; 5];
                s.read_exact(&mut back).await.unwrap();
                back
            });
            let from_fiber = pcml::spawn(|| {
                // A fiber may block on a tokio future through a pcml task.
                pcml::spawn_task(tokio::time::sleep(std::time::Duration::from_millis(1)))
                    .join()
                    .unwrap();
                "fiber"
            });
            serve.join().unwrap();
            (client.join().unwrap(), from_fiber.join().unwrap())
        })
        .unwrap();
    assert_eq!(got, (*b"hello", "fiber"));
}

#[cfg(feature = "tokio")]
#[test]
fn tokio_without_a_handle_panics_with_tokios_message() {
    let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    let err = rt
        .block_on(|| {
            pcml::spawn_task(async {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            })
            .join()
            .unwrap_err()
        })
        .unwrap();
    let msg = format!("{err:?}");
    assert!(msg.contains("no reactor running"), "{msg}");
}

#[cfg(feature = "tokio")]
#[path = "../../examples/support/hyper_server.rs"]
#[allow(dead_code)] // its tokio half
pub(crate) mod hyper_server;

#[cfg(feature = "tokio")]
#[test]
fn the_hyper_example_serves_keep_alive_requests_on_pcml() {
    use std::io::{Read, Write};

    let (tx, rx) = std::sync::mpsc::channel();
    // The server runs until its runtime is dropped at the end of the process.
    std::thread::spawn(move || {
        pcml::Runtime::builder()
            .procs(2)
            .build()
            .unwrap()
            .block_on(move || {
                let l = TcpListener::bind("127.0.0.1:0").unwrap();
                tx.send(l.local_addr().unwrap()).unwrap();
                pcml::spawn_task(hyper_server::serve_pcml(l))
                    .join()
                    .unwrap();
            })
    });
    let addr = rx.recv().unwrap();
    let clients: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut s = std::net::TcpStream::connect(addr).unwrap();
                s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
                    .unwrap();
                for _ in 0..10 {
                    s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
                    // Read one response: headers, then the 13-byte body.
                    let mut got = Vec::new();
                    let mut byte = [0; 1];
                    while !got.ends_with(b"\r\n\r\n") {
                        s.read_exact(&mut byte).unwrap();
                        got.push(byte[0]);
                    }
                    let head = String::from_utf8(got).unwrap();
                    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
                    assert!(head.contains("content-length: 13\r\n"), "{head}");
                    let mut body = [0; 13];
                    s.read_exact(&mut body).unwrap();
                    assert_eq!(&body, b"Hello, World!");
                }
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
}

/// hyper's header-read timeout on pcml's timer (`sleep_until_async`): a client that sends a
/// whole request is answered, and one that then stops halfway through the next request's head
/// is told so (408) or dropped, so the connection ends instead of waiting forever; on 1 and 2
/// procs.
#[cfg(feature = "tokio")]
#[test]
fn the_hyper_header_read_timeout_ends_a_stalled_connection() {
    use std::io::{Read, Write};
    use std::time::Duration;

    async fn ok(
        _: hyper::Request<hyper::body::Incoming>,
    ) -> Result<hyper::Response<http_body_util::Full<hyper::body::Bytes>>, std::convert::Infallible>
    {
        Ok(hyper::Response::new(http_body_util::Full::new(
            hyper::body::Bytes::from_static(b"ok"),
        )))
    }

    for procs in [1, 2] {
        let (tx, rx) = std::sync::mpsc::channel();
        // The server runs until its runtime is dropped at the end of the process.
        std::thread::spawn(move || {
            pcml::Runtime::builder()
                .procs(procs)
                .build()
                .unwrap()
                .block_on(move || {
                    let l = TcpListener::bind("127.0.0.1:0").unwrap();
                    tx.send(l.local_addr().unwrap()).unwrap();
                    loop {
                        let (conn, _) = l.accept().unwrap();
                        pcml::spawn_task(async move {
                            let _ = hyper::server::conn::http1::Builder::new()
                                .timer(hyper_server::PcmlTimer)
                                .header_read_timeout(Duration::from_millis(200))
                                .serve_connection(
                                    hyper_server::HyperIo(conn),
                                    hyper::service::service_fn(ok),
                                )
                                .await;
                        });
                    }
                })
        });
        let addr = rx.recv().unwrap();
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        // Far beyond the server's timeout: reaching it means the timer never fired.
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut got = Vec::new();
        let mut byte = [0; 1];
        while !got.ends_with(b"\r\n\r\nok") {
            s.read_exact(&mut byte).unwrap();
            got.push(byte[0]);
        }
        assert!(got.starts_with(b"HTTP/1.1 200 OK\r\n"), "procs = {procs}");
        // Half a head, then nothing: the server must end the connection.
        s.write_all(b"GET / HTTP/1.1\r\nHo").unwrap();
        let mut rest = Vec::new();
        match s.read_to_end(&mut rest) {
            Ok(_) => {}
            // A close with unread bytes of ours may reset the connection.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("procs = {procs}: the stalled connection was not ended: {e}"),
        }
        let rest = String::from_utf8_lossy(&rest);
        assert!(
            rest.is_empty() || rest.starts_with("HTTP/1.1 408"),
            "procs = {procs}: {rest}"
        );
    }
}

/// A read that returns less than its buffer marks the socket drained, so the next read waits
/// for the next edge instead of trying the socket first: it must still see data that comes
/// later, and the end of a stream whose last bytes and FIN arrived together (no edge follows
/// them), through `read_async` and through `AsyncRead::poll_read`, on 1 and 2 procs.
#[test]
fn short_reads_then_later_data_and_a_fin_that_came_with_the_last_bytes() {
    use futures_io::AsyncRead;
    use std::future::poll_fn;
    use std::io::Write;
    use std::pin::Pin;

    for procs in [1, 2] {
        for poll_style in [false, true] {
            let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
            let got = rt
                .block_on(move || {
                    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                    let addr = listener.local_addr().unwrap();
                    // A plain OS thread writes: three short pieces, each after the reader has
                    // seen the one before (so each is a separate edge), then the last bytes
                    // and the FIN at once.
                    let (ack_tx, ack_rx) = std::sync::mpsc::channel::<()>();
                    let writer = std::thread::spawn(move || {
                        let mut s = std::net::TcpStream::connect(addr).unwrap();
                        for piece in [&b"ab"[..], b"cde", b"f"] {
                            s.write_all(piece).unwrap();
                            ack_rx.recv().unwrap();
                        }
                        s.write_all(b"gh").unwrap();
                        s.shutdown(Shutdown::Write).unwrap();
                    });
                    let reader = pcml::spawn_task(async move {
                        let (s, _) = listener.accept_async().await.unwrap();
                        let mut r = &s;
                        let mut got = Vec::new();
                        let mut buf = [0u8; 64];
                        loop {
                            let n = if poll_style {
                                poll_fn(|cx| Pin::new(&mut r).poll_read(cx, &mut buf))
                                    .await
                                    .unwrap()
                            } else {
                                s.read_async(&mut buf).await.unwrap()
                            };
                            if n == 0 {
                                return got;
                            }
                            got.extend_from_slice(&buf[..n]);
                            if [2, 5, 6].contains(&got.len()) {
                                // Tell the writer this piece arrived.
                                let _ = ack_tx.send(());
                            }
                        }
                    });
                    let got = reader.join().unwrap();
                    writer.join().unwrap();
                    got
                })
                .unwrap();
            assert_eq!(
                got, b"abcdefgh",
                "procs = {procs}, poll_read = {poll_style}"
            );
        }
    }
}

/// With its only proc busy in one long turn, a runtime's socket still wakes an OS thread that
/// waits on it: the I/O driver's thread looks at the poller when no proc has for a while.
#[test]
fn a_busy_runtime_still_wakes_an_os_thread_reading_its_socket() {
    use std::io::Write;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};

    let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    rt.block_on(|| {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut peer = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (conn, _) = listener.accept().unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let reader = std::thread::spawn(move || {
            let mut got = [0u8; 5];
            conn.read_exact(&mut got).expect("read on an OS thread");
            d.store(true, Ordering::Release);
            got
        });
        // Keep the proc busy (no turn ends) while the reader most likely starts waiting, then
        // until it has its bytes.
        std::thread::sleep(Duration::from_millis(20));
        peer.write_all(b"hello").unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        while !done.load(Ordering::Acquire) {
            assert!(Instant::now() < deadline, "the reader never woke");
            std::hint::spin_loop();
        }
        assert_eq!(&reader.join().unwrap(), b"hello");
    })
    .unwrap();
}

/// A proc asleep in the I/O poller (the runtime has sockets, nothing to run) wakes for work
/// handed to it from outside, whenever it comes.
#[test]
fn a_proc_asleep_in_the_poller_wakes_for_a_message_from_an_os_thread() {
    let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    let got = rt
        .block_on(|| {
            // A registered socket, so the idle proc parks in the poller.
            let _listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let (tx, rx) = pcml::chan::channel::<usize>();
            let sender = std::thread::spawn(move || {
                for i in 0..200 {
                    // From at once to long after the proc has gone to sleep.
                    std::thread::sleep(std::time::Duration::from_micros((i % 7) as u64 * 300));
                    tx.send(i).unwrap();
                }
            });
            let got: Vec<usize> = (0..200).map(|_| rx.recv().unwrap()).collect();
            sender.join().unwrap();
            got
        })
        .unwrap();
    assert_eq!(got, (0..200).collect::<Vec<_>>());
}
