//! The harness end to end at tiny sizes: every program runs (peers off) and checks its answer,
//! the report shows pending rows plainly, a peer's `check=FAIL` fails the run, and the report
//! and charts are written.

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
