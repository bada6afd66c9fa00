//! Seed 001's kpn (section 6): the first n Hamming numbers 2^a 3^b 5^c by a Kahn process network of MVars and FIFOs, in direct style (fibers) and indirect style (async tasks), with time and memory per thread.
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
        "kpn",
        Metric::Seconds,
        "not yet measured: needs pcml::chan",
    );
    Ok(())
}
