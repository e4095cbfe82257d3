//! An empty member asks the other voters whether the ensemble has data (see `amnesia`): a
//! member of a new ensemble initializes it, a wiped one waits to be caught up without voting.

use super::*;
use crate::raft::amnesia::{self, StateAnswer};

/// Asks the other voters until it knows; true if the ensemble is new (this member may
/// initialize it), false if it exists (this member is amnesiac now) or the member stops.
pub async fn probe_ensemble(
    link: &Link,
    ens: &Ensemble,
    raft: &Raft,
    status: &MemberStatus,
    stop: &CancellationToken,
    every: Duration,
) -> bool {
    let voters: Vec<MemberId> = ens.voters().collect();
    let started = std::time::Instant::now();
    let mut told = Duration::ZERO;
    loop {
        if status.seed.lock().deferring() {
            // A member seeding a new ensemble asked this one, and it agreed: it never had data.
            let _ = status.amnesia.probed(None);
            raft.runtime_config().elect(true);
            return true;
        }
        let mut answers = Vec::new();
        for peer in voters.iter().copied().filter(|p| *p != ens.my_id) {
            let Some(spec) = ens.members.get(&peer) else { continue };
            if let Some(a) = ask(link, &spec.peer_addr()).await {
                answers.push(a);
            }
        }
        match amnesia::verdict(voters.len(), &answers) {
            Some(existing) => {
                if let Err(e) = status.amnesia.probed(existing) {
                    tracing::error!("cannot record that this member may have lost data: {e}");
                    return false;
                }
                return match status.amnesia.refusal() {
                    None => {
                        tracing::info!("a quorum of the members is empty: a new ensemble");
                        raft.runtime_config().elect(true);
                        true
                    }
                    Some(why) => {
                        tracing::warn!("this member does not vote: {why}");
                        false
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
            _ = stop.cancelled() => return false,
            _ = tokio::time::sleep(every) => {}
        }
    }
}

async fn ask(link: &Link, addr: &str) -> Option<StateAnswer> {
    let exchange = async {
        let mut s = link.connect(addr, Kind::Rpc).await?;
        wire::write_frame(&mut s, &RpcRequest::StateProbe).await?;
        wire::read_frame::<_, RpcResponse>(&mut s).await
    };
    match tokio::time::timeout(link.timing.connect, exchange).await {
        Ok(Ok(RpcResponse::StateProbe(a))) => Some(a),
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
