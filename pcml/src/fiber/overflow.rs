//! Turning a fiber stack overflow into a message instead of a bare segfault.
//!
//! Each worker records the guard page of the fiber it is running. A SIGSEGV/SIGBUS handler,
//! installed once per process and running on the worker's alternate signal stack, checks
//! whether the faulting address lies in that guard page. If so it writes what happened and how
//! to raise the stack size, then aborts; otherwise it passes the signal to the handler that was
//! installed before (Rust's own, which reports overflows of OS thread stacks).
//!
//! # Invariants
//! - `WORKER` points at a worker thread's record of its running fiber's guard page (null on
//!   other threads). While the worker loop or a task runs, the record may still name the
//!   guard page of the fiber that last ran there (suspended, its stack mapped): the worker
//!   does not clear it at each switch, only when a fiber ends. No code runs on that stack
//!   meanwhile; a stray access to the page would be reported as that fiber's overflow (and
//!   abort, as the default handler would).
//! - The handler only reads thread-locals that need no initialisation and calls
//!   async-signal-safe functions (`write`, `abort`, `sigaction`).

use std::cell::Cell;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::Once;

thread_local! {
    /// Set on a worker thread: where its running fiber's guard page starts (the worker's
    /// `Context::guard`: 0 before any fiber ran and after one ended, else the page of the
    /// fiber that runs or last ran), and its runtime's fiber stack size.
    static WORKER: Cell<(*const Cell<usize>, usize)> = const { Cell::new((std::ptr::null(), 0)) };
}

static INSTALL: Once = Once::new();
static mut OLD_SEGV: MaybeUninit<libc::sigaction> = MaybeUninit::uninit();
static mut OLD_BUS: MaybeUninit<libc::sigaction> = MaybeUninit::uninit();

/// Installs the process-wide handler (once) and an alternate signal stack on this worker
/// thread. `guard` is the worker's record of its running fiber's guard page; it must outlive
/// every fiber run on this thread (the worker clears the registration with `uninstall`).
pub(crate) fn install_for_this_thread(guard: &Cell<usize>, stack_size: usize) {
    WORKER.with(|w| w.set((guard as *const Cell<usize>, stack_size)));
    INSTALL.call_once(|| {
        // SAFETY: plain libc calls with valid pointers; OLD_* are written once here, before
        // any handler that reads them can run (the handler is installed by these very calls).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(
                libc::SIGSEGV,
                &action,
                (&raw mut OLD_SEGV).cast::<libc::sigaction>(),
            );
            libc::sigaction(
                libc::SIGBUS,
                &action,
                (&raw mut OLD_BUS).cast::<libc::sigaction>(),
            );
        }
    });
    ensure_altstack();
}

/// Points this thread's registration at another proc's guard cell (a thread that runs
/// several procs, switching between them); `install_for_this_thread` must have run.
#[inline]
pub(crate) fn point_at(guard: &Cell<usize>) {
    WORKER.with(|w| {
        let (_, size) = w.get();
        w.set((guard as *const Cell<usize>, size));
    });
}

/// Forgets this thread's worker registration (before its `Context` goes away).
pub(crate) fn uninstall_for_this_thread() {
    WORKER.with(|w| w.set((std::ptr::null(), 0)));
}

/// Gives this thread an alternate signal stack if it has none (std's threads usually have one).
fn ensure_altstack() {
    // SAFETY: sigaltstack with a null new stack only reads the current setting.
    unsafe {
        let mut current: libc::stack_t = std::mem::zeroed();
        if libc::sigaltstack(ptr::null(), &mut current) != 0 {
            return;
        }
        if current.ss_flags & libc::SS_DISABLE == 0 {
            return;
        }
        let size = 64 * 1024;
        // The alternate stack lives as long as the worker thread; leaking it is what keeps it
        // valid for any signal delivered until the thread exits.
        let mem = Box::leak(vec![0u8; size].into_boxed_slice());
        let new = libc::stack_t {
            ss_sp: mem.as_mut_ptr().cast(),
            ss_flags: 0,
            ss_size: size,
        };
        libc::sigaltstack(&new, ptr::null_mut());
    }
}

extern "C" fn handler(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    let (guard, size) = WORKER
        .try_with(|w| w.get())
        .unwrap_or((std::ptr::null(), 0));
    // SAFETY: a registered pointer is the worker's live `Context::guard` (see
    // `install_for_this_thread`); only this thread writes it, and it is interrupted here.
    let lo = if guard.is_null() {
        0
    } else {
        unsafe { (*guard).get() }
    };
    let hi = lo.saturating_add(crate::fiber::stack::page_size());
    if lo != 0 && lo <= addr && addr < hi {
        let mut buf = [0u8; 512];
        let mut len = 0;
        let mut digits = [0u8; 24];
        for part in [
            "\npcml: a fiber overflowed its stack of ".as_bytes(),
            fmt_usize(size, &mut digits),
            b" bytes. Raise the size with Runtime::builder().stack_size(bytes) \
              or the PCML_STACK_SIZE environment variable, or move deep recursion \
              off the fiber (spawn_blocking). Aborting.\n",
        ] {
            let n = part.len().min(buf.len() - len);
            buf[len..len + n].copy_from_slice(&part[..n]);
            len += n;
        }
        // SAFETY: write and abort are async-signal-safe.
        unsafe {
            libc::write(2, buf.as_ptr().cast(), len);
            libc::abort();
        }
    }
    // Not ours: hand the signal to the previous handler.
    // SAFETY: OLD_* were initialised before this handler was installed.
    unsafe {
        let old = if sig == libc::SIGBUS {
            (&raw const OLD_BUS).cast::<libc::sigaction>().read()
        } else {
            (&raw const OLD_SEGV).cast::<libc::sigaction>().read()
        };
        if old.sa_sigaction == libc::SIG_DFL || old.sa_sigaction == libc::SIG_IGN {
            // Restore the default and return: the fault repeats and kills the process as it
            // would have without us.
            libc::sigaction(sig, &old, ptr::null_mut());
        } else if old.sa_flags & libc::SA_SIGINFO != 0 {
            let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                std::mem::transmute(old.sa_sigaction);
            f(sig, info, ctx);
        } else {
            let f: extern "C" fn(libc::c_int) = std::mem::transmute(old.sa_sigaction);
            f(sig);
        }
    }
}

/// Formats `n` in decimal into `buf` without allocating.
fn fmt_usize(mut n: usize, buf: &mut [u8; 24]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}
