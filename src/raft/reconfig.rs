//! Dynamic reconfiguration (ZooKeeper 3.5+'s `reconfig` op) as openraft membership changes.
//!
//! The member a client asks checks what ZooKeeper's PrepRequestProcessor checks (ACL, syntax,
//! the `fromConfig` version) and turns the request into a `Plan`; the leader carries the plan
//! out: observers join as learners, participants join as learners first and become voters once
//! they have caught up (ZooKeeper requires a quorum of the new configuration to be connected:
//! a participant that does not catch up in time fails with NewConfigNoQuorum), leaving members
//! are removed.
//!
//! A reconfig is one step for the client, as ZooKeeper's is one proposal: the plan is logged as
//! a begin record (`CommandOp::ReconfigBegin`), which every member applies alike (refused if
//! another is pending or `fromConfig` is stale) and keeps with its tree, snapshots included.
//! The leader carries it out, a leader elected while it is pending finishes it, and its end
//! record (`CommandOp::ReconfigEnd`) writes `/zookeeper/config` with the new version, once.

use super::members::{parse_server, ServerSpec};
pub use super::plan::{Pending, Plan};
use super::types::{Membership, Raft};
use crate::config::CrashPoint;
use crate::proto::ErrorCode;
use openraft::ChangeMembers;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// `server.N=spec` entries of a joining or newMembers string (comma or newline separated).
fn servers(list: &str) -> Result<BTreeMap<u64, ServerSpec>, ErrorCode> {
    let mut out = BTreeMap::new();
    for item in list.split([',', '\n']).map(str::trim).filter(|s| !s.is_empty()) {
        let (key, value) = item.split_once('=').ok_or(ErrorCode::BadArguments)?;
        let id: u64 = key.trim().strip_prefix("server.").and_then(|n| n.parse().ok()).ok_or(ErrorCode::BadArguments)?;
        let spec = parse_server(value).map_err(|_| ErrorCode::BadArguments)?;
        if id == 0 || out.insert(id, spec).is_some() {
            return Err(ErrorCode::BadArguments);
        }
    }
    Ok(out)
}

/// Checks a reconfig against the current membership, as PrepRequestProcessor does: an
/// incremental one (joining and/or leaving) or a whole new member list, never both.
pub fn plan(
    joining: Option<&str>,
    leaving: Option<&str>,
    new_members: Option<&str>,
    current: &Membership,
) -> Result<Plan, ErrorCode> {
    let now: BTreeMap<u64, ServerSpec> = current.membership().nodes().map(|(id, n)| (*id, n.clone())).collect();
    let voters: BTreeSet<u64> = current.membership().voter_ids().collect();
    let mut plan = Plan::default();
    let incremental = joining.is_some() || leaving.is_some();
    match (incremental, new_members) {
        (true, Some(_)) => return Err(ErrorCode::BadArguments),
        (false, None) => return Err(ErrorCode::BadArguments),
        (false, Some(list)) => {
            let wanted = servers(list)?;
            for id in now.keys().filter(|id| !wanted.contains_key(id)) {
                plan.remove.insert(*id);
            }
            for (id, spec) in wanted {
                plan.name(id, spec, &now, &voters);
            }
        }
        (true, _) => {
            if let Some(list) = leaving {
                for id in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let id: u64 = id.parse().map_err(|_| ErrorCode::BadArguments)?;
                    if !now.contains_key(&id) {
                        return Err(ErrorCode::BadArguments);
                    }
                    plan.remove.insert(id);
                }
            }
            if let Some(list) = joining {
                for (id, spec) in servers(list)? {
                    if plan.remove.contains(&id) {
                        return Err(ErrorCode::BadArguments);
                    }
                    // Joining a server that is already a member changes its role or addresses
                    // (ZooKeeper's way: `reconfig -add server.5=…:participant` promotes observer 5).
                    plan.name(id, spec, &now, &voters);
                }
            }
        }
    }
    let stays_voter = |id: &u64| plan.change.get(id).map_or(voters.contains(id), |s| !s.observer);
    let voters_after = now.keys().filter(|id| !plan.remove.contains(id) && stays_voter(id)).count()
        + plan.add.values().filter(|s| !s.observer).count();
    if voters_after == 0 {
        return Err(ErrorCode::BadArguments);
    }
    Ok(plan)
}

impl Plan {
    /// Server `id` named with `spec` in the new configuration: added if it is not a member,
    /// changed if its role or an address differs, nothing if it is the same.
    fn name(&mut self, id: u64, spec: ServerSpec, now: &BTreeMap<u64, ServerSpec>, voters: &BTreeSet<u64>) {
        match now.get(&id) {
            Some(cur) if voters.contains(&id) != spec.observer && same_addresses(cur, &spec) => {}
            Some(_) => {
                self.change.insert(id, spec);
            }
            None => {
                self.add.insert(id, spec);
            }
        }
    }
}

fn same_addresses(a: &ServerSpec, b: &ServerSpec) -> bool {
    (&a.host, a.peer_port, a.election_port, &a.client) == (&b.host, b.peer_port, b.election_port, &b.client)
}

/// Why a reconfig on the leader did not complete.
pub enum Failed {
    /// An answer for the client (NewConfigNoQuorum, ReconfigInProgress, BadArguments).
    Code(ErrorCode),
    /// Leadership moved or was lost: the outcome is unknown.
    Unknown,
}

fn mapped<E: std::fmt::Display>(
    r: Result<openraft::raft::ClientWriteResponse<super::types::Zkr>, openraft::error::RaftError<u64, E>>,
) -> Result<u64, Failed> {
    use openraft::error::RaftError;
    match r {
        Ok(resp) => Ok(resp.log_id.index),
        Err(RaftError::APIError(e)) => {
            let text = e.to_string();
            tracing::info!("reconfig refused: {text}");
            if text.contains("forward") || text.contains("Forward") {
                Err(Failed::Unknown)
            } else if text.contains("in progress") || text.contains("InProgress") || text.contains("joint") {
                Err(Failed::Code(ErrorCode::ReconfigInProgress))
            } else {
                Err(Failed::Code(ErrorCode::BadArguments))
            }
        }
        Err(RaftError::Fatal(_)) => Err(Failed::Unknown),
    }
}

/// The membership now: every node with its spec, and the voters.
fn now(raft: &Raft) -> (BTreeMap<u64, ServerSpec>, BTreeSet<u64>) {
    let m = raft.metrics();
    let m = m.borrow();
    let ms = m.membership_config.membership();
    (ms.nodes().map(|(i, n)| (*i, n.clone())).collect(), ms.voter_ids().collect())
}

/// Carries out the pending reconfig `plan` on the leader; the log index of its last membership
/// entry. Every step looks at the membership as it is and does only what is left, so a leader
/// that takes over from one that died half-way finishes the same plan (the begin record in the
/// log is what it finishes; `crash` stops a test's leader after a step that changed something).
/// The caller holds the leader's reconfig lock, so the plan's steps never interleave with
/// another's.
pub async fn execute(raft: &Raft, plan: Plan, catch_up: Duration, crash: Option<CrashPoint>) -> Result<u64, Failed> {
    let mut last = raft.metrics().borrow().membership_config.log_id().as_ref().map_or(0, |l| l.index);
    // A leader that died between the two entries of a membership change (joint, then the new
    // configuration alone) left the joint one: finish it first.
    if super::types::is_joint(raft.metrics().borrow().membership_config.membership()) {
        tracing::info!("finishing the membership change a former leader left half-way");
        last = mapped(raft.change_membership(ChangeMembers::AddVoterIds(BTreeSet::new()), true).await)?;
    }
    let (nodes, voters) = now(raft);
    let observers: BTreeMap<u64, ServerSpec> =
        plan.add.iter().filter(|(i, s)| s.observer && !nodes.contains_key(i)).map(|(i, s)| (*i, s.clone())).collect();
    let participants: BTreeMap<u64, ServerSpec> =
        plan.add.iter().filter(|(i, s)| !s.observer && !voters.contains(i)).map(|(i, s)| (*i, s.clone())).collect();
    if !observers.is_empty() {
        last = mapped(raft.change_membership(ChangeMembers::AddNodes(observers.clone()), true).await)?;
    }
    for (id, spec) in &participants {
        match tokio::time::timeout(catch_up, raft.add_learner(*id, spec.clone(), true)).await {
            Ok(r) => last = mapped(r)?,
            Err(_) => {
                // Not caught up in time: ZooKeeper's "no quorum of the new config is connected".
                let ids: BTreeSet<u64> = participants.keys().copied().chain(observers.keys().copied()).collect();
                let _ = raft.change_membership(ChangeMembers::RemoveNodes(ids), false).await;
                return Err(Failed::Code(ErrorCode::NewConfigNoQuorum));
            }
        }
    }
    if !observers.is_empty() || participants.keys().any(|i| !nodes.contains_key(i)) {
        CrashPoint::ReconfigAdded.hit(crash);
    }
    // Existing members: new addresses first (a promoted observer is reached at its new one),
    // then the roles.
    let (nodes, voters) = now(raft);
    let readdressed: BTreeMap<u64, ServerSpec> = plan
        .change
        .iter()
        .filter(|(id, spec)| nodes.get(id).is_some_and(|cur| !same_addresses(cur, spec)))
        .map(|(id, spec)| (*id, spec.clone()))
        .collect();
    if !readdressed.is_empty() {
        last = mapped(raft.change_membership(ChangeMembers::SetNodes(readdressed), false).await)?;
        CrashPoint::ReconfigMoved.hit(crash);
    }
    let promoted = plan.change.iter().filter(|(_, s)| !s.observer).map(|(id, _)| *id);
    let new_voters: BTreeSet<u64> =
        participants.keys().copied().chain(promoted).filter(|id| !voters.contains(id)).collect();
    if !new_voters.is_empty() {
        last = mapped(raft.change_membership(ChangeMembers::AddVoterIds(new_voters), false).await)?;
        CrashPoint::ReconfigVoted.hit(crash);
    }
    let demoted: BTreeSet<u64> =
        plan.change.iter().filter(|(id, s)| s.observer && voters.contains(id)).map(|(id, _)| *id).collect();
    if !demoted.is_empty() {
        // Kept as learners: ZooKeeper's demoted participant goes on as an observer.
        last = mapped(raft.change_membership(ChangeMembers::RemoveVoters(demoted), true).await)?;
        CrashPoint::ReconfigDemoted.hit(crash);
    }
    let (nodes, voters) = now(raft);
    let gone_voters: BTreeSet<u64> = plan.remove.iter().filter(|id| voters.contains(id)).copied().collect();
    if !gone_voters.is_empty() {
        last = mapped(raft.change_membership(ChangeMembers::RemoveVoters(gone_voters), false).await)?;
    }
    let gone_learners: BTreeSet<u64> =
        plan.remove.iter().filter(|id| nodes.contains_key(id) && !voters.contains(id)).copied().collect();
    if !gone_learners.is_empty() {
        last = mapped(raft.change_membership(ChangeMembers::RemoveNodes(gone_learners), false).await)?;
    }
    if plan.remove.iter().any(|id| nodes.contains_key(id)) {
        CrashPoint::ReconfigRemoved.hit(crash);
    }
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn membership() -> Membership {
        let spec =
            |p| ServerSpec { host: "h".into(), peer_port: p, election_port: p + 1, observer: false, client: None };
        let nodes: BTreeMap<u64, ServerSpec> = [(1, spec(10)), (2, spec(20)), (3, spec(30))].into_iter().collect();
        let voters: BTreeSet<u64> = [1, 2, 3].into_iter().collect();
        Membership::new(None, openraft::Membership::new(vec![voters], nodes))
    }

    #[test]
    fn plans_follow_zookeepers_checks() {
        let m = membership();
        let p = plan(Some("server.100=0.0.0.0:1:2:observer;0.0.0.0:3"), None, None, &m).unwrap();
        assert!(p.add[&100].observer);
        assert_eq!(p.add[&100].config_value(), "0.0.0.0:1:2:observer;0.0.0.0:3");
        assert_eq!(plan(None, Some("3"), None, &m).unwrap().remove, [3].into_iter().collect());
        assert_eq!(plan(Some("some thing"), None, None, &m).unwrap_err(), ErrorCode::BadArguments);
        assert_eq!(plan(None, Some("9"), None, &m).unwrap_err(), ErrorCode::BadArguments);
        assert_eq!(plan(None, Some("1,2,3"), None, &m).unwrap_err(), ErrorCode::BadArguments);
        assert_eq!(plan(None, None, None, &m).unwrap_err(), ErrorCode::BadArguments);
        let p = plan(None, None, Some("server.1=h:10:11,server.2=h:20:21,server.4=h:40:41"), &m).unwrap();
        assert_eq!(p.remove, [3].into_iter().collect());
        assert_eq!(p.add.keys().copied().collect::<Vec<_>>(), vec![4]);
    }

    /// Issue 22 item 7: an existing server named with another role or address is changed, as in
    /// ZooKeeper (it answered BadArguments, "not supported yet").
    #[test]
    fn a_reconfig_changes_the_role_or_address_of_an_existing_member() {
        let m = membership();
        let p = plan(Some("server.3=h:30:31:observer"), None, None, &m).unwrap();
        assert!(p.add.is_empty() && p.remove.is_empty());
        assert!(p.change[&3].observer, "participant 3 becomes an observer");
        let p = plan(None, None, Some("server.1=h:10:11,server.2=h:20:21,server.3=h2:30:31"), &m).unwrap();
        assert_eq!(p.change[&3].host, "h2", "member 3 moves");
        let p = plan(Some("server.2=h:20:21;0.0.0.0:2182"), None, None, &m).unwrap();
        assert_eq!(p.change[&2].client, Some(("0.0.0.0".to_string(), 2182)), "a new client address");
        assert!(plan(Some("server.1=h:10:11"), None, None, &m).unwrap().change.is_empty(), "the same spec: no change");
        // Demoting every participant would leave no voter.
        let all = "server.1=h:10:11:observer,server.2=h:20:21:observer,server.3=h:30:31:observer";
        assert_eq!(plan(None, None, Some(all), &m).unwrap_err(), ErrorCode::BadArguments);
    }
}
