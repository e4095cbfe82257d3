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
//!  POST ?check=1 to all, then POST ─────► checks again (no participant answers, the plan fits
//!                                          its zoo.cfg), answers, then the server stops:
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
pub mod http;
pub mod tool;
pub mod zk_logs;

use crate::raft::members::{join_host_port, Ensemble};
use std::collections::BTreeSet;
use std::net::ToSocketAddrs;
use std::time::Duration;

/// What an observer was asked to become.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The observer whose tree seeds the ensemble.
    pub seed: u64,
    /// The observers that become the ensemble's members (every one a voter).
    pub members: BTreeSet<u64>,
}

/// Where the AdminServer leaves an accepted plan for `zkr serve` to carry out once stopped.
#[derive(Default)]
pub struct Slot {
    plan: parking_lot::Mutex<Option<Plan>>,
    ready: tokio::sync::Notify,
}

impl Slot {
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

/// How long a participant's port gets to accept a connection before it counts as stopped.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(500);

/// The ZooKeeper participants (voters of `ens`) that still accept connections on their quorum
/// port (only a leader listens there) or election port (every running participant does), as
/// `server.N (host:port, its quorum|election port)`. Blocking; every port is tried at once, so a
/// host that is down costs one `PROBE_TIMEOUT`, not one per port.
pub fn participants_answering(ens: &Ensemble) -> Vec<String> {
    let ports: Vec<(u64, String, &str)> = ens
        .members
        .iter()
        .filter(|(_, s)| !s.observer)
        .flat_map(|(id, spec)| {
            [(*id, spec.peer_addr(), "quorum"), (*id, join_host_port(&spec.host, spec.election_port), "election")]
        })
        .collect();
    let answered: Vec<bool> = std::thread::scope(|s| {
        let probes: Vec<_> = ports.iter().map(|(_, addr, _)| s.spawn(move || answers(addr))).collect();
        probes.into_iter().map(|p| p.join().unwrap_or(false)).collect()
    });
    let mut out: Vec<String> = Vec::new();
    let mut named = BTreeSet::new();
    for ((id, addr, what), up) in ports.iter().zip(answered) {
        if up && named.insert(*id) {
            out.push(format!("server.{id} ({addr}, its {what} port)"));
        }
    }
    out
}

fn answers(addr: &str) -> bool {
    let Ok(addrs) = addr.to_socket_addrs() else { return false };
    addrs.into_iter().any(|a| std::net::TcpStream::connect_timeout(&a, PROBE_TIMEOUT).is_ok())
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
