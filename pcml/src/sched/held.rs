//! A proc's held fiber: the oldest unstarted fiber spawned on the proc, kept out of the
//! work-stealing deque so that a join soon after takes it back cheaply, yet still stealable by
//! an idle proc.
//!
//! The slot holds at most one item and a state byte. Only the owning proc puts and takes
//! back; idle procs steal. A runtime of one proc has no thieves and keeps its held fiber in
//! its private context instead (`worker`), with no atomic operation at all.
//!
//! # Why the owner uses no read-modify-write
//!
//! The owner puts and takes back once per spawn+join (the spawn+join loop of Reppy, Russo and
//! Xiao's benchmark does nothing else), while a thief steals a held fiber only after watching
//! it for `HELD_GRACE` (milliseconds, see the `sched` docs): the two sides are as lopsided as
//! can be. So the slot uses an asymmetric Dekker pair: the owner's take is a plain store of
//! `EMPTY`, a compiler fence and a load of the thieves' flag `steal`; a thief raises `steal`,
//! then has the kernel run a full memory barrier on every CPU that runs a thread of the
//! process (`membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`, a few microseconds), then loads
//! `state`. Either the owner's load comes after that barrier and sees the flag (and waits for
//! the thief's verdict), or its store came before it and the thief sees `EMPTY` (and backs
//! off). The owner's side costs no locked instruction: a 2-proc spawn+join took a CAS (the
//! `lock cmpxchg` of the take, about 20 cycles and a drain of the store buffer) that a 1-proc
//! one does not. Where the kernel refuses `membarrier` (before Linux 4.14, under a seccomp
//! filter, off Linux, or under loom), both sides use a `SeqCst` fence instead, a symmetric
//! Dekker pair: correct, and no cheaper than the CAS it replaces.
//!
//! The price: a thief pays a system call and an inter-processor interrupt per steal of a held
//! fiber (rare: each waited 2 ms first), and an owner that takes back while a thief is at
//! work waits for the thief's verdict (spinning, then yielding its OS thread: a thief
//! descheduled mid-steal holds the owner up until it runs again).
//!
//! # Invariants
//! - `item` is written only by the owner: in `try_put` while `state` is `EMPTY` in its view,
//!   and in `take_if` once it stored `EMPTY` and saw `steal` down (or the thief's verdict
//!   given). A thief touches `item` only while it holds `steal` and saw `state` `FULL` after
//!   its barrier. The Dekker pair above keeps the two apart.
//! - `state` goes `EMPTY -> FULL` only by the owner's `try_put`, after it wrote `item`;
//!   `FULL -> EMPTY` by the owner's take or by a thief that moved the item out.
//! - `steal` is raised (`0 -> 1`) by a thief's CAS, and lowered by the same thief after its
//!   last touch of `item` and `state`; at most one thief works at a time.
//! - `item` is `Some` whenever `state` is `FULL` outside a put, a take or a steal.

use crate::loom::cell::UnsafeCell;
use crate::loom::sync::atomic::{AtomicBool, AtomicU8, AtomicU32, Ordering, fence};

const EMPTY: u8 = 0;
const FULL: u8 = 1;

/// Whether the kernel runs the thieves' barrier (`membarrier` registered): set once, by
/// [`prepare_thieves`], before any proc of a runtime of several procs runs, and never
/// cleared. An owner that reads `false` uses a fence, which is correct either way.
#[cfg_attr(pcml_loom, allow(dead_code))]
static ASYMMETRIC: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Registers the process for the thieves' barrier, once; called by a runtime of several
/// procs before its worker threads start (their spawn orders the flag's store before any use).
pub(crate) fn prepare_thieves() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        if membarrier::register() {
            // Relaxed: the worker threads that read it are spawned after this store.
            ASYMMETRIC.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
}

/// The owner's half of the Dekker pair: orders its store of `EMPTY` before its load of
/// `steal`.
#[inline(always)]
fn owner_barrier() {
    #[cfg(not(pcml_loom))]
    // Relaxed: set before the procs' threads started (see `ASYMMETRIC`).
    if ASYMMETRIC.load(std::sync::atomic::Ordering::Relaxed) {
        // The thieves' membarrier serializes this CPU: only the compiler must keep order.
        std::sync::atomic::compiler_fence(Ordering::SeqCst);
        return;
    }
    // SeqCst: the store-then-load order of a Dekker pair, which acquire/release does not
    // give; pairs with the thief's fence in `thief_barrier`.
    fence(Ordering::SeqCst);
}

/// The thief's half: orders its raise of `steal` before its load of `state`, and makes the
/// owner's earlier stores visible. `false` if the kernel's barrier failed (which a registered
/// process does not see): the thief then backs off without looking.
#[inline(never)]
fn thief_barrier() -> bool {
    #[cfg(not(pcml_loom))]
    // Relaxed: as in `owner_barrier`.
    if ASYMMETRIC.load(std::sync::atomic::Ordering::Relaxed) {
        return membarrier::expedited();
    }
    // SeqCst: pairs with the owner's fence in `owner_barrier`: the store-then-load order of
    // a Dekker pair, which acquire/release does not give.
    fence(Ordering::SeqCst);
    true
}

// Miri cannot run the system call: under it the slot takes the fence path, as where the
// kernel lacks the barrier.
#[cfg(all(target_os = "linux", not(pcml_loom), not(miri)))]
mod membarrier {
    const QUERY: libc::c_long = 0;
    const PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    const REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

    fn call(cmd: libc::c_long) -> libc::c_long {
        // SAFETY: membarrier takes two integers and touches no memory of ours.
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                cmd,
                0 as libc::c_long,
                0 as libc::c_long,
            )
        }
    }

    /// Registers the process for private expedited barriers; `false` if the kernel lacks them.
    pub(super) fn register() -> bool {
        let cmds = call(QUERY);
        cmds >= 0 && cmds & PRIVATE_EXPEDITED != 0 && call(REGISTER_PRIVATE_EXPEDITED) == 0
    }

    /// A full memory barrier on every CPU running a thread of this process.
    pub(super) fn expedited() -> bool {
        call(PRIVATE_EXPEDITED) == 0
    }
}

#[cfg(not(all(target_os = "linux", not(pcml_loom), not(miri))))]
mod membarrier {
    pub(super) fn register() -> bool {
        false
    }

    #[allow(dead_code)]
    pub(super) fn expedited() -> bool {
        false
    }
}

/// A one-item slot that its owner fills and takes back, and idle procs may steal from.
pub(crate) struct HeldSlot<T> {
    /// `EMPTY` or `FULL`: written by the owner, and by a thief (to `EMPTY`) that moved the
    /// item out while holding `steal`; read by both, and by idle procs as a hint.
    state: AtomicU8,
    /// Raised by the one thief at work (a CAS among thieves), lowered by it when done; read by
    /// the owner after its store of `EMPTY` (the Dekker pair in the module docs).
    steal: AtomicBool,
    /// How many items the owner has put, wrapping: written only by the owner's `try_put`
    /// (a plain load and store), read by idle procs to tell one held item from the next
    /// (`ticket`).
    puts: AtomicU32,
    item: UnsafeCell<Option<T>>,
}

// SAFETY: `item` is reached by one thread at a time, as the module invariants say, and `T` is
// moved between threads (`T: Send`).
unsafe impl<T: Send> Sync for HeldSlot<T> {}
// SAFETY: as above.
unsafe impl<T: Send> Send for HeldSlot<T> {}

impl<T> HeldSlot<T> {
    pub(crate) fn new() -> Self {
        Self {
            state: AtomicU8::new(EMPTY),
            steal: AtomicBool::new(false),
            puts: AtomicU32::new(0),
            item: UnsafeCell::new(None),
        }
    }

    /// Whether an item is (probably) held: a hint for idle procs and the owner's loop.
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.state.load(Ordering::Relaxed) == FULL
    }

    /// Puts `item` (owner only) if the slot is empty; gives it back if the slot holds one.
    #[inline]
    pub(crate) fn try_put(&self, item: T) -> Result<(), T> {
        if !self.can_put() {
            return Err(item);
        }
        self.put(item);
        Ok(())
    }

    /// Whether the slot is empty, so that the owner may [`put`](Self::put) (owner only: only
    /// the owner fills the slot, so it stays empty until the owner puts).
    #[inline]
    pub(crate) fn can_put(&self) -> bool {
        // Acquire: pairs with a thief's Release store of EMPTY, so its move out of `item`
        // happens before our write in `put`. (Our own stores of EMPTY need no pairing.)
        self.state.load(Ordering::Acquire) != FULL
    }

    /// Puts `item` (owner only) into the slot, which [`can_put`](Self::can_put) just found
    /// empty. (Split from `try_put` so that a spawn writes the fiber straight into the slot:
    /// the `Result` that gives it back cost the spawn a copy of it through the stack.)
    #[inline]
    pub(crate) fn put(&self, item: T) {
        debug_assert!(self.can_put(), "pcml: a put into a full held slot");
        // SAFETY: the state is EMPTY: no thief touches `item` (one that saw FULL before
        // moved the item out and stored EMPTY, which `can_put` read, after its last touch),
        // and only the owner (us) writes it (module invariants). The item is `None` then, so
        // it is written without a drop.
        self.item.with_mut(|p| unsafe { p.write(Some(item)) });
        // Relaxed: only the owner writes `puts`; readers use it as a hint (see `ticket`).
        self.puts.store(
            self.puts.load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
        // Release: publishes `item` to a thief's Acquire load of `state` after its barrier.
        self.state.store(FULL, Ordering::Release);
    }

    /// A number that changes with every item put: an idle proc that sees the slot full with
    /// the same ticket twice, some time apart, knows the item waited all that time (barring
    /// 2^32 puts in between).
    #[inline]
    pub(crate) fn ticket(&self) -> u32 {
        // Relaxed: a hint; taking the item is what synchronizes.
        self.puts.load(Ordering::Relaxed)
    }

    /// Takes the held item back (owner only) if `want` accepts it.
    #[inline]
    pub(crate) fn take_if(&self, want: impl FnOnce(&T) -> bool) -> Option<T> {
        // Relaxed: a stale FULL (a thief emptied the slot) is caught below: the item is gone.
        if self.state.load(Ordering::Relaxed) != FULL {
            return None;
        }
        // Relaxed: ordered before the load of `steal` by the barrier (the Dekker pair).
        self.state.store(EMPTY, Ordering::Relaxed);
        owner_barrier();
        // Acquire: pairs with a thief's Release lowering of `steal`, so a move out of `item`
        // that it made is visible.
        if self.steal.load(Ordering::Acquire) {
            self.await_thief();
        }
        // SAFETY: no thief is at work, and any that comes sees EMPTY (the Dekker pair): we
        // alone touch `item` (module invariants).
        self.item.with_mut(|p| unsafe {
            match &*p {
                Some(v) if want(v) => (*p).take(),
                Some(_) => {
                    // Refused: held again. Release: as in `try_put` (a thief that reads FULL
                    // then reads `item`).
                    self.state.store(FULL, Ordering::Release);
                    None
                }
                // A thief moved it out.
                None => None,
            }
        })
    }

    /// Waits for the thief at work to give its verdict (owner only): it either backs off or
    /// moves the item out, in a few instructions after its barrier, unless its thread loses
    /// its core meanwhile.
    #[cold]
    #[inline(never)]
    fn await_thief(&self) {
        let mut spins = 0u32;
        // Acquire: as in `take_if`.
        while self.steal.load(Ordering::Acquire) {
            spins += 1;
            if spins < 1 << 10 {
                crate::loom::spin_loop();
            } else {
                crate::loom::thread::yield_now();
            }
        }
    }

    /// Steals the held item (a thief, never the owner).
    #[inline]
    pub(crate) fn steal(&self) -> Option<T> {
        if self
            .steal
            // Acquire: pairs with the last thief's Release lowering of the flag, so its move
            // out of `item` happens before ours. A failed CAS: another thief is at work.
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        // Acquire: pairs with the owner's Release store of FULL in `try_put`, making `item`
        // visible.
        let taken = if thief_barrier() && self.state.load(Ordering::Acquire) == FULL {
            // SAFETY: we hold `steal` and saw FULL after the barrier: the owner stays off
            // `item` until we lower the flag (module invariants).
            let taken = self.item.with_mut(|p| unsafe { (*p).take() });
            // Release: our move out of `item` happens before the owner's next put (its
            // Acquire load of `state`).
            self.state.store(EMPTY, Ordering::Release);
            taken
        } else {
            None
        };
        // Release: our touch of `item` happens before the owner's take (its Acquire load of
        // `steal`) and the next thief's (its Acquire CAS).
        self.steal.store(false, Ordering::Release);
        taken
    }
}

#[cfg(all(test, not(pcml_loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool as StdBool;

    #[test]
    fn the_owner_takes_back_what_it_put_and_a_refusal_keeps_it_held() {
        let slot = HeldSlot::new();
        assert!(slot.can_put());
        slot.put(7u32);
        assert!(slot.is_full());
        assert_eq!(slot.try_put(8), Err(8), "a full slot gives the item back");
        assert_eq!(slot.take_if(|v| *v == 8), None, "refused: still held");
        assert!(slot.is_full());
        assert_eq!(slot.take_if(|v| *v == 7), Some(7));
        assert!(!slot.is_full());
        assert_eq!(slot.take_if(|_| true), None, "empty");
    }

    #[test]
    fn a_thief_steals_what_is_held_and_the_owner_then_finds_it_gone() {
        prepare_thieves();
        let slot = HeldSlot::new();
        assert_eq!(slot.steal(), None::<u32>, "nothing held");
        let t0 = slot.ticket();
        slot.put(1u32);
        assert_ne!(slot.ticket(), t0, "a put moves the ticket");
        assert_eq!(slot.steal(), Some(1));
        assert!(!slot.is_full());
        assert_eq!(slot.take_if(|_| true), None);
        assert!(slot.can_put(), "a stolen slot takes the next put");
        slot.put(2);
        assert_eq!(slot.take_if(|_| true), Some(2));
    }

    /// The owner puts and takes back (sometimes refusing first) as fast as it can while a
    /// thief on another thread steals whenever it sees the slot full: each item comes out
    /// exactly once, to one side or the other, with the kernel's barrier (or the fences where
    /// it is missing) as the only thing between them.
    #[test]
    fn items_come_out_exactly_once_while_a_thief_steals_on_another_thread() {
        prepare_thieves();
        const N: u32 = 20_000;
        let slot = Arc::new(HeldSlot::new());
        let stop = Arc::new(StdBool::new(false));
        let thief = {
            let (slot, stop) = (slot.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut stolen = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    if slot.is_full()
                        && let Some(v) = slot.steal()
                    {
                        stolen.push(v);
                    }
                    std::hint::spin_loop();
                }
                stolen
            })
        };
        let mut mine = Vec::new();
        for i in 0..N {
            slot.put(i);
            // A varying window in which the thief may come: short, and every 8th time long
            // enough for a steal or two (each a system call).
            let window = if i % 8 == 0 { (i % 64) * 64 } else { i % 64 };
            for _ in 0..window {
                std::hint::spin_loop();
            }
            if i % 3 == 0 {
                assert_eq!(slot.take_if(|_| false), None, "a refusal takes nothing");
            }
            if let Some(v) = slot.take_if(|v| *v == i) {
                mine.push(v);
            }
            assert!(slot.can_put(), "the slot is empty after a take-back");
        }
        stop.store(true, Ordering::Relaxed);
        let stolen = thief.join().unwrap();
        let mut all: Vec<u32> = mine.into_iter().chain(stolen).collect();
        all.sort_unstable();
        assert_eq!(all, (0..N).collect::<Vec<_>>(), "every item exactly once");
    }
}
