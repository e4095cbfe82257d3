//! The AdminServer's `restore` on an ensemble member: the ZooKeeper snapshot goes through the
//! replicated log, so every member makes the same tree of it at the same point of the log.
//!
//! ```text
//!  member asked        RestoreChunk{id, 0..n-1}   each chunk staged with the tree on every
//!  (any member)  ───►  RestoreEnd{id, n}          member (`DataTree::staged_restore`), so a
//!                                                 snapshot or a new leader carries them
//!  every member applies the end record: all n chunks staged? they parse as a whole ZooKeeper
//!  snapshot? → the tree is replaced at that record (`Core::install_restored`); otherwise
//!  nothing changes, on every member alike, and the member asked answers why.
//! ```
//!
//! A chunk lost with a leader change leaves the end record short of chunks: the restore is
//! refused as a whole and may be sent again. Watches fire for what the restore changed, and the
//! connections of sessions the snapshot lacks close (`Core::install_restored`). The replaced
//! tree keeps the ensemble's own
//! `/zookeeper/config` (ZooKeeper's ZKDatabase writes the server's configuration there after
//! it loads a snapshot) and its pending reconfig.

use super::{Core, Proposal, Waiting};
use crate::raft::command::{Command, CommandOp, Origin};
use crate::server::core::restore::{highest_zxid, RestoreError, RestoreReply};
use crate::tree::{DataTree, StagedRestore};
use crate::txn::Zxid;

/// The bytes of one logged chunk: well inside a peer frame and a snapshot's read window.
const CHUNK: usize = 512 * 1024;

impl Core {
    /// Logs the snapshot `raw` (checked whole by the AdminServer) chunk by chunk and its end
    /// record; `reply` is answered when this member applies the end record.
    pub(in crate::server::core) fn propose_restore(&mut self, raw: bytes::Bytes, reply: RestoreReply) {
        let Some(r) = self.log.replicated_mut() else { return };
        // Unique in the log: this member's id above this run's proposal numbers.
        let restore = ((r.me as i64) << 48) | (r.next_seq as i64 & 0xffff_ffff_ffff);
        let chunks = raw.len().div_ceil(CHUNK).max(1);
        for index in 0..chunks {
            let bytes = raw.slice(index * CHUNK..((index + 1) * CHUNK).min(raw.len()));
            // A numbered proposal (nobody waits for it): a chunk forwarded by a follower must
            // not pass for a leader's own decision (`Command::decided_by_another_leader`).
            r.next_seq += 1;
            let origin = Origin { member: r.me, seq: r.next_seq };
            let op = CommandOp::RestoreChunk { restore, index: index as i32, bytes };
            let cmd = Command { origin, time: crate::server::core::wall_ms(), session: 0, op };
            if !r.out.send(Proposal::Command(cmd)) {
                let _ = reply.send(Err(RestoreError::Busy));
                return;
            }
        }
        tracing::info!(
            restore = format!("0x{restore:x}"),
            chunks,
            bytes = raw.len(),
            "restore: the snapshot goes through the log"
        );
        let op = CommandOp::RestoreEnd { restore, chunks: chunks as i32 };
        self.propose(0, op, Some(Waiting::Restore { reply }));
    }

    /// A chunk of restore `restore`: staged if it is the next one (chunk 0 starts over).
    pub(super) fn apply_restore_chunk(&mut self, restore: i64, index: i32, bytes: bytes::Bytes) {
        if index == 0 {
            self.tree.set_staged_restore(Some(StagedRestore { id: restore, chunks: vec![bytes] }));
            return;
        }
        match self.tree.staged_restore_mut() {
            Some(s) if s.id == restore && s.chunks.len() == index as usize => s.chunks.push(bytes),
            // Another restore's, or one after a lost chunk: the end record finds it short.
            _ => {}
        }
    }

    /// The end of restore `restore`: the tree replaced at `zxid` if its chunks are all staged
    /// and make a whole ZooKeeper snapshot, on every member alike. True if a txn was applied.
    pub(super) fn apply_restore_end(
        &mut self,
        zxid: Zxid,
        time: i64,
        restore: i64,
        chunks: i32,
        waiting: Option<Waiting>,
    ) -> bool {
        let outcome = self.restored_tree(restore, chunks);
        let reply = |r: Result<Zxid, RestoreError>| {
            if let Some(Waiting::Restore { reply }) = waiting {
                let _ = reply.send(r);
            }
        };
        let mut restored = match outcome {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(restore = format!("0x{restore:x}"), "restore refused on every member: {e}");
                reply(Err(e));
                return false;
            }
        };
        let at = zxid.max(highest_zxid(&restored) + 1);
        restored.set_last_zxid(at);
        restored.set_pending_reconfig(self.tree.pending_reconfig().map(<[u8]>::to_vec));
        tracing::info!(
            restore = format!("0x{restore:x}"),
            zxid = format!("0x{at:x}"),
            znodes = restored.node_count(),
            sessions = restored.sessions().len(),
            "restored the tree from a snapshot (AdminServer restore, through the log)"
        );
        reply(Ok(at));
        // (Proposals waiting here stay: the log orders them before or after this record.)
        self.install_restored(restored);
        if let Some(m) = self.log.replicated().map(|r| r.membership.clone()) {
            if self.tree.get("/zookeeper/config").is_some() {
                self.write_config(at, time, &m);
            }
        }
        true
    }

    /// The staged chunks of `restore` taken off the tree and parsed; the tree otherwise
    /// unchanged.
    fn restored_tree(&mut self, restore: i64, chunks: i32) -> Result<DataTree, RestoreError> {
        let staged = match self.tree.staged_restore() {
            Some(s) if s.id == restore => s.clone(),
            _ => return Err(RestoreError::Incomplete { staged: 0, logged: chunks }),
        };
        self.tree.set_staged_restore(None);
        if staged.chunks.len() != chunks as usize {
            return Err(RestoreError::Incomplete { staged: staged.chunks.len() as i32, logged: chunks });
        }
        let body: Vec<u8> = staged.chunks.concat();
        let label = std::path::Path::new("the restore's logged snapshot");
        let parsed = crate::import::snapfile::read_stream(Box::new(std::io::Cursor::new(body)), label)
            .map_err(|e| RestoreError::NotASnapshot(e.to_string()))?;
        let mut tree = parsed.tree;
        if let Some(z) = parsed.last_processed {
            tree.set_last_zxid(tree.last_zxid().max(z));
        }
        Ok(tree)
    }
}
