//! Seed 000's skynet (chapter 4): a tree of threads, each leaf sends its number to its parent
//! and each node the sum of its children's; the answer is LEAVES(LEAVES-1)/2. Run as the
//! paper's 3-ary tree of depth 6 (729 leaves) and the common 10-ary tree (1,000,000 leaves
//! with `--full`). Figures are seconds per run. pcml's rows wait on channels (and later on
//! actors); the peers are measured now.

use super::{Ctx, NEEDS_CHAN, pending_pcml};
use crate::runner::{Metric, Result};
use crate::table::Section;

/// Measures the peers; pcml is pending.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let big = ctx.size(100_000, 1_000_000);
    for (leaves, branch) in [(729, 3), (big, 10)] {
        let prog = format!("skynet {leaves}/{branch}");
        pending_pcml(sec, &prog, Metric::Seconds, NEEDS_CHAN);
        ctx.peer_rows(
            sec,
            &prog,
            "skynet",
            leaves,
            Some(branch),
            None,
            Metric::Seconds,
            true,
            ctx.cfg.runs,
        )?;
    }
    sec.notes.push(format!(
        "skynet LEAVES/BRANCH: 729 leaves of a 3-ary tree (the paper's), {big} of a 10-ary tree."
    ));
    sec.publish("skynet 729/3", "MLKit actors", "177.3 ms");
    sec.publish("skynet 729/3", "Erlang", "2.7 ms");
    Ok(())
}
