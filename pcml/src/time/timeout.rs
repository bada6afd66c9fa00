//! `timeout(d, future)`: any future with a time limit, as tokio's `time::timeout`.
//!
//! # Implementation
//! A [`Timeout`] polls its future, then a [`Sleep`]: whichever is ready first decides. The
//! future is pinned structurally (the `Timeout` never moves it and has no `Drop` of its own);
//! the `Sleep` is `Unpin`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use super::{Sleep, sleep_async};

/// Runs `future` for at most `d`: `Ok` of its output, or `Err(Elapsed)` if the time ran out
/// first, in which case the future is dropped with the `Timeout` (or taken back with
/// [`Timeout::into_inner`]). Works in pcml tasks and in any executor; the timer starts at the
/// call.
///
/// For events, [`Event::sync_timeout`](crate::event::Event::sync_timeout) and a `select!`
/// with a `default(d)` arm do the same without a future.
///
/// ```
/// use std::time::Duration;
/// use pcml::time::{sleep_async, timeout};
///
/// pcml::run(|| {
///     let t = pcml::spawn_task(async {
///         let fast = timeout(Duration::from_secs(60), async { 7 }).await;
///         let slow = timeout(Duration::from_millis(5), sleep_async(Duration::from_secs(60))).await;
///         (fast, slow.is_err())
///     });
///     assert_eq!(t.join().unwrap(), (Ok(7), true));
/// });
/// ```
pub fn timeout<F: Future>(d: Duration, future: F) -> Timeout<F> {
    Timeout {
        future,
        sleep: sleep_async(d),
    }
}

/// The future of [`timeout`].
#[must_use = "futures do nothing unless awaited"]
pub struct Timeout<F> {
    future: F,
    sleep: Sleep,
}

impl<F> fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("deadline", &self.sleep.deadline())
            .finish_non_exhaustive()
    }
}

impl<F> Timeout<F> {
    /// The future it runs.
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = pcml::time::timeout(Duration::from_secs(1), std::future::ready(3));
    /// assert_eq!(t.get_ref().clone().into_inner(), 3);
    /// ```
    pub fn get_ref(&self) -> &F {
        &self.future
    }

    /// Gives back the future it runs, unfinished (after a timeout, say, to go on with it).
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = pcml::time::timeout(Duration::ZERO, std::future::ready(3));
    /// let fut = t.into_inner();
    /// assert_eq!(pcml::run(|| pcml::spawn_task(fut).join().unwrap()), 3);
    /// ```
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // SAFETY: `future` is pinned structurally: it is never moved out of a pinned
        // `Timeout` (only `into_inner`, which takes the `Timeout` by value, i.e. unpinned, moves
        // it), `Timeout` has no `Drop` impl, and it is `Unpin` only when `F` is (auto trait).
        // `sleep` is not pinned (`Sleep: Unpin`), so a `&mut` to it is fine.
        let this = unsafe { self.get_unchecked_mut() };
        // SAFETY: as above, `future` stays put while `self` is pinned.
        let future = unsafe { Pin::new_unchecked(&mut this.future) };
        if let Poll::Ready(v) = future.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match Pin::new(&mut this.sleep).poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(Elapsed { _private: () })),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The error of a [`timeout`] whose time ran out before its future finished.
///
/// ```
/// use std::time::Duration;
/// let e = pcml::time::Elapsed::default();
/// assert_eq!(e.to_string(), "deadline has elapsed");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Elapsed {
    _private: (),
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}
