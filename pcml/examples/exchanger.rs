//! A user-defined communication object made first class: an *exchanger*, where two threads
//! meet and swap values (a symmetric channel: each side both gives and gets).
//!
//! Built on the public `BaseEvent` trait with no `unsafe`: a mutex around a queue of waiting
//! offers, each offer holding its sync's `Waiter`, the value it gives, and a slot for the value
//! it gets. `exchange_evt` is an ordinary `Event`, so it composes with `choose`, `wrap`,
//! timeouts and `.await` like a channel's events. The guide in `pcml::event::guide` walks
//! through this file phase by phase.
//!
//! Run: `cargo run --release -p pcml --example exchanger`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use pcml::event::Event;

use pcml::event::base::{BaseEvent, Blocked, Match, OwnWaiter, Waiter};

/// Two threads meet and swap values; cheap to clone (all clones are the same exchanger).
pub struct Exchanger<T> {
    queue: Arc<Mutex<VecDeque<Arc<Offer<T>>>>>,
}

impl<T> Clone for Exchanger<T> {
    fn clone(&self) -> Self {
        Exchanger {
            queue: self.queue.clone(),
        }
    }
}

impl<T: Send + 'static> Default for Exchanger<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// One blocked sync's offer: its waiter, the value it gives, the slot for the value it gets.
/// Whoever wins `waiter`'s sync takes `give` and fills `get`, then publishes; after that only
/// the owner touches them.
struct Offer<T> {
    waiter: Waiter,
    give: Mutex<Option<T>>,
    get: Mutex<Option<T>>,
}

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    // No user code runs under these locks, so a poisoned lock still holds consistent data.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Swaps with a partner we have won: takes what it gives, hands it `mine`.
fn swap_with<T>(partner: &Offer<T>, mine: T) -> T {
    *lock(&partner.get) = Some(mine);
    lock(&partner.give)
        .take()
        .expect("a waiting offer always holds its value")
}

impl<T: Send + 'static> Exchanger<T> {
    /// A new exchanger with nobody waiting.
    pub fn new() -> Self {
        Exchanger {
            queue: Arc::default(),
        }
    }

    /// Gives `v` to the next thread that exchanges and returns that thread's value; blocks
    /// until a partner comes.
    pub fn exchange(&self, v: T) -> T {
        self.exchange_evt(v).sync()
    }

    /// The exchange as an event: enabled when a partner is waiting.
    pub fn exchange_evt(&self, v: T) -> Event<T> {
        Event::from_base(ExchangeEvt {
            queue: self.queue.clone(),
            mine: Some(v),
            offer: None,
        })
    }
}

/// The base event: its four phases are the whole protocol of the exchanger.
struct ExchangeEvt<T> {
    queue: Arc<Mutex<VecDeque<Arc<Offer<T>>>>>,
    /// Our value, until it is given or published in an offer.
    mine: Option<T>,
    /// Our published offer, if `block` made one.
    offer: Option<Arc<Offer<T>>>,
}

impl<T: Send + 'static> BaseEvent for ExchangeEvt<T> {
    type Output = T;

    /// Enabled if some live partner waits. Advisory: it may change before `try_do`.
    fn poll(&mut self) -> bool {
        lock(&self.queue).iter().any(|o| !o.waiter.is_synched())
    }

    /// Our own sync is not visible to anyone yet, so we only have to win a partner.
    fn try_do(&mut self) -> Option<T> {
        let mut q = lock(&self.queue);
        while let Some(partner) = q.pop_front() {
            // Spins while the partner's owner holds it `Claimed`; `None` if it is dead.
            if let Some(commit) = partner.waiter.synch_spinning() {
                let got = swap_with(&partner, self.mine.take().expect("one value per sync"));
                commit.publish(); // wakes the partner
                return Some(got);
            }
        }
        None
    }

    /// Our sync is now visible (other branches may have offers out): match a partner through
    /// `try_match`, which claims our own state first, or publish an offer.
    fn block(&mut self, me: &OwnWaiter<'_>) -> Blocked<T> {
        let mut q = lock(&self.queue);
        let mut i = 0;
        while i < q.len() {
            if q[i].waiter.is_synched() {
                q.remove(i); // a dead offer: sweep it
                continue;
            }
            if q[i].waiter.same_sync(me) {
                i += 1; // never exchange with ourselves (a choice may name us twice)
                continue;
            }
            let partner = q.remove(i).expect("index checked");
            let self_synched = match me.try_match(&partner.waiter) {
                Match::Won(commit) => {
                    let got = swap_with(&partner, self.mine.take().expect("one value per sync"));
                    commit.publish();
                    return Blocked::Committed(got);
                }
                Match::PartnerGone => false,
                Match::SelfSynched => true,
            };
            if self_synched {
                // Another branch of our sync won meanwhile: leave the partner waiting.
                q.insert(i, partner);
                return Blocked::Synched;
            }
        }
        if me.is_synched() {
            return Blocked::Synched;
        }
        let offer = Arc::new(Offer {
            waiter: me.waiter(),
            give: Mutex::new(self.mine.take()),
            get: Mutex::new(None),
        });
        q.push_back(offer.clone());
        self.offer = Some(offer);
        Blocked::Waiting
    }

    /// A partner won our offer: it left its value in our `get` slot.
    fn complete(&mut self) -> T {
        let offer = self.offer.take().expect("completed without an offer");
        lock(&offer.get).take().expect("the partner delivered")
    }

    /// Another branch won (or the sync was abandoned): our offer is dead, so nobody else
    /// touches it any more; take our value back (and drop it, as a losing send does).
    fn cancel(&mut self) {
        if let Some(offer) = self.offer.take() {
            drop(lock(&offer.give).take());
        }
    }
}

#[allow(dead_code)]
fn main() {
    use std::time::Duration;

    pcml::run(|| {
        let ex = Exchanger::new();
        let e2 = ex.clone();
        let partner = pcml::spawn(move || e2.exchange("from the partner"));
        assert_eq!(ex.exchange("from main"), "from the partner");
        assert_eq!(partner.join().unwrap(), "from main");

        // First class: in a choice with a timeout, nobody else exchanging.
        let got = pcml::event::select([
            ex.exchange_evt("lonely").wrap(Some),
            pcml::time::timeout_evt(Duration::from_millis(10)).wrap(|()| None),
        ]);
        assert_eq!(got, None);
        println!("exchanged, and timed out when alone");
    });
}
