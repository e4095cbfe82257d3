//! The ensemble as a ZooKeeper operator writes it: `server.N` lines (in zoo.cfg or its
//! `dynamicConfigFile`), the `myid` file in dataDir, or `zkr serve --id N --peers …`.
//!
//! Owns parsing and validation only; it knows nothing of Raft. A line zkr cannot honour stops
//! startup with the file, the line and the reason: an ensemble config must never start a
//! silent standalone server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why an ensemble configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum MembersError {
    #[error("{file}:{line}: {reason}")]
    Line { file: String, line: usize, reason: String },
    #[error("{file}: {reason}")]
    File { file: String, reason: String },
    #[error("{0}")]
    Invalid(String),
}

/// One member: `server.N=host:peerPort:electionPort[:participant|:observer][;[clientAddr:]clientPort]`.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct ServerSpec {
    pub host: String,
    /// zkr's replication traffic (ZooKeeper's quorum port).
    pub peer_port: u16,
    /// Kept for `/zookeeper/config` and `reconfig`; zkr elects over the peer port.
    pub election_port: u16,
    pub observer: bool,
    /// `clientAddr:clientPort` after the `;`, as ZooKeeper 3.5+ writes it.
    pub client: Option<(String, u16)>,
}

impl ServerSpec {
    /// `host:port` of the peer port.
    pub fn peer_addr(&self) -> String {
        join_host_port(&self.host, self.peer_port)
    }

    /// The value of this member's `server.N=` line as `/zookeeper/config` shows it.
    pub fn config_value(&self) -> String {
        let role = if self.observer { "observer" } else { "participant" };
        let mut s = format!("{}:{}:{role}", join_host_port(&self.host, self.peer_port), self.election_port);
        if let Some((addr, port)) = &self.client {
            s.push_str(&format!(";{}", join_host_port(addr, *port)));
        }
        s
    }
}

impl std::fmt::Display for ServerSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.config_value())
    }
}

/// `host:port`, an IPv6 host in brackets.
pub fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// An ensemble member's view of its ensemble.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ensemble {
    pub my_id: u64,
    pub members: BTreeMap<u64, ServerSpec>,
    /// ZooKeeper's initLimit and syncLimit, in ticks.
    pub init_limit: u32,
    pub sync_limit: u32,
    /// `reconfigEnabled`: the `reconfig` op is refused unless true, as in ZooKeeper 3.5.3+.
    pub reconfig_enabled: bool,
    /// `dynamicConfigFile`, where the `server.N` lines came from if not zoo.cfg itself.
    pub dynamic_file: Option<PathBuf>,
    /// The zoo.cfg this came from: rewritten after a reconfig (see `config_file`).
    pub config_file: Option<PathBuf>,
}

impl Ensemble {
    pub fn me(&self) -> Option<&ServerSpec> {
        self.members.get(&self.my_id)
    }

    /// Ids of the voting members (participants).
    pub fn voters(&self) -> impl Iterator<Item = u64> + '_ {
        self.members.iter().filter(|(_, s)| !s.observer).map(|(id, _)| *id)
    }
}

/// Splits `host:port` where host may be `[v6]`.
fn split_host_port(s: &str) -> Option<(String, &str)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, rest) = rest.split_once(']')?;
        Some((host.to_owned(), rest.strip_prefix(':')?))
    } else {
        let (host, port) = s.split_once(':')?;
        Some((host.to_owned(), port))
    }
}

fn port(s: &str, what: &str) -> Result<u16, String> {
    match s.parse::<u16>() {
        Ok(p) if p != 0 => Ok(p),
        _ => Err(format!("{what} must be a port number (1-65535), found {s:?}")),
    }
}

/// Parses the value of one `server.N=` line (QuorumPeer.QuorumServer's grammar).
pub fn parse_server(value: &str) -> Result<ServerSpec, String> {
    let (addrs, client) = match value.split_once(';') {
        Some((a, c)) => (a.trim(), Some(c.trim())),
        None => (value.trim(), None),
    };
    if addrs.contains('|') {
        return Err("several addresses per server (a|b, ZooKeeper 3.6 multi-address) are not supported by zkr".into());
    }
    let (host, rest) = split_host_port(addrs)
        .ok_or_else(|| format!("expected host:peerPort:electionPort[:participant|:observer], found {value:?}"))?;
    if host.is_empty() {
        return Err(format!("no host in {value:?}"));
    }
    let parts: Vec<&str> = rest.split(':').collect();
    let (peer, election, role) = match parts.as_slice() {
        [p, e] => (*p, *e, None),
        [p, e, r] => (*p, *e, Some(*r)),
        _ => return Err(format!("expected host:peerPort:electionPort[:participant|:observer], found {value:?}")),
    };
    let observer = match role.map(str::to_ascii_lowercase).as_deref() {
        None | Some("participant") => false,
        Some("observer") => true,
        Some(r) => return Err(format!("the role must be participant or observer, found {r:?}")),
    };
    let client = match client {
        None | Some("") => None,
        Some(c) => match split_host_port(c) {
            Some((addr, p)) => Some((addr, port(p, "the client port")?)),
            // ZooKeeper accepts a bare client port: the address is then 0.0.0.0.
            None => Some(("0.0.0.0".to_owned(), port(c, "the client port")?)),
        },
    };
    Ok(ServerSpec {
        host,
        peer_port: port(peer, "the peer port")?,
        election_port: port(election, "the election port")?,
        observer,
        client,
    })
}

/// `server.N` lines of a parsed config file (key → (value, line)).
pub fn servers_of(
    keys: &BTreeMap<String, (String, usize)>,
    file: &str,
) -> Result<BTreeMap<u64, ServerSpec>, MembersError> {
    let mut out = BTreeMap::new();
    for (k, (v, line)) in keys {
        let Some(n) = k.strip_prefix("server.") else { continue };
        let bad = |reason: String| MembersError::Line { file: file.to_owned(), line: *line, reason };
        let id: u64 = match n.parse() {
            Ok(id) if id > 0 && id < 256 => id,
            _ => return Err(bad(format!("server id must be a number from 1 to 255, found {n:?}"))),
        };
        out.insert(id, parse_server(v).map_err(bad)?);
    }
    Ok(out)
}

/// The `myid` file of a data directory (QuorumPeerConfig reads it the same way).
pub fn read_myid(data_dir: &Path) -> Result<u64, MembersError> {
    let path = data_dir.join("myid");
    let file = path.display().to_string();
    let text = std::fs::read_to_string(&path).map_err(|e| MembersError::File {
        file: file.clone(),
        reason: format!("cannot read the myid file of this ensemble member ({e}); write this server's id (the N of its server.N line) into it"),
    })?;
    match text.trim().parse::<u64>() {
        Ok(id) if id > 0 && id < 256 => Ok(id),
        _ => Err(MembersError::File {
            file,
            reason: format!("myid must hold a number from 1 to 255, found {:?}", text.trim()),
        }),
    }
}

/// `--peers 1=host:port,2=host:port…` (the peer port; the election port is set equal to it).
pub fn parse_peers_flag(v: &str) -> Result<BTreeMap<u64, ServerSpec>, MembersError> {
    let bad = |reason: String| MembersError::Invalid(format!("--peers: {reason}"));
    let mut out = BTreeMap::new();
    for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (id, addr) = item.split_once('=').ok_or_else(|| bad(format!("expected N=host:port, found {item:?}")))?;
        let id: u64 = match id.trim().parse() {
            Ok(id) if id > 0 && id < 256 => id,
            _ => return Err(bad(format!("server id must be a number from 1 to 255, found {id:?}"))),
        };
        let spec = if addr.matches(':').count() >= 2 && !addr.starts_with('[') {
            parse_server(addr).map_err(bad)?
        } else {
            let (host, p) = split_host_port(addr).ok_or_else(|| bad(format!("expected host:port, found {addr:?}")))?;
            let p = port(p, "the peer port").map_err(bad)?;
            ServerSpec { host, peer_port: p, election_port: p, observer: false, client: None }
        };
        if out.insert(id, spec).is_some() {
            return Err(bad(format!("server {id} is given twice")));
        }
    }
    Ok(out)
}

/// The ensemble keys of one config file: `(file name, key → (value, line))`.
pub type FileKeys<'a> = (&'a str, &'a BTreeMap<String, (String, usize)>);

/// Settles whether this server is an ensemble member, from zoo.cfg (and its dynamic config
/// file), the myid file, and the `--id`/`--peers` flags. `Ok(None)` means standalone: no
/// servers, or a single participant with standaloneEnabled (as QuorumPeerConfig decides).
pub fn resolve(
    file: Option<FileKeys>,
    dynamic: Option<(&Path, FileKeys)>,
    id_flag: Option<u64>,
    peers_flag: Option<&str>,
    data_dir: &Path,
) -> Result<Option<Ensemble>, MembersError> {
    let mut servers = BTreeMap::new();
    let mut standalone_enabled = true;
    let mut reconfig_enabled = false;
    let mut init_limit = 10;
    let mut sync_limit = 5;
    let mut dynamic_file = None;
    let mut config_file = None;
    if let Some((name, keys)) = file {
        config_file = Some(PathBuf::from(name));
        let line_err = |key: &str, reason: String| MembersError::Line {
            file: name.to_owned(),
            line: keys.get(key).map_or(0, |(_, l)| *l),
            reason,
        };
        let flag = |key: &str, default: bool| -> Result<bool, MembersError> {
            match keys.get(key).map(|(v, _)| v.to_ascii_lowercase()) {
                None => Ok(default),
                Some(v) if v == "true" => Ok(true),
                Some(v) if v == "false" => Ok(false),
                Some(v) => Err(line_err(key, format!("{key} must be true or false, found {v:?}"))),
            }
        };
        let ticks = |key: &str, default: u32| -> Result<u32, MembersError> {
            match keys.get(key) {
                None => Ok(default),
                Some((v, _)) => match v.parse::<u32>() {
                    Ok(n) if n > 0 => Ok(n),
                    _ => Err(line_err(key, format!("{key} must be a positive number of ticks, found {v:?}"))),
                },
            }
        };
        standalone_enabled = flag("standaloneEnabled", true)?;
        reconfig_enabled = flag("reconfigEnabled", false)?;
        init_limit = ticks("initLimit", init_limit)?;
        sync_limit = ticks("syncLimit", sync_limit)?;
        servers = servers_of(keys, name)?;
        if let Some((path, (dyn_name, dyn_keys))) = dynamic {
            let dyn_name = dyn_name.to_owned();
            for (k, (_, line)) in dyn_keys {
                if !k.starts_with("server.") && k != "version" {
                    return Err(MembersError::Line {
                        file: dyn_name.clone(),
                        line: *line,
                        reason: format!("only server.N and version belong in a dynamic config file, found {k:?}"),
                    });
                }
            }
            let dynamic = servers_of(dyn_keys, &dyn_name)?;
            if !servers.is_empty() && !dynamic.is_empty() {
                return Err(line_err(
                    "dynamicConfigFile",
                    "server.N lines are in both zoo.cfg and the dynamic config file; keep them in one".into(),
                ));
            }
            servers.extend(dynamic);
            dynamic_file = Some(path.to_owned());
        }
    }
    if let Some(p) = peers_flag {
        if !servers.is_empty() {
            return Err(MembersError::Invalid("--peers and server.N lines in the config file: give one".into()));
        }
        servers = parse_peers_flag(p)?;
    }
    if servers.is_empty() {
        if id_flag.is_some() {
            return Err(MembersError::Invalid("--id needs --peers (or server.N lines in the config file)".into()));
        }
        return Ok(None);
    }
    let voters = servers.values().filter(|s| !s.observer).count();
    if voters == 0 {
        return Err(MembersError::Invalid("the ensemble has no participant (every server is an observer)".into()));
    }
    if servers.len() == 1 && standalone_enabled {
        tracing::info!("one server listed and standaloneEnabled=true: running standalone, as ZooKeeper does");
        return Ok(None);
    }
    let my_id = match id_flag {
        Some(id) => id,
        None => read_myid(data_dir)?,
    };
    if !servers.contains_key(&my_id) {
        let ids: Vec<String> = servers.keys().map(u64::to_string).collect();
        return Err(MembersError::Invalid(format!(
            "this server's id is {my_id} but the ensemble lists only {}",
            ids.join(", ")
        )));
    }
    Ok(Some(Ensemble { my_id, members: servers, init_limit, sync_limit, reconfig_enabled, dynamic_file, config_file }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_zookeeper_server_lines() {
        let s = parse_server("zoo1:2888:3888;2181").unwrap();
        assert_eq!((s.host.as_str(), s.peer_port, s.election_port, s.observer), ("zoo1", 2888, 3888, false));
        assert_eq!(s.client, Some(("0.0.0.0".into(), 2181)));
        assert_eq!(s.config_value(), "zoo1:2888:3888:participant;0.0.0.0:2181");
        let s = parse_server("10.0.0.3:2888:3888:observer;127.0.0.1:2182").unwrap();
        assert!(s.observer);
        assert_eq!(s.client, Some(("127.0.0.1".into(), 2182)));
        let s = parse_server("[::1]:2888:3888").unwrap();
        assert_eq!((s.host.as_str(), s.client.clone()), ("::1", None));
        assert_eq!(s.peer_addr(), "[::1]:2888");
        assert!(parse_server("zoo1:2888").is_err());
        assert!(parse_server("zoo1:2888:3888:leader").is_err());
        assert!(parse_server("a:1:2|b:1:2").is_err());
        assert!(parse_server("zoo1:x:3888").is_err());
    }

    #[test]
    fn peers_flag() {
        let m = parse_peers_flag("1=127.0.0.1:2888,2=127.0.0.1:2889, 3=h:1:2:observer").unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[&2].peer_port, 2889);
        assert!(m[&3].observer);
        assert!(parse_peers_flag("1=a:1,1=b:2").is_err());
        assert!(parse_peers_flag("0=a:1").is_err());
    }

    #[test]
    fn server_lines_name_their_line() {
        let mut keys = BTreeMap::new();
        keys.insert("server.1".to_string(), ("a:1:2".to_string(), 3));
        keys.insert("server.x".to_string(), ("a:1:2".to_string(), 7));
        match servers_of(&keys, "zoo.cfg") {
            Err(MembersError::Line { line, .. }) => assert_eq!(line, 7),
            other => panic!("{other:?}"),
        }
    }
}
