//! Time: sleeping fibers and tasks on per-proc timers driven by the scheduler.
//!
//! A fiber that sleeps blocks only itself; its proc runs other threads meanwhile, and an idle
//! proc parks exactly until its next timer. Async code awaits [`sleep_async`] (or
//! [`sleep_until_async`], given the instant). Outside a pcml runtime, [`sleep`] is
//! `std::thread::sleep`, and timers of OS threads and other executors are kept by one
//! process-wide timer thread.
//!
//! Timeouts are events: [`timeout_evt`] and [`at_time_evt`] compose in `choose` and `select`
//! like any other event, and [`Event::sync_timeout`] syncs with a time limit.
//!
//! Time as channels, for those who know crossbeam-channel's and Go's: [`after`] is a deadline
//! and [`tick`] a periodic ticker (one that neither drifts nor piles up missed ticks), both
//! received from like a channel (`recv(ticker) -> t` in a [`select!`](macro@crate::select)).
//! Async code has [`interval`] (`ticker.tick().await`) and [`timeout`], a time limit for any
//! future.
//!
//! ```
//! use std::time::Duration;
//! use pcml::time::{after, tick};
//!
//! pcml::run(|| {
//!     let (work, stop) = (tick(Duration::from_millis(1)), after(Duration::from_millis(10)));
//!     let mut rounds = 0;
//!     loop {
//!         pcml::select_biased! {
//!             recv(work) -> _ => rounds += 1,
//!             recv(stop) -> _ => break,
//!         }
//!     }
//!     assert!(rounds >= 1);
//! });
//! ```
//!
//! A timeout that loses its choice cancels its timer, which the proc then drops from its
//! heap: a loop that always receives before its timeout keeps memory bounded.
//!
//! Timers fire no earlier than their deadline; how much later depends on what the proc is
//! running (a thread is never preempted) and on the operating system's wake-up latency.
//!
//! # Invariants
//! - A [`Sleep`] that is dropped before its deadline cancels its timer, which then no longer
//!   counts as a wake source (see `sched::timer`).

mod ticker;
mod timeout;

pub use self::ticker::{After, Ticker, after, interval, tick};
pub use self::timeout::{Elapsed, Timeout, timeout};

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::event::{BaseEvent, Blocked, Event, OwnWaiter, SelfSynch};
use crate::sched::blocker::{self, Blocker};
use crate::sched::timer::{OnFire, TimerRef};
use crate::sched::worker::{self, Current};

/// The furthest a deadline may lie ahead; longer sleeps are clamped to it.
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

fn deadline_after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d.min(FOREVER))
        .unwrap_or_else(|| now + Duration::from_secs(3600))
}

/// Blocks the calling fiber for at least `d`; its proc runs other threads meanwhile.
///
/// Outside a pcml runtime this is `std::thread::sleep`.
///
/// # Panics
/// Inside a pcml async task, which cannot block: `.await` [`sleep_async`] there.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// pcml::run(|| {
///     let start = Instant::now();
///     let sleeper = pcml::spawn(|| pcml::time::sleep(Duration::from_millis(20)));
///     // The proc is free while the sleeper sleeps.
///     assert_eq!(pcml::spawn(|| 1 + 1).join().unwrap(), 2);
///     sleeper.join().unwrap();
///     assert!(start.elapsed() >= Duration::from_millis(20));
/// });
/// ```
pub fn sleep(d: Duration) {
    match worker::current() {
        Some(Current::Fiber { .. }) => {
            if d.is_zero() {
                crate::yield_now();
                return;
            }
            let deadline = deadline_after(d);
            /// Cancels the armed timer if the sleeper unwinds before it fires (a cancelled
            /// fiber), so it stops counting as a source of wake-ups.
            struct Armed(Option<TimerRef>);
            impl Drop for Armed {
                fn drop(&mut self) {
                    if let Some(t) = self.0.take() {
                        t.cancel();
                    }
                }
            }
            let mut armed = Armed(None);
            blocker::block_current("sleep", |b| {
                armed.0 = Some(worker::arm_timer(deadline, OnFire::Wake(b)));
            });
            // Fired: nothing to cancel.
            drop(armed.0.take());
        }
        Some(Current::Task { .. }) => panic!(
            "pcml::time::sleep called in an async task, which cannot block its proc; use `pcml::time::sleep_async(d).await`"
        ),
        _ => std::thread::sleep(d),
    }
}

/// A future that completes at least `d` from now: [`sleep`] for async code. On pcml's procs its
/// timer is kept by the proc that first polls it; elsewhere (another executor) by pcml's
/// process-wide timer thread.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// pcml::run(|| {
///     let t = pcml::spawn_task(async {
///         let start = Instant::now();
///         pcml::time::sleep_async(Duration::from_millis(10)).await;
///         start.elapsed()
///     });
///     assert!(t.join().unwrap() >= Duration::from_millis(10));
/// });
/// ```
pub fn sleep_async(d: Duration) -> Sleep {
    Sleep {
        deadline: deadline_after(d),
        timer: None,
    }
}

/// A future that completes at `deadline` (at once if it has passed): [`sleep_async`] given
/// the instant rather than the length, for code that keeps a deadline across several waits
/// (a request's time limit, hyper's `Timer::sleep_until`). It reads no clock until polled.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// pcml::run(|| {
///     let t = pcml::spawn_task(async {
///         let deadline = Instant::now() + Duration::from_millis(10);
///         pcml::time::sleep_until_async(deadline).await;
///         Instant::now() >= deadline
///     });
///     assert!(t.join().unwrap());
/// });
/// ```
pub fn sleep_until_async(deadline: Instant) -> Sleep {
    Sleep {
        deadline,
        timer: None,
    }
}

/// The future of [`sleep_async`] and [`sleep_until_async`]. Dropping it before its deadline
/// cancels its timer.
///
/// ```
/// use std::time::Duration;
///
/// pcml::run(|| {
///     pcml::spawn_task(async {
///         let nap = pcml::time::sleep_async(Duration::from_millis(1));
///         let deadline = nap.deadline();
///         nap.await;
///         assert!(std::time::Instant::now() >= deadline);
///     })
///     .join()
///     .unwrap();
/// });
/// ```
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    deadline: Instant,
    timer: Option<TimerRef>,
}

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .field("armed", &self.timer.is_some())
            .finish()
    }
}

impl Sleep {
    /// When the sleep ends.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// let before = Instant::now();
    /// let nap = pcml::time::sleep_async(Duration::from_secs(5));
    /// assert!(nap.deadline() >= before + Duration::from_secs(5));
    /// ```
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Moves the deadline to `deadline`, earlier or later, even after the sleep completed: its
    /// timer, if armed, is cancelled, and the next poll arms one for the new deadline (the
    /// waker of that poll is the one woken).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    ///
    /// pcml::run(|| {
    ///     let t = pcml::spawn_task(async {
    ///         let mut nap = Box::pin(pcml::time::sleep_async(Duration::from_secs(3600)));
    ///         let sooner = Instant::now() + Duration::from_millis(5);
    ///         nap.as_mut().reset(sooner);
    ///         nap.await;
    ///         Instant::now() >= sooner
    ///     });
    ///     assert!(t.join().unwrap());
    /// });
    /// ```
    pub fn reset(mut self: Pin<&mut Self>, deadline: Instant) {
        if let Some(cell) = self.timer.take() {
            cell.cancel();
        }
        self.deadline = deadline;
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match &self.timer {
            None => {
                if Instant::now() >= self.deadline {
                    return Poll::Ready(());
                }
                let waker = Blocker::from_waker(cx.waker().clone());
                self.timer = Some(worker::arm_timer(self.deadline, OnFire::Wake(waker)));
                Poll::Pending
            }
            Some(cell) => {
                if cell.has_fired() {
                    return Poll::Ready(());
                }
                cell.set_waker(cx.waker());
                // It may have fired between the check and the new waiter: look again.
                if cell.has_fired() {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            }
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Some(cell) = self.timer.take() {
            cell.cancel();
        }
    }
}

/// An event enabled `d` after the start of each sync on it (CML's `timeOutEvt`): in a choice,
/// it bounds how long the sync waits. A zero `d` is enabled at once: `poll` finds it, and in
/// a choice with other enabled branches it is as likely to be chosen as each of them.
///
/// ```
/// use std::time::Duration;
/// use pcml::{Chan, select};
///
/// pcml::run(|| {
///     let ch = Chan::<u32>::new();
///     let got = select([
///         ch.recv_evt().wrap(Some),
///         pcml::time::timeout_evt(Duration::from_millis(10)).wrap(|()| None),
///     ]);
///     assert_eq!(got, None); // nobody sent
/// });
/// ```
pub fn timeout_evt(d: Duration) -> Event<()> {
    Event::from_base(TimeoutEvt {
        after: Some(d),
        deadline: None,
        timer: None,
        out: drop,
    })
}

/// An event enabled from `at` on (CML's `atTimeEvt`); a past `at` is enabled at once.
///
/// ```
/// use std::time::{Duration, Instant};
///
/// let at = Instant::now() + Duration::from_millis(5);
/// pcml::time::at_time_evt(at).sync(); // works on plain OS threads too
/// assert!(Instant::now() >= at);
/// ```
pub fn at_time_evt(at: Instant) -> Event<()> {
    Event::from_base(TimeoutEvt {
        after: None,
        deadline: Some(at),
        timer: None,
        out: drop,
    })
}

/// The base event of [`timeout_evt`], [`at_time_evt`] and [`After`]: `out` makes its value
/// of the deadline (no wrapper, so no allocation for it).
struct TimeoutEvt<O> {
    out: fn(Instant) -> O,
    /// For `timeout_evt`: the delay, turned into `deadline` when the sync starts.
    after: Option<Duration>,
    deadline: Option<Instant>,
    /// The timer armed by `block`, cancelled if another branch wins.
    timer: Option<TimerRef>,
}

impl<O> TimeoutEvt<O> {
    /// Whether the deadline has passed, reading the clock once: a `timeout_evt`'s deadline is
    /// fixed from that same reading the first time, so a zero delay is due at once (reading
    /// the clock again for the comparison would find the deadline a few nanoseconds ahead).
    /// Returns the deadline too.
    fn due(&mut self) -> (bool, Instant) {
        let now = Instant::now();
        let deadline = match (self.deadline, self.after) {
            (Some(d), _) => d,
            (None, Some(after)) => {
                let d = now
                    .checked_add(after.min(FOREVER))
                    .unwrap_or_else(|| now + Duration::from_secs(3600));
                self.deadline = Some(d);
                d
            }
            (None, None) => unreachable!("a timeout event has a delay or a deadline"),
        };
        (now >= deadline, deadline)
    }
}

impl<O: Send + 'static> BaseEvent for TimeoutEvt<O> {
    type Output = O;

    fn poll(&mut self) -> bool {
        self.due().0
    }

    fn try_do(&mut self) -> Option<O> {
        let (due, deadline) = self.due();
        due.then(|| (self.out)(deadline))
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<O> {
        let (due, deadline) = self.due();
        if due {
            return match me.synch_self() {
                SelfSynch::Won => Blocked::Committed((self.out)(deadline)),
                SelfSynch::AlreadySynched => Blocked::Synched,
            };
        }
        let w = me.waiter();
        let on_fire = OnFire::Call(Box::new(move || {
            if let Some(commit) = w.synch_spinning() {
                // Nothing to deliver but the wake-up.
                commit.publish();
            }
        }));
        self.timer = Some(worker::arm_timer(deadline, on_fire));
        Blocked::Waiting
    }

    fn complete(&mut self) -> O {
        let (_, deadline) = self.due();
        (self.out)(deadline)
    }

    fn cancel(&mut self) {
        if let Some(t) = self.timer.take() {
            t.cancel();
        }
    }

    fn describe(&self) -> String {
        match (self.deadline, self.after) {
            (Some(d), _) => {
                let now = Instant::now();
                if d > now {
                    format!("timer: deadline in {:?}", d - now)
                } else {
                    format!("timer: deadline passed {:?} ago", now - d)
                }
            }
            (None, Some(a)) => format!("timer: {a:?} from the sync"),
            (None, None) => "timer".to_string(),
        }
    }
}

impl<T: Send + 'static> Event<T> {
    /// Syncs on this event for at most `d`: `Some` of its value, or `None` if the time ran out
    /// first (CML's idiom `select [wrap (ev, SOME), wrap (timeOutEvt d, fn () => NONE)]`).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// pcml::run(|| {
    ///     let ch = pcml::Chan::<u8>::new();
    ///     assert_eq!(ch.recv_evt().sync_timeout(Duration::from_millis(5)), None);
    ///     let c = ch.clone();
    ///     pcml::spawn(move || c.send(9));
    ///     assert_eq!(ch.recv_evt().sync_timeout(Duration::from_secs(10)), Some(9));
    /// });
    /// ```
    pub fn sync_timeout(self, d: Duration) -> Option<T> {
        crate::event::select([self.wrap(Some), timeout_evt(d).wrap(|()| None)])
    }
}
