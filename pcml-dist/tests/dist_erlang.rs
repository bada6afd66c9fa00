//! pcml nodes against real Erlang nodes: each test starts its own EPMD on a private port and
//! its own `erl` nodes on 127.0.0.1, and kills them (by pid) when it ends. Tests that need
//! `erl` print why they skip when it is absent (`.ci/run` installs it).
//!
//! The property tests of the frame decoder at the end need no Erlang.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use pcml::actor::{self, Ctx, ExitReason, Signal};
use pcml_dist::term::{Atom, ErlPid, FromTerm, IntoTerm, Term, atom, is_atom, tuple};
use pcml_dist::{DistError, Node, NodeBuilder};

/// How long any one wait for Erlang may take before the test fails.
const WAIT: Duration = Duration::from_secs(30);

/// A child process killed and reaped on drop.
struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn have_erl() -> bool {
    let ok = Command::new("erl")
        .args(["-noshell", "-eval", "halt()."])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        println!("skipped: `erl` is not installed (apt-get install erlang-base; .ci/run does)");
    }
    ok
}

static NEXT_PORT: AtomicU16 = AtomicU16::new(0);

/// A private EPMD.
struct Epmd {
    port: u16,
    _kid: Kid,
}

fn epmd() -> Epmd {
    // A port nobody listens on, different for each test of this process.
    let base = 20000 + (std::process::id() % 2000) as u16 * 10;
    loop {
        let port = base + NEXT_PORT.fetch_add(1, Ordering::Relaxed);
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_err() {
            continue;
        }
        let kid = Kid(Command::new("epmd")
            .args(["-port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("epmd runs"));
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(t.elapsed() < WAIT, "epmd did not start on {port}");
            std::thread::sleep(Duration::from_millis(10));
        }
        return Epmd { port, _kid: kid };
    }
}

/// An `erl` node running `script`, whose output lines the test reads.
struct Erl {
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    kid: Kid,
}

fn erl(e: &Epmd, name: &str, cookie: &str, script: &str) -> Erl {
    let mut kid = Command::new("erl")
        .args([
            "-name",
            &format!("{name}@127.0.0.1"),
            "-setcookie",
            cookie,
            "-noshell",
            "-noinput",
            "-eval",
            script,
        ])
        .env("ERL_EPMD_PORT", e.port.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("erl runs");
    let out = kid.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines() {
            let Ok(l) = l else { return };
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    Erl {
        lines: rx,
        seen: Vec::new(),
        kid: Kid(kid),
    }
}

impl Erl {
    /// The first line that starts with `prefix` (waiting in pcml time, so the node runs).
    fn expect(&mut self, prefix: &str) -> String {
        let t = Instant::now();
        loop {
            match self.lines.try_recv() {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.starts_with(prefix) {
                        return l;
                    }
                }
                Err(mpsc::TryRecvError::Empty) => {
                    assert!(
                        t.elapsed() < WAIT,
                        "no line {prefix:?} from erl; it printed {:?}",
                        self.seen
                    );
                    pcml::time::sleep(Duration::from_millis(5));
                }
                Err(mpsc::TryRecvError::Disconnected) => {
                    panic!(
                        "erl ended without printing {prefix:?}; it printed {:?}",
                        self.seen
                    )
                }
            }
        }
    }

    /// Kills the Erlang node now.
    fn kill(&mut self) {
        let _ = self.kid.0.kill();
        let _ = self.kid.0.wait();
    }
}

fn node(e: &Epmd, name: &str, cookie: &str) -> Node {
    NodeBuilder::new(&format!("{name}@127.0.0.1"))
        .cookie(cookie)
        .epmd_port(e.port)
        .start()
        .expect("the node starts")
}

/// A raw `Term` actor answering `{Pid, T}` with `{echo, T}`, ending on `stop`.
fn spawn_echo(node: &Node) -> pcml::actor::Pid<Term> {
    let n = node.clone();
    actor::spawn(move |mut ctx: Ctx<Term>| {
        loop {
            let t = ctx.receive();
            if is_atom(&t, "stop") {
                return;
            }
            if let Ok((from, msg)) = <(ErlPid, Term)>::from_term(t) {
                let _ = n
                    .pid_of::<Term>(&from)
                    .unwrap()
                    .send(tuple(vec![atom("echo"), msg]));
            }
        }
    })
}

/// Runs `f` on a 2-proc pcml runtime.
fn run(f: impl FnOnce() + Send + 'static) {
    pcml::Runtime::builder()
        .procs(2)
        .build()
        .unwrap()
        .block_on(f)
        .unwrap();
}

#[test]
fn send_both_ways_and_names() {
    if !have_erl() {
        return;
    }
    let e = epmd();
    run(move || {
        let node = node(&e, "p1", "c1");
        let echo = spawn_echo(&node);
        node.register("t1echo", &echo).unwrap();
        let (tx, rx) = pcml::chan::unbounded::<ErlPid>();
        let spy = actor::spawn(move |mut ctx: Ctx<(ErlPid, Term)>| {
            let (from, _) = ctx.receive();
            let _ = tx.send(from);
        });
        node.register("t1spy", &spy).unwrap();
        let mut erl = erl(
            &e,
            "e1",
            "c1",
            r#"P = 'p1@127.0.0.1',
            pong = net_adm:ping(P),
            true = lists:member(P, nodes()),
            {t1echo, P} ! {self(), hello},
            receive {echo, hello} -> io:format("ECHO hello~n") end,
            {t1echo, P} ! {self(), [1, -7, 2.5, <<"b">>, "str", {a, #{k => v}}, 12345678901234567890]},
            receive {echo, Y} -> io:format("ECHO ~w~n", [Y]) end,
            register(erlbox, self()),
            {t1spy, P} ! {self(), here},
            receive {from_pcml, X} -> io:format("NAMED ~w~n", [X]) end,
            receive {direct, Z} -> Z ! {reply, self()}, io:format("DIRECT~n") end,
            receive {typed, S} -> io:format("TYPED ~w~n", [S]) end,
            {t1echo, P} ! stop,
            io:format("DONE~n"),
            receive never -> ok end."#,
        );
        assert_eq!(erl.expect("ECHO"), "ECHO hello");
        assert_eq!(
            erl.expect("ECHO"),
            "ECHO [1,-7,2.5,<<98>>,[115,116,114],{a,#{k => v}},12345678901234567890]"
        );
        let erl_pid = rx.recv().unwrap();
        assert_eq!(erl_pid.node.name, "e1@127.0.0.1");
        assert!(node.nodes().contains(&"e1@127.0.0.1".to_string()));
        // A registered Erlang process, by name.
        node.send_named("e1@127.0.0.1", "erlbox", (Atom::from("from_pcml"), 42u8))
            .unwrap();
        assert_eq!(erl.expect("NAMED"), "NAMED 42");
        // A pcml actor's pid given to Erlang, which answers it.
        let mut me = Ctx::<(Atom, ErlPid)>::new();
        let my_erl = node.erl_pid(&me.pid());
        node.send(&erl_pid, (Atom::from("direct"), my_erl)).unwrap();
        erl.expect("DIRECT");
        let (tag, from) = me.receive();
        assert_eq!((tag.name.as_str(), &from), ("reply", &erl_pid));
        // A typed pcml pid for the Erlang process.
        let typed = node.pid_of::<(Atom, String)>(&erl_pid).unwrap();
        typed
            .send((Atom::from("typed"), "str".to_string()))
            .unwrap();
        assert_eq!(erl.expect("TYPED"), "TYPED <<115,116,114>>");
        erl.expect("DONE");
        // The echo ended on `stop`, and its name with it.
        let t = Instant::now();
        while echo.is_alive() {
            assert!(t.elapsed() < WAIT);
            pcml::time::sleep(Duration::from_millis(5));
        }
        assert!(matches!(
            node.send_named("p1@127.0.0.1", "t1echo", atom("x")),
            Err(DistError::NoProcess(_))
        ));
    });
}

/// Waits (in pcml time) for a thread to finish and returns its result.
fn join_thread<T: Send + 'static>(h: std::thread::JoinHandle<T>) -> T {
    let t = Instant::now();
    while !h.is_finished() {
        assert!(t.elapsed() < WAIT, "a helper thread hangs");
        pcml::time::sleep(Duration::from_millis(5));
    }
    h.join().unwrap()
}

#[test]
fn links_and_monitors_both_ways() {
    if !have_erl() {
        return;
    }
    let e = epmd();
    run(move || {
        let node = node(&e, "p2", "c2");
        let mut me = Ctx::<Term>::new();
        node.register("t2ctl", &me.pid()).unwrap();
        let a = actor::spawn(|mut ctx: Ctx<Term>| {
            loop {
                ctx.receive();
            }
        });
        let b = actor::spawn(|mut ctx: Ctx<Term>| {
            ctx.receive();
        });
        node.register("t2b", &b).unwrap();
        let c = actor::spawn(|mut ctx: Ctx<Term>| {
            loop {
                ctx.receive();
            }
        });
        let c_mon = me.monitor(&c);
        let mut erl = erl(
            &e,
            "e2",
            "c2",
            r#"P = 'p2@127.0.0.1',
            register(ctl, self()),
            process_flag(trap_exit, true),
            pong = net_adm:ping(P),
            io:format("READY~n"),
            receive {pids, A, C} -> ok end,
            link(A),
            {t2ctl, P} ! linked_a,
            receive {'EXIT', A, R1} -> io:format("EXIT_A ~w~n", [R1]) end,
            M = monitor(process, {t2b, P}),
            {t2ctl, P} ! monitoring_b,
            receive {'DOWN', M, process, Who, R2} -> io:format("DOWN_B ~w ~w~n", [Who, R2]) end,
            M2 = monitor(process, A),
            receive {'DOWN', M2, process, _, R3} -> io:format("DOWN_DEAD ~w~n", [R3]) end,
            link(A),
            receive {'EXIT', A, R4} -> io:format("LINK_DEAD ~w~n", [R4]) end,
            exit(C, kill),
            W = spawn(fun() -> receive go -> exit({shutdown, crash}) end end),
            {t2ctl, P} ! {worker, W},
            V = spawn(fun() -> process_flag(trap_exit, true),
                               receive {'EXIT', _, Why} -> io:format("EXIT_V ~w~n", [Why]) end end),
            {t2ctl, P} ! {victim, V},
            receive never -> ok end."#,
        );
        erl.expect("READY");
        let (a_erl, c_erl) = (node.erl_pid(&a), node.erl_pid(&c));
        node.send_named("e2@127.0.0.1", "ctl", (atom("pids"), a_erl, c_erl))
            .unwrap();
        // Erlang links to a pcml actor, which is killed: Erlang gets the reason.
        assert!(is_atom(&me.receive(), "linked_a"));
        a.kill("boom");
        assert_eq!(erl.expect("EXIT_A"), "EXIT_A boom");
        // Erlang monitors a pcml actor by name; it ends normally.
        assert!(is_atom(&me.receive(), "monitoring_b"));
        b.send(atom("stop")).unwrap();
        assert_eq!(erl.expect("DOWN_B"), "DOWN_B {t2b,'p2@127.0.0.1'} normal");
        // Monitoring and linking a dead pcml actor: noproc.
        assert_eq!(erl.expect("DOWN_DEAD"), "DOWN_DEAD noproc");
        assert_eq!(erl.expect("LINK_DEAD"), "LINK_DEAD noproc");
        // Erlang's exit(C, kill).
        assert_eq!(
            me.receive_signal(),
            Signal::Down {
                monitor: c_mon,
                actor: c.id(),
                reason: ExitReason::Killed("killed".into())
            }
        );
        // A pcml actor links to and monitors an Erlang process, which exits.
        let w = <(Atom, ErlPid)>::from_term(me.receive()).unwrap().1;
        let wp = node.pid_of::<Term>(&w).unwrap();
        me.trap_exits(true);
        me.link(&wp);
        let w_mon = me.monitor(&wp);
        wp.send(atom("go")).unwrap();
        let crash = ExitReason::Killed("{shutdown,crash}".into());
        let mut got = vec![me.receive_signal(), me.receive_signal()];
        got.sort_by_key(|s| matches!(s, Signal::Down { .. }));
        assert_eq!(
            got,
            vec![
                Signal::Exit {
                    from: wp.id(),
                    reason: crash.clone()
                },
                Signal::Down {
                    monitor: w_mon,
                    actor: wp.id(),
                    reason: crash
                },
            ]
        );
        assert_eq!(node.remote_of(wp.id()), Some(w));
        // A pcml actor linked to an Erlang process dies: the process gets the reason.
        let v = <(Atom, ErlPid)>::from_term(me.receive()).unwrap().1;
        let vp = node.pid_of::<Term>(&v).unwrap();
        let (linked, is_linked) = pcml::chan::unbounded::<()>();
        let d = actor::spawn(move |mut ctx: Ctx<()>| {
            ctx.link(&vp);
            let _ = linked.send(());
            ctx.receive();
        });
        is_linked.recv().unwrap();
        d.kill("bye");
        assert_eq!(erl.expect("EXIT_V"), "EXIT_V bye");
    });
}

#[test]
fn node_down_both_ways() {
    if !have_erl() {
        return;
    }
    let e = epmd();
    run(move || {
        let node = node(&e, "p3", "c3");
        let mut me = Ctx::<ErlPid>::new();
        node.register("t3ctl", &me.pid()).unwrap();
        let mut doomed = erl(
            &e,
            "e3b",
            "c3",
            r#"{t3ctl, 'p3@127.0.0.1'} ! self(), receive never -> ok end."#,
        );
        let w = me.receive();
        let wp = node.pid_of::<Term>(&w).unwrap();
        let mon = me.monitor(&wp);
        // Let the proxy's own monitor reach Erlang before the node dies.
        pcml::time::sleep(Duration::from_millis(100));
        doomed.kill();
        assert_eq!(
            me.receive_signal(),
            Signal::Down {
                monitor: mon,
                actor: wp.id(),
                reason: ExitReason::Killed("noconnection".into())
            }
        );
        assert!(!node.nodes().contains(&"e3b@127.0.0.1".to_string()));
        let mut watcher = erl(
            &e,
            "e3a",
            "c3",
            r#"P = 'p3@127.0.0.1',
            pong = net_adm:ping(P),
            monitor_node(P, true),
            io:format("UP~n"),
            receive {nodedown, P} -> io:format("NODEDOWN~n") end,
            receive never -> ok end."#,
        );
        watcher.expect("UP");
        node.stop();
        watcher.expect("NODEDOWN");
    });
}

#[test]
fn wrong_cookie_is_refused() {
    if !have_erl() {
        return;
    }
    let e = epmd();
    run(move || {
        let node = node(&e, "p4", "right");
        let mut erl = erl(
            &e,
            "e4",
            "wrong",
            r#"R = net_adm:ping('p4@127.0.0.1'), io:format("PING ~w~n", [R]),
            receive never -> ok end."#,
        );
        assert_eq!(erl.expect("PING"), "PING pang");
        match node.connect("e4@127.0.0.1") {
            Err(DistError::Cookie(why)) => assert!(why.contains("cookie"), "{why}"),
            other => panic!("expected a cookie error, got {other:?}"),
        }
        assert!(node.nodes().is_empty());
    });
}

/// Handshakes with a pcml node as `raw@127.0.0.1`, over a plain socket.
fn raw_connect(port: u16, cookie: &str) -> std::net::TcpStream {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(WAIT)).unwrap();
    let send = |s: &mut std::net::TcpStream, b: &[u8]| {
        let mut out = (b.len() as u16).to_be_bytes().to_vec();
        out.extend_from_slice(b);
        s.write_all(&out).unwrap();
    };
    let recv = |s: &mut std::net::TcpStream| {
        let mut l = [0u8; 2];
        s.read_exact(&mut l).unwrap();
        let mut b = vec![0u8; u16::from_be_bytes(l) as usize];
        s.read_exact(&mut b).unwrap();
        b
    };
    let name = b"raw@127.0.0.1";
    let mut hello = vec![b'N'];
    hello.extend_from_slice(&0x1_0307_3fbdu64.to_be_bytes());
    hello.extend_from_slice(&7u32.to_be_bytes());
    hello.extend_from_slice(&(name.len() as u16).to_be_bytes());
    hello.extend_from_slice(name);
    send(&mut s, &hello);
    assert_eq!(recv(&mut s), b"sok");
    let ch = recv(&mut s);
    let challenge = u32::from_be_bytes([ch[9], ch[10], ch[11], ch[12]]);
    let digest = |c: u32| -> [u8; 16] {
        use md5::Digest;
        let mut h = md5::Md5::new();
        h.update(cookie.as_bytes());
        h.update(c.to_string().as_bytes());
        h.finalize().into()
    };
    let mut reply = vec![b'r'];
    reply.extend_from_slice(&99u32.to_be_bytes());
    reply.extend_from_slice(&digest(challenge));
    send(&mut s, &reply);
    let ack = recv(&mut s);
    assert_eq!(ack[1..], digest(99));
    s
}

/// Whether the peer closes `s` (reads to the end, skipping ticks).
fn closed_by_peer(s: &mut std::net::TcpStream) -> bool {
    use std::io::Read;
    let mut b = [0u8; 256];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

#[test]
fn malformed_and_oversized_frames_close_the_connection() {
    if !have_erl() {
        return;
    }
    let e = epmd();
    run(move || {
        let node = node(&e, "p5", "c5");
        let echo = spawn_echo(&node);
        node.register("t5echo", &echo).unwrap();
        let port = node.port();
        let bad_frames: Vec<Vec<u8>> = vec![
            vec![0x7f, 0xff, 0xff, 0xff], // 2 GiB announced
            vec![0, 0, 0, 8, 112, 131, 108, 255, 255, 255, 255, 0], // a list of 4G elements
            vec![0, 0, 0, 3, 7, 7, 7],    // no pass-through byte
            {
                // nesting 1000 deep
                let mut f = vec![112, 131];
                for _ in 0..1000 {
                    f.extend_from_slice(&[104, 1]);
                }
                f.push(106);
                let mut out = (f.len() as u32).to_be_bytes().to_vec();
                out.extend(f);
                out
            },
            vec![0, 0, 0, 4, 112, 131, 82, 0], // an atom cache reference
        ];
        for f in bad_frames {
            let closed = join_thread(std::thread::spawn(move || {
                use std::io::Write;
                let mut s = raw_connect(port, "c5");
                s.write_all(&f).unwrap();
                closed_by_peer(&mut s)
            }));
            assert!(closed, "the node kept a connection after a bad frame");
        }
        // The node still serves: a registered send from a raw peer is answered.
        let reply = join_thread(std::thread::spawn(move || {
            use std::io::{Read, Write};
            let mut s = raw_connect(port, "c5");
            let from = Term::from(ErlPid::new("raw@127.0.0.1", 1, 0, 7));
            let ctrl = tuple(vec![
                Term::from(pcml_dist::term::FixInteger::from(6)),
                from.clone(),
                atom(""),
                atom("t5echo"),
            ]);
            let mut body = vec![112];
            pcml_dist::wire::encode_into(&ctrl, &mut body);
            pcml_dist::wire::encode_into(&tuple(vec![from, atom("hi")]), &mut body);
            let mut out = (body.len() as u32).to_be_bytes().to_vec();
            out.extend(body);
            s.write_all(&out).unwrap();
            // Frames until a SEND carrying {echo, hi}.
            loop {
                let mut l = [0u8; 4];
                s.read_exact(&mut l).unwrap();
                let mut b = vec![0u8; u32::from_be_bytes(l) as usize];
                s.read_exact(&mut b).unwrap();
                if b.is_empty() {
                    continue;
                }
                let (ctrl, n) = pcml_dist::wire::decode_term(&b[1..]).unwrap();
                if ctrl.to_string().starts_with("{2,") {
                    return pcml_dist::wire::decode_term(&b[1 + n..]).unwrap().0;
                }
            }
        }));
        assert_eq!(reply, tuple(vec![atom("echo"), atom("hi")]));
    });
}

#[test]
fn a_hundred_erlang_processes_and_a_hundred_actors() {
    if !have_erl() {
        return;
    }
    let e = epmd();
    run(move || {
        let node = node(&e, "p6", "c6");
        for i in 0..100 {
            let n = node.clone();
            let a = actor::spawn(move |mut ctx: Ctx<(ErlPid, i64, i64)>| {
                loop {
                    let (from, who, k) = ctx.receive();
                    let reply = n.pid_of::<(Atom, i64, i64)>(&from).unwrap();
                    let _ = reply.send((Atom::from("reply"), who * 1000, k));
                }
            });
            node.register(&format!("t6_{i}"), &a).unwrap();
        }
        let mut erl = erl(
            &e,
            "e6",
            "c6",
            r#"P = 'p6@127.0.0.1', pong = net_adm:ping(P), Parent = self(),
            [spawn(fun() ->
                Name = list_to_atom("t6_" ++ integer_to_list(I)),
                [begin
                    {Name, P} ! {self(), I, K},
                    receive {reply, R, K} when R =:= I * 1000 -> ok end
                 end || K <- lists:seq(1, 20)],
                Parent ! {done, I}
             end) || I <- lists:seq(0, 99)],
            [receive {done, I} -> ok end || I <- lists:seq(0, 99)],
            io:format("ALL 100~n"),
            receive never -> ok end."#,
        );
        erl.expect("ALL 100");
    });
}

#[test]
fn gen_server_call_and_timeout() {
    if !have_erl() {
        return;
    }
    let e = epmd();
    run(move || {
        let node = node(&e, "p7", "c7");
        let mut erl = erl(
            &e,
            "e7",
            "c7",
            r#"register(silent, self()), io:format("READY~n"), receive never -> ok end."#,
        );
        erl.expect("READY");
        let mut me = Ctx::<Term>::new();
        me.pid().send(atom("unrelated")).unwrap();
        let request = tuple(vec![
            atom("call"),
            atom("erlang"),
            atom("binary_to_atom"),
            pcml_dist::term::IntoTerm::into_term(vec!["hello"]),
            pcml_dist::term::IntoTerm::into_term(node.erl_pid(&me.pid())),
        ]);
        let reply = node
            .call(&mut me, "e7@127.0.0.1", "rex", request, WAIT)
            .unwrap();
        assert_eq!(reply, atom("hello"));
        let late = node.call(
            &mut me,
            "e7@127.0.0.1",
            "silent",
            atom("ping"),
            Duration::from_millis(200),
        );
        assert!(matches!(late, Err(DistError::Timeout)), "{late:?}");
        // The message that was there before the calls is still there.
        assert_eq!(me.try_receive(), Some(atom("unrelated")));
    });
}

/// The guide's supervised counter, called from Erlang.
#[test]
fn supervised_worker_serves_erlang() {
    use pcml::actor::{ChildSpec, Strategy, Supervisor};
    if !have_erl() {
        return;
    }
    let e = epmd();
    run(move || {
        let node = node(&e, "p8", "c8");
        let n = node.clone();
        let _sup = Supervisor::new(Strategy::OneForOne)
            .child(ChildSpec::new("t8counter", move || {
                let node = n.clone();
                actor::spawn(move |mut ctx: Ctx<Term>| {
                    node.register("t8counter", &ctx.pid()).unwrap();
                    let mut total = 0i64;
                    loop {
                        let t = ctx.receive();
                        if let Ok((_, from, k)) = <(Atom, ErlPid, i64)>::from_term(t.clone()) {
                            assert!(k >= 0, "negative add");
                            total += k;
                            let _ = node.send(&from, (Atom::from("ok"), total));
                        } else if let Ok((_, from)) = <(Atom, ErlPid)>::from_term(t) {
                            let _ = node.send(&from, (Atom::from("total"), total));
                        }
                    }
                })
            }))
            .start();
        let mut erl = erl(
            &e,
            "e8",
            "c8",
            r#"C = {t8counter, 'p8@127.0.0.1'},
            C ! {add, self(), 5}, receive R1 -> io:format("R1 ~w~n", [R1]) end,
            Ref = monitor(process, C),
            C ! {add, self(), -1},
            receive {'DOWN', Ref, process, Who, Why} -> io:format("DOWN ~w ~w~n", [Who, Why]) end,
            timer:sleep(200),
            C ! {total, self()}, receive R2 -> io:format("R2 ~w~n", [R2]) end,
            receive never -> ok end."#,
        );
        assert_eq!(erl.expect("R1"), "R1 {ok,5}");
        assert_eq!(
            erl.expect("DOWN"),
            "DOWN {t8counter,'p8@127.0.0.1'} {panic,<<110,101,103,97,116,105,118,101,32,97,100,100>>}"
        );
        assert_eq!(erl.expect("R2"), "R2 {total,0}");
    });
}

/// Ticks keep an idle connection up, and a peer that falls silent (stopped with SIGSTOP) is
/// down after the tick time.
#[test]
fn ticks_and_silence() {
    if !have_erl() {
        return;
    }
    let e = epmd();
    run(move || {
        let node = NodeBuilder::new("p9@127.0.0.1")
            .cookie("c9")
            .epmd_port(e.port)
            .net_ticktime(Duration::from_secs(2))
            .start()
            .unwrap();
        let mut me = Ctx::<ErlPid>::new();
        node.register("t9ctl", &me.pid()).unwrap();
        let mut erl = erl(
            &e,
            "e9",
            "c9",
            r#"net_kernel:set_net_ticktime(2, 0),
            {t9ctl, 'p9@127.0.0.1'} ! self(), receive never -> ok end."#,
        );
        let w = me.receive();
        let wp = node.pid_of::<Term>(&w).unwrap();
        let mon = me.monitor(&wp);
        // Idle for twice the tick time: both sides tick, nobody gives up.
        pcml::time::sleep(Duration::from_secs(4));
        assert!(node.nodes().contains(&"e9@127.0.0.1".to_string()));
        assert!(me.try_receive_signal().is_none());
        let pid = erl.kid.0.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-STOP", &pid])
                .status()
                .unwrap()
                .success()
        );
        let down = me.receive_signal();
        let _ = Command::new("kill").args(["-CONT", &pid]).status();
        assert_eq!(
            down,
            Signal::Down {
                monitor: mon,
                actor: wp.id(),
                reason: ExitReason::Killed("noconnection".into())
            }
        );
        erl.kill();
    });
}

/// Milliseconds since the Unix epoch, Erlang's `erlang:system_time(millisecond)`.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Sleeps (in pcml time) until the wall clock reads `at` milliseconds.
fn sleep_until_ms(at: u64) {
    let now = now_ms();
    if at > now {
        pcml::time::sleep(Duration::from_millis(at - now));
    }
}

/// Both nodes connect to each other at the same moment, five times over, against an Erlang
/// node whose name sorts before the pcml node's (the pcml node's attempt wins: it answers
/// Erlang's `nok`) and one whose name sorts after (Erlang's attempt wins: it answers ours
/// `nok`, and ours waits for the accepted one). Each time both connects succeed and
/// messages pass both ways over the one connection that is left.
#[test]
fn simultaneous_connect_both_ways() {
    if !have_erl() {
        return;
    }
    let e = epmd();
    run(move || {
        let node = node(&e, "m10", "c10");
        let trials = 5u64;
        let mut fibers = Vec::new();
        for peer in ["a10", "z10"] {
            let ctl_name = format!("t10{peer}");
            let mut erl = erl(
                &e,
                peer,
                "c10",
                &format!(
                    r#"P = 'm10@127.0.0.1', register(ctl, self()),
                    T0 = erlang:system_time(millisecond) + 1500,
                    io:format("T0 ~w~n", [T0]),
                    Trial = fun(I) ->
                        At = T0 + I * 1000,
                        timer:sleep(max(0, At - erlang:system_time(millisecond))),
                        R = net_kernel:connect_node(P),
                        {{{ctl_name}, P}} ! {{hi, I}},
                        receive {{ho, I}} -> io:format("TRIAL ~w ~w~n", [I, R])
                        after 10000 -> io:format("TRIAL ~w no_answer~n", [I]) end,
                        timer:sleep(max(0, At + 600 - erlang:system_time(millisecond))),
                        erlang:disconnect_node(P)
                    end,
                    lists:foreach(Trial, lists:seq(0, {last})),
                    io:format("DONE~n"), receive never -> ok end."#,
                    last = trials - 1
                ),
            );
            let node = node.clone();
            fibers.push(pcml::spawn(move || {
                let mut me = Ctx::<Term>::new();
                node.register(&ctl_name, &me.pid()).unwrap();
                let t0: u64 = erl.expect("T0 ")[3..].parse().unwrap();
                let peer_node = format!("{peer}@127.0.0.1");
                for i in 0..trials {
                    sleep_until_ms(t0 + i * 1000);
                    node.connect(&peer_node)
                        .unwrap_or_else(|e| panic!("trial {i} with {peer}: {e}"));
                    let hi = me.receive_timeout(WAIT).expect("Erlang's hello");
                    assert_eq!(hi, (atom("hi"), i).into_term());
                    node.send_named(&peer_node, "ctl", (atom("ho"), i)).unwrap();
                    assert_eq!(erl.expect("TRIAL"), format!("TRIAL {i} true"));
                }
                erl.expect("DONE");
            }));
        }
        for f in fibers {
            f.join().unwrap();
        }
    });
}

/// A round trip to an echo actor through `proxy` (a proxy on this node of the echo on
/// another): once the reply is back, everything the proxy sent before (its monitor of the
/// echo) has reached the other node.
fn sync_through(me: &mut Ctx<Term>, my: &ErlPid, proxy: &pcml::actor::Pid<Term>) {
    proxy.send((my.clone(), atom("sync")).into_term()).unwrap();
    assert_eq!(
        me.receive_timeout(WAIT),
        Some((atom("echo"), atom("sync")).into_term())
    );
}

/// Waits (in pcml time) until `f` holds.
fn eventually(what: &str, f: impl Fn() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < WAIT, "never: {what}");
        pcml::time::sleep(Duration::from_millis(5));
    }
}

/// Two pcml nodes (in one process, over TCP through EPMD as any two nodes): sends by name and
/// by pid, a monitor and a link across in both directions with their reasons, and node down
/// (`noconnection`) when one stops.
#[test]
fn pcml_to_pcml() {
    if !have_erl() {
        return;
    }
    let e = epmd();
    run(move || {
        let a = node(&e, "pa", "c11");
        let b = node(&e, "pb", "c11");
        let (an, bn) = ("pa@127.0.0.1", "pb@127.0.0.1");
        // On a: an echo by name; on b: this fiber.
        let echo = spawn_echo(&a);
        a.register("t11echo", &echo).unwrap();
        let mut me = Ctx::<Term>::new();
        me.trap_exits(true);
        let my = b.erl_pid(&me.pid());
        b.send_named(an, "t11echo", (my.clone(), atom("by_name")))
            .unwrap();
        assert_eq!(
            me.receive_timeout(WAIT),
            Some((atom("echo"), atom("by_name")).into_term())
        );
        assert_eq!(a.nodes(), vec![bn.to_string()]);
        assert_eq!(b.nodes(), vec![an.to_string()]);
        // A pid of a's actor on b, used as a local pid: send, monitor.
        let echo_on_b = b.pid_of::<(ErlPid, Term)>(&a.erl_pid(&echo)).unwrap();
        echo_on_b.send((my.clone(), atom("by_pid"))).unwrap();
        assert_eq!(
            me.receive_timeout(WAIT),
            Some((atom("echo"), atom("by_pid")).into_term())
        );
        let term_echo_on_b = b.pid_of::<Term>(&a.erl_pid(&echo)).unwrap();
        let mon = me.monitor(&term_echo_on_b);
        // A round trip through the new proxy: its monitor, sent first on the same connection,
        // has reached a before the echo ends.
        sync_through(&mut me, &my, &term_echo_on_b);
        echo.send(atom("stop")).unwrap();
        assert_eq!(
            me.receive_signal(),
            Signal::Down {
                monitor: mon,
                actor: term_echo_on_b.id(),
                reason: ExitReason::Normal
            }
        );
        // A link from b to an actor of a, which is killed.
        let victim = spawn_echo(&a);
        let victim_on_b = b.pid_of::<Term>(&a.erl_pid(&victim)).unwrap();
        me.link(&victim_on_b);
        sync_through(&mut me, &my, &victim_on_b);
        victim.kill("boom");
        assert_eq!(
            me.receive_signal(),
            Signal::Exit {
                from: victim_on_b.id(),
                reason: ExitReason::Killed("boom".into())
            }
        );
        // A link from an actor of a to this fiber on b: a's actor ends, b hears its reason.
        let me_on_a = a.pid_of::<Term>(&my).unwrap();
        let (linked, is_linked) = pcml::chan::unbounded::<()>();
        let linker = actor::spawn(move |mut ctx: Ctx<()>| {
            ctx.link(&me_on_a);
            let _ = linked.send(());
            ctx.receive();
        });
        let linker_erl = a.erl_pid(&linker);
        is_linked.recv().unwrap();
        linker.kill("bye");
        match me.receive_signal() {
            Signal::Exit { from, reason } => {
                assert_eq!(reason, ExitReason::Killed("bye".into()));
                // The proxy has ended; once b has swept it (any export sweeps), b still
                // knows whom the exit came from.
                pcml::time::sleep(Duration::from_millis(50));
                let _ = b.erl_pid(&actor::spawn(|_: Ctx<()>| {}));
                assert_eq!(b.remote_of(from), Some(linker_erl));
            }
            other => panic!("expected the linked actor's exit, got {other:?}"),
        }
        // Node down: a stops, b's monitor of a's actor says noconnection.
        let survivor = actor::spawn(|mut ctx: Ctx<Term>| {
            loop {
                ctx.receive();
            }
        });
        let survivor_on_b = b.pid_of::<Term>(&a.erl_pid(&survivor)).unwrap();
        let mon = me.monitor(&survivor_on_b);
        pcml::time::sleep(Duration::from_millis(100));
        a.stop();
        assert_eq!(
            me.receive_signal(),
            Signal::Down {
                monitor: mon,
                actor: survivor_on_b.id(),
                reason: ExitReason::Killed("noconnection".into())
            }
        );
        eventually("b sees a go", || b.nodes().is_empty());
        assert!(survivor.is_alive(), "a's actors outlive its node");
        survivor.kill("done");
    });
}

/// Two pcml nodes connect to each other at the same moment, twenty times: each time both
/// connects succeed, one connection is left, messages pass both ways, and a disconnect is
/// seen by both.
#[test]
fn pcml_nodes_connect_to_each_other_at_once() {
    if !have_erl() {
        return;
    }
    let e = epmd();
    run(move || {
        let a = node(&e, "qa", "c12");
        let b = node(&e, "qb", "c12");
        let (an, bn) = ("qa@127.0.0.1", "qb@127.0.0.1");
        let mut inbox_a = Ctx::<u64>::new();
        a.register("t12a", &inbox_a.pid()).unwrap();
        let (tx, rx) = pcml::chan::unbounded::<u64>();
        let inbox_b = actor::spawn(move |mut ctx: Ctx<u64>| {
            loop {
                let _ = tx.send(ctx.receive());
            }
        });
        b.register("t12b", &inbox_b).unwrap();
        for i in 0..20u64 {
            let go = pcml::CVar::new();
            let connect = |n: Node, to: &'static str, go: pcml::CVar| {
                pcml::spawn(move || {
                    go.wait();
                    n.connect(to)
                })
            };
            let ja = connect(a.clone(), bn, go.clone());
            let jb = connect(b.clone(), an, go.clone());
            go.signal();
            let (ra, rb) = (ja.join().unwrap(), jb.join().unwrap());
            assert!(ra.is_ok() && rb.is_ok(), "trial {i}: {ra:?} {rb:?}");
            eventually("both see one connection", || {
                a.nodes() == vec![bn.to_string()] && b.nodes() == vec![an.to_string()]
            });
            b.send_named(an, "t12a", i).unwrap();
            assert_eq!(inbox_a.receive_timeout(WAIT), Some(i));
            a.send_named(bn, "t12b", i).unwrap();
            assert_eq!(rx.recv(), Ok(i));
            if i % 2 == 0 {
                a.disconnect(bn);
            } else {
                b.disconnect(an);
            }
            eventually("both see the disconnect", || {
                a.nodes().is_empty() && b.nodes().is_empty()
            });
        }
    });
}

mod decoder {
    //! Property tests of the decoder of terms from peers: any bytes give a term or an error,
    //! never a panic or a huge allocation, and every term this crate encodes decodes back.

    use pcml_dist::term::{Atom, Binary, FixInteger, Float, List, Map, Term, Tuple};
    use pcml_dist::wire::{check_term, decode_term};
    use proptest::prelude::*;

    fn encode(t: &Term) -> Vec<u8> {
        let mut b = Vec::new();
        pcml_dist::wire::encode_into(t, &mut b);
        b
    }

    /// The term with strings (lists of small integers, which the encoder writes as
    /// `STRING_EXT`) written as lists, as Erlang sees both.
    fn norm(t: Term) -> Term {
        match t {
            Term::ByteList(b) => Term::from(List::from(
                b.bytes
                    .into_iter()
                    .map(|x| Term::from(FixInteger::from(i32::from(x))))
                    .collect::<Vec<_>>(),
            )),
            Term::List(l) => Term::from(List::from(
                l.elements.into_iter().map(norm).collect::<Vec<_>>(),
            )),
            Term::Tuple(t) => Term::from(Tuple::from(
                t.elements.into_iter().map(norm).collect::<Vec<_>>(),
            )),
            Term::Map(m) => Term::from(Map::from(
                m.map
                    .into_iter()
                    .map(|(k, v)| (norm(k), norm(v)))
                    .collect::<std::collections::HashMap<_, _>>(),
            )),
            other => other,
        }
    }

    fn term() -> impl Strategy<Value = Term> {
        let leaf = prop_oneof![
            "[a-z][a-zA-Z0-9_@]{0,10}".prop_map(|s| Term::from(Atom::from(s.as_str()))),
            any::<i32>().prop_map(|v| Term::from(FixInteger::from(v))),
            any::<f64>()
                .prop_filter("finite", |f| f.is_finite())
                .prop_map(|v| Term::from(Float::try_from(v).unwrap())),
            proptest::collection::vec(any::<u8>(), 0..20).prop_map(|b| Term::from(Binary::from(b))),
        ];
        // Map keys are leaves: `eetf` hashes a map in its iteration order, so two equal maps
        // as keys of a map may not compare equal.
        let key = leaf.clone();
        leaf.prop_recursive(4, 64, 8, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..8)
                    .prop_map(|v| Term::from(Tuple::from(v))),
                proptest::collection::vec(inner.clone(), 1..8)
                    .prop_map(|v| Term::from(List::from(v))),
                proptest::collection::vec((key.clone(), inner), 0..4).prop_map(|kv| {
                    Term::from(Map::from(
                        kv.into_iter().collect::<std::collections::HashMap<_, _>>(),
                    ))
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 2000,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn any_bytes_decode_or_fail(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut v = vec![131];
            v.extend(b);
            let _ = decode_term(&v);
        }

        #[test]
        fn terms_round_trip(t in term()) {
            let b = encode(&t);
            prop_assert_eq!(check_term(&b), Ok(b.len()));
            let (back, n) = decode_term(&b).unwrap();
            prop_assert_eq!(n, b.len());
            prop_assert_eq!(norm(back), norm(t));
        }

        #[test]
        fn damaged_terms_decode_or_fail(
            t in term(),
            cuts in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
            keep in any::<usize>(),
        ) {
            let mut b = encode(&t);
            for (at, x) in cuts {
                let i = at % b.len();
                b[i] = x;
            }
            b.truncate(1 + keep % b.len());
            if let Ok((_, n)) = decode_term(&b) {
                prop_assert!(n <= b.len());
            }
        }
    }
}
