//! zkr: a ZooKeeper-wire-compatible coordination server.
pub mod proto;
