//! Reading a zoo.cfg: Java properties as ZooKeeper writes them, each key kept with its line
//! number so that every error names the file and line; and the metrics provider keys.

use super::{ConfigError, PROMETHEUS_PROVIDER};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// zoo.cfg keys with their values and line numbers.
pub type CfgKeys = BTreeMap<String, (String, usize)>;

/// A parsed zoo.cfg and the name it is reported under.
pub struct ZooCfg {
    pub name: String,
    pub keys: CfgKeys,
}

/// The dynamic config file a zoo.cfg names (`dynamicConfigFile`, relative to the zoo.cfg's
/// folder), read and parsed; its `server.N` lines are resolved with the others by raft::members.
pub fn dynamic_file(f: &ZooCfg) -> Result<Option<(PathBuf, ZooCfg)>, ConfigError> {
    let Some((v, line)) = f.keys.get("dynamicConfigFile") else { return Ok(None) };
    let base = Path::new(&f.name).parent().unwrap_or(Path::new("."));
    let path = if Path::new(v).is_absolute() { PathBuf::from(v) } else { base.join(v) };
    let name = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| ConfigError::Line {
        file: f.name.clone(),
        line: *line,
        reason: format!("cannot read {name}: {e}"),
    })?;
    let keys = parse_zoo_cfg(&text, &name)?;
    Ok(Some((path, ZooCfg { name, keys })))
}

/// Parses a zoo.cfg (Java properties as ZooKeeper writes them: `key=value`, `#` comments).
pub fn parse_zoo_cfg(text: &str, file: &str) -> Result<BTreeMap<String, (String, usize)>, ConfigError> {
    let mut out = BTreeMap::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let Some((k, v)) = line.split_once('=') else {
            return Err(ConfigError::Line {
                file: file.to_owned(),
                line: i + 1,
                reason: format!("expected key=value, found {line:?}"),
            });
        };
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() {
            return Err(ConfigError::Line { file: file.to_owned(), line: i + 1, reason: "empty key".into() });
        }
        out.insert(k.to_owned(), (v.to_owned(), i + 1));
    }
    Ok(out)
}

/// The metrics endpoint zoo.cfg asks for. ZooKeeper 3.8 loads `metricsProvider.className` (its
/// default is the NullMetricsProvider, no endpoint); zkr serves the Prometheus one itself, on
/// `metricsProvider.httpHost` (0.0.0.0) and `metricsProvider.httpPort` (7000), and refuses any
/// other class, which it cannot load.
pub(super) fn metrics_from_file(name: &str, keys: &CfgKeys) -> Result<Option<std::net::SocketAddr>, ConfigError> {
    let line_err = |key: &str, reason: String| ConfigError::Line {
        file: name.to_owned(),
        line: keys.get(key).map_or(0, |(_, l)| *l),
        reason,
    };
    let Some((class, _)) = keys.get("metricsProvider.className") else {
        for key in ["metricsProvider.httpHost", "metricsProvider.httpPort", "metricsProvider.exportJvmInfo"] {
            if let Some((_, line)) = keys.get(key) {
                tracing::info!(file = %name, line, key, "no metricsProvider.className: ZooKeeper's default provider has no endpoint, ignored");
            }
        }
        return Ok(None);
    };
    match class.as_str() {
        PROMETHEUS_PROVIDER => {}
        "org.apache.zookeeper.metrics.impl.DefaultMetricsProvider"
        | "org.apache.zookeeper.metrics.impl.NullMetricsProvider" => return Ok(None),
        other => {
            return Err(line_err(
                "metricsProvider.className",
                format!("metrics provider {other:?} is not one zkr has (it serves {PROMETHEUS_PROVIDER})"),
            ))
        }
    }
    let host = match keys.get("metricsProvider.httpHost") {
        None => IpAddr::from([0, 0, 0, 0]),
        Some((v, _)) => v.parse().map_err(|_| {
            line_err("metricsProvider.httpHost", format!("metricsProvider.httpHost must be an IP address, found {v:?}"))
        })?,
    };
    let port = match keys.get("metricsProvider.httpPort") {
        None => 7000,
        Some((v, _)) => v.parse::<u16>().map_err(|_| {
            line_err("metricsProvider.httpPort", format!("metricsProvider.httpPort must be a port number, found {v:?}"))
        })?,
    };
    if let Some((v, line)) = keys.get("metricsProvider.exportJvmInfo") {
        if v.eq_ignore_ascii_case("true") {
            tracing::info!(file = %name, line, "metricsProvider.exportJvmInfo: zkr has no JVM; process_* series are exported instead of jvm_*");
        }
    }
    Ok(Some(std::net::SocketAddr::new(host, port)))
}

pub(super) fn read_file(p: &Path) -> Result<ZooCfg, ConfigError> {
    let name = p.display().to_string();
    let text = std::fs::read_to_string(p).map_err(|source| ConfigError::Read { file: name.clone(), source })?;
    let keys = parse_zoo_cfg(&text, &name)?;
    Ok(ZooCfg { name, keys })
}
