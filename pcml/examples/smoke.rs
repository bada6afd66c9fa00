fn main() {
    let t = std::time::Instant::now();
    let v = pcml::run(|| {
        let hs: Vec<_> = (0..100_000u64).map(|i| pcml::spawn(move || i)).collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum::<u64>()
    });
    println!("sum {v} in {:?}", t.elapsed());
    let v = pcml::run(|| {
        let h = pcml::spawn(|| {
            pcml::yield_now();
            5
        });
        let t = pcml::spawn_task(async { 7 });
        h.join().unwrap() + t.join().unwrap()
    });
    println!("{v}");
}
