//! The operator's repair of a standalone log (`zkr repair-log`): cut at the first corrupt
//! record, keeping copies of everything it removes (see `damage` for the copies' names).

use super::damage::{keep_copy, move_aside, zero_from, CHUNK};
use super::segment::HEADER;
use super::wal;
use super::StorageError;
use crate::txn::Zxid;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// What `repair` did.
#[derive(Debug, Default)]
pub struct Repaired {
    /// Each cut: the segment, the offset it was cut at, and why it was corrupt there.
    pub cuts: Vec<(PathBuf, u64, String)>,
    /// Copies and moved segments in `damaged/`.
    pub kept: Vec<PathBuf>,
}

/// Cuts the log in `dir` at its first corrupt record, so that replay after the snapshot at
/// `after` succeeds: the damaged segment's written part is copied to `damaged/` and then zeroed
/// from the bad record on, and every later segment is moved into `damaged/`. A log that
/// replays cleanly is left alone. Refuses the errors a cut cannot fix (a missing directory,
/// I/O errors).
pub fn repair(dir: &Path, after: Zxid) -> Result<Repaired, StorageError> {
    let mut done = Repaired::default();
    loop {
        let (file, offset, reason) = match wal::replay(dir, after) {
            Ok(_) => return Ok(done),
            Err(StorageError::CorruptLog { file, offset, reason }) => (file, offset, reason),
            Err(e) => return Err(e),
        };
        // Each cut leaves the segments before the damaged one as they were and removes bytes at
        // or after the bad record, so the same place cannot be reported twice unless the cut
        // did not take effect.
        if done.cuts.iter().any(|(f, o, _)| *f == file && *o == offset) {
            return Err(StorageError::CorruptLog { file, offset, reason });
        }
        let segs = wal::segments(dir)?;
        let Some(at) = segs.iter().position(|(_, p)| *p == file) else {
            return Err(StorageError::CorruptLog { file, offset, reason });
        };
        let f = File::open(&file).map_err(|e| StorageError::io(&file, e))?;
        let len = f.metadata().map_err(|e| StorageError::io(&file, e))?.len();
        let written = scan_written_end(&f, len).map_err(|e| StorageError::io(&file, e))?;
        drop(f);
        done.kept.push(keep_copy(&file, written, "corrupt")?);
        for (_, later) in &segs[at + 1..] {
            done.kept.push(move_aside(later)?);
        }
        // A cut inside the header leaves an all-zero segment, which replay treats as created
        // but never written (the writer rewrites it).
        zero_from(&file, if offset < HEADER { 0 } else { offset })?;
        tracing::warn!(file = %file.display(), offset, "log cut at its first corrupt record (repair-log)");
        done.cuts.push((file, offset, reason));
    }
}

/// One past the last non-zero byte of a file of `len` bytes.
fn scan_written_end(f: &File, len: u64) -> std::io::Result<u64> {
    let mut buf = vec![0u8; CHUNK as usize];
    let mut end = len;
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let chunk = &mut buf[..(end - start) as usize];
        f.read_exact_at(chunk, start)?;
        if let Some(last) = chunk.iter().rposition(|b| *b != 0) {
            return Ok(start + last as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}
