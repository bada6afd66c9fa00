//! Seed 004's mst (Figure 10): Prim's minimum spanning tree of 500 random points, on 1..N procs, with speed-up.
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
        "mst",
        Metric::Seconds,
        "not yet measured: program not written yet",
    );
    sec.publish(
        "mst",
        "SML/NJ MP",
        "47.30 s (1P), 30.25 s (2P), 22.80 s (8P)",
    );
    Ok(())
}
