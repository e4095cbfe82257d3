//! The Raft log on disk: openraft's `RaftLogStorage` over preallocated segment files.
//!
//! ```text
//! <dataDir>/raft/log/seg.<index of its first entry, 16 hex digits>
//!   header  "ZKRL" | format version u32 = 1
//!   record* length u32 | crc32 u32 (of payload) | payload (bincode of the openraft Entry)
//!   zeros   the preallocated rest; a length of 0 marks the end of the data
//!   (the standalone log's segment format, `storage::segment`, with its own magic and names)
//! <dataDir>/raft/vote        the vote (bincode) | crc32, replaced atomically, fsync'd
//! <dataDir>/raft/purged      the last purged log id, likewise
//! <dataDir>/raft/committed   the last committed log id, likewise (a hint: not fsync'd)
//! ```
//! Appends go to one writer thread (`log_writer`) that writes, fdatasyncs once for everything queued, and only
//! then reports the entries flushed to openraft (`storage::group_commit`, the standalone log's
//! loop too).
//! Entries are readable from the moment they are handed over: the most recent ones stay in
//! memory until they are flushed and the cache is over its bound; older ones are read back from
//! their segment. Replication reads at most `super::APPEND_MAX_BYTES` of entries for one
//! AppendEntries (`limited_get_log_entries`); everything else reads whole ranges. At startup a torn last record (a crash during append: nothing but zeros after
//! it) is cut off. Any other bad record makes `open` fail with the file and offset; the member's
//! recovery (`super::recover`) then cuts the log there with `log_repair::cut_at`, keeping a copy
//! of what it cut in `<dataDir>/raft/log/damaged/`, and the leader sends the member what it lost.

#![allow(clippy::result_large_err)] // openraft's StorageError is the trait's error type

use super::log_cache::LogCache;
use super::log_state::{Loc, State};
use super::log_writer::{writer, Job};
use super::types::{log_err, log_msg, Entry, LogId, StorageError, Vote, Zkr};
use openraft::storage::{LogFlushed, RaftLogStorage};
use openraft::{LogState, RaftLogReader};
use parking_lot::Mutex;
use std::collections::{BTreeMap, VecDeque};
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::ops::{Bound, RangeBounds};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) use crate::storage::segment::sync_dir;
use crate::storage::segment::{self, HEADER, PREFIX, RAFT, SEGMENT_BYTES};

/// The log store; cheap to clone (readers share it).
#[derive(Clone)]
pub struct LogStore {
    state: Arc<Mutex<State>>,
    jobs: std::sync::mpsc::Sender<Job>,
    /// A test's `crash-at` failpoint (`log-purged`).
    crash: Option<crate::config::CrashPoint>,
}

impl LogStore {
    /// Stops the process at the purge step `crash` names (a test's failpoint).
    pub fn with_crash_point(mut self, crash: Option<crate::config::CrashPoint>) -> LogStore {
        self.crash = crash;
        self
    }

    /// Opens (or creates) the log in `dir` and starts its writer thread.
    pub fn open(raft_dir: &Path, force_sync: bool) -> Result<LogStore, crate::storage::StorageError> {
        use crate::storage::StorageError as E;
        let dir = &raft_dir.join("log");
        std::fs::create_dir_all(dir).map_err(|e| E::io(dir, e))?;
        let state = Arc::new(Mutex::new(Self::scan(raft_dir, true)?));
        let (tx, rx) = std::sync::mpsc::channel();
        let thread_state = state.clone();
        let d = dir.to_owned();
        std::thread::Builder::new()
            .name("zkr-raft-log".into())
            .spawn(move || writer(d, rx, thread_state, force_sync))
            .map_err(|e| E::io(dir, e))?;
        Ok(LogStore { state, jobs: tx, crash: None })
    }

    /// Opens a stopped member's log to read it and changes nothing: no writer thread (every
    /// write fails), a torn last record is only left unread, an empty last segment only skipped,
    /// and a missing log directory is an empty log. For `zkr export-zookeeper`.
    pub fn open_read_only(raft_dir: &Path) -> Result<LogStore, crate::storage::StorageError> {
        let (jobs, _) = std::sync::mpsc::channel();
        Ok(LogStore { state: Arc::new(Mutex::new(Self::scan(raft_dir, false)?)), jobs, crash: None })
    }

    /// The log's index from its segments; `repair` cuts a torn tail and removes an empty last
    /// segment on disk, as a start does.
    fn scan(raft_dir: &Path, repair: bool) -> Result<State, crate::storage::StorageError> {
        use crate::storage::StorageError as E;
        let dir = &raft_dir.join("log");
        let purged = raft_dir.join("purged");
        let mut st = State {
            raft_dir: raft_dir.to_owned(),
            dir: dir.to_owned(),
            locs: VecDeque::new(),
            first: 0,
            cache: LogCache::default(),
            segs: BTreeMap::new(),
            write_seg: None,
            write_off: HEADER,
            flushed: None,
            purged: read_small::<LogId>(&purged).map_err(|e| E::io(&purged, e))?,
            failed: None,
            old_format: Default::default(),
        };
        let names = if dir.is_dir() { crate::storage::numbered_files(dir, RAFT.prefix)? } else { Vec::new() };
        let count = names.len();
        for (n, (seg, path)) in names.into_iter().enumerate() {
            let last = n + 1 == count;
            let seg = seg as u64;
            if !scan_segment(&mut st, seg, &path, last, repair)? {
                continue;
            }
            let f = File::open(&path).map_err(|e| E::io(&path, e))?;
            st.segs.insert(seg, Arc::new(f));
        }
        st.flushed = st.last().map(|l| l.index);
        Ok(st)
    }

    /// The entries `from..=to`, in order; an error names the first one the log does not hold.
    pub fn entries(&self, from: u64, to: u64) -> Result<Vec<Entry>, crate::storage::StorageError> {
        let st = self.state.lock();
        let missing = |i: u64| crate::storage::StorageError::Corrupt {
            file: st.dir.clone(),
            offset: 0,
            reason: format!(
                "log entry {i} is not in the log (it holds {}..{})",
                st.first,
                st.first + st.locs.len() as u64
            ),
        };
        let mut out = Vec::new();
        for i in from..=to {
            match st.get(i) {
                Ok(Some(e)) if e.log_id.index == i => out.push(e),
                Ok(_) => return Err(missing(i)),
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The member's Raft directory (`<dataDir>/raft`).
    pub fn raft_dir(&self) -> PathBuf {
        self.state.lock().raft_dir.clone()
    }

    /// The log id of the entry at `index`, if the log holds it.
    pub fn log_id_at(&self, index: u64) -> Option<LogId> {
        let st = self.state.lock();
        let i = index.checked_sub(st.first)?;
        st.locs.get(i as usize).map(|l| l.log_id)
    }

    /// The id of the log's last entry (the last purged one when none is left), as a vote
    /// compares logs.
    pub fn last_log_id(&self) -> Option<LogId> {
        let st = self.state.lock();
        st.locs.back().map(|l| l.log_id).or(st.purged)
    }

    /// Highest index on disk (for tests and metrics).
    pub fn flushed(&self) -> Option<u64> {
        self.state.lock().flushed
    }

    /// Whether the entries after `applied` (a snapshot's last log id, `None` for the empty
    /// tree) can be replayed from this log: nothing between `applied` and the log's first entry
    /// was purged. False when the log was compacted past `applied`, e.g. after the newest
    /// snapshot turned out damaged and an older one was taken instead.
    pub fn continues_from(&self, applied: Option<LogId>) -> bool {
        let st = self.state.lock();
        let next = applied.map_or(0, |a| a.index + 1);
        let purged_past = match (st.purged, applied) {
            (Some(p), Some(a)) => p.index > a.index,
            (Some(_), None) => true,
            (None, _) => false,
        };
        !purged_past && (st.locs.is_empty() || st.first <= next)
    }

    fn wait(
        &self,
        job: impl FnOnce(std::sync::mpsc::SyncSender<std::io::Result<()>>) -> Job,
    ) -> Result<(), StorageError> {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        self.jobs.send(job(tx)).map_err(|_| log_msg("the log writer has stopped"))?;
        // The writer only does file I/O; waiting here briefly is what openraft expects of
        // truncate and purge (they are rare: a new leader's conflicts, a snapshot's purge).
        tokio::task::block_in_place(|| rx.recv()).map_err(|_| log_msg("the log writer has stopped"))?.map_err(log_err)
    }
}

/// Reads a segment's records into the index. A bad record at the end of the last segment with
/// only zeros after it is a torn append and is cut (left unread without `repair`); anywhere else
/// it stops startup. False for an empty last segment, which is removed (skipped without `repair`).
fn scan_segment(
    st: &mut State,
    seg: u64,
    path: &Path,
    last: bool,
    repair: bool,
) -> Result<bool, crate::storage::StorageError> {
    use crate::storage::StorageError as E;
    let corrupt = |offset: u64, reason: String| E::Corrupt { file: path.to_owned(), offset, reason };
    let bytes = std::fs::read(path).map_err(|e| E::io(path, e))?;
    let Some(version) = RAFT.version(&bytes) else {
        if last && bytes.iter().all(|b| *b == 0) {
            if repair {
                tracing::warn!(file = %path.display(), "empty raft log segment (crash while creating it): removing");
                std::fs::remove_file(path).map_err(|e| E::io(path, e))?;
            }
            return Ok(false);
        }
        if RAFT.has_header(&bytes) {
            return Err(corrupt(4, "a segment format version this build does not read".into()));
        }
        return Err(corrupt(0, "not a zkr raft log segment".into()));
    };
    let trailer = segment::trailer(version) as usize;
    let mut off = HEADER as usize;
    while let Some(prefix) = bytes.get(off..off + PREFIX).and_then(|p| <&[u8; PREFIX]>::try_from(p).ok()) {
        let (len, crc) = segment::read_prefix(prefix);
        let len = len as usize;
        let rest_zero = |from: usize| bytes[from.min(bytes.len())..].iter().all(|b| *b == 0);
        if len == 0 && crc == 0 {
            if rest_zero(off) {
                break;
            }
            return Err(corrupt(off as u64, "a zero record header followed by data".into()));
        }
        let end = off + 8 + len;
        let entry = (end <= bytes.len() && segment::checks(&bytes[off + 8..end], crc))
            .then(|| bincode::deserialize::<Entry>(&bytes[off + 8..end]).ok())
            .flatten();
        let Some(entry) = entry else {
            let written_end = bytes[off..].iter().rposition(|b| *b != 0).map_or(off, |p| off + p + 1);
            let complete = segment::complete(&bytes[off..written_end], version);
            // Torn: the last segment, the record not written whole, and nothing but zeros after
            // the extent it claims (or after its header, if the length itself is past the file).
            let claimed = end + trailer;
            if last
                && !complete
                && rest_zero(claimed.min(bytes.len()).max(off + 8))
                && claimed <= bytes.len() + 8 + trailer
            {
                if repair {
                    tracing::warn!(file = %path.display(), offset = off, "torn record at the end of the raft log (crash during append): cutting it");
                    let f = OpenOptions::new().write(true).open(path).map_err(|e| E::io(path, e))?;
                    f.write_all_at(&vec![0u8; written_end - off], off as u64).map_err(|e| E::io(path, e))?;
                    f.sync_all().map_err(|e| E::io(path, e))?;
                }
                break;
            }
            let why = if complete {
                "a complete record (it ends with its end mark) fails its checksum or does not decode: damaged after it was written"
            } else {
                "record fails its checksum or does not decode"
            };
            return Err(corrupt(off as u64, why.into()));
        };
        let index = entry.log_id.index;
        match st.last() {
            // The log starts again past the entries before it: a segment that starts there
            // (openraft appended after a snapshot it installed, and the older entries were waiting
            // to be purged), or a jump over entries that were all purged (openraft purged past the
            // end of a log cut at damage below the member's snapshot, "clean the hole between
            // last_log_id and last_applied", and appended after it in the same segment; read as
            // damage, that member was cut and made amnesiac again at every restart).
            Some(prev)
                if index > prev.index + 1
                    && (off as u64 == HEADER || st.purged.is_some_and(|p| p.index + 1 >= index)) =>
            {
                st.locs.clear();
                st.cache.clear();
                st.first = index;
            }
            Some(prev) if index != prev.index + 1 => {
                return Err(corrupt(off as u64, format!("entry {index} follows entry {}", prev.index)));
            }
            None => st.first = index,
            _ => {}
        }
        st.locs.push_back(Loc { log_id: entry.log_id, seg, offset: off as u64, len: len as u32 });
        st.cache.push_back(entry, len as u32);
        st.cache.trim(u64::MAX);
        // A record whose checksum holds is kept whatever its end mark says.
        off = end + trailer;
    }
    if version != segment::VERSION {
        st.old_format.insert(seg);
    }
    if last {
        // Appends never go into a segment of an older format: the next one starts a new segment.
        st.write_seg = (version == segment::VERSION).then_some(seg);
        st.write_off = off as u64;
    }
    Ok(true)
}

/// Writes a small value (bincode + crc32) to `path` atomically; fsync'd when `durable`.
pub(crate) fn write_small<T: serde::Serialize>(path: &Path, v: &T, durable: bool) -> std::io::Result<()> {
    let mut b = bincode::serialize(v).map_err(std::io::Error::other)?;
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_be_bytes());
    crate::storage::replace_file(path, &b, durable)
}

/// Reads what `write_small` wrote; a missing file is `None`, a damaged one an error.
pub(crate) fn read_small<T: serde::de::DeserializeOwned>(path: &Path) -> std::io::Result<Option<T>> {
    let mut b = Vec::new();
    match File::open(path) {
        Ok(mut f) => f.read_to_end(&mut b)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{} is damaged", path.display()));
    if b.len() < 4 {
        return Err(bad());
    }
    let (body, crc) = b.split_at(b.len() - 4);
    if crc32fast::hash(body).to_be_bytes() != crc {
        return Err(bad());
    }
    bincode::deserialize(body).map(Some).map_err(|_| bad())
}

fn range_of(range: &impl RangeBounds<u64>) -> (u64, u64) {
    let start = match range.start_bound() {
        Bound::Included(s) => *s,
        Bound::Excluded(s) => s + 1,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(e) => e.saturating_add(1),
        Bound::Excluded(e) => *e,
        Bound::Unbounded => u64::MAX,
    };
    (start, end)
}

/// The commit hint is written without fsync, while the log was longer: after a torn or damaged
/// tail was cut it can point past the log's end, and openraft, which re-applies the log up to
/// it at startup, then refuses to start (found by the fault suite: "Failed to get log entries,
/// expected index: [896, 899), got [Some(896), Some(897))", a member down for good). Everything
/// left in the log up to the hint was committed (the hint was saved when the log held the
/// committed entry, and only a suffix was cut since), so the hint is clamped to the log's end.
fn clamp_committed(committed: Option<LogId>, last: Option<LogId>) -> Option<LogId> {
    match (committed, last) {
        (Some(c), Some(l)) if c.index > l.index => Some(l),
        (Some(_), None) => None,
        (c, _) => c,
    }
}

impl RaftLogReader<Zkr> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + std::fmt::Debug + Send>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let (start, end) = range_of(&range);
        let st = self.state.lock();
        let last = st.first + st.locs.len() as u64;
        let end = end.min(last);
        let mut out = Vec::with_capacity(end.saturating_sub(start).min(4096) as usize);
        for i in start.max(st.first)..end {
            match st.get(i).map_err(log_err)? {
                Some(e) if e.log_id.index == i => out.push(e),
                Some(e) => {
                    let cache = (st.cache.front().map(|e| e.log_id.index), st.cache.len());
                    return Err(log_msg(format!(
                        "entry {i} read as entry {} (log holds {}..{last}, cache {cache:?})",
                        e.log_id.index, st.first
                    )));
                }
                None => {
                    let cache = (st.cache.front().map(|e| e.log_id.index), st.cache.len());
                    return Err(log_msg(format!(
                        "entry {i} is missing from the log (holds {}..{last}, cache {cache:?})",
                        st.first
                    )));
                }
            }
        }
        if start < st.first && end > start {
            tracing::warn!(start, end, first = st.first, "entries asked for below the first one in the log");
        }
        Ok(out)
    }

    /// What one AppendEntries carries (openraft asks for at most `max_payload_entries`): the
    /// entries from `start` that fit in `super::APPEND_MAX_BYTES`, at least one. openraft sends
    /// the rest in the next AppendEntries as soon as this one is answered.
    async fn limited_get_log_entries(&mut self, start: u64, end: u64) -> Result<Vec<Entry>, StorageError> {
        let end = self.state.lock().end_within(start, end, super::APPEND_MAX_BYTES);
        self.try_get_log_entries(start..end).await
    }
}

impl RaftLogStorage<Zkr> for LogStore {
    type LogReader = LogStore;

    async fn get_log_state(&mut self) -> Result<LogState<Zkr>, StorageError> {
        let st = self.state.lock();
        let last = st.last().or(st.purged);
        Ok(LogState { last_purged_log_id: st.purged, last_log_id: last })
    }

    async fn get_log_reader(&mut self) -> LogStore {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        let path = self.state.lock().raft_dir.join("vote");
        tokio::task::block_in_place(|| write_small(&path, vote, true)).map_err(|e| {
            openraft::StorageIOError::write_vote(openraft::AnyError::error(format!("{}: {e}", path.display()))).into()
        })
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        let path = self.state.lock().raft_dir.join("vote");
        read_small(&path).map_err(|e| openraft::StorageIOError::read_vote(openraft::AnyError::error(e)).into())
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        let path = self.state.lock().raft_dir.join("committed");
        // A hint for the next start (entries up to it are applied at once); losing it is safe.
        write_small(&path, &committed, false).map_err(log_err)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        let st = self.state.lock();
        let path = st.raft_dir.join("committed");
        let committed = read_small::<Option<LogId>>(&path).map_err(log_err)?.flatten();
        Ok(clamp_committed(committed, st.last().or(st.purged)))
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<Zkr>) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + Send,
        I::IntoIter: Send,
    {
        let mut st = self.state.lock();
        if let Some(why) = &st.failed {
            return Err(log_err(why.clone()));
        }
        // One job per segment touched: (segment, create it, offset, bytes, last index).
        let mut parts: Vec<(u64, bool, u64, Vec<u8>, u64)> = Vec::new();
        for e in entries {
            let mut record = Vec::new();
            let mut encoded = Ok(());
            segment::frame(&mut record, |b| encoded = bincode::serialize_into(b, &e));
            encoded.map_err(log_err)?;
            let payload_len = (record.len() - PREFIX - segment::END_MARK.len()) as u32;
            let rec_len = record.len() as u64;
            match st.last() {
                // openraft appends past a snapshot it installed before purging what the snapshot
                // covers: those older entries are obsolete. The new run starts its own segment,
                // so each segment stays contiguous on disk.
                Some(prev) if e.log_id.index > prev.index + 1 => {
                    st.locs.clear();
                    st.cache.clear();
                    st.first = e.log_id.index;
                    st.write_seg = None;
                }
                Some(prev) if e.log_id.index <= prev.index => {
                    return Err(log_msg(format!(
                        "entry {} appended over entry {} without a truncate",
                        e.log_id.index, prev.index
                    )));
                }
                _ => {}
            }
            let full = st.write_off + rec_len > SEGMENT_BYTES && st.write_off > HEADER;
            let seg = match st.write_seg {
                Some(seg) if !full => seg,
                _ => {
                    st.write_seg = Some(e.log_id.index);
                    st.write_off = HEADER;
                    parts.push((e.log_id.index, true, HEADER, Vec::new(), e.log_id.index));
                    e.log_id.index
                }
            };
            if parts.last().is_none_or(|p| p.0 != seg) {
                parts.push((seg, false, st.write_off, Vec::new(), e.log_id.index));
            }
            if st.locs.is_empty() {
                st.first = e.log_id.index;
            }
            let offset = st.write_off;
            st.locs.push_back(Loc { log_id: e.log_id, seg, offset, len: payload_len });
            st.write_off += rec_len;
            if let Some(p) = parts.last_mut() {
                p.3.extend_from_slice(&record);
                p.4 = e.log_id.index;
            }
            st.cache.push_back(e, payload_len);
        }
        drop(st);
        if parts.is_empty() {
            callback.log_io_completed(Ok(()));
            return Ok(());
        }
        let n = parts.len();
        let mut callback = Some(callback);
        for (k, (seg, create, offset, bytes, last)) in parts.into_iter().enumerate() {
            let done = if k + 1 == n { callback.take() } else { None };
            self.jobs
                .send(Job::Append { seg, create, offset, bytes, last, done })
                .map_err(|_| log_msg("the log writer has stopped"))?;
        }
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let since = log_id.index;
        let (seg, drop) = {
            let mut st = self.state.lock();
            if since < st.first || since >= st.first + st.locs.len() as u64 {
                return Ok(());
            }
            let at = st.locs[(since - st.first) as usize];
            let keep = (since - st.first) as usize;
            st.locs.truncate(keep);
            while st.cache.back().is_some_and(|e| e.log_id.index >= since) {
                st.cache.pop_back();
            }
            let dropped: Vec<u64> = st.segs.range(at.seg + 1..).map(|(s, _)| *s).collect();
            let paths: Vec<PathBuf> = dropped.iter().map(|s| st.seg_path(*s)).collect();
            for s in &dropped {
                st.segs.remove(s);
            }
            if at.offset <= HEADER {
                // The whole segment goes.
                st.segs.remove(&at.seg);
                let mut paths = paths;
                paths.push(st.seg_path(at.seg));
                let prev = st.locs.back().copied();
                st.write_seg = prev.map(|l| l.seg).filter(|s| !st.old_format.contains(s));
                st.write_off =
                    prev.map_or(HEADER, |l| l.offset + segment::record_bytes(l.len as u64, st.version(l.seg)));
                st.flushed = st.flushed.map(|f| f.min(since.saturating_sub(1)));
                (None, paths)
            } else {
                st.write_seg = Some(at.seg).filter(|s| !st.old_format.contains(s));
                st.write_off = at.offset;
                st.flushed = st.flushed.map(|f| f.min(since.saturating_sub(1)));
                (Some((at.seg, at.offset)), paths)
            }
        };
        self.wait(|done| Job::Truncate { seg, drop, done })
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let path = self.state.lock().raft_dir.join("purged");
        tokio::task::block_in_place(|| write_small(&path, &log_id, true)).map_err(log_err)?;
        crate::config::CrashPoint::LogPurged.hit(self.crash);
        let remove = {
            let mut st = self.state.lock();
            st.purged = Some(log_id);
            let upto = log_id.index;
            while st.locs.front().is_some_and(|l| l.log_id.index <= upto) {
                st.locs.pop_front();
            }
            st.first = st.locs.front().map_or(upto + 1, |l| l.log_id.index);
            while st.cache.front().is_some_and(|e| e.log_id.index <= upto) {
                st.cache.pop_front();
            }
            // A segment goes once the next one starts at or before the first kept entry.
            let keep_from = st.locs.front().map_or(st.write_seg.unwrap_or(u64::MAX), |l| l.seg);
            let old: Vec<u64> = st.segs.range(..keep_from).map(|(s, _)| *s).collect();
            let mut paths = Vec::new();
            for s in old {
                if Some(s) != st.write_seg {
                    st.segs.remove(&s);
                    paths.push(st.seg_path(s));
                }
            }
            paths
        };
        if remove.is_empty() {
            return Ok(());
        }
        self.wait(|done| Job::Remove { paths: remove, done })
    }
}

#[cfg(test)]
#[path = "log_store_tests.rs"]
mod tests;
