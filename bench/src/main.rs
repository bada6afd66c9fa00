//! `cargo run --release -p pcml-bench`: the benchmark suite; see the library's docs and
//! `pcml-bench --help`.

fn main() {
    std::process::exit(pcml_bench::cli::main());
}
