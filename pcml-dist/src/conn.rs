//! One connection to another node, after its handshake: its writing side (senders write
//! their frames themselves while the socket takes them; a writer actor takes over, batching,
//! when it does not, and sends ticks) and a reader fiber that decodes frames and hands them to
//! the node.
//!
//! # Invariants
//! - Bytes go to the socket in frame order and a frame is never split by another: a sender
//!   writes (non-blocking) only under the `Out` lock and while the writer does not own the
//!   socket; once a write would block, the rest of that frame and every later frame go to the
//!   writer's mailbox until the writer, under the same lock, finds its mailbox empty and gives
//!   the socket back. Sending never blocks.
//! - The reader is the only one to read; when it stops (end of stream, an error, a bad
//!   frame) the connection is down: the node forgets it and kills the writer.

use std::io::ErrorKind;
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use pcml::actor::{self, Ctx, Pid};
use pcml::net::TcpStream;

use crate::term::Term;
use crate::wire;

/// Who writes to the socket now.
struct Out {
    /// The writer actor does (it has frames queued or is writing them): senders queue
    /// theirs in its mailbox.
    writer_owns: bool,
}

fn lock(m: &Mutex<Out>) -> MutexGuard<'_, Out> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A live connection.
pub(crate) struct Conn {
    /// The peer's node name.
    pub(crate) peer: String,
    /// The writer actor's mailbox: whole frames, or the rest of one.
    writer: Pid<Vec<u8>>,
    /// The socket.
    stream: Arc<TcpStream>,
    /// Orders the senders' writes with the writer's.
    out: Arc<Mutex<Out>>,
    /// Set by `close` (once).
    closed: AtomicBool,
}

impl Conn {
    /// Sends a control message and its message, if any. False if the connection is down.
    pub(crate) fn send(&self, ctrl: &Term, msg: Option<&Term>) -> bool {
        self.send_frames(wire::frame(ctrl, msg))
    }

    /// Sends two control messages as one write: the peer reads the second before anything
    /// this node writes in answer to what the peer does on reading the first. (A `LINK`
    /// followed by the `EXIT` it announces: the peer's proxy of the linked process monitors
    /// it on reading the `LINK`, and this node's `noproc` answer must not overtake the
    /// `EXIT` with the real reason.)
    pub(crate) fn send_two(&self, first: &Term, second: &Term) -> bool {
        let mut f = wire::frame(first, None);
        f.extend_from_slice(&wire::frame(second, None));
        self.send_frames(f)
    }

    /// Writes whole frames, in order with every other sender's.
    fn send_frames(&self, mut f: Vec<u8>) -> bool {
        let mut out = lock(&self.out);
        if !out.writer_owns {
            // The quick path: no hand-off to the writer, so a round trip costs no switch to
            // another fiber (and, on an idle proc, no wake-up) before the bytes leave.
            match self.stream.try_write(&f) {
                Ok(n) if n == f.len() => return true,
                Ok(n) => drop(f.drain(..n)),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
                Err(_) => return false,
            }
            out.writer_owns = true;
        }
        self.writer.send(f).is_ok()
    }

    /// Closes the connection once what was sent before is written (a node stopping).
    pub(crate) fn close_flushed(&self) {
        if !self.closed.swap(true, Ordering::Relaxed) {
            let mut out = lock(&self.out);
            if out.writer_owns {
                // The empty frame asks the writer to shut the socket down after the frames
                // queued before it.
                if self.writer.send(Vec::new()).is_ok() {
                    return;
                }
            }
            out.writer_owns = true;
            drop(out);
            let _ = self.stream.shutdown(Shutdown::Both);
            self.writer.kill("connection closed");
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

/// Writes `first` and whatever else is queued (up to 64 KiB a write); false if the socket
/// is done (an error, or the empty frame that asks for a shutdown).
fn write_batch(ctx: &mut Ctx<Vec<u8>>, s: &TcpStream, buf: &mut Vec<u8>, first: Vec<u8>) -> bool {
    buf.clear();
    buf.extend_from_slice(&first);
    let mut last = first.is_empty();
    while !last && buf.len() < 1 << 16 {
        match ctx.try_receive() {
            Some(f) => {
                last = f.is_empty();
                buf.extend_from_slice(&f);
            }
            None => break,
        }
    }
    if s.write_all(buf).is_err() || last {
        let _ = s.shutdown(Shutdown::Both);
        return false;
    }
    true
}

/// Starts the writer for a connection whose handshake is done; the reader is started by
/// [`start_reader`] once the node has taken the connection.
pub(crate) fn open(peer: String, stream: TcpStream, ticktime: Duration) -> (Arc<Conn>, Reader) {
    let stream = Arc::new(stream);
    let _ = stream.set_nodelay(true);
    let base = Instant::now();
    let last_recv = Arc::new(AtomicU64::new(0));
    let out = Arc::new(Mutex::new(Out { writer_owns: false }));
    let w_stream = stream.clone();
    let w_out = out.clone();
    let w_last = last_recv.clone();
    let w_peer = peer.clone();
    let writer = actor::spawn(move |mut ctx: Ctx<Vec<u8>>| {
        // Erlang ticks when it has sent nothing for a quarter of the tick time, and gives a
        // peer up after a whole tick time of silence. (Frames that senders write themselves
        // do not reach this mailbox, so a busy connection also ticks: harmless.)
        let tick = ticktime / 4;
        let mut buf = Vec::with_capacity(1 << 16);
        loop {
            match ctx.receive_timeout(tick) {
                Some(f) => {
                    if !write_batch(&mut ctx, &w_stream, &mut buf, f) {
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
                    // Take the socket from the senders for the tick.
                    lock(&w_out).writer_owns = true;
                    if w_stream.write_all(&[0, 0, 0, 0]).is_err() {
                        let _ = w_stream.shutdown(Shutdown::Both);
                        return;
                    }
                }
            }
            // Give the socket back to the senders once nothing is queued.
            loop {
                let mut out = lock(&w_out);
                match ctx.try_receive() {
                    Some(f) => {
                        drop(out);
                        if !write_batch(&mut ctx, &w_stream, &mut buf, f) {
                            return;
                        }
                    }
                    None => {
                        out.writer_owns = false;
                        break;
                    }
                }
            }
        }
    });
    let conn = Arc::new(Conn {
        peer,
        writer,
        stream: stream.clone(),
        out,
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
    /// returns why it ended. Reads as much as the socket has (64 KiB at a time, more for a
    /// longer frame), so a burst of small frames costs one read.
    pub(crate) fn run(self, max_frame: usize, mut on_ctrl: impl FnMut(wire::Ctrl)) -> String {
        const CHUNK: usize = 1 << 16;
        let s = &*self.stream;
        let mut buf = vec![0u8; CHUNK];
        // The unread bytes are buf[start..end].
        let (mut start, mut end) = (0, 0);
        loop {
            if end - start >= 4 {
                let len: [u8; 4] = buf[start..start + 4].try_into().expect("four bytes");
                let n = u32::from_be_bytes(len) as usize;
                if n == 0 {
                    start += 4; // a tick
                    continue;
                }
                if n > max_frame {
                    return wire::FrameError::TooLong {
                        len: n,
                        max: max_frame,
                    }
                    .to_string();
                }
                if end - start >= 4 + n {
                    let body = &buf[start + 4..start + 4 + n];
                    start += 4 + n;
                    match wire::decode_frame(body) {
                        Ok(c) => on_ctrl(c),
                        Err(e) => return e.to_string(),
                    }
                    continue;
                }
                if buf.len() < 4 + n {
                    // A frame longer than the buffer: room for all of it.
                    buf.copy_within(start..end, 0);
                    (start, end) = (0, end - start);
                    buf.resize(4 + n, 0);
                }
            }
            if start == end {
                (start, end) = (0, 0);
                if buf.len() > 16 * CHUNK {
                    // Let go of the room a long frame needed.
                    buf = vec![0u8; CHUNK];
                }
            } else if end == buf.len() {
                buf.copy_within(start..end, 0);
                (start, end) = (0, end - start);
            }
            match s.read(&mut buf[end..]) {
                Ok(0) if start == end => return "connection closed (end of stream)".to_string(),
                Ok(0) => return "connection closed in a frame (end of stream)".to_string(),
                Ok(k) => end += k,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return format!("connection closed ({e})"),
            }
            self.last_recv.store(millis(self.base), Ordering::Relaxed);
        }
    }
}
