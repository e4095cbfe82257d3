//! Reading a checksummed file record by record through a window, so that loading it never holds
//! the whole file in memory: only the window (1 MiB, grown for a record larger than that) and
//! what the records are turned into. The file is `body | crc32 u32` with the crc over the body,
//! as snapshots are (storage/snapshot.rs). The checksum is verified in a first pass, before any
//! record is parsed, so parsers only ever see bytes the writer wrote.

use super::StorageError;
use crate::proto::jute::JResult;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Bytes read from the file at a time.
const WINDOW: usize = 1 << 20;

pub struct Window {
    path: PathBuf,
    file: File,
    /// Bytes read and not yet dropped; `buf[pos..]` is not parsed yet.
    buf: Vec<u8>,
    pos: usize,
    /// The file offset of `buf[0]`.
    offset: u64,
    /// Body bytes not read from the file yet.
    left: u64,
    len: u64,
}

impl Window {
    /// Opens `path` and verifies its checksum; a file shorter than `min_len` or not starting with
    /// `magic` is `Corrupt` with `foreign`.
    pub fn open(path: &Path, magic: &[u8], min_len: u64, foreign: &str) -> Result<Window, StorageError> {
        let io = |e| StorageError::io(path, e);
        let mut file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        let not_ours = || StorageError::Corrupt { file: path.to_owned(), offset: 0, reason: foreign.to_owned() };
        if len < min_len.max(4 + magic.len() as u64) {
            return Err(not_ours());
        }
        let mut buf = vec![0u8; WINDOW];
        let mut crc = crc32fast::Hasher::new();
        let mut left = len - 4;
        while left > 0 {
            let n = (buf.len() as u64).min(left) as usize;
            file.read_exact(&mut buf[..n]).map_err(io)?;
            if left == len - 4 && !buf.starts_with(magic) {
                return Err(not_ours());
            }
            crc.update(&buf[..n]);
            left -= n as u64;
        }
        let mut stored = [0u8; 4];
        file.read_exact(&mut stored).map_err(io)?;
        if crc.finalize() != u32::from_be_bytes(stored) {
            return Err(StorageError::Corrupt {
                file: path.to_owned(),
                offset: len - 4,
                reason: "fails its checksum".to_owned(),
            });
        }
        file.seek(SeekFrom::Start(0)).map_err(io)?;
        buf.clear();
        Ok(Window { path: path.to_owned(), file, buf, pos: 0, offset: 0, left: len - 4, len })
    }

    /// The file's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// The next record, parsed by `p`. A parse that fails while the file has more body is tried
    /// again on a longer window (the record, or a count in it, may run past the window's end);
    /// one that fails on everything that is left is `Corrupt` with `reason`.
    pub fn next<T, P>(&mut self, mut p: P, reason: &str) -> Result<T, StorageError>
    where
        P: for<'a> FnMut(&'a [u8]) -> JResult<'a, T>,
    {
        loop {
            let parsed = p(&self.buf[self.pos..]).map(|(rest, v)| (rest.len(), v));
            match parsed {
                Ok((rest, v)) => {
                    self.pos = self.buf.len() - rest;
                    return Ok(v);
                }
                Err(_) if self.left > 0 => self.fill()?,
                Err(_) => return Err(self.corrupt(reason)),
            }
        }
    }

    /// `Corrupt` at the current position with `reason`.
    pub fn corrupt(&self, reason: &str) -> StorageError {
        StorageError::Corrupt {
            file: self.path.clone(),
            offset: self.offset + self.pos as u64,
            reason: reason.to_owned(),
        }
    }

    /// Checks that every byte of the body was parsed.
    pub fn finish(self) -> Result<(), StorageError> {
        if self.pos < self.buf.len() || self.left > 0 {
            return Err(self.corrupt("trailing bytes"));
        }
        Ok(())
    }

    /// Drops the parsed bytes and reads at least a window more (the buffer doubles while a
    /// record does not fit).
    fn fill(&mut self) -> Result<(), StorageError> {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.offset += self.pos as u64;
            self.pos = 0;
        }
        let have = self.buf.len();
        let n = (WINDOW.max(have) as u64).min(self.left) as usize;
        self.buf.resize(have + n, 0);
        self.file.read_exact(&mut self.buf[have..]).map_err(|e| StorageError::io(&self.path, e))?;
        self.left -= n as u64;
        Ok(())
    }
}
