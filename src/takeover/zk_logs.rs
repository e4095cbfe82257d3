//! What the stopped ZooKeeper participants wrote to disk, against what the observers applied.
//!
//! A ZooKeeper leader that commits a txn queues COMMIT for its followers and INFORM for its
//! observers, each on its own sender thread (`Leader.tryToCommit`: `commit(zxid); inform(p)`), and
//! a follower answers its client as soon as its COMMIT arrives. An INFORM still queued when the
//! leader stops (or behind an observer the leader had dropped) never reaches the observers: a
//! write ZooKeeper acknowledged that no observer holds. ZooKeeper itself loses nothing there (its
//! observers sync from the next leader); a takeover seeded from the observers would. So the
//! takeover reads the participants' logs: a committed txn was logged by a majority of them.

use crate::txn::Zxid;
use std::path::{Path, PathBuf};

/// One participant's data as the operator named it: `[N=]DIR`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub sid: u64,
    pub dir: PathBuf,
}

/// Reads `N=DIR`, or `DIR` whose `myid` file names the participant.
pub fn parse_source(arg: &str) -> Result<Source, String> {
    if let Some((n, dir)) = arg.split_once('=') {
        if let Ok(sid) = n.trim().parse() {
            return Ok(Source { sid, dir: PathBuf::from(dir) });
        }
    }
    let dir = PathBuf::from(arg);
    let myid = dir.join("myid");
    let text = std::fs::read_to_string(&myid)
        .map_err(|e| format!("{}: {e} (name the participant: --zookeeper-data N={arg})", myid.display()))?;
    let sid = text.trim().parse().map_err(|_| format!("{}: not a myid: {:?}", myid.display(), text.trim()))?;
    Ok(Source { sid, dir })
}

/// The highest zxid each participant logged.
pub fn read(sources: &[Source]) -> Result<Vec<(u64, Zxid)>, String> {
    let mut out: Vec<(u64, Zxid)> = Vec::new();
    for s in sources {
        if out.iter().any(|(sid, _)| *sid == s.sid) {
            return Err(format!("server.{} is named twice by --zookeeper-data", s.sid));
        }
        let last = last_of(&s.dir)?;
        out.push((s.sid, last));
    }
    Ok(out)
}

fn last_of(dir: &Path) -> Result<Zxid, String> {
    match crate::import::last_logged(dir) {
        Ok(Some(z)) => Ok(z),
        Ok(None) => Err(format!("{}: no ZooKeeper log or snapshot found", dir.display())),
        Err(e) => Err(e.to_string()),
    }
}

/// The highest zxid ZooKeeper may have committed, from the logs of some of its `voters`
/// participants: a committed txn was logged by a majority, so by at least `majority - missing`
/// of those given, and it is at or below the zxid that many of them reached. Exact when every
/// participant's log is given; with only `voters - majority + 1` of them it is their highest
/// (a txn only the stopped leader logged then counts too). Err: too few to tell.
pub fn committed_bound(voters: usize, logged: &[(u64, Zxid)]) -> Result<Zxid, String> {
    let majority = voters / 2 + 1;
    let missing = voters.saturating_sub(logged.len());
    let Some(need) = majority.checked_sub(missing).filter(|n| *n > 0) else {
        return Err(format!(
            "the logs of {} of the {voters} ZooKeeper participants are given; at least {} are needed to tell \
             what ZooKeeper committed",
            logged.len(),
            voters - majority + 1
        ));
    };
    let mut last: Vec<Zxid> = logged.iter().map(|(_, z)| *z).collect();
    last.sort_unstable_by(|a, b| b.cmp(a));
    Ok(last[need - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_what_a_majority_logged_when_every_log_is_given() {
        // Three voters: the leader logged 0x107 alone, one follower 0x105, the other 0x103.
        let all = [(1, 0x107), (2, 0x105), (3, 0x103)];
        assert_eq!(committed_bound(3, &all), Ok(0x105));
        // Five voters: the third highest.
        let five = [(1, 9), (2, 8), (3, 7), (4, 6), (5, 5)];
        assert_eq!(committed_bound(5, &five), Ok(7));
    }

    #[test]
    fn with_fewer_logs_the_bound_moves_up_to_stay_above_every_committed_txn() {
        // Two of three: a majority (2) includes at least one of them, so their highest.
        assert_eq!(committed_bound(3, &[(2, 0x105), (3, 0x103)]), Ok(0x105));
        // Four of five: a majority (3) includes at least two of them.
        assert_eq!(committed_bound(5, &[(1, 9), (2, 8), (3, 7), (4, 6)]), Ok(8));
        // One of three, two of five: a majority could be made of the others alone.
        assert!(committed_bound(3, &[(1, 9)]).unwrap_err().contains("at least 2 are needed"));
        assert!(committed_bound(5, &[(1, 9), (2, 9)]).unwrap_err().contains("at least 3 are needed"));
    }

    #[test]
    fn sources_are_named_by_their_myid_or_explicitly() {
        assert_eq!(parse_source("2=/var/zk"), Ok(Source { sid: 2, dir: "/var/zk".into() }));
        let dir = std::env::temp_dir().join(format!("zkr-zk-logs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let arg = dir.to_string_lossy().into_owned();
        assert!(parse_source(&arg).unwrap_err().contains("--zookeeper-data N="));
        std::fs::write(dir.join("myid"), "3\n").unwrap();
        assert_eq!(parse_source(&arg), Ok(Source { sid: 3, dir: dir.clone() }));
        assert!(read(&[parse_source(&arg).unwrap()]).unwrap_err().contains("no ZooKeeper log or snapshot"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
