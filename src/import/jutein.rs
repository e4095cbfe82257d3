//! A cursor over ZooKeeper's on-disk jute (`BinaryInputArchive`), with Adler32 as its file
//! formats use it. Errors carry the offset so a bad file is reported precisely.

use super::ImportError;
use std::path::{Path, PathBuf};

pub struct Cursor<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
    pub file: &'a Path,
}

impl<'a> Cursor<'a> {
    pub fn new(buf: &'a [u8], file: &'a Path) -> Cursor<'a> {
        Cursor { buf, pos: 0, file }
    }

    pub fn err(&self, what: &str) -> ImportError {
        ImportError::Format { file: PathBuf::from(self.file), offset: self.pos as u64, what: what.to_owned() }
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

    pub fn u8(&mut self, what: &str) -> Result<u8, ImportError> {
        Ok(self.take(1, what)?[0])
    }

    pub fn int(&mut self, what: &str) -> Result<i32, ImportError> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn long(&mut self, what: &str) -> Result<i64, ImportError> {
        let b = self.take(8, what)?;
        Ok(i64::from_be_bytes(b.try_into().unwrap_or([0; 8])))
    }

    pub fn bool(&mut self, what: &str) -> Result<bool, ImportError> {
        Ok(self.u8(what)? != 0)
    }

    pub fn buffer(&mut self, what: &str) -> Result<Option<&'a [u8]>, ImportError> {
        let len = self.int(what)?;
        if len == -1 {
            return Ok(None);
        }
        if len < 0 {
            return Err(self.err(&format!("negative length in {what}")));
        }
        Ok(Some(self.take(len as usize, what)?))
    }

    pub fn string(&mut self, what: &str) -> Result<String, ImportError> {
        let b = self.buffer(what)?.unwrap_or_default();
        String::from_utf8(b.to_vec()).map_err(|_| self.err(&format!("{what} is not UTF-8")))
    }

    pub fn acls(&mut self) -> Result<Vec<crate::proto::Acl>, ImportError> {
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

/// Adler-32, the checksum ZooKeeper's snapshots and logs use (java.util.zip.Adler32).
pub fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += x as u32;
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

#[cfg(test)]
mod tests {
    #[test]
    fn adler32_known_value() {
        assert_eq!(super::adler32(b"Wikipedia"), 0x11E6_0398);
    }
}
