//! What operators can ask a running server: the figures behind the four-letter words, the
//! AdminServer commands and `/metrics`, gathered once here and rendered by each of them.
//!
//! It reads the counters in `stats` directly and asks the core (one message) for what only the
//! core knows: the tree's size, sessions, ephemerals and watches. It never changes state except
//! for the counter resets (`srst`, `crst`).

use super::core::{CoreMsg, CoreStats, Inspection};
use super::stats::ServerStats;
use crate::config::Config;
use crate::server::core::replicated::Role;
use crate::session::ConnId;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc;

/// The version string clients and exporters parse (go-zookeeper's FLWSrvr expects
/// `Zookeeper version: <v>, built on <date>`).
pub const VERSION: &str = concat!("3.9.0-zkr-", env!("CARGO_PKG_VERSION"), ", built on 01/01/2026 00:00 GMT");

/// mntr's keys in ZooKeeper 3.8's order (without `zk_`), as Debian's 3.8.0 prints them in
/// standalone mode; exporters look them up by name, people diff them by position.
const MNTR_KEYS: &str = include_str!("mntr_keys.txt");
/// The same on an ensemble's followers and observers (Debian's 3.8.0, a 3-member ensemble):
/// `peer_state` and `quorum_size` join in.
const MNTR_KEYS_FOLLOWER: &str = include_str!("mntr_keys_follower.txt");
/// The same on its leader: the proposal sizes, synced learners, pending syncs, leader uptime.
/// (Its per-learner `learner_handler_qp_*` keys are left out: zkr has no learner handlers.)
const MNTR_KEYS_LEADER: &str = include_str!("mntr_keys_leader.txt");

/// A value in mntr / the monitor command: ZooKeeper prints longs, doubles and strings.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    Str(String),
}

impl Value {
    /// As ZooKeeper prints it in text (`Double.toString` style: `0.0`, `2.5`).
    pub fn text(&self) -> String {
        match self {
            Value::Int(v) => v.to_string(),
            Value::Float(v) => java_double(*v),
            Value::Str(s) => s.clone(),
        }
    }
}

/// A double as ZooKeeper shows averages: rounded to 4 decimals, always with a decimal point.
pub fn java_double(v: f64) -> String {
    let r = (v * 10_000.0).round() / 10_000.0;
    if r.fract() == 0.0 {
        format!("{r:.1}")
    } else {
        format!("{r}")
    }
}

/// One connection as `cons` and `/commands/connections` show it.
#[derive(Debug, Clone)]
pub struct ConnView {
    pub id: ConnId,
    pub peer: std::net::SocketAddr,
    pub outstanding: usize,
    pub received: u64,
    pub sent: u64,
    pub session: i64,
    pub last_op: &'static str,
    pub established_ms: i64,
    pub timeout_ms: i64,
    pub last_cxid: i64,
    pub last_zxid: i64,
    pub last_resp_ms: u64,
    pub last_latency: i64,
    pub min_latency: i64,
    pub avg_latency: i64,
    pub max_latency: i64,
}

/// The handle the four-letter words and the admin server share.
pub struct Ops {
    pub cfg: Arc<Config>,
    /// Weak, so that operator views never keep the core alive at shutdown.
    pub core: mpsc::WeakSender<CoreMsg>,
    pub stats: Arc<ServerStats>,
    /// An ensemble member's Raft side; `None` standalone.
    pub member: Option<MemberView>,
    /// An observer of a ZooKeeper ensemble: whether it is synced with the leader.
    pub observer: Option<Arc<crate::zab::follow::Status>>,
}

/// What the operator views read of an ensemble member.
#[derive(Clone)]
pub struct MemberView {
    pub status: Arc<crate::raft::member::MemberStatus>,
    pub raft: crate::raft::types::Raft,
}

/// The leader's view of its followers (mntr's quorum keys).
#[derive(Debug, Clone, Default)]
pub struct QuorumView {
    pub learners: usize,
    pub synced_followers: usize,
    pub synced_observers: usize,
    pub quorum_size: usize,
}

impl Ops {
    /// `srst` and the AdminServer's `stat_reset`: the server's figures and, on an ensemble
    /// member, the longest gap between its leader's heartbeats.
    pub fn reset_stats(&self) {
        self.stats.reset();
        if let Some(m) = &self.member {
            m.status.leader_gap.reset();
        }
    }

    /// zkr's addition to mntr on an ensemble member: the longest time it went without hearing
    /// from a leader since the last `srst` (`raft::member::LeaderGap`).
    pub fn leader_gap_max_ms(&self) -> Option<u64> {
        self.member.as_ref().map(|m| m.status.leader_gap.max_ms())
    }

    /// Milliseconds since this member became leader (0 on other members).
    pub fn leader_uptime_ms(&self) -> u64 {
        let Some(m) = &self.member else { return 0 };
        let since = m.status.leader_since.load(Ordering::Acquire);
        if since == 0 || m.status.role.lock().0 != Role::Leader {
            return 0;
        }
        crate::session::mono_ms().saturating_sub(since)
    }

    /// `srvr`'s Mode: standalone, leader, follower, observer (or looking: not serving).
    pub fn mode(&self) -> &'static str {
        if let Some(o) = &self.observer {
            // A ZooKeeper observer that is not synced is not serving, like a LOOKING peer.
            return if o.is_synced() { "observer" } else { "looking" };
        }
        match &self.member {
            None => "standalone",
            // Cut off from the quorum with read-only mode on: ReadOnlyZooKeeperServer's state.
            Some(m) if self.cfg.read_only_enabled && m.status.role.lock().0 == Role::Looking => "read-only",
            Some(m) => m.status.role.lock().0.name(),
        }
    }

    /// False while an ensemble member has no leader: ZooKeeper then answers the words that need
    /// a running server with "not currently serving requests".
    pub fn serving(&self) -> bool {
        self.mode() != "looking"
    }

    /// The leader's followers and observers, and how many are caught up (within one heartbeat
    /// batch of the leader's log); zeros on other members.
    pub fn quorum(&self) -> QuorumView {
        let Some(m) = &self.member else { return QuorumView::default() };
        let metrics = m.raft.metrics().borrow().clone();
        let voters: Vec<u64> = metrics.membership_config.membership().voter_ids().collect();
        let mut q = QuorumView { quorum_size: voters.len(), ..QuorumView::default() };
        if metrics.state != openraft::ServerState::Leader {
            return q;
        }
        let last = metrics.last_log_index.unwrap_or(0);
        for (id, matched) in metrics.replication.iter().flatten() {
            if *id == metrics.id {
                continue;
            }
            q.learners += 1;
            let synced = matched.is_some_and(|l| last.saturating_sub(l.index) <= 1000);
            if synced {
                if voters.contains(id) {
                    q.synced_followers += 1;
                } else {
                    q.synced_observers += 1;
                }
            }
        }
        q
    }

    /// The core's counters; zeros if the core is gone (shutting down).
    pub async fn core_stats(&self) -> CoreStats {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let Some(core) = self.core.upgrade() else {
            return CoreStats::default();
        };
        if core.send(CoreMsg::Stats(tx)).await.is_err() {
            return CoreStats::default();
        }
        rx.await.unwrap_or_default()
    }

    pub async fn inspect(&self) -> Inspection {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let Some(core) = self.core.upgrade() else {
            return Inspection::default();
        };
        if core.send(CoreMsg::Inspect(tx)).await.is_err() {
            return Inspection::default();
        }
        rx.await.unwrap_or_default()
    }

    /// The ACL of the node at `path` as the core has it now; None if there is no such node or
    /// the core is gone (shutting down).
    pub async fn acl_of(&self, path: &str) -> Option<Vec<crate::proto::Acl>> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let core = self.core.upgrade()?;
        core.send(CoreMsg::AclOf(path.to_owned(), tx)).await.ok()?;
        rx.await.ok().flatten()
    }

    /// A copy of the tree at one zxid, and (standalone) the counter that says when that zxid is
    /// durable; None if the core is gone (shutting down).
    pub async fn snapshot_copy(&self) -> Option<(crate::tree::DataTree, Option<super::core::Durable>)> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let core = self.core.upgrade()?;
        core.send(CoreMsg::SnapshotCopy(tx)).await.ok()?;
        rx.await.ok()
    }

    /// Replaces the tree with `tree` (`core::restore`); its new zxid, or why not. None if the
    /// core is gone (shutting down).
    pub async fn restore(
        &self,
        tree: crate::tree::DataTree,
        last_processed: Option<crate::txn::Zxid>,
        raw: bytes::Bytes,
    ) -> Option<Result<crate::txn::Zxid, super::core::restore::RestoreError>> {
        let (reply, rx) = tokio::sync::oneshot::channel();
        let core = self.core.upgrade()?;
        core.send(CoreMsg::Restore { tree: Box::new(tree), last_processed, raw, reply }).await.ok()?;
        rx.await.ok()
    }

    /// Asks the core for one of its own snapshots now (as ZooKeeper's `snapshot` command leaves
    /// one on disk).
    pub async fn snapshot_now(&self) {
        if let Some(core) = self.core.upgrade() {
            let _ = core.send(CoreMsg::Snapshot).await;
        }
    }

    /// Every connection, oldest first.
    pub fn connections(&self) -> Vec<ConnView> {
        let mut v: Vec<ConnView> = self
            .stats
            .conns
            .iter()
            .map(|e| {
                let c = e.value();
                let last = c.last.lock().clone();
                ConnView {
                    id: *e.key(),
                    peer: c.peer,
                    outstanding: c.outstanding(),
                    received: c.received.load(Ordering::Relaxed),
                    sent: c.sent.load(Ordering::Relaxed),
                    session: c.session.load(Ordering::Relaxed),
                    last_op: last.op,
                    established_ms: c.established_ms.load(Ordering::Relaxed),
                    timeout_ms: c.timeout_ms.load(Ordering::Relaxed),
                    last_cxid: last.cxid,
                    last_zxid: last.zxid,
                    last_resp_ms: last.resp_ms,
                    last_latency: last.latency_ms,
                    min_latency: c.latency.min(),
                    // ServerCnxn keeps an integer average.
                    avg_latency: if c.latency.count() == 0 { 0 } else { c.latency.total() / c.latency.count() },
                    max_latency: c.latency.max(),
                }
            })
            .collect();
        v.sort_by_key(|c| c.id);
        v
    }

    /// Where snapshots and the log live, as `conf` shows dataDir / dataLogDir.
    pub fn dirs(&self) -> (std::path::PathBuf, std::path::PathBuf) {
        let l = crate::storage::Layout::new(&self.cfg);
        (l.snap_dir, l.log_dir)
    }

    /// Bytes in the snapshot directory and in the log directory (`dirs`; ZooKeeper sums the
    /// files of its version-2 directories the same way).
    pub fn dir_sizes(&self) -> (u64, u64) {
        let (snap, log) = self.dirs();
        (dir_size(&snap), dir_size(&log))
    }

    pub fn uptime_ms(&self) -> u64 {
        self.stats.elapsed_ms()
    }

    /// mntr / monitor: every key ZooKeeper 3.8 prints, in its order, with zkr's values. Keys of
    /// things zkr does not have (quorum, TLS, throttling, caches) are 0 as on an idle
    /// standalone ZooKeeper.
    pub fn monitor(&self, core: &CoreStats) -> Vec<(&'static str, Value)> {
        let s = &self.stats;
        let (fds_open, fds_max) = fd_counts();
        let mode = self.mode();
        let quorum = self.quorum();
        let keys = match mode {
            "standalone" => MNTR_KEYS,
            "leader" => MNTR_KEYS_LEADER,
            _ => MNTR_KEYS_FOLLOWER,
        };
        keys.lines()
            .filter(|k| !k.is_empty())
            .map(|k| {
                let v = match k {
                    "version" => Value::Str(VERSION.to_owned()),
                    "server_state" => Value::Str(mode.to_owned()),
                    // QuorumPeer's state and its ZAB phase; a serving member is in broadcast.
                    "peer_state" => Value::Str(
                        match mode {
                            "leader" => "leading - broadcast",
                            "follower" => "following - broadcast",
                            "observer" => "observing - broadcast",
                            "read-only" => "read-only",
                            _ => "looking",
                        }
                        .to_owned(),
                    ),
                    "quorum_size" => Value::Int(quorum.quorum_size as i64),
                    "learners" => Value::Int(quorum.learners as i64),
                    "synced_followers" => Value::Int(quorum.synced_followers as i64),
                    "synced_observers" => Value::Int(quorum.synced_observers as i64),
                    "synced_non_voting_followers" | "pending_syncs" => Value::Int(0),
                    // zkr does not measure proposal sizes: -1 is ZooKeeper's "none yet".
                    "last_proposal_size" | "min_proposal_size" | "max_proposal_size" => Value::Int(-1),
                    "leader_uptime" => Value::Int(self.leader_uptime_ms() as i64),
                    "ephemerals_count" => Value::Int(core.ephemerals as i64),
                    // Every open connection, the asking one included, as ZooKeeper counts them.
                    "num_alive_connections" => Value::Int(s.conns.len() as i64),
                    "avg_latency" => Value::Float(s.latency.avg()),
                    "min_latency" => Value::Int(s.latency.min()),
                    "max_latency" => Value::Int(s.latency.max()),
                    "outstanding_requests" => Value::Int(s.outstanding.load(Ordering::Relaxed).max(0)),
                    "znode_count" => Value::Int(core.znodes as i64),
                    "global_sessions" => Value::Int(core.sessions as i64),
                    "packets_sent" => Value::Int(s.packets_sent.load(Ordering::Relaxed) as i64),
                    "packets_received" => Value::Int(s.packets_received.load(Ordering::Relaxed) as i64),
                    "watch_count" => Value::Int(core.watches as i64),
                    "auth_failed_count" => Value::Int(s.auth_failed.load(Ordering::Relaxed) as i64),
                    "max_file_descriptor_count" => Value::Int(fds_max),
                    "open_file_descriptor_count" => Value::Int(fds_open),
                    "approximate_data_size" => Value::Int(core.data_size as i64),
                    "uptime" => Value::Int(self.uptime_ms() as i64),
                    "bytes_received_count" => Value::Int(s.bytes_received.load(Ordering::Relaxed) as i64),
                    "connection_drop_probability" => Value::Float(0.0),
                    "digest_mismatches_count" => Value::Int(core.digest_mismatches as i64),
                    "last_client_response_size" | "max_client_response_size" | "min_client_response_size" => {
                        Value::Int(-1)
                    }
                    k => summary(s, k).unwrap_or(if k.starts_with("avg_") { Value::Float(0.0) } else { Value::Int(0) }),
                };
                (k, v)
            })
            .collect()
    }
}

/// The summary keys zkr measures: `fsynctime`, `readlatency`, `updatelatency`.
fn summary(s: &ServerStats, key: &str) -> Option<Value> {
    let (stat, name) = key.split_once('_')?;
    let (m, sample) = match name {
        "fsynctime" => (&s.fsync, None),
        "readlatency" => (&s.read_latency.stats, Some(&s.read_latency.sample)),
        "updatelatency" => (&s.update_latency.stats, Some(&s.update_latency.sample)),
        _ => return None,
    };
    let q = match stat {
        "avg" => return Some(Value::Float(m.avg())),
        "min" => return Some(Value::Int(m.min())),
        "max" => return Some(Value::Int(m.max())),
        "cnt" => return Some(Value::Int(m.count())),
        "sum" => return Some(Value::Int(m.total())),
        "p50" => 0.5,
        "p95" => 0.95,
        "p99" => 0.99,
        "p999" => 0.999,
        _ => return None,
    };
    sample.map(|r| Value::Int(r.quantiles(&[q])[0]))
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().filter_map(|e| e.metadata().ok()).filter(|m| m.is_file()).map(|m| m.len()).sum())
        .unwrap_or(0)
}

/// Open file descriptors of this process and its limit (what the JVM's UnixOperatingSystemMXBean reports).
fn fd_counts() -> (i64, i64) {
    let open = std::fs::read_dir("/proc/self/fd").map(|d| d.count() as i64).unwrap_or(-1);
    let max = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(-1);
    (open, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_like_java() {
        assert_eq!(java_double(0.0), "0.0");
        assert_eq!(java_double(2.0), "2.0");
        assert_eq!(java_double(20.333333), "20.3333");
        assert_eq!(java_double(0.5), "0.5");
    }

    #[test]
    fn mntr_keys_start_like_zookeeper() {
        let keys: Vec<&str> = MNTR_KEYS.lines().take(3).collect();
        assert_eq!(keys, ["version", "server_state", "ephemerals_count"]);
    }
}
