//! A member that may have lost log entries it acknowledged does not vote until it has them again.
//!
//! Raft counts a member's acknowledgement of an entry as a promise that the member keeps it: a
//! leader commits an entry once a quorum holds it, and a candidate is elected only by members
//! whose logs are no newer than its own, so every quorum of voters holds every committed entry.
//! A member whose log was cut at a damaged record, whose data directory was wiped (a replaced
//! disk), or which fell back to an older snapshot than its log needs breaks that promise without
//! knowing which entries it broke it for ("amnesia", in Protocol-Aware Recovery, Alagappan et
//! al., FAST 2018). If it voted, two members (it and one that never had the writes) could elect a
//! leader without writes the client was told were committed, and the member that still has them
//! would then be told to throw them away. ZooKeeper refuses to start on a damaged log, which
//! keeps the writes but needs an operator; zkr keeps the member running, and:
//!
//! - the member refuses every vote and never stands for election while it is amnesiac;
//! - it takes entries only from a leader of a term at least the newest it knew of (its vote's
//!   term, or for a wiped member the newest term the others reported), so it never helps a
//!   leader deposed before it lost its data commit in a term that is over;
//! - it is whole again once a leader has replicated to it up to that leader's commit point in
//!   the leader's own term: that leader was elected without it, by members that hold every
//!   committed entry, so its log now holds everything the member could have acknowledged;
//! - where no such leader can be elected (the member with the writes is down and the others
//!   cannot elect without it) the ensemble stays unavailable and says why; the operator's way
//!   out, accepting the loss, is `zkr.acceptDataLoss=true` (`--accept-data-loss`) on the
//!   amnesiac member, which then votes again.
//!
//! A member that starts with an empty data directory cannot tell a wiped member from one of a
//! new ensemble or one being added by a reconfig: until it knows, it refuses votes and asks the
//! others (`StateProbeOf`, naming itself). If any has log entries beyond the initial
//! configuration and counts this member's acknowledgements (it is a voter of that member's
//! membership, or of the old half of a joint one), the ensemble existed and this member may have
//! held some of them: amnesiac. If the others have entries but none counts it (it is a learner, or
//! a voter only of a joint membership's new half: a member being added), a quorum of the answers
//! says so, and no entry can have been committed on its word: every commit and every election in a
//! joint membership also needs a quorum of the old half, which holds every committed entry. If a
//! quorum (it included) has no entries, the ensemble is new.
//!
//! ```text
//! <raft>/amnesia   the marker (bincode | crc32, `log_store::write_small`): why, and the term floor;
//!                  present while the member is amnesiac, across restarts; removed once whole
//! <raft>/probing   present from the start of an empty member's probe until its verdict: a
//!                  leader's first append writes `vote` meanwhile, and a member that crashed then
//!                  must probe again at its next start, not count as one that was never empty
//! ```

use super::log_store::{read_small, sync_dir, write_small};
use super::types::LogId;
use crate::storage::StorageError;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What is persisted while a member is amnesiac.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// What the member lost, for the log lines.
    pub reason: String,
    /// Entries are taken only from leaders of this term or later.
    pub floor_term: u64,
}

fn path(raft_dir: &Path) -> PathBuf {
    raft_dir.join("amnesia")
}

/// The marker of a member's Raft directory, if it is amnesiac.
/// A marker that is there but does not read (its checksum fails) still says the member is
/// amnesiac: it is read as one with the vote's term as its floor, and written again.
pub fn load(raft_dir: &Path) -> Result<Option<Marker>, StorageError> {
    let p = path(raft_dir);
    match read_small(&p) {
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            let vote = raft_dir.join("vote");
            let floor_term = read_small::<super::types::Vote>(&vote).ok().flatten().map_or(0, |v| v.leader_id.term);
            let m = Marker { reason: "its amnesia marker was damaged (it was amnesiac before)".to_owned(), floor_term };
            tracing::warn!(file = %p.display(), floor_term, "damaged amnesia marker: still amnesiac, marker written again");
            mark(raft_dir, &m)?;
            Ok(Some(m))
        }
        other => other.map_err(|e| StorageError::io(&p, e)),
    }
}

/// Records durably that the member is amnesiac (before it takes part in anything).
pub fn mark(raft_dir: &Path, marker: &Marker) -> Result<(), StorageError> {
    put(raft_dir, &path(raft_dir), marker)
}

/// Removes the marker: the member is whole.
pub fn clear(raft_dir: &Path) -> Result<(), StorageError> {
    remove(raft_dir, &path(raft_dir))
}

/// Writes one of this module's markers durably (the file, then its directory).
fn put<T: serde::Serialize>(raft_dir: &Path, p: &Path, value: &T) -> Result<(), StorageError> {
    write_small(p, value, true).map_err(|e| StorageError::io(p, e))?;
    sync_dir(raft_dir);
    Ok(())
}

/// Removes one of this module's markers durably; a missing one is already removed.
fn remove(raft_dir: &Path, p: &Path) -> Result<(), StorageError> {
    match std::fs::remove_file(p) {
        Ok(()) => {
            sync_dir(raft_dir);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StorageError::io(p, e)),
    }
}

fn probing_path(raft_dir: &Path) -> PathBuf {
    raft_dir.join("probing")
}

/// True while an empty member's probe has not reached its verdict (across restarts).
pub fn probing(raft_dir: &Path) -> bool {
    probing_path(raft_dir).exists()
}

/// Records durably that the member starts its probe (before it takes part in anything).
pub fn mark_probing(raft_dir: &Path) -> Result<(), StorageError> {
    put(raft_dir, &probing_path(raft_dir), &())
}

/// Removes the probe's marker: its verdict is kept, or no longer wanted.
pub fn clear_probing(raft_dir: &Path) -> Result<(), StorageError> {
    remove(raft_dir, &probing_path(raft_dir))
}

/// Where a member stands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum State {
    /// It holds everything it acknowledged.
    #[default]
    Whole,
    /// It started empty and asks the others whether it was one of them.
    Probing,
    /// It may have lost acknowledged entries.
    Lost(Marker),
}

/// A member's amnesia, shared by its peer port, its role watcher and its elections.
#[derive(Debug, Default)]
pub struct Amnesia {
    dir: Option<PathBuf>,
    state: Mutex<State>,
    /// While probing: the newest term of a leader that already caught this member up to its
    /// commit point (a member joining by reconfig is replicated to before its probe answers).
    caught_while_probing: Mutex<Option<u64>>,
}

impl Amnesia {
    pub fn new(raft_dir: &Path, state: State) -> Amnesia {
        Amnesia { dir: Some(raft_dir.to_owned()), state: Mutex::new(state), caught_while_probing: Mutex::new(None) }
    }

    pub fn state(&self) -> State {
        self.state.lock().clone()
    }

    /// True while the member must not vote or stand for election.
    pub fn active(&self) -> bool {
        *self.state.lock() != State::Whole
    }

    /// Why the member refuses votes, if it does: one line with the operator's way out.
    pub fn refusal(&self) -> Option<String> {
        match &*self.state.lock() {
            State::Whole => None,
            State::Probing => Some(
                "it started with an empty data directory and is asking the other members whether it held data before"
                    .into(),
            ),
            State::Lost(m) => Some(format!(
                "it lost log entries it may have acknowledged ({}); it votes again once a leader elected without it \
                 has caught it up. If no member holding those writes can come back, restart it with \
                 zkr.acceptDataLoss=true (--accept-data-loss) to accept losing them",
                m.reason
            )),
        }
    }

    /// True if entries from a leader of `term` must be refused: a leader of a term older than
    /// the newest this member knew of before it lost data.
    pub fn refuses_leader(&self, term: u64) -> bool {
        matches!(&*self.state.lock(), State::Lost(m) if term < m.floor_term)
    }

    /// The member's probe found the ensemble new, found it being added, or found it existing (with
    /// the newest term the others reported): whole, or amnesiac from now on (persisted).
    pub fn probed(&self, verdict: Verdict) -> Result<(), StorageError> {
        let mut st = self.state.lock();
        if *st != State::Probing {
            return Ok(());
        }
        let caught = *self.caught_while_probing.lock();
        *st = match verdict {
            Verdict::New | Verdict::Joining => State::Whole,
            // Already caught up, while it asked, by a leader of that term or a newer one: what
            // would have made it whole once amnesiac has happened.
            Verdict::Existing(term) if caught.is_some_and(|t| t >= term) => State::Whole,
            Verdict::Existing(term) => {
                let m = Marker {
                    reason: "it started with an empty data directory in an ensemble that has data (wiped or replaced)"
                        .into(),
                    floor_term: term,
                };
                if let Some(dir) = &self.dir {
                    mark(dir, &m)?;
                }
                State::Lost(m)
            }
        };
        // The verdict is kept (the amnesia marker above, or nothing for a whole member): the
        // probe need not run again.
        if let Some(dir) = &self.dir {
            clear_probing(dir)?;
        }
        Ok(())
    }

    /// After this member appended what a leader of `leader_term` sent: whole again if its log
    /// (up to `last_index`) reaches the leader's commit point `leader_commit` and that point is
    /// in the leader's own term. Returns true when that just happened.
    pub fn caught_up(&self, leader_term: u64, leader_commit: Option<LogId>, last_index: Option<u64>) -> bool {
        let mut st = self.state.lock();
        let Some(commit) = leader_commit else { return false };
        let reached = commit.leader_id.term == leader_term && last_index.is_some_and(|last| last >= commit.index);
        if *st == State::Probing && reached {
            let mut caught = self.caught_while_probing.lock();
            *caught = Some(caught.map_or(leader_term, |t| t.max(leader_term)));
            return false;
        }
        let State::Lost(m) = &*st else { return false };
        let whole = leader_term >= m.floor_term && reached;
        if !whole {
            return false;
        }
        if let Some(dir) = &self.dir {
            if let Err(e) = clear(dir) {
                tracing::error!("cannot remove the amnesia marker: {e}");
                return false;
            }
        }
        *st = State::Whole;
        true
    }
}

/// What a member answers a `StateProbe` with (the form without the asker's id, kept for members
/// of an older release; its answer counts the asker's acknowledgements).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct StateAnswer {
    /// Its log holds entries beyond the initial configuration (index 0): the ensemble has
    /// elected a leader at least once.
    pub has_entries: bool,
    pub term: u64,
}

/// What a member answers a `StateProbeOf(asker)` with.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct Standing {
    pub state: StateAnswer,
    /// Its membership counts the asker's acknowledgements: the asker is one of its voters, or of
    /// the old half of a joint membership. False for a learner, and for a voter of the new half
    /// only (a member being added): its word alone never committed anything.
    pub counts_asker: bool,
}

impl From<StateAnswer> for Standing {
    /// An older member's answer: assume it counts the asker (the safe side).
    fn from(state: StateAnswer) -> Standing {
        Standing { state, counts_asker: true }
    }
}

/// Whether a membership (its configs, oldest first, as openraft keeps a joint one) counts
/// `member`'s acknowledgements towards a commit or an election on its own.
pub fn counts(configs: &[std::collections::BTreeSet<u64>], member: u64) -> bool {
    configs.first().is_some_and(|old| old.contains(&member))
}

/// What an empty member's probe concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// A quorum is empty: a new ensemble, which this member may initialize.
    New,
    /// The ensemble has data but no membership counted this member yet: it is being added.
    Joining,
    /// The ensemble has data this member may have acknowledged; the newest term reported.
    Existing(u64),
}

/// The verdict of an empty member's probe, given what `answers` the other voters gave so far
/// (`voters` counts every voter, this member included); `None` while not known yet.
pub fn verdict(voters: usize, answers: &[Standing]) -> Option<Verdict> {
    let term = answers.iter().map(|a| a.state.term).max().unwrap_or(0);
    if answers.iter().any(|a| a.state.has_entries && a.counts_asker) {
        return Some(Verdict::Existing(term));
    }
    let quorum = 1 + answers.len() > voters / 2;
    if answers.iter().any(|a| a.state.has_entries) {
        return quorum.then_some(Verdict::Joining);
    }
    quorum.then_some(Verdict::New)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("zkr-amnesia-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn log_id(term: u64, index: u64) -> LogId {
        LogId::new(openraft::CommittedLeaderId::new(term, 1), index)
    }

    #[test]
    fn an_amnesiac_member_is_whole_again_only_at_a_leaders_commit_point_of_its_own_term() {
        let d = dir("caught-up");
        let m = Marker { reason: "log cut".into(), floor_term: 5 };
        mark(&d, &m).unwrap();
        let a = Amnesia::new(&d, State::Lost(load(&d).unwrap().unwrap()));
        assert!(a.active() && a.refusal().unwrap().contains("acceptDataLoss"));
        // A leader of an older term is refused; a newer one is followed.
        assert!(a.refuses_leader(4) && !a.refuses_leader(5) && !a.refuses_leader(7));
        // Behind the commit point, or a commit point of an older term: still amnesiac.
        assert!(!a.caught_up(6, Some(log_id(6, 40)), Some(39)));
        assert!(!a.caught_up(6, Some(log_id(5, 40)), Some(50)));
        assert!(!a.caught_up(4, Some(log_id(4, 40)), Some(50)));
        assert!(!a.caught_up(6, None, Some(50)));
        assert!(load(&d).unwrap().is_some(), "the marker survives a restart until the member is whole");
        assert!(a.caught_up(6, Some(log_id(6, 40)), Some(40)));
        assert!(!a.active() && a.refusal().is_none());
        assert!(load(&d).unwrap().is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_empty_member_is_amnesiac_if_any_other_counting_it_has_entries_and_new_only_with_a_quorum_of_empty_ones() {
        let empty = Standing::from(StateAnswer { has_entries: false, term: 0 });
        let full = Standing::from(StateAnswer { has_entries: true, term: 9 });
        let adding = Standing { counts_asker: false, ..full };
        assert_eq!(verdict(3, &[]), None, "alone it cannot tell");
        assert_eq!(verdict(3, &[empty]), Some(Verdict::New), "two of three empty: a new ensemble");
        assert_eq!(verdict(5, &[empty]), None);
        assert_eq!(verdict(5, &[empty, empty]), Some(Verdict::New));
        assert_eq!(verdict(3, &[full]), Some(Verdict::Existing(9)));
        assert_eq!(verdict(5, &[empty, empty, full]), Some(Verdict::Existing(9)), "any member with entries wins");
        // A member added by a reconfig, not caught up yet: joining once a quorum says so, and
        // any member counting it (or too old to say) makes it amnesiac.
        assert_eq!(verdict(4, &[adding]), None);
        assert_eq!(verdict(4, &[adding, adding]), Some(Verdict::Joining));
        assert_eq!(verdict(4, &[adding, empty]), Some(Verdict::Joining));
        assert_eq!(verdict(4, &[adding, adding, full]), Some(Verdict::Existing(9)));
        let d = dir("probe");
        let a = Amnesia::new(&d, State::Probing);
        assert!(a.active());
        a.probed(Verdict::Existing(9)).unwrap();
        assert_eq!(load(&d).unwrap().map(|m| m.floor_term), Some(9));
        assert!(a.refuses_leader(8));
        // Caught up by a leader of that term while it asked: whole, no marker; by an older
        // leader only: amnesiac.
        let _ = std::fs::remove_file(path(&d));
        let c = Amnesia::new(&d, State::Probing);
        assert!(!c.caught_up(9, Some(log_id(9, 12)), Some(12)));
        c.probed(Verdict::Existing(9)).unwrap();
        assert!(!c.active() && load(&d).unwrap().is_none(), "a joining member caught up before the answers votes");
        let c = Amnesia::new(&d, State::Probing);
        assert!(!c.caught_up(8, Some(log_id(8, 12)), Some(12)));
        c.probed(Verdict::Existing(9)).unwrap();
        assert!(c.active() && load(&d).unwrap().is_some(), "caught up by an older leader only: amnesiac");
        let _ = std::fs::remove_file(path(&d));
        for v in [Verdict::New, Verdict::Joining] {
            let b = Amnesia::new(&d, State::Probing);
            b.probed(v).unwrap();
            assert!(!b.active() && load(&d).unwrap().is_none());
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_membership_counts_its_voters_and_the_old_half_of_a_joint_one_only() {
        let set = |v: &[u64]| v.iter().copied().collect::<std::collections::BTreeSet<u64>>();
        assert!(counts(&[set(&[1, 2, 3])], 2));
        assert!(!counts(&[set(&[1, 2, 3])], 4), "a learner");
        // Adding 4: its acknowledgements never commit anything without a quorum of {1,2,3}.
        assert!(!counts(&[set(&[1, 2, 3]), set(&[1, 2, 3, 4])], 4));
        // Removing 4: entries committed before may rest on it.
        assert!(counts(&[set(&[1, 2, 3, 4]), set(&[1, 2, 3])], 4));
        assert!(!counts(&[], 1));
    }
}
