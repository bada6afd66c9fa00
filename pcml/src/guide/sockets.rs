//! Sockets: TCP and UDP whose operations suspend only the calling thread, and reads that are
//! events.
//!
//! [`pcml::net`](crate::net) has a [`TcpListener`](crate::net::TcpListener), a
//! [`TcpStream`](crate::net::TcpStream) and a [`UdpSocket`](crate::net::UdpSocket). In a fiber,
//! `accept`, `read` and `write` look blocking but suspend only that fiber, so a server is a
//! fiber per connection written as straight-line code. In async code the same sockets have
//! `*_async` methods and implement `futures_io::AsyncRead`/`AsyncWrite` (and tokio's
//! `AsyncRead`/`AsyncWrite` with the `tokio` feature), so codecs and `BufReader` work.
//!
//! # A read with a timeout is one `select!`
//! [`read_line_evt`](crate::net::TcpStream::read_line_evt),
//! [`read_evt`](crate::net::TcpStream::read_evt) and
//! [`read_exact_evt`](crate::net::TcpStream::read_exact_evt) are events that deliver *bytes*,
//! not readiness: a line that arrives in two pieces is one result, and a line that never ends
//! does not hang the server. So an idle timeout, a shutdown channel and the client's next line
//! are one choice:
//!
//! ```
//! use std::time::Duration;
//!
//! use pcml::net::{TcpListener, TcpStream};
//!
//! /// Serves one client: echoes its lines in upper case until it leaves, is idle for too long,
//! /// or the server stops.
//! fn serve(conn: TcpStream, stop: pcml::chan::Receiver<()>) -> &'static str {
//!     loop {
//!         pcml::select! {
//!             line = conn.read_line_evt(4096) => match line {
//!                 Ok(line) if line.is_empty() => return "client left",
//!                 Ok(line) => conn.write_all(line.to_uppercase().as_bytes()).unwrap(),
//!                 Err(_) => return "bad line",
//!             },
//!             recv(stop) -> _ => return "server stopping",
//!             default(Duration::from_secs(30)) => return "idle",
//!         }
//!     }
//! }
//!
//! pcml::run(|| {
//!     let listener = TcpListener::bind("127.0.0.1:0").unwrap();
//!     let addr = listener.local_addr().unwrap();
//!     let (_stop_tx, stop) = pcml::chan::channel::<()>();
//!     let server = pcml::spawn(move || {
//!         let (conn, _) = listener.accept().unwrap();
//!         serve(conn, stop)
//!     });
//!
//!     let client = TcpStream::connect(addr).unwrap();
//!     client.write_all(b"hel").unwrap();
//!     client.write_all(b"lo\n").unwrap();
//!     assert_eq!(client.read_line_evt(100).sync().unwrap(), "HELLO\n");
//!     drop(client);
//!     assert_eq!(server.join().unwrap(), "client left");
//! });
//! ```
//!
//! `pcml/examples/chat.rs` is a whole chat server in this style, with the limits a real server
//! needs: a maximum line length, and a bounded queue of outgoing lines per client whose
//! overflow drops a client that does not read. `pcml/examples/hyper_server.rs` runs hyper's
//! HTTP/1.1 server on pcml tasks and sockets.
//!
//! # Readiness, and any file descriptor
//! `readable_evt` and `writable_evt` are readiness as events (a hint: the next read may still
//! find nothing). [`pcml::io::Async`](crate::io::Async) gives the same to any file descriptor.
//! One poller per runtime drives them all.
