//! Distribution: a pcml node talking to an Erlang node over the Erlang distribution protocol
//! on loopback, against an Erlang node talking to the same Erlang node, measured alternately
//! in the same run.
//!
//! The run starts a private EPMD and an Erlang node `peer` with two registered processes:
//! `echo` answers `{From, X}` with `{echo, X}`, and `sink` counts messages until
//! `{From, done}` and answers `{done, Count}`. For each configured proc count it starts an
//! Erlang client node (`erl +S P`, driven through its standard input) and a pcml node in a
//! runtime of P procs, and alternates, sample by sample: the Erlang client's round trips,
//! the pcml node's, the Erlang client's one-way messages, the pcml node's.
//!
//! - **Round trip**: N sequential `{echo, peer} ! {self(), K}` then a receive of `{echo, K}`;
//!   one sample is the time of all N (nanoseconds per round trip, the median of the samples).
//! - **One-way**: M `{sink, peer} ! {x, I}` sent back to back, then `{self(), done}`; the
//!   sample ends when `{done, Count}` arrives, so it counts messages delivered, not queued.
//!
//! Each side sends by registered name (`send_named` on the pcml node, as Erlang's
//! `{Name, Node} ! Msg`). The answers: every echo carries its K, and the sink counted M.
//! Skipped with a note without `erl` and `epmd` (Debian: `apt-get install erlang-base`),
//! with `--no-peers`, and at the tests' tiny sizes.

use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use pcml::actor::Ctx as ActorCtx;
use pcml_dist::NodeBuilder;
use pcml_dist::term::{FromTerm, IntoTerm, Term, atom, tuple};

use super::{Ctx, in_pcml};
use crate::peers::have_command;
use crate::runner::{Error, Metric, Result, Sample, timed};
use crate::table::{Goal, Row, Section};

const RT: Metric = Metric::NsPerOp { op: "round trip" };
const ONE_WAY: Metric = Metric::Rate { unit: "msgs/s" };
const RT_PROG: &str = "node round trip";
const ONE_WAY_PROG: &str = "node one-way messages";
const PCML: &str = "pcml node";
const ERLANG: &str = "Erlang node";
const COOKIE: &str = "pcmlbench";

/// A child process killed and reaped when dropped.
struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// An Erlang node started with `script`, its standard input and output piped.
struct Erl {
    kid: Kid,
    stdin: ChildStdin,
    out: Lines<BufReader<ChildStdout>>,
}

impl Erl {
    fn start(epmd: u16, name: &str, schedulers: Option<usize>, script: &str) -> Result<Erl> {
        let mut cmd = Command::new("erl");
        cmd.args(["-name", &format!("{name}@127.0.0.1"), "-setcookie", COOKIE]);
        cmd.arg("-noshell");
        if let Some(s) = schedulers {
            cmd.args(["+S", &format!("{s}:{s}")]);
        }
        cmd.args(["-eval", script])
            .env("ERL_EPMD_PORT", epmd.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd
            .spawn()
            .map_err(|e| Error::Failed(format!("erl: {e}")))?;
        let stdin = child.stdin.take().expect("piped");
        let out = BufReader::new(child.stdout.take().expect("piped")).lines();
        let mut erl = Erl {
            kid: Kid(child),
            stdin,
            out,
        };
        let ready = erl.line()?;
        if ready != "READY" {
            return Err(Error::Failed(format!(
                "erl node {name} did not start: {ready}"
            )));
        }
        Ok(erl)
    }

    fn line(&mut self) -> Result<String> {
        match self.out.next() {
            Some(Ok(l)) => Ok(l),
            _ => {
                let status = self.kid.0.try_wait().ok().flatten();
                Err(Error::Failed(format!(
                    "an erl node stopped answering (exit status {status:?})"
                )))
            }
        }
    }

    /// Sends a command line and reads the answer's numbers after `tag`.
    fn command(&mut self, cmd: &str, tag: &str) -> Result<Vec<u64>> {
        writeln!(self.stdin, "{cmd}").map_err(|e| Error::Failed(format!("erl stdin: {e}")))?;
        let l = self.line()?;
        let rest = l
            .strip_prefix(tag)
            .ok_or_else(|| Error::Failed(format!("erl answered {l:?} to {cmd:?}")))?;
        rest.split_whitespace()
            .map(|w| {
                w.parse()
                    .map_err(|_| Error::Failed(format!("erl answered {l:?}")))
            })
            .collect()
    }
}

/// The echo and sink node; it halts when its standard input closes (this process died).
const PEER: &str = r#"
Echo = fun Loop() -> receive {From, X} -> From ! {echo, X}, Loop() end end,
register(echo, spawn(Echo)),
Sink = fun Loop(N) -> receive {From, done} -> From ! {done, N}, Loop(0); _ -> Loop(N + 1) end end,
register(sink, spawn(fun() -> Sink(0) end)),
io:format("READY~n"),
io:get_line(""), halt()."#;

/// The Erlang client: `rt N` answers `RT Micros`, `thr M` answers `THR Micros Count`.
const CLIENT: &str = r#"
P = 'peer@127.0.0.1',
Ping = fun L(0) -> pang; L(K) -> case net_adm:ping(P) of pong -> pong; pang -> timer:sleep(50), L(K - 1) end end,
pong = Ping(100),
RT = fun L(0) -> ok; L(K) -> {echo, P} ! {self(), K}, receive {echo, K} -> L(K - 1) end end,
Send = fun L(0) -> ok; L(I) -> {sink, P} ! {x, I}, L(I - 1) end,
Thr = fun(M) -> Send(M), {sink, P} ! {self(), done}, receive {done, C} -> C end end,
io:format("READY~n"),
Cmd = fun L() ->
    case io:get_line("") of
        "rt " ++ A -> {T, ok} = timer:tc(fun() -> RT(list_to_integer(string:trim(A))) end),
                      io:format("RT ~w~n", [T]), L();
        "thr " ++ A -> {T, C} = timer:tc(fun() -> Thr(list_to_integer(string:trim(A))) end),
                       io:format("THR ~w ~w~n", [T, C]), L();
        _ -> halt()
    end
end,
Cmd()."#;

/// Why the section cannot run here, if it cannot.
fn skip_reason(ctx: &Ctx<'_>) -> Option<&'static str> {
    if ctx.cfg.tiny {
        Some("tiny sizes: starting Erlang nodes takes seconds")
    } else if !ctx.cfg.peers {
        Some("--no-peers (both rows need an Erlang node to talk to)")
    } else if !have_command("erl") || !have_command("epmd") {
        Some("erl and epmd are not installed (Debian: apt-get install erlang-base)")
    } else {
        None
    }
}

/// A free TCP port on loopback (for the private EPMD).
fn free_port() -> Result<u16> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| Error::Failed(format!("no free port: {e}")))
}

/// Starts a private EPMD on `port` and waits until it answers.
fn start_epmd(port: u16) -> Result<Kid> {
    let kid = Kid(Command::new("epmd")
        .args(["-port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::Failed(format!("epmd: {e}")))?);
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if t.elapsed() > Duration::from_secs(5) {
            return Err(Error::Failed("epmd did not start in 5 s".into()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(kid)
}

/// What the Erlang client measured, as samples.
fn erl_round_trips(client: &mut Erl, n: u64) -> Result<Sample> {
    let v = client.command(&format!("rt {n}"), "RT ")?;
    Ok(Sample {
        seconds: v[0] as f64 / 1e6,
        ops: n,
    })
}

fn erl_one_way(client: &mut Erl, m: u64) -> Result<Sample> {
    let v = client.command(&format!("thr {m}"), "THR ")?;
    if v.get(1) != Some(&m) {
        return Err(Error::WrongAnswer(format!(
            "the sink counted {:?} of the Erlang node's {m} messages",
            v.get(1)
        )));
    }
    Ok(Sample {
        seconds: v[0] as f64 / 1e6,
        ops: m,
    })
}

/// The four rows' samples of one proc count.
#[derive(Default)]
struct Samples {
    erl_rt: Vec<Sample>,
    pcml_rt: Vec<Sample>,
    erl_thr: Vec<Sample>,
    pcml_thr: Vec<Sample>,
}

/// Runs the alternating measurement on `procs` procs (pcml) and `+S procs` (the Erlang
/// client): `runs` samples of each row, after a warm-up of each.
fn measure(epmd: u16, procs: usize, runs: usize, n: u64, m: u64) -> Result<Samples> {
    let client = Erl::start(epmd, &format!("client{procs}"), Some(procs), CLIENT)?;
    in_pcml(procs, move || {
        let mut client_slot = Some(client);
        let node = NodeBuilder::new(&format!("pcml{procs}@127.0.0.1"))
            .cookie(COOKIE)
            .epmd_port(epmd)
            .start()
            .map_err(|e| Error::Failed(format!("pcml node: {e}")))?;
        let peer = "peer@127.0.0.1";
        let mut me = ActorCtx::<Term>::new();
        let my = node.erl_pid(&me.pid()).into_term();
        // Timed with `timed`, so that the report shows what the scheduler did per round trip.
        let round_trips = |me: &mut ActorCtx<Term>, n: u64| -> Result<Sample> {
            timed(n, || {
                for k in 0..n {
                    let x = k.into_term();
                    node.send_named(peer, "echo", tuple(vec![my.clone(), x.clone()]))
                        .map_err(|e| Error::Failed(format!("send to echo: {e}")))?;
                    let got = me.receive();
                    if got != tuple(vec![atom("echo"), x]) {
                        return Err(Error::WrongAnswer(format!(
                            "echo answered {got:?} to round trip {k}"
                        )));
                    }
                }
                Ok(())
            })
        };
        let one_way = |me: &mut ActorCtx<Term>, m: u64| -> Result<Sample> {
            let t = Instant::now();
            for i in 0..m {
                pcml::consume_budget();
                node.send_named(peer, "sink", tuple(vec![atom("x"), i.into_term()]))
                    .map_err(|e| Error::Failed(format!("send to sink: {e}")))?;
            }
            node.send_named(peer, "sink", tuple(vec![my.clone(), atom("done")]))
                .map_err(|e| Error::Failed(format!("send to sink: {e}")))?;
            let answer = me.receive();
            let seconds = t.elapsed().as_secs_f64();
            match <(Term, u64)>::from_term(answer.clone()) {
                Ok((_, c)) if c == m => Ok(Sample { seconds, ops: m }),
                _ => Err(Error::WrongAnswer(format!(
                    "the sink answered {answer:?} to the pcml node's {m} messages"
                ))),
            }
        };
        // The Erlang client blocks on its pipe: from a blocking thread, not a proc.
        let mut erl = |f: fn(&mut Erl, u64) -> Result<Sample>, k: u64| -> Result<Sample> {
            let mut c = client_slot.take().expect("the client is back");
            let (c, r) = pcml::spawn_blocking(move || {
                let r = f(&mut c, k);
                (c, r)
            })
            .join()
            .map_err(|e| Error::Failed(format!("erl client thread: {e:?}")))?;
            client_slot = Some(c);
            r
        };
        let mut s = Samples::default();
        // Warm-up: connections made, code paths and buffers warm on both nodes.
        erl(erl_round_trips, n / 4 + 1)?;
        round_trips(&mut me, n / 4 + 1)?;
        erl(erl_one_way, m / 4 + 1)?;
        one_way(&mut me, m / 4 + 1)?;
        for _ in 0..runs {
            s.erl_rt.push(erl(erl_round_trips, n)?);
            s.pcml_rt.push(round_trips(&mut me, n)?);
            s.erl_thr.push(erl(erl_one_way, m)?);
            s.pcml_thr.push(one_way(&mut me, m)?);
        }
        node.stop();
        Ok(s)
    })
}

/// Runs the comparison on each configured proc count.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let n = ctx.size(2_000, 20_000);
    let m = ctx.size(20_000, 200_000);
    let procs = ctx.cfg.procs.clone();
    if let Some(why) = skip_reason(ctx) {
        for &p in &procs {
            for system in [PCML, ERLANG] {
                sec.rows
                    .push(Row::skipped(RT_PROG, system, Some(p), RT, why));
                sec.rows
                    .push(Row::skipped(ONE_WAY_PROG, system, Some(p), ONE_WAY, why));
            }
        }
        return Ok(());
    }
    ctx.step("distribution: starting EPMD and the Erlang peer node");
    let port = free_port()?;
    let _epmd = start_epmd(port)?;
    let _peer = Erl::start(port, "peer", None, PEER)?;
    let runs = ctx.cfg.runs.max(1);
    for &p in &procs {
        ctx.step(&format!(
            "distribution: pcml node on {p} procs and Erlang node +S {p}, {runs} runs each"
        ));
        let s = measure(port, p, runs, n, m)?;
        let alternating = "alternating sample by sample with the Erlang node";
        sec.rows.push(
            Row::measured(RT_PROG, PCML, Some(p), RT, &s.pcml_rt)
                .with_note(&format!("{p} procs, send_named; {alternating}")),
        );
        sec.rows.push(
            Row::measured(RT_PROG, ERLANG, Some(p), RT, &s.erl_rt)
                .with_note(&format!("erl +S {p}")),
        );
        sec.rows.push(
            Row::measured(ONE_WAY_PROG, PCML, Some(p), ONE_WAY, &s.pcml_thr)
                .with_note(&format!("{p} procs, send_named; {alternating}")),
        );
        sec.rows.push(
            Row::measured(ONE_WAY_PROG, ERLANG, Some(p), ONE_WAY, &s.erl_thr)
                .with_note(&format!("erl +S {p}")),
        );
        sec.add_ratio(
            &format!("round trip to an Erlang node: pcml node's time / Erlang node's, {p} procs"),
            (RT_PROG, PCML, Some(p)),
            (RT_PROG, ERLANG, Some(p)),
            Some(Goal::AtMost(1.0)),
        );
        sec.add_ratio(
            &format!("one-way messages to an Erlang node: pcml node / Erlang node, {p} procs"),
            (ONE_WAY_PROG, PCML, Some(p)),
            (ONE_WAY_PROG, ERLANG, Some(p)),
            Some(Goal::AtLeast(1.5)),
        );
    }
    let note = format!(
        "Both nodes talk to one Erlang node (`peer`, default schedulers) on loopback through \
         a private EPMD; a sample is {n} sequential round trips (`{{echo, peer}} ! {{self(), K}}`, \
         then the echo) or {m} one-way messages to a counting process, timed until it \
         answers the count."
    );
    sec.notes.push(note);
    Ok(())
}
