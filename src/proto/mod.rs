//! Pure jute: the records of ZooKeeper's client protocol, their op codes and error codes.
//!
//! No tokio, no state: bytes in, typed values out, and back. Everything here must match the
//! byte layouts in `zookeeper.jute` exactly; the golden tests in `tests/fixtures.rs` pin that.

pub mod codes;
pub mod connect;
pub mod jute;
pub mod request;
pub mod response;
pub mod stat;

pub use codes::{perms, xid, CreateMode, ErrorCode, EventType, OpCode, WatcherType, STATE_SYNC_CONNECTED};
pub use connect::{ConnectRequest, ConnectResponse, PASSWORD_LEN};
pub use jute::DecodeError;
pub use request::{CreateRequest, MultiOp, Request, RequestBody, RequestError, SetWatches};
pub use response::{encode_children, MultiResult, ReplyHeader, Response, WatcherEvent};
pub use stat::{Acl, Id, Stat};
