//! The reusable [`Barrier`]: see the [module docs](super).

use crate::loom::sync::{Arc, Mutex as StateLock};
use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::event::{BaseEvent, Blocked, Event, OwnWaiter, SyncFuture, always, guard};
use crate::sync_var::waiters::lock;
use crate::sync_var::{IGetEvt, IVar};

/// A barrier for `n` threads: each [`wait`](Barrier::wait) blocks (only its own fiber, OS
/// thread or task) until `n` threads have arrived, then all go on and the barrier is ready
/// for the next round. The `n`th arrival of each round is its leader.
///
/// A cheap handle (a reference count): clone it to share it.
///
/// # Waiting as an event
/// Passing a barrier is an `n`-way meeting, and the event protocol commits a sync with one
/// partner at a time, so a barrier cannot be passed atomically with the choice of a branch.
/// [`wait_evt`](Barrier::wait_evt) therefore arrives when its sync starts and withdraws the
/// arrival if the branch loses before the round completes; if the round completed first, the
/// arrival counted (the others passed) even though the sync took another branch. Async code
/// has the same rule with [`wait_async`](Barrier::wait_async) and a dropped future.
///
/// # Examples
/// ```
/// let b = pcml::Barrier::new(3);
/// let leaders = pcml::run(move || {
///     let hs: Vec<_> = (0..3)
///         .map(|_| {
///             let b = b.clone();
///             pcml::spawn(move || (0..5).filter(|_| b.wait()).count())
///         })
///         .collect();
///     hs.into_iter().map(|h| h.join().unwrap()).sum::<usize>()
/// });
/// assert_eq!(leaders, 5); // one leader per round
/// ```
#[derive(Clone)]
pub struct Barrier {
    inner: Arc<Inner>,
}

struct Inner {
    /// How many threads each round waits for; at least 1. Immutable.
    n: usize,
    state: StateLock<State>,
}

struct State {
    /// Arrivals in the current round; always `< n`.
    arrived: usize,
    /// The current round's number, to tell a withdrawn arrival whether its round is over.
    round: u64,
    /// Filled by the current round's leader; its waiters block on it.
    done: IVar<()>,
}

impl fmt::Debug for Barrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let arrived = lock(&self.inner.state).arrived;
        f.debug_struct("Barrier")
            .field("n", &self.inner.n)
            .field("arrived", &arrived)
            .finish()
    }
}

/// What an arrival found.
enum Arrival {
    /// The round is complete and we led it.
    Leader,
    /// We wait for round `round`, which `done` announces.
    Wait { round: u64, done: IVar<()> },
}

impl Inner {
    fn arrive(&self) -> Arrival {
        let mut st = lock(&self.state);
        st.arrived += 1;
        if st.arrived < self.n {
            return Arrival::Wait {
                round: st.round,
                done: st.done.clone(),
            };
        }
        st.arrived = 0;
        st.round += 1;
        let done = std::mem::take(&mut st.done);
        drop(st);
        // Fresh each round, so this put is the only one.
        let _ = done.put(());
        Arrival::Leader
    }

    /// Takes back an arrival in `round` that stopped waiting; false if the round is over.
    fn withdraw(&self, round: u64) -> bool {
        let mut st = lock(&self.state);
        if st.round != round {
            return false;
        }
        st.arrived -= 1;
        true
    }
}

impl Barrier {
    /// A barrier for `n` threads per round.
    ///
    /// # Panics
    /// If `n` is 0 (no round could ever complete).
    ///
    /// # Examples
    /// ```
    /// let b = pcml::Barrier::new(1);
    /// assert!(b.wait()); // alone: every wait leads its round
    /// ```
    pub fn new(n: usize) -> Self {
        assert!(
            n > 0,
            "pcml: Barrier::new(0): a barrier needs at least one thread per round"
        );
        Self {
            inner: Arc::new(Inner {
                n,
                state: StateLock::new(State {
                    arrived: 0,
                    round: 0,
                    done: IVar::new(),
                }),
            }),
        }
    }

    /// Arrives and blocks until `n` threads have arrived in this round; returns true in the
    /// round's leader (its last arrival), false in the others.
    ///
    /// # Examples
    /// ```
    /// let b = pcml::Barrier::new(2);
    /// let b2 = b.clone();
    /// let t = std::thread::spawn(move || b2.wait());
    /// let me = b.wait();
    /// assert!(me != t.join().unwrap()); // exactly one leader
    /// ```
    pub fn wait(&self) -> bool {
        match self.inner.arrive() {
            Arrival::Leader => true,
            Arrival::Wait { done, .. } => {
                done.get();
                false
            }
        }
    }

    /// [`wait`](Barrier::wait) for async code: arrives on its first poll. Dropping the future
    /// before its round completes withdraws the arrival.
    ///
    /// # Examples
    /// ```
    /// let b = pcml::Barrier::new(2);
    /// let b2 = b.clone();
    /// let leaders = pcml::run(move || {
    ///     let t = pcml::spawn_task(async move { b2.wait_async().await });
    ///     let me = b.wait();
    ///     u8::from(me) + u8::from(t.join().unwrap())
    /// });
    /// assert_eq!(leaders, 1);
    /// ```
    pub fn wait_async(&self) -> BarrierWait {
        BarrierWait {
            barrier: self.inner.clone(),
            state: WaitState::Init,
        }
    }

    /// [`wait`](Barrier::wait) as an event: arrives when the sync starts (as a
    /// [`guard`](crate::event::guard) would) and is enabled when the round completes, with
    /// true in the round's leader. If this branch loses a choice before the round is
    /// complete, the arrival is withdrawn, so the others still wait for a full round; if the
    /// round completed first, the arrival counted (see the type's docs).
    ///
    /// # Examples
    /// ```
    /// use pcml::event::select;
    /// use pcml::time::timeout_evt;
    /// use std::time::Duration;
    ///
    /// let b = pcml::Barrier::new(2);
    /// pcml::run(move || {
    ///     // Nobody else arrives: the timeout wins and the arrival is taken back ...
    ///     let alone = select([
    ///         b.wait_evt().wrap(|_| "passed"),
    ///         timeout_evt(Duration::from_millis(10)).wrap(|()| "timed out"),
    ///     ]);
    ///     assert_eq!(alone, "timed out");
    ///     // ... so a later round still needs two threads.
    ///     let b2 = b.clone();
    ///     let other = pcml::spawn(move || b2.wait());
    ///     let me = b.wait_evt().sync();
    ///     assert!(me != other.join().unwrap()); // one leader
    /// });
    /// ```
    pub fn wait_evt(&self) -> Event<bool> {
        let inner = self.inner.clone();
        guard(move || match inner.arrive() {
            Arrival::Leader => always(true),
            Arrival::Wait { round, done } => Event::from_base(RoundEvt {
                get: done.get_base(),
                barrier: inner,
                round,
            }),
        })
    }

    /// How many threads each round waits for.
    ///
    /// # Examples
    /// ```
    /// assert_eq!(pcml::Barrier::new(4).n(), 4);
    /// ```
    pub fn n(&self) -> usize {
        self.inner.n
    }
}

/// The base event of a non-leading [`Barrier::wait_evt`]: the round's IVar, withdrawing the
/// arrival if the branch loses.
struct RoundEvt {
    barrier: Arc<Inner>,
    round: u64,
    get: IGetEvt<()>,
}

impl BaseEvent for RoundEvt {
    type Output = bool;

    fn poll(&mut self) -> bool {
        self.get.poll()
    }

    fn try_do(&mut self) -> Option<bool> {
        self.get.try_do().map(|()| false)
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<bool> {
        match self.get.block(me) {
            Blocked::Waiting => Blocked::Waiting,
            Blocked::Committed(()) => Blocked::Committed(false),
            Blocked::Synched => Blocked::Synched,
        }
    }

    fn complete(&mut self) -> bool {
        self.get.complete();
        false
    }

    fn cancel(&mut self) {
        self.get.cancel();
        // Take the arrival back unless the round is already over.
        self.barrier.withdraw(self.round);
    }
}

/// The future of [`Barrier::wait_async`]: true in the round's leader.
///
/// # Examples
/// ```
/// let b = pcml::Barrier::new(1);
/// let fut: pcml::lock::BarrierWait = b.wait_async();
/// assert!(pcml::run(move || pcml::spawn_task(fut).join().unwrap()));
/// ```
pub struct BarrierWait {
    barrier: Arc<Inner>,
    state: WaitState,
}

enum WaitState {
    /// Not polled yet: not arrived.
    Init,
    /// Arrived in `round`, waiting for its IVar.
    Waiting { round: u64, fut: SyncFuture<()> },
    /// Completed (or nothing to withdraw).
    Done,
}

impl fmt::Debug for BarrierWait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self.state {
            WaitState::Init => "Init",
            WaitState::Waiting { .. } => "Waiting",
            WaitState::Done => "Done",
        };
        f.debug_struct("BarrierWait").field("state", &s).finish()
    }
}

impl Future for BarrierWait {
    type Output = bool;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<bool> {
        let this = self.get_mut();
        if let WaitState::Init = this.state {
            match this.barrier.arrive() {
                Arrival::Leader => {
                    this.state = WaitState::Done;
                    return Poll::Ready(true);
                }
                Arrival::Wait { round, done } => {
                    this.state = WaitState::Waiting {
                        round,
                        fut: done.get_evt().into_future(),
                    };
                }
            }
        }
        match &mut this.state {
            WaitState::Waiting { fut, .. } => match Pin::new(fut).poll(cx) {
                Poll::Ready(()) => {
                    this.state = WaitState::Done;
                    Poll::Ready(false)
                }
                Poll::Pending => Poll::Pending,
            },
            WaitState::Init | WaitState::Done => {
                panic!("pcml: BarrierWait polled after completion")
            }
        }
    }
}

impl Drop for BarrierWait {
    fn drop(&mut self) {
        if let WaitState::Waiting { round, .. } = self.state {
            // Our round may be over (then we passed it, unobserved) or not (then take our
            // arrival back, so the others still wait for a full round).
            self.barrier.withdraw(round);
        }
    }
}
