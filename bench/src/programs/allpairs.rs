//! Seed 004's allpairs (Figure 10): Floyd's all-pairs shortest paths on a 100-node graph, on 1..N procs, with speed-up.
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
        "allpairs",
        Metric::Seconds,
        "not yet measured: needs pcml::chan",
    );
    sec.publish(
        "allpairs",
        "SML/NJ MP",
        "22.38 s (1P), 12.60 s (2P), 9.71 s (8P)",
    );
    Ok(())
}
