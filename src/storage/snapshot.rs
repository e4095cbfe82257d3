//! Snapshots of the tree and the session table.
//!
//! ```text
//! file      snapshot.<zxid, 16 hex digits>   (written as .tmp, fsync'd, renamed, dir fsync'd)
//! layout    "ZKRS" | version u32 = 1 | zxid i64 | nodes u64 | node* | sessions u32 | session* | crc32 u32
//! node      path ustring | data buffer | acl vector<ACL> | czxid mzxid pzxid ctime mtime i64
//!           | version cversion aversion i32 | ephemeralOwner i64 | children u32
//!           (parents before children; the child count sizes the child map once on load)
//! session   id i64 | timeout i32 | flags u8 (bit 0: imported from ZooKeeper, password derived its way)
//! ```
//! The crc32 covers every byte before it. A snapshot is an exact image of the tree at its zxid:
//! the core hands a copy of the tree (node payloads are shared, not copied) to a background
//! thread, so writing never stops the writer, and recovery replays the log strictly after it.

use super::StorageError;
use crate::proto::jute::{self, JuteWrite};
use crate::proto::stat::{parse_acls, write_acls};
use crate::tree::{DataTree, NodeStat};
use crate::txn::Zxid;
use bytes::BufMut;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 4] = b"ZKRS";
const VERSION: u32 = 1;

pub fn file_name(zxid: Zxid) -> String {
    format!("snapshot.{zxid:016x}")
}

/// Snapshot files of a directory, newest first.
pub fn list(dir: &Path) -> Result<Vec<(Zxid, PathBuf)>, StorageError> {
    let mut out = super::numbered_files(dir, "snapshot.")?;
    out.reverse();
    Ok(out)
}

/// Bytes buffered before they are checksummed and handed to the writer.
const CHUNK: usize = 1 << 20;

/// Checksums and writes out what is buffered.
fn flush(b: &mut Vec<u8>, crc: &mut crc32fast::Hasher, out: &mut impl Write) -> std::io::Result<()> {
    crc.update(b);
    out.write_all(b)?;
    b.clear();
    Ok(())
}

/// Streams a snapshot into `out` in 1 MiB chunks, so writing one never holds a second copy of
/// the tree in memory.
pub fn encode_to(tree: &DataTree, out: &mut impl Write) -> std::io::Result<()> {
    let mut crc = crc32fast::Hasher::new();
    let mut b: Vec<u8> = Vec::with_capacity(CHUNK + 4096);
    let mut failed = None;
    b.put_slice(MAGIC);
    b.put_u32(VERSION);
    b.put_i64(tree.last_zxid());
    b.put_u64(tree.node_count() as u64);
    tree.visit(|path, n| {
        if failed.is_some() {
            return;
        }
        b.put_ustring(path);
        b.put_buffer(n.data.as_deref());
        write_acls(&n.acl, &mut b);
        let s = &n.stat;
        for v in [s.czxid, s.mzxid, s.pzxid, s.ctime, s.mtime] {
            b.put_i64(v);
        }
        for v in [s.version, s.cversion, s.aversion] {
            b.put_i32(v);
        }
        b.put_i64(s.ephemeral_owner);
        b.put_u32(n.child_count() as u32);
        if b.len() >= CHUNK {
            if let Err(e) = flush(&mut b, &mut crc, out) {
                failed = Some(e);
            }
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    b.put_u32(tree.sessions().len() as u32);
    for (id, info) in tree.sessions() {
        b.put_i64(*id);
        b.put_i32(info.timeout_ms);
        b.put_u8(info.zk_password as u8);
    }
    flush(&mut b, &mut crc, out)?;
    out.write_all(&crc.finalize().to_be_bytes())
}

/// The whole snapshot in memory (tests and small trees).
pub fn encode(tree: &DataTree) -> Vec<u8> {
    let mut v = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = encode_to(tree, &mut v);
    v
}

/// Writes a snapshot durably: tmp file, fsync, rename, directory fsync.
pub fn write(dir: &Path, tree: &DataTree) -> Result<PathBuf, StorageError> {
    std::fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
    let path = dir.join(file_name(tree.last_zxid()));
    let tmp = path.with_extension("tmp");
    let f = File::create(&tmp).map_err(|e| StorageError::io(&tmp, e))?;
    let mut w = std::io::BufWriter::with_capacity(CHUNK, f);
    encode_to(tree, &mut w).map_err(|e| StorageError::io(&tmp, e))?;
    let f = w.into_inner().map_err(|e| StorageError::io(&tmp, e.into_error()))?;
    f.sync_all().map_err(|e| StorageError::io(&tmp, e))?;
    std::fs::rename(&tmp, &path).map_err(|e| StorageError::io(&path, e))?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(path)
}

pub fn read(path: &Path) -> Result<DataTree, StorageError> {
    let bytes = std::fs::read(path).map_err(|e| StorageError::io(path, e))?;
    let corrupt = |offset: usize, reason: &str| StorageError::Corrupt {
        file: path.to_owned(),
        offset: offset as u64,
        reason: reason.to_owned(),
    };
    if bytes.len() < 28 || &bytes[..4] != MAGIC {
        return Err(corrupt(0, "not a zkr snapshot"));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(body) != u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]) {
        return Err(corrupt(body.len(), "snapshot fails its checksum"));
    }
    let parsed = (|| -> jute::JResult<'_, DataTree> {
        let i = &body[8..];
        let (i, zxid) = jute::long(i)?;
        let (mut i, count) = jute::long(i)?;
        let mut tree = DataTree::empty();
        tree.set_last_zxid(zxid);
        for _ in 0..count {
            let (r, path) = jute::ustring(i)?;
            let (r, data) = jute::buffer(r)?;
            let (r, acl) = parse_acls(r)?;
            let (r, czxid) = jute::long(r)?;
            let (r, mzxid) = jute::long(r)?;
            let (r, pzxid) = jute::long(r)?;
            let (r, ctime) = jute::long(r)?;
            let (r, mtime) = jute::long(r)?;
            let (r, version) = jute::int(r)?;
            let (r, cversion) = jute::int(r)?;
            let (r, aversion) = jute::int(r)?;
            let (r, ephemeral_owner) = jute::long(r)?;
            let (r, children) = jute::int(r)?;
            let stat = NodeStat { czxid, mzxid, pzxid, ctime, mtime, version, cversion, aversion, ephemeral_owner };
            if !tree.restore_node(&path, data, &acl, stat, children.max(0) as usize) {
                return Err(nom::Err::Failure(jute::DecodeError::Malformed(nom::error::ErrorKind::Verify)));
            }
            i = r;
        }
        let (mut i, sessions) = jute::int(i)?;
        for _ in 0..sessions {
            let (r, id) = jute::long(i)?;
            let (r, timeout) = jute::int(r)?;
            let (r, flags) = jute::boolean(r)?;
            tree.restore_session(id, timeout, flags);
            i = r;
        }
        Ok((i, tree))
    })();
    match parsed {
        Ok(([], tree)) => Ok(tree),
        Ok((rest, _)) => Err(corrupt(body.len() - rest.len(), "trailing bytes")),
        Err(_) => Err(corrupt(8, "snapshot body does not parse")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Acl, CreateRequest, MultiOp, OpCode};
    use crate::tree::prep;
    use crate::txn::{Txn, TxnOp};

    #[test]
    fn round_trips_a_tree() {
        let mut t = DataTree::new();
        let ctx = prep::PrepCtx { session: 9, ids: &[], ttl_enabled: true };
        t.apply(&Txn { zxid: 1, time: 1, session: 9, op: TxnOp::CreateSession { timeout_ms: 4000 } }, &mut Vec::new());
        for (z, (p, flags)) in [("/a", 0), ("/a/b", 1), ("/c", 4), ("/a/s", 2)].into_iter().enumerate() {
            let req = CreateRequest {
                path: p.into(),
                data: Some(bytes::Bytes::from(p)),
                acl: Acl::open_unsafe(),
                flags,
                ttl: None,
            };
            let op = prep::prepare(&t, &ctx, &MultiOp::Create(OpCode::Create, req));
            t.apply(&Txn { zxid: z as i64 + 2, time: 5, session: 9, op }, &mut Vec::new());
        }
        let back = read_bytes(&encode(&t));
        assert_eq!(back.last_zxid(), t.last_zxid());
        assert_eq!(back.node_count(), t.node_count());
        for p in ["/", "/a", "/a/b", "/c", "/a/s0000000001", "/zookeeper/config"] {
            assert_eq!(back.get(p).unwrap().wire_stat(), t.get(p).unwrap().wire_stat(), "{p}");
            assert_eq!(back.get(p).unwrap().data, t.get(p).unwrap().data);
        }
        assert_eq!(back.ephemerals_of(9), vec!["/a/b".to_string()]);
        assert_eq!(back.sessions(), t.sessions());
    }

    fn read_bytes(b: &[u8]) -> DataTree {
        let p = std::env::temp_dir().join(format!("zkr-snap-{}", std::process::id()));
        std::fs::write(&p, b).unwrap();
        let t = read(&p).unwrap();
        let mut bad = b.to_vec();
        bad[40] ^= 1;
        std::fs::write(&p, &bad).unwrap();
        assert!(matches!(read(&p), Err(StorageError::Corrupt { .. })));
        t
    }
}
