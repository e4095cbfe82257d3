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

/// The written end of a segment: one past its last non-zero byte.
fn written_end(bytes: &[u8]) -> usize {
    bytes.iter().rposition(|b| *b != 0).map_or(0, |p| p + 1)
}

/// Issue 38, item 1: a torn append (its later bytes never reached the disk) and an fsync'd last
/// record damaged afterwards look alike without the end mark; with it, the first is cut and the
/// second is damage (the member then does not vote until its leader refilled it).
#[tokio::test]
async fn a_torn_last_record_is_cut_and_a_damaged_complete_one_is_refused() {
    let dir = raft_dir("torn-or-damaged");
    write_segment(&dir, &[1, 2, 3]);
    let seg = dir.join("log").join(RAFT.name(1));
    let pristine = std::fs::read(&seg).unwrap();
    let end = written_end(&pristine);
    let last = end
        - 4
        - 8
        - bincode::serialized_size(&Entry { log_id: id(1, 3), payload: EntryPayload::Blank }).unwrap() as usize;

    // Torn: the last record's second half (end mark included) is zeros.
    let mut torn = pristine.clone();
    torn[last + (end - last) / 2..end].fill(0);
    std::fs::write(&seg, &torn).unwrap();
    let mut store = LogStore::open(&dir, false).expect("a torn tail is cut");
    assert_eq!(indexes(&mut store, 0).await, vec![1, 2]);
    drop(store);

    // Damaged: one byte flipped in the middle of the complete last record.
    let mut flipped = pristine.clone();
    flipped[last + 10] ^= 0x01;
    std::fs::write(&seg, &flipped).unwrap();
    match LogStore::open(&dir, false) {
        Err(crate::storage::StorageError::Corrupt { offset, reason, .. }) => {
            assert_eq!(offset, last as u64);
            assert!(reason.contains("complete record"), "{reason}");
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a damaged complete record was read as a torn tail"),
    }

    // A length field that claims more than the record: still complete, still damage.
    let mut longer = pristine.clone();
    longer[last + 3] = longer[last + 3].wrapping_add(100);
    std::fs::write(&seg, &longer).unwrap();
    assert!(LogStore::open(&dir, false).is_err(), "a grown length is damage, not a torn tail");

    // A record whose checksum holds is kept though its end mark never reached the disk.
    let mut no_mark = pristine.clone();
    no_mark[end - 4..end].fill(0);
    std::fs::write(&seg, &no_mark).unwrap();
    let mut store = LogStore::open(&dir, false).expect("an intact payload is kept");
    assert_eq!(indexes(&mut store, 0).await, vec![1, 2, 3]);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Segments written before the end mark (format version 1) are read, and appends go to a new
/// segment instead of mixing the formats in one file.
#[tokio::test]
async fn a_segment_of_format_version_1_is_read_and_never_appended_to() {
    let dir = raft_dir("version-1");
    let (path, f) = RAFT.create(&dir.join("log"), 1, true).unwrap();
    f.write_all_at(&1u32.to_be_bytes(), 4).unwrap();
    let mut bytes = Vec::new();
    for i in 1..=3 {
        let e = Entry { log_id: id(1, i), payload: EntryPayload::Blank };
        let mut rec = Vec::new();
        segment::frame(&mut rec, |b| bincode::serialize_into(b, &e).unwrap());
        rec.truncate(rec.len() - segment::END_MARK.len());
        bytes.extend_from_slice(&rec);
    }
    f.write_all_at(&bytes, HEADER).unwrap();
    drop(f);
    let mut store = LogStore::open(&dir, false).expect("a version 1 segment reads");
    assert_eq!(indexes(&mut store, 0).await, vec![1, 2, 3]);
    assert_eq!(store.state.lock().write_seg, None, "the next append starts a new segment");
    drop(store);

    // A torn version 1 tail is cut as before.
    let mut torn = std::fs::read(&path).unwrap();
    let end = written_end(&torn);
    torn[end - 5..end].fill(0);
    std::fs::write(&path, &torn).unwrap();
    let mut store = LogStore::open(&dir, false).expect("a torn version 1 tail is cut");
    assert_eq!(indexes(&mut store, 0).await, vec![1, 2]);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 43, item 2: an AppendEntries carries at most `APPEND_MAX_BYTES` of entries (one larger
/// entry alone), whatever number openraft asks for: 64 entries of 1 MB znodes took longer than
/// the heartbeat openraft gives each AppendEntries, and replication never advanced.
#[tokio::test]
async fn what_one_append_carries_is_bounded_by_bytes_and_never_empty() {
    use crate::raft::command::{Batch, Command, CommandOp, Origin};
    const K: usize = 1024;
    let dir = raft_dir("append-bytes");
    let sizes = [600 * K, 600 * K, 100 * K, 100 * K, 2048 * K, 10 * K];
    let (_, f) = RAFT.create(&dir.join("log"), 1, true).unwrap();
    let mut bytes = Vec::new();
    for (i, size) in sizes.iter().enumerate() {
        let reap = CommandOp::Reap { path: "r".repeat(*size) };
        let cmd = Command { origin: Origin::default(), time: 1, session: 0, op: reap };
        let e = Entry { log_id: id(1, i as u64 + 1), payload: EntryPayload::Normal(Batch::new(vec![cmd], None)) };
        segment::frame(&mut bytes, |b| bincode::serialize_into(b, &e).unwrap());
    }
    f.write_all_at(&bytes, HEADER).unwrap();
    drop(f);
    let mut store = LogStore::open(&dir, false).unwrap();
    let sent = |start, end| {
        let mut store = store.clone();
        async move {
            let got = store.limited_get_log_entries(start, end).await.unwrap();
            got.iter().map(|e| e.log_id.index).collect::<Vec<u64>>()
        }
    };
    assert_eq!(crate::raft::APPEND_MAX_BYTES, 1024 * K);
    assert_eq!(sent(1, 7).await, vec![1], "600 KB + 600 KB is over 1 MiB");
    assert_eq!(sent(2, 7).await, vec![2, 3, 4], "600 + 100 + 100 KB fit, 2 MB more does not");
    assert_eq!(sent(5, 7).await, vec![5], "an entry over the bound goes alone");
    assert_eq!(sent(6, 7).await, vec![6]);
    assert_eq!(sent(3, 5).await, vec![3, 4], "never past the end asked for");
    assert_eq!(sent(4, 4).await, Vec::<u64>::new());
    // Everything else that reads the log (apply, snapshots) still gets the whole range.
    assert_eq!(indexes(&mut store, 1).await, vec![1, 2, 3, 4, 5, 6]);
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}
