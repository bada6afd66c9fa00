//! `cargo run --release -p pcml-bench`: the benchmark suite; see the library's docs and
//! `pcml-bench --help`.

/// The suite runs on mimalloc, as a Rust program that cares about allocation speed would; the
/// report says so. pcml itself does not choose an allocator: programs built on it choose.
/// [`MiMallocNatural`](pcml_bench::alloc::MiMallocNatural) asks mimalloc for word-aligned
/// blocks through its fast path, which the `mimalloc` crate's own `MiMalloc` does not.
/// The counting wrapper lets the memory probes read the heap's peak; outside a probe it costs
/// a relaxed load per allocation.
#[global_allocator]
static ALLOCATOR: pcml_bench::alloc::Counting<pcml_bench::alloc::MiMallocNatural> =
    pcml_bench::alloc::Counting(pcml_bench::alloc::MiMallocNatural);

fn main() {
    std::process::exit(pcml_bench::cli::main());
}
