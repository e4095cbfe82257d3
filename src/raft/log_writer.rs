//! The Raft log's writer thread: its side of `storage::group_commit`. Appends go to the segment
//! the store chose (creating it first when asked), one fdatasync covers every append waiting,
//! and only then are they reported flushed to openraft and published to the store's state
//! (`flushed`, which lets the store drop them from its cache). Truncations and removals run in
//! the same order as the appends around them.

use super::log_state::{seg_name, State, WriteFailed};
use super::types::Zkr;
use crate::storage::group_commit;
use crate::storage::segment::{sync_dir, RAFT};
use openraft::storage::LogFlushed;
use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the writer thread does, in order.
pub(super) enum Job {
    /// Write `bytes` at `offset` of segment `seg` (creating it first when `create`); entries up
    /// to `last`. `done` is told once they are on disk (a batch split over two segments reports
    /// once, with its second part).
    Append {
        seg: u64,
        create: bool,
        offset: u64,
        bytes: Vec<u8>,
        last: u64,
        done: Option<LogFlushed<Zkr>>,
    },
    /// Cut everything from `offset` of segment `seg` on, and remove `drop` segments.
    Truncate {
        seg: Option<(u64, u64)>,
        drop: Vec<PathBuf>,
        done: std::sync::mpsc::SyncSender<std::io::Result<()>>,
    },
    Remove {
        paths: Vec<PathBuf>,
        done: std::sync::mpsc::SyncSender<std::io::Result<()>>,
    },
}

/// The writer thread: appends and fsyncs in order (`storage::group_commit`), reporting each
/// batch once it is on disk.
pub(super) fn writer(dir: PathBuf, rx: std::sync::mpsc::Receiver<Job>, state: Arc<Mutex<State>>, force_sync: bool) {
    group_commit::run(&rx, &mut Writer { dir, file: None, state, force_sync, failed: None, flushed: None });
}

/// The Raft log's side of group commit: the segment being appended to and the shared state.
struct Writer {
    dir: PathBuf,
    file: Option<(u64, File)>,
    state: Arc<Mutex<State>>,
    force_sync: bool,
    /// This thread's copy of `State::failed` (only this thread sets it).
    failed: Option<WriteFailed>,
    /// The last entry of this batch's completed appends, published in `batch_done`.
    flushed: Option<u64>,
}

impl Writer {
    fn open(&self, seg: u64) -> std::io::Result<File> {
        OpenOptions::new().write(true).open(self.dir.join(seg_name(seg)))
    }

    fn append(&mut self, seg: u64, create: bool, offset: u64, bytes: &[u8]) -> std::io::Result<()> {
        if create {
            if let Some((_, f)) = &self.file {
                f.sync_data()?;
            }
            let f = create_segment(&self.dir, seg)?;
            self.state.lock().segs.insert(seg, Arc::new(File::open(self.dir.join(seg_name(seg)))?));
            self.file = Some((seg, f));
        } else if self.file.as_ref().map(|(s, _)| *s) != Some(seg) {
            self.file = Some((seg, self.open(seg)?));
        }
        match &self.file {
            Some((_, f)) => f.write_all_at(bytes, offset),
            None => Err(std::io::Error::other("no segment to append to")),
        }
    }

    fn truncate(&mut self, seg: Option<(u64, u64)>, drop: &[PathBuf]) -> std::io::Result<()> {
        for p in drop {
            std::fs::remove_file(p)?;
            if self.file.as_ref().is_some_and(|(s, _)| self.dir.join(seg_name(*s)) == *p) {
                self.file = None;
            }
        }
        if let Some((s, offset)) = seg {
            let f = self.open(s)?;
            let len = f.metadata()?.len();
            f.set_len(offset)?;
            f.set_len(len.max(offset))?;
            f.sync_all()?;
        }
        sync_dir(&self.dir);
        Ok(())
    }

    /// Nothing written after a failed write may be acknowledged.
    fn fail(&mut self, what: &'static str, e: std::io::Error) {
        let failed = WriteFailed { what, source: Arc::new(e) };
        tracing::error!("{failed}");
        self.failed.get_or_insert_with(|| failed.clone());
        self.state.lock().failed.get_or_insert(failed);
    }
}

impl group_commit::GroupWriter for Writer {
    type Job = Job;

    fn write(&mut self, job: &mut Job) -> bool {
        match job {
            Job::Append { seg, create, offset, bytes, .. } => match self.append(*seg, *create, *offset, bytes) {
                Ok(()) => true,
                Err(e) => {
                    self.fail("append to", e);
                    false
                }
            },
            Job::Truncate { seg, drop, done } => {
                let _ = done.send(self.truncate(*seg, drop));
                false
            }
            Job::Remove { paths, done } => {
                let res = paths.iter().try_for_each(std::fs::remove_file);
                sync_dir(&self.dir);
                let _ = done.send(res);
                false
            }
        }
    }

    fn sync(&mut self) {
        let synced = match &self.file {
            Some((_, f)) if self.force_sync => f.sync_data(),
            _ => Ok(()),
        };
        if let Err(e) = synced {
            self.fail("fsync", e);
        }
    }

    fn complete(&mut self, job: Job) {
        let Job::Append { last, done, .. } = job else { return };
        if self.failed.is_none() {
            self.flushed = Some(self.flushed.map_or(last, |f| f.max(last)));
        }
        if let Some(cb) = done {
            match &self.failed {
                None => cb.log_io_completed(Ok(())),
                Some(failed) => cb.log_io_completed(Err(std::io::Error::new(failed.source.kind(), failed.clone()))),
            }
        }
    }

    fn batch_done(&mut self) {
        if let Some(last) = self.flushed.take() {
            let mut st = self.state.lock();
            st.flushed = Some(st.flushed.map_or(last, |f| f.max(last)));
            st.trim_cache();
        }
    }
}

fn create_segment(dir: &Path, seg: u64) -> std::io::Result<File> {
    RAFT.create(dir, seg, true).map(|(_, f)| f)
}
