//! When this member may stand for election (see `prevote`): openraft's elections stay switched
//! off while this member hears its leader, while it may have lost entries it acknowledged, and
//! while a pre-vote finds no quorum that would vote for it; they are switched on only for as
//! long as a pre-vote is won. Direct elections (`elect_after_leader_loss`, a seed's first
//! election, `initialize`) do not pass through here: each knows the leader is gone or never was.

use super::*;
use crate::raft::prevote::{self, Hearing};
use std::collections::{BTreeSet, HashMap};

/// What this member would answer a candidate's pre-vote with (`prevote::answer` decides).
pub(super) fn hearing(raft: &Raft, status: &MemberStatus, log: &LogStore) -> Hearing {
    let now = crate::session::mono_ms();
    let leads_acked_ms_ago = super::quorum_ack_ms_ago(raft, status);
    let contact = status.leader_contact.load(Ordering::Acquire);
    let lost = status.leader_lost.load(Ordering::Acquire);
    let leader_heard_ms_ago = (contact != 0 && !lost).then(|| now.saturating_sub(contact));
    // A member that does not see itself as a voter answers as its real vote would, which
    // openraft gives whatever the membership: a member being added may not have the entry that
    // adds it yet, and the joint membership's new half needs it. Where the candidate's
    // membership does not count it, its yes counts for nothing (`prevote::won`).
    let refuses = status
        .amnesia
        .active()
        .then_some("it may have lost entries it acknowledged and votes for nobody until a leader catches it up");
    Hearing { leads_acked_ms_ago, leader_heard_ms_ago, last_log: log.last_log_id(), refuses }
}

/// Switches openraft's elections on and off for this member, every heartbeat, until `stop`.
/// `started`: `mono_ms` when the member started (a member that never heard a leader counts its
/// silence from there, so a restarted one waits one election timeout for the leader's appends).
pub async fn guard_elections(
    raft: Raft,
    link: Link,
    status: Arc<MemberStatus>,
    log: LogStore,
    started: u64,
    stop: CancellationToken,
) {
    let timing = link.timing;
    let election_min = timing.election_min.as_millis() as u64;
    let mut every = tokio::time::interval(timing.heartbeat);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut conns: HashMap<MemberId, PeerStream> = HashMap::new();
    let mut on = false;
    let mut denial_logged: Option<std::time::Instant> = None;
    raft.runtime_config().elect(false);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = every.tick() => {}
        }
        let (me, leads, configs, voter_addrs) = {
            let m = raft.metrics();
            let m = m.borrow();
            let membership = m.membership_config.membership();
            let configs: Vec<BTreeSet<MemberId>> = membership.get_joint_config().clone();
            let addrs: Vec<(MemberId, String)> = membership
                .voter_ids()
                .filter(|v| *v != m.id)
                .filter_map(|v| membership.get_node(&v).map(|n| (v, n.peer_addr())))
                .collect();
            (m.id, m.state == openraft::ServerState::Leader, configs, addrs)
        };
        if leads || !configs.iter().any(|c| c.contains(&me)) {
            // A leader does not campaign; a learner cannot.
            continue;
        }
        let mine = hearing(&raft, &status, &log);
        let silent_for = mine.leader_heard_ms_ago.unwrap_or(crate::session::mono_ms().saturating_sub(started));
        let may = if mine.refuses.is_some() || silent_for < election_min {
            false
        } else {
            let answers = ask_all(&link, &mut conns, &voter_addrs, mine.last_log).await;
            let mut granted: BTreeSet<MemberId> = [me].into();
            let mut denied = Vec::new();
            for (id, a) in answers {
                match a {
                    Ok(()) => {
                        granted.insert(id);
                    }
                    Err(why) => denied.push(format!("member {id}: {why}")),
                }
            }
            let won = prevote::won(&configs, &granted);
            if !won && denial_logged.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                denial_logged = Some(std::time::Instant::now());
                tracing::info!(
                    silent_ms = silent_for,
                    "no leader heard, but no quorum would vote for this member: not standing for election ({})",
                    denied.join("; ")
                );
            }
            won
        };
        if may != on {
            on = may;
            raft.runtime_config().elect(on);
            tracing::debug!(on, "openraft's elections switched");
        }
    }
}

/// Every other voter's answer to this member's pre-vote, asked at once, each within the shorter
/// of a peer connect and the shortest election timeout. A member that cannot be asked denies;
/// one of an older release, which closes the connection on the request it cannot read, grants
/// (it would have voted as before pre-vote existed).
async fn ask_all(
    link: &Link,
    conns: &mut HashMap<MemberId, PeerStream>,
    voters: &[(MemberId, String)],
    last: Option<LogId>,
) -> Vec<(MemberId, Result<(), String>)> {
    let wait = link.timing.connect.min(link.timing.election_min);
    let asks = voters.iter().map(|(id, addr)| {
        let conn = conns.remove(id);
        async move {
            let (answer, conn) = match tokio::time::timeout(wait, ask(link, addr, conn, last)).await {
                Ok(r) => r,
                Err(_) => (Err(format!("no answer in {wait:?}")), None),
            };
            (*id, answer, conn)
        }
    });
    let mut out = Vec::new();
    for (id, answer, conn) in futures::future::join_all(asks).await {
        if let Some(c) = conn {
            conns.insert(id, c);
        }
        out.push((id, answer));
    }
    out
}

/// One voter's answer, on `conn` when it is still open (a new connection otherwise: a kept one
/// may have been closed by the voter's restart), and the connection to keep for the next ask.
async fn ask(
    link: &Link,
    addr: &str,
    mut conn: Option<PeerStream>,
    last: Option<LogId>,
) -> (Result<(), String>, Option<PeerStream>) {
    loop {
        let reused = conn.is_some();
        let mut s = match conn.take() {
            Some(s) => s,
            None => match link.connect(addr, Kind::Rpc).await {
                Ok(s) => s,
                Err(e) => return (Err(format!("unreachable: {e}")), None),
            },
        };
        let answer = match wire::write_frame(&mut s, &RpcRequest::PreVote(last)).await {
            Ok(()) => wire::read_frame::<_, RpcResponse>(&mut s).await,
            Err(e) => Err(e),
        };
        match answer {
            Ok(RpcResponse::PreVote(a)) => return (a, Some(s)),
            Ok(_) => return (Err("it answered another RPC".into()), None),
            Err(_) if reused => continue,
            Err(wire::PeerError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => return (Ok(()), None),
            Err(e) => return (Err(format!("unreachable: {e}")), None),
        }
    }
}
