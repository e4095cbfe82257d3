//! The standalone log's segment files: their header and size, and their names. Below both the
//! writer and replay (`wal`) and the damage scan (`damage`), which read the same segments.

use crate::txn::Zxid;

/// A segment starts with this magic and `VERSION` (big-endian u32).
pub const MAGIC: &[u8; 4] = b"ZKRW";
pub const VERSION: u32 = 1;
/// Bytes of a segment's header; the first record starts here.
pub const HEADER: u64 = 8;
/// Size a segment is preallocated to (ZooKeeper preallocates 64 MB too).
pub const SEGMENT_BYTES: u64 = 64 * 1024 * 1024;

/// `log.<first zxid, 16 hex digits>`, as ZooKeeper names its log files by their first zxid.
pub fn segment_name(first_zxid: Zxid) -> String {
    format!("log.{first_zxid:016x}")
}
