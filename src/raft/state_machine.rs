//! openraft's state machine: the core's tree. Committed entries go to the core thread, which
//! applies them in order (and answers the clients waiting for them); snapshots are the zkr
//! snapshot format plus a small file of Raft metadata.
//!
//! ```text
//! <dataDir>/raft/snap/snapshot.<zxid, 16 hex digits>        the tree (storage/snapshot.rs)
//! <dataDir>/raft/snap/snapshot.<zxid, 16 hex digits>.meta   openraft's SnapshotMeta (bincode | crc32)
//! ```
//! A snapshot counts only once its `.meta` exists (written last). Snapshots travel between
//! members as the tree file in chunks (openraft's chunked transfer), so neither side holds a
//! second copy of the tree in memory beyond what the format needs.

use super::log_store::{read_small, write_small};
use super::seam::{Committed, CommittedPayload, ReplMsg, Up, Upward};
use super::types::{sm_err, sm_msg, Entry, LogId, Membership, SnapshotMeta, StorageError, Zkr};
use crate::config::CrashPoint;
use crate::tree::DataTree;
use openraft::storage::{RaftStateMachine, Snapshot};
use openraft::{EntryPayload, RaftSnapshotBuilder};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{oneshot, Notify};
use tokio_util::sync::CancellationToken;

/// Snapshots kept (the newest ones); older ones and their metadata are removed.
const KEEP: usize = 2;

/// When a member takes a snapshot: after snapCount txns (commands), as ZooKeeper counts them.
/// openraft's own policy counts log entries, and an entry here is a batch of up to 1,024
/// commands, so under pipelined writes it snapshotted (and trimmed its log) a thousand times
/// less often than configured. Like ZooKeeper's `SyncRequestProcessor`, each member waits a
/// random count in [snapCount/2, snapCount) so that members do not all snapshot at once.
pub struct SnapshotDue {
    every: u64,
    applied: AtomicU64,
    next: AtomicU64,
    wake: Notify,
}

impl SnapshotDue {
    pub fn new(snap_count: u64) -> Arc<SnapshotDue> {
        let every = snap_count.max(2);
        let d = SnapshotDue { every, applied: AtomicU64::new(0), next: AtomicU64::new(every), wake: Notify::new() };
        d.reset();
        Arc::new(d)
    }

    fn add(&self, commands: u64) {
        let n = self.applied.fetch_add(commands, Ordering::Relaxed) + commands;
        if n >= self.next.load(Ordering::Relaxed) {
            self.wake.notify_one();
        }
    }

    /// A snapshot is being taken (or was installed): count from zero towards a new threshold.
    fn reset(&self) {
        self.applied.store(0, Ordering::Relaxed);
        let half = self.every / 2;
        self.next.store(half + rand::random::<u64>() % (self.every - half), Ordering::Relaxed);
    }

    /// Asks openraft for a snapshot each time the threshold is reached, until shutdown.
    pub async fn run(self: Arc<Self>, raft: super::types::Raft, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = shutdown.cancelled() => return,
            }
            if self.applied.load(Ordering::Relaxed) < self.next.load(Ordering::Relaxed) {
                continue;
            }
            if let Err(e) = raft.trigger().snapshot().await {
                tracing::debug!("no snapshot: Raft has stopped: {e}");
                return;
            }
        }
    }
}

pub struct StateMachine {
    core: Upward,
    due: Arc<SnapshotDue>,
    dir: PathBuf,
    applied: Option<LogId>,
    membership: Membership,
    /// The file a snapshot from the leader is being received into.
    receiving: Option<PathBuf>,
    /// The test failpoint that may stop the process between a snapshot's steps.
    crash: Option<CrashPoint>,
}

pub fn meta_path(snapshot: &Path) -> PathBuf {
    let mut p = snapshot.as_os_str().to_owned();
    p.push(".meta");
    PathBuf::from(p)
}

/// The newest complete snapshot of `dir`: its metadata and path.
pub fn latest(dir: &Path) -> Result<Option<(SnapshotMeta, PathBuf)>, crate::storage::StorageError> {
    for (_, path) in crate::storage::snapshot::list(dir)? {
        let mp = meta_path(&path);
        match read_small::<SnapshotMeta>(&mp) {
            Ok(Some(meta)) => return Ok(Some((meta, path))),
            Ok(None) => tracing::warn!(file = %path.display(), "snapshot without its .meta (interrupted): ignored"),
            Err(e) => return Err(crate::storage::StorageError::io(&mp, e)),
        }
    }
    Ok(None)
}

/// The newest snapshot that reads back whole (its `.meta` and its tree both check out), loaded.
/// A damaged one is moved with its `.meta` to `<dir>/damaged/` (kept, never deleted) and the
/// next older one is tried, as ZooKeeper falls back to an older snapshot; the caller replays
/// the log from the one taken, or fetches from the leader when the log no longer reaches back
/// that far.
pub fn newest_valid(dir: &Path) -> Result<Option<(SnapshotMeta, DataTree)>, crate::storage::StorageError> {
    let damaged = dir.join("damaged");
    for (_, path) in crate::storage::snapshot::list(dir)? {
        let mp = meta_path(&path);
        let why = match read_small::<SnapshotMeta>(&mp) {
            Ok(None) => {
                tracing::warn!(file = %path.display(), "snapshot without its .meta (interrupted): ignored");
                continue;
            }
            Err(e) => format!("its metadata {}: {e}", mp.display()),
            Ok(Some(meta)) => match crate::storage::snapshot::read(&path) {
                Ok(tree) => return Ok(Some((meta, tree))),
                Err(e) => e.to_string(),
            },
        };
        let to = super::log_repair::set_aside(&path, &damaged, "corrupt")?;
        if mp.exists() {
            super::log_repair::set_aside(&mp, &damaged, "corrupt")?;
        }
        tracing::warn!(file = %path.display(), moved_to = %to.display(), "damaged snapshot set aside ({why}): trying an older one");
    }
    Ok(None)
}

/// A committed log entry as the core applies it (what `apply` hands the core; also the offline
/// replay of `zkr export-zookeeper`).
pub fn committed(e: Entry) -> Committed {
    let payload = match e.payload {
        EntryPayload::Blank => CommittedPayload::Blank,
        EntryPayload::Normal(batch) => CommittedPayload::Commands(batch),
        EntryPayload::Membership(m) => CommittedPayload::Membership(Membership::new(Some(e.log_id), m)),
    };
    Committed { log_id: e.log_id, payload }
}

/// Removes all but the newest `KEEP` snapshots, and leftovers of interrupted transfers.
fn purge(dir: &Path, crash: Option<CrashPoint>) {
    if let Ok(list) = crate::storage::snapshot::list(dir) {
        for (_, p) in list.into_iter().skip(KEEP) {
            let _ = std::fs::remove_file(meta_path(&p));
            CrashPoint::SnapshotPurgeMeta.hit(crash);
            let _ = std::fs::remove_file(&p);
        }
    }
}

impl StateMachine {
    pub fn new(
        core: Upward,
        due: Arc<SnapshotDue>,
        dir: PathBuf,
        applied: Option<LogId>,
        membership: Membership,
    ) -> Self {
        if let Ok(rd) = std::fs::read_dir(&dir) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with("receiving.") {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        StateMachine { core, due, dir, applied, membership, receiving: None, crash: None }
    }

    /// Stops the process at `crash` (a test's failpoint), if it names a snapshot's step.
    pub fn with_crash_point(mut self, crash: Option<CrashPoint>) -> Self {
        self.crash = crash;
        self
    }

    async fn to_core(&self, up: Up) -> Result<(), StorageError> {
        if self.core.send(up).await {
            Ok(())
        } else {
            Err(sm_msg("the core has stopped"))
        }
    }
}

/// Builds a snapshot from a view of the tree the core hands over.
pub struct Builder {
    core: Upward,
    due: Arc<SnapshotDue>,
    dir: PathBuf,
    crash: Option<CrashPoint>,
}

impl RaftSnapshotBuilder<Zkr> for Builder {
    async fn build_snapshot(&mut self) -> Result<Snapshot<Zkr>, StorageError> {
        self.due.reset();
        let (tx, rx) = oneshot::channel();
        if !self.core.tell(ReplMsg::SnapshotView(tx)).await {
            return Err(sm_msg("the core has stopped"));
        }
        let view = rx.await.map_err(|_| sm_msg("the core has stopped"))?;
        let dir = self.dir.clone();
        let meta = SnapshotMeta {
            last_log_id: view.log_id,
            last_membership: view.membership.clone(),
            snapshot_id: view.log_id.map_or("0-0".to_owned(), |l| format!("{}-{}", l.leader_id.term, l.index)),
        };
        let (m, crash) = (meta.clone(), self.crash);
        let path = tokio::task::spawn_blocking(move || -> Result<PathBuf, crate::storage::StorageError> {
            std::fs::create_dir_all(&dir).map_err(|e| crate::storage::StorageError::io(&dir, e))?;
            let path = crate::storage::snapshot::write(&dir, &view.tree)?;
            CrashPoint::SnapshotWritten.hit(crash);
            let mp = meta_path(&path);
            write_small(&mp, &m, true).map_err(|e| crate::storage::StorageError::io(&mp, e))?;
            CrashPoint::SnapshotMeta.hit(crash);
            purge(&dir, crash);
            Ok(path)
        })
        .await
        .map_err(sm_err)?
        .map_err(sm_err)?;
        tracing::info!(file = %path.display(), id = %meta.snapshot_id, "snapshot written");
        let f = tokio::fs::File::open(&path).await.map_err(sm_err)?;
        Ok(Snapshot { meta, snapshot: Box::new(f) })
    }
}

impl RaftStateMachine<Zkr> for StateMachine {
    type SnapshotBuilder = Builder;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, Membership), StorageError> {
        Ok((self.applied, self.membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<()>, StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let mut batch = Vec::new();
        let mut commands = 0;
        for e in entries {
            let c = committed(e);
            match &c.payload {
                CommittedPayload::Commands(b) => commands += b.cmds().len() as u64,
                CommittedPayload::Membership(m) => self.membership = m.clone(),
                CommittedPayload::Blank => {}
            }
            self.applied = Some(c.log_id);
            batch.push(c);
        }
        let n = batch.len();
        if n == 0 {
            return Ok(Vec::new());
        }
        let (done, rx) = oneshot::channel();
        self.to_core(Up::Apply { entries: batch, done }).await?;
        rx.await.map_err(|_| sm_msg("the core has stopped"))?;
        self.due.add(commands);
        Ok(vec![(); n])
    }

    async fn get_snapshot_builder(&mut self) -> Builder {
        Builder { core: self.core.clone(), due: self.due.clone(), dir: self.dir.clone(), crash: self.crash }
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<tokio::fs::File>, StorageError> {
        tokio::fs::create_dir_all(&self.dir).await.map_err(sm_err)?;
        let path = self.dir.join(format!("receiving.{}", std::process::id()));
        let f = tokio::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .await
            .map_err(sm_err)?;
        self.receiving = Some(path);
        Ok(Box::new(f))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<tokio::fs::File>,
    ) -> Result<(), StorageError> {
        snapshot.sync_all().await.map_err(sm_err)?;
        drop(snapshot);
        let Some(received) = self.receiving.take() else {
            return Err(sm_msg("a snapshot to install that was never received"));
        };
        let (dir, crash) = (self.dir.clone(), self.crash);
        let m = meta.clone();
        let tree = tokio::task::spawn_blocking(move || -> Result<DataTree, crate::storage::StorageError> {
            let tree = crate::storage::snapshot::read(&received)?;
            let path = dir.join(crate::storage::snapshot::file_name(tree.last_zxid()));
            std::fs::rename(&received, &path).map_err(|e| crate::storage::StorageError::io(&path, e))?;
            CrashPoint::InstallRenamed.hit(crash);
            let mp = meta_path(&path);
            write_small(&mp, &m, true).map_err(|e| crate::storage::StorageError::io(&mp, e))?;
            purge(&dir, crash);
            Ok(tree)
        })
        .await
        .map_err(sm_err)?
        .map_err(sm_err)?;
        tracing::info!(id = %meta.snapshot_id, znodes = tree.node_count(), "installing a snapshot from the leader");
        let (done, rx) = oneshot::channel();
        let msg = ReplMsg::Install {
            tree: Box::new(tree),
            log_id: meta.last_log_id,
            membership: meta.last_membership.clone(),
            done,
        };
        self.to_core(Up::Tell(msg)).await?;
        rx.await.map_err(|_| sm_msg("the core has stopped"))?;
        self.applied = meta.last_log_id;
        self.membership = meta.last_membership.clone();
        self.due.reset();
        Ok(())
    }

    /// The snapshot openraft sends a follower that needs one. The leader checks it whole first:
    /// a damaged one (its `.meta` alone says nothing of the tree file) made every follower that
    /// installed it fail and stop, after every restart. It is set aside with its `.meta` and a
    /// new one taken from the tree (an older one may lie before what the log still holds).
    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot<Zkr>>, StorageError> {
        let Some((meta, path)) = latest(&self.dir).map_err(sm_err)? else { return Ok(None) };
        let checked = path.clone();
        let whole = tokio::task::spawn_blocking(move || crate::storage::snapshot_check::verify(&checked))
            .await
            .map_err(sm_err)?;
        if let Err(why) = whole {
            let damaged = self.dir.join("damaged");
            let to = super::log_repair::set_aside(&path, &damaged, "corrupt").map_err(sm_err)?;
            let mp = meta_path(&path);
            if mp.exists() {
                super::log_repair::set_aside(&mp, &damaged, "corrupt").map_err(sm_err)?;
            }
            tracing::warn!(file = %path.display(), moved_to = %to.display(), id = %meta.snapshot_id,
                "the snapshot a follower needs is damaged ({why}): set aside, taking a new one to send");
            return self.get_snapshot_builder().await.build_snapshot().await.map(Some);
        }
        let f = tokio::fs::File::open(&path).await.map_err(sm_err)?;
        Ok(Some(Snapshot { meta, snapshot: Box::new(f) }))
    }
}
