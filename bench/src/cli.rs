//! The command line: `pcml-bench [--full] [--only NAME[,NAME]] [--procs 1,2] [--no-peers]
//! [--peers NAME[,NAME]] [--runs N] [--rounds R] [--co-runner K] [--out DIR] [--list]`.
//!
//! Runs the selected programs in report order, prints the report's markdown to stdout, writes
//! `report.md` and the SVG charts to `target/pcml-report/` (under `CARGO_TARGET_DIR` when
//! set), and exits 1 if any program computed a wrong answer or failed, 2 on bad arguments.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::machine::Machine;
use crate::peers::{Peer, Peers};
use crate::programs::{self, Config, Ctx};
use crate::report::{self, Report};
use crate::runner::Progress;
use crate::table::Section;

const USAGE: &str = "usage: pcml-bench [--full] [--only NAME[,NAME...]] [--procs 1,2] [--no-peers] [--peers cml,go,erlang] [--runs N] [--rounds R] [--co-runner K] [--out DIR] [--list]

  --full        the papers' sizes (default: quick sizes, about five minutes on 2 cores)
  --only NAME   run only these programs or sections (repeatable, or comma-separated;
                --list shows the names, e.g. pingpong or parallel-cml)
  --procs LIST  proc counts for pcml, Go and Erlang (default 1,2)
  --no-peers    do not run the CML, Go and Erlang peers
  --peers LIST  run only these of them (cml, go, erlang; comma-separated), e.g. --peers go
                for Go's figures beside pcml's without Erlang's longer runs
  --runs N      samples per figure over all rounds (default 6); figures are medians with
                min - max
  --rounds R    run the selection R times one after the other (default 2), so that pcml's and
                the peers' runs interleave; a goal met in some rounds and not in others is
                reported as unsettled
  --co-runner K also measure the Parallel CML programs on 1 and 2 procs (pcml and Go) while K
                busy-looping processes run (rows named \"PROGRAM, K busy\")
  --out DIR     where report.md and the charts go (default target/pcml-report)
  --list        list the programs and sections, and run nothing

The report's tables go to stdout as the run ends, then a summary of the goals (met, not met,
unsettled) and the path of the full report with its charts.";

/// The parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// What to run.
    pub cfg: Config,
    /// Where the report goes; `None` for the default.
    pub out: Option<PathBuf>,
    /// Only list the programs.
    pub list: bool,
}

fn parse_list(flag: &str, v: &str) -> Result<Vec<usize>, String> {
    v.split(',')
        .map(|p| {
            p.trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{flag}: '{p}' is not a positive number"))
        })
        .collect()
}

/// Parses the arguments after the program name.
///
/// ```
/// use pcml_bench::cli::parse;
/// let a = parse(["--procs", "1", "--only", "spawn,micro", "--runs", "3"].map(String::from)).unwrap();
/// assert_eq!(a.cfg.procs, vec![1]);
/// assert_eq!(a.cfg.only, vec!["spawn", "micro"]);
/// assert_eq!(a.cfg.runs, 3);
/// assert_eq!(a.cfg.co_runners, 0);
/// assert_eq!(parse(["--co-runner", "1"].map(String::from)).unwrap().cfg.co_runners, 1);
/// assert!(parse(["--runs", "0"].map(String::from)).is_err());
/// assert_eq!(parse(["--rounds", "3"].map(String::from)).unwrap().cfg.rounds, 3);
/// let go = parse(["--peers", "go"].map(String::from)).unwrap();
/// assert_eq!(go.cfg.peer_names, vec!["go"]);
/// assert!(parse(["--peers", "rust"].map(String::from)).is_err());
/// ```
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut cfg = Config::default();
    let mut out = None;
    let mut list = false;
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let value = |it: &mut dyn Iterator<Item = String>| {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--full" => cfg.full = true,
            "--no-peers" => cfg.peers = false,
            "--peers" => {
                for name in value(&mut it)?.split(',').map(str::trim) {
                    if Peer::from_script_name(name).is_none() {
                        return Err(format!(
                            "--peers: '{name}' is not a peer (cml, go or erlang)"
                        ));
                    }
                    if !cfg.peer_names.iter().any(|n| n == name) {
                        cfg.peer_names.push(name.to_string());
                    }
                }
            }
            "--list" => list = true,
            "--only" => cfg.only.extend(
                value(&mut it)?
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            ),
            "--procs" => {
                let mut procs = parse_list("--procs", &value(&mut it)?)?;
                procs.sort_unstable();
                procs.dedup();
                cfg.procs = procs;
            }
            "--runs" => {
                cfg.runs = parse_list("--runs", &value(&mut it)?)?
                    .first()
                    .copied()
                    .ok_or("--runs needs a number")?;
            }
            "--rounds" => {
                cfg.rounds = parse_list("--rounds", &value(&mut it)?)?
                    .first()
                    .copied()
                    .ok_or("--rounds needs a number")?;
            }
            "--co-runner" => {
                let v = value(&mut it)?;
                cfg.co_runners = v.trim().parse::<usize>().map_err(|_| {
                    format!("--co-runner: '{v}' is not a number of processes (0 or more)")
                })?;
            }
            "--out" => out = Some(PathBuf::from(value(&mut it)?)),
            "-h" | "--help" => return Err(String::new()),
            _ => return Err(format!("unknown argument '{a}'")),
        }
    }
    Ok(Args { cfg, out, list })
}

/// The default report directory: `$CARGO_TARGET_DIR/pcml-report`, else the workspace's
/// `target/pcml-report`.
pub fn default_out() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let bench = Path::new(env!("CARGO_MANIFEST_DIR"));
            bench.parent().unwrap_or(bench).join("target")
        })
        .join("pcml-report")
}

/// Runs the selected programs; returns the report and the failures (wrong answers first).
pub fn run_programs(
    cfg: &Config,
    progress: &Progress,
    peers: &Peers,
) -> (Vec<Section>, Vec<String>) {
    let selected = programs::select(&cfg.only).unwrap_or_default();
    let ctx = Ctx {
        cfg,
        progress,
        peers,
    };
    let mut sections: Vec<Section> = Vec::new();
    let mut failures = Vec::new();
    for p in selected {
        let idx = match sections.iter().position(|s| s.id == p.section.id) {
            Some(i) => i,
            None => {
                sections.push(p.section.section());
                sections.len() - 1
            }
        };
        progress.step(&format!("{}: starting", p.name));
        if let Err(e) = (p.run)(&ctx, &mut sections[idx]) {
            let msg = format!("{}: {e}", p.name);
            sections[idx].notes.push(format!("**FAILED**: {msg}"));
            failures.push(msg);
        }
    }
    (sections, failures)
}

/// Runs the selection `cfg.rounds` times, one round after the other, each with its share of
/// `cfg.runs`, and pools the rounds ([`Section::merge_round`]); returns the sections and the
/// failures of every round.
pub fn run_rounds(cfg: &Config, progress: &Progress, peers: &Peers) -> (Vec<Section>, Vec<String>) {
    let rounds = cfg.rounds.max(1);
    let mut round_cfg = cfg.clone();
    round_cfg.runs = cfg.runs.div_ceil(rounds).max(1);
    let mut pooled: Vec<Section> = Vec::new();
    let mut failures = Vec::new();
    for round in 1..=rounds {
        if rounds > 1 {
            progress.step(&format!("round {round} of {rounds}"));
        }
        let (sections, failed) = run_programs(&round_cfg, progress, peers);
        failures.extend(failed.into_iter().map(|f| {
            if rounds > 1 {
                format!("round {round}: {f}")
            } else {
                f
            }
        }));
        for sec in sections {
            match pooled.iter_mut().find(|s| s.id == sec.id) {
                Some(mine) => mine.merge_round(sec),
                None => pooled.push(sec),
            }
        }
    }
    (pooled, failures)
}

/// The hidden `--probe PROGRAM KIND A B` mode: one program in this fresh process, printing
/// `PEAK_BYTES n` (the peak resident set it added) and, where the counting allocator is
/// installed, `HEAP_PEAK_BYTES n` (the peak growth of live heap bytes); see
/// [`programs::probe`].
fn probe(args: &[String]) -> i32 {
    let num = |i: usize| args.get(i).and_then(|v| v.parse::<u64>().ok());
    let (Some(program), Some(kind), Some(a), Some(b)) = (args.first(), args.get(1), num(2), num(3))
    else {
        eprintln!("usage: pcml-bench --probe PROGRAM KIND A B");
        return 2;
    };
    match programs::probe(program, kind, a, b) {
        Ok(peak) => {
            println!("PEAK_BYTES {}", peak.rss);
            if let Some(heap) = peak.heap {
                println!("HEAP_PEAK_BYTES {heap}");
            }
            0
        }
        Err(e) => {
            eprintln!("{e}");
            1
        }
    }
}

/// The binary's main; returns the exit status.
pub fn main() -> i32 {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.first().is_some_and(|a| a == crate::coload::BUSY_FLAG) {
        crate::coload::busy_loop();
    }
    if argv.first().is_some_and(|a| a == "--probe") {
        return probe(&argv[1..]);
    }
    let args = match parse(argv) {
        Ok(a) => a,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return 0;
        }
        Err(e) => {
            eprintln!("pcml-bench: {e}\n{USAGE}");
            return 2;
        }
    };
    if args.list {
        for p in programs::all() {
            println!(
                "{:<12} section {:<14} {}",
                p.name, p.section.id, p.section.title
            );
        }
        return 0;
    }
    if let Err(unknown) = programs::select(&args.cfg.only) {
        eprintln!(
            "pcml-bench: no program or section named {}; --list shows them",
            unknown.join(", ")
        );
        return 2;
    }
    let start = Instant::now();
    let progress = Progress::new(false);
    progress.step("reading the machine");
    let mut machine = Machine::detect();
    progress.step("measuring the parallelism available");
    machine.calibrate();
    if machine.cores > 1 && machine.parallelism < 0.75 * machine.cores as f64 {
        progress.finish(&format!(
            "warning: {} busy threads got {:.2} cores' worth of work on {} cores: other \
             processes are using the machine, and multi-proc figures will show it",
            machine.cores, machine.parallelism, machine.cores
        ));
    }
    let peers = if args.cfg.peers {
        Peers::prepare_only(&progress, &args.cfg.peer_names)
    } else {
        Peers::disabled("--no-peers")
    };
    let (sections, failures) = run_rounds(&args.cfg, &progress, &peers);
    let report = Report {
        machine,
        cfg: args.cfg.clone(),
        sections,
        elapsed: start.elapsed().as_secs_f64(),
    };
    progress.finish(&format!("done in {:.0} s", report.elapsed));
    println!("{}", report::header_markdown(&report));
    for s in &report.sections {
        println!("{}", report::section_markdown(s));
    }
    println!("{}", report::goals_markdown(&report.sections));
    let out = args.out.clone().unwrap_or_else(default_out);
    match report::write(&report, &out) {
        Ok((path, problems)) => {
            for p in problems {
                eprintln!("pcml-bench: {p}");
            }
            println!("{}", report::summary_text(&report.sections, &path));
        }
        Err(e) => {
            eprintln!(
                "pcml-bench: could not write the report to {}: {e}",
                out.display()
            );
            return 1;
        }
    }
    if failures.is_empty() {
        0
    } else {
        for f in &failures {
            eprintln!("pcml-bench: FAILED {f}");
        }
        1
    }
}
