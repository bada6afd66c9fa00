//! A loopback TCP echo server under load: the server of `pcml/examples/support/echo.rs` on
//! pcml tasks and sockets (one task per connection, `read_async`/`write_all_async`) against
//! the same program on tokio, measured alternately in the same run. The load is 100 client
//! connections on a tokio `current_thread` runtime of its own thread in this process, each
//! writing 64 bytes and reading them back (checked) over and over; it shares the machine's
//! cores with the server, as every loopback measurement does, and is the same for both
//! servers. Figures are the clients' round trips per second.
//!
//! A note gives the shares of the runs that the load's thread spent on a core, waiting for
//! one, and waiting for the server's answers (`/proc/thread-self/schedstat`), for both
//! servers. On the shared 2-core machine the last is a few percent whichever server answers:
//! the load (its own CPU time, or the core it waits for) sets the figure, and a server can
//! beat another by at most that share (docs/performance.md, "The echo's ceiling").

use std::cell::RefCell;

use super::{Ctx, pcml_against_tokio};
use crate::runner::{Error, Metric, Result, Sample, Stats};
use crate::table::Section;

#[path = "../../../pcml/examples/support/echo.rs"]
mod echo_server;

use echo_server::{CONNECTIONS, MSG, Server};

const METRIC: Metric = Metric::Rate {
    unit: "round trips/s",
};

/// The shares of a run the load's thread spent on a core and waiting for one.
type Busy = RefCell<Vec<(f64, f64)>>;

/// One run of `server` for `secs` seconds; adds to `busy` the shares of the run the load's
/// thread spent on a core and waiting for one (when they can be read).
fn measure(server: Server, secs: f64, busy: &Busy) -> Result<Sample> {
    let echo_server::Measured {
        trips: ops,
        elapsed,
        load_cpu,
        load_wait,
    } = echo_server::measure(server, secs, None)
        .map_err(|e| Error::Failed(format!("echo: {e}")))?;
    if ops == 0 {
        return Err(Error::WrongAnswer("echo: no round trip completed".into()));
    }
    if !load_cpu.is_zero() && !elapsed.is_zero() {
        let share = |d: std::time::Duration| d.as_secs_f64() / elapsed.as_secs_f64();
        busy.borrow_mut().push((share(load_cpu), share(load_wait)));
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

/// Runs the comparison on each configured proc count.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let prog = format!("echo {MSG} B x {CONNECTIONS} connections");
    // Tiny sizes (the tests) check answers quickly.
    let secs = if ctx.cfg.tiny { 0.2 } else { 2.0 };
    let busy: Busy = RefCell::new(Vec::new());
    for &p in &ctx.cfg.procs {
        pcml_against_tokio(
            ctx,
            sec,
            &prog,
            METRIC,
            p,
            &format!("{secs} s per run"),
            ("echo round trips/s", 1.2),
            || measure(Server::Pcml(p), secs, &busy),
            || measure(Server::Tokio(p), secs, &busy),
        )?;
    }
    sec.notes.push(format!(
        "echo: {CONNECTIONS} connections from a tokio current_thread runtime on a thread of the \
         bench process, each writing {MSG} bytes and reading them back; tokio's server is a \
         current_thread runtime for 1 proc, a multi_thread one of as many workers otherwise."
    ));
    sec.notes.extend(busy_note(&busy.borrow()));
    Ok(())
}

#[cfg(test)]
mod tests {
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
