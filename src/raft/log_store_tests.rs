//! The Raft log store's reading of what is on disk.

use super::{clamp_committed, write_small, LogStore};
use crate::raft::types::Entry;
use crate::storage::segment::{self, HEADER, RAFT};
use openraft::{CommittedLeaderId, EntryPayload, LogId, RaftLogReader};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

fn id(term: u64, index: u64) -> LogId<u64> {
    LogId::new(CommittedLeaderId::new(term, 1), index)
}

#[test]
fn a_commit_hint_past_the_end_of_a_cut_log_is_clamped_to_it() {
    assert_eq!(clamp_committed(Some(id(1, 898)), Some(id(1, 897))), Some(id(1, 897)));
    assert_eq!(clamp_committed(Some(id(1, 10)), None), None);
    assert_eq!(clamp_committed(Some(id(1, 5)), Some(id(2, 9))), Some(id(1, 5)));
    assert_eq!(clamp_committed(None, Some(id(2, 9))), None);
}

fn raft_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("zkr-log-store-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("log")).unwrap();
    d
}

/// Writes one segment holding `indexes` (term 1, blank entries), as the store writes them.
fn write_segment(raft_dir: &Path, indexes: &[u64]) {
    let (_, f) = RAFT.create(&raft_dir.join("log"), indexes[0], true).unwrap();
    let mut bytes = Vec::new();
    for i in indexes {
        let e = Entry { log_id: id(1, *i), payload: EntryPayload::Blank };
        segment::frame(&mut bytes, |b| bincode::serialize_into(b, &e).unwrap());
    }
    f.write_all_at(&bytes, HEADER).unwrap();
}

async fn indexes(store: &mut LogStore, from: u64) -> Vec<u64> {
    store.try_get_log_entries(from..).await.unwrap().iter().map(|e| e.log_id.index).collect()
}

/// Found by the fault suite (lose-acked-log, seed 587336182): a member whose log was cut below
/// its snapshot has openraft purge past the log's end and append after the snapshot in the same
/// segment. On the next start the jump over purged entries is the log's new start, not damage.
#[tokio::test]
async fn a_jump_over_purged_entries_reads_as_the_logs_new_start() {
    let dir = raft_dir("purged-jump");
    write_segment(&dir, &[5, 6, 7, 20, 21]);
    write_small(&dir.join("purged"), &id(1, 19), true).unwrap();
    let mut store = LogStore::open(&dir, false).expect("a jump over purged entries is not damage");
    assert_eq!(indexes(&mut store, 0).await, vec![20, 21]);
    drop(store);

    // The same jump with nothing purged up to it is a hole in the log: damage, named by offset.
    std::fs::remove_file(dir.join("purged")).unwrap();
    write_small(&dir.join("purged"), &id(1, 18), true).unwrap();
    match LogStore::open(&dir, false) {
        Err(crate::storage::StorageError::Corrupt { reason, .. }) => {
            assert!(reason.contains("entry 20 follows entry 7"), "{reason}")
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a hole in the log was read as sound"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
