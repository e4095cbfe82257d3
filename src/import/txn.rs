//! ZooKeeper's txns as its logs and ZAB's PROPOSAL and INFORM packets frame them
//! (`Util.marshallTxnEntry`, `SerializeUtils.deserializeTxn`), parsed into zkr's `Txn`.
//!
//! ```text
//! txn     TxnHeader{clientId long, cxid int, zxid long, time long, type int} + record [+ TxnDigest]
//! ```

use super::jutein::{Cursor, Jute};
use super::ImportError;
use crate::txn::{owner, Txn, TxnOp};
use std::path::Path;
use std::sync::Arc;

fn txn_op<J: Jute>(c: &mut J, ty: i32, client: i64) -> Result<TxnOp, ImportError> {
    Ok(match ty {
        // create, create2: CreateTxn{path, data, acl, ephemeral, parentCVersion}
        1 | 15 => {
            let path = c.string("path")?;
            let data = c.bytes("data")?;
            let acl = c.acls()?;
            let ephemeral = c.bool("ephemeral")?;
            let parent_cversion = c.int("parentCVersion")?;
            let ephemeral_owner = if ephemeral { client } else { 0 };
            TxnOp::Create { path, data, acl: Arc::from(acl), ephemeral_owner, parent_cversion }
        }
        // createContainer: CreateContainerTxn{path, data, acl, parentCVersion}
        19 => {
            let path = c.string("path")?;
            let data = c.bytes("data")?;
            let acl = c.acls()?;
            let parent_cversion = c.int("parentCVersion")?;
            TxnOp::Create { path, data, acl: Arc::from(acl), ephemeral_owner: owner::CONTAINER, parent_cversion }
        }
        // createTTL: CreateTTLTxn{path, data, acl, parentCVersion, ttl}
        21 => {
            let path = c.string("path")?;
            let data = c.bytes("data")?;
            let acl = c.acls()?;
            let parent_cversion = c.int("parentCVersion")?;
            let ttl = c.long("ttl")?;
            TxnOp::Create { path, data, acl: Arc::from(acl), ephemeral_owner: owner::ttl(ttl), parent_cversion }
        }
        2 | 20 => TxnOp::Delete { path: c.string("path")? },
        // setData, and reconfig (a SetDataTxn on /zookeeper/config)
        5 | 16 => {
            let path = c.string("path")?;
            let data = c.bytes("data")?;
            let version = c.int("version")?;
            TxnOp::SetData { path, data, version }
        }
        7 => {
            let path = c.string("path")?;
            let acl = c.acls()?;
            let aversion = c.int("version")?;
            TxnOp::SetAcl { path, acl: Arc::from(acl), aversion }
        }
        13 => {
            let path = c.string("path")?;
            c.int("version")?;
            TxnOp::Check { path }
        }
        -10 => TxnOp::CreateSession { timeout_ms: c.int("timeout")?, password: None },
        // closeSession: 3.6+ lists the paths to delete; the ephemerals index gives the same set.
        -11 => TxnOp::CloseSession,
        -1 => {
            let code = c.int("err")?;
            TxnOp::Error(crate::proto::ErrorCode::from_i32(code).unwrap_or(crate::proto::ErrorCode::SystemError))
        }
        14 => {
            let n = c.int("multi count")?;
            let mut ops = Vec::with_capacity(n.max(0) as usize);
            for _ in 0..n.max(0) {
                let sub_type = c.int("sub-txn type")?;
                let data = c.bytes("sub-txn")?.unwrap_or_default();
                let label = c.label().to_owned();
                let mut sub = Cursor::new(&data, &label);
                ops.push(txn_op(&mut sub, sub_type, client)?);
            }
            TxnOp::Multi(ops)
        }
        other => return Err(c.err(&format!("unknown txn type {other}"))),
    })
}

/// A txn as ZooKeeper frames it in its log and in a ZAB PROPOSAL or INFORM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkTxn {
    pub txn: Txn,
    /// The client's request number: how a learner matches the txn to the request it forwarded.
    pub cxid: i32,
    pub digest: Option<TxnDigest>,
}

/// The leader's tree digest after the txn (3.6+ `TxnDigest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnDigest {
    pub version: i32,
    pub tree: i64,
}

/// Parses `TxnHeader`, the record of its type and, when bytes are left, the `TxnDigest` that
/// ZooKeeper 3.6+ appends (`Util.marshallTxnEntry`; `SerializeUtils.deserializeTxn` reads it
/// only if present, so 3.5's txns parse too).
pub fn parse_txn(body: &[u8], label: &Path) -> Result<ZkTxn, ImportError> {
    let mut t = Cursor::new(body, label);
    let client = t.long("clientId")?;
    let cxid = t.int("cxid")?;
    let zxid = t.long("zxid")?;
    let time = t.long("time")?;
    let ty = t.int("type")?;
    let op = txn_op(&mut t, ty, client)?;
    if op == TxnOp::CloseSession {
        skip_close_session_paths(&mut t);
    }
    let digest = if t.remaining() >= 12 {
        Some(TxnDigest { version: t.int("digest version")?, tree: t.long("tree digest")? })
    } else {
        None
    };
    Ok(ZkTxn { txn: Txn { zxid, time, session: client, op }, cxid, digest })
}

/// A closeSession's body: 3.6+ writes `CloseSessionTxn{vector<ustring> paths2Delete}` (unless
/// `zookeeper.closeSessionTxn.enabled=false`), 3.5 nothing. The reader cannot know which server
/// wrote it, so the list is taken only when it parses as paths and leaves nothing or exactly a
/// `TxnDigest` after it; the paths are not needed (the ephemerals index gives the same set).
fn skip_close_session_paths(t: &mut Cursor) {
    let start = t.pos;
    let parsed = (|| -> Result<bool, ImportError> {
        let n = t.int("paths2Delete count")?;
        for _ in 0..n.max(0) {
            if !t.string("path to delete")?.starts_with('/') {
                return Ok(false);
            }
        }
        Ok(n >= 0 && (t.remaining() == 0 || t.remaining() == 12))
    })();
    if !matches!(parsed, Ok(true)) {
        t.pos = start;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close_session(paths: Option<&[&str]>, digest: Option<i64>) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&0x42i64.to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&0x1_0000_0007i64.to_be_bytes());
        b.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
        b.extend_from_slice(&(-11i32).to_be_bytes());
        if let Some(paths) = paths {
            b.extend_from_slice(&(paths.len() as i32).to_be_bytes());
            for p in paths {
                b.extend_from_slice(&(p.len() as i32).to_be_bytes());
                b.extend_from_slice(p.as_bytes());
            }
        }
        if let Some(d) = digest {
            b.extend_from_slice(&2i32.to_be_bytes());
            b.extend_from_slice(&d.to_be_bytes());
        }
        b
    }

    /// Found against ZooKeeper 3.8 (tests/zab_observer.rs): the list of ephemerals in 3.6+'s
    /// CloseSessionTxn was read as the digest.
    #[test]
    fn a_close_sessions_paths_are_not_read_as_its_digest() {
        let label = Path::new("t");
        for (paths, digest) in [
            (Some(&["/a", "/b/c"][..]), Some(77)),
            (Some(&[][..]), Some(77)),
            (None, Some(77)),
            (None, None),
            (Some(&["/a"][..]), None),
        ] {
            let t = parse_txn(&close_session(paths, digest), label).unwrap();
            assert_eq!((t.txn.op, t.txn.session), (TxnOp::CloseSession, 0x42));
            assert_eq!(t.digest.map(|d| (d.version, d.tree)), digest.map(|d| (2, d)), "{paths:?} {digest:?}");
        }
    }
}
