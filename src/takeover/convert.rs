//! What an observer does with an accepted plan once `zkr serve` has stopped: its data directory
//! and zoo.cfg become a zkr ensemble member's, then it runs again with the same arguments.
//!
//! - The seed keeps its snapshots (a standalone data directory with no Raft state: it seeds the
//!   new ensemble, `raft::seed`) and sets ZooKeeper's epoch files aside.
//! - Every other member sets its observed state aside (`observed-<unix time>/`) and records that
//!   it waits for the seed (`raft/seed-from`), so it never starts an ensemble of its own.
//! - zoo.cfg keeps every line but the ZooKeeper ensemble's (`server.N`, `peerType`,
//!   `dynamicConfigFile`, `group`/`weight`, `zkr.ensembleProtocol`) and gains one
//!   `server.N=host:quorumPort:electionPort:participant[;client]` line per member, as the
//!   observers' own lines named them, and `zkr.zookeeperPasswords=true` unless it sets that key
//!   (so the way back keeps new sessions too); the old file stays beside it as `<zoo.cfg>.observer`.

use super::Plan;
use crate::config::Config;
use crate::raft::members::ServerSpec;
use crate::storage::{replace_file, StorageError};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("this server was started without a zoo.cfg (--config): there is nothing to rewrite")]
    NoConfigFile,
    #[error("this server is not an observer of a ZooKeeper ensemble")]
    NotObserver,
    #[error("{what} {file}: {source}")]
    Io { what: &'static str, file: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error("cannot run {exe} again: {source}")]
    Exec { exe: PathBuf, source: std::io::Error },
}

fn io<'a>(what: &'static str, file: &'a Path) -> impl FnOnce(std::io::Error) -> ConvertError + 'a {
    move |source| ConvertError::Io { what, file: file.to_owned(), source }
}

/// Turns the data directory and zoo.cfg of observer `cfg` into a member's for `plan`.
pub fn prepare(cfg: &Config, plan: &Plan) -> Result<(), ConvertError> {
    let ens = cfg.ensemble.as_ref().filter(|_| cfg.zab_observer).ok_or(ConvertError::NotObserver)?;
    let file = ens.config_file.as_deref().ok_or(ConvertError::NoConfigFile)?;
    let seed = plan.seed == ens.my_id;
    let aside = cfg.data_dir.join(format!(
        "observed-{}",
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
    ));
    let layout = crate::storage::Layout::new(cfg);
    let mut moving = vec![cfg.data_dir.join("zab")];
    if seed {
        ensure_snapshot(cfg)?;
    } else {
        moving.push(layout.snap_dir.clone());
        moving.push(layout.log_dir.clone());
    }
    for from in moving.iter().filter(|p| p.exists()) {
        std::fs::create_dir_all(&aside).map_err(io("cannot create", &aside))?;
        let to = aside.join(from.file_name().unwrap_or_default());
        std::fs::rename(from, &to).map_err(io("cannot move aside", from))?;
    }
    if !seed {
        let raft = crate::raft::raft_dir(cfg);
        std::fs::create_dir_all(&raft).map_err(io("cannot create", &raft))?;
        let from = raft.join("seed-from");
        crate::raft::log_store::write_small(&from, &plan.seed, true).map_err(io("cannot write", &from))?;
    }
    let old = std::fs::read_to_string(file).map_err(io("cannot read", file))?;
    let members: Vec<(u64, ServerSpec)> = ens
        .members
        .iter()
        .filter(|(id, _)| plan.members.contains(id))
        .map(|(id, s)| (*id, ServerSpec { observer: false, ..s.clone() }))
        .collect();
    let kept =
        file.with_file_name(format!("{}.observer", file.file_name().and_then(|n| n.to_str()).unwrap_or("zoo.cfg")));
    replace_file(&kept, old.as_bytes(), true).map_err(io("cannot write", &kept))?;
    replace_file(file, member_config(&old, &members).as_bytes(), true).map_err(io("cannot rewrite", file))?;
    tracing::info!(config = %file.display(), kept = %kept.display(), seed, "zoo.cfg rewritten for the zkr ensemble");
    Ok(())
}

/// The seed's newest snapshot must hold everything it applied; `zkr serve` wrote one at
/// shutdown unless nothing changed since the last, and none exists for an observer that never
/// saw a txn: then its (genesis) tree is written now.
fn ensure_snapshot(cfg: &Config) -> Result<(), ConvertError> {
    let layout = crate::storage::Layout::new(cfg);
    if !crate::storage::snapshot::list(&layout.snap_dir)?.is_empty() {
        return Ok(());
    }
    let recovered = crate::storage::recover(cfg)?;
    crate::storage::snapshot::write(&layout.snap_dir, &recovered.tree)?;
    Ok(())
}

/// What the takeover adds to zoo.cfg unless the operator set the key (see `member_config`).
const ZOOKEEPER_PASSWORDS: &str = "# added by zkr takeover: new sessions get ZooKeeper's passwords (derivable from the \
                                   session id), so that they survive a way back to ZooKeeper\nzkr.zookeeperPasswords=true\n";

/// True if a line of zoo.cfg's text sets `key`.
fn has_key(text: &str, key: &str) -> bool {
    text.lines().any(|l| l.split_once('=').is_some_and(|(k, _)| k.trim() == key))
}

/// zoo.cfg's text for the zkr ensemble: every line but the ZooKeeper ensemble's, ZooKeeper's
/// session passwords for new sessions (unless zoo.cfg says otherwise), then one line per member.
pub fn member_config(old: &str, members: &[(u64, ServerSpec)]) -> String {
    let gone = |k: &str| {
        k.starts_with("server.")
            || k.starts_with("group.")
            || k.starts_with("weight.")
            || k == "peerType"
            || k == "dynamicConfigFile"
            || k == "zkr.ensembleProtocol"
    };
    let mut out = crate::raft::config_file::without_keys(old, gone);
    if !has_key(old, "zkr.zookeeperPasswords") {
        // The migrated clients hold ZooKeeper's passwords already; new sessions get them too, so
        // the way back (`zkr export-zookeeper`) keeps every session. An operator who set the key
        // either way keeps their choice.
        out.push_str(ZOOKEEPER_PASSWORDS);
    }
    for (id, spec) in members {
        out.push_str(&format!("server.{id}={}\n", spec.config_value()));
    }
    out
}

/// Runs this program again with the arguments it was started with; returns only on failure.
pub fn exec_again() -> ConvertError {
    use std::os::unix::process::CommandExt;
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(source) => return ConvertError::Exec { exe: PathBuf::from("zkr"), source },
    };
    let source = std::process::Command::new(&exe).args(std::env::args_os().skip(1)).exec();
    ConvertError::Exec { exe, source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_members_config_drops_zookeepers_ensemble_and_keeps_the_rest() {
        let old = "# ours\ntickTime=2000\nserver.1=a:2888:3888\nserver.9=z:2888:3888:observer;2181\n\
                   peerType=observer\nzkr.ensembleProtocol=zab\ndataDir=/d\n";
        let spec = ServerSpec {
            host: "z".into(),
            peer_port: 2888,
            election_port: 3888,
            observer: false,
            client: Some(("0.0.0.0".into(), 2181)),
        };
        assert_eq!(
            member_config(old, &[(9, spec)]),
            format!("# ours\ntickTime=2000\ndataDir=/d\n{ZOOKEEPER_PASSWORDS}server.9=z:2888:3888:participant;0.0.0.0:2181\n")
        );
        let chosen = format!("{old}zkr.zookeeperPasswords=false\n");
        assert!(!member_config(&chosen, &[]).contains("zookeeperPasswords=true"), "the operator's choice stays");
    }
}
