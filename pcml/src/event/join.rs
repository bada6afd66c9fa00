//! Waiting for a thread as an event ([`JoinHandle::join_evt`], CML's `joinEvt`): a join state
//! (which wakes one `Blocker`) taking part in the event protocol.

use std::sync::Arc;
use std::task::{Wake, Waker};

use crate::event::{BaseEvent, Blocked, Event, OwnWaiter, SelfSynch, Waiter};
use crate::sched::blocker::Blocker;
use crate::{JoinError, JoinHandle};

impl<T: Send + 'static> JoinHandle<T> {
    /// An event that is enabled once the thread has finished and yields what [`join`] would
    /// (CML's `joinEvt`), so waiting for a thread composes with channels and timeouts in
    /// [`choose`](crate::event::choose).
    ///
    /// The event owns the handle. If the event is chosen, its result is the thread's; if it
    /// loses a choice (or is dropped unsynced), the handle goes with it and the thread is
    /// detached, exactly as if the handle had been dropped: it runs on, and a panic nobody
    /// sees is printed once. To wait with a deadline and keep the handle when the deadline
    /// wins, poll [`is_finished`](Self::is_finished) after a timeout, or sync the join event in
    /// a loop that rebuilds it from a handle kept elsewhere (see the example). Unlike [`join`],
    /// the event never runs an unstarted fiber on the caller's stack.
    ///
    /// Works from fibers, OS threads and (with `.await`) async code, like every event.
    ///
    /// [`join`]: Self::join
    ///
    /// # Examples
    /// ```
    /// use pcml::event::select;
    /// use pcml::time::timeout_evt;
    /// use std::time::Duration;
    ///
    /// pcml::run(|| {
    ///     let worker = pcml::spawn(|| 6 * 7);
    ///     let got = select([
    ///         worker.join_evt().wrap(|r| r.ok()),
    ///         timeout_evt(Duration::from_secs(60)).wrap(|()| None),
    ///     ]);
    ///     assert_eq!(got, Some(42));
    /// });
    /// ```
    pub fn join_evt(self) -> Event<Result<T, JoinError>> {
        Event::from_base(JoinEvt { handle: self })
    }
}

/// The base event of [`JoinHandle::join_evt`]: enabled when the join state is `DONE`; blocks by
/// registering, in the handle's waiter slot, a waker that completes the sync's waiter.
struct JoinEvt<T> {
    handle: JoinHandle<T>,
}

impl<T> JoinEvt<T> {
    fn take(&mut self) -> Result<T, JoinError> {
        let target = self
            .handle
            .state
            .take()
            .expect("pcml: a join event completed twice");
        target.state().take()
    }
}

impl<T: Send + 'static> BaseEvent for JoinEvt<T> {
    type Output = Result<T, JoinError>;

    fn poll(&mut self) -> bool {
        self.handle.is_finished()
    }

    fn try_do(&mut self) -> Option<Self::Output> {
        self.handle.is_finished().then(|| self.take())
    }

    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<Self::Output> {
        if !self.handle.is_finished() {
            // The completer wakes this waker once DONE is set (or `register` wakes it at once
            // if DONE came first): it completes our waiter, unless another branch won.
            let wake = Arc::new(CompleteWaiter(me.waiter()));
            self.handle
                .state()
                .register(Blocker::from_waker(Waker::from(wake)));
            return Blocked::Waiting;
        }
        match me.synch_self() {
            SelfSynch::Won => Blocked::Committed(self.take()),
            SelfSynch::AlreadySynched => Blocked::Synched,
        }
    }

    fn complete(&mut self) -> Self::Output {
        // Our waiter was completed by `CompleteWaiter`, which runs only once DONE is set.
        self.take()
    }

    fn describe(&self) -> String {
        match self.handle.state.as_ref() {
            Some(t) => crate::sched::dump::on_object(
                &format!("JoinHandle::join_evt of {:?}", self.handle.id()),
                t.state(),
            ),
            None => "JoinHandle::join_evt (done)".to_string(),
        }
    }
}

/// A waker that completes one event waiter: how a join state (which wakes one `Blocker`) takes
/// part in the event protocol. There is no value to deliver; the owner takes the result.
struct CompleteWaiter(Waiter);

impl Wake for CompleteWaiter {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(commit) = self.0.synch_spinning() {
            commit.publish();
        }
    }
}
