//! Seed 003's primes (section 10.3): the first N primes by a pipeline of filter threads, one
//! added per prime found, filters assigned round-robin to procs; the answer is the Nth prime.
//! Figures are seconds per run. pcml's rows wait on channels; the peers are measured now.

use super::{Ctx, NEEDS_CHAN, pending_pcml};
use crate::runner::{Metric, Result};
use crate::table::Section;

/// Measures the peers; pcml is pending.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let n = ctx.size(1000, 2000);
    let prog = format!("primes-{n}");
    pending_pcml(sec, &prog, Metric::Seconds, NEEDS_CHAN);
    ctx.peer_rows(
        sec,
        &prog,
        "primes",
        n,
        None,
        None,
        Metric::Seconds,
        true,
        ctx.cfg.runs,
    )?;
    sec.notes.push(format!(
        "primes: the first {n} primes (the paper: 2000); the peers check the Nth prime and the sum."
    ));
    sec.publish("primes-2000", "CML", "1.34 s");
    sec.publish("primes-2000", "Manticore 1P", "3.08 s");
    sec.publish("primes-2000", "Manticore 2P", "3.37 s");
    sec.publish("primes-2000", "Manticore 8P", "0.92 s");
    Ok(())
}
