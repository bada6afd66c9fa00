//! The distribution handshake, version 6 (OTP 23 and later), both directions.
//!
//! The initiator A sends its name and flags (`N`); the acceptor B answers a status (`sok`),
//! then its own name, flags and a challenge (`N`); A answers with a challenge of its own and
//! the digest of B's (`r`); B checks it and answers the digest of A's challenge (`a`). A
//! digest is the MD5 of the cookie followed by the challenge written in decimal, so each side
//! proves it knows the cookie without sending it. Every handshake message is preceded by its
//! 2-byte length.

use md5::{Digest, Md5};
use pcml::net::TcpStream;

use crate::DistError;

pub(crate) const DFLAG_PUBLISHED: u64 = 0x1;
pub(crate) const DFLAG_EXTENDED_REFERENCES: u64 = 0x4;
pub(crate) const DFLAG_DIST_MONITOR: u64 = 0x8;
pub(crate) const DFLAG_FUN_TAGS: u64 = 0x10;
pub(crate) const DFLAG_DIST_MONITOR_NAME: u64 = 0x20;
pub(crate) const DFLAG_NEW_FUN_TAGS: u64 = 0x80;
pub(crate) const DFLAG_EXTENDED_PIDS_PORTS: u64 = 0x100;
pub(crate) const DFLAG_EXPORT_PTR_TAG: u64 = 0x200;
pub(crate) const DFLAG_BIT_BINARIES: u64 = 0x400;
pub(crate) const DFLAG_NEW_FLOATS: u64 = 0x800;
pub(crate) const DFLAG_UTF8_ATOMS: u64 = 0x10000;
pub(crate) const DFLAG_MAP_TAG: u64 = 0x20000;
pub(crate) const DFLAG_BIG_CREATION: u64 = 0x40000;
pub(crate) const DFLAG_HANDSHAKE_23: u64 = 0x100_0000;
pub(crate) const DFLAG_UNLINK_ID: u64 = 0x200_0000;
pub(crate) const DFLAG_V4_NC: u64 = 1 << 34;

/// What this node advertises: every flag OTP 25 and 26 require, plus monitors (by pid and
/// by name: OTP sends no `MONITOR_P` unless both are there) and the new unlink protocol.
pub(crate) const OUR_FLAGS: u64 = DFLAG_PUBLISHED
    | DFLAG_EXTENDED_REFERENCES
    | DFLAG_DIST_MONITOR
    | DFLAG_FUN_TAGS
    | DFLAG_DIST_MONITOR_NAME
    | DFLAG_NEW_FUN_TAGS
    | DFLAG_EXTENDED_PIDS_PORTS
    | DFLAG_EXPORT_PTR_TAG
    | DFLAG_BIT_BINARIES
    | DFLAG_NEW_FLOATS
    | DFLAG_UTF8_ATOMS
    | DFLAG_MAP_TAG
    | DFLAG_BIG_CREATION
    | DFLAG_HANDSHAKE_23
    | DFLAG_UNLINK_ID
    | DFLAG_V4_NC;

/// What a peer must advertise for this node to talk to it.
const REQUIRED: u64 = DFLAG_EXTENDED_REFERENCES
    | DFLAG_EXTENDED_PIDS_PORTS
    | DFLAG_UTF8_ATOMS
    | DFLAG_NEW_FLOATS
    | DFLAG_MAP_TAG
    | DFLAG_BIG_CREATION
    | DFLAG_HANDSHAKE_23;

/// The MD5 digest of `cookie` and `challenge` written in decimal.
pub(crate) fn digest(cookie: &str, challenge: u32) -> [u8; 16] {
    let mut h = Md5::new();
    h.update(cookie.as_bytes());
    h.update(challenge.to_string().as_bytes());
    h.finalize().into()
}

/// The peer a handshake reached.
pub(crate) struct Peer {
    pub(crate) name: String,
}

fn io_err(during: &'static str) -> impl Fn(std::io::Error) -> DistError {
    move |e| DistError::Handshake(format!("{during}: {e}"))
}

fn send(s: &TcpStream, body: &[u8]) -> Result<(), DistError> {
    let mut out = Vec::with_capacity(body.len() + 2);
    out.extend_from_slice(&(body.len() as u16).to_be_bytes());
    out.extend_from_slice(body);
    s.write_all(&out).map_err(io_err("sending"))
}

fn recv(s: &TcpStream, during: &'static str) -> Result<Vec<u8>, DistError> {
    let mut len = [0u8; 2];
    s.read_exact(&mut len).map_err(io_err(during))?;
    let len = usize::from(u16::from_be_bytes(len));
    if len == 0 || len > 1024 {
        return Err(DistError::Handshake(format!(
            "{during}: a handshake message of {len} bytes"
        )));
    }
    let mut b = vec![0u8; len];
    s.read_exact(&mut b).map_err(io_err(during))?;
    Ok(b)
}

fn be_u64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A name message `N`: flags, creation, name. `challenge` is there in the acceptor's.
fn name_msg(name: &str, creation: u32, challenge: Option<u32>) -> Vec<u8> {
    let mut b = vec![b'N'];
    b.extend_from_slice(&OUR_FLAGS.to_be_bytes());
    if let Some(c) = challenge {
        b.extend_from_slice(&c.to_be_bytes());
    }
    b.extend_from_slice(&creation.to_be_bytes());
    b.extend_from_slice(&(name.len() as u16).to_be_bytes());
    b.extend_from_slice(name.as_bytes());
    b
}

/// Parses a name message `N` (with a challenge if `with_challenge`): flags, challenge, name.
fn parse_name(b: &[u8], with_challenge: bool) -> Result<(u64, u32, String), DistError> {
    let fixed = 1 + 8 + 4 + 2 + if with_challenge { 4 } else { 0 };
    if b.len() < fixed || b[0] != b'N' {
        let what = if b.first() == Some(&b'n') {
            "an old (version 5) handshake: pcml-dist needs OTP 23 or later".to_string()
        } else {
            format!(
                "an unexpected handshake message {:?}",
                b.first().map(|&c| c as char)
            )
        };
        return Err(DistError::Handshake(what));
    }
    let flags = be_u64(&b[1..]);
    let mut at = 9;
    let challenge = if with_challenge {
        at += 4;
        be_u32(&b[9..])
    } else {
        0
    };
    at += 4; // creation
    let nlen = usize::from(u16::from_be_bytes([b[at], b[at + 1]]));
    at += 2;
    let name = b
        .get(at..at + nlen)
        .and_then(|n| std::str::from_utf8(n).ok())
        .ok_or_else(|| DistError::Handshake("a bad node name in the handshake".into()))?
        .to_string();
    if flags & REQUIRED != REQUIRED {
        return Err(DistError::Handshake(format!(
            "{name} lacks distribution flags pcml-dist needs (has {flags:#x}, needs {REQUIRED:#x}): OTP 23 or later is required"
        )));
    }
    Ok((flags, challenge, name))
}

fn challenge() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish() as u32
}

/// The initiator's side: we connected to `s`, wanting node `want`. `have_other` says whether
/// this node has another connection up to `want` (asked when `want` says it has one to us:
/// then the two crossed, and the other one is kept).
pub(crate) fn initiate(
    s: &TcpStream,
    me: &str,
    creation: u32,
    cookie: &str,
    want: &str,
    have_other: impl FnOnce() -> bool,
) -> Result<Peer, DistError> {
    send(s, &name_msg(me, creation, None))?;
    let status = recv(s, "waiting for the status")?;
    match &status[..] {
        b"sok" | b"sok_simultaneous" => {}
        b"salive" if have_other() => {
            send(s, b"sfalse")?;
            return Err(DistError::Simultaneous(format!(
                "{want} and this node connected to each other at once; the other connection is kept"
            )));
        }
        b"salive" => send(s, b"strue")?,
        b"snok" => {
            return Err(DistError::Simultaneous(format!(
                "{want} is connecting to us at the same time; its connection wins"
            )));
        }
        b"snot_allowed" => {
            return Err(DistError::Handshake(format!(
                "{want} does not allow a connection from {me}"
            )));
        }
        other => {
            return Err(DistError::Handshake(format!(
                "{want} answered the status {:?}",
                String::from_utf8_lossy(other)
            )));
        }
    }
    let ch = recv(s, "waiting for the challenge")?;
    let (_, their_challenge, name) = parse_name(&ch, true)?;
    if name != want {
        return Err(DistError::Handshake(format!(
            "asked for {want}, reached {name}"
        )));
    }
    let mine = challenge();
    let mut reply = vec![b'r'];
    reply.extend_from_slice(&mine.to_be_bytes());
    reply.extend_from_slice(&digest(cookie, their_challenge));
    send(s, &reply)?;
    let ack = match recv(s, "waiting for the challenge ack") {
        Ok(a) => a,
        Err(_) => {
            return Err(DistError::Cookie(format!(
                "{name} closed the connection after our challenge reply: its cookie differs \
                 from ours (set ours with NodeBuilder::cookie, or as in ~/.erlang.cookie)"
            )));
        }
    };
    if ack.len() != 17 || ack[0] != b'a' || ack[1..] != digest(cookie, mine) {
        return Err(DistError::Cookie(format!(
            "{name} answered our challenge with a wrong digest: its cookie differs from ours"
        )));
    }
    Ok(Peer { name })
}

/// What an acceptor decides about an incoming node once it knows its name.
pub(crate) enum Admit {
    /// Go on.
    Ok,
    /// Refuse: this node's own attempt wins (`nok`).
    Nok,
    /// This node has a connection up to the peer already: ask the peer whether it should be
    /// replaced (`alive`; the peer says `true` when it has no connection up to us, so ours is
    /// stale, and `false` when it has, so the two connections crossed).
    Alive,
}

/// The acceptor's side: a peer connected to `s`. `admit` is asked once the peer's name is
/// known.
pub(crate) fn accept(
    s: &TcpStream,
    me: &str,
    creation: u32,
    cookie: &str,
    admit: impl FnOnce(&str) -> Admit,
) -> Result<Peer, DistError> {
    let hello = recv(s, "waiting for the peer's name")?;
    let (_, _, name) = parse_name(&hello, false)?;
    match admit(&name) {
        Admit::Ok => send(s, b"sok")?,
        Admit::Alive => {
            send(s, b"salive")?;
            match &recv(s, "waiting for the answer to alive")?[..] {
                b"strue" => {}
                b"sfalse" => {
                    return Err(DistError::Simultaneous(format!(
                        "{name} keeps the connection it has with us"
                    )));
                }
                other => {
                    return Err(DistError::Handshake(format!(
                        "{name} answered alive with {:?}",
                        String::from_utf8_lossy(other)
                    )));
                }
            }
        }
        Admit::Nok => {
            send(s, b"snok")?;
            return Err(DistError::Handshake(format!(
                "refused {name}: our own connection to it wins"
            )));
        }
    }
    let mine = challenge();
    send(s, &name_msg(me, creation, Some(mine)))?;
    let reply = recv(s, "waiting for the challenge reply")?;
    if reply.len() != 21 || reply[0] != b'r' {
        return Err(DistError::Handshake(format!(
            "{name} sent a bad challenge reply"
        )));
    }
    if reply[5..] != digest(cookie, mine) {
        return Err(DistError::Cookie(format!(
            "refused {name}: it answered our challenge with a wrong digest (its cookie differs from ours)"
        )));
    }
    let theirs = be_u32(&reply[1..]);
    let mut ack = vec![b'a'];
    ack.extend_from_slice(&digest(cookie, theirs));
    send(s, &ack)?;
    Ok(Peer { name })
}
