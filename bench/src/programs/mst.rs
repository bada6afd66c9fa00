//! Seed 004's mst (Figure 10): Prim's minimum spanning tree of 500 random points, on 1..N procs, with speed-up.
//!
//! Not yet measured: pcml's row is pending until pcml::chan lands. This module is its slot: the
//! program, its answer check and (where one exists) its peer go here.

use super::{Ctx, pending_pcml};
use crate::runner::{Metric, Result};
use crate::table::Section;

/// Adds the pending rows.
pub fn run(_ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    pending_pcml(
        sec,
        "mst",
        Metric::Seconds,
        "not yet measured: needs pcml::chan",
    );
    sec.publish(
        "mst",
        "SML/NJ MP",
        "47.30 s (1P), 30.25 s (2P), 22.80 s (8P)",
    );
    Ok(())
}
