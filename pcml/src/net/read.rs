//! The read events of [`TcpStream`] (see "Reading in a choice" in the `net` module docs).
//!
//! # How it works
//! A stream that has used a read event keeps a read buffer and a queue of blocked read
//! events (`ReadQueue`), and its registration gets a hook that the I/O driver runs on each
//! read-readiness edge. A read event that cannot be served from the buffer reads the socket
//! until `WouldBlock` in its commit and blocking phases; in its blocking phase it then queues an
//! offer, and the driver's hook reads for it from then on, keeping partial data in the buffer
//! and committing the offer only once the event's condition holds (some bytes, a whole line,
//! `n` bytes, or end of file). Bytes read for an event that then lost its choice (its sync
//! completed elsewhere, or its `.await` was dropped after delivery) go back to the front of
//! the buffer. Plain reads (`read`, `try_read`, `read_async`, the async traits) take buffered
//! bytes first, so bytes are never reordered or lost between the two styles.
//!
//! # Invariants
//! - The buffer, the end-of-file and error flags and the queue change only under the stream's
//!   read lock; the driver's hook takes it too, so a queued offer is never missed by an edge.
//! - `buffered` is true whenever the buffer holds bytes (set and cleared under the lock).
//! - Once a stream has a read queue, plain reads make their attempt (buffer, else `recv`)
//!   under the read lock, as the hook reads under it: a hook that took an offer just before
//!   its sync was cancelled cannot read the socket between a plain read's look at the buffer
//!   and its `recv` (which read the next bytes first, or waited for a drained socket).
//! - Bytes given back to the buffer by the driver's hook (for an event whose sync completed
//!   elsewhere) are announced as a read readiness (`ScheduledIo::announce`), and plain reads
//!   look at the buffer inside the readiness generation window: no plain read waits for the
//!   socket while bytes are buffered.
//! - Lock order: the stream's read lock, then its readiness locks (`io::readiness`).
//! - The buffer grows only while a queued or running event needs more: to at most `limit` plus
//!   one read chunk for a line, `n` for an exact read, one chunk otherwise.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use super::{StreamInner, TcpStream};
use crate::event::{BaseEvent, Blocked, Event, OwnWaiter, SelfSynch};
use crate::io::try_io;
use crate::sched::io::{Dir, closed_error, lock};
use crate::sync_var::waiters::{self, Offer, Queue, Slot, delivered};

/// The most bytes one `read(2)` of a read event asks for.
const CHUNK: usize = 16 * 1024;

/// What a read event waits for.
#[derive(Clone, Copy, Debug)]
pub(super) enum Want {
    /// Any bytes, at most this many (end of file: none).
    Some(usize),
    /// Bytes up to and including `delim`, at most `limit` of them.
    Until { delim: u8, limit: usize },
    /// Exactly this many bytes.
    Exact(usize),
}

/// What a read event yields.
type Got = io::Result<Vec<u8>>;

/// A stream's read buffer and blocked read events.
pub(super) struct ReadQueue {
    /// Bytes read from the socket and not yet handed out, from `start`.
    buf: Vec<u8>,
    start: usize,
    /// The socket reported end of file (reported to every event after the buffer drains).
    eof: bool,
    /// An error the socket reported while reading for an event: handed to the next one.
    err: Option<io::Error>,
    /// The owner dropped the `TcpStream`: events fail.
    closed: bool,
    /// Blocked read events, first come first served.
    receivers: Queue<(Offer<Got>, Want)>,
}

impl ReadQueue {
    pub(super) fn new() -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            eof: false,
            err: None,
            closed: false,
            receivers: Queue::new(),
        }
    }

    fn buffered(&self) -> &[u8] {
        &self.buf[self.start..]
    }

    /// Removes the first `n` buffered bytes.
    fn take(&mut self, n: usize) -> Vec<u8> {
        let out = self.buf[self.start..self.start + n].to_vec();
        self.start += n;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > self.buf.len() / 2 && self.start > CHUNK {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        out
    }

    /// Puts bytes back at the front (an event that lost after they were read for it).
    fn unget(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if self.start >= bytes.len() {
            self.start -= bytes.len();
            self.buf[self.start..self.start + bytes.len()].copy_from_slice(bytes);
        } else {
            let rest = self.buf.split_off(self.start);
            self.buf.clear();
            self.buf.extend_from_slice(bytes);
            self.buf.extend_from_slice(&rest);
            self.start = 0;
        }
    }

    /// What `want` gets now, if its condition holds.
    fn satisfy(&mut self, want: Want) -> Option<Got> {
        let have = self.buffered().len();
        let ready = match want {
            Want::Some(max) => (have > 0).then(|| have.min(max)),
            Want::Exact(n) => (have >= n).then_some(n),
            Want::Until { delim, limit } => {
                match self.buffered().iter().take(limit).position(|&b| b == delim) {
                    Some(i) => Some(i + 1),
                    None if have >= limit => {
                        return Some(Err(io::Error::new(
                            io::ErrorKind::InvalidData,
                            format!(
                                "pcml: no delimiter within {limit} bytes (the bytes stay \
                                 buffered: read them, or drop the connection)"
                            ),
                        )));
                    }
                    None => None,
                }
            }
        };
        if let Some(n) = ready {
            return Some(Ok(self.take(n)));
        }
        if let Some(e) = self.err.take() {
            return Some(Err(e));
        }
        if self.eof {
            return Some(match want {
                // The unterminated last piece, or nothing.
                Want::Some(_) | Want::Until { .. } => Ok(self.take(have)),
                Want::Exact(_) => Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "pcml: end of file before the bytes asked for (what came stays buffered)",
                )),
            });
        }
        None
    }

    /// Whether the buffer alone meets `want` (a line: or is over its limit).
    fn holds(&self, want: Want) -> bool {
        let have = self.buffered();
        match want {
            Want::Some(_) => !have.is_empty(),
            Want::Exact(n) => have.len() >= n,
            Want::Until { delim, limit } => have.len() >= limit || have.contains(&delim),
        }
    }

    /// How many bytes one read for `want` asks the socket for.
    fn chunk(&self, want: Want) -> usize {
        match want {
            Want::Some(max) => max.clamp(1, CHUNK),
            Want::Exact(n) => n.saturating_sub(self.buffered().len()).clamp(1, CHUNK),
            Want::Until { .. } => CHUNK,
        }
    }
}

/// What reading the socket for a waiting event found.
enum Fill {
    /// Bytes, end of file or an error were recorded: look at the event's condition again.
    Progress,
    /// Nothing to read now: wait for the next edge.
    Empty,
}

impl StreamInner {
    /// The read queue, made (and the driver's hook installed) on first use.
    pub(super) fn rx(self: &Arc<Self>) -> &std::sync::Mutex<ReadQueue> {
        self.rx.get_or_init(|| {
            let weak: Weak<StreamInner> = Arc::downgrade(self);
            self.io.sio().set_on_readable(Box::new(move || {
                if let Some(s) = weak.upgrade() {
                    if let Some(rx) = s.rx.get() {
                        s.serve(&mut lock(rx));
                    }
                }
            }));
            std::sync::Mutex::new(ReadQueue::new())
        })
    }

    /// One `read(2)` into the buffer. Read lock held.
    fn fill(&self, q: &mut ReadQueue, want: Want) -> Fill {
        let n = q.chunk(want);
        let old = q.buf.len();
        q.buf.resize(old + n, 0);
        let r = loop {
            match try_io(&self.io, Dir::Read, |s| {
                super::sys::recv(s, &mut q.buf[old..])
            }) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => break r,
            }
        };
        q.buf.truncate(old + *r.as_ref().unwrap_or(&0));
        match r {
            Ok(0) => q.eof = true,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if !self.io.sio().is_closed() {
                    return Fill::Empty;
                }
                // Closed with nothing to read: the driver stopped.
                q.err = Some(closed_error());
            }
            Err(e) => q.err = Some(e),
        }
        self.set_buffered(q);
        Fill::Progress
    }

    fn set_buffered(&self, q: &ReadQueue) {
        // Release: pairs with the Acquire load in `read_buffered`'s callers, so a reader that
        // sees `true` finds the bytes under the lock.
        self.buffered
            .store(!q.buffered().is_empty(), Ordering::Release);
    }

    /// What `want` gets now, reading the socket until its condition holds or it would block.
    /// Read lock held.
    fn get_now(&self, q: &mut ReadQueue, want: Want) -> Option<Got> {
        if q.closed {
            return Some(Err(stream_dropped()));
        }
        loop {
            if let Some(v) = q.satisfy(want) {
                self.set_buffered(q);
                return Some(v);
            }
            if let Fill::Empty = self.fill(q, want) {
                return None;
            }
        }
    }

    /// Serves queued read events in order while their conditions can be met. Read lock held.
    fn serve(&self, q: &mut ReadQueue) {
        let mut gave_back = false;
        while let Some((_, (offer, want))) = q.receivers.take_match(None) {
            let Some(v) = self.get_now(q, want) else {
                // Nothing more to read now: it stays first in line.
                q.receivers.push_front((offer, want));
                break;
            };
            if let Some(commit) = offer.w.synch_spinning() {
                *waiters::lock(&offer.slot) = Some(v);
                commit.publish();
            } else {
                // Its sync completed elsewhere meanwhile (a choice it lost, a cancelled task):
                // keep what was read for it.
                give_back(q, v);
                gave_back = true;
            }
        }
        if gave_back {
            // The event's owner may have gone on already (a join of the cancelled task
            // returned) and a plain read started, found the buffer empty, and gone to wait
            // for the socket that `get_now` drained: tell it the bytes are here.
            self.set_buffered(q);
            if !q.buffered().is_empty() || q.eof || q.err.is_some() {
                self.io.sio().announce(Dir::Read);
            }
        }
    }

    /// A plain read's attempt on a stream with a read queue (see `TcpStream::read_once`):
    /// the buffered bytes, else `recv` into `out`, under the read lock, so that it never runs
    /// beside the driver's hook reading the socket for an event.
    pub(super) fn read_locked(
        &self,
        rx: &std::sync::Mutex<ReadQueue>,
        out: &mut [u8],
        recv: impl FnOnce(&mut [u8]) -> io::Result<usize>,
    ) -> io::Result<usize> {
        let mut q = lock(rx);
        let have = q.buffered();
        if !have.is_empty() {
            let n = have.len().min(out.len());
            out[..n].copy_from_slice(&have[..n]);
            q.take(n);
            self.set_buffered(&q);
            return Ok(n);
        }
        recv(out)
    }

    /// Plain reads take buffered bytes first: `Some(n)` if there were any. Call only after
    /// seeing `buffered` set.
    pub(super) fn read_buffered(self: &Arc<Self>, out: &mut [u8]) -> Option<usize> {
        let mut q = lock(self.rx());
        let have = q.buffered();
        if have.is_empty() {
            return None;
        }
        let n = have.len().min(out.len());
        out[..n].copy_from_slice(&have[..n]);
        q.take(n);
        self.set_buffered(&q);
        Some(n)
    }

    /// The owner dropped the stream: fail blocked read events.
    pub(super) fn close_reads(&self) {
        if let Some(rx) = self.rx.get() {
            let mut q = lock(rx);
            q.closed = true;
            while let Some((_, (offer, _))) = q.receivers.take_match(None) {
                if let Some(commit) = offer.w.synch_spinning() {
                    *waiters::lock(&offer.slot) = Some(Err(stream_dropped()));
                    commit.publish();
                }
            }
        }
    }
}

/// Bytes (or an error) read for an event that lost: back to the front of the buffer.
fn give_back(q: &mut ReadQueue, v: Got) {
    match v {
        Ok(bytes) => q.unget(&bytes),
        Err(e) => {
            if q.err.is_none() && !q.closed {
                q.err = Some(e);
            }
        }
    }
}

fn stream_dropped() -> io::Error {
    io::Error::other("pcml: the TcpStream was dropped while this read event waited on it")
}

/// The base event of the read events.
pub(super) struct ReadEvt {
    pub(super) s: Arc<StreamInner>,
    pub(super) want: Want,
    /// Our queued offer's slot while blocked.
    slot: Option<Slot<Got>>,
}

impl ReadEvt {
    pub(super) fn event(s: &TcpStream, want: Want) -> Event<Got> {
        s.inner.rx();
        Event::from_base(ReadEvt {
            s: s.inner.clone(),
            want,
            slot: None,
        })
    }
}

impl BaseEvent for ReadEvt {
    type Output = Got;

    fn poll(&mut self) -> bool {
        // Enabled if something is buffered or the socket looks readable; the commit phase
        // decides.
        let q = lock(self.s.rx());
        q.closed || q.eof || q.err.is_some() || q.holds(self.want) || {
            self.s.io.sio().is_ready(Dir::Read)
        }
    }

    fn try_do(&mut self) -> Option<Got> {
        // Our sync is private in this phase: whatever we read is ours.
        let mut q = lock(self.s.rx());
        if !q.receivers.q.is_empty() {
            // Others wait first: do not overtake them.
            self.s.serve(&mut q);
            if !q.receivers.q.is_empty() {
                return None;
            }
        }
        self.s.get_now(&mut q, self.want)
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<Got> {
        let mut q = lock(self.s.rx());
        if me.is_synched() {
            return Blocked::Synched;
        }
        self.s.serve(&mut q);
        let now = if q.receivers.q.is_empty() {
            self.s.get_now(&mut q, self.want)
        } else {
            None
        };
        match now {
            Some(v) => match me.synch_self() {
                SelfSynch::Won => Blocked::Committed(v),
                SelfSynch::AlreadySynched => {
                    give_back(&mut q, v);
                    self.s.set_buffered(&q);
                    self.s.serve(&mut q);
                    Blocked::Synched
                }
            },
            None => {
                let slot: Slot<Got> = Slot::default();
                q.receivers.push((
                    Offer {
                        w: me.waiter(),
                        slot: slot.clone(),
                        swap: false,
                    },
                    self.want,
                ));
                self.slot = Some(slot);
                Blocked::Waiting
            }
        }
    }

    fn complete(&mut self) -> Got {
        delivered(
            self.slot
                .as_ref()
                .expect("pcml: a read event completed without blocking"),
        )
    }

    fn discard(&mut self, out: Got) {
        // Our `.await` was dropped after bytes were read for us: give them back.
        let mut q = lock(self.s.rx());
        give_back(&mut q, out);
        self.s.set_buffered(&q);
        self.s.serve(&mut q);
    }

    fn describe(&self) -> String {
        use std::os::fd::AsRawFd;
        let src = self.s.io.source();
        match src.peer_addr() {
            Ok(a) => format!(
                "TcpStream read ({:?}) on fd {} (peer {a})",
                self.want,
                src.as_raw_fd()
            ),
            Err(_) => format!("TcpStream read ({:?}) on fd {}", self.want, src.as_raw_fd()),
        }
    }
}
