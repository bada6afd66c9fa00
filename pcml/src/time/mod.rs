//! Time: sleeping fibers and tasks on per-proc timers driven by the scheduler.
//!
//! A fiber that sleeps blocks only itself; its proc runs other threads meanwhile, and an idle
//! proc parks exactly until its next timer. Async code awaits [`sleep_async`]. Outside a pcml
//! runtime, [`sleep`] is `std::thread::sleep`.
//!
//! Timers fire no earlier than their deadline; how much later depends on what the proc is
//! running (a thread is never preempted) and on the operating system's wake-up latency.
//!
//! # Invariants
//! - A [`Sleep`] that is dropped before its deadline cancels its timer, which then no longer
//!   counts as a wake source (see `sched::timer`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::sched::blocker::{self, Blocker};
use crate::sched::timer::TimerCell;
use crate::sched::worker::{self, Current, Shared};

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
            blocker::block_current("sleep", |b| {
                let _ = worker::arm_timer(deadline, Some(b));
            });
        }
        Some(Current::Task { .. }) => panic!(
            "pcml::time::sleep called in an async task, which cannot block its proc; use `pcml::time::sleep_async(d).await`"
        ),
        _ => std::thread::sleep(d),
    }
}

/// A future that completes at least `d` from now: [`sleep`] for async code on pcml's procs.
///
/// # Panics
/// When first polled off pcml's procs (for instance in another executor), since its timer is
/// kept by the proc that polls it.
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

/// The future of [`sleep_async`]. Dropping it before its deadline cancels its timer.
#[must_use = "futures do nothing unless awaited"]
pub struct Sleep {
    deadline: Instant,
    timer: Option<(Arc<TimerCell>, Arc<Shared>)>,
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
    pub fn deadline(&self) -> Instant {
        self.deadline
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
                let armed =
                    worker::arm_timer(self.deadline, Some(Blocker::from_waker(cx.waker().clone())));
                match armed {
                    Some(t) => self.timer = Some(t),
                    None => panic!(
                        "pcml::time::sleep_async polled off pcml's procs; await it in a pcml task"
                    ),
                }
                Poll::Pending
            }
            Some((cell, _)) => {
                if cell.has_fired() {
                    return Poll::Ready(());
                }
                cell.set_waiter(Blocker::from_waker(cx.waker().clone()));
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
        if let Some((cell, shared)) = self.timer.take() {
            cell.cancel(&shared);
        }
    }
}
