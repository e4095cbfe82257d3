//! Throughput and latency workloads: `read` (getData, exists, getChildren2 of a 1,000-child
//! directory), `write` (create and setData, fsync on in the server) and `mixed` (90% of those
//! reads, 10% setData). Many sessions, each with a window of pipelined requests; either as fast
//! as the server answers (closed loop) or at a fixed total rate (open loop, latency measured from
//! the time each request was due, so a stalled server is not hidden).

use super::client::{self, Conn, Template};
use super::pacer;
use super::scan::{self, HeaderScanner};
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
    /// Open loop: run the pacer thread at real-time priority (SCHED_FIFO 1, via `chrt`), so
    /// on a loaded machine the requests still go out when due.
    #[arg(long)]
    pub pacer_rt: bool,
    /// Open loop: the pacer thread's timer slack, µs. Each wake-up costs CPU on the cores the
    /// server uses; a larger slack lets the kernel send several due requests per wake-up, each
    /// at most this much late (shown as `pace_late_*`).
    #[arg(long, default_value_t = 1.0)]
    pub pace_slack_us: f64,
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
    let server = a.target.host(0);
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

impl ConnResult {
    fn add(&mut self, r: ConnResult) {
        self.ops += r.ops;
        self.reads += r.reads;
        self.writes += r.writes;
        self.errors += r.errors;
        self.lat.merge(r.lat);
    }

    fn count(&mut self, kind: Kind, err: i32, lat: Duration) {
        self.ops += 1;
        match kind {
            Kind::Read => self.reads += 1,
            _ => self.writes += 1,
        }
        if err != 0 {
            self.errors += 1;
        }
        self.lat.record(lat);
    }
}

/// One request's kind in flight.
#[derive(Clone, Copy)]
enum Kind {
    Read,
    Create,
    Set,
}

/// The requests of one session, encoded once and appended with a fresh xid.
struct Gen {
    mix: Mix,
    k: usize,
    /// The loader's process id, in created names: a second run on the same server creates new
    /// nodes instead of failing with NodeExists.
    run: u32,
    keys: u64,
    key_bytes: usize,
    data: Bytes,
    reads: [Template; 3],
    set: Template,
    rng: rand::rngs::StdRng,
}

impl Gen {
    fn new(a: &RwArgs, mix: Mix, k: usize) -> Gen {
        let data = Bytes::from(vec![b'w'; a.data_bytes]);
        let set_path = if mix == Mix::Write { format!("/bench/write/s{k}") } else { NODE.to_owned() };
        Gen {
            mix,
            k,
            run: std::process::id(),
            keys: a.keys,
            key_bytes: a.key_bytes,
            set: Template::new(&client::set_data(0, &set_path, data.clone())),
            data,
            reads: [
                Template::new(&client::path_watch(0, OpCode::GetData, NODE, false)),
                Template::new(&client::path_watch(0, OpCode::Exists, NODE, false)),
                Template::new(&client::path_watch(0, OpCode::GetChildren2, DIR, false)),
            ],
            rng: <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(k as u64),
        }
    }

    /// Appends the session's `seq`-th request with `xid` to `buf`.
    fn put(&mut self, seq: u64, xid: i32, buf: &mut BytesMut) -> Kind {
        let kind = match self.mix {
            Mix::Read => Kind::Read,
            Mix::Write if seq.is_multiple_of(2) => Kind::Create,
            Mix::Write => Kind::Set,
            Mix::Mixed if seq % 10 == 9 => Kind::Set,
            Mix::Mixed => Kind::Read,
        };
        match kind {
            Kind::Read if self.keys > 0 => {
                let i = rand::Rng::gen_range(&mut self.rng, 0..self.keys);
                let path = format!("{}/{}", super::fill::PARENT, provider_name(i, self.key_bytes));
                let op = if seq.is_multiple_of(2) { OpCode::GetData } else { OpCode::Exists };
                let req = client::path_watch(xid, op, &path, false);
                crate::codec::write_frame(buf, |o| req.write(o));
            }
            Kind::Read => self.reads[(seq % 3) as usize].put(xid, buf),
            Kind::Set => self.set.put(xid, buf),
            Kind::Create => {
                let req = client::create(
                    xid,
                    format!("/bench/write/c{}-{}-{seq}", self.run, self.k),
                    self.data.clone(),
                    0,
                    OpCode::Create,
                );
                crate::codec::write_frame(buf, |o| req.write(o));
            }
        }
        kind
    }
}

fn next_xid(xid: i32) -> i32 {
    if xid == i32::MAX {
        1
    } else {
        xid + 1
    }
}

/// The loader's read buffer per session: large, so a 105 KB reply takes few reads.
const READ_BUF: usize = 256 * 1024;

fn buffers() -> (Vec<u8>, Vec<std::mem::MaybeUninit<u8>>) {
    (vec![0u8; READ_BUF], vec![std::mem::MaybeUninit::uninit(); READ_BUF])
}

/// Closed loop: WINDOW requests in flight, a new one sent for each reply.
async fn closed(a: RwArgs, mix: Mix, k: usize, warm: Instant, end: Instant) -> Result<ConnResult, BenchError> {
    use tokio::io::AsyncWriteExt;
    let (rd, mut wr) = Conn::open(a.target.host(k), 30_000).await?.into_stream()?.into_split();
    let mut gen = Gen::new(&a, mix, k);
    let mut inflight: VecDeque<(i32, Instant, Kind)> = VecDeque::with_capacity(a.window);
    let mut res = ConnResult::default();
    let mut out = BytesMut::with_capacity(64 * 1024);
    let (mut rbuf, mut sink) = buffers();
    let mut scan = HeaderScanner::new(client::MAX_REPLY);
    let mut heads = Vec::new();
    let (mut xid, mut seq) = (1i32, 0u64);
    let mut now = Instant::now();
    loop {
        while inflight.len() < a.window.max(1) && now < end {
            let kind = gen.put(seq, xid, &mut out);
            inflight.push_back((xid, now, kind));
            xid = next_xid(xid);
            seq += 1;
        }
        if !out.is_empty() {
            wr.write_all(&out).await?;
            out.clear();
        }
        if inflight.is_empty() {
            break;
        }
        if scan::pump(rd.as_ref(), &mut rbuf, &mut sink, &mut scan, &mut heads).await? == 0 {
            return Err(BenchError::Protocol("connection closed".into()));
        }
        now = Instant::now();
        for h in heads.drain(..) {
            if h.xid == crate::proto::xid::NOTIFICATION {
                continue;
            }
            let Some((x, sent, kind)) = inflight.pop_front() else {
                return Err(BenchError::Protocol(format!("unexpected reply xid {}", h.xid)));
            };
            if x != h.xid {
                return Err(BenchError::Protocol(format!("reply out of order: xid {} for {x}", h.xid)));
            }
            if sent >= warm && sent < end {
                res.count(kind, h.err, now.duration_since(sent));
            }
        }
    }
    let mut c = close_request(xid);
    wr.write_all(&c).await?;
    c.clear();
    // The close reply; a server that drops the connection instead is fine too.
    let _ = tokio::time::timeout(Duration::from_secs(2), rd.as_ref().readable()).await;
    Ok(res)
}

fn close_request(xid: i32) -> BytesMut {
    let mut b = BytesMut::new();
    let req = client::close_session(xid);
    crate::codec::write_frame(&mut b, |o| req.write(o));
    b
}

/// One session's side of the open loop, shared by the pacer thread (which sends) and the
/// session's reader task (which matches replies and sends what the window held back).
struct Slot {
    out: std::net::TcpStream,
    gen: Gen,
    buf: BytesMut,
    xid: i32,
    seq: u64,
    /// (xid, due, kind) in send order.
    inflight: VecDeque<(i32, Instant, Kind)>,
    /// Due times of requests held back because the window was full.
    held: VecDeque<Instant>,
    closed: bool,
}

impl Slot {
    /// Writes the next request, due at `due`. The socket is non-blocking (shared with the
    /// reader task); a request of a few dozen bytes only finds it full if the server stopped
    /// reading, in which case this waits.
    fn send(&mut self, due: Instant) -> Result<(), BenchError> {
        self.buf.clear();
        let kind = self.gen.put(self.seq, self.xid, &mut self.buf);
        self.inflight.push_back((self.xid, due, kind));
        self.xid = next_xid(self.xid);
        self.seq += 1;
        write_all_nb(&mut self.out, &self.buf)
    }
}

fn write_all_nb(out: &mut std::net::TcpStream, mut b: &[u8]) -> Result<(), BenchError> {
    use std::io::Write;
    while !b.is_empty() {
        match out.write(b) {
            Ok(0) => return Err(BenchError::Protocol("connection closed".into())),
            Ok(n) => b = &b[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(Duration::from_micros(50)),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

type Slots = std::sync::Arc<Vec<std::sync::Mutex<Slot>>>;

fn lock(s: &std::sync::Mutex<Slot>) -> std::sync::MutexGuard<'_, Slot> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// The pacer thread: sends every request at its due time, or holds it back when its session's
/// window is full. Returns the send lateness (send time minus due time) of requests due in the
/// measured window that it sent itself, and how many were held back.
fn pace(slots: Slots, s: pacer::Schedule, o: PaceOpts) -> (Latencies, u64, bool) {
    let PaceOpts { window, warm, end, rt, slack } = o;
    pacer::timer_slack(slack);
    let rt = rt && pacer::realtime();
    let mut late = Latencies::default();
    let mut held = 0u64;
    pacer::run(s, end, |n, due| {
        let mut slot = lock(&slots[s.session(n)]);
        if slot.closed {
            return;
        }
        if slot.inflight.len() >= window || !slot.held.is_empty() {
            slot.held.push_back(due);
            held += 1;
            return;
        }
        if slot.send(due).is_err() {
            slot.closed = true;
        }
        if due >= warm {
            late.record(Instant::now().duration_since(due));
        }
    });
    (late, held, rt)
}

#[derive(Clone, Copy)]
struct PaceOpts {
    window: usize,
    warm: Instant,
    end: Instant,
    rt: bool,
    slack: Duration,
}

/// The reader task of one open-loop session: counts each reply's latency from its due time and
/// sends held-back requests as the window opens. Ends once the pacer is done and nothing is in
/// flight.
async fn reader(
    slots: Slots,
    k: usize,
    stream: tokio::net::TcpStream,
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
    window: usize,
    warm: Instant,
    end: Instant,
) -> Result<ConnResult, BenchError> {
    use std::sync::atomic::Ordering;
    let mut res = ConnResult::default();
    let (mut rbuf, mut sink) = buffers();
    let mut scan = HeaderScanner::new(client::MAX_REPLY);
    let mut heads = Vec::new();
    let mut close_xid = None;
    loop {
        if close_xid.is_none() && done.load(Ordering::Acquire) {
            let mut slot = lock(&slots[k]);
            if slot.inflight.is_empty() && slot.held.is_empty() {
                let x = slot.xid;
                slot.closed = true;
                let c = close_request(x);
                // A failed close only leaves the session to expire.
                if write_all_nb(&mut slot.out, &c).is_err() {
                    break;
                }
                close_xid = Some(x);
            }
        }
        let pumped = scan::pump(&stream, &mut rbuf, &mut sink, &mut scan, &mut heads);
        let n = match tokio::time::timeout(Duration::from_millis(50), pumped).await {
            Err(_) => continue,
            Ok(r) => r?,
        };
        if n == 0 {
            if close_xid.is_some() {
                break;
            }
            return Err(BenchError::Protocol("connection closed".into()));
        }
        if heads.is_empty() {
            continue;
        }
        let now = Instant::now();
        let mut slot = lock(&slots[k]);
        for h in heads.drain(..) {
            if h.xid == crate::proto::xid::NOTIFICATION {
                continue;
            }
            if Some(h.xid) == close_xid {
                return Ok(res);
            }
            let Some((x, due, kind)) = slot.inflight.pop_front() else {
                return Err(BenchError::Protocol(format!("unexpected reply xid {}", h.xid)));
            };
            if x != h.xid {
                return Err(BenchError::Protocol(format!("reply out of order: xid {} for {x}", h.xid)));
            }
            if due >= warm && due < end {
                res.count(kind, h.err, now.duration_since(due));
            }
        }
        while slot.inflight.len() < window {
            let Some(due) = slot.held.pop_front() else { break };
            slot.send(due)?;
        }
    }
    Ok(res)
}

/// Open loop at `a.rate` requests/s in total: sessions connect, the pacer thread sends.
async fn open_loop(
    a: &RwArgs,
    mix: Mix,
    start: Instant,
    warm: Instant,
    end: Instant,
) -> Result<OpenResult, BenchError> {
    let mut slots = Vec::new();
    let mut readers = Vec::new();
    for k in 0..a.connections.max(1) {
        let s = Conn::open(a.target.host(k), 30_000).await?.into_stream()?.into_std()?;
        let out = s.try_clone()?;
        readers.push(tokio::net::TcpStream::from_std(s)?);
        slots.push(std::sync::Mutex::new(Slot {
            out,
            gen: Gen::new(a, mix, k),
            buf: BytesMut::with_capacity(1024),
            xid: 1,
            seq: 0,
            inflight: VecDeque::with_capacity(a.window),
            held: VecDeque::new(),
            closed: false,
        }));
    }
    let slots: Slots = std::sync::Arc::new(slots);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sched = pacer::Schedule { t0: start, rate: a.rate, sessions: slots.len() };
    let window = a.window.max(1);
    let rt = a.pacer_rt;
    let slack = Duration::from_secs_f64(a.pace_slack_us.max(0.001) / 1e6);
    let pacer = {
        let (slots, done) = (slots.clone(), done.clone());
        std::thread::Builder::new().name("zkr-bench-pacer".into()).spawn(move || {
            let r = pace(slots, sched, PaceOpts { window, warm, end, rt, slack });
            done.store(true, std::sync::atomic::Ordering::Release);
            r
        })?
    };
    let mut tasks = Vec::new();
    for (k, s) in readers.into_iter().enumerate() {
        tasks.push(tokio::spawn(reader(slots.clone(), k, s, done.clone(), window, warm, end)));
    }
    Ok(OpenResult { pacer, tasks })
}

struct OpenResult {
    pacer: std::thread::JoinHandle<(Latencies, u64, bool)>,
    tasks: Vec<tokio::task::JoinHandle<Result<ConnResult, BenchError>>>,
}

pub async fn run(a: RwArgs, mix: Mix) -> Result<(), BenchError> {
    setup(&a, mix).await?;
    let start = Instant::now() + Duration::from_millis(200);
    let warm = start + Duration::from_secs_f64(a.warmup_secs);
    let end = warm + Duration::from_secs_f64(a.secs);
    let (tasks, pacer) = if a.rate > 0.0 {
        let o = open_loop(&a, mix, start, warm, end).await?;
        (o.tasks, Some(o.pacer))
    } else {
        let tasks = (0..a.connections.max(1)).map(|k| tokio::spawn(closed(a.clone(), mix, k, warm, end))).collect();
        (tasks, None)
    };
    let me = std::process::id();
    tokio::time::sleep_until(warm.into()).await;
    let (before, me_before) = (a.target.sample(), stats::sample(me));
    tokio::time::sleep_until(end.into()).await;
    let (after, me_after) = (a.target.sample(), stats::sample(me));
    let mut total = ConnResult::default();
    let mut failed = 0;
    for t in tasks {
        match t.await.map_err(|e| BenchError::Protocol(e.to_string()))? {
            Ok(r) => total.add(r),
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
        .server(before, after)
        .server_per_op(before, after, total.ops);
    if let (Some(b), Some(e)) = (me_before, me_after) {
        s.f("loader_cpu_pct", stats::cpu_pct(&b, &e));
    }
    if let Some(p) = pacer {
        let (mut late, held, rt) = p.join().map_err(|_| BenchError::Protocol("pacer thread panicked".into()))?;
        // Send time minus due time of the requests the pacer sent itself: the loader's own
        // share of the latency above (held = requests that waited for a full window instead).
        s.lat("pace_late", &mut late).kv("held", held).kv("pacer_rt", u8::from(rt));
    }
    s.print();
    Ok(())
}
