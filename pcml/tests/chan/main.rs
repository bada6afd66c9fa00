//! Channels and the buffered objects: synchronous channels and their halves, closing, bounded channels, mailboxes, multicast, RPC.
//!
//! One test binary per area (linking is most of a test build); each module is one
//! topic.

#[path = "../common/mod.rs"]
mod common;

mod across_procs;
mod basic;
mod bounded_basic;
mod close;
mod direct_events;
mod mailbox_basic;
mod multicast_basic;
mod rpc_basic;
