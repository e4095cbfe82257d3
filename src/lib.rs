//! zkr: a ZooKeeper-wire-compatible coordination server.
//!
//! ```text
//!  TCP conn ──► codec (frames) ──► proto (jute records) ──► core thread ──────────────────────┐
//!   ▲                                                      │ prep → Txn → apply(DataTree)     │
//!   │                                                      │ reads answered in the same order │
//!   │                                                      │ watch tables fire events         │
//!   └── per-connection FIFO queue (replies + events) ◄─────┘ sessions: expiry queue, re-attach │
//! ```
//!
//! Invariants: `DataTree::apply` is deterministic (time and ids fixed in the `Txn`); one thread
//! applies txns in zxid order; replies and notifications of a connection leave in one FIFO;
//! watches are connection-local; every queue is bounded.
// No unsafe code but the calls into the system's GSS-API (`security::gssapi::ffi`, Kerberos).
#![deny(unsafe_code)]

pub mod admin;
pub mod authinfo;
pub mod bench;
pub mod cli;
pub mod client;
pub mod codec;
pub mod config;
pub mod dubbo;
pub mod export;
pub mod fdlimit;
pub mod import;
pub mod listen;
pub mod proto;
pub mod raft;
pub mod security;
pub mod server;
pub mod session;
pub mod storage;
pub mod takeover;
pub mod tree;
pub mod txn;
pub mod watch;
pub mod zab;
