//! Partial deadlocks: threads that wait on each other for ever while the rest of the program
//! runs, found from the wait-for graph. How to use it: [`PartialDeadlock`].
//!
//! # Implementation
//! **What is an edge.** A fiber that blocked directly on one object (see `blocker`) records
//! it; the object says how the wait can end ([`WaitObject::wait_for`]):
//! - a `join` ends only when the joined thread ends: an edge to that thread;
//! - a direct `send`/`recv` on a channel ends only when a thread holding a reference to the
//!   channel acts on it. pcml cannot see where references were moved, so it counts them: the
//!   channel's reference count against the handles it can *place*, the handle each blocked
//!   fiber blocked through when that handle lies on the fiber's own stack. Everything else
//!   that refers to the channel (a handle in an `Arc`, a `static`, a message, an event, a
//!   task's future, an OS thread, an unused handle on a blocked fiber's stack) counts but is
//!   not placed, and keeps the waits on that channel out of any report. Scanning stacks for
//!   the channel's pointer would place unused handles, but unsoundly: a handle moved away
//!   leaves a stale copy of its bits behind, indistinguishable from a live one.
//!
//! Everything else (a choice, a sleep, I/O, an actor's receive, an async task, an OS thread)
//! is taken to be able to end or act at any time.
//!
//! **The set.** Starting from every fiber blocked on an edge, a fiber is dropped while its
//! wait could end from outside the set: a join whose thread is not in it, a channel whose
//! references are not all placed handles of fibers in it. What is left (the greatest such
//! set) is stuck: no member can act before another member's wait ends, and no wait of a
//! member can end before a member acts (the first to end would need an actor, and every
//! reference that could act is a member's, on a member's stack). It is reported in its
//! connected parts (members linked by a shared object or a join).
//!
//! **A consistent view.** Procs describe their fibers one after the other, so one pass could
//! pair a fiber seen blocked before its partner woke it with the partner seen blocked after.
//! So the view is taken three times, and a fiber counts only if it is blocked in the same
//! block (its block token) all three times and its wait is still open (its offer still queued,
//! the joined thread not finished) in the last two: it was then blocked, with its wait open,
//! through the whole second pass, in which every reference count was read. A wake-up still on
//! its way (in an inbox, or held for a fair turn) is never mistaken for a wait: the wait is
//! closed as soon as a partner takes the offer, before the wake-up leaves.
//!
//! What is and is not reported is listed in [`PartialDeadlock`]'s docs.
//!
//! # Invariants
//! - `WaitObject::wait_for` is called only on the blocked fiber's own proc, while the fiber
//!   is suspended in the block it describes, so the object and the handle are alive.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use crate::ThreadId;
use crate::sched::dump::ThreadDump;
use crate::sched::worker::Shared;

/// A blocked fiber, as its blocker names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Waiter {
    pub(crate) runtime: u64,
    pub(crate) proc: usize,
    pub(crate) slot: usize,
    pub(crate) token: u64,
}

/// How a wait on an object can end (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitFor {
    /// Anyone may end it: no edge.
    Unknown,
    /// Only thread `target` ending ends it; `open` while it has not ended.
    Join { target: ThreadId, open: bool },
    /// Only a holder of one of the object's `refs` references ends it; `open` while the
    /// waiter's offer is still queued.
    Refs { refs: usize, open: bool },
}

/// An object a thread blocks on directly (a channel, a joined thread, a mailbox).
pub(crate) trait WaitObject {
    /// How `waiter`'s wait on this object can end. Called on the waiter's proc while it is
    /// suspended in that wait (module invariants).
    fn wait_for(&self, _waiter: &Waiter) -> WaitFor {
        WaitFor::Unknown
    }
}

/// One fiber's wait, as its proc saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edge {
    pub(crate) id: ThreadId,
    pub(crate) token: u64,
    /// The object's address.
    pub(crate) obj: usize,
    pub(crate) wait: WaitFor,
    /// Whether the handle the fiber blocked through lies on its own stack.
    pub(crate) handle_here: bool,
}

/// Threads that wait on each other for ever: found by [`Runtime::deadlocks`] and
/// [`deadlocks`], and logged when [`Builder::report_deadlocks`] is on.
///
/// ```
/// let rt = pcml::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(|| {
///     // Two fibers that join each other.
///     let (to_a, to_b) = (pcml::Chan::new(), pcml::Chan::new());
///     let (from_a, from_b) = (to_a.clone(), to_b.clone());
///     let a = pcml::SpawnBuilder::new()
///         .name("a")
///         .spawn(move || {
///             let b: pcml::JoinHandle<()> = from_a.recv();
///             let _ = b.join();
///         })
///         .unwrap();
///     let b = pcml::SpawnBuilder::new()
///         .name("b")
///         .spawn(move || {
///             let a: pcml::JoinHandle<()> = from_b.recv();
///             let _ = a.join();
///         })
///         .unwrap();
///     pcml::yield_now(); // both start (a thread not started yet would run on its joiner's stack)
///     to_b.send(a);
///     to_a.send(b);
///     pcml::yield_now(); // both block in their joins
///     // The rest of the program goes on; the pair is reported.
///     let found = pcml::sched::deadlocks().unwrap();
///     assert_eq!(found.len(), 1);
///     let mut names: Vec<_> = found[0].threads().iter().filter_map(|t| t.name()).collect();
///     names.sort();
///     assert_eq!(names, ["a", "b"], "{}", found[0]);
/// })
/// .unwrap();
/// ```
///
/// A fiber is reported only when it is certain to wait for ever (unless cancelled): when it is
/// blocked
/// - in a `join` of a reported thread, or
/// - in a plain `send` or `recv` of a [`Chan`](crate::Chan) (or of its
///   [halves](crate::chan::channel)) every reference to which is the handle a reported fiber
///   is blocked through, on that fiber's own stack: a receiver left alone with a channel
///   whose other handles were all dropped, or fibers all blocked on one such channel.
///
/// pcml cannot see where a channel handle was moved, so a handle it cannot place keeps every
/// wait on that channel out of the report: one in an `Arc`, a `static`, a message, an event,
/// a task or an OS thread, and also one a blocked fiber holds but is not blocked through. So
/// the classic crossed pair (one fiber receives on `a` then sends on `b`, the other receives
/// on `b` then sends on `a`) is not reported: each channel's second handle sits unused
/// somewhere pcml cannot see, and reading stacks for it could mistake a stale copy left by a
/// move for a live handle. Nor are waits pcml cannot follow: choices, bounded channels,
/// mailboxes, mvars, ivars, timers, I/O, async tasks, OS threads. (A deadlock of the whole
/// runtime is reported by `block_on` whatever the threads wait on:
/// [`Builder::detect_deadlock`](crate::Builder::detect_deadlock).)
///
/// A thread that `join` runs on its joiner's stack (it had not started yet) is counted as the
/// fiber that owns the stack, the outermost joiner: the wait examined is the inline
/// thread's (the innermost one running there), but the report lists the stack's owner,
/// shown blocked in the join of the thread it runs inline; the inline thread and any
/// joiners in between are not listed. A [`Dump`](crate::Dump) lists each of them, with
/// [`ThreadDump::inline_in`](crate::ThreadDump::inline_in).
///
/// One thing pcml cannot see: a handle lent by reference to a scoped OS thread
/// (`std::thread::scope`) while its owner is blocked on it; do not block on a channel such a
/// thread may still use. And a reported fiber can still be cancelled
/// ([`JoinHandle::abort`](crate::JoinHandle::abort)), which ends its wait; dropping its handles
/// may then close the channels the others wait on.
///
/// [`Runtime::deadlocks`]: crate::Runtime::deadlocks
/// [`Builder::report_deadlocks`]: crate::Builder::report_deadlocks
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialDeadlock {
    threads: Vec<ThreadDump>,
}

impl PartialDeadlock {
    /// The threads that wait on each other, each with what it waits on.
    pub fn threads(&self) -> &[ThreadDump] {
        &self.threads
    }
}

impl fmt::Display for PartialDeadlock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} threads wait on each other for ever:",
            self.threads.len()
        )?;
        for t in &self.threads {
            write!(f, "\n  {t}")?;
        }
        Ok(())
    }
}

/// The partial deadlocks of the calling thread's runtime; `None` outside a runtime. See
/// [`PartialDeadlock`].
///
/// ```
/// pcml::run(|| {
///     assert_eq!(pcml::sched::deadlocks(), Some(Vec::new()));
/// });
/// assert!(pcml::sched::deadlocks().is_none());
/// ```
pub fn deadlocks() -> Option<Vec<PartialDeadlock>> {
    let shared = crate::sched::spawn::current_runtime()?;
    Some(find(&shared))
}

/// The partial deadlocks of `shared` (module docs).
pub(crate) fn find(shared: &Arc<Shared>) -> Vec<PartialDeadlock> {
    let passes: Vec<_> = (0..3)
        .map(|_| crate::sched::dump::dump_with_edges(shared))
        .collect();
    stuck(&passes)
}

/// The stuck sets from three passes of (dump, edges) (module docs).
pub(crate) fn stuck(passes: &[(crate::Dump, Vec<Edge>)]) -> Vec<PartialDeadlock> {
    let [(_, e1), (_, e2), (dump, e3)] = passes else {
        return Vec::new();
    };
    let index =
        |es: &[Edge]| -> HashMap<ThreadId, Edge> { es.iter().map(|e| (e.id, e.clone())).collect() };
    let (m1, m3) = (index(e1), index(e3));

    // Candidates: blocked in the same block in all three passes, open in the last two.
    let mut cand: HashMap<ThreadId, Edge> = HashMap::new();
    for e in e2 {
        let (Some(a), Some(c)) = (m1.get(&e.id), m3.get(&e.id)) else {
            continue;
        };
        if a.token != e.token || c.token != e.token || a.obj != e.obj || c.obj != e.obj {
            continue;
        }
        let open = |w: &WaitFor| match w {
            WaitFor::Join { open, .. } | WaitFor::Refs { open, .. } => *open,
            WaitFor::Unknown => false,
        };
        if open(&e.wait) && open(&c.wait) {
            cand.insert(e.id, e.clone());
        }
    }
    // Every reading of an object's reference count must agree (all are of the second pass).
    let mut refs: HashMap<usize, Option<usize>> = HashMap::new();
    for e in cand.values() {
        if let WaitFor::Refs { refs: n, .. } = e.wait {
            let r = refs.entry(e.obj).or_insert(Some(n));
            if *r != Some(n) {
                *r = None;
            }
        }
    }
    // The greatest set closed under "its wait can end only from inside".
    loop {
        let mut placed: HashMap<usize, usize> = HashMap::new();
        for e in cand.values() {
            if matches!(e.wait, WaitFor::Refs { .. }) && e.handle_here {
                *placed.entry(e.obj).or_default() += 1;
            }
        }
        let before = cand.len();
        let keep: HashSet<ThreadId> = cand
            .values()
            .filter(|e| match e.wait {
                WaitFor::Join { target, .. } => cand.contains_key(&target),
                WaitFor::Refs { .. } => {
                    refs.get(&e.obj).copied().flatten() == placed.get(&e.obj).copied()
                }
                WaitFor::Unknown => false,
            })
            .map(|e| e.id)
            .collect();
        cand.retain(|id, _| keep.contains(id));
        if cand.len() == before {
            break;
        }
    }
    // Connected parts: union by shared object and by join.
    let ids: Vec<ThreadId> = {
        let mut v: Vec<_> = cand.keys().copied().collect();
        v.sort();
        v
    };
    let pos: HashMap<ThreadId, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let mut parent: Vec<usize> = (0..ids.len()).collect();
    fn root(p: &mut [usize], mut i: usize) -> usize {
        while p[i] != i {
            p[i] = p[p[i]];
            i = p[i];
        }
        i
    }
    let mut by_obj: HashMap<usize, usize> = HashMap::new();
    for (i, id) in ids.iter().enumerate() {
        let e = &cand[id];
        let other = match e.wait {
            WaitFor::Join { target, .. } => pos.get(&target).copied(),
            _ => by_obj.get(&e.obj).copied(),
        };
        if !matches!(e.wait, WaitFor::Join { .. }) {
            by_obj.entry(e.obj).or_insert(i);
        }
        if let Some(j) = other {
            let (a, b) = (root(&mut parent, i), root(&mut parent, j));
            parent[a] = b;
        }
    }
    let mut groups: HashMap<usize, Vec<ThreadDump>> = HashMap::new();
    for t in dump.threads() {
        if let Some(i) = t.id().and_then(|id| pos.get(&id).copied()) {
            let r = root(&mut parent, i);
            groups.entry(r).or_default().push(t.clone());
        }
    }
    let mut out: Vec<PartialDeadlock> = groups
        .into_values()
        .map(|threads| PartialDeadlock { threads })
        .collect();
    out.sort_by_key(|d| d.threads.first().and_then(|t| t.id()));
    out
}
