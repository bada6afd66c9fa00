//! The Erlang Port Mapper Daemon: where nodes register their listening port, and where a
//! node looks up another's.
//!
//! EPMD is found as `erl` finds it: on the host, at the port in `ERL_EPMD_PORT`, else 4369.
//! A node registers with `ALIVE2_REQ` on a connection it keeps open for as long as it lives
//! (EPMD forgets the name when it closes), and looks another up with `PORT_PLEASE2_REQ`.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use pcml::net::TcpStream;

use crate::DistError;

/// The EPMD port: `ERL_EPMD_PORT`, else 4369.
pub(crate) fn port_from_env() -> u16 {
    std::env::var("ERL_EPMD_PORT")
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or(4369)
}

fn addr(host: &str, port: u16) -> Result<SocketAddr, DistError> {
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| DistError::Host(host.to_string()))
}

/// A request framed with its 2-byte length.
fn request(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 2);
    out.extend_from_slice(&(body.len() as u16).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// Registers `alive` (the part of the node name before `@`) with the EPMD on this host,
/// listening on `port`; starts `epmd -daemon` if none answers. Returns the kept connection
/// and the node's creation.
pub(crate) fn register(
    alive: &str,
    port: u16,
    epmd_port: u16,
) -> Result<(TcpStream, u32), DistError> {
    let s = connect_or_start(epmd_port)?;
    let mut body = vec![120];
    body.extend_from_slice(&port.to_be_bytes());
    body.push(77); // a normal (not hidden) node
    body.push(0); // TCP/IPv4
    body.extend_from_slice(&6u16.to_be_bytes()); // highest version
    body.extend_from_slice(&6u16.to_be_bytes()); // lowest version
    body.extend_from_slice(&(alive.len() as u16).to_be_bytes());
    body.extend_from_slice(alive.as_bytes());
    body.extend_from_slice(&0u16.to_be_bytes()); // no extra
    let io =
        |e: io::Error| DistError::Epmd(format!("registering with EPMD on port {epmd_port}: {e}"));
    s.write_all(&request(&body)).map_err(io)?;
    let mut head = [0u8; 2];
    s.read_exact(&mut head).map_err(io)?;
    let creation = match head {
        [118, 0] => {
            let mut c = [0u8; 4];
            s.read_exact(&mut c).map_err(io)?;
            u32::from_be_bytes(c)
        }
        [121, 0] => {
            let mut c = [0u8; 2];
            s.read_exact(&mut c).map_err(io)?;
            u32::from(u16::from_be_bytes(c))
        }
        [118 | 121, _] => {
            return Err(DistError::NameTaken(alive.to_string()));
        }
        other => {
            return Err(DistError::Epmd(format!(
                "EPMD on port {epmd_port} answered the registration with {other:?}"
            )));
        }
    };
    Ok((s, creation))
}

/// Connects to the local EPMD, starting `epmd -daemon` once if none answers.
fn connect_or_start(epmd_port: u16) -> Result<TcpStream, DistError> {
    let a = SocketAddr::from(([127, 0, 0, 1], epmd_port));
    if let Ok(s) = TcpStream::connect(a) {
        return Ok(s);
    }
    let started = std::process::Command::new("epmd")
        .arg("-daemon")
        .arg("-port")
        .arg(epmd_port.to_string())
        .env("ERL_EPMD_PORT", epmd_port.to_string())
        .status();
    match started {
        Err(e) => {
            return Err(DistError::Epmd(format!(
                "no EPMD answers on 127.0.0.1:{epmd_port}, and `epmd -daemon` could not be \
                 run ({e}): install Erlang (e.g. `apt-get install erlang-base`) and start \
                 `epmd -daemon`, or set ERL_EPMD_PORT to the port of a running EPMD"
            )));
        }
        Ok(st) if !st.success() => {
            return Err(DistError::Epmd(format!(
                "no EPMD answers on 127.0.0.1:{epmd_port}, and `epmd -daemon` failed ({st}): \
                 start one by hand, or set ERL_EPMD_PORT to the port of a running EPMD"
            )));
        }
        Ok(_) => {}
    }
    // The daemon forks and then binds: give it a moment.
    let mut last = None;
    for _ in 0..100 {
        match TcpStream::connect(a) {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
        pcml::time::sleep(Duration::from_millis(20));
    }
    Err(DistError::Epmd(format!(
        "started `epmd -daemon -port {epmd_port}` but it does not answer ({:?})",
        last
    )))
}

/// Looks up `alive` on `host`'s EPMD: the node's port.
pub(crate) fn port_please(alive: &str, host: &str, epmd_port: u16) -> Result<u16, DistError> {
    let a = addr(host, epmd_port)?;
    let io = |e: io::Error| DistError::Epmd(format!("asking EPMD at {a} for {alive}: {e}"));
    let s = TcpStream::connect(a).map_err(io)?;
    let mut body = vec![122];
    body.extend_from_slice(alive.as_bytes());
    s.write_all(&request(&body)).map_err(io)?;
    let mut head = [0u8; 2];
    s.read_exact(&mut head).map_err(io)?;
    match head {
        [119, 0] => {}
        [119, _] => return Err(DistError::NoNode(format!("{alive}@{host}"))),
        other => {
            return Err(DistError::Epmd(format!(
                "EPMD at {a} answered a port request with {other:?}"
            )));
        }
    }
    let mut rest = [0u8; 8];
    s.read_exact(&mut rest).map_err(io)?;
    let port = u16::from_be_bytes([rest[0], rest[1]]);
    let highest = u16::from_be_bytes([rest[4], rest[5]]);
    if highest < 6 {
        return Err(DistError::Handshake(format!(
            "{alive}@{host} speaks distribution version {highest}; pcml-dist needs 6 (OTP 23 or later)"
        )));
    }
    Ok(port)
}

/// The address of `host` at `port`.
pub(crate) fn node_addr(host: &str, port: u16) -> Result<SocketAddr, DistError> {
    addr(host, port)
}
