//! openraft's type configuration for zkr: an entry carries a `Batch` of commands, a member is described
//! by its `server.N` line, a snapshot travels as a file.

use super::command::Batch;
use super::members::ServerSpec;

openraft::declare_raft_types!(
    /// zkr's Raft types.
    pub Zkr:
        D = Batch,
        R = (),
        NodeId = u64,
        Node = ServerSpec,
        Entry = openraft::Entry<Zkr>,
        SnapshotData = tokio::fs::File,
        AsyncRuntime = openraft::TokioRuntime,
);

pub type MemberId = u64;
pub type Entry = openraft::Entry<Zkr>;
pub type LogId = openraft::LogId<MemberId>;
pub type Vote = openraft::Vote<MemberId>;
pub type Membership = openraft::StoredMembership<MemberId, ServerSpec>;
pub type SnapshotMeta = openraft::SnapshotMeta<MemberId, ServerSpec>;
pub type StorageError = openraft::StorageError<MemberId>;
pub type Raft = openraft::Raft<Zkr>;

/// True while `m` is the first step of openraft's two-step membership change (old and new
/// voter sets both counted), the state a reconfig must never be left in.
pub fn is_joint(m: &openraft::Membership<MemberId, ServerSpec>) -> bool {
    m.get_joint_config().len() > 1
}

/// The zxid of a log position: the term as ZooKeeper's epoch in the high 32 bits, the index in
/// the low 32, so zxids strictly increase along the log and across leader changes (a new term
/// is always higher) and mean the same on every member.
pub fn zxid_of(log_id: &LogId) -> i64 {
    ((log_id.leader_id.term as i64) << 32) | (log_id.index & 0xffff_ffff) as i64
}

/// The first zxid of a term: a new leader's first (blank) entry moves the applied zxid there,
/// as a ZooKeeper leader's NEWLEADER zxid is its new epoch with counter 0.
pub fn epoch_start(log_id: &LogId) -> i64 {
    (log_id.leader_id.term as i64) << 32
}

/// The zxid of the next txn applied from an entry of `log_id`'s term after `last`: the term is
/// ZooKeeper's epoch, and the counter below it counts the term's txns (an entry carries a batch
/// of commands, each its own txn, so the log index alone cannot number them). Every member
/// applies the same log from the same snapshot, so every member numbers them alike.
pub fn next_zxid(last: i64, log_id: &LogId) -> i64 {
    (last + 1).max(epoch_start(log_id) + 1)
}

/// openraft's storage I/O error on the log, keeping `e` and its sources (as openraft's own
/// stores do with `StorageIOError::write_logs(&e)`).
pub fn log_err<E: std::error::Error + 'static>(e: E) -> StorageError {
    openraft::StorageIOError::write_logs(openraft::AnyError::new(&e)).into()
}

/// openraft's storage I/O error on the log, for a failure that has no error value of its own.
pub fn log_msg(msg: impl std::fmt::Display) -> StorageError {
    openraft::StorageIOError::write_logs(openraft::AnyError::error(msg)).into()
}

/// openraft's storage I/O error on the state machine, keeping `e` and its sources.
pub fn sm_err<E: std::error::Error + 'static>(e: E) -> StorageError {
    openraft::StorageIOError::write_state_machine(openraft::AnyError::new(&e)).into()
}

/// openraft's storage I/O error on the state machine, for a failure without an error value.
pub fn sm_msg(msg: impl std::fmt::Display) -> StorageError {
    openraft::StorageIOError::write_state_machine(openraft::AnyError::error(msg)).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zxids_increase_along_the_log_and_across_terms() {
        let id = |term, index| LogId::new(openraft::CommittedLeaderId::new(term, 1), index);
        assert!(zxid_of(&id(1, 5)) < zxid_of(&id(1, 6)));
        assert!(zxid_of(&id(1, 900)) < zxid_of(&id(2, 901)));
        assert_eq!(zxid_of(&id(3, 7)), 0x3_0000_0007);
        // Txns within a term count up from the term's start; a new term starts over above it.
        assert_eq!(next_zxid(0, &id(1, 1)), 0x1_0000_0001);
        assert_eq!(next_zxid(0x1_0000_0001, &id(1, 1)), 0x1_0000_0002);
        assert_eq!(next_zxid(0x1_0000_0002, &id(2, 9)), 0x2_0000_0001);
        assert_eq!(epoch_start(&id(2, 9)), 0x2_0000_0000);
    }
}
