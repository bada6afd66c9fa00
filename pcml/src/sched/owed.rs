//! Turns owed across procs: what keeps a choice between a partner on its own proc and one on
//! another proc fair (see the `sched` docs, "Fair choice across procs").
//!
//! A proc's worker keeps one [`Owed`]: how many fibers of each other proc its choices woke and
//! that have not run since (each such wake-up is an `InboxMsg::WakeOwed`, answered by a
//! `Paid` once the fiber has run and suspended again), and the fibers of its own that choices
//! woke meanwhile, which wait `behind` until every debt is paid. So a local partner's next
//! offer comes no sooner than a remote partner's.
//!
//! The wait is bounded. Every `OWED_CHECK` the waiting proc reads the CPU time of the procs
//! that owe it: one that ran `OWED_BUSY` or more since the last look without paying is busy
//! with something else (a long computation), and the debts are given up; one that did not run
//! has no core (a busy machine), and waiting for it is what keeps the choice fair, since this
//! proc parks meanwhile. After `OWED_CAP` the debts are given up whatever happened. Given-up
//! debts are forgotten: their late `Paid` messages carry an older epoch and are ignored.
//!
//! # Invariants
//! - `total` (mirrored in the `OWED` thread-local of the thread that has entered the proc,
//!   which a choice reads) is the sum of `by_proc`.
//! - `behind` is not empty only while `total` is not zero, or until the worker releases it
//!   (`take_behind`); `since` is `Some` exactly when `behind` is not empty.
//! - Everything here is touched only by the owning proc's worker thread.

use std::time::{Duration, Instant};

/// How often a proc with fibers behind looks at the CPU time of the procs that owe it.
const OWED_CHECK: Duration = Duration::from_millis(2);
/// CPU time that an owing proc may spend between two looks without paying before its debts
/// are given up: it is running something else.
const OWED_BUSY: Duration = Duration::from_millis(1);
/// The longest fibers wait behind, whatever the owing procs do.
const OWED_CAP: Duration = Duration::from_millis(500);

/// One proc's debts and the fibers waiting for them.
pub(crate) struct Owed {
    /// Per proc: its fibers that choices here woke and that have not run since.
    by_proc: Vec<u32>,
    total: u32,
    /// The epoch of the current debts (`WakeOwed` and `Paid` carry it).
    epoch: u32,
    /// Fibers of this proc (slots) woken by choices while debts were owed, in wake-up order.
    behind: Vec<usize>,
    /// When the first fiber behind began to wait, and when to look at the owing procs next.
    since: Option<(Instant, Instant)>,
    /// The CPU time of each owing proc at the last look.
    cpu_seen: Vec<Option<Duration>>,
}

/// What [`Owed::check`] decided.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Check {
    /// Nothing is due yet, or the owing procs had no core: keep waiting.
    Wait,
    /// The debts were given up: release the fibers behind.
    GaveUp,
}

impl Owed {
    pub(crate) fn new(procs: usize) -> Self {
        Self {
            by_proc: vec![0; procs],
            total: 0,
            epoch: 0,
            behind: Vec::new(),
            since: None,
            cpu_seen: vec![None; procs],
        }
    }

    /// The debts owed now (all procs).
    pub(crate) fn total(&self) -> u32 {
        self.total
    }

    /// A choice here woke a fiber of `proc`: returns the epoch its `WakeOwed` carries.
    pub(crate) fn owe(&mut self, proc: usize) -> u32 {
        self.by_proc[proc] += 1;
        self.total += 1;
        self.epoch
    }

    /// A fiber of `proc` woken by a `WakeOwed` of `epoch` has run. Returns whether no debt is
    /// left (the caller then releases the fibers behind).
    pub(crate) fn paid(&mut self, proc: usize, epoch: u32) -> bool {
        if epoch != self.epoch || self.by_proc[proc] == 0 {
            // A debt already given up.
            return false;
        }
        self.by_proc[proc] -= 1;
        self.cpu_seen[proc] = None;
        self.total -= 1;
        self.total == 0
    }

    /// Fibers woken by a choice while debts are owed: they wait behind. Returns whether they
    /// are the first to wait (the caller counts a wake source).
    pub(crate) fn hold(&mut self, slots: impl Iterator<Item = usize>, now: Instant) -> bool {
        let first = self.behind.is_empty();
        self.behind.extend(slots);
        if first && !self.behind.is_empty() {
            self.since = Some((now, now + OWED_CHECK));
            return true;
        }
        false
    }

    /// Whether fibers wait behind.
    pub(crate) fn has_behind(&self) -> bool {
        !self.behind.is_empty()
    }

    /// When the fibers behind are next looked at, if any wait.
    pub(crate) fn next_check(&self) -> Option<Instant> {
        self.since.map(|(_, at)| at)
    }

    /// Takes the fibers behind, in wake-up order (they run now).
    pub(crate) fn take_behind(&mut self) -> std::vec::Drain<'_, usize> {
        self.since = None;
        self.behind.drain(..)
    }

    /// At `now`, with fibers behind: gives the debts up if they waited `OWED_CAP`, or if a
    /// proc that owes ran `OWED_BUSY` since the last look (`cpu` reads a proc's CPU time;
    /// `None` counts as busy).
    pub(crate) fn check(
        &mut self,
        now: Instant,
        mut cpu: impl FnMut(usize) -> Option<Duration>,
    ) -> Check {
        let Some((since, at)) = self.since else {
            return Check::Wait;
        };
        if now < at {
            return Check::Wait;
        }
        let mut give_up = now.duration_since(since) >= OWED_CAP;
        for p in 0..self.by_proc.len() {
            if give_up || self.by_proc[p] == 0 {
                continue;
            }
            match (cpu(p), self.cpu_seen[p]) {
                (Some(t), Some(seen)) if t.saturating_sub(seen) < OWED_BUSY => {
                    self.cpu_seen[p] = Some(t)
                }
                (Some(t), None) => self.cpu_seen[p] = Some(t),
                _ => give_up = true,
            }
        }
        if !give_up {
            self.since = Some((since, now + OWED_CHECK));
            return Check::Wait;
        }
        self.by_proc.iter_mut().for_each(|n| *n = 0);
        self.cpu_seen.iter_mut().for_each(|c| *c = None);
        self.total = 0;
        self.epoch = self.epoch.wrapping_add(1);
        Check::GaveUp
    }
}

/// The CPU clock of the calling thread, for [`cpu_time`] from other threads.
pub(crate) fn this_thread_clock() -> Option<libc::clockid_t> {
    let mut id: libc::clockid_t = 0;
    // SAFETY: `pthread_self` is always valid for the calling thread; `id` is a valid out
    // pointer.
    let r = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
    (r == 0).then_some(id)
}

/// The CPU time consumed so far by the thread whose clock is `clock`.
pub(crate) fn cpu_time(clock: libc::clockid_t) -> Option<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out pointer; a stale clock id makes the call fail, not UB.
    let r = unsafe { libc::clock_gettime(clock, &mut ts) };
    (r == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
}

#[cfg(all(test, not(pcml_loom)))]
mod tests {
    use super::*;

    #[test]
    fn fibers_wait_until_every_debt_is_paid() {
        let mut o = Owed::new(3);
        let now = Instant::now();
        let e1 = o.owe(1);
        let e2 = o.owe(2);
        assert!(o.hold([7, 8].into_iter(), now));
        assert!(!o.hold([9].into_iter(), now));
        assert!(!o.paid(1, e1));
        assert!(!o.paid(1, e1), "a repeated payment counts once");
        assert!(o.paid(2, e2));
        assert_eq!(o.take_behind().collect::<Vec<_>>(), [7, 8, 9]);
        assert!(!o.has_behind() && o.next_check().is_none());
    }

    #[test]
    fn a_proc_without_a_core_is_waited_for_and_a_busy_one_is_not() {
        let mut o = Owed::new(2);
        let t0 = Instant::now();
        let e = o.owe(1);
        o.hold([3].into_iter(), t0);
        assert_eq!(o.check(t0, |_| unreachable!()), Check::Wait, "not due");
        let mut at = t0 + OWED_CHECK;
        // The owing proc gets no CPU time: keep waiting (first look sets the baseline).
        for _ in 0..5 {
            assert_eq!(
                o.check(at, |_| Some(Duration::from_millis(10))),
                Check::Wait
            );
            at += OWED_CHECK;
        }
        // It ran 1 ms without paying: busy elsewhere.
        assert_eq!(
            o.check(at, |_| Some(Duration::from_millis(11))),
            Check::GaveUp
        );
        assert_eq!(o.total(), 0);
        assert!(
            !o.paid(1, e),
            "a late payment of a given-up debt is ignored"
        );
        assert_eq!(o.take_behind().count(), 1);
    }

    #[test]
    fn the_wait_is_capped() {
        let mut o = Owed::new(2);
        let t0 = Instant::now();
        o.owe(1);
        o.hold([3].into_iter(), t0);
        assert_eq!(
            o.check(t0 + OWED_CHECK, |_| Some(Duration::ZERO)),
            Check::Wait
        );
        assert_eq!(
            o.check(t0 + OWED_CAP, |_| Some(Duration::ZERO)),
            Check::GaveUp
        );
    }
}
