//! What `zkr export-zookeeper` takes from a zoo.cfg (`--config`) and from the JVM flags a
//! ZooKeeper deployment sets: the server's `dataDir` and `dataLogDir`, read as `zkr serve` reads
//! them, and ZooKeeper's `snapshot.compression.method`, which chooses how the export's snapshot
//! is written. `serve` ignores that key (zkr's own snapshots are its own format); this module
//! must not change what `serve` does with it.
//!
//! Where the method comes from, the first that says: the export's `--compression` flag (the
//! caller's), zoo.cfg's key (ZooKeeper's `QuorumPeerConfig` turns a key it does not know into the
//! system property `zookeeper.<key>`, over any `-D` given), the last
//! `-Dzookeeper.snapshot.compression.method=` in `SERVER_JVMFLAGS` then `JVMFLAGS` (zkServer.sh
//! runs java with `$SERVER_JVMFLAGS $JVMFLAGS`), else plain.
//!
//! ZooKeeper 3.8/3.9 (`SnapStream.StreamMode.fromString`) match `gz`, `snappy` and the empty
//! default in any case and take any other value as plain, with no warning (only the INFO line
//! `zookeeper.snapshot.compression.method = CHECKED`); the export refuses it instead, with the
//! file and line, since it writes once and a typo would pass unseen.

use super::zoo_cfg::read_file;
use super::ConfigError;
use crate::import::files::Compression;
use std::path::{Path, PathBuf};

/// The zoo.cfg key; `-Dzookeeper.` + this is the system property.
pub const SNAPSHOT_COMPRESSION_KEY: &str = "snapshot.compression.method";

/// What the export read from its zoo.cfg and the environment.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ExportConfig {
    /// zoo.cfg's `dataDir`: the stopped server's data directory.
    pub data_dir: Option<PathBuf>,
    /// zoo.cfg's `dataLogDir`.
    pub data_log_dir: Option<PathBuf>,
    /// `snapshot.compression.method`, with where it was set (`zoo.cfg:7`, `JVMFLAGS`).
    pub compression: Option<(Compression, String)>,
}

/// Reads `config` (if given) and the JVM flags. `jvm_flags` are the values of
/// `SERVER_JVMFLAGS` and `JVMFLAGS` in that order (`jvm_flags_from_env`).
pub fn export_config(config: Option<&Path>, jvm_flags: &[(&str, String)]) -> Result<ExportConfig, ConfigError> {
    let mut out = ExportConfig::default();
    if let Some(path) = config {
        let f = read_file(path)?;
        out.data_dir = f.keys.get("dataDir").map(|(v, _)| PathBuf::from(v));
        out.data_log_dir = f.keys.get("dataLogDir").map(|(v, _)| PathBuf::from(v));
        if let Some((value, line)) = f.keys.get(SNAPSHOT_COMPRESSION_KEY) {
            let c = method(value).map_err(|reason| ConfigError::Line { file: f.name.clone(), line: *line, reason })?;
            out.compression = Some((c, format!("{}:{line}", f.name)));
        }
    }
    if out.compression.is_none() {
        let prefix = format!("-Dzookeeper.{SNAPSHOT_COMPRESSION_KEY}=");
        let mut last = None;
        for (var, flags) in jvm_flags {
            for arg in flags.split_whitespace() {
                if let Some(value) = arg.strip_prefix(&prefix) {
                    last = Some((*var, value));
                }
            }
        }
        if let Some((var, value)) = last {
            let c = method(value).map_err(|reason| ConfigError::Invalid(format!("{var}: {reason}")))?;
            out.compression = Some((c, (*var).to_owned()));
        }
    }
    Ok(out)
}

/// `SERVER_JVMFLAGS` and `JVMFLAGS`, those that are set, in the order zkServer.sh passes them.
pub fn jvm_flags_from_env() -> Vec<(&'static str, String)> {
    ["SERVER_JVMFLAGS", "JVMFLAGS"].into_iter().filter_map(|v| std::env::var(v).ok().map(|f| (v, f))).collect()
}

fn method(value: &str) -> Result<Compression, String> {
    Compression::from_method(value).ok_or_else(|| {
        format!(
            "{SNAPSHOT_COMPRESSION_KEY} must be gz, snappy or empty (plain), found {value:?} (ZooKeeper would write \
             plain snapshots without a word; the export refuses it and writes nothing)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zoo.cfg in the temp directory, removed when dropped.
    struct Cfg(PathBuf);

    impl Drop for Cfg {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn cfg(name: &str, text: &str) -> (Cfg, PathBuf) {
        let path = std::env::temp_dir().join(format!("zkr-export-cfg-{}-{name}.cfg", std::process::id()));
        std::fs::write(&path, text).unwrap();
        (Cfg(path.clone()), path)
    }

    #[test]
    fn the_key_the_flags_and_their_order() {
        let (_d, path) =
            cfg("full", "dataDir=/var/lib/zkr\ndataLogDir=/var/log/zkr\nsnapshot.compression.method=Snappy\n");
        let got =
            export_config(Some(&path), &[("JVMFLAGS", "-Dzookeeper.snapshot.compression.method=gz".into())]).unwrap();
        assert_eq!(got.data_dir.as_deref(), Some(Path::new("/var/lib/zkr")));
        assert_eq!(got.data_log_dir.as_deref(), Some(Path::new("/var/log/zkr")));
        assert_eq!(got.compression, Some((Compression::Snappy, format!("{}:3", path.display()))), "zoo.cfg wins");

        // An empty value is ZooKeeper's default, plain, and still wins over the flags.
        let (_d, path) = cfg("empty", "snapshot.compression.method=\n");
        let flags = [("SERVER_JVMFLAGS", "-Xmx1g -Dzookeeper.snapshot.compression.method=gz".to_owned())];
        assert_eq!(export_config(Some(&path), &flags).unwrap().compression.unwrap().0, Compression::Plain);

        // No key: the last flag, JVMFLAGS after SERVER_JVMFLAGS.
        let flags = [
            ("SERVER_JVMFLAGS", "-Dzookeeper.snapshot.compression.method=gz".to_owned()),
            ("JVMFLAGS", "-Dzookeeper.snapshot.compression.method=snappy".to_owned()),
        ];
        assert_eq!(export_config(None, &flags).unwrap().compression, Some((Compression::Snappy, "JVMFLAGS".into())));
        assert_eq!(export_config(None, &[]).unwrap(), ExportConfig::default());
    }

    #[test]
    fn an_unknown_method_is_refused_with_the_file_and_line() {
        let (_d, path) = cfg("bad", "tickTime=2000\nsnapshot.compression.method=lz4\n");
        let e = export_config(Some(&path), &[]).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}:2: snapshot.compression.method must be gz, snappy", path.display())), "{e}");
        assert!(e.contains("found \"lz4\""), "{e}");
        let flags = [("SERVER_JVMFLAGS", "-Dzookeeper.snapshot.compression.method=zstd".to_owned())];
        let e = export_config(None, &flags).unwrap_err().to_string();
        assert!(e.contains("SERVER_JVMFLAGS: snapshot.compression.method must be gz"), "{e}");
    }
}
