//! Async tasks: stackless threads, i.e. Rust futures (seed 001's indirect style, seed 002's heap
//! frames).
//!
//! A task is a `Send + 'static` future that runs on the same procs as fibers. It holds no stack
//! of its own (its frame is the future's state, on the heap), so millions can exist at once,
//! and it migrates freely between procs: it is stealable whenever it is scheduled. Its waker
//! reschedules it on the waking proc's deque (or the runtime's injector from outside).
//!
//! # Invariants
//! - `state` moves `SCHEDULED -> RUNNING -> {IDLE, NOTIFIED, DONE}`, `IDLE -> SCHEDULED` (a
//!   wake-up), `NOTIFIED -> SCHEDULED` (the runner reschedules). Only the thread that moved it
//!   to `RUNNING` touches `future`, until it leaves `RUNNING`.
//! - A task is in its runtime's registry from spawn until it is `DONE`, so shutdown can drop
//!   every unfinished future (breaking cycles through wakers stored in channels).

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll, Wake, Waker};

use crate::ThreadId;
use crate::loom::PlainCell as UnsafeCell;
use crate::sched::join::JoinState;
use crate::sched::worker::{self, Runnable, Shared};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

const IDLE: u8 = 0;
const SCHEDULED: u8 = 1;
const RUNNING: u8 = 2;
const NOTIFIED: u8 = 3;
const DONE: u8 = 4;

type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A spawned async task.
pub(crate) struct Task {
    pub(crate) id: ThreadId,
    /// See the module invariants.
    state: AtomicU8,
    shared: Arc<Shared>,
    /// Touched only by the thread that holds the task in `RUNNING`, or at shutdown.
    future: UnsafeCell<Option<BoxFuture>>,
}

// SAFETY: `future` is reached by one thread at a time (the RUNNING protocol) and is Send.
unsafe impl Sync for Task {}
// SAFETY: all fields are Send.
unsafe impl Send for Task {}

/// What became of a task after one poll.
pub(crate) enum TaskRun {
    /// Pending and not woken: a waker holds it.
    Idle,
    /// Woken while it ran: run it again later.
    Reschedule,
    /// It completed.
    Finished,
}

impl Task {
    /// Polls the task once. The caller moved it out of a run queue (state `SCHEDULED`).
    pub(crate) fn run(self: Arc<Self>) -> TaskRun {
        // Acquire: pairs with the Release that scheduled it, so the previous poll's writes to
        // `future` (on another proc, perhaps) are visible.
        let prev = self.state.swap(RUNNING, Ordering::Acquire);
        debug_assert_eq!(prev, SCHEDULED);
        let waker = Waker::from(self.clone());
        let mut cx = Context::from_waker(&waker);
        // SAFETY: we hold the task in RUNNING, so we are the only thread touching `future`.
        let ready = self.future.with_mut(|f| match unsafe { &mut *f } {
            Some(fut) => fut.as_mut().poll(&mut cx).is_ready(),
            None => true,
        });
        if ready {
            // SAFETY: still RUNNING.
            let fut = self.future.with_mut(|f| unsafe { (*f).take() });
            drop(fut);
            // Release: nothing reads the future after DONE; orders the drop before it.
            self.state.store(DONE, Ordering::Release);
            return TaskRun::Finished;
        }
        // Release: publishes this poll's writes to the next runner (Acquire swap above).
        match self
            .state
            .compare_exchange(RUNNING, IDLE, Ordering::Release, Ordering::Relaxed)
        {
            // Nobody woke it: it waits for its waker.
            Ok(_) => TaskRun::Idle,
            // Woken while running (NOTIFIED): we reschedule it.
            Err(_) => {
                // Release: pairs with the next runner's Acquire swap.
                self.state.store(SCHEDULED, Ordering::Release);
                TaskRun::Reschedule
            }
        }
    }
}

impl Wake for Task {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            let next = match s {
                IDLE => SCHEDULED,
                RUNNING => NOTIFIED,
                // Already scheduled, already noted, or finished.
                _ => return,
            };
            // AcqRel: Acquire pairs with the runner's Release CAS to IDLE (its poll's writes);
            // Release hands them on to the next runner.
            match self
                .state
                .compare_exchange_weak(s, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) if next == SCHEDULED => {
                    if self.shared.is_shutdown() {
                        return;
                    }
                    worker::push_runnable(&self.shared, Runnable::Task(self.clone()));
                    return;
                }
                // The runner will reschedule it.
                Ok(_) => return,
                // State changed under us: look again.
                Err(actual) => s = actual,
            }
        }
    }
}

/// Every live task of a runtime, sharded to keep spawns on different procs apart.
pub(crate) struct TaskRegistry {
    shards: Box<[Shard]>,
}

type Shard = Mutex<std::collections::HashMap<u64, Arc<Task>>>;

const SHARDS: usize = 32;

impl TaskRegistry {
    pub(crate) fn new() -> Self {
        Self {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(Default::default()))
                .collect(),
        }
    }

    fn shard(&self, id: ThreadId) -> &Shard {
        &self.shards[id.as_u64() as usize % SHARDS]
    }

    pub(crate) fn insert(&self, task: &Arc<Task>) {
        self.shard(task.id)
            .lock()
            .unwrap()
            .insert(task.id.as_u64(), task.clone());
    }

    pub(crate) fn remove(&self, task: &Arc<Task>) {
        self.shard(task.id)
            .lock()
            .unwrap()
            .remove(&task.id.as_u64());
    }

    /// Drops the future of every task still registered. Called once the procs have stopped.
    pub(crate) fn shutdown(&self) {
        for shard in self.shards.iter() {
            let tasks: Vec<_> = shard.lock().unwrap().drain().map(|(_, t)| t).collect();
            for t in tasks {
                // SAFETY: the procs have stopped, so no thread holds the task in RUNNING.
                let fut = t.future.with_mut(|f| unsafe { (*f).take() });
                drop(fut);
                t.state.store(DONE, Ordering::Release);
            }
        }
    }
}

/// Wraps a user future: catches its panics and hands its result to the join state.
struct TaskFuture<F: Future> {
    fut: F,
    join: Option<Arc<JoinState<F::Output>>>,
}

impl<F: Future> Future for TaskFuture<F> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // SAFETY: `fut` is structurally pinned (never moved out while pinned); `join` is not.
        let this = unsafe { self.get_unchecked_mut() };
        let Some(join) = this.join.as_ref() else {
            return Poll::Ready(());
        };
        // SAFETY: see above.
        let fut = unsafe { Pin::new_unchecked(&mut this.fut) };
        let outcome = match catch_unwind(AssertUnwindSafe(|| fut.poll(cx))) {
            Ok(Poll::Pending) => return Poll::Pending,
            Ok(Poll::Ready(v)) => Ok(v),
            Err(payload) => Err(crate::sched::panic::join_error(join.id, payload)),
        };
        let join = this.join.take().expect("checked above");
        join.complete(outcome);
        Poll::Ready(())
    }
}

impl<F: Future> Drop for TaskFuture<F> {
    fn drop(&mut self) {
        if let Some(join) = self.join.take() {
            join.complete(Err(crate::JoinError::cancelled(join.id)));
        }
    }
}

/// Spawns `fut` as a task of `shared`, scheduled from the current thread.
pub(crate) fn spawn_on_runtime<F>(shared: &Arc<Shared>, fut: F) -> crate::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let id = ThreadId::next();
    let join = JoinState::new(id);
    let task = Arc::new(Task {
        id,
        state: AtomicU8::new(SCHEDULED),
        shared: shared.clone(),
        future: UnsafeCell::new(Some(Box::pin(TaskFuture {
            fut,
            join: Some(join.clone()),
        }))),
    });
    shared.count_live(1);
    shared.tasks.insert(&task);
    worker::push_runnable(shared, Runnable::Task(task));
    crate::JoinHandle::new(join)
}
