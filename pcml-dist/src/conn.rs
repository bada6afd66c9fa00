//! One connection to another node, after its handshake: a writer actor that owns the
//! outgoing side (batching frames, sending ticks, noticing a silent peer) and a reader fiber
//! that decodes frames and hands them to the node.
//!
//! # Invariants
//! - Only the writer writes to the socket after the handshake; anyone sends a frame by
//!   sending it to the writer's mailbox (never blocks).
//! - The reader is the only one to read; when it stops (end of stream, an error, a bad
//!   frame) the connection is down: the node forgets it and kills the writer.

use std::net::Shutdown;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use pcml::actor::{self, Ctx, Pid};
use pcml::net::TcpStream;

use crate::term::Term;
use crate::wire;

/// A live connection.
pub(crate) struct Conn {
    /// The peer's node name.
    pub(crate) peer: String,
    /// The writer actor's mailbox: whole frames.
    writer: Pid<Vec<u8>>,
    /// The socket, for `close`.
    stream: Arc<TcpStream>,
    /// Set by `close` (once).
    closed: AtomicBool,
}

impl Conn {
    /// Sends a control message and its message, if any. False if the connection is down.
    pub(crate) fn send(&self, ctrl: &Term, msg: Option<&Term>) -> bool {
        self.writer.send(wire::frame(ctrl, msg)).is_ok()
    }

    /// Closes the connection once what was sent before is written (a node stopping).
    pub(crate) fn close_flushed(&self) {
        if !self.closed.swap(true, Ordering::Relaxed) {
            // The empty frame asks the writer to shut the socket down after the frames
            // queued before it.
            if self.writer.send(Vec::new()).is_err() {
                let _ = self.stream.shutdown(Shutdown::Both);
            }
        }
    }

    /// Closes the connection (the reader then sees the end and reports it down).
    pub(crate) fn close(&self) {
        if !self.closed.swap(true, Ordering::Relaxed) {
            let _ = self.stream.shutdown(Shutdown::Both);
            self.writer.kill("connection closed");
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }
}

/// Milliseconds since `base`.
fn millis(base: Instant) -> u64 {
    base.elapsed().as_millis() as u64
}

/// Starts the writer for a connection whose handshake is done; the reader is started by
/// [`start_reader`] once the node has taken the connection.
pub(crate) fn open(peer: String, stream: TcpStream, ticktime: Duration) -> (Arc<Conn>, Reader) {
    let stream = Arc::new(stream);
    let _ = stream.set_nodelay(true);
    let base = Instant::now();
    let last_recv = Arc::new(AtomicU64::new(0));
    let w_stream = stream.clone();
    let w_last = last_recv.clone();
    let w_peer = peer.clone();
    let writer = actor::spawn(move |mut ctx: Ctx<Vec<u8>>| {
        // Erlang ticks when it has sent nothing for a quarter of the tick time, and gives a
        // peer up after a whole tick time of silence.
        let tick = ticktime / 4;
        let mut buf = Vec::with_capacity(1 << 16);
        loop {
            match ctx.receive_timeout(tick) {
                Some(f) => {
                    buf.clear();
                    buf.extend_from_slice(&f);
                    let mut last = f.is_empty();
                    while !last && buf.len() < 1 << 16 {
                        match ctx.try_receive() {
                            Some(f) => {
                                last = f.is_empty();
                                buf.extend_from_slice(&f);
                            }
                            None => break,
                        }
                    }
                    if w_stream.write_all(&buf).is_err() || last {
                        let _ = w_stream.shutdown(Shutdown::Both);
                        return;
                    }
                }
                None => {
                    let silent = millis(base).saturating_sub(w_last.load(Ordering::Relaxed));
                    if silent > ticktime.as_millis() as u64 {
                        eprintln!(
                            "pcml-dist: {w_peer} sent nothing for {silent} ms (net_ticktime {} s): connection closed",
                            ticktime.as_secs()
                        );
                        let _ = w_stream.shutdown(Shutdown::Both);
                        return;
                    }
                    if w_stream.write_all(&[0, 0, 0, 0]).is_err() {
                        let _ = w_stream.shutdown(Shutdown::Both);
                        return;
                    }
                }
            }
        }
    });
    let conn = Arc::new(Conn {
        peer,
        writer,
        stream: stream.clone(),
        closed: AtomicBool::new(false),
    });
    let reader = Reader {
        stream,
        base,
        last_recv,
    };
    (conn, reader)
}

/// The reading side of a connection, before it starts.
pub(crate) struct Reader {
    stream: Arc<TcpStream>,
    base: Instant,
    last_recv: Arc<AtomicU64>,
}

impl Reader {
    /// Reads frames until the connection ends, giving each control message to `on_ctrl`;
    /// returns why it ended.
    pub(crate) fn run(self, max_frame: usize, mut on_ctrl: impl FnMut(wire::Ctrl)) -> String {
        let s = &*self.stream;
        let mut len = [0u8; 4];
        let mut body = Vec::new();
        loop {
            if let Err(e) = s.read_exact(&mut len) {
                return format!("connection closed ({e})");
            }
            self.last_recv.store(millis(self.base), Ordering::Relaxed);
            let n = u32::from_be_bytes(len) as usize;
            if n == 0 {
                continue; // a tick
            }
            if n > max_frame {
                return wire::FrameError::TooLong {
                    len: n,
                    max: max_frame,
                }
                .to_string();
            }
            body.resize(n, 0);
            if let Err(e) = s.read_exact(&mut body) {
                return format!("connection closed in a frame ({e})");
            }
            match wire::decode_frame(&body) {
                Ok(c) => on_ctrl(c),
                Err(e) => return e.to_string(),
            }
            if body.capacity() > 1 << 20 {
                body = Vec::new();
            }
        }
    }
}
