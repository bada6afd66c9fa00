//! Exactly-once delivery when MVar and Mailbox events race in choices with channels, on
//! several procs and OS threads.

use pcml::{Chan, MVar, Mailbox, Runtime};

const PER: u32 = 400;

/// Producers offer each value to an MVar or a channel (whichever is taken first); consumers
/// choose between taking from the MVar, the channel and a mailbox. Every value arrives once.
#[test]
fn puts_and_takes_in_choices_deliver_each_value_once() {
    for procs in [1, 4] {
        let mut got = Runtime::builder()
            .procs(procs)
            .build()
            .unwrap()
            .block_on(move || {
                let (m, ch, mb) = (MVar::new(), Chan::new(), Mailbox::new());
                let producers: Vec<_> = (0..3u32)
                    .map(|p| {
                        let (m, ch, mb) = (m.clone(), ch.clone(), mb.clone());
                        pcml::spawn(move || {
                            for i in 0..PER {
                                let v = p * 100_000 + i;
                                if i % 3 == 0 {
                                    mb.send(v);
                                } else {
                                    pcml::select([m.put_evt(v), ch.send_evt(v)]);
                                }
                            }
                        })
                    })
                    .collect();
                let consumers: Vec<_> = (0..3)
                    .map(|_| {
                        let (m, ch, mb) = (m.clone(), ch.clone(), mb.clone());
                        pcml::spawn(move || {
                            (0..PER)
                                .map(|_| pcml::select([m.take_evt(), ch.recv_evt(), mb.recv_evt()]))
                                .collect::<Vec<u32>>()
                        })
                    })
                    .collect();
                producers.into_iter().for_each(|h| h.join().unwrap());
                let got: Vec<u32> = consumers
                    .into_iter()
                    .flat_map(|h| h.join().unwrap())
                    .collect();
                assert_eq!(m.try_take(), None, "procs = {procs}");
                assert!(mb.is_empty(), "procs = {procs}");
                got
            })
            .unwrap();
        got.sort_unstable();
        let want: Vec<u32> = (0..3)
            .flat_map(|p| (0..PER).map(move |i| p * 100_000 + i))
            .collect();
        assert_eq!(got, want, "procs = {procs}");
    }
}

/// OS threads taking from two MVars in a choice while others put: each value once, and a
/// `get` reader in the mix never consumes.
#[test]
fn threads_choosing_between_two_mvars_take_each_value_once() {
    let (a, b) = (MVar::new(), MVar::new());
    let putters: Vec<_> = [a.clone(), b.clone()]
        .into_iter()
        .enumerate()
        .map(|(k, m)| {
            std::thread::spawn(move || (0..PER).for_each(|i| m.put(k as u32 * 100_000 + i)))
        })
        .collect();
    let takers: Vec<_> = (0..4)
        .map(|_| {
            let (a, b) = (a.clone(), b.clone());
            std::thread::spawn(move || {
                (0..PER / 2)
                    .map(|_| pcml::select([a.take_evt(), b.take_evt()]))
                    .collect::<Vec<u32>>()
            })
        })
        .collect();
    putters.into_iter().for_each(|t| t.join().unwrap());
    let mut got: Vec<u32> = takers.into_iter().flat_map(|t| t.join().unwrap()).collect();
    got.sort_unstable();
    let want: Vec<u32> = (0..2)
        .flat_map(|k| (0..PER).map(move |i| k * 100_000 + i))
        .collect();
    assert_eq!(got, want);
}

/// Swappers racing takers-and-putters on threads: every value is handed on exactly once.
#[test]
fn racing_swaps_hand_every_value_on_once() {
    let m = MVar::new_full(0u32);
    let ts: Vec<_> = (1..=4u32)
        .map(|t| {
            let m = m.clone();
            std::thread::spawn(move || {
                (0..PER)
                    .map(|i| {
                        let v = t * 100_000 + i;
                        if i % 2 == 0 {
                            m.swap(v)
                        } else {
                            let old = m.take();
                            m.put(v);
                            old
                        }
                    })
                    .collect::<Vec<u32>>()
            })
        })
        .collect();
    let mut all: Vec<u32> = ts.into_iter().flat_map(|t| t.join().unwrap()).collect();
    all.push(m.take());
    all.sort_unstable();
    let mut want: Vec<u32> = (1..=4)
        .flat_map(|t| (0..PER).map(move |i| t * 100_000 + i))
        .collect();
    want.push(0);
    want.sort_unstable();
    assert_eq!(all, want);
}
