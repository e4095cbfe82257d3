//! Rewriting zoo.cfg and its dynamic config file when the ensemble's membership changes, as
//! ZooKeeper 3.5+ does with `reconfigEnabled=true` (QuorumPeer.setQuorumVerifier with
//! writeToDisk): the members go to `<zoo.cfg>.dynamic.<version in hex>`, and zoo.cfg loses its
//! `server.N` lines and points at that file with `dynamicConfigFile=`. A member restarted on
//! the rewritten files starts with the ensemble as it is, not as it was first configured.
//!
//! Checked against Debian's ZooKeeper 3.8: its first start with static `server.N` lines and
//! `reconfigEnabled=true` leaves `zoo.cfg.bak` (the original), `zoo.cfg.dynamic.100000000` and a
//! zoo.cfg ending in `dynamicConfigFile=/abs/zoo.cfg.dynamic.100000000`. zkr keeps zoo.cfg's
//! comments and key order where ZooKeeper writes its Properties back in hash order.

use std::path::{Path, PathBuf};

use std::collections::HashSet;

use super::members::ServerSpec;
use super::types::Membership;
use crate::storage::replace_file;
use crate::txn::Zxid;

/// Keys ZooKeeper's editStaticConfig leaves out of the rewritten zoo.cfg (the ensemble lives in
/// the dynamic file). `clientPort`/`clientPortAddress` too when this member's `server.N` line
/// names its client address.
fn moves_out(key: &str, erase_client: bool) -> bool {
    key.starts_with("server.")
        || key.starts_with("group")
        || key.starts_with("weight")
        || key.starts_with("dynamicConfigFile")
        || key.starts_with("peerType")
        || (erase_client && key.starts_with("clientPort"))
}

/// The dynamic file's text: one `server.N=` line per member, sorted as strings (ZooKeeper's
/// writeDynamicConfig sorts them and leaves the version to the file name), no final newline.
pub fn dynamic_text<'a>(members: impl IntoIterator<Item = (u64, &'a ServerSpec)>) -> String {
    let mut lines: Vec<String> =
        members.into_iter().map(|(id, s)| format!("server.{id}={}", s.config_value())).collect();
    lines.sort();
    lines.join("\n")
}

/// zoo.cfg's new text: every line but the ensemble's, then `dynamicConfigFile=`.
pub fn static_text(old: &str, dynamic: &Path, erase_client: bool) -> String {
    let mut out = without_keys(old, |k| moves_out(k, erase_client));
    out.push_str(&format!("dynamicConfigFile={}\n", dynamic.display()));
    out
}

/// zoo.cfg's text without the `key=value` lines whose key `gone` names (comments and every
/// other line kept as they were).
pub fn without_keys(old: &str, gone: impl Fn(&str) -> bool) -> String {
    let mut out = String::new();
    for raw in old.lines() {
        let line = raw.trim();
        let key = line.split_once('=').map(|(k, _)| k.trim());
        if matches!(key, Some(k) if !line.starts_with('#') && gone(k)) {
            continue;
        }
        out.push_str(raw);
        out.push('\n');
    }
    out
}

/// Writes the dynamic file for configuration `version` and points zoo.cfg at it. Does nothing
/// when zoo.cfg already points at an identical file (a restart replays the same membership).
/// Returns the dynamic file's path when something was written.
pub fn rewrite<'a>(
    cfg_file: &Path,
    version: i64,
    members: impl IntoIterator<Item = (u64, &'a ServerSpec)>,
    me: u64,
) -> std::io::Result<Option<PathBuf>> {
    let members: Vec<(u64, &ServerSpec)> = members.into_iter().collect();
    let erase_client = members.iter().any(|(id, s)| *id == me && s.client.is_some());
    let text = dynamic_text(members);
    let cfg_file = std::fs::canonicalize(cfg_file)?;
    let name = cfg_file.file_name().and_then(|n| n.to_str()).unwrap_or("zoo.cfg");
    let dynamic = cfg_file.with_file_name(format!("{name}.dynamic.{version:x}"));
    let old = std::fs::read_to_string(&cfg_file)?;
    let new = static_text(&old, &dynamic, erase_client);
    if new == old && std::fs::read_to_string(&dynamic).is_ok_and(|t| t == text) {
        return Ok(None);
    }
    // The first rewrite of a zoo.cfg that still lists the servers keeps the original beside
    // it, as ZooKeeper's backupOldConfig does.
    let had_servers = old.lines().any(|l| l.trim_start().starts_with("server."));
    let bak = cfg_file.with_file_name(format!("{name}.bak"));
    if had_servers && !old.contains("dynamicConfigFile") && !bak.exists() {
        replace_file(&bak, old.as_bytes(), true)?;
    }
    replace_file(&dynamic, text.as_bytes(), true)?;
    replace_file(&cfg_file, new.as_bytes(), true)?;
    Ok(Some(dynamic))
}

/// The text of `/zookeeper/config`: a `server.N=` line per member, then `version=` (the zxid of
/// the configuration in hex, as QuorumVerifier.toString writes it).
pub fn config_text(m: &Membership, zxid: Zxid) -> String {
    let mut out = String::new();
    for (id, spec) in members_of(m) {
        out.push_str(&format!("server.{id}={}\n", spec.config_value()));
    }
    out.push_str(&format!("version={zxid:x}"));
    out
}

/// The members of a membership, each marked observer unless it votes.
pub fn members_of(m: &Membership) -> Vec<(u64, ServerSpec)> {
    let voters: HashSet<u64> = m.membership().voter_ids().collect();
    m.membership()
        .nodes()
        .map(|(id, node)| {
            let mut spec = node.clone();
            spec.observer = !voters.contains(id);
            (*id, spec)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::members::parse_server;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("zkr-cfgfile-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn the_first_rewrite_moves_the_servers_out_as_zookeeper_does() {
        let d = dir("first");
        let cfg = d.join("zoo.cfg");
        let old = "# ensemble\ntickTime=500\nclientPort=2181\nserver.2=b:2888:3888;2182\nserver.1=a:2888:3888;2181\nreconfigEnabled=true\n";
        std::fs::write(&cfg, old).unwrap();
        let s1 = parse_server("a:2888:3888;2181").unwrap();
        let s2 = parse_server("b:2888:3888;2182").unwrap();
        let dynamic = rewrite(&cfg, 0x100000000, [(2, &s2), (1, &s1)], 1).unwrap().expect("written");
        let canon = std::fs::canonicalize(&d).unwrap();
        assert_eq!(dynamic, canon.join("zoo.cfg.dynamic.100000000"));
        assert_eq!(
            std::fs::read_to_string(&dynamic).unwrap(),
            "server.1=a:2888:3888:participant;0.0.0.0:2181\nserver.2=b:2888:3888:participant;0.0.0.0:2182"
        );
        assert_eq!(
            std::fs::read_to_string(&cfg).unwrap(),
            format!("# ensemble\ntickTime=500\nreconfigEnabled=true\ndynamicConfigFile={}\n", dynamic.display())
        );
        assert_eq!(std::fs::read_to_string(d.join("zoo.cfg.bak")).unwrap(), old);
        // The same membership again (a restart replaying it) writes nothing.
        assert_eq!(rewrite(&cfg, 0x100000000, [(1, &s1), (2, &s2)], 1).unwrap(), None);
        // A later configuration gets its own file; the backup stays the original.
        let next = rewrite(&cfg, 0x200000003, [(1, &s1)], 1).unwrap().expect("written");
        assert!(std::fs::read_to_string(&cfg).unwrap().ends_with(&format!("dynamicConfigFile={}\n", next.display())));
        assert_eq!(std::fs::read_to_string(d.join("zoo.cfg.bak")).unwrap(), old);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn client_port_stays_when_the_members_line_has_no_client_address() {
        let out = static_text("clientPort=2181\nserver.1=a:1:2\n", Path::new("/x/zoo.cfg.dynamic.1"), false);
        assert_eq!(out, "clientPort=2181\ndynamicConfigFile=/x/zoo.cfg.dynamic.1\n");
        let out = static_text("clientPort=2181\nclientPortAddress=0.0.0.0\n", Path::new("/d"), true);
        assert_eq!(out, "dynamicConfigFile=/d\n");
    }
}
