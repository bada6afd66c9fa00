//! Randomized stress: fibers on two procs, OS threads and async tasks choose over many
//! channels, each branch under a `with_nack`. Checks that every message sent is received
//! exactly once (none lost, none duplicated, none taken by a send that lost) and that every
//! nack fired exactly when its branch lost.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};

use pcml::chan::Chan;
use pcml::event::{Event, choose, with_nack};

const CHANS: usize = 6;
const TARGET_SYNCS: usize = 20_000;

/// What one participant saw.
#[derive(Default)]
struct Log {
    sent: Vec<u64>,
    received: Vec<u64>,
    syncs: usize,
}

/// What a branch did when it won.
enum Won {
    Sent(u64),
    Received(u64),
    Stop,
}

struct Shared {
    chans: Vec<Chan<u64>>,
    stop: Chan<()>,
    syncs: AtomicUsize,
}

/// A small deterministic generator per participant.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

type Nacks = Arc<Mutex<Vec<(usize, Event<()>)>>>;

/// Builds one random choice: 1 to 4 branches, sends of fresh ids or receives, each under a
/// nack recorded with its branch index, plus the stop branch (index usize::MAX, no nack).
fn random_choice(
    sh: &Shared,
    rng: &mut Rng,
    me: u64,
    seq: &mut u64,
    nacks: &Nacks,
) -> Event<(usize, Won)> {
    let n = 1 + (rng.next() % 4) as usize;
    let mut branches = Vec::new();
    for b in 0..n {
        let ch = sh.chans[(rng.next() % CHANS as u64) as usize].clone();
        let ev: Event<Won> = if rng.next() % 2 == 0 {
            *seq += 1;
            let id = (me << 32) | *seq;
            ch.send_evt(id).wrap(move |()| Won::Sent(id))
        } else {
            ch.recv_evt().wrap(Won::Received)
        };
        let nk = nacks.clone();
        branches.push(
            with_nack(move |nack| {
                nk.lock().unwrap().push((b, nack));
                ev
            })
            .wrap(move |w| (b, w)),
        );
    }
    branches.push(sh.stop.recv_evt().wrap(|()| (usize::MAX, Won::Stop)));
    choose(branches)
}

/// Checks the nacks of one finished sync against its winner.
fn check_nacks(nacks: &Nacks, winner: usize) {
    for (b, nack) in nacks.lock().unwrap().drain(..) {
        let fired = nack.poll().is_some();
        assert_eq!(
            fired,
            b != winner,
            "nack of branch {b} fired={fired}, winner {winner}"
        );
    }
}

fn record(log: &mut Log, won: Won) -> bool {
    log.syncs += 1;
    match won {
        Won::Sent(id) => log.sent.push(id),
        Won::Received(id) => log.received.push(id),
        Won::Stop => return false,
    }
    true
}

fn participant(sh: &Shared, me: u64) -> Log {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (me + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut seq = 0;
    let mut log = Log::default();
    let nacks: Nacks = Arc::default();
    loop {
        let (winner, won) = random_choice(sh, &mut rng, me, &mut seq, &nacks).sync();
        check_nacks(&nacks, winner);
        sh.syncs.fetch_add(1, SeqCst);
        if !record(&mut log, won) {
            return log;
        }
    }
}

async fn async_participant(sh: Arc<Shared>, me: u64) -> Log {
    let mut rng = Rng(0xD1B5_4A32_D192_ED03 ^ (me + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut seq = 0;
    let mut log = Log::default();
    let nacks: Nacks = Arc::default();
    loop {
        let ev = random_choice(&sh, &mut rng, me, &mut seq, &nacks);
        let (winner, won) = ev.await;
        check_nacks(&nacks, winner);
        sh.syncs.fetch_add(1, SeqCst);
        if !record(&mut log, won) {
            return log;
        }
    }
}

#[test]
fn every_message_exactly_once_and_nacks_exact() {
    let sh = Arc::new(Shared {
        chans: (0..CHANS).map(|_| Chan::new()).collect(),
        stop: Chan::new(),
        syncs: AtomicUsize::new(0),
    });
    const FIBERS: u64 = 8;
    const THREADS: u64 = 2;
    const TASKS: u64 = 2;
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let sh = sh.clone();
            std::thread::spawn(move || participant(&sh, 100 + i))
        })
        .collect();
    let rt = pcml::Runtime::builder()
        .procs(2)
        .detect_deadlock(false)
        .build()
        .unwrap();
    let sh2 = sh.clone();
    let mut logs = rt
        .block_on(move || {
            let sh = sh2;
            let fibers: Vec<_> = (0..FIBERS)
                .map(|i| {
                    let sh = sh.clone();
                    pcml::spawn(move || participant(&sh, i))
                })
                .collect();
            let tasks: Vec<_> = (0..TASKS)
                .map(|i| pcml::spawn_task(async_participant(sh.clone(), 200 + i)))
                .collect();
            // Main pumps: it takes any blocked send and feeds any blocked receive, so random
            // choices that happen to leave everyone blocked (all sending, say) move on.
            let mut pump = Log::default();
            let mut seq = 0u64;
            while sh.syncs.load(SeqCst) < TARGET_SYNCS {
                for ch in &sh.chans {
                    if let Some(id) = ch.try_recv() {
                        pump.received.push(id);
                    }
                    seq += 1;
                    let id = (999 << 32) | seq;
                    if ch.try_send(id).is_ok() {
                        pump.sent.push(id);
                    }
                }
                pcml::yield_now();
            }
            // Everyone offers to receive a stop in every choice: one each ends them all.
            for _ in 0..FIBERS + THREADS + TASKS {
                sh.stop.send(());
            }
            let mut logs: Vec<Log> = fibers.into_iter().map(|h| h.join().unwrap()).collect();
            logs.extend(tasks.into_iter().map(|h| h.join().unwrap()));
            pump.syncs = 1;
            logs.push(pump);
            logs
        })
        .unwrap();
    logs.extend(threads.into_iter().map(|t| t.join().unwrap()));
    let mut sent: Vec<u64> = logs.iter().flat_map(|l| l.sent.iter().copied()).collect();
    let mut received: Vec<u64> = logs
        .iter()
        .flat_map(|l| l.received.iter().copied())
        .collect();
    sent.sort_unstable();
    received.sort_unstable();
    assert!(sent.len() > 1000, "too little traffic: {}", sent.len());
    assert_eq!(
        sent, received,
        "messages lost, duplicated or taken by a losing send"
    );
    for l in &logs {
        assert!(l.syncs > 0);
    }
}
