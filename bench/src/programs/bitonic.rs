//! Seed 000's bitonic mergesort (chapter 4): sorts [`NUMBERS`] numbers (the thesis's 127 down
//! to 0) by actors, with cutoff [`CUTOFF`]. Time (the mean of 100 runs per sample) and peak
//! memory, against Erlang (the thesis's Table 4.1: MLKit 353.6 ms, Erlang 1.6 ms).
//!
//! The algorithm, as the thesis's Erlang program (the baseline) does it: to sort a list longer
//! than the cutoff, an actor hands its second half to a new child actor, which sorts it and
//! sends it back reversed, sorts the first half itself, and merges the two, which make a
//! bitonic sequence. To merge a bitonic list longer than the cutoff, it splits it into the
//! pairwise minima and maxima of its halves (each bitonic, every minimum below every
//! maximum), hands the maxima to a child and merges the minima itself. At or below the cutoff
//! the same recursion runs sequentially. Each child answers with a tag its parent chose, and
//! the parent takes that answer by selective receive: answers of deeper calls made in between
//! may already be waiting. 128 numbers make 384 actors.
//!
//! # Invariants
//! - An actor's tags are unique among its outstanding children, so a selective receive on a
//!   tag takes that child's answer and no other.

use std::future::Future;
use std::pin::Pin;

use pcml::IVar;

use super::Ctx;
use super::seed000::{self, Kind, actor};
use crate::runner::{Error, Result, Sample, check_eq};
use crate::table::Section;

/// Numbers sorted: the thesis's 128.
pub const NUMBERS: u64 = 128;
/// Lists at or below this length are sorted sequentially: the thesis's 2.
pub const CUTOFF: usize = 2;

/// A child's answer: its tag and its list.
type Answer = (u64, Vec<u32>);

/// What a child actor is asked to do.
#[derive(Debug)]
enum Job {
    /// Sort the list and answer it reversed (descending).
    SortDown(Vec<u32>),
    /// Merge the bitonic list.
    Merge(Vec<u32>),
}

/// The pairwise minima and maxima of the two halves of `xs` (of even length).
fn min_max(xs: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let (left, right) = xs.split_at(xs.len() / 2);
    left.iter()
        .zip(right)
        .map(|(&a, &b)| (a.min(b), a.max(b)))
        .unzip()
}

fn merge_seq(xs: Vec<u32>) -> Vec<u32> {
    if xs.len() <= 1 {
        return xs;
    }
    let (mins, maxs) = min_max(&xs);
    let mut low = merge_seq(mins);
    low.extend(merge_seq(maxs));
    low
}

fn sort_seq(mut xs: Vec<u32>) -> Vec<u32> {
    if xs.len() <= 1 {
        return xs;
    }
    let right = xs.split_off(xs.len() / 2);
    let mut low = sort_seq(xs);
    let mut high = sort_seq(right);
    high.reverse();
    low.extend(high);
    merge_seq(low)
}

/// A fiber actor's sorting state: its mailbox and its next tag.
struct FiberSorter {
    ctx: actor::Ctx<Answer>,
    next_tag: u64,
}

impl FiberSorter {
    fn new(ctx: actor::Ctx<Answer>) -> Self {
        FiberSorter { ctx, next_tag: 0 }
    }

    /// Starts a child actor on `job`; returns the tag of its answer.
    fn in_child(&mut self, job: Job) -> u64 {
        let tag = self.next_tag;
        self.next_tag += 1;
        let parent = self.ctx.pid();
        actor::spawn(move |ctx| {
            let xs = FiberSorter::new(ctx).work(job);
            parent
                .send((tag, xs))
                .unwrap_or_else(|_| panic!("bitonic: a parent exited before its child answered"));
        });
        tag
    }

    fn await_answer(&mut self, tag: u64) -> Vec<u32> {
        self.ctx.receive_match(|a| a.0 == tag).1
    }

    fn work(&mut self, job: Job) -> Vec<u32> {
        match job {
            Job::SortDown(xs) => {
                let mut xs = self.sort(xs);
                xs.reverse();
                xs
            }
            Job::Merge(xs) => self.merge(xs),
        }
    }

    fn sort(&mut self, mut xs: Vec<u32>) -> Vec<u32> {
        if xs.len() <= CUTOFF {
            return sort_seq(xs);
        }
        let right = xs.split_off(xs.len() / 2);
        let tag = self.in_child(Job::SortDown(right));
        let mut low = self.sort(xs);
        low.extend(self.await_answer(tag));
        self.merge(low)
    }

    fn merge(&mut self, xs: Vec<u32>) -> Vec<u32> {
        if xs.len() <= CUTOFF {
            return merge_seq(xs);
        }
        let (mins, maxs) = min_max(&xs);
        let tag = self.in_child(Job::Merge(maxs));
        let mut low = self.merge(mins);
        low.extend(self.await_answer(tag));
        low
    }
}

type Boxed<'a> = Pin<Box<dyn Future<Output = Vec<u32>> + Send + 'a>>;

/// An async actor's sorting state: its mailbox and its next tag.
struct AsyncSorter {
    ctx: actor::Ctx<Answer>,
    next_tag: u64,
}

impl AsyncSorter {
    fn new(ctx: actor::Ctx<Answer>) -> Self {
        AsyncSorter { ctx, next_tag: 0 }
    }

    fn in_child(&mut self, job: Job) -> u64 {
        let tag = self.next_tag;
        self.next_tag += 1;
        let parent = self.ctx.pid();
        actor::spawn_async(move |ctx| async move {
            let xs = AsyncSorter::new(ctx).work(job).await;
            parent
                .send((tag, xs))
                .unwrap_or_else(|_| panic!("bitonic: a parent exited before its child answered"));
        });
        tag
    }

    async fn await_answer(&mut self, tag: u64) -> Vec<u32> {
        self.ctx.recv_match(|a| a.0 == tag).await.1
    }

    fn work(&mut self, job: Job) -> Boxed<'_> {
        Box::pin(async move {
            match job {
                Job::SortDown(xs) => {
                    let mut xs = self.sort(xs).await;
                    xs.reverse();
                    xs
                }
                Job::Merge(xs) => self.merge(xs).await,
            }
        })
    }

    fn sort(&mut self, mut xs: Vec<u32>) -> Boxed<'_> {
        Box::pin(async move {
            if xs.len() <= CUTOFF {
                return sort_seq(xs);
            }
            let right = xs.split_off(xs.len() / 2);
            let tag = self.in_child(Job::SortDown(right));
            let mut low = self.sort(xs).await;
            low.extend(self.await_answer(tag).await);
            self.merge(low).await
        })
    }

    fn merge(&mut self, xs: Vec<u32>) -> Boxed<'_> {
        Box::pin(async move {
            if xs.len() <= CUTOFF {
                return merge_seq(xs);
            }
            let (mins, maxs) = min_max(&xs);
            let tag = self.in_child(Job::Merge(maxs));
            let mut low = self.merge(mins).await;
            low.extend(self.await_answer(tag).await);
            low
        })
    }
}

/// The actors one sort of `n` numbers makes (each split of a list longer than the cutoff
/// makes one).
///
/// ```
/// assert_eq!(pcml_bench::programs::bitonic::actors(128), 384);
/// assert_eq!(pcml_bench::programs::bitonic::actors(2), 0);
/// ```
pub fn actors(n: u64) -> u64 {
    fn merges(n: u64) -> u64 {
        if n <= CUTOFF as u64 {
            0
        } else {
            1 + 2 * merges(n / 2)
        }
    }
    if n <= CUTOFF as u64 {
        0
    } else {
        1 + 2 * actors(n / 2) + merges(n)
    }
}

/// One run: sorts `n - 1, ..., 0` in a root actor of `kind` and checks the result.
fn one(n: u64, kind: Kind) -> Result<()> {
    let input: Vec<u32> = (0..n as u32).rev().collect();
    let done = IVar::new();
    let out = done.clone();
    match kind {
        Kind::Fibers => {
            actor::spawn(move |ctx| {
                let _ = out.put(FiberSorter::new(ctx).sort(input));
            });
        }
        Kind::Async => {
            actor::spawn_async(move |ctx| async move {
                let xs = AsyncSorter::new(ctx).sort(input).await;
                let _ = out.put(xs);
            });
        }
    }
    let sorted: Vec<u32> = done.get();
    check_eq("the sorted numbers", (0..n as u32).collect(), sorted)
}

/// Bitonic mergesort of `n` numbers (a power of 2) on `procs` procs: `runs` samples, each the
/// mean of `reps` runs.
pub fn measure(procs: usize, n: u64, kind: Kind, runs: usize, reps: u64) -> Result<Vec<Sample>> {
    if !n.is_power_of_two() || n > u64::from(u32::MAX) {
        return Err(Error::Failed(format!(
            "bitonic needs a power of 2 numbers (got {n})"
        )));
    }
    seed000::averaged(procs, runs, reps, move || one(n, kind))
}

/// The memory probe, run in a fresh process: a sort of `n` numbers on one proc after a
/// warm-up sort; the peak resident set it added, in bytes.
pub fn probe_memory(n: u64, kind: Kind) -> Result<super::Peak> {
    if !n.is_power_of_two() {
        return Err(Error::Failed(format!(
            "bitonic needs a power of 2 numbers (got {n})"
        )));
    }
    seed000::peak_after_warmup(move || one(n, kind))
}

/// Measures pcml and Erlang.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let runs = ctx.cfg.runs;
    let reps = seed000::reps(ctx);
    let prog = "bitonic";
    seed000::pcml_rows(
        ctx,
        sec,
        prog,
        |p, kind| measure(p, NUMBERS, kind, runs, reps),
        ("bitonic", NUMBERS, 0),
    )?;
    seed000::erlang_rows(ctx, sec, prog, "bitonic", NUMBERS, reps)?;
    seed000::vs_erlang(ctx, sec, prog);
    seed000::note_actors(sec);
    sec.notes.push(format!(
        "bitonic: {NUMBERS} numbers ({} down to 0), cutoff {CUTOFF}, {} actors per sort (the \
         thesis's sizes).",
        NUMBERS - 1,
        actors(NUMBERS)
    ));
    sec.publish("bitonic", "MLKit actors", "353.6 ms");
    sec.publish("bitonic", "Erlang", "1.6 ms");
    Ok(())
}
