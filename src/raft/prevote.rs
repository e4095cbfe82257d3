//! Pre-vote: a member stands for election only when a quorum of voters would vote for it, so
//! that a member which hears no leader while the others do (just restarted before the leader's
//! next append reached it, cut off from the leader alone, paused) never raises the term and
//! deposes a leader the rest of the ensemble follows.
//!
//! ZooKeeper's restarted or isolated server behaves this way: its election notifications come
//! back naming the established leader, and it follows that leader in its epoch instead of
//! starting a new one (FastLeaderElection's "out of election" votes). Raft calls it pre-vote
//! (Ongaro's thesis, 9.6): before a real campaign, ask whether the others would grant a vote;
//! a voter that heard from a leader within the minimum election timeout says no, as does one
//! whose log is ahead of the candidate's (the real vote would fail on it).
//!
//! openraft 0.9 has no pre-vote: its follower campaigns when its own timer runs out, with a new
//! term, and a leader that hears that term from any append's answer steps down. So openraft's
//! own elections are switched off and `member::guard_elections` switches them on only while a
//! pre-vote is won. This file holds the decisions, without I/O: what a voter answers, and
//! whether the answers are a quorum.
//!
//! A voter's answer also says whether it hears a leader at all (`Answer::leaderless`). The
//! election at once after a dead leader (`member::peers::elect_after_leader_loss`) needs a
//! quorum that agrees the leader is gone, not a quorum that would vote for this member: a
//! survivor whose log is behind another's is denied its vote, yet must still campaign, since
//! only its own candidacy ends the lease it holds for the dead leader and lets the survivor with
//! the longer log win. A follower that alone cannot reach a live leader (a link that resets, a
//! firewall that refuses) finds the others hearing it and does not campaign.

use super::types::{LogId, MemberId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// What a voter knows when a candidate asks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hearing {
    /// It leads, and a quorum acknowledged it this many ms ago.
    pub leads_acked_ms_ago: Option<u64>,
    /// It follows, and its leader's last append reached it this many ms ago (None: no append
    /// since it started, or that leader's stream ended and its port refuses).
    pub leader_heard_ms_ago: Option<u64>,
    /// The last entry of its log.
    pub last_log: Option<LogId>,
    /// Why it votes for nobody (it may have lost entries it acknowledged; see `amnesia`).
    pub refuses: Option<&'static str>,
}

/// Why a voter would not vote for the candidate now (sent back over the peer link).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum Denial {
    #[error("it leads, with a quorum that answered {0} ms ago")]
    Leads(u64),
    #[error("it heard from its leader {0} ms ago")]
    HearsLeader(u64),
    #[error("its log is ahead of the candidate's ({mine:?} > {theirs:?})")]
    LogAhead { mine: Option<LogId>, theirs: Option<LogId> },
    #[error("{0}")]
    Refuses(String),
}

/// A voter's whole answer: its pre-vote, and whether it hears no leader either.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    pub vote: Result<(), Denial>,
    /// It neither leads with a quorum nor heard from a leader within the shortest election
    /// timeout.
    pub leaderless: bool,
}

/// The voter's answer to a candidate whose log ends at `candidate_last` (see `answer`).
pub fn answer_with_leader(h: &Hearing, candidate_last: Option<LogId>, election_min_ms: u64) -> Answer {
    let recent = |ms: Option<u64>| ms.is_some_and(|ms| ms < election_min_ms);
    Answer {
        vote: answer(h, candidate_last, election_min_ms),
        leaderless: !recent(h.leads_acked_ms_ago) && !recent(h.leader_heard_ms_ago),
    }
}

/// A voter's answer to a pre-vote from a candidate whose log ends at `candidate_last`:
/// granted unless it heard from a leader within `election_min_ms` (the shortest election
/// timeout: a live leader's heartbeats come far more often) or its log is ahead.
pub fn answer(h: &Hearing, candidate_last: Option<LogId>, election_min_ms: u64) -> Result<(), Denial> {
    if let Some(why) = h.refuses {
        return Err(Denial::Refuses(why.to_owned()));
    }
    if let Some(ms) = h.leads_acked_ms_ago.filter(|ms| *ms < election_min_ms) {
        return Err(Denial::Leads(ms));
    }
    if let Some(ms) = h.leader_heard_ms_ago.filter(|ms| *ms < election_min_ms) {
        return Err(Denial::HearsLeader(ms));
    }
    if h.last_log > candidate_last {
        return Err(Denial::LogAhead { mine: h.last_log, theirs: candidate_last });
    }
    Ok(())
}

/// Whether `granted` (the candidate included) is a quorum of every voter set of the membership
/// (`configs`, oldest first; two while a membership change is joint), as the real vote must be.
pub fn won(configs: &[BTreeSet<MemberId>], granted: &BTreeSet<MemberId>) -> bool {
    !configs.is_empty() && configs.iter().all(|c| c.intersection(granted).count() * 2 > c.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(term: u64, index: u64) -> Option<LogId> {
        Some(openraft::LogId::new(openraft::CommittedLeaderId::new(term, 1), index))
    }

    fn silent(last_log: Option<LogId>) -> Hearing {
        Hearing { leads_acked_ms_ago: None, leader_heard_ms_ago: None, last_log, refuses: None }
    }

    #[test]
    fn a_voter_that_hears_its_leader_denies_and_one_that_stopped_hearing_it_grants() {
        let hears = Hearing { leader_heard_ms_ago: Some(40), ..silent(log(2, 10)) };
        assert_eq!(answer(&hears, log(2, 10), 1000), Err(Denial::HearsLeader(40)));
        let stopped = Hearing { leader_heard_ms_ago: Some(1000), ..silent(log(2, 10)) };
        assert_eq!(answer(&stopped, log(2, 10), 1000), Ok(()));
        // Never heard from one since it started (a cold start of the whole ensemble).
        assert_eq!(answer(&silent(log(2, 10)), log(2, 10), 1000), Ok(()));
    }

    #[test]
    fn a_leader_with_its_quorum_denies_and_one_without_grants() {
        let leads = Hearing { leads_acked_ms_ago: Some(60), ..silent(log(2, 10)) };
        assert_eq!(answer(&leads, log(2, 10), 1000), Err(Denial::Leads(60)));
        let alone = Hearing { leads_acked_ms_ago: Some(5000), ..silent(log(2, 10)) };
        assert_eq!(answer(&alone, log(2, 10), 1000), Ok(()));
    }

    #[test]
    fn a_candidate_behind_the_voter_is_denied_as_the_real_vote_would_be() {
        let voter = silent(log(3, 5));
        assert!(matches!(answer(&voter, log(2, 9), 1000), Err(Denial::LogAhead { .. })), "older term, longer log");
        assert!(matches!(answer(&voter, log(3, 4), 1000), Err(Denial::LogAhead { .. })));
        assert!(matches!(answer(&voter, None, 1000), Err(Denial::LogAhead { .. })));
        assert_eq!(answer(&voter, log(3, 5), 1000), Ok(()));
        assert_eq!(answer(&voter, log(4, 1), 1000), Ok(()));
    }

    #[test]
    fn an_amnesiac_voter_denies_with_its_reason() {
        let h = Hearing { refuses: Some("lost data"), ..silent(None) };
        assert_eq!(answer(&h, log(9, 9), 1000), Err(Denial::Refuses("lost data".into())));
    }

    /// A voter whose log is ahead denies its vote but, hearing no leader, agrees the leader is
    /// gone; one that hears its leader (or leads) does not, whatever the logs.
    #[test]
    fn a_voter_says_whether_it_hears_a_leader_apart_from_its_vote() {
        let ahead = silent(log(3, 9));
        let a = answer_with_leader(&ahead, log(3, 5), 1000);
        assert!(matches!(a.vote, Err(Denial::LogAhead { .. })) && a.leaderless);
        let hears = Hearing { leader_heard_ms_ago: Some(30), ..silent(log(3, 5)) };
        let a = answer_with_leader(&hears, log(3, 9), 1000);
        assert!(a.vote.is_err() && !a.leaderless);
        let leads = Hearing { leads_acked_ms_ago: Some(30), ..silent(log(3, 5)) };
        assert!(!answer_with_leader(&leads, log(3, 9), 1000).leaderless);
        let amnesiac = Hearing { refuses: Some("lost data"), ..silent(None) };
        assert!(answer_with_leader(&amnesiac, log(3, 9), 1000).leaderless, "it hears no leader either");
        let stale = Hearing { leader_heard_ms_ago: Some(4000), ..silent(log(3, 5)) };
        assert_eq!(answer_with_leader(&stale, log(3, 5), 1000), Answer { vote: Ok(()), leaderless: true });
    }

    #[test]
    fn a_quorum_of_every_voter_set_is_needed() {
        let set = |v: &[u64]| v.iter().copied().collect::<BTreeSet<_>>();
        assert!(won(&[set(&[1, 2, 3])], &set(&[1, 3])));
        assert!(!won(&[set(&[1, 2, 3])], &set(&[3])));
        assert!(won(&[set(&[1])], &set(&[1])), "a sole voter is its own quorum");
        assert!(!won(&[set(&[1, 2, 3, 4])], &set(&[1, 2])), "half is not a quorum");
        // Joint: both the old and the new set.
        let joint = [set(&[1, 2, 3]), set(&[3, 4, 5])];
        assert!(!won(&joint, &set(&[1, 2, 3])));
        assert!(won(&joint, &set(&[2, 3, 4])));
        assert!(!won(&[], &set(&[1])));
    }
}
