//! Repairs of a member's damaged Raft files at startup (see `super::recover`): cutting the log at
//! a bad record, setting files aside into `damaged/` (nothing is deleted), and demoting a vote
//! that would let a restarted leader lead its old term again.

use super::log_store::{read_small, sync_dir, write_small};
use super::types::Vote;
use crate::config::CrashPoint;
pub(crate) use crate::storage::damage::set_aside;
use std::path::{Path, PathBuf};

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
