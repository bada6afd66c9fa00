//! Untyped mailboxes for Erlang-like code: actors of [`AnyMsg`] (`Box<dyn Any + Send>`)
//! messages, received by type.
//!
//! `Pid<AnyMsg>::send_any(v)` boxes any value; `Ctx<AnyMsg>::receive_type::<T>()` is a
//! selective receive of the oldest message of type `T` (messages of other types stay in
//! order), as Krook 2020 matches by type (its section 5.3.2). Exit and down signals reach an
//! untyped actor as ordinary messages of type [`Signal`], so one receive can wait for either.
//!
//! ```
//! use pcml::actor::{self, AnyMsg, Ctx, Signal};
//!
//! pcml::run(|| {
//!     let mut me = Ctx::<AnyMsg>::new();
//!     let reply = me.pid();
//!     let pid = actor::spawn(move |mut ctx: Ctx<AnyMsg>| {
//!         let n: u32 = ctx.receive_type();
//!         let s: String = ctx.receive_type();
//!         let _ = reply.send_any(format!("{s}{n}"));
//!     });
//!     me.monitor(&pid);
//!     pid.send_any(String::from("x")).unwrap();
//!     pid.send_any(7u32).unwrap();
//!     assert_eq!(me.receive_type::<String>(), "x7");
//!     assert!(matches!(me.receive_type::<Signal>(), Signal::Down { .. }));
//! });
//! ```

//!
//! # Invariants
//! - A message is unboxed only after its type was tested (`is::<T>`) under the mailbox lock, so
//!   the downcasts cannot fail.

use std::any::Any;
use std::time::Duration;

use super::{AnyMsg, Ctx, Pid, SendError};
use crate::event::Event;

fn is<T: Any>(m: &AnyMsg) -> bool {
    (**m).is::<T>()
}

fn unbox<T: Any>(m: AnyMsg) -> T {
    *m.downcast::<T>()
        .unwrap_or_else(|_| unreachable!("pcml: a message matched by type has another type"))
}

impl Pid<AnyMsg> {
    /// Boxes `v` and sends it. On failure the error holds `v` back, unboxed.
    ///
    /// ```
    /// let mut me = pcml::actor::Ctx::<pcml::actor::AnyMsg>::new();
    /// me.pid().send_any(1.5f64).unwrap();
    /// assert_eq!(me.receive_type::<f64>(), 1.5);
    /// ```
    pub fn send_any<T: Any + Send>(&self, v: T) -> Result<(), SendError<T>> {
        self.send(Box::new(v)).map_err(|e| SendError(unbox(e.0)))
    }
}

impl Ctx<AnyMsg> {
    /// Receives the oldest message of type `T`, blocking until one comes; messages of other
    /// types stay in the mailbox, in order.
    ///
    /// # Panics
    /// In an async task (use [`recv_type`](Self::recv_type)).
    ///
    /// ```
    /// let mut me = pcml::actor::Ctx::<pcml::actor::AnyMsg>::new();
    /// me.pid().send_any("text").unwrap();
    /// me.pid().send_any(3u8).unwrap();
    /// assert_eq!(me.receive_type::<u8>(), 3);
    /// assert_eq!(me.receive_type::<&str>(), "text");
    /// ```
    pub fn receive_type<T: Any + Send>(&mut self) -> T {
        unbox(self.receive_match(is::<T>))
    }

    /// Receives the oldest message of type `T`, or `None` if none comes within `d`.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// pcml::run(|| {
    ///     let mut me = pcml::actor::Ctx::<pcml::actor::AnyMsg>::new();
    ///     me.pid().send_any(1u8).unwrap();
    ///     assert_eq!(me.receive_type_timeout::<u16>(Duration::from_millis(1)), None);
    ///     assert_eq!(me.receive_type_timeout::<u8>(Duration::from_secs(1)), Some(1));
    /// });
    /// ```
    pub fn receive_type_timeout<T: Any + Send>(&mut self, d: Duration) -> Option<T> {
        self.receive_type_evt().sync_timeout(d)
    }

    /// Receiving the oldest message of type `T`, as an event.
    ///
    /// ```
    /// pcml::run(|| {
    ///     let me = pcml::actor::Ctx::<pcml::actor::AnyMsg>::new();
    ///     me.pid().send_any('c').unwrap();
    ///     let got = pcml::select([
    ///         me.receive_type_evt::<u8>().wrap(|n| n.to_string()),
    ///         me.receive_type_evt::<char>().wrap(|c| c.to_string()),
    ///     ]);
    ///     assert_eq!(got, "c");
    /// });
    /// ```
    pub fn receive_type_evt<T: Any + Send>(&self) -> Event<T> {
        self.receive_match_evt(is::<T>).wrap(unbox::<T>)
    }

    /// Receives the oldest message of type `T`, for async actors.
    ///
    /// ```
    /// use pcml::actor::{self, AnyMsg, Ctx};
    ///
    /// pcml::run(|| {
    ///     let mut me = Ctx::<AnyMsg>::new();
    ///     let reply = me.pid();
    ///     let pid = actor::spawn_async(move |mut ctx: Ctx<AnyMsg>| async move {
    ///         let n: i64 = ctx.recv_type().await;
    ///         let _ = reply.send_any(n * 2);
    ///     });
    ///     pid.send_any("ignored").unwrap();
    ///     pid.send_any(21i64).unwrap();
    ///     assert_eq!(me.receive_type::<i64>(), 42);
    /// });
    /// ```
    pub async fn recv_type<T: Any + Send>(&mut self) -> T {
        unbox(self.recv_match(is::<T>).await)
    }
}
