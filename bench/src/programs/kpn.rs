//! Seed 001's kpn (section 3.1, Figure 1): the first n Hamming numbers 2^a 3^b 5^c by a Kahn
//! process network. A `dup` thread hands each number to the consumer and to three FIFOs; each
//! FIFO (an unbounded buffer thread, CML's classic buffered channel: a `select` between taking
//! a new item and offering the oldest) feeds a multiplier (x2, x3, x5); two merge threads
//! combine the multiplied streams in order, dropping duplicates, back into `dup`. Nine threads
//! in all, each number crossing about eight channels: the cost of switching threads.
//!
//! Direct style: fibers with blocking `send`/`recv`/`select`. Indirect style: async tasks
//! awaiting the same channels' events (`.await` is the paper's `>>=`). The paper's MVars are
//! synchronous channels here. Figures are seconds per run on one proc (the paper's setting).
//! The answer: the first n numbers, against the three-pointer computation.

use std::collections::VecDeque;
use std::time::Instant;

use pcml::chan::Chan;
use pcml::event::{choose, select};

use super::{Ctx, in_pcml};
use crate::runner::{Metric, Result, Sample, check_eq};
use crate::table::{Row, Section};

/// The first `n` Hamming numbers, by the three-pointer method (the reference answer).
///
/// ```
/// assert_eq!(pcml_bench::programs::kpn::hamming(10), vec![1, 2, 3, 4, 5, 6, 8, 9, 10, 12]);
/// ```
pub fn hamming(n: usize) -> Vec<u64> {
    let mut h = vec![1u64];
    let (mut i2, mut i3, mut i5) = (0, 0, 0);
    while h.len() < n {
        let next = (h[i2] * 2).min(h[i3] * 3).min(h[i5] * 5);
        h.push(next);
        if next == h[i2] * 2 {
            i2 += 1;
        }
        if next == h[i3] * 3 {
            i3 += 1;
        }
        if next == h[i5] * 5 {
            i5 += 1;
        }
    }
    h.truncate(n);
    h
}

enum Step {
    In(u64),
    Out,
}

fn fifo_fiber(input: Chan<u64>, output: Chan<u64>) {
    let mut q = VecDeque::new();
    loop {
        let step = match q.front() {
            None => Step::In(input.recv()),
            Some(&x) => select([
                input.recv_evt().wrap(Step::In),
                output.send_evt(x).wrap(|()| Step::Out),
            ]),
        };
        match step {
            Step::In(x) => q.push_back(x),
            Step::Out => {
                q.pop_front();
            }
        }
    }
}

async fn fifo_task(input: Chan<u64>, output: Chan<u64>) {
    let mut q = VecDeque::new();
    loop {
        let step = match q.front() {
            None => Step::In(input.recv_evt().await),
            Some(&x) => {
                choose([
                    input.recv_evt().wrap(Step::In),
                    output.send_evt(x).wrap(|()| Step::Out),
                ])
                .await
            }
        };
        match step {
            Step::In(x) => q.push_back(x),
            Step::Out => {
                q.pop_front();
            }
        }
    }
}

fn network_fibers(n: usize) -> Vec<u64> {
    let chans: Vec<Chan<u64>> = (0..10).map(|_| Chan::new()).collect();
    let c = |i: usize| chans[i].clone();
    // 0,1,2: dup -> fifo k; 3,4,5: fifo k -> mult k; 6,7,8: mult k -> merges; 9: merged -> dup.
    let consumer: Chan<u64> = Chan::new();
    for k in 0..3 {
        let (i, o) = (c(k), c(3 + k));
        pcml::spawn(move || fifo_fiber(i, o));
        let (i, o, f) = (c(3 + k), c(6 + k), [2u64, 3, 5][k]);
        pcml::spawn(move || {
            loop {
                o.send(i.recv() * f);
            }
        });
    }
    let m23: Chan<u64> = Chan::new();
    let merge = |a: Chan<u64>, b: Chan<u64>, out: Chan<u64>| {
        move || {
            let (mut x, mut y) = (a.recv(), b.recv());
            loop {
                if x < y {
                    out.send(x);
                    x = a.recv();
                } else if y < x {
                    out.send(y);
                    y = b.recv();
                } else {
                    out.send(x);
                    x = a.recv();
                    y = b.recv();
                }
            }
        }
    };
    pcml::spawn(merge(c(6), c(7), m23.clone()));
    pcml::spawn(merge(m23, c(8), c(9)));
    let (fifos, merged, to_consumer) = ([c(0), c(1), c(2)], c(9), consumer.clone());
    pcml::spawn(move || {
        let mut x = 1u64;
        loop {
            for f in &fifos {
                f.send(x);
            }
            to_consumer.send(x);
            x = merged.recv();
        }
    });
    (0..n).map(|_| consumer.recv()).collect()
}

fn network_tasks(n: usize) -> Vec<u64> {
    let chans: Vec<Chan<u64>> = (0..10).map(|_| Chan::new()).collect();
    let c = |i: usize| chans[i].clone();
    let consumer: Chan<u64> = Chan::new();
    for k in 0..3 {
        pcml::spawn_task(fifo_task(c(k), c(3 + k)));
        let (i, o, f) = (c(3 + k), c(6 + k), [2u64, 3, 5][k]);
        pcml::spawn_task(async move {
            loop {
                let x = i.recv_evt().await;
                o.send_evt(x * f).await;
            }
        });
    }
    let m23: Chan<u64> = Chan::new();
    async fn merge(a: Chan<u64>, b: Chan<u64>, out: Chan<u64>) {
        let (mut x, mut y) = (a.recv_evt().await, b.recv_evt().await);
        loop {
            if x < y {
                out.send_evt(x).await;
                x = a.recv_evt().await;
            } else if y < x {
                out.send_evt(y).await;
                y = b.recv_evt().await;
            } else {
                out.send_evt(x).await;
                x = a.recv_evt().await;
                y = b.recv_evt().await;
            }
        }
    }
    pcml::spawn_task(merge(c(6), c(7), m23.clone()));
    pcml::spawn_task(merge(m23, c(8), c(9)));
    let (fifos, merged, to_consumer) = ([c(0), c(1), c(2)], c(9), consumer.clone());
    pcml::spawn_task(async move {
        let mut x = 1u64;
        loop {
            for f in &fifos {
                f.send_evt(x).await;
            }
            to_consumer.send_evt(x).await;
            x = merged.recv_evt().await;
        }
    });
    (0..n).map(|_| consumer.recv()).collect()
}

/// Direct (fibers) or indirect (tasks) style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Fibers: direct style.
    Direct,
    /// Async tasks: indirect style.
    Indirect,
}

impl Style {
    /// The system name in the tables.
    pub fn system(self) -> &'static str {
        match self {
            Style::Direct => "pcml fibers (direct)",
            Style::Indirect => "pcml tasks (indirect)",
        }
    }
}

/// The first `n` Hamming numbers, one fresh one-proc runtime per run.
pub fn measure(n: usize, style: Style, runs: usize) -> Result<Vec<Sample>> {
    let want = hamming(n);
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (seconds, got) = in_pcml(1, move || {
            let start = Instant::now();
            let got = match style {
                Style::Direct => network_fibers(n),
                Style::Indirect => network_tasks(n),
            };
            Ok((start.elapsed().as_secs_f64(), got))
        })?;
        check_eq("Hamming numbers", &want, &got)?;
        samples.push(Sample {
            seconds,
            ops: n as u64,
        });
    }
    Ok(samples)
}

/// Runs kpn in both styles.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    // The 10,000th Hamming number is about 2.9e17: times 5 still fits in a u64.
    let n = ctx.size(5_000, 10_000) as usize;
    let prog = format!("kpn {n}");
    for style in [Style::Direct, Style::Indirect] {
        ctx.step(&format!("{prog}: {}", style.system()));
        let s = measure(n, style, ctx.cfg.runs)?;
        sec.rows.push(
            Row::measured(&prog, style.system(), Some(1), Metric::Seconds, &s)
                .with_note("9 threads, FIFOs as buffer threads"),
        );
    }
    sec.add_ratio(
        &format!("{prog}: direct / indirect time"),
        (&prog, Style::Direct.system(), Some(1)),
        (&prog, Style::Indirect.system(), Some(1)),
        None,
    );
    sec.notes.push(format!(
        "kpn: the first {n} Hamming numbers, one proc, MVars as synchronous channels."
    ));
    Ok(())
}
