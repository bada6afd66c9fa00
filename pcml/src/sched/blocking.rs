//! The side pool of `spawn_blocking`: OS threads for work that would stall a proc.
//!
//! A blocking system call or a long computation on a proc stops every other thread of that
//! proc. `spawn_blocking` runs it on a separate OS thread instead; threads are made on demand
//! (up to `MAX_THREADS`), reused, and leave after `KEEP_ALIVE` idle.
//!
//! # Invariants
//! - `in_flight` counts jobs queued or running; deadlock detection reads it (a running job may
//!   still wake a blocked thread).

use std::collections::VecDeque;
use std::time::Duration;

use crate::sched::worker::Shared;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

const MAX_THREADS: usize = 512;
const KEEP_ALIVE: Duration = Duration::from_secs(10);

type Job = Box<dyn FnOnce() + Send>;

pub(crate) struct BlockingPool {
    state: Mutex<PoolState>,
    cvar: Condvar,
    /// Jobs queued or running. Incremented at submit, decremented after the job's result is
    /// published (SeqCst, read by deadlock detection after all procs sleep).
    in_flight: AtomicUsize,
}

#[derive(Default)]
struct PoolState {
    queue: VecDeque<Job>,
    threads: usize,
    idle: usize,
    shutdown: bool,
}

thread_local! {
    /// The runtime whose pool this thread serves, so jobs may spawn into it.
    static RUNTIME: std::cell::RefCell<Option<Arc<Shared>>> = const { std::cell::RefCell::new(None) };
}

/// The runtime of the current blocking-pool thread, if it is one.
pub(crate) fn current_shared() -> Option<Arc<Shared>> {
    RUNTIME.with(|r| r.borrow().clone())
}

impl BlockingPool {
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(PoolState::default()),
            cvar: Condvar::new(),
            in_flight: AtomicUsize::new(0),
        }
    }

    pub(crate) fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Runs `job` on a pool thread of `shared`.
    pub(crate) fn submit(shared: &Arc<Shared>, job: Job) {
        let pool = &shared.blocking;
        pool.in_flight.fetch_add(1, Ordering::SeqCst);
        let mut st = pool.state.lock().unwrap();
        st.queue.push_back(job);
        if st.idle > 0 {
            pool.cvar.notify_one();
        } else if st.threads < MAX_THREADS {
            st.threads += 1;
            let shared = shared.clone();
            let spawned = std::thread::Builder::new()
                .name("pcml-blocking".into())
                .spawn(move || pool_thread(shared));
            if spawned.is_err() {
                st.threads -= 1;
                assert!(
                    st.threads > 0,
                    "pcml::spawn_blocking: could not start an OS thread for the blocking pool"
                );
            }
        }
        // Else: all MAX_THREADS are busy; the job waits in the queue.
    }

    /// Stops idle threads; running jobs finish on their own.
    pub(crate) fn shutdown(&self) {
        let mut st = self.state.lock().unwrap();
        st.shutdown = true;
        let dropped: Vec<Job> = st.queue.drain(..).collect();
        self.in_flight.fetch_sub(dropped.len(), Ordering::SeqCst);
        drop(st);
        self.cvar.notify_all();
        drop(dropped);
    }
}

fn pool_thread(shared: Arc<Shared>) {
    let _own = crate::sched::outside::OwnThread::enter();
    RUNTIME.with(|r| *r.borrow_mut() = Some(shared.clone()));
    let pool = &shared.blocking;
    let mut st = pool.state.lock().unwrap();
    loop {
        if let Some(job) = st.queue.pop_front() {
            drop(st);
            crate::sched::panic::IN_BLOCKING_JOB.with(|b| b.set(true));
            job();
            crate::sched::panic::IN_BLOCKING_JOB.with(|b| b.set(false));
            pool.in_flight.fetch_sub(1, Ordering::SeqCst);
            shared.kick();
            st = pool.state.lock().unwrap();
            continue;
        }
        if st.shutdown {
            break;
        }
        st.idle += 1;
        let (guard, timeout) = pool.cvar.wait_timeout(st, KEEP_ALIVE).unwrap();
        st = guard;
        st.idle -= 1;
        if timeout.timed_out() && st.queue.is_empty() {
            break;
        }
    }
    st.threads -= 1;
    drop(st);
    RUNTIME.with(|r| r.borrow_mut().take());
}
