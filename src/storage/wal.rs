//! The write-ahead log: preallocated segment files of checksummed records.
//!
//! ```text
//! segment file  log.<zxid of its first record, 16 hex digits>
//!   header      "ZKRW" (4 bytes) | format version u32 = 2
//!   record*     length u32 | crc32 u32 (of payload) | payload (a Txn, see record.rs) | "ZKRE"
//!   zeros       the preallocated rest; a length of 0 marks the end of the data
//! ```
//! That is the segment format of `segment.rs`, which the Raft log shares; a new segment starts
//! when the current one is full.
//!
//! Recovery reads every segment in zxid order. A bad record (a length that is too large or runs
//! past the file, a checksum mismatch, a payload that does not decode, or a zero length with
//! non-zero bytes after it) is a torn tail — a crash mid-append — only if it was not written
//! whole (its written part does not end with the end mark, see segment.rs) and nothing valid
//! can follow it: it is in the last segment and no record that frames, checksums, decodes and
//! carries a later zxid lies anywhere after it (see damage.rs). A record written whole that
//! fails its checksum was damaged after it was written, and may have been acknowledged. Then a copy of the segment's
//! written part goes to `damaged/` and the tail is zeroed, with a warning naming the copy.
//! Anything else is corruption: recovery stops with the file and offset and changes nothing,
//! and `zkr repair-log` is the operator's way to cut the log there.

use super::{damage, StorageError};
use crate::txn::{Txn, Zxid};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::segment::{self, PREFIX, WAL};
pub use super::segment::{segment_name, HEADER, MAGIC, SEGMENT_BYTES, VERSION};

/// Segment files of a directory, sorted by their first zxid.
pub fn segments(dir: &Path) -> Result<Vec<(Zxid, PathBuf)>, StorageError> {
    super::numbered_files(dir, "log.")
}

/// What recovery found in the log.
pub struct Replay {
    pub txns: Vec<Txn>,
    /// Where appending continues: the last segment and the offset after its last good record.
    pub tail: Option<(PathBuf, u64)>,
}

/// Reads up to `buf.len()` bytes; fewer only at the end of the file.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// True if nothing but zeros is left to read.
fn rest_is_zero(r: &mut impl Read) -> std::io::Result<bool> {
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = r.read(&mut chunk)?;
        if n == 0 {
            return Ok(true);
        }
        if chunk[..n].iter().any(|b| *b != 0) {
            return Ok(false);
        }
    }
}

/// Corruption of the log at `offset` of segment `path`.
fn damaged(path: &Path, offset: u64, reason: String) -> StorageError {
    StorageError::CorruptLog { file: path.to_owned(), offset, reason }
}

/// Reads every record with zxid > `after`. `after` comes from the snapshot that recovery starts
/// from. Segments are streamed, so only their written part is read, not the preallocated rest;
/// where the data seems to end, the rest of that segment is scanned once (see `check_end`).
pub fn replay(dir: &Path, after: Zxid) -> Result<Replay, StorageError> {
    let segs = segments(dir)?;
    let mut txns = Vec::new();
    let mut tail = None;
    for (n, (first, path)) in segs.iter().enumerate() {
        let last = n + 1 == segs.len();
        // A segment followed by one that starts at or before `after + 1` holds nothing newer.
        if !last && segs[n + 1].0 <= after + 1 {
            continue;
        }
        let io = |e| StorageError::io(path, e);
        let file = File::open(path).map_err(io)?;
        let file_len = file.metadata().map_err(io)?.len();
        let mut r = std::io::BufReader::with_capacity(1 << 20, &file);
        let mut header = [0u8; HEADER as usize];
        let got = read_full(&mut r, &mut header).map_err(io)?;
        let Some(version) = WAL.version(&header[..got]) else {
            if last && header[..got].iter().all(|b| *b == 0) && rest_is_zero(&mut r).map_err(io)? {
                // Created but never written before a crash.
                tracing::warn!(file = %path.display(), "empty log segment, rewriting its header");
                tail = Some((path.clone(), 0));
                continue;
            }
            // The header is written and fsync'd before any record, so it cannot be torn.
            let why = if &header[..4.min(got)] == MAGIC {
                "a segment format version this build does not read"
            } else {
                "bad segment header"
            };
            return Err(damaged(path, 0, why.into()));
        };
        let mut mark = [0u8; segment::END_MARK.len()];
        let mark = &mut mark[..segment::trailer(version) as usize];
        let mut off = HEADER;
        // The zxid of the record before the one at `off`; a segment is named for its first.
        let mut prev = first.saturating_sub(1);
        let mut payload = Vec::new();
        loop {
            let mut prefix = [0u8; PREFIX];
            let got = read_full(&mut r, &mut prefix).map_err(io)?;
            if got == 0 {
                // The records fill the file exactly.
                break;
            }
            if prefix[..got].iter().all(|b| *b == 0) {
                // A zero prefix marks the end of the data, if only zeros follow it.
                if !check_end(&file, path, off, file_len, prev, last, version)? {
                    return Ok(Replay { txns, tail: Some((path.clone(), off)) });
                }
                break;
            }
            let (len, crc) = segment::read_prefix(&prefix);
            let len = len as u64;
            let bad = if got < PREFIX {
                Some("a record prefix cut short by the end of the file".to_string())
            } else if len == 0 {
                Some(format!("a zero length with a non-zero checksum 0x{crc:08x}"))
            } else if len > SEGMENT_BYTES {
                Some(format!("length {len} is larger than a segment"))
            } else {
                payload.resize(len as usize, 0);
                let have = read_full(&mut r, &mut payload).map_err(io)?;
                if have < payload.len() {
                    Some(format!("length {len} runs past the end of the file"))
                } else if !segment::checks(&payload, crc) {
                    Some(format!("record of length {len} fails its checksum"))
                } else {
                    None
                }
            };
            if let Some(reason) = bad {
                check_torn(&file, path, (off, file_len), prev, last, Some(version), reason)?;
                return Ok(Replay { txns, tail: Some((path.clone(), off)) });
            }
            // The end mark is not checked on a record whose checksum holds: its payload is intact.
            read_full(&mut r, mark).map_err(io)?;
            // Records the snapshot already covers are checked but not decoded.
            let zxid = payload.get(..8).map(|b| i64::from_be_bytes(b.try_into().unwrap_or([0; 8])));
            if let Some(z) = zxid.filter(|z| *z <= after) {
                prev = z;
                off += segment::record_bytes(len, version);
                continue;
            }
            let txn = match super::record::decode(&payload) {
                Ok(txn) => txn,
                Err(e) => {
                    let why = format!("record does not decode ({e:?})");
                    check_torn(&file, path, (off, file_len), prev, last, Some(version), why)?;
                    return Ok(Replay { txns, tail: Some((path.clone(), off)) });
                }
            };
            // A record that checks out but is out of order was not torn: the log itself is wrong.
            if let Some(before) = txns.last().map(|t: &Txn| t.zxid) {
                if txn.zxid != before + 1 {
                    return Err(damaged(path, off, format!("zxid 0x{:x} follows 0x{before:x}", txn.zxid)));
                }
            }
            prev = txn.zxid;
            txns.push(txn);
            off += segment::record_bytes(len, version);
        }
        if last {
            // Appends never go into a segment of an older format: a new segment starts (an old
            // one without records is rewritten).
            let appendable = version == segment::VERSION || off == HEADER;
            tail = appendable.then(|| (path.clone(), if version == segment::VERSION { off } else { 0 }));
        }
    }
    Ok(Replay { txns, tail })
}

/// At a zero prefix at `off`: true if only zeros follow (the end of the data). Non-zero bytes
/// after it are handled as a bad record at `off` (`check_torn`): false once they are cut off
/// as a torn tail.
fn check_end(
    file: &File,
    path: &Path,
    off: u64,
    file_len: u64,
    prev: Zxid,
    last: bool,
    version: u32,
) -> Result<bool, StorageError> {
    let rest = damage::scan_rest(file, off, file_len, prev).map_err(|e| StorageError::io(path, e))?;
    if rest.valid.is_none() && rest.written_end <= off {
        return Ok(true);
    }
    let whole = version >= segment::VERSION
        && damage::whole_record_without_prefix(file, off, rest.written_end, prev)
            .map_err(|e| StorageError::io(path, e))?;
    let why = if whole {
        "a zero length and checksum before a whole record's payload and end mark".to_owned()
    } else {
        "a zero length, with non-zero bytes after it".to_owned()
    };
    check_torn(file, path, (off, file_len), prev, last, Some(version).filter(|_| whole), why)?;
    Ok(false)
}

/// A bad record at `off` of a segment of `file_len` bytes: if it was not written whole and
/// nothing valid can follow it, it is a torn tail and is cut off, after a copy of the segment's
/// written part is kept; otherwise it is corruption, and the error says why. `version` is the
/// segment's format, to tell whether the record was written whole (`None`: it was not).
fn check_torn(
    file: &File,
    path: &Path,
    (off, file_len): (u64, u64),
    prev: Zxid,
    last: bool,
    version: Option<u32>,
    reason: String,
) -> Result<(), StorageError> {
    if !last {
        return Err(damaged(path, off, format!("{reason}; later log segments follow, so it is not a torn tail")));
    }
    let rest = damage::scan_rest(file, off, file_len, prev).map_err(|e| StorageError::io(path, e))?;
    if let Some((at, zxid)) = rest.valid {
        return Err(damaged(
            path,
            off,
            format!("{reason}; a valid record (zxid 0x{zxid:x}) follows at offset {at}, so it is not a torn tail"),
        ));
    }
    let whole = match version {
        Some(v) => damage::written_whole(file, off, rest.written_end, v).map_err(|e| StorageError::io(path, e))?,
        None => false,
    };
    if whole {
        return Err(damaged(
            path,
            off,
            format!("{reason}; the record was written whole (it ends with its end mark), so it was damaged after it was written and is not a torn tail"),
        ));
    }
    let copy = damage::keep_copy(path, rest.written_end, "torn")?;
    damage::zero_from(path, off)?;
    tracing::warn!(
        file = %path.display(),
        offset = off,
        copy = %copy.display(),
        "torn record at the end of the log (crash during append): cut off at offset {off}; the segment as it was is kept in {}",
        copy.display()
    );
    Ok(())
}

/// The appending end of the log. Used only by the log writer thread.
pub struct Wal {
    dir: PathBuf,
    file: File,
    path: PathBuf,
    offset: u64,
    force_sync: bool,
    /// Failpoint for tests: appends fail like a full disk once this many bytes were appended
    /// by this process (env `ZKR_FAILPOINT_LOG_FULL_AFTER`).
    fail_after: Option<u64>,
    /// Failpoint for tests: fsync fails once this many bytes were appended
    /// (env `ZKR_FAILPOINT_FSYNC_FAILS_AFTER`).
    fail_sync_after: Option<u64>,
    appended: u64,
}

fn failpoint() -> Option<u64> {
    std::env::var("ZKR_FAILPOINT_LOG_FULL_AFTER").ok().and_then(|v| v.parse().ok())
}

fn sync_failpoint() -> Option<u64> {
    std::env::var("ZKR_FAILPOINT_FSYNC_FAILS_AFTER").ok().and_then(|v| v.parse().ok())
}

impl Wal {
    /// Opens the log for appending after recovery: continues the tail segment or starts one.
    pub fn open(
        dir: &Path,
        tail: Option<(PathBuf, u64)>,
        next_zxid: Zxid,
        force_sync: bool,
    ) -> Result<Wal, StorageError> {
        std::fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
        match tail {
            Some((path, off)) if (HEADER..SEGMENT_BYTES).contains(&off) => {
                let mut file = OpenOptions::new().write(true).open(&path).map_err(|e| StorageError::io(&path, e))?;
                file.seek(SeekFrom::Start(off)).map_err(|e| StorageError::io(&path, e))?;
                Ok(Wal {
                    dir: dir.to_owned(),
                    file,
                    path,
                    offset: off,
                    force_sync,
                    fail_after: failpoint(),
                    fail_sync_after: sync_failpoint(),
                    appended: 0,
                })
            }
            Some((path, 0)) => {
                std::fs::remove_file(&path).map_err(|e| StorageError::io(&path, e))?;
                Wal::create(dir, next_zxid, force_sync)
            }
            _ => Wal::create(dir, next_zxid, force_sync),
        }
    }

    fn create(dir: &Path, first_zxid: Zxid, force_sync: bool) -> Result<Wal, StorageError> {
        let (path, file) = WAL
            .create(dir, first_zxid as u64, false)
            .map_err(|e| StorageError::io(&dir.join(segment_name(first_zxid)), e))?;
        Ok(Wal {
            dir: dir.to_owned(),
            file,
            path,
            offset: HEADER,
            force_sync,
            fail_after: failpoint(),
            fail_sync_after: sync_failpoint(),
            appended: 0,
        })
    }

    /// Appends encoded records (`len | crc | payload | end mark` each, see `frame`), rolling to a new
    /// segment first if they would not fit. `first_zxid` names a new segment.
    pub fn append(&mut self, records: &[u8], first_zxid: Zxid) -> Result<(), StorageError> {
        if self.fail_after.is_some_and(|limit| self.appended + records.len() as u64 > limit) {
            let e = std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left on device (failpoint)");
            return Err(StorageError::io(&self.path, e));
        }
        if self.offset + records.len() as u64 > SEGMENT_BYTES && self.offset > HEADER {
            self.sync()?;
            let appended = self.appended;
            *self = Wal::create(&self.dir, first_zxid, self.force_sync)?;
            self.appended = appended;
        }
        self.file.write_all(records).map_err(|e| StorageError::io(&self.path, e))?;
        self.offset += records.len() as u64;
        self.appended += records.len() as u64;
        Ok(())
    }

    /// Makes everything appended durable (fdatasync), unless forceSync=no.
    pub fn sync(&mut self) -> Result<(), StorageError> {
        if self.fail_sync_after.is_some_and(|limit| self.appended > limit) {
            let e = std::io::Error::other("fsync failed (failpoint)");
            return Err(StorageError::io(&self.path, e));
        }
        if self.force_sync {
            self.file.sync_data().map_err(|e| StorageError::io(&self.path, e))?;
        }
        Ok(())
    }
}

/// Frames one txn as a log record onto `out`.
pub fn frame(txn: &Txn, out: &mut Vec<u8>) {
    segment::frame(out, |b| super::record::encode(txn, b));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::TxnOp;

    fn txn(z: i64) -> Txn {
        Txn { zxid: z, time: z * 10, session: 1, op: TxnOp::Delete { path: format!("/n{z}") } }
    }

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("zkr-wal-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn write(d: &Path, zxids: std::ops::RangeInclusive<i64>) -> PathBuf {
        let mut w = Wal::open(d, None, *zxids.start(), true).unwrap();
        let mut buf = Vec::new();
        for z in zxids.clone() {
            frame(&txn(z), &mut buf);
        }
        w.append(&buf, *zxids.start()).unwrap();
        w.sync().unwrap();
        w.path.clone()
    }

    #[test]
    fn appends_and_replays() {
        let d = dir("replay");
        write(&d, 1..=5);
        let r = replay(&d, 2).unwrap();
        assert_eq!(r.txns.iter().map(|t| t.zxid).collect::<Vec<_>>(), vec![3, 4, 5]);
        let (path, off) = r.tail.unwrap();
        let mut w = Wal::open(&d, Some((path, off)), 6, true).unwrap();
        let mut buf = Vec::new();
        frame(&txn(6), &mut buf);
        w.append(&buf, 6).unwrap();
        assert_eq!(replay(&d, 0).unwrap().txns.len(), 6);
    }

    #[test]
    fn a_tail_torn_at_any_byte_recovers_to_the_previous_record() {
        let d = dir("every-offset");
        let path = write(&d, 1..=4);
        let end = replay(&d, 0).unwrap().tail.unwrap().1 as usize;
        let mut last = Vec::new();
        frame(&txn(4), &mut last);
        let start = end - last.len();
        let mut f = OpenOptions::new().write(true).open(&path).unwrap();
        for cut in start..end {
            // The crash left the record's first `cut - start` bytes; the rest is preallocated zeros.
            let mut torn = last.clone();
            torn[cut - start..].iter_mut().for_each(|b| *b = 0);
            f.seek(SeekFrom::Start(start as u64)).unwrap();
            f.write_all(&torn).unwrap();
            let before = std::fs::read(&path).unwrap();
            let r = replay(&d, 0).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
            if cut >= end - segment::END_MARK.len() {
                // The payload reached the disk whole, only (part of) its end mark did not: kept.
                assert_eq!((r.txns.len(), r.tail.unwrap().1 as usize), (4, end), "cut at {cut}");
                continue;
            }
            assert_eq!(r.txns.len(), 3, "cut at {cut}");
            assert_eq!(r.tail.unwrap().1 as usize, start, "appends resume where the torn record began");
            // The segment as it was found is kept before the torn bytes are zeroed.
            // A cut within the length's leading zero bytes leaves nothing written to keep.
            if before[start..].iter().any(|b| *b != 0) {
                let written = before.iter().rposition(|b| *b != 0).unwrap() + 1;
                assert!(copies(&d).iter().any(|c| std::fs::read(c).unwrap() == before[..written]), "cut at {cut}");
            }
        }
        assert_eq!(segments(&d).unwrap().len(), 1, "copies are not log segments");
    }

    #[test]
    fn torn_tail_is_truncated_but_middle_corruption_stops() {
        let d = dir("torn");
        let path = write(&d, 1..=3);
        let mut bytes = std::fs::read(&path).unwrap();
        // Tear the last record: zero its final payload bytes and its end mark.
        let good = replay(&d, 0).unwrap().tail.unwrap().1 as usize;
        bytes[good - 7..good].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        let r = replay(&d, 0).unwrap();
        assert_eq!(r.txns.len(), 2, "torn third record dropped");

        let d2 = dir("corrupt");
        let path = write(&d2, 1..=3);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[HEADER as usize + 8] ^= 0xff; // first record's payload
        std::fs::write(&path, &bytes).unwrap();
        match replay(&d2, 0) {
            Err(StorageError::CorruptLog { offset, .. }) => assert_eq!(offset, HEADER),
            other => panic!("expected corruption, got {:?}", other.map(|r| r.txns.len())),
        }
    }

    /// Offsets of the records of a segment.
    fn offsets(path: &Path) -> Vec<usize> {
        let bytes = std::fs::read(path).unwrap();
        let mut out = Vec::new();
        let mut off = HEADER as usize;
        loop {
            let len = u32::from_be_bytes(bytes[off..off + 4].try_into().unwrap()) as usize;
            if len == 0 {
                return out;
            }
            out.push(off);
            off += segment::record_bytes(len as u64, VERSION) as usize;
        }
    }

    fn copies(d: &Path) -> Vec<PathBuf> {
        match std::fs::read_dir(d.join("damaged")) {
            Ok(rd) => rd.map(|e| e.unwrap().path()).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Damage done to the record at an offset of a segment's bytes.
    type Damage = fn(&mut Vec<u8>, usize);

    /// The damage of issue #13 and its relatives.
    fn shapes() -> Vec<(&'static str, Damage)> {
        vec![
            ("one bit flipped in the length (79 -> 1,048,655)", |b, off| b[off + 1] ^= 0x10),
            ("a length larger than a segment", |b, off| b[off..off + 4].copy_from_slice(&u32::MAX.to_be_bytes())),
            ("a length running past the file", |b, off| {
                let past = (b.len() - off) as u32;
                b[off..off + 4].copy_from_slice(&past.to_be_bytes())
            }),
            ("8 zero bytes over the prefix", |b, off| b[off..off + 8].fill(0)),
            ("a zero length, checksum intact", |b, off| b[off..off + 4].fill(0)),
            ("a flipped bit in the checksum", |b, off| b[off + 5] ^= 0x01),
            ("a flipped bit in the payload", |b, off| b[off + 20] ^= 0x40),
            ("a payload that checksums but does not decode", |b, off| {
                let len = u32::from_be_bytes(b[off..off + 4].try_into().unwrap()) as usize;
                b[off + 8 + 24] = 0xee; // the op tag
                let crc = crc32fast::hash(&b[off + 8..off + 8 + len]);
                b[off + 4..off + 8].copy_from_slice(&crc.to_be_bytes());
            }),
        ]
    }

    #[test]
    fn damage_with_valid_records_after_it_is_corruption_and_changes_nothing() {
        for (n, (shape, damage)) in shapes().into_iter().enumerate() {
            let d = dir(&format!("mid-{n}"));
            let path = write(&d, 1..=200);
            let at = offsets(&path)[99];
            let mut bytes = std::fs::read(&path).unwrap();
            damage(&mut bytes, at);
            std::fs::write(&path, &bytes).unwrap();
            match replay(&d, 0) {
                Err(StorageError::CorruptLog { file, offset, reason }) => {
                    assert_eq!((file, offset), (path.clone(), at as u64), "{shape}: {reason}");
                    assert!(reason.contains("follows at offset"), "{shape}: {reason}");
                }
                other => panic!("{shape}: expected corruption, got {:?}", other.map(|r| r.txns.len())),
            }
            assert!(std::fs::read(&path).unwrap() == bytes, "{shape}: the segment was changed");
            assert!(copies(&d).is_empty(), "{shape}");
            // The same damage after a snapshot that covers it is still refused (records a snapshot
            // covers are checksummed, not decoded, so a payload that only fails to decode passes).
            if !shape.contains("does not decode") {
                assert!(matches!(replay(&d, 150), Err(StorageError::CorruptLog { .. })), "{shape}");
            }
        }
    }

    /// Issue 38, item 1: the same damage to the last record, which was written whole (it ends
    /// with its end mark), is damage too, never a torn tail: it may have been acknowledged.
    #[test]
    fn the_same_damage_to_a_complete_last_record_is_corruption_and_changes_nothing() {
        for (n, (shape, damage)) in shapes().into_iter().enumerate() {
            let d = dir(&format!("last-{n}"));
            let path = write(&d, 1..=200);
            let at = offsets(&path)[199];
            let mut bytes = std::fs::read(&path).unwrap();
            damage(&mut bytes, at);
            std::fs::write(&path, &bytes).unwrap();
            match replay(&d, 0) {
                Err(StorageError::CorruptLog { file, offset, reason }) => {
                    assert_eq!((file, offset), (path.clone(), at as u64), "{shape}: {reason}");
                    assert!(reason.contains("written whole"), "{shape}: {reason}");
                }
                other => panic!("{shape}: expected corruption, got {:?}", other.map(|r| r.txns.len())),
            }
            assert!(std::fs::read(&path).unwrap() == bytes, "{shape}: the segment was changed");
            assert!(copies(&d).is_empty(), "{shape}");
        }
    }

    /// A torn last record (its later bytes zeros, as a crash leaves a preallocated segment) in
    /// the shapes above that keep its start: cut, with a copy kept.
    #[test]
    fn a_torn_last_record_is_cut_with_a_copy() {
        let d = dir("last-torn");
        let path = write(&d, 1..=200);
        let at = offsets(&path)[199];
        let mut bytes = std::fs::read(&path).unwrap();
        let end = bytes.iter().rposition(|b| *b != 0).unwrap() + 1;
        bytes[at + 20..end].fill(0);
        std::fs::write(&path, &bytes).unwrap();
        let r = replay(&d, 0).unwrap();
        assert_eq!((r.txns.len(), r.tail.unwrap()), (199, (path.clone(), at as u64)));
        let written = bytes.iter().rposition(|b| *b != 0).unwrap() + 1;
        let kept = copies(&d);
        assert_eq!(kept.len(), 1);
        assert!(std::fs::read(&kept[0]).unwrap() == bytes[..written], "the copy is the segment as found");
        assert!(std::fs::read(&path).unwrap()[at..].iter().all(|b| *b == 0), "the tail is zeroed");
    }

    /// A segment written before the end mark (format version 1) is read, and the log goes on in
    /// a new segment.
    #[test]
    fn a_version_1_segment_is_read_and_appends_start_a_new_segment() {
        let d = dir("version-1");
        let (path, mut f) = WAL.create(&d, 1, false).unwrap();
        f.seek(SeekFrom::Start(4)).unwrap();
        f.write_all(&1u32.to_be_bytes()).unwrap();
        for z in 1..=3 {
            let mut rec = Vec::new();
            frame(&txn(z), &mut rec);
            rec.truncate(rec.len() - segment::END_MARK.len());
            f.write_all(&rec).unwrap();
        }
        drop(f);
        let r = replay(&d, 0).unwrap();
        assert_eq!((r.txns.len(), r.tail.is_none()), (3, true));
        let mut w = Wal::open(&d, r.tail, 4, true).unwrap();
        let mut buf = Vec::new();
        frame(&txn(4), &mut buf);
        w.append(&buf, 4).unwrap();
        assert_ne!(w.path, path, "a new segment");
        assert_eq!(replay(&d, 0).unwrap().txns.iter().map(|t| t.zxid).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    }

    #[test]
    fn a_later_segment_makes_any_bad_record_corruption() {
        let d = dir("two-segments");
        let first = write(&d, 1..=5);
        let mut w = Wal::create(&d, 6, true).unwrap();
        let mut buf = Vec::new();
        (6..=8).for_each(|z| frame(&txn(z), &mut buf));
        w.append(&buf, 6).unwrap();
        // The last record of the first segment torn, as a crash would tear the log's last.
        let at = offsets(&first)[4];
        let mut bytes = std::fs::read(&first).unwrap();
        bytes[at + 12..at + 40].fill(0);
        std::fs::write(&first, &bytes).unwrap();
        match replay(&d, 0) {
            Err(StorageError::CorruptLog { file, offset, reason }) => {
                assert_eq!((file, offset), (first.clone(), at as u64));
                assert!(reason.contains("later log segments follow"), "{reason}");
            }
            other => panic!("expected corruption, got {:?}", other.map(|r| r.txns.len())),
        }
        assert!(std::fs::read(&first).unwrap() == bytes);
    }

    #[test]
    fn junk_after_the_end_of_the_data_is_cut_with_a_copy_but_a_record_after_it_is_not() {
        let d = dir("junk");
        let path = write(&d, 1..=3);
        let end = replay(&d, 0).unwrap().tail.unwrap().1 as usize;
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[end + 100..end + 140].fill(0xab);
        std::fs::write(&path, &bytes).unwrap();
        let r = replay(&d, 0).unwrap();
        assert_eq!((r.txns.len(), r.tail.unwrap().1 as usize), (3, end));
        assert_eq!(copies(&d).len(), 1);
        assert!(std::fs::read(&path).unwrap()[end..].iter().all(|b| *b == 0));

        // A record that could follow (zxid 5, after a lost zxid 4) beyond a zero gap.
        let mut rec = Vec::new();
        frame(&txn(5), &mut rec);
        bytes[end + 100..end + 140].fill(0);
        bytes[end + 4096..end + 4096 + rec.len()].copy_from_slice(&rec);
        std::fs::write(&path, &bytes).unwrap();
        match replay(&d, 0) {
            Err(StorageError::CorruptLog { offset, reason, .. }) => {
                assert_eq!(offset as usize, end, "{reason}");
                assert!(reason.contains(&format!("zxid 0x5) follows at offset {}", end + 4096)), "{reason}");
            }
            other => panic!("expected corruption, got {:?}", other.map(|r| r.txns.len())),
        }
        // A record that could not follow (an old zxid) is junk, not a reason to refuse.
        let mut old = Vec::new();
        frame(&txn(2), &mut old);
        bytes[end + 4096..end + 4096 + rec.len()].fill(0);
        bytes[end + 4096..end + 4096 + old.len()].copy_from_slice(&old);
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(replay(&d, 0).unwrap().txns.len(), 3);
    }

    #[test]
    fn repair_cuts_at_the_first_bad_record_and_keeps_everything_after_it() {
        let d = dir("repair");
        let first = write(&d, 1..=200);
        let mut w = Wal::create(&d, 201, true).unwrap();
        let mut buf = Vec::new();
        (201..=210).for_each(|z| frame(&txn(z), &mut buf));
        w.append(&buf, 201).unwrap();
        let second = w.path.clone();
        let second_bytes = std::fs::read(&second).unwrap();
        let at = offsets(&first)[99];
        let mut bytes = std::fs::read(&first).unwrap();
        bytes[at + 1] ^= 0x10;
        std::fs::write(&first, &bytes).unwrap();
        assert!(replay(&d, 0).is_err());

        let done = crate::storage::repair::repair(&d, 0).unwrap();
        assert_eq!(done.cuts.len(), 1);
        assert_eq!((done.cuts[0].0.clone(), done.cuts[0].1), (first.clone(), at as u64));
        let r = replay(&d, 0).unwrap();
        assert_eq!(r.txns.len(), 99, "records before the bad one stay");
        assert_eq!(r.tail.unwrap(), (first.clone(), at as u64), "appends continue at the cut");
        assert_eq!(segments(&d).unwrap(), vec![(1, first.clone())], "later segments are out of the log");
        let written = bytes.iter().rposition(|b| *b != 0).unwrap() + 1;
        let kept: Vec<Vec<u8>> = done.kept.iter().map(|p| std::fs::read(p).unwrap()).collect();
        assert!(kept.contains(&bytes[..written].to_vec()), "a copy of the damaged segment as found");
        assert!(kept.contains(&second_bytes), "the later segment, whole");
        assert_eq!(copies(&d).len(), 2);
        assert!(crate::storage::repair::repair(&d, 0).unwrap().cuts.is_empty(), "a clean log is left alone");
    }
}
