//! The shim through which the protocol reaches atomics, cells, locks and threads.
//!
//! Under `--cfg pcml_loom` every item here is loom's model-checked twin, so the same source of
//! the inbox, the parker and the event protocol is explored by loom's bounded-preemption search,
//! as the Parallel CML paper (Reppy, Russo and Xiao 2009, section 7) checked its protocol with a stateless model
//! checker. In ordinary builds the items are the standard library's, at no cost.
//!
//! # Invariants
//! - Code that takes part in a cross-thread protocol imports its `Arc`, `Mutex`, `Condvar`,
//!   atomics and `UnsafeCell` from here, never from `std` directly.
//! - [`UnsafeCell`] is reached only through `with` and `with_mut`, the API loom can check.

#![allow(unused_imports, dead_code)]

#[cfg(pcml_loom)]
mod imp {
    pub(crate) mod sync {
        pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
        pub(crate) mod atomic {
            pub(crate) use loom::sync::atomic::{
                AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
            };
        }
    }
    pub(crate) mod cell {
        pub(crate) use loom::cell::UnsafeCell;
    }
    pub(crate) mod thread {
        pub(crate) use loom::thread::{Thread, current, park, spawn, yield_now};
    }
    /// Spin-loop hint; under loom a yield so the model can make progress.
    pub(crate) fn spin_loop() {
        loom::thread::yield_now();
    }
}

#[cfg(not(pcml_loom))]
mod imp {
    pub(crate) mod sync {
        pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};
        pub(crate) mod atomic {
            pub(crate) use std::sync::atomic::{
                AtomicBool, AtomicPtr, AtomicU8, AtomicU32, AtomicU64, AtomicUsize, Ordering, fence,
            };
        }
    }
    pub(crate) mod cell {
        pub(crate) use super::super::PlainCell as UnsafeCell;
    }
    pub(crate) mod thread {
        pub(crate) use std::thread::{Thread, current, park, spawn, yield_now};
    }
    /// Spin-loop hint.
    #[inline(always)]
    pub(crate) fn spin_loop() {
        std::hint::spin_loop();
    }
}

pub(crate) use imp::*;

/// `std::cell::UnsafeCell` with loom's closure-based access API, never model-checked: for state
/// outside the protocols loom explores (join results, task futures).
#[derive(Debug, Default)]
#[repr(transparent)]
pub(crate) struct PlainCell<T: ?Sized>(std::cell::UnsafeCell<T>);

impl<T> PlainCell<T> {
    pub(crate) const fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }
    pub(crate) fn into_inner(self) -> T {
        self.0.into_inner()
    }
}

impl<T: ?Sized> PlainCell<T> {
    /// Runs `f` with a shared raw pointer to the contents.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }
    /// Runs `f` with an exclusive raw pointer to the contents.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}
