//! The benchmark programs, one module per program, grouped into sections by paper.
//!
//! Each program measures pcml (and the Rust peers, OS threads and tokio, where they apply),
//! runs the matching peer programs of `bench/peers/`, adds its rows, ratios and the paper's
//! published figures to its section, and checks its own answer: a wrong answer is an
//! [`Error::WrongAnswer`](crate::runner::Error) that fails the run.
//!
//! Rows that need a layer pcml does not have yet are listed as pending rows that say
//! what they wait on, so the report shows plainly what is not measured.
//!
//! # Invariants
//! - Every pcml measurement runs in a runtime built with the procs its row names.
//! - The timed region holds the work only; warm-up runs and answer checks of whole runs sit
//!   outside it (per-operation checks inside it are part of the work, as in the peers).

use pcml::Runtime;

use crate::peers::{Peer, PeerArgs, Peers};
use crate::runner::{Error, Metric, Progress, Result, Sample, reset_peak_rss, rss};
use crate::table::{Goal, Key, Ratio, Row, Section};

pub mod abisort;
pub mod actor_skynet;
pub mod allpairs;
pub mod bitonic;
pub mod bombing;
pub mod dist;
pub mod echo;
pub mod fig9;
pub mod http;
pub mod kpn;
pub mod matrix;
pub mod micro;
pub mod mst;
pub mod parpingpong;
pub mod pingpong;
pub mod primes;
pub mod seed000;
pub mod sieve;
pub mod skynet;
pub mod sorter;
pub mod spawn;
pub mod weigh;
pub mod workerpool;

/// What the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The papers' sizes instead of the quick ones.
    pub full: bool,
    /// Samples per figure (in all rounds together).
    pub runs: usize,
    /// Times the whole selection is run, one after the other; a figure pools the samples of
    /// every round, and a goal's verdict is unsettled when the rounds disagree.
    pub rounds: usize,
    /// Proc counts to measure pcml, Go and Erlang on.
    pub procs: Vec<usize>,
    /// Whether to run the peer programs.
    pub peers: bool,
    /// The peer programs to run (`--peers go,erlang`), by their script names; empty for all.
    pub peer_names: Vec<String>,
    /// Program or section names to run; empty for all.
    pub only: Vec<String>,
    /// Tiny sizes (a thousandth of the quick ones), for the tests: checks answers, measures
    /// nothing worth reading.
    pub tiny: bool,
    /// Busy-looping processes to run beside the second measurement of Reppy, Russo and Xiao's programs
    /// (`--co-runner K`; see [`crate::coload`]); 0 for none.
    pub co_runners: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            full: false,
            runs: 6,
            rounds: 2,
            procs: vec![1, 2],
            peers: true,
            peer_names: Vec::new(),
            only: Vec::new(),
            tiny: false,
            co_runners: 0,
        }
    }
}

/// What a program gets to run with.
#[derive(Debug)]
pub struct Ctx<'a> {
    /// The user's choices.
    pub cfg: &'a Config,
    /// The progress line.
    pub progress: &'a Progress,
    /// The built peers.
    pub peers: &'a Peers,
}

/// The probe run of [`Ctx::fit`] and [`Ctx::fit_span`]: `probe(n / 50)` (at least 2), and
/// the count it ran with the seconds an operation took; `None` if it gave no sample.
fn probe_per_op(
    n: u64,
    probe: impl FnOnce(u64) -> Result<Vec<Sample>>,
) -> Result<Option<(u64, f64)>> {
    let small = (n / 50).max(2);
    let samples = probe(small)?;
    Ok(samples
        .first()
        .map(|s| (small, (s.seconds / s.ops.max(1) as f64).max(1e-12))))
}

impl Ctx<'_> {
    /// `quick` in the quick suite, `full` with `--full`.
    pub fn size(&self, quick: u64, full: u64) -> u64 {
        if self.cfg.tiny {
            (quick / 1000).max(2)
        } else if self.cfg.full {
            full
        } else {
            quick
        }
    }

    /// The operation count for one run: `n`, or fewer when a probe run of `probe(n / 50)`
    /// shows that `n` would take longer than the run budget (0.5 s quick, 5 s full), so that
    /// a slow configuration (a cross-proc hand-off that parks and wakes a proc per message)
    /// cannot stall the suite. The count used is printed in the row's "runs x ops".
    pub fn fit(&self, n: u64, probe: impl FnOnce(u64) -> Result<Vec<Sample>>) -> Result<u64> {
        let Some((small, per_op)) = probe_per_op(n, probe)? else {
            return Ok(n);
        };
        let (_, budget) = self.run_seconds();
        Ok(((budget / per_op) as u64).clamp(small.min(n), n))
    }

    /// The least and the most seconds a fitted run takes: (0.2, 0.5) quick, (2, 5) full.
    fn run_seconds(&self) -> (f64, f64) {
        if self.cfg.full {
            (2.0, 5.0)
        } else {
            (0.2, 0.5)
        }
    }

    /// As [`fit`](Self::fit), but also raises `n` so that a run takes at least a fifth of a
    /// second (two with `--full`; at the tests' tiny sizes nothing is raised), still
    /// within the run budget: for the rows that a co-runner's rows are compared with (the
    /// scheduler-placed rows of [`multicore_rows`](Self::multicore_rows)).
    ///
    /// Why: a run of a few milliseconds measures whether the OS gave the program a core
    /// during those milliseconds, not the rate it runs at, and on a shared machine that is
    /// all or nothing. pcml's spawn+join at its quick size (500,000) took 10-20 ms a run,
    /// while Go's runs of the same rows take 0.1-1 s. The one-proc spawn+join loop
    /// (`examples/spawn1`, 2 procs) on the 2-core VM at load 14-16 from other sessions, 8
    /// alternations without and beside a busy loop (in a session of its own, see
    /// `coload`), ns a spawn+join, median (min-max): 500,000 a run, 65.5 (20-450) quiet and
    /// 93.4 (46-267) beside it (busy over quiet 0.70x); 10,000,000 a run, 63.2 (31-112) and
    /// 62.8 (36-189) (1.00x). The CPU time the spawner's thread spent per spawn+join did
    /// not move with the busy loop (median 24.6 ns quiet, 21.2 ns beside it): the longer
    /// runs average the share of a core the OS gives over many of its time slices, as Go's
    /// longer runs do. In the suite (`--only spawn,parpingpong,pingpong,primes --procs 1,2
    /// --co-runner 1 --peers go --runs 6 --rounds 2`, 3 alternations with the suite before
    /// this and the co-runner's own session, load 9-16), the spawn row's 2-proc busy over
    /// quiet read 0.90x, 0.92x and 0.93x against 0.43x, 0.64x and 0.40x, the parallel
    /// ping-pong's 1.00x, 0.66x and 0.86x against 0.40x, 0.79x and 0.66x, and the ping-pong's
    /// 0.81x, 0.74x and 0.74x against 1.44x, 1.23x and 0.86x (a busy row faster than the
    /// quiet one: short runs that happened to have a core); the quiet rows read less on the
    /// loaded machine (spawn on one proc 24-25 M threads/s against 38-53 M), being averages
    /// now; with the cores to themselves (`chrt -f 1`, 2 alternations) one proc's spawn read
    /// 51 M and 46 M against 56 M and 61 M (within the spread, 31-66 M against 34-66 M),
    /// and the parallel ping-pong on 2 procs over 1 1.27x and 1.36x against 1.21x and 1.22x.
    pub fn fit_span(&self, n: u64, probe: impl FnOnce(u64) -> Result<Vec<Sample>>) -> Result<u64> {
        let Some((small, per_op)) = probe_per_op(n, probe)? else {
            return Ok(n);
        };
        let (span, budget) = self.run_seconds();
        let most = ((budget / per_op) as u64).max(small.min(n));
        if self.cfg.tiny {
            return Ok(most.clamp(small.min(n), n));
        }
        Ok(((span / per_op) as u64).max(n).min(most))
    }

    /// Whether pcml and the peers run on `procs` procs in this invocation.
    pub fn has_procs(&self, procs: usize) -> bool {
        self.cfg.procs.contains(&procs)
    }

    /// Says what runs now.
    pub fn step(&self, what: &str) {
        self.progress.step(what);
    }

    /// Adds one tokio row of `program` per configured proc count: `measure(workers)` runs it
    /// on a fresh runtime of that many workers (0: `current_thread`, for 1 proc; see
    /// [`tokio_for`]); the note names the runtime and `what` runs on it.
    pub fn tokio_rows(
        &self,
        sec: &mut Section,
        program: &str,
        metric: Metric,
        what: &str,
        mut measure: impl FnMut(usize) -> Result<Vec<Sample>>,
    ) -> Result<()> {
        for &p in &self.cfg.procs {
            let (workers, kind) = tokio_for(p);
            self.step(&format!("{program}: tokio, {kind}, {p} threads"));
            let s = measure(workers)?;
            sec.rows.push(
                Row::measured(program, "tokio", Some(p), metric, &s)
                    .with_note(&format!("{kind}, {what}")),
            );
        }
        Ok(())
    }

    /// The rows of a Reppy, Russo and Xiao 2009 program beyond the paper's: the same program with every thread
    /// placed by the scheduler (`pcml::spawn`; system "pcml fibers (spawn)") at every
    /// configured proc count, and with `--co-runner K` the scheduler-placed rows on 1 and 2
    /// procs, the paper-placed row (`placed`, system "pcml fibers") and Go on 2 again while
    /// the co-runners run (program "`program`, K busy"); then the goals of multicore
    /// behaviour (see the README): 2 procs against 1, 4 and 8 against 2, busy against quiet,
    /// and pcml's busy-over-quiet ratio against Go's.
    ///
    /// `spawned(procs, runs)` and `placed(procs, runs)` measure pcml (fitting their own
    /// operation counts); `peer_program`, `n` and `ops_key` are as for [`Ctx::peer_rows`].
    ///
    /// The scheduler-placed rows take their runs in turns, one run at each proc count before
    /// the next run at any (`interleaved`; the programs measure their paper-placed rows so
    /// too): on a shared machine the load changes from second to second, and measuring 1
    /// proc's runs and then 2 procs' made their ratio swing with it (spawn+join 2P/1P read
    /// 0.44x in one suite run and 1.72x in another two hours earlier, while the spawner's CPU
    /// time per spawn+join on 2 procs stayed 1.1-1.3x its 1-proc figure:
    /// `examples/spawn1.rs`).
    #[allow(clippy::too_many_arguments)]
    pub fn multicore_rows(
        &self,
        sec: &mut Section,
        program: &str,
        peer_program: &str,
        n: u64,
        ops_key: Option<&str>,
        metric: Metric,
        spawned: &dyn Fn(usize, usize) -> Result<Vec<Sample>>,
        placed: &dyn Fn(usize, usize) -> Result<Vec<Sample>>,
    ) -> Result<()> {
        const SPAWNED: &str = "pcml fibers (spawn)";
        let runs = self.cfg.runs;
        let quiet = self.interleaved(
            &format!("{program}: pcml fibers placed by the scheduler"),
            &self.cfg.procs,
            runs,
            spawned,
        )?;
        for (&p, s) in self.cfg.procs.iter().zip(quiet) {
            sec.rows.push(
                Row::measured(program, SPAWNED, Some(p), metric, &s)
                    .with_note("every thread `pcml::spawn`ed: the scheduler places them"),
            );
        }
        // "a / b" as a speed: for times, b's time over a's.
        let speed = |sec: &mut Section, label: &str, a: Key<'_>, b: Key<'_>, goal| {
            if metric.higher_is_better() {
                sec.add_ratio(label, a, b, goal);
            } else {
                sec.add_ratio(label, b, a, goal);
            }
        };
        if self.has_procs(1) && self.has_procs(2) {
            let goal = if metric.higher_is_better() { 0.7 } else { 1.0 };
            speed(
                sec,
                &format!("{program}: {SPAWNED} 2P / 1P speed"),
                (program, SPAWNED, Some(2)),
                (program, SPAWNED, Some(1)),
                Some(Goal::AtLeast(goal)),
            );
        }
        if self.has_procs(2) {
            for &p in self.cfg.procs.iter().filter(|&&p| p > 2) {
                for system in [SPAWNED, "pcml fibers"] {
                    speed(
                        sec,
                        &format!("{program}: {system} {p}P / 2P speed (more procs than cores)"),
                        (program, system, Some(p)),
                        (program, system, Some(2)),
                        Some(Goal::AtLeast(1.0 / 1.5)),
                    );
                }
            }
        }
        let k = self.cfg.co_runners;
        if k == 0 {
            return Ok(());
        }
        let busy = format!("{program}, {k} busy");
        let guard = crate::coload::CoRunners::start(k)
            .map_err(|e| Error::Failed(format!("cannot start {k} co-runners: {e}")))?;
        let mut rows = Vec::new();
        let loaded = self.interleaved(
            &format!("{busy}: pcml fibers placed by the scheduler"),
            &[1, 2],
            runs,
            spawned,
        )?;
        for (p, s) in [1, 2].into_iter().zip(loaded) {
            rows.push(
                Row::measured(&busy, SPAWNED, Some(p), metric, &s).with_note(&format!(
                    "as the quiet row, beside {k} busy-looping processes"
                )),
            );
        }
        self.step(&format!(
            "{busy}: pcml fibers placed as in the paper, 2 procs"
        ));
        let s = placed(2, runs)?;
        rows.push(
            Row::measured(&busy, "pcml fibers", Some(2), metric, &s).with_note(&format!(
                "as the quiet row, beside {k} busy-looping processes"
            )),
        );
        let args = PeerArgs {
            n,
            procs: Some(2),
            branch: None,
            reps: None,
        };
        rows.push(self.peers.row(
            self.progress,
            &busy,
            Peer::Go,
            peer_program,
            &args,
            ops_key,
            metric,
            runs,
        )?);
        drop(guard);
        sec.rows.extend(rows);
        speed(
            sec,
            &format!("{busy}: {SPAWNED} 2P / 1P speed, both busy"),
            (&busy, SPAWNED, Some(2)),
            (&busy, SPAWNED, Some(1)),
            Some(Goal::AtLeast(if metric.higher_is_better() {
                0.5
            } else {
                0.8
            })),
        );
        for system in [SPAWNED, "pcml fibers", "Go"] {
            speed(
                sec,
                &format!("{busy}: {system} 2P busy / quiet speed"),
                (&busy, system, Some(2)),
                (program, system, Some(2)),
                (system != "Go").then_some(Goal::AtLeast(0.5)),
            );
        }
        let last = sec.ratios.len();
        for (i, system) in [SPAWNED, "pcml fibers"].into_iter().enumerate() {
            let ours = sec.ratios[last - 3 + i].value.clone();
            let go = sec.ratios[last - 1].value.clone();
            sec.ratios.push(Ratio::derived(
                &format!("{busy}: {system} 2P busy/quiet speed over Go's own"),
                ours.and_then(|o| go.map(|g| o / g)),
                Some(Goal::AtLeast(1.0)),
            ));
        }
        Ok(())
    }

    /// `runs` runs of `measure` at each of `procs`, taken in turns (one run at each proc
    /// count, then the next round), so that every proc count sees the same changes of the
    /// machine's load; the samples per proc count, in the order of `procs`.
    pub fn interleaved(
        &self,
        what: &str,
        procs: &[usize],
        runs: usize,
        measure: &dyn Fn(usize, usize) -> Result<Vec<Sample>>,
    ) -> Result<Vec<Vec<Sample>>> {
        let mut samples = vec![Vec::with_capacity(runs); procs.len()];
        for round in 1..=runs {
            for (&p, s) in procs.iter().zip(samples.iter_mut()) {
                self.step(&format!("{what}, {p} procs (run {round} of {runs})"));
                s.extend(measure(p, 1)?);
            }
        }
        Ok(samples)
    }

    /// [`interleaved`](Self::interleaved) over the configured proc counts and runs, of
    /// `measure(procs, n, runs)` with `n` fitted to the time budget ([`fit`](Self::fit))
    /// before each run.
    pub fn interleaved_fitted(
        &self,
        what: &str,
        n: u64,
        measure: &dyn Fn(usize, u64, usize) -> Result<Vec<Sample>>,
    ) -> Result<Vec<Vec<Sample>>> {
        self.interleaved(what, &self.cfg.procs, self.cfg.runs, &|p, runs| {
            let n = self.fit(n, |k| measure(p, k, 1))?;
            measure(p, n, runs)
        })
    }

    /// Adds one row per peer run of `program`: CML on its one proc (when `cml`), Go and
    /// Erlang on each of the configured proc counts. `ops_key` is the RESULT key counting the
    /// operations (`None`: `n`).
    #[allow(clippy::too_many_arguments)]
    pub fn peer_rows(
        &self,
        sec: &mut Section,
        row_program: &str,
        program: &str,
        n: u64,
        branch: Option<u64>,
        ops_key: Option<&str>,
        metric: Metric,
        cml: bool,
        runs: usize,
    ) -> Result<()> {
        let mut runs_of: Vec<(Peer, Option<usize>)> = Vec::new();
        if cml {
            runs_of.push((Peer::Cml, None));
        }
        for peer in [Peer::Go, Peer::Erlang] {
            for &p in &self.cfg.procs {
                runs_of.push((peer, Some(p)));
            }
        }
        for (peer, procs) in runs_of {
            let args = PeerArgs {
                n,
                procs,
                branch,
                reps: None,
            };
            let row = self.peers.row(
                self.progress,
                row_program,
                peer,
                program,
                &args,
                ops_key,
                metric,
                runs,
            )?;
            sec.rows.push(row);
        }
        Ok(())
    }
}

/// A section's identity: id (for file names), title, and where the paper's figures came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SectionInfo {
    /// Short id, e.g. `"parallel-cml"` (what `--only` takes, and chart file names start with).
    pub id: &'static str,
    /// Heading.
    pub title: &'static str,
    /// The paper's machine and year.
    pub published_on: &'static str,
}

impl SectionInfo {
    /// An empty section of this identity.
    pub fn section(&self) -> Section {
        Section::new(self.id, self.title, self.published_on)
    }
}

/// The runtime's microbenchmarks.
pub const ISSUE2: SectionInfo = SectionInfo {
    id: "runtime",
    title: "Runtime microbenchmarks",
    published_on: "goals set for this machine kind",
};
/// Parallel CML, section 10.
pub const SEED003: SectionInfo = SectionInfo {
    id: "parallel-cml",
    title: "Parallel CML (Reppy, Russo and Xiao, ICFP 2009, section 10)",
    published_on: "2009, four dual-core 2 GHz Opteron 870, SML/NJ 110.69",
};
/// Lightweight threads in OCaml, section 6.
pub const SEED001: SectionInfo = SectionInfo {
    id: "lightweight",
    title: "Light weight concurrency in OCaml (Deleuze 2010, section 6)",
    published_on: "2010; published as charts (Figures 7-16), no table",
};
/// Weighing continuations, section 5.3.
pub const SEED002: SectionInfo = SectionInfo {
    id: "continuations",
    title: "Weighing continuations for concurrency (Farvardin 2017, section 5.3)",
    published_on: "2017, Manticore; published as charts (Figures 5.8, 5.9)",
};
/// Actors, chapter 4.
pub const SEED000: SectionInfo = SectionInfo {
    id: "actors",
    title: "Actor model concurrency (Krook 2020, chapter 4)",
    published_on: "2020, MLKit actors library against Erlang (Table 4.1)",
};
/// What users of other channel libraries compare: their idioms, against their libraries.
pub const USERS: SectionInfo = SectionInfo {
    id: "users",
    title: "Channel idioms users compare (crossbeam-channel, Go)",
    published_on: "no published figures: the peers are measured in the same run",
};
/// What server users compare: a real server framework under a real load generator.
pub const SERVERS: SectionInfo = SectionInfo {
    id: "servers",
    title: "Servers users compare (hyper under wrk, a TCP echo, against tokio)",
    published_on: "no published figures: the peers are measured in the same run",
};
/// What Erlang users compare: a pcml node in an Erlang cluster, against an Erlang node.
pub const DISTRIBUTION: SectionInfo = SectionInfo {
    id: "distribution",
    title: "Distribution: a pcml node in an Erlang cluster, against an Erlang node",
    published_on: "no published figures: the Erlang nodes are measured in the same run",
};
/// The multiprocessor interface, section 6.3.
pub const SEED004: SectionInfo = SectionInfo {
    id: "multiprocessor",
    title: "A portable multiprocessor interface for SML/NJ (Morrisett and Tolmach 1992, section 6.3)",
    published_on: "1992, 8-processor SGI, SML/NJ with MP",
};

/// One benchmark program.
#[derive(Debug, Clone, Copy)]
pub struct Program {
    /// Its name, as `--only` takes it.
    pub name: &'static str,
    /// The section it reports into.
    pub section: SectionInfo,
    /// Runs it and adds its rows to the section.
    pub run: fn(&Ctx<'_>, &mut Section) -> Result<()>,
}

/// Every program, in report order.
pub fn all() -> Vec<Program> {
    let p = |name, section, run| Program { name, section, run };
    vec![
        p("micro", ISSUE2, micro::run),
        p("spawn", SEED003, spawn::run),
        p("pingpong", SEED003, pingpong::run),
        p("parpingpong", SEED003, parpingpong::run),
        p("primes", SEED003, primes::run),
        p("kpn", SEED001, kpn::run),
        p("sieve", SEED001, sieve::run),
        p("sorter", SEED001, sorter::run),
        p("weigh", SEED002, weigh::run),
        p("skynet", SEED000, skynet::run),
        p("actor-skynet", SEED000, actor_skynet::run),
        p("bombing", SEED000, bombing::run),
        p("bitonic", SEED000, bitonic::run),
        p("fig9", SEED004, fig9::run),
        p("allpairs", SEED004, allpairs::run),
        p("mst", SEED004, mst::run),
        p("abisort", SEED004, abisort::run),
        p("matrix", SEED004, matrix::run),
        p("workerpool", USERS, workerpool::run),
        p("http", SERVERS, http::run),
        p("echo", SERVERS, echo::run),
        p("dist", DISTRIBUTION, dist::run),
    ]
}

/// The section ids of earlier versions (the papers' numbers in the project's notes), still
/// taken by `--only`: old id and the id it is now.
pub const OLD_SECTION_IDS: [(&str, &str); 5] = [
    ("seed000", "actors"),
    ("seed001", "lightweight"),
    ("seed002", "continuations"),
    ("seed003", "parallel-cml"),
    ("seed004", "multiprocessor"),
];

/// The programs `only` selects: by program name or section id (or an old section id, see
/// [`OLD_SECTION_IDS`]); all when `only` is empty. Unknown names are returned as the error.
///
/// ```
/// use pcml_bench::programs::select;
/// let by_id = select(&["parallel-cml".to_string()]).unwrap();
/// let by_old_id = select(&["seed003".to_string()]).unwrap();
/// assert_eq!(by_id.len(), by_old_id.len());
/// assert!(by_id.iter().any(|p| p.name == "pingpong"));
/// ```
pub fn select(only: &[String]) -> std::result::Result<Vec<Program>, Vec<String>> {
    let programs = all();
    if only.is_empty() {
        return Ok(programs);
    }
    let only: Vec<String> = only
        .iter()
        .map(|n| {
            OLD_SECTION_IDS
                .iter()
                .find(|(old, _)| old == n)
                .map_or_else(|| n.clone(), |(_, new)| (*new).to_string())
        })
        .collect();
    let unknown: Vec<String> = only
        .iter()
        .filter(|n| !programs.iter().any(|p| p.name == *n || p.section.id == *n))
        .cloned()
        .collect();
    if !unknown.is_empty() {
        return Err(unknown);
    }
    Ok(programs
        .into_iter()
        .filter(|p| only.iter().any(|n| p.name == n || p.section.id == n))
        .collect())
}

/// Runs `main` as the main fiber of a fresh runtime with `procs` procs.
pub fn in_pcml<T, F>(procs: usize, main: F) -> Result<T>
where
    F: FnOnce() -> Result<T> + Send + 'static,
    T: Send + 'static,
{
    let rt = Runtime::builder()
        .procs(procs)
        .build()
        .map_err(|e| Error::Failed(format!("pcml runtime with {procs} procs: {e}")))?;
    // The scheduler counts of this runtime's samples only (not of a calibration run's).
    crate::runner::sched_reset();
    rt.block_on(main)
        .map_err(|e| Error::Failed(format!("pcml runtime: {e}")))?
}

/// A fresh tokio runtime: `current_thread` for `workers == 0`, else `multi_thread` with
/// `workers` worker threads.
pub fn tokio_runtime(workers: usize) -> Result<tokio::runtime::Runtime> {
    if workers == 0 {
        tokio::runtime::Builder::new_current_thread().build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .build()
    }
    .map_err(|e| Error::Failed(format!("tokio runtime ({workers} workers): {e}")))
}

/// The tokio runtime a row of `procs` procs runs on: `current_thread` for 1 (the runtime
/// tokio offers for one thread), `multi_thread` with `procs` workers above; with the note
/// that says which.
///
/// ```
/// use pcml_bench::programs::tokio_for;
/// assert_eq!(tokio_for(1), (0, "current_thread runtime"));
/// assert_eq!(tokio_for(2), (2, "multi_thread runtime"));
/// ```
pub fn tokio_for(procs: usize) -> (usize, &'static str) {
    if procs <= 1 {
        (0, "current_thread runtime")
    } else {
        (procs, "multi_thread runtime")
    }
}

/// A server's CPU time per unit of work on pcml and on tokio (`p` procs), as rows of `prog`'s
/// "server CPU" (`metric`), and the ratio "`ratio`, tokio / pcml, `p` procs": above 1 where
/// pcml's server spends less. `ours` and `theirs` hold, per run, the server's CPU time as a
/// sample and one more figure of that run, which `note` turns into the rows' note (it is given
/// their median and range, or `None` without runs).
#[allow(clippy::too_many_arguments)]
pub(crate) fn server_cpu_rows(
    sec: &mut Section,
    prog: &str,
    p: usize,
    metric: Metric,
    ratio: &str,
    ours: &[(Sample, f64)],
    theirs: &[(Sample, f64)],
    note: impl Fn(Option<crate::runner::Stats>) -> String,
) {
    let prog = format!("{prog}, server CPU");
    for (system, runs) in [("pcml tasks", ours), ("tokio", theirs)] {
        let samples: Vec<Sample> = runs.iter().map(|r| r.0).collect();
        let extra: Vec<f64> = runs.iter().map(|r| r.1).collect();
        let note = note(crate::runner::Stats::of(&extra));
        sec.rows
            .push(Row::measured(&prog, system, Some(p), metric, &samples).with_note(&note));
    }
    sec.add_ratio(
        &format!("{ratio}, tokio / pcml, {p} procs"),
        (&prog, "tokio", Some(p)),
        (&prog, "pcml tasks", Some(p)),
        None,
    );
}

/// A run of a server for the tests of [`server_cpu_rows`]: 1,000 units of work in `seconds`
/// of server CPU, and the run's other figure.
#[cfg(test)]
pub(crate) fn cpu_run(seconds: f64, other: f64) -> (Sample, f64) {
    (
        Sample {
            seconds,
            ops: 1_000,
        },
        other,
    )
}

/// A server program on pcml against the same program on tokio, on `p` procs: the configured
/// number of runs of each, alternating so that both see the same machine; then their rows
/// (`per_run` says how long a run is) and the ratio "`what` on pcml / on tokio" with its goal.
#[allow(clippy::too_many_arguments)]
pub(crate) fn pcml_against_tokio(
    ctx: &Ctx<'_>,
    sec: &mut Section,
    prog: &str,
    metric: Metric,
    p: usize,
    per_run: &str,
    (what, goal): (&str, f64),
    mut pcml: impl FnMut() -> Result<Sample>,
    mut tokio: impl FnMut() -> Result<Sample>,
) -> Result<()> {
    let (_, kind) = tokio_for(p);
    let runs = ctx.cfg.runs.max(1);
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    for r in 0..runs {
        ctx.step(&format!("{prog}: run {} of {runs}, {p} procs", r + 1));
        ours.push(pcml()?);
        theirs.push(tokio()?);
    }
    sec.rows.push(
        Row::measured(prog, "pcml tasks", Some(p), metric, &ours)
            .with_note(&format!("{p} procs, {per_run}, alternating with tokio")),
    );
    sec.rows.push(
        Row::measured(prog, "tokio", Some(p), metric, &theirs)
            .with_note(&format!("{kind}, {per_run}")),
    );
    sec.add_ratio(
        &format!("{what} on pcml / on tokio, {p} procs"),
        (prog, "pcml tasks", Some(p)),
        (prog, "tokio", Some(p)),
        Some(Goal::AtLeast(goal)),
    );
    Ok(())
}

/// Runs `work` as a task spawned on a fresh tokio runtime of `workers` workers (0:
/// `current_thread`), so that on a multi-thread runtime it runs on a worker rather than on
/// the thread that called `block_on`. Tasks left pending when `work` ends are dropped with
/// the runtime.
///
/// ```
/// use pcml_bench::programs::in_tokio;
/// let sum = in_tokio(2, async { Ok(tokio::spawn(async { 20 + 22 }).await.unwrap()) });
/// assert_eq!(sum, Ok(42));
/// ```
pub fn in_tokio<T, F>(workers: usize, work: F) -> Result<T>
where
    F: std::future::Future<Output = Result<T>> + Send + 'static,
    T: Send + 'static,
{
    let rt = tokio_runtime(workers)?;
    let out = rt.block_on(async move {
        tokio::spawn(work)
            .await
            .map_err(|e| Error::Failed(format!("tokio task: {e}")))?
    });
    // Tasks still pending (a chain that is never stopped) are dropped with the runtime.
    drop(rt);
    out
}

/// `sum of 0..n`, the answer of the spawn loops.
pub fn triangle(n: u64) -> u64 {
    n * n.saturating_sub(1) / 2
}

/// What a memory probe measured, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peak {
    /// The peak resident set the work added (`VmHWM` less `VmRSS` before it).
    pub rss: u64,
    /// The peak growth of live heap bytes during the work ([`crate::alloc::track`]); `None`
    /// where the counting allocator is not installed (outside the `pcml-bench` binary).
    pub heap: Option<u64>,
}

/// Runs `work` in a fresh one-proc runtime and returns the peak memory it added (for the
/// memory probes, each in a fresh process).
pub fn peak_added<F>(work: F) -> Result<Peak>
where
    F: FnOnce() -> Result<()> + Send + 'static,
{
    in_pcml(1, move || peak_of(work))
}

/// Runs `work` here and returns the peak memory it added: the resident set's peak is reset
/// first, and the heap's growth is counted while it runs.
pub fn peak_of(work: impl FnOnce() -> Result<()>) -> Result<Peak> {
    let (base, _) = rss().ok_or_else(|| Error::Failed("no /proc/self/status".into()))?;
    if !reset_peak_rss() {
        return Err(Error::Failed("cannot reset the peak RSS".into()));
    }
    let (done, heap) = crate::alloc::track(work);
    done?;
    let (_, peak) = rss().ok_or_else(|| Error::Failed("no /proc/self/status".into()))?;
    Ok(Peak {
        rss: peak.saturating_sub(base),
        heap,
    })
}

/// The hidden probe mode of the binary: `pcml-bench --probe PROGRAM KIND A B` runs one
/// program in this fresh process and returns the peak memory it added.
/// PROGRAM: `skynet` (A leaves, B branch), `sorter` or `sorter-d` (A numbers), Krook's
/// actor programs `actor-skynet` (B 0: the thesis's tree of depth A; else A leaves, B
/// branch), `bombing1`, `bombing2` (A messages) and `bitonic` (A numbers); KIND: `fibers` or
/// `tasks` (for actors: fiber or async actors).
pub fn probe(program: &str, kind: &str, a: u64, b: u64) -> Result<Peak> {
    let fibers = match kind {
        "fibers" => true,
        "tasks" => false,
        _ => return Err(Error::Failed(format!("probe: unknown kind {kind}"))),
    };
    let style = if fibers {
        kpn::Style::Direct
    } else {
        kpn::Style::Indirect
    };
    let actor_kind = if fibers {
        seed000::Kind::Fibers
    } else {
        seed000::Kind::Async
    };
    match program {
        "skynet" => {
            let kind = if fibers {
                skynet::Kind::Fibers
            } else {
                skynet::Kind::Tasks
            };
            skynet::probe_memory(kind, a, b)
        }
        "actor-skynet" => actor_skynet::probe_memory(actor_kind, a, b),
        "bombing1" => bombing::probe_memory(1, a, actor_kind),
        "bombing2" => bombing::probe_memory(2, a, actor_kind),
        "bitonic" => bitonic::probe_memory(a, actor_kind),
        "sorter" => sorter::probe_memory(a as usize, style, false),
        "sorter-d" => sorter::probe_memory(a as usize, style, true),
        _ => Err(Error::Failed(format!("probe: unknown program {program}"))),
    }
}

/// A memory row: runs `pcml-bench --probe PROGRAM KIND A B` in a fresh process `runs` times
/// and reports the peak RSS added per thread (`threads` threads). Skipped, with the reason,
/// when not run from the `pcml-bench` binary (the tests).
pub fn memory_row(
    row_program: &str,
    system: &str,
    probe: (&str, &str, u64, u64),
    threads: u64,
    metric: Metric,
    runs: usize,
) -> Result<Row> {
    let (rss, _) = memory_rows(row_program, "", system, probe, threads, metric, runs)?;
    Ok(rss)
}

/// [`memory_row`], and from the same probes the row `heap_program` of the peak growth of live
/// heap bytes per thread ([`crate::alloc`]).
pub fn memory_rows(
    row_program: &str,
    heap_program: &str,
    system: &str,
    probe: (&str, &str, u64, u64),
    threads: u64,
    metric: Metric,
    runs: usize,
) -> Result<(Row, Row)> {
    let (program, kind, a, b) = probe;
    let skip = |why: &str| {
        (
            Row::skipped(row_program, system, Some(1), metric, why),
            Row::skipped(heap_program, system, Some(1), metric, why),
        )
    };
    let exe = match std::env::current_exe() {
        Ok(e) if e.file_stem().is_some_and(|n| n == "pcml-bench") => e,
        _ => return Ok(skip("memory is probed only by the pcml-bench binary")),
    };
    let per = |bytes: f64| bytes / threads.max(1) as f64;
    let mut rss = Vec::with_capacity(runs);
    let mut heap = Vec::with_capacity(runs);
    for _ in 0..runs {
        let out = std::process::Command::new(&exe)
            .args(["--probe", program, kind, &a.to_string(), &b.to_string()])
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| Error::Failed(format!("memory probe: {e}")))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let field = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key))
                .and_then(|v| v.trim().parse::<f64>().ok())
        };
        let Some(bytes) = field("PEAK_BYTES ") else {
            let err = String::from_utf8_lossy(&out.stderr);
            if err.contains("wrong answer") {
                return Err(Error::WrongAnswer(format!(
                    "{program} memory probe: {}",
                    err.trim()
                )));
            }
            return Ok(skip(&format!("memory probe failed: {}", err.trim())));
        };
        rss.push(per(bytes));
        if let Some(h) = field("HEAP_PEAK_BYTES ") {
            heap.push(per(h));
        }
    }
    let rss_row = Row::from_values(row_program, system, Some(1), threads, metric, &rss)
        .with_note("peak RSS added, per thread, fresh process");
    let heap_row = if heap.len() == runs {
        Row::from_values(heap_program, system, Some(1), threads, metric, &heap)
            .with_note("peak growth of live heap bytes, per thread, fresh process")
    } else {
        Row::skipped(
            heap_program,
            system,
            Some(1),
            metric,
            "the probe did not count heap bytes",
        )
    };
    Ok((rss_row, heap_row))
}
