//! Profiling aid: Reppy, Russo and Xiao's primes sieve (a generator and a chain of filter threads over
//! synchronous channels), as the bench crate runs it.
//!
//! `cargo run --release -p pcml --example primes -- KIND N PROCS RUNS` with KIND `placed`
//! (fibers, filter k `spawn_on` proc k mod P, as the paper), `spawn` (fibers placed by the
//! scheduler; it also prints how many filters ran on proc 1), `tasks` (async tasks), `split`
//! (fibers, the generator and filters 1 to K-1 on proc 0, the rest on proc 1: one cut in the
//! chain; K is a fifth argument, by default 28% of N, where half of the messages have been
//! received) or `blocks` (fibers, the generator on proc 0 and filter k on proc (k / B) mod P:
//! the chain cut into blocks of B filters dealt to the procs in turn; B is a fifth argument,
//! by default 50). Prints the milliseconds of each run, and on stderr each proc's resumes, parks,
//! steals, wake-ups sent to other procs and blocks of spawns dealt or kept (and why) in that run.
//! Allocates with mimalloc through `mi_malloc`, as the bench binary does.
use pcml::chan::Chan;

static ON_1: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `arg`: for `split` the first filter on proc 1, for `blocks` the block size.
fn sieve(n: usize, kind: &str, arg: Option<usize>) -> Vec<u64> {
    let procs = pcml::procs();
    let first: Chan<u64> = Chan::new();
    let gen_out = first.clone();
    let gen_body = move || {
        let mut i = 2u64;
        loop {
            gen_out.send(i);
            i += 1;
        }
    };
    match kind {
        "placed" | "split" | "blocks" => drop(pcml::spawn_on(0, gen_body)),
        "spawn" => drop(pcml::spawn(gen_body)),
        _ => {
            let gen_out = first.clone();
            drop(gen_body);
            drop(pcml::spawn_task(async move {
                let mut i = 2u64;
                loop {
                    gen_out.send_evt(i).await;
                    i += 1;
                }
            }));
        }
    }
    let mut ch = first;
    let mut primes = Vec::with_capacity(n);
    for k in 0..n {
        let prime = ch.recv();
        primes.push(prime);
        if k + 1 == n {
            break;
        }
        let (input, out) = (ch, Chan::new());
        let output = out.clone();
        match kind {
            "placed" | "spawn" | "split" | "blocks" => {
                let body = move || {
                    if pcml::current_proc() == Some(1) {
                        ON_1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    loop {
                        let x = input.recv();
                        if x % prime != 0 {
                            output.send(x);
                        }
                    }
                };
                match (kind, arg) {
                    ("blocks", Some(block)) => drop(pcml::spawn_on((k + 1) / block % procs, body)),
                    ("split", Some(split)) => {
                        drop(pcml::spawn_on(usize::from(k + 1 >= split), body))
                    }
                    ("placed", _) => drop(pcml::spawn_on((k + 1) % procs, body)),
                    _ => drop(pcml::spawn(body)),
                }
            }
            _ => drop(pcml::spawn_task(async move {
                loop {
                    let x = input.recv_evt().await;
                    if x % prime != 0 {
                        output.send_evt(x).await;
                    }
                }
            })),
        }
        ch = out;
    }
    primes
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kind = args
        .first()
        .map(String::as_str)
        .unwrap_or("spawn")
        .to_string();
    let num = |i: usize, d: usize| args.get(i).and_then(|s| s.parse().ok()).unwrap_or(d);
    let (n, procs, runs) = (num(1, 1000), num(2, 2), num(3, 5));
    // The best two-proc layout of a chain: one cut, where half of the messages have been
    // received (filter 280 of 1,000: counted by running the sieve's arithmetic alone).
    let arg = match kind.as_str() {
        "split" if procs > 1 => Some(num(4, n * 28 / 100)),
        "blocks" => Some(num(4, 50).max(1)),
        _ => None,
    };
    for _ in 0..runs {
        let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
        let k = kind.clone();
        let (ms, last) = rt
            .block_on(move || {
                let before = pcml::sched::metrics().unwrap();
                let t = std::time::Instant::now();
                let p = sieve(n, &k, arg);
                let ms = t.elapsed().as_secs_f64() * 1e3;
                let m = pcml::sched::metrics().unwrap().since(&before);
                for (i, p) in m.procs().iter().enumerate() {
                    eprintln!(
                        "  proc {i}: resumes {} parks {} steals {} wakes sent {} blocks dealt {} \
                         kept (waited) {} kept (no core) {}",
                        p.resumes,
                        p.parks,
                        p.steals,
                        p.sent_wakes,
                        p.blocks_dealt,
                        p.blocks_kept_waited,
                        p.blocks_kept_no_core
                    );
                }
                (ms, *p.last().unwrap())
            })
            .unwrap();
        println!(
            "{kind} n={n} procs={procs}: {ms:.1} ms (last prime {last}, filters on proc 1: {})",
            ON_1.swap(0, std::sync::atomic::Ordering::Relaxed)
        );
    }
}

#[path = "support/mi_alloc.rs"]
mod mi_alloc;

/// mimalloc, as the benchmark runs (its instruction counts match the bench's).
#[global_allocator]
static ALLOC: mi_alloc::Natural = mi_alloc::Natural;
