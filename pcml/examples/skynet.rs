//! Profiling aid: skynet (10-ary; leaves from argv, default 1,000,000) with async tasks and
//! with fibers, on 1 and 2 procs; `tasks-once` runs the task version once on one proc (for
//! callgrind).
use std::future::Future;
use std::pin::Pin;

fn node(num: u64, size: u64) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    Box::pin(async move {
        if size == 1 {
            return num;
        }
        let step = size / 10;
        let hs: Vec<_> = (0..10)
            .map(|i| pcml::spawn_task(node(num + i * step, step)))
            .collect();
        let mut sum = 0;
        for h in hs {
            sum += h.await.unwrap();
        }
        sum
    })
}

fn fiber_node(num: u64, size: u64) -> u64 {
    if size == 1 {
        return num;
    }
    let step = size / 10;
    let hs: Vec<_> = (0..10)
        .map(|i| pcml::spawn(move || fiber_node(num + i * step, step)))
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).sum()
}

fn main() {
    let leaves: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let expected = leaves * (leaves - 1) / 2;
    if std::env::args().nth(2).as_deref() == Some("tasks-once") {
        let rt = pcml::Runtime::builder().procs(1).build().unwrap();
        let sum = rt
            .block_on(move || pcml::spawn_task(node(0, leaves)).join().unwrap())
            .unwrap();
        assert_eq!(sum, expected);
        return;
    }
    for procs in [1, 2] {
        for _ in 0..3 {
            let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
            let t = std::time::Instant::now();
            let sum = rt
                .block_on(move || pcml::spawn_task(node(0, leaves)).join().unwrap())
                .unwrap();
            let tasks = t.elapsed();
            assert_eq!(sum, expected);
            let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
            let t = std::time::Instant::now();
            let sum = rt.block_on(move || fiber_node(0, leaves)).unwrap();
            assert_eq!(sum, expected);
            println!(
                "procs {procs}: skynet {leaves} leaves: tasks {tasks:?}, fibers {:?}",
                t.elapsed()
            );
        }
    }
}
