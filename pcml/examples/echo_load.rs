//! Profiling aid: a loopback TCP echo server under load. The server runs on pcml tasks
//! (`pcml`, one task per connection, `read_async`/`write_all_async`) or on tokio (`tokio`,
//! `current_thread` for 1 thread, `multi_thread` otherwise), with `THREADS` procs or workers;
//! the load is 100 client connections on a `current_thread` tokio runtime of its own thread,
//! each writing 64 bytes and reading them back, over and over, for `SECONDS`. Prints round
//! trips per second, and the CPU time the whole process used per round trip (server and load
//! together; the load is the same program for both servers).
//!
//! `cargo run --release -p pcml --example echo_load -- [pcml|tokio] [THREADS] [SECONDS]`

#[path = "support/mi_alloc.rs"]
mod mi_alloc;

/// mimalloc, as the benchmark runs.
#[global_allocator]
static ALLOC: mi_alloc::Natural = mi_alloc::Natural;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CONNECTIONS: usize = 100;

/// CPU time (user and system) this process has used so far.
fn cpu_time() -> Duration {
    // SAFETY: `getrusage` writes one `rusage` into the zeroed value we pass.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
const MSG: usize = 64;

/// The pcml server: one task per connection, until the listener's owner stops accepting.
fn pcml_server(threads: usize, addr_tx: std::sync::mpsc::Sender<SocketAddr>) {
    let rt = pcml::Runtime::builder().procs(threads).build().unwrap();
    rt.block_on(move || {
        let listener = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
        addr_tx.send(listener.local_addr().unwrap()).unwrap();
        let conns: Vec<_> = (0..CONNECTIONS)
            .map(|_| {
                let (conn, _) = listener.accept().unwrap();
                pcml::spawn_task(async move {
                    let mut buf = [0u8; 4096];
                    loop {
                        let n = conn.read_async(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        if conn.write_all_async(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                })
            })
            .collect();
        for c in conns {
            c.join().unwrap();
        }
    })
    .unwrap();
}

/// The tokio server, the same program.
fn tokio_server(threads: usize, addr_tx: std::sync::mpsc::Sender<SocketAddr>) {
    let rt = if threads == 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_io()
            .build()
    }
    .unwrap();
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        addr_tx.send(listener.local_addr().unwrap()).unwrap();
        let mut conns = Vec::new();
        for _ in 0..CONNECTIONS {
            let (mut conn, _) = listener.accept().await.unwrap();
            conns.push(tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                loop {
                    let n = conn.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    if conn.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }));
        }
        for c in conns {
            c.await.unwrap();
        }
    });
}

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "pcml".into());
    let threads: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let secs: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let server = match which.as_str() {
        "pcml" => std::thread::spawn(move || pcml_server(threads, addr_tx)),
        "tokio" => std::thread::spawn(move || tokio_server(threads, addr_tx)),
        _ => panic!("server: pcml or tokio"),
    };
    let addr = addr_rx.recv().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let trips = Arc::new(AtomicU64::new(0));
    let load = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let elapsed = load.block_on(async {
        let clients: Vec<_> = (0..CONNECTIONS)
            .map(|_| {
                let (stop, trips) = (stop.clone(), trips.clone());
                tokio::spawn(async move {
                    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
                    s.set_nodelay(true).unwrap();
                    let msg = [7u8; MSG];
                    let mut back = [0u8; MSG];
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        s.write_all(&msg).await.unwrap();
                        s.read_exact(&mut back).await.unwrap();
                        n += 1;
                    }
                    trips.fetch_add(n, Ordering::Relaxed);
                })
            })
            .collect();
        let (start, cpu) = (Instant::now(), cpu_time());
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
        stop.store(true, Ordering::Relaxed);
        for c in clients {
            c.await.unwrap();
        }
        (start.elapsed(), cpu_time() - cpu)
    });
    let (elapsed, cpu) = elapsed;
    server.join().unwrap();
    let n = trips.load(Ordering::Relaxed);
    println!(
        "{which} {threads} threads: {:.0} round trips/s ({n} in {elapsed:.2?}), {:.2} us of CPU \
         per round trip",
        n as f64 / elapsed.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / n as f64
    );
}
