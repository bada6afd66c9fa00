//! Multicast channels (CML's `Multicast`, from the CML library of Reppy, Russo and Xiao's authors): one
//! sender, many readers, each reader seeing every message sent after it joined.
//!
//! ```
//! use pcml::Multicast;
//!
//! pcml::run(|| {
//!     let news = Multicast::new();
//!     let early = news.port();
//!     news.send("first");
//!     let late = news.port(); // sees only what is sent from now on
//!     news.send("second");
//!     assert_eq!((early.recv(), early.recv()), ("first", "second"));
//!     assert_eq!(late.recv(), "second");
//! });
//! ```
//!
//! A [`Multicast`] hands out [`Port`]s. [`Multicast::send`] never blocks and delivers a clone
//! of the message to every live port; each port buffers its messages and is read like a
//! [`Mailbox`]: [`Port::recv`], [`Port::try_recv`], and [`Port::recv_evt`], an event that
//! composes in `choose`/`select` and works from fibers, OS threads and async code (`.await`).
//! [`Port::copy`] makes a second reader starting at the same position as the first.
//!
//! # Differences from the CML library
//! - CML implements multicast with a server thread and a chain of I-variables that each port
//!   walks. Here each port *is* a [`Mailbox`], and the multicast keeps a weak handle on each
//!   one: `send` clones the message into every live port's buffer under the multicast's lock.
//!   Nothing runs in the background, and a port nobody holds any more (the [`Port`] and every
//!   event made from it dropped) is freed with its unread messages and skipped from then on.
//! - A send costs one clone per live port (the last port gets the message itself).
//!
//! # Invariants
//! - `send`, `port` and `copy` hold the multicast's lock while they touch the port list, and
//!   `send` holds it while it delivers to every port, so all ports see the messages of
//!   concurrent senders in one order. Under it only a port's mailbox lock is taken (and the
//!   leaf slot lock under that): the lock order is multicast, then mailbox, then slot.
//! - The port list holds only weak handles; dead ones are dropped by the next `send` or `port`.
//! - `closed` is set under the port list's lock, which also closes every live port, and a
//!   port added later is closed when added: once closed, no port receives anything new.
//!
//! # Closing
//! [`Multicast::close`], or the drop of the last `Multicast` handle (ports do not count),
//! closes every port: each still receives what was sent before, then `for msg in &port`
//! ends and a plain `recv` panics.

use std::fmt;
use std::sync::Arc;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::loom::sync::Mutex;

use crate::event::Event;
use crate::mailbox::{Mailbox, WeakMailbox};
use crate::sync_var::waiters::lock;

/// A multicast channel: every message sent goes to every live [`Port`]. Sending never blocks.
///
/// Cheap to clone (a reference count); `Send + Sync` when `T: Send`.
///
/// # Examples
/// ```
/// let mc = pcml::Multicast::new();
/// let (a, b) = (mc.port(), mc.port());
/// mc.send("news");
/// assert_eq!(a.recv(), "news");
/// assert_eq!(b.recv(), "news");
/// ```
pub struct Multicast<T> {
    inner: Arc<Inner<T>>,
}

struct Inner<T> {
    /// Weak handles on the ports' mailboxes, in creation order. Written by `port`, `copy` and
    /// `send` (which drops the dead ones), under this lock.
    ports: Mutex<Vec<WeakMailbox<T>>>,
    /// Set once, by `Multicast::close` under the `ports` lock (Relaxed: read under that lock,
    /// or as a hint by `is_closed`).
    closed: AtomicBool,
    /// Live [`Multicast`] handles (ports do not count); the drop of the last one closes.
    /// Changed by clones and drops.
    senders: AtomicUsize,
}

/// Registers `mb` as a new port of `mc`; `ports` is `mc`'s list, locked.
fn add<T>(mc: &Arc<Inner<T>>, ports: &mut Vec<WeakMailbox<T>>, mb: Mailbox<T>) -> Port<T> {
    ports.retain(|p| p.upgrade().is_some());
    if mc.closed.load(Ordering::Relaxed) {
        // A port of a closed multicast: it keeps what it was given, and nothing more comes.
        mb.close();
    }
    ports.push(mb.downgrade());
    Port { mb, mc: mc.clone() }
}

/// One reader of a [`Multicast`]: receives, in order, every message sent after the port was
/// made. Dropping the port stops its deliveries and frees its unread messages.
///
/// `Send + Sync` when `T: Send`; several threads may receive from one port, each message then
/// going to one of them.
///
/// # Examples
/// ```
/// let mc = pcml::Multicast::new();
/// mc.send(0); // before the port: not seen
/// let p = mc.port();
/// mc.send(1);
/// assert_eq!(p.try_recv(), Some(1));
/// assert_eq!(p.try_recv(), None);
/// ```
pub struct Port<T> {
    /// This port's buffer; the multicast holds a weak handle on it.
    mb: Mailbox<T>,
    /// The multicast, for [`Port::copy`].
    mc: Arc<Inner<T>>,
}

impl<T> Clone for Multicast<T> {
    fn clone(&self) -> Self {
        // Relaxed: made from a live handle, which keeps the count above zero (as `Arc`).
        self.inner.senders.fetch_add(1, Ordering::Relaxed);
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Default for Multicast<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for Multicast<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Multicast")
            .field("live_ports", &self.live_ports())
            .finish()
    }
}

impl<T> fmt::Debug for Port<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Port").field("len", &self.mb.len()).finish()
    }
}

impl<T> Multicast<T> {
    /// A multicast channel with no ports.
    ///
    /// # Examples
    /// ```
    /// let mc: pcml::Multicast<u8> = pcml::Multicast::new();
    /// assert_eq!(mc.live_ports(), 0);
    /// ```
    pub fn new() -> Self {
        Self {
            inner: Arc::new(Inner {
                ports: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
                senders: AtomicUsize::new(1),
            }),
        }
    }

    /// A new port, which will receive every message sent from now on.
    ///
    /// # Examples
    /// ```
    /// let mc = pcml::Multicast::new();
    /// let p = mc.port();
    /// mc.send('a');
    /// assert_eq!(p.recv(), 'a');
    /// ```
    pub fn port(&self) -> Port<T> {
        let mut ports = lock(&self.inner.ports);
        add(&self.inner, &mut ports, Mailbox::new())
    }

    /// How many ports are alive (held by a [`Port`] or by an event made from one).
    ///
    /// # Examples
    /// ```
    /// let mc: pcml::Multicast<u8> = pcml::Multicast::new();
    /// let p = mc.port();
    /// assert_eq!(mc.live_ports(), 1);
    /// drop(p);
    /// assert_eq!(mc.live_ports(), 0);
    /// ```
    pub fn live_ports(&self) -> usize {
        lock(&self.inner.ports)
            .iter()
            .filter(|p| p.upgrade().is_some())
            .count()
    }

    /// Closes the multicast: every port receives what was sent before, then finds it closed
    /// (`for msg in &port` ends, a blocked receive wakes); a later `send` panics. Whether this
    /// call closed it. Dropping the last `Multicast` handle closes it too.
    ///
    /// # Examples
    /// ```
    /// let mc = pcml::Multicast::new();
    /// let p = mc.port();
    /// mc.send(1);
    /// mc.send(2);
    /// assert!(mc.close());
    /// assert_eq!(p.iter().collect::<Vec<_>>(), [1, 2]);
    /// ```
    pub fn close(&self) -> bool {
        self.inner.close()
    }

    /// Whether the multicast is closed.
    ///
    /// # Examples
    /// ```
    /// let mc = pcml::Multicast::<u8>::new();
    /// let p = mc.port();
    /// drop(mc); // the last sending handle
    /// assert!(p.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.inner.closed.load(Ordering::Relaxed)
    }
}

impl<T> Drop for Multicast<T> {
    fn drop(&mut self) {
        // Relaxed: the count only decides who closes; `close` itself runs under the lock.
        if self.inner.senders.fetch_sub(1, Ordering::Relaxed) == 1 {
            self.inner.close();
        }
    }
}

impl<T> Inner<T> {
    /// Closes every live port (under the `ports` lock, so no send is half done); whether
    /// this call closed the multicast.
    fn close(&self) -> bool {
        let ports = lock(&self.ports);
        if self.closed.swap(true, Ordering::Relaxed) {
            return false;
        }
        for mb in ports.iter().filter_map(|p| p.upgrade()) {
            mb.close();
        }
        true
    }
}

impl<T: Clone + Send + 'static> Multicast<T> {
    /// Sends `v` to every live port (a clone to each). Never blocks; with no port, `v` is
    /// dropped.
    ///
    /// # Examples
    /// ```
    /// let mc = pcml::Multicast::new();
    /// let ports: Vec<_> = (0..3).map(|_| mc.port()).collect();
    /// mc.send(7);
    /// assert!(ports.iter().all(|p| p.recv() == 7));
    /// ```
    ///
    /// # Panics
    /// If the multicast is closed.
    pub fn send(&self, v: T) {
        let mut ports = lock(&self.inner.ports);
        if self.inner.closed.load(Ordering::Relaxed) {
            drop(ports);
            crate::chan::closed_panic("send");
        }
        let live: Vec<Mailbox<T>> = ports.iter().filter_map(|p| p.upgrade()).collect();
        if live.len() != ports.len() {
            ports.retain(|p| p.upgrade().is_some());
        }
        let Some((last, rest)) = live.split_last() else {
            return;
        };
        for mb in rest {
            mb.send(v.clone());
        }
        last.send(v);
        // `live` is dropped here, under the lock: if it held the last handle on a port, that
        // port's mailbox is freed now, which takes no lock of ours.
    }
}

impl<T: Send + 'static> Port<T> {
    /// Receives the next message, blocking while none is buffered.
    ///
    /// # Examples
    /// ```
    /// let mc = pcml::Multicast::new();
    /// let p = mc.port();
    /// let t = std::thread::spawn(move || p.recv());
    /// mc.send(1);
    /// assert_eq!(t.join().unwrap(), 1);
    /// ```
    ///
    /// # Panics
    /// If the multicast is closed and this port drained (iterate with `for msg in &port`,
    /// which ends there, or use `try_recv`).
    pub fn recv(&self) -> T {
        self.mb.recv()
    }

    /// An event enabled while a message is buffered for this port; syncing on it receives the
    /// oldest one. A receive that loses a choice, or whose `.await` is dropped, takes nothing.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let mc: pcml::Multicast<u32> = pcml::Multicast::new();
    /// let p = mc.port();
    /// let got = pcml::select([
    ///     p.recv_evt().wrap(Some),
    ///     pcml::time::timeout_evt(Duration::from_millis(1)).wrap(|()| None),
    /// ]);
    /// assert_eq!(got, None);
    /// ```
    ///
    /// A closed multicast's drained port's event is enabled, and its sync panics.
    pub fn recv_evt(&self) -> Event<T> {
        self.mb.recv_evt()
    }

    /// Receives the next message if one is buffered. Never blocks.
    ///
    /// # Examples
    /// ```
    /// let mc = pcml::Multicast::new();
    /// let p = mc.port();
    /// assert_eq!(p.try_recv(), None);
    /// mc.send(2);
    /// assert_eq!(p.try_recv(), Some(2));
    /// ```
    pub fn try_recv(&self) -> Option<T> {
        self.mb.try_recv()
    }
}

impl<T: Send + 'static> Port<T> {
    /// A blocking iterator over this port's messages: it ends once the multicast is closed
    /// (explicitly, or its last [`Multicast`] handle dropped) and the port drained.
    ///
    /// # Examples
    /// ```
    /// let mc = pcml::Multicast::new();
    /// let p = mc.port();
    /// let t = std::thread::spawn(move || p.iter().sum::<i32>());
    /// mc.send(1);
    /// mc.send(2);
    /// drop(mc);
    /// assert_eq!(t.join().unwrap(), 3);
    /// ```
    pub fn iter(&self) -> PortIter<'_, T> {
        PortIter { port: self }
    }
}

/// A blocking iterator over a [`Port`]'s messages ([`Port::iter`]): it ends at close.
///
/// # Examples
/// ```
/// let mc = pcml::Multicast::new();
/// let p = mc.port();
/// mc.send('x');
/// mc.close();
/// let mut it = (&p).into_iter();
/// assert_eq!((it.next(), it.next()), (Some('x'), None));
/// ```
pub struct PortIter<'a, T> {
    port: &'a Port<T>,
}

impl<T: Send + 'static> Iterator for PortIter<'_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        self.port.mb.recv_checked().ok()
    }
}

impl<T> fmt::Debug for PortIter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PortIter").finish_non_exhaustive()
    }
}

impl<'a, T: Send + 'static> IntoIterator for &'a Port<T> {
    type Item = T;
    type IntoIter = PortIter<'a, T>;

    fn into_iter(self) -> PortIter<'a, T> {
        self.iter()
    }
}

impl<T> Port<T> {
    /// Whether the multicast is closed (messages may still be buffered for this port).
    ///
    /// # Examples
    /// ```
    /// let mc = pcml::Multicast::<u8>::new();
    /// let p = mc.port();
    /// mc.close();
    /// assert!(p.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.mc.closed.load(Ordering::Relaxed)
    }

    /// How many messages are buffered for this port.
    ///
    /// # Examples
    /// ```
    /// let mc = pcml::Multicast::new();
    /// let p = mc.port();
    /// mc.send(());
    /// assert_eq!(p.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.mb.len()
    }

    /// Whether no message is buffered for this port.
    ///
    /// # Examples
    /// ```
    /// let mc: pcml::Multicast<()> = pcml::Multicast::new();
    /// assert!(mc.port().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.mb.is_empty()
    }
}

impl<T: Clone> Port<T> {
    /// A new port of the same multicast with the same pending messages as this one (CML's
    /// `copy`): both then receive every later message.
    ///
    /// # Examples
    /// ```
    /// let mc = pcml::Multicast::new();
    /// let a = mc.port();
    /// mc.send(1);
    /// let b = a.copy();
    /// mc.send(2);
    /// assert_eq!((a.recv(), a.recv()), (1, 2));
    /// assert_eq!((b.recv(), b.recv()), (1, 2));
    /// ```
    pub fn copy(&self) -> Port<T> {
        // Under the multicast's lock no send is in progress, so the copy starts exactly where
        // this port is.
        let mut ports = lock(&self.mc.ports);
        add(&self.mc, &mut ports, self.mb.copy_buffered())
    }
}
