//! A loopback TCP echo server under load, shared by `examples/echo_load.rs` and the
//! benchmark's `echo` program (included by `#[path]`). The server runs on pcml tasks (one task
//! per connection, `read_async`/`write_all_async`) or on tokio (the same program; a
//! `current_thread` runtime for 1 thread, `multi_thread` otherwise); the load is
//! [`CONNECTIONS`] client connections on a `current_thread` tokio runtime of its own thread,
//! each writing [`MSG`] bytes and reading them back, over and over, for the time asked. Once
//! the load stops, its clients close their connections and the server ends.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Client connections.
pub const CONNECTIONS: usize = 100;
/// Bytes per message.
pub const MSG: usize = 64;

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// pcml tasks and sockets, on a runtime of this many procs.
    Pcml(usize),
    /// tokio, on this many threads (1: `current_thread`).
    Tokio(usize),
}

/// The pcml server: accepts [`CONNECTIONS`] connections and echoes each until it closes.
fn pcml_server(procs: usize, addr_tx: std::sync::mpsc::Sender<SocketAddr>) -> Result<(), String> {
    let rt = pcml::Runtime::builder()
        .procs(procs)
        .build()
        .map_err(|e| e.to_string())?;
    rt.block_on(move || -> Result<(), String> {
        let listener = pcml::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let _ = addr_tx.send(listener.local_addr().map_err(|e| e.to_string())?);
        let mut conns = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            let (conn, _) = listener.accept().map_err(|e| e.to_string())?;
            conns.push(pcml::spawn_task(async move {
                let mut buf = [0u8; 4096];
                loop {
                    let n = conn.read_async(&mut buf).await.unwrap_or(0);
                    if n == 0 || conn.write_all_async(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }));
        }
        for c in conns {
            c.join().map_err(|e| e.to_string())?;
        }
        Ok(())
    })
    .map_err(|e| e.to_string())?
}

/// The tokio server, the same program.
fn tokio_server(
    threads: usize,
    addr_tx: std::sync::mpsc::Sender<SocketAddr>,
) -> Result<(), String> {
    let rt = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_io()
            .build()
    }
    .map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| e.to_string())?;
        let _ = addr_tx.send(listener.local_addr().map_err(|e| e.to_string())?);
        let mut conns = Vec::with_capacity(CONNECTIONS);
        for _ in 0..CONNECTIONS {
            let (mut conn, _) = listener.accept().await.map_err(|e| e.to_string())?;
            conns.push(tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                loop {
                    let n = conn.read(&mut buf).await.unwrap_or(0);
                    if n == 0 || conn.write_all(&buf[..n]).await.is_err() {
                        return;
                    }
                }
            }));
        }
        for c in conns {
            c.await.map_err(|e| e.to_string())?;
        }
        Ok(())
    })
}

/// What [`measure`] saw.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// Round trips the clients completed (each checked: the bytes came back as sent).
    pub trips: u64,
    /// The time they took.
    pub elapsed: Duration,
    /// The CPU time the load's own thread used meanwhile (zero where it cannot be read): the
    /// rest of the process's CPU time is the server's. Over `elapsed`, the share of the run
    /// the load spent on a core.
    pub load_cpu: Duration,
    /// The time the load's thread meanwhile waited, runnable, for a core (zero where it
    /// cannot be read). With `load_cpu`, near all of `elapsed`: the load never waited for
    /// the server, it is the bottleneck (its own CPU time, or the machine's sharing).
    pub load_wait: Duration,
}

/// The time the calling thread has spent on a core so far and the time it has waited,
/// runnable, for one (Linux's `/proc/thread-self/schedstat`; zero where it cannot be read).
fn thread_schedstat() -> (Duration, Duration) {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let mut fields = text
        .split_whitespace()
        .map(|f| Duration::from_nanos(f.parse().unwrap_or(0)));
    let run = fields.next().unwrap_or_default();
    (run, fields.next().unwrap_or_default())
}

/// Runs `server` under the load for `secs` seconds, or, with `per_client`, until each client has
/// made that many round trips.
pub fn measure(server: Server, secs: f64, per_client: Option<u64>) -> Result<Measured, String> {
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || match server {
        Server::Pcml(procs) => pcml_server(procs, addr_tx),
        Server::Tokio(threads) => tokio_server(threads, addr_tx),
    });
    let Ok(addr) = addr_rx.recv() else {
        return Err(match server.join() {
            Ok(Err(e)) => format!("the server did not start: {e}"),
            _ => "the server did not start".to_string(),
        });
    };
    let stop = Arc::new(AtomicBool::new(false));
    let trips = Arc::new(AtomicU64::new(0));
    let load = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let load_then = thread_schedstat();
    let loaded = load.block_on(async {
        let clients: Vec<_> = (0..CONNECTIONS)
            .map(|c| {
                let (stop, trips) = (stop.clone(), trips.clone());
                tokio::spawn(async move {
                    let mut s = tokio::net::TcpStream::connect(addr)
                        .await
                        .map_err(|e| format!("client {c}: connect: {e}"))?;
                    s.set_nodelay(true).map_err(|e| e.to_string())?;
                    let mut back = [0u8; MSG];
                    let mut n: u64 = 0;
                    let limit = per_client.unwrap_or(u64::MAX);
                    // At least one round trip each, even if the stop came first (a loaded
                    // machine may take the whole run to connect): a run with none would
                    // check nothing.
                    while n < limit && (n == 0 || !stop.load(Ordering::Relaxed)) {
                        let msg = [(n % 251) as u8; MSG];
                        s.write_all(&msg)
                            .await
                            .map_err(|e| format!("client {c}: {e}"))?;
                        s.read_exact(&mut back)
                            .await
                            .map_err(|e| format!("client {c}: {e}"))?;
                        if back != msg {
                            return Err(format!("client {c}: got other bytes back"));
                        }
                        n += 1;
                    }
                    trips.fetch_add(n, Ordering::Relaxed);
                    Ok::<(), String>(())
                })
            })
            .collect();
        let start = Instant::now();
        if per_client.is_none() {
            tokio::time::sleep(Duration::from_secs_f64(secs)).await;
            stop.store(true, Ordering::Relaxed);
        }
        for c in clients {
            c.await.map_err(|e| e.to_string())??;
        }
        Ok::<Duration, String>(start.elapsed())
    });
    let (load_cpu, load_wait) = {
        let (run, wait) = thread_schedstat();
        (run - load_then.0, wait - load_then.1)
    };
    // Dropping the runtime closes any connection a failed client left open, so the server
    // ends either way.
    drop(load);
    let served = server
        .join()
        .map_err(|_| "the server panicked".to_string())?;
    let elapsed = loaded?;
    served?;
    Ok(Measured {
        trips: trips.load(Ordering::Relaxed),
        elapsed,
        load_cpu,
        load_wait,
    })
}
