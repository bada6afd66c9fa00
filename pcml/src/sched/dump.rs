//! Who waits for what: a dump of every thread of a runtime, and thread names. How to use
//! it: [`Dump`].
//!
//! # Implementation
//! Blocking costs three stores in the fiber's slot: a string pointer (`blocked_in`), a
//! pointer to the object (`blocked_on`, whose address a dump hashes into an [`ObjectId`] and
//! which the wait-for graph asks how the wait can end, see `waitfor`) and the address of the
//! handle the fiber blocked through (`handle`); a general sync stores a pointer to its
//! flattened event; nothing is walked until a dump is asked for. Every spawn records its
//! site (`#[track_caller]`'s `Location`, one pointer) in the fiber's cell or the task's
//! header, and a proc copies a fiber's into its slot when it starts it. A thread that `join`
//! runs inline on its joiner's stack (an unstarted fiber is run there rather than started on
//! its own) shares its joiner's slot: when it suspends, the slot notes its id
//! (`FiberSlot::inline`, on the inline path only), and the dump shows it as itself, beside
//! its joiner blocked in the join. Each proc describes its own fibers (their slots are
//! private to it): the dumper sends every proc a request through its inbox and waits for the
//! answers (a second at most: a proc busy in one long-running thread for longer is reported
//! as not answering; the thread it runs is listed from the watchdog's record). Work not yet
//! run is listed by the proc whose queues hold it: unstarted fibers and tasks queued to run,
//! found by walking those queues at dump time (the work-stealing deques are emptied and
//! refilled in order), and those still in its inbox (fibers placed on it, tasks sent back to
//! it to run), so a spawn records nothing for dumps beyond its site. A proc answers the
//! requests in its inbox after the other messages drained with them, so nothing it has taken
//! from the inbox is left unlisted. Tasks that wait
//! are read from the runtime's task registry (tasks that have waited at least once); they
//! record no wait; an async actor's task header holds its actor's id. Fibers that wait for a
//! stack are read from the runtime's list of them. Work spawned from outside the procs that
//! no proc has taken yet (the injector) is only counted. Names live in a process-wide table keyed by thread id, written only for
//! threads named through a [`SpawnBuilder`], so plain spawns pay nothing for them.

use std::collections::HashMap;
use std::fmt;
use std::panic::Location;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::ThreadId;
use crate::fiber::Site;
use crate::sched::waitfor::Edge;
use crate::sched::worker::{self, InboxMsg, Shared};

/// Something a blocked thread waits on, described for a dump.
pub(crate) trait Describe {
    /// Appends one line per object waited on.
    fn describe(&self, out: &mut Vec<String>);
}

/// How a thread runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ThreadKind {
    /// A fiber (`pcml::spawn`): its own stack.
    Fiber,
    /// An async task (`pcml::spawn_task`).
    Task,
    /// A plain OS thread blocked in a pcml operation.
    OsThread,
}

/// What a thread is doing when the dump is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ThreadState {
    /// Running now (the thread that asked for the dump, or one on a proc that did not
    /// answer).
    Running,
    /// Ready to run, waiting for its proc: a woken fiber, a fiber not started yet, a task
    /// queued to run (not yet polled, or woken).
    Runnable,
    /// Blocked in a pcml operation (`waits_on` says which); or, for a fiber that never
    /// started, waiting for a fiber stack (`waits_on` says so).
    Blocked,
    /// A fiber blocked in [`time::sleep`](crate::time::sleep) (or `sleep_until`): waiting
    /// for its timer only (`waits_on` says `sleep`). A choice with a timeout among other
    /// branches is `Blocked`.
    Sleeping,
    /// An async task that is not running: waiting for a wake-up (or woken and on its way to
    /// a proc's queue).
    Pending,
}

/// One thread of a [`Dump`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadDump {
    id: Option<ThreadId>,
    name: Option<String>,
    spawned_at: Option<String>,
    kind: ThreadKind,
    proc: Option<usize>,
    state: ThreadState,
    waits_on: Vec<String>,
    object: Option<ObjectId>,
    actor: Option<String>,
    inline_in: Option<ThreadId>,
}

/// The id of an object threads block on (a channel, a join handle's thread, a mailbox), in
/// a [`Dump`]: the same for every thread blocked on the same object while it lives.
///
/// ```
/// let rt = pcml::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(|| {
///     let ch = pcml::Chan::<u8>::new();
///     let (a, b) = (ch.clone(), ch.clone());
///     let ra = pcml::SpawnBuilder::new().name("a").spawn(move || a.recv()).unwrap();
///     let rb = pcml::SpawnBuilder::new().name("b").spawn(move || b.recv()).unwrap();
///     pcml::yield_now(); // both block on the channel
///     let dump = pcml::dump().unwrap();
///     let on = |n| dump.threads().iter().find(|t| t.name() == Some(n)).unwrap().object();
///     assert!(on("a").is_some());
///     assert_eq!(on("a"), on("b"), "{dump}");
///     ch.send(1);
///     ch.send(2);
///     assert_eq!(ra.join().unwrap() + rb.join().unwrap(), 3);
/// })
/// .unwrap();
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(u64);

impl ObjectId {
    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "@{:08x}", self.0)
    }
}

/// The id of the object at `addr` (`None` for 0): its address mixed and cut to 32 bits, so
/// that ids are short and do not show addresses.
fn object_id(addr: usize) -> Option<ObjectId> {
    (addr != 0).then(|| ObjectId((addr as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32))
}

/// A choice branch's line for a dump: `what` and the id of the object at `obj` (the same id a
/// thread blocked directly on that object shows).
pub(crate) fn on_object<O: ?Sized>(what: &str, obj: *const O) -> String {
    match object_id(obj.cast::<()>().addr()) {
        Some(id) => format!("{what} on {id}"),
        None => what.to_string(),
    }
}

impl ThreadDump {
    /// The object a blocked thread waits on, when it blocked on one object (a channel's
    /// direct `send`/`recv`, a `join`, an actor's receive); threads blocked on the same
    /// object show the same id. `None` for a choice (its branches, each with its object's id,
    /// are in [`waits_on`](Self::waits_on)) and for sleeps.
    pub fn object(&self) -> Option<ObjectId> {
        self.object
    }

    /// For a thread that runs an actor (a fiber of [`actor::spawn`](crate::actor::spawn), a
    /// task of [`actor::spawn_async`](crate::actor::spawn_async)): the actor's id and its
    /// registered names ([`actor::register`](crate::actor::register)), as
    /// `<actor 12> "name"`. An async actor's task is listed from its spawn on (only counted
    /// in [`Dump::unstarted`] while spawned from outside the procs and not yet taken by one).
    ///
    /// ```
    /// use pcml::actor::{self, Ctx};
    /// pcml::run(|| {
    ///     let pid = actor::spawn(|mut ctx: Ctx<u8>| {
    ///         ctx.receive();
    ///     });
    ///     actor::register("doc-dump-actor", &pid).unwrap();
    ///     pcml::yield_now(); // it blocks in its receive
    ///     let d = pcml::dump().unwrap();
    ///     let t = d.threads().iter().find(|t| t.actor().is_some()).unwrap();
    ///     assert!(t.actor().unwrap().contains("\"doc-dump-actor\""), "{d}");
    ///     pid.send(1).unwrap();
    /// });
    /// ```
    pub fn actor(&self) -> Option<&str> {
        self.actor.as_deref()
    }

    /// The thread's id (`None` for an OS thread).
    pub fn id(&self) -> Option<ThreadId> {
        self.id
    }
    /// The name it was given, if any.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
    /// Where it was spawned (`file:line:column` of the call to `spawn`, `spawn_task`,
    /// `actor::spawn`, a [`SpawnBuilder`]'s spawn, ...; the main fiber's is `block_on`'s
    /// caller). `None` for OS threads, and for a thread run inline on its joiner's stack
    /// ([`inline_in`](Self::inline_in)) that was not named.
    ///
    /// ```
    /// pcml::run(|| {
    ///     let ch = pcml::Chan::<u8>::new();
    ///     let c = ch.clone();
    ///     let h = pcml::spawn(move || c.recv()); // this line is the spawn site
    ///     pcml::yield_now(); // it blocks in recv
    ///     let d = pcml::dump().unwrap();
    ///     let t = d.threads().iter().find(|t| t.id() == Some(h.id())).unwrap();
    ///     assert!(t.spawned_at().unwrap().contains(file!()), "{d}");
    ///     ch.send(1);
    ///     h.join().unwrap();
    /// });
    /// ```
    pub fn spawned_at(&self) -> Option<&str> {
        self.spawned_at.as_deref()
    }

    /// For a fiber that `join` runs inline on its joiner's stack (a fiber not yet started
    /// when it is joined runs there instead of on a stack of its own), the joiner: the fiber
    /// whose stack it runs on, which the dump lists too, blocked in the join. With inline
    /// runs nested, the joiners in between are not listed.
    ///
    /// ```
    /// pcml::run(|| {
    ///     let ch = pcml::Chan::<u8>::new();
    ///     let c = ch.clone();
    ///     let outer = pcml::spawn(move || {
    ///         // Joined before it starts: it runs inline on `outer`'s stack.
    ///         pcml::spawn(move || c.recv()).join().unwrap()
    ///     });
    ///     pcml::yield_now(); // outer runs, joins, and the inner fiber blocks in recv
    ///     let d = pcml::dump().unwrap();
    ///     let inner = d.threads().iter().find(|t| t.inline_in().is_some()).unwrap();
    ///     assert_eq!(inner.inline_in(), Some(outer.id()), "{d}");
    ///     assert!(inner.waits_on()[0].contains("recv"), "{d}");
    ///     ch.send(7);
    ///     assert_eq!(outer.join().unwrap(), 7);
    /// });
    /// ```
    pub fn inline_in(&self) -> Option<ThreadId> {
        self.inline_in
    }
    /// Fiber, task or OS thread.
    pub fn kind(&self) -> ThreadKind {
        self.kind
    }
    /// The proc it lives on (a started fiber's home proc), whose queue holds it (an
    /// unstarted fiber, a task queued to run) or that runs it (a running task); `None` for a
    /// pending task, a fiber waiting for a stack, and OS threads.
    pub fn proc(&self) -> Option<usize> {
        self.proc
    }
    /// Running, runnable, blocked, sleeping or pending.
    pub fn state(&self) -> ThreadState {
        self.state
    }
    /// For a blocked thread, what it waits on: the operation it blocked in, then, for a
    /// general sync, one line per branch.
    pub fn waits_on(&self) -> &[String] {
        &self.waits_on
    }
}

impl fmt::Display for ThreadDump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.id {
            Some(id) => write!(f, "{id:?}")?,
            None => f.write_str("OS thread")?,
        }
        if let Some(n) = &self.name {
            write!(f, " \"{n}\"")?;
        }
        if let Some(a) = &self.actor {
            write!(f, " actor {a}")?;
        }
        let kind = match self.kind {
            ThreadKind::Fiber => "fiber",
            ThreadKind::Task => "task",
            ThreadKind::OsThread => "os",
        };
        write!(f, " [{kind}")?;
        if let Some(p) = self.proc {
            write!(f, ", proc {p}")?;
        }
        write!(f, "] {:?}", self.state)?;
        if let Some(host) = self.inline_in {
            write!(f, " (inline on {host:?}'s stack)")?;
        }
        if let Some(s) = &self.spawned_at {
            write!(f, " (spawned at {s})")?;
        }
        if let Some((first, rest)) = self.waits_on.split_first() {
            write!(f, " in {first}")?;
            if let Some(o) = self.object {
                write!(f, " on {o}")?;
            }
            for r in rest {
                write!(f, "\n      {r}")?;
            }
        }
        Ok(())
    }
}

/// Every thread of a runtime and what each waits on.
///
/// ```
/// let rt = pcml::Runtime::builder().procs(1).build().unwrap();
/// rt.block_on(|| {
///     let ch = pcml::Chan::<u32>::new();
///     let c = ch.clone();
///     let waiter = pcml::SpawnBuilder::new()
///         .name("waiter")
///         .spawn(move || c.recv())
///         .unwrap();
///     pcml::yield_now(); // the waiter runs and blocks
///     let dump = pcml::dump().unwrap();
///     let w = dump.threads().iter().find(|t| t.name() == Some("waiter")).unwrap();
///     assert_eq!(w.state(), pcml::ThreadState::Blocked);
///     assert!(w.waits_on()[0].contains("recv"), "{dump}");
///     ch.send(1);
///     assert_eq!(waiter.join().unwrap(), 1);
/// })
/// .unwrap();
/// ```
///
/// A dump lists, for each thread (a fiber or task not yet run too, as runnable): its id, its
/// name if it was given one ([`SpawnBuilder::name`]; the main fiber is `main`; a named thread
/// shows its name once it has started), where it was spawned, the actor it
/// runs if it is one ([`ThreadDump::actor`]), its proc, its state, and for a blocked fiber
/// what it waits on:
/// the operation it blocked in (`Chan::recv`, `JoinHandle::join`, `sleep`, `sync`, ...), the
/// object it blocked on ([`ObjectId`]: a channel, a joined thread, a mailbox; the same id for
/// every thread blocked on the same object) and, for a general sync (a choice, a wrapped or
/// guarded event), every branch: its operation and object with the object's id (a
/// channel's, bounded channel's, mailbox's, mvar's, ivar's, actor's mailbox, joined
/// thread's: the same id a thread blocked on it directly shows), a timer with its deadline, a
/// socket with its file descriptor and address, and a user's
/// [`BaseEvent`](crate::event::base::BaseEvent) by its type name (or its own
/// [`describe`](crate::event::base::BaseEvent::describe)). OS threads blocked in a pcml
/// operation are listed too, by their OS thread name. A fiber that a `join` runs inline on
/// its joiner's stack is listed as itself, with the joiner ([`ThreadDump::inline_in`]) listed
/// as blocked in the join.
/// [`Runtime::dump`](crate::Runtime::dump) dumps a runtime from anywhere, [`dump`] the calling
/// thread's runtime; a deadlock error carries one
/// ([`RuntimeError::Deadlock`](crate::RuntimeError::Deadlock)).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Dump {
    threads: Vec<ThreadDump>,
    unstarted: usize,
    silent_procs: Vec<usize>,
}

impl Dump {
    /// The threads, fibers by proc first, then tasks, then OS threads.
    pub fn threads(&self) -> &[ThreadDump] {
        &self.threads
    }
    /// Fibers and tasks spawned from outside the runtime's procs (an OS thread, `block_on`)
    /// that no proc has taken yet: counted, not listed.
    pub fn unstarted(&self) -> usize {
        self.unstarted
    }
    /// Procs that did not answer within a second (each busy running one thread).
    pub fn silent_procs(&self) -> &[usize] {
        &self.silent_procs
    }
}

impl fmt::Display for Dump {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} threads", self.threads.len())?;
        if self.unstarted > 0 {
            write!(f, ", {} unstarted or queued", self.unstarted)?;
        }
        if !self.silent_procs.is_empty() {
            write!(f, ", procs {:?} busy (did not answer)", self.silent_procs)?;
        }
        for t in &self.threads {
            write!(f, "\n  {t}")?;
        }
        Ok(())
    }
}

// ---- names ----

/// A name and a spawn site, for threads named through a [`SpawnBuilder`] and the main fiber.
struct Label {
    name: Arc<str>,
    site: Site,
}

static LABELS: Mutex<Option<HashMap<ThreadId, Label>>> = Mutex::new(None);

fn with_labels<R>(f: impl FnOnce(&mut HashMap<ThreadId, Label>) -> R) -> R {
    let mut l = LABELS.lock().unwrap_or_else(PoisonError::into_inner);
    f(l.get_or_insert_with(HashMap::new))
}

/// Removes a thread's label when its body ends (normally or by unwinding). While it lives,
/// the watchdog's report names the thread even if it runs on its joiner's stack (what the
/// proc showed before comes back at the end).
pub(crate) struct Labelled(ThreadId, Option<u64>);

impl Labelled {
    pub(crate) fn enter(name: Arc<str>, site: Site) -> Self {
        let id = crate::current();
        with_labels(|l| l.insert(id, Label { name, site }));
        let kind = match worker::current() {
            Some(worker::Current::Task { .. }) => crate::sched::watchdog::TASK_BIT,
            _ => 0,
        };
        Labelled(id, worker::show_running_here(id.as_u64() | kind))
    }
}

impl Drop for Labelled {
    fn drop(&mut self) {
        with_labels(|l| l.remove(&self.0));
        if let Some(before) = self.1 {
            worker::show_running_here(before);
        }
    }
}

/// Names the main fiber `main` while it runs; its spawn site is `block_on`'s caller.
#[track_caller]
pub(crate) fn label_main(id: ThreadId) {
    // Taken here: inside the closure below it would name the closure's call.
    let site = Location::caller();
    with_labels(|l| {
        l.insert(
            id,
            Label {
                name: "main".into(),
                site,
            },
        )
    });
}

/// Forgets the main fiber's label.
pub(crate) fn unlabel(id: ThreadId) {
    with_labels(|l| l.remove(&id));
}

fn label_of(id: ThreadId) -> (Option<String>, Option<String>) {
    with_labels(|l| match l.get(&id) {
        Some(Label { name, site }) => (Some(name.to_string()), Some(site.to_string())),
        None => (None, None),
    })
}

/// The name thread `id` was given, if any.
fn name_of(id: ThreadId) -> Option<String> {
    label_of(id).0
}

/// Thread number `id` as a report names it: `ThreadId(17) "name" (spawned at file:line:col)`,
/// the name and site only if it was named through a [`SpawnBuilder`] (the watchdog, which
/// calls this, cannot read the slot of a fiber that holds its proc).
pub(crate) fn describe_thread(id: u64) -> String {
    let Some(id) = ThreadId::from_u64(id) else {
        return "(unknown thread)".to_string();
    };
    let (name, site) = label_of(id);
    let mut s = format!("{id:?}");
    if let Some(n) = name {
        s.push_str(&format!(" {n:?}"));
    }
    if let Some(site) = site {
        s.push_str(&format!(" (spawned at {site})"));
    }
    s
}

/// The name of the calling pcml thread, if it was given one.
///
/// ```
/// pcml::run(|| {
///     let h = pcml::SpawnBuilder::new()
///         .name("worker-1")
///         .spawn(|| pcml::current_name())
///         .unwrap();
///     assert_eq!(h.join().unwrap().as_deref(), Some("worker-1"));
///     assert_eq!(pcml::current_name().as_deref(), Some("main"));
/// });
/// ```
pub fn current_name() -> Option<String> {
    let id = crate::try_current()?;
    with_labels(|l| l.get(&id).map(|lb| lb.name.to_string()))
}

/// Spawns fibers, tasks and actors ([`spawn_actor`](Self::spawn_actor),
/// [`spawn_actor_async`](Self::spawn_actor_async)) with a name, as `std::thread::Builder`
/// does OS threads.
///
/// The name shows in dumps ([`dump`]), in deadlock reports, in the watchdog's reports and
/// through [`current_name`]; the spawn site is recorded too (as for every spawn).
///
/// ```
/// pcml::run(|| {
///     let f = pcml::SpawnBuilder::new().name("parser").spawn(|| 1).unwrap();
///     let t = pcml::SpawnBuilder::new().name("fetcher").spawn_task(async { 2 }).unwrap();
///     assert_eq!(f.join().unwrap() + t.join().unwrap(), 3);
/// });
/// ```
#[derive(Debug, Clone, Default)]
pub struct SpawnBuilder {
    name: Option<Arc<str>>,
}

impl SpawnBuilder {
    /// A builder for an unnamed thread.
    pub fn new() -> Self {
        Self::default()
    }

    /// Names the thread.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(Arc::from(name.into()));
        self
    }

    /// The name given, for spawns made outside this module (actors).
    pub(crate) fn into_name(self) -> Option<Arc<str>> {
        self.name
    }

    /// Spawns a fiber, as [`try_spawn`](crate::try_spawn).
    ///
    /// # Errors
    /// As [`try_spawn`](crate::try_spawn): outside a runtime or when no stack can be had.
    #[track_caller]
    pub fn spawn<F, T>(self, f: F) -> Result<crate::JoinHandle<T>, crate::SpawnError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let site = Location::caller();
        let Some(name) = self.name else {
            return crate::sched::spawn::try_spawn_at(f, site);
        };
        let label = name.clone();
        crate::log::with_spawn_label(&label, || {
            crate::sched::spawn::try_spawn_at(
                move || {
                    let _l = Labelled::enter(name, site);
                    f()
                },
                site,
            )
        })
    }

    /// Spawns a fiber on proc `proc`, as [`try_spawn_on`](crate::try_spawn_on).
    ///
    /// # Errors
    /// As [`try_spawn_on`](crate::try_spawn_on).
    ///
    /// ```
    /// pcml::run(|| {
    ///     let h = pcml::SpawnBuilder::new().name("pinned").spawn_on(0, pcml::current_proc);
    ///     assert_eq!(h.unwrap().join().unwrap(), Some(0));
    /// });
    /// ```
    #[track_caller]
    pub fn spawn_on<F, T>(
        self,
        proc: usize,
        f: F,
    ) -> Result<crate::JoinHandle<T>, crate::SpawnError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let site = Location::caller();
        let Some(name) = self.name else {
            return crate::sched::spawn::try_spawn_on_at(proc, f, site);
        };
        let label = name.clone();
        crate::log::with_spawn_label(&label, || {
            crate::sched::spawn::try_spawn_on_at(
                proc,
                move || {
                    let _l = Labelled::enter(name, site);
                    f()
                },
                site,
            )
        })
    }

    /// Spawns an async task, as [`spawn_task`](crate::spawn_task).
    ///
    /// # Errors
    /// [`SpawnError::NoRuntime`](crate::SpawnError::NoRuntime) outside a pcml runtime.
    #[track_caller]
    pub fn spawn_task<F>(self, fut: F) -> Result<crate::JoinHandle<F::Output>, crate::SpawnError>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        if crate::sched::spawn::current_runtime().is_none() {
            return Err(crate::SpawnError::NoRuntime);
        }
        let site = Location::caller();
        let Some(name) = self.name else {
            return Ok(crate::sched::spawn::spawn_task_at(fut, site));
        };
        let label = name.clone();
        Ok(crate::log::with_spawn_label(&label, || {
            crate::sched::spawn::spawn_task_at(
                async move {
                    let _l = Labelled::enter(name, site);
                    fut.await
                },
                site,
            )
        }))
    }
}

// ---- OS threads blocked in pcml ----

struct OsWaiter {
    name: String,
    what: *const str,
    obj: usize,
}

// SAFETY: `what` is only read while its thread is blocked, which keeps the string alive
// (`os_thread_blocked`).
unsafe impl Send for OsWaiter {}

static OS_WAITERS: Mutex<Vec<(u64, OsWaiter)>> = Mutex::new(Vec::new());

/// Lists the calling OS thread as blocked in `what` until the guard drops.
pub(crate) struct OsBlocked(u64);

impl OsBlocked {
    pub(crate) fn enter(what: &str, obj: usize) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        // Relaxed: only uniqueness matters.
        let key = NEXT.fetch_add(1, Ordering::Relaxed) as u64;
        let t = std::thread::current();
        let name = t
            .name()
            .map_or_else(|| format!("{:?}", t.id()), str::to_string);
        OS_WAITERS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((key, OsWaiter { name, what, obj }));
        OsBlocked(key)
    }
}

impl Drop for OsBlocked {
    fn drop(&mut self) {
        OS_WAITERS
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(k, _)| *k != self.0);
    }
}

// ---- gathering ----

/// A dump being gathered: each proc adds its part and counts itself done.
pub(crate) struct Request {
    parts: Mutex<Parts>,
    done: Condvar,
    /// Whether procs also describe their fibers' waits for the wait-for graph (`waitfor`).
    edges: bool,
}

#[derive(Default)]
struct Parts {
    threads: Vec<ThreadDump>,
    unstarted: usize,
    answered: Vec<bool>,
    edges: Vec<Edge>,
}

impl Request {
    /// Whether the dumper wants the waits of blocked fibers (`waitfor::Edge`).
    pub(crate) fn wants_edges(&self) -> bool {
        self.edges
    }

    /// Whether proc `proc` has added its part.
    pub(crate) fn has_answered(&self, proc: usize) -> bool {
        self.parts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .answered[proc]
    }

    /// Adds proc `proc`'s part (once: a second answer, from the proc's inbox after it answered
    /// a waiting dumper's request directly, is dropped).
    pub(crate) fn answer(
        &self,
        proc: usize,
        threads: Vec<ThreadDump>,
        unstarted: usize,
        edges: Vec<Edge>,
    ) {
        let mut p = self.parts.lock().unwrap_or_else(PoisonError::into_inner);
        if p.answered[proc] {
            return;
        }
        p.threads.extend(threads);
        p.unstarted += unstarted;
        p.answered[proc] = true;
        p.edges.extend(edges);
        self.done.notify_all();
    }
}

/// A fiber slot as its proc sees it, for [`fiber_dump`].
pub(crate) struct SlotView<'a> {
    /// The fiber that owns the slot (and the stack).
    pub(crate) id: ThreadId,
    pub(crate) slot: usize,
    pub(crate) proc: usize,
    pub(crate) site: Site,
    pub(crate) state: ThreadState,
    /// The thread that runs inline on the fiber's stack and is the one suspended (or
    /// running), if any, with its joiners, innermost first (the last is the fiber `id`).
    pub(crate) inline: Option<(ThreadId, Vec<ThreadId>)>,
    /// For a blocked fiber: the operation, the object's address (0: none) and the branches.
    pub(crate) blocked_in: &'a str,
    pub(crate) obj: usize,
    pub(crate) detail: Option<&'a dyn Describe>,
}

/// How the actor layer names the actor a thread runs (its pid and registered names), for
/// dumps: set by that layer when it hands out its first actor ids, so that `sched` does not
/// reach up into it.
pub(crate) struct ActorNames {
    /// The actor run by the fiber in slot `slot` of the calling proc, with its thread.
    pub(crate) fiber: fn(usize) -> Option<(ThreadId, String)>,
    /// The async actor numbered `id`.
    pub(crate) task: fn(u64) -> Option<String>,
}

static ACTOR_NAMES: std::sync::OnceLock<ActorNames> = std::sync::OnceLock::new();

/// Registers the actor layer's namer (the first call wins; later calls do nothing).
pub(crate) fn set_actor_names(names: ActorNames) {
    let _ = ACTOR_NAMES.set(names);
}

fn task_actor(id: u64) -> Option<String> {
    ACTOR_NAMES.get().and_then(|n| (n.task)(id))
}

/// Describes a fiber slot's threads (on its proc's worker): the fiber, or, when a thread
/// runs inline on its stack, that thread and the joiners blocked in the joins that run it.
pub(crate) fn fiber_dump(v: SlotView<'_>, out: &mut Vec<ThreadDump>) {
    let actor = ACTOR_NAMES.get().and_then(|n| (n.fiber)(v.slot));
    let actor_of = |id: ThreadId| {
        actor
            .as_ref()
            .filter(|(t, _)| *t == id)
            .map(|(_, a)| a.clone())
    };
    let mut waits_on = Vec::new();
    let mut v = v;
    if v.state == ThreadState::Blocked && v.blocked_in == "sleep" {
        v.state = ThreadState::Sleeping;
    }
    if matches!(v.state, ThreadState::Blocked | ThreadState::Sleeping) {
        waits_on.push(v.blocked_in.to_string());
        if let Some(d) = v.detail {
            d.describe(&mut waits_on);
        }
    }
    let object = if matches!(v.state, ThreadState::Blocked | ThreadState::Sleeping) {
        object_id(v.obj)
    } else {
        None
    };
    // The stack's owner's name and site; an inline thread's from its label, if named.
    let label = |id: ThreadId| match id == v.id {
        true => (name_of(id), Some(v.site.to_string())),
        false => label_of(id),
    };
    let Some((inner, hosts)) = v.inline else {
        let (name, spawned_at) = label(v.id);
        out.push(ThreadDump {
            id: Some(v.id),
            name,
            spawned_at,
            kind: ThreadKind::Fiber,
            proc: Some(v.proc),
            state: v.state,
            waits_on,
            object,
            actor: actor_of(v.id),
            inline_in: None,
        });
        return;
    };
    // The inline thread, then each joiner, blocked in the join of the one it runs.
    let mut thread = inner;
    let (mut state, mut waits_on, mut object) = (v.state, waits_on, object);
    for host in hosts.into_iter().map(Some).chain([None]) {
        let (name, spawned_at) = label(thread);
        out.push(ThreadDump {
            id: Some(thread),
            name,
            spawned_at,
            kind: ThreadKind::Fiber,
            proc: Some(v.proc),
            state,
            waits_on,
            object,
            actor: actor_of(thread),
            inline_in: host,
        });
        let Some(host) = host else { break };
        state = ThreadState::Blocked;
        waits_on = vec![
            "JoinHandle::join".to_string(),
            format!("of {thread:?}, run inline on this stack"),
        ];
        object = None;
        thread = host;
    }
}

/// A thread that has not run yet or is queued to run, for a dump: an unstarted fiber
/// (`task: None`; `proc`: the proc whose queue holds it, `None` while it waits for a stack)
/// or a task queued to run (`task`: its actor, see `task::Header::actor`). `state` is
/// `Runnable`, or `Blocked` for a fiber waiting for a stack (`waits_on` says so).
pub(crate) fn queued_thread(
    id: ThreadId,
    site: Site,
    task: Option<u64>,
    proc: Option<usize>,
    waiting_for_stack: bool,
) -> ThreadDump {
    let (state, waits_on) = if waiting_for_stack {
        (
            ThreadState::Blocked,
            vec!["a fiber stack (Builder::max_fibers reached, or no memory for one)".to_string()],
        )
    } else {
        (ThreadState::Runnable, Vec::new())
    };
    ThreadDump {
        id: Some(id),
        name: name_of(id),
        spawned_at: Some(site.to_string()),
        kind: if task.is_some() {
            ThreadKind::Task
        } else {
            ThreadKind::Fiber
        },
        proc,
        state,
        waits_on,
        object: None,
        actor: task.and_then(task_actor),
        inline_in: None,
    }
}

/// The task that asked for a dump, running on proc `proc`; its spawn site is filled in from
/// the task registry if it has waited before (`gather`).
pub(crate) fn running_task(id: ThreadId, proc: usize) -> ThreadDump {
    running(id, ThreadKind::Task, proc)
}

/// Thread `id`, of `kind`, listed as running on proc `proc`.
fn running(id: ThreadId, kind: ThreadKind, proc: usize) -> ThreadDump {
    let (name, spawned_at) = label_of(id);
    ThreadDump {
        id: Some(id),
        name,
        spawned_at,
        kind,
        proc: Some(proc),
        state: ThreadState::Running,
        waits_on: Vec::new(),
        object: None,
        actor: None,
        inline_in: None,
    }
}

/// The thread a proc that did not answer a dump is running (read from the watchdog's record
/// of it: `running`, with `TASK_BIT` set for a task), listed as running.
fn running_on_silent_proc(proc: usize, running: u64) -> Option<ThreadDump> {
    let task = running & crate::sched::watchdog::TASK_BIT != 0;
    let id = ThreadId::from_u64(running & !crate::sched::watchdog::TASK_BIT)?;
    let kind = if task {
        ThreadKind::Task
    } else {
        ThreadKind::Fiber
    };
    Some(self::running(id, kind, proc))
}

/// Dumps `shared`'s threads: see the module docs.
pub(crate) fn dump_runtime(shared: &Arc<Shared>) -> Dump {
    gather(shared, false).0
}

/// Dumps `shared`'s threads, with the waits of its blocked fibers (`waitfor`).
pub(crate) fn dump_with_edges(shared: &Arc<Shared>) -> (Dump, Vec<Edge>) {
    gather(shared, true)
}

fn gather(shared: &Arc<Shared>, edges: bool) -> (Dump, Vec<Edge>) {
    let procs = shared.procs.len();
    let req = Arc::new(Request {
        parts: Mutex::new(Parts {
            answered: vec![false; procs],
            ..Parts::default()
        }),
        done: Condvar::new(),
        edges,
    });
    let here = worker::context().filter(|c| Arc::ptr_eq(&c.shared, shared));
    shared
        .dumps
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(req.clone());
    for p in 0..procs {
        // This proc answers here, and so do the procs that share its OS thread (between
        // their turns now: a task waiting below would keep them from answering).
        let local = here.and_then(|ctx| {
            if ctx.index == p {
                Some(ctx)
            } else {
                ctx.carrier_mates().iter().find(|m| m.index == p)
            }
        });
        match local {
            Some(ctx) => ctx.answer_dump(&req),
            None => shared.send_to(p, InboxMsg::Dump(req.clone())),
        }
    }
    // Wait for the others: in a fiber by yielding (so this proc's own inbox is served); in a
    // task (which cannot suspend its proc) on the condition variable, a millisecond at a time,
    // answering meanwhile the dumps other procs' tasks gather (their requests wait in this
    // proc's inbox, which is not served while this task runs); on an OS thread on the
    // condition variable.
    let in_fiber = matches!(worker::current(), Some(worker::Current::Fiber { .. }));
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut parts = loop {
        let p = req.parts.lock().unwrap_or_else(PoisonError::into_inner);
        if p.answered.iter().all(|d| *d) || Instant::now() >= deadline {
            break p;
        }
        match here {
            Some(_) if in_fiber => {
                drop(p);
                crate::yield_now();
            }
            Some(ctx) => {
                let slice = deadline
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(1));
                drop(req.done.wait_timeout(p, slice));
                let others: Vec<_> = shared
                    .dumps
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .iter()
                    .filter(|r| !Arc::ptr_eq(r, &req))
                    .cloned()
                    .collect();
                // For this proc and those sharing its OS thread, which wait too.
                let mates = ctx.carrier_mates();
                let here = if mates.is_empty() {
                    std::slice::from_ref(ctx)
                } else {
                    mates
                };
                for r in others {
                    for m in here {
                        if !r.has_answered(m.index) {
                            m.answer_dump(&r);
                        }
                    }
                }
            }
            None => {
                let left = deadline.saturating_duration_since(Instant::now());
                drop(req.done.wait_timeout(p, left));
            }
        }
    };
    shared
        .dumps
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .retain(|r| !Arc::ptr_eq(r, &req));
    let silent_procs: Vec<usize> = (0..procs).filter(|p| !parts.answered[*p]).collect();
    let mut threads = std::mem::take(&mut parts.threads);
    // Spawned from outside the procs and not yet taken by one.
    let unstarted = parts.unstarted + shared.injector.len();
    let edges = std::mem::take(&mut parts.edges);
    drop(parts);
    for &p in &silent_procs {
        // Relaxed: a report; the proc has not answered for a second.
        let running = shared.procs[p].watch.running.load(Ordering::Relaxed);
        if let Some(t) = running_on_silent_proc(p, running) {
            if !threads.iter().any(|u| u.id == t.id) {
                threads.push(t);
            }
        }
    }
    for f in shared.stack_waiters.lock().unwrap().iter() {
        if !f.body.is_claimed() {
            threads.push(queued_thread(f.id, f.body.site(), None, None, true));
        }
    }
    threads.sort_by_key(|t| (t.proc, t.id));
    shared.tasks.for_each(|id, site, actor| {
        if let Some(t) = threads.iter_mut().find(|t| t.id == Some(id)) {
            // Listed by its proc (queued to run, or the dumper itself): what only the
            // registry knows.
            t.spawned_at.get_or_insert_with(|| site.to_string());
            if t.actor.is_none() {
                t.actor = task_actor(actor);
            }
            return;
        }
        threads.push(ThreadDump {
            id: Some(id),
            name: name_of(id),
            spawned_at: Some(site.to_string()),
            kind: ThreadKind::Task,
            proc: None,
            state: ThreadState::Pending,
            waits_on: Vec::new(),
            object: None,
            actor: task_actor(actor),
            inline_in: None,
        });
    });
    for (_, w) in OS_WAITERS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
    {
        threads.push(ThreadDump {
            id: None,
            name: Some(w.name.clone()),
            spawned_at: None,
            kind: ThreadKind::OsThread,
            proc: None,
            state: ThreadState::Blocked,
            // SAFETY: the waiter is listed only while it is blocked in `what` (`OsBlocked`).
            waits_on: vec![unsafe { &*w.what }.to_string()],
            object: object_id(w.obj),
            actor: None,
            inline_in: None,
        });
    }
    (
        Dump {
            threads,
            unstarted,
            silent_procs,
        },
        edges,
    )
}

/// A dump of the calling thread's runtime: see [`Dump`]. `None` outside a
/// runtime. In a fiber, the dumper yields while the other procs answer; in an async task,
/// which cannot yield its proc, it holds its proc meanwhile (a second at most).
///
/// ```
/// pcml::run(|| {
///     let d = pcml::dump().unwrap();
///     let me = d.threads().iter().find(|t| t.name() == Some("main")).unwrap();
///     assert_eq!(me.state(), pcml::ThreadState::Running);
/// });
/// assert!(pcml::dump().is_none());
/// ```
pub fn dump() -> Option<Dump> {
    let shared = crate::sched::spawn::current_runtime()?;
    Some(dump_runtime(&shared))
}
