//! Seeding a new ensemble from a standalone data directory (`zkr import-zookeeper`'s output, or
//! a standalone zkr's): the member that holds it turns it into its first Raft snapshot, and the
//! other members catch up from that snapshot like any lagging member.
//!
//! A snapshot put into one member's log by hand is a committed state the others never agreed
//! to, so Raft's rule that purged entries match everywhere holds only if no other member can
//! have built a log of its own meanwhile. The seed therefore goes in only with a quorum's
//! consent, asked over the peer port before anything is written:
//!
//! ```text
//!  seed member                          every other voter
//!  SeedProbe ───────────────────────►  empty (no Raft state, not initializing)?
//!                                       yes: records "defer to the seed member" (raft/seed-from),
//!            ◄─────────────────────── SeedAnswer{empty, term}   and never initializes itself
//!  a quorum empty, none with state:
//!  write snapshot @ (term, index 1),    while deferring and uninitialized: votes and
//!  vote, raft/seed-pending; start Raft  replication from other members are refused
//!  leads once a quorum has the seed:
//!  raft/seed-pending removed
//! ```
//! Any member that already has Raft state makes the seed member refuse to start: it would
//! otherwise silently fork the ensemble. A new member that starts empty waits one election
//! timeout before it initializes, so a seed member started at the same time is heard first.
//! While its seed is pending the seed member refuses votes and replication from the others too.

use super::log_store::{read_small, write_small};
use super::members::Ensemble;
use super::state_machine::meta_path;
use super::types::{zxid_of, LogId, MemberId, Membership, SnapshotMeta, Vote};
use super::wire::{self, Kind, RpcRequest, RpcResponse, SeedAnswer};
use crate::config::Config;
use crate::storage::StorageError;
use crate::tree::DataTree;
use crate::txn::{Txn, TxnOp};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a member knows about seeding: whether it defers to another member's seed, or holds a
/// seed of its own not yet on a quorum. Kept in `MemberStatus`.
#[derive(Debug, Default)]
pub struct Gate {
    dir: Option<PathBuf>,
    /// The member whose seed this member waits for (`raft/seed-from`).
    defer_to: Option<MemberId>,
    /// This member seeded the ensemble and a quorum may not have the seed yet (`raft/seed-pending`).
    pending: bool,
    /// Raft state existed at startup, or this member has started to initialize it.
    has_state: bool,
}

impl Gate {
    /// The gate of a member whose Raft state lives in `raft_dir`.
    pub fn load(raft_dir: &Path) -> Result<Gate, StorageError> {
        let from = raft_dir.join("seed-from");
        let defer_to = read_small::<MemberId>(&from).map_err(|e| StorageError::io(&from, e))?;
        Ok(Gate {
            dir: Some(raft_dir.to_owned()),
            defer_to,
            pending: raft_dir.join("seed-pending").exists(),
            has_state: !super::is_pristine(raft_dir),
        })
    }

    /// Answers seed member `from`'s probe; an empty member promises to wait for it.
    pub fn answer(&mut self, from: MemberId, term: u64, initialized: bool) -> SeedAnswer {
        if self.has_state || initialized || self.defer_to.is_some_and(|d| d != from) {
            return SeedAnswer { empty: false, term };
        }
        if self.defer_to != Some(from) {
            if let Some(dir) = &self.dir {
                let p = dir.join("seed-from");
                if let Err(e) = write_small(&p, &from, true) {
                    tracing::warn!(file = %p.display(), "cannot record the seed member: {e}");
                    return SeedAnswer { empty: false, term };
                }
            }
            tracing::info!(seed = from, "member {from} seeds this new ensemble: waiting for its snapshot");
            self.defer_to = Some(from);
        }
        SeedAnswer { empty: true, term }
    }

    /// True if this member may initialize a new ensemble itself (then it counts as having state).
    pub fn may_initialize(&mut self) -> bool {
        if self.defer_to.is_some() {
            return false;
        }
        self.has_state = true;
        true
    }

    /// True if RPCs (votes, replication) from `peer` must be refused: this member waits for
    /// another member's seed and has no state yet, or holds its own seed not yet on a quorum.
    pub fn refuses(&self, peer: MemberId, initialized: bool) -> bool {
        self.pending || (self.defer_to.is_some_and(|d| d != peer) && !initialized)
    }

    /// True while this member waits for another member's seed: it never had data of its own.
    pub fn deferring(&self) -> bool {
        self.defer_to.is_some()
    }

    pub fn seed_pending(&self) -> bool {
        self.pending
    }

    /// The seed is on a quorum (this member leads and has applied past it): the rules end.
    pub fn seed_done(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_file(dir.join("seed-pending"));
            super::log_store::sync_dir(dir);
        }
        self.pending = false;
        tracing::info!("the ensemble's seed is on a quorum");
    }

    /// This member was initialized by the member it deferred to: forget the promise.
    pub fn seeded(&mut self) {
        if self.defer_to.take().is_some() {
            if let Some(dir) = &self.dir {
                let _ = std::fs::remove_file(dir.join("seed-from"));
            }
        }
        self.has_state = true;
    }
}

/// True if the data directory holds standalone state (snapshots or log segments) and no Raft
/// state yet: the member should seed the ensemble from it.
pub fn wanted(cfg: &Config) -> Result<bool, StorageError> {
    if !super::is_pristine(&super::raft_dir(cfg)) {
        return Ok(false);
    }
    let layout = crate::storage::Layout::new(cfg);
    let snaps = crate::storage::snapshot::list(&layout.snap_dir)?;
    let segs = crate::storage::wal::segments(&layout.log_dir)?;
    Ok(!snaps.is_empty() || !segs.is_empty())
}

/// Why a seed cannot go in.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    #[error("member {peer} already has Raft state (term {term}): a standalone data directory seeds only a new ensemble whose other members start empty; empty their data directories, or move this one away and let this member catch up from them")]
    NotEmpty { peer: MemberId, term: u64 },
    #[error("stopped while waiting for the other members")]
    Stopped,
}

/// Asks the other voters whether they are empty, until a quorum (this member included) is and
/// none has state. Returns the highest term any of them reported.
pub async fn probe(
    link: &crate::raft::link::Link,
    ens: &Ensemble,
    stop: &tokio_util::sync::CancellationToken,
    every: Duration,
) -> Result<u64, SeedError> {
    let me = ens.my_id;
    let voters: Vec<MemberId> = ens.voters().collect();
    let quorum = voters.len() / 2 + 1;
    let mut empty: BTreeSet<MemberId> = BTreeSet::from([me]);
    let mut max_term = 0;
    let started = std::time::Instant::now();
    let mut told = Duration::ZERO;
    loop {
        let asking: Vec<MemberId> = voters.iter().copied().filter(|p| !empty.contains(p)).collect();
        for peer in asking {
            let Some(spec) = ens.members.get(&peer) else { continue };
            match ask(&spec.peer_addr(), link).await {
                Some(a) if a.empty => {
                    empty.insert(peer);
                    max_term = max_term.max(a.term);
                }
                Some(a) => return Err(SeedError::NotEmpty { peer, term: a.term }),
                None => {}
            }
        }
        if empty.len() >= quorum {
            tracing::info!(members = ?empty, "a quorum of empty members agreed to this member's seed");
            return Ok(max_term);
        }
        if started.elapsed() >= told {
            tracing::info!(agreed = ?empty, quorum, "seeding the ensemble from this data directory: waiting for a quorum of empty members");
            told += Duration::from_secs(10);
        }
        tokio::select! {
            _ = stop.cancelled() => return Err(SeedError::Stopped),
            _ = tokio::time::sleep(every) => {}
        }
    }
}

async fn ask(addr: &str, link: &crate::raft::link::Link) -> Option<SeedAnswer> {
    let exchange = async {
        let mut s = link.connect(addr, Kind::Rpc).await?;
        wire::write_frame(&mut s, &RpcRequest::SeedProbe).await?;
        wire::read_frame::<_, RpcResponse>(&mut s).await
    };
    match tokio::time::timeout(Duration::from_secs(3), exchange).await {
        Ok(Ok(RpcResponse::SeedProbe(a))) => Some(a),
        _ => None,
    }
}

/// Writes the first Raft snapshot and vote of a member from its standalone state, in a term
/// above both the imported zxids' epoch and any term the probed members reported. Takes and
/// releases the data directory's lock (through `storage::recover`).
pub fn seed(cfg: &Config, ens: &Ensemble, peers_term: u64) -> Result<(), StorageError> {
    let recovered = crate::storage::recover(cfg)?;
    let mut tree: DataTree = recovered.tree;
    let imported = tree.last_zxid();
    let term = (((imported as u64) >> 32) + 1).max(peers_term + 1);
    let log_id = LogId::new(openraft::CommittedLeaderId::new(term, ens.my_id), 1);
    let zxid = zxid_of(&log_id);
    let voters: BTreeSet<u64> = ens.voters().collect();
    let nodes: BTreeMap<u64, super::members::ServerSpec> = ens.members.clone().into_iter().collect();
    let membership = Membership::new(Some(log_id), openraft::Membership::new(vec![voters], nodes));
    // /zookeeper/config as the membership says, at the seed's zxid.
    let text = super::config_file::config_text(&membership, zxid);
    let version = tree.get("/zookeeper/config").map_or(0, |n| n.stat.version + 1);
    let op = TxnOp::SetData { path: "/zookeeper/config".into(), data: Some(text.into()), version };
    let mut changes = Vec::new();
    tree.apply(&Txn { zxid, time: 0, session: 0, op }, &mut changes);
    tree.set_last_zxid(zxid);
    let raft_dir = super::raft_dir(cfg);
    let snap_dir = raft_dir.join("snap");
    std::fs::create_dir_all(&snap_dir).map_err(|e| StorageError::io(&snap_dir, e))?;
    let pending = raft_dir.join("seed-pending");
    std::fs::write(&pending, b"").map_err(|e| StorageError::io(&pending, e))?;
    let path = crate::storage::snapshot::write(&snap_dir, &tree)?;
    let meta =
        SnapshotMeta { last_log_id: Some(log_id), last_membership: membership, snapshot_id: format!("{term}-1-seed") };
    let mp = meta_path(&path);
    write_small(&mp, &meta, true).map_err(|e| StorageError::io(&mp, e))?;
    let purged = raft_dir.join("purged");
    write_small(&purged, &log_id, true).map_err(|e| StorageError::io(&purged, e))?;
    // Written last: its presence is what makes the member non-pristine.
    let vote_path = raft_dir.join("vote");
    write_small(&vote_path, &Vote::new(term, ens.my_id), true).map_err(|e| StorageError::io(&vote_path, e))?;
    tracing::info!(
        imported_zxid = format!("0x{imported:x}"),
        znodes = tree.node_count(),
        sessions = tree.sessions().len(),
        term,
        "seeded the ensemble from this data directory's standalone state: the other members catch up from it"
    );
    drop(recovered.lock);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("zkr-seed-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn an_empty_member_defers_to_the_first_seed_member_that_asks_and_remembers_it() {
        let d = dir("defer");
        let mut g = Gate::load(&d).unwrap();
        assert_eq!(g.answer(1, 0, false), SeedAnswer { empty: true, term: 0 });
        assert!(!g.may_initialize(), "a deferring member must not initialize");
        assert!(g.refuses(2, false) && !g.refuses(1, false), "only the seed member may lead it");
        assert!(!g.refuses(2, true), "once initialized the rule ends");
        assert!(!g.answer(3, 0, false).empty, "a second seed member is refused");
        // A restart keeps the promise.
        let mut again = Gate::load(&d).unwrap();
        assert!(!again.may_initialize());
        again.seeded();
        assert!(Gate::load(&d).unwrap().may_initialize());
    }

    #[test]
    fn a_member_that_initialized_or_has_state_is_not_empty() {
        let d = dir("state");
        let mut g = Gate::load(&d).unwrap();
        assert!(g.may_initialize());
        assert!(!g.answer(1, 0, false).empty);
        std::fs::write(d.join("vote"), b"x").unwrap();
        let mut g = Gate::load(&d).unwrap();
        assert_eq!(g.answer(1, 4, false), SeedAnswer { empty: false, term: 4 });
    }
}
