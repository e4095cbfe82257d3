//! Takeover (issue 24, item 2): the zkr observers of a ZooKeeper ensemble whose participants
//! have been stopped become a zkr (openraft) ensemble, seeded from the most advanced of them.
//!
//! ```text
//!  zkr takeover --config zoo.cfg              every zkr observer (AdminServer, /zkr/takeover)
//!  ZooKeeper participants answer?  ─ yes ─► refuse, naming them
//!  GET  state of every observer    ──────► myid, last applied zxid, following a leader?
//!       (one silent or following ─► refuse: it may hold txns the others lack / ZooKeeper lives)
//!  seed = the highest zxid
//!  ZooKeeper's logs (--zookeeper-data) ──► refuse if a majority may have committed more
//!                                          than the seed holds (`zk_logs`)
//!  POST ?check=1 to all, then POST ─────► authenticated (ALL on /, `admin::auth`), each observer
//!  (body: what ZooKeeper's logs hold)      checks again itself (`guard`: no leader, participants
//!                                          stopped or long silent, no observer reaches one, the
//!                                          seed most advanced and holding what the logs may have
//!                                          committed); the accept only after its check, then the
//!                                          server stops:
//!                                          `convert::become_member` keeps the seed's snapshot (or
//!                                          sets a member's observed state aside and promises to
//!                                          wait for the seed), rewrites zoo.cfg into the zkr
//!                                          ensemble's (zoo.cfg.observer keeps the old one) and
//!                                          re-executes `zkr serve` with the same arguments
//!  srvr on the members until one leads ◄── the seed seeds the ensemble (`raft::seed`): every
//!                                          znode and session, zxids above ZooKeeper's epoch
//! ```
//!
//! Clients of the observers lose their connection for the restart and re-attach with their
//! ZooKeeper session ids and passwords (kept with every session the observer saw); each
//! session starts with a full timeout in the new ensemble.

pub mod convert;
pub mod guard;
pub mod http;
pub mod probe;
pub mod tool;
pub mod zk_logs;

use crate::raft::members::Ensemble;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// How long a check (`POST ?check=1`) stays good for the accept that must follow it.
pub const CHECK_VALID_FOR: Duration = Duration::from_secs(30);

/// What an observer was asked to become.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The observer whose tree seeds the ensemble.
    pub seed: u64,
    /// The observers that become the ensemble's members (every one a voter).
    pub members: BTreeSet<u64>,
}

/// Where the AdminServer leaves an accepted plan for `zkr serve` to carry out once stopped, and
/// the plan it last checked: an accept must follow a check of the same plan and log proof
/// within `CHECK_VALID_FOR` (the check asks every other observer; by the accept the members
/// asked before the seed have stopped being observers, so only the check can ask them).
#[derive(Default)]
pub struct Slot {
    plan: parking_lot::Mutex<Option<Plan>>,
    ready: tokio::sync::Notify,
    checked: parking_lot::Mutex<Option<(Plan, guard::LogProof, Instant)>>,
}

impl Slot {
    /// Records that `plan` with `proof` passed every check now.
    pub(crate) fn checked(&self, plan: &Plan, proof: &guard::LogProof) {
        *self.checked.lock() = Some((plan.clone(), proof.clone(), Instant::now()));
    }

    /// Whether `plan` with `proof` passed every check within `CHECK_VALID_FOR`.
    pub(crate) fn was_checked(&self, plan: &Plan, proof: &guard::LogProof) -> bool {
        self.checked
            .lock()
            .as_ref()
            .is_some_and(|(p, l, at)| p == plan && l == proof && at.elapsed() <= CHECK_VALID_FOR)
    }

    /// Takes `plan` unless one was taken before.
    pub(crate) fn offer(&self, plan: Plan) -> bool {
        let mut p = self.plan.lock();
        if p.is_some() {
            return false;
        }
        *p = Some(plan);
        self.ready.notify_one();
        true
    }

    /// Waits until a plan has been accepted.
    pub async fn accepted(&self) -> Plan {
        loop {
            let notified = self.ready.notified();
            if let Some(p) = self.plan.lock().clone() {
                return p;
            }
            notified.await;
        }
    }
}

/// Where observer `id`'s AdminServer listens: the host of its `server.N` line, the AdminServer
/// port every observer shares (zoo.cfg's `admin.serverPort`).
pub(crate) fn admin_addr(ens: &Ensemble, id: u64, port: u16) -> String {
    let host = ens.members.get(&id).map_or("127.0.0.1", |s| s.host.as_str());
    crate::raft::members::join_host_port(host, port)
}

/// The observers named by the config (`server.N=...:observer`).
pub fn observers(ens: &Ensemble) -> BTreeSet<u64> {
    ens.members.iter().filter(|(_, s)| s.observer).map(|(id, _)| *id).collect()
}

/// Why an observer refuses a plan: checked on the observer itself, whoever sent it.
pub fn plan_error(ens: &Ensemble, plan: &Plan) -> Option<String> {
    let observers = observers(ens);
    if !plan.members.contains(&ens.my_id) {
        return Some(format!("this observer (server.{}) is not among the plan's members", ens.my_id));
    }
    if !plan.members.contains(&plan.seed) {
        return Some(format!("the seed server.{} is not among the plan's members", plan.seed));
    }
    if let Some(id) = plan.members.iter().find(|m| !observers.contains(m)) {
        return Some(format!("server.{id} is not an observer in this server's zoo.cfg"));
    }
    None
}

/// `members` as the query parameter carries them: `9,10,11`.
pub(crate) fn members_param(members: &BTreeSet<u64>) -> String {
    members.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

pub(crate) fn parse_members(s: &str) -> Option<BTreeSet<u64>> {
    s.split(',').map(|m| m.trim().parse().ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_round_trip_through_the_query_parameter() {
        let m: BTreeSet<u64> = [9, 10, 11].into();
        assert_eq!(parse_members(&members_param(&m)), Some(m));
        assert_eq!(parse_members("9,x"), None);
    }
}
