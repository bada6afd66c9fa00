//! The harness end to end at tiny sizes: every program runs (peers off) and checks its answer,
//! the report shows pending rows plainly, a peer's `check=FAIL` fails the run, and the report
//! and charts are written; and the library's pieces (allocator, statistics, tables) alone.

use std::path::PathBuf;

use pcml_bench::cli::{parse, run_programs};
use pcml_bench::machine::Machine;
use pcml_bench::peers::{Peer, PeerArgs, Peers};
use pcml_bench::programs::{self, Config};
use pcml_bench::report::{self, Report};
use pcml_bench::runner::{Error, Progress};
use pcml_bench::table::Outcome;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("pcml-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn tiny() -> Config {
    Config {
        runs: 2,
        peers: false,
        tiny: true,
        ..Config::default()
    }
}

#[test]
fn every_program_runs_and_checks_its_answer_at_tiny_sizes() {
    let cfg = tiny();
    let progress = Progress::new(true);
    let peers = Peers::disabled("--no-peers");
    let (sections, failures) = run_programs(&cfg, &progress, &peers);
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(sections.len(), 9);
    let rows: Vec<_> = sections.iter().flat_map(|s| &s.rows).collect();
    assert!(
        rows.iter()
            .any(|r| matches!(r.outcome, Outcome::Measured(_)))
    );
    assert!(
        rows.iter()
            .filter(|r| r.system == "CML (SML/NJ)")
            .all(|r| matches!(&r.outcome, Outcome::Skipped(w) if w == "--no-peers"))
    );
    let md: String = sections.iter().map(report::section_markdown).collect();
    assert!(md.contains("| bombing 1 | pcml actors (fibers) | 1 |"));
    assert!(md.contains("| bitonic | pcml actors (async) | 2 |"));
    assert!(md.contains("every Krook 2020 program at least 5x faster than Erlang"));
    assert!(md.contains("| Figure 9 | lock and unlock mutex | 1 |"));

    let dir = scratch("report");
    let rep = Report {
        machine: Machine::detect(),
        cfg,
        sections,
        elapsed: 1.0,
    };
    let (path, problems) = report::write(&rep, &dir).unwrap();
    assert!(problems.is_empty(), "{problems:?}");
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.starts_with("# pcml benchmark report"));
    let svgs = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "svg")
        })
        .count();
    assert!(svgs > 0);
    let _ = std::fs::remove_dir_all(&dir);
}

fn stand_in_peer(name: &str, line: &str) -> Peers {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch(name);
    let script = dir.join("run.sh");
    std::fs::write(&script, format!("#!/bin/sh\necho '{line}'\n")).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    Peers::with_scripts(&dir)
}

#[test]
fn a_peer_that_fails_its_check_is_a_wrong_answer() {
    let peers = stand_in_peer(
        "fail",
        "RESULT program=spawn n=10 seconds=0.5 check=FAIL threads=9 peer=go procs=1",
    );
    let args = PeerArgs {
        n: 10,
        procs: Some(1),
        branch: None,
        reps: None,
    };
    let r = peers.run_once(Peer::Go, "spawn", &args, Some("threads"));
    assert!(matches!(r, Err(Error::WrongAnswer(_))), "{r:?}");
}

#[test]
fn a_peer_result_line_gives_a_sample() {
    let peers = stand_in_peer(
        "ok",
        "RESULT program=spawn n=10 seconds=0.5 check=ok threads=10 rate=20 peer=go procs=1",
    );
    let args = PeerArgs {
        n: 10,
        procs: Some(1),
        branch: None,
        reps: None,
    };
    let s = peers
        .run_once(Peer::Go, "spawn", &args, Some("threads"))
        .unwrap()
        .unwrap();
    assert_eq!((s.seconds, s.ops), (0.5, 10));
}

#[test]
fn installed_peers_pass_their_own_checks() {
    let peers = Peers::built_only();
    for peer in Peer::ALL {
        if peers.status(peer).is_err() {
            continue; // not installed or not built here: the report says so; nothing to check
        }
        let args = PeerArgs {
            n: 1000,
            procs: (peer != Peer::Cml).then_some(1),
            branch: None,
            reps: None,
        };
        let s = peers
            .run_once(peer, "spawn", &args, Some("threads"))
            .unwrap()
            .unwrap_or_else(|why| panic!("{peer:?}: {why}"));
        assert_eq!(s.ops, 1000);
    }
}

#[test]
fn the_erlang_seed000_programs_pass_their_own_checks() {
    let peers = Peers::built_only();
    if peers.status(Peer::Erlang).is_err() {
        return; // not installed or not built here: the report says so; nothing to check
    }
    for (program, n) in [
        ("skynet-paper", 2),
        ("bombing1", 10),
        ("bombing2", 10),
        ("bitonic", 16),
    ] {
        let args = PeerArgs {
            n,
            procs: Some(2),
            branch: None,
            reps: Some(2),
        };
        let line = peers
            .run_line(Peer::Erlang, program, &args)
            .unwrap()
            .unwrap_or_else(|why| panic!("{program}: {why}"));
        assert_eq!(line.get("reps"), Some("2"), "{program}");
        assert!(line.get("peak_rss_added").is_some(), "{program}");
    }
}

#[test]
fn flags_select_programs_and_reject_unknown_names() {
    let a = parse(["--only", "spawn", "--no-peers", "--full"].map(String::from)).unwrap();
    assert!(a.cfg.full && !a.cfg.peers);
    assert_eq!(programs::select(&a.cfg.only).unwrap().len(), 1);
    let by_section = programs::select(&["parallel-cml".to_string()]).unwrap();
    assert_eq!(by_section.len(), 4);
    // The old id still selects the same section.
    let by_old_id = programs::select(&["seed003".to_string()]).unwrap();
    assert_eq!(by_old_id.len(), 4);
    assert_eq!(
        programs::select(&["nope".to_string()]).unwrap_err(),
        vec!["nope".to_string()]
    );
    assert!(parse(["--bogus"].map(String::from)).is_err());
    assert!(parse(["--procs", "1,x"].map(String::from)).is_err());
}

/// The allocator the bench programs can use.
mod alloc {
    use pcml_bench::alloc::MiMallocNatural;
    use std::alloc::{GlobalAlloc, Layout};

    /// Every size and alignment gets a block with that alignment, zeroed when asked, and a
    /// reallocation keeps the contents (up to the smaller size) and the alignment.
    #[test]
    fn natural_blocks_honour_every_layout() {
        let a = MiMallocNatural;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 128, 4096] {
            for size in [1usize, 3, 8, 24, 40, 184, 224, 1000, 5000, 70_000] {
                let l = Layout::from_size_align(size, align).unwrap();
                // SAFETY: non-zero sizes; each block is used within its size and freed once
                // with the allocator and the layout that gave it.
                unsafe {
                    let z = a.alloc_zeroed(l);
                    assert!(!z.is_null());
                    assert_eq!(z as usize % align, 0, "zeroed {size} bytes, align {align}");
                    assert!(std::slice::from_raw_parts(z, size).iter().all(|&b| b == 0));
                    a.dealloc(z, l);

                    let p = a.alloc(l);
                    assert_eq!(p as usize % align, 0, "{size} bytes, align {align}");
                    for i in 0..size {
                        *p.add(i) = i as u8;
                    }
                    let grown = size * 3 + 5;
                    let q = a.realloc(p, l, grown);
                    assert_eq!(q as usize % align, 0, "grown to {grown}, align {align}");
                    assert!((0..size).all(|i| *q.add(i) == i as u8));
                    a.dealloc(q, Layout::from_size_align(grown, align).unwrap());
                }
            }
        }
    }
}

/// Statistics and metrics of the runner.
mod stats {
    use pcml_bench::runner::{Metric, Sample, Stats};

    #[test]
    fn stats_median_and_spread() {
        let s = Stats::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.median, s.min, s.max, s.runs), (2.0, 1.0, 3.0, 3));
        let s = Stats::of(&[4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!(s.median, 2.5);
        assert!(Stats::of(&[]).is_none());
    }

    #[test]
    fn metric_values() {
        let s = Sample {
            seconds: 2.0,
            ops: 10,
        };
        assert_eq!(Metric::Rate { unit: "x/s" }.value(&s), 5.0);
        assert_eq!(Metric::NsPerOp { op: "x" }.value(&s), 2e8);
        assert_eq!(Metric::Seconds.value(&s), 2.0);
    }
}

/// Rows, ratios and goals of a report's tables.
mod tables {
    use pcml_bench::runner::{Metric, Sample};
    use pcml_bench::table::{Goal, Row, Section};

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

/// A co-runner process (`pcml-bench --busy-loop`) leaves the session of whoever started it,
/// as another job on the machine is in a session of its own (see `coload`), and stops when
/// killed.
#[test]
fn a_co_runner_runs_in_a_session_of_its_own() {
    // The session id is the sixth field of /proc/PID/stat, after the parenthesised name.
    fn session(pid: u32) -> Option<u64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = &stat[stat.rfind(')')? + 2..];
        rest.split(' ').nth(3)?.parse().ok()
    }
    let ours = session(std::process::id()).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_pcml-bench"))
        .arg(pcml_bench::coload::BUSY_FLAG)
        .spawn()
        .unwrap();
    // The co-runner calls setsid first thing; wait for it to have run.
    let mut its = session(child.id());
    while its == Some(ours) {
        std::thread::yield_now();
        its = session(child.id());
    }
    assert_eq!(
        its,
        Some(child.id() as u64),
        "a co-runner leads its own session"
    );
    child.kill().unwrap();
    assert!(!child.wait().unwrap().success());
}
