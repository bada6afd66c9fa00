//! Runtime metrics: what each proc has done (resumes, polls, steals, parks, wake-ups across
//! procs) and how many fibers, tasks and actors are alive, as tokio's `RuntimeMetrics`.
//! How to use them: [`RuntimeMetrics`].
//!
//! # Implementation
//! Each proc keeps its counters in a cache line of its own in its shared entry, written only
//! by the proc's own worker thread with a Relaxed load and store (no read-modify-write), so
//! a counted event costs an add to a line the proc owns; a snapshot reads them with Relaxed
//! loads, so counters read together may be a few events apart. Live counts are sums of
//! per-proc signed counters (a thread may start on one proc and end on another) and of one
//! shared counter for starts and ends off the procs; while the runtime runs they are
//! approximate (a sum of moving parts), exact when it is idle. Unstarted fibers count as live
//! fibers only once a proc starts them; a one-proc runtime's queue is private to its proc, so
//! its queue length reads 0.
//!
//! # Invariants
//! - Only proc `i`'s worker thread writes `procs[i].metrics` (`ProcCounters::bump`).

use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::sched::worker::{Shared, context};

/// One proc's counters; see [`RuntimeMetrics`]. Written by the proc only.
#[derive(Default)]
pub(crate) struct ProcCounters {
    pub(crate) resumes: AtomicU64,
    pub(crate) polls: AtomicU64,
    pub(crate) steals: AtomicU64,
    pub(crate) injector_pulls: AtomicU64,
    pub(crate) parks: AtomicU64,
    pub(crate) sent_wakes: AtomicU64,
    pub(crate) inbox_wakes: AtomicU64,
    pub(crate) blocks_dealt: AtomicU64,
    pub(crate) blocks_kept_waited: AtomicU64,
    pub(crate) blocks_kept_no_core: AtomicU64,
    pub(crate) bursts_dealt: AtomicU64,
    /// Started fibers living here (they never move).
    pub(crate) fibers: AtomicI64,
    /// Tasks started minus tasks ended on this proc.
    pub(crate) tasks: AtomicI64,
    /// Actors started minus actors ended on this proc.
    pub(crate) actors: AtomicI64,
}

/// Adds 1 to a counter that only the calling proc writes.
#[inline(always)]
pub(crate) fn bump(c: &AtomicU64) {
    // Relaxed load and store: only this proc's thread writes the counter (invariants);
    // readers want a recent value, not an ordering.
    c.store(c.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
}

/// Adds `delta` to a signed counter that only the calling proc writes.
#[inline(always)]
pub(crate) fn add(c: &AtomicI64, delta: i64) {
    // Relaxed load and store: as in `bump`.
    c.store(
        c.load(Ordering::Relaxed).wrapping_add(delta),
        Ordering::Relaxed,
    );
}

/// Counts live tasks or actors (`pick` chooses which) by `delta` on the calling proc, or in
/// `shared`'s off-proc counter.
#[inline]
fn count_live(
    delta: i64,
    pick: fn(&ProcCounters) -> &AtomicI64,
    external: fn(&Shared) -> &AtomicI64,
) {
    if let Some(ctx) = context() {
        add(pick(&ctx.me().metrics), delta);
    } else if let Some(shared) = crate::sched::spawn::current_runtime() {
        // Relaxed: a counter read only for metrics.
        external(&shared).fetch_add(delta, Ordering::Relaxed);
    }
}

/// A task was spawned (+1) or ended (-1).
#[inline]
pub(crate) fn count_task(delta: i64) {
    count_live(delta, |c| &c.tasks, |s| &s.tasks_external);
}

/// A task of `shared` was spawned (from any thread).
#[inline]
pub(crate) fn task_spawned(shared: &Shared) {
    match context() {
        Some(ctx) if std::ptr::eq(&*ctx.shared, shared) => add(&ctx.me().metrics.tasks, 1),
        // Relaxed: a counter read only for metrics.
        _ => {
            shared.tasks_external.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// An actor was spawned (+1) or ended (-1).
#[inline]
pub(crate) fn count_actor(delta: i64) {
    count_live(delta, |c| &c.actors, |s| &s.actors_external);
}

/// What one proc has done; see [`RuntimeMetrics`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProcMetrics {
    /// Fiber resumes (a fiber's start counts as one).
    pub resumes: u64,
    /// Async task polls.
    pub polls: u64,
    /// Steals from other procs that found work (a steal takes up to half a queue).
    pub steals: u64,
    /// Batches taken from the runtime's injector (work from outside the procs).
    pub injector_pulls: u64,
    /// Times the proc parked (slept) for want of work.
    pub parks: u64,
    /// Fibers of other procs this proc woke, through their inboxes: cross-proc hand-offs.
    pub sent_wakes: u64,
    /// Wake-ups of this proc's fibers that came through its inbox: from other procs and from
    /// threads outside the runtime.
    pub inbox_wakes: u64,
    /// Blocks of spawns this proc dealt to another proc (see "Many long-lived fibers are
    /// dealt out in long blocks" in the [`sched`](crate::sched) docs), whole or the rest of
    /// one kept at first and dealt at a later offer.
    pub blocks_dealt: u64,
    /// Offers of a block it refused because its thread had waited for a core since the last
    /// offer (a kept block is offered again halfway through, so one block may count 2).
    pub blocks_kept_waited: u64,
    /// Offers of a block it refused because the receiving proc's thread would have found no
    /// core free (counted as `blocks_kept_waited` is).
    pub blocks_kept_no_core: u64,
    /// Bursts of spawns this proc split with idle procs before starting them (see "A burst
    /// of spawns is split with idle procs" in the [`sched`](crate::sched) docs).
    pub bursts_dealt: u64,
    /// Work in the proc's stealable queues now (a one-proc runtime's queue reads 0).
    pub queue_len: usize,
    /// Started, unfinished fibers living on this proc now.
    pub live_fibers: usize,
}

impl ProcMetrics {
    fn since(&self, earlier: &ProcMetrics) -> ProcMetrics {
        ProcMetrics {
            resumes: self.resumes.wrapping_sub(earlier.resumes),
            polls: self.polls.wrapping_sub(earlier.polls),
            steals: self.steals.wrapping_sub(earlier.steals),
            injector_pulls: self.injector_pulls.wrapping_sub(earlier.injector_pulls),
            parks: self.parks.wrapping_sub(earlier.parks),
            sent_wakes: self.sent_wakes.wrapping_sub(earlier.sent_wakes),
            inbox_wakes: self.inbox_wakes.wrapping_sub(earlier.inbox_wakes),
            blocks_dealt: self.blocks_dealt.wrapping_sub(earlier.blocks_dealt),
            blocks_kept_waited: self
                .blocks_kept_waited
                .wrapping_sub(earlier.blocks_kept_waited),
            blocks_kept_no_core: self
                .blocks_kept_no_core
                .wrapping_sub(earlier.blocks_kept_no_core),
            bursts_dealt: self.bursts_dealt.wrapping_sub(earlier.bursts_dealt),
            queue_len: self.queue_len,
            live_fibers: self.live_fibers,
        }
    }
}

impl fmt::Display for ProcMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "resumes {} polls {} steals {} injector {} parks {} sent wakes {} inbox wakes {} \
             blocks dealt {} kept (waited) {} kept (no core) {} bursts dealt {} queued {} \
             fibers {}",
            self.resumes,
            self.polls,
            self.steals,
            self.injector_pulls,
            self.parks,
            self.sent_wakes,
            self.inbox_wakes,
            self.blocks_dealt,
            self.blocks_kept_waited,
            self.blocks_kept_no_core,
            self.bursts_dealt,
            self.queue_len,
            self.live_fibers
        )
    }
}

/// A snapshot of a runtime's metrics.
///
/// ```
/// let rt = pcml::Runtime::builder().procs(2).build().unwrap();
/// let m = rt
///     .block_on(|| {
///         let before = pcml::sched::metrics().unwrap();
///         let ch = pcml::Chan::new();
///         let tx = ch.clone();
///         let h = pcml::spawn(move || (0..100u32).for_each(|i| tx.send(i)));
///         let sum: u32 = (0..100).map(|_| ch.recv()).sum();
///         h.join().unwrap();
///         assert_eq!(sum, 4950);
///         pcml::sched::metrics().unwrap().since(&before)
///     })
///     .unwrap();
/// // The sender started, and main blocked in a receive or a join at least once.
/// assert!(m.total().resumes >= 2, "{m}");
/// println!("{m}");
/// ```
///
/// A [`RuntimeMetrics`] is a snapshot: [`metrics`] (the calling thread's runtime, from its
/// threads) or [`Runtime::metrics`](crate::Runtime::metrics) take one, and [`RuntimeMetrics::since`] gives
/// what happened between two. Per proc ([`ProcMetrics`]): fiber resumes and task polls, the
/// steals that brought it work, the injector batches it took, its parks, the fibers of
/// other procs it woke through their inboxes (cross-proc hand-offs) and the wake-ups that
/// reached it through its own inbox, and the lengths of its stealable queues. Per runtime:
/// the injector's length and the live fibers, tasks and actors.
///
/// Reading a row: a 2-proc ping-pong whose `sent_wakes` is about the number of messages pays
/// a cross-proc wake-up per message; `parks` near it means the partner proc slept between
/// messages (a futex wake-up each); `steals` says how often work moved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RuntimeMetrics {
    procs: Vec<ProcMetrics>,
    injector_len: usize,
    live_fibers: usize,
    live_tasks: usize,
    live_actors: usize,
}

impl RuntimeMetrics {
    /// Each proc's metrics, by proc index.
    pub fn procs(&self) -> &[ProcMetrics] {
        &self.procs
    }

    /// The procs' counters summed (queue lengths and live fibers summed too).
    ///
    /// ```
    /// let rt = pcml::Runtime::builder().procs(2).build().unwrap();
    /// let m = rt
    ///     .block_on(|| {
    ///         pcml::spawn(|| pcml::yield_now()).join().unwrap();
    ///         pcml::sched::metrics().unwrap()
    ///     })
    ///     .unwrap();
    /// assert_eq!(m.total().resumes, m.procs().iter().map(|p| p.resumes).sum::<u64>());
    /// ```
    pub fn total(&self) -> ProcMetrics {
        self.procs
            .iter()
            .fold(ProcMetrics::default(), |a, p| ProcMetrics {
                resumes: a.resumes + p.resumes,
                polls: a.polls + p.polls,
                steals: a.steals + p.steals,
                injector_pulls: a.injector_pulls + p.injector_pulls,
                parks: a.parks + p.parks,
                sent_wakes: a.sent_wakes + p.sent_wakes,
                inbox_wakes: a.inbox_wakes + p.inbox_wakes,
                blocks_dealt: a.blocks_dealt + p.blocks_dealt,
                blocks_kept_waited: a.blocks_kept_waited + p.blocks_kept_waited,
                blocks_kept_no_core: a.blocks_kept_no_core + p.blocks_kept_no_core,
                bursts_dealt: a.bursts_dealt + p.bursts_dealt,
                queue_len: a.queue_len + p.queue_len,
                live_fibers: a.live_fibers + p.live_fibers,
            })
    }

    /// Work pushed from outside the procs and not yet taken.
    pub fn injector_len(&self) -> usize {
        self.injector_len
    }

    /// Started, unfinished fibers (main included while `block_on` runs).
    pub fn live_fibers(&self) -> usize {
        self.live_fibers
    }

    /// Spawned, unfinished async tasks.
    pub fn live_tasks(&self) -> usize {
        self.live_tasks
    }

    /// Spawned actors that have not ended.
    ///
    /// ```
    /// let rt = pcml::Runtime::builder().procs(1).build().unwrap();
    /// rt.block_on(|| {
    ///     let a = pcml::actor::spawn(|mut ctx: pcml::actor::Ctx<u8>| {
    ///         ctx.receive();
    ///     });
    ///     assert_eq!(pcml::sched::metrics().unwrap().live_actors(), 1);
    ///     a.send(0).unwrap();
    /// })
    /// .unwrap();
    /// ```
    pub fn live_actors(&self) -> usize {
        self.live_actors
    }

    /// What happened between `earlier` and this snapshot: counters subtracted; queue lengths
    /// and live counts are this snapshot's.
    pub fn since(&self, earlier: &RuntimeMetrics) -> RuntimeMetrics {
        RuntimeMetrics {
            procs: self
                .procs
                .iter()
                .zip(
                    earlier
                        .procs
                        .iter()
                        .chain(std::iter::repeat(&ProcMetrics::default())),
                )
                .map(|(p, e)| p.since(e))
                .collect(),
            ..self.clone()
        }
    }
}

impl fmt::Display for RuntimeMetrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "live: {} fibers, {} tasks, {} actors; injector {}",
            self.live_fibers, self.live_tasks, self.live_actors, self.injector_len
        )?;
        for (i, p) in self.procs.iter().enumerate() {
            writeln!(f, "proc {i}: {p}")?;
        }
        Ok(())
    }
}

/// Takes a snapshot of `shared`'s metrics.
pub(crate) fn snapshot(shared: &Shared) -> RuntimeMetrics {
    let procs: Vec<ProcMetrics> = shared
        .procs
        .iter()
        .map(|p| {
            let c = &p.metrics;
            // Relaxed, all: counters written by their procs, read for a report.
            let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
            ProcMetrics {
                resumes: r(&c.resumes),
                polls: r(&c.polls),
                steals: r(&c.steals),
                injector_pulls: r(&c.injector_pulls),
                parks: r(&c.parks),
                sent_wakes: r(&c.sent_wakes),
                inbox_wakes: r(&c.inbox_wakes),
                blocks_dealt: r(&c.blocks_dealt),
                blocks_kept_waited: r(&c.blocks_kept_waited),
                blocks_kept_no_core: r(&c.blocks_kept_no_core),
                bursts_dealt: r(&c.bursts_dealt),
                queue_len: p.stealer.len() + p.woken_stealer.len() + usize::from(p.held.is_full()),
                live_fibers: c.fibers.load(Ordering::Relaxed).max(0) as usize,
            }
        })
        .collect();
    let sum = |pick: fn(&ProcCounters) -> &AtomicI64, ext: &AtomicI64| {
        let n: i64 = shared
            .procs
            .iter()
            .map(|p| pick(&p.metrics).load(Ordering::Relaxed))
            .sum::<i64>()
            + ext.load(Ordering::Relaxed);
        n.max(0) as usize
    };
    RuntimeMetrics {
        live_fibers: procs.iter().map(|p| p.live_fibers).sum(),
        procs,
        injector_len: shared.injector.len(),
        live_tasks: sum(|c| &c.tasks, &shared.tasks_external),
        live_actors: sum(|c| &c.actors, &shared.actors_external),
    }
}

/// The calling thread's runtime's metrics (a proc's, or a `spawn_blocking` thread's); `None`
/// outside a runtime.
///
/// ```
/// pcml::run(|| {
///     let m = pcml::sched::metrics().unwrap();
///     assert_eq!(m.procs().len(), pcml::procs());
/// });
/// assert!(pcml::sched::metrics().is_none());
/// ```
pub fn metrics() -> Option<RuntimeMetrics> {
    crate::sched::spawn::current_runtime().map(|s| snapshot(&s))
}
