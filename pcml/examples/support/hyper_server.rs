//! The hyper server of `examples/hyper_server.rs`, on pcml and on tokio: shared by that
//! example, the benchmark's `http` program and the `net` tests (included by `#[path]`), so
//! that the example alone sets a global allocator (mimalloc, as the benchmark runs).
//!
//! hyper runs on any runtime that gives it three things, through its `rt` traits: I/O
//! (`hyper::rt::Read`/`Write`, here over [`pcml::net::TcpStream`]'s tokio traits), a timer
//! (`hyper::rt::Timer`, here pcml's [`sleep_until_async`](pcml::time::sleep_until_async), used
//! for the header-read timeout), and for HTTP/2 an executor (`hyper::rt::Executor`, here
//! [`pcml::spawn_task`]). Each connection is one pcml task.

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};

/// The service: a fixed greeting, as in the usual hello-world server benchmarks.
async fn hello(_: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    Ok(Response::new(Full::new(Bytes::from_static(
        b"Hello, World!",
    ))))
}

/// Adapts a stream with tokio's I/O traits to hyper's (what `hyper_util::rt::TokioIo` does).
pub struct HyperIo<S>(pub S);

impl<S: tokio::io::AsyncRead + Unpin> hyper::rt::Read for HyperIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        // SAFETY: tokio's `ReadBuf` never de-initializes memory, and only the bytes it reports
        // filled are then marked filled in hyper's buffer.
        let n = unsafe {
            let mut tbuf = tokio::io::ReadBuf::uninit(buf.as_mut());
            match tokio::io::AsyncRead::poll_read(Pin::new(&mut self.0), cx, &mut tbuf) {
                Poll::Ready(Ok(())) => tbuf.filled().len(),
                other => return other,
            }
        };
        // SAFETY: the first `n` bytes were just filled.
        unsafe { buf.advance(n) };
        Poll::Ready(Ok(()))
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> hyper::rt::Write for HyperIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        tokio::io::AsyncWrite::poll_write(Pin::new(&mut self.0), cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        tokio::io::AsyncWrite::poll_write_vectored(Pin::new(&mut self.0), cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        tokio::io::AsyncWrite::is_write_vectored(&self.0)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        tokio::io::AsyncWrite::poll_flush(Pin::new(&mut self.0), cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        tokio::io::AsyncWrite::poll_shutdown(Pin::new(&mut self.0), cx)
    }
}

/// hyper's timer on pcml's timers.
#[derive(Clone, Debug)]
pub struct PcmlTimer;

/// A pcml sleep as hyper's `Sleep`.
struct PcmlSleep(pcml::time::Sleep);

impl Future for PcmlSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx)
    }
}

impl hyper::rt::Sleep for PcmlSleep {}

impl hyper::rt::Timer for PcmlTimer {
    fn sleep(&self, d: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(PcmlSleep(pcml::time::sleep_async(d)))
    }

    // hyper asks for a sleep until an instant it has just read (each request's header-read
    // timeout): taking the instant as it is reads no clock again.
    fn sleep_until(&self, at: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(PcmlSleep(pcml::time::sleep_until_async(at)))
    }

    // Moves the deadline of a sleep of ours in place, rather than boxing a new one.
    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, at: Instant) {
        match sleep.as_mut().downcast_mut_pin::<PcmlSleep>() {
            Some(mine) => Pin::new(&mut mine.get_mut().0).reset(at),
            None => *sleep = self.sleep_until(at),
        }
    }
}

/// hyper's executor (HTTP/2 spawns its streams' work through it) on pcml tasks.
#[derive(Clone, Debug)]
#[allow(dead_code)] // `http2::Builder::new(PcmlExecutor)`; this server speaks HTTP/1.1
pub struct PcmlExecutor;

impl<F> hyper::rt::Executor<F> for PcmlExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        pcml::spawn_task(fut);
    }
}

/// Serves hello-world on one connection until the client leaves, with `timer` for hyper's
/// timeouts (the same code for both runtimes, so that the bench compares runtimes only).
async fn serve_conn<S>(conn: S, timer: impl hyper::rt::Timer + Send + Sync + 'static)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let served = http1::Builder::new()
        .timer(timer)
        .header_read_timeout(Duration::from_secs(30))
        .serve_connection(HyperIo(conn), service_fn(hello));
    match served.await {
        // A client that leaves between requests is not an error.
        Err(e) if !e.is_incomplete_message() => {
            eprintln!("hyper_server: connection error: {e}");
        }
        _ => {}
    }
}

/// Serves hello-world on `listener` with pcml tasks, one per connection, until the listener
/// fails. Call it from a pcml task or fiber.
pub async fn serve_pcml(listener: pcml::net::TcpListener) {
    loop {
        let (conn, _) = match listener.accept_async().await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("hyper_server: accept failed: {e}");
                return;
            }
        };
        let _ = conn.set_nodelay(true);
        pcml::spawn_task(serve_conn(conn, PcmlTimer));
    }
}

/// The tokio runtime the server runs on for the comparison: `current_thread` for 0 workers
/// (the peer of one proc), else `multi_thread` with `workers` worker threads.
pub fn tokio_runtime(workers: usize) -> std::io::Result<tokio::runtime::Runtime> {
    if workers == 0 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
    }
}

/// The same server on tokio (its sockets, its tasks, its timer).
pub async fn serve_tokio(listener: tokio::net::TcpListener) {
    loop {
        let (conn, _) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("hyper_server: accept failed: {e}");
                return;
            }
        };
        let _ = conn.set_nodelay(true);
        tokio::spawn(serve_conn(conn, TokioTimer));
    }
}

/// hyper's timer on tokio's, for the comparison.
#[derive(Clone, Debug)]
pub struct TokioTimer;

struct TokioSleep(Pin<Box<tokio::time::Sleep>>);

impl Future for TokioSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0.as_mut().poll(cx)
    }
}

impl hyper::rt::Sleep for TokioSleep {}

impl hyper::rt::Timer for TokioTimer {
    fn sleep(&self, d: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(TokioSleep(Box::pin(tokio::time::sleep(d))))
    }

    fn sleep_until(&self, at: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        Box::pin(TokioSleep(Box::pin(tokio::time::sleep_until(at.into()))))
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, at: Instant) {
        match sleep.as_mut().downcast_mut_pin::<TokioSleep>() {
            Some(mine) => mine.get_mut().0.as_mut().reset(at.into()),
            None => *sleep = self.sleep_until(at),
        }
    }
}
