//! A TCP chat server: each client is a fiber, the room is a `Multicast`, and a client that
//! says nothing for a while is shown the door.
//!
//! Each client's fiber waits, in one `select`, on four events: its socket becoming readable
//! (the client typed something), the room's port (someone else said something), an idle
//! deadline (`at_time_evt`, moved forward whenever the client speaks), and the server's stop
//! signal. Whichever comes first is handled; the others are withdrawn and offered again on the
//! next turn. Nothing is lost by losing a turn: unread input stays in the socket, unread room
//! messages stay in the port.
//!
//! Run: `cargo run --release -p pcml --example chat -- 127.0.0.1:7878 60`, then connect a few
//! terminals with `nc 127.0.0.1 7878` (the second argument is the idle limit in seconds).
//! `/quit` leaves. `pcml/tests/net_chat.rs` runs `serve` with loopback clients.
//!
//! A slow reader is written to with `write_all`, which blocks only that client's fiber; a
//! real server would bound each client's backlog instead.

use std::io::ErrorKind;
use std::sync::Arc;
use std::time::{Duration, Instant};

use pcml::multicast::Port;
use pcml::net::{TcpListener, TcpStream};
use pcml::sync_var::CVar;
use pcml::time::at_time_evt;
use pcml::{Multicast, select};

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
    Input,
    Room(Said),
    Idle,
    Stop,
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
    if conn
        .write_all(format!("welcome, you are {name}\n").as_bytes())
        .is_err()
    {
        return;
    }
    let mut deadline = Instant::now() + idle;
    let mut partial = Vec::new();
    let farewell = loop {
        let turn = select([
            conn.readable_evt().wrap(|()| Turn::Input),
            port.recv_evt().wrap(Turn::Room),
            at_time_evt(deadline).wrap(|()| Turn::Idle),
            stop.wait_evt().wrap(|()| Turn::Stop),
        ]);
        match turn {
            Turn::Input => match read_lines(&conn, &mut partial) {
                Input::Lines(lines) => {
                    deadline = Instant::now() + idle;
                    let mut quit = false;
                    for line in lines {
                        if line == "/quit" {
                            quit = true;
                            break;
                        }
                        room.send(Said {
                            from: Some(id),
                            text: format!("{name}: {line}").into(),
                        });
                    }
                    if quit {
                        break Some("bye\n");
                    }
                }
                Input::Closed => break None,
            },
            Turn::Room(said) => {
                if said.from != Some(id)
                    && conn
                        .write_all(format!("{}\n", said.text).as_bytes())
                        .is_err()
                {
                    break None;
                }
            }
            Turn::Idle => break Some("you were idle for too long, bye\n"),
            Turn::Stop => break Some("the server is closing, bye\n"),
        }
    };
    if let Some(text) = farewell {
        let _ = conn.write_all(text.as_bytes());
    }
    // Leave the room before announcing, so we do not queue our own farewell.
    drop(port);
    room.send(Said {
        from: Some(id),
        text: format!("* {name} left").into(),
    });
}

/// What a readable socket had for us.
enum Input {
    /// Complete lines (maybe none yet), without their line ends.
    Lines(Vec<String>),
    /// End of file or an error: the client is gone.
    Closed,
}

/// Reads whatever is buffered (until `WouldBlock`) and splits off complete lines.
fn read_lines(conn: &TcpStream, partial: &mut Vec<u8>) -> Input {
    let mut buf = [0u8; 1024];
    loop {
        match conn.try_read(&mut buf) {
            Ok(0) => return Input::Closed,
            Ok(n) => partial.extend_from_slice(&buf[..n]),
            // Drained (or the readiness was stale): go back to waiting.
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return Input::Closed,
        }
    }
    let mut lines = Vec::new();
    while let Some(end) = partial.iter().position(|&b| b == b'\n') {
        let line: Vec<u8> = partial.drain(..=end).collect();
        let text = String::from_utf8_lossy(&line);
        lines.push(text.trim_end_matches(['\r', '\n']).to_string());
    }
    Input::Lines(lines)
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
