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
//! Every client connection is closed (queued replies first). ZooKeeper keeps the connections
//! but its new session tracker knows only the snapshot's sessions, so the others are expired at
//! their next request, and a kept session's watches are dropped without an event. zkr closes
//! them all so that no client keeps watches that will never fire: a session the snapshot holds
//! may re-attach (with a password ZooKeeper's way, as for any imported session) and re-send its
//! watches, which fire for what changed; every other one is told it expired.

use super::*;
use crate::storage::StorageError;

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

    /// Makes `tree` the live state: connections closed, sessions from the tree with a full
    /// timeout from now, no watches, the log and the read views at its zxid.
    pub(super) fn install_restored(&mut self, tree: DataTree) {
        let conns: Vec<ConnId> = self.conns.keys().copied().collect();
        for c in conns {
            self.close_conn(c);
        }
        self.views.withdraw();
        let zxid = tree.last_zxid();
        let now = self.now_ms();
        self.expiry = ExpiryQueue::new(self.cfg.tick_time_ms as u64);
        self.sessions.clear();
        for (id, info) in tree.sessions() {
            self.expiry.touch(*id, now, info.timeout_ms as u64);
            self.sessions.insert(*id, Session { timeout_ms: info.timeout_ms, conn: None, ids: Vec::new() });
            if (*id as u64) >> 56 == self.cfg.server_id as u64 {
                self.next_session = self.next_session.max(id + 1);
            }
        }
        self.watches = WatchManager::default();
        self.tree = tree;
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
