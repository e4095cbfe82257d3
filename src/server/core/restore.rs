//! The AdminServer's backup commands in the core: `snapshot` takes a cheap copy of the tree at
//! one zxid (written out off the core, `admin::backup`); `restore` replaces the tree with one
//! read from a ZooKeeper snapshot, as ZooKeeper's `ZooKeeperServer.restoreFromSnapshot` swaps in
//! a new database.
//!
//! A restore is made durable before anything sees it: the turn's log records are flushed, the
//! restored tree is written as a zkr snapshot at a new zxid above every zxid the server or the
//! snapshot used (so zxids never go backwards), fsync'd and renamed, and that file is read back
//! as the live tree (what a restart would load, indexes and all). Recovery starts from it and
//! skips the log records before it; records after it continue at its zxid + 1. The core is
//! busy while the file is written: requests wait, as ZooKeeper holds them behind its
//! `restoreLatch`.
//!
//! A connection whose session the snapshot holds stays, and its watches fire for what the
//! restore changed (`tree::diff`), as for any write; the connections of other sessions are
//! closed (queued replies first), and their clients are told the session expired when they
//! re-attach. ZooKeeper keeps every connection, expires the sessions its new session tracker
//! lacks at their next request and drops the kept sessions' watches without an event, so a
//! watcher there never learns of the change. On an ensemble the same install runs on every
//! member when the restore's end record applies (`replicated::restore`).

use super::{Core, Durable, Log};
use crate::session::{ConnId, ExpiryQueue, Session};
use crate::storage;
use crate::storage::StorageError;
use crate::tree::DataTree;
use crate::txn::Zxid;
use std::sync::atomic::Ordering;

/// Why a restore was refused; the tree is then unchanged.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// A member or an observer: its tree is the ensemble's, changed only through its log.
    #[error(
        "restore is not served by an observer of a ZooKeeper ensemble: its tree is ZooKeeper's. Nothing was \
         changed."
    )]
    NotStandalone,
    /// The log did not make what was applied before the restore durable in time.
    #[error("the log did not make the writes before the restore durable within {0:?}; nothing was changed")]
    NotDurable(std::time::Duration),
    /// The proposal queue to the log was full: the ensemble is not keeping up.
    #[error("the ensemble's proposal queue is full; nothing was changed, try again")]
    Busy,
    /// A leader change lost part of the logged snapshot (`staged` of `logged` chunks arrived).
    #[error(
        "only {staged} of the restore's {logged} chunks reached the log (a leader change lost the rest); nothing \
         was changed on any member, send it again"
    )]
    Incomplete { staged: i32, logged: i32 },
    #[error("the logged snapshot does not parse, nothing was changed on any member: {0}")]
    NotASnapshot(String),
    /// The member asked lost its leader before the end record applied here.
    #[error(
        "the restore's fate is unknown (leader change or lost link): its end record may or may not apply; look \
         at the tree before sending it again"
    )]
    Lost,
    #[error("writing the restored tree failed, nothing was changed: {0}")]
    Write(#[source] StorageError),
    #[error("the restored tree was written but does not read back, nothing was changed: {0}")]
    ReadBack(#[source] StorageError),
}

/// What the core answers a restore with.
pub type RestoreReply = tokio::sync::oneshot::Sender<Result<Zxid, RestoreError>>;

/// The highest zxid a tree's nodes carry (created, modified, children changed).
pub(super) fn highest_zxid(tree: &DataTree) -> Zxid {
    let mut high = tree.last_zxid();
    tree.visit(|_, n| high = high.max(n.stat.czxid).max(n.stat.mzxid).max(n.stat.pzxid));
    high
}

impl Core {
    /// `snapshot`: a copy of the tree at its last zxid, and on a standalone server the counter
    /// that says when that zxid is on disk (the copy must not be handed out before it is).
    pub(super) fn snapshot_copy(&self) -> (DataTree, Option<Durable>) {
        let durable = matches!(self.log, Log::Standalone(_)).then(|| self.durable.clone());
        (self.tree.snapshot_view(), durable)
    }

    /// `restore`: replaces the tree (see the module doc) and returns its new zxid.
    pub(super) fn restore(&mut self, restored: DataTree, last_processed: Option<Zxid>) -> Result<Zxid, RestoreError> {
        if !matches!(self.log, Log::Standalone(_)) {
            return Err(RestoreError::NotStandalone);
        }
        // Everything applied so far goes to the log first: the restore comes after it.
        self.end_turn();
        // (The core waits, as ZooKeeper's requests wait behind its restoreLatch; bounded, so a
        // log that stopped writing fails the restore instead of hanging the core.)
        let patience = std::time::Duration::from_secs(30);
        let since = std::time::Instant::now();
        while self.durable.load(Ordering::Acquire) < self.tree.last_zxid() {
            if since.elapsed() > patience {
                return Err(RestoreError::NotDurable(patience));
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let mut restored = restored;
        let zxid = self.tree.last_zxid().max(highest_zxid(&restored)).max(last_processed.unwrap_or(0)) + 1;
        restored.set_last_zxid(zxid);
        let written = storage::snapshot::write(&self.layout.snap_dir, &restored).map_err(RestoreError::Write)?;
        let tree = match storage::snapshot::read(&written) {
            Ok(t) => t,
            Err(e) => {
                // Recovery must not start from a file that does not read.
                let _ = std::fs::remove_file(&written);
                return Err(RestoreError::ReadBack(e));
            }
        };
        tracing::info!(
            file = %written.display(),
            zxid = format!("0x{zxid:x}"),
            before = format!("0x{:x}", self.tree.last_zxid()),
            znodes = tree.node_count(),
            sessions = tree.sessions().len(),
            "restored the tree from a snapshot (AdminServer restore)"
        );
        self.install_restored(tree);
        Ok(zxid)
    }

    /// Makes `tree` the live state at its zxid: sessions become the tree's, each with a full
    /// timeout from now. A connection whose session the tree holds stays, with its watches, and
    /// is told of what the restore changed as of any write; every other connection is closed
    /// (its session is gone: the client is told it expired when it re-attaches). The log and
    /// the read views move to the tree's zxid.
    pub(super) fn install_restored(&mut self, tree: DataTree) {
        let gone: Vec<ConnId> = self
            .conns
            .iter()
            .filter(|(_, c)| !c.session.is_some_and(|s| tree.sessions().contains_key(&s)))
            .map(|(id, _)| *id)
            .collect();
        for c in gone {
            self.close_conn(c);
        }
        let changes = match self.watches.count() {
            0 => Vec::new(),
            _ => crate::tree::diff::changes(&self.tree, &tree, self.watches.watched_paths().as_deref()),
        };
        self.views.withdraw();
        let zxid = tree.last_zxid();
        let now = self.now_ms();
        self.expiry = ExpiryQueue::new(self.cfg.tick_time_ms as u64);
        let mut before = std::mem::take(&mut self.sessions);
        for (id, info) in tree.sessions() {
            self.expiry.touch(*id, now, info.timeout_ms as u64);
            let (conn, ids) = before.remove(id).map_or((None, Vec::new()), |s| (s.conn, s.ids));
            self.sessions.insert(*id, Session { timeout_ms: info.timeout_ms, conn, ids });
            if (*id as u64) >> 56 == self.cfg.server_id as u64 {
                self.next_session = self.next_session.max(id + 1);
            }
        }
        self.tree = tree;
        self.changes = changes;
        self.fire_watches(zxid);
        if let Log::Standalone(s) = &mut self.log {
            s.since_snapshot = 0;
        }
        // The restored snapshot is on disk: nothing up to its zxid waits for the log.
        self.durable.fetch_max(zxid, Ordering::AcqRel);
        let views = self.views.views();
        views.announce(zxid);
        views.delivered(zxid);
    }
}
