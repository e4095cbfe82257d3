//! `zkr export-zookeeper`: the way back from zkr to Apache ZooKeeper. Reads a stopped zkr's
//! data directory as its recovery does (standalone or an observer of ZooKeeper:
//! `storage::read_stopped`, the newest snapshot and every log record after it; an ensemble
//! member: `member`, the newest Raft snapshot and the committed log after it, replayed with the
//! member's own apply) and writes a new ZooKeeper dataDir that ZooKeeper 3.5+ starts from:
//!
//! ```text
//! <zk-data-dir>/version-2/snapshot.<zxid hex>[.gz|.snappy]   the tree and sessions (snapwrite)
//! <zk-data-dir>/version-2/acceptedEpoch, currentEpoch        zxid >> 32, as text (a participant
//!                                                            refuses a currentEpoch below it)
//! <zk-data-dir>/myid                                         with --myid only
//! ```
//! No transaction log is written: ZooKeeper starts from the snapshot alone and logs after it.
//! Reads zkr's files and never changes them; writes only into an empty (or new) target. The
//! command's flags win over the zoo.cfg keys it reads (`settings`, `config::export_config`:
//! dataDir, dataLogDir, ZooKeeper's `snapshot.compression.method`).
//! The reverse of `import`, whose `snapfile` reads what `snapwrite` writes.

pub mod member;
pub mod snapwrite;

use crate::config::{Config, ExportConfig};
use crate::import::files::Compression;
use crate::storage::{Layout, StorageError};
use crate::txn::Zxid;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{0} is not empty: export into a new or empty directory. Nothing was written.")]
    NotEmpty(PathBuf),
    #[error("{0} holds no zkr data (neither snap/ nor the log directory). Nothing was written.")]
    NotZkr(PathBuf),
    #[error(
        "{dir} is marked diverged ({why}): this member's tree differed from its leader's, and it would start \
         over empty. Export another member's directory. Nothing was written."
    )]
    Diverged { dir: PathBuf, why: String },
    #[error("{dir}: the member would not apply its committed log ({why}). Nothing was written.")]
    Refused { dir: PathBuf, why: String },
    #[error("the zkr data directory cannot be read whole, so nothing was written: {0}")]
    Read(#[source] StorageError),
    #[error("{file}: {source}")]
    Io { file: PathBuf, source: std::io::Error },
}

/// What the command was asked for besides the two directories.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// zkr's dataLogDir, if its log is not in `<data-dir>/wal`.
    pub data_log_dir: Option<PathBuf>,
    /// ZooKeeper's `snapshot.compression.method` for the file written.
    pub compression: Option<Compression>,
    /// Writes `<zk-data-dir>/myid`, so that the directory can start a participant.
    pub myid: Option<u64>,
}

/// The command's flags, before the zoo.cfg's keys fill what they leave open.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub data_dir: Option<PathBuf>,
    pub data_log_dir: Option<PathBuf>,
    pub compression: Option<Compression>,
    pub myid: Option<u64>,
}

/// The zkr data directory and the options an export runs with: each flag over its key in
/// `--config`'s zoo.cfg (`config::export_config`, which already put the key over the JVM
/// flags). None when neither a flag nor the file names the data directory.
pub fn settings(flags: Flags, from_cfg: ExportConfig) -> Option<(PathBuf, Options)> {
    let data_dir = flags.data_dir.or(from_cfg.data_dir)?;
    let opts = Options {
        data_log_dir: flags.data_log_dir.or(from_cfg.data_log_dir),
        compression: flags.compression.or(from_cfg.compression.map(|(c, _)| c)),
        myid: flags.myid,
    };
    Some((data_dir, opts))
}

/// Summary of an export, for the command's output.
#[derive(Debug)]
pub struct Exported {
    pub snapshot: PathBuf,
    pub zxid: Zxid,
    pub znodes: usize,
    pub sessions: usize,
    /// Sessions whose clients hold the password ZooKeeper derives from the session id (imported
    /// from ZooKeeper, or given ZooKeeper's password by zkr): they can re-attach to ZooKeeper.
    /// The others keep their ephemerals there only until their timeout.
    pub zookeeper_passwords: usize,
    /// An ensemble member's directory: the last committed log entry applied (term, index), and
    /// how many entries after its snapshot were replayed.
    pub member: Option<(Option<crate::raft::types::LogId>, u64)>,
}

/// True if `dir` exists and holds anything.
fn occupied(dir: &Path) -> bool {
    std::fs::read_dir(dir).map(|mut r| r.next().is_some()).unwrap_or(false)
}

/// The whole command: check both directories, read zkr's, then write ZooKeeper's.
pub fn export(data_dir: &Path, zk_data_dir: &Path, opts: &Options) -> Result<Exported, ExportError> {
    if occupied(zk_data_dir) {
        return Err(ExportError::NotEmpty(zk_data_dir.to_owned()));
    }
    let cfg = Config { data_dir: data_dir.to_owned(), data_log_dir: opts.data_log_dir.clone(), ..Default::default() };
    let (tree, member) = if crate::raft::raft_dir(&cfg).is_dir() {
        let m = member::read(&cfg)?;
        (m.tree, Some((m.applied, m.replayed)))
    } else {
        let layout = Layout::new(&cfg);
        if !layout.snap_dir.is_dir() && !layout.log_dir.is_dir() {
            return Err(ExportError::NotZkr(data_dir.to_owned()));
        }
        (crate::storage::read_stopped(&cfg).map_err(ExportError::Read)?, None)
    };
    let io = |file: &Path| {
        let file = file.to_owned();
        move |source| ExportError::Io { file, source }
    };
    let v2 = zk_data_dir.join("version-2");
    std::fs::create_dir_all(&v2).map_err(io(&v2))?;
    let snapshot = snapwrite::write(&tree, &v2, opts.compression.unwrap_or(Compression::Plain))?;
    let zxid = tree.last_zxid();
    // `QuorumPeer.writeLongToFile`: the number as text, no newline.
    let epoch = (zxid >> 32).to_string();
    for name in ["acceptedEpoch", "currentEpoch"] {
        let f = v2.join(name);
        std::fs::write(&f, &epoch).map_err(io(&f))?;
    }
    if let Some(id) = opts.myid {
        let f = zk_data_dir.join("myid");
        std::fs::write(&f, format!("{id}\n")).map_err(io(&f))?;
    }
    let sessions = tree.sessions();
    let zookeeper_passwords = sessions
        .iter()
        .filter(|(id, s)| s.zk_password || s.password == Some(crate::session::zookeeper_password(**id)))
        .count();
    Ok(Exported { snapshot, zxid, znodes: tree.node_count(), sessions: sessions.len(), zookeeper_passwords, member })
}
