//! The write-ahead log: preallocated segment files of checksummed records.
//!
//! ```text
//! segment file  log.<zxid of its first record, 16 hex digits>
//!   header      "ZKRW" (4 bytes) | format version u32 = 1
//!   record*     length u32 | crc32 u32 (of payload) | payload (a Txn, see record.rs)
//!   zeros       the preallocated rest; a length of 0 marks the end of the data
//! ```
//! All integers big-endian. A segment is preallocated to `SEGMENT_BYTES` so appends do not
//! change file metadata; a new segment starts when the current one is full.
//!
//! Recovery reads every segment in zxid order. A bad record (checksum mismatch, or a length
//! running past the file) is a torn tail — a crash mid-append — when it is in the last segment
//! and nothing but zeros follows it: it is cut off with a warning. Anywhere else it is
//! corruption, and recovery stops with the file and offset.

use super::StorageError;
use crate::txn::{Txn, Zxid};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

pub const MAGIC: &[u8; 4] = b"ZKRW";
pub const VERSION: u32 = 1;
const HEADER: u64 = 8;
/// Size a segment is preallocated to (ZooKeeper preallocates 64 MB too).
pub const SEGMENT_BYTES: u64 = 64 * 1024 * 1024;

pub fn segment_name(first_zxid: Zxid) -> String {
    format!("log.{first_zxid:016x}")
}

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

/// Reads every record with zxid > `after`. `after` comes from the snapshot that recovery starts
/// from. Segments are streamed, so only their written part is read, not the preallocated rest.
pub fn replay(dir: &Path, after: Zxid) -> Result<Replay, StorageError> {
    let segs = segments(dir)?;
    let mut txns = Vec::new();
    let mut tail = None;
    for (n, (_, path)) in segs.iter().enumerate() {
        let last = n + 1 == segs.len();
        // A segment followed by one that starts at or before `after + 1` holds nothing newer.
        if !last && segs[n + 1].0 <= after + 1 {
            continue;
        }
        let io = |e| StorageError::io(path, e);
        let mut r = std::io::BufReader::with_capacity(1 << 20, File::open(path).map_err(io)?);
        let mut header = [0u8; HEADER as usize];
        let got = read_full(&mut r, &mut header).map_err(io)?;
        if got < header.len() || &header[..4] != MAGIC {
            if last && header[..got].iter().all(|b| *b == 0) && rest_is_zero(&mut r).map_err(io)? {
                // Created but never written before a crash.
                tracing::warn!(file = %path.display(), "empty log segment, rewriting its header");
                tail = Some((path.clone(), 0));
                continue;
            }
            return Err(StorageError::Corrupt { file: path.clone(), offset: 0, reason: "bad segment header".into() });
        }
        let mut off = HEADER;
        let mut payload = Vec::new();
        loop {
            let mut prefix = [0u8; 8];
            let got = read_full(&mut r, &mut prefix).map_err(io)?;
            if got == 0 || (got < 8 && prefix[..got].iter().all(|b| *b == 0)) {
                break;
            }
            let len = u32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]) as u64;
            if got == 8 && len == 0 {
                break;
            }
            let crc = u32::from_be_bytes([prefix[4], prefix[5], prefix[6], prefix[7]]);
            let mut txn = None;
            if got == 8 && len <= SEGMENT_BYTES {
                payload.resize(len as usize, 0);
                let have = read_full(&mut r, &mut payload).map_err(io)?;
                if have == payload.len() && crc32fast::hash(&payload) == crc {
                    // Records the snapshot already covers are checked but not decoded.
                    let zxid = payload.get(..8).map(|b| i64::from_be_bytes(b.try_into().unwrap_or([0; 8])));
                    if zxid.is_some_and(|z| z <= after) {
                        off += 8 + len;
                        continue;
                    }
                    txn = super::record::decode(&payload).ok();
                }
            }
            let Some(txn) = txn else {
                if last && rest_is_zero(&mut r).map_err(io)? {
                    tracing::warn!(file = %path.display(), offset = off, "torn record at the end of the log (crash during append): truncating");
                    truncate_at(path, off)?;
                    break;
                }
                return Err(StorageError::Corrupt {
                    file: path.clone(),
                    offset: off,
                    reason: "record fails its checksum".into(),
                });
            };
            if txn.zxid > after {
                if let Some(prev) = txns.last().map(|t: &Txn| t.zxid) {
                    if txn.zxid != prev + 1 {
                        return Err(StorageError::Corrupt {
                            file: path.clone(),
                            offset: off,
                            reason: format!("zxid 0x{:x} follows 0x{prev:x}", txn.zxid),
                        });
                    }
                }
                txns.push(txn);
            }
            off += 8 + len;
        }
        if last {
            tail = Some((path.clone(), off));
        }
    }
    Ok(Replay { txns, tail })
}

/// Zeroes a segment from `offset` on, so a torn record cannot be read again.
fn truncate_at(path: &Path, offset: u64) -> Result<(), StorageError> {
    let f = OpenOptions::new().write(true).open(path).map_err(|e| StorageError::io(path, e))?;
    let len = f.metadata().map_err(|e| StorageError::io(path, e))?.len();
    f.set_len(offset).map_err(|e| StorageError::io(path, e))?;
    f.set_len(len.max(offset)).map_err(|e| StorageError::io(path, e))?;
    f.sync_all().map_err(|e| StorageError::io(path, e))
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
        let path = dir.join(segment_name(first_zxid));
        let mut file =
            OpenOptions::new().create_new(true).write(true).open(&path).map_err(|e| StorageError::io(&path, e))?;
        file.set_len(SEGMENT_BYTES).map_err(|e| StorageError::io(&path, e))?;
        file.write_all(MAGIC).map_err(|e| StorageError::io(&path, e))?;
        file.write_all(&VERSION.to_be_bytes()).map_err(|e| StorageError::io(&path, e))?;
        file.sync_all().map_err(|e| StorageError::io(&path, e))?;
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
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

    /// Appends encoded records (`len | crc | payload` each, see `frame`), rolling to a new
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
    let start = out.len();
    out.extend_from_slice(&[0; 8]);
    super::record::encode(txn, out);
    let payload = &out[start + 8..];
    let len = payload.len() as u32;
    let crc = crc32fast::hash(payload);
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_be_bytes());
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
            let r = replay(&d, 0).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
            assert_eq!(r.txns.len(), 3, "cut at {cut}");
            assert_eq!(r.tail.unwrap().1 as usize, start, "appends resume where the torn record began");
        }
    }

    #[test]
    fn torn_tail_is_truncated_but_middle_corruption_stops() {
        let d = dir("torn");
        let path = write(&d, 1..=3);
        let mut bytes = std::fs::read(&path).unwrap();
        // Tear the last record: zero its final payload bytes.
        let good = replay(&d, 0).unwrap().tail.unwrap().1 as usize;
        bytes[good - 3..good].copy_from_slice(&[0, 0, 0]);
        std::fs::write(&path, &bytes).unwrap();
        let r = replay(&d, 0).unwrap();
        assert_eq!(r.txns.len(), 2, "torn third record dropped");

        let d2 = dir("corrupt");
        let path = write(&d2, 1..=3);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[HEADER as usize + 8] ^= 0xff; // first record's payload
        std::fs::write(&path, &bytes).unwrap();
        match replay(&d2, 0) {
            Err(StorageError::Corrupt { offset, .. }) => assert_eq!(offset, HEADER),
            other => panic!("expected corruption, got {:?}", other.map(|r| r.txns.len())),
        }
    }
}
