//! A loopback TCP echo server under load: the server of `pcml/examples/support/echo.rs` on
//! pcml tasks and sockets (one task per connection, `read_async`/`write_all_async`) against
//! the same program on tokio, measured alternately in the same run. The load is 100 client
//! connections on a tokio `current_thread` runtime of its own thread in this process, each
//! writing 64 bytes and reading them back (checked) over and over; it shares the machine's
//! cores with the server, as every loopback measurement does, and is the same for both
//! servers. Figures are the clients' round trips per second.

use super::{Ctx, pcml_against_tokio};
use crate::runner::{Error, Metric, Result, Sample};
use crate::table::Section;

#[path = "../../../pcml/examples/support/echo.rs"]
mod echo_server;

use echo_server::{CONNECTIONS, MSG, Server};

const METRIC: Metric = Metric::Rate {
    unit: "round trips/s",
};

/// One run of `server` for `secs` seconds.
fn measure(server: Server, secs: f64) -> Result<Sample> {
    let echo_server::Measured {
        trips: ops,
        elapsed,
        ..
    } = echo_server::measure(server, secs, None)
        .map_err(|e| Error::Failed(format!("echo: {e}")))?;
    if ops == 0 {
        return Err(Error::WrongAnswer("echo: no round trip completed".into()));
    }
    Ok(Sample {
        seconds: elapsed.as_secs_f64(),
        ops,
    })
}

/// Runs the comparison on each configured proc count.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let prog = format!("echo {MSG} B x {CONNECTIONS} connections");
    // Tiny sizes (the tests) check answers quickly.
    let secs = if ctx.cfg.tiny { 0.2 } else { 2.0 };
    for &p in &ctx.cfg.procs {
        pcml_against_tokio(
            ctx,
            sec,
            &prog,
            METRIC,
            p,
            &format!("{secs} s per run"),
            ("echo round trips/s", 1.2),
            || measure(Server::Pcml(p), secs),
            || measure(Server::Tokio(p), secs),
        )?;
    }
    sec.notes.push(format!(
        "echo: {CONNECTIONS} connections from a tokio current_thread runtime on a thread of the \
         bench process, each writing {MSG} bytes and reading them back; tokio's server is a \
         current_thread runtime for 1 proc, a multi_thread one of as many workers otherwise."
    ));
    Ok(())
}
