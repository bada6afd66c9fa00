//! Sets `cfg(pcml_tsan)` when the crate is built under ThreadSanitizer (nightly's
//! `-Zsanitizer=thread`, which rustc reports to build scripts as `CARGO_CFG_SANITIZE`). The
//! compiler's own `cfg(sanitize = "thread")` is unstable, so the crate and its tests read
//! this one instead: a few spots order memory through a fence, which TSan does not model, and
//! use an equivalent it does model under this cfg only (see `mp::refs`).

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let tsan =
        std::env::var("CARGO_CFG_SANITIZE").is_ok_and(|s| s.split(',').any(|s| s == "thread"));
    if tsan {
        println!("cargo::rustc-cfg=pcml_tsan");
    }
}
