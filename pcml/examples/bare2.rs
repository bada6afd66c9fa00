//! Profiling aid: bare corosensei switches between two coroutines.
fn main() {
    let n = 10_000_000u64;
    let mut a = corosensei::Coroutine::<(), (), ()>::new(|y, ()| {
        loop {
            y.suspend(());
        }
    });
    let mut b = corosensei::Coroutine::<(), (), ()>::new(|y, ()| {
        loop {
            y.suspend(());
        }
    });
    let t = std::time::Instant::now();
    for _ in 0..n {
        a.resume(());
        b.resume(());
    }
    println!(
        "two coroutines: {:.1} ns per resume+suspend",
        t.elapsed().as_nanos() as f64 / (2 * n) as f64
    );
    let mut v: Vec<_> = (0..2)
        .map(|_| {
            Some(corosensei::Coroutine::<(), (), ()>::new(|y, ()| {
                loop {
                    y.suspend(());
                }
            }))
        })
        .collect();
    let t = std::time::Instant::now();
    for i in 0..2 * n {
        let mut c = v[(i % 2) as usize].take().unwrap();
        c.resume(());
        v[(i % 2) as usize] = Some(c);
    }
    println!(
        "moved coroutines: {:.1} ns per resume+suspend",
        t.elapsed().as_nanos() as f64 / (2 * n) as f64
    );
}
