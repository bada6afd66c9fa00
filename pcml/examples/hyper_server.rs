//! A hyper HTTP/1.1 server on pcml tasks and sockets, and the same server on tokio for
//! comparison.
//!
//! hyper runs on any runtime that gives it three things, through its `rt` traits: I/O
//! (`hyper::rt::Read`/`Write`, here over [`pcml::net::TcpStream`]'s tokio traits), a timer
//! (`hyper::rt::Timer`, here pcml's [`sleep_until_async`](pcml::time::sleep_until_async), used
//! for the header-read timeout), and for HTTP/2 an executor (`hyper::rt::Executor`, here
//! [`pcml::spawn_task`]). Each connection is one pcml task. The adapters and both servers
//! are in `examples/support/hyper_server.rs`, which the benchmark and the tests share.
//!
//! Run: `cargo run --release -p pcml --features tokio --example hyper_server -- 127.0.0.1:8080 pcml 2`
//! (or `tokio` instead of `pcml`: the same service on tokio's multi-thread runtime with that
//! many workers, or on its `current_thread` runtime given 0), then load it with
//! `wrk -t2 -c100 -d10s http://127.0.0.1:8080/`. It serves until interrupted (on pcml, for
//! `HYPER_SERVER_SECS` seconds if that is set, then it prints each proc's counters of that
//! time and exits). The `net` tests run it against a plain HTTP client. The example allocates
//! with mimalloc, as the benchmark does for both servers.

#[path = "support/mi_alloc.rs"]
mod mi_alloc;

/// mimalloc, as the benchmark runs.
#[global_allocator]
static ALLOC: mi_alloc::Natural = mi_alloc::Natural;

#[path = "support/hyper_server.rs"]
mod server;

use server::{serve_pcml, serve_tokio, tokio_runtime};

fn main() {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8080".into());
    let system = args.next().unwrap_or_else(|| "pcml".into());
    let threads: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(2);
    match system.as_str() {
        "pcml" => {
            let rt = pcml::Runtime::builder().procs(threads).build().unwrap();
            rt.block_on(move || {
                let listener = pcml::net::TcpListener::bind(&addr)
                    .unwrap_or_else(|e| panic!("hyper_server: cannot listen on {addr}: {e}"));
                println!(
                    "hyper_server: pcml, {threads} procs, on http://{}/",
                    listener.local_addr().unwrap()
                );
                let server = pcml::spawn_task(serve_pcml(listener));
                match std::env::var("HYPER_SERVER_SECS")
                    .ok()
                    .and_then(|s| s.parse().ok())
                {
                    // Profiling: serve that long, then print each proc's counters and exit.
                    Some(secs) => {
                        let before = pcml::sched::metrics().unwrap();
                        pcml::time::sleep(std::time::Duration::from_secs_f64(secs));
                        let m = pcml::sched::metrics().unwrap().since(&before);
                        for (i, p) in m.procs().iter().enumerate() {
                            eprintln!("  proc {i}: {p:?}");
                        }
                        std::process::exit(0);
                    }
                    None => server.join().unwrap(),
                }
            })
            .unwrap();
        }
        "tokio" => {
            // 0 workers: tokio's `current_thread` runtime, the bench's peer of one proc.
            let rt = tokio_runtime(threads).unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind(&addr).await.unwrap();
                println!(
                    "hyper_server: tokio, {threads} workers, on http://{}/",
                    listener.local_addr().unwrap()
                );
                serve_tokio(listener).await;
            });
        }
        other => panic!("hyper_server: unknown system {other:?}: say pcml or tokio"),
    }
}
