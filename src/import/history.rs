//! Whether a ZooKeeper data directory holds one continuous history: the newest snapshot that
//! reads, then every txn after it, each following the one before. The import and the takeover's
//! log check both read ZooKeeper's files through here.
//!
//! ZooKeeper loads the newest snapshot that reads (`FileSnap.deserialize` tries up to 100,
//! newest first) and replays the logs from the one named at or before it (`Util.getLogFiles`).
//! It does not check that the txns follow each other: a log purged or lost between the snapshot
//! and the next log leaves a tree without those changes, and it serves it. It does refuse a
//! whole record that fails its checksum, and logs without any snapshot
//! (`FileTxnSnapLog.restore`: "No snapshot found, but there are log entries. Something is
//! broken!", unless `zookeeper.snapshot.trust.empty`). zkr refuses all of these: an import that
//! silently lost history would be served as if whole.
//!
//! Txns follow each other when the next zxid is the one after, or opens a later epoch at its
//! first txn (counter 1): ZooKeeper numbers the txns of an epoch without gaps, and a server's
//! log continues into a new epoch from where it synced (a DIFF carries the new epoch's txns
//! from its first; after a SNAP the server writes a snapshot at the sync point).

use super::files::{self, ZkFile};
use super::zklog::{self, End};
use super::{snapfile, ImportError};
use crate::tree::DataTree;
use crate::txn::Zxid;
use std::path::{Path, PathBuf};

/// Why the history stops being one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Break {
    #[error("the history has a gap: after zxid {after:#x} the next txn is {next:#x}; the txns between are in no file")]
    Gap { after: Zxid, next: Zxid },
    #[error("txn {next:#x} comes after {after:#x}: the log goes back")]
    Backwards { after: Zxid, next: Zxid },
    #[error(
        "no snapshot could be read, and the oldest txn of the logs, {first:#x}, is not the first of an epoch: \
         the txns before it, and the snapshots that held them, are gone"
    )]
    NoSnapshot { first: Zxid },
    #[error("damaged at offset {offset}: {reason}")]
    Damaged { offset: u64, reason: String },
}

/// What the caller allows.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Start from this snapshot (and never a newer one) instead of the newest that reads.
    pub snapshot: Option<PathBuf>,
    /// Load what can be read, as ZooKeeper would (across gaps; up to a damaged record; logs
    /// without a snapshot onto an empty tree), listing what was lost instead of refusing.
    pub accept_loss: bool,
}

/// A history read and applied.
pub struct Loaded {
    pub tree: DataTree,
    /// The snapshot it started from (`None`: an empty tree).
    pub snapshot: Option<PathBuf>,
    /// Newer snapshots that did not read, and why.
    pub skipped: Vec<(PathBuf, String)>,
    pub logs: usize,
    pub txns: usize,
    /// What was lost, with `accept_loss` (empty otherwise: a loss is an error).
    pub losses: Vec<String>,
}

fn epoch(z: Zxid) -> i64 {
    z >> 32
}

/// True if txn `next` may follow `prev` (`None`: an empty tree, before any txn).
pub fn follows(prev: Option<Zxid>, next: Zxid) -> bool {
    match prev {
        Some(p) => next == p + 1 || (epoch(next) > epoch(p) && next & 0xffff_ffff == 1),
        None => next & 0xffff_ffff == 1,
    }
}

/// The snapshots to try, newest first: all of them, or `chosen` and those older.
fn candidates(snaps: &[ZkFile], chosen: Option<&Path>) -> Result<Vec<ZkFile>, ImportError> {
    let mut out: Vec<ZkFile> = snaps.iter().rev().cloned().collect();
    if let Some(c) = chosen {
        // The path as given, or a bare file name in the snapshot directory.
        let named =
            |f: &ZkFile| f.path == c || (c.parent() == Some(Path::new("")) && f.path.file_name() == c.file_name());
        let Some(at) = out.iter().position(named) else {
            return Err(ImportError::NoSuchSnapshot(c.to_owned()));
        };
        out.drain(..at);
    }
    Ok(out)
}

/// Reads `data_dir`'s snapshots and `log_dir`'s logs into one tree, or says where the history
/// breaks (`ImportError::History`, naming the file, the reason and the way out).
pub fn load(data_dir: &Path, log_dir: &Path, opts: &Options) -> Result<Loaded, ImportError> {
    let snaps = files::snapshots(data_dir)?;
    let logs = files::logs(log_dir)?;
    if snaps.is_empty() && logs.is_empty() {
        return Err(ImportError::Empty(data_dir.to_owned()));
    }
    let mut skipped = Vec::new();
    let mut start = None;
    for f in candidates(&snaps, opts.snapshot.as_deref())? {
        match snapfile::read(&f) {
            Ok(tree) => {
                start = Some((f, tree));
                break;
            }
            Err(e) => {
                tracing::warn!("{e}; trying an older snapshot");
                skipped.push((f.path.clone(), e.to_string()));
            }
        }
    }
    let (snapshot, mut tree) = match start {
        Some((f, tree)) => (Some(f), tree),
        None => (None, DataTree::default()),
    };
    let from = snapshot.as_ref().map(|f| f.zxid);
    let chosen = match from {
        Some(z) => files::logs_after(&logs, z),
        None => &logs[..],
    };
    let mut replay = Replay { prev: from, txns: 0, losses: Vec::new(), accept_loss: opts.accept_loss };
    let mut changes = Vec::new();
    let replayed = replay.logs(chosen, |t| {
        changes.clear();
        tree.apply(&t.txn, &mut changes);
    });
    if let Err((file, why)) = replayed {
        let way_out = way_out(&snaps, snapshot.as_ref(), &skipped, &why);
        return Err(ImportError::History { file, why, way_out });
    }
    tree.mark_sessions_imported();
    let snapshot = snapshot.map(|f| f.path);
    Ok(Loaded { tree, snapshot, skipped, logs: chosen.len(), txns: replay.txns, losses: replay.losses })
}

/// The zxid of the last txn of `logs` after `from` (`None` if there is none), the logs checked as
/// `load` checks them, nothing applied.
pub fn last_txn(logs: &[ZkFile], from: Option<Zxid>) -> Result<Option<Zxid>, (PathBuf, Break)> {
    let mut replay = Replay { prev: from, txns: 0, losses: Vec::new(), accept_loss: false };
    replay.logs(logs, |_| {})?;
    Ok(replay.prev.filter(|_| replay.txns > 0))
}

/// The txns after the start, checked for continuity as they are read.
struct Replay {
    prev: Option<Zxid>,
    txns: usize,
    losses: Vec<String>,
    accept_loss: bool,
}

/// Why a replay stopped reading a file.
enum Stop {
    Break(Break),
    Import(ImportError),
}

impl From<ImportError> for Stop {
    fn from(e: ImportError) -> Stop {
        Stop::Import(e)
    }
}

impl Replay {
    /// Feeds every txn after `prev` to `apply`, in order. A break is an error unless losses are
    /// accepted: then a gap is noted and crossed, as ZooKeeper crosses it, and damage ends the
    /// replay where ZooKeeper would refuse to start.
    fn logs(&mut self, logs: &[ZkFile], mut apply: impl FnMut(super::ZkTxn)) -> Result<(), (PathBuf, Break)> {
        for f in logs {
            let why = match zklog::for_each_record(&f.path, |body, _| self.txn(f, body, &mut apply)) {
                Ok(End::Clean) => continue,
                Ok(End::Torn { offset }) => {
                    tracing::warn!(file = %f.path.display(), offset, "partial transaction at the end of a ZooKeeper log: ignored, as ZooKeeper does");
                    continue;
                }
                Err(Stop::Break(why)) => why,
                Err(Stop::Import(ImportError::DamagedLog { offset, reason, .. })) => Break::Damaged { offset, reason },
                Err(Stop::Import(e)) => Break::Damaged { offset: 0, reason: e.to_string() },
            };
            if !self.accept_loss || !matches!(why, Break::Damaged { .. }) {
                return Err((f.path.clone(), why));
            }
            self.losses.push(format!("{}: {why}; the txns from there on were not read", f.path.display()));
            return Ok(());
        }
        Ok(())
    }

    /// One txn of file `f`: skipped if the start already holds it, otherwise checked and applied.
    fn txn(&mut self, f: &ZkFile, body: &[u8], apply: &mut impl FnMut(super::ZkTxn)) -> Result<(), Stop> {
        let t = super::parse_txn(body, &f.path)?;
        let z = t.txn.zxid;
        if let Some(after) = self.prev.filter(|p| z <= *p) {
            // Before any txn is applied: the log before the snapshot, or txns a fuzzy snapshot
            // already holds. After one: a log that goes back.
            if self.txns > 0 {
                self.lose(f, Break::Backwards { after, next: z })?;
            }
            return Ok(());
        }
        if !follows(self.prev, z) {
            let why = match self.prev {
                Some(after) => Break::Gap { after, next: z },
                None => Break::NoSnapshot { first: z },
            };
            self.lose(f, why)?;
        }
        self.prev = Some(z);
        self.txns += 1;
        apply(t);
        Ok(())
    }

    /// A break: an error, or with `accept_loss` a line in the list of losses.
    fn lose(&mut self, f: &ZkFile, why: Break) -> Result<(), Stop> {
        if !self.accept_loss {
            return Err(Stop::Break(why));
        }
        tracing::warn!(file = %f.path.display(), "{why} (--accept-data-loss: going on)");
        self.losses.push(format!("{}: {why}", f.path.display()));
        Ok(())
    }
}

/// What the operator can do about a break, for the refusal's last sentence.
fn way_out(snaps: &[ZkFile], used: Option<&ZkFile>, skipped: &[(PathBuf, String)], why: &Break) -> String {
    let mut out = String::new();
    for (p, e) in skipped {
        out += &format!(" The newer snapshot {} could not be read ({e}).", p.display());
    }
    let older: Vec<&ZkFile> = snaps.iter().filter(|f| used.is_none_or(|u| f.zxid < u.zxid)).collect();
    if let (Some(o), Break::Gap { .. } | Break::Damaged { .. }) = (older.last(), why) {
        let others = match older.len() {
            1 => String::new(),
            n => format!(" (or one of the {} others older still)", n - 1),
        };
        out += &format!(
            " An older snapshot gives an older but whole state if the logs after it are whole: --snapshot {}{others}.",
            o.path.display(),
        );
    }
    out += " To import what can be read anyway, as ZooKeeper would load it, and lose the rest: --accept-data-loss.";
    out
}

#[cfg(test)]
mod tests {
    use super::{follows, Break};
    use crate::import::{last_logged, zklog::encode_log, ImportError};

    /// A createSession txn (TxnHeader + CreateSessionTxn) at `zxid`.
    fn session_txn(zxid: i64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&0x42i64.to_be_bytes());
        b.extend_from_slice(&0i32.to_be_bytes());
        b.extend_from_slice(&zxid.to_be_bytes());
        b.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
        b.extend_from_slice(&(-10i32).to_be_bytes());
        b.extend_from_slice(&30_000i32.to_be_bytes());
        b
    }

    fn logs(name: &str, files: &[&[i64]]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("zkr-history-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("version-2")).unwrap();
        for zxids in files {
            let records: Vec<Vec<u8>> = zxids.iter().map(|z| session_txn(*z)).collect();
            std::fs::write(dir.join(format!("version-2/log.{:x}", zxids[0])), encode_log(&records)).unwrap();
        }
        dir
    }

    /// The takeover's log check (`last_logged`) reads through the same continuity check as the
    /// import: a participant whose logs have a gap has no known highest zxid.
    #[test]
    fn the_takeovers_last_logged_zxid_needs_one_history() {
        let whole = logs("whole", &[&[1, 2, 3], &[4, 5], &[0x1_0000_0001]]);
        assert_eq!(last_logged(&whole).unwrap(), Some(0x1_0000_0001));
        let gap = logs("gap", &[&[1, 2, 3], &[5, 6]]);
        match last_logged(&gap) {
            Err(ImportError::History { file, why, .. }) => {
                assert!(file.ends_with("log.5"), "{}", file.display());
                assert_eq!(why, Break::Gap { after: 3, next: 5 });
            }
            other => panic!("a gap must be refused: {:?}", other.map_err(|e| e.to_string())),
        }
        let purged = logs("purged", &[&[7, 8]]);
        assert!(matches!(last_logged(&purged), Err(ImportError::History { why: Break::NoSnapshot { first: 7 }, .. })));
        for d in [whole, gap, purged] {
            let _ = std::fs::remove_dir_all(d);
        }
    }

    #[test]
    fn txns_follow_within_an_epoch_and_into_a_new_one_at_its_first() {
        assert!(follows(Some(0x1_0000_0005), 0x1_0000_0006));
        assert!(follows(Some(0x1_0000_0005), 0x2_0000_0001));
        assert!(follows(Some(0x1_0000_0000), 0x1_0000_0001), "a new leader's snapshot at counter 0");
        assert!(!follows(Some(0x1_0000_0005), 0x1_0000_0007));
        assert!(!follows(Some(0x1_0000_0005), 0x2_0000_0002));
        assert!(follows(None, 1) && follows(None, 0x1_0000_0001));
        assert!(!follows(None, 0x1_0000_0002));
    }
}
