//! `fill`: COUNT persistent nodes with Dubbo-like provider names under one parent, as fast as the
//! server takes them; reports creates/s and, with the server's pid, its RSS per znode.

use super::client::{self, Conn};
use super::stats::Summary;
use super::{provider_name, BenchError, Target};
use crate::proto::{ErrorCode, OpCode};
use bytes::{Bytes, BytesMut};
use std::time::Instant;

#[derive(Debug, Clone, clap::Args)]
pub struct FillArgs {
    #[command(flatten)]
    pub target: Target,
    #[arg(long, default_value_t = 100_000)]
    pub count: u64,
    /// Length of each node name (a URL-encoded provider URL), bytes.
    #[arg(long, default_value_t = 400)]
    pub name_bytes: usize,
    /// Concurrent sessions.
    #[arg(long, default_value_t = 4)]
    pub connections: u64,
    /// Requests in flight per session.
    #[arg(long, default_value_t = 256)]
    pub window: usize,
    /// Print the path the fill gives node N (counting from 0) and exit, without connecting:
    /// scripts use it to read the last node back after a restart.
    #[arg(long, value_name = "N")]
    pub path_of: Option<u64>,
}

pub const PARENT: &str = "/bench/svc/providers";

async fn fill_one(
    server: String,
    ids: std::ops::Range<u64>,
    name_bytes: usize,
    window: usize,
) -> Result<(u64, u64), BenchError> {
    let mut c = Conn::open(&server, 30_000).await?;
    let total = ids.end - ids.start;
    let (mut next, mut in_flight, mut done, mut errors) = (ids.start, 0usize, 0u64, 0u64);
    let mut xid = 1i32;
    let mut buf = BytesMut::new();
    while done < total {
        buf.clear();
        while in_flight < window && next < ids.end {
            let path = format!("{PARENT}/{}", provider_name(next, name_bytes));
            let req = client::create(xid, path, Bytes::new(), 0, OpCode::Create);
            crate::codec::write_frame(&mut buf, |o| req.write(o));
            xid = xid.wrapping_add(1).max(1);
            next += 1;
            in_flight += 1;
        }
        if !buf.is_empty() {
            c.send_raw(&buf).await?;
        }
        let f = c.next_reply().await?;
        if f.header.err != 0 && f.header.err != ErrorCode::NodeExists.code() {
            errors += 1;
        }
        in_flight -= 1;
        done += 1;
    }
    Ok((done, errors))
}

pub async fn run(a: FillArgs) -> Result<(), BenchError> {
    if let Some(i) = a.path_of {
        println!("{PARENT}/{}", provider_name(i, a.name_bytes));
        return Ok(());
    }
    let server = a.target.host(0).to_owned();
    client::ensure_paths(&server, &["/bench".into(), "/bench/svc".into(), PARENT.into()]).await?;
    let before = a.target.sample();
    let started = Instant::now();
    let per = a.count.div_ceil(a.connections.max(1));
    let mut tasks = Vec::new();
    for k in 0..a.connections.max(1) {
        let ids = (k * per).min(a.count)..((k + 1) * per).min(a.count);
        tasks.push(tokio::spawn(fill_one(server.clone(), ids, a.name_bytes, a.window)));
    }
    let (mut created, mut errors) = (0, 0);
    for t in tasks {
        let (c, e) = t.await.map_err(|e| BenchError::Protocol(e.to_string()))??;
        created += c;
        errors += e;
    }
    let secs = started.elapsed().as_secs_f64().max(1e-3);
    let after = a.target.sample();
    let mut s = Summary::new("fill");
    s.kv("count", created).kv("name_bytes", a.name_bytes).f("secs", secs).f("ops_per_s", created as f64 / secs);
    s.kv("errors", errors).server(before, after).server_per_op(before, after, created);
    if let (Some(b), Some(x)) = (before, after) {
        s.f("rss_bytes_per_znode", (x.rss_kb.saturating_sub(b.rss_kb) * 1024) as f64 / created.max(1) as f64);
    }
    s.print();
    Ok(())
}
