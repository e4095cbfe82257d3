//! Every timeout of an ensemble member, computed once at start from zoo.cfg's tickTime,
//! initLimit and syncLimit, and handed to the tasks that need them (no process-wide settings).
//!
//! The rule is ZooKeeper's: an operator who raises tickTime for a slow network gets members that
//! are proportionally more patient. At ZooKeeper's usual settings (tickTime 2000, initLimit 10,
//! syncLimit 5) a member hears a heartbeat every 200 ms and starts an election after 1–2 s
//! without one, where a ZooKeeper follower waits syncLimit ticks (10 s) for a silent leader.

use crate::config::Config;
use crate::raft::members::Ensemble;
use std::time::Duration;

/// Heartbeats never come faster than this, whatever tickTime says: on a shared two-core machine
/// shorter ones let a busy leader miss its followers' election timeouts, and leaders flap.
pub const MIN_HEARTBEAT: Duration = Duration::from_millis(50);

/// The timeouts of one ensemble member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// One tickTime.
    pub tick: Duration,
    /// The leader's heartbeat: a tenth of a tick.
    pub heartbeat: Duration,
    /// A follower that heard no heartbeat for a random time in [min, max) starts an election:
    /// five to ten heartbeats (half a tick to a tick).
    pub election_min: Duration,
    pub election_max: Duration,
    /// A member (or leader) out of touch with the quorum this long stops serving: syncLimit
    /// ticks, ZooKeeper's limit for a follower's silence.
    pub stale_after: Duration,
    /// A follower or observer that heard nothing from its leader this long stops serving: as
    /// long as openraft's follower waited before it campaigned (its leader lease, one
    /// `election_max`, and an election timeout) before pre-vote made campaigns wait for a
    /// quorum (see `prevote`), and never longer than `stale_after`. A leader that lost its
    /// quorum goes quiet, and the followers still with it must stop serving well within a
    /// session timeout, as ZooKeeper's do when that leader closes their connections.
    pub leader_silence: Duration,
    /// A read index (sync, and reads after a member's own write) must be confirmed by a quorum
    /// within half of `stale_after`, or the client's request fails and it retries.
    pub read_index: Duration,
    /// A peer connect: one tick, ZooKeeper's learner gives a connect to its leader syncLimit ticks.
    pub connect: Duration,
    /// A peer's TLS handshake or hello: half of `stale_after`.
    pub handshake: Duration,
    /// A reconfig waits this long for a joining participant to catch up, and a snapshot install
    /// may take this long: initLimit ticks, ZooKeeper's limit for a learner to sync.
    pub catch_up: Duration,
    /// After the leader's process is gone, the survivors start elections this far apart, ranked
    /// by id: half a heartbeat (more than a vote's round trip with its fsync).
    pub elect_step: Duration,
}

impl Timing {
    /// The timeouts for `tick_ms`, `init_limit` and `sync_limit` (ticks).
    pub fn from_ticks(tick_ms: u64, init_limit: u64, sync_limit: u64) -> Timing {
        let tick = Duration::from_millis(tick_ms.max(1));
        let heartbeat = (tick / 10).max(MIN_HEARTBEAT);
        let stale_after = (tick * sync_limit.max(1) as u32).max(Duration::from_secs(1));
        Timing {
            tick,
            heartbeat,
            election_min: heartbeat * 5,
            election_max: heartbeat * 10,
            stale_after,
            leader_silence: (heartbeat * 20).min(stale_after),
            read_index: stale_after / 2,
            connect: tick.max(Duration::from_millis(500)),
            handshake: stale_after / 2,
            catch_up: (tick * init_limit.max(1) as u32).max(Duration::from_secs(2)),
            elect_step: heartbeat / 2,
        }
    }

    /// The timeouts of a member of `ens` configured by `cfg`.
    pub fn of(cfg: &Config, ens: &Ensemble) -> Timing {
        Timing::from_ticks(cfg.tick_time_ms as u64, ens.init_limit as u64, ens.sync_limit as u64)
    }
}

impl Default for Timing {
    /// ZooKeeper's sample zoo.cfg: tickTime 2000, initLimit 10, syncLimit 5.
    fn default() -> Timing {
        Timing::from_ticks(2000, 10, 5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_zookeepers_usual_settings_elections_start_within_two_seconds_of_a_silent_leader() {
        let t = Timing::default();
        assert_eq!(t.heartbeat, Duration::from_millis(200));
        assert_eq!((t.election_min, t.election_max), (Duration::from_secs(1), Duration::from_secs(2)));
        assert_eq!(t.stale_after, Duration::from_secs(10));
        assert_eq!(t.leader_silence, Duration::from_secs(4));
        assert_eq!(t.read_index, Duration::from_secs(5));
        assert_eq!(t.connect, Duration::from_secs(2));
        assert_eq!(t.catch_up, Duration::from_secs(20));
    }

    #[test]
    fn ensemble_timeouts_grow_with_tick_time() {
        let (a, b) = (Timing::from_ticks(2000, 10, 5), Timing::from_ticks(8000, 10, 5));
        for (x, y) in [
            (a.heartbeat, b.heartbeat),
            (a.election_min, b.election_min),
            (a.election_max, b.election_max),
            (a.stale_after, b.stale_after),
            (a.leader_silence, b.leader_silence),
            (a.read_index, b.read_index),
            (a.connect, b.connect),
            (a.handshake, b.handshake),
            (a.catch_up, b.catch_up),
            (a.elect_step, b.elect_step),
        ] {
            assert_eq!(x * 4, y, "{a:?} vs {b:?}");
        }
    }

    #[test]
    fn sync_and_init_limits_scale_what_zookeeper_scales_with_them() {
        let (a, b) = (Timing::from_ticks(2000, 10, 5), Timing::from_ticks(2000, 20, 10));
        assert_eq!(a.stale_after * 2, b.stale_after);
        assert_eq!(a.read_index * 2, b.read_index);
        assert_eq!(a.catch_up * 2, b.catch_up);
        assert_eq!(a.heartbeat, b.heartbeat);
    }

    #[test]
    fn tiny_ticks_keep_heartbeats_at_the_floor() {
        let t = Timing::from_ticks(100, 10, 5);
        assert_eq!(t.heartbeat, MIN_HEARTBEAT);
        assert_eq!(t.election_max, MIN_HEARTBEAT * 10);
        assert!(t.stale_after >= Duration::from_secs(1));
    }
}
