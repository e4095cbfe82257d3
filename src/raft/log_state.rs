//! The Raft log's state shared by the store (`log_store`, which appends, reads and truncates)
//! and its writer thread (`log_writer`, which reports what is on disk): where each entry lives,
//! the cache of the newest ones, the open segments, what is flushed, and a write failure.

use super::log_cache::LogCache;
use super::types::{Entry, LogId};
use crate::storage::segment::{self, PREFIX, RAFT};
use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

/// Where one entry lives.
#[derive(Debug, Clone, Copy)]
pub(super) struct Loc {
    pub(super) log_id: LogId,
    /// First index of its segment (the segment's name).
    pub(super) seg: u64,
    pub(super) offset: u64,
    pub(super) len: u32,
}

pub(super) struct State {
    /// `<dataDir>/raft`: the vote and the small state files.
    pub(super) raft_dir: PathBuf,
    /// `<dataDir>/raft/log`: the segments.
    pub(super) dir: PathBuf,
    /// Locations of entries `first..first + locs.len()`.
    pub(super) locs: VecDeque<Loc>,
    pub(super) first: u64,
    /// The newest entries, ending at the last one.
    pub(super) cache: LogCache,
    /// Segments by first index, opened for reading.
    pub(super) segs: BTreeMap<u64, Arc<File>>,
    /// Where the next record goes.
    pub(super) write_seg: Option<u64>,
    pub(super) write_off: u64,
    /// Highest index known to be on disk.
    pub(super) flushed: Option<u64>,
    pub(super) purged: Option<LogId>,
    /// Set when a write failed: nothing after it may be acknowledged.
    pub(super) failed: Option<WriteFailed>,
    /// Segments of an older format version (read, never appended to).
    pub(super) old_format: std::collections::BTreeSet<u64>,
}

impl State {
    pub(super) fn last(&self) -> Option<LogId> {
        self.locs.back().map(|l| l.log_id)
    }

    /// The format version of segment `seg`.
    pub(super) fn version(&self, seg: u64) -> u32 {
        if self.old_format.contains(&seg) {
            segment::VERSION_1
        } else {
            segment::VERSION
        }
    }

    pub(super) fn seg_path(&self, seg: u64) -> PathBuf {
        self.dir.join(seg_name(seg))
    }

    /// The end (exclusive) of the entries from `start` that fit in `max_bytes` encoded, below
    /// `end`: at least one entry when `start < end`, so that an entry larger than the bound
    /// still goes out on its own.
    pub(super) fn end_within(&self, start: u64, end: u64, max_bytes: usize) -> u64 {
        let mut bytes = 0usize;
        let mut at = start;
        while at < end {
            let Some(loc) = at.checked_sub(self.first).and_then(|k| self.locs.get(k as usize)) else {
                // Outside the log: the read says so.
                return end;
            };
            bytes += loc.len as usize;
            if bytes > max_bytes && at > start {
                break;
            }
            at += 1;
        }
        at
    }

    pub(super) fn trim_cache(&mut self) {
        let flushed = self.flushed.unwrap_or(0);
        self.cache.trim(flushed);
    }

    pub(super) fn get(&self, index: u64) -> Result<Option<Entry>, crate::storage::StorageError> {
        use crate::storage::StorageError as E;
        if index < self.first || index >= self.first + self.locs.len() as u64 {
            return Ok(None);
        }
        let cache_first = self.cache.front().map_or(u64::MAX, |e| e.log_id.index);
        if index >= cache_first {
            return Ok(self.cache.get((index - cache_first) as usize).cloned());
        }
        let loc = self.locs[(index - self.first) as usize];
        let path = self.seg_path(loc.seg);
        let corrupt = |reason: String| E::Corrupt { file: path.clone(), offset: loc.offset, reason };
        let file = self.segs.get(&loc.seg).ok_or_else(|| corrupt(format!("the segment of entry {index} is gone")))?;
        let mut buf = vec![0u8; PREFIX + loc.len as usize];
        file.read_exact_at(&mut buf, loc.offset).map_err(|e| E::io(&path, e))?;
        let (prefix, payload) = buf.split_at(PREFIX);
        let crc = prefix.try_into().map(|p| segment::read_prefix(p).1).unwrap_or_default();
        if !segment::checks(payload, crc) {
            return Err(corrupt(format!("entry {index} fails its checksum")));
        }
        bincode::deserialize(payload).map(Some).map_err(|e| corrupt(format!("entry {index} does not decode: {e}")))
    }
}

pub(super) fn seg_name(first: u64) -> String {
    RAFT.name(first)
}

/// Why the Raft log takes no more writes: the first write or fsync that failed, with its source.
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot {what} the raft log: {source}")]
pub(super) struct WriteFailed {
    pub(super) what: &'static str,
    #[source]
    pub(super) source: Arc<std::io::Error>,
}
