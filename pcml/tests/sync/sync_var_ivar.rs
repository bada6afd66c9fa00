//! IVar: write once, many readers, in fibers, OS threads and async.

use std::time::Duration;

use pcml::IVar;

#[test]
fn second_put_errors_and_gives_the_value_back() {
    let v = IVar::new();
    assert_eq!(v.try_get(), None);
    assert!(v.put(String::from("first")).is_ok());
    let err = v.put(String::from("second")).unwrap_err();
    assert!(err.to_string().contains("already holds a value"));
    assert_eq!(err.into_inner(), "second");
    assert_eq!(v.get(), "first");
    assert_eq!(v.try_get().as_deref(), Some("first"));
}

#[test]
fn many_fiber_getters_all_get_the_value() {
    let got = pcml::run(|| {
        let v = IVar::new();
        let hs: Vec<_> = (0..50)
            .map(|_| {
                let v = v.clone();
                pcml::spawn(move || v.get())
            })
            .collect();
        pcml::yield_now();
        v.put(7u32).unwrap();
        hs.into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert_eq!(got, vec![7; 50]);
}

#[test]
fn many_thread_getters_all_get_the_value() {
    let v = IVar::new();
    let ts: Vec<_> = (0..8)
        .map(|_| {
            let v = v.clone();
            std::thread::spawn(move || v.get())
        })
        .collect();
    v.put(vec![1, 2, 3]).unwrap();
    for t in ts {
        assert_eq!(t.join().unwrap(), vec![1, 2, 3]);
    }
}

#[test]
fn get_evt_loses_to_a_timeout_then_wins_once_put() {
    let v: IVar<u8> = IVar::new();
    let r = pcml::select([
        v.get_evt().wrap(Some),
        pcml::time::timeout_evt(Duration::from_millis(1)).wrap(|()| None),
    ]);
    assert_eq!(r, None);
    v.put(4).unwrap();
    let r = pcml::select([
        v.get_evt().wrap(Some),
        pcml::time::timeout_evt(Duration::from_secs(60)).wrap(|()| None),
    ]);
    assert_eq!(r, Some(4));
}

#[test]
fn get_evt_awaits_in_pcml_tasks_and_tokio() {
    let r = pcml::run(|| {
        let v = IVar::new();
        let r = v.clone();
        let h = pcml::spawn_task(async move { r.get_evt().await });
        v.put(5).unwrap();
        h.join().unwrap()
    });
    assert_eq!(r, 5);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let r = rt.block_on(async {
        let v = IVar::new();
        let r = v.clone();
        let h = tokio::spawn(async move { r.get_evt().await });
        tokio::task::yield_now().await;
        v.put(6).unwrap();
        h.await.unwrap()
    });
    assert_eq!(r, 6);
}
