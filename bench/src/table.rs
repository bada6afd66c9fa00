//! What a run produces: one [`Section`] per paper (or per issue, for the runtime's
//! microbenchmarks), holding rows of figures, ratios between rows and the paper's published
//! figures for reference.
//!
//! A row is one system running one program on some procs. Its outcome is measured (median and
//! spread), skipped (a peer is not installed, or the user turned peers off) or pending (pcml
//! lacks the layer the program needs); the report shows all three so that what is not yet
//! measured is plain.
//!
//! # Invariants
//! - A ratio's figures come from rows of the same section, hence the same invocation.

use crate::runner::{Metric, Sample, Stats};

/// How a row ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Measured: median and spread in the row's metric.
    Measured(Stats),
    /// Not run, with the reason (a peer not installed, `--no-peers`).
    Skipped(String),
    /// Not yet measured: pcml lacks what the program needs (the reason says what).
    Pending(String),
}

/// One system running one program on some procs.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The program, e.g. `"spawn"`.
    pub program: String,
    /// The system measured, e.g. `"pcml fibers"`, `"CML"`, `"Go"`.
    pub system: String,
    /// Procs (worker threads, GOMAXPROCS, schedulers) used; `None` when not applicable.
    pub procs: Option<usize>,
    /// Operations per run (what the metric counts), or the program's size.
    pub ops: u64,
    /// What the figures mean.
    pub metric: Metric,
    /// The figures, or why there are none.
    pub outcome: Outcome,
    /// A short remark (placement, variant), may be empty.
    pub note: String,
    /// Every figure measured, in the metric's unit (what [`Section::merge_round`] pools).
    pub values: Vec<f64>,
    /// For a pcml row on 2 procs: what the scheduler did per operation in its timed runs
    /// ([`SchedCounts::per_op`](crate::runner::SchedCounts::per_op)).
    pub sched: Option<String>,
}

/// What one operation of `metric` is called, for per-operation figures.
fn op_name(metric: Metric) -> &'static str {
    match metric {
        Metric::Rate { unit } => {
            let per_s = unit.strip_suffix("/s").unwrap_or(unit);
            per_s.strip_suffix('s').unwrap_or(per_s)
        }
        Metric::NsPerOp { op } | Metric::BytesPerOp { op } => op,
        Metric::Seconds => "op",
    }
}

impl Row {
    /// A measured row from its samples.
    pub fn measured(
        program: &str,
        system: &str,
        procs: Option<usize>,
        metric: Metric,
        samples: &[Sample],
    ) -> Row {
        let ops = samples.first().map_or(0, |s| s.ops);
        let values: Vec<f64> = samples.iter().map(|s| metric.value(s)).collect();
        // The counts gathered since the row's runtime started belong to this row.
        let counts = crate::runner::sched_take();
        let sched = counts
            .filter(|_| system.starts_with("pcml") && procs == Some(2))
            .map(|c| c.per_op(op_name(metric)));
        let outcome = match Stats::of(&values) {
            Some(s) => Outcome::Measured(s),
            None => Outcome::Skipped("no samples".to_string()),
        };
        Row {
            program: program.to_string(),
            system: system.to_string(),
            procs,
            ops,
            metric,
            outcome,
            note: String::new(),
            values,
            sched,
        }
    }

    /// A measured row from figures already in the metric's unit (memory rows).
    pub fn from_values(
        program: &str,
        system: &str,
        procs: Option<usize>,
        ops: u64,
        metric: Metric,
        values: &[f64],
    ) -> Row {
        Row {
            program: program.to_string(),
            system: system.to_string(),
            procs,
            ops,
            metric,
            outcome: match Stats::of(values) {
                Some(s) => Outcome::Measured(s),
                None => Outcome::Skipped("no figures".to_string()),
            },
            note: String::new(),
            values: values.to_vec(),
            sched: None,
        }
    }

    /// A row that was not run, with the reason.
    pub fn skipped(
        program: &str,
        system: &str,
        procs: Option<usize>,
        metric: Metric,
        why: &str,
    ) -> Row {
        Row {
            program: program.to_string(),
            system: system.to_string(),
            procs,
            ops: 0,
            metric,
            outcome: Outcome::Skipped(why.to_string()),
            note: String::new(),
            values: Vec::new(),
            sched: None,
        }
    }

    /// A pcml row not yet measurable, with what it waits on.
    pub fn pending(program: &str, system: &str, metric: Metric, why: &str) -> Row {
        Row {
            program: program.to_string(),
            system: system.to_string(),
            procs: None,
            ops: 0,
            metric,
            outcome: Outcome::Pending(why.to_string()),
            note: String::new(),
            values: Vec::new(),
            sched: None,
        }
    }

    /// The same row with a note.
    pub fn with_note(mut self, note: &str) -> Row {
        self.note = note.to_string();
        self
    }

    /// The median, if measured.
    pub fn median(&self) -> Option<f64> {
        self.stats().map(|s| s.median)
    }

    /// The figures, if measured.
    pub fn stats(&self) -> Option<Stats> {
        match &self.outcome {
            Outcome::Measured(s) => Some(*s),
            _ => None,
        }
    }

    fn key(&self) -> OwnedKey {
        (self.program.clone(), self.system.clone(), self.procs)
    }

    /// Pools `other`'s figures (the same row measured in a later round) into this row.
    fn pool(&mut self, other: Row) {
        match (&self.outcome, &other.outcome) {
            (Outcome::Measured(_), Outcome::Measured(_)) => {
                self.values.extend(other.values);
                if let Some(s) = Stats::of(&self.values) {
                    self.outcome = Outcome::Measured(s);
                }
            }
            (Outcome::Measured(_), _) => {}
            _ => *self = other,
        }
    }
}

/// A row key that owns its strings.
pub type OwnedKey = (String, String, Option<usize>);

fn owned(k: Key<'_>) -> OwnedKey {
    (k.0.to_string(), k.1.to_string(), k.2)
}

fn borrowed(k: &OwnedKey) -> Key<'_> {
    (&k.0, &k.1, k.2)
}

/// Which way a ratio's goal points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Goal {
    /// The ratio should be at least this.
    AtLeast(f64),
    /// The ratio should be at most this.
    AtMost(f64),
}

impl Goal {
    /// Whether `ratio` meets the goal.
    pub fn met(&self, ratio: f64) -> bool {
        match *self {
            Goal::AtLeast(g) => ratio >= g,
            Goal::AtMost(g) => ratio <= g,
        }
    }
}

/// A ratio of two rows' medians, or one row's median against a limit, with an optional goal.
#[derive(Debug, Clone, PartialEq)]
pub struct Ratio {
    /// What is divided by what, in words.
    pub label: String,
    /// The ratio, or why there is none (a side was skipped).
    pub value: Result<f64, String>,
    /// The goal this ratio tracks, if any.
    pub goal: Option<Goal>,
    /// `None` for a ratio (shown as `2.5x`); for a row's own median held against a limit
    /// ([`Section::add_limit`]), the metric the value and the goal are in.
    pub absolute: Option<Metric>,
    /// The rows it is computed from: numerator and denominator, or the one row of a limit;
    /// empty for a figure derived from other ratios.
    pub keys: Vec<OwnedKey>,
    /// Its value in each round of a run in rounds ([`Section::merge_round`]), in order.
    pub per_round: Vec<f64>,
}

/// Where a measured figure stands against its goal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Met in every round (or, in a run of one round, at both ends of the rows' spread).
    Met,
    /// Missed in every round (or at both ends of the spread).
    NotMet,
    /// Met in some rounds and missed in others: the machine's noise is larger than the margin.
    /// `met_at_median` says which way the pooled figure falls.
    Unsettled {
        /// Whether the pooled (median) figure meets the goal.
        met_at_median: bool,
    },
    /// No figure (a side was not measured).
    NotMeasured,
    /// A ratio shown for information, with no goal.
    NoGoal,
}

impl Ratio {
    /// A figure derived from other figures (no rows of its own), with an optional goal.
    pub fn derived(label: &str, value: Result<f64, String>, goal: Option<Goal>) -> Ratio {
        Ratio {
            label: label.to_string(),
            value,
            goal,
            absolute: None,
            keys: Vec::new(),
            per_round: Vec::new(),
        }
    }

    /// The lowest and highest value this figure took: over the rounds when there were two or
    /// more, else over the spread of its rows (numerator's min over denominator's max, and
    /// the other way); `None` when not known.
    pub fn spread(&self, sec: &Section) -> Option<(f64, f64)> {
        if self.per_round.len() >= 2 {
            let lo = self.per_round.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = self
                .per_round
                .iter()
                .copied()
                .fold(f64::NEG_INFINITY, f64::max);
            return Some((lo, hi));
        }
        let stats: Vec<Stats> = self
            .keys
            .iter()
            .map(|k| sec.find(borrowed(k)).and_then(Row::stats))
            .collect::<Option<_>>()?;
        match stats.as_slice() {
            [one] => Some((one.min, one.max)),
            [a, b] if b.min > 0.0 => Some((a.min / b.max, a.max / b.min)),
            _ => None,
        }
    }

    /// Where the figure stands against its goal, taking the spread into account: met when the
    /// figure (the pooled rounds' medians) and both ends of the spread meet it, not met when
    /// none does, unsettled otherwise.
    ///
    /// ```
    /// use pcml_bench::table::{Goal, Ratio, Section, Verdict};
    /// let sec = Section::new("x", "X", "");
    /// let mut q = Ratio::derived("a/b", Ok(1.6), Some(Goal::AtLeast(1.5)));
    /// q.per_round = vec![1.4, 1.8];
    /// assert_eq!(q.verdict(&sec), Verdict::Unsettled { met_at_median: true });
    /// q.per_round = vec![1.55, 1.8];
    /// assert_eq!(q.verdict(&sec), Verdict::Met);
    /// // Every round met it, but the pooled figures did not (the rounds ran on a machine
    /// // whose load changed between them): neither verdict is safe.
    /// q.value = Ok(1.45);
    /// assert_eq!(q.verdict(&sec), Verdict::Unsettled { met_at_median: false });
    /// ```
    pub fn verdict(&self, sec: &Section) -> Verdict {
        let (Ok(v), Some(goal)) = (&self.value, self.goal) else {
            return if self.value.is_err() {
                Verdict::NotMeasured
            } else {
                Verdict::NoGoal
            };
        };
        let at_median = goal.met(*v);
        match self.spread(sec) {
            Some((lo, hi)) if goal.met(lo) != goal.met(hi) || goal.met(lo) != at_median => {
                Verdict::Unsettled {
                    met_at_median: at_median,
                }
            }
            _ if at_median => Verdict::Met,
            _ => Verdict::NotMet,
        }
    }
}

/// A row key: program, system, procs.
pub type Key<'a> = (&'a str, &'a str, Option<usize>);

/// A figure a paper published, shown beside ours for reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Published {
    /// The program.
    pub program: String,
    /// The system the paper measured.
    pub system: String,
    /// The figure with its unit, as published.
    pub figure: String,
}

/// The figures of one paper (or issue).
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    /// Short id, used in chart file names, e.g. `"parallel-cml"`.
    pub id: &'static str,
    /// Heading, e.g. `"Parallel CML (Reppy, Russo and Xiao 2009, section 10)"`.
    pub title: &'static str,
    /// The paper's setting for its figures (machine, year).
    pub published_on: &'static str,
    /// Remarks printed under the table (parameters, differences from the paper).
    pub notes: Vec<String>,
    /// The rows, in the order measured.
    pub rows: Vec<Row>,
    /// Ratios between rows.
    pub ratios: Vec<Ratio>,
    /// The paper's figures.
    pub published: Vec<Published>,
}

impl Section {
    /// An empty section.
    pub fn new(id: &'static str, title: &'static str, published_on: &'static str) -> Section {
        Section {
            id,
            title,
            published_on,
            notes: Vec::new(),
            rows: Vec::new(),
            ratios: Vec::new(),
            published: Vec::new(),
        }
    }

    /// The row for `key`, if any.
    pub fn find(&self, key: Key<'_>) -> Option<&Row> {
        let (program, system, procs) = key;
        self.rows
            .iter()
            .find(|r| r.program == program && r.system == system && r.procs == procs)
    }

    /// Adds the ratio of the medians of `num` and `den`, or says which is missing.
    pub fn add_ratio(&mut self, label: &str, num: Key<'_>, den: Key<'_>, goal: Option<Goal>) {
        let value = self.ratio_of(num, den);
        self.ratios.push(Ratio {
            keys: vec![owned(num), owned(den)],
            ..Ratio::derived(label, value, goal)
        });
    }

    /// The ratio of the medians of `num` and `den`, or which of them is missing.
    fn ratio_of(&self, num: Key<'_>, den: Key<'_>) -> Result<f64, String> {
        match (self.find(num), self.find(den)) {
            (Some(a), Some(b)) => match (a.median(), b.median()) {
                (Some(x), Some(y)) if y > 0.0 => Ok(x / y),
                (None, _) => Err(format!("{} {} not measured", a.system, a.program)),
                _ => Err(format!("{} {} not measured", b.system, b.program)),
            },
            (None, _) => Err(format!("no row for {} {}", num.1, num.0)),
            (_, None) => Err(format!("no row for {} {}", den.1, den.0)),
        }
    }

    /// Adds the median of `key` itself, held against `goal` in the row's metric (for a goal
    /// such as "under 0.5 s"); `why_missing` says why there is no figure when the row is
    /// absent (e.g. the size is only run with `--full`).
    ///
    /// ```
    /// use pcml_bench::runner::{Metric, Sample};
    /// use pcml_bench::table::{Goal, Row, Section};
    /// let mut s = Section::new("x", "X", "");
    /// let run = [Sample { seconds: 0.25, ops: 1 }];
    /// s.rows.push(Row::measured("p", "a", Some(2), Metric::Seconds, &run));
    /// s.add_limit("p under 0.5 s", ("p", "a", Some(2)), Goal::AtMost(0.5), "not run");
    /// s.add_limit("q under 0.5 s", ("q", "a", Some(2)), Goal::AtMost(0.5), "not run");
    /// assert_eq!(s.ratios[0].value, Ok(0.25));
    /// assert_eq!(s.ratios[1].value, Err("not run".to_string()));
    /// ```
    pub fn add_limit(&mut self, label: &str, key: Key<'_>, goal: Goal, why_missing: &str) {
        let (metric, value) = match self.find(key) {
            Some(r) => (
                r.metric,
                r.median()
                    .ok_or_else(|| format!("{} {} not measured", r.system, r.program)),
            ),
            None => (Metric::Seconds, Err(why_missing.to_string())),
        };
        self.ratios.push(Ratio {
            absolute: Some(metric),
            keys: vec![owned(key)],
            ..Ratio::derived(label, value, Some(goal))
        });
    }

    /// Pools `later`, the same section measured again in a later round of the same run, into
    /// this one: a row's figures join those of the same row here (rows are matched by program,
    /// system and procs, the k-th such row with the k-th); each ratio keeps its value of every
    /// round, then is computed again from the pooled rows (one derived from other ratios takes
    /// the median of its rounds); notes not yet present are added.
    ///
    /// ```
    /// use pcml_bench::runner::{Metric, Sample};
    /// use pcml_bench::table::{Row, Section};
    /// let m = Metric::Rate { unit: "x/s" };
    /// let round = |a: u64, b: u64| {
    ///     let mut s = Section::new("x", "X", "");
    ///     s.rows.push(Row::measured("p", "a", None, m, &[Sample { seconds: 1.0, ops: a }]));
    ///     s.rows.push(Row::measured("p", "b", None, m, &[Sample { seconds: 1.0, ops: b }]));
    ///     s.add_ratio("a/b", ("p", "a", None), ("p", "b", None), None);
    ///     s
    /// };
    /// let mut s = round(30, 10);
    /// s.merge_round(round(10, 10));
    /// assert_eq!(s.rows[0].values, vec![30.0, 10.0]);
    /// assert_eq!(s.ratios[0].per_round, vec![3.0, 1.0]);
    /// assert_eq!(s.ratios[0].value, Ok(2.0)); // median 20 over median 10
    /// ```
    pub fn merge_round(&mut self, later: Section) {
        use std::collections::HashMap;
        if self.ratios.iter().all(|q| q.per_round.is_empty()) {
            for q in &mut self.ratios {
                if let Ok(v) = q.value {
                    q.per_round.push(v);
                }
            }
        }
        let mut seen: HashMap<OwnedKey, usize> = HashMap::new();
        for row in later.rows {
            let key = row.key();
            let nth = seen.entry(key.clone()).or_insert(0);
            let mine = self.rows.iter_mut().filter(|r| r.key() == key).nth(*nth);
            *nth += 1;
            match mine {
                Some(r) => r.pool(row),
                None => self.rows.push(row),
            }
        }
        let mut seen: HashMap<String, usize> = HashMap::new();
        for q in later.ratios {
            let nth = seen.entry(q.label.clone()).or_insert(0);
            let mine = self
                .ratios
                .iter_mut()
                .filter(|r| r.label == q.label)
                .nth(*nth);
            *nth += 1;
            match mine {
                Some(r) => {
                    if let Ok(v) = q.value {
                        r.per_round.push(v);
                    }
                }
                None => self.ratios.push(q),
            }
        }
        for i in 0..self.ratios.len() {
            let q = &self.ratios[i];
            let value = match q.keys.as_slice() {
                [one] => self.find(borrowed(one)).and_then(Row::median).ok_or(()),
                [num, den] => self.ratio_of(borrowed(num), borrowed(den)).map_err(drop),
                _ => Stats::of(&q.per_round).map(|s| s.median).ok_or(()),
            };
            if let Ok(v) = value {
                self.ratios[i].value = Ok(v);
            }
        }
        for n in later.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
    }

    /// Records a published figure.
    pub fn publish(&mut self, program: &str, system: &str, figure: &str) {
        self.published.push(Published {
            program: program.to_string(),
            system: system.to_string(),
            figure: figure.to_string(),
        });
    }
}
