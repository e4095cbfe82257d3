//! Reading one ZooKeeper snapshot file, plain or compressed, as a stream (`FileSnap.deserialize`):
//! the file is never held whole, so a snapshot of a million znodes costs the tree, not the tree
//! and the file.
//!
//! ```text
//! snapshot  "ZKSN" int | version int | dbid long
//!           sessions: count int, (id long, timeout int)*
//!           acl cache: count int, (id long, vector<ACL>)*
//!           nodes: (path ustring, data buffer, acl-id long, StatPersisted)* then path "/"
//!           seal: adler32 long | "/" ustring     (the checksum of every byte before it)
//!           [3.6+: zxid digest: zxid long | version int | digest long (version < 2: ustring); seal]
//!           [3.9+: last processed zxid long; seal]
//! ```
//! Every seal covers all bytes before it, earlier seals included (one `CheckedOutputStream`
//! around the whole file). The Adler-32 is of the uncompressed bytes: gzip or snappy-java wrap
//! the whole stream (`SnapStream.getInputStream`).

use super::codec::{Checked, SnappyJavaReader};
use super::files::{Compression, ZkFile};
use super::jutein::{Jute, Stream};
use super::ImportError;
use crate::tree::DataTree;
use crate::txn::Zxid;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

pub const SNAP_MAGIC: i32 = 0x5a4b_534e; // "ZKSN"

/// The largest buffer a snapshot may hold (a node's data, an ACL id): far above any
/// `jute.maxbuffer` in use, and a bound on what a damaged length makes the reader allocate.
const MAX_BUFFER: usize = 256 << 20;

type SnapReader = Stream<Checked<Box<dyn Read>>>;

fn io_err(file: &Path) -> impl Fn(std::io::Error) -> ImportError + '_ {
    move |source| ImportError::Io { file: file.to_owned(), source }
}

/// The uncompressed, checksummed stream of a snapshot file.
fn open(file: &ZkFile) -> Result<SnapReader, ImportError> {
    let f = std::fs::File::open(&file.path).map_err(io_err(&file.path))?;
    decompressed(Box::new(f), file)
}

/// `raw` uncompressed as `file.compression` says, checksummed.
fn decompressed(raw: Box<dyn Read>, file: &ZkFile) -> Result<SnapReader, ImportError> {
    let buffered = BufReader::with_capacity(1 << 20, raw);
    let inner: Box<dyn Read> = match file.compression {
        Compression::Plain => Box::new(buffered),
        // `GZIPInputStream` reads members one after another, as `MultiGzDecoder` does.
        Compression::Gzip => {
            Box::new(BufReader::with_capacity(1 << 20, flate2::bufread::MultiGzDecoder::new(buffered)))
        }
        Compression::Snappy => Box::new(SnappyJavaReader::new(buffered).map_err(|e| format_err(file, 0, e))?),
    };
    Ok(Stream::new(Checked::new(inner), file.path.clone(), MAX_BUFFER))
}

fn format_err(file: &ZkFile, offset: u64, e: std::io::Error) -> ImportError {
    ImportError::Format { file: file.path.clone(), offset, what: e.to_string() }
}

/// Parses one ZooKeeper snapshot into a tree whose last zxid is the one in its name (as
/// `FileSnap.deserialize` sets `lastProcessedZxid` from the name). Every seal must hold; a
/// trailer cut short after the first seal is an older server's snapshot, as ZooKeeper reads it.
pub fn read(file: &ZkFile) -> Result<DataTree, ImportError> {
    let mut tree = parse(open(file)?)?.tree;
    tree.set_last_zxid(file.zxid);
    Ok(tree)
}

/// A snapshot read from a stream rather than a named file (the AdminServer's `restore`).
pub struct Parsed {
    /// The tree, its last zxid not set (a stream has no name to take it from).
    pub tree: DataTree,
    /// The 3.9 trailer's last processed zxid (`zookeeper.serializeLastProcessedZxid.enabled`),
    /// what ZooKeeper's `restoreFromSnapshot` takes as the restored database's zxid.
    pub last_processed: Option<Zxid>,
}

/// Parses a whole snapshot from `input`, plain or (by its first bytes) gzip or snappy-java;
/// `label` names it in errors. As `read`, every seal must hold.
pub fn read_stream(input: Box<dyn Read>, label: &Path) -> Result<Parsed, ImportError> {
    let mut buffered = BufReader::with_capacity(1 << 16, input);
    let head = buffered.fill_buf().map_err(io_err(label))?;
    let compression = if head.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if head.starts_with(b"\x82SNAPPY\x00") {
        Compression::Snappy
    } else {
        Compression::Plain
    };
    let file = ZkFile { zxid: 0, path: label.to_owned(), compression };
    parse(decompressed(Box::new(buffered), &file)?)
}

fn parse(mut s: SnapReader) -> Result<Parsed, ImportError> {
    if s.int("magic")? != SNAP_MAGIC {
        return Err(s.err("not a ZooKeeper snapshot (magic is not ZKSN)"));
    }
    s.int("version")?;
    s.long("dbid")?;
    let mut tree = super::read_tree(&mut s)?;
    seal(&mut s)?;
    let mut last_processed = None;
    // `DataTree.deserializeZxidDigest`: absent (EOF) in snapshots of 3.5 and of servers with
    // `zookeeper.digest.enabled=false`.
    if trailer(&mut s, |s| {
        s.long("digest zxid")?;
        if s.int("digest version")? < 2 {
            s.string("digest")?;
        } else {
            s.long("digest")?;
        }
        Ok(())
    })? {
        seal(&mut s)?;
        // `DataTree.deserializeLastProcessedZxid` (3.9, `zookeeper.serializeLastProcessedZxid.enabled`).
        if trailer(&mut s, |s| s.long("last processed zxid").map(|z| last_processed = Some(z)))? {
            seal(&mut s)?;
        }
    }
    // As DataTree.deserialize: quota roots and their stats come from the nodes just read.
    tree.setup_quota();
    Ok(Parsed { tree, last_processed })
}

/// `SnapStream.checkSealIntegrity`: the Adler-32 of everything read so far, then "/".
fn seal(s: &mut SnapReader) -> Result<(), ImportError> {
    let want = s.get_mut().sum();
    let stored = s.long("checksum")? as u64 as u32;
    if stored != want {
        return Err(s.err(&format!("snapshot fails its Adler-32 checksum (stored {stored:#x}, computed {want:#x})")));
    }
    if s.string("checksum trailer")? != "/" {
        return Err(s.err("missing \"/\" after the checksum"));
    }
    Ok(())
}

/// Reads an optional trailer: false if the stream ends before its first byte (what ZooKeeper's
/// `EOFException` there means), an error if it ends inside it.
fn trailer(
    s: &mut SnapReader,
    read: impl FnOnce(&mut SnapReader) -> Result<(), ImportError>,
) -> Result<bool, ImportError> {
    if s.at_end()? {
        return Ok(false);
    }
    read(s)?;
    Ok(true)
}

/// ZooKeeper's cheap check before it tries a snapshot (`SnapStream.isValidSnapshot`): a plain
/// one ends with the seal's "/" (int 1, then '/'); a compressed one starts with its format's
/// magic. What the takeover's log check asks of the newest snapshot, which it does not load.
pub fn looks_valid(file: &ZkFile) -> Result<bool, ImportError> {
    let mut f = std::fs::File::open(&file.path).map_err(io_err(&file.path))?;
    let len = f.metadata().map_err(io_err(&file.path))?.len();
    match file.compression {
        Compression::Plain => {
            if len < 10 {
                return Ok(false);
            }
            use std::io::{Seek, SeekFrom};
            let mut tail = [0u8; 5];
            f.seek(SeekFrom::Start(len - 5)).and_then(|_| f.read_exact(&mut tail)).map_err(io_err(&file.path))?;
            Ok(tail == [0, 0, 0, 1, b'/'])
        }
        Compression::Gzip => {
            let mut head = [0u8; 2];
            Ok(f.read_exact(&mut head).is_ok() && head == [0x1f, 0x8b])
        }
        Compression::Snappy => {
            let mut head = [0u8; 8];
            Ok(f.read_exact(&mut head).is_ok() && head == *b"\x82SNAPPY\x00")
        }
    }
}
