//! Writing one ZooKeeper snapshot file as `FileSnap.serialize` writes it, plain, gzip or
//! snappy-java: the format `import::snapfile` reads (written out above its reader).
//!
//! ```text
//! "ZKSN" int | version int = 2 | dbid long = -1
//! sessions: count int, (id long, timeout int)*              SerializeUtils.serializeSnapshot
//! acl cache: count int, (index long, vector<ACL>)*          ReferenceCountedACLCache.serialize
//! nodes, parents first: (path ustring, data buffer, acl index long, StatPersisted)*, path "/"
//!        the root's path is "" (DataTree.serializeNode starts from an empty path)
//! seal: adler32 long | "/" ustring                         SnapStream.sealStream
//! ```
//! No digest trailer follows the seal: ZooKeeper 3.6+ reads its absence as a snapshot of a
//! server without digests (`DataTree.deserializeZxidDigest` returns false at EOF) and computes
//! its own digest from the nodes. The Adler-32 is of the uncompressed stream; gzip or
//! snappy-java wrap the whole file (`SnapStream.getOutputStream`).

use super::ExportError;
use crate::import::codec::{CheckedWriter, SnappyJavaWriter};
use crate::import::files::Compression;
use crate::import::snapfile::SNAP_MAGIC;
use crate::proto::Acl;
use crate::tree::{DataTree, Znode};
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `FileSnap.VERSION`.
const SNAP_VERSION: i32 = 2;
/// `DigestCalculator.DIGEST_VERSION` of ZooKeeper 3.6–3.9, in the digest trailer.
const DIGEST_VERSION: i32 = 2;
/// The dbid every ZooKeeper snapshot carries (`FileTxnSnapLog` writes -1).
const DBID: i64 = -1;
/// The name the file is written under before its rename: not `snapshot.*`, so a ZooKeeper
/// started on a directory whose export was interrupted never takes it for a snapshot.
const TMP_NAME: &str = "zkr-export.tmp";

/// Writes `tree` as `dir/snapshot.<last zxid hex>[.gz|.snappy]`, fsync'd, and returns its path.
pub fn write(tree: &DataTree, dir: &Path, compression: Compression) -> Result<PathBuf, ExportError> {
    let path = dir.join(format!("snapshot.{:x}{}", tree.last_zxid(), compression.suffix()));
    let tmp = dir.join(TMP_NAME);
    let io = |file: &Path| {
        let file = file.to_owned();
        move |source| ExportError::Io { file, source }
    };
    let written = File::create(&tmp).and_then(|f| encode_file(tree, f, compression)).and_then(|f| f.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(&tmp)(e));
    }
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))?;
    Ok(path)
}

/// The whole file into `file`, compressed as asked; returns the file for its fsync.
fn encode_file(tree: &DataTree, file: File, compression: Compression) -> io::Result<File> {
    let out = BufWriter::with_capacity(1 << 20, file);
    let out = match compression {
        Compression::Plain => encode(tree, out)?,
        Compression::Gzip => {
            let gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
            encode(tree, BufWriter::with_capacity(1 << 16, gz))?.into_inner().map_err(|e| e.into_error())?.finish()?
        }
        Compression::Snappy => {
            let snappy = SnappyJavaWriter::new(out)?;
            encode(tree, BufWriter::with_capacity(1 << 16, snappy))?
                .into_inner()
                .map_err(|e| e.into_error())?
                .finish()?
        }
    };
    out.into_inner().map_err(|e| e.into_error())
}

/// The uncompressed snapshot stream, sealed; returns `out` flushed.
pub fn encode<W: Write>(tree: &DataTree, out: W) -> io::Result<W> {
    let mut w = CheckedWriter::new(out);
    body(tree, &mut w)?;
    seal(&mut w)?;
    w.flush()?;
    Ok(w.into_inner())
}

/// The same stream with ZooKeeper 3.9's two trailers after the seal, each sealed: an empty
/// zxid digest (zxid 0, digest version 2, digest 0) and the tree's last zxid as its last
/// processed zxid. What ZooKeeper 3.9's `snapshot` command streams
/// (`zookeeper.serializeLastProcessedZxid.enabled`, on by default), and what its `restore`
/// takes the restored zxid from; ZooKeeper 3.6+ skips a digest whose zxid is 0
/// (`DataTree.deserializeZxidDigest`), as it does the empty one it writes itself.
pub fn encode_with_zxid<W: Write>(tree: &DataTree, out: W) -> io::Result<W> {
    let mut w = CheckedWriter::new(out);
    body(tree, &mut w)?;
    seal(&mut w)?;
    long(&mut w, 0)?;
    int(&mut w, DIGEST_VERSION)?;
    long(&mut w, 0)?;
    seal(&mut w)?;
    long(&mut w, tree.last_zxid())?;
    seal(&mut w)?;
    w.flush()?;
    Ok(w.into_inner())
}

/// `SnapStream.sealStream`: the Adler-32 of every byte so far, then "/".
fn seal<W: Write>(w: &mut CheckedWriter<W>) -> io::Result<()> {
    let sum = w.sum();
    long(w, i64::from(sum))?;
    string(w, "/")
}

/// Header, sessions, ACL cache and nodes up to the closing "/".
fn body<W: Write>(tree: &DataTree, w: &mut CheckedWriter<W>) -> io::Result<()> {
    let acls = acl_cache(tree);
    head(tree, w, &acls)?;
    let mut result = Ok(());
    tree.visit(|path, node| {
        if result.is_ok() {
            result = node_record(w, path, node, &acls);
        }
    });
    result?;
    string(w, "/")
}

/// Header, sessions and ACL cache: what comes before the nodes.
fn head<W: Write>(tree: &DataTree, w: &mut W, acls: &HashMap<Arc<[Acl]>, i64>) -> io::Result<()> {
    int(w, SNAP_MAGIC)?;
    int(w, SNAP_VERSION)?;
    long(w, DBID)?;
    let sessions = tree.sessions();
    int(w, count(sessions.len())?)?;
    for (id, info) in sessions {
        long(w, *id)?;
        int(w, info.timeout_ms)?;
    }
    int(w, count(acls.len())?)?;
    let mut by_index: Vec<(&Arc<[Acl]>, i64)> = acls.iter().map(|(a, i)| (a, *i)).collect();
    by_index.sort_by_key(|(_, i)| *i);
    for (acl, index) in by_index {
        long(w, index)?;
        acl_vector(w, acl)?;
    }
    Ok(())
}

/// The byte length of what `encode_with_zxid` writes for `tree`, without encoding the nodes:
/// each node's record is its path's length plus its data's plus a fixed part, so the AdminServer
/// can send `snapshot_size` before the body and encode the tree once.
pub fn encoded_len_with_zxid(tree: &DataTree) -> io::Result<u64> {
    /// A jute length, the ACL index, StatPersisted (four longs, three ints, two longs).
    const NODE_FIXED: u64 = 4 + 4 + 8 + 4 * 8 + 3 * 4 + 2 * 8;
    /// A sealed stream's "/" after the nodes, and the seal (Adler-32 long and "/").
    const END: u64 = 5 + 8 + 5;
    /// 3.9's trailers: the empty digest (long, int, long) and the last zxid, each sealed.
    const TRAILERS: u64 = (8 + 4 + 8) + 13 + 8 + 13;
    let acls = acl_cache(tree);
    let mut counter = Counter(0);
    head(tree, &mut counter, &acls)?;
    let mut nodes = 0u64;
    tree.visit_path_lengths(|path, node| {
        nodes += NODE_FIXED + path + node.data.as_ref().map_or(0, |d| d.len() as u64);
    });
    Ok(counter.0 + nodes + END + TRAILERS)
}

/// Counts the bytes written to it.
struct Counter(u64);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Every distinct ACL list of the tree, numbered from 1 as `ReferenceCountedACLCache.convertAcls`
/// numbers them (its -1, OPEN_ACL_UNSAFE without an entry, is only a reader's convenience).
fn acl_cache(tree: &DataTree) -> HashMap<Arc<[Acl]>, i64> {
    let mut cache: HashMap<Arc<[Acl]>, i64> = HashMap::new();
    tree.visit(|_, node| {
        let next = cache.len() as i64 + 1;
        cache.entry(node.acl.clone()).or_insert(next);
    });
    cache
}

fn node_record<W: Write>(w: &mut W, path: &str, node: &Znode, acls: &HashMap<Arc<[Acl]>, i64>) -> io::Result<()> {
    // `DataTree.serializeNode` names the root "", and "/" ends the node list.
    string(w, if path == "/" { "" } else { path })?;
    buffer(w, node.data.as_deref())?;
    let index = acls.get(&node.acl[..]).copied().ok_or_else(|| invalid(format!("{path}: ACL not in the cache")))?;
    long(w, index)?;
    let s = &node.stat;
    for v in [s.czxid, s.mzxid, s.ctime, s.mtime] {
        long(w, v)?;
    }
    for v in [s.version, s.cversion, s.aversion] {
        int(w, v)?;
    }
    long(w, s.ephemeral_owner)?;
    long(w, s.pzxid)
}

fn acl_vector<W: Write>(w: &mut W, acl: &[Acl]) -> io::Result<()> {
    int(w, count(acl.len())?)?;
    for a in acl {
        int(w, a.perms)?;
        string(w, &a.id.scheme)?;
        string(w, &a.id.id)?;
    }
    Ok(())
}

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// A jute count or length, which is an int.
fn count(n: usize) -> io::Result<i32> {
    i32::try_from(n).map_err(|_| invalid(format!("{n} does not fit a jute int")))
}

fn int<W: Write>(w: &mut W, v: i32) -> io::Result<()> {
    w.write_all(&v.to_be_bytes())
}

fn long<W: Write>(w: &mut W, v: i64) -> io::Result<()> {
    w.write_all(&v.to_be_bytes())
}

/// A jute `buffer`: -1 for null (`BinaryOutputArchive.writeBuffer`), else length and bytes.
fn buffer<W: Write>(w: &mut W, b: Option<&[u8]>) -> io::Result<()> {
    match b {
        None => int(w, -1),
        Some(b) => {
            int(w, count(b.len())?)?;
            w.write_all(b)
        }
    }
}

fn string<W: Write>(w: &mut W, s: &str) -> io::Result<()> {
    buffer(w, Some(s.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Id;
    use crate::txn::{Txn, TxnOp};
    use bytes::Bytes;

    /// The length sent as `snapshot_size` is the length of the stream, byte for byte, whatever
    /// the names (multi-byte UTF-8, long Dubbo URLs with `%` pieces), the data (null, empty,
    /// large), the ACLs and the sessions.
    #[test]
    fn the_length_counted_without_encoding_is_the_streams() {
        let mut t = DataTree::new();
        let mut changes = Vec::new();
        let open: Arc<[Acl]> = Arc::from(Acl::open_unsafe());
        let digest: Arc<[Acl]> = Arc::from(vec![Acl { perms: 31, id: Id::new("digest", "u:hash=") }]);
        let mut zxid = 0;
        let mut run = |t: &mut DataTree, op: TxnOp| {
            zxid += 1;
            t.apply(&Txn { zxid, time: zxid * 1000, session: 0, op }, &mut changes);
        };
        let create = |path: String, data: Option<Bytes>, acl: &Arc<[Acl]>| TxnOp::Create {
            path,
            data,
            acl: acl.clone(),
            ephemeral_owner: 0,
            parent_cversion: 0,
        };
        run(&mut t, create("/dubbo".into(), None, &open));
        run(&mut t, create("/dubbo/\u{e9}t\u{e9}-\u{4e2d}\u{6587}".into(), Some(Bytes::new()), &digest));
        for i in 0..50 {
            let url = format!("/dubbo/dubbo%3A%2F%2F10.0.0.{i}%3A20880%2Fcom.example.Service%3Fversion%3D1.{i}");
            run(&mut t, create(url, Some(Bytes::from(vec![b'x'; i * 37])), if i % 2 == 0 { &open } else { &digest }));
        }
        run(&mut t, create("/big".into(), Some(Bytes::from(vec![0u8; 1 << 20])), &open));
        for id in [0x1000_0000_0000_0001, 0x2000_0000_0000_0002] {
            let info = crate::tree::SessionInfo { timeout_ms: 30_000, zk_password: true, password: None, owner: None };
            t.restore_session(id, info);
        }
        for t in [DataTree::new(), t] {
            let written = encode_with_zxid(&t, Counter(0)).unwrap().0;
            assert_eq!(encoded_len_with_zxid(&t).unwrap(), written);
        }
    }
}
