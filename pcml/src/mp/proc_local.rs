//! Per-proc data (Morrisett and Tolmach 1992, section 4.2: the proc datum).
//!
//! One slot per proc of one runtime. A slot is touched only by code running on its proc, and
//! a proc runs one thread at a time with no preemption, so access needs no lock: a borrow flag
//! catches the one misuse that remains, re-entering `with` from inside `with` on the same proc.
//!
//! # Invariants
//! - Slot `i` is read and written only on the worker thread of proc `i` of runtime `runtime`,
//!   or through `&mut self`.
//! - `busy[i]` is `true` exactly while a `with` call on slot `i` is running.

use std::cell::Cell;
use std::fmt;

use crossbeam_utils::CachePadded;

use crate::loom::cell::UnsafeCell;

struct Slot<T> {
    busy: Cell<bool>,
    value: UnsafeCell<T>,
}

/// A value per proc of the runtime it was made in, reached without locks.
///
/// # Examples
/// ```
/// use pcml::mp::ProcLocal;
/// use std::sync::Arc;
///
/// let total = pcml::run(|| {
///     let hits = Arc::new(ProcLocal::new(|_proc| 0u64));
///     let handles: Vec<_> = (0..100)
///         .map(|_| {
///             let hits = hits.clone();
///             pcml::spawn(move || hits.with(|n| *n += 1))
///         })
///         .collect();
///     for h in handles {
///         h.join().unwrap();
///     }
///     Arc::try_unwrap(hits).ok().unwrap().into_iter().sum::<u64>()
/// });
/// assert_eq!(total, 100);
/// ```
pub struct ProcLocal<T> {
    runtime: u64,
    slots: Box<[CachePadded<Slot<T>>]>,
}

// SAFETY: each slot is reached only from its own proc's worker thread (checked in `with`), so
// sharing the ProcLocal between threads hands each T to one thread at a time: T: Send suffices.
unsafe impl<T: Send> Sync for ProcLocal<T> {}
// SAFETY: the ProcLocal owns its values.
unsafe impl<T: Send> Send for ProcLocal<T> {}

impl<T> ProcLocal<T> {
    /// Makes one slot per proc of the current runtime, slot `i` initialised with `init(i)`.
    ///
    /// # Panics
    /// Outside a pcml runtime, since there are no procs to count.
    pub fn new(mut init: impl FnMut(usize) -> T) -> Self {
        let (runtime, _, procs) = crate::sched::location().unwrap_or_else(|| {
            panic!("pcml::mp::ProcLocal::new called outside a pcml runtime: make it inside pcml::run or Runtime::block_on")
        });
        Self {
            runtime,
            slots: (0..procs)
                .map(|i| {
                    CachePadded::new(Slot {
                        busy: Cell::new(false),
                        value: UnsafeCell::new(init(i)),
                    })
                })
                .collect(),
        }
    }

    /// Runs `f` on the current proc's value.
    ///
    /// `f` must not block, yield or sync: another thread on this proc could then enter `with`
    /// on the same slot. That re-entry is caught and panics.
    ///
    /// # Panics
    /// Outside the runtime that made this `ProcLocal`, or when re-entered on the same proc.
    ///
    /// ```
    /// pcml::run(|| {
    ///     let datum = pcml::mp::ProcLocal::new(|proc| proc);
    ///     let mine = datum.with(|v| *v);
    ///     assert_eq!(Some(mine), pcml::current_proc());
    /// });
    /// ```
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let proc = match crate::sched::location() {
            Some((rt, proc, _)) if rt == self.runtime => proc,
            _ => {
                panic!("pcml::mp::ProcLocal::with called off the procs of the runtime that made it")
            }
        };
        let slot = &self.slots[proc];
        assert!(
            !slot.busy.replace(true),
            "pcml::mp::ProcLocal::with re-entered on proc {proc}: a thread blocked or yielded inside `with`"
        );
        struct Release<'a>(&'a Cell<bool>);
        impl Drop for Release<'_> {
            fn drop(&mut self) {
                self.0.set(false);
            }
        }
        let _release = Release(&slot.busy);
        // SAFETY: we run on the worker thread of `proc` (checked above), the only thread that
        // reaches this slot, and the busy flag rules out a second `&mut` on this thread.
        slot.value.with_mut(|p| f(unsafe { &mut *p }))
    }

    /// The current proc's value, copied out.
    ///
    /// ```
    /// pcml::run(|| {
    ///     let datum = pcml::mp::ProcLocal::new(|_| 5u32);
    ///     datum.set(6);
    ///     assert_eq!(datum.get(), 6);
    /// });
    /// ```
    pub fn get(&self) -> T
    where
        T: Copy,
    {
        self.with(|v| *v)
    }

    /// Replaces the current proc's value.
    pub fn set(&self, value: T) {
        self.with(|v| *v = value);
    }

    /// The number of slots (the procs of the runtime that made this).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there are no slots (never, for a `ProcLocal` made in a runtime).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Mutable access to every slot, in proc order.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.slots
            .iter_mut()
            // SAFETY: `&mut self` rules out any other access.
            .map(|s| s.value.with_mut(|p| unsafe { &mut *p }))
    }
}

impl<T> IntoIterator for ProcLocal<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;
    /// The values in proc order.
    fn into_iter(self) -> Self::IntoIter {
        self.slots
            .into_vec()
            .into_iter()
            .map(|s| CachePadded::into_inner(s).value.into_inner())
            .collect::<Vec<_>>()
            .into_iter()
    }
}

impl<T> fmt::Debug for ProcLocal<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcLocal")
            .field("procs", &self.slots.len())
            .finish_non_exhaustive()
    }
}
