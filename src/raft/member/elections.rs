//! When this member may stand for election (see `prevote`): openraft's elections stay switched
//! off while this member hears its leader, while it may have lost entries it acknowledged, and
//! while a pre-vote finds no quorum that would vote for it; they are switched on only for as
//! long as a pre-vote is won. The election at once after a dead leader (`elect_after_leader_loss`)
//! asks first too (`leader_gone_for_a_quorum`): a leader whose stream ended and whose port
//! refuses may be dead, or only unreachable from this member. A seed's first election and
//! `initialize` do not pass through here: there was no leader yet.

use super::*;
use crate::raft::prevote::{self, Answer, Hearing};
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
            let granted = quorum_of(me, &answers, |a| a.vote.is_ok());
            let won = prevote::won(&configs, &granted);
            if !won && denial_logged.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                denial_logged = Some(std::time::Instant::now());
                tracing::info!(
                    silent_ms = silent_for,
                    "no leader heard, but no quorum would vote for this member: not standing for election ({})",
                    denials(&answers)
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

/// This member and the voters whose answer passes `counts`.
fn quorum_of(me: MemberId, answers: &[(MemberId, Asked)], counts: impl Fn(&Answer) -> bool) -> BTreeSet<MemberId> {
    let mut set: BTreeSet<MemberId> = [me].into();
    set.extend(answers.iter().filter(|(_, a)| matches!(a, Asked::Answered(a) if counts(a))).map(|(id, _)| *id));
    set
}

/// Who did not grant, and why, for the log.
fn denials(answers: &[(MemberId, Asked)]) -> String {
    let why = |a: &Asked| match a {
        Asked::Answered(Answer { vote: Err(d), .. }) => Some(d.to_string()),
        Asked::Answered(_) => None,
        Asked::Unreachable(e) => Some(e.clone()),
    };
    answers.iter().filter_map(|(id, a)| why(a).map(|w| format!("member {id}: {w}"))).collect::<Vec<_>>().join("; ")
}

/// Whether a quorum of every voter set of this member's membership (two while a change is
/// joint), itself included, hears no leader: asked again every 20 ms while `leaderless` holds
/// here, for up to one shortest election timeout. A leader that died is seen gone by every
/// member it streamed to within milliseconds; one that only this member cannot reach (a link
/// that resets, a firewall that refuses) is still heard by the others (the fault suite's
/// refused-by-leader nemesis: that member's term deposed a leader the others followed). Votes
/// are not asked for: a survivor whose log is behind must campaign too (see `prevote`).
pub(super) async fn leader_gone_for_a_quorum(
    raft: &Raft,
    link: &Link,
    log: &LogStore,
    leaderless: impl Fn(&Raft) -> bool,
) -> bool {
    let mut conns = HashMap::new();
    let until = tokio::time::Instant::now() + link.timing.election_min;
    loop {
        if !leaderless(raft) {
            return false;
        }
        let (me, configs, voters) = voters_to_ask(raft);
        let answers = ask_all(link, &mut conns, &voters, log.last_log_id()).await;
        if prevote::won(&configs, &quorum_of(me, &answers, |a| a.leaderless)) {
            return true;
        }
        if tokio::time::Instant::now() >= until {
            tracing::info!(
                "the leader looks gone to this member, but a quorum still hears a leader: not electing at once ({})",
                answers
                    .iter()
                    .filter(|(_, a)| !matches!(a, Asked::Answered(Answer { leaderless: true, .. })))
                    .map(|(id, _)| format!("member {id}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// This member, its membership's voter sets, and the other voters with their peer addresses.
fn voters_to_ask(raft: &Raft) -> (MemberId, Vec<BTreeSet<MemberId>>, Vec<(MemberId, String)>) {
    let m = raft.metrics();
    let m = m.borrow();
    let membership = m.membership_config.membership();
    let voters = membership
        .voter_ids()
        .filter(|v| *v != m.id)
        .filter_map(|v| membership.get_node(&v).map(|n| (v, n.peer_addr())))
        .collect();
    (m.id, membership.get_joint_config().clone(), voters)
}

/// What asking one voter gave.
#[derive(Debug)]
enum Asked {
    Answered(Answer),
    /// Not asked: no connection, no answer in time, or another RPC's answer.
    Unreachable(String),
}

/// Every other voter's answer to this member's pre-vote, asked at once, each within the shorter
/// of a peer connect and the shortest election timeout. A member that cannot be asked counts
/// for nothing; one of an older release, which closes the connection on the request it cannot
/// read, grants and hears no leader (it would have voted as before pre-vote existed).
async fn ask_all(
    link: &Link,
    conns: &mut HashMap<MemberId, PeerStream>,
    voters: &[(MemberId, String)],
    last: Option<LogId>,
) -> Vec<(MemberId, Asked)> {
    let wait = link.timing.connect.min(link.timing.election_min);
    let asks = voters.iter().map(|(id, addr)| {
        let conn = conns.remove(id);
        async move {
            let (answer, conn) = match tokio::time::timeout(wait, ask(link, addr, conn, last)).await {
                Ok(r) => r,
                Err(_) => (Asked::Unreachable(format!("no answer in {wait:?}")), None),
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
) -> (Asked, Option<PeerStream>) {
    loop {
        let reused = conn.is_some();
        let mut s = match conn.take() {
            Some(s) => s,
            None => match link.connect(addr, Kind::Rpc).await {
                Ok(s) => s,
                Err(e) => return (Asked::Unreachable(format!("unreachable: {e}")), None),
            },
        };
        let answer = match wire::write_frame(&mut s, &RpcRequest::PreVoteWithLeader(last)).await {
            Ok(()) => wire::read_frame::<_, RpcResponse>(&mut s).await,
            Err(e) => Err(e),
        };
        match answer {
            Ok(RpcResponse::PreVoteWithLeader(a)) => return (Asked::Answered(a), Some(s)),
            Ok(_) => return (Asked::Unreachable("it answered another RPC".into()), None),
            Err(_) if reused => continue,
            Err(wire::PeerError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                return (Asked::Answered(Answer { vote: Ok(()), leaderless: true }), None)
            }
            Err(e) => return (Asked::Unreachable(format!("unreachable: {e}")), None),
        }
    }
}
