//! Whether a snapshot's bytes are whole, without loading its tree: its magic, a format version
//! this build reads, and the crc32 of every byte before its last four (see `snapshot.rs` for the
//! layout). A leader checks the snapshot it is about to send (`raft::state_machine`), and a
//! follower checks the stream it receives before openraft installs it (`raft::member::peers`),
//! so a damaged snapshot is set aside or sent again instead of stopping the member that would
//! install it. Owns no files: it reads what it is given.

use super::StorageError;
use std::io::Read;
use std::path::Path;

/// The bytes every snapshot starts with: its magic.
const MAGIC: &[u8; 4] = b"ZKRS";
/// The format versions `snapshot::read` reads.
const VERSIONS: [u32; 4] = [1, 2, 3, 4];
/// Bytes of the trailing checksum.
const CRC: usize = 4;

/// A snapshot's bytes fed in order, checked at the end.
#[derive(Default)]
pub struct StreamCheck {
    hasher: crc32fast::Hasher,
    /// The first 8 bytes (magic and version), once there are that many.
    head: Vec<u8>,
    /// The last bytes seen, not yet hashed: the trailing checksum once the stream ends.
    tail: Vec<u8>,
    len: u64,
}

impl StreamCheck {
    pub fn update(&mut self, bytes: &[u8]) {
        if self.head.len() < 8 {
            let take = (8 - self.head.len()).min(bytes.len());
            self.head.extend_from_slice(&bytes[..take]);
        }
        self.len += bytes.len() as u64;
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > CRC {
            let hashed = self.tail.len() - CRC;
            self.hasher.update(&self.tail[..hashed]);
            self.tail.drain(..hashed);
        }
    }

    /// Why the bytes fed so far are not a whole snapshot, if they are not.
    pub fn finish(self) -> Result<(), String> {
        if self.head.len() < 8 || self.head[..4] != MAGIC[..] {
            return Err("not a zkr snapshot (no ZKRS header)".into());
        }
        let version = u32::from_be_bytes([self.head[4], self.head[5], self.head[6], self.head[7]]);
        if !VERSIONS.contains(&version) {
            return Err(format!("snapshot format version {version} is not one this build reads"));
        }
        let stored = <[u8; CRC]>::try_from(self.tail.as_slice()).map(u32::from_be_bytes);
        let computed = self.hasher.finalize();
        match stored {
            Ok(s) if s == computed => Ok(()),
            Ok(s) => {
                Err(format!("{} bytes that fail their checksum (stored {s:08x}, computed {computed:08x})", self.len))
            }
            Err(_) => Err("shorter than a snapshot's header".into()),
        }
    }
}

/// Checks the snapshot file at `path` whole (one sequential read).
pub fn verify(path: &Path) -> Result<(), StorageError> {
    let corrupt = |reason: String| StorageError::Corrupt { file: path.to_owned(), offset: 0, reason };
    let mut f = std::fs::File::open(path).map_err(|e| StorageError::io(path, e))?;
    let mut check = StreamCheck::default();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => check.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(StorageError::io(path, e)),
        }
    }
    check.finish().map_err(corrupt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::DataTree;

    fn snapshot_bytes() -> Vec<u8> {
        let mut tree = DataTree::default();
        let acl = std::sync::Arc::from(crate::proto::Acl::open_unsafe());
        for i in 0..200 {
            let path = format!("/n{i}");
            let op = crate::txn::TxnOp::Create {
                path,
                data: Some(bytes::Bytes::from(vec![b'x'; 100])),
                acl: std::sync::Arc::clone(&acl),
                ephemeral_owner: 0,
                parent_cversion: i + 1,
            };
            tree.apply(&crate::txn::Txn { zxid: i as i64 + 1, time: 1, session: 0, op }, &mut Vec::new());
        }
        super::super::snapshot::encode(&tree)
    }

    /// Fed in chunks of any size, a whole snapshot checks out; one flipped byte anywhere, a cut
    /// or another file does not.
    #[test]
    fn a_whole_snapshot_checks_out_in_any_chunks_and_a_damaged_one_does_not() {
        let whole = snapshot_bytes();
        for chunk in [1, 3, 4, 5, 1000, whole.len()] {
            let mut c = StreamCheck::default();
            whole.chunks(chunk).for_each(|b| c.update(b));
            assert_eq!(c.finish(), Ok(()), "chunks of {chunk}");
        }
        for at in [0, 5, 100, whole.len() / 2, whole.len() - 1] {
            let mut bad = whole.clone();
            bad[at] ^= 0x20;
            let mut c = StreamCheck::default();
            bad.chunks(777).for_each(|b| c.update(b));
            assert!(c.finish().is_err(), "flipped at {at}");
        }
        let mut c = StreamCheck::default();
        c.update(&whole[..whole.len() - 10]);
        assert!(c.finish().is_err(), "cut short");
        let dir = std::env::temp_dir().join(format!("zkr-snapcheck-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("snapshot.1");
        std::fs::write(&p, &whole).unwrap();
        assert!(verify(&p).is_ok());
        let mut bad = whole.clone();
        bad[whole.len() / 3] ^= 1;
        std::fs::write(&p, &bad).unwrap();
        assert!(matches!(verify(&p), Err(StorageError::Corrupt { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
