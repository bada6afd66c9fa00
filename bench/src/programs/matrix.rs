//! Seed 004's matrix (Figure 10): 250x250 integer matrix multiply, on 1..N procs, with speed-up.
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
        "matrix",
        Metric::Seconds,
        "not yet measured: needs pcml::chan",
    );
    sec.publish(
        "matrix",
        "SML/NJ MP",
        "26.64 s (1P), 13.51 s (2P), 3.40 s (8P)",
    );
    Ok(())
}
