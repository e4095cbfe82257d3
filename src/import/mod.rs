//! `zkr import-zookeeper`: reads Apache ZooKeeper's own data directory (the newest snapshot
//! that reads, plain or compressed, and the `log.<zxid>` files after it) and writes a zkr data
//! directory holding the same tree, ACLs, Stat values, sessions and zxid; and the parts of
//! ZooKeeper's formats the rest of zkr reads (the ZAB learner's SNAP and txns, the takeover's
//! log check).
//!
//! Files: `files` (names and order), `codec` (gzip, snappy-java, Adler-32 streams), `snapfile`
//! (a snapshot, format written there), `zklog` (a log, format there), `txn` (a txn's record),
//! `history` (the snapshot and the logs after it must make one continuous history, or the
//! import refuses, naming the file, the reason and the way out), `jutein` (jute readers).
//!
//! A ZooKeeper snapshot is fuzzy: it may already contain some changes of the txns logged after
//! its zxid. Replaying them is harmless because `DataTree::apply` tolerates exactly what
//! ZooKeeper's replay tolerates (a create of an existing node still moves the parent's cversion
//! and pzxid; a delete of a missing node still moves the parent's pzxid).

pub mod codec;
pub mod files;
pub mod history;
mod jutein;
pub mod snapfile;
mod txn;
pub mod zklog;

use crate::proto::Acl;
use crate::tree::{DataTree, NodeStat, SessionInfo};
use crate::txn::Zxid;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use history::{Break, Options};
pub use jutein::{adler32, Adler32, Jute, Stream};
pub use txn::{parse_txn, TxnDigest, ZkTxn};

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("{file}: {source}")]
    Io { file: PathBuf, source: std::io::Error },
    #[error("{file}: at offset {offset}: {what}")]
    Format { file: PathBuf, offset: u64, what: String },
    #[error("{file}: at offset {offset}: reading {what}: {source}")]
    Read { file: PathBuf, offset: u64, what: String, source: std::io::Error },
    #[error("{file}: at offset {offset}: {reason}")]
    DamagedLog { file: PathBuf, offset: u64, reason: String },
    /// The snapshot and the logs after it do not make one history (see `history`).
    #[error("{file}: {why}. Nothing was imported.{way_out}")]
    History { file: PathBuf, why: Break, way_out: String },
    #[error("{0}: no such ZooKeeper snapshot (--snapshot names a snapshot.<zxid> file of the data directory)")]
    NoSuchSnapshot(PathBuf),
    #[error("no ZooKeeper snapshot or log found in {0}")]
    Empty(PathBuf),
    #[error("{0} already holds a zkr data directory; import into an empty directory")]
    NotEmpty(PathBuf),
    #[error(transparent)]
    Storage(#[from] crate::storage::StorageError),
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

/// The highest zxid a ZooKeeper server wrote to disk in `dir` (its dataDir or dataLogDir, or
/// their `version-2`): the last txn of its logs, or its newest snapshot's zxid if that is
/// higher; `None` if it holds neither. The logs after the newest snapshot must make one
/// history (`history`), or the highest zxid is not known: an error names the file. The
/// snapshot is checked as ZooKeeper checks one before it tries it (`snapfile::looks_valid`),
/// not loaded: this runs in the takeover's write pause.
pub fn last_logged(dir: &Path) -> Result<Option<Zxid>, ImportError> {
    let snaps = files::snapshots(dir)?;
    let mut snapshot = None;
    for f in snaps.iter().rev() {
        if snapfile::looks_valid(f)? {
            snapshot = Some(f.zxid);
            break;
        }
        tracing::warn!(file = %f.path.display(), "not a whole ZooKeeper snapshot: trying an older one");
    }
    let logs = files::logs(dir)?;
    let chosen = match snapshot {
        Some(z) => files::logs_after(&logs, z),
        None => &logs[..],
    };
    let last = history::last_txn(chosen, snapshot).map_err(|(file, why)| ImportError::History {
        file,
        why,
        way_out: " The highest zxid this server logged is not known from its files.".into(),
    })?;
    Ok(last.max(snapshot))
}

/// Summary of an import, for the command's output.
pub struct Imported {
    pub loaded: history::Loaded,
    pub zxid: Zxid,
    pub znodes: usize,
    pub sessions: usize,
    pub written: PathBuf,
}

/// Reads ZooKeeper's data (`data_dir`, and `log_dir` if the logs live elsewhere) into a tree.
pub fn load(data_dir: &Path, log_dir: Option<&Path>, opts: &Options) -> Result<history::Loaded, ImportError> {
    history::load(data_dir, log_dir.unwrap_or(data_dir), opts)
}

/// The whole command: load, then write a zkr snapshot into an empty data directory.
pub fn import(
    zk_data_dir: &Path,
    zk_log_dir: Option<&Path>,
    out: &Path,
    opts: &Options,
) -> Result<Imported, ImportError> {
    let layout = crate::storage::Layout::new(&crate::config::Config { data_dir: out.to_owned(), ..Default::default() });
    let occupied = |d: &Path| std::fs::read_dir(d).map(|mut r| r.next().is_some()).unwrap_or(false);
    if occupied(&layout.snap_dir) || occupied(&layout.log_dir) {
        return Err(ImportError::NotEmpty(out.to_owned()));
    }
    let loaded = load(zk_data_dir, zk_log_dir, opts)?;
    let written = crate::storage::snapshot::write(&layout.snap_dir, &loaded.tree)?;
    let (zxid, znodes, sessions) = (loaded.tree.last_zxid(), loaded.tree.node_count(), loaded.tree.sessions().len());
    Ok(Imported { loaded, zxid, znodes, sessions, written })
}
