//! Throughput and latency workloads: `read` (getData, exists, getChildren2 of a 1,000-child
//! directory), `write` (create and setData, fsync on in the server) and `mixed` (90% of those
//! reads, 10% setData). Many sessions, each with a window of pipelined requests; either as fast
//! as the server answers (closed loop) or at a fixed total rate (open loop, latency measured from
//! the time each request was due, so a stalled server is not hidden).

use super::client::{self, Conn, Template};
use super::stats::{self, Latencies, Summary};
use super::{provider_name, BenchError, Target};
use crate::proto::{ErrorCode, OpCode};
use bytes::{Bytes, BytesMut};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, clap::Args)]
pub struct RwArgs {
    #[command(flatten)]
    pub target: Target,
    /// Concurrent sessions.
    #[arg(long, default_value_t = 16)]
    pub connections: usize,
    /// Requests in flight per session.
    #[arg(long, default_value_t = 32)]
    pub window: usize,
    /// Measured seconds (after the warm-up).
    #[arg(long, default_value_t = 10.0)]
    pub secs: f64,
    #[arg(long, default_value_t = 1.0)]
    pub warmup_secs: f64,
    /// Total requests per second (open loop); 0 = as fast as the server answers.
    #[arg(long, default_value_t = 0.0)]
    pub rate: f64,
    /// Children of the listed directory.
    #[arg(long, default_value_t = 1000)]
    pub children: u64,
    /// Length of each child's name (a Dubbo-like URL-encoded provider URL), bytes.
    #[arg(long, default_value_t = 100)]
    pub child_bytes: usize,
    /// Bytes of data per node read or written.
    #[arg(long, default_value_t = 100)]
    pub data_bytes: usize,
    /// Read random nodes among the first KEYS made by `fill` (getData and exists in turn)
    /// instead of the fixed node and directory; 0 = off.
    #[arg(long, default_value_t = 0)]
    pub keys: u64,
    /// `fill --name-bytes` of those nodes.
    #[arg(long, default_value_t = 400)]
    pub key_bytes: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mix {
    Read,
    Write,
    Mixed,
}

impl Mix {
    fn name(self) -> &'static str {
        match self {
            Mix::Read => "read",
            Mix::Write => "write",
            Mix::Mixed => "mixed",
        }
    }
}

const NODE: &str = "/bench/read/node";
const DIR: &str = "/bench/read/dir";

/// Creates the read targets: a node with data and a directory of `children` Dubbo-like names.
async fn setup(a: &RwArgs, mix: Mix) -> Result<(), BenchError> {
    if a.keys > 0 {
        return Ok(());
    }
    let server = &a.target.server;
    let mut paths: Vec<String> = ["/bench", "/bench/read", NODE, DIR, "/bench/write"].map(String::from).into();
    if mix == Mix::Write {
        paths.extend((0..a.connections).map(|k| format!("/bench/write/s{k}")));
    }
    client::ensure_paths(server, &paths).await?;
    if mix != Mix::Write {
        let mut c = Conn::open(server, 30_000).await?;
        let data = Bytes::from(vec![b'd'; a.data_bytes]);
        c.call(&client::set_data(1, NODE, data)).await?;
        let mut buf = BytesMut::new();
        let mut pending = 0usize;
        for i in 0..a.children {
            let path = format!("{DIR}/{}", provider_name(i, a.child_bytes));
            let req = client::create(i as i32 + 2, path, Bytes::new(), 0, OpCode::Create);
            crate::codec::write_frame(&mut buf, |o| req.write(o));
            pending += 1;
            if pending == 256 || i + 1 == a.children {
                c.send_raw(&buf).await?;
                buf.clear();
                for _ in 0..pending {
                    let f = c.next_reply().await?;
                    if f.header.err != 0 && f.header.err != ErrorCode::NodeExists.code() {
                        return Err(BenchError::Protocol(format!("create child: error {}", f.header.err)));
                    }
                }
                pending = 0;
            }
        }
    }
    Ok(())
}

/// What one session did in the measured window.
#[derive(Default)]
struct ConnResult {
    ops: u64,
    reads: u64,
    writes: u64,
    errors: u64,
    lat: Latencies,
}

/// One request's kind in flight.
#[derive(Clone, Copy)]
enum Kind {
    Read,
    Create,
    Set,
}

async fn one(a: RwArgs, mix: Mix, k: usize, warm: Instant, end: Instant) -> Result<ConnResult, BenchError> {
    let mut c = Conn::open(&a.target.server, 30_000).await?;
    let data = Bytes::from(vec![b'w'; a.data_bytes]);
    let reads = [
        Template::new(&client::path_watch(0, OpCode::GetData, NODE, false)),
        Template::new(&client::path_watch(0, OpCode::Exists, NODE, false)),
        Template::new(&client::path_watch(0, OpCode::GetChildren2, DIR, false)),
    ];
    let set_path = if mix == Mix::Write { format!("/bench/write/s{k}") } else { NODE.to_owned() };
    let set = Template::new(&client::set_data(0, &set_path, data.clone()));
    let interval = (a.rate > 0.0).then(|| Duration::from_secs_f64(a.connections as f64 / a.rate));
    // Stagger the open-loop schedules of the sessions.
    let mut due = warm - Duration::from_secs_f64(a.warmup_secs)
        + interval.map_or(Duration::ZERO, |i| i.mul_f64(k as f64 / a.connections as f64));
    let mut inflight: VecDeque<(i32, Instant, Kind)> = VecDeque::with_capacity(a.window);
    let mut res = ConnResult::default();
    let mut buf = BytesMut::with_capacity(64 * 1024);
    let (mut xid, mut seq) = (1i32, 0u64);
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(k as u64);
    loop {
        let now = Instant::now();
        buf.clear();
        while inflight.len() < a.window && now < end && interval.is_none_or(|_| due <= now) {
            let kind = match mix {
                Mix::Read => Kind::Read,
                Mix::Write if seq % 2 == 0 => Kind::Create,
                Mix::Write => Kind::Set,
                Mix::Mixed if seq % 10 == 9 => Kind::Set,
                Mix::Mixed => Kind::Read,
            };
            match kind {
                Kind::Read if a.keys > 0 => {
                    let i = rand::Rng::gen_range(&mut rng, 0..a.keys);
                    let path = format!("{}/{}", super::fill::PARENT, provider_name(i, a.key_bytes));
                    let op = if seq % 2 == 0 { OpCode::GetData } else { OpCode::Exists };
                    let req = client::path_watch(xid, op, &path, false);
                    crate::codec::write_frame(&mut buf, |o| req.write(o));
                }
                Kind::Read => reads[(seq % 3) as usize].put(xid, &mut buf),
                Kind::Set => set.put(xid, &mut buf),
                Kind::Create => {
                    let req = client::create(xid, format!("/bench/write/c{k}-{seq}"), data.clone(), 0, OpCode::Create);
                    crate::codec::write_frame(&mut buf, |o| req.write(o));
                }
            }
            let sent = interval.map_or(now, |_| due);
            inflight.push_back((xid, sent, kind));
            if let Some(i) = interval {
                due += i;
            }
            xid = if xid == i32::MAX { 1 } else { xid + 1 };
            seq += 1;
        }
        if !buf.is_empty() {
            c.send_raw(&buf).await?;
        }
        if inflight.is_empty() {
            if Instant::now() >= end {
                break;
            }
            tokio::time::sleep_until(due.into()).await;
            continue;
        }
        let f = match interval {
            Some(_) if inflight.len() < a.window && due > Instant::now() => {
                tokio::select! {
                    f = c.next_frame() => f?,
                    _ = tokio::time::sleep_until(due.into()) => continue,
                }
            }
            _ => c.next_frame().await?,
        };
        if f.header.xid == crate::proto::xid::NOTIFICATION {
            continue;
        }
        let Some((x, sent, kind)) = inflight.pop_front() else {
            return Err(BenchError::Protocol(format!("unexpected reply xid {}", f.header.xid)));
        };
        if x != f.header.xid {
            return Err(BenchError::Protocol(format!("reply out of order: xid {} for {x}", f.header.xid)));
        }
        if sent >= warm && sent < end {
            res.ops += 1;
            match kind {
                Kind::Read => res.reads += 1,
                _ => res.writes += 1,
            }
            if f.header.err != 0 {
                res.errors += 1;
            }
            res.lat.record(Instant::now().duration_since(sent));
        }
    }
    let _ = c.call(&client::close_session(xid)).await;
    Ok(res)
}

pub async fn run(a: RwArgs, mix: Mix) -> Result<(), BenchError> {
    setup(&a, mix).await?;
    let start = Instant::now() + Duration::from_millis(200);
    let warm = start + Duration::from_secs_f64(a.warmup_secs);
    let end = warm + Duration::from_secs_f64(a.secs);
    let mut tasks = Vec::new();
    for k in 0..a.connections.max(1) {
        tasks.push(tokio::spawn(one(a.clone(), mix, k, warm, end)));
    }
    let pid = a.target.server_pid;
    tokio::time::sleep_until(warm.into()).await;
    let before = pid.and_then(stats::sample);
    tokio::time::sleep_until(end.into()).await;
    let after = pid.and_then(stats::sample);
    let mut total = ConnResult::default();
    let mut failed = 0;
    for t in tasks {
        match t.await.map_err(|e| BenchError::Protocol(e.to_string()))? {
            Ok(r) => {
                total.ops += r.ops;
                total.reads += r.reads;
                total.writes += r.writes;
                total.errors += r.errors;
                total.lat.merge(r.lat);
            }
            Err(e) => {
                eprintln!("zkr bench {}: session failed: {e}", mix.name());
                failed += 1;
            }
        }
    }
    let mut s = Summary::new(mix.name());
    s.kv("connections", a.connections)
        .kv("window", a.window)
        .f("rate", a.rate)
        .f("secs", a.secs)
        .kv("ops", total.ops)
        .kv("reads", total.reads)
        .kv("writes", total.writes)
        .f("ops_per_s", total.ops as f64 / a.secs)
        .lat("lat", &mut total.lat)
        .kv("errors", total.errors + failed)
        .server(before, after);
    s.print();
    Ok(())
}
