//! Inline events: a small base event with a direct path (a channel's `send_evt`/`recv_evt`)
//! held in its [`Event`](super::Event) itself, with no box.
//!
//! A one-branch sync or `.await` of such an event is the object's own direct operation (see
//! "Direct syncs" in `rep`), so the box, the virtual calls through `Branch` and the general
//! future's state machine were most of what a channel event's `.await` cost beyond
//! `Chan::recv_async` (callgrind, `examples/taskpp`: 2,657 instructions a round trip of four
//! `.await`s against 1,679 with `recv_async`/`send_async`). Held inline, the event is polled
//! in place by [`SyncFuture`](super::SyncFuture) through a table of four functions made for
//! its type (2,022 instructions a round trip, against 1,653 with `recv_async`/`send_async`).
//! A poll that completes drops the event itself, where its type is known, and leaves the
//! `Inline` spent, so the future overwrites it with no call through the table (1,860 a
//! round trip: the drop glue and the table's `drop` cost about 40 instructions an `.await`).
//! Anything else, a choice, a `wrap`, a `poll`, turns it into the ordinary boxed branch first
//! ([`Inline::into_branch`]), which behaves exactly as before; that conversion costs a choice
//! about 47 instructions a branch (`examples/choose1`: 3,562 -> 3,762 a message over four
//! channels).
//!
//! Tried and not kept: polling a `Chan::recv_evt` inline with its type known (a kind byte in
//! the table, which with the output type names the event's type, so `SyncFuture` could call
//! its poll directly and inline): the indirect call went, but the receive's body, inlined
//! into each awaiting future's poll, cost more than the call's frame it saved (1,310 ->
//! 1,323 instructions a round trip of `examples/taskpp` with the body called directly, 1,326
//! with it inline).
//!
//! # Invariants
//! - `buf` holds a valid `E` for the `E` that `vt` was made for, from `Inline::new` until
//!   one of `into_branch`, `sync`, the drop or a `poll` that returns `Ready` consumes it,
//!   exactly once. The last sets `vt` to the spent table (whose drop does nothing) before it
//!   drops the event, so the owner of a sync that completed need not drop its `Inline`
//!   (`SyncFuture` overwrites it without a call through the table).
//! - An `E` is placed inline only if it fits `buf` in size and alignment ([`fits`]); others
//!   are boxed by [`Event::from_inline`](super::Event::from_inline).

use std::marker::PhantomData;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::ptr::NonNull;
use std::task::{Context, Poll};

use super::branch::Branch;

/// Words of storage an inline event has: a channel handle, a message of up to two words with
/// its `Option` tag, and the wait of a queued async offer (two words).
const WORDS: usize = 5;

/// A base event that may be held inline: small, with a direct path for a one-branch sync.
pub(crate) trait InlineBase: Send + Sized + 'static {
    /// What a sync of it yields.
    type Output;
    /// The ordinary boxed branch of this event, for a choice, a `wrap` or a `poll`. Only
    /// called before the first `poll_direct`.
    fn into_branch(self) -> Box<dyn Branch<Self::Output>>;
    /// A blocking one-branch sync (the caller is a fiber or an OS thread).
    fn sync_direct(self) -> Self::Output;
    /// An async one-branch sync, polled with `cx`: on `Pending` the event owns a queued
    /// offer whose waker is `cx`'s, withdrawn if the event is dropped (as
    /// `DirectBase::poll_direct`).
    fn poll_direct(&mut self, cx: &mut Context<'_>) -> Poll<Self::Output>;
}

/// Whether an `E` fits an inline event's storage.
pub(crate) const fn fits<E>() -> bool {
    size_of::<E>() <= WORDS * size_of::<usize>() && align_of::<E>() <= align_of::<usize>()
}

/// The operations of one inline event type, erased to its output type.
struct VTable<T> {
    into_branch: unsafe fn(*mut u8) -> Box<dyn Branch<T>>,
    sync: unsafe fn(*mut u8) -> T,
    /// Polls the event of an `Inline` holding one; on `Ready` the event is spent (see
    /// [`Inline::poll`]).
    poll: unsafe fn(&mut Inline<T>, &mut Context<'_>) -> Poll<T>,
    drop: unsafe fn(*mut u8),
}

/// The table of an `Inline` whose event is spent (dropped by a `poll` that returned
/// `Ready`): its drop does nothing, and nothing else may be called.
struct Spent<T>(PhantomData<T>);

impl<T> Spent<T> {
    const VT: VTable<T> = VTable {
        into_branch: Self::into_branch,
        sync: Self::sync,
        poll: Self::poll,
        drop: Self::drop,
    };

    unsafe fn into_branch(_: *mut u8) -> Box<dyn Branch<T>> {
        unreachable!("pcml: a spent inline event turned into a branch")
    }

    unsafe fn sync(_: *mut u8) -> T {
        unreachable!("pcml: a spent inline event synced")
    }

    unsafe fn poll(_: &mut Inline<T>, _: &mut Context<'_>) -> Poll<T> {
        unreachable!("pcml: a spent inline event polled")
    }

    unsafe fn drop(_: *mut u8) {}
}

/// The table of `E`.
struct VTableOf<E>(PhantomData<E>);

impl<E: InlineBase> VTableOf<E> {
    const VT: VTable<E::Output> = VTable {
        into_branch: Self::into_branch,
        sync: Self::sync,
        poll: Self::poll,
        drop: Self::drop,
    };

    /// # Safety
    /// `p` holds a valid `E`, which this call consumes.
    unsafe fn into_branch(p: *mut u8) -> Box<dyn Branch<E::Output>> {
        // SAFETY: per the contract.
        unsafe { p.cast::<E>().read() }.into_branch()
    }

    /// # Safety
    /// As `into_branch`.
    unsafe fn sync(p: *mut u8) -> E::Output {
        // SAFETY: per the contract.
        unsafe { p.cast::<E>().read() }.sync_direct()
    }

    /// # Safety
    /// `inline` holds a valid `E` (its table is this one).
    unsafe fn poll(inline: &mut Inline<E::Output>, cx: &mut Context<'_>) -> Poll<E::Output> {
        let p = inline.ptr().cast::<E>();
        // SAFETY: per the contract.
        let r = unsafe { &mut *p }.poll_direct(cx);
        if r.is_ready() {
            // Done with: dropped here, where its type is known (no call through the table
            // from the owner's drop), after the table says so, so that nothing drops it again
            // even if its drop panics.
            inline.vt = NonNull::from(&Spent::<E::Output>::VT);
            // SAFETY: valid (the contract), and never reached again (the table above).
            unsafe { p.drop_in_place() };
        }
        r
    }

    /// # Safety
    /// As `into_branch`.
    unsafe fn drop(p: *mut u8) {
        // SAFETY: per the contract.
        unsafe { p.cast::<E>().drop_in_place() }
    }
}

/// An inline base event, its type erased to its output `T`.
pub(crate) struct Inline<T> {
    buf: MaybeUninit<[usize; WORDS]>,
    /// A `&'static VTable<T>` (a pointer only so that `T` needs no `'static` bound here;
    /// it also keeps `Inline` from being `Send` or `Sync` by itself).
    vt: NonNull<VTable<T>>,
}

// SAFETY: `buf` holds an `E: InlineBase`, which is `Send`, and `vt` points to a table of
// plain functions. Never `Sync` (an `Event` is not).
unsafe impl<T> Send for Inline<T> {}

impl<T> Inline<T> {
    /// Holds `e` inline; `fits::<E>()` must hold.
    pub(crate) fn new<E: InlineBase<Output = T>>(e: E) -> Self {
        assert!(
            fits::<E>(),
            "pcml: an inline event too large for its storage"
        );
        let mut buf = MaybeUninit::<[usize; WORDS]>::uninit();
        // SAFETY: `buf` is large and aligned enough for an `E` (checked above).
        unsafe { buf.as_mut_ptr().cast::<E>().write(e) };
        Inline {
            buf,
            vt: NonNull::from(&VTableOf::<E>::VT),
        }
    }

    fn ptr(&mut self) -> *mut u8 {
        self.buf.as_mut_ptr().cast()
    }

    fn vt(&self) -> &VTable<T> {
        // SAFETY: `vt` is a `&'static` (field doc).
        unsafe { self.vt.as_ref() }
    }

    /// The ordinary boxed branch of the event (before any `poll`).
    pub(crate) fn into_branch(self) -> Box<dyn Branch<T>> {
        let mut me = ManuallyDrop::new(self);
        // SAFETY: `buf` holds the valid `E` of `vt` (module invariants), consumed here once:
        // `me` is not dropped.
        unsafe { (me.vt().into_branch)(me.ptr()) }
    }

    /// A blocking one-branch sync of the event.
    pub(crate) fn sync(self) -> T {
        let mut me = ManuallyDrop::new(self);
        // SAFETY: as in `into_branch`.
        unsafe { (me.vt().sync)(me.ptr()) }
    }

    /// An async one-branch sync of the event, polled with `cx`. On `Ready` the event is
    /// spent: it has been dropped, and this `Inline`'s own drop does nothing (its owner may
    /// forget it instead); it must not be polled again.
    #[inline]
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<T> {
        let poll = self.vt().poll;
        // SAFETY: `buf` holds the valid `E` of `vt` (module invariants).
        unsafe { poll(self, cx) }
    }
}

impl<T> Drop for Inline<T> {
    fn drop(&mut self) {
        // SAFETY: `buf` holds the valid `E` of `vt`, not consumed (the consuming methods
        // do not drop `self`).
        unsafe { (self.vt().drop)(self.ptr()) }
    }
}
