//! The order in which one proc runs async tasks woken by the work they spawned: a parent runs
//! after the children it spawned before it waited (so it takes their replies in one poll), and
//! a parent kept waiting by ever more new work still runs.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use pcml::{Mailbox, Runtime};

/// Counts the polls of the future it wraps.
struct Counted<F> {
    inner: Pin<Box<F>>,
    polls: Arc<AtomicUsize>,
}

impl<F: Future> Future for Counted<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        self.polls.fetch_add(1, Ordering::Relaxed);
        self.inner.as_mut().poll(cx)
    }
}

fn one_proc() -> Runtime {
    Runtime::builder().procs(1).build().unwrap()
}

#[test]
fn a_parent_takes_the_replies_of_the_children_it_spawned_in_one_poll() {
    for kids in [1u64, 3, 10] {
        let polls = Arc::new(AtomicUsize::new(0));
        let counted = polls.clone();
        let sum = one_proc()
            .block_on(move || {
                let parent = async move {
                    let replies = Mailbox::new();
                    for i in 0..kids {
                        let to = replies.clone();
                        pcml::spawn_task(async move { to.send(i) });
                    }
                    let mut sum = 0;
                    for _ in 0..kids {
                        sum += replies.recv_evt().await;
                    }
                    sum
                };
                pcml::spawn_task(Counted {
                    inner: Box::pin(parent),
                    polls: counted,
                })
                .join()
                .unwrap()
            })
            .unwrap();
        assert_eq!(sum, kids * (kids - 1) / 2);
        // The first poll spawns and waits; the children all run; one more poll takes it all.
        assert_eq!(polls.load(Ordering::Relaxed), 2, "{kids} children");
    }
}

/// Spawns the next link of a chain that leaves one more idle task in the deque at each link,
/// so the deque never shrinks back, until `stop` is set or `left` links were made.
fn chain(stop: Arc<AtomicBool>, made: Arc<AtomicUsize>, left: usize) {
    pcml::spawn_task(async move {
        if stop.load(Ordering::Relaxed) || left == 0 {
            return;
        }
        made.fetch_add(1, Ordering::Relaxed);
        pcml::spawn_task(async {});
        chain(stop, made, left - 1);
    });
}

#[test]
fn a_woken_parent_runs_while_its_children_keep_spawning() {
    const LIMIT: usize = 100_000;
    let made = Arc::new(AtomicUsize::new(0));
    let seen = made.clone();
    let links_when_parent_ran = one_proc()
        .block_on(move || {
            pcml::spawn_task(async move {
                let stop = Arc::new(AtomicBool::new(false));
                let reply = Mailbox::new();
                let (to, s, m) = (reply.clone(), stop.clone(), made.clone());
                pcml::spawn_task(async move {
                    // New work first, then the reply that wakes the parent.
                    chain(s, m, LIMIT);
                    to.send(());
                });
                reply.recv_evt().await;
                stop.store(true, Ordering::Relaxed);
                made.load(Ordering::Relaxed)
            })
            .join()
            .unwrap()
        })
        .unwrap();
    // The parent ran long before the chain could end by itself, and the chain then stopped.
    assert!(
        links_when_parent_ran < LIMIT / 10,
        "{links_when_parent_ran} links"
    );
    assert!(seen.load(Ordering::Relaxed) <= links_when_parent_ran + 2);
}

/// A pair of tasks that talk over channels until `stop` is set (or `LIMIT` round trips);
/// the pinger calls `each` with the round's number before it, and returns the round trips
/// made.
fn talking_pair(
    stop: Arc<AtomicBool>,
    each: impl Fn(u64) + Send + 'static,
) -> pcml::JoinHandle<u64> {
    const LIMIT: u64 = 1_000_000;
    let (ping, pong) = (
        pcml::chan::Chan::<u64>::new(),
        pcml::chan::Chan::<u64>::new(),
    );
    let (ping2, pong2) = (ping.clone(), pong.clone());
    pcml::spawn_task(async move {
        loop {
            let v = ping2.recv_evt().await;
            if v == u64::MAX {
                break;
            }
            pong2.send_evt(v + 1).await;
        }
    });
    pcml::spawn_task(async move {
        let mut rounds = 0;
        while !stop.load(Ordering::Relaxed) && rounds < LIMIT {
            each(rounds);
            ping.send_evt(rounds).await;
            assert_eq!(pong.recv_evt().await, rounds + 1);
            rounds += 1;
        }
        ping.send_evt(u64::MAX).await;
        rounds
    })
}

#[test]
fn a_task_queued_below_a_talking_pair_runs() {
    // The pair keeps one of its tasks on top of the queue at every turn; the task spawned
    // before them, below, still runs (and stops them) long before they would end by
    // themselves: on one proc, and on two (where another proc may also take it).
    for procs in [1, 2] {
        let rounds = Runtime::builder()
            .procs(procs)
            .build()
            .unwrap()
            .block_on(|| {
                pcml::spawn_task(async {
                    let stop = Arc::new(AtomicBool::new(false));
                    let s = stop.clone();
                    pcml::spawn_task(async move { s.store(true, Ordering::Relaxed) });
                    talking_pair(stop, |_| {}).await.unwrap()
                })
                .join()
                .unwrap()
            })
            .unwrap();
        assert!(rounds < 100_000, "{procs} procs: {rounds} round trips");
    }
}

/// A node of a tree of tasks, `branch` children a level, each awaiting its children's join
/// handles in order; every node counts its polls in `polls`. Returns the node's leaves.
fn tree_node(
    depth: u32,
    branch: u64,
    polls: Arc<AtomicUsize>,
) -> Pin<Box<dyn Future<Output = u64> + Send>> {
    let counted = polls.clone();
    Box::pin(Counted {
        inner: Box::pin(async move {
            if depth == 0 {
                return 1;
            }
            let kids: Vec<_> = (0..branch)
                .map(|_| pcml::spawn_task(tree_node(depth - 1, branch, polls.clone())))
                .collect();
            let mut leaves = 0;
            for kid in kids {
                leaves += kid.await.unwrap();
            }
            leaves
        }),
        polls: counted,
    })
}

#[test]
fn a_parent_that_awaits_its_children_in_order_runs_them_all_in_its_poll() {
    // The first child awaited is the oldest of them, below its siblings in the queue: the
    // parent runs the siblings spawned after it first, then it, so no node waits for a
    // wake-up and every one is polled once (40 tasks: below the budget of inline runs).
    let polls = Arc::new(AtomicUsize::new(0));
    let counted = polls.clone();
    let leaves = one_proc()
        .block_on(move || pcml::spawn_task(tree_node(3, 3, counted)).join().unwrap())
        .unwrap();
    assert_eq!(leaves, 27);
    assert_eq!(polls.load(Ordering::Relaxed), 1 + 3 + 9 + 27);
}

#[test]
fn a_sibling_run_in_its_parents_poll_may_wait_for_another() {
    // The parent awaits the first child, which the last one waits for: the last one runs in
    // the parent's poll first and waits, the first one then wakes it, and the parent gets
    // every result, on one proc and on two.
    for procs in [1, 2] {
        let sum = Runtime::builder()
            .procs(procs)
            .build()
            .unwrap()
            .block_on(|| {
                pcml::spawn_task(async {
                    let ch = pcml::chan::Chan::<u64>::new();
                    let (tx, rx) = (ch.clone(), ch);
                    let first = pcml::spawn_task(async move {
                        tx.send_evt(5).await;
                        1
                    });
                    let middle = pcml::spawn_task(async { 10 });
                    let last = pcml::spawn_task(async move { rx.recv_evt().await * 100 });
                    first.await.unwrap() + middle.await.unwrap() + last.await.unwrap()
                })
                .join()
                .unwrap()
            })
            .unwrap();
        assert_eq!(sum, 511, "{procs} procs");
    }
}

#[test]
fn a_fiber_spawned_by_a_talking_task_runs_before_the_pair_goes_on() {
    // On one proc the pair keeps one of its tasks on top of the proc's own stack at every
    // turn, and the turn takes that task straight off the stack only when nothing comes
    // before it: a fiber one of them spawns (held for the next turn, or placed on the proc
    // with `spawn_on`) runs first, and stops the pair within a few round trips.
    for placed in [false, true] {
        let rounds = one_proc()
            .block_on(move || {
                let stop = Arc::new(AtomicBool::new(false));
                let s = stop.clone();
                talking_pair(stop, move |round| {
                    if round == 10 {
                        let s = s.clone();
                        let set = move || s.store(true, Ordering::Relaxed);
                        drop(if placed {
                            pcml::spawn_on(0, set)
                        } else {
                            pcml::spawn(set)
                        });
                    }
                })
                .join()
                .unwrap()
            })
            .unwrap();
        assert!(
            (11..1_000).contains(&rounds),
            "placed {placed}: {rounds} round trips"
        );
    }
}
