//! An empty member asks the other voters whether the ensemble has data (see `amnesia`): a
//! member of a new ensemble initializes it, one being added waits for the leader's entries and
//! votes, a wiped one waits to be caught up without voting.

use super::*;
use crate::raft::amnesia::{self, Standing, StateAnswer, Verdict};

/// What an empty member does after its probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probed {
    /// A new ensemble: this member may initialize it.
    Initialize,
    /// It belongs to an existing ensemble (being added, or already caught up): the leader
    /// replicates to it.
    Member,
    /// It may have lost acknowledged entries (it does not vote), or it is stopping.
    Stop,
}

/// Asks the other voters until it knows.
pub async fn probe_ensemble(
    link: &Link,
    ens: &Ensemble,
    status: &MemberStatus,
    stop: &CancellationToken,
    every: Duration,
) -> Probed {
    let voters: Vec<MemberId> = ens.voters().collect();
    let started = std::time::Instant::now();
    let mut told = Duration::ZERO;
    loop {
        if status.seed.lock().deferring() {
            // A member seeding a new ensemble asked this one, and it agreed: it never had data.
            let _ = status.amnesia.probed(Verdict::New);
            return Probed::Initialize;
        }
        let mut answers = Vec::new();
        for peer in voters.iter().copied().filter(|p| *p != ens.my_id) {
            let Some(spec) = ens.members.get(&peer) else { continue };
            if let Some(a) = ask(link, &spec.peer_addr(), ens.my_id).await {
                answers.push(a);
            }
        }
        match amnesia::verdict(voters.len(), &answers) {
            Some(verdict) => {
                if let Err(e) = status.amnesia.probed(verdict) {
                    tracing::error!("cannot record that this member may have lost data: {e}");
                    return Probed::Stop;
                }
                if let Some(why) = status.amnesia.refusal() {
                    tracing::warn!("this member does not vote: {why}");
                    return Probed::Stop;
                }
                return match verdict {
                    Verdict::New => {
                        tracing::info!("a quorum of the members is empty: a new ensemble");
                        Probed::Initialize
                    }
                    Verdict::Joining => {
                        tracing::info!("the ensemble has data and is adding this member: it votes");
                        Probed::Member
                    }
                    Verdict::Existing(_) => {
                        tracing::info!("caught up by the leader while it asked: it votes");
                        Probed::Member
                    }
                };
            }
            None if started.elapsed() >= told => {
                tracing::info!(
                    answered = answers.len(),
                    voters = voters.len(),
                    "empty member: waiting for the others to say whether the ensemble has data"
                );
                told += Duration::from_secs(10);
            }
            None => {}
        }
        tokio::select! {
            _ = stop.cancelled() => return Probed::Stop,
            _ = tokio::time::sleep(every) => {}
        }
    }
}

/// One member's answer: the form naming this member, or the older form (a member of an older
/// release closes the connection on a request it cannot read), taken as counting this member.
async fn ask(link: &Link, addr: &str, me: MemberId) -> Option<Standing> {
    let exchange = |req: RpcRequest| async move {
        let mut s = link.connect(addr, Kind::Rpc).await?;
        wire::write_frame(&mut s, &req).await?;
        wire::read_frame::<_, RpcResponse>(&mut s).await
    };
    match tokio::time::timeout(link.timing.connect, exchange(RpcRequest::StateProbeOf(me))).await {
        Ok(Ok(RpcResponse::StateProbeOf(a))) => return Some(a),
        Ok(Err(wire::PeerError::Io(_))) => {}
        _ => return None,
    }
    match tokio::time::timeout(link.timing.connect, exchange(RpcRequest::StateProbe)).await {
        Ok(Ok(RpcResponse::StateProbe(a))) => Some(a.into()),
        _ => None,
    }
}

/// This member's answer to a probe.
pub(super) fn state_answer(raft: &Raft) -> StateAnswer {
    let m = raft.metrics();
    let m = m.borrow();
    let has_entries = m.last_log_index.unwrap_or(0) >= 1 || m.snapshot.is_some_and(|s| s.index >= 1);
    StateAnswer { has_entries, term: m.current_term }
}

/// This member's answer to a probe by `asker`.
pub(super) fn standing(raft: &Raft, asker: MemberId) -> Standing {
    let state = state_answer(raft);
    let m = raft.metrics();
    let counts_asker = amnesia::counts(m.borrow().membership_config.membership().get_joint_config(), asker);
    Standing { state, counts_asker }
}
