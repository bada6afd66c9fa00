//! Seed 000's message bombing (chapter 4): 200 unreceived messages then 200 received (bombing 1), or only the 200 (bombing 2); time and memory, against Erlang.
//!
//! Not yet measured: pcml's row is pending until actors (mailboxes with selective receive)
//! land. This module is its slot: the program, its answer check and its Erlang peer go here.

use super::{Ctx, pending_pcml};
use crate::runner::{Metric, Result};
use crate::table::Section;

/// Adds the pending rows.
pub fn run(_ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    pending_pcml(
        sec,
        "bombing",
        Metric::Seconds,
        "not yet measured: needs actors (mailboxes)",
    );
    sec.publish("bombing", "MLKit actors", "7.5 ms (1), 4.1 ms (2)");
    sec.publish("bombing", "Erlang", "0.5 ms (1), 0.17 ms (2)");
    Ok(())
}
