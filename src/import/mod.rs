//! `zkr import-zookeeper`: reads Apache ZooKeeper's own data directory (the newest valid
//! `snapshot.<zxid>` plus the `log.<zxid>` files after it) and writes a zkr data directory
//! holding the same tree, ACLs, Stat values, sessions and zxid.
//!
//! ZooKeeper's formats, as FileSnap / FileTxnLog / SerializeUtils write them (big-endian jute):
//! ```text
//! snapshot  "ZKSN" int | version int | dbid long
//!           sessions: count int, (id long, timeout int)*
//!           acl cache: count int, (id long, vector<ACL>)*
//!           nodes: (path ustring, data buffer, acl-id long, StatPersisted)* then path "/"
//!           [3.6+: zxid digest: zxid long, version int, digest long]
//!           adler32 long | "/" ustring          (the checksum covers everything before it)
//! log       "ZKLG" int | version int | dbid long
//!           (adler32 long | txn buffer | 'B')*  ending at a zero-length txn (preallocated)
//! txn       TxnHeader{clientId long, cxid int, zxid long, time long, type int} + record
//! ```
//! A ZooKeeper snapshot is fuzzy: it may already contain some changes of the txns logged after
//! its zxid. Replaying them is harmless because `DataTree::apply` tolerates exactly what
//! ZooKeeper's replay tolerates (a create of an existing node still moves the parent's cversion
//! and pzxid; a delete of a missing node still moves the parent's pzxid).

mod jutein;

use crate::proto::Acl;
use crate::tree::{DataTree, NodeStat, SessionInfo};
use crate::txn::{owner, Txn, TxnOp, Zxid};
use jutein::{adler32, Cursor};
pub use jutein::{Jute, Stream};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{file}: {source}")]
    Io { file: PathBuf, source: std::io::Error },
    #[error("{file}: at offset {offset}: {what}")]
    Format { file: PathBuf, offset: u64, what: String },
    #[error("{file}: at offset {offset}: reading {what}: {source}")]
    Read { file: PathBuf, offset: u64, what: String, source: std::io::Error },
    #[error("no ZooKeeper snapshot or log found in {0}")]
    Empty(PathBuf),
    #[error("{0} already holds a zkr data directory; import into an empty directory")]
    NotEmpty(PathBuf),
    #[error(transparent)]
    Storage(#[from] crate::storage::StorageError),
}

const SNAP_MAGIC: i32 = 0x5a4b_534e; // "ZKSN"
const LOG_MAGIC: i32 = 0x5a4b_4c47; // "ZKLG"

/// ZooKeeper's `<prefix>.<hex zxid>` files in `dir`, sorted by zxid.
fn files(dir: &Path, prefix: &str) -> Result<Vec<(Zxid, PathBuf)>, ImportError> {
    Ok(crate::storage::numbered_files(dir, prefix)?)
}

/// ZooKeeper keeps its files in a `version-2` directory under dataDir / dataLogDir.
fn version_dir(dir: &Path) -> PathBuf {
    let v2 = dir.join("version-2");
    if v2.is_dir() {
        v2
    } else {
        dir.to_owned()
    }
}

fn read(path: &Path) -> Result<Vec<u8>, ImportError> {
    std::fs::read(path).map_err(|source| ImportError::Io { file: path.to_owned(), source })
}

/// Parses one ZooKeeper snapshot into a tree whose last zxid is the snapshot's.
pub fn read_snapshot(path: &Path, zxid: Zxid) -> Result<DataTree, ImportError> {
    let bytes = read(path)?;
    let mut c = Cursor::new(&bytes, path);
    if c.int("magic")? != SNAP_MAGIC {
        return Err(c.err("not a ZooKeeper snapshot (magic is not ZKSN)"));
    }
    c.int("version")?;
    c.long("dbid")?;
    let mut tree = read_tree(&mut c)?;
    // The Adler32 of everything before it, then "/". In 3.6+ a zxid digest (zxid long,
    // version int, digest long) follows with a second checksum (of everything before that) and "/".
    let check = |c: &mut Cursor| -> Result<(), ImportError> {
        let at = c.pos;
        let stored = c.long("checksum")? as u64 as u32;
        if adler32(&bytes[..at]) != stored {
            c.pos = at;
            return Err(c.err("snapshot fails its Adler32 checksum"));
        }
        if c.string("checksum trailer")? != "/" {
            return Err(c.err("missing \"/\" after the checksum"));
        }
        Ok(())
    };
    check(&mut c)?;
    if c.remaining() >= 20 + 8 + 5 {
        c.pos += 20;
        check(&mut c)?;
    }
    tree.set_last_zxid(zxid);
    // As DataTree.deserialize: quota roots and their stats come from the nodes just read.
    tree.setup_quota();
    Ok(tree)
}

/// The part of a snapshot that a ZooKeeper leader also sends a learner after SNAP: sessions,
/// the ACL cache, then every node in pre-order up to the path "/" (`SerializeUtils.serializeSnapshot`,
/// `DataTree.serialize`).
pub fn read_tree<J: Jute>(c: &mut J) -> Result<DataTree, ImportError> {
    let mut tree = DataTree::empty();
    let sessions = c.int("session count")?;
    for _ in 0..sessions.max(0) {
        let id = c.long("session id")?;
        let timeout = c.int("session timeout")?;
        tree.restore_session(id, SessionInfo { timeout_ms: timeout, zk_password: true, password: None, owner: None });
    }
    let mut acls: HashMap<i64, Vec<Acl>> = HashMap::new();
    let n = c.int("acl cache size")?;
    for _ in 0..n.max(0) {
        let id = c.long("acl id")?;
        acls.insert(id, c.acls()?);
    }
    loop {
        let path = c.string("node path")?;
        if path == "/" {
            break;
        }
        let data = c.bytes("node data")?;
        let acl_id = c.long("node acl")?;
        let czxid = c.long("czxid")?;
        let mzxid = c.long("mzxid")?;
        let ctime = c.long("ctime")?;
        let mtime = c.long("mtime")?;
        let version = c.int("version")?;
        let cversion = c.int("cversion")?;
        let aversion = c.int("aversion")?;
        let ephemeral_owner = c.long("ephemeralOwner")?;
        let pzxid = c.long("pzxid")?;
        let acl = match acl_id {
            // ReferenceCountedACLCache: -1 is OPEN_ACL_UNSAFE.
            -1 => Acl::open_unsafe(),
            id => acls.get(&id).cloned().ok_or_else(|| c.err(&format!("unknown ACL id {id}")))?,
        };
        let stat = NodeStat { czxid, mzxid, pzxid, ctime, mtime, version, cversion, aversion, ephemeral_owner };
        let p = if path.is_empty() { "/" } else { path.as_str() };
        if !tree.restore_node(p, data, &acl, stat, 0) {
            return Err(c.err(&format!("node {p} comes before its parent")));
        }
    }
    Ok(tree)
}

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

/// Reads every txn of one log file; a torn or zero tail ends the file.
fn read_log(path: &Path, out: &mut Vec<Txn>, after: Zxid) -> Result<(), ImportError> {
    for_each_record(path, |body| {
        let t = parse_txn(body, path)?;
        if t.txn.zxid > after {
            out.push(t.txn);
        }
        Ok(())
    })
}

/// Calls `each` with the body (TxnHeader and record) of every whole record of one log file, in
/// order; a torn or zero tail ends the file. The file is read as a stream up to that end, not
/// whole: ZooKeeper preallocates its logs with zeros (64 MiB by default).
fn for_each_record(path: &Path, mut each: impl FnMut(&[u8]) -> Result<(), ImportError>) -> Result<(), ImportError> {
    let io = |source| ImportError::Io { file: path.to_owned(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let mut r = std::io::BufReader::with_capacity(1 << 20, file);
    let mut head = [0u8; 16];
    if !read_full(&mut r, &mut head).map_err(io)? {
        return Ok(());
    }
    if head[..4] != LOG_MAGIC.to_be_bytes() {
        let what = "not a ZooKeeper log (magic is not ZKLG)".to_owned();
        return Err(ImportError::Format { file: path.to_owned(), offset: 0, what });
    }
    let mut at = 16u64;
    let mut body = Vec::new();
    loop {
        let mut h = [0u8; 12];
        if !read_full(&mut r, &mut h).map_err(io)? {
            break;
        }
        let crc = u64::from_be_bytes(h[..8].try_into().unwrap_or_default()) as u32;
        let len = i32::from_be_bytes(h[8..].try_into().unwrap_or_default());
        let Ok(len) = usize::try_from(len) else { break };
        // Zero: preallocated space. Past the file's end: a torn tail.
        if len == 0 || at + 12 + len as u64 + 1 > size {
            break;
        }
        body.resize(len + 1, 0);
        if !read_full(&mut r, &mut body).map_err(io)? {
            break;
        }
        let (record, end) = body.split_at(len);
        if end != b"B" || adler32(record) != crc {
            tracing::warn!(file = %path.display(), offset = at, "partial transaction at the end of a ZooKeeper log: ignored");
            break;
        }
        each(record)?;
        at += 12 + len as u64 + 1;
    }
    Ok(())
}

/// Fills `buf`; false if the stream ended first.
fn read_full(r: &mut impl std::io::Read, buf: &mut [u8]) -> std::io::Result<bool> {
    match r.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// The highest zxid a ZooKeeper server wrote to disk in `dir` (its dataDir or dataLogDir, or
/// their `version-2`): the last txn of its newest log that holds one, or its newest snapshot's
/// zxid if that is higher. `None` if it holds neither.
pub fn last_logged(dir: &Path) -> Result<Option<Zxid>, ImportError> {
    let dir = version_dir(dir);
    let snapshot = files(&dir, "snapshot.")?.last().map(|(z, _)| *z);
    let mut logged = None;
    for (_, path) in files(&dir, "log.")?.iter().rev() {
        // Only the zxid is wanted: it follows the TxnHeader's clientId and cxid; nothing is parsed.
        for_each_record(path, |body| {
            let zxid = body.get(12..20).and_then(|b| b.try_into().ok()).map(i64::from_be_bytes);
            logged = logged.max(zxid);
            Ok(())
        })?;
        if logged.is_some() {
            break;
        }
    }
    Ok(logged.max(snapshot))
}

/// Summary of an import, for the command's output.
pub struct Imported {
    pub snapshot: Option<PathBuf>,
    pub logs: usize,
    pub txns: usize,
    pub zxid: Zxid,
    pub znodes: usize,
    pub sessions: usize,
    pub written: PathBuf,
}

/// Reads ZooKeeper's data (`data_dir`, and `log_dir` if the logs live elsewhere) into a tree.
pub fn load(data_dir: &Path, log_dir: Option<&Path>) -> Result<(DataTree, Option<PathBuf>, usize, usize), ImportError> {
    let snap_dir = version_dir(data_dir);
    let log_dir = version_dir(log_dir.unwrap_or(data_dir));
    let snaps = files(&snap_dir, "snapshot.")?;
    let logs = files(&log_dir, "log.")?;
    if snaps.is_empty() && logs.is_empty() {
        return Err(ImportError::Empty(data_dir.to_owned()));
    }
    let mut tree = None;
    let mut used = None;
    for (zxid, path) in snaps.iter().rev() {
        match read_snapshot(path, *zxid) {
            Ok(t) => {
                tree = Some(t);
                used = Some(path.clone());
                break;
            }
            Err(e) => tracing::warn!("{e}; trying an older snapshot"),
        }
    }
    let mut tree = tree.unwrap_or_default();
    let start = tree.last_zxid();
    // FileTxnLog.getLogFiles: the newest log starting at or before the snapshot, and all after.
    let first = logs.iter().rposition(|(z, _)| *z <= start).unwrap_or(0);
    let mut txns = Vec::new();
    for (_, path) in &logs[first..] {
        read_log(path, &mut txns, start)?;
    }
    let mut changes = Vec::new();
    for t in &txns {
        changes.clear();
        tree.apply(t, &mut changes);
    }
    tree.mark_sessions_imported();
    Ok((tree, used, logs.len() - first, txns.len()))
}

/// The whole command: load, then write a zkr snapshot into an empty data directory.
pub fn import(zk_data_dir: &Path, zk_log_dir: Option<&Path>, out: &Path) -> Result<Imported, ImportError> {
    let layout = crate::storage::Layout::new(&crate::config::Config { data_dir: out.to_owned(), ..Default::default() });
    let occupied = |d: &Path| std::fs::read_dir(d).map(|mut r| r.next().is_some()).unwrap_or(false);
    if occupied(&layout.snap_dir) || occupied(&layout.log_dir) {
        return Err(ImportError::NotEmpty(out.to_owned()));
    }
    let (tree, snapshot, logs, txns) = load(zk_data_dir, zk_log_dir)?;
    let written = crate::storage::snapshot::write(&layout.snap_dir, &tree)?;
    Ok(Imported {
        snapshot,
        logs,
        txns,
        zxid: tree.last_zxid(),
        znodes: tree.node_count(),
        sessions: tree.sessions().len(),
        written,
    })
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
