//! Reading one ZooKeeper transaction log file record by record, with ZooKeeper's own rules for
//! where a file ends and what is damage (`FileTxnLog.FileTxnIterator.next`, `Util.readTxnBytes`).
//!
//! ```text
//! log     "ZKLG" int | version int | dbid long
//!         (adler32 long | txn buffer | 'B')*   then zeros (preallocated) or the end of the file
//! txn     TxnHeader{clientId long, cxid int, zxid long, time long, type int} + record [+ TxnDigest]
//! ```
//! The file is read as a stream up to its end, never whole: ZooKeeper preallocates its logs
//! with zeros (64 MiB by default).

use super::jutein::adler32;
use super::ImportError;
use std::io::Read;
use std::path::Path;

pub const LOG_MAGIC: i32 = 0x5a4b_4c47; // "ZKLG"

/// A record longer than this is damage (ZooKeeper's `BinaryInputArchive.checkLength` refuses
/// anything over `jute.maxbuffer` plus its extra; this bound is far above any setting in use,
/// so nothing ZooKeeper reads is refused here).
const MAX_RECORD: usize = 256 << 20;

/// How a log file ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// At the end of the file, or where the preallocated zeros begin.
    Clean,
    /// With a record cut short at `offset` (ZooKeeper's "Last transaction was partial"): a
    /// crash during an append. ZooKeeper reads on from the next file, as this reader's caller
    /// does; the txn was never acknowledged.
    Torn { offset: u64 },
}

fn damaged(path: &Path, offset: u64, reason: String) -> ImportError {
    ImportError::DamagedLog { file: path.to_owned(), offset, reason }
}

/// Calls `each` with the body (TxnHeader and record) and offset of every whole record of one log
/// file, in order, and says how the file ended. A record that fails its Adler-32 although it is
/// whole (its 'B' end mark is there) is damage: ZooKeeper stops loading there ("CRC check
/// failed") and so does this reader, with an error; so is a length no record can have.
pub fn for_each_record<E: From<ImportError>>(
    path: &Path,
    mut each: impl FnMut(&[u8], u64) -> Result<(), E>,
) -> Result<End, E> {
    let io = |source| E::from(ImportError::Io { file: path.to_owned(), source });
    let file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let mut r = std::io::BufReader::with_capacity(1 << 20, file);
    let mut head = [0u8; 16];
    if !read_full(&mut r, &mut head).map_err(io)? {
        // Created and never written: no header, no txn.
        return Ok(End::Clean);
    }
    if head[..4] != LOG_MAGIC.to_be_bytes() {
        return Err(damaged(path, 0, "not a ZooKeeper log (its magic is not ZKLG)".into()).into());
    }
    let mut at = 16u64;
    let mut body = Vec::new();
    loop {
        let mut h = [0u8; 12];
        if !read_full(&mut r, &mut h).map_err(io)? {
            return Ok(if at == size { End::Clean } else { End::Torn { offset: at } });
        }
        let crc = u64::from_be_bytes([h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7]]) as u32;
        let len = i32::from_be_bytes([h[8], h[9], h[10], h[11]]);
        // Zero: the preallocated space after the last record. -1: a null buffer, which
        // `readTxnBytes` also takes for the end.
        if len == 0 || len == -1 {
            return Ok(if crc == 0 { End::Clean } else { End::Torn { offset: at } });
        }
        let Some(len) = usize::try_from(len).ok().filter(|l| *l <= MAX_RECORD) else {
            return Err(damaged(path, at, format!("a record length of {len} bytes")).into());
        };
        // Past the file's end: cut short (EOF in ZooKeeper).
        if at + 12 + len as u64 + 1 > size {
            return Ok(End::Torn { offset: at });
        }
        body.resize(len + 1, 0);
        if !read_full(&mut r, &mut body).map_err(io)? {
            return Ok(End::Torn { offset: at });
        }
        let (record, mark) = body.split_at(len);
        if mark != b"B" {
            return Ok(End::Torn { offset: at });
        }
        let computed = adler32(record);
        if computed != crc {
            let reason =
                format!("a whole record fails its Adler-32 checksum (stored {crc:#x}, computed {computed:#x})");
            return Err(damaged(path, at, reason).into());
        }
        each(record, at)?;
        at += 12 + len as u64 + 1;
    }
}

/// Fills `buf`; false if the stream ended first.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<bool> {
    match r.read_exact(buf) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// A log file's header with `records` (each a txn body) after it, as ZooKeeper writes them.
#[cfg(test)]
pub fn encode_log(records: &[Vec<u8>]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&LOG_MAGIC.to_be_bytes());
    b.extend_from_slice(&2i32.to_be_bytes());
    b.extend_from_slice(&0i64.to_be_bytes());
    for r in records {
        b.extend_from_slice(&(adler32(r) as i64).to_be_bytes());
        b.extend_from_slice(&(r.len() as i32).to_be_bytes());
        b.extend_from_slice(r);
        b.push(b'B');
    }
    b
}

#[cfg(test)]
mod tests {
    use super::{encode_log, for_each_record, End};

    fn read(bytes: &[u8]) -> Result<(Vec<u64>, End), String> {
        let p = std::env::temp_dir().join(format!("zkr-zklog-{}-{}", std::process::id(), bytes.len()));
        std::fs::write(&p, bytes).unwrap();
        let mut offsets = Vec::new();
        let r = for_each_record(&p, |_, at| {
            offsets.push(at);
            Ok::<_, crate::import::ImportError>(())
        });
        let _ = std::fs::remove_file(&p);
        r.map(|end| (offsets, end)).map_err(|e| e.to_string())
    }

    #[test]
    fn ends_and_damage_as_zookeeper_tells_them() {
        let records = vec![vec![1u8; 40], vec![2u8; 50], vec![3u8; 60]];
        let log = encode_log(&records);
        assert_eq!(read(&log), Ok((vec![16, 69, 132], End::Clean)));
        // Preallocated zeros after the last record.
        let mut zeros = log.clone();
        zeros.extend(vec![0u8; 4096]);
        assert_eq!(read(&zeros), Ok((vec![16, 69, 132], End::Clean)));
        // Cut inside the last record, or its end mark missing: a torn append.
        assert_eq!(read(&log[..log.len() - 5]), Ok((vec![16, 69], End::Torn { offset: 132 })));
        let mut unmarked = log.clone();
        *unmarked.last_mut().unwrap() = 0;
        assert_eq!(read(&unmarked), Ok((vec![16, 69], End::Torn { offset: 132 })));
        // A whole record whose bytes changed after it was written: damage, with its offset.
        let mut flipped = log.clone();
        flipped[69 + 12 + 7] ^= 0x10;
        let err = read(&flipped).unwrap_err();
        assert!(err.contains("offset 69") && err.contains("Adler-32"), "{err}");
        let mut huge = log.clone();
        huge[69 + 8..69 + 12].copy_from_slice(&(-7i32).to_be_bytes());
        assert!(read(&huge).unwrap_err().contains("record length of -7"));
        let mut foreign = log;
        foreign[0] = b'X';
        assert!(read(&foreign).unwrap_err().contains("not a ZooKeeper log"));
        assert_eq!(read(&[]), Ok((vec![], End::Clean)));
    }
}
