//! The byte streams around a ZooKeeper snapshot, both ways: gzip, snappy-java's stream format,
//! and the Adler-32 that every snapshot is sealed with (`SnapStream`). Pure stream adapters;
//! what the bytes mean is `snapfile`'s and the exporter's business.
//!
//! snappy-java's `SnappyOutputStream` (what ZooKeeper writes with
//! `zookeeper.snapshot.compression.method=snappy`; not the framing format of
//! `SnappyFramedOutputStream`):
//! ```text
//! header  0x82 "SNAPPY" 0x00 | version int = 1 | compatible version int = 1   (16 bytes)
//! chunk*  length int (big-endian) | raw snappy block of up to 32 KiB uncompressed
//! ```
//! A header may appear again where a chunk would start (streams written one after another).

use super::jutein::Adler32;
use std::io::{self, Read, Write};

/// `SnappyCodec.MAGIC_HEADER`.
const SNAPPY_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// `SnappyCodec.HEADER_SIZE`: the magic, the version and the compatible version.
const SNAPPY_HEADER: usize = 16;
/// `SnappyOutputStream.DEFAULT_BLOCK_SIZE`: uncompressed bytes per chunk.
const SNAPPY_BLOCK: usize = 32 * 1024;
/// A chunk longer than this is damage, not a reason to allocate (snappy-java's own blocks are
/// at most 32 KiB uncompressed; its `MAX_CHUNK_SIZE` check is of the same kind).
const SNAPPY_MAX_CHUNK: usize = 64 << 20;

fn invalid(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

/// Reads what snappy-java's `SnappyOutputStream` wrote.
pub struct SnappyJavaReader<R> {
    inner: R,
    block: Vec<u8>,
    at: usize,
    compressed: Vec<u8>,
    decoder: snap::raw::Decoder,
}

impl<R: Read> SnappyJavaReader<R> {
    /// Checks the header (`SnapStream.isValidSnappyStream` wants the magic; a version below 1
    /// is refused as by `SnappyInputStream.readHeader`).
    pub fn new(mut inner: R) -> io::Result<Self> {
        let mut h = [0u8; SNAPPY_HEADER];
        inner.read_exact(&mut h)?;
        check_header(&h)?;
        Ok(SnappyJavaReader {
            inner,
            block: Vec::new(),
            at: 0,
            compressed: Vec::new(),
            decoder: snap::raw::Decoder::new(),
        })
    }

    /// Fills `block` with the next chunk; false at the end of the stream.
    fn next_chunk(&mut self) -> io::Result<bool> {
        loop {
            let mut len = [0u8; 4];
            match self.inner.read_exact(&mut len) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(false),
                Err(e) => return Err(e),
            }
            if len == SNAPPY_MAGIC[..4] {
                // `SnappyInputStream.hasNextChunk`: another stream's header (concatenated data).
                let mut rest = [0u8; SNAPPY_HEADER - 4];
                self.inner.read_exact(&mut rest)?;
                let mut h = [0u8; SNAPPY_HEADER];
                h[..4].copy_from_slice(&len);
                h[4..].copy_from_slice(&rest);
                check_header(&h)?;
                continue;
            }
            let len = i32::from_be_bytes(len);
            let len = usize::try_from(len).ok().filter(|l| *l <= SNAPPY_MAX_CHUNK);
            let len = len.ok_or_else(|| invalid(format!("snappy chunk length {len:?} is not a chunk's")))?;
            self.compressed.resize(len, 0);
            self.inner.read_exact(&mut self.compressed)?;
            self.block = self.decoder.decompress_vec(&self.compressed).map_err(|e| invalid(format!("snappy: {e}")))?;
            self.at = 0;
            return Ok(true);
        }
    }
}

fn check_header(h: &[u8; SNAPPY_HEADER]) -> io::Result<()> {
    if h[..8] != SNAPPY_MAGIC {
        return Err(invalid("not a snappy-java stream (no SNAPPY magic header)".into()));
    }
    let version = i32::from_be_bytes([h[8], h[9], h[10], h[11]]);
    if version < 1 {
        return Err(invalid(format!("snappy-java stream version {version} (at least 1 is required)")));
    }
    Ok(())
}

impl<R: Read> Read for SnappyJavaReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.block.len() {
            if !self.next_chunk()? {
                return Ok(0);
            }
        }
        let n = buf.len().min(self.block.len() - self.at);
        buf[..n].copy_from_slice(&self.block[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Writes snappy-java's stream format, as `SnappyOutputStream` does; `finish` flushes the last
/// chunk (dropping without it loses that chunk).
pub struct SnappyJavaWriter<W: Write> {
    inner: W,
    block: Vec<u8>,
    encoder: snap::raw::Encoder,
    out: Vec<u8>,
}

impl<W: Write> SnappyJavaWriter<W> {
    pub fn new(mut inner: W) -> io::Result<Self> {
        inner.write_all(&SNAPPY_MAGIC)?;
        inner.write_all(&1i32.to_be_bytes())?;
        inner.write_all(&1i32.to_be_bytes())?;
        Ok(SnappyJavaWriter {
            inner,
            block: Vec::with_capacity(SNAPPY_BLOCK),
            encoder: snap::raw::Encoder::new(),
            out: vec![0; snap::raw::max_compress_len(SNAPPY_BLOCK)],
        })
    }

    fn flush_block(&mut self) -> io::Result<()> {
        if self.block.is_empty() {
            return Ok(());
        }
        let n = self.encoder.compress(&self.block, &mut self.out).map_err(|e| invalid(format!("snappy: {e}")))?;
        self.inner.write_all(&(n as i32).to_be_bytes())?;
        self.inner.write_all(&self.out[..n])?;
        self.block.clear();
        Ok(())
    }

    /// Writes the last chunk and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_block()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for SnappyJavaWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(SNAPPY_BLOCK - self.block.len());
        self.block.extend_from_slice(&buf[..n]);
        if self.block.len() == SNAPPY_BLOCK {
            self.flush_block()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A reader that keeps the Adler-32 of every byte it handed out (`CheckedInputStream`).
pub struct Checked<R> {
    inner: R,
    sum: Adler32,
    read: u64,
}

impl<R: Read> Checked<R> {
    pub fn new(inner: R) -> Self {
        Checked { inner, sum: Adler32::default(), read: 0 }
    }

    /// The checksum of everything read so far.
    pub fn sum(&self) -> u32 {
        self.sum.value()
    }

    /// Bytes read so far (of the uncompressed stream).
    pub fn offset(&self) -> u64 {
        self.read
    }
}

impl<R: Read> Read for Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.sum.update(&buf[..n]);
        self.read += n as u64;
        Ok(n)
    }
}

/// A writer that keeps the Adler-32 of every byte it wrote (`CheckedOutputStream`).
pub struct CheckedWriter<W> {
    inner: W,
    sum: Adler32,
}

impl<W: Write> CheckedWriter<W> {
    pub fn new(inner: W) -> Self {
        CheckedWriter { inner, sum: Adler32::default() }
    }

    pub fn sum(&self) -> u32 {
        self.sum.value()
    }

    pub fn into_inner(self) -> W {
        self.inner
    }
}

impl<W: Write> Write for CheckedWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.sum.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::{SnappyJavaReader, SnappyJavaWriter};
    use std::io::{Read, Write};

    fn sample() -> Vec<u8> {
        (0..200_000u32).flat_map(|i| format!("/dubbo/providers/{}", i % 977).into_bytes()).collect()
    }

    #[test]
    fn snappy_java_streams_round_trip_in_32_kib_chunks() {
        let data = sample();
        let mut w = SnappyJavaWriter::new(Vec::new()).unwrap();
        for piece in data.chunks(10_000) {
            w.write_all(piece).unwrap();
        }
        let bytes = w.finish().unwrap();
        assert_eq!(&bytes[..8], b"\x82SNAPPY\x00");
        assert!(bytes.len() < data.len() / 4, "compressed: {}", bytes.len());
        // The first chunk holds exactly one 32 KiB block.
        let first = i32::from_be_bytes(bytes[16..20].try_into().unwrap()) as usize;
        let block = snap::raw::Decoder::new().decompress_vec(&bytes[20..20 + first]).unwrap();
        assert_eq!(block.len(), 32 * 1024);
        let mut back = Vec::new();
        SnappyJavaReader::new(&bytes[..]).unwrap().read_to_end(&mut back).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn concatenated_streams_read_as_one_and_damage_is_an_error() {
        let mut bytes = Vec::new();
        for part in [&b"first part "[..], b"second part"] {
            let mut w = SnappyJavaWriter::new(Vec::new()).unwrap();
            w.write_all(part).unwrap();
            bytes.extend(w.finish().unwrap());
        }
        let mut back = Vec::new();
        SnappyJavaReader::new(&bytes[..]).unwrap().read_to_end(&mut back).unwrap();
        assert_eq!(back, b"first part second part");
        // Cut inside a chunk: an error, never a short stream that looks whole.
        let mut short = Vec::new();
        assert!(SnappyJavaReader::new(&bytes[..bytes.len() - 3]).unwrap().read_to_end(&mut short).is_err());
        assert!(SnappyJavaReader::new(&b"\x1f\x8b not snappy at all"[..]).is_err());
    }
}
