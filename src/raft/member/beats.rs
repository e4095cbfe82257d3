//! The control lane: the leader's heartbeats ("beats") to every other member, each on a peer
//! connection of its own (`Kind::Beat`), apart from openraft's AppendEntries and snapshots (the
//! bulk lane, `network`).
//!
//! openraft 0.9 sends its heartbeats from the same per-follower loop as its AppendEntries, one
//! RPC at a time: while a follower is being sent entries, no heartbeat goes out, and an
//! AppendEntries waits for the follower's fsync. Under a burst of large writes the followers
//! then heard nothing (and would have granted a pre-vote against a live leader), and the leader
//! heard no quorum (and stopped serving): issue 43. Beats never wait for the log: each member
//! answers one from its vote alone, and a beat from the leader it follows counts as contact
//! (`MemberStatus::heard_leader`), as an append does. The leader counts a quorum's answers as an
//! acknowledgement of its leadership, as openraft counts its AppendEntries' answers
//! (`quorum_ack_ms_ago` takes the newer of the two). ZooKeeper does the same with its learners'
//! pings, which its leader sends every half tick whatever the proposals in flight.
//!
//! ```text
//! leader ── Hello{Beat} ──► member
//!        ── Beat{vote} ───► answered at once: BeatAnswer{follows, vote}
//!        ◄─ BeatAnswer ───  (follows: its vote names this leader, and it takes its entries)
//! ```
//! Votes, pre-votes and probes also travel on connections of their own (openraft's vote client,
//! `elections`, `probe`), never behind AppendEntries.

use super::{initialized, MemberStatus};
use crate::raft::link::{Link, PeerStream};
use crate::raft::types::{MemberId, Raft, Vote};
use crate::raft::wire::{self, Beat, BeatAnswer, Kind};
use openraft::LeaderId;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Beats a member of an older release does not take (it closes the connection at the hello)
/// are tried again this much later, not every heartbeat: it logs each one it refuses.
const OLD_RELEASE_RETRY: Duration = Duration::from_secs(10);

/// Beats go out twice per heartbeat interval, so that a member hears its leader at least once
/// per interval even when a beat or its timer is late (ZooKeeper's leader pings its learners
/// every half tick).
fn beat_period(heartbeat: Duration) -> Duration {
    heartbeat / 2
}

/// The leader's record of the beats its members answered, for one leadership (`leader`).
#[derive(Debug, Default)]
pub struct BeatAcks {
    leader: Option<LeaderId<MemberId>>,
    /// Member → `mono_ms` when the newest beat it answered was sent.
    sent_at: HashMap<MemberId, u64>,
}

impl BeatAcks {
    /// `member` answered, following `leader`, the beat sent at `sent_at`.
    pub fn acked(&mut self, leader: LeaderId<MemberId>, member: MemberId, sent_at: u64) {
        if self.leader != Some(leader) {
            self.leader = Some(leader);
            self.sent_at.clear();
        }
        let t = self.sent_at.entry(member).or_default();
        *t = (*t).max(sent_at);
    }

    /// `mono_ms` when the newest beat `member` answered was sent, this leadership.
    pub fn last_answered(&self, member: MemberId) -> Option<u64> {
        self.sent_at.get(&member).copied()
    }

    /// The newest time at which a quorum of every voter set in `configs` (two while a
    /// membership change is joint) had answered `leader`'s beats, this member (`me`, the leader)
    /// counting as answering at `now`. None while some set has no such quorum.
    pub fn quorum_at(
        &self,
        leader: &LeaderId<MemberId>,
        me: MemberId,
        configs: &[BTreeSet<MemberId>],
        now: u64,
    ) -> Option<u64> {
        if self.leader.as_ref() != Some(leader) || configs.is_empty() {
            return None;
        }
        let mut oldest_needed = u64::MAX;
        for voters in configs {
            let mut times: Vec<u64> =
                voters.iter().filter_map(|v| if *v == me { Some(now) } else { self.sent_at.get(v).copied() }).collect();
            times.sort_unstable_by(|a, b| b.cmp(a));
            let quorum = voters.len() / 2 + 1;
            oldest_needed = oldest_needed.min(*times.get(quorum - 1)?);
        }
        Some(oldest_needed)
    }
}

/// How long ago a quorum last acknowledged this member as leader, through openraft's
/// AppendEntries or through beats, whichever is newer; None if it does not lead or was never
/// acknowledged.
pub fn quorum_ack_ms_ago(raft: &Raft, status: &MemberStatus) -> Option<u64> {
    let now = crate::session::mono_ms();
    let m = raft.metrics();
    let m = m.borrow();
    if m.state != openraft::ServerState::Leader {
        return None;
    }
    let configs = m.membership_config.membership().get_joint_config();
    let by_beats = status.beats.lock().quorum_at(m.vote.leader_id(), m.id, configs, now).map(|t| now.saturating_sub(t));
    match (m.millis_since_quorum_ack, by_beats) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The leader's side: while this member leads (and has not gone quiet), one task per other
/// member of the membership sends it a beat every half heartbeat.
pub async fn send_beats(raft: Raft, link: Link, status: Arc<MemberStatus>, stop: CancellationToken) {
    let mut every = tokio::time::interval(link.timing.heartbeat);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut running: HashMap<MemberId, (String, CancellationToken)> = HashMap::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = every.tick() => {}
        }
        let wanted: HashMap<MemberId, String> = {
            let m = raft.metrics();
            let m = m.borrow();
            let membership = m.membership_config.membership();
            if m.state != openraft::ServerState::Leader {
                HashMap::new()
            } else {
                membership.nodes().filter(|(id, _)| **id != m.id).map(|(id, n)| (*id, n.peer_addr())).collect()
            }
        };
        running.retain(|id, (addr, task)| {
            let keep = wanted.get(id) == Some(addr);
            if !keep {
                task.cancel();
            }
            keep
        });
        for (id, addr) in wanted {
            if running.contains_key(&id) {
                continue;
            }
            let task = stop.child_token();
            let peer = BeatPeer { raft: raft.clone(), link: link.clone(), status: status.clone(), target: id };
            tokio::spawn(peer.run(addr.clone(), task.clone()));
            running.insert(id, (addr, task));
        }
    }
    running.values().for_each(|(_, t)| t.cancel());
}

/// One member's beats, sent by its leader.
struct BeatPeer {
    raft: Raft,
    link: Link,
    status: Arc<MemberStatus>,
    target: MemberId,
}

impl BeatPeer {
    async fn run(self, addr: String, stop: CancellationToken) {
        let timing = self.link.timing;
        let mut every = tokio::time::interval(beat_period(timing.heartbeat));
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut conn: Option<PeerStream> = None;
        let mut retry_at: Option<tokio::time::Instant> = None;
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = every.tick() => {}
            }
            if retry_at.is_some_and(|t| tokio::time::Instant::now() < t) || self.status.quiet.load(Ordering::Acquire) {
                continue;
            }
            let vote = {
                let m = self.raft.metrics();
                let m = m.borrow();
                if m.state != openraft::ServerState::Leader {
                    continue;
                }
                m.vote
            };
            let fresh = conn.is_none();
            let sent_at = crate::session::mono_ms();
            let exchange = tokio::time::timeout(timing.election_min, self.beat(&addr, &mut conn, vote));
            match exchange.await {
                Ok(Ok(answer)) => {
                    if answer.follows && answer.vote.leader_id() == vote.leader_id() {
                        self.status.beats.lock().acked(*vote.leader_id(), self.target, sent_at);
                    }
                }
                Ok(Err(wire::PeerError::Io(e))) if fresh && e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    conn = None;
                    tracing::debug!(peer = self.target, "member {} takes no beats (an older release?)", self.target);
                    retry_at = Some(tokio::time::Instant::now() + OLD_RELEASE_RETRY);
                }
                Ok(Err(e)) => {
                    conn = None;
                    tracing::debug!(peer = self.target, "beat to member {} failed: {e}", self.target);
                }
                Err(_) => conn = None,
            }
        }
    }

    /// One beat and its answer, on `conn` (opened first when there is none).
    async fn beat(&self, addr: &str, conn: &mut Option<PeerStream>, vote: Vote) -> Result<BeatAnswer, wire::PeerError> {
        let s = match conn {
            Some(s) => s,
            None => conn.insert(self.link.connect(addr, Kind::Beat).await?),
        };
        wire::write_frame(&mut *s, &Beat { vote }).await?;
        wire::read_frame::<_, BeatAnswer>(&mut *s).await
    }
}

/// The member's side: answers each beat from `from` at once, from its vote alone. A beat from
/// the leader this member follows is contact with it, as an append is; one from a leader this
/// member would refuse entries from (an amnesiac member and an older term, a pending seed) is
/// answered without following.
pub(super) async fn serve_beats(
    mut s: PeerStream,
    from: MemberId,
    raft: &Raft,
    status: &MemberStatus,
) -> Result<(), wire::PeerError> {
    loop {
        let beat: Beat = wire::read_frame(&mut s).await?;
        let mine = raft.metrics().borrow().vote;
        let leader = beat.vote.leader_id();
        let follows = leader.voted_for() == Some(from)
            && mine.leader_id() == leader
            && !status.amnesia.refuses_leader(leader.term)
            && !status.seed.lock().refuses(from, initialized(raft));
        if follows {
            status.heard_leader();
        }
        wire::write_frame(&mut s, &BeatAnswer { follows, vote: mine }).await?;
    }
}

#[cfg(test)]
mod tests {
    use super::BeatAcks;
    use openraft::LeaderId;
    use std::collections::BTreeSet;

    fn set(v: &[u64]) -> BTreeSet<u64> {
        v.iter().copied().collect()
    }

    #[test]
    fn a_quorum_of_answers_dates_the_leaders_acknowledgement_by_its_older_beat() {
        let l = LeaderId::new(3, 1);
        let mut acks = BeatAcks::default();
        assert_eq!(acks.quorum_at(&l, 1, &[set(&[1, 2, 3])], 1000), None, "no answer yet");
        acks.acked(l, 2, 400);
        assert_eq!(acks.quorum_at(&l, 1, &[set(&[1, 2, 3])], 1000), Some(400), "the leader and member 2");
        acks.acked(l, 3, 900);
        assert_eq!(acks.quorum_at(&l, 1, &[set(&[1, 2, 3])], 1000), Some(900), "the newest quorum");
        acks.acked(l, 3, 700);
        assert_eq!(acks.quorum_at(&l, 1, &[set(&[1, 2, 3])], 1000), Some(900), "a late answer never dates back");
        // Five voters need three: the leader, 900 and 400.
        assert_eq!(acks.quorum_at(&l, 1, &[set(&[1, 2, 3, 4, 5])], 1000), Some(400));
        // Joint: the new set {3, 4, 5} has only member 3's answer.
        assert_eq!(acks.quorum_at(&l, 1, &[set(&[1, 2, 3]), set(&[3, 4, 5])], 1000), None);
        acks.acked(l, 4, 800);
        assert_eq!(acks.quorum_at(&l, 1, &[set(&[1, 2, 3]), set(&[3, 4, 5])], 1000), Some(800));
    }

    #[test]
    fn answers_to_another_leadership_never_count() {
        let (old, new) = (LeaderId::new(3, 1), LeaderId::new(5, 1));
        let mut acks = BeatAcks::default();
        acks.acked(old, 2, 400);
        assert_eq!(acks.quorum_at(&new, 1, &[set(&[1, 2, 3])], 1000), None, "answered the term-3 leader");
        acks.acked(new, 3, 900);
        assert_eq!(acks.quorum_at(&new, 1, &[set(&[1, 2, 3])], 1000), Some(900));
        assert_eq!(acks.quorum_at(&new, 1, &[set(&[1, 2, 3, 4, 5])], 1000), None, "member 2's answer was forgotten");
        assert_eq!(acks.quorum_at(&old, 1, &[set(&[1, 2, 3])], 1000), None);
    }

    #[test]
    fn a_sole_voter_is_its_own_quorum_once_it_leads() {
        let l = LeaderId::new(1, 1);
        let mut acks = BeatAcks::default();
        acks.acked(l, 2, 10);
        assert_eq!(acks.quorum_at(&l, 1, &[set(&[1])], 1000), Some(1000));
        assert_eq!(acks.quorum_at(&l, 1, &[], 1000), None);
    }
}
