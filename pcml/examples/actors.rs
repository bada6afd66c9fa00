//! Profiling aid: seed 000's tiny actor programs (bombing 2 and skynet depth 6, as the bench
//! crate runs them), repeated on `procs` procs, for `perf stat` and callgrind.
//!
//! `cargo run --release -p pcml --example actors -- PROGRAM KIND RUNS PROCS [N]` with PROGRAM
//! `bombing2` or `skynet6`, KIND `fibers` or `async`, N the messages of a bombing run (200).
use pcml::IVar;
use pcml::actor::{self, Ctx, Pid};
use std::future::Future;
use std::pin::Pin;

#[derive(Clone, Copy)]
enum Bomb {
    Msg(u64, u64),
    #[allow(dead_code)]
    BadMsg(u64, u64),
}

fn wanted(m: &Bomb) -> bool {
    matches!(m, Bomb::Msg(..))
}

fn gain(m: Bomb) -> u64 {
    match m {
        Bomb::Msg(a, b) => a / b,
        Bomb::BadMsg(..) => 0,
    }
}

fn bombing_fibers(n: u64) -> u64 {
    let done = IVar::new();
    let out = done.clone();
    actor::spawn(move |mut main: Ctx<u64>| {
        let me = main.pid();
        let a = actor::spawn(move |mut ctx: Ctx<Bomb>| {
            let mut sum = 0;
            for _ in 0..n {
                sum += gain(ctx.receive_match(wanted));
            }
            let _ = me.send(sum);
        });
        actor::spawn(move |_: Ctx<()>| {
            for _ in 0..n {
                a.send(Bomb::Msg(6, 3)).unwrap();
            }
        });
        let _ = out.put(main.receive());
    });
    done.get()
}

fn bombing_async(n: u64) -> u64 {
    let done = IVar::new();
    let out = done.clone();
    actor::spawn_async(move |mut main: Ctx<u64>| async move {
        let me = main.pid();
        let a = actor::spawn_async(move |mut ctx: Ctx<Bomb>| async move {
            let mut sum = 0;
            for _ in 0..n {
                sum += gain(ctx.recv_match(wanted).await);
            }
            let _ = me.send(sum);
        });
        actor::spawn_async(move |_: Ctx<()>| async move {
            for _ in 0..n {
                a.send(Bomb::Msg(6, 3)).unwrap();
            }
        });
        let _ = out.put(main.recv().await);
    });
    done.get()
}

fn paper_fiber(mut ctx: Ctx<u64>, depth: u32, parent: Pid<u64>) {
    if depth == 0 {
        parent.send(1).unwrap();
        return;
    }
    for _ in 0..3 {
        let me = ctx.pid();
        actor::spawn(move |c| paper_fiber(c, depth - 1, me));
    }
    let sum: u64 = (0..3).map(|_| ctx.receive()).sum();
    parent.send(sum).unwrap();
}

type Boxed = Pin<Box<dyn Future<Output = ()> + Send>>;

fn paper_async(mut ctx: Ctx<u64>, depth: u32, parent: Pid<u64>) -> Boxed {
    Box::pin(async move {
        if depth == 0 {
            parent.send(1).unwrap();
            return;
        }
        for _ in 0..3 {
            let me = ctx.pid();
            actor::spawn_async(move |c| paper_async(c, depth - 1, me));
        }
        let mut sum = 0;
        for _ in 0..3 {
            sum += ctx.recv().await;
        }
        parent.send(sum).unwrap();
    })
}

fn skynet(fibers: bool) -> u64 {
    let done = IVar::new();
    let out = done.clone();
    if fibers {
        let printer = actor::spawn(move |mut c: Ctx<u64>| {
            let _ = out.put(c.receive());
        });
        actor::spawn(move |c| paper_fiber(c, 6, printer));
    } else {
        let printer = actor::spawn_async(move |mut c: Ctx<u64>| async move {
            let _ = out.put(c.recv().await);
        });
        actor::spawn_async(move |c| paper_async(c, 6, printer));
    }
    done.get()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let prog = args.get(1).map_or("bombing2", |s| s.as_str()).to_string();
    let fibers = args.get(2).map_or("async", |s| s.as_str()) == "fibers";
    let runs: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let procs: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(1);
    // Messages per bombing run (the thesis's 200).
    let n: u64 = args.get(5).and_then(|s| s.parse().ok()).unwrap_or(200);
    let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
    rt.block_on(move || {
        let one = || match (prog.as_str(), fibers) {
            ("bombing2", true) => assert_eq!(bombing_fibers(n), 2 * n),
            ("bombing2", false) => assert_eq!(bombing_async(n), 2 * n),
            ("skynet6", f) => assert_eq!(skynet(f), 729),
            (p, _) => panic!("unknown program {p}: bombing2 or skynet6"),
        };
        one();
        let t = std::time::Instant::now();
        for _ in 0..runs {
            one();
        }
        let e = t.elapsed();
        println!(
            "{prog} ({}), {procs} procs: {:.2} us per run",
            if fibers { "fibers" } else { "async" },
            e.as_secs_f64() * 1e6 / runs as f64
        );
    })
    .unwrap();
}
