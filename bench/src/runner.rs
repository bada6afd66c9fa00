//! Timing: one sample is one run of a program (a number of operations and the seconds they
//! took); a figure is the median of several samples with their spread (min and max).
//!
//! Programs time only their work: runtime start-up, warm-up and answer checks stay outside the
//! timed region, as the peers' `seconds=` does (bench/peers/README.md).
//!
//! # Invariants
//! - `Stats::min <= Stats::median <= Stats::max`, all in the metric's display unit.
//! - A sample's `ops` is the count the metric divides by (threads, yields, lock pairs, ...).

use std::fmt;
use std::io::{IsTerminal, Write};
use std::time::Instant;

/// One timed run: `ops` operations in `seconds`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// Wall-clock seconds of the timed region.
    pub seconds: f64,
    /// Operations done in that time (what the metric counts).
    pub ops: u64,
}

/// What a row reports, and in which unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Operations per second; `unit` names them, e.g. `"threads/s"`. Higher is better.
    Rate {
        /// The unit as printed, e.g. `"threads/s"`.
        unit: &'static str,
    },
    /// Nanoseconds per operation; `op` says what one operation is. Lower is better.
    NsPerOp {
        /// One operation, e.g. `"yield"` or `"lock+unlock"`.
        op: &'static str,
    },
    /// Seconds per run (for programs whose work is fixed, such as primes). Lower is better.
    Seconds,
    /// Bytes of peak memory per thread (`op` names the thread kind). Lower is better. Rows of
    /// this metric are built from byte counts ([`Row::from_values`](crate::table::Row)), not
    /// from timed samples.
    BytesPerOp {
        /// One operation, e.g. `"thread"`.
        op: &'static str,
    },
}

impl Metric {
    /// The figure a sample gives in this metric's unit (a sample of no operations counts as one).
    pub fn value(&self, s: &Sample) -> f64 {
        let ops = s.ops.max(1) as f64;
        match self {
            Metric::Rate { .. } => ops / s.seconds,
            Metric::NsPerOp { .. } => s.seconds * 1e9 / ops,
            Metric::Seconds => s.seconds,
            Metric::BytesPerOp { .. } => f64::NAN,
        }
    }

    /// Whether a larger figure is better.
    pub fn higher_is_better(&self) -> bool {
        matches!(self, Metric::Rate { .. })
    }

    /// The unit as printed in a table header or cell.
    pub fn unit(&self) -> String {
        match self {
            Metric::Rate { unit } => (*unit).to_string(),
            Metric::NsPerOp { op } => format!("ns per {op}"),
            Metric::Seconds => "s".to_string(),
            Metric::BytesPerOp { op } => format!("bytes per {op}"),
        }
    }
}

/// Median and spread of several samples, in a metric's unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// The median (the mean of the middle two for an even count).
    pub median: f64,
    /// The smallest figure.
    pub min: f64,
    /// The largest figure.
    pub max: f64,
    /// How many samples.
    pub runs: usize,
}

impl Stats {
    /// Median, min and max of `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Stats> {
        if values.is_empty() {
            return None;
        }
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Stats {
            median,
            min: v[0],
            max: v[n - 1],
            runs: n,
        })
    }

    /// The statistics of `samples` in `metric`'s unit.
    pub fn of_samples(metric: Metric, samples: &[Sample]) -> Option<Stats> {
        let values: Vec<f64> = samples.iter().map(|s| metric.value(s)).collect();
        Stats::of(&values)
    }
}

/// Why a program could not produce its figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The program computed a wrong answer: the run must fail.
    WrongAnswer(String),
    /// Something else failed (a runtime could not start, a peer crashed).
    Failed(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::WrongAnswer(m) => write!(f, "wrong answer: {m}"),
            Error::Failed(m) => write!(f, "failed: {m}"),
        }
    }
}

impl std::error::Error for Error {}

/// The result type of the harness.
pub type Result<T> = std::result::Result<T, Error>;

/// Fails with [`Error::WrongAnswer`] unless `got == want`.
///
/// ```
/// use pcml_bench::runner::check_eq;
/// assert!(check_eq("sum", 3, 1 + 2).is_ok());
/// assert!(check_eq("sum", 4, 1 + 2).is_err());
/// ```
pub fn check_eq<T: PartialEq + fmt::Debug>(what: &str, want: T, got: T) -> Result<()> {
    if want == got {
        Ok(())
    } else {
        Err(Error::WrongAnswer(format!(
            "{what}: expected {want:?}, got {got:?}"
        )))
    }
}

/// Times `work`, which does `ops` operations and checks its own answer.
pub fn timed(ops: u64, work: impl FnOnce() -> Result<()>) -> Result<Sample> {
    let before = pcml::sched::metrics();
    let start = Instant::now();
    work()?;
    let seconds = start.elapsed().as_secs_f64().max(1e-9);
    sched_count(before, ops);
    Ok(Sample { seconds, ops })
}

/// What pcml's scheduler did in the timed regions of the samples since the last
/// [`sched_reset`]: per proc, resumes, polls, steals, parks, cross-proc wake-ups sent and
/// received, summed over the samples, and the operations they did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchedCounts {
    /// Per proc: resumes, polls, steals, injector batches, parks, wake-ups sent to other
    /// procs, wake-ups received through the inbox.
    pub procs: Vec<[u64; 7]>,
    /// Operations of the samples counted.
    pub ops: u64,
}

impl SchedCounts {
    /// One line per operation: each counter divided by the operations, per proc.
    ///
    /// ```
    /// use pcml_bench::runner::SchedCounts;
    /// let c = SchedCounts { procs: vec![[10, 0, 0, 0, 1, 5, 5], [10, 0, 1, 0, 0, 5, 5]], ops: 1000 };
    /// assert_eq!(
    ///     c.per_op("msg"),
    ///     "per msg: resumes 0.01/0.01, polls 0/0, cross-proc wakes sent 5.0e-3/5.0e-3 and \
    ///      received 5.0e-3/5.0e-3, parks 1.0e-3/0; steals 0/1, injector batches 0/0 in 1000 msgs"
    /// );
    /// ```
    pub fn per_op(&self, op: &str) -> String {
        let n = self.ops.max(1) as f64;
        let col = |i: usize, digits: usize| {
            self.procs
                .iter()
                .map(|p| {
                    let v = p[i] as f64 / n;
                    if p[i] == 0 {
                        "0".to_string()
                    } else if v < 0.01 {
                        format!("{v:.1e}")
                    } else {
                        format!("{v:.*}", digits)
                    }
                })
                .collect::<Vec<_>>()
                .join("/")
        };
        let all = |i: usize| {
            self.procs
                .iter()
                .map(|p| p[i].to_string())
                .collect::<Vec<_>>()
                .join("/")
        };
        format!(
            "per {op}: resumes {}, polls {}, cross-proc wakes sent {} and received {}, parks {}; \
             steals {}, injector batches {} in {} {op}s",
            col(0, 2),
            col(1, 2),
            col(5, 2),
            col(6, 2),
            col(4, 2),
            all(2),
            all(3),
            self.ops
        )
    }
}

static SCHED: std::sync::Mutex<Option<SchedCounts>> = std::sync::Mutex::new(None);

/// Forgets the scheduler counts gathered so far (a new pcml runtime starts).
pub fn sched_reset() {
    *SCHED.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

/// Takes the scheduler counts gathered since the last reset, if any sample ran on pcml.
pub fn sched_take() -> Option<SchedCounts> {
    SCHED.lock().unwrap_or_else(|e| e.into_inner()).take()
}

/// Adds what the runtime of the calling thread did since `before` (taken when a timed
/// region began) to the counts; nothing off a pcml runtime.
fn sched_count(before: Option<pcml::sched::RuntimeMetrics>, ops: u64) {
    let (Some(before), Some(after)) = (before, pcml::sched::metrics()) else {
        return;
    };
    let d = after.since(&before);
    let mut g = SCHED.lock().unwrap_or_else(|e| e.into_inner());
    let c = g.get_or_insert_with(SchedCounts::default);
    c.procs.resize(d.procs().len().max(c.procs.len()), [0; 7]);
    for (acc, p) in c.procs.iter_mut().zip(d.procs()) {
        let add = [
            p.resumes,
            p.polls,
            p.steals,
            p.injector_pulls,
            p.parks,
            p.sent_wakes,
            p.inbox_wakes,
        ];
        for (a, x) in acc.iter_mut().zip(add) {
            *a += x;
        }
    }
    c.ops += ops;
}

/// The async form of a warm-up and `runs` samples: awaits `one(size / 10 + 1)` once to warm
/// up, then `one(size)` `runs` times, each timed as a sample of `ops` operations. `one`
/// checks its own answer.
pub async fn warm_samples_async<Fut>(
    runs: usize,
    size: u64,
    ops: u64,
    mut one: impl FnMut(u64) -> Fut,
) -> Result<Vec<Sample>>
where
    Fut: std::future::Future<Output = Result<()>>,
{
    one(size / 10 + 1).await?;
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let before = pcml::sched::metrics();
        let start = Instant::now();
        one(size).await?;
        let seconds = start.elapsed().as_secs_f64().max(1e-9);
        sched_count(before, ops);
        samples.push(Sample { seconds, ops });
    }
    Ok(samples)
}

/// Runs `one` once to warm up (stack pools, caches), then `runs` more times, each a sample of
/// `ops` operations. `one` checks its own answer and returns the seconds it measured (its
/// timed region may leave out set-up such as copying the input).
pub fn warm_runs(
    runs: usize,
    ops: u64,
    mut one: impl FnMut() -> Result<f64>,
) -> Result<Vec<Sample>> {
    one()?;
    (0..runs)
        .map(|_| {
            let before = pcml::sched::metrics();
            let seconds = one()?;
            sched_count(before, ops);
            Ok(Sample { seconds, ops })
        })
        .collect()
}

/// The process's resident set now and its peak since the last [`reset_peak_rss`], in bytes
/// (`VmRSS`, `VmHWM` of `/proc/self/status`); `None` where not available.
pub fn rss() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Resets the process's peak resident set to its current size (Linux: writing 5 to
/// `/proc/self/clear_refs`); returns whether it could.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// Runs `one` `runs` times and collects its samples, stopping at the first error.
pub fn repeat(runs: usize, mut one: impl FnMut() -> Result<Sample>) -> Result<Vec<Sample>> {
    (0..runs).map(|_| one()).collect()
}

/// A one-line progress indicator on stderr: rewritten in place on a terminal, one line per
/// step otherwise (so logs stay readable).
#[derive(Debug)]
pub struct Progress {
    tty: bool,
    quiet: bool,
    start: Instant,
}

impl Progress {
    /// A progress line on stderr; `quiet` silences it (tests).
    pub fn new(quiet: bool) -> Self {
        Progress {
            tty: std::io::stderr().is_terminal(),
            quiet,
            start: Instant::now(),
        }
    }

    /// Says what runs now.
    pub fn step(&self, what: &str) {
        if self.quiet {
            return;
        }
        let t = self.start.elapsed().as_secs_f64();
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[K[{t:6.1}s] {what}");
        } else {
            let _ = writeln!(err, "[{t:6.1}s] {what}");
        }
        let _ = err.flush();
    }

    /// Ends the progress line.
    pub fn finish(&self, what: &str) {
        if self.quiet {
            return;
        }
        let t = self.start.elapsed().as_secs_f64();
        if self.tty {
            eprintln!("\r\x1b[K[{t:6.1}s] {what}");
        } else {
            eprintln!("[{t:6.1}s] {what}");
        }
    }
}
