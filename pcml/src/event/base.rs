//! What you need to write your own base event: the [`BaseEvent`] trait and the protocol's
//! types its methods take and return.
//!
//! Most programs never come here: channels, mailboxes, sync variables, locks, timers and
//! sockets are base events already, and [`choose`](super::choose), [`wrap`](super::Event::wrap),
//! [`guard`](super::guard) and [`with_nack`](super::with_nack) build everything else from
//! them. Write a base event for a new kind of communication object, one whose waiting threads
//! are queued by the object itself (an exchanger, a countdown latch, a resource pool). The
//! [guide](super::guide) walks through a complete one (an exchanger that pairs two threads and
//! swaps their values), line by line.
//!
//! A latch: an event enabled once the latch is open (the paper's `cvar`, Figure 15).
//! [`BaseEvent`]'s own page lists the four phases and their rules.
//!
//! ```
//! use std::sync::{Arc, Mutex};
//!
//! use pcml::event::Event;
//! use pcml::event::base::{BaseEvent, Blocked, OwnWaiter, SelfSynch, Waiter};
//!
//! #[derive(Default)]
//! struct Latch(Mutex<(bool, Vec<Waiter>)>);
//!
//! impl Latch {
//!     fn open(&self) {
//!         let waiters = {
//!             let mut s = self.0.lock().unwrap();
//!             s.0 = true;
//!             std::mem::take(&mut s.1)
//!         };
//!         for w in waiters {
//!             // A waiter whose sync went another way gives no commit: skip it.
//!             if let Some(commit) = w.synch_spinning() {
//!                 commit.publish();
//!             }
//!         }
//!     }
//! }
//!
//! struct OpenEvt(Arc<Latch>);
//!
//! impl BaseEvent for OpenEvt {
//!     type Output = ();
//!     fn poll(&mut self) -> bool {
//!         self.0.0.lock().unwrap().0
//!     }
//!     fn try_do(&mut self) -> Option<()> {
//!         self.poll().then_some(())
//!     }
//!     fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<()> {
//!         let mut s = self.0.0.lock().unwrap();
//!         if !s.0 {
//!             s.1.push(me.waiter());
//!             return Blocked::Waiting;
//!         }
//!         drop(s);
//!         match me.synch_self() {
//!             SelfSynch::Won => Blocked::Committed(()),
//!             SelfSynch::AlreadySynched => Blocked::Synched,
//!         }
//!     }
//!     fn complete(&mut self) {}
//! }
//!
//! pcml::run(|| {
//!     let latch = Arc::new(Latch::default());
//!     let l = latch.clone();
//!     let waiting = pcml::spawn(move || Event::from_base(OpenEvt(l)).sync());
//!     latch.open();
//!     waiting.join().unwrap();
//!     // Open for good: enabled at once, also inside a choice.
//!     pcml::event::select([Event::from_base(OpenEvt(latch)), pcml::event::never()]);
//! });
//! ```

pub use super::rep::{BaseEvent, Blocked, Commit, Match, OwnWaiter, SelfSynch, TrySynch, Waiter};
