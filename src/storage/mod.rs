//! Durable state: the write-ahead log, snapshots, recovery, and the data directory layout.
//!
//! ```text
//! <dataDir>/LOCK                 held (flock) while a server uses the directory
//! <dataDir>/secret               32 random bytes; session passwords derive from it
//! <dataDir>/snap/snapshot.<zxid> snapshots (see snapshot.rs)
//! <dataLogDir or dataDir/wal>/log.<zxid>   log segments (see wal.rs; header and names: segment.rs)
//! <dataLogDir or dataDir/wal>/damaged/     copies of damaged segments (see damage.rs)
//! ```
//! Recovery: newest valid snapshot, then every log record after it, in zxid order. Repair
//! (`zkr repair-log`, repair.rs): the same, cutting the log at its first corrupt record.

pub mod damage;
pub mod group_commit;
pub mod record;
pub mod repair;
pub mod segment;
pub mod snapshot;
pub mod snapshot_check;
pub mod wal;
mod window;

use crate::config::Config;
use crate::tree::DataTree;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Why the data directory could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("{file}: {source}")]
    Io { file: PathBuf, source: std::io::Error },
    #[error("{file}: corrupt at offset {offset}: {reason}")]
    Corrupt { file: PathBuf, offset: u64, reason: String },
    /// A log record that is damaged and is not a torn tail. Its own variant because its way out
    /// is `zkr repair-log`, and repair cuts the log at exactly this file and offset.
    #[error(
        "{file}: corrupt at offset {offset}: {reason}. zkr did not start and changed nothing. To start from the \
         records before this offset, run `zkr repair-log` with the same --data-dir, --data-log-dir or --config: \
         it keeps a copy of the damaged segment (and moves later ones) into {} and cuts the log here",
        damage::damaged_dir(.file).display()
    )]
    CorruptLog { file: PathBuf, offset: u64, reason: String },
    #[error("{0} is in use by another zkr process")]
    Locked(PathBuf),
}

impl StorageError {
    pub fn io(file: &Path, source: std::io::Error) -> StorageError {
        StorageError::Io { file: file.to_owned(), source }
    }
}

/// Files named `<prefix><zxid in hex>` in `dir` (zkr's and ZooKeeper's naming alike), sorted
/// by zxid; a missing directory has none.
pub fn numbered_files(dir: &Path, prefix: &str) -> Result<Vec<(crate::txn::Zxid, PathBuf)>, StorageError> {
    let mut out = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(StorageError::io(dir, e)),
    };
    for entry in rd {
        let entry = entry.map_err(|e| StorageError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(z) = name.strip_prefix(prefix).and_then(|h| i64::from_str_radix(h, 16).ok()) {
            out.push((z, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Where things live.
#[derive(Debug, Clone)]
pub struct Layout {
    pub data_dir: PathBuf,
    pub snap_dir: PathBuf,
    pub log_dir: PathBuf,
}

impl Layout {
    pub fn new(cfg: &Config) -> Layout {
        Layout {
            data_dir: cfg.data_dir.clone(),
            snap_dir: cfg.data_dir.join("snap"),
            log_dir: cfg.data_log_dir.clone().unwrap_or_else(|| cfg.data_dir.join("wal")),
        }
    }
}

/// What recovery hands to the server.
pub struct Recovered {
    pub tree: DataTree,
    pub secret: [u8; 32],
    pub tail: Option<(PathBuf, u64)>,
    /// Held for the life of the server.
    pub lock: File,
    /// Txns replayed from the log (for the startup log line).
    pub replayed: usize,
}

pub(crate) fn lock(dir: &Path) -> Result<File, StorageError> {
    let path = dir.join("LOCK");
    let f =
        File::options().create(true).truncate(false).write(true).open(&path).map_err(|e| StorageError::io(&path, e))?;
    match f.try_lock() {
        Ok(()) => Ok(f),
        Err(std::fs::TryLockError::WouldBlock) => Err(StorageError::Locked(dir.to_owned())),
        Err(std::fs::TryLockError::Error(e)) => Err(StorageError::io(&path, e)),
    }
}

/// Replaces `path` whole or not at all: the bytes go to `<path without extension>.tmp`, which is
/// renamed over it; with `durable`, the file and then its directory are fsync'd.
pub(crate) fn replace_file(path: &Path, bytes: &[u8], durable: bool) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp)?;
    f.write_all(bytes)?;
    if durable {
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if durable {
        // The directory's fsync is best effort, as the Raft files always had it.
        if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = File::open(d).and_then(|d| d.sync_all());
        }
    }
    Ok(())
}

pub(crate) fn secret(dir: &Path) -> Result<[u8; 32], StorageError> {
    let path = dir.join("secret");
    let mut s = [0u8; 32];
    match File::open(&path) {
        Ok(mut f) => match f.read_exact(&mut s) {
            Ok(()) => Ok(s),
            // Cut short (a damaged disk): a new secret. Only a standalone server's sessions of
            // the previous run cannot re-attach then (an ensemble keeps each session's password
            // in its log); it refused to start before.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                tracing::warn!(file = %path.display(), "damaged session secret (too short): a new one is made; sessions of the previous run re-attach only on an ensemble");
                new_secret(&path)
            }
            Err(e) => Err(StorageError::io(&path, e)),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => new_secret(&path),
        Err(e) => Err(StorageError::io(&path, e)),
    }
}

fn new_secret(path: &Path) -> Result<[u8; 32], StorageError> {
    let s: [u8; 32] = rand::random();
    let tmp = path.with_extension("tmp");
    let mut f = File::create(&tmp).map_err(|e| StorageError::io(&tmp, e))?;
    f.write_all(&s).and_then(|_| f.sync_all()).map_err(|e| StorageError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| StorageError::io(path, e))?;
    Ok(s)
}

/// Creates the directories and takes the lock.
fn open(layout: &Layout) -> Result<File, StorageError> {
    for d in [&layout.data_dir, &layout.snap_dir, &layout.log_dir] {
        std::fs::create_dir_all(d).map_err(|e| StorageError::io(d, e))?;
    }
    lock(&layout.data_dir)
}

/// The newest snapshot that reads (or, with `recover_older_snapshot`, the newest that checks
/// out), or an empty tree if there is none.
fn newest_snapshot(cfg: &Config, layout: &Layout) -> Result<DataTree, StorageError> {
    for (_, path) in snapshot::list(&layout.snap_dir)? {
        match snapshot::read(&path) {
            Ok(t) => return Ok(t),
            Err(e) if cfg.recover_older_snapshot => {
                tracing::warn!("{e}; falling back to an older snapshot (--recover-older-snapshot)");
            }
            Err(e) => return Err(e),
        }
    }
    Ok(DataTree::default())
}

/// Opens the data directory and rebuilds the state it holds.
pub fn recover(cfg: &Config) -> Result<Recovered, StorageError> {
    let layout = Layout::new(cfg);
    let lock = open(&layout)?;
    let secret = secret(&layout.data_dir)?;
    for tmp in snapshot::remove_unfinished(&layout.snap_dir)? {
        tracing::warn!(file = %tmp.display(), "removed an unfinished snapshot (a snapshot write failed or was interrupted)");
    }
    let (tree, tail, replayed) = rebuild(cfg, &layout)?;
    Ok(Recovered { tree, secret, tail, lock, replayed })
}

/// The log's last segment and the offset where its records end (`wal::Replay::tail`).
type Tail = Option<(PathBuf, u64)>;

/// The state a data directory holds: its newest snapshot with every log record after it
/// applied; also the log's tail and how many txns were replayed.
fn rebuild(cfg: &Config, layout: &Layout) -> Result<(DataTree, Tail, usize), StorageError> {
    let mut tree = newest_snapshot(cfg, layout)?;
    let start = tree.last_zxid();
    let replay = wal::replay(&layout.log_dir, start)?;
    if let Some(first) = replay.txns.first() {
        if first.zxid != start + 1 {
            return Err(StorageError::Corrupt {
                file: layout.log_dir.clone(),
                offset: 0,
                reason: format!("log resumes at zxid 0x{:x} but the snapshot ends at 0x{start:x}", first.zxid),
            });
        }
    }
    let mut changes = Vec::new();
    for txn in &replay.txns {
        changes.clear();
        tree.apply(txn, &mut changes);
    }
    Ok((tree, replay.tail, replay.txns.len()))
}

/// The tree a stopped standalone server's data directory holds, read as `recover` reads it but
/// changing nothing (no directory, secret or log segment is created, no unfinished snapshot
/// removed). Takes the lock while it reads, so a server still running there is refused; a
/// damaged snapshot or log record is an error naming the file (`zkr export-zookeeper`).
pub fn read_stopped(cfg: &Config) -> Result<DataTree, StorageError> {
    let layout = Layout::new(cfg);
    let _lock = lock(&layout.data_dir)?;
    Ok(rebuild(cfg, &layout)?.0)
}

/// `zkr repair-log`: cuts the log after the snapshot recovery would start from at its first
/// corrupt record, keeping copies (see `repair::repair`). Takes the lock, so it cannot run
/// beside a server on the same directory. A log without corruption is left as it is.
pub fn repair_log(cfg: &Config) -> Result<repair::Repaired, StorageError> {
    let layout = Layout::new(cfg);
    let _lock = open(&layout)?;
    let start = newest_snapshot(cfg, &layout)?.last_zxid();
    repair::repair(&layout.log_dir, start)
}

/// Deletes all but the newest `keep` snapshots and the log segments only they needed.
pub fn purge(layout: &Layout, keep: usize) -> Result<(), StorageError> {
    let snaps = snapshot::list(&layout.snap_dir)?;
    if snaps.len() <= keep.max(1) {
        return Ok(());
    }
    for (_, path) in &snaps[keep.max(1)..] {
        std::fs::remove_file(path).map_err(|e| StorageError::io(path, e))?;
    }
    let oldest_kept = snaps[keep.max(1) - 1].0;
    let segs = wal::segments(&layout.log_dir)?;
    for pair in segs.windows(2) {
        // A segment is needed while the next one starts after the oldest kept snapshot.
        if pair[1].0 <= oldest_kept + 1 {
            std::fs::remove_file(&pair[0].1).map_err(|e| StorageError::io(&pair[0].1, e))?;
        }
    }
    Ok(())
}
