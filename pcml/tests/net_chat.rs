//! The chat example's server (`examples/chat.rs`) with loopback clients: lines reach the other
//! clients and not their sender, an idle client is shown the door, and stopping the server
//! tells everyone.

#[path = "../examples/chat.rs"]
#[allow(dead_code)] // the example's `main`
mod chat;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use pcml::net::TcpListener;
use pcml::sync_var::CVar;

/// A line-oriented loopback client on a plain OS thread (std's blocking socket).
struct Client {
    lines: BufReader<TcpStream>,
    out: TcpStream,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        // A safety net so a broken server fails the test instead of hanging it.
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Client {
            out: s.try_clone().unwrap(),
            lines: BufReader::new(s),
        }
    }

    fn say(&mut self, text: &str) {
        self.out.write_all(format!("{text}\n").as_bytes()).unwrap();
    }

    /// The next line, or `None` at end of file.
    fn line(&mut self) -> Option<String> {
        let mut l = String::new();
        match self.lines.read_line(&mut l).unwrap() {
            0 => None,
            _ => Some(l.trim_end().to_string()),
        }
    }
}

/// Starts `chat::serve` on a fresh runtime in the background; returns its address, its stop
/// signal and the thread that returns the number of clients served.
fn start(idle: Duration) -> (SocketAddr, CVar, std::thread::JoinHandle<usize>) {
    let stop = CVar::new();
    let s = stop.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        pcml::Runtime::builder()
            .procs(2)
            .build()
            .unwrap()
            .block_on(move || {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                chat::serve(listener, idle, s)
            })
            .unwrap()
    });
    (rx.recv().unwrap(), stop, server)
}

#[test]
fn three_clients_chat_and_the_server_closes() {
    let (addr, stop, server) = start(Duration::from_secs(60));
    let mut a = Client::connect(addr);
    assert_eq!(a.line().unwrap(), "welcome, you are guest0");
    let mut b = Client::connect(addr);
    assert_eq!(b.line().unwrap(), "welcome, you are guest1");
    assert_eq!(a.line().unwrap(), "* guest1 joined");
    let mut c = Client::connect(addr);
    assert_eq!(c.line().unwrap(), "welcome, you are guest2");
    assert_eq!(a.line().unwrap(), "* guest2 joined");
    assert_eq!(b.line().unwrap(), "* guest2 joined");

    a.say("hello from a");
    assert_eq!(b.line().unwrap(), "guest0: hello from a");
    assert_eq!(c.line().unwrap(), "guest0: hello from a");
    b.say("hi a");
    assert_eq!(a.line().unwrap(), "guest1: hi a"); // a never hears its own line
    assert_eq!(c.line().unwrap(), "guest1: hi a");

    c.say("/quit");
    assert_eq!(c.line().unwrap(), "bye");
    assert_eq!(c.line(), None);
    assert_eq!(a.line().unwrap(), "* guest2 left");
    assert_eq!(b.line().unwrap(), "* guest2 left");

    stop.signal();
    // Each remaining client is told, then hears the other leave or reaches end of file.
    for cl in [&mut a, &mut b] {
        let mut rest = Vec::new();
        while let Some(l) = cl.line() {
            rest.push(l);
        }
        assert!(
            rest.contains(&"the server is closing, bye".to_string()),
            "{rest:?}"
        );
    }
    assert_eq!(server.join().unwrap(), 3);
}

#[test]
fn an_idle_client_is_shown_the_door() {
    let (addr, stop, server) = start(Duration::from_millis(50));
    let mut quiet = Client::connect(addr);
    assert_eq!(quiet.line().unwrap(), "welcome, you are guest0");
    // It says nothing: the idle deadline fires and the server closes the connection.
    assert_eq!(quiet.line().unwrap(), "you were idle for too long, bye");
    assert_eq!(quiet.line(), None);
    stop.signal();
    assert_eq!(server.join().unwrap(), 1);
}

#[test]
fn every_line_reaches_every_other_client_once_in_order() {
    const LINES: usize = 50;
    const CLIENTS: usize = 3;
    let (addr, stop, server) = start(Duration::from_secs(60));
    let mut clients: Vec<Client> = Vec::new();
    for id in 0..CLIENTS {
        let mut c = Client::connect(addr);
        assert_eq!(c.line().unwrap(), format!("welcome, you are guest{id}"));
        // Earlier clients hear this one arrive.
        for earlier in clients.iter_mut() {
            assert_eq!(earlier.line().unwrap(), format!("* guest{id} joined"));
        }
        clients.push(c);
    }
    // Everyone talks at once, from its own thread, while reading what the others say.
    let threads: Vec<_> = clients
        .into_iter()
        .enumerate()
        .map(|(id, mut c)| {
            std::thread::spawn(move || {
                let mut out = c.out.try_clone().unwrap();
                let writer = std::thread::spawn(move || {
                    for k in 0..LINES {
                        out.write_all(format!("line {k}\n").as_bytes()).unwrap();
                    }
                });
                let mut next = [0usize; CLIENTS];
                for _ in 0..(CLIENTS - 1) * LINES {
                    let l = c.line().expect("the server closed early");
                    let (who, text) = l.split_once(": ").expect("a chat line");
                    let from: usize = who.trim_start_matches("guest").parse().unwrap();
                    assert_ne!(from, id, "a client heard its own line");
                    assert_eq!(text, format!("line {}", next[from]), "lost or reordered");
                    next[from] += 1;
                }
                writer.join().unwrap();
                c
            })
        })
        .collect();
    let clients: Vec<Client> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    stop.signal();
    for mut c in clients {
        let mut rest = Vec::new();
        while let Some(l) = c.line() {
            rest.push(l);
        }
        assert!(
            rest.contains(&"the server is closing, bye".to_string()),
            "{rest:?}"
        );
    }
    assert_eq!(server.join().unwrap(), CLIENTS);
}
