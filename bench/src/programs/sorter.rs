//! Seed 001's sorter (section 3.3): n numbers sorted by a network of n(n-1)/2 comparator
//! threads (an insertion network: wire i is inserted into the sorted wires 0..i by the
//! comparators (i-1, i), ..., (0, 1)). Each comparator takes its two inputs and gives the
//! smaller to its low output and the larger to its high output. `sorter -d` only builds the
//! network (makes every channel and spawns every thread) and measures thread creation.
//!
//! The paper's MVars hold one value, so its comparators take and put in a fixed order; pcml's
//! channels are synchronous, so a comparator here takes its inputs and offers its outputs with
//! `select`, in whichever order the partners come (a fixed order could deadlock on
//! rendezvous). A feeder offers the n inputs and a collector takes the n outputs the same way.
//!
//! Direct style: fibers; indirect style: async tasks. Figures: seconds per run on one proc,
//! and peak memory per thread (a fresh process per figure). The answer: the outputs in order
//! equal the inputs sorted.

use std::time::Instant;

use pcml::chan::Chan;
use pcml::event::{choose, select};

use super::kpn::Style;
use super::{Ctx, in_pcml, memory_row};
use crate::runner::{Error, Metric, Result, Sample, check_eq};
use crate::table::{Row, Section};

/// The most numbers sorted with fibers: every comparator fiber is started and blocked at
/// once, so n(n-1)/2 must stay under the fiber cap (about 30,000 with vm.max_map_count's
/// default).
pub const FIBER_N_MAX: usize = 200;

/// `n` pseudo-random numbers below 1000, as the paper's `Random.int 999`.
pub fn numbers(n: usize) -> Vec<u32> {
    let mut x = 0x2545_f491_u64;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((x >> 33) % 999) as u32
        })
        .collect()
}

/// The comparators of the insertion network on `n` wires, in build order.
///
/// ```
/// let c = pcml_bench::programs::sorter::comparators(4);
/// assert_eq!(c.len(), 6);
/// assert_eq!(c[0], (0, 1));
/// ```
pub fn comparators(n: usize) -> Vec<(usize, usize)> {
    (1..n)
        .flat_map(|i| (0..i).rev().map(|j| (j, j + 1)))
        .collect()
}

fn comparator_fiber(x: Chan<u32>, y: Chan<u32>, lo: Chan<u32>, hi: Chan<u32>) {
    let (a, b) = match select([x.recv_evt().wrap(|v| (0, v)), y.recv_evt().wrap(|v| (1, v))]) {
        (0, v) => (v, y.recv()),
        (_, v) => (x.recv(), v),
    };
    let (small, large) = if a <= b { (a, b) } else { (b, a) };
    match select([
        lo.send_evt(small).wrap(|()| 0),
        hi.send_evt(large).wrap(|()| 1),
    ]) {
        0 => hi.send(large),
        _ => lo.send(small),
    }
}

async fn comparator_task(x: Chan<u32>, y: Chan<u32>, lo: Chan<u32>, hi: Chan<u32>) {
    let first = choose([x.recv_evt().wrap(|v| (0, v)), y.recv_evt().wrap(|v| (1, v))]).await;
    let (a, b) = match first {
        (0, v) => (v, y.recv_evt().await),
        (_, v) => (x.recv_evt().await, v),
    };
    let (small, large) = if a <= b { (a, b) } else { (b, a) };
    let sent = choose([
        lo.send_evt(small).wrap(|()| 0),
        hi.send_evt(large).wrap(|()| 1),
    ])
    .await;
    match sent {
        0 => hi.send_evt(large).await,
        _ => lo.send_evt(small).await,
    }
}

/// Builds the network; returns its input and output channels.
fn build(n: usize, style: Style) -> (Vec<Chan<u32>>, Vec<Chan<u32>>) {
    let inputs: Vec<Chan<u32>> = (0..n).map(|_| Chan::new()).collect();
    let mut wires = inputs.clone();
    for (a, b) in comparators(n) {
        let (lo, hi) = (Chan::new(), Chan::new());
        let (x, y) = (wires[a].clone(), wires[b].clone());
        let (lo2, hi2) = (lo.clone(), hi.clone());
        match style {
            Style::Direct => {
                pcml::spawn(move || comparator_fiber(x, y, lo2, hi2));
            }
            Style::Indirect => {
                pcml::spawn_task(comparator_task(x, y, lo2, hi2));
            }
        }
        wires[a] = lo;
        wires[b] = hi;
    }
    (inputs, wires)
}

/// Sorts `xs` through the network (the main fiber feeds and collects).
fn sort(xs: &[u32], style: Style) -> Vec<u32> {
    let n = xs.len();
    let (inputs, outputs) = build(n, style);
    let feed: Vec<(Chan<u32>, u32)> = inputs.into_iter().zip(xs.iter().copied()).collect();
    pcml::spawn(move || {
        let mut feed = feed;
        while !feed.is_empty() {
            let i = select(
                feed.iter()
                    .enumerate()
                    .map(|(i, (c, v))| c.send_evt(*v).wrap(move |()| i)),
            );
            feed.swap_remove(i);
        }
    });
    let mut sorted = vec![0u32; n];
    let mut pending: Vec<(usize, Chan<u32>)> = outputs.into_iter().enumerate().collect();
    while !pending.is_empty() {
        let (k, v) = select(
            pending
                .iter()
                .enumerate()
                .map(|(k, (_, c))| c.recv_evt().wrap(move |v| (k, v))),
        );
        let (wire, _) = pending.swap_remove(k);
        sorted[wire] = v;
    }
    sorted
}

/// Sorts `n` numbers (or, with `build_only`, only builds the network), one fresh one-proc
/// runtime per run; `ops` counts threads.
pub fn measure(n: usize, style: Style, build_only: bool, runs: usize) -> Result<Vec<Sample>> {
    if n < 2 {
        return Err(Error::Failed("sorter needs at least 2 numbers".into()));
    }
    let xs = numbers(n);
    let mut want = xs.clone();
    want.sort_unstable();
    let threads = (n * (n - 1) / 2) as u64;
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let xs = xs.clone();
        let (seconds, got) = in_pcml(1, move || {
            let start = Instant::now();
            let got = if build_only {
                drop(build(n, style));
                None
            } else {
                Some(sort(&xs, style))
            };
            Ok((start.elapsed().as_secs_f64(), got))
        })?;
        if let Some(got) = got {
            check_eq("sorted numbers", &want, &got)?;
        }
        samples.push(Sample {
            seconds,
            ops: threads,
        });
    }
    Ok(samples)
}

/// The memory probe (run in a fresh process): the peak resident set one sort (or build) adds.
pub fn probe_memory(n: usize, style: Style, build_only: bool) -> Result<super::Peak> {
    super::peak_added(move || {
        if build_only {
            drop(build(n, style));
        } else {
            let xs = numbers(n);
            let mut want = xs.clone();
            want.sort_unstable();
            check_eq("sorted numbers", want, sort(&xs, style))?;
        }
        Ok(())
    })
}

/// Runs sorter and sorter -d in both styles, with memory per thread.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let runs = ctx.cfg.runs;
    let sizes = [
        (
            false,
            Style::Direct,
            ctx.size(100, FIBER_N_MAX as u64) as usize,
        ),
        (false, Style::Indirect, ctx.size(100, 1000) as usize),
        (true, Style::Direct, ctx.size(300, 1000) as usize),
        (true, Style::Indirect, ctx.size(300, 1000) as usize),
    ];
    let mem = Metric::BytesPerOp { op: "thread" };
    for (build_only, style, n) in sizes {
        let n = n.max(2);
        let name = if build_only { "sorter -d" } else { "sorter" };
        let prog = format!("{name} {n}");
        let threads = n * (n - 1) / 2;
        ctx.step(&format!("{prog}: {}", style.system()));
        let s = measure(n, style, build_only, runs)?;
        sec.rows.push(
            Row::measured(&prog, style.system(), Some(1), Metric::Seconds, &s)
                .with_note(&format!("{threads} comparator threads")),
        );
        ctx.step(&format!("{prog}: {} memory", style.system()));
        let kind = match style {
            Style::Direct => "fibers",
            Style::Indirect => "tasks",
        };
        let probe = if build_only { "sorter-d" } else { "sorter" };
        sec.rows.push(memory_row(
            &format!("{prog} memory"),
            style.system(),
            (probe, kind, n as u64, 0),
            threads as u64,
            mem,
            runs.min(3),
        )?);
    }
    sec.notes.push(format!(
        "sorter: n(n-1)/2 comparator threads on one proc; fibers up to n = {FIBER_N_MAX} (all \
         are started and blocked at once, under the fiber cap); memory: peak RSS added, per \
         thread, in a fresh process."
    ));
    Ok(())
}
