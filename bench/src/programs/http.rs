//! A hyper HTTP/1.1 hello-world server under `wrk` on loopback: the server of
//! `pcml/examples/hyper_server.rs` on pcml tasks and sockets, against the same hyper service on
//! tokio, measured alternately in the same run. Figures are requests per second as `wrk`
//! counts them (2 load threads, 100 keep-alive connections); the load generator shares the
//! machine's cores with the server, as it does in every loopback measurement. Skipped with a
//! note when `wrk` is not installed (Debian: `apt-get install wrk`).
//!
//! Beside the requests per second, each run gives the server's CPU time per request (the
//! bench process's CPU time during the `wrk` run: the server's threads, the bench's own
//! thread only waits) and the share of the run's two cores `wrk` used (its CPU time, as the
//! process's child): where `wrk` takes a core or more, the load sets much of the figure, and
//! the CPU time per request is the server's efficiency the load cannot hide.
//!
//! The answer: `wrk` must report no socket errors and no non-2xx responses.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use super::{Ctx, pcml_against_tokio, server_cpu_rows, tokio_for};
use crate::runner::{Error, Metric, Result, Sample};
use crate::table::{Row, Section};

#[path = "../../../pcml/examples/support/hyper_server.rs"]
mod hyper_server;

const METRIC: Metric = Metric::Rate { unit: "requests/s" };
const CPU_METRIC: Metric = Metric::NsPerOp {
    op: "request of server CPU",
};

/// What one run cost besides its requests: per run, the server's CPU time as a sample (its
/// seconds and the requests served), and `wrk`'s CPU time over the run's time (the cores it
/// used).
type Costs = RefCell<Vec<(Sample, f64)>>;

/// The user and system CPU time so far of this process's threads, ended ones included
/// (`RUSAGE_SELF`), or of its waited-for children (`RUSAGE_CHILDREN`); zero where it cannot be
/// read.
fn cpu_time(who: libc::c_int) -> Duration {
    // SAFETY: `getrusage` writes one `rusage` into the zeroed value we pass.
    let (rc, ru) = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        let rc = libc::getrusage(who, &mut ru);
        (rc, ru)
    };
    if rc != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Load threads and connections of `wrk`.
const WRK_THREADS: usize = 2;
const CONNECTIONS: usize = 100;

/// One `wrk` run of `secs` seconds against `addr`: requests done and the seconds they took;
/// adds to `costs` what the run cost the server and `wrk`.
fn wrk(addr: SocketAddr, secs: u64, costs: &Costs) -> Result<Sample> {
    let (server_then, wrk_then) = (cpu_time(libc::RUSAGE_SELF), cpu_time(libc::RUSAGE_CHILDREN));
    let out = Command::new("wrk")
        .arg(format!("-t{WRK_THREADS}"))
        .arg(format!("-c{CONNECTIONS}"))
        .arg(format!("-d{secs}s"))
        .arg(format!("http://{addr}/"))
        .output()
        .map_err(|e| Error::Failed(format!("wrk: {e}")))?;
    let (server_cpu, wrk_cpu) = (
        cpu_time(libc::RUSAGE_SELF).saturating_sub(server_then),
        cpu_time(libc::RUSAGE_CHILDREN).saturating_sub(wrk_then),
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        return Err(Error::Failed(format!("wrk failed: {text}")));
    }
    if text.contains("Socket errors") || text.contains("Non-2xx") {
        return Err(Error::WrongAnswer(format!("wrk saw errors: {text}")));
    }
    // "  123456 requests in 3.00s, 12.34MB read"
    let line = text
        .lines()
        .find(|l| l.contains(" requests in "))
        .ok_or_else(|| Error::Failed(format!("wrk: no request count in {text}")))?;
    let mut words = line.split_whitespace();
    let ops: u64 = words
        .next()
        .and_then(|w| w.parse().ok())
        .ok_or_else(|| Error::Failed(format!("wrk: cannot read {line:?}")))?;
    let secs_text = words.nth(2).unwrap_or("").trim_end_matches(',');
    let seconds = parse_duration(secs_text)
        .ok_or_else(|| Error::Failed(format!("wrk: cannot read the time in {line:?}")))?;
    if !server_cpu.is_zero() && seconds > 0.0 {
        let cpu = Sample {
            seconds: server_cpu.as_secs_f64(),
            ops,
        };
        costs
            .borrow_mut()
            .push((cpu, wrk_cpu.as_secs_f64() / seconds));
    }
    Ok(Sample { seconds, ops })
}

/// wrk's durations: "3.00s", "1.00m", "500.00ms".
fn parse_duration(s: &str) -> Option<f64> {
    if let Some(v) = s.strip_suffix("ms") {
        return v.parse::<f64>().ok().map(|v| v / 1e3);
    }
    if let Some(v) = s.strip_suffix('s') {
        return v.parse().ok();
    }
    if let Some(v) = s.strip_suffix('m') {
        return v.parse::<f64>().ok().map(|v| v * 60.0);
    }
    None
}

/// The pcml server on `procs` procs for one `wrk` run.
fn measure_pcml(procs: usize, secs: u64, costs: &Costs) -> Result<Sample> {
    let stop = pcml::CVar::new();
    let s = stop.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        pcml::Runtime::builder()
            .procs(procs)
            .build()
            .map_err(|e| Error::Failed(e.to_string()))?
            .block_on(move || {
                let l = pcml::net::TcpListener::bind("127.0.0.1:0").unwrap();
                tx.send(l.local_addr().unwrap()).unwrap();
                pcml::spawn_task(hyper_server::serve_pcml(l));
                s.wait();
            })
            .map_err(|e| Error::Failed(e.to_string()))
    });
    let addr = rx
        .recv()
        .map_err(|_| Error::Failed("the pcml server did not start".into()))?;
    let sample = wrk(addr, secs, costs);
    stop.signal();
    server
        .join()
        .map_err(|_| Error::Failed("the pcml server panicked".into()))??;
    sample
}

/// The tokio server on `workers` workers (0: `current_thread`) for one `wrk` run.
fn measure_tokio(workers: usize, secs: u64, costs: &Costs) -> Result<Sample> {
    let rt = hyper_server::tokio_runtime(workers).map_err(|e| Error::Failed(e.to_string()))?;
    if workers == 0 {
        // A current_thread runtime runs only inside block_on: serve from a thread of its own.
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let server = std::thread::spawn(move || {
            rt.block_on(async move {
                let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(l.local_addr().unwrap()).unwrap();
                tokio::select! {
                    _ = hyper_server::serve_tokio(l) => {}
                    _ = stop_rx => {}
                }
            });
        });
        let addr = rx
            .recv()
            .map_err(|_| Error::Failed("the tokio server did not start".into()))?;
        let sample = wrk(addr, secs, costs);
        let _ = stop_tx.send(());
        server
            .join()
            .map_err(|_| Error::Failed("the tokio server panicked".into()))?;
        return sample;
    }
    let l = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .map_err(|e| Error::Failed(e.to_string()))?;
    let addr = l.local_addr().map_err(|e| Error::Failed(e.to_string()))?;
    rt.spawn(hyper_server::serve_tokio(l));
    let sample = wrk(addr, secs, costs);
    rt.shutdown_background();
    sample
}

/// Runs the comparison on each configured proc count.
pub fn run(ctx: &Ctx<'_>, sec: &mut Section) -> Result<()> {
    let prog = format!("hyper hello, wrk -t{WRK_THREADS} -c{CONNECTIONS}");
    let secs = 3;
    // Tiny sizes (the tests) check answers quickly; a wrk run takes seconds.
    let skip = if ctx.cfg.tiny {
        Some("tiny sizes: each wrk run takes seconds")
    } else if Command::new("wrk").arg("--version").output().is_err() {
        Some("wrk is not installed (Debian: apt-get install wrk)")
    } else {
        None
    };
    for &p in &ctx.cfg.procs {
        let (workers, _) = tokio_for(p);
        if let Some(why) = skip {
            for system in ["pcml tasks", "tokio"] {
                sec.rows
                    .push(Row::skipped(&prog, system, Some(p), METRIC, why));
            }
            continue;
        }
        let (ours, theirs): (Costs, Costs) = Default::default();
        pcml_against_tokio(
            ctx,
            sec,
            &prog,
            METRIC,
            p,
            &format!("{secs} s per run"),
            ("hyper requests/s", 1.0),
            || measure_pcml(p, secs, &ours),
            || measure_tokio(workers, secs, &theirs),
        )?;
        cpu_rows(sec, &prog, p, &ours.borrow(), &theirs.borrow());
    }
    Ok(())
}

/// The rows of the server's CPU time per request on pcml and on tokio (`p` procs), from the
/// same runs as the requests per second, with `wrk`'s share of the cores in each row's note,
/// and their ratio (see [`server_cpu_rows`]).
fn cpu_rows(
    sec: &mut Section,
    prog: &str,
    p: usize,
    ours: &[(Sample, f64)],
    theirs: &[(Sample, f64)],
) {
    let what = "the server's CPU time per request, same runs";
    server_cpu_rows(
        sec,
        prog,
        p,
        CPU_METRIC,
        "hyper server CPU per request",
        ours,
        theirs,
        |cores| match cores {
            Some(c) => format!(
                "{what}; wrk meanwhile kept {:.2} cores busy ({:.2} - {:.2})",
                c.median, c.min, c.max
            ),
            None => what.to_string(),
        },
    );
}

#[cfg(test)]
mod tests {
    use crate::table::Section;

    #[test]
    fn the_server_cpu_rows_give_tokios_time_over_pcmls_and_wrks_cores() {
        let run = super::super::cpu_run;
        let mut sec = Section::new("servers", "servers", "");
        let ours = [run(0.010, 0.9), run(0.012, 1.1), run(0.011, 1.0)];
        let theirs = [run(0.011, 1.0), run(0.011, 1.0), run(0.011, 1.0)];
        super::cpu_rows(&mut sec, "hyper", 2, &ours, &theirs);
        assert_eq!(sec.rows.len(), 2);
        let note = &sec.rows[0].note;
        assert!(
            note.contains("kept 1.00 cores busy (0.90 - 1.10)"),
            "{note}"
        );
        let ratio = &sec.ratios[0];
        assert_eq!(
            ratio.label,
            "hyper server CPU per request, tokio / pcml, 2 procs"
        );
        assert!((ratio.value.clone().unwrap() - 1.0).abs() < 1e-9);
    }
}
