//! Divergence is detected, never silent: every member records its tree digest where each entry
//! ends, compares it with the leader's check carried by later entries (`command::AppliedCheck`),
//! and refuses entries made under prep rules it does not share (`command::PREP_VERSION`). A
//! member that finds itself different stops serving at once, says where (the zxid and both
//! digests), and starts over from the leader: its Raft state is set aside at its next start
//! (`raft::diverge`), and the leader refills it as an empty member. The leader's digest is
//! the reference, as in ZooKeeper (a learner that disagrees is the one that is wrong).

use super::*;
use crate::raft::command::{prepares_alike, AppliedCheck, Batch, LatestCheck, PREP_VERSION};
use std::collections::VecDeque;

/// Entry ends remembered: a check names one of the entries the leader had applied when it made
/// the entry carrying it, a pipeline's depth behind at most.
const REMEMBERED: usize = 4096;

/// What a member keeps to check itself against the leader.
#[derive(Debug, Default)]
pub struct Checks {
    /// This member's digest where each recent entry ended, oldest first.
    ends: VecDeque<AppliedCheck>,
    /// Where the member publishes its newest end, for its submitter when it leads.
    latest: LatestCheck,
    /// Why this member stopped applying and serving, once it did.
    pub(super) stopped: Option<String>,
}

impl Checks {
    pub fn new(latest: LatestCheck) -> Checks {
        Checks { latest, ..Checks::default() }
    }

    fn digest_at(&self, zxid: Zxid) -> Option<u64> {
        let i = self.ends.binary_search_by_key(&zxid, |c| c.zxid).ok()?;
        self.ends.get(i).map(|c| c.digest)
    }

    /// Everything recorded before a snapshot replaced the tree no longer applies.
    pub(super) fn forget(&mut self) {
        self.ends.clear();
    }
}

impl Replicated {
    /// Why this member stopped applying and serving, if it did.
    pub fn stopped(&self) -> Option<&str> {
        self.checks.stopped.as_deref()
    }

    /// This member's newest entry end (what its submitter puts in the batches it makes).
    #[cfg(test)]
    pub(super) fn checks_latest(&self) -> Option<AppliedCheck> {
        *self.checks.latest.lock()
    }
}

impl Core {
    /// Why a batch must not be applied here, if it must not: prep rules this code does not share,
    /// or a tree that differs from the leader's at the batch's check.
    pub(super) fn refuses_batch(&mut self, batch: &Batch) -> Option<(String, bool)> {
        if !prepares_alike(batch.version()) {
            return Some((
                format!(
                    "an entry was prepared under prep rules {} and this member's code knows {PREP_VERSION}: \
                     upgrade this member (a member never applies what its code would prepare differently)",
                    batch.version()
                ),
                false,
            ));
        }
        let check = batch.check()?;
        let r = self.log.replicated()?;
        let mine = r.checks.digest_at(check.zxid)?;
        (mine != check.digest).then(|| {
            (
                format!(
                    "this member's tree differs from the leader's at zxid 0x{:x}: digest {mine:016x} here, {:016x} on the leader",
                    check.zxid, check.digest
                ),
                true,
            )
        })
    }

    /// Records this member's digest where an entry ended and publishes it.
    pub(super) fn record_end(&mut self) {
        let end = AppliedCheck { zxid: self.tree.last_zxid(), digest: self.tree.digest() };
        let Some(r) = self.log.replicated_mut() else { return };
        let c = &mut r.checks;
        if c.ends.back().is_some_and(|b| b.zxid >= end.zxid) {
            // A blank or attach-only entry: the same end again.
            if c.ends.back().is_some_and(|b| b.zxid == end.zxid) {
                c.ends.pop_back();
            } else {
                c.ends.clear();
            }
        }
        c.ends.push_back(end);
        while c.ends.len() > REMEMBERED {
            c.ends.pop_front();
        }
        *c.latest.lock() = Some(end);
    }

    /// This member must not go on: it stops serving and applying, says why, and (when its tree
    /// diverged) starts over from the leader at its next start; with `exit_on_fatal` it stops
    /// the process for its supervisor to restart it.
    pub(super) fn stop_member(&mut self, why: String, start_over: bool) {
        tracing::error!("{why}: this member stops serving");
        eprintln!("zkr: {why}: this member stops serving");
        if start_over && !self.log.replicated().is_some_and(|r| r.offline) {
            let dir = crate::raft::raft_dir(&self.cfg);
            match crate::raft::diverge::mark(&dir, &why) {
                Ok(()) => tracing::error!("its Raft state is set aside at its next start, and the leader refills it"),
                Err(e) => tracing::error!("cannot mark the Raft state to be set aside: {e}"),
            }
        }
        self.close_client_conns();
        self.fail_all();
        if let Some(r) = self.repl() {
            r.checks.stopped = Some(why);
        }
        if self.cfg.exit_on_fatal {
            std::process::exit(70);
        }
    }
}
