//! Locks for pcml threads: a [`Mutex`], a counting [`Semaphore`] and a reusable [`Barrier`].
//!
//! ```
//! use pcml::{Mutex, Semaphore};
//!
//! pcml::run(|| {
//!     let (counter, permits) = (Mutex::new(0), Semaphore::new(2));
//!     let workers: Vec<_> = (0..10)
//!         .map(|_| {
//!             let (counter, permits) = (counter.clone(), permits.clone());
//!             pcml::spawn(move || {
//!                 let _permit = permits.acquire(); // at most two at a time
//!                 *counter.lock() += 1;
//!             })
//!         })
//!         .collect();
//!     workers.into_iter().for_each(|w| w.join().unwrap());
//!     assert_eq!(*counter.lock(), 10);
//! });
//! ```
//!
//! Unlike `std::sync`'s, a pcml lock blocks only the thread that waits: a fiber suspends (its
//! proc runs other threads), a plain OS thread parks, an async task awaits. The mutex and the
//! semaphore are communication objects like an [`MVar`](crate::MVar): acquiring is an event
//! ([`Mutex::lock_evt`], [`Semaphore::acquire_evt`]) that composes in `choose`/`select`, with
//! a timeout for instance, and works from fibers, OS threads and async code (`.await`).
//!
//! Both hand off fairly: a release gives the lock (or permit) straight to the longest-waiting
//! live acquirer, first come first served, so a thread that arrives later cannot barge ahead.
//! The hand-off *delivers the guard itself* into the waiter's slot: if that waiter's sync is
//! then abandoned (a dropped `.await`, an unwinding fiber), the guard is dropped with it and
//! passes the lock on, so no lock is ever lost.
//!
//! # Poisoning
//! None. A thread that panics while holding a [`MutexGuard`] or a [`Permit`] releases it as
//! its stack unwinds, and the next waiter gets it, as with `parking_lot` and tokio's locks. The
//! protected data may then be half-updated: a type whose invariants a panic can break should
//! check or repair them after locking.
//!
//! # Differences from the CML library
//! The CML library has no locks (CML programs get mutual exclusion from an MVar or a server
//! thread); these follow its style: MVar-like objects whose blocking operations are events.
//! A [`Barrier`] round is an `n`-way meeting, so [`Barrier::wait_evt`] arrives when its sync
//! starts and withdraws the arrival if it loses before the round completes (see its docs).
//!
//! # Invariants
//! - Each object's state is touched only under its `std::sync::Mutex`, never held across a
//!   block or a yield; the only lock taken under it is a waiter's slot lock, a leaf. A guard
//!   or permit is never dropped under the object's lock (its drop takes that lock): queued
//!   slots are empty, and delivered ones leave the queue.
//! - `Mutex`: the value is in the cell exactly while the mutex is unlocked; while it is, no
//!   live waiter is queued (an unlock hands the value to the first live waiter instead).
//! - `Semaphore`: while `permits > 0`, no live waiter is queued (a release serves waiters
//!   first).
//! - `Barrier`: `arrived < n`; the threads of one generation wait on that generation's IVar,
//!   which the `n`th arrival fills after starting a new generation.

#[cfg(all(test, pcml_loom))]
mod tests;

mod barrier;
mod mutex;
mod semaphore;

pub use barrier::{Barrier, BarrierWait};
pub use mutex::{Mutex, MutexGuard};
pub use semaphore::{Permit, Semaphore};
