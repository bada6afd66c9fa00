//! Records the commit the bench binary is built from, so that a report names the code it measured
//! even when the binary runs from another checkout or after the tree has moved on.
//!
//! The value is `git describe --always --dirty` at build time, in `PCML_BENCH_BUILT_FROM`
//! ("unknown" outside a git checkout). Cargo reruns this script when the checkout's HEAD, its
//! index, or any source the binary is built from changes, so a rebuild after an edit is labelled
//! `-dirty` and one after a commit names the new commit.

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let line = text.lines().next()?.trim().to_string();
    (!line.is_empty()).then_some(line)
}

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&manifest);
    for source in [
        "src",
        "build.rs",
        "Cargo.toml",
        "../pcml/src",
        "../pcml/Cargo.toml",
    ] {
        println!("cargo:rerun-if-changed={}", dir.join(source).display());
    }
    // HEAD moves on a commit or checkout; the index on a `git add`; the branch's ref on a commit.
    for name in ["HEAD", "index"] {
        if let Some(path) = git(dir, &["rev-parse", "--git-path", name]) {
            println!("cargo:rerun-if-changed={}", dir.join(path).display());
        }
    }
    if let Some(head_ref) = git(dir, &["symbolic-ref", "-q", "HEAD"])
        && let Some(path) = git(dir, &["rev-parse", "--git-path", &head_ref])
    {
        println!("cargo:rerun-if-changed={}", dir.join(path).display());
    }
    let described =
        git(dir, &["describe", "--always", "--dirty"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PCML_BENCH_BUILT_FROM={described}");
}
