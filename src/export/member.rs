//! Reading a stopped ensemble member's data directory (a participant's or a Raft observer's:
//! `<dataDir>/raft/`) for the export, the way the member itself recovers, but changing nothing:
//!
//! ```text
//! raft/snap/snapshot.<zxid> + .meta   the newest complete snapshot: the tree at log id `applied`
//! raft/committed                      the commit hint: the last entry known committed
//! raft/log/seg.*                      entries applied+1 ..= committed, replayed with the
//!                                     member's own apply (`server::core::replicated::offline`)
//! ```
//! Entries after the commit point are never applied: they may be a deposed leader's, which the
//! ensemble overwrote. A follower's hint can lag its leader's by a heartbeat; the output names
//! the zxid exported, so an operator exports the member that holds the most (the leader's, or
//! any member's after the ensemble was idle for a moment before it stopped).
//! Refused with the reason, nothing written: a member that holds no snapshot and no committed
//! entry (it never learned anything: exporting it would write an empty tree), a member marked diverged (its state would be set
//! aside at its next start), a damaged snapshot, commit hint or log record, a log that does not
//! reach back to the snapshot, an entry the member itself would have refused to apply.

use super::ExportError;
use crate::config::Config;
use crate::raft::log_store::{read_small, LogStore};
use crate::raft::types::LogId;
use crate::storage::StorageError;
use crate::tree::DataTree;

/// What a member's directory holds, replayed up to its commit point.
pub struct MemberTree {
    pub tree: DataTree,
    /// The last log entry applied (the snapshot's, or the commit hint's).
    pub applied: Option<LogId>,
    /// Entries replayed after the snapshot.
    pub replayed: u64,
}

/// The member's tree at its last known commit point. Takes the data directory's lock while it
/// reads, so a member still running there is refused.
pub fn read(cfg: &Config) -> Result<MemberTree, ExportError> {
    let _lock = crate::storage::lock(&cfg.data_dir).map_err(ExportError::Read)?;
    let dir = crate::raft::raft_dir(cfg);
    let io = |file: &std::path::Path| {
        let file = file.to_owned();
        move |e| ExportError::Read(StorageError::io(&file, e))
    };
    if let Some(why) = crate::raft::diverge::marked(&dir).map_err(io(&dir.join("diverged")))? {
        return Err(ExportError::Diverged { dir, why });
    }
    let snap_dir = dir.join("snap");
    let (tree, applied, membership) = match crate::raft::state_machine::latest(&snap_dir).map_err(ExportError::Read)? {
        Some((meta, path)) => {
            let tree = crate::storage::snapshot::read(&path).map_err(ExportError::Read)?;
            (tree, meta.last_log_id, meta.last_membership)
        }
        None => (DataTree::new(), None, Default::default()),
    };
    let log = LogStore::open_read_only(&dir).map_err(ExportError::Read)?;
    let hint = dir.join("committed");
    let committed = read_small::<Option<LogId>>(&hint).map_err(io(&hint))?.flatten();
    // The hint was saved while the log held that entry; a log cut since holds less.
    let committed = match (committed, log.last_log_id()) {
        (Some(c), Some(l)) if c.index > l.index => Some(l),
        (c, _) => c,
    };
    if applied.is_none() && committed.is_none() {
        // A member that never learned anything (one still waiting for its seed, say): exporting
        // it would write an empty tree.
        return Err(ExportError::NotZkr(cfg.data_dir.clone()));
    }
    let from = applied.map_or(0, |a| a.index + 1);
    let Some(to) = committed.map(|c| c.index).filter(|to| *to >= from) else {
        return Ok(MemberTree { tree, applied, replayed: 0 });
    };
    if !log.continues_from(applied) {
        let why = format!("the log does not reach back to the snapshot at {applied:?}");
        return Err(ExportError::Read(StorageError::Corrupt { file: dir.join("log"), offset: 0, reason: why }));
    }
    let entries = log.entries(from, to).map_err(ExportError::Read)?;
    let replayed = entries.len() as u64;
    let committed: Vec<_> = entries.into_iter().map(crate::raft::state_machine::committed).collect();
    let tree = crate::server::core::replicated::offline::replay(tree, applied, membership, committed)
        .map_err(|why| ExportError::Refused { dir: dir.clone(), why })?;
    Ok(MemberTree { tree, applied: log.log_id_at(to), replayed })
}
