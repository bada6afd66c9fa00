//! Profiling aid: skynet (1,000,000 leaves, 10-ary) with async tasks and with fibers.
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
    for procs in [1, 2] {
        for _ in 0..3 {
            let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
            let t = std::time::Instant::now();
            let sum = rt
                .block_on(|| pcml::spawn_task(node(0, 1_000_000)).join().unwrap())
                .unwrap();
            let tasks = t.elapsed();
            assert_eq!(sum, 499_999_500_000);
            let rt = pcml::Runtime::builder().procs(procs).build().unwrap();
            let t = std::time::Instant::now();
            let sum = rt.block_on(|| fiber_node(0, 1_000_000)).unwrap();
            assert_eq!(sum, 499_999_500_000);
            println!(
                "procs {procs}: skynet 1M tasks {:?}, fibers {:?}",
                tasks,
                t.elapsed()
            );
        }
    }
}
