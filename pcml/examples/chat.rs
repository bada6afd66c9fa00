//! A TCP chat server: each client is a fiber, the room is a `Multicast`, and a client that
//! says nothing for a while is shown the door. It is also a model of a server that one bad
//! client cannot take down: lines are limited in length, and each client's outbound backlog is
//! bounded, with a slow-consumer policy.
//!
//! Each client's fiber waits, in one `select`, on four events: a line from its socket
//! (`read_line_evt`: a line that arrives in pieces is assembled meanwhile), the room's port
//! (someone else said something), an idle deadline (`at_time_evt`, moved forward whenever the
//! client speaks), and the server's stop signal. Whichever comes first is handled; the others
//! are withdrawn and offered again on the next turn. Nothing is lost by losing a turn: a
//! partial line stays in the socket's buffer, unread room messages stay in the port.
//!
//! # Limits
//! - A line longer than [`MAX_LINE`] bytes ends the client's session: it is told so, the room
//!   hears it was dropped, and the server buffered at most the limit plus one read chunk.
//! - Each client has a writer fiber that owns the socket's sending side, fed through a queue
//!   of at most [`OUTBOX_BYTES`] bytes. A client that does not read fills its socket, then its
//!   queue; at the limit it is dropped (the log and the room say so), so a slow consumer costs
//!   the server a bounded amount of memory and never delays the others: the client fiber
//!   itself never blocks on a write.
//!
//! Run: `cargo run --release -p pcml --example chat -- 127.0.0.1:7878 60`, then connect a few
//! terminals with `nc 127.0.0.1 7878` (the second argument is the idle limit in seconds).
//! `/quit` leaves. `pcml/tests/net/chat.rs` runs `serve` with loopback clients.
//!

use std::io::ErrorKind;
use std::net::Shutdown;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use pcml::multicast::Port;
use pcml::net::{TcpListener, TcpStream};
use pcml::sync_var::CVar;
use pcml::time::at_time_evt;
use pcml::{Multicast, select};

/// The longest line a client may send, in bytes (with its line end).
pub const MAX_LINE: usize = 4096;

/// The most bytes queued for one client before it is dropped as a slow consumer.
pub const OUTBOX_BYTES: usize = 64 * 1024;

/// Bytes queued for all clients' writers now, and the most ever: how much memory slow
/// consumers hold (the flood test reads it).
pub static QUEUED: AtomicUsize = AtomicUsize::new(0);
/// The high-water mark of [`QUEUED`].
pub static QUEUED_MAX: AtomicUsize = AtomicUsize::new(0);

/// A message in the room: who said it (`None`: the server) and what.
#[derive(Clone, Debug)]
pub struct Said {
    pub from: Option<usize>,
    pub text: Arc<str>,
}

/// Runs the chat room on `listener` until `stop` is signalled: then every client is told the
/// server is closing, and `serve` returns once all their fibers have ended, with the number of
/// clients served. Call it from a fiber.
pub fn serve(listener: TcpListener, idle: Duration, stop: CVar) -> usize {
    let room = Multicast::<Said>::new();
    let mut clients = Vec::new();
    loop {
        let accepted = select([
            listener.accept_evt().wrap(Some),
            stop.wait_evt().wrap(|()| None),
        ]);
        let Some(accepted) = accepted else { break };
        let conn = match accepted {
            Ok((conn, _)) => conn,
            Err(e) => {
                eprintln!("chat: accept failed: {e}");
                continue;
            }
        };
        let id = clients.len();
        // Join the room, then announce the newcomer (it skips messages from itself). Both
        // happen here, in accept order, so a client accepted later never hears an earlier
        // client's arrival.
        let port = room.port();
        room.send(Said {
            from: Some(id),
            text: format!("* guest{id} joined").into(),
        });
        let (room, stop) = (room.clone(), stop.clone());
        clients.push(pcml::spawn(move || {
            client(conn, id, room, port, idle, stop)
        }));
    }
    let served = clients.len();
    for c in clients {
        let _ = c.join();
    }
    served
}

/// What woke a client's fiber.
enum Turn {
    Line(std::io::Result<String>),
    Room(Said),
    Idle,
    Stop,
}

/// Why a session ended.
enum End {
    /// Say this to the client, then close.
    Bye(&'static str),
    /// Closed, or an error: nothing to say.
    Gone,
    /// Dropped by the server: say this to the client (if it still reads) and to the room.
    Dropped(String),
}

/// A client's outbound queue: a writer fiber sends what is queued, in order; `push` refuses
/// what would take the queue past [`OUTBOX_BYTES`].
struct Outbox {
    tx: pcml::chan::Sender<Queued>,
    /// Bytes queued and not yet written: added by `push`, subtracted by the writer.
    queued: Arc<AtomicUsize>,
}

impl Outbox {
    /// Starts the writer fiber of `conn`.
    fn start(conn: Arc<TcpStream>) -> (Outbox, pcml::JoinHandle<()>) {
        let (tx, rx) = pcml::chan::unbounded::<Queued>();
        let queued = Arc::new(AtomicUsize::new(0));
        let writer = pcml::spawn(move || {
            // Ends when the queue closes (the session is over) or the socket fails; what is
            // left in the queue is then dropped, and uncounted.
            while let Ok(msg) = rx.recv() {
                if conn.write_all(msg.text.as_bytes()).is_err() {
                    break;
                }
            }
        });
        (Outbox { tx, queued }, writer)
    }

    /// Queues `text`; `false` if the client is too far behind to take it.
    fn push(&self, text: Arc<str>) -> bool {
        let n = text.len();
        if self.queued.load(Ordering::Relaxed) + n > OUTBOX_BYTES {
            return false;
        }
        self.queued.fetch_add(n, Ordering::Relaxed);
        let total = QUEUED.fetch_add(n, Ordering::Relaxed) + n;
        QUEUED_MAX.fetch_max(total, Ordering::Relaxed);
        let msg = Queued {
            text,
            count: self.queued.clone(),
        };
        self.tx.send(msg).is_ok()
    }
}

/// A queued message; its bytes are uncounted when it is dropped (written, or abandoned).
struct Queued {
    text: Arc<str>,
    count: Arc<AtomicUsize>,
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.count.fetch_sub(self.text.len(), Ordering::Relaxed);
        QUEUED.fetch_sub(self.text.len(), Ordering::Relaxed);
    }
}

/// One client's fiber: relays its lines to the room and the room's lines to it.
fn client(
    conn: TcpStream,
    id: usize,
    room: Multicast<Said>,
    port: Port<Said>,
    idle: Duration,
    stop: CVar,
) {
    let name = format!("guest{id}");
    let conn = Arc::new(conn);
    let (outbox, writer) = Outbox::start(conn.clone());
    outbox.push(format!("welcome, you are {name}\n").into());
    let mut deadline = Instant::now() + idle;
    let end = loop {
        let turn = select([
            conn.read_line_evt(MAX_LINE).wrap(Turn::Line),
            port.recv_evt().wrap(Turn::Room),
            at_time_evt(deadline).wrap(|()| Turn::Idle),
            stop.wait_evt().wrap(|()| Turn::Stop),
        ]);
        match turn {
            Turn::Line(Ok(line)) if line.is_empty() => break End::Gone, // end of file
            Turn::Line(Ok(line)) => {
                deadline = Instant::now() + idle;
                let line = line.trim_end_matches(['\r', '\n']);
                if line == "/quit" {
                    break End::Bye("bye\n");
                }
                room.send(Said {
                    from: Some(id),
                    text: format!("{name}: {line}").into(),
                });
            }
            Turn::Line(Err(e)) if e.kind() == ErrorKind::InvalidData => {
                break End::Dropped(format!("sent a line over {MAX_LINE} bytes or not UTF-8"));
            }
            Turn::Line(Err(_)) => break End::Gone,
            Turn::Room(said) => {
                if said.from != Some(id) && !outbox.push(format!("{}\n", said.text).into()) {
                    let behind = outbox.queued.load(Ordering::Relaxed);
                    break End::Dropped(format!("too slow: {behind} bytes unsent"));
                }
            }
            Turn::Idle => break End::Bye("you were idle for too long, bye\n"),
            Turn::Stop => break End::Bye("the server is closing, bye\n"),
        }
    };
    // Leave the room before announcing, so we do not queue our own farewell.
    drop(port);
    let left = match end {
        End::Bye(text) => {
            // Said after whatever is queued, then the writer ends.
            outbox.push(text.into());
            drop(outbox);
            let _ = writer.join();
            format!("* {name} left")
        }
        End::Gone => {
            drop(outbox);
            let _ = conn.shutdown(Shutdown::Both);
            let _ = writer.join();
            format!("* {name} left")
        }
        End::Dropped(why) => {
            eprintln!("chat: dropped {name}: {why}");
            // Past the backlog: a best-effort note straight to the socket, then close, which
            // also ends a writer blocked on a full socket.
            let _ = conn.try_write(format!("dropped: {why}\n").as_bytes());
            let _ = conn.shutdown(Shutdown::Both);
            drop(outbox);
            let _ = writer.join();
            format!("* {name} was dropped: {why}")
        }
    };
    room.send(Said {
        from: Some(id),
        text: left.into(),
    });
}

fn main() {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:7878".into());
    let idle = Duration::from_secs(args.next().and_then(|s| s.parse().ok()).unwrap_or(60));
    pcml::run(move || {
        let listener = TcpListener::bind(&addr)
            .unwrap_or_else(|e| panic!("chat: cannot listen on {addr}: {e}"));
        println!(
            "chat: listening on {} (idle limit {idle:?}); connect with nc",
            listener.local_addr().unwrap()
        );
        // Never signalled: the server runs until the process is interrupted.
        serve(listener, idle, CVar::new());
    });
}
