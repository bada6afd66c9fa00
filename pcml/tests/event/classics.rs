//! Classic CML and Go programs rewritten in pcml's API: the prime sieve, power-series streams
//! with a selecting splitter (Go's powser style), the rpcEvt server of Reppy, Russo and Xiao's Figure 4
//! with withNack cancellation, and a swap channel.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use pcml::chan::Chan;
use pcml::event::{Event, always, choose, guard, select, with_nack};

fn rt(procs: usize) -> pcml::Runtime {
    pcml::Runtime::builder().procs(procs).build().unwrap()
}

/// The concurrent prime sieve: a counter, then one filter fiber per prime found.
#[test]
fn prime_sieve() {
    let primes = rt(2)
        .block_on(|| {
            let nums = Chan::new();
            let out = nums.clone();
            pcml::spawn(move || {
                for i in 2u32.. {
                    out.send(i);
                }
            });
            let mut src = nums;
            let mut primes = Vec::new();
            for _ in 0..40 {
                let p = src.recv();
                primes.push(p);
                let next = Chan::new();
                let (input, output) = (src.clone(), next.clone());
                pcml::spawn(move || {
                    loop {
                        let x = input.recv();
                        if x % p != 0 {
                            output.send(x);
                        }
                    }
                });
                src = next;
            }
            primes
        })
        .unwrap();
    let expected: Vec<u32> = (2u32..)
        .filter(|n| (2..*n).all(|d| n % d != 0))
        .take(40)
        .collect();
    assert_eq!(primes, expected);
}

/// A stream of power-series coefficients.
type Series = Chan<i64>;

/// 1/(1-x): all ones.
fn ones() -> Series {
    let c = Chan::new();
    let out = c.clone();
    pcml::spawn(move || {
        loop {
            out.send(1);
        }
    });
    c
}

/// Copies `src` to two streams, giving each value to whichever reader is ready first (a
/// choice of two sends), then to the other.
fn split(src: Series) -> (Series, Series) {
    let (a, b) = (Chan::new(), Chan::new());
    let (oa, ob) = (a.clone(), b.clone());
    pcml::spawn(move || {
        loop {
            let v = src.recv();
            let first_a = select([
                oa.send_evt(v).wrap(|()| true),
                ob.send_evt(v).wrap(|()| false),
            ]);
            if first_a { ob.send(v) } else { oa.send(v) }
        }
    });
    (a, b)
}

/// The product of two series: c_n = sum a_i * b_(n-i).
fn mul(f: Series, g: Series) -> Series {
    let c = Chan::new();
    let out = c.clone();
    pcml::spawn(move || {
        let (mut fa, mut ga) = (Vec::new(), Vec::new());
        loop {
            // Read both next coefficients in either order, as they come.
            let (x, y) = select([
                f.recv_evt().wrap({
                    let g = g.clone();
                    move |x| (x, g.recv())
                }),
                g.recv_evt().wrap({
                    let f = f.clone();
                    move |y| (f.recv(), y)
                }),
            ]);
            fa.push(x);
            ga.push(y);
            let n = fa.len() - 1;
            out.send((0..=n).map(|i| fa[i] * ga[n - i]).sum());
        }
    });
    c
}

#[test]
fn power_series_square() {
    let sq = rt(2)
        .block_on(|| {
            // (1/(1-x))^2 = sum (n+1) x^n
            let (a, b) = split(ones());
            let sq = mul(a, b);
            (0..20).map(|_| sq.recv()).collect::<Vec<i64>>()
        })
        .unwrap();
    assert_eq!(sq, (1..=20).collect::<Vec<i64>>());
}

#[test]
fn power_series_fourth_power() {
    let p4 = rt(2)
        .block_on(|| {
            let (a, b) = split(ones());
            let (c, d) = split(ones());
            let sq = mul(a, c);
            let p4 = mul(sq, mul(b, d));
            (0..15).map(|_| p4.recv()).collect::<Vec<i64>>()
        })
        .unwrap();
    // (1/(1-x))^2 * (1/(1-x))^2 = (1/(1-x))^4: C(n+3, 3).
    let expected: Vec<i64> = (0..15i64)
        .map(|n| (n + 1) * (n + 2) * (n + 3) / 6)
        .collect();
    assert_eq!(p4, expected);
}

/// A request to the rpc server: the argument, where to reply, and the client's nack.
type Request = (u64, Chan<u64>, Event<()>);

/// Figure 4's `rpcEvt`: sending the request is deferred to a helper thread when the event is
/// synchronized, and the nack tells the server the client chose something else.
fn rpc_evt(server: &Chan<Request>, arg: u64) -> Event<u64> {
    let server = server.clone();
    with_nack(move |nack| {
        let reply = Chan::new();
        let r2 = reply.clone();
        pcml::spawn(move || server.send((arg, r2, nack)));
        reply.recv_evt()
    })
}

#[test]
fn rpc_server_with_nack_cancellation() {
    let (served, cancelled, answers) = rt(2)
        .block_on(|| {
            let server: Chan<Request> = Chan::new();
            let served = Arc::new(AtomicUsize::new(0));
            let cancelled = Arc::new(AtomicUsize::new(0));
            let (s, c, srv) = (served.clone(), cancelled.clone(), server.clone());
            pcml::spawn(move || {
                loop {
                    let (arg, reply, nack) = srv.recv();
                    // Reply, unless the client has given up on us.
                    let s = s.clone();
                    let c = c.clone();
                    select([
                        reply.send_evt(arg * arg).wrap(move |()| {
                            s.fetch_add(1, SeqCst);
                        }),
                        nack.wrap(move |()| {
                            c.fetch_add(1, SeqCst);
                        }),
                    ]);
                }
            });
            let mut answers = Vec::new();
            for i in 0..100u64 {
                if i % 2 == 0 {
                    answers.push(rpc_evt(&server, i).sync());
                } else {
                    // `always` is enabled at once, so the call loses and is cancelled.
                    let v = select([rpc_evt(&server, i), always(u64::MAX)]);
                    assert_eq!(v, u64::MAX);
                }
            }
            // Let the server see every request.
            while served.load(SeqCst) + cancelled.load(SeqCst) < 100 {
                pcml::yield_now();
            }
            (served.load(SeqCst), cancelled.load(SeqCst), answers)
        })
        .unwrap();
    assert_eq!(served, 50);
    assert_eq!(cancelled, 50);
    assert_eq!(
        answers,
        (0..100u64).step_by(2).map(|i| i * i).collect::<Vec<_>>()
    );
}

/// A swap channel: two threads meet and exchange values.
#[derive(Clone)]
struct SwapChan<T>(Chan<(T, Chan<T>)>);

impl<T: Send + 'static> SwapChan<T> {
    fn new() -> Self {
        SwapChan(Chan::new())
    }

    /// Offer `mine` for whatever a partner offers: either we receive a partner's offer and
    /// answer on its reply channel, or our offer is received and we wait for the answer.
    fn swap_evt(&self, mine: T) -> Event<T>
    where
        T: Clone,
    {
        let ch = self.0.clone();
        guard(move || {
            let reply = Chan::new();
            let r2 = reply.clone();
            let m2 = mine.clone();
            choose([
                ch.recv_evt().wrap(move |(theirs, back): (T, Chan<T>)| {
                    back.send(m2);
                    theirs
                }),
                ch.send_evt((mine, r2)).wrap(move |()| reply.recv()),
            ])
        })
    }
}

#[test]
fn swap_channel_pairs_threads() {
    let got = rt(2)
        .block_on(|| {
            let sc = SwapChan::new();
            let hs: Vec<_> = (0..40u32)
                .map(|i| {
                    let sc = sc.clone();
                    pcml::spawn(move || (i, sc.swap_evt(i).sync()))
                })
                .collect();
            hs.into_iter()
                .map(|h| h.join().unwrap())
                .collect::<Vec<_>>()
        })
        .unwrap();
    let mut partner = [u32::MAX; 40];
    for (i, j) in got {
        assert_ne!(i, j, "swapped with itself");
        partner[i as usize] = j;
    }
    for i in 0..40 {
        assert_eq!(partner[partner[i] as usize], i as u32, "unpaired swap");
    }
}
