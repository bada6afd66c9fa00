//! Profiling aid: Krook's tiny actor programs (bombing 2, skynet depth 6 and bitonic, as
//! the bench crate runs them), repeated on `procs` procs, for `perf stat` and callgrind.
//!
//! `cargo run --release -p pcml --example actors -- PROGRAM KIND RUNS PROCS [N]` with PROGRAM
//! `bombing2`, `skynet6` or `bitonic`, KIND `fibers` or `async`, N the messages of a bombing
//! run (200). Allocates with mimalloc through `mi_malloc`, as the bench binary does, so counts
//! match the bench's.
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

#[path = "support/mi_alloc.rs"]
mod mi_alloc;

/// mimalloc, as the benchmark runs (its instruction counts match the bench's).
#[global_allocator]
static ALLOC: mi_alloc::Natural = mi_alloc::Natural;

/// Bitonic mergesort as the bench runs it (128 numbers, cutoff 2, 384 actors per sort).
mod bitonic {
    use pcml::IVar;
    use pcml::actor::{self, Ctx};
    use std::future::Future;
    use std::pin::Pin;

    const CUTOFF: usize = 2;
    type Answer = (u64, Vec<u32>);

    enum Job {
        SortDown(Vec<u32>),
        Merge(Vec<u32>),
    }

    fn min_max(xs: &[u32]) -> (Vec<u32>, Vec<u32>) {
        let (l, r) = xs.split_at(xs.len() / 2);
        l.iter().zip(r).map(|(&a, &b)| (a.min(b), a.max(b))).unzip()
    }

    fn merge_seq(xs: Vec<u32>) -> Vec<u32> {
        if xs.len() <= 1 {
            return xs;
        }
        let (mins, maxs) = min_max(&xs);
        let mut low = merge_seq(mins);
        low.extend(merge_seq(maxs));
        low
    }

    fn sort_seq(mut xs: Vec<u32>) -> Vec<u32> {
        if xs.len() <= 1 {
            return xs;
        }
        let right = xs.split_off(xs.len() / 2);
        let mut low = sort_seq(xs);
        let mut high = sort_seq(right);
        high.reverse();
        low.extend(high);
        merge_seq(low)
    }

    struct Fib {
        ctx: Ctx<Answer>,
        tag: u64,
    }

    impl Fib {
        fn child(&mut self, job: Job) -> u64 {
            let tag = self.tag;
            self.tag += 1;
            let parent = self.ctx.pid();
            actor::spawn(move |ctx| {
                let xs = Fib { ctx, tag: 0 }.work(job);
                parent.send((tag, xs)).unwrap();
            });
            tag
        }

        fn answer(&mut self, tag: u64) -> Vec<u32> {
            self.ctx.receive_match(|a| a.0 == tag).1
        }

        fn work(&mut self, job: Job) -> Vec<u32> {
            match job {
                Job::SortDown(xs) => {
                    let mut xs = self.sort(xs);
                    xs.reverse();
                    xs
                }
                Job::Merge(xs) => self.merge(xs),
            }
        }

        fn sort(&mut self, mut xs: Vec<u32>) -> Vec<u32> {
            if xs.len() <= CUTOFF {
                return sort_seq(xs);
            }
            let right = xs.split_off(xs.len() / 2);
            let tag = self.child(Job::SortDown(right));
            let mut low = self.sort(xs);
            low.extend(self.answer(tag));
            self.merge(low)
        }

        fn merge(&mut self, xs: Vec<u32>) -> Vec<u32> {
            if xs.len() <= CUTOFF {
                return merge_seq(xs);
            }
            let (mins, maxs) = min_max(&xs);
            let tag = self.child(Job::Merge(maxs));
            let mut low = self.merge(mins);
            low.extend(self.answer(tag));
            low
        }
    }

    type Boxed<'a> = Pin<Box<dyn Future<Output = Vec<u32>> + Send + 'a>>;

    struct Asy {
        ctx: Ctx<Answer>,
        tag: u64,
    }

    impl Asy {
        fn child(&mut self, job: Job) -> u64 {
            let tag = self.tag;
            self.tag += 1;
            let parent = self.ctx.pid();
            actor::spawn_async(move |ctx| async move {
                let xs = Asy { ctx, tag: 0 }.work(job).await;
                parent.send((tag, xs)).unwrap();
            });
            tag
        }

        async fn answer(&mut self, tag: u64) -> Vec<u32> {
            self.ctx.recv_match(|a| a.0 == tag).await.1
        }

        fn work(&mut self, job: Job) -> Boxed<'_> {
            Box::pin(async move {
                match job {
                    Job::SortDown(xs) => {
                        let mut xs = self.sort(xs).await;
                        xs.reverse();
                        xs
                    }
                    Job::Merge(xs) => self.merge(xs).await,
                }
            })
        }

        fn sort(&mut self, mut xs: Vec<u32>) -> Boxed<'_> {
            Box::pin(async move {
                if xs.len() <= CUTOFF {
                    return sort_seq(xs);
                }
                let right = xs.split_off(xs.len() / 2);
                let tag = self.child(Job::SortDown(right));
                let mut low = self.sort(xs).await;
                low.extend(self.answer(tag).await);
                self.merge(low).await
            })
        }

        fn merge(&mut self, xs: Vec<u32>) -> Boxed<'_> {
            Box::pin(async move {
                if xs.len() <= CUTOFF {
                    return merge_seq(xs);
                }
                let (mins, maxs) = min_max(&xs);
                let tag = self.child(Job::Merge(maxs));
                let mut low = self.merge(mins).await;
                low.extend(self.answer(tag).await);
                low
            })
        }
    }

    /// Sorts 127 down to 0 in a root actor; checks the answer.
    pub fn one(fibers: bool) {
        let input: Vec<u32> = (0..128).rev().collect();
        let done = IVar::new();
        let out = done.clone();
        if fibers {
            actor::spawn(move |ctx| {
                let _ = out.put(Fib { ctx, tag: 0 }.sort(input));
            });
        } else {
            actor::spawn_async(move |ctx| async move {
                let xs = Asy { ctx, tag: 0 }.sort(input).await;
                let _ = out.put(xs);
            });
        }
        let sorted: Vec<u32> = done.get();
        assert!(sorted.iter().copied().eq(0..128));
    }
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
            ("bitonic", f) => bitonic::one(f),
            (p, _) => panic!("unknown program {p}: bombing2, skynet6 or bitonic"),
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
