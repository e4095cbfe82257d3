//! The loader's own minimal client: a handshake, pre-encoded request frames whose xid is patched
//! in place, and replies read as frames whose header alone is decoded unless a workload needs the
//! body. It is deliberately cheap, because on a small machine the loader shares the cores with
//! the server it measures, and both servers are fed by the same loader.

use super::BenchError;
use crate::codec::{write_frame, FrameCodec};
use crate::proto::{
    Acl, ConnectRequest, ConnectResponse, CreateRequest, OpCode, ReplyHeader, Request, RequestBody, WatcherEvent,
};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_util::codec::FramedRead;

/// Largest reply the loader accepts (getChildren2 of a big directory).
pub const MAX_REPLY: usize = 64 << 20;
/// A server that does not answer the handshake within this is counted as an error.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// One session over one TCP connection.
pub struct Conn {
    pub frames: FramedRead<OwnedReadHalf, FrameCodec>,
    pub wr: OwnedWriteHalf,
    pub session_id: i64,
}

/// What a client keeps to re-attach its session after a connection loss.
#[derive(Debug, Clone)]
pub struct Resume {
    pub session_id: i64,
    pub password: Vec<u8>,
    pub last_zxid: i64,
}

/// The outcome of a handshake.
pub enum Attached {
    Live(Conn, ConnectResponse),
    Expired,
}

/// A reply or a notification, header decoded, body kept as bytes.
pub struct Frame {
    pub header: ReplyHeader,
    pub body: BytesMut,
}

impl Conn {
    /// Connects and opens a new session with `timeout_ms`.
    pub async fn open(server: &str, timeout_ms: i32) -> Result<Conn, BenchError> {
        let fresh = Resume { session_id: 0, password: vec![0; 16], last_zxid: 0 };
        match Conn::attach(server, timeout_ms, &fresh).await? {
            Attached::Live(c, _) => Ok(c),
            Attached::Expired => Err(BenchError::Protocol("session refused".into())),
        }
    }

    /// Connects and opens (session id 0) or re-attaches a session, as a client does after a
    /// connection loss: the server answers an expired session with a zero timeout.
    pub async fn attach(server: &str, timeout_ms: i32, resume: &Resume) -> Result<Attached, BenchError> {
        tokio::time::timeout(HANDSHAKE_TIMEOUT, Conn::attach_inner(server, timeout_ms, resume))
            .await
            .map_err(|_| BenchError::Protocol(format!("no handshake from {server} within 30 s")))?
    }

    async fn attach_inner(server: &str, timeout_ms: i32, resume: &Resume) -> Result<Attached, BenchError> {
        let s = TcpStream::connect(server).await?;
        s.set_nodelay(true)?;
        let (rd, mut wr) = s.into_split();
        let req = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: resume.last_zxid,
            timeout_ms,
            session_id: resume.session_id,
            password: resume.password.clone(),
            read_only: Some(false),
        };
        let mut b = BytesMut::new();
        write_frame(&mut b, |o| req.write(o));
        wr.write_all(&b).await?;
        let mut frames = FramedRead::new(rd, FrameCodec::new(MAX_REPLY));
        let f = frames.next().await.ok_or_else(|| BenchError::Protocol("closed during handshake".into()))?;
        let f = f.map_err(|e| BenchError::Protocol(e.to_string()))?;
        let resp = ConnectResponse::parse(&f).map_err(|e| BenchError::Protocol(e.to_string()))?;
        // ZooKeeper (NIOServerCnxn/finishSessionInit) answers an expired or unknown session with
        // timeout 0 and session id 0, and the Java client reports Expired on a timeout <= 0.
        if resp.timeout_ms <= 0 || resp.session_id == 0 {
            return Ok(Attached::Expired);
        }
        let session_id = resp.session_id;
        Ok(Attached::Live(Conn { frames, wr, session_id }, resp))
    }

    /// The next frame from the server (reply or notification).
    pub async fn next_frame(&mut self) -> Result<Frame, BenchError> {
        let f = self.frames.next().await.ok_or_else(|| BenchError::Protocol("connection closed".into()))?;
        let mut body = f.map_err(|e| BenchError::Protocol(e.to_string()))?;
        let (_, header) = ReplyHeader::parse(&body).map_err(|e| BenchError::Protocol(format!("{e:?}")))?;
        let _ = body.split_to(ReplyHeader::WIRE_LEN);
        Ok(Frame { header, body })
    }

    /// The next reply, skipping notifications.
    pub async fn next_reply(&mut self) -> Result<Frame, BenchError> {
        loop {
            let f = self.next_frame().await?;
            if f.header.xid != crate::proto::xid::NOTIFICATION {
                return Ok(f);
            }
        }
    }

    /// Sends one request and waits for its reply (no pipelining).
    pub async fn call(&mut self, req: &Request) -> Result<Frame, BenchError> {
        let mut b = BytesMut::new();
        write_frame(&mut b, |o| req.write(o));
        self.wr.write_all(&b).await?;
        self.next_reply().await
    }

    /// The connection itself, once the handshake is done and nothing is buffered, for a workload
    /// that reads replies its own way.
    pub fn into_stream(self) -> Result<TcpStream, BenchError> {
        if !self.frames.read_buffer().is_empty() {
            return Err(BenchError::Protocol("unexpected bytes after the handshake".into()));
        }
        self.frames.into_inner().reunite(self.wr).map_err(|e| BenchError::Protocol(e.to_string()))
    }

    pub async fn send_raw(&mut self, b: &[u8]) -> Result<(), BenchError> {
        self.wr.write_all(b).await?;
        Ok(())
    }
}

/// A request frame encoded once; `put` appends a copy with a new xid.
#[derive(Clone)]
pub struct Template {
    frame: Bytes,
    pub op: OpCode,
}

impl Template {
    pub fn new(req: &Request) -> Template {
        let mut b = BytesMut::new();
        write_frame(&mut b, |o| req.write(o));
        Template { frame: b.freeze(), op: req.op }
    }

    /// Appends the frame with `xid` patched in (bytes 4..8: after the length).
    pub fn put(&self, xid: i32, out: &mut BytesMut) {
        let start = out.len();
        out.extend_from_slice(&self.frame);
        out[start + 4..start + 8].copy_from_slice(&xid.to_be_bytes());
    }
}

pub fn create(xid: i32, path: String, data: Bytes, flags: i32, op: OpCode) -> Request {
    Request {
        xid,
        op,
        body: RequestBody::Create(CreateRequest { path, data: Some(data), acl: Acl::open_unsafe(), flags, ttl: None }),
    }
}

pub fn path_watch(xid: i32, op: OpCode, path: &str, watch: bool) -> Request {
    Request { xid, op, body: RequestBody::PathWatch { path: path.to_owned(), watch } }
}

pub fn set_data(xid: i32, path: &str, data: Bytes) -> Request {
    Request {
        xid,
        op: OpCode::SetData,
        body: RequestBody::SetData { path: path.to_owned(), data: Some(data), version: -1 },
    }
}

pub fn ping() -> Request {
    Request { xid: crate::proto::xid::PING, op: OpCode::Ping, body: RequestBody::Empty }
}

pub fn close_session(xid: i32) -> Request {
    Request { xid, op: OpCode::CloseSession, body: RequestBody::Empty }
}

/// Creates each path in order, persistent and empty; an existing node is fine.
pub async fn ensure_paths(server: &str, paths: &[String]) -> Result<(), BenchError> {
    let mut c = Conn::open(server, 30_000).await?;
    for (i, p) in paths.iter().enumerate() {
        let f = c.call(&create(i as i32 + 1, p.clone(), Bytes::new(), 0, OpCode::Create)).await?;
        let err = f.header.err;
        if err != 0 && err != crate::proto::ErrorCode::NodeExists.code() {
            return Err(BenchError::Protocol(format!("create {p}: error {err}")));
        }
    }
    let _ = c.call(&close_session(i32::MAX - 1)).await;
    Ok(())
}

/// Decodes a notification body.
pub fn event(body: &[u8]) -> Result<WatcherEvent, BenchError> {
    WatcherEvent::parse(body).map(|(_, e)| e).map_err(|e| BenchError::Protocol(format!("bad notification: {e:?}")))
}

/// The names of a getChildren2 reply body, borrowed (the loader must stay cheap: it shares the
/// machine with the server it measures).
pub fn children(body: &[u8]) -> Option<Vec<&[u8]>> {
    let int = |b: &[u8], at: usize| Some(i32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?));
    let n = int(body, 0)?;
    let mut at = 4;
    let mut out = Vec::with_capacity(n.max(0) as usize);
    for _ in 0..n {
        let len = int(body, at)?.max(0) as usize;
        out.push(body.get(at + 4..at + 4 + len)?);
        at += 4 + len;
    }
    (body.len() == at + crate::proto::Stat::WIRE_LEN).then_some(out)
}
