//! `Txn`: the unit of the ordered log and of replication.
//!
//! A txn is fully resolved before it is logged: the zxid, the wall-clock time, the session, the
//! final path of a sequential node and every new version are fixed here, so that applying it is
//! deterministic (`DataTree::apply` reads no clock and makes no choice).

use crate::proto::{Acl, ErrorCode};
use bytes::Bytes;
use std::sync::Arc;

/// ZooKeeper transaction id: the position in the log, strictly increasing.
pub type Zxid = i64;
/// ZooKeeper session id (server id in the top byte).
pub type SessionId = i64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Txn {
    pub zxid: Zxid,
    /// Milliseconds since the epoch, read once when the txn was prepared.
    pub time: i64,
    pub session: SessionId,
    pub op: TxnOp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnOp {
    CreateSession {
        timeout_ms: i32,
        /// Set in an ensemble: the password every member checks on re-attach. Standalone
        /// sessions derive theirs from the data directory's secret instead.
        password: Option<[u8; crate::proto::PASSWORD_LEN]>,
    },
    /// Deletes the session's ephemerals.
    CloseSession,
    Create {
        path: String,
        data: Option<Bytes>,
        acl: Arc<[Acl]>,
        /// Session id, or ZooKeeper's container/TTL markers (`EphemeralType`).
        ephemeral_owner: i64,
        /// The parent's cversion after this create.
        parent_cversion: i32,
    },
    Delete {
        path: String,
    },
    SetData {
        path: String,
        data: Option<Bytes>,
        version: i32,
    },
    SetAcl {
        path: String,
        acl: Arc<[Acl]>,
        aversion: i32,
    },
    /// A successful version check inside a multi: changes nothing.
    Check {
        path: String,
    },
    /// All sub-txns succeed, or every one is an `Error` and nothing changes.
    Multi(Vec<TxnOp>),
    /// A write that failed in prep still consumes its zxid, as ZooKeeper's ErrorTxn does.
    Error(ErrorCode),
}

/// `EphemeralType` markers kept in `ephemeralOwner`.
pub mod owner {
    /// CONTAINER: `Long.MIN_VALUE`.
    pub const CONTAINER: i64 = i64::MIN;
    /// TTL: the top byte 0xff, the TTL in milliseconds in the low 40 bits.
    pub const TTL_MASK: i64 = 0xff00_0000_0000_0000u64 as i64;
    /// Largest TTL ZooKeeper accepts (`EphemeralType.TTL.maxValue()`).
    pub const MAX_TTL: i64 = 0x00ff_ffff_ffff;

    pub fn ttl(ttl_ms: i64) -> i64 {
        TTL_MASK | ttl_ms
    }

    /// The TTL of a TTL node, `None` for any other owner.
    pub fn ttl_of(owner: i64) -> Option<i64> {
        (owner != CONTAINER && owner & TTL_MASK == TTL_MASK).then_some(owner & MAX_TTL)
    }

    /// A real session owns it (neither persistent, container nor TTL).
    pub fn is_session(owner: i64) -> bool {
        owner != 0 && owner != CONTAINER && ttl_of(owner).is_none()
    }
}
