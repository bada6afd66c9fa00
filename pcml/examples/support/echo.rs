//! A loopback TCP echo server under load, shared by `examples/echo_load.rs` and the
//! benchmark's `echo` program (included by `#[path]`). The server runs on pcml tasks (one task
//! per connection, `read_async`/`write_all_async`) or on tokio (the same program; a
//! `current_thread` runtime for 1 thread, `multi_thread` otherwise); the load is
//! [`CONNECTIONS`] client connections driven from one thread of this process without a
//! runtime (a `mio` poll, edge-triggered, one read and one write call per round trip), each
//! writing [`MSG`] bytes and reading them back, over and over, for the time asked. Once the
//! load stops, its clients close their connections and the server ends.
//!
//! The load is lean so that the server can set the figure: with a tokio runtime driving the
//! clients, the load's thread was on a core 92-94% of each run and waited for the server's
//! answers 2%, whichever server answered. Besides the round trips, [`measure`] gives the CPU
//! time the server's threads used, which the load's speed cannot bound.

use std::net::SocketAddr;
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
    /// The CPU time the load's own thread used meanwhile (zero where it cannot be read). Over
    /// `elapsed`, the share of the run the load spent on a core.
    pub load_cpu: Duration,
    /// The time the load's thread meanwhile waited, runnable, for a core (zero where it
    /// cannot be read). With `load_cpu`, near all of `elapsed`: the load never waited for
    /// the server, it is the bottleneck (its own CPU time, or the machine's sharing).
    pub load_wait: Duration,
    /// The CPU time (user and system) the server's threads used, from the server's start to
    /// its end: the process's CPU time over the measurement less the load thread's
    /// (`getrusage`; the calling thread only waits meanwhile). Zero where it cannot be read. Over `trips`, what
    /// a round trip cost the server, a figure the load's speed does not bound.
    pub server_cpu: Duration,
    /// The part of `server_cpu` spent in user space (the rest is the kernel's: system calls,
    /// loopback TCP, wake-ups): what a server's own code can save.
    pub server_user: Duration,
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

/// The user and system CPU time so far of the calling thread (`RUSAGE_THREAD`) or of every
/// thread this process has had, ended ones included (`RUSAGE_SELF`); zero where it cannot be
/// read.
fn cpu_times(who: libc::c_int) -> (Duration, Duration) {
    // SAFETY: `getrusage` writes one `rusage` into the zeroed value we pass.
    let (rc, ru) = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        let rc = libc::getrusage(who, &mut ru);
        (rc, ru)
    };
    if rc != 0 {
        return (Duration::ZERO, Duration::ZERO);
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// The time the load waits, with no answer from any connection, before it gives up: a
/// server that stalls fails the measurement instead of hanging it.
const STALL: Duration = Duration::from_secs(30);

/// One client connection of the load.
struct Client {
    stream: mio::net::TcpStream,
    /// The message in flight (every byte the same: the count of round trips so far, mod 251).
    msg: [u8; MSG],
    /// Bytes of `msg` written so far (`MSG`: all of it, waiting for the answer).
    sent: usize,
    /// Bytes of the answer read so far.
    got: usize,
    back: [u8; MSG],
    /// Round trips completed.
    trips: u64,
    /// Done: deregistered, events left for it are ignored.
    closed: bool,
}

impl Client {
    fn start_trip(&mut self) {
        self.msg = [(self.trips % 251) as u8; MSG];
        self.sent = 0;
        self.got = 0;
    }

    /// Writes what is left of the message; false if the socket is full (a writable event
    /// resumes it).
    fn write(&mut self) -> std::io::Result<bool> {
        use std::io::Write;
        while self.sent < MSG {
            match self.stream.write(&self.msg[self.sent..]) {
                Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Reads what has come of the answer; true once all of it has (checked).
    fn read(&mut self) -> std::io::Result<bool> {
        use std::io::Read;
        // Only the answer's missing bytes are read: the server has nothing more to send until
        // the next message, so a full answer means the socket is drained, and no read needs
        // to fail with `WouldBlock` to rearm the edge-triggered registration.
        while self.got < MSG {
            match self.stream.read(&mut self.back[self.got..]) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => self.got += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if self.back != self.msg {
            return Err(std::io::Error::other("got other bytes back"));
        }
        self.trips += 1;
        Ok(true)
    }
}

/// The load: [`CONNECTIONS`] clients to `addr`, each writing [`MSG`] bytes and reading them
/// back, over and over, for `secs` seconds (or, with `per_client`, until each has made that
/// many round trips); returns the round trips and the time they took. One thread, no
/// runtime: a `mio` poll of edge-triggered registrations, one read and one write call per
/// round trip on a buffer of each connection, so that a round trip costs the load as little
/// as the kernel allows and the server, not the load, sets the figure where it can.
pub fn load(
    addr: SocketAddr,
    secs: f64,
    per_client: Option<u64>,
) -> Result<(u64, Duration), String> {
    use mio::{Events, Interest, Poll, Token};
    fn io(what: &str) -> impl Fn(std::io::Error) -> String + '_ {
        move |e| format!("{what}: {e}")
    }
    let mut poll = Poll::new().map_err(io("poll"))?;
    let mut clients = Vec::with_capacity(CONNECTIONS);
    for c in 0..CONNECTIONS {
        // A blocking connect: the kernel completes it from the listener's backlog.
        let s = std::net::TcpStream::connect(addr).map_err(io(&format!("client {c}: connect")))?;
        s.set_nodelay(true).map_err(io("nodelay"))?;
        s.set_nonblocking(true).map_err(io("nonblocking"))?;
        let mut stream = mio::net::TcpStream::from_std(s);
        poll.registry()
            .register(
                &mut stream,
                Token(c),
                Interest::READABLE | Interest::WRITABLE,
            )
            .map_err(io("register"))?;
        clients.push(Client {
            stream,
            msg: [0; MSG],
            sent: 0,
            got: 0,
            back: [0; MSG],
            trips: 0,
            closed: false,
        });
    }
    let start = Instant::now();
    let deadline = per_client
        .is_none()
        .then(|| start + Duration::from_secs_f64(secs));
    let limit = per_client.unwrap_or(u64::MAX).max(1);
    for (c, client) in clients.iter_mut().enumerate() {
        client.start_trip();
        client.write().map_err(io(&format!("client {c}")))?;
    }
    let mut open = CONNECTIONS;
    let mut stopping = false;
    let mut events = Events::with_capacity(CONNECTIONS);
    while open > 0 {
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            stopping = true;
        }
        let wait = match deadline {
            Some(d) if !stopping => (d - now).min(STALL),
            _ => STALL,
        };
        match poll.poll(&mut events, Some(wait)) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => r.map_err(io("poll"))?,
        }
        if events.is_empty() && wait == STALL {
            return Err(format!("no answer from the server for {STALL:?}"));
        }
        for ev in events.iter() {
            let c = ev.token().0;
            let client = &mut clients[c];
            if client.closed {
                continue;
            }
            let err = |e| format!("client {c}: {e}");
            if client.sent < MSG && !client.write().map_err(err)? {
                continue;
            }
            if !client.read().map_err(err)? {
                continue;
            }
            // At least one round trip each, even if the stop came first (a loaded machine
            // may take the whole run to connect): a run with none would check nothing.
            if client.trips >= limit || stopping {
                // The stream itself is closed when `clients` is dropped.
                client.closed = true;
                open -= 1;
                poll.registry()
                    .deregister(&mut client.stream)
                    .map_err(io("deregister"))?;
                continue;
            }
            client.start_trip();
            client.write().map_err(err)?;
        }
    }
    let elapsed = start.elapsed();
    Ok((clients.iter().map(|c| c.trips).sum(), elapsed))
}

/// Runs `server` under the load for `secs` seconds, or, with `per_client`, until each client has
/// made that many round trips.
pub fn measure(server: Server, secs: f64, per_client: Option<u64>) -> Result<Measured, String> {
    let cpu_then = cpu_times(libc::RUSAGE_SELF);
    let load_then = thread_schedstat();
    let load_cpu_then = cpu_times(libc::RUSAGE_THREAD);
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
    let loaded = load(addr, secs, per_client);
    let load_cpu_now = cpu_times(libc::RUSAGE_THREAD);
    let (load_cpu, load_wait) = {
        let (run, wait) = thread_schedstat();
        (run - load_then.0, wait - load_then.1)
    };
    // `load` has closed its connections (dropped with its clients), whether it failed or not,
    // so the server ends either way.
    let served = server
        .join()
        .map_err(|_| "the server panicked".to_string())?;
    // The process's CPU time less the load thread's, user and system apart.
    let cpu_now = cpu_times(libc::RUSAGE_SELF);
    let server = |now: Duration, then: Duration, load_now: Duration, load_then: Duration| {
        (now.saturating_sub(then)).saturating_sub(load_now.saturating_sub(load_then))
    };
    let server_user = server(cpu_now.0, cpu_then.0, load_cpu_now.0, load_cpu_then.0);
    let server_cpu = server_user + server(cpu_now.1, cpu_then.1, load_cpu_now.1, load_cpu_then.1);
    let (trips, elapsed) = loaded?;
    served?;
    Ok(Measured {
        trips,
        elapsed,
        load_cpu,
        load_wait,
        server_cpu,
        server_user,
    })
}
