//! Seed 004's abisort (Figure 10): adaptive bitonic sort of 2^13 integers, on 1..N procs, with speed-up.
//!
//! Not yet measured: the program is not written yet (it needs only fork and join, which pcml
//! has). This module is its slot: the program and its answer check go here.

use super::{Ctx, pending_pcml};
use crate::runner::{Metric, Result};
use crate::table::Section;

/// Adds the pending rows.
pub fn run(_ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    pending_pcml(
        sec,
        "abisort",
        Metric::Seconds,
        "not yet measured: program not written yet",
    );
    sec.publish(
        "abisort",
        "SML/NJ MP",
        "20.53 s (1P), 12.06 s (2P), 8.69 s (8P)",
    );
    Ok(())
}
