//! The loopback floor (issue #15 item 5): a server that does nothing but put pre-encoded replies
//! on the wire. Each distinct request (its bytes after the xid) is sent once to a real server
//! (`--from`), and that reply is kept; every later copy of the request is answered from it, with
//! only the xid patched in. What this server costs per request is what framing, the syscalls and
//! the kernel's loopback copy of the reply bytes cost, with no tree, no sessions and no core:
//! the floor any server of this design pays for the same replies. Run a workload against it with
//! `--server-pid` and compare its `server_cpu_us_per_op` with the real server's.

use super::client::{Conn, MAX_REPLY};
use super::BenchError;
use crate::codec::FrameCodec;
use crate::proto::{ConnectRequest, ConnectResponse};
use bytes::{BufMut, Bytes, BytesMut};
use futures::{FutureExt, StreamExt};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::FramedRead;

#[derive(Debug, clap::Args)]
pub struct FloorArgs {
    /// Port to serve on (127.0.0.1).
    #[arg(long)]
    pub port: u16,
    /// The real server whose replies are replayed (host:port).
    #[arg(long)]
    pub from: String,
}

/// Replies by request bytes (op and body): the reply frame after its xid (zxid, err, body).
type Replies = parking_lot::RwLock<HashMap<Bytes, Bytes>>;

struct Shared {
    upstream: tokio::sync::Mutex<Conn>,
    replies: Replies,
}

/// Serves until killed.
pub async fn run(a: FloorArgs) -> Result<(), BenchError> {
    let listener = TcpListener::bind(("127.0.0.1", a.port)).await?;
    let upstream = Conn::open(&a.from, 30_000).await?;
    let shared = Arc::new(Shared { upstream: tokio::sync::Mutex::new(upstream), replies: Replies::default() });
    println!("floor server on 127.0.0.1:{} replaying {}", a.port, a.from);
    let mut next_session = 1i64;
    loop {
        let (stream, _) = listener.accept().await?;
        stream.set_nodelay(true)?;
        next_session += 1;
        let shared = shared.clone();
        tokio::spawn(async move {
            if let Err(e) = serve(stream, shared, next_session).await {
                eprintln!("floor: connection ended: {e}");
            }
        });
    }
}

async fn serve(stream: TcpStream, shared: Arc<Shared>, session_id: i64) -> Result<(), BenchError> {
    let (rd, mut wr) = stream.into_split();
    let mut frames = FramedRead::new(rd, FrameCodec::new(MAX_REPLY));
    let proto = |e: &dyn std::fmt::Display| BenchError::Protocol(e.to_string());
    let Some(first) = frames.next().await else { return Ok(()) };
    let req = ConnectRequest::parse(&first.map_err(|e| proto(&e))?).map_err(|e| proto(&e))?;
    let resp = ConnectResponse {
        protocol_version: 0,
        timeout_ms: req.timeout_ms,
        session_id,
        password: vec![0; 16],
        read_only: Some(false),
    };
    let mut out = BytesMut::new();
    crate::codec::write_frame(&mut out, |b| resp.write(b));
    wr.write_all(&out).await?;
    // Each reply goes out as its own small header and the kept reply bytes, gathered into one
    // vectored write (as zkr's writer does): no reply byte is copied in user space.
    let mut chunks: Vec<Bytes> = Vec::new();
    loop {
        // Everything already readable is answered with one write, as zkr's writer gathers.
        let mut next = frames.next().await;
        loop {
            let frame = match next {
                None => {
                    write_all(&mut wr, &mut chunks).await?;
                    return Ok(());
                }
                Some(f) => f.map_err(|e| proto(&e))?,
            };
            if frame.len() < 8 {
                return Err(BenchError::Protocol("short request".into()));
            }
            let frame = frame.freeze();
            let xid = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
            let key = frame.slice(4..);
            if key[..4] == (crate::proto::OpCode::CloseSession as i32).to_be_bytes() {
                // Never sent upstream (it would end the replaying session): answered, then closed.
                let mut h = BytesMut::with_capacity(20);
                h.put_i32(16);
                h.put_i32(xid);
                h.put_i64(0);
                h.put_i32(0);
                chunks.push(h.freeze());
                write_all(&mut wr, &mut chunks).await?;
                return Ok(());
            }
            let cached = shared.replies.read().get(&key).cloned();
            let reply = match cached {
                Some(r) => r,
                None => fetch(&shared, &key).await?,
            };
            let mut h = BytesMut::with_capacity(8);
            h.put_i32((4 + reply.len()) as i32);
            h.put_i32(xid);
            chunks.push(h.freeze());
            chunks.push(reply);
            match frames.next().now_or_never() {
                Some(n) => next = n,
                None => break,
            }
        }
        write_all(&mut wr, &mut chunks).await?;
    }
}

/// Writes every chunk with vectored writes, then empties the list.
async fn write_all(wr: &mut OwnedWriteHalf, chunks: &mut Vec<Bytes>) -> Result<(), BenchError> {
    let mut first = 0;
    while first < chunks.len() {
        let slices: Vec<std::io::IoSlice> =
            chunks[first..].iter().take(512).map(|c| std::io::IoSlice::new(c)).collect();
        let mut n = wr.write_vectored(&slices).await?;
        if n == 0 {
            return Err(BenchError::Protocol("connection closed".into()));
        }
        while first < chunks.len() && n >= chunks[first].len() {
            n -= chunks[first].len();
            first += 1;
        }
        if n > 0 {
            let rest = chunks[first].slice(n..);
            chunks[first] = rest;
        }
    }
    chunks.clear();
    Ok(())
}

/// Asks the real server once, and keeps its reply.
async fn fetch(shared: &Shared, key: &Bytes) -> Result<Bytes, BenchError> {
    let mut up = shared.upstream.lock().await;
    let mut req = BytesMut::new();
    req.put_i32((4 + key.len()) as i32);
    req.put_i32(1);
    req.put_slice(key);
    up.send_raw(&req).await?;
    let f = up.next_reply().await?;
    let mut reply = BytesMut::new();
    reply.put_i64(f.header.zxid);
    reply.put_i32(f.header.err);
    reply.put_slice(&f.body);
    let reply = reply.freeze();
    shared.replies.write().insert(key.clone(), reply.clone());
    Ok(reply)
}
