//! Damaged log files on disk, with the real binary (issue #13): corruption in the middle of the
//! log stops startup and changes nothing, `zkr repair-log` cuts it keeping a copy, a torn tail
//! is cut keeping a copy, and an unfinished snapshot is removed.

use crate::common;
use crate::durable;

use common::Raw;
use durable::{create, get, refused_startup, repair_log, spawn, wait_for_log};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use zkr::txn::TxnOp;

/// Every file under `dir` with its bytes, by path relative to `dir`.
fn image(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.insert(p.strip_prefix(dir).unwrap().to_owned(), std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// (offset, zxid, op) of each record of a segment.
fn records(bytes: &[u8]) -> Vec<(usize, i64, TxnOp)> {
    let mut out = Vec::new();
    let mut off = 8;
    // Format version 2 records end with a 4-byte end mark (`storage::segment`).
    let trailer = if bytes[4..8] == [0, 0, 0, 1] { 0 } else { 4 };
    loop {
        let len = u32::from_be_bytes(bytes[off..off + 4].try_into().unwrap()) as usize;
        if len == 0 {
            return out;
        }
        let txn = zkr::storage::record::decode(&bytes[off + 8..off + 8 + len]).unwrap();
        out.push((off, txn.zxid, txn.op));
        off += 8 + len + trailer;
    }
}

/// What the issue did: 200 acknowledged creates (/n0 ../n199), then kill -9. Returns the data
/// directory and its only log segment.
fn two_hundred_creates_then_kill9() -> (PathBuf, PathBuf) {
    let data = common::temp_dir();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let p = spawn(&data, &[]);
        let (mut c, _) = Raw::connect(&p.addr, 5000).await;
        for i in 0..200 {
            let (h, _) = c.call(&create(i, &format!("/n{i}"), b"acknowledged", 0)).await;
            assert_eq!(h.err, 0, "/n{i} acknowledged");
        }
        p.kill9();
    });
    let segs: Vec<_> = std::fs::read_dir(data.join("wal")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(segs.len(), 1, "{segs:?}");
    (data, segs[0].clone())
}

/// Which of /n0 ../n199 a server on `data` has.
fn present(data: &Path) -> Vec<bool> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let p = spawn(data, &[]);
        let (mut c, _) = Raw::connect(&p.addr, 5000).await;
        let mut out = Vec::new();
        for i in 0..200 {
            out.push(c.call(&get(i, &format!("/n{i}"))).await.0.err == 0);
        }
        p.kill9();
        out
    })
}

/// The scenario with `damage` done to record 100 of the segment: startup is refused
/// naming file, offset and the repair, and nothing on disk changes; `zkr repair-log` cuts the
/// log at record 100, keeping a copy of the segment as it was, and zkr then starts with
/// records 1-99 and takes new writes that survive a restart.
fn damage_mid_log_then_repair(damage: impl Fn(&mut [u8], usize)) {
    let (data, seg) = two_hundred_creates_then_kill9();
    let mut bytes = std::fs::read(&seg).unwrap();
    let recs = records(&bytes);
    assert_eq!(recs.len(), 201, "createSession and 200 creates");
    let (at, zxid, op) = recs[99].clone();
    assert_eq!(zxid, 100);
    assert!(matches!(op, TxnOp::Create { ref path, .. } if path == "/n98"), "{op:?}");
    damage(&mut bytes, at);
    std::fs::write(&seg, &bytes).unwrap();
    let wal = data.join("wal");
    let before = image(&wal);

    let err = refused_startup(&data);
    assert!(err.contains(&seg.display().to_string()), "names the file: {err}");
    assert!(err.contains(&format!("corrupt at offset {at}:")), "names the offset {at}: {err}");
    assert!(err.contains("zkr repair-log") && err.contains(&wal.join("damaged").display().to_string()), "{err}");
    assert!(image(&wal) == before, "a refused start changes nothing on disk");

    let (status, said) = repair_log(&data);
    assert!(status.success(), "{said}");
    assert!(said.contains(&format!("cut {} at offset {at}", seg.display())), "{said}");
    let kept = image(&wal.join("damaged"));
    assert_eq!(kept.len(), 1, "{said}");
    let written = bytes.iter().rposition(|b| *b != 0).unwrap() + 1;
    assert!(kept.values().next().unwrap()[..] == bytes[..written], "the copy is the segment as it was");
    assert!(said.contains(&wal.join("damaged").join(kept.keys().next().unwrap()).display().to_string()), "{said}");

    let have = present(&data);
    assert!(have[..98].iter().all(|x| *x), "records before the cut are served");
    assert!(have[98..].iter().all(|x| !*x), "records from the cut on are only in the copy");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let p = spawn(&data, &[]);
        let (mut c, _) = Raw::connect(&p.addr, 5000).await;
        let (h, _) = c.call(&create(1, "/after-repair", b"", 0)).await;
        assert_eq!(h.err, 0);
        p.kill9();
        let p = spawn(&data, &[]);
        let (mut c, _) = Raw::connect(&p.addr, 5000).await;
        assert_eq!(c.call(&get(1, "/after-repair")).await.0.err, 0, "the repaired log takes new writes");
        assert_eq!(c.call(&get(2, "/n97")).await.0.err, 0);
        p.kill9();
    });
}

#[test]
fn a_flipped_length_bit_mid_log_is_refused_and_repair_log_keeps_a_copy() {
    damage_mid_log_then_repair(|b, at| {
        b[at + 1] ^= 0x10; // bit 20 of the length
        let len = u32::from_be_bytes(b[at..at + 4].try_into().unwrap());
        assert!(len > 1 << 20, "a length of {len}");
    });
}

#[test]
fn eight_zero_bytes_at_a_mid_log_record_are_refused_and_repair_log_keeps_a_copy() {
    damage_mid_log_then_repair(|b, at| b[at..at + 8].fill(0));
}

#[test]
fn repair_log_on_a_sound_log_changes_nothing() {
    let (data, _) = two_hundred_creates_then_kill9();
    let before = image(&data.join("wal"));
    let (status, said) = repair_log(&data);
    assert!(status.success() && said.contains("nothing changed"), "{said}");
    assert!(image(&data.join("wal")) == before);
}

#[test]
fn a_torn_tail_is_cut_keeping_a_copy_and_the_log_line_names_it() {
    let (data, seg) = two_hundred_creates_then_kill9();
    let mut bytes = std::fs::read(&seg).unwrap();
    let (at, _, _) = records(&bytes)[200];
    // The last record's second half never reached the disk.
    let written = bytes.iter().rposition(|b| *b != 0).unwrap() + 1;
    let half = at + (written - at) / 2;
    bytes[half..written].fill(0);
    std::fs::write(&seg, &bytes).unwrap();

    let have = present(&data);
    assert!(have[..199].iter().all(|x| *x) && !have[199], "all but the torn last record");
    let kept = image(&data.join("wal").join("damaged"));
    assert_eq!(kept.len(), 1);
    let (name, copy) = kept.into_iter().next().unwrap();
    assert!(name.to_string_lossy().contains(".torn-"), "{name:?}");
    let torn_end = bytes.iter().rposition(|b| *b != 0).unwrap() + 1;
    assert!(copy[..] == bytes[..torn_end], "the copy is the segment as found");
    let log = wait_for_log(&data, "torn record");
    let copy_path = data.join("wal").join("damaged").join(&name);
    assert!(log.contains(&copy_path.display().to_string()), "the warning names the copy:\n{log}");
}

#[test]
fn an_unfinished_snapshot_is_removed_at_startup() {
    let data = common::temp_dir();
    std::fs::create_dir_all(data.join("snap")).unwrap();
    let tmp = data.join("snap").join("snapshot.00000000000001f4.tmp");
    std::fs::write(&tmp, b"ZKRS and then the disk filled up").unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let p = spawn(&data, &[]);
        let (mut c, _) = Raw::connect(&p.addr, 5000).await;
        assert_eq!(c.call(&create(1, "/x", b"", 0)).await.0.err, 0);
        p.kill9();
    });
    assert!(!tmp.exists());
    let log = wait_for_log(&data, "unfinished snapshot");
    assert!(log.contains("removed an unfinished snapshot") && log.contains(&tmp.display().to_string()), "{log}");
}
