//! The one segment and record format of zkr's logs: the standalone write-ahead log (`wal`) and
//! an ensemble member's Raft log (`raft::log_store`) write the same files, told apart by their
//! magic and their names.
//!
//! ```text
//! segment file  <prefix><index of its first record, 16 hex digits>
//!   header      magic (4 bytes) | format version u32 = 2
//!   record*     length u32 | crc32 u32 (of payload) | payload | "ZKRE" (the end mark)
//!   zeros       the preallocated rest; a length of 0 marks the end of the data
//! ```
//! All integers big-endian. A segment is preallocated to `SEGMENT_BYTES` so appends do not
//! change file metadata (ZooKeeper preallocates its logs too). Segments of format version 1
//! (written before the end mark) are still read, and never appended to: a log whose last
//! segment is one continues in a new segment.
//!
//! The end mark tells a torn write from damage. A crash during an append leaves the record's
//! later sectors unwritten, so in a preallocated segment the written part of a torn record
//! ends before its mark; an fsync'd record that was damaged afterwards still ends with it
//! (`complete`). A record that fails its checksum at the end of the log is therefore a torn
//! write only if its written part does not end with the mark; one that does was complete, may
//! have been acknowledged, and is damage (ZooKeeper tells them apart by the 'B' it writes after
//! each record the same way: `Util.readTxnBytes` takes a missing 'B' for a partial write, and
//! a present one with a bad CRC stops the server). A record whose checksum holds is kept,
//! whatever its mark: its payload is intact.
//!
//! What a payload holds is each log's own, and so, by design, is how a bad record is judged,
//! because the two logs recover from damage differently:
//! - the standalone WAL has no other copy of its txns. A bad record in its last segment is a
//!   torn tail, cut after a copy is kept, only if it is not complete and no valid record can
//!   follow it (`damage::scan_rest`); anything else stops startup for the operator (`zkr
//!   repair-log`).
//! - an ensemble member's Raft log can be refilled by its leader. A bad record is a torn tail
//!   only in the exact shape a crash leaves in a preallocated segment (not complete, its claimed
//!   extent inside the file, nothing but zeros after it); anything else, a file cut short
//!   included, is damage: the log is cut there (a copy kept) and the member neither votes nor
//!   counts toward a commit until its leader has refilled it (`raft::amnesia`), since the lost
//!   entries may have been acknowledged.

use crate::txn::Zxid;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The format version every new segment's header carries.
pub const VERSION: u32 = 2;
/// The first format version, whose records have no end mark.
pub const VERSION_1: u32 = 1;
/// Written after every record's payload (format version 2): the last bytes of a complete record.
pub const END_MARK: [u8; 4] = *b"ZKRE";
/// Bytes of a segment's header; the first record starts here.
pub const HEADER: u64 = 8;
/// Size a segment is preallocated to (ZooKeeper preallocates 64 MB too).
pub const SEGMENT_BYTES: u64 = 64 * 1024 * 1024;
/// Bytes before a record's payload: its length and its checksum.
pub const PREFIX: usize = 8;

/// One log's segments: their magic and the prefix of their names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind {
    pub magic: &'static [u8; 4],
    pub prefix: &'static str,
}

/// The standalone log: `log.<first zxid>`, as ZooKeeper names its log files by their first zxid.
pub const WAL: Kind = Kind { magic: b"ZKRW", prefix: "log." };
/// An ensemble member's Raft log: `seg.<first log index>`.
pub const RAFT: Kind = Kind { magic: b"ZKRL", prefix: "seg." };

/// The standalone log's magic (tools and tests that read segments by hand).
pub const MAGIC: &[u8; 4] = WAL.magic;

/// `log.<first zxid, 16 hex digits>`.
pub fn segment_name(first_zxid: Zxid) -> String {
    WAL.name(first_zxid as u64)
}

impl Kind {
    /// The file name of the segment whose first record is `first`.
    pub fn name(self, first: u64) -> String {
        format!("{}{first:016x}", self.prefix)
    }

    /// True if `bytes` (a segment's start) is this kind's header.
    pub fn has_header(self, bytes: &[u8]) -> bool {
        bytes.len() >= HEADER as usize && &bytes[..4] == self.magic
    }

    /// The format version of a segment that starts with `bytes`, if it is this kind's and a
    /// version this build reads.
    pub fn version(self, bytes: &[u8]) -> Option<u32> {
        if !self.has_header(bytes) {
            return None;
        }
        let v = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        (v == VERSION || v == VERSION_1).then_some(v)
    }

    /// Creates the segment whose first record is `first`: preallocated, its header written,
    /// the file and the directory fsync'd before any record goes in. `replace` overwrites a
    /// file of that name; otherwise one that exists is an error.
    pub fn create(self, dir: &Path, first: u64, replace: bool) -> std::io::Result<(PathBuf, File)> {
        let path = dir.join(self.name(first));
        let mut opts = OpenOptions::new();
        opts.write(true);
        if replace {
            opts.create(true).truncate(true);
        } else {
            opts.create_new(true);
        }
        let mut f = opts.open(&path)?;
        f.set_len(SEGMENT_BYTES)?;
        f.write_all(self.magic)?;
        f.write_all(&VERSION.to_be_bytes())?;
        f.sync_all()?;
        sync_dir(dir);
        Ok((path, f))
    }
}

/// Appends one record to `out`: the payload `encode` writes, framed by its length and checksum
/// and followed by the end mark.
pub fn frame(out: &mut Vec<u8>, encode: impl FnOnce(&mut Vec<u8>)) {
    let start = out.len();
    out.extend_from_slice(&[0; PREFIX]);
    encode(out);
    let payload = &out[start + PREFIX..];
    let len = payload.len() as u32;
    let crc = crc32fast::hash(payload);
    out[start..start + 4].copy_from_slice(&len.to_be_bytes());
    out[start + 4..start + PREFIX].copy_from_slice(&crc.to_be_bytes());
    out.extend_from_slice(&END_MARK);
}

/// Bytes after a record's payload in a segment of format `version`: the end mark, or nothing.
pub fn trailer(version: u32) -> u64 {
    if version >= VERSION {
        END_MARK.len() as u64
    } else {
        0
    }
}

/// Bytes a record with a payload of `len` takes in a segment of format `version`.
pub fn record_bytes(len: u64, version: u32) -> u64 {
    PREFIX as u64 + len + trailer(version)
}

/// Whether a bad record was written whole: `written` is the record's bytes from its start up
/// to the last non-zero byte of the segment at or after it. A torn append's written part ends
/// short of its end mark (the mark is the last thing of the record, and the sectors a crash
/// did not write read as zeros in a preallocated segment); a complete record's ends with it,
/// wherever a damaged length field says the record ends. Format version 1 has no mark: never.
pub fn complete(written: &[u8], version: u32) -> bool {
    version >= VERSION && written.len() >= PREFIX + END_MARK.len() && written.ends_with(&END_MARK)
}

/// A record's length and checksum, from its prefix.
pub fn read_prefix(p: &[u8; PREFIX]) -> (u32, u32) {
    (u32::from_be_bytes([p[0], p[1], p[2], p[3]]), u32::from_be_bytes([p[4], p[5], p[6], p[7]]))
}

/// True if `payload` is what a record with checksum `crc` holds.
pub fn checks(payload: &[u8], crc: u32) -> bool {
    crc32fast::hash(payload) == crc
}

/// Makes a directory's entries (a created, renamed or removed file) durable; best effort, as a
/// directory cannot be fsync'd on every platform.
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both logs' segments keep the layout data directories of earlier releases have on disk.
    #[test]
    fn both_logs_keep_their_names_headers_and_record_frames() {
        assert_eq!(WAL.name(0x1_0000_0001), "log.0000000100000001");
        assert_eq!(RAFT.name(17), "seg.0000000000000011");
        let mut out = Vec::new();
        frame(&mut out, |b| b.extend_from_slice(b"abc"));
        let prefix: [u8; PREFIX] = out[..PREFIX].try_into().unwrap();
        assert_eq!(read_prefix(&prefix), (3, crc32fast::hash(b"abc")));
        assert!(checks(&out[PREFIX..PREFIX + 3], read_prefix(&prefix).1));
        assert_eq!((&out[PREFIX + 3..], out.len() as u64), (&END_MARK[..], record_bytes(3, VERSION)));
        assert_eq!(record_bytes(3, VERSION_1), 11, "version 1 records have no end mark");
        let dir = std::env::temp_dir().join(format!("zkr-segment-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (path, _) = RAFT.create(&dir, 5, false).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!((bytes.len() as u64, &bytes[..8]), (SEGMENT_BYTES, &b"ZKRL\0\0\0\x02"[..]));
        assert!(RAFT.has_header(&bytes) && !WAL.has_header(&bytes));
        assert_eq!(
            (RAFT.version(&bytes), RAFT.version(b"ZKRL\0\0\0\x01"), RAFT.version(b"ZKRL\0\0\0\x03")),
            (Some(2), Some(1), None)
        );
        assert!(RAFT.create(&dir, 5, false).is_err(), "an existing segment is not overwritten");
        assert!(RAFT.create(&dir, 5, true).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A record is complete when its written part ends with the end mark: a flipped byte
    /// anywhere before the mark, or a length that claims more, leaves it complete; a tail that
    /// never reached the disk does not.
    #[test]
    fn a_complete_record_ends_with_its_mark_and_a_torn_one_does_not() {
        let mut rec = Vec::new();
        frame(&mut rec, |b| b.extend_from_slice(&[7u8; 1000]));
        assert!(complete(&rec, VERSION));
        let mut flipped = rec.clone();
        flipped[500] ^= 0xff;
        assert!(complete(&flipped, VERSION), "damage inside a written record");
        let written_end = |b: &[u8]| b.iter().rposition(|x| *x != 0).map_or(0, |p| p + 1);
        for cut in [PREFIX, 100, 512, rec.len() - 1] {
            let mut torn = rec.clone();
            torn[cut..].fill(0);
            assert!(!complete(&torn[..written_end(&torn)], VERSION), "torn after {cut} bytes");
        }
        assert!(!complete(&rec, VERSION_1), "version 1 cannot tell");
    }
}
