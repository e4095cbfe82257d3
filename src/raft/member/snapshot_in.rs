//! A follower's check of a snapshot streamed to it, chunk by chunk, before openraft installs it:
//! a stream whose bytes are not a whole snapshot (`storage::snapshot_check`) never reaches
//! `install_snapshot`, where a snapshot that does not read stops the member (openraft takes any
//! state machine error as fatal). The leader is told the snapshot is bad as a remote error that
//! ends this transfer (a snapshot mismatch would make it send the same bytes again, from the same
//! open file, forever); it then asks its state machine for the snapshot again, which checks it
//! and takes a new one (`raft::state_machine`). Owns the state of the one stream of one peer
//! connection: a transfer that a broken connection moves to another is not checked.

use crate::raft::types::{MemberId, Zkr};
use crate::storage::snapshot_check::StreamCheck;
use openraft::error::{Fatal, InstallSnapshotError, RaftError};
use openraft::raft::InstallSnapshotRequest;
use openraft::{AnyError, ErrorSubject, ErrorVerb, StorageError, StorageIOError};

/// The snapshot being received on one connection: its id, the next offset, and its check.
#[derive(Default)]
pub(super) struct Incoming {
    stream: Option<(String, u64, StreamCheck)>,
}

impl Incoming {
    /// Takes chunk `r` into the check; the answer to send instead of installing, when it ends a
    /// stream that is not a whole snapshot. A stream not seen from its start (chunks of one
    /// snapshot on two connections) is passed on unchecked.
    pub(super) fn check(
        &mut self,
        from: MemberId,
        r: &InstallSnapshotRequest<Zkr>,
    ) -> Result<(), Box<RaftError<MemberId, InstallSnapshotError>>> {
        let id = &r.meta.snapshot_id;
        if r.offset == 0 {
            self.stream = Some((id.clone(), 0, StreamCheck::default()));
        }
        let Some((sid, next, check)) = self.stream.as_mut() else { return Ok(()) };
        if sid != id || *next != r.offset {
            self.stream = None;
            return Ok(());
        }
        check.update(&r.data);
        *next += r.data.len() as u64;
        if !r.done {
            return Ok(());
        }
        let Some((_, len, check)) = self.stream.take() else { return Ok(()) };
        check.finish().map_err(|why| {
            tracing::warn!(leader = from, id = %id, bytes = len, "a snapshot received from the leader is damaged ({why}): not installed, the leader is told");
            let subject = ErrorSubject::Snapshot(Some(r.meta.signature()));
            let io = StorageIOError::new(subject, ErrorVerb::Read, AnyError::error(format!("received damaged: {why}")));
            Box::new(RaftError::Fatal(Fatal::StorageError(StorageError::IO { source: io })))
        })
    }
}
