//! A stand-in for `pcml::actor`, with its names (`spawn`, `spawn_async`, `Pid`, `Ctx`), built
//! over `pcml::Mailbox` and `pcml::spawn`/`pcml::spawn_task`: while `pcml::actor` is not on
//! main, seed 000's programs run their actors through this module, so that their rows exist.
//! Their rows say so ("stand-in actors").
//!
//! Selective receive keeps the messages it passes over in a private queue of the actor (the
//! save queue of Erlang's receive) and looks there first next time.
//!
//! # Invariants
//! - A `Ctx` is owned by its actor's thread: only it receives, so the save queue needs no lock.

use std::collections::VecDeque;
use std::future::Future;

use pcml::Mailbox;

/// An actor's address: sends to its mailbox (never blocks).
#[derive(Debug)]
pub struct Pid<M> {
    mailbox: Mailbox<M>,
}

impl<M> Clone for Pid<M> {
    fn clone(&self) -> Self {
        Pid {
            mailbox: self.mailbox.clone(),
        }
    }
}

impl<M: Send + 'static> Pid<M> {
    /// Sends `m` to the actor. Never fails here (a mailbox outlives its actor).
    pub fn send(&self, m: M) -> Result<(), M> {
        self.mailbox.send(m);
        Ok(())
    }
}

/// The receiving side of an actor, owned by its thread.
#[derive(Debug)]
pub struct Ctx<M> {
    mailbox: Mailbox<M>,
    /// Messages a selective receive passed over, oldest first.
    saved: VecDeque<M>,
}

impl<M: Send + 'static> Ctx<M> {
    fn new(mailbox: Mailbox<M>) -> Self {
        Ctx {
            mailbox,
            saved: VecDeque::new(),
        }
    }

    /// The actor's own address.
    pub fn pid(&self) -> Pid<M> {
        Pid {
            mailbox: self.mailbox.clone(),
        }
    }

    /// The oldest message, blocking the fiber while there is none.
    pub fn receive(&mut self) -> M {
        self.saved
            .pop_front()
            .unwrap_or_else(|| self.mailbox.recv())
    }

    /// The oldest message `wanted` accepts; the others stay, in order, for later receives.
    pub fn receive_match(&mut self, mut wanted: impl FnMut(&M) -> bool) -> M {
        if let Some(m) = self.take_saved(&mut wanted) {
            return m;
        }
        loop {
            let m = self.mailbox.recv();
            if wanted(&m) {
                return m;
            }
            self.saved.push_back(m);
        }
    }

    /// [`Ctx::receive`] for async actors.
    pub async fn recv(&mut self) -> M {
        match self.saved.pop_front() {
            Some(m) => m,
            None => self.mailbox.recv_evt().await,
        }
    }

    /// [`Ctx::receive_match`] for async actors.
    pub async fn recv_match(&mut self, mut wanted: impl FnMut(&M) -> bool) -> M {
        if let Some(m) = self.take_saved(&mut wanted) {
            return m;
        }
        loop {
            let m = self.mailbox.recv_evt().await;
            if wanted(&m) {
                return m;
            }
            self.saved.push_back(m);
        }
    }

    fn take_saved(&mut self, wanted: &mut impl FnMut(&M) -> bool) -> Option<M> {
        let i = self.saved.iter().position(wanted)?;
        self.saved.remove(i)
    }
}

/// Starts a fiber actor running `body`.
pub fn spawn<M, F>(body: F) -> Pid<M>
where
    M: Send + 'static,
    F: FnOnce(Ctx<M>) + Send + 'static,
{
    let mailbox = Mailbox::new();
    let ctx = Ctx::new(mailbox.clone());
    pcml::spawn(move || body(ctx));
    Pid { mailbox }
}

/// Starts an async actor running the future `body` makes.
pub fn spawn_async<M, F, Fut>(body: F) -> Pid<M>
where
    M: Send + 'static,
    F: FnOnce(Ctx<M>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let mailbox = Mailbox::new();
    pcml::spawn_task(body(Ctx::new(mailbox.clone())));
    Pid { mailbox }
}
