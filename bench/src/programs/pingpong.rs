//! Seed 003's ping-pong (section 10.1): two threads bounce messages over synchronous channels;
//! in the 2-proc variant each thread runs on its own proc. One message is one operation (a
//! round trip is two). pcml's rows wait on channels; the peers are measured now.

use super::{Ctx, NEEDS_CHAN, pending_pcml};
use crate::runner::{Metric, Result};
use crate::table::Section;

const RATE: Metric = Metric::Rate { unit: "msgs/s" };

/// Measures the peers; pcml is pending.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let n = ctx.size(500_000, 2_000_000);
    pending_pcml(sec, "ping-pong", RATE, NEEDS_CHAN);
    ctx.peer_rows(
        sec,
        "ping-pong",
        "pingpong",
        n,
        None,
        Some("msgs"),
        RATE,
        true,
        ctx.cfg.runs,
    )?;
    sec.notes.push(format!(
        "ping-pong: {n} messages per run ({} round trips).",
        n / 2
    ));
    sec.publish("ping-pong", "CML", "1,608,000 msgs/s (1.00)");
    sec.publish("ping-pong", "Manticore 1P", "697,800 msgs/s (0.43)");
    sec.publish("ping-pong", "Manticore 2P", "271,400 msgs/s (0.17)");
    Ok(())
}
