//! Seed 001's sorter (section 6): a network of n(n-1)/2 comparator threads sorting n numbers (n=3000 is about 4.5 million threads), and `sorter -d` (build the network only); direct and indirect style, time and peak memory per thread.
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
        "sorter",
        Metric::Seconds,
        "not yet measured: needs pcml::chan",
    );
    Ok(())
}
