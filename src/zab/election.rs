//! Finding a ZooKeeper ensemble's leader through its election ports, as a non-voting observer
//! does (`FastLeaderElection` and `QuorumCnxManager` in ZooKeeper): connect to each voter, say
//! who this server is, send one notification, and read back the vote each voter holds. A voter
//! answers a notification from a server that is not a voter at once with its current vote, its
//! state and its configuration (`WorkerReceiver`: the `validVoter` check).
//!
//! The leader is the one a majority of the voters follow or lead with the same epoch, and which
//! itself says LEADING (as `FastLeaderElection.checkLeader` requires of a leader that others
//! follow).

use super::dial::Dialer;
use super::ZabError;
use crate::security::quorum_sasl::Login as Credentials;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

/// `QuorumCnxManager.PROTOCOL_VERSION_V1`: the initial message every ZooKeeper 3.5+ accepts
/// (V2, -65535, is refused by 3.5 and sent by ZooKeeper itself only with multiAddress).
const PROTOCOL_V1: i64 = -65536;
/// `QuorumPeer.ServerState` as notifications carry it.
pub const LOOKING: i32 = 0;
pub const FOLLOWING: i32 = 1;
pub const LEADING: i32 = 2;
pub const OBSERVING: i32 = 3;
/// A notification is at most this long (`QuorumCnxManager`'s 512 KiB packet limit).
const MAX_MESSAGE: usize = 512 * 1024;

/// One voter of the ensemble: its `myid` and election address (the second port of its
/// `server.N` line).
#[derive(Debug, Clone)]
pub struct Voter {
    pub sid: i64,
    pub election: SocketAddr,
    /// `host:electionPort` as the `server.N` line has it (the name a quorum TLS certificate is
    /// checked against).
    pub name: String,
}

/// What one voter said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vote {
    pub from: i64,
    pub state: i32,
    pub leader: i64,
    pub zxid: i64,
    pub election_epoch: i64,
    pub peer_epoch: i64,
    /// The voter's configuration text (notification version 2 and later).
    pub config: Option<String>,
}

/// The leader the voters agree on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub leader: i64,
    pub epoch: i64,
    pub votes: Vec<Vote>,
}

/// The first message on an election connection: protocol version, this server's sid and the
/// election address it listens on (`QuorumCnxManager.InitialMessage`). A voter keeps the
/// connection only if this sid is above its own; otherwise it hangs up and dials that address.
pub fn initial_message(my_sid: i64, my_address: &str) -> Vec<u8> {
    let mut b = Vec::with_capacity(20 + my_address.len());
    b.extend_from_slice(&PROTOCOL_V1.to_be_bytes());
    b.extend_from_slice(&my_sid.to_be_bytes());
    b.extend_from_slice(&(my_address.len() as i32).to_be_bytes());
    b.extend_from_slice(my_address.as_bytes());
    b
}

/// A LOOKING notification proposing nobody (`Long.MIN_VALUE` for leader, zxid and epoch, as a
/// ZooKeeper observer proposes), framed with its length. It is the 40-byte form, which a voter
/// reads as version 0 with no configuration: a voter that is itself LOOKING applies a newer
/// configuration from any notification, so this one carries none.
pub fn looking_notification(election_epoch: i64) -> Vec<u8> {
    let mut b = Vec::with_capacity(44);
    b.extend_from_slice(&40i32.to_be_bytes());
    b.extend_from_slice(&LOOKING.to_be_bytes());
    b.extend_from_slice(&i64::MIN.to_be_bytes());
    b.extend_from_slice(&i64::MIN.to_be_bytes());
    b.extend_from_slice(&election_epoch.to_be_bytes());
    b.extend_from_slice(&i64::MIN.to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes());
    b
}

/// Parses one notification's payload (without its length) in any of the forms ZooKeeper reads:
/// 28 bytes (no peer epoch), 40 (no version), or versioned with a configuration.
pub fn parse_notification(from: i64, p: &[u8]) -> Option<Vote> {
    let int = |at: usize| p.get(at..at + 4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let long = |at: usize| p.get(at..at + 8).and_then(|b| b.try_into().ok()).map(i64::from_be_bytes);
    let (state, leader, zxid, election_epoch) = (int(0)?, long(4)?, long(12)?, long(20)?);
    // 28 bytes: the epoch is the zxid's high half (ZooKeeper before ZK-107).
    let peer_epoch = if p.len() == 28 { zxid >> 32 } else { long(28)? };
    let mut config = None;
    if p.len() > 40 {
        let version = int(36)?;
        if version > 1 {
            let len = usize::try_from(int(40)?).ok()?;
            config = Some(String::from_utf8_lossy(p.get(44..44 + len)?).into_owned());
        }
    }
    Some(Vote { from, state, leader, zxid, election_epoch, peer_epoch, config })
}

/// Asks one voter for its vote.
fn ask(
    my_sid: i64,
    my_address: &str,
    v: &Voter,
    timeout: Duration,
    auth: Option<&Credentials>,
    dial: &Dialer,
) -> std::io::Result<Vote> {
    let mut s = dial.connect(v.election, &v.name, timeout)?;
    s.set_read_timeout(Some(timeout))?;
    let mut out = initial_message(my_sid, my_address);
    if let Some(creds) = auth {
        // QuorumCnxManager.startConnection: the initial message, then the login, and only
        // then notifications (a voter that requires SASL closes on anything else).
        s.write_all(&out)?;
        out.clear();
        crate::security::quorum_sasl::authenticate(&mut s, creds, &v.name)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
    }
    out.extend_from_slice(&looking_notification(1));
    s.write_all(&out)?;
    // The voter may send other notifications first: take the first that parses.
    loop {
        let mut len = [0u8; 4];
        s.read_exact(&mut len)?;
        let len = i32::from_be_bytes(len);
        let len = usize::try_from(len).ok().filter(|l| *l <= MAX_MESSAGE).ok_or_else(|| {
            std::io::Error::new(std::io::ErrorKind::InvalidData, format!("notification of {len} bytes"))
        })?;
        let mut p = vec![0u8; len];
        s.read_exact(&mut p)?;
        if let Some(vote) = parse_notification(v.sid, &p) {
            return Ok(vote);
        }
    }
}

/// The leader a majority of `voters` agree on, asking each once.
pub fn find_leader(
    my_sid: i64,
    my_address: &str,
    voters: &[Voter],
    timeout: Duration,
    auth: Option<&Credentials>,
    dial: &Dialer,
) -> Result<Found, ZabError> {
    if let Some(v) = voters.iter().find(|v| v.sid >= my_sid) {
        return Err(ZabError::SidTooLow { ours: my_sid, voter: v.sid });
    }
    let mut votes = Vec::new();
    let mut failed = Vec::new();
    for v in voters {
        match ask(my_sid, my_address, v, timeout, auth, dial) {
            Ok(vote) => votes.push(vote),
            Err(e) => failed.push(format!("server.{} at {}: {e}", v.sid, v.election)),
        }
    }
    decide(voters.len(), votes, failed)
}

/// A leader that a majority of the `n` voters follow or lead at the same epoch, and that leads.
pub fn decide(n: usize, votes: Vec<Vote>, failed: Vec<String>) -> Result<Found, ZabError> {
    let mut tally: HashMap<(i64, i64), usize> = HashMap::new();
    for v in votes.iter().filter(|v| v.state == FOLLOWING || v.state == LEADING) {
        *tally.entry((v.leader, v.peer_epoch)).or_default() += 1;
    }
    let agreed = tally.into_iter().filter(|(_, c)| *c > n / 2).map(|(k, _)| k).next();
    let leads = |(l, e): (i64, i64)| votes.iter().any(|v| v.from == l && v.state == LEADING && v.peer_epoch == e);
    match agreed.filter(|k| leads(*k)) {
        Some((leader, epoch)) => Ok(Found { leader, epoch, votes }),
        None => {
            Err(ZabError::NoLeader { votes: votes.iter().map(describe).chain(failed).collect::<Vec<_>>().join("; ") })
        }
    }
}

fn describe(v: &Vote) -> String {
    let state = match v.state {
        LOOKING => "looking",
        FOLLOWING => "following",
        LEADING => "leading",
        OBSERVING => "observing",
        _ => "?",
    };
    format!("server.{} is {state} (leader {}, epoch {})", v.from, v.leader, v.peer_epoch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vote(from: i64, state: i32, leader: i64, epoch: i64) -> Vote {
        Vote { from, state, leader, zxid: epoch << 32, election_epoch: 1, peer_epoch: epoch, config: None }
    }

    #[test]
    fn a_leader_needs_a_majority_at_one_epoch_and_its_own_word() {
        let found = decide(3, vec![vote(1, FOLLOWING, 3, 2), vote(3, LEADING, 3, 2)], vec![]).unwrap();
        assert_eq!((found.leader, found.epoch), (3, 2));
        // One voter alone is no majority of three.
        assert!(decide(3, vec![vote(3, LEADING, 3, 2)], vec!["server.1 refused".into()]).is_err());
        // Followers of 3 whose leader does not say it leads (it restarted, is looking).
        let err = decide(3, vec![vote(1, FOLLOWING, 3, 2), vote(2, FOLLOWING, 3, 2), vote(3, LOOKING, 3, 2)], vec![])
            .unwrap_err();
        assert!(err.to_string().contains("server.3 is looking"), "{err}");
        // Votes at two epochs do not add up.
        assert!(decide(3, vec![vote(1, FOLLOWING, 3, 1), vote(3, LEADING, 3, 2)], vec![]).is_err());
    }

    #[test]
    fn notifications_parse_in_every_form_zookeeper_reads() {
        let mut v2 = Vec::new();
        v2.extend_from_slice(&FOLLOWING.to_be_bytes());
        for x in [3i64, 0x2_0000_0005, 7, 2] {
            v2.extend_from_slice(&x.to_be_bytes());
        }
        v2.extend_from_slice(&2i32.to_be_bytes());
        v2.extend_from_slice(&5i32.to_be_bytes());
        v2.extend_from_slice(b"cfg=1");
        let v = parse_notification(1, &v2).unwrap();
        assert_eq!((v.state, v.leader, v.zxid, v.election_epoch, v.peer_epoch), (FOLLOWING, 3, 0x2_0000_0005, 7, 2));
        assert_eq!(v.config.as_deref(), Some("cfg=1"));
        let forty = parse_notification(1, &v2[..40]).unwrap();
        assert_eq!((forty.peer_epoch, forty.config), (2, None));
        let old = parse_notification(1, &v2[..28]).unwrap();
        assert_eq!(old.peer_epoch, 2, "28 bytes: the epoch of the zxid");
        assert!(parse_notification(1, &v2[..20]).is_none());
        let ours = looking_notification(1);
        assert_eq!(ours.len(), 44);
        let mine = parse_notification(9, &ours[4..]).unwrap();
        assert_eq!((mine.state, mine.leader, mine.config), (LOOKING, i64::MIN, None));
    }
}
