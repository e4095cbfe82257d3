//! `zkr bench`: a load generator that speaks the ZooKeeper protocol itself, so the same load can
//! be pointed at zkr and at ZooKeeper. Today: `fill` (many Dubbo-like provider nodes).

use crate::codec::{write_frame, FrameCodec};
use crate::proto::{Acl, ConnectRequest, ConnectResponse, CreateRequest, OpCode, ReplyHeader, Request, RequestBody};
use bytes::BytesMut;
use futures::StreamExt;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_util::codec::FramedRead;

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub workload: Workload,
}

#[derive(Debug, clap::Subcommand)]
pub enum Workload {
    /// Create COUNT persistent nodes with Dubbo-like names under /bench/<iface>/providers.
    Fill {
        /// host:port of the server.
        #[arg(long, default_value = "127.0.0.1:2181")]
        server: String,
        #[arg(long, default_value_t = 100_000)]
        count: u64,
        /// Length of each node name (a URL-encoded provider URL), bytes.
        #[arg(long, default_value_t = 400)]
        name_bytes: usize,
        /// Concurrent sessions.
        #[arg(long, default_value_t = 4)]
        connections: u64,
        /// Requests in flight per session.
        #[arg(long, default_value_t = 256)]
        window: usize,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("protocol: {0}")]
    Protocol(String),
}

/// A Dubbo provider name: a URL-encoded provider URL padded to `len` bytes.
pub fn provider_name(i: u64, len: usize) -> String {
    let mut s = format!(
        "dubbo%3A%2F%2F10.{}.{}.{}%3A20880%2Forg.apache.dubbo.demo.DemoService%3Fanyhost%3Dtrue%26application%3Ddemo-provider%26dubbo%3D2.0.2%26interface%3Dorg.apache.dubbo.demo.DemoService%26methods%3DsayHello%26pid%3D{i}%26side%3Dprovider%26timestamp%3D1700000000000%26x%3D",
        (i >> 16) & 255,
        (i >> 8) & 255,
        i & 255
    );
    while s.len() < len {
        s.push('x');
    }
    s
}

struct Conn {
    frames: FramedRead<tokio::net::tcp::OwnedReadHalf, FrameCodec>,
    wr: tokio::net::tcp::OwnedWriteHalf,
}

impl Conn {
    async fn open(server: &str) -> Result<Conn, BenchError> {
        let s = TcpStream::connect(server).await?;
        s.set_nodelay(true)?;
        let (rd, mut wr) = s.into_split();
        let req = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout_ms: 30_000,
            session_id: 0,
            password: vec![0; 16],
            read_only: Some(false),
        };
        let mut b = BytesMut::new();
        write_frame(&mut b, |o| req.write(o));
        wr.write_all(&b).await?;
        let mut frames = FramedRead::new(rd, FrameCodec::new(16 << 20));
        let f = frames.next().await.ok_or_else(|| BenchError::Protocol("closed during handshake".into()))?;
        let f = f.map_err(|e| BenchError::Protocol(e.to_string()))?;
        let resp = ConnectResponse::parse(&f).map_err(|e| BenchError::Protocol(e.to_string()))?;
        if resp.session_id == 0 {
            return Err(BenchError::Protocol("session refused".into()));
        }
        Ok(Conn { frames, wr })
    }

    async fn next_reply(&mut self) -> Result<ReplyHeader, BenchError> {
        loop {
            let f = self.frames.next().await.ok_or_else(|| BenchError::Protocol("connection closed".into()))?;
            let f = f.map_err(|e| BenchError::Protocol(e.to_string()))?;
            let (_, h) = ReplyHeader::parse(&f).map_err(|e| BenchError::Protocol(format!("{e:?}")))?;
            if h.xid != -1 {
                return Ok(h);
            }
        }
    }
}

fn create(xid: i32, path: String) -> Request {
    Request {
        xid,
        op: OpCode::Create,
        body: RequestBody::Create(CreateRequest {
            path,
            data: Some(bytes::Bytes::new()),
            acl: Acl::open_unsafe(),
            flags: 0,
            ttl: None,
        }),
    }
}

/// Creates `/bench`, `/bench/svc`, `/bench/svc/providers` (existing ones are fine).
async fn parents(server: &str) -> Result<(), BenchError> {
    let mut c = Conn::open(server).await?;
    for (i, p) in ["/bench", "/bench/svc", "/bench/svc/providers"].iter().enumerate() {
        let mut b = BytesMut::new();
        write_frame(&mut b, |o| create(i as i32 + 1, p.to_string()).write(o));
        c.wr.write_all(&b).await?;
        let h = c.next_reply().await?;
        if h.err != 0 && h.err != -110 {
            return Err(BenchError::Protocol(format!("create {p}: error {}", h.err)));
        }
    }
    Ok(())
}

async fn fill_one(
    server: String,
    ids: std::ops::Range<u64>,
    name_bytes: usize,
    window: usize,
) -> Result<u64, BenchError> {
    let mut c = Conn::open(&server).await?;
    let total = ids.end - ids.start;
    let mut next = ids.start;
    let mut in_flight = 0usize;
    let mut done = 0u64;
    let mut xid = 1i32;
    let mut buf = BytesMut::new();
    while done < total {
        buf.clear();
        while in_flight < window && next < ids.end {
            let path = format!("/bench/svc/providers/{}", provider_name(next, name_bytes));
            write_frame(&mut buf, |o| create(xid, path).write(o));
            xid = xid.wrapping_add(1).max(1);
            next += 1;
            in_flight += 1;
        }
        if !buf.is_empty() {
            c.wr.write_all(&buf).await?;
        }
        let h = c.next_reply().await?;
        if h.err != 0 && h.err != -110 {
            return Err(BenchError::Protocol(format!("create failed with error {}", h.err)));
        }
        in_flight -= 1;
        done += 1;
    }
    Ok(done)
}

pub async fn run(args: BenchArgs) -> Result<(), BenchError> {
    match args.workload {
        Workload::Fill { server, count, name_bytes, connections, window } => {
            parents(&server).await?;
            let started = Instant::now();
            let per = count.div_ceil(connections.max(1));
            let mut tasks = Vec::new();
            for k in 0..connections.max(1) {
                let ids = (k * per).min(count)..((k + 1) * per).min(count);
                tasks.push(tokio::spawn(fill_one(server.clone(), ids, name_bytes, window)));
            }
            let mut created = 0;
            for t in tasks {
                created += t.await.map_err(|e| BenchError::Protocol(e.to_string()))??;
            }
            let secs = started.elapsed().as_secs_f64().max(Duration::from_millis(1).as_secs_f64());
            println!(
                "fill: {created} nodes of {name_bytes}-byte names in {secs:.1} s ({:.0} creates/s)",
                created as f64 / secs
            );
            Ok(())
        }
    }
}
