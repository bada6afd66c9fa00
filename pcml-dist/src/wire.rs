//! The bytes of a connection after its handshake: frames, the external term format check,
//! control messages.
//!
//! Each frame is a 4-byte big-endian length and that many bytes; a length of 0 is a tick.
//! A frame holds the pass-through byte 112, a control message (a tuple whose first element
//! is the operation), and for sends and payload exits a second term, the message. This node
//! advertises neither the atom cache nor fragments, so peers send no other header.
//!
//! # Implementation
//! The terms come from a peer: before `eetf` decodes one, [`check_term`] walks it without
//! recursion and rejects what could hurt: a count larger than the bytes left (no allocation
//! is ever larger than the frame), nesting deeper than [`MAX_DEPTH`] (the decoder recurses),
//! compressed terms, atom cache references, funs and tags it does not know. Decoding then
//! runs under `catch_unwind` as well, so a peer's bytes never panic the node.
//!
//! # Invariants
//! - Every term given to `eetf`'s decoder has passed [`check_term`], and its byte length is
//!   what `check_term` measured.

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::term::{ErlPid, Term, atom, tuple};

/// The deepest nesting of tuples, lists and maps accepted in a term from a peer.
///
/// ```
/// use pcml_dist::wire::{MAX_DEPTH, check_term};
///
/// // [[[...[]...]]]: each level is a list of one element (tag 108, length 1) ending in nil (106).
/// fn nested(depth: usize) -> Vec<u8> {
///     let mut b = vec![131];
///     for _ in 0..depth {
///         b.extend([108, 0, 0, 0, 1]);
///     }
///     b.push(106);
///     b.extend(std::iter::repeat(106).take(depth));
///     b
/// }
/// assert!(check_term(&nested(MAX_DEPTH - 1)).is_ok());
/// assert!(check_term(&nested(MAX_DEPTH + 1)).is_err());
/// ```
pub const MAX_DEPTH: usize = 64;

/// The pass-through byte that starts every frame that is not a tick.
pub(crate) const PASS_THROUGH: u8 = 112;

/// Why a frame from a peer was refused (its connection is then closed).
///
/// ```
/// use pcml_dist::wire::{FrameError, check_term};
///
/// let e = check_term(&[131, 255]).unwrap_err(); // tag 255 is no term
/// assert!(matches!(e, FrameError::Malformed(_)));
/// println!("{e}"); // "malformed frame: ..."
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The frame is longer than the node's limit.
    TooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The bytes are not a term this node accepts.
    Malformed(String),
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::TooLong { len, max } => {
                write!(
                    f,
                    "a frame of {len} bytes is longer than the limit of {max}"
                )
            }
            FrameError::Malformed(why) => write!(f, "malformed frame: {why}"),
        }
    }
}

impl std::error::Error for FrameError {}

fn bad<T>(why: impl Into<String>) -> Result<T, FrameError> {
    Err(FrameError::Malformed(why.into()))
}

/// A cursor over a frame's bytes that fails instead of panicking.
struct Bytes<'a> {
    b: &'a [u8],
    at: usize,
}

impl Bytes<'_> {
    fn left(&self) -> usize {
        self.b.len() - self.at
    }
    fn take(&mut self, n: usize) -> Result<&[u8], FrameError> {
        if n > self.left() {
            return bad(format!(
                "term cut short: {n} bytes wanted, {} left",
                self.left()
            ));
        }
        let s = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, FrameError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<usize, FrameError> {
        let s = self.take(2)?;
        Ok(usize::from(u16::from_be_bytes([s[0], s[1]])))
    }
    fn u32(&mut self) -> Result<usize, FrameError> {
        let s = self.take(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]) as usize)
    }
    /// A count of items of at least one byte each: no more than the bytes left.
    fn count(&mut self, n: usize, per: usize) -> Result<usize, FrameError> {
        if n.saturating_mul(per) > self.left() {
            return bad(format!(
                "a count of {n} items is more than the {} bytes left",
                self.left()
            ));
        }
        Ok(n)
    }
}

/// Checks that `b` starts with one whole term in the external term format (version byte
/// 131 first) that this node accepts, and returns its length in bytes.
///
/// ```
/// use pcml_dist::wire::check_term;
///
/// assert_eq!(check_term(&[131, 97, 5, 0xff]), Ok(3)); // the small integer 5, then junk
/// assert!(check_term(&[131, 108, 255, 255, 255, 255]).is_err()); // a list of 4G elements
/// ```
pub fn check_term(b: &[u8]) -> Result<usize, FrameError> {
    let mut r = Bytes { b, at: 0 };
    if r.u8()? != 131 {
        return bad("a term does not start with the version byte 131");
    }
    // Terms still to read at each open level of nesting.
    let mut pending: Vec<usize> = vec![1];
    while let Some(top) = pending.last_mut() {
        if *top == 0 {
            pending.pop();
            continue;
        }
        *top -= 1;
        let tag = r.u8()?;
        let more = match tag {
            70 => skip(&mut r, 8)?,  // NEW_FLOAT_EXT
            97 => skip(&mut r, 1)?,  // SMALL_INTEGER_EXT
            98 => skip(&mut r, 4)?,  // INTEGER_EXT
            99 => skip(&mut r, 31)?, // FLOAT_EXT
            106 => 0,                // NIL_EXT
            100 | 118 => {
                // ATOM_EXT, ATOM_UTF8_EXT
                let n = r.u16()?;
                atom_bytes(&mut r, n, tag == 118)?
            }
            115 | 119 => {
                // SMALL_ATOM_EXT, SMALL_ATOM_UTF8_EXT
                let n = usize::from(r.u8()?);
                atom_bytes(&mut r, n, tag == 119)?
            }
            107 => {
                // STRING_EXT
                let n = r.u16()?;
                skip(&mut r, n)?
            }
            109 => {
                // BINARY_EXT
                let n = r.u32()?;
                skip(&mut r, n)?
            }
            77 => {
                // BIT_BINARY_EXT
                let n = r.u32()?;
                let bits = r.u8()?;
                if bits == 0 || bits > 8 || n == 0 {
                    return bad("a bit binary with a bad bit count");
                }
                skip(&mut r, n)?
            }
            110 | 111 => {
                // SMALL_BIG_EXT, LARGE_BIG_EXT
                let n = if tag == 110 {
                    usize::from(r.u8()?)
                } else {
                    r.u32()?
                };
                let sign = r.u8()?;
                if sign > 1 {
                    return bad("a big integer with a bad sign byte");
                }
                skip(&mut r, n)?
            }
            104 | 105 => {
                // SMALL_TUPLE_EXT, LARGE_TUPLE_EXT
                let n = if tag == 104 {
                    usize::from(r.u8()?)
                } else {
                    r.u32()?
                };
                r.count(n, 1)?
            }
            108 => {
                // LIST_EXT: the elements and the tail
                let n = r.u32()?;
                r.count(n, 1)? + 1
            }
            116 => {
                // MAP_EXT: keys and values
                let n = r.u32()?;
                r.count(n, 2)? * 2
            }
            88 | 103 | 89 | 102 | 120 => {
                // NEW_PID_EXT, PID_EXT, NEW_PORT_EXT, PORT_EXT, V4_PORT_EXT: a node atom
                // then fixed fields
                node_atom(&mut r)?;
                let rest = match tag {
                    88 => 12,
                    103 => 9,
                    89 => 8,
                    102 => 5,
                    _ => 12,
                };
                skip(&mut r, rest)?
            }
            90 | 114 => {
                // NEWER_REFERENCE_EXT, NEW_REFERENCE_EXT
                let n = r.u16()?;
                if n == 0 || n > 5 {
                    return bad(format!("a reference of {n} words"));
                }
                node_atom(&mut r)?;
                skip(&mut r, if tag == 90 { 4 } else { 1 })?;
                skip(&mut r, n * 4)?
            }
            101 => {
                // REFERENCE_EXT
                node_atom(&mut r)?;
                skip(&mut r, 5)?
            }
            113 => 3, // EXPORT_EXT: module, function, arity
            80 => return bad("compressed terms are not accepted"),
            82 => return bad("an atom cache reference (no atom cache was negotiated)"),
            112 | 117 => return bad("funs cannot be received by a pcml node"),
            other => return bad(format!("unknown term tag {other}")),
        };
        if more > 0 {
            if pending.len() > MAX_DEPTH {
                return bad(format!("terms nested deeper than {MAX_DEPTH}"));
            }
            pending.push(more);
        }
    }
    Ok(r.at)
}

fn skip(r: &mut Bytes<'_>, n: usize) -> Result<usize, FrameError> {
    r.take(n)?;
    Ok(0)
}

fn atom_bytes(r: &mut Bytes<'_>, n: usize, utf8: bool) -> Result<usize, FrameError> {
    let s = r.take(n)?;
    if utf8 && std::str::from_utf8(s).is_err() {
        return bad("an atom that is not UTF-8");
    }
    Ok(0)
}

/// The atom naming the node of a pid, port or reference.
fn node_atom(r: &mut Bytes<'_>) -> Result<(), FrameError> {
    let tag = r.u8()?;
    let n = match tag {
        100 | 118 => r.u16()?,
        115 | 119 => usize::from(r.u8()?),
        _ => return bad("a pid, port or reference whose node is not an atom"),
    };
    atom_bytes(r, n, tag == 118 || tag == 119).map(drop)
}

/// Decodes one checked term from the start of `b`: the term and its length.
///
/// ```
/// use pcml_dist::term::format;
/// use pcml_dist::wire::decode_term;
///
/// // {ok, 5}: a small tuple (104) of 2, the atom ok (small UTF-8 atom, 119), the integer 5 (97).
/// let (t, len) = decode_term(&[131, 104, 2, 119, 2, b'o', b'k', 97, 5]).unwrap();
/// assert_eq!((format(&t).as_str(), len), ("{ok,5}", 9));
/// assert!(decode_term(&[131, 104, 2]).is_err()); // cut short
/// ```
pub fn decode_term(b: &[u8]) -> Result<(Term, usize), FrameError> {
    let len = check_term(b)?;
    let slice = &b[..len];
    match catch_unwind(AssertUnwindSafe(|| Term::decode(Cursor::new(slice)))) {
        Ok(Ok(t)) => Ok((t, len)),
        Ok(Err(e)) => bad(format!("undecodable term: {e}")),
        Err(_) => bad("the term decoder panicked on these bytes"),
    }
}

/// Encodes `t` in the external term format (with its version byte 131) at the end of
/// `out`.
///
/// Containers are written here and leaves by `eetf`: `eetf` 0.12 writes a list of small
/// integers that holds a negative one as a string of bytes, so `[-1]` would arrive as
/// `[255]`.
///
/// ```
/// use pcml_dist::term::{IntoTerm, Term};
/// use pcml_dist::wire::{decode_term, encode_into};
///
/// let t = vec![-1i32, 7].into_term();
/// let mut b = Vec::new();
/// encode_into(&t, &mut b);
/// assert_eq!(decode_term(&b).unwrap().0, t);
/// ```
pub fn encode_into(t: &Term, out: &mut Vec<u8>) {
    out.push(131);
    encode_body(t, out);
}

fn encode_body(t: &Term, out: &mut Vec<u8>) {
    match t {
        Term::Tuple(tu) => {
            match u8::try_from(tu.elements.len()) {
                Ok(n) => out.extend_from_slice(&[104, n]),
                Err(_) => {
                    out.push(105);
                    out.extend_from_slice(&(tu.elements.len() as u32).to_be_bytes());
                }
            }
            for e in &tu.elements {
                encode_body(e, out);
            }
        }
        Term::List(l) if l.elements.is_empty() => out.push(106),
        Term::List(l) => {
            let bytes: Option<Vec<u8>> = l
                .elements
                .iter()
                .map(|e| match e {
                    Term::FixInteger(i) => u8::try_from(i.value).ok(),
                    _ => None,
                })
                .collect();
            match bytes {
                Some(b) if b.len() <= usize::from(u16::MAX) => {
                    out.push(107);
                    out.extend_from_slice(&(b.len() as u16).to_be_bytes());
                    out.extend_from_slice(&b);
                }
                _ => {
                    out.push(108);
                    out.extend_from_slice(&(l.elements.len() as u32).to_be_bytes());
                    for e in &l.elements {
                        encode_body(e, out);
                    }
                    out.push(106);
                }
            }
        }
        Term::ImproperList(l) => {
            out.push(108);
            out.extend_from_slice(&(l.elements.len() as u32).to_be_bytes());
            for e in &l.elements {
                encode_body(e, out);
            }
            encode_body(&l.last, out);
        }
        Term::Map(m) => {
            out.push(116);
            out.extend_from_slice(&(m.map.len() as u32).to_be_bytes());
            for (k, v) in &m.map {
                encode_body(k, out);
                encode_body(v, out);
            }
        }
        leaf => {
            let at = out.len();
            leaf.encode(&mut *out)
                .expect("pcml-dist: encoding a term into memory cannot fail");
            // Drop the version byte `eetf` wrote.
            out.remove(at);
        }
    }
}

/// A whole frame (length, pass-through, control, message) for `ctrl` and `msg`.
pub(crate) fn frame(ctrl: &Term, msg: Option<&Term>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    out.extend_from_slice(&[0, 0, 0, 0, PASS_THROUGH]);
    encode_into(ctrl, &mut out);
    if let Some(m) = msg {
        encode_into(m, &mut out);
    }
    let len = u32::try_from(out.len() - 4).expect("pcml-dist: a message of 4 GiB or more");
    out[..4].copy_from_slice(&len.to_be_bytes());
    out
}

/// A control message from a peer, decoded. Fields the node does not act on are kept for
/// `Debug` output.
#[derive(Debug)]
#[allow(dead_code)]
pub(crate) enum Ctrl {
    Link {
        from: ErlPid,
        to: ErlPid,
    },
    Send {
        to: ErlPid,
        msg: Term,
    },
    Exit {
        from: ErlPid,
        to: ErlPid,
        reason: Term,
    },
    Unlink {
        id: Option<Term>,
        from: ErlPid,
        to: ErlPid,
    },
    UnlinkAck,
    RegSend {
        from: ErlPid,
        name: String,
        msg: Term,
    },
    Exit2 {
        from: ErlPid,
        to: ErlPid,
        reason: Term,
    },
    Monitor {
        from: ErlPid,
        to: Term,
        r: Term,
    },
    Demonitor {
        from: ErlPid,
        to: Term,
        r: Term,
    },
    MonitorExit {
        from: Term,
        to: ErlPid,
        r: Term,
        reason: Term,
    },
    /// Operations this node does not act on (group leaders, spawn requests, trace tokens).
    Ignored(i64),
}

/// Decodes the body of a frame (after its length) into a control message.
pub(crate) fn decode_frame(b: &[u8]) -> Result<Ctrl, FrameError> {
    if b.first() != Some(&PASS_THROUGH) {
        return bad(format!(
            "a frame starts with {:?}, not the pass-through byte 112",
            b.first()
        ));
    }
    let (ctrl, n) = decode_term(&b[1..])?;
    let rest = &b[1 + n..];
    let payload = || -> Result<Term, FrameError> {
        let (t, m) = decode_term(rest)?;
        if m != rest.len() {
            return bad("bytes after the message");
        }
        Ok(t)
    };
    let Term::Tuple(t) = ctrl else {
        return bad(format!("a control message that is not a tuple: {ctrl}"));
    };
    let mut e = t.elements.into_iter();
    let op = match e.next() {
        Some(Term::FixInteger(i)) => i64::from(i.value),
        _ => return bad("a control message without an operation"),
    };
    let mut next = |what: &str| {
        e.next()
            .ok_or_else(|| FrameError::Malformed(format!("control {op} lacks its {what}")))
    };
    fn pid(t: Term, what: &str) -> Result<ErlPid, FrameError> {
        match t {
            Term::Pid(p) => Ok(p),
            other => bad(format!("{what} is not a pid: {other}")),
        }
    }
    let c = match op {
        1 => Ctrl::Link {
            from: pid(next("from")?, "from")?,
            to: pid(next("to")?, "to")?,
        },
        2 | 22 => {
            let _ = next("from")?;
            Ctrl::Send {
                to: pid(next("to")?, "to")?,
                msg: payload()?,
            }
        }
        3 | 24 => {
            let from = pid(next("from")?, "from")?;
            let to = pid(next("to")?, "to")?;
            let reason = if op == 3 { next("reason")? } else { payload()? };
            Ctrl::Exit { from, to, reason }
        }
        4 => Ctrl::Unlink {
            id: None,
            from: pid(next("from")?, "from")?,
            to: pid(next("to")?, "to")?,
        },
        35 => Ctrl::Unlink {
            id: Some(next("id")?),
            from: pid(next("from")?, "from")?,
            to: pid(next("to")?, "to")?,
        },
        36 => Ctrl::UnlinkAck,
        6 => {
            let from = pid(next("from")?, "from")?;
            let _ = next("unused")?;
            let name = match next("name")? {
                Term::Atom(a) => a.name,
                other => return bad(format!("a registered send to {other}, not an atom")),
            };
            Ctrl::RegSend {
                from,
                name,
                msg: payload()?,
            }
        }
        8 | 26 => {
            let from = pid(next("from")?, "from")?;
            let to = pid(next("to")?, "to")?;
            let reason = if op == 8 { next("reason")? } else { payload()? };
            Ctrl::Exit2 { from, to, reason }
        }
        19 => Ctrl::Monitor {
            from: pid(next("from")?, "from")?,
            to: next("to")?,
            r: next("ref")?,
        },
        20 => Ctrl::Demonitor {
            from: pid(next("from")?, "from")?,
            to: next("to")?,
            r: next("ref")?,
        },
        21 | 28 => {
            let from = next("from")?;
            let to = pid(next("to")?, "to")?;
            let r = next("ref")?;
            let reason = if op == 21 {
                next("reason")?
            } else {
                payload()?
            };
            Ctrl::MonitorExit {
                from,
                to,
                r,
                reason,
            }
        }
        other => Ctrl::Ignored(other),
    };
    Ok(c)
}

fn op(n: i32) -> Term {
    Term::FixInteger(n.into())
}

/// `{1, From, To}`
pub(crate) fn link(from: &ErlPid, to: &ErlPid) -> Term {
    tuple(vec![op(1), from.clone().into(), to.clone().into()])
}

/// `{2, '', To}` + message
pub(crate) fn send(to: &ErlPid) -> Term {
    tuple(vec![op(2), atom(""), to.clone().into()])
}

/// `{3, From, To, Reason}`
pub(crate) fn exit(from: &ErlPid, to: &ErlPid, reason: Term) -> Term {
    tuple(vec![op(3), from.clone().into(), to.clone().into(), reason])
}

/// `{6, From, '', Name}` + message
pub(crate) fn reg_send(from: &ErlPid, name: &str) -> Term {
    tuple(vec![op(6), from.clone().into(), atom(""), atom(name)])
}

/// `{36, Id, From, To}`
pub(crate) fn unlink_id_ack(id: Term, from: &ErlPid, to: &ErlPid) -> Term {
    tuple(vec![op(36), id, from.clone().into(), to.clone().into()])
}

/// `{19, From, To, Ref}`
pub(crate) fn monitor(from: &ErlPid, to: Term, r: Term) -> Term {
    tuple(vec![op(19), from.clone().into(), to, r])
}

/// `{21, From, To, Ref, Reason}`
pub(crate) fn monitor_exit(from: Term, to: &ErlPid, r: Term, reason: Term) -> Term {
    tuple(vec![op(21), from, to.clone().into(), r, reason])
}
