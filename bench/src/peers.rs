//! The peer programs of `bench/peers/` (SML/NJ's CML, Go, Erlang), run beside pcml in the same
//! invocation through the scripts there: `build.sh PEER` when a peer is not built (or its
//! source is newer than its build), `run.sh PEER PROGRAM N [PROCS] [BRANCH]` for each run,
//! whose one `RESULT ... seconds=... check=ok ...` line gives a sample.
//!
//! Nothing here needs the network: the Go peer has no dependencies and builds with
//! `GOTOOLCHAIN=local`; CML and Erlang come from Debian packages (`install.sh`). A peer whose
//! toolchain is absent is skipped with a note saying how to install it.
//!
//! # Invariants
//! - A `check=FAIL` line is a wrong answer and fails the whole run; any other failure of a peer
//!   (a crash, an unparsable line) skips that row with the reason.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

use crate::runner::{Error, Metric, Progress, Result, Sample};
use crate::table::Row;

/// A peer system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    /// SML/NJ's CML (one proc).
    Cml,
    /// Go's goroutines (GOMAXPROCS).
    Go,
    /// Erlang/OTP processes (`+S` schedulers).
    Erlang,
}

impl Peer {
    /// Every peer.
    pub const ALL: [Peer; 3] = [Peer::Cml, Peer::Go, Peer::Erlang];

    /// The name `run.sh` and `build.sh` take.
    pub fn script_name(self) -> &'static str {
        match self {
            Peer::Cml => "cml",
            Peer::Go => "go",
            Peer::Erlang => "erlang",
        }
    }

    /// The peer whose script name (`cml`, `go`, `erlang`) is `name`.
    ///
    /// ```
    /// use pcml_bench::peers::Peer;
    /// assert_eq!(Peer::from_script_name("go"), Some(Peer::Go));
    /// assert_eq!(Peer::from_script_name("rust"), None);
    /// ```
    pub fn from_script_name(name: &str) -> Option<Peer> {
        Peer::ALL.into_iter().find(|p| p.script_name() == name)
    }

    /// The name shown in tables.
    pub fn system(self) -> &'static str {
        match self {
            Peer::Cml => "CML (SML/NJ)",
            Peer::Go => "Go",
            Peer::Erlang => "Erlang",
        }
    }

    /// The peer's source file, whose change calls for a rebuild.
    fn source(self) -> &'static str {
        match self {
            Peer::Cml => "cml/peers.sml",
            Peer::Go => "go/main.go",
            Peer::Erlang => "erlang/peers.erl",
        }
    }

    /// The toolchain commands whose presence lets the peer be built and run.
    fn toolchain(self) -> &'static [&'static str] {
        match self {
            Peer::Cml => &["sml", "ml-build"],
            Peer::Go => &["go"],
            Peer::Erlang => &["erl", "erlc"],
        }
    }

    fn install_hint(self) -> &'static str {
        match self {
            Peer::Cml => "install smlnj and libcml-smlnj (bench/peers/install.sh)",
            Peer::Go => "install Go",
            Peer::Erlang => "install erlang-nox (bench/peers/install.sh)",
        }
    }
}

/// The directory of the peer programs and their scripts.
pub fn peers_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("peers")
}

/// Whether `cmd` is on `PATH` (or, for SML/NJ's tools, in `SMLNJ_HOME/bin`).
pub fn have_command(cmd: &str) -> bool {
    command_path(cmd).is_some()
}

/// Where `cmd` is: the first match on `PATH`, or, for SML/NJ's tools, `SMLNJ_HOME/bin`
/// (the peers' scripts look there too).
pub fn command_path(cmd: &str) -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(cmd))
            .find(|p| is_executable(p))
    });
    on_path.or_else(|| {
        let home = smlnj_home().join("bin").join(cmd);
        (matches!(cmd, "sml" | "ml-build") && is_executable(&home)).then_some(home)
    })
}

fn smlnj_home() -> PathBuf {
    std::env::var_os("SMLNJ_HOME").map_or_else(|| PathBuf::from("/usr/lib/smlnj"), PathBuf::from)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn mtime(p: &Path) -> Option<SystemTime> {
    p.metadata().and_then(|m| m.modified()).ok()
}

/// The built peers, ready to run, or why each is not.
#[derive(Debug)]
pub struct Peers {
    dir: PathBuf,
    ready: HashMap<Peer, std::result::Result<(), String>>,
}

impl Peers {
    /// No peers: every row says `why`.
    pub fn disabled(why: &str) -> Peers {
        Peers {
            dir: peers_dir(),
            ready: Peer::ALL
                .iter()
                .map(|&p| (p, Err(why.to_string())))
                .collect(),
        }
    }

    /// The peers whose scripts are in `dir`, all taken as built: for tests with stand-in
    /// `run.sh` scripts.
    pub fn with_scripts(dir: &Path) -> Peers {
        Peers {
            dir: dir.to_path_buf(),
            ready: Peer::ALL.iter().map(|&p| (p, Ok(()))).collect(),
        }
    }

    /// Finds each peer's toolchain and build, building with `build.sh` where the build is
    /// missing or older than its source.
    pub fn prepare(progress: &Progress) -> Peers {
        Self::find(progress, true, &[])
    }

    /// As [`Peers::prepare`] for the peers whose script names are in `names` (all when it is
    /// empty); the others are marked not selected, and not built.
    pub fn prepare_only(progress: &Progress, names: &[String]) -> Peers {
        Self::find(progress, true, names)
    }

    /// The peers already built and up to date, building none (for the tests, which must stay
    /// fast); the others are marked not built.
    pub fn built_only() -> Peers {
        Self::find(&Progress::new(true), false, &[])
    }

    fn find(progress: &Progress, build: bool, names: &[String]) -> Peers {
        let dir = peers_dir();
        let mut ready = HashMap::new();
        for peer in Peer::ALL {
            let selected = names.is_empty() || names.iter().any(|n| n == peer.script_name());
            let state = if !selected {
                Err(format!("not selected (--peers {})", names.join(",")))
            } else if let Some(missing) = peer.toolchain().iter().find(|c| !have_command(c)) {
                Err(format!(
                    "not installed (no `{missing}`; {})",
                    peer.install_hint()
                ))
            } else if Self::is_built(&dir, peer) {
                Ok(())
            } else if !build {
                Err("not built (bench/peers/build.sh)".to_string())
            } else {
                progress.step(&format!("building peer {}", peer.script_name()));
                Self::build(&dir, peer)
            };
            ready.insert(peer, state);
        }
        Peers { dir, ready }
    }

    fn artifact(dir: &Path, peer: Peer) -> Option<PathBuf> {
        let target = dir.join("target");
        match peer {
            Peer::Go => Some(target.join("go/peers")),
            Peer::Erlang => Some(target.join("erlang/peers.beam")),
            Peer::Cml => std::fs::read_dir(target.join("cml"))
                .ok()?
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .find(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("peers.") && n.contains('-'))
                }),
        }
    }

    fn is_built(dir: &Path, peer: Peer) -> bool {
        let Some(built) = Self::artifact(dir, peer).and_then(|a| mtime(&a)) else {
            return false;
        };
        mtime(&dir.join(peer.source())).is_none_or(|src| src <= built)
    }

    fn build(dir: &Path, peer: Peer) -> std::result::Result<(), String> {
        let out = output_when_not_busy(
            Command::new(dir.join("build.sh"))
                .arg(peer.script_name())
                .env("GOTOOLCHAIN", "local")
                .env("GOPROXY", "off")
                .stdin(Stdio::null()),
        )
        .map_err(|e| format!("build.sh could not start: {e}"))?;
        if out.status.success() && Self::is_built(dir, peer) {
            Ok(())
        } else {
            let log = String::from_utf8_lossy(&out.stderr);
            let last = log.lines().last().unwrap_or("no output");
            Err(format!("build failed ({last})"))
        }
    }

    /// Whether `peer` can run, or why not.
    pub fn status(&self, peer: Peer) -> std::result::Result<(), String> {
        self.ready
            .get(&peer)
            .cloned()
            .unwrap_or_else(|| Err("unknown".to_string()))
    }

    /// Runs `program` of `peer` once and returns its sample; `ops_key` names the RESULT key
    /// that counts operations (`threads`, `msgs`), or `None` to count `n`.
    ///
    /// `Ok(Err(why))` when the peer cannot run (the row is skipped); `Err` on a wrong answer.
    pub fn run_once(
        &self,
        peer: Peer,
        program: &str,
        args: &PeerArgs,
        ops_key: Option<&str>,
    ) -> Result<std::result::Result<Sample, String>> {
        Ok(self
            .run_line(peer, program, args)?
            .and_then(|line| line.sample(args, ops_key)))
    }

    /// Runs `program` of `peer` once and returns its checked RESULT line (`check=ok`).
    ///
    /// `Ok(Err(why))` when the peer cannot run (the row is skipped); `Err` on a wrong answer.
    pub fn run_line(
        &self,
        peer: Peer,
        program: &str,
        args: &PeerArgs,
    ) -> Result<std::result::Result<ResultLine, String>> {
        if let Err(why) = self.status(peer) {
            return Ok(Err(why));
        }
        let mut cmd = Command::new(self.dir.join("run.sh"));
        cmd.arg(peer.script_name())
            .arg(program)
            .arg(args.n.to_string());
        let last = args.branch.or(args.reps);
        if args.procs.is_some() || last.is_some() {
            cmd.arg(args.procs.map_or(String::new(), |p| p.to_string()));
        }
        if let Some(b) = last {
            cmd.arg(b.to_string());
        }
        if peer == Peer::Cml && program == "skynet" {
            // A larger allocation arena: skynet's many live threads are GC-bound without it
            // (bench/peers/README.md).
            cmd.env("SML_RTS_FLAGS", "@SMLalloc=4M");
        }
        let out = match output_when_not_busy(cmd.stdin(Stdio::null())) {
            Ok(o) => o,
            Err(e) => return Ok(Err(format!("run.sh could not start: {e}"))),
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let Some(line) = stdout.lines().find(|l| l.starts_with("RESULT ")) else {
            let code = out.status.code().unwrap_or(-1);
            let err = String::from_utf8_lossy(&out.stderr);
            let last = err.lines().last().unwrap_or("").trim();
            return Ok(Err(format!("no RESULT line (exit {code}: {last})")));
        };
        let result = ResultLine::parse(line);
        if result.get("check") != Some("ok") {
            return Err(Error::WrongAnswer(format!(
                "{} {program}: {line}",
                peer.script_name()
            )));
        }
        Ok(Ok(result))
    }

    /// Measures `program` of `peer` `runs` times and makes its row (skipped with the reason
    /// when the peer cannot run).
    #[allow(clippy::too_many_arguments)]
    pub fn row(
        &self,
        progress: &Progress,
        row_program: &str,
        peer: Peer,
        program: &str,
        args: &PeerArgs,
        ops_key: Option<&str>,
        metric: Metric,
        runs: usize,
    ) -> Result<Row> {
        let procs = Some(args.procs.unwrap_or(1));
        let mut samples = Vec::with_capacity(runs);
        let ran = self.each_run(progress, row_program, peer, program, args, runs, |line| {
            samples.push(line.sample(args, ops_key)?);
            Ok(())
        })?;
        if let Err(why) = ran {
            return Ok(Row::skipped(
                row_program,
                peer.system(),
                procs,
                metric,
                &why,
            ));
        }
        Ok(Row::measured(
            row_program,
            peer.system(),
            procs,
            metric,
            &samples,
        ))
    }

    /// Measures `program` of `peer` `runs` times and makes two rows from the same runs: its
    /// time (`seconds=`, in `metric`, counting `ops_key` operations as [`Peers::run_once`])
    /// under `row_program`, and the figure of the RESULT key `value.1` (e.g.
    /// `peak_rss_added`, in `value.2`) under `value.0`. A negative figure means the peer could
    /// not measure it: that row is skipped.
    #[allow(clippy::too_many_arguments)]
    pub fn rows_with_value(
        &self,
        progress: &Progress,
        row_program: &str,
        peer: Peer,
        program: &str,
        args: &PeerArgs,
        metric: Metric,
        ops_key: Option<&str>,
        value: (&str, &str, Metric),
        runs: usize,
    ) -> Result<(Row, Row)> {
        let (value_program, key, value_metric) = value;
        let procs = Some(args.procs.unwrap_or(1));
        let mut samples = Vec::with_capacity(runs);
        let mut values = Vec::with_capacity(runs);
        let ran = self.each_run(progress, row_program, peer, program, args, runs, |line| {
            samples.push(line.sample(args, ops_key)?);
            match line.get(key).and_then(|v| v.parse::<f64>().ok()) {
                Some(v) if v >= 0.0 => values.push(v),
                _ => {}
            }
            Ok(())
        })?;
        if let Err(why) = ran {
            return Ok((
                Row::skipped(row_program, peer.system(), procs, metric, &why),
                Row::skipped(value_program, peer.system(), procs, value_metric, &why),
            ));
        }
        let time = Row::measured(row_program, peer.system(), procs, metric, &samples);
        let value_row = if values.len() == runs {
            Row::from_values(
                value_program,
                peer.system(),
                procs,
                1,
                value_metric,
                &values,
            )
        } else {
            Row::skipped(
                value_program,
                peer.system(),
                procs,
                value_metric,
                &format!("the peer gave no {key}= figure"),
            )
        };
        Ok((time, value_row))
    }

    /// Runs `program` of `peer` `runs` times, saying each run on `progress` under
    /// `row_program`, and hands each checked RESULT line to `each`.
    ///
    /// `Ok(Err(why))`, at once, when the peer cannot run or `each` refuses a line (the rows are
    /// skipped); `Err` on a wrong answer.
    #[allow(clippy::too_many_arguments)]
    fn each_run(
        &self,
        progress: &Progress,
        row_program: &str,
        peer: Peer,
        program: &str,
        args: &PeerArgs,
        runs: usize,
        mut each: impl FnMut(ResultLine) -> std::result::Result<(), String>,
    ) -> Result<std::result::Result<(), String>> {
        let p = args.procs.unwrap_or(1);
        for i in 0..runs {
            progress.step(&format!(
                "{row_program}: {} on {} procs, run {}/{runs}",
                peer.system(),
                p,
                i + 1
            ));
            let line = match self.run_line(peer, program, args)? {
                Ok(l) => l,
                Err(why) => return Ok(Err(why)),
            };
            if let Err(why) = each(line) {
                return Ok(Err(why));
            }
        }
        Ok(Ok(()))
    }
}

/// The arguments of one peer run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerArgs {
    /// The count (skynet: leaves).
    pub n: u64,
    /// Procs (GOMAXPROCS, `+S`); `None` for the peer's default (CML: its one proc).
    pub procs: Option<usize>,
    /// skynet's branching factor.
    pub branch: Option<u64>,
    /// The timed runs one invocation averages (Krook's tiny programs); passed where
    /// `branch` would be, so at most one of the two is set.
    pub reps: Option<u64>,
}

/// A parsed `RESULT key=value ...` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResultLine {
    pairs: Vec<(String, String)>,
}

impl ResultLine {
    /// Parses the `key=value` words of a RESULT line (other words are ignored).
    ///
    /// ```
    /// use pcml_bench::peers::ResultLine;
    /// let r = ResultLine::parse("RESULT program=spawn n=10 seconds=0.5 check=ok threads=10");
    /// assert_eq!(r.get("seconds"), Some("0.5"));
    /// assert_eq!(r.get("missing"), None);
    /// ```
    pub fn parse(line: &str) -> ResultLine {
        ResultLine {
            pairs: line
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The sample the line gives: its `seconds=`, and as the operation count the value of
    /// `ops_key` (`None`, or a key the line lacks: `args.n`). `Err` when `seconds=` is missing.
    ///
    /// ```
    /// use pcml_bench::peers::{PeerArgs, ResultLine};
    /// let args = PeerArgs { n: 10, procs: Some(1), branch: None, reps: None };
    /// let r = ResultLine::parse("RESULT program=spawn n=10 seconds=0.5 check=ok threads=9");
    /// let s = r.sample(&args, Some("threads")).unwrap();
    /// assert_eq!((s.seconds, s.ops), (0.5, 9));
    /// assert!(ResultLine::parse("RESULT check=ok").sample(&args, None).is_err());
    /// ```
    pub fn sample(
        &self,
        args: &PeerArgs,
        ops_key: Option<&str>,
    ) -> std::result::Result<Sample, String> {
        let Some(seconds) = self.get("seconds").and_then(|s| s.parse::<f64>().ok()) else {
            return Err("no seconds= in the RESULT line".to_string());
        };
        let ops = ops_key
            .and_then(|k| self.get(k))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(args.n);
        Ok(Sample {
            seconds: seconds.max(1e-9),
            ops,
        })
    }
}

/// `cmd.output()`, retried a few times while the script is "busy" (`ETXTBSY`): a script written
/// just before (as the tests' stand-in peers are) cannot be executed while a process forked
/// meanwhile by another thread still holds the descriptor it was written through; that child
/// closes it when it execs, a moment later.
fn output_when_not_busy(cmd: &mut Command) -> std::io::Result<std::process::Output> {
    let mut tries = 0;
    loop {
        match cmd.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}
