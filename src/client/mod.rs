//! The client library: one ZooKeeper session over the wire protocol, as the Java client keeps it.
//!
//! `conn::Client` is the handle (calls, close, add_auth, state changes); `task` is the
//! connection task behind it (handshake, host list, re-attach with setWatches, pings, xid
//! order); `call` holds what a call carries and returns; `watches` is the client's own watch
//! table (ZooKeeper's ZKWatchManager); `path` validates paths and applies a chroot; `four_letter` asks a server a four-letter word.
//! Used by `zkr cli` and by `zkr dubbo`'s registry view. `zkr bench` keeps its own lean loader
//! (`bench::client`), which pipelines without a watch table or re-attach.

pub mod call;
pub mod conn;
pub mod four_letter;
pub mod path;
mod task;
pub mod watches;
