//! The chat example's server (`examples/chat.rs`) with loopback clients: lines reach the other
//! clients and not their sender, an idle client is shown the door, stopping the server tells
//! everyone, and a flood (an 8 MiB line, 100 clients that never read) is bounded while the
//! others keep being served.

#[path = "../../examples/chat.rs"]
#[allow(dead_code)] // the example's `main`
mod example;

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

/// Starts `example::serve` on a fresh runtime in the background; returns its address, its stop
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
                example::serve(listener, idle, s)
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

/// A client that never reads, with a small receive buffer so the server's sends back up soon.
fn silent_client(addr: SocketAddr) -> TcpStream {
    use std::os::fd::FromRawFd;
    let SocketAddr::V4(v4) = addr else {
        panic!("loopback v4 expected")
    };
    // SAFETY: plain socket calls on a descriptor we own until `from_raw_fd` takes it; the
    // address struct is fully initialized and its size passed.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0);
        let small: libc::c_int = 4096;
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&small as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        );
        let sa = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: v4.port().to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(*v4.ip()).to_be(),
            },
            sin_zero: [0; 8],
        };
        let r = libc::connect(
            fd,
            (&sa as *const libc::sockaddr_in).cast(),
            size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        assert_eq!(r, 0, "connect: {}", std::io::Error::last_os_error());
        TcpStream::from_raw_fd(fd)
    }
}

/// The peak resident set of this process, in KiB (`VmHWM` in /proc/self/status).
fn vm_hwm_kib() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A line reader on its own thread, so the test can wait for particular lines while the client
/// keeps reading everything (a client that stops reading would be dropped as slow).
fn watch(c: Client) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let mut c = c;
    std::thread::spawn(move || {
        while let Some(l) = c.line() {
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    rx
}

/// Waits (20 s at most) for a line that satisfies `f`, skipping others.
fn wait_for(rx: &std::sync::mpsc::Receiver<String>, what: &str, f: impl Fn(&str) -> bool) {
    loop {
        match rx.recv_timeout(Duration::from_secs(20)) {
            Ok(l) if f(&l) => return,
            Ok(_) => {}
            Err(e) => panic!("no line {what}: {e}"),
        }
    }
}

#[test]
fn a_flood_is_bounded_and_the_others_keep_being_served() {
    const SILENT: usize = 100;
    // The watcher never speaks: an idle limit that a slow run (ThreadSanitizer's takes over
    // a minute) could reach would show it the door mid-flood.
    let (addr, stop, server) = start(Duration::from_secs(3600));
    let mut w = Client::connect(addr);
    assert_eq!(w.line().unwrap(), "welcome, you are guest0");
    let watcher = watch(w);

    // 1. One 8 MiB line: its sender is dropped after at most a line's worth is buffered.
    let mut big = Client::connect(addr);
    assert_eq!(big.line().unwrap(), "welcome, you are guest1");
    let mut huge = vec![b'x'; 8 << 20];
    huge.push(b'\n');
    let writer = {
        let mut out = big.out.try_clone().unwrap();
        std::thread::spawn(move || {
            let _ = out.write_all(&huge); // fails once the server drops us
        })
    };
    wait_for(&watcher, "dropping guest1", |l| {
        l.starts_with("* guest1 was dropped: sent a line over")
    });
    assert!(big.line().unwrap().starts_with("dropped: sent a line over"));
    writer.join().unwrap();

    // 2. SILENT clients that never read, and a talker whose lines reach them all.
    let silent: Vec<TcpStream> = (0..SILENT).map(|_| silent_client(addr)).collect();
    for k in 0..SILENT {
        let id = 2 + k;
        wait_for(&watcher, "a join", |l| l == format!("* guest{id} joined"));
    }
    let mut talker = Client::connect(addr);
    let talker_id = 2 + SILENT;
    assert_eq!(
        talker.line().unwrap(),
        format!("welcome, you are guest{talker_id}")
    );
    let talker_in = watch(Client {
        lines: std::io::BufReader::new(talker.out.try_clone().unwrap()),
        out: talker.out.try_clone().unwrap(),
    });
    let line = format!("{}\n", "y".repeat(4000));
    let mut dropped = 0;
    let mut sent = 0;
    // Each line is 4 KB to each silent client: they fill their sockets, then their queues.
    while dropped < SILENT {
        assert!(
            sent < 5_000,
            "{dropped} of {SILENT} slow clients dropped after {sent} lines"
        );
        talker.out.write_all(line.as_bytes()).unwrap();
        sent += 1;
        // In step with the watcher, which reads everything and so is never dropped; count
        // the drop notices on the way.
        let mine = format!("guest{talker_id}: ");
        loop {
            let l = watcher
                .recv_timeout(Duration::from_secs(20))
                .expect("the watcher heard nothing");
            if l.contains("was dropped: too slow") {
                dropped += 1;
            } else if l.starts_with(&mine) {
                break;
            }
        }
    }

    // 3. The server still serves: a newcomer is welcomed, and a line reaches the watcher.
    let mut late = Client::connect(addr);
    assert_eq!(
        late.line().unwrap(),
        format!("welcome, you are guest{}", talker_id + 1)
    );
    talker.say("still here?");
    wait_for(&watcher, "the talker's last line", |l| {
        l == format!("guest{talker_id}: still here?")
    });
    while talker_in.try_recv().is_ok() {}

    // Memory stayed bounded: at most every client's queue limit at once, and the process's
    // peak far below the hundreds of megabytes an unbounded backlog reaches here.
    let most = example::QUEUED_MAX.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        most <= (SILENT + 4) * example::OUTBOX_BYTES,
        "{most} bytes queued at the peak"
    );
    let hwm = vm_hwm_kib();
    // Under ThreadSanitizer (`cfg(pcml_tsan)`) the resident set also holds its shadow
    // memory, several times the program's own: the queue bound above still holds there.
    assert!(cfg!(pcml_tsan) || hwm < 256 * 1024, "peak RSS {hwm} KiB");
    eprintln!("flood: {sent} lines of 4 KB; queued peak {most} B; VmHWM {hwm} KiB");

    drop(silent);
    stop.signal();
    let _ = server.join().unwrap();
}
