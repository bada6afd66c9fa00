//! A loopback TCP echo server under load: the server of `pcml/examples/support/echo.rs` on
//! pcml tasks and sockets (one task per connection, `read_async`/`write_all_async`) against
//! the same program on tokio, measured alternately in the same run. The load is 100 client
//! connections driven from one thread of this process with no runtime (a `mio` poll,
//! edge-triggered, one read and one write call per round trip), each writing 64 bytes and
//! reading them back (checked) over and over; it shares the machine's cores with the server,
//! as every loopback measurement does, and is the same for both servers. Figures are the
//! clients' round trips per second, and the CPU time the server's threads spent per round
//! trip (the process's CPU time less the load thread's).
//!
//! A note gives the shares of the runs that the load's thread spent on a core, waiting for
//! one, and waiting for the server's answers (`/proc/thread-self/schedstat`), for both
//! servers. Where the last is near nothing the load sets the round trips, and a server can
//! beat another by at most that share; the server's CPU time per round trip is not bounded
//! so (docs/performance.md, "The echo's ceiling"). With a tokio runtime driving the clients
//! the load was on a core 92% of the runs and waited for the server 2%: the lean load
//! leaves the server more of the machine.

use std::cell::RefCell;

use super::{Ctx, pcml_against_tokio, server_cpu_rows};
use crate::runner::{Error, Metric, Result, Sample, Stats};
use crate::table::Section;

#[path = "../../../pcml/examples/support/echo.rs"]
mod echo_server;

use echo_server::{CONNECTIONS, MSG, Server};

const METRIC: Metric = Metric::Rate {
    unit: "round trips/s",
};

const CPU_METRIC: Metric = Metric::NsPerOp {
    op: "round trip of server CPU",
};

/// The shares of a run the load's thread spent on a core and waiting for one.
type Busy = RefCell<Vec<(f64, f64)>>;

/// The server's CPU time of each run and the round trips it served, as samples, with the
/// share of that CPU time spent in user space.
type ServerCpu = RefCell<Vec<(Sample, f64)>>;

/// One run of `server` for `secs` seconds; adds to `busy` the shares of the run the load's
/// thread spent on a core and waiting for one, and to `cpu` the server's CPU time (when
/// they can be read).
fn measure(server: Server, secs: f64, busy: &Busy, cpu: &ServerCpu) -> Result<Sample> {
    let echo_server::Measured {
        trips: ops,
        elapsed,
        load_cpu,
        load_wait,
        server_cpu,
        server_user,
    } = echo_server::measure(server, secs, None)
        .map_err(|e| Error::Failed(format!("echo: {e}")))?;
    if ops == 0 {
        return Err(Error::WrongAnswer("echo: no round trip completed".into()));
    }
    if !load_cpu.is_zero() && !elapsed.is_zero() {
        let share = |d: std::time::Duration| d.as_secs_f64() / elapsed.as_secs_f64();
        busy.borrow_mut().push((share(load_cpu), share(load_wait)));
    }
    if !server_cpu.is_zero() {
        let sample = Sample {
            seconds: server_cpu.as_secs_f64(),
            ops,
        };
        let user = server_user.as_secs_f64() / server_cpu.as_secs_f64();
        cpu.borrow_mut().push((sample, user));
    }
    Ok(Sample {
        seconds: elapsed.as_secs_f64(),
        ops,
    })
}

/// The note on the load thread's shares of the runs: on a core, and waiting for one. What is
/// left of a run, the load waited for the servers' answers; where that is near nothing, the
/// load is the bottleneck, and a faster server can raise the round trips by at most that.
fn busy_note(busy: &[(f64, f64)]) -> Option<String> {
    if busy.is_empty() {
        return None;
    }
    // `busy` is not empty, so every share has its statistics.
    let pct = |shares: Vec<f64>| {
        let s = Stats::of(&shares).expect("a share of every run");
        format!(
            "{:.0}% ({:.0}% - {:.0}%)",
            s.median * 100.0,
            s.min * 100.0,
            s.max * 100.0
        )
    };
    let on = busy.iter().map(|b| b.0).collect();
    let waiting = busy.iter().map(|b| b.1).collect();
    let idle = busy.iter().map(|b| (1.0 - b.0 - b.1).max(0.0)).collect();
    Some(format!(
        "echo: the load's thread, over this round's {} runs of either server (median, range): \
         on a core {}, waiting for one {}, waiting for the server {}; where the last is near \
         nothing the load sets the figure, and a faster server can raise it by at most that \
         share.",
        busy.len(),
        pct(on),
        pct(waiting),
        pct(idle),
    ))
}

/// The rows of the server's CPU time per round trip on pcml and on tokio (`p` procs), from
/// the same runs as the round trips, and their ratio (see [`server_cpu_rows`]). Each row's
/// note gives the user-space share of that time.
fn cpu_rows(
    sec: &mut Section,
    prog: &str,
    p: usize,
    ours: &[(Sample, f64)],
    theirs: &[(Sample, f64)],
) {
    let what = "the server threads' CPU time per round trip, same runs";
    server_cpu_rows(
        sec,
        prog,
        p,
        CPU_METRIC,
        "echo server CPU per round trip",
        ours,
        theirs,
        |user| match user {
            Some(u) => format!(
                "{what}; {:.0}% ({:.0}% - {:.0}%) of it in user space",
                u.median * 100.0,
                u.min * 100.0,
                u.max * 100.0
            ),
            None => what.to_string(),
        },
    );
}

/// Runs the comparison on each configured proc count.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let prog = format!("echo {MSG} B x {CONNECTIONS} connections");
    // Tiny sizes (the tests) check answers quickly.
    let secs = if ctx.cfg.tiny { 0.2 } else { 2.0 };
    let busy: Busy = RefCell::new(Vec::new());
    for &p in &ctx.cfg.procs {
        let (ours, theirs): (ServerCpu, ServerCpu) = Default::default();
        pcml_against_tokio(
            ctx,
            sec,
            &prog,
            METRIC,
            p,
            &format!("{secs} s per run"),
            ("echo round trips/s", 1.2),
            || measure(Server::Pcml(p), secs, &busy, &ours),
            || measure(Server::Tokio(p), secs, &busy, &theirs),
        )?;
        cpu_rows(sec, &prog, p, &ours.borrow(), &theirs.borrow());
    }
    sec.notes.push(format!(
        "echo: {CONNECTIONS} connections from one thread of the bench process with no runtime \
         (a mio poll, edge-triggered, one read and one write call per round trip), each \
         writing {MSG} bytes and reading them back; tokio's server is a current_thread \
         runtime for 1 proc, a multi_thread one of as many workers otherwise. The server CPU \
         rows: the CPU time of the server's threads (the process's, less the load thread's) \
         per round trip, in the same runs; the load's speed does not bound them."
    ));
    sec.notes.extend(busy_note(&busy.borrow()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::echo_server::{self, CONNECTIONS, MSG, Server};
    use crate::table::Section;

    #[test]
    fn the_load_makes_each_clients_round_trips_on_either_server() {
        for server in [
            Server::Pcml(1),
            Server::Tokio(1),
            Server::Pcml(2),
            Server::Tokio(2),
        ] {
            let m = echo_server::measure(server, 0.0, Some(20)).unwrap();
            assert_eq!(m.trips, 20 * CONNECTIONS as u64, "{server:?}");
            assert!(m.server_user <= m.server_cpu, "{server:?}: {m:?}");
        }
    }

    #[test]
    fn a_timed_load_makes_at_least_one_round_trip_on_each_connection() {
        let m = echo_server::measure(Server::Pcml(1), 0.05, None).unwrap();
        assert!(m.trips >= CONNECTIONS as u64, "{m:?}");
    }

    #[test]
    fn the_load_fails_on_an_answer_that_is_not_the_message() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        // A server that answers every message with other bytes.
        std::thread::spawn(move || {
            for conn in listener.incoming().take(CONNECTIONS) {
                let mut conn = conn.unwrap();
                std::thread::spawn(move || {
                    use std::io::{Read, Write};
                    let mut buf = [0u8; MSG];
                    while conn.read_exact(&mut buf).is_ok() {
                        buf[MSG - 1] ^= 1;
                        if conn.write_all(&buf).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        let err = echo_server::load(addr, 0.0, Some(3)).unwrap_err();
        assert!(err.contains("got other bytes back"), "{err}");
    }

    #[test]
    fn the_server_cpu_rows_give_tokios_time_over_pcmls() {
        let run = super::super::cpu_run;
        let mut sec = Section::new("servers", "servers", "");
        let ours = [run(0.010, 0.1), run(0.012, 0.2), run(0.011, 0.1)];
        let theirs = [run(0.022, 0.1), run(0.020, 0.1), run(0.024, 0.1)];
        super::cpu_rows(&mut sec, "echo", 1, &ours, &theirs);
        assert_eq!(sec.rows.len(), 2);
        assert!(
            sec.rows[0]
                .note
                .contains("10% (10% - 20%) of it in user space")
        );
        let ratio = &sec.ratios[0];
        assert_eq!(
            ratio.label,
            "echo server CPU per round trip, tokio / pcml, 1 procs"
        );
        // 22 us against 11 us a round trip.
        let value = ratio.value.clone().unwrap();
        assert!((value - 2.0).abs() < 1e-9, "{value}");
    }

    #[test]
    fn the_note_gives_each_share_and_what_is_left() {
        let note = super::busy_note(&[(0.5, 0.4), (0.3, 0.6), (0.4, 0.5)]).unwrap();
        assert!(note.contains("over this round's 3 runs"), "{note}");
        assert!(note.contains("on a core 40% (30% - 50%)"), "{note}");
        assert!(note.contains("waiting for one 50% (40% - 60%)"), "{note}");
        assert!(
            note.contains("waiting for the server 10% (10% - 10%)"),
            "{note}"
        );
        // Nothing read (no schedstat): no note.
        assert!(super::busy_note(&[]).is_none());
    }
}
