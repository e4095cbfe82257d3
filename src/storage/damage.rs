//! Damaged log segments: telling a torn tail from corruption, keeping copies before any
//! damaged file is rewritten, and the operator's repair (`zkr repair-log`).
//!
//! ```text
//! <log dir>/damaged/log.<zxid>.torn-<unix secs>      the written part of a segment whose torn
//!                                                    tail recovery cut off
//! <log dir>/damaged/log.<zxid>.corrupt-<unix secs>   the written part of a segment that
//!                                                    `repair-log` cut at its first bad record
//! <log dir>/damaged/log.<zxid>.dropped-<unix secs>   a later segment `repair-log` took out of
//!                                                    the log (moved, not copied)
//! ```
//! The copies live in a subdirectory, so `wal::segments` (which lists `log.<hex>` files of the
//! log directory itself) never reads them back as log. zkr never deletes them.
//!
//! A bad record is a torn tail only if nothing valid can follow it: a crash during an append
//! leaves the last record partly written and the preallocated zeros after it. Any record that
//! frames, checksums, decodes and carries a zxid that can come after the bad one means the log
//! went on past it, so cutting there would destroy acknowledged writes. This module only
//! looks; `wal::replay` decides, and `repair` is the only thing that cuts at corruption. It must not touch snapshots.

use super::segment::{sync_dir, SEGMENT_BYTES};
use super::StorageError;
use crate::txn::Zxid;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The smallest payload a record can have: zxid, time and session (8 bytes each) and an op tag.
const MIN_PAYLOAD: u64 = 25;
/// Bytes examined per read while scanning.
pub(super) const CHUNK: u64 = 1 << 20;
/// Bytes a candidate needs in the buffer to be prefiltered: its prefix, zxid, time, session
/// and op tag (8 + 25), rounded up.
const LOOKAHEAD: u64 = 64;

/// What lies in a segment from some offset to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rest {
    /// The first valid record found at or after the offset: where it starts, and its zxid.
    pub valid: Option<(u64, Zxid)>,
    /// One past the last non-zero byte at or after the offset (the offset itself if all zero).
    /// Only exact when `valid` is `None`: the scan stops at the first valid record.
    pub written_end: u64,
}

/// Looks at `file` from `from` to `end` (its length) for a record that could follow a bad one
/// at `from` whose predecessor had zxid `prev`.
///
/// A candidate at offset `p` must have a length between `MIN_PAYLOAD` and `SEGMENT_BYTES` that
/// fits in the file, a zxid greater than `prev` and at most `prev + 1 + (p - from) / 33` (no
/// more records can lie between than the bytes could hold), a payload matching its crc32, and
/// a payload that decodes. The cheap checks run at every byte; the read, the checksum and the
/// decode only for the rare position that passes them, so a scan costs one read of the rest of
/// the segment, and an all-zero chunk (the preallocated part) is skipped whole.
pub fn scan_rest(file: &File, from: u64, end: u64, prev: Zxid) -> std::io::Result<Rest> {
    let mut written_end = from;
    let mut pos = from;
    let mut buf = vec![0u8; (CHUNK + LOOKAHEAD) as usize];
    let mut payload = Vec::new();
    while pos < end {
        let want = (end - pos).min(CHUNK + LOOKAHEAD) as usize;
        file.read_exact_at(&mut buf[..want], pos)?;
        let window = &buf[..want];
        // Candidates start in the first CHUNK bytes; the lookahead belongs to the next read.
        let starts = want.min(CHUNK as usize);
        if let Some(last) = window.iter().rposition(|b| *b != 0) {
            written_end = written_end.max(pos + last as u64 + 1);
        } else {
            pos += starts as u64;
            continue;
        }
        for i in 0..starts {
            // A candidate's length is at least MIN_PAYLOAD, so its first 4 bytes are not all zero.
            let Some(head) = window.get(i..i + 4) else { break };
            if head == [0, 0, 0, 0] {
                continue;
            }
            let p = pos + i as u64;
            let len = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as u64;
            if !(MIN_PAYLOAD..=SEGMENT_BYTES).contains(&len) || p + 8 + len > end {
                continue;
            }
            let Some(zxid_bytes) = window.get(i + 8..i + 16) else {
                // Too close to the end of the file to hold a whole record.
                continue;
            };
            let zxid = i64::from_be_bytes(zxid_bytes.try_into().unwrap_or([0; 8]));
            // In i128: `prev` and `zxid` come from disk and may be anywhere in i64's range.
            let room = ((p - from) / (8 + MIN_PAYLOAD)) as i128;
            if !(zxid as i128 > prev as i128 && zxid as i128 <= prev as i128 + 1 + room) {
                continue;
            }
            let crc = u32::from_be_bytes([window[i + 4], window[i + 5], window[i + 6], window[i + 7]]);
            payload.resize(len as usize, 0);
            file.read_exact_at(&mut payload, p + 8)?;
            if super::segment::checks(&payload, crc) && super::record::decode(&payload).is_ok() {
                return Ok(Rest { valid: Some((p, zxid)), written_end });
            }
        }
        pos += starts as u64;
    }
    Ok(Rest { valid: None, written_end })
}

/// Whether the bad record at `off`, whose segment's written part ends at `written_end`, was
/// written whole (`segment::complete`): only its last bytes are read.
pub fn written_whole(file: &File, off: u64, written_end: u64, version: u32) -> std::io::Result<bool> {
    let mark = super::segment::END_MARK.len() as u64;
    if written_end < off + super::segment::PREFIX as u64 + mark {
        return Ok(false);
    }
    // `complete` looks at the written part's length and its last bytes.
    let mut tail = [0u8; super::segment::PREFIX + 4];
    let at = written_end - tail.len() as u64;
    file.read_exact_at(&mut tail, at)?;
    Ok(super::segment::complete(&tail, version))
}

/// Whether the bytes after a zeroed record prefix at `off` (up to `written_end`) are a whole
/// record's payload and end mark: a payload that decodes to the zxid after `prev`. Then the
/// prefix of a complete record was zeroed (damage); anything else after a zero prefix is junk
/// past the end of the data or a torn append.
pub fn whole_record_without_prefix(file: &File, off: u64, written_end: u64, prev: Zxid) -> std::io::Result<bool> {
    let (start, mark) = (off + super::segment::PREFIX as u64, super::segment::END_MARK.len() as u64);
    if written_end < start + MIN_PAYLOAD + mark || written_end - start > SEGMENT_BYTES {
        return Ok(false);
    }
    let mut bytes = vec![0u8; (written_end - start) as usize];
    file.read_exact_at(&mut bytes, start)?;
    let Some(payload) = bytes.strip_suffix(&super::segment::END_MARK) else { return Ok(false) };
    Ok(super::record::decode(payload).is_ok_and(|t| Some(t.zxid) == prev.checked_add(1)))
}

/// `<log dir>/damaged`: where copies of damaged segments go.
pub fn damaged_dir(segment: &Path) -> PathBuf {
    segment.parent().unwrap_or(Path::new(".")).join("damaged")
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A name in `damaged/` for `segment` that is not taken yet: `<name>.<kind>-<secs>[-n]`.
/// Two recoveries within one second must not overwrite each other's copy.
fn fresh_name(segment: &Path, kind: &str) -> Result<PathBuf, StorageError> {
    fresh_name_in(&damaged_dir(segment), segment, kind)
}

/// A name in `dir` for `file` that is not taken yet: `<name>.<kind>-<secs>[-n]`.
fn fresh_name_in(dir: &Path, file: &Path, kind: &str) -> Result<PathBuf, StorageError> {
    std::fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
    let name = file.file_name().map_or_else(|| "log".into(), |n| n.to_string_lossy().into_owned());
    let base = format!("{name}.{kind}-{}", unix_secs());
    let mut path = dir.join(&base);
    let mut n = 1;
    while path.exists() {
        path = dir.join(format!("{base}-{n}"));
        n += 1;
    }
    Ok(path)
}

/// Copies the first `len` bytes of `segment` (its written part, not the preallocated zeros)
/// into `damaged/`, durably, and returns the copy's path.
pub fn keep_copy(segment: &Path, len: u64, kind: &str) -> Result<PathBuf, StorageError> {
    let copy = fresh_name(segment, kind)?;
    let mut src = File::open(segment).map_err(|e| StorageError::io(segment, e))?;
    let mut dst =
        OpenOptions::new().create_new(true).write(true).open(&copy).map_err(|e| StorageError::io(&copy, e))?;
    let copied =
        std::io::copy(&mut std::io::Read::take(&mut src, len), &mut dst).map_err(|e| StorageError::io(&copy, e))?;
    if copied != len {
        let e = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, format!("copied {copied} of {len} bytes"));
        return Err(StorageError::io(segment, e));
    }
    dst.sync_all().map_err(|e| StorageError::io(&copy, e))?;
    sync_dir(&damaged_dir(segment));
    Ok(copy)
}

/// Moves a whole segment into `damaged/` and returns where it went.
pub(super) fn move_aside(segment: &Path) -> Result<PathBuf, StorageError> {
    let to = set_aside(segment, &damaged_dir(segment), "dropped")?;
    if let Some(dir) = segment.parent() {
        sync_dir(dir);
    }
    Ok(to)
}

/// Renames `file` to `<into>/<name>.<kind>-<secs>[-n]` (a name not taken yet), durably, and
/// returns where it went: how both logs and the snapshots set damaged files aside (nothing is
/// deleted).
pub fn set_aside(file: &Path, into: &Path, kind: &str) -> Result<PathBuf, StorageError> {
    let to = fresh_name_in(into, file, kind)?;
    std::fs::rename(file, &to).map_err(|e| StorageError::io(file, e))?;
    sync_dir(into);
    Ok(to)
}

/// Zeroes a segment from `offset` on, so a cut record cannot be read again. The file keeps its
/// length: appends continue into the preallocated space.
pub fn zero_from(path: &Path, offset: u64) -> Result<(), StorageError> {
    let f = OpenOptions::new().write(true).open(path).map_err(|e| StorageError::io(path, e))?;
    let len = f.metadata().map_err(|e| StorageError::io(path, e))?.len();
    f.set_len(offset).map_err(|e| StorageError::io(path, e))?;
    f.set_len(len.max(offset)).map_err(|e| StorageError::io(path, e))?;
    f.sync_all().map_err(|e| StorageError::io(path, e))
}
