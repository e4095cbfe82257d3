//! A cursor over ZooKeeper's on-disk jute (`BinaryInputArchive`), with Adler32 as its file
//! formats use it. Errors carry the offset so a bad file is reported precisely.

use super::ImportError;
use std::path::{Path, PathBuf};

pub struct Cursor<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
    pub file: &'a Path,
}

/// What both readers of ZooKeeper's jute give: fixed-size reads and errors that say where.
/// `Cursor` reads a file held in memory, `Stream` a socket (a ZAB leader's SNAP has no length).
pub trait Jute {
    /// Fills `out` with the next bytes, or fails saying `what` was cut short.
    fn fill(&mut self, out: &mut [u8], what: &str) -> Result<(), ImportError>;
    /// The next `n` bytes.
    fn take_bytes(&mut self, n: usize, what: &str) -> Result<bytes::Bytes, ImportError>;
    /// A format error at the current position.
    fn err(&self, what: &str) -> ImportError;
    /// What is being read: a file, or a peer's address.
    fn label(&self) -> &Path;

    fn u8(&mut self, what: &str) -> Result<u8, ImportError> {
        let mut b = [0u8; 1];
        self.fill(&mut b, what)?;
        Ok(b[0])
    }

    fn int(&mut self, what: &str) -> Result<i32, ImportError> {
        let mut b = [0u8; 4];
        self.fill(&mut b, what)?;
        Ok(i32::from_be_bytes(b))
    }

    fn long(&mut self, what: &str) -> Result<i64, ImportError> {
        let mut b = [0u8; 8];
        self.fill(&mut b, what)?;
        Ok(i64::from_be_bytes(b))
    }

    fn bool(&mut self, what: &str) -> Result<bool, ImportError> {
        Ok(self.u8(what)? != 0)
    }

    /// A jute `buffer`: an int length (-1 is null), then the bytes.
    fn bytes(&mut self, what: &str) -> Result<Option<bytes::Bytes>, ImportError> {
        let len = self.int(what)?;
        if len == -1 {
            return Ok(None);
        }
        if len < 0 {
            return Err(self.err(&format!("negative length in {what}")));
        }
        self.take_bytes(len as usize, what).map(Some)
    }

    fn string(&mut self, what: &str) -> Result<String, ImportError> {
        let b = self.bytes(what)?.unwrap_or_default();
        String::from_utf8(b.to_vec()).map_err(|_| self.err(&format!("{what} is not UTF-8")))
    }

    fn acls(&mut self) -> Result<Vec<crate::proto::Acl>, ImportError> {
        let n = self.int("acl count")?;
        if n < 0 {
            return Ok(Vec::new());
        }
        let mut out = Vec::with_capacity(n.min(64) as usize);
        for _ in 0..n {
            let perms = self.int("acl perms")?;
            let scheme = self.string("acl scheme")?;
            let id = self.string("acl id")?;
            out.push(crate::proto::Acl { perms, id: crate::proto::Id { scheme, id } });
        }
        Ok(out)
    }
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8], file: &'a Path) -> Cursor<'a> {
        Cursor { buf, pos: 0, file }
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], ImportError> {
        if self.buf.len() - self.pos < n {
            return Err(self.err(&format!("truncated {what}")));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }
}

impl Jute for Cursor<'_> {
    fn fill(&mut self, out: &mut [u8], what: &str) -> Result<(), ImportError> {
        out.copy_from_slice(self.take(out.len(), what)?);
        Ok(())
    }

    fn take_bytes(&mut self, n: usize, what: &str) -> Result<bytes::Bytes, ImportError> {
        self.take(n, what).map(bytes::Bytes::copy_from_slice)
    }

    fn err(&self, what: &str) -> ImportError {
        ImportError::Format { file: PathBuf::from(self.file), offset: self.pos as u64, what: what.to_owned() }
    }

    fn label(&self) -> &Path {
        self.file
    }
}

/// Jute read straight off a stream, such as a ZAB leader's socket, where a record's end is
/// known only by parsing it. `max` bounds every buffer, as ZooKeeper's `jute.maxbuffer` does.
pub struct Stream<R> {
    inner: R,
    pos: u64,
    label: PathBuf,
    max: usize,
    /// A byte `at_end` took off the stream, handed out first by the next read.
    peeked: Option<u8>,
}

impl<R: std::io::Read> Stream<R> {
    pub fn new(inner: R, label: PathBuf, max: usize) -> Stream<R> {
        Stream { inner, pos: 0, label, max, peeked: None }
    }

    pub fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    /// True if the stream has ended: no byte is left to read. Optional trailers (a snapshot's
    /// digest, written by 3.6+ only) are told apart from their absence this way, as ZooKeeper
    /// tells them by an `EOFException` at their first byte.
    pub fn at_end(&mut self) -> Result<bool, ImportError> {
        if self.peeked.is_some() {
            return Ok(false);
        }
        let mut b = [0u8; 1];
        loop {
            match self.inner.read(&mut b) {
                Ok(0) => return Ok(true),
                Ok(_) => {
                    self.peeked = Some(b[0]);
                    return Ok(false);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => {
                    let what = "the end of the stream".to_owned();
                    return Err(ImportError::Read { file: self.label.clone(), offset: self.pos, what, source });
                }
            }
        }
    }
}

impl<R: std::io::Read> Jute for Stream<R> {
    fn fill(&mut self, mut out: &mut [u8], what: &str) -> Result<(), ImportError> {
        if out.is_empty() {
            return Ok(());
        }
        if let Some(b) = self.peeked.take() {
            out[0] = b;
            self.pos += 1;
            out = &mut out[1..];
        }
        self.inner.read_exact(out).map_err(|source| ImportError::Read {
            file: self.label.clone(),
            offset: self.pos,
            what: what.to_owned(),
            source,
        })?;
        self.pos += out.len() as u64;
        Ok(())
    }

    fn take_bytes(&mut self, n: usize, what: &str) -> Result<bytes::Bytes, ImportError> {
        if n > self.max {
            return Err(self.err(&format!("{what} of {n} bytes is over the {} byte limit (jute.maxbuffer)", self.max)));
        }
        let mut v = vec![0u8; n];
        self.fill(&mut v, what)?;
        Ok(v.into())
    }

    fn err(&self, what: &str) -> ImportError {
        ImportError::Format { file: self.label.clone(), offset: self.pos, what: what.to_owned() }
    }

    fn label(&self) -> &Path {
        &self.label
    }
}

/// Adler-32, the checksum ZooKeeper's snapshots and logs use (java.util.zip.Adler32).
pub fn adler32(data: &[u8]) -> u32 {
    let mut a = Adler32::default();
    a.update(data);
    a.value()
}

/// Adler-32 computed as bytes go by: a ZooKeeper snapshot is sealed with the checksum of every
/// byte before the seal (`CheckedOutputStream` around the whole stream, `SnapStream.sealStream`).
#[derive(Debug, Clone, Copy)]
pub struct Adler32 {
    a: u32,
    b: u32,
}

impl Default for Adler32 {
    fn default() -> Self {
        Adler32 { a: 1, b: 0 }
    }
}

impl Adler32 {
    const MOD: u32 = 65521;

    pub fn update(&mut self, data: &[u8]) {
        // 5552 bytes is the most that can be summed before b overflows a u32.
        for chunk in data.chunks(5552) {
            for &x in chunk {
                self.a += x as u32;
                self.b += self.a;
            }
            self.a %= Self::MOD;
            self.b %= Self::MOD;
        }
    }

    pub fn value(&self) -> u32 {
        (self.b << 16) | self.a
    }
}

#[cfg(test)]
mod tests {
    use super::Jute;

    #[test]
    fn adler32_known_value() {
        assert_eq!(super::adler32(b"Wikipedia"), 0x11E6_0398);
        // Fed in pieces across the 5552-byte block: the same value as at once.
        let long: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut a = super::Adler32::default();
        for piece in long.chunks(333) {
            a.update(piece);
        }
        assert_eq!(a.value(), super::adler32(&long));
    }

    #[test]
    fn a_stream_reads_what_a_cursor_reads_and_bounds_buffers() {
        let mut bytes = vec![0, 0, 0, 3, b'a', b'b', b'c', 0xff, 0xff, 0xff, 0xff];
        bytes.extend_from_slice(&7i64.to_be_bytes());
        let label = std::path::Path::new("test");
        let mut c = super::Cursor::new(&bytes, label);
        let mut s = super::Stream::new(&bytes[..], label.to_owned(), 3);
        assert_eq!(c.string("s").unwrap(), s.string("s").unwrap());
        assert_eq!((c.bytes("b").unwrap(), s.bytes("b").unwrap()), (None, None));
        assert_eq!((c.long("l").unwrap(), s.long("l").unwrap()), (7, 7));
        assert!(s.int("past the end").is_err());
        let mut s = super::Stream::new(&[0u8, 0, 0, 4, 1, 2, 3, 4][..], label.to_owned(), 3);
        assert!(s.bytes("too long").unwrap_err().to_string().contains("jute.maxbuffer"));
    }
}
