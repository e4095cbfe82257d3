//! A running ensemble member's Raft side: the peer listener, the proposer that takes the core's
//! proposals to the leader, and the watcher that tells the core its role.
//!
//! The core never waits on any of these: proposals leave through a bounded queue the core
//! never blocks on (a full one fails the request), session reports on a lane of their own, and
//! everything learned comes back up through `seam::Upward`. No queue here grows
//! without bound: a leader that stops reading (paused, overloaded) breaks its followers'
//! forward streams after an election timeout instead of holding their proposals.
//!
//! `peers` serves the peer port, `beats` sends and answers the leader's heartbeats on a lane of
//! their own, `proposer` takes proposals to the log, `probe` asks the others
//! whether an empty member's ensemble has data, `elections` lets openraft campaign only after a
//! won pre-vote; this file holds the member's status and the
//! watcher that tells the core its role.

mod beats;
mod elections;
mod peers;
mod probe;
mod proposer;
mod snapshot_in;

pub use beats::{quorum_ack_ms_ago, send_beats, BeatAcks};
pub use elections::*;
pub use peers::*;
pub use probe::*;
pub use proposer::*;

use super::command::{Batch, Command, BATCH_MAX_BYTES, BATCH_MAX_COMMANDS};
use super::link::{self, Link, PeerRead, PeerStream, PeerWrite};
use super::log_store::LogStore;
use super::members::Ensemble;
use super::seam::{Inlet, Proposal, ReplMsg, Role, Upward};
use super::types::{LogId, MemberId, Raft};
use super::wire::{self, ForwardMsg, ForwardReply, Kind, RpcRequest, RpcResponse};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What the operator views read about this member.
#[derive(Debug, Default)]
pub struct MemberStatus {
    pub role: parking_lot::Mutex<(Role, Option<MemberId>, u64)>,
    /// `mono_ms` (at least 1) of the last AppendEntries or beat from a leader; 0 until the
    /// first one (`heard_leader`).
    pub leader_contact: AtomicU64,
    /// The longest time between two contacts with a leader (`leader_gap_max_ms`).
    pub leader_gap: LeaderGap,
    /// The beats this member's followers answered while it leads (see `beats`).
    pub beats: parking_lot::Mutex<BeatAcks>,
    /// `mono_ms` when this member last became leader.
    pub leader_since: AtomicU64,
    /// Set when the leader's replication stream to this member ended (see `serve_rpc`), cleared
    /// by the next AppendEntries.
    pub leader_lost: AtomicBool,
    /// Wakes the role watcher when `leader_lost` is set.
    pub wake: tokio::sync::Notify,
    /// Seeding a new ensemble from a standalone data directory (see `seed`).
    pub seed: parking_lot::Mutex<super::seed::Gate>,
    /// Whether this member may have lost entries it acknowledged (see `amnesia`).
    pub amnesia: super::amnesia::Amnesia,
    /// Set while this member is a leader without a quorum (`watch_role`): it takes no
    /// proposals, so that nothing it appends keeps its followers believing it leads.
    pub quiet: AtomicBool,
}

impl MemberStatus {
    /// An append, snapshot or beat from the leader this member follows reached it.
    pub fn heard_leader(&self) {
        let now = crate::session::mono_ms().max(1);
        self.leader_contact.store(now, Ordering::Release);
        self.leader_gap.heard(now);
    }
}

/// The longest this member went without hearing from a leader, between two appends or beats
/// (leadership changes included, its own time as leader not), since the last `reset` (`srst`):
/// `zk_leader_gap_max_ms` in mntr. With beats every heartbeat it stays near one heartbeat
/// interval, under a burst of large writes too.
#[derive(Debug, Default)]
pub struct LeaderGap {
    /// `mono_ms` of the last contact (0: none since the start or since this member last led).
    from: AtomicU64,
    max: AtomicU64,
}

impl LeaderGap {
    fn heard(&self, now: u64) {
        let from = self.from.swap(now, Ordering::AcqRel);
        if from != 0 {
            self.max.fetch_max(now.saturating_sub(from), Ordering::AcqRel);
        }
    }

    /// This member leads: the next contact starts a new measure.
    fn leading(&self) {
        self.from.store(0, Ordering::Release);
    }

    pub fn max_ms(&self) -> u64 {
        self.max.load(Ordering::Acquire)
    }

    pub fn reset(&self) {
        self.max.store(0, Ordering::Release);
    }
}

/// True once this member has a membership (it initialized, or a leader's log or snapshot
/// reached it).
fn initialized(raft: &Raft) -> bool {
    raft.metrics().borrow().membership_config.membership().voter_ids().next().is_some()
}

/// The member whose id and role this process's log lines carry (the first started; a process
/// normally runs one).
static LOG_MEMBER: std::sync::OnceLock<(MemberId, Arc<MemberStatus>)> = std::sync::OnceLock::new();

/// Registers the member whose id and role the log lines name.
pub fn tag_logs(me: MemberId, status: Arc<MemberStatus>) {
    let _ = LOG_MEMBER.set((me, status));
}

/// `(id, role)` for log lines, once an ensemble member runs in this process.
pub fn log_tag() -> Option<(MemberId, &'static str)> {
    LOG_MEMBER.get().map(|(id, st)| (*id, st.role.lock().0.name()))
}

fn wall_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Sends a core message without waiting when the core is busy (the core must never wait on us,
/// and we should not wait on it either beyond its queue).
async fn to_core(core: &Upward, msg: ReplMsg) {
    let _ = core.tell(msg).await;
}

/// How long a member serves without hearing what it needs (`Timing::stale_after`,
/// `Timing::leader_silence`).
#[derive(Debug, Clone, Copy)]
pub struct Silence {
    /// A leader without a quorum's acknowledgement this long stops serving.
    pub stale: Duration,
    /// A follower or observer without its leader's appends this long stops serving.
    pub leader: Duration,
}

/// Watches openraft's metrics and tells the core its role: leader, follower, observer, or
/// looking (no leader, or a leader or member that lost touch with the quorum: `limits`).
pub async fn watch_role(
    raft: Raft,
    core: Upward,
    status: Arc<MemberStatus>,
    limits: Silence,
    shutdown: CancellationToken,
) {
    let mut metrics = raft.metrics();
    let mut every = tokio::time::interval(Duration::from_millis(50));
    let mut last: Option<(Role, Option<MemberId>, u64)> = None;
    let stale = limits.stale;
    let stale_ms = stale.as_millis() as u64;
    let silence_ms = limits.leader.as_millis() as u64;
    let mut heartbeat_off = false;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            r = metrics.changed() => if r.is_err() { break },
            _ = status.wake.notified() => {}
            _ = every.tick() => {}
        }
        let (state, leader, term, running, applied) = {
            let m = metrics.borrow();
            let applied = m.last_applied.map_or(0, |l| l.index);
            (m.state, m.current_leader, m.current_term, m.running_state.clone(), applied)
        };
        // A quorum's answers to AppendEntries or to beats (`beats`): under a burst of large
        // entries only the beats come every heartbeat.
        let since_ack = quorum_ack_ms_ago(&raft, &status);
        if state == openraft::ServerState::Leader {
            // A leader hears no leader: its own time as one is no gap (`LeaderGap`).
            status.leader_gap.leading();
        }
        {
            let mut gate = status.seed.lock();
            // A leader's first entry after the seed (index 1) is applied only once a quorum
            // has it, and a follower installs the seed before it appends anything after it.
            if gate.seed_pending() && state == openraft::ServerState::Leader && applied >= 2 {
                gate.seed_done();
            }
            if !gate.seed_pending() && initialized(&raft) {
                gate.seeded();
            }
        }
        if let Err(fatal) = running {
            if shutdown.is_cancelled() || matches!(fatal, openraft::error::Fatal::Stopped) {
                break;
            }
            *status.role.lock() = (Role::Looking, None, term);
            to_core(&core, ReplMsg::Role { role: Role::Looking, leader: None, term, leader_gone: false }).await;
            replication_lost(&fatal);
        }
        let (contact, now, lost) = (
            status.leader_contact.load(Ordering::Acquire),
            crate::session::mono_ms(),
            status.leader_lost.load(Ordering::Acquire),
        );
        // A voter stops serving when it would have campaigned before pre-vote; an observer,
        // which never campaigned, after `stale` as before.
        let (in_touch, observer_in_touch) =
            (in_touch_with_leader(contact, now, silence_ms, lost), in_touch_with_leader(contact, now, stale_ms, lost));
        use openraft::ServerState as S;
        // A leader serves once a quorum has acknowledged it: openraft restarts a member whose
        // saved vote is its own as leader of that old term until it hears of a newer one, and
        // such a member must not answer a read meanwhile (ZooKeeper's restarted leader is
        // LOOKING until an election settles). A single voter is its own quorum.
        let sole_voter = metrics.borrow().membership_config.membership().voter_ids().count() == 1;
        let acked = sole_voter || since_ack.is_some_and(|ms| ms <= stale_ms);
        let role = match state {
            S::Leader if !acked => Role::Looking,
            S::Leader => Role::Leader,
            S::Follower if leader.is_some() && in_touch => Role::Follower,
            S::Learner if leader.is_some() && observer_in_touch => Role::Observer,
            _ => Role::Looking,
        };
        // A leader that lost its quorum stops its heartbeats and takes no more proposals (see
        // `run_submitter`), so that followers and observers still in touch with it notice too
        // and stop serving (ZooKeeper's leader gives up leading after syncLimit ticks without a
        // quorum); elections bring them back.
        let quiet = state == S::Leader && since_ack.is_some_and(|ms| ms > stale_ms) && !sole_voter;
        if quiet != heartbeat_off {
            heartbeat_off = quiet;
            status.quiet.store(quiet, Ordering::Release);
            raft.runtime_config().heartbeat(!quiet);
            if quiet {
                tracing::warn!("leader without a quorum for {stale:?}: not serving, heartbeats stopped");
            }
        }
        let now = (role, if role == Role::Looking { None } else { leader }, term);
        if last != Some(now) {
            if now.0 == Role::Leader && last.is_none_or(|l| l.0 != Role::Leader) {
                status.leader_since.store(crate::session::mono_ms().max(1), Ordering::Release);
            }
            last = Some(now);
            *status.role.lock() = now;
            let leader_gone = now.0 == Role::Looking && status.leader_lost.load(Ordering::Acquire);
            to_core(&core, ReplMsg::Role { role: now.0, leader: now.1, term, leader_gone }).await;
        }
    }
}

/// openraft's RaftCore ended on an error it cannot recover from (a storage error, a panic, or
/// openraft 0.9's "replication channel closed" race when a purge meets a replication stream that
/// just ended): this member would stay up and serve nobody. It stops instead, as a ZooKeeper
/// server stops on an unrecoverable error, so a supervisor restarts it; a restart recovers from
/// the log and snapshot on disk like any crash.
fn replication_lost(fatal: &openraft::error::Fatal<MemberId>) -> ! {
    tracing::error!("replication stopped on a fatal error, stopping this member for a restart: {fatal}");
    eprintln!("zkr: replication stopped on a fatal error, stopping this member for a restart: {fatal}");
    std::process::exit(70);
}

/// Whether a follower or observer is in touch with a leader: it heard from one (`contact_at`,
/// the `mono_ms` of the last AppendEntries, 0 before the first) within `limit_ms`, and that
/// leader's stream has not ended since (`lost`). A member just started has heard from nobody,
/// even though openraft already names the leader its saved vote was for: until a leader's first
/// AppendEntries it serves nobody (that leader may be gone, and the member far behind), as a
/// ZooKeeper follower serves only once synced with its leader. Found by the fault suite: a
/// restarted member served as a follower from its first millisecond, when `mono_ms` (the time
/// since the process started) was below the limit and "never" looked like "just now".
fn in_touch_with_leader(contact_at: u64, now: u64, limit_ms: u64, lost: bool) -> bool {
    contact_at != 0 && now.saturating_sub(contact_at) <= limit_ms && !lost
}

/// The leader's duty for observers (`server.N=…:observer`): they join as openraft learners,
/// which replicate the log and serve clients but never vote, as ZooKeeper's observers.
/// An observer is added once: after that, only `reconfig` changes its membership (an observer
/// that a reconfig removed stays removed while this process runs).
pub async fn keep_observers(raft: Raft, ensemble: Arc<parking_lot::RwLock<Ensemble>>, shutdown: CancellationToken) {
    let mut every = tokio::time::interval(Duration::from_millis(500));
    let mut seen = std::collections::HashSet::new();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = every.tick() => {}
        }
        let (leader, present) = {
            let m = raft.metrics().borrow().clone();
            let present: Vec<MemberId> = m.membership_config.membership().nodes().map(|(id, _)| *id).collect();
            (m.state == openraft::ServerState::Leader, present)
        };
        seen.extend(present.iter().copied());
        if !leader {
            continue;
        }
        let missing: Vec<(MemberId, super::members::ServerSpec)> = ensemble
            .read()
            .members
            .iter()
            .filter(|(id, s)| s.observer && !present.contains(id) && !seen.contains(id))
            .map(|(id, s)| (*id, s.clone()))
            .collect();
        for (id, spec) in missing {
            match raft.add_learner(id, spec, false).await {
                Ok(_) => tracing::info!(observer = id, "observer added to the ensemble"),
                Err(e) => tracing::warn!(observer = id, "cannot add the observer yet: {e}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::in_touch_with_leader as in_touch;

    #[test]
    fn a_member_that_never_heard_from_a_leader_is_not_in_touch_even_when_just_started() {
        // The process started 5 ms ago: no contact yet, whatever the clock says.
        assert!(!in_touch(0, 5, 1000, false));
        assert!(in_touch(3, 5, 1000, false));
        assert!(!in_touch(3, 2000, 1000, false));
        assert!(!in_touch(3, 5, 1000, true));
    }
}
