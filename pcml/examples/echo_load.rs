//! Profiling aid: a loopback TCP echo server under load. The server runs on pcml tasks
//! (`pcml`, one task per connection, `read_async`/`write_all_async`) or on tokio (`tokio`,
//! `current_thread` for 1 thread, `multi_thread` otherwise), with `THREADS` procs or workers;
//! the load is 100 client connections driven from one thread with no runtime (a `mio` poll),
//! each writing 64 bytes and reading them back, over and over, for `SECONDS`. Prints round
//! trips per second, and the CPU time the whole process used per round trip (server and load
//! together; the load is the same program for both servers), split into the load thread's
//! own and the rest (the server's threads), and into user and system time (the load's
//! user time is small: it runs no runtime); and the shares of the run the load's thread spent
//! on a core and waiting for one (what is left, it waited for the server's answers).
//!
//! `cargo run --release -p pcml --example echo_load -- [pcml|tokio] [THREADS] [SECONDS]
//! [TRIPS]` (with `TRIPS`, each client makes that many round trips and the time is ignored)

#[path = "support/mi_alloc.rs"]
mod mi_alloc;

/// mimalloc, as the benchmark runs.
#[global_allocator]
static ALLOC: mi_alloc::Natural = mi_alloc::Natural;

#[path = "support/echo.rs"]
mod echo;

use std::time::Duration;

use echo::Server;

/// CPU time this process has used so far: user and system.
fn cpu_time() -> (Duration, Duration) {
    // SAFETY: `getrusage` writes one `rusage` into the zeroed value we pass.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

fn main() {
    let mut args = std::env::args().skip(1);
    let which = args.next().unwrap_or_else(|| "pcml".into());
    let threads: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(1);
    let secs: f64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(2.0);
    // A fourth argument: a fixed number of round trips per client instead of a time (for
    // callgrind; the time is then ignored).
    let trips: Option<u64> = args.next().and_then(|s| s.parse().ok());
    let server = match which.as_str() {
        "pcml" => Server::Pcml(threads),
        "tokio" => Server::Tokio(threads),
        _ => panic!("server: pcml or tokio"),
    };
    let (user, sys) = cpu_time();
    let echo::Measured {
        trips: n,
        elapsed,
        load_cpu,
        load_wait,
        server_cpu,
        server_user,
    } = echo::measure(server, secs, trips).unwrap();
    let (user, sys) = {
        let (u, s) = cpu_time();
        (u - user, s - sys)
    };
    let per_trip = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
    let share = |d: Duration| d.as_secs_f64() * 100.0 / elapsed.as_secs_f64();
    println!(
        "{which} {threads} threads: {:.0} round trips/s ({n} in {elapsed:.2?}), {:.2} us of CPU \
         per round trip (server {:.2}, {:.2} of it user, load {:.2}; user {:.2}, system {:.2}); the load's \
         thread on a core {:.0}% of the time, waiting for one {:.0}%",
        n as f64 / elapsed.as_secs_f64(),
        per_trip(user + sys),
        per_trip(server_cpu),
        per_trip(server_user),
        per_trip(load_cpu),
        per_trip(user),
        per_trip(sys),
        share(load_cpu),
        share(load_wait),
    );
}
