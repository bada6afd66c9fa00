//! Remote procedure calls between threads as events (CML's `SimpleRPC`; Reppy, Russo and Xiao 2009, Figure 4's
//! `rpcEvt`).
//!
//! ```
//! use std::time::Duration;
//!
//! pcml::run(|| {
//!     let (client, server) = pcml::rpc::channel::<u64, u64>();
//!     pcml::spawn(move || loop {
//!         let (n, reply) = server.recv();
//!         let _ = reply.send(n * n); // false if the caller stopped waiting
//!     });
//!     assert_eq!(client.call(12), 144);
//!     assert_eq!(client.call_evt(3).sync_timeout(Duration::from_secs(60)), Some(9));
//! });
//! ```
//!
//! [`channel`] makes a connected [`Client`] and [`Server`]. A client's
//! [`call_evt`](Client::call_evt) is an event, so a call composes in `choose`/`select`: with a
//! timeout, with calls to other servers, and from fibers, OS threads or async code
//! (`.await`). A server receives requests as an event too ([`Server::recv_evt`]), so its
//! loop can choose between serving and anything else, and answers each with its [`Reply`].
//!
//! The protocol is Figure 4's: `call_evt` is a [`with_nack`] event that
//! sends the request, a fresh reply channel and its negative acknowledgement to the server,
//! then waits to receive on the reply channel. The server answers by choosing between sending
//! on the reply channel and the nack. If the client's call loses its choice (say, to a
//! timeout) or its `.await` is dropped, the nack becomes enabled and the server's answer
//! completes at once with "not delivered" ([`Reply::send`] returns false) instead of blocking
//! forever on a client that left.
//!
//! # Differences from the paper
//! - Figure 4 sends the request synchronously inside the `withNack` function; here it goes
//!   into the server's [`Mailbox`], which never blocks. So building a call never waits for the
//!   server (a `with_nack` function in an async task must not block), and requests wait in
//!   FIFO order until the server takes them.
//!
//! # Invariants
//! - Every request carries the nack of the call that made it: a call that does not complete
//!   on its reply channel enables its nack, so a reply to it never blocks for long.
//! - A reply is delivered (and [`Reply::send`] returns true) exactly when the client's call
//!   completes with it: the reply channel is synchronous. One window: a call's `.await`
//!   dropped just after the server's answer reached it did complete, but nobody sees the
//!   answer, which is dropped (a synchronous receive cannot give it back: see
//!   [`Chan::recv_evt`](crate::chan::Chan::recv_evt)); `send` has returned true. A request the
//!   server had taken with a dropped [`Server::recv_evt`] `.await` goes back to the queue.

use std::fmt;

use crate::chan::Chan;
use crate::event::{Event, choose, with_nack};
use crate::mailbox::Mailbox;

/// A connected client and server: requests of type `Req`, answers of type `Resp`.
///
/// # Examples
/// ```
/// let (client, server) = pcml::rpc::channel::<u32, u32>();
/// let s = std::thread::spawn(move || {
///     let (n, reply) = server.recv();
///     reply.send(n + 1)
/// });
/// assert_eq!(client.call(41), 42);
/// assert!(s.join().unwrap()); // the answer was delivered
/// ```
pub fn channel<Req, Resp>() -> (Client<Req, Resp>, Server<Req, Resp>) {
    let requests = Mailbox::new();
    (
        Client {
            requests: requests.clone(),
        },
        Server { requests },
    )
}

/// What travels from a call to the server.
struct Request<Req, Resp> {
    req: Req,
    reply: Chan<Resp>,
    nack: Event<()>,
}

/// The calling side of an RPC [`channel`]. Cheap to clone (a reference count).
///
/// # Examples
/// ```
/// let (client, server) = pcml::rpc::channel::<&str, usize>();
/// std::thread::spawn(move || loop {
///     server.serve(|s| s.len());
/// });
/// assert_eq!(client.call("four"), 4);
/// ```
pub struct Client<Req, Resp> {
    requests: Mailbox<Request<Req, Resp>>,
}

/// The serving side of an RPC [`channel`]. Cheap to clone (a reference count): clones share
/// one queue of requests, so several threads can serve.
///
/// # Examples
/// ```
/// let (client, server) = pcml::rpc::channel::<u8, u8>();
/// let c = std::thread::spawn(move || client.call(2));
/// let (x, reply) = server.recv();
/// reply.send(x * 10);
/// assert_eq!(c.join().unwrap(), 20);
/// ```
pub struct Server<Req, Resp> {
    requests: Mailbox<Request<Req, Resp>>,
}

/// The server's handle for answering one request.
///
/// A server should answer every request it takes: a client whose request was taken and never
/// answered waits until its call loses a choice (use a timeout if the server may fail).
///
/// # Examples
/// ```
/// let (client, server) = pcml::rpc::channel::<(), &str>();
/// let c = std::thread::spawn(move || client.call(()));
/// let ((), reply) = server.recv();
/// assert!(reply.send("done"));
/// assert_eq!(c.join().unwrap(), "done");
/// ```
pub struct Reply<Resp> {
    reply: Chan<Resp>,
    nack: Event<()>,
}

impl<Req, Resp> Clone for Client<Req, Resp> {
    fn clone(&self) -> Self {
        Self {
            requests: self.requests.clone(),
        }
    }
}

impl<Req, Resp> Clone for Server<Req, Resp> {
    fn clone(&self) -> Self {
        Self {
            requests: self.requests.clone(),
        }
    }
}

impl<Req, Resp> fmt::Debug for Client<Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("rpc::Client")
    }
}

impl<Req, Resp> fmt::Debug for Server<Req, Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("rpc::Server")
            .field("queued", &self.requests.len())
            .finish()
    }
}

impl<Resp> fmt::Debug for Reply<Resp> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("rpc::Reply")
    }
}

impl<Req: Send + 'static, Resp: Send + 'static> Client<Req, Resp> {
    /// Calls the server with `req` and blocks for its answer. In async code use
    /// `client.call_evt(req).await`.
    ///
    /// A call waits as long as the server does not answer, even if every [`Server`] handle is
    /// gone (inside a runtime, deadlock detection then reports it): give it a timeout with
    /// `call_evt(req).sync_timeout(d)` if the server may fail.
    ///
    /// # Examples
    /// ```
    /// let (client, server) = pcml::rpc::channel::<String, usize>();
    /// std::thread::spawn(move || server.serve(|s| s.len()));
    /// assert_eq!(client.call("hello".to_string()), 5);
    /// ```
    pub fn call(&self, req: Req) -> Resp {
        self.call_evt(req).sync()
    }

    /// The call as an event (Figure 4's `rpcEvt`): when synchronized, sends `req` to the
    /// server and is enabled when the server answers. If it loses a choice, or its `.await`
    /// is dropped, the server's [`Reply::send`] returns false at once instead of blocking
    /// (unless the answer had already reached the call just before the drop: then `send`
    /// returned true and the answer is dropped with the future).
    ///
    /// # Examples
    /// A call that gives up after a timeout:
    /// ```
    /// use std::time::Duration;
    /// let (client, _server) = pcml::rpc::channel::<u8, u8>();
    /// let r = client.call_evt(1).sync_timeout(Duration::from_millis(1));
    /// assert_eq!(r, None); // nobody served it
    /// ```
    pub fn call_evt(&self, req: Req) -> Event<Resp> {
        let requests = self.requests.clone();
        with_nack(move |nack| {
            let reply = Chan::new();
            requests.send(Request {
                req,
                reply: reply.clone(),
                nack,
            });
            reply.recv_evt()
        })
    }
}

impl<Req: Send + 'static, Resp: Send + 'static> Server<Req, Resp> {
    /// Takes the oldest request, blocking while there is none.
    ///
    /// # Examples
    /// ```
    /// let (client, server) = pcml::rpc::channel::<u8, bool>();
    /// let c = std::thread::spawn(move || client.call(4));
    /// let (n, reply) = server.recv();
    /// reply.send(n % 2 == 0);
    /// assert!(c.join().unwrap());
    /// ```
    pub fn recv(&self) -> (Req, Reply<Resp>) {
        self.recv_evt().sync()
    }

    /// An event enabled while a request is waiting; syncing on it takes the oldest one, with
    /// the handle to answer it. A receive that loses a choice takes nothing.
    ///
    /// # Examples
    /// A server loop that also listens for a stop message:
    /// ```
    /// let (client, server) = pcml::rpc::channel::<u32, u32>();
    /// let stop = pcml::Chan::new();
    /// let stop_rx = stop.clone();
    /// let s = std::thread::spawn(move || {
    ///     let mut served = 0;
    ///     while let Some((n, reply)) =
    ///         pcml::select([server.recv_evt().wrap(Some), stop_rx.recv_evt().wrap(|()| None)])
    ///     {
    ///         reply.send(n * n);
    ///         served += 1;
    ///     }
    ///     served
    /// });
    /// assert_eq!(client.call(3), 9);
    /// stop.send(());
    /// assert_eq!(s.join().unwrap(), 1);
    /// ```
    pub fn recv_evt(&self) -> Event<(Req, Reply<Resp>)> {
        self.requests.recv_evt().wrap(|r: Request<Req, Resp>| {
            (
                r.req,
                Reply {
                    reply: r.reply,
                    nack: r.nack,
                },
            )
        })
    }

    /// Takes the oldest request if there is one. Never blocks.
    ///
    /// # Examples
    /// ```
    /// let (_client, server) = pcml::rpc::channel::<u8, u8>();
    /// assert!(server.try_recv().is_none());
    /// ```
    pub fn try_recv(&self) -> Option<(Req, Reply<Resp>)> {
        self.requests.try_recv().map(|r| {
            (
                r.req,
                Reply {
                    reply: r.reply,
                    nack: r.nack,
                },
            )
        })
    }

    /// How many requests wait to be taken.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let (client, server) = pcml::rpc::channel::<u8, u8>();
    /// assert_eq!(server.len(), 0);
    /// // A call that gave up leaves its request queued; answering it reports the loss.
    /// assert_eq!(client.call_evt(1).sync_timeout(Duration::from_millis(1)), None);
    /// assert_eq!(server.len(), 1);
    /// let (_, reply) = server.recv();
    /// assert!(!reply.send(0));
    /// ```
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether no request waits to be taken.
    ///
    /// # Examples
    /// ```
    /// let (_client, server) = pcml::rpc::channel::<u8, u8>();
    /// assert!(server.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Serves one request with `f`: takes it (blocking while there is none), answers with
    /// `f(req)`. Returns whether the answer was delivered (false if the caller gave up).
    ///
    /// # Examples
    /// ```
    /// let (client, server) = pcml::rpc::channel::<i32, i32>();
    /// let c = std::thread::spawn(move || client.call(-5));
    /// assert!(server.serve(i32::abs));
    /// assert_eq!(c.join().unwrap(), 5);
    /// ```
    pub fn serve(&self, f: impl FnOnce(Req) -> Resp) -> bool {
        let (req, reply) = self.recv();
        reply.send(f(req))
    }
}

impl<Resp: Send + 'static> Reply<Resp> {
    /// Answers the request: blocks until the caller takes the answer (true) or has given up
    /// on the call (false: its call lost a choice or was dropped, and `resp` is dropped). In
    /// async code use `reply.send_evt(resp).await`.
    ///
    /// # Examples
    /// ```
    /// use std::time::Duration;
    /// let (client, server) = pcml::rpc::channel::<(), u8>();
    /// // The caller gives up before the server answers: the answer is not delivered.
    /// assert_eq!(client.call_evt(()).sync_timeout(Duration::from_millis(1)), None);
    /// let ((), reply) = server.recv();
    /// assert!(!reply.send(1));
    /// ```
    pub fn send(self, resp: Resp) -> bool {
        self.send_evt(resp).sync()
    }

    /// [`send`](Reply::send) as an event: enabled when the caller takes the answer (true) or
    /// once it has given up (false).
    ///
    /// # Examples
    /// ```
    /// let (client, server) = pcml::rpc::channel::<u8, u8>();
    /// let c = std::thread::spawn(move || client.call(1));
    /// let (x, reply) = server.recv();
    /// assert!(reply.send_evt(x + 1).sync());
    /// assert_eq!(c.join().unwrap(), 2);
    /// ```
    pub fn send_evt(self, resp: Resp) -> Event<bool> {
        choose([
            self.reply.send_evt(resp).wrap(|()| true),
            self.nack.wrap(|()| false),
        ])
    }
}
