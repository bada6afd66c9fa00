//! hyper on pcml as a server program uses it: a few hundred requests from plain std clients
//! on keep-alive and one-shot connections, request bodies streamed in pieces, and a graceful
//! shutdown that stops accepting, lets the request in flight finish and then ends every
//! connection.

use std::future::IntoFuture;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use pcml::chan::Chan;
use pcml::net::TcpListener;

use super::echo::hyper_server::{HyperIo, PcmlTimer};
use crate::common::watchdog;

/// Answers with the length of the request's body and its bytes' sum, read as it streams in.
async fn measure(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let mut body = req.into_body();
    let (mut len, mut sum) = (0usize, 0u64);
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            len += data.len();
            sum += data.iter().map(|&b| u64::from(b)).sum::<u64>();
        }
    }
    Ok(Response::new(Full::new(Bytes::from(format!(
        "{len} {sum}"
    )))))
}

/// Reads one response from `s`: its head and its `content-length` body.
fn read_response(s: &mut std::net::TcpStream) -> (String, Vec<u8>) {
    let mut head = Vec::new();
    let mut byte = [0; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .expect("a content-length")
        .trim()
        .parse()
        .unwrap();
    let mut body = vec![0; len];
    s.read_exact(&mut body).unwrap();
    (head, body)
}

/// Sends a POST whose body of `len` bytes goes in chunks of chunked encoding, a pause between
/// some, and checks the answer.
fn post_chunked(s: &mut std::net::TcpStream, len: usize, close: bool) {
    let conn = if close { "close" } else { "keep-alive" };
    write!(
        s,
        "POST /m HTTP/1.1\r\nHost: x\r\nConnection: {conn}\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .unwrap();
    let body: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
    for (k, chunk) in body.chunks(1000).enumerate() {
        write!(s, "{:x}\r\n", chunk.len()).unwrap();
        s.write_all(chunk).unwrap();
        s.write_all(b"\r\n").unwrap();
        if k == 1 {
            s.flush().unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    s.write_all(b"0\r\n\r\n").unwrap();
    let (head, got) = read_response(s);
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    let sum: u64 = body.iter().map(|&b| u64::from(b)).sum();
    assert_eq!(String::from_utf8(got).unwrap(), format!("{len} {sum}"));
}

/// Serves `listener` until `stop` is sent, then shuts every connection down gracefully and
/// returns how many connections it served.
async fn serve_until(listener: TcpListener, stop: Chan<()>) -> usize {
    let live = Arc::new(AtomicUsize::new(0));
    let (closing, ended) = (pcml::CVar::new(), Chan::<()>::new());
    let mut served = 0;
    loop {
        let next = pcml::select_async! {
            c = listener.accept_evt() => Some(c.unwrap().0),
            () = stop.recv_evt() => None,
        };
        let Some(conn) = next else { break };
        served += 1;
        live.fetch_add(1, Ordering::AcqRel);
        let (closing, ended, live) = (closing.clone(), ended.clone(), live.clone());
        pcml::spawn_task(async move {
            let served = http1::Builder::new()
                .timer(PcmlTimer)
                .serve_connection(HyperIo(conn), service_fn(measure));
            let mut served = std::pin::pin!(served);
            let shut = tokio::select! {
                r = served.as_mut() => Some(r),
                () = closing.wait_evt().into_future() => None,
            };
            if shut.is_none() {
                served.as_mut().graceful_shutdown();
                let _ = served.await;
            }
            live.fetch_sub(1, Ordering::AcqRel);
            ended.send_async(()).await;
        });
    }
    drop(listener);
    closing.signal();
    // Every connection ends, those idle at once, one mid-request after its response.
    while live.load(Ordering::Acquire) > 0 {
        ended.recv_evt().await;
    }
    served
}

fn start(procs: usize) -> (SocketAddr, Chan<()>, std::thread::JoinHandle<usize>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        pcml::Runtime::builder()
            .procs(procs)
            .build()
            .unwrap()
            .block_on(move || {
                let l = TcpListener::bind("127.0.0.1:0").unwrap();
                let stop = Chan::<()>::new();
                tx.send((l.local_addr().unwrap(), stop.clone())).unwrap();
                pcml::spawn_task(serve_until(l, stop)).join().unwrap()
            })
            .unwrap()
    });
    let (addr, stop) = rx.recv().unwrap();
    (addr, stop, server)
}

fn connect(addr: SocketAddr) -> std::net::TcpStream {
    let s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.set_nodelay(true).unwrap();
    s
}

#[test]
fn hundreds_of_requests_keep_alive_and_not_with_streamed_bodies() {
    for procs in [1, 2, 4] {
        let done = watchdog("hyper requests");
        let (addr, stop, server) = start(procs);
        let clients: Vec<_> = (0..4)
            .map(|c| {
                std::thread::spawn(move || {
                    // 40 requests on one keep-alive connection...
                    let mut s = connect(addr);
                    for r in 0..40 {
                        if r % 4 == 0 {
                            post_chunked(&mut s, 3000 + r, false);
                        } else {
                            s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
                            let (head, body) = read_response(&mut s);
                            assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
                            assert_eq!(body, b"0 0");
                        }
                    }
                    // ... then 30 on a connection each, closed by the server.
                    for r in 0..30 {
                        let mut s = connect(addr);
                        if r % 3 == c % 3 {
                            post_chunked(&mut s, 2500, true);
                        } else {
                            s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                                .unwrap();
                            let (head, _) = read_response(&mut s);
                            assert!(head.contains("connection: close"), "{head}");
                        }
                        let mut rest = Vec::new();
                        s.read_to_end(&mut rest).unwrap();
                        assert!(rest.is_empty(), "the server closed after one response");
                    }
                })
            })
            .collect();
        for c in clients {
            c.join().unwrap();
        }
        let waiter = std::thread::spawn(move || server.join().unwrap());
        stop.send(());
        assert_eq!(waiter.join().unwrap(), 4 * 31, "on {procs} procs");
        done.store(true, Ordering::Release);
    }
}

#[test]
fn a_graceful_shutdown_finishes_the_request_in_flight_then_closes() {
    for procs in [1, 2] {
        let done = watchdog("graceful shutdown");
        let (addr, stop, server) = start(procs);
        // An idle keep-alive connection, and one half-way through a request.
        let mut idle = connect(addr);
        idle.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        read_response(&mut idle);
        let mut busy = connect(addr);
        busy.write_all(
            b"POST /m HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(20));
        stop.send(());
        // The idle connection is closed; the busy one's request is still answered.
        let mut rest = Vec::new();
        idle.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
        busy.write_all(b"2\r\nde\r\n0\r\n\r\n").unwrap();
        let (head, body) = read_response(&mut busy);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        let sum: u64 = b"abcde".iter().map(|&b| u64::from(b)).sum();
        assert_eq!(String::from_utf8(body).unwrap(), format!("5 {sum}"));
        rest.clear();
        busy.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
        assert_eq!(server.join().unwrap(), 2);
        // The listener is gone.
        assert!(std::net::TcpStream::connect(addr).is_err());
        done.store(true, Ordering::Release);
    }
}
