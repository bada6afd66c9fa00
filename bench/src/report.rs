//! The report: one markdown table per section (printed to stdout and written to
//! `target/pcml-report/report.md`) and SVG charts beside it.
//!
//! Charts use plotters' SVG backend only: text goes into the SVG as `<text>` elements and is
//! laid out with plotters' built-in size estimate, so no system font (fontconfig, freetype) is
//! needed to build or run. Two kinds: one bar chart per program with two or more measured
//! systems (median as the bar, min-max as a whisker), and, when several proc counts were run, a
//! rate-against-procs line chart per program.
//!
//! # Invariants
//! - Every figure printed names its unit; pending and skipped rows are printed with their
//!   reason, never dropped.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::machine::Machine;
use crate::programs::Config;
use crate::runner::Metric;
use crate::table::{Goal, Outcome, Ratio, Row, Section, Verdict};

/// A whole run's results.
#[derive(Debug, Clone)]
pub struct Report {
    /// Where it ran.
    pub machine: Machine,
    /// What was asked.
    pub cfg: Config,
    /// The sections, in order.
    pub sections: Vec<Section>,
    /// Wall-clock seconds of the whole run.
    pub elapsed: f64,
}

/// Three significant digits, with a thousands separator above 1000.
///
/// ```
/// use pcml_bench::report::sig3;
/// assert_eq!(sig3(1234.6), "1,235");
/// assert_eq!(sig3(12.345), "12.3");
/// assert_eq!(sig3(0.012345), "0.0123");
/// ```
pub fn sig3(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if a >= 1000.0 {
        let digits = format!("{:.0}", v.abs());
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        if v < 0.0 { format!("-{out}") } else { out }
    } else if a == 0.0 {
        "0".to_string()
    } else {
        let decimals = (2 - a.log10().floor() as i32).max(0) as usize;
        format!("{v:.decimals$}")
    }
}

/// A figure in its metric's unit, compactly: rates with k/M, seconds as ms below one.
///
/// ```
/// use pcml_bench::report::fmt_value;
/// use pcml_bench::runner::Metric;
/// assert_eq!(fmt_value(Metric::Rate { unit: "t/s" }, 2_345_678.0), "2.35 M");
/// assert_eq!(fmt_value(Metric::Seconds, 0.0123), "12.3 ms");
/// assert_eq!(fmt_value(Metric::NsPerOp { op: "x" }, 41.26), "41.3");
/// ```
pub fn fmt_value(metric: Metric, v: f64) -> String {
    match metric {
        Metric::Rate { .. } if v >= 1e6 => format!("{} M", sig3(v / 1e6)),
        Metric::Rate { .. } if v >= 1e3 => format!("{} k", sig3(v / 1e3)),
        Metric::Rate { .. } => sig3(v),
        Metric::NsPerOp { .. } => sig3(v),
        Metric::Seconds if v < 1.0 => format!("{} ms", sig3(v * 1e3)),
        Metric::Seconds => format!("{} s", sig3(v)),
        Metric::BytesPerOp { .. } if v >= 1024.0 * 1024.0 => {
            format!("{} MiB", sig3(v / (1024.0 * 1024.0)))
        }
        Metric::BytesPerOp { .. } => sig3(v),
    }
}

fn procs_cell(p: Option<usize>) -> String {
    p.map_or("-".to_string(), |p| p.to_string())
}

fn unit_cell(m: Metric) -> String {
    match m {
        Metric::Seconds => "time per run".to_string(),
        _ => m.unit(),
    }
}

fn row_markdown(r: &Row) -> String {
    let (median, spread, note) = match &r.outcome {
        Outcome::Measured(s) => {
            let mut median = fmt_value(r.metric, s.median);
            if let Metric::NsPerOp { .. } = r.metric {
                median.push_str(&format!(
                    " ({}/s)",
                    fmt_value(Metric::Rate { unit: "" }, 1e9 / s.median)
                ));
            }
            (
                median,
                format!(
                    "{} - {}",
                    fmt_value(r.metric, s.min),
                    fmt_value(r.metric, s.max)
                ),
                r.note.clone(),
            )
        }
        Outcome::Skipped(why) => ("-".into(), "-".into(), format!("skipped: {why}")),
        Outcome::Pending(why) => ("-".into(), "-".into(), format!("**{why}**")),
    };
    let runs = match &r.outcome {
        Outcome::Measured(s) => format!("{} x {}", s.runs, sig3(r.ops as f64)),
        _ => "-".into(),
    };
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
        r.program,
        r.system,
        procs_cell(r.procs),
        median,
        spread,
        unit_cell(r.metric),
        runs,
        note
    )
}

/// A ratio's value, spread, goal and status cells: a ratio shows as `2.5x`, a figure held
/// against a limit ([`Section::add_limit`](crate::table::Section::add_limit)) in its metric's
/// unit.
fn ratio_cells(q: &Ratio, sec: &Section) -> [String; 4] {
    let show = |v: f64| match q.absolute {
        Some(m) => fmt_value(m, v),
        None => format!("{}x", sig3(v)),
    };
    let goal = match q.goal {
        Some(Goal::AtLeast(g)) => format!(">= {}", show(g)),
        Some(Goal::AtMost(g)) => format!("<= {}", show(g)),
        None => String::new(),
    };
    let spread = match (&q.value, q.spread(sec)) {
        (Ok(_), Some((lo, hi))) => format!(
            "{} - {}{}",
            show(lo),
            show(hi),
            if q.per_round.len() >= 2 {
                " (rounds)"
            } else {
                ""
            }
        ),
        _ => String::new(),
    };
    let value = match &q.value {
        Ok(v) => show(*v),
        Err(_) => "-".to_string(),
    };
    let status = match (q.verdict(sec), &q.value) {
        (_, Err(why)) => format!("n/a: {why}"),
        (Verdict::Met, _) => "met".to_string(),
        (Verdict::NotMet, _) => "**not met**".to_string(),
        (Verdict::Unsettled { met_at_median }, _) => format!(
            "unsettled ({} at the median)",
            if met_at_median { "met" } else { "not met" }
        ),
        _ => String::new(),
    };
    [value, spread, goal, status]
}

/// One section as markdown: the table, ratios, the paper's figures and notes.
pub fn section_markdown(sec: &Section) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "## {}\n", sec.title);
    md.push_str(
        "| program | system | procs | median | spread (min - max) | unit | runs x ops | note |\n",
    );
    md.push_str("| --- | --- | ---: | ---: | ---: | --- | ---: | --- |\n");
    for r in &sec.rows {
        md.push_str(&row_markdown(r));
    }
    if !sec.ratios.is_empty() {
        md.push_str(
            "\n| ratio (same run) | value | spread | goal | |\n| --- | ---: | ---: | --- | --- |\n",
        );
        for q in &sec.ratios {
            let [value, spread, goal, status] = ratio_cells(q, sec);
            let _ = writeln!(
                md,
                "| {} | {value} | {spread} | {goal} | {status} |",
                q.label
            );
        }
    }
    if !sec.published.is_empty() {
        let _ = writeln!(
            md,
            "\nPublished ({}), for reference:\n\n| program | system | published |\n| --- | --- | --- |",
            sec.published_on
        );
        for p in &sec.published {
            let _ = writeln!(md, "| {} | {} | {} |", p.program, p.system, p.figure);
        }
    }
    let sched: Vec<&Row> = sec.rows.iter().filter(|r| r.sched.is_some()).collect();
    if !sched.is_empty() {
        md.push_str(
            "\nWhat pcml's scheduler did in the 2-proc rows' timed runs (`pcml::sched::metrics`; \
             figures per proc, proc 0/proc 1):\n\n",
        );
        for r in sched {
            let _ = writeln!(
                md,
                "- {}, {}: {}",
                r.program,
                r.system,
                r.sched.as_deref().unwrap_or_default()
            );
        }
    }
    if !sec.notes.is_empty() {
        md.push('\n');
        for n in &sec.notes {
            let _ = writeln!(md, "- {n}");
        }
    }
    md
}

/// The report's header: machine, versions and parameters.
pub fn header_markdown(r: &Report) -> String {
    let m = &r.machine;
    let c = &r.cfg;
    format!(
        "# pcml benchmark report\n\n\
         Run {date} UTC, pcml {commit}, {mode} sizes, {runs} samples per figure (median and \
         min - max) taken in {rounds} rounds (the whole selection run {rounds} times, one after \
         the other, so that pcml's and the peers' runs interleave), procs {procs:?}, peers \
         {peers}, co-runners {co}; took {secs:.0} s. A goal met in some rounds and missed in \
         others, or met in every round but not by the pooled figures, is marked unsettled: the \
         machine's noise is larger than the margin.\n\n\
         | machine | |\n| --- | --- |\n\
         | cores | {cores} |\n| CPU | {cpu} |\n| kernel | {kernel} |\n| rustc | {rustc} |\n\
         | Rust allocator | mimalloc 3, called through `mi_malloc` for word-aligned requests (`pcml_bench::alloc::MiMallocNatural`, the bench binary's global allocator; pcml does not choose one) |\n\
         | Go | {go} |\n| Erlang | {erl} |\n| SML/NJ (CML) | {sml} |\n\
         | load average at start | {load} |\n\
         | parallelism at start | {par:.2} of {cores} cores{par_note} |\n\
         | cache-line round trip between 2 threads at start | {rtt} |\n\n\
         Rates are per second (higher is better); ns per operation and seconds per run are \
         lower-is-better. Every ratio compares figures of this run. A pcml configuration whose \
         run would exceed the budget (0.5 s quick, 5 s full) runs fewer operations: \
         \"runs x ops\" gives the count used.\n",
        date = m.date,
        commit = m.commit,
        mode = if c.full { "the papers'" } else { "quick" },
        runs = c.runs.div_ceil(c.rounds.max(1)) * c.rounds.max(1),
        rounds = c.rounds.max(1),
        procs = c.procs,
        peers = if !c.peers {
            "off (--no-peers)".to_string()
        } else if c.peer_names.is_empty() {
            "on".to_string()
        } else {
            format!("{} only (--peers)", c.peer_names.join(", "))
        },
        co = if c.co_runners == 0 {
            "none".to_string()
        } else {
            format!(
                "{} busy-looping processes beside the rows named \"..., {} busy\"",
                c.co_runners, c.co_runners
            )
        },
        secs = r.elapsed,
        cores = m.cores,
        cpu = m.cpu,
        kernel = m.kernel,
        rustc = m.rustc,
        go = m.go,
        erl = m.erlang,
        sml = m.sml,
        load = m.load.map_or("unknown".to_string(), |l| format!("{l:.2}")),
        par = m.parallelism,
        rtt = m
            .line_round_trip_ns
            .map_or("not measured (1 core)".to_string(), |ns| format!(
                "{ns:.0} ns (from about 40 ns to over 1 us seen on this VM, changing over minutes; \
             2-proc figures follow it)"
            )),
        par_note = if m.cores > 1 && m.parallelism < 0.75 * m.cores as f64 {
            " (**the machine is busy: multi-proc figures here measure oversubscription**)"
        } else {
            ""
        },
    )
}

/// Every ratio that tracks a goal, from all sections, in one table: met, not met, or not
/// measured.
pub fn goals_markdown(sections: &[Section]) -> String {
    let mut md = String::from(
        "## Goals (ratios measured in this run)\n\n| section | ratio | value | spread | goal | |\n| --- | --- | ---: | ---: | --- | --- |\n",
    );
    let mut any = false;
    for sec in sections {
        for q in sec.ratios.iter().filter(|q| q.goal.is_some()) {
            any = true;
            let [value, spread, goal, status] = ratio_cells(q, sec);
            let _ = writeln!(
                md,
                "| {} | {} | {value} | {spread} | {goal} | {status} |",
                sec.id, q.label
            );
        }
    }
    if !any {
        md.push_str("| - | no goal ratio in the selected programs | | | | |\n");
    }
    md
}

/// The end of a run on the terminal: how many goals were met, not met, unsettled or not
/// measured; the goals missed and unsettled, furthest from their goal first; and where the
/// full report is.
pub fn summary_text(sections: &[Section], report: &Path) -> String {
    let mut counts = [0usize; 4];
    let mut missed: Vec<(f64, String)> = Vec::new();
    for sec in sections {
        for q in sec.ratios.iter().filter(|q| q.goal.is_some()) {
            let verdict = q.verdict(sec);
            let slot = match verdict {
                Verdict::Met => 0,
                Verdict::NotMet => 1,
                Verdict::Unsettled { .. } => 2,
                _ => 3,
            };
            counts[slot] += 1;
            if let (1 | 2, Ok(v), Some(goal)) = (slot, &q.value, q.goal) {
                // How far from the goal, as a factor >= 1 when missed.
                let off = match goal {
                    Goal::AtLeast(g) => g / v,
                    Goal::AtMost(g) => v / g,
                };
                let [value, spread, goal, status] = ratio_cells(q, sec);
                let status = status.replace("**", "");
                missed.push((
                    off,
                    format!(
                        "  {value:>10}  (goal {goal}; {spread}) {status}: {}",
                        q.label
                    ),
                ));
            }
        }
    }
    missed.sort_by(|a, b| b.0.total_cmp(&a.0));
    let mut out = format!(
        "Goals: {} met, {} not met, {} unsettled (the rounds disagree), {} not measured.\n",
        counts[0], counts[1], counts[2], counts[3]
    );
    if !missed.is_empty() {
        out.push_str("Not met or unsettled, furthest from the goal first:\n");
        for (_, line) in &missed {
            out.push_str(line);
            out.push('\n');
        }
    }
    let _ = write!(out, "Full report with charts: {}", report.display());
    out
}

/// A file-name-safe form of `s`.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_string()
}

type ChartResult = Result<(), Box<dyn std::error::Error>>;

/// An axis for a metric whose figures go up to `max`: the factor figures are divided by, and
/// the axis's description with its unit (one unit for the whole axis, so ticks are plain
/// numbers).
///
/// ```
/// use pcml_bench::report::axis;
/// use pcml_bench::runner::Metric;
/// assert_eq!(axis(Metric::Seconds, 0.25), (1e-3, "time per run (ms)".to_string()));
/// assert_eq!(axis(Metric::Rate { unit: "msgs/s" }, 3e6), (1e6, "M msgs/s".to_string()));
/// ```
pub fn axis(metric: Metric, max: f64) -> (f64, String) {
    const KIB: f64 = 1024.0;
    match metric {
        Metric::Rate { unit } if max >= 1e6 => (1e6, format!("M {unit}")),
        Metric::Rate { unit } if max >= 1e3 => (1e3, format!("k {unit}")),
        Metric::Rate { unit } => (1.0, unit.to_string()),
        Metric::NsPerOp { op } if max >= 1e6 => (1e6, format!("ms per {op}")),
        Metric::NsPerOp { op } if max >= 1e4 => (1e3, format!("us per {op}")),
        Metric::NsPerOp { op } => (1.0, format!("ns per {op}")),
        Metric::Seconds if max < 1e-3 => (1e-6, "time per run (us)".to_string()),
        Metric::Seconds if max < 1.0 => (1e-3, "time per run (ms)".to_string()),
        Metric::Seconds => (1.0, "time per run (s)".to_string()),
        Metric::BytesPerOp { op } if max >= KIB * KIB => (KIB * KIB, format!("MiB per {op}")),
        Metric::BytesPerOp { op } if max >= KIB => (KIB, format!("KiB per {op}")),
        Metric::BytesPerOp { op } => (1.0, format!("bytes per {op}")),
    }
}

/// What a chart shows, in words, for its title.
fn quantity(metric: Metric) -> String {
    match metric {
        Metric::Rate { unit } => format!("{unit}, higher is better"),
        Metric::NsPerOp { op } => format!("time per {op}, lower is better"),
        Metric::Seconds => "time per run, lower is better".to_string(),
        Metric::BytesPerOp { op } => format!("peak memory per {op}, lower is better"),
    }
}

/// The bar colour of a system: pcml blue, each peer a strong colour of its own (the same in
/// every chart).
fn system_color(system: &str) -> RGBColor {
    let s = system.to_ascii_lowercase();
    if s.starts_with("pcml") {
        if s.contains("task") || s.contains("async") {
            RGBColor(0x3b, 0x82, 0xf6)
        } else {
            RGBColor(0x1d, 0x4e, 0xd8)
        }
    } else if s.starts_with("go") {
        RGBColor(0x0e, 0x94, 0x88)
    } else if s.starts_with("tokio") {
        RGBColor(0xea, 0x58, 0x0c)
    } else if s.starts_with("crossbeam") {
        RGBColor(0x93, 0x33, 0xea)
    } else if s.starts_with("erlang") {
        RGBColor(0xdc, 0x26, 0x26)
    } else if s.starts_with("cml") {
        RGBColor(0x16, 0xa3, 0x4a)
    } else if s.starts_with("std") || s.contains("os thread") {
        RGBColor(0x52, 0x52, 0x5b)
    } else {
        // A pcml primitive named by what it does (Figure 9's rows).
        RGBColor(0x1d, 0x4e, 0xd8)
    }
}

/// Ten strong colours that stay apart from each other (lines of a procs chart).
const LINE_COLORS: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// A horizontal bar chart of measured rows (median bars, min-max whiskers). Rows whose median
/// is zero (a memory probe below the resident-set granularity) are left out: a bar of nothing
/// with a whisker to one page says less than the table does.
fn bar_chart(path: &Path, title: &str, rows: &[&Row]) -> ChartResult {
    let metric = rows[0].metric;
    let stats: Vec<_> = rows
        .iter()
        .filter_map(|r| match &r.outcome {
            Outcome::Measured(s) if s.median > 0.0 => Some((*r, *s)),
            _ => None,
        })
        .collect();
    let n = stats.len();
    let top = stats.iter().map(|(_, s)| s.max).fold(0.0, f64::max);
    if !top.is_finite() || n < 2 {
        return Err(format!("fewer than two nonzero figures to chart (largest: {top})").into());
    }
    let (div, desc) = axis(metric, top);
    let xmax = top / div * 1.25;
    let labels: Vec<String> = stats
        .iter()
        .map(|(r, _)| match r.procs {
            Some(p) => format!("{} ({p}P)", r.system),
            None => r.system.clone(),
        })
        .collect();
    let height = (90 + 34 * n as u32).max(240);
    let root = SVGBackend::new(path, (820, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(230)
        // `0..n - 1` segmented is n bands, one a row (`0..n` would leave an empty band on top).
        .build_cartesian_2d(0f64..xmax.max(1e-12), (0..n - 1).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .set_tick_mark_size(LabelAreaPosition::Left, 0)
        .x_desc(desc)
        .x_label_formatter(&|v| sig3(*v))
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => labels.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .draw()?;
    for (i, (r, s)) in stats.iter().enumerate() {
        let color = system_color(&r.system);
        let mut bar = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(i)),
                (s.median / div, SegmentValue::Exact(i + 1)),
            ],
            color.filled(),
        );
        bar.set_margin(5, 5, 0, 0);
        chart.draw_series(std::iter::once(bar))?;
        chart.draw_series(std::iter::once(PathElement::new(
            vec![
                (s.min / div, SegmentValue::CenterOf(i)),
                (s.max / div, SegmentValue::CenterOf(i)),
            ],
            BLACK.stroke_width(2),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            fmt_value(metric, s.median),
            (
                s.max.max(s.median) / div + xmax * 0.01,
                SegmentValue::CenterOf(i),
            ),
            ("sans-serif", 13),
        )))?;
    }
    root.present()?;
    Ok(())
}

/// A figure-against-procs chart: one line per system measured on several proc counts.
fn procs_chart(
    path: &Path,
    title: &str,
    lines: &BTreeMap<String, Vec<(usize, f64)>>,
    metric: Metric,
) -> ChartResult {
    let pmax = lines
        .values()
        .flat_map(|v| v.iter().map(|(p, _)| *p))
        .max()
        .unwrap_or(1);
    let top = lines
        .values()
        .flat_map(|v| v.iter().map(|(_, y)| *y))
        .fold(0.0, f64::max);
    if !top.is_finite() {
        return Err(format!("no finite figure to chart (largest: {top})").into());
    }
    let (div, desc) = axis(metric, top);
    let ymax = top / div * 1.15;
    let root = SVGBackend::new(path, (820, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(80)
        .build_cartesian_2d(1usize..pmax, 0f64..ymax.max(1e-12))?;
    chart
        .configure_mesh()
        .x_desc("procs")
        .x_labels(pmax)
        .y_desc(desc)
        .y_label_formatter(&|v| sig3(*v))
        .draw()?;
    for (i, (system, points)) in lines.iter().enumerate() {
        let color = LINE_COLORS[i % LINE_COLORS.len()].to_rgba();
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|&(p, y)| (p, y / div)),
                color.stroke_width(2),
            ))?
            .label(system.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
        chart.draw_series(
            points
                .iter()
                .map(|&(p, y)| Circle::new((p, y / div), 4, color.filled())),
        )?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}

/// Draws the charts of one section into `dir`; returns the files written, and a note for any
/// chart that failed (a chart failing never fails the run).
pub fn section_charts(sec: &Section, dir: &Path) -> (Vec<PathBuf>, Vec<String>) {
    let mut written = Vec::new();
    let mut failed = Vec::new();
    let mut programs: Vec<&str> = Vec::new();
    for r in &sec.rows {
        if !programs.contains(&r.program.as_str()) {
            programs.push(&r.program);
        }
    }
    for program in programs {
        // Group by metric too: Figure 9's rows mix units.
        let measured: Vec<&Row> = sec
            .rows
            .iter()
            .filter(|r| r.program == program && matches!(r.outcome, Outcome::Measured(_)))
            .collect();
        let mut by_unit: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
        for r in &measured {
            by_unit.entry(r.metric.unit()).or_default().push(r);
        }
        let multi_unit = by_unit.len() > 1;
        for (unit, rows) in &by_unit {
            if rows.len() < 2 {
                continue;
            }
            let name = if multi_unit {
                format!("{}-{}-{}.svg", sec.id, slug(program), slug(unit))
            } else {
                format!("{}-{}.svg", sec.id, slug(program))
            };
            let path = dir.join(name);
            if rows
                .iter()
                .filter(|r| r.median().is_some_and(|m| m > 0.0))
                .count()
                < 2
            {
                continue;
            }
            let title = format!("{program}: {}", quantity(rows[0].metric));
            match bar_chart(&path, &title, rows) {
                Ok(()) => written.push(path),
                Err(e) => failed.push(format!("chart {}: {e}", path.display())),
            }
        }
        // Against procs: systems measured on two or more proc counts.
        let mut lines: BTreeMap<String, Vec<(usize, f64)>> = BTreeMap::new();
        for r in &measured {
            if let (Some(p), Some(m)) = (r.procs, r.median()) {
                lines.entry(r.system.clone()).or_default().push((p, m));
            }
        }
        lines.retain(|_, v| v.len() >= 2);
        if !lines.is_empty() && by_unit.len() == 1 {
            for v in lines.values_mut() {
                v.sort_by_key(|(p, _)| *p);
            }
            let path = dir.join(format!("{}-{}-procs.svg", sec.id, slug(program)));
            let metric = measured[0].metric;
            let title = format!("{program} against procs: {}", quantity(metric));
            match procs_chart(&path, &title, &lines, metric) {
                Ok(()) => written.push(path),
                Err(e) => failed.push(format!("chart {}: {e}", path.display())),
            }
        }
    }
    (written, failed)
}

/// Writes `report.md` and the charts into `dir`; returns the markdown and any chart failures.
pub fn write(report: &Report, dir: &Path) -> std::io::Result<(PathBuf, Vec<String>)> {
    std::fs::create_dir_all(dir)?;
    // Charts of an earlier run would be linked by nobody; clear them.
    for e in std::fs::read_dir(dir)?.flatten() {
        if e.path().extension().is_some_and(|x| x == "svg") {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let mut md = header_markdown(report);
    md.push('\n');
    md.push_str(&goals_markdown(&report.sections));
    let mut problems = Vec::new();
    for sec in &report.sections {
        md.push('\n');
        md.push_str(&section_markdown(sec));
        let (charts, failed) = section_charts(sec, dir);
        problems.extend(failed);
        if !charts.is_empty() {
            md.push('\n');
            for c in charts {
                let name = c
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
                let _ = writeln!(md, "![{name}]({name})");
            }
        }
    }
    let path = dir.join("report.md");
    std::fs::write(&path, md)?;
    Ok((path, problems))
}
