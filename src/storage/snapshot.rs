//! Snapshots of the tree and the session table.
//!
//! ```text
//! file      snapshot.<zxid, 16 hex digits>   (written as snapshot.<zxid>.tmp, fsync'd, renamed,
//!           dir fsync'd; a .tmp left by a failed or interrupted write is removed at startup)
//! layout    "ZKRS" | version u32 = 2 | zxid i64 | nodes u64 | segments u32 | segment* | node*
//!           | sessions u32 | session* | reconfig buffer | restore | crc32 u32
//! segment   id u32 | bytes buffer       (the name dictionary, see tree/names.rs)
//! node      parent u32 | name buffer | data buffer | acl vector<ACL> | czxid mzxid pzxid ctime mtime i64
//!           | version cversion aversion i32 | ephemeralOwner i64 | children u32
//!           (parents before children, the root first with parent u32::MAX; `parent` is the
//!           parent's position in this list and `name` the name as stored, encoded against the
//!           segments, so loading builds no path, looks up no parent and encodes no name;
//!           the child count sizes the child map once on load)
//! reconfig  the ensemble's pending reconfig (`DataTree::pending_reconfig`), -1 if none.
//! restore   an ensemble restore being staged (`DataTree::staged_restore`): chunks i32 (-1 if
//!           none) | id i64 | chunk buffer*.
//! version 3 (still read) has no restore; version 2 (still read) has no reconfig; version 1 (still read) has no segments, and a node starts with its full path (ustring)
//!           instead of parent and name.
//! session   id i64 | timeout i32 | flags u8 (bit 0: imported from ZooKeeper, password derived its way;
//!           bit 1: an ensemble session, its 16-byte password follows; bit 2: its owner follows,
//!           member u64 | seq u64, after the password; bit 3: that owner was set by a re-attach)
//! ```
//! The crc32 covers every byte before it. A snapshot is an exact image of the tree at its zxid:
//! the core hands a copy of the tree (node payloads are shared, not copied) to a background
//! thread, so writing never stops the writer, and recovery replays the log strictly after it.

use super::StorageError;
use crate::proto::jute::{self, JuteWrite};
use crate::proto::stat::{parse_acls, write_acls};
use crate::tree::{DataTree, NodeStat, SessionInfo, SessionOwner, Znode};
use crate::txn::Zxid;
use bytes::BufMut;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 4] = b"ZKRS";
const VERSION: u32 = 4;
/// Snapshots written before an ensemble restore was staged with the tree: otherwise the same.
const VERSION_NO_RESTORE: u32 = 3;
/// Snapshots written before a pending reconfig was kept with the tree: otherwise the same.
const VERSION_NO_RECONFIG: u32 = 2;
/// Snapshots written before znode names were stored encoded: each node with its full path.
const VERSION_PATHS: u32 = 1;

pub fn file_name(zxid: Zxid) -> String {
    format!("snapshot.{zxid:016x}")
}

/// Snapshot files of a directory, newest first.
pub fn list(dir: &Path) -> Result<Vec<(Zxid, PathBuf)>, StorageError> {
    let mut out = super::numbered_files(dir, "snapshot.")?;
    out.reverse();
    Ok(out)
}

/// The temporary name a snapshot is written under before its rename. `<name>.tmp`, not
/// `with_extension`, which would replace the zxid: the file says which snapshot failed.
fn tmp_name(zxid: Zxid) -> String {
    format!("{}.tmp", file_name(zxid))
}

/// Removes temporary files of snapshot writes that never finished (the process died or the
/// write failed before the rename) and returns their paths. They are never read: `list` only
/// takes `snapshot.<hex>`. Also removes `snapshot.tmp`, the name zkr used before.
pub fn remove_unfinished(dir: &Path) -> Result<Vec<PathBuf>, StorageError> {
    let mut removed = Vec::new();
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(removed),
        Err(e) => return Err(StorageError::io(dir, e)),
    };
    for entry in rd {
        let entry = entry.map_err(|e| StorageError::io(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("snapshot.") && name.ends_with(".tmp") {
            let path = entry.path();
            std::fs::remove_file(&path).map_err(|e| StorageError::io(&path, e))?;
            removed.push(path);
        }
    }
    Ok(removed)
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

/// A node's fields after where it goes (the same in both formats): data, ACL, stat, child count.
fn put_node(b: &mut Vec<u8>, n: &Znode) {
    b.put_buffer(n.data.as_deref());
    write_acls(&n.acl, b);
    let s = &n.stat;
    for v in [s.czxid, s.mzxid, s.pzxid, s.ctime, s.mtime] {
        b.put_i64(v);
    }
    for v in [s.version, s.cversion, s.aversion] {
        b.put_i32(v);
    }
    b.put_i64(s.ephemeral_owner);
    b.put_u32(n.child_count() as u32);
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
    let segments: Vec<(u32, &[u8])> = tree.name_segments().collect();
    b.put_u32(segments.len() as u32);
    for (id, bytes) in segments {
        b.put_u32(id);
        b.put_buffer(Some(bytes));
        if b.len() >= CHUNK {
            flush(&mut b, &mut crc, out)?;
        }
    }
    tree.visit_encoded(|parent, name, n| {
        if failed.is_some() {
            return;
        }
        b.put_u32(parent);
        b.put_buffer(Some(name));
        put_node(&mut b, n);
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
        let by_attach = info.owner.is_some_and(|o| o.by_attach);
        b.put_u8(
            info.zk_password as u8
                | (info.password.is_some() as u8) << 1
                | (info.owner.is_some() as u8) << 2
                | (by_attach as u8) << 3,
        );
        if let Some(p) = &info.password {
            b.put_slice(p);
        }
        if let Some(o) = &info.owner {
            b.put_u64(o.member);
            b.put_u64(o.seq);
        }
    }
    b.put_buffer(tree.pending_reconfig());
    match tree.staged_restore() {
        None => b.put_i32(-1),
        Some(staged) => {
            b.put_i32(staged.chunks.len() as i32);
            b.put_i64(staged.id);
            for c in &staged.chunks {
                b.put_buffer(Some(c));
                flush(&mut b, &mut crc, out)?;
            }
        }
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

/// Writes a snapshot durably: tmp file, fsync, rename, directory fsync. A failed write removes
/// its tmp file (a full disk must not stay full of it); if the process dies first,
/// `remove_unfinished` takes it away at the next start.
pub fn write(dir: &Path, tree: &DataTree) -> Result<PathBuf, StorageError> {
    std::fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
    let path = dir.join(file_name(tree.last_zxid()));
    let tmp = dir.join(tmp_name(tree.last_zxid()));
    let written = (|| {
        let f = Paced { f: File::create(&tmp)?, unsynced: 0 };
        let mut w = std::io::BufWriter::with_capacity(CHUNK, f);
        encode_to(tree, &mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.f.sync_all()
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(StorageError::io(&tmp, e));
    }
    std::fs::rename(&tmp, &path).map_err(|e| StorageError::io(&path, e))?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(path)
}

/// Bytes of a snapshot written between two fdatasyncs of it.
const SYNC_EVERY: usize = 4 << 20;

/// A snapshot file synced as it is written: a whole snapshot left to the kernel is flushed in
/// one burst (hundreds of MB at 1M nodes), and every log fsync meanwhile waits behind it on
/// the same disk, which stalled writes for the length of that flush.
struct Paced {
    f: File,
    unsynced: usize,
}

impl Write for Paced {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.f.write(buf)?;
        self.unsynced += n;
        if self.unsynced >= SYNC_EVERY {
            self.f.sync_data()?;
            self.unsynced = 0;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.f.flush()
    }
}

/// Where a node read from a snapshot goes.
enum Place {
    /// Format 1: its full path.
    Path(String),
    /// Format 2: its parent's position in the file and its name as stored.
    Encoded(u32, bytes::Bytes),
}

/// One node record as read from the file.
struct NodeRecord {
    place: Place,
    data: Option<bytes::Bytes>,
    acl: Vec<crate::proto::Acl>,
    stat: NodeStat,
    children: usize,
}

fn node_record(version: u32) -> impl for<'a> FnMut(&'a [u8]) -> jute::JResult<'a, NodeRecord> {
    move |i| {
        let (r, place) = if version != VERSION_PATHS {
            let (r, parent) = jute::int(i)?;
            let (r, name) = jute::buffer(r)?;
            (r, Place::Encoded(parent as u32, name.unwrap_or_default()))
        } else {
            let (r, path) = jute::ustring(i)?;
            (r, Place::Path(path))
        };
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
        Ok((r, NodeRecord { place, data, acl, stat, children: children.max(0) as usize }))
    }
}

fn session_record(i: &[u8]) -> jute::JResult<'_, (i64, SessionInfo)> {
    let (r, id) = jute::long(i)?;
    let (r, timeout) = jute::int(r)?;
    let (r, flags) = jute::byte(r)?;
    let (r, password) = if flags & 2 != 0 {
        let p: [u8; crate::proto::PASSWORD_LEN] = r
            .get(..crate::proto::PASSWORD_LEN)
            .and_then(|p| p.try_into().ok())
            .ok_or(nom::Err::Failure(jute::DecodeError::Truncated))?;
        (&r[crate::proto::PASSWORD_LEN..], Some(p))
    } else {
        (r, None)
    };
    let (r, owner) = if flags & 4 != 0 {
        let (r, member) = jute::long(r)?;
        let (r, seq) = jute::long(r)?;
        (r, Some(SessionOwner { member: member as u64, seq: seq as u64, by_attach: flags & 8 != 0 }))
    } else {
        (r, None)
    };
    Ok((r, (id, SessionInfo { timeout_ms: timeout, zk_password: flags & 1 != 0, password, owner })))
}

/// Loads a snapshot record by record through a 1 MiB window (storage/window.rs): the file is
/// never held whole, so a member loading or receiving a big tree holds the tree once.
pub fn read(path: &Path) -> Result<DataTree, StorageError> {
    let mut w = super::window::Window::open(path, MAGIC, 28, "not a zkr snapshot")?;
    let (version, zxid, count) = w.next(
        |i| {
            let (r, _magic) = jute::int(i)?;
            let (r, version) = jute::int(r)?;
            let (r, zxid) = jute::long(r)?;
            let (r, count) = jute::long(r)?;
            Ok((r, (version as u32, zxid, count)))
        },
        "not a zkr snapshot",
    )?;
    if ![VERSION, VERSION_NO_RESTORE, VERSION_NO_RECONFIG, VERSION_PATHS].contains(&version) {
        return Err(StorageError::Corrupt {
            file: path.to_owned(),
            offset: 4,
            reason: format!("snapshot format {version} is not one this zkr reads (1 to 4)"),
        });
    }
    let mut tree = DataTree::empty();
    tree.set_last_zxid(zxid);
    // Format 2: the name dictionary, then each node's parent by position.
    let mut ids: Vec<crate::tree::NodeId> = Vec::new();
    if version != VERSION_PATHS {
        let segments = w.next(jute::int, "bad name dictionary")?;
        for _ in 0..segments {
            let (id, bytes) = w.next(
                |i| {
                    let (r, id) = jute::int(i)?;
                    let (r, bytes) = jute::buffer(r)?;
                    Ok((r, (id, bytes)))
                },
                "bad name dictionary",
            )?;
            if !tree.restore_segment(id as u32, bytes.as_deref().unwrap_or_default()) {
                return Err(w.corrupt("bad name segment"));
            }
        }
        // Every node takes more than 16 bytes: a count above that is damage, not a reason to
        // reserve memory.
        ids.reserve(usize::try_from(count).unwrap_or(0).min((w.len() / 16) as usize));
    }
    let mut node = node_record(version);
    for k in 0..count {
        let n = w.next(&mut node, "bad znode record")?;
        let restored = match n.place {
            Place::Path(path) => tree.restore_node(&path, n.data, &n.acl, n.stat, n.children),
            // The root comes first, with no parent.
            Place::Encoded(u32::MAX, _) if k == 0 => {
                let ok = tree.restore_node("/", n.data, &n.acl, n.stat, n.children);
                ids.push(crate::tree::ROOT);
                ok
            }
            Place::Encoded(parent, name) => {
                match ids
                    .get(parent as usize)
                    .and_then(|p| tree.restore_encoded(*p, &name, n.data, &n.acl, n.stat, n.children))
                {
                    Some(id) => {
                        ids.push(id);
                        true
                    }
                    None => false,
                }
            }
        };
        if !restored {
            return Err(w.corrupt("a znode without its parent, or twice"));
        }
    }
    drop(ids);
    tree.finish_restore();
    // DataTree.deserialize ends with setupQuota: quota roots and stats come from the nodes.
    tree.setup_quota();
    let sessions = w.next(jute::int, "bad session table")?;
    for _ in 0..sessions {
        let (id, info) = w.next(session_record, "bad session record")?;
        tree.restore_session(id, info);
    }
    if version >= VERSION_NO_RESTORE {
        let pending = w.next(jute::buffer, "bad pending reconfig")?;
        tree.set_pending_reconfig(pending.map(|p| p.to_vec()));
    }
    if version >= VERSION {
        let chunks = w.next(jute::int, "bad staged restore")?;
        if chunks >= 0 {
            let id = w.next(jute::long, "bad staged restore")?;
            let mut staged = crate::tree::StagedRestore { id, chunks: Vec::new() };
            for _ in 0..chunks {
                let c = w.next(jute::buffer, "bad staged restore chunk")?;
                staged.chunks.push(c.unwrap_or_default());
            }
            tree.set_staged_restore(Some(staged));
        }
    }
    w.finish()?;
    Ok(tree)
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
        let ctx = prep::PrepCtx { session: 9, ids: &[], ttl_enabled: true, enforce_quota: false };
        t.apply(
            &Txn {
                zxid: 1,
                time: 1,
                session: 9,
                op: TxnOp::CreateSession { timeout_ms: 4000, password: Some([3; 16]) },
            },
            &mut Vec::new(),
        );
        // An ensemble's session carries its owner; an old or standalone one has none.
        t.apply(
            &Txn { zxid: 1, time: 1, session: 10, op: TxnOp::CreateSession { timeout_ms: 5000, password: None } },
            &mut Vec::new(),
        );
        assert!(t.set_owner(9, crate::tree::SessionOwner { member: 3, seq: 1 << 41, by_attach: true }));
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
        assert_eq!(back.pending_reconfig(), None);
        // A pending reconfig goes with the tree (a new leader or a member installing the
        // snapshot finishes it).
        t.set_pending_reconfig(Some(b"{\"plan\":1}".to_vec()));
        assert_eq!(read_bytes(&encode(&t.snapshot_view())).pending_reconfig(), Some(&b"{\"plan\":1}"[..]));
    }

    #[test]
    fn a_snapshot_bigger_than_the_read_window_loads_record_by_record() {
        // 20,000 provider nodes (several windows of records) and one node of 2.5 MiB (a record
        // longer than the window): records cut by a window's end are read again whole.
        let mut t = providers_tree(20_000);
        let ctx = prep::PrepCtx { session: 0, ids: &[], ttl_enabled: true, enforce_quota: false };
        let big = bytes::Bytes::from(vec![7u8; 5 << 19]);
        let req = CreateRequest {
            path: "/big".into(),
            data: Some(big.clone()),
            acl: Acl::open_unsafe(),
            flags: 0,
            ttl: None,
        };
        let op = prep::prepare(&t, &ctx, &MultiOp::Create(OpCode::Create, req));
        t.apply(&Txn { zxid: 30_000, time: 5, session: 0, op }, &mut Vec::new());
        let bytes = encode(&t);
        assert!(bytes.len() > 3 << 20, "{}", bytes.len());
        let back = read_bytes(&bytes);
        assert_eq!(back.node_count(), t.node_count());
        assert_eq!(back.data_size(), t.data_size());
        assert_eq!(back.get("/big").unwrap().data.as_deref(), Some(&big[..]));
        assert_eq!(back.last_zxid(), 30_000);
        // A cut file, and one with a byte flipped deep inside: errors, never a partial tree.
        let p = std::env::temp_dir().join(format!("zkr-snap-window-{}", std::process::id()));
        std::fs::write(&p, &bytes[..bytes.len() - 100]).unwrap();
        assert!(matches!(read(&p), Err(StorageError::Corrupt { .. })));
        let mut bad = bytes.clone();
        bad[2 << 20] ^= 0x40;
        std::fs::write(&p, &bad).unwrap();
        let err = read(&p).err().unwrap().to_string();
        assert!(err.contains("fails its checksum"), "{err}");
        let mut foreign = bytes;
        foreign[0] = b'X';
        std::fs::write(&p, &foreign).unwrap();
        assert!(read(&p).err().unwrap().to_string().contains("not a zkr snapshot"));
        let _ = std::fs::remove_file(&p);
    }

    /// The format-1 layout, as zkr wrote it before names were stored encoded.
    fn encode_v1(tree: &DataTree) -> Vec<u8> {
        let mut b: Vec<u8> = Vec::new();
        b.put_slice(MAGIC);
        b.put_u32(VERSION_PATHS);
        b.put_i64(tree.last_zxid());
        b.put_u64(tree.node_count() as u64);
        tree.visit(|path, n| {
            b.put_ustring(path);
            put_node(&mut b, n);
        });
        b.put_u32(tree.sessions().len() as u32);
        for (id, info) in tree.sessions() {
            b.put_i64(*id);
            b.put_i32(info.timeout_ms);
            b.put_u8(info.zk_password as u8);
        }
        let crc = crc32fast::hash(&b);
        b.put_u32(crc);
        b
    }

    fn provider(i: u32) -> String {
        format!(
            "dubbo%3A%2F%2F10.0.0.{i}%3A20880%2Fcom.demo.OrderService%3Fanyhost%3Dtrue%26application%3Ddemo\
             %26methods%3DgetOrder%2CplaceOrder%26pid%3D{}%26side%3Dprovider",
            1000 + i
        )
    }

    fn providers_tree(n: u32) -> DataTree {
        let mut t = DataTree::new();
        let ctx = prep::PrepCtx { session: 0, ids: &[], ttl_enabled: true, enforce_quota: false };
        let mut paths = vec!["/d".to_string(), "/d/providers".to_string(), "/d/ünï%3Dcode-name-long".to_string()];
        paths.extend((0..n).map(|i| format!("/d/providers/{}", provider(i))));
        for (z, p) in (1..).zip(paths) {
            let req = CreateRequest { path: p, data: None, acl: Acl::open_unsafe(), flags: 0, ttl: None };
            let op = prep::prepare(&t, &ctx, &MultiOp::Create(OpCode::Create, req));
            t.apply(&Txn { zxid: z, time: 5, session: 0, op }, &mut Vec::new());
        }
        t
    }

    #[test]
    fn names_round_trip_encoded_and_stay_canonical() {
        let t = providers_tree(50);
        let mut back = read_bytes(&encode(&t));
        assert_eq!(back.node_count(), t.node_count());
        assert_eq!(back.data_size(), t.data_size());
        let mut want: Vec<String> = t.child_names(t.lookup("/d/providers").unwrap()).collect();
        let mut got: Vec<String> = back.child_names(back.lookup("/d/providers").unwrap()).collect();
        want.sort();
        got.sort();
        assert_eq!(got, want);
        assert!(back.get("/d/ünï%3Dcode-name-long").is_some());
        // A restored dictionary encodes new names as before: a new sibling shares its segments,
        // and an existing name is found by lookup.
        let ctx = prep::PrepCtx { session: 0, ids: &[], ttl_enabled: true, enforce_quota: false };
        let p = format!("/d/providers/{}", provider(77));
        let req = CreateRequest { path: p.clone(), data: None, acl: Acl::open_unsafe(), flags: 0, ttl: None };
        let op = prep::prepare(&back, &ctx, &MultiOp::Create(OpCode::Create, req));
        back.apply(&Txn { zxid: 1000, time: 5, session: 0, op }, &mut Vec::new());
        assert!(back.get(&p).is_some());
        assert!(back.get(&format!("/d/providers/{}", provider(7))).is_some());
        // Written again and read again: the same tree.
        let again = read_bytes(&encode(&back));
        assert_eq!(again.node_count(), back.node_count());
        assert!(again.get(&p).is_some());
    }

    /// Format 2 (before a pending reconfig was kept) is format 3 without its last field.
    #[test]
    fn reads_formats_2_and_3() {
        let t = providers_tree(50);
        let v4 = encode(&t);
        assert_eq!(&v4[v4.len() - 8..v4.len() - 4], &[0xff; 4], "no staged restore: -1");
        let mut v3 = v4[..v4.len() - 8].to_vec();
        v3[4..8].copy_from_slice(&VERSION_NO_RESTORE.to_be_bytes());
        assert_eq!(&v3[v3.len() - 4..], &[0xff; 4], "no pending reconfig: a null buffer");
        let mut v2 = v3[..v3.len() - 4].to_vec();
        v2[4..8].copy_from_slice(&VERSION_NO_RECONFIG.to_be_bytes());
        for mut old in [v3, v2] {
            let crc = crc32fast::hash(&old);
            old.put_u32(crc);
            let back = read_bytes(&old);
            assert_eq!(back.node_count(), t.node_count());
            assert_eq!((back.pending_reconfig(), back.staged_restore()), (None, None));
        }
    }

    #[test]
    fn keeps_a_staged_restore() {
        let mut t = providers_tree(5);
        let chunks = vec![bytes::Bytes::from_static(b"first"), bytes::Bytes::new(), vec![9u8; 3000].into()];
        t.set_staged_restore(Some(crate::tree::StagedRestore { id: 0x1_0000_0007, chunks: chunks.clone() }));
        let back = read_bytes(&encode(&t.snapshot_view()));
        assert_eq!(back.staged_restore(), Some(&crate::tree::StagedRestore { id: 0x1_0000_0007, chunks }));
        assert_eq!(back.node_count(), t.node_count());
    }

    #[test]
    fn reads_format_1() {
        let t = providers_tree(20);
        let back = read_bytes(&encode_v1(&t));
        assert_eq!(back.node_count(), t.node_count());
        assert_eq!(back.data_size(), t.data_size());
        assert!(back.get(&format!("/d/providers/{}", provider(19))).is_some());
        let names = |t: &DataTree| {
            let mut v: Vec<String> = t.child_names(t.lookup("/d/providers").unwrap()).collect();
            v.sort();
            v
        };
        assert_eq!(names(&back), names(&t));
        // Read as format 1, written as format 2, read again: the same names.
        assert_eq!(names(&read_bytes(&encode(&back))), names(&t));
    }

    #[test]
    fn refuses_a_name_without_its_segment() {
        let t = providers_tree(3);
        let good = encode(&t);
        // Drop the dictionary (set its count to 0 and cut its entries out), fix the checksum.
        let at = 4 + 4 + 8 + 8;
        let n = u32::from_be_bytes(good[at..at + 4].try_into().unwrap());
        assert!(n > 0);
        let mut end = at + 4;
        for _ in 0..n {
            let len = u32::from_be_bytes(good[end + 4..end + 8].try_into().unwrap()) as usize;
            end += 8 + len;
        }
        let mut bad = good[..at].to_vec();
        bad.put_u32(0);
        bad.extend_from_slice(&good[end..good.len() - 4]);
        let crc = crc32fast::hash(&bad);
        bad.put_u32(crc);
        let p = std::env::temp_dir().join(format!("zkr-snap-noseg-{}", std::process::id()));
        std::fs::write(&p, &bad).unwrap();
        assert!(matches!(read(&p), Err(StorageError::Corrupt { .. })));
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn unfinished_writes_are_removed_and_finished_ones_kept() {
        let d = std::env::temp_dir().join(format!("zkr-snap-tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let done = write(&d, &providers_tree(2)).unwrap();
        let unfinished = [d.join(tmp_name(0x1f4)), d.join("snapshot.tmp")];
        for p in &unfinished {
            std::fs::write(p, b"ZKRS half a snapshot").unwrap();
        }
        assert_eq!(list(&d).unwrap().len(), 1, "a tmp file is never listed as a snapshot");
        let mut removed = remove_unfinished(&d).unwrap();
        removed.sort();
        let mut want = unfinished.to_vec();
        want.sort();
        assert_eq!(removed, want);
        assert!(done.exists() && unfinished.iter().all(|p| !p.exists()));
        let _ = std::fs::remove_dir_all(&d);
    }

    fn read_bytes(b: &[u8]) -> DataTree {
        // Tests run in parallel: one file per call.
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("zkr-snap-{}-{n}", std::process::id()));
        std::fs::write(&p, b).unwrap();
        let t = read(&p).unwrap();
        let mut bad = b.to_vec();
        bad[40] ^= 1;
        std::fs::write(&p, &bad).unwrap();
        assert!(matches!(read(&p), Err(StorageError::Corrupt { .. })));
        let _ = std::fs::remove_file(&p);
        t
    }
}
