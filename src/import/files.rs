//! Which files of a ZooKeeper data directory are snapshots and logs, as ZooKeeper names and
//! orders them (`Util.getZxidFromName`, `Util.sortDataDir`, `Util.getLogFiles`,
//! `SnapStream.getStreamMode`). Reads names only, never contents.

use super::ImportError;
use crate::txn::Zxid;
use std::path::{Path, PathBuf};

/// How a snapshot file is compressed, from its name (`SnapStream.StreamMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// `snapshot.<zxid>`: the jute stream as it is (ZooKeeper's `CHECKED` mode).
    Plain,
    /// `snapshot.<zxid>.gz` (`zookeeper.snapshot.compression.method=gz`).
    Gzip,
    /// `snapshot.<zxid>.snappy` (`zookeeper.snapshot.compression.method=snappy`).
    Snappy,
}

impl Compression {
    /// The file name's extension ZooKeeper gives this mode.
    pub fn suffix(self) -> &'static str {
        match self {
            Compression::Plain => "",
            Compression::Gzip => ".gz",
            Compression::Snappy => ".snappy",
        }
    }

    /// The `snapshot.compression.method` value that asks for this mode (empty: plain).
    pub fn method(self) -> &'static str {
        self.suffix().trim_start_matches('.')
    }

    /// `snapshot.compression.method` / `-Dzookeeper.snapshot.compression.method`: `gz`, `snappy`
    /// or empty (plain), in any case, as `StreamMode.fromString` matches them; None for any other
    /// value, which ZooKeeper 3.8/3.9 silently take as plain (the caller decides).
    pub fn from_method(method: &str) -> Option<Compression> {
        match method.to_ascii_lowercase().as_str() {
            "" => Some(Compression::Plain),
            "gz" => Some(Compression::Gzip),
            "snappy" => Some(Compression::Snappy),
            _ => None,
        }
    }
}

/// One of ZooKeeper's numbered files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZkFile {
    /// The zxid in its name: a snapshot's last zxid, a log's first.
    pub zxid: Zxid,
    pub path: PathBuf,
    pub compression: Compression,
}

/// ZooKeeper keeps its files in a `version-2` directory under dataDir / dataLogDir.
pub fn version_dir(dir: &Path) -> PathBuf {
    let v2 = dir.join("version-2");
    if v2.is_dir() {
        v2
    } else {
        dir.to_owned()
    }
}

/// `<prefix>.<hex zxid>[.<mode>]`: the zxid is the second dot-separated part and the mode the
/// last (`Util.getZxidFromName`, `SnapStream.getStreamMode`). Only the endings ZooKeeper writes
/// count: no ending, `.gz` and `.snappy` for snapshots, none for logs; a `.tmp` left by an
/// interrupted write (`AtomicFileOutputStream`) is not a snapshot.
fn parse_name(name: &str, prefix: &str, compressed: bool) -> Option<(Zxid, Compression)> {
    let mut parts = name.split('.');
    if parts.next() != Some(prefix) {
        return None;
    }
    let zxid = parts.next().and_then(|h| i64::from_str_radix(h, 16).ok())?;
    let compression = match (parts.next(), parts.next()) {
        (None, _) => Compression::Plain,
        (Some("gz"), None) if compressed => Compression::Gzip,
        (Some("snappy"), None) if compressed => Compression::Snappy,
        _ => return None,
    };
    Some((zxid, compression))
}

fn list(dir: &Path, prefix: &str, compressed: bool) -> Result<Vec<ZkFile>, ImportError> {
    let mut out = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(source) => return Err(ImportError::Io { file: dir.to_owned(), source }),
    };
    for entry in rd {
        let entry = entry.map_err(|source| ImportError::Io { file: dir.to_owned(), source })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some((zxid, compression)) = parse_name(&name, prefix, compressed) {
            out.push(ZkFile { zxid, path: entry.path(), compression });
        }
    }
    out.sort_by(|a, b| (a.zxid, &a.path).cmp(&(b.zxid, &b.path)));
    Ok(out)
}

/// Snapshot files of `dir` (its `version-2` if there is one), oldest first.
pub fn snapshots(dir: &Path) -> Result<Vec<ZkFile>, ImportError> {
    list(&version_dir(dir), "snapshot", true)
}

/// Log files of `dir` (its `version-2` if there is one), oldest first.
pub fn logs(dir: &Path) -> Result<Vec<ZkFile>, ImportError> {
    list(&version_dir(dir), "log", false)
}

/// The logs that can hold txns after `zxid`: the newest one named at or below it, and every one
/// after (`Util.getLogFiles`: a log is named after its first txn, so the one before it may
/// still hold txns past `zxid`).
pub fn logs_after(logs: &[ZkFile], zxid: Zxid) -> &[ZkFile] {
    let first = logs.iter().rposition(|f| f.zxid <= zxid).unwrap_or(0);
    &logs[first..]
}

#[cfg(test)]
mod tests {
    use super::{parse_name, Compression};

    #[test]
    fn names_as_zookeeper_reads_them() {
        assert_eq!(parse_name("snapshot.1a", "snapshot", true), Some((0x1a, Compression::Plain)));
        assert_eq!(parse_name("snapshot.1a.gz", "snapshot", true), Some((0x1a, Compression::Gzip)));
        assert_eq!(parse_name("snapshot.100000000.snappy", "snapshot", true), Some((1 << 32, Compression::Snappy)));
        assert_eq!(parse_name("snapshot.1a.tmp", "snapshot", true), None);
        assert_eq!(parse_name("snapshot.1a.gz.tmp", "snapshot", true), None);
        assert_eq!(parse_name("snapshot.zz", "snapshot", true), None);
        assert_eq!(parse_name("log.1", "log", false), Some((1, Compression::Plain)));
        assert_eq!(parse_name("log.1.gz", "log", false), None);
        assert_eq!(parse_name("logs.1", "log", false), None);
        assert_eq!(Compression::from_method("SNAPPY"), Some(Compression::Snappy));
        assert_eq!(Compression::from_method("Gz"), Some(Compression::Gzip));
        assert_eq!(Compression::from_method(""), Some(Compression::Plain));
        assert_eq!(Compression::from_method("lz4"), None);
        for c in [Compression::Plain, Compression::Gzip, Compression::Snappy] {
            assert_eq!(Compression::from_method(c.method()), Some(c));
        }
    }
}
