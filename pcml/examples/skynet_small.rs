//! Profiling aid: skynet with async tasks, size from argv (default 100,000 leaves), one proc.
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

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    let sum = rt
        .block_on(move || pcml::spawn_task(node(0, n)).join().unwrap())
        .unwrap();
    assert_eq!(sum, n * (n - 1) / 2);
}
