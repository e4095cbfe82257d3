//! Reply headers out of a byte stream, without keeping the bodies: the loader reads into one
//! large reused buffer and only needs each reply's (xid, zxid, err), so a 105 KB getChildren2
//! reply costs no allocation. `pump` goes further: once a reply's header is read, the rest of
//! its body is dropped inside the kernel (`recv` with `MSG_TRUNC`, which TCP sockets on Linux
//! support), so the loader does not even copy the bytes it never looks at. The server still
//! sends every byte; only the loader's share of the two shared cores shrinks.

use crate::proto::ReplyHeader;

/// Where the scanner is inside the current frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Collecting the 4-byte length and the 16-byte reply header (`have` bytes so far).
    Head { have: usize },
    /// Skipping the rest of a body.
    Skip { left: usize },
}

/// Splits a stream of length-prefixed replies into headers, across arbitrary read boundaries.
pub struct HeaderScanner {
    state: State,
    head: [u8; 4 + ReplyHeader::WIRE_LEN],
    max_frame: usize,
}

impl HeaderScanner {
    pub fn new(max_frame: usize) -> HeaderScanner {
        HeaderScanner { state: State::Head { have: 0 }, head: [0; 20], max_frame }
    }

    /// Bytes of the current reply's body still to skip (0 between replies and in a header).
    pub fn body_left(&self) -> usize {
        match self.state {
            State::Skip { left } => left,
            State::Head { .. } => 0,
        }
    }

    /// Records `n` body bytes (at most `body_left()`) as skipped without seeing them.
    pub fn skipped(&mut self, n: usize) {
        if let State::Skip { left } = self.state {
            let n = n.min(left);
            self.state = if n == left { State::Head { have: 0 } } else { State::Skip { left: left - n } };
        }
    }

    /// Consumes `data`, appending the header of every reply completed in it to `out`.
    pub fn feed(&mut self, mut data: &[u8], out: &mut Vec<ReplyHeader>) -> Result<(), String> {
        while !data.is_empty() {
            match self.state {
                State::Skip { left } => {
                    let n = left.min(data.len());
                    data = &data[n..];
                    self.state = if n == left { State::Head { have: 0 } } else { State::Skip { left: left - n } };
                }
                State::Head { have } => {
                    let n = (self.head.len() - have).min(data.len());
                    self.head[have..have + n].copy_from_slice(&data[..n]);
                    data = &data[n..];
                    let have = have + n;
                    if have < self.head.len() {
                        self.state = State::Head { have };
                        continue;
                    }
                    let h = &self.head;
                    let len = i32::from_be_bytes([h[0], h[1], h[2], h[3]]);
                    let len = usize::try_from(len).map_err(|_| format!("negative frame length {len}"))?;
                    if len < ReplyHeader::WIRE_LEN || len > self.max_frame {
                        return Err(format!("bad frame length {len}"));
                    }
                    out.push(ReplyHeader {
                        xid: i32::from_be_bytes([h[4], h[5], h[6], h[7]]),
                        zxid: i64::from_be_bytes([h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]]),
                        err: i32::from_be_bytes([h[16], h[17], h[18], h[19]]),
                    });
                    let left = len - ReplyHeader::WIRE_LEN;
                    self.state = if left == 0 { State::Head { have: 0 } } else { State::Skip { left } };
                }
            }
        }
        Ok(())
    }
}

/// Bytes read (and copied) at a time between reply bodies: whole small replies, and the start
/// of a big one.
const HEAD_READ: usize = 4096;

/// Reads from `s` once it is readable: either up to `HEAD_READ` bytes, scanned for headers
/// (appended to `heads`), or, inside a body, up to the rest of that body, discarded by the
/// kernel. Returns the bytes consumed; 0 = the server closed the connection.
pub async fn pump(
    s: &tokio::net::TcpStream,
    buf: &mut [u8],
    sink: &mut [std::mem::MaybeUninit<u8>],
    scan: &mut HeaderScanner,
    heads: &mut Vec<ReplyHeader>,
) -> Result<usize, crate::bench::BenchError> {
    loop {
        s.readable().await?;
        let left = scan.body_left();
        let r = if left > 0 {
            let n = left.min(sink.len());
            s.try_io(tokio::io::Interest::READABLE, || {
                socket2::SockRef::from(s).recv_with_flags(&mut sink[..n], libc::MSG_TRUNC)
            })
        } else {
            let n = HEAD_READ.min(buf.len());
            s.try_read(&mut buf[..n])
        };
        match r {
            Ok(0) => return Ok(0),
            Ok(n) if left > 0 => {
                scan.skipped(n);
                return Ok(n);
            }
            Ok(n) => {
                scan.feed(&buf[..n], heads).map_err(crate::bench::BenchError::Protocol)?;
                return Ok(n);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(xid: i32, zxid: i64, err: i32, body: usize) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&((16 + body) as i32).to_be_bytes());
        ReplyHeader { xid, zxid, err }.write(&mut v);
        v.extend((0..body).map(|i| i as u8));
        v
    }

    fn stream() -> (Vec<u8>, Vec<(i32, i64, i32)>) {
        let specs = [(1, 10, 0, 0), (2, 11, -101, 3), (-1, -1, 0, 40), (3, 12, 0, 105_000), (4, 13, 0, 1)];
        let mut bytes = Vec::new();
        for &(x, z, e, b) in &specs {
            bytes.extend(frame(x, z, e, b));
        }
        (bytes, specs.iter().map(|&(x, z, e, _)| (x, z, e)).collect())
    }

    fn scan_in_chunks(bytes: &[u8], chunk: usize) -> Vec<(i32, i64, i32)> {
        let mut s = HeaderScanner::new(1 << 20);
        let mut out = Vec::new();
        for c in bytes.chunks(chunk) {
            s.feed(c, &mut out).expect("valid stream");
        }
        out.iter().map(|h| (h.xid, h.zxid, h.err)).collect()
    }

    #[test]
    fn headers_across_every_split() {
        let (bytes, want) = stream();
        for chunk in [1, 2, 3, 7, 19, 20, 21, 64, 4096, 65_536, bytes.len()] {
            assert_eq!(scan_in_chunks(&bytes, chunk), want, "chunk {chunk}");
        }
    }

    #[test]
    fn a_partial_frame_yields_nothing_until_complete() {
        let f = frame(9, 99, 0, 5);
        let mut s = HeaderScanner::new(1 << 20);
        let mut out = Vec::new();
        s.feed(&f[..19], &mut out).expect("partial");
        assert!(out.is_empty());
        s.feed(&f[19..20], &mut out).expect("rest of head");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].xid, 9);
    }

    #[test]
    fn skipped_bodies_leave_the_headers_intact() {
        let (bytes, want) = stream();
        let mut s = HeaderScanner::new(1 << 20);
        let mut out = Vec::new();
        let mut rest = &bytes[..];
        // Feed 7 bytes at a time, but jump over bodies as pump does with MSG_TRUNC.
        while !rest.is_empty() {
            let left = s.body_left();
            if left > 0 {
                let n = left.min(1000).min(rest.len());
                s.skipped(n);
                rest = &rest[n..];
            } else {
                let n = 7.min(rest.len());
                s.feed(&rest[..n], &mut out).expect("valid stream");
                rest = &rest[n..];
            }
        }
        assert_eq!(s.body_left(), 0);
        assert_eq!(out.iter().map(|h| (h.xid, h.zxid, h.err)).collect::<Vec<_>>(), want);
    }

    /// Over a real socket: headers of replies of every size, bodies dropped in the kernel.
    #[tokio::test]
    async fn pump_over_tcp() {
        use tokio::io::AsyncWriteExt;
        let (bytes, want) = stream();
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = l.local_addr().expect("addr");
        let w = tokio::spawn(async move {
            let (mut c, _) = l.accept().await.expect("accept");
            for part in bytes.chunks(3000) {
                c.write_all(part).await.expect("write");
                tokio::task::yield_now().await;
            }
        });
        let s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let (mut buf, mut sink) = (vec![0u8; 64 * 1024], vec![std::mem::MaybeUninit::uninit(); 64 * 1024]);
        let (mut scan, mut heads) = (HeaderScanner::new(1 << 20), Vec::new());
        while pump(&s, &mut buf, &mut sink, &mut scan, &mut heads).await.expect("pump") > 0 {}
        w.await.expect("writer");
        assert_eq!(heads.iter().map(|h| (h.xid, h.zxid, h.err)).collect::<Vec<_>>(), want);
        assert_eq!(scan.body_left(), 0);
    }

    #[test]
    fn bad_lengths_are_errors() {
        let mut out = Vec::new();
        let mut short = frame(1, 1, 0, 0);
        short[..4].copy_from_slice(&15i32.to_be_bytes());
        assert!(HeaderScanner::new(1 << 20).feed(&short, &mut out).is_err());
        let mut neg = frame(1, 1, 0, 0);
        neg[..4].copy_from_slice(&(-5i32).to_be_bytes());
        assert!(HeaderScanner::new(1 << 20).feed(&neg, &mut out).is_err());
        assert!(HeaderScanner::new(100).feed(&frame(1, 1, 0, 200), &mut out).is_err());
    }
}
