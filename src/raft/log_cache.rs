//! The newest entries of the Raft log, kept in memory so that replication and apply do not read
//! them back from disk: bounded by count and by bytes (a log of 256 KiB batches would otherwise
//! hold gigabytes), never dropping an entry that is not flushed yet.

use super::types::Entry;
use std::collections::VecDeque;

/// Entries kept beyond the unflushed ones, at most.
const MAX_ENTRIES: usize = 8192;
/// Encoded bytes kept beyond the unflushed entries, at most.
const MAX_BYTES: usize = 64 << 20;

#[derive(Default)]
pub struct LogCache {
    /// Each entry with its encoded length; the newest last.
    entries: VecDeque<(Entry, u32)>,
    bytes: usize,
}

impl LogCache {
    pub fn push_back(&mut self, e: Entry, len: u32) {
        self.bytes += len as usize;
        self.entries.push_back((e, len));
    }

    pub fn pop_front(&mut self) {
        if let Some((_, len)) = self.entries.pop_front() {
            self.bytes -= len as usize;
        }
    }

    pub fn pop_back(&mut self) {
        if let Some((_, len)) = self.entries.pop_back() {
            self.bytes -= len as usize;
        }
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }

    pub fn front(&self) -> Option<&Entry> {
        self.entries.front().map(|(e, _)| e)
    }

    pub fn back(&self) -> Option<&Entry> {
        self.entries.back().map(|(e, _)| e)
    }

    pub fn get(&self, k: usize) -> Option<&Entry> {
        self.entries.get(k).map(|(e, _)| e)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    fn over(&self) -> bool {
        self.entries.len() > MAX_ENTRIES || self.bytes > MAX_BYTES
    }

    /// Drops the oldest entries while the cache is over a bound and they are flushed (index
    /// at most `flushed`).
    pub fn trim(&mut self, flushed: u64) {
        while self.over() && self.front().is_some_and(|e| e.log_id.index <= flushed) {
            self.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openraft::{CommittedLeaderId, EntryPayload, LogId};

    fn entry(index: u64) -> Entry {
        Entry { log_id: LogId::new(CommittedLeaderId::new(1, 1), index), payload: EntryPayload::Blank }
    }

    #[test]
    fn the_cache_is_bounded_by_bytes_as_well_as_by_count_but_keeps_what_is_not_flushed() {
        let mut c = LogCache::default();
        // 100 entries of 1 MiB: over the byte bound long before the count bound.
        for i in 1..=100 {
            c.push_back(entry(i), 1 << 20);
        }
        c.trim(20);
        assert_eq!(c.front().map(|e| e.log_id.index), Some(21), "only flushed entries go");
        c.trim(100);
        assert_eq!(c.len(), 64);
        assert_eq!(c.front().map(|e| e.log_id.index), Some(37));
        c.pop_back();
        c.pop_front();
        assert_eq!((c.len(), c.bytes), (62, 62 << 20));
        c.clear();
        assert!(c.len() == 0 && c.bytes == 0);
    }
}
