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
        let outcome = match Stats::of_samples(metric, samples) {
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
        }
    }

    /// The same row with a note.
    pub fn with_note(mut self, note: &str) -> Row {
        self.note = note.to_string();
        self
    }

    /// The median, if measured.
    pub fn median(&self) -> Option<f64> {
        match &self.outcome {
            Outcome::Measured(s) => Some(s.median),
            _ => None,
        }
    }
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
    /// Short id, used in chart file names, e.g. `"seed003"`.
    pub id: &'static str,
    /// Heading, e.g. `"Parallel CML (seed 003, section 10)"`.
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
        let value = match (self.find(num), self.find(den)) {
            (Some(a), Some(b)) => match (a.median(), b.median()) {
                (Some(x), Some(y)) if y > 0.0 => Ok(x / y),
                (None, _) => Err(format!("{} {} not measured", a.system, a.program)),
                _ => Err(format!("{} {} not measured", b.system, b.program)),
            },
            (None, _) => Err(format!("no row for {} {}", num.1, num.0)),
            (_, None) => Err(format!("no row for {} {}", den.1, den.0)),
        };
        self.ratios.push(Ratio {
            label: label.to_string(),
            value,
            goal,
            absolute: None,
        });
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
            label: label.to_string(),
            value,
            goal: Some(goal),
            absolute: Some(metric),
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_of_medians_and_missing_sides() {
        let m = Metric::Rate { unit: "t/s" };
        let mut s = Section::new("x", "X", "");
        let fast = [Sample {
            seconds: 1.0,
            ops: 300,
        }];
        let slow = [Sample {
            seconds: 1.0,
            ops: 100,
        }];
        s.rows.push(Row::measured("p", "a", Some(1), m, &fast));
        s.rows.push(Row::measured("p", "b", Some(1), m, &slow));
        s.rows.push(Row::skipped("p", "c", Some(1), m, "absent"));
        s.add_ratio("a/b", ("p", "a", Some(1)), ("p", "b", Some(1)), None);
        s.add_ratio("a/c", ("p", "a", Some(1)), ("p", "c", Some(1)), None);
        assert_eq!(s.ratios[0].value, Ok(3.0));
        assert!(s.ratios[1].value.is_err());
        assert!(Goal::AtLeast(1.5).met(3.0));
        assert!(!Goal::AtMost(5.0).met(6.0));
    }
}
