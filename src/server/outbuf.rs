//! A connection's pending output: small encoded pieces gathered in one buffer, large shared
//! pieces (the tree's cached child lists) kept by reference, all written with vectored writes.
//! A getChildren reply of a big directory thus costs no copy in user space: its bytes go from
//! the cache straight to the socket.
//!
//! It only lays out bytes; what goes in and in which order is the writer's business.

use crate::codec::write_frame;
use crate::proto::{ReplyHeader, Response, Stat};
use bytes::{Buf, BufMut, Bytes, BytesMut};
use std::collections::VecDeque;
use std::io::IoSlice;
use tokio::io::{AsyncWrite, AsyncWriteExt};

/// Shared pieces shorter than this are copied: a separate iovec costs more than the copy.
const SHARE_MIN: usize = 4096;
/// iovecs per write call (well under Linux's IOV_MAX of 1024).
const IOV: usize = 64;

#[derive(Default)]
pub struct OutBuf {
    /// Where small pieces are encoded; sealed into `chunks` before a shared piece and on write.
    buf: BytesMut,
    /// Sealed pieces waiting for the socket, in order.
    chunks: VecDeque<Bytes>,
    /// Bytes in `chunks`.
    sealed: usize,
}

impl OutBuf {
    pub fn new() -> OutBuf {
        OutBuf::default()
    }

    /// Bytes waiting to be written.
    pub fn len(&self) -> usize {
        self.sealed + self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends one frame whose payload `f` encodes.
    pub fn frame(&mut self, f: impl FnOnce(&mut BytesMut)) {
        write_frame(&mut self.buf, f);
    }

    /// Appends one reply frame: the same bytes as `header` then `body` written in one frame.
    pub fn reply(&mut self, header: &ReplyHeader, body: &Response) {
        match body {
            Response::EncodedChildren(c) if c.len() >= SHARE_MIN => self.shared_frame(header, c, None),
            Response::EncodedChildren2 { children, stat } if children.len() >= SHARE_MIN => {
                self.shared_frame(header, children, Some(stat))
            }
            _ => self.frame(|b| {
                header.write(b);
                body.write(b);
            }),
        }
    }

    /// A frame of header, shared bytes and an optional Stat, with the shared bytes by reference.
    fn shared_frame(&mut self, header: &ReplyHeader, shared: &Bytes, stat: Option<&Stat>) {
        let len = ReplyHeader::WIRE_LEN + shared.len() + stat.map_or(0, |_| Stat::WIRE_LEN);
        self.buf.put_i32(len as i32);
        header.write(&mut self.buf);
        self.seal();
        self.sealed += shared.len();
        self.chunks.push_back(shared.clone());
        if let Some(s) = stat {
            s.write(&mut self.buf);
        }
    }

    fn seal(&mut self) {
        if !self.buf.is_empty() {
            let b = self.buf.split().freeze();
            self.sealed += b.len();
            self.chunks.push_back(b);
        }
    }

    /// Writes everything pending, with as few write calls as the socket allows.
    pub async fn write_to<W: AsyncWrite + Unpin>(&mut self, wr: &mut W) -> std::io::Result<()> {
        self.seal();
        while !self.is_empty() {
            let n = if self.chunks.len() == 1 {
                wr.write(&self.chunks[0]).await?
            } else {
                // The iovec array lives only inside one poll: held across an await it would
                // make every connection's writer task 1 KiB larger, idle or not.
                let chunks = &self.chunks;
                std::future::poll_fn(|cx| {
                    let mut iov = [IoSlice::new(&[]); IOV];
                    let k = chunks.len().min(IOV);
                    for (slot, c) in iov.iter_mut().zip(chunks.iter()) {
                        *slot = IoSlice::new(c);
                    }
                    std::pin::Pin::new(&mut *wr).poll_write_vectored(cx, &iov[..k])
                })
                .await?
            };
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            self.consume(n);
        }
        Ok(())
    }

    /// Drops `n` written bytes from the front.
    fn consume(&mut self, mut n: usize) {
        self.sealed -= n;
        while n > 0 {
            let Some(front) = self.chunks.front_mut() else { return };
            if n < front.len() {
                front.advance(n);
                return;
            }
            n -= front.len();
            self.chunks.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::encode_children;

    fn flat(h: &ReplyHeader, r: &Response) -> Vec<u8> {
        let mut b = BytesMut::new();
        write_frame(&mut b, |o| {
            h.write(o);
            r.write(o);
        });
        b.to_vec()
    }

    /// Replies laid out by reference are byte for byte what the plain encoder writes, through
    /// a writer that takes only a few bytes per call (partial vectored writes).
    #[tokio::test]
    async fn shared_replies_match_the_plain_encoding() {
        let names: Vec<String> = (0..500).map(|i| format!("provider-{i:05}-{}", "x".repeat(40))).collect();
        let children = encode_children(names.iter().map(|s| s.as_str()));
        assert!(children.len() >= SHARE_MIN);
        let small = encode_children(["a", "b"].into_iter());
        let stat = Stat { czxid: 7, mzxid: 9, num_children: 500, ..Default::default() };
        let h = |xid| ReplyHeader { xid, zxid: 42, err: 0 };
        let replies = vec![
            (h(1), Response::Stat(stat)),
            (h(2), Response::EncodedChildren2 { children: children.clone(), stat }),
            (h(3), Response::EncodedChildren(children.clone())),
            (h(4), Response::EncodedChildren2 { children: small, stat }),
            (h(5), Response::EncodedChildren(children.clone())),
            (h(6), Response::Empty),
        ];
        let mut want = Vec::new();
        let mut out = OutBuf::new();
        for (hd, r) in &replies {
            want.extend(flat(hd, r));
            out.reply(hd, r);
        }
        assert_eq!(out.len(), want.len());
        let (mut client, server) = tokio::io::duplex(100);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut client, &mut got).await.map(|_| got)
        });
        let mut server = server;
        out.write_to(&mut server).await.expect("write");
        assert!(out.is_empty());
        drop(server);
        let got = reader.await.expect("join").expect("read");
        assert_eq!(got, want);
    }
}
