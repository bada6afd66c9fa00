//! Seed 003's parallel ping-pong (section 10.2): eight independent ping-pong pairs at once,
//! the two threads of a pair on different procs. One message is one operation. pcml's rows
//! wait on channels; the peers are measured now.

use super::{Ctx, NEEDS_CHAN, pending_pcml};
use crate::runner::{Metric, Result};
use crate::table::Section;

const RATE: Metric = Metric::Rate { unit: "msgs/s" };

/// Measures the peers; pcml is pending.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let n = ctx.size(480_000, 1_600_000);
    pending_pcml(sec, "parallel ping-pong", RATE, NEEDS_CHAN);
    ctx.peer_rows(
        sec,
        "parallel ping-pong",
        "parpingpong",
        n,
        None,
        Some("msgs"),
        RATE,
        true,
        ctx.cfg.runs,
    )?;
    sec.notes.push(format!(
        "parallel ping-pong: 8 pairs, {n} messages per run in all."
    ));
    sec.publish("parallel ping-pong", "CML", "1,576,000 msgs/s (1.00)");
    sec.publish(
        "parallel ping-pong",
        "Manticore 1P",
        "724,000 msgs/s (0.46)",
    );
    sec.publish(
        "parallel ping-pong",
        "Manticore 2P",
        "412,000 msgs/s (0.26)",
    );
    sec.publish(
        "parallel ping-pong",
        "Manticore 8P",
        "1,000,000 msgs/s (0.63)",
    );
    Ok(())
}
