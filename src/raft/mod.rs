//! Ensembles: zkr members replicated with openraft.
//!
//! ```text
//!  client ──► member's core ──Proposal──► proposer ──► leader's Raft log ──► every member's
//!             (reads local)               (forward       (openraft: append,   state machine
//!              ▲                           stream)        replicate, commit)  = its core:
//!              └──────────── replies, watch events when this member applies ◄── prep + apply
//! ```
//! Modules: `members` (zoo.cfg's `server.N`, myid, `--peers`), `command` (the log entry),
//! `types` (openraft's type config, zxids from log ids), `log_store` (the Raft log on disk), `log_writer` (its group-commit writer thread), `log_state` (what the two share), `log_cache` (its newest entries in memory),
//! `log_repair` (cutting or setting aside damaged files at startup),
//! `seam` (what crosses between the core and the Raft side: proposals down, committed entries
//! and news up; `raft/` imports nothing from `server/`), `state_machine` (the bridge to the core, snapshots), `wire` (peer frames and the messages they
//! carry), `network` (openraft's RPCs over them), `link` (plain or TLS peer connections),
//! `member` (the running member: peer listener, proposer, role watcher), `timing` (every
//! timeout, from tickTime, initLimit and syncLimit), `amnesia` (a member that lost entries it
//! may have acknowledged: no vote until caught up), `diverge` (a log that disagrees with the
//! leader's: set aside), `reconfig`, `seed` (the first start of an ensemble), `config_file`
//! (the dynamic config file), `prevote` (no campaign a quorum would not vote for). This file recovers a member's state at start.

pub mod amnesia;
pub mod command;
pub mod config_file;
pub mod diverge;
pub mod link;
mod log_cache;
pub mod log_repair;
mod log_state;
pub mod log_store;
mod log_writer;
pub mod member;
pub mod members;
pub mod network;
pub mod plan;
pub mod prevote;
pub mod reconfig;
pub mod seam;
pub mod seed;
pub mod state_machine;
pub mod timing;
pub mod types;
pub mod wire;

use crate::config::{Config, CrashPoint};
use crate::tree::DataTree;
use members::Ensemble;
use std::path::{Path, PathBuf};
use types::{LogId, Membership};

/// Where an ensemble member keeps its Raft state.
pub fn raft_dir(cfg: &Config) -> PathBuf {
    cfg.data_log_dir.clone().unwrap_or_else(|| cfg.data_dir.clone()).join("raft")
}

/// What an ensemble member recovers from its data directory before it starts.
pub struct Recovered {
    /// The first proposal sequence number of this run (see `first_seq`).
    pub first_seq: u64,
    pub tree: DataTree,
    pub applied: Option<LogId>,
    pub membership: Membership,
    pub log: log_store::LogStore,
    pub snap_dir: PathBuf,
    /// Whether the member may have lost entries it acknowledged (see `amnesia`).
    pub amnesia: amnesia::State,
}

/// Opens the Raft log and loads the newest snapshot. Entries after the snapshot are applied by
/// openraft once it knows they are committed (at once up to the saved commit point).
///
/// A member's damaged files never keep it down, and never make it serve what it does not have:
/// its data is also on the other members. A damaged log is cut at its first bad record (a copy
/// kept in `raft/log/damaged/`); a damaged snapshot is set aside (`raft/snap/damaged/`) for the
/// next older one; if the log cannot be replayed from the snapshot taken (compacted past it),
/// the log is set aside too. What the member lost, the leader sends it (entries, or a
/// snapshot), as to a member whose data directory was wiped. The vote is always kept. A member
/// that lost entries this way, or that starts empty in an ensemble that has data, is amnesiac
/// (see `amnesia`): it does not vote until a leader has caught it up.
pub fn recover(cfg: &Config) -> Result<Recovered, crate::storage::StorageError> {
    use crate::storage::StorageError as E;
    let dir = raft_dir(cfg);
    if let Some(why) = diverge::marked(&dir).map_err(|e| E::io(&dir.join("diverged"), e))? {
        let to = diverge::set_aside(&dir, cfg.failpoints.crash_at).map_err(|e| E::io(&dir, e))?;
        tracing::warn!(%why, moved_to = %to.display(), "this member diverged from its leader: its Raft state is set aside, and it starts over as an empty member");
    }
    let vote_term = || -> Result<u64, E> {
        let p = dir.join("vote");
        Ok(log_store::read_small::<types::Vote>(&p).map_err(|e| E::io(&p, e))?.map_or(0, |v| v.leader_id.term))
    };
    // A damaged vote, commit hint or log start is set aside before anything reads them: the
    // member comes back as one that lost its vote (probed like an empty one) or its log
    // (amnesiac), never stays out for an operator while a quorum runs.
    let state_files = log_repair::repair_state_files(&dir)?;
    if !state_files.did.is_empty() {
        tracing::warn!(did = %state_files.did.join("; "), vote_lost = state_files.vote_lost, log_lost = state_files.log_lost,
            "damaged raft state files set aside: the leader sends this member what it lost");
    }
    // An empty member's probe that a crash cut short runs again: a leader's first append wrote
    // `vote` meanwhile, but the member is no less empty (`amnesia::probing`).
    let pristine = is_pristine(&dir) || amnesia::probing(&dir);
    let snap_dir = dir.join("snap");
    std::fs::create_dir_all(&snap_dir).map_err(|e| E::io(&snap_dir, e))?;
    let first_seq = first_seq(&dir, wall_ms()).map_err(|e| E::io(&dir.join("incarnation"), e))?;
    let log = match log_store::LogStore::open(&dir, cfg.force_sync) {
        Err(E::Corrupt { file, offset, reason }) if file.starts_with(dir.join("log")) => {
            // The marker first: a crash between the two must not leave a clean, shorter log
            // that votes (a crash after the marker cuts again at the next start).
            let why = format!("its log was cut at a damaged record of {}", file.display());
            amnesia::mark(&dir, &amnesia::Marker { reason: why, floor_term: vote_term()? })?;
            CrashPoint::AmnesiaMarked.hit(cfg.failpoints.crash_at);
            let did = log_repair::cut_at(&dir, &file, offset, cfg.failpoints.crash_at)?;
            tracing::warn!(file = %file.display(), offset, %reason, did = %did.join("; "),
                "damaged raft log: cut at its first bad record; the leader sends this member what it lost");
            log_store::LogStore::open(&dir, cfg.force_sync)?
        }
        other => other?,
    };
    let (tree, applied, membership) = match state_machine::newest_valid(&snap_dir)? {
        Some((meta, tree)) => (tree, meta.last_log_id, meta.last_membership),
        None => (DataTree::new(), None, Membership::default()),
    };
    let log = if log.continues_from(applied) {
        log.with_crash_point(cfg.failpoints.crash_at)
    } else {
        drop(log);
        let why = "its log did not reach back to the newest snapshot it could read".to_owned();
        amnesia::mark(&dir, &amnesia::Marker { reason: why, floor_term: vote_term()? })?;
        let did = log_repair::set_aside_all(&dir, "unreachable")?;
        CrashPoint::LogSetAside.hit(cfg.failpoints.crash_at);
        tracing::warn!(snapshot = ?applied, did = %did.join("; "),
            "the raft log does not reach back to the snapshot this member has: log set aside; the leader sends a snapshot");
        log_store::LogStore::open(&dir, cfg.force_sync)?.with_crash_point(cfg.failpoints.crash_at)
    };
    if let Some(me) = cfg.ensemble.as_ref().map(|e| e.my_id) {
        if let Some(vote) = log_repair::demote_own_vote(&dir, me)? {
            tracing::info!(%vote, "this member led before it stopped: it leads again only after an election");
        }
    }
    let voter = cfg.ensemble.as_ref().is_some_and(|e| e.me().is_some_and(|s| !s.observer) && e.voters().count() > 1);
    let mut amnesia = match amnesia::load(&dir)? {
        Some(m) => amnesia::State::Lost(m),
        None if pristine && voter => amnesia::State::Probing,
        None => amnesia::State::Whole,
    };
    if amnesia == amnesia::State::Probing && !cfg.accept_data_loss {
        amnesia::mark_probing(&dir)?;
        CrashPoint::ProbeMarked.hit(cfg.failpoints.crash_at);
    }
    if let amnesia::State::Lost(m) = &amnesia {
        if cfg.accept_data_loss {
            tracing::warn!(reason = %m.reason, "zkr.acceptDataLoss: this member votes again although it lost log entries it may have acknowledged; writes only it and members that are gone held are lost");
            amnesia::clear(&dir)?;
            amnesia = amnesia::State::Whole;
        } else {
            tracing::warn!(reason = %m.reason, "this member lost log entries it may have acknowledged: it does not vote until a leader elected without it has caught it up (zkr.acceptDataLoss=true accepts the loss instead)");
        }
    } else if amnesia == amnesia::State::Probing && cfg.accept_data_loss {
        amnesia::clear_probing(&dir)?;
        amnesia = amnesia::State::Whole;
    }
    Ok(Recovered { first_seq, tree, applied, membership, log, snap_dir, amnesia })
}

fn wall_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// The first proposal sequence number of this run of the member. A member answers a client
/// when it applies an entry whose origin is (itself, seq); entries an earlier run of it
/// proposed can be applied after a restart (replayed past the saved commit point, or sent by
/// the leader to a member that lost its log), so a new run must never reuse their seqs, or
/// its clients get the replies of another run's requests (found by the fault suite: after a
/// restart, a new client was handed an old session's id, and shared that session). Each run
/// starts 2^40 above the last one, kept in `raft/incarnation` (fsync'd before any proposal),
/// and at least at wall-clock ms × 2^20 (a wiped data directory forgets the file).
pub fn first_seq(raft_dir: &Path, now_ms: u64) -> std::io::Result<u64> {
    let path = raft_dir.join("incarnation");
    // A damaged file is forgotten like a wiped one: the wall-clock floor keeps the seqs new.
    let last: Option<u64> = match log_store::read_small(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            tracing::warn!(file = %path.display(), "damaged incarnation file: a new one is written from the clock");
            None
        }
        other => other?,
    };
    let first = (now_ms << 20).max(last.map_or(0, |l| l.saturating_add(1 << 40))).max(1);
    log_store::write_small(&path, &first, true)?;
    Ok(first)
}

/// The most one AppendEntries carries, encoded (one larger entry goes out alone): the log store
/// hands openraft's replication no more than this at a time (`limited_get_log_entries`).
/// openraft gives each AppendEntries one heartbeat interval to be written, appended, fsync'd
/// and answered, and keeps one in flight per follower; 64 entries of 1 MB znodes (64 MB) never
/// made it in 200 ms, so the same RPC was sent again and again and the follower never caught
/// up (issue 43). At this size an append is a few tens of ms, and a follower under a burst
/// takes several per heartbeat.
pub const APPEND_MAX_BYTES: usize = 1 << 20;

/// openraft's settings for a member: its timing from ZooKeeper's settings (see `timing`).
pub fn raft_config(cfg: &Config, ens: &Ensemble) -> Result<openraft::Config, String> {
    let t = timing::Timing::of(cfg, ens);
    let c = openraft::Config {
        cluster_name: "zkr".into(),
        heartbeat_interval: t.heartbeat.as_millis() as u64,
        election_timeout_min: t.election_min.as_millis() as u64,
        election_timeout_max: t.election_max.as_millis() as u64,
        install_snapshot_timeout: t.catch_up.as_millis() as u64,
        // Snapshots follow snapCount in txns (`state_machine::SnapshotDue`), not in log entries.
        snapshot_policy: openraft::SnapshotPolicy::Never,
        // Followers further behind than this catch up from a snapshot.
        max_in_snapshot_log_to_keep: cfg.snap_count.min(1000),
        // An entry is a batch of up to `BATCH_MAX_BYTES` (or one larger command); an
        // AppendEntries carries at most 64 of them and at most `APPEND_MAX_BYTES`.
        max_payload_entries: 64,
        // A member campaigns only after a won pre-vote (`member::guard_elections` switches
        // this on then): openraft's own timer would depose a leader the others still follow.
        enable_elect: false,
        ..Default::default()
    };
    c.validate().map_err(|e| e.to_string())
}

/// True if `dir` holds no Raft state yet (a new member, or one whose data was wiped).
pub fn is_pristine(dir: &Path) -> bool {
    !dir.join("vote").exists()
}

#[cfg(test)]
mod tests {
    /// Issue 22, item 9: an operator who raises tickTime for a slow network gets members that
    /// are as much more patient (heartbeats and elections were clamped to 50–200 ms and 2 s).
    #[test]
    fn openraft_heartbeats_and_elections_follow_tick_time() {
        let ens = super::Ensemble {
            my_id: 1,
            members: Default::default(),
            init_limit: 10,
            sync_limit: 5,
            reconfig_enabled: false,
            dynamic_file: None,
            config_file: None,
        };
        let of = |tick| {
            let cfg = super::Config { tick_time_ms: tick, ..Default::default() };
            let c = super::raft_config(&cfg, &ens).unwrap();
            (c.heartbeat_interval, c.election_timeout_min, c.election_timeout_max, c.install_snapshot_timeout)
        };
        assert_eq!(of(2000), (200, 1000, 2000, 20_000), "ZooKeeper's usual tickTime");
        assert_eq!(of(8000), (800, 4000, 8000, 80_000), "four times the tick, four times as patient");
    }

    #[test]
    fn every_run_of_a_member_proposes_above_the_seqs_of_every_earlier_run() {
        let dir = std::env::temp_dir().join(format!("zkr-first-seq-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let a = super::first_seq(&dir, 1_000).unwrap();
        // Same clock, or a clock that went back: still above the run before.
        let b = super::first_seq(&dir, 1_000).unwrap();
        let c = super::first_seq(&dir, 10).unwrap();
        assert!(a >= 1_000 << 20);
        assert!(b >= a + (1 << 40) && c >= b + (1 << 40), "{a} {b} {c}");
        // A later clock wins once it is ahead.
        let d = super::first_seq(&dir, 1 << 40).unwrap();
        assert!(d >= (1u64 << 40) << 20 && d > c);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
