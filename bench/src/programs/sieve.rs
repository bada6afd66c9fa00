//! Seed 001's sieve (section 6): a chain of filter threads over MVars, direct (fibers) and indirect (async tasks) style, time and memory per thread.
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
        "sieve",
        Metric::Seconds,
        "not yet measured: needs pcml::chan",
    );
    Ok(())
}
