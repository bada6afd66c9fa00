//! The machine a report was measured on: cores, CPU model, kernel, tool versions and the
//! commit of pcml, so that a figure can be read against where it came from.

use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// What the report's header says about the machine and the tools.
#[derive(Debug, Clone, PartialEq)]
pub struct Machine {
    /// Cores the process may use (`available_parallelism`).
    pub cores: usize,
    /// The CPU's model name from `/proc/cpuinfo`.
    pub cpu: String,
    /// The kernel release (`uname -r`).
    pub kernel: String,
    /// `rustc --version`.
    pub rustc: String,
    /// `go version`, or "not installed".
    pub go: String,
    /// Erlang/OTP release, or "not installed".
    pub erlang: String,
    /// SML/NJ version, or "not installed".
    pub sml: String,
    /// The commit the binary was built from (`git describe` at build time), and the checkout's
    /// commit at run time where that differs.
    pub commit: String,
    /// When the run started, UTC, `YYYY-MM-DD HH:MM`.
    pub date: String,
    /// `/proc/loadavg`'s 1-minute load when the run started (other work on the machine).
    pub load: Option<f64>,
    /// How many cores' worth of work `cores` busy OS threads got done at the start, against
    /// one thread alone (about `cores` on an idle machine; near 1 when other processes hold
    /// the other cores, and then multi-proc figures measure oversubscription).
    pub parallelism: f64,
    /// Nanoseconds for one round trip of a cache line between two busy OS threads at the
    /// start (median of 3 short runs), if the process may use 2 cores. On this kind of
    /// virtual machine it varies about tenfold over minutes (the vCPUs' placement), and
    /// cross-proc figures follow it.
    pub line_round_trip_ns: Option<f64>,
}

/// Measures the round trip of one cache line between two spinning OS threads: the calling
/// thread writes, the other answers, `n` times; returns nanoseconds per round trip.
///
/// ```
/// assert!(pcml_bench::machine::line_round_trip(1000) > 0.0);
/// ```
pub fn line_round_trip(n: u64) -> f64 {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    let flag = Arc::new(AtomicU64::new(0));
    let other = flag.clone();
    let answerer = std::thread::spawn(move || {
        for i in 0..n {
            // Acquire/Release: the two threads hand the line back and forth; the orderings
            // only make each wait see the other's latest store.
            while other.load(Ordering::Acquire) != 2 * i + 1 {
                std::hint::spin_loop();
            }
            other.store(2 * i + 2, Ordering::Release);
        }
    });
    let start = Instant::now();
    for i in 0..n {
        flag.store(2 * i + 1, Ordering::Release);
        while flag.load(Ordering::Acquire) != 2 * i + 2 {
            std::hint::spin_loop();
        }
    }
    let elapsed = start.elapsed();
    let _ = answerer.join();
    elapsed.as_nanos() as f64 / n.max(1) as f64
}

/// Runs `threads` busy OS threads of the same fixed work and returns how many threads' worth
/// of work was done per unit of the time one thread alone takes.
///
/// ```
/// // A measurement, not a property: on a loaded machine it can be anything positive.
/// let p = pcml_bench::machine::parallelism(1);
/// assert!(p.is_finite() && p > 0.0);
/// ```
pub fn parallelism(threads: usize) -> f64 {
    fn work() -> u64 {
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
        x
    }
    let start = Instant::now();
    work();
    let one = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let hs: Vec<_> = (0..threads).map(|_| std::thread::spawn(work)).collect();
    for h in hs {
        let _ = h.join();
    }
    let many = start.elapsed().as_secs_f64();
    threads as f64 * one / many.max(1e-9)
}

/// Runs `cmd args` and returns its first non-empty output line (stdout, else stderr).
fn first_line(cmd: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = if out.stdout.iter().any(|b| !b.is_ascii_whitespace()) {
        out.stdout
    } else {
        out.stderr
    };
    String::from_utf8_lossy(&text)
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// `YYYY-MM-DD HH:MM` UTC for seconds since the epoch (civil-from-days, proleptic Gregorian).
///
/// ```
/// assert_eq!(pcml_bench::machine::utc(0), "1970-01-01 00:00");
/// assert_eq!(pcml_bench::machine::utc(951_782_400), "2000-02-29 00:00");
/// ```
pub fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let (h, m) = ((secs % 86_400) / 3600, (secs % 3600) / 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{m:02}")
}

impl Machine {
    /// Measures [`Machine::parallelism`] (about 0.1 s of busy threads) and
    /// [`Machine::line_round_trip_ns`].
    pub fn calibrate(&mut self) {
        self.parallelism = parallelism(self.cores);
        if self.cores >= 2 {
            let mut rtt: Vec<f64> = (0..3).map(|_| line_round_trip(20_000)).collect();
            rtt.sort_by(f64::total_cmp);
            self.line_round_trip_ns = Some(rtt[1]);
        }
    }

    /// Reads the machine and asks each tool its version (a missing tool says so); see
    /// [`Machine::calibrate`] for the parallelism figure.
    pub fn detect() -> Machine {
        let absent = || "not installed".to_string();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        Machine {
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu: cpu_model(),
            kernel: first_line("uname", &["-r"]).unwrap_or_else(|| "unknown".to_string()),
            rustc: first_line("rustc", &["--version"]).unwrap_or_else(|| "unknown".to_string()),
            go: first_line("go", &["version"]).unwrap_or_else(absent),
            erlang: first_line(
                "erl",
                &[
                    "-noshell",
                    "-eval",
                    "io:format(\"OTP ~s, ERTS ~s~n\", [erlang:system_info(otp_release), erlang:system_info(version)]), halt().",
                ],
            )
            .unwrap_or_else(absent),
            sml: match crate::peers::command_path("sml") {
                Some(sml) => first_line(&sml.to_string_lossy(), &["@SMLversion"])
                    .unwrap_or_else(|| format!("installed at {} (version unknown)", sml.display())),
                None => absent(),
            },
            commit: commit_label(),
            date: utc(now),
            load: std::fs::read_to_string("/proc/loadavg")
                .ok()
                .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok())),
            parallelism: 0.0,
            line_round_trip_ns: None,
        }
    }
}

/// The commit the binary was built from (recorded by the build script), and the checkout's own
/// commit at run time where that differs, so a binary copied aside and run later still names the
/// code it measured.
fn commit_label() -> String {
    let built = env!("PCML_BENCH_BUILT_FROM");
    let now = first_line(
        "git",
        &[
            "-C",
            env!("CARGO_MANIFEST_DIR"),
            "describe",
            "--always",
            "--dirty",
        ],
    );
    match now {
        Some(now) if now != built => format!("{built} (built from; the checkout is now at {now})"),
        _ => built.to_string(),
    }
}
