//! Time as channels, as crossbeam-channel's `after` and `tick` and Go's `time.After` and
//! `time.Ticker` offer it: [`After`] (one deadline) and [`Ticker`] (a periodic grid of
//! deadlines), both with a `recv_evt` so they are arms of `select!` like a channel.
//!
//! # Implementation
//! `After` is an `at_time_evt` whose deadline is fixed when the `After` is made, yielding that
//! deadline. A `Ticker`'s state is the next tick of its grid `start + k * period`, under a
//! lock shared by its events; a receive is enabled once the clock reaches it, and taking a
//! tick takes the latest grid point the clock has reached and moves `next` one period past it
//! (missed ticks are skipped, never queued, and the grid never drifts). A blocked receive arms a timer for the tick it waits
//! for; at the deadline the timer's callback, under the ticker's lock, wins the receive's sync
//! and takes the tick for it (or, if another receive of a shared ticker took it, arms again
//! for the next).
//!
//! # Invariants
//! - `TickState::next` only moves forward, to a grid point, and only under its lock: each grid
//!   point is delivered at most once, by the receive that moved `next` past it.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::event::{BaseEvent, Blocked, Event, OwnWaiter, SelfSynch};
use crate::sched::timer::{OnFire, TimerRef};
use crate::sched::worker;

use super::{TimeoutEvt, deadline_after};

/// A deadline as a channel: its receive event is enabled from the deadline on and yields the
/// deadline's `Instant`. Made by [`after`].
///
/// Unlike crossbeam-channel's `after`, whose channel holds one message, an `After` does not
/// empty: every receive from the deadline on returns at once, so the same `After` bounds a
/// whole loop of `select!`s (the crossbeam idiom below).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct After {
    deadline: Instant,
}

/// A deadline `d` from now, as a channel to receive from (crossbeam-channel's `after`, Go's
/// `time.After`): `recv(after(d)) -> t` in a `select!`, or `after(d).recv()`.
///
/// ```
/// use std::time::Duration;
/// use pcml::time::after;
///
/// pcml::run(|| {
///     let (tx, rx) = pcml::chan::channel();
///     pcml::spawn(move || (0..3).for_each(|i| tx.send(i).unwrap()));
///     // One deadline for the whole loop.
///     let deadline = after(Duration::from_secs(60));
///     let mut got = Vec::new();
///     loop {
///         pcml::select! {
///             recv(rx) -> v => match v {
///                 Ok(v) => got.push(v),
///                 Err(_) => break, // the sender is gone
///             },
///             recv(deadline) -> at => panic!("nothing for a minute, until {at:?}"),
///         }
///     }
///     assert_eq!(got, [0, 1, 2]);
/// });
/// ```
pub fn after(d: Duration) -> After {
    After {
        deadline: deadline_after(d),
    }
}

impl After {
    /// The deadline at `at`.
    ///
    /// ```
    /// use std::time::Instant;
    /// let now = Instant::now();
    /// assert_eq!(pcml::time::After::at(now).recv(), now);
    /// ```
    pub fn at(at: Instant) -> Self {
        After { deadline: at }
    }

    /// When it fires.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let a = pcml::time::after(Duration::from_secs(1));
    /// assert!(a.deadline() > Instant::now());
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// An event enabled from the deadline on, yielding it.
    ///
    /// ```
    /// use std::time::Duration;
    /// let a = pcml::time::after(Duration::ZERO);
    /// assert_eq!(a.recv_evt().poll(), Some(a.deadline()));
    /// ```
    pub fn recv_evt(&self) -> Event<Instant> {
        Event::from_base(TimeoutEvt {
            after: None,
            deadline: Some(self.deadline),
            timer: None,
            out: |at| at,
        })
    }

    /// Blocks the calling fiber or OS thread until the deadline; returns it.
    ///
    /// # Panics
    /// Inside a pcml async task: `.await` [`After::recv_evt`] there.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let at = pcml::time::after(Duration::from_millis(2)).recv();
    /// assert!(Instant::now() >= at);
    /// ```
    pub fn recv(&self) -> Instant {
        self.recv_evt().sync()
    }
}

/// A periodic deadline as a channel: a receive waits for the next tick of the grid
/// `start + k * period` and yields that tick's `Instant`. Made by [`tick`] (first tick one
/// period from now, as crossbeam-channel's `tick` and Go's `time.Ticker`) or [`interval`]
/// (first tick now, as tokio's `interval`).
///
/// Ticks do not drift (they stay on the grid, however late each receive is) and do not pile
/// up: a receiver that falls behind gets the latest tick that is due, at once, and the ticks
/// before it are skipped (Go's ticker "drops ticks to make up for slow receivers"; tokio's
/// `MissedTickBehavior::Skip`). Each tick is received once; a ticker shared by several
/// receivers (it is cheap to clone) gives each tick to one of them.
///
/// ```
/// use std::time::{Duration, Instant};
/// use pcml::time::tick;
///
/// pcml::run(|| {
///     let start = Instant::now();
///     let ticker = tick(Duration::from_millis(2));
///     let ticks: Vec<Instant> = (0..3).map(|_| ticker.recv()).collect();
///     // On the grid (a whole number of periods apart, one unless this thread fell behind),
///     // in order, and never early.
///     assert_eq!((ticks[2] - ticks[1]).as_nanos() % 2_000_000, 0);
///     assert!(ticks[0] > start && ticks[1] > ticks[0] && Instant::now() >= ticks[2]);
/// });
/// ```
#[derive(Clone, Debug)]
pub struct Ticker {
    state: Arc<TickState>,
}

#[derive(Debug)]
struct TickState {
    period: Duration,
    /// The next tick to deliver, a point of the grid. Written under the lock by the receive
    /// that takes a tick; read under it by every poll.
    next: Mutex<Instant>,
}

impl TickState {
    /// Takes the due tick, if the clock has reached `next`.
    fn take_due(&self) -> Option<Instant> {
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        (now >= *next).then(|| self.take(&mut next, now))
    }

    /// Takes the latest tick of the grid through `*next` that is due at `now` (`*next <= now`),
    /// skipping the ones before it, and moves `*next` one period past it. Under the lock.
    fn take(&self, next: &mut Instant, now: Instant) -> Instant {
        let period = self.period.as_nanos();
        let behind = (now - *next).as_nanos();
        // A delay that does not fit a Duration is centuries of ticks: clamp.
        let skip = u64::try_from(behind - behind % period).unwrap_or(u64::MAX);
        let due = next.checked_add(Duration::from_nanos(skip)).unwrap_or(now);
        *next = due.checked_add(self.period).unwrap_or(due);
        due
    }

    fn next(&self) -> Instant {
        *self.next.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A ticker whose first tick is one `period` from now (crossbeam-channel's `tick`, Go's
/// `time.NewTicker`).
///
/// # Panics
/// If `period` is zero.
///
/// ```
/// use std::time::Duration;
/// use pcml::time::tick;
///
/// // A tick-driven loop: a heartbeat every 2 ms until the deadline (biased, so a heartbeat
/// // that is due is taken before the stop).
/// pcml::run(|| {
///     let heartbeat = tick(Duration::from_millis(2));
///     let stop = pcml::time::after(Duration::from_millis(20));
///     let mut beats = 0;
///     loop {
///         pcml::select_biased! {
///             recv(heartbeat) -> _ => beats += 1,
///             recv(stop) -> _ => break,
///         }
///     }
///     assert!(beats >= 1);
/// });
/// ```
pub fn tick(period: Duration) -> Ticker {
    Ticker::starting_at(deadline_after(period), period)
}

/// A ticker for async code whose first tick is now (tokio's `interval`, missed ticks
/// skipped): `ticker.tick().await` in a loop runs its body once a period.
///
/// # Panics
/// If `period` is zero.
///
/// ```
/// use std::time::Duration;
///
/// pcml::run(|| {
///     let t = pcml::spawn_task(async {
///         let iv = pcml::time::interval(Duration::from_millis(1));
///         let first = iv.tick().await; // at once
///         let mut n = 0;
///         while n < 3 {
///             iv.tick().await;
///             n += 1;
///         }
///         first.elapsed() >= Duration::from_millis(3)
///     });
///     assert!(t.join().unwrap());
/// });
/// ```
pub fn interval(period: Duration) -> Ticker {
    Ticker::starting_at(Instant::now(), period)
}

impl Ticker {
    /// A ticker whose grid starts at `first` (its first tick).
    ///
    /// # Panics
    /// If `period` is zero.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let start = Instant::now();
    /// let t = pcml::time::Ticker::starting_at(start, Duration::from_secs(1));
    /// assert_eq!(t.recv(), start);
    /// ```
    pub fn starting_at(first: Instant, period: Duration) -> Self {
        assert!(
            !period.is_zero(),
            "pcml::time: a ticker's period must not be zero"
        );
        Ticker {
            state: Arc::new(TickState {
                period,
                next: Mutex::new(first),
            }),
        }
    }

    /// The period.
    ///
    /// ```
    /// use std::time::Duration;
    /// assert_eq!(pcml::time::tick(Duration::from_secs(1)).period(), Duration::from_secs(1));
    /// ```
    pub fn period(&self) -> Duration {
        self.state.period
    }

    /// When the next tick is due.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// assert!(pcml::time::tick(Duration::from_secs(1)).next_tick() > Instant::now());
    /// ```
    pub fn next_tick(&self) -> Instant {
        self.state.next()
    }

    /// An event enabled once the next tick is due, yielding that tick (the grid point, not
    /// the time of the receive); the tick is taken only if this event wins its sync.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let t = pcml::time::Ticker::starting_at(Instant::now(), Duration::from_secs(60));
    /// assert!(t.recv_evt().poll().is_some()); // the first tick, due now
    /// assert!(t.recv_evt().poll().is_none()); // the next is a minute away
    /// ```
    pub fn recv_evt(&self) -> Event<Instant> {
        Event::from_base(TickEvt {
            state: self.state.clone(),
            wait: None,
        })
    }

    /// Blocks the calling fiber or OS thread until the next tick; returns it.
    ///
    /// # Panics
    /// Inside a pcml async task: `.await` [`Ticker::tick`] there.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let t = pcml::time::interval(Duration::from_millis(1));
    /// let (a, b) = (t.recv(), t.recv());
    /// assert!(b > a && (b - a).as_nanos() % 1_000_000 == 0); // whole periods apart
    /// ```
    pub fn recv(&self) -> Instant {
        self.recv_evt().sync()
    }

    /// Waits for the next tick in async code; returns it (tokio's `Interval::tick`).
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = pcml::time::interval(Duration::from_millis(1));
    /// let got = pcml::run(move || {
    ///     pcml::spawn_task(async move { (t.tick().await, t.tick().await) }).join().unwrap()
    /// });
    /// assert!(got.1 > got.0 && (got.1 - got.0).as_nanos() % 1_000_000 == 0);
    /// ```
    pub async fn tick(&self) -> Instant {
        self.recv_evt().await
    }
}

/// The base event of [`Ticker::recv_evt`].
struct TickEvt {
    state: Arc<TickState>,
    /// What the timer armed by `block` hands over, shared with its callback.
    wait: Option<Arc<TickWait>>,
}

/// A blocked tick receive's timer and delivered tick.
struct TickWait {
    /// The tick, delivered by the timer's callback before it publishes; taken by `complete`.
    tick: Mutex<Option<Instant>>,
    /// The armed timer (replaced when the callback re-arms), and whether the receive lost
    /// (then the callback does not re-arm). Written by `block`, the callback and `cancel`.
    timer: Mutex<(Option<TimerRef>, bool)>,
}

impl BaseEvent for TickEvt {
    type Output = Instant;

    fn poll(&mut self) -> bool {
        Instant::now() >= self.state.next()
    }

    fn try_do(&mut self) -> Option<Instant> {
        self.state.take_due()
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<Instant> {
        let mut next = self.state.next.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if now >= *next {
            // Decided under the ticker's lock, so the tick cannot be taken by another receive
            // between the check and the taking.
            return match me.synch_self() {
                SelfSynch::Won => Blocked::Committed(self.state.take(&mut next, now)),
                SelfSynch::AlreadySynched => Blocked::Synched,
            };
        }
        let at = *next;
        drop(next);
        let wait = Arc::new(TickWait {
            tick: Mutex::new(None),
            timer: Mutex::new((None, false)),
        });
        arm_tick(self.state.clone(), me.waiter(), wait.clone(), at);
        self.wait = Some(wait);
        Blocked::Waiting
    }

    fn complete(&mut self) -> Instant {
        let wait = self
            .wait
            .take()
            .expect("pcml: a tick receive completed without waiting");
        let tick = wait.tick.lock().unwrap_or_else(|e| e.into_inner()).take();
        tick.expect("pcml: a tick receive completed without a tick")
    }

    fn cancel(&mut self) {
        if let Some(wait) = self.wait.take() {
            let timer = {
                let mut t = wait.timer.lock().unwrap_or_else(|e| e.into_inner());
                t.1 = true;
                t.0.take()
            };
            if let Some(t) = timer {
                t.cancel();
            }
        }
    }
}

/// Arms a timer at `at` that gives the due tick to the waiter `w`: at the deadline, under the
/// ticker's lock, it wins `w` and takes the tick; if another receive of a shared ticker took
/// that tick first, it arms again for the next one (timer callbacks run outside the timer
/// heaps' locks, so arming from one is allowed).
fn arm_tick(state: Arc<TickState>, w: crate::event::Waiter, wait: Arc<TickWait>, at: Instant) {
    let (s, wt) = (state.clone(), wait.clone());
    let on_fire = OnFire::Call(Box::new(move || {
        let mut next = s.next.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if now < *next {
            // Taken by another receive: wait for the next tick, unless this one lost.
            let at = *next;
            drop(next);
            if !wt.timer.lock().unwrap_or_else(|e| e.into_inner()).1 {
                arm_tick(s, w, wt, at);
            }
            return;
        }
        let Some(commit) = w.synch_spinning() else {
            // Another branch won the sync: the tick stays for others.
            return;
        };
        let due = s.take(&mut next, now);
        drop(next);
        *wt.tick.lock().unwrap_or_else(|e| e.into_inner()) = Some(due);
        commit.publish();
    }));
    let cell = worker::arm_timer(at, on_fire);
    let mut t = wait.timer.lock().unwrap_or_else(|e| e.into_inner());
    if t.1 {
        // Lost meanwhile: this timer is not wanted.
        drop(t);
        cell.cancel();
    } else {
        t.0 = Some(cell);
    }
}
