//! Round-trip latency and one-way throughput between nodes on loopback: a pcml node and an
//! Erlang node against two Erlang nodes, measured in the same run, alternating.
//!
//! ```text
//! cargo run --release -p pcml-dist --example dist_bench -- [ROUNDS] [ROUND_TRIPS] [MESSAGES]
//! ```
//!
//! Starts a private EPMD and an Erlang node `peer` with two registered processes: `echo`
//! answers `{From, X}` with `{echo, X}`, `sink` counts messages until `{From, done}` and
//! answers `{done, Count}`. Each round, an Erlang node `client` and then this pcml node do
//! ROUND_TRIPS sequential round trips to `echo` (a round trip is two messages) and send
//! MESSAGES `{x, I}` to `sink` followed by `done` (throughput counts messages until the
//! answer). Prints every round and the medians. Needs `erl` and `epmd` on the PATH.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pcml::actor::Ctx;
use pcml_dist::NodeBuilder;
use pcml_dist::term::{FromTerm, IntoTerm, Term, atom, tuple};

struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn erl(
    epmd: u16,
    name: &str,
    script: &str,
) -> (Kid, std::io::Lines<BufReader<std::process::ChildStdout>>) {
    let mut c = Command::new("erl")
        .args([
            "-name",
            &format!("{name}@127.0.0.1"),
            "-setcookie",
            "bench",
            "-noshell",
            "-noinput",
            "-eval",
            script,
        ])
        .env("ERL_EPMD_PORT", epmd.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("erl runs (install erlang-base)");
    let out = c.stdout.take().expect("piped");
    (Kid(c), BufReader::new(out).lines())
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("numbers"))
        .collect();
    let rounds = args.first().copied().unwrap_or(3);
    let n = args.get(1).copied().unwrap_or(20_000);
    let m = args.get(2).copied().unwrap_or(200_000);
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let _epmd = Kid(Command::new("epmd")
        .args(["-port", &port.to_string()])
        .spawn()
        .expect("epmd runs"));
    std::thread::sleep(Duration::from_millis(300));
    let (_peer, mut peer_out) = erl(
        port,
        "peer",
        r#"Echo = fun Loop() -> receive {From, X} -> From ! {echo, X}, Loop() end end,
        register(echo, spawn(Echo)),
        Sink = fun Loop(N) -> receive {From, done} -> From ! {done, N}, Loop(0); _ -> Loop(N + 1) end end,
        register(sink, spawn(fun() -> Sink(0) end)),
        io:format("READY~n"), receive never -> ok end."#,
    );
    assert_eq!(peer_out.next().unwrap().unwrap(), "READY");
    let client_script = format!(
        r#"P = 'peer@127.0.0.1', pong = net_adm:ping(P), N = {n}, M = {m},
        RT = fun Loop(0) -> ok; Loop(K) -> {{echo, P}} ! {{self(), K}}, receive {{echo, K}} -> Loop(K - 1) end end,
        RT(1000),
        {{T1, _}} = timer:tc(fun() -> RT(N) end),
        Thr = fun() -> [{{sink, P}} ! {{x, I}} || I <- lists:seq(1, M)], {{sink, P}} ! {{self(), done}},
                       receive {{done, C}} -> C end end,
        Thr(),
        {{T2, M}} = timer:tc(Thr),
        io:format("ERL ~w ~w~n", [T1 / N, M / (T2 / 1.0e6)]), halt()."#
    );
    let (mut erl_rt, mut erl_thr, mut pcml_rt, mut pcml_thr) = (vec![], vec![], vec![], vec![]);
    pcml::Runtime::builder()
        .procs(2)
        .build()
        .unwrap()
        .block_on(move || {
            let node = NodeBuilder::new("bench@127.0.0.1")
                .cookie("bench")
                .epmd_port(port)
                .start()
                .unwrap();
            let peer = "peer@127.0.0.1";
            let mut me = Ctx::<Term>::new();
            let my = node.erl_pid(&me.pid()).into_term();
            let trip = |me: &mut Ctx<Term>, k: usize| {
                node.send_named(peer, "echo", tuple(vec![my.clone(), (k as u64).into_term()]))
                    .unwrap();
                let r = me.receive();
                debug_assert_eq!(r, tuple(vec![atom("echo"), (k as u64).into_term()]));
            };
            let thr = |me: &mut Ctx<Term>| {
                for i in 0..m {
                    pcml::consume_budget();
                    node.send_named(peer, "sink", tuple(vec![atom("x"), (i as u64).into_term()]))
                        .unwrap();
                }
                node.send_named(peer, "sink", tuple(vec![my.clone(), atom("done")]))
                    .unwrap();
                let (_, c) = <(Term, u64)>::from_term(me.receive()).unwrap();
                assert_eq!(c as usize, m);
            };
            for round in 1..=rounds {
                // The Erlang client first (the pcml node is idle meanwhile).
                let script = client_script.clone();
                let line = pcml::spawn_blocking(move || {
                    let (_client, mut out) = erl(port, "client", &script);
                    out.next().unwrap().unwrap()
                })
                .join()
                .unwrap();
                let v: Vec<f64> = line
                    .split_whitespace()
                    .skip(1)
                    .map(|x| x.parse().unwrap())
                    .collect();
                erl_rt.push(v[0]);
                erl_thr.push(v[1]);
                for k in 0..1000 {
                    trip(&mut me, k);
                }
                let t = Instant::now();
                for k in 0..n {
                    trip(&mut me, k);
                }
                let us = t.elapsed().as_secs_f64() * 1e6 / n as f64;
                thr(&mut me);
                let t = Instant::now();
                thr(&mut me);
                let per_s = m as f64 / t.elapsed().as_secs_f64();
        pcml_rt.push(us);
        pcml_thr.push(per_s);
        println!(
            "round {round}: round trip erlang-erlang {:.1} us, pcml-erlang {us:.1} us; one-way erlang-erlang {:.0} msgs/s, pcml-erlang {per_s:.0} msgs/s",
            v[0], v[1]
        );
    }
            let (e_rt, p_rt, e_thr, p_thr) = (
        median(&mut erl_rt),
        median(&mut pcml_rt),
        median(&mut erl_thr),
        median(&mut pcml_thr),
    );
    println!("median of {rounds} rounds ({n} round trips, {m} one-way messages each):");
    println!(
        "  round trip: Erlang-Erlang {e_rt:.1} us, pcml-Erlang {p_rt:.1} us (pcml/Erlang {:.2}x time)",
        p_rt / e_rt
    );
    println!(
        "  one-way:    Erlang-Erlang {e_thr:.0} msgs/s, pcml-Erlang {p_thr:.0} msgs/s (pcml/Erlang {:.2}x)",
        p_thr / e_thr
    );
            node.stop();
        })
        .unwrap();
}
