//! Sockets: TCP and UDP as events, echo servers, the chat example, file descriptors.
//!
//! One test binary per area (linking is most of a test build); each module is one
//! topic.

mod chat;
#[path = "../common/mod.rs"]
mod common;
mod echo;
mod events;
#[cfg(feature = "tokio")]
mod http;
mod streams;
mod udp_fd;
