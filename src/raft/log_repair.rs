//! Repairs of a member's damaged Raft files at startup (see `super::recover`): cutting the log at
//! a bad record, setting files aside into `damaged/` (nothing is deleted), and demoting a vote
//! that would let a restarted leader lead its old term again.

use super::log_store::{read_small, sync_dir, write_small};
use super::types::Vote;
use crate::config::CrashPoint;
pub(crate) use crate::storage::damage::set_aside;
use std::path::{Path, PathBuf};

/// What the small state files (`vote`, `committed`, `purged`) held when their checksum failed,
/// and what was done about it (`repair_state_files`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct StateFiles {
    /// The vote was set aside: the member starts as one that lost it (an empty member's probe).
    pub vote_lost: bool,
    /// The log was set aside with `purged`: the member is amnesiac until the leader refills it.
    pub log_lost: bool,
    pub did: Vec<String>,
}

/// Sets aside the small state files whose checksum fails, so that a damaged file never keeps a
/// member out while a healthy quorum runs (the disk-fault matrix, issue 38 item 2; ZooKeeper
/// refuses to start on a damaged acceptedEpoch or currentEpoch). `committed` is a hint: it goes,
/// and the commit point comes back from the leader. `vote` is what this member promised: it goes
/// too, and the member starts as one whose vote was lost (`vote_lost`: an empty member's probe
/// asks the others for the newest term and it votes again only once a leader refilled it).
/// `purged` says where the log starts: without it the log cannot be trusted, so the log goes with
/// it (`log_lost`: amnesiac until refilled, as after a damaged record). Nothing is deleted.
pub fn repair_state_files(raft_dir: &Path) -> Result<StateFiles, crate::storage::StorageError> {
    let damaged = raft_dir.join("log").join("damaged");
    let unreadable = |name: &str| -> bool {
        let p = raft_dir.join(name);
        match name {
            "vote" => read_small::<Vote>(&p).is_err(),
            "committed" => read_small::<Option<super::types::LogId>>(&p).is_err(),
            _ => read_small::<super::types::LogId>(&p).is_err(),
        }
    };
    let mut out = StateFiles::default();
    for name in ["committed", "vote"] {
        if unreadable(name) {
            let to = set_aside(&raft_dir.join(name), &damaged, "unreadable")?;
            out.did.push(format!("moved {name} (its checksum fails) to {}", to.display()));
            out.vote_lost |= name == "vote";
        }
    }
    // A log whose oldest segment starts past index 0 was purged up to there: without the file
    // that says so (deleted), the log's start is unknown, as with a damaged one.
    let purged_gone = !raft_dir.join("purged").exists()
        && crate::storage::numbered_files(&raft_dir.join("log"), "seg.")?.first().is_some_and(|(first, _)| *first > 0);
    if purged_gone || unreadable("purged") {
        // The marker first (a crash between the two must not leave a shorter log that votes);
        // a member whose vote went too is probed like an empty one instead.
        if !out.vote_lost {
            let p = raft_dir.join("vote");
            let floor_term = read_small::<Vote>(&p).ok().flatten().map_or(0, |v| v.leader_id.term);
            let reason = "its log's start (raft/purged) was damaged: the log was set aside".to_owned();
            super::amnesia::mark(raft_dir, &super::amnesia::Marker { reason, floor_term })?;
        }
        out.did.extend(set_aside_all(raft_dir, "unreadable-purged")?);
        out.log_lost = true;
    }
    sync_dir(raft_dir);
    Ok(out)
}

/// Cuts the log at a bad record: the damaged segment's written part is copied to
/// `<raft>/log/damaged/seg.<first>.corrupt-<secs>`, zeroed from `offset` on, and every later
/// segment is moved to `damaged/` (nothing is deleted). The commit hint goes too: entries past
/// the cut that were committed come back from the leader, as after a wipe. Returns what it did.
/// `crash`: the test failpoint that may stop the process between the steps.
pub fn cut_at(
    raft_dir: &Path,
    file: &Path,
    offset: u64,
    crash: Option<CrashPoint>,
) -> Result<Vec<String>, crate::storage::StorageError> {
    use crate::storage::{damage, StorageError as E};
    let mut did = Vec::new();
    let bytes = std::fs::read(file).map_err(|e| E::io(file, e))?;
    let written = bytes.iter().rposition(|b| *b != 0).map_or(0, |p| p as u64 + 1);
    let copy = damage::keep_copy(file, written.max(offset.min(bytes.len() as u64)), "corrupt")?;
    did.push(format!("copied {} to {}", file.display(), copy.display()));
    CrashPoint::LogCutCopied.hit(crash);
    damage::zero_from(file, offset)?;
    did.push(format!("cut {} at offset {offset}", file.display()));
    CrashPoint::LogCutZeroed.hit(crash);
    let dir = raft_dir.join("log");
    let damaged = dir.join("damaged");
    let cut_name = file.file_name().map(|n| n.to_owned());
    for (_, later) in crate::storage::numbered_files(&dir, "seg.")? {
        // Segment names are fixed-width hex: name order is index order.
        if later.file_name().map(|n| n.to_owned()) > cut_name {
            did.push(format!("moved {} to {}", later.display(), set_aside(&later, &damaged, "dropped")?.display()));
        }
    }
    CrashPoint::LogCutMoved.hit(crash);
    let committed = raft_dir.join("committed");
    if committed.exists() {
        did.push(format!("moved the commit hint to {}", set_aside(&committed, &damaged, "dropped")?.display()));
    }
    sync_dir(&dir);
    Ok(did)
}

/// A member that led before it stopped does not lead again without an election. openraft 0.9
/// restores a member whose saved vote is its own committed one as the leader of that term at
/// once; but its log may have lost entries of that term that the others have: entries it sent
/// before its own fsync finished (openraft replicates before the leader's flush, and a quorum
/// of followers commits them), a torn last record, a cut or set-aside damaged log. Leading the
/// same term again, it hands those entries' log ids out again with other contents, and the
/// members' trees diverge (found by the fault suite: the leader killed, its log cut, restarted
/// within the election timeout). The vote is kept but uncommitted (same term, same candidate:
/// no second vote in that term), the state of a candidate that restarted; the member follows
/// whoever leads, or wins an election in a later term, as in standard Raft and ZooKeeper.
/// (Later openraft releases make this `Config::enable_leader_restore = false`.) Returns the
/// vote changed, if any.
pub fn demote_own_vote(raft_dir: &Path, me: u64) -> Result<Option<Vote>, crate::storage::StorageError> {
    use crate::storage::StorageError as E;
    let path = raft_dir.join("vote");
    let Some(mut vote) = read_small::<Vote>(&path).map_err(|e| E::io(&path, e))? else { return Ok(None) };
    if !vote.committed || vote.leader_id.voted_for() != Some(me) {
        return Ok(None);
    }
    vote.committed = false;
    write_small(&path, &vote, true).map_err(|e| E::io(&path, e))?;
    Ok(Some(vote))
}

/// Moves every segment, the purge mark and the commit hint to `<raft>/log/damaged/` (the vote
/// stays): the member starts with an empty log, and the leader sends it a snapshot.
pub fn set_aside_all(raft_dir: &Path, why: &str) -> Result<Vec<String>, crate::storage::StorageError> {
    let dir = raft_dir.join("log");
    let mut did = Vec::new();
    let mut files: Vec<PathBuf> = crate::storage::numbered_files(&dir, "seg.")?.into_iter().map(|(_, p)| p).collect();
    files.push(raft_dir.join("purged"));
    files.push(raft_dir.join("committed"));
    for f in files.into_iter().filter(|f| f.exists()) {
        did.push(format!("moved {} to {}", f.display(), set_aside(&f, &dir.join("damaged"), why)?.display()));
    }
    sync_dir(&dir);
    sync_dir(raft_dir);
    Ok(did)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Dir(PathBuf);
    impl Dir {
        fn path(&self) -> &Path {
            &self.0
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn raft_dir() -> Dir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let d = std::env::temp_dir().join(format!(
            "zkr-state-files-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("log")).unwrap();
        Dir(d)
    }

    fn vote(term: u64) -> Vote {
        Vote::new_committed(term, 1)
    }

    /// The disk-fault matrix's cells on the state files (issue 38 item 2): a damaged commit hint
    /// or vote is set aside, never fatal; the vote's loss is reported so the member is probed.
    #[test]
    fn a_damaged_vote_or_commit_hint_is_set_aside_and_reported() {
        let d = raft_dir();
        write_small(&d.path().join("vote"), &vote(7), true).unwrap();
        write_small(&d.path().join("committed"), &None::<super::super::types::LogId>, true).unwrap();
        assert_eq!(repair_state_files(d.path()).unwrap(), StateFiles::default(), "healthy files stay");
        std::fs::write(d.path().join("vote"), b"\xde\xad\xbe\xef\x00").unwrap();
        std::fs::write(d.path().join("committed"), b"").unwrap();
        let r = repair_state_files(d.path()).unwrap();
        assert!(r.vote_lost && !r.log_lost && r.did.len() == 2, "{r:?}");
        assert!(!d.path().join("vote").exists() && !d.path().join("committed").exists());
        assert_eq!(
            std::fs::read_dir(d.path().join("log").join("damaged")).unwrap().count(),
            2,
            "set aside, not deleted"
        );
    }

    /// A damaged or missing log start sets the log aside, the amnesia marker first, with the
    /// vote's term as its floor.
    #[test]
    fn a_damaged_or_missing_log_start_sets_the_log_aside_behind_the_amnesia_marker() {
        for damage in ["flipped", "deleted"] {
            let d = raft_dir();
            write_small(&d.path().join("vote"), &vote(9), true).unwrap();
            std::fs::write(d.path().join("log").join("seg.00000000000021a5"), b"seg").unwrap();
            if damage == "flipped" {
                std::fs::write(d.path().join("purged"), b"\x01\x02\x03\x04\x05\x06").unwrap();
            }
            let r = repair_state_files(d.path()).unwrap();
            assert!(r.log_lost && !r.vote_lost, "{damage}: {r:?}");
            let m = super::super::amnesia::load(d.path()).unwrap().expect("amnesiac");
            assert_eq!(m.floor_term, 9, "{damage}");
            assert!(crate::storage::numbered_files(&d.path().join("log"), "seg.").unwrap().is_empty(), "{damage}");
        }
    }
}
