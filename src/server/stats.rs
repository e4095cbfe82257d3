//! Counters behind the four-letter words, the AdminServer and `/metrics`: server-wide packet
//! and latency figures (ZooKeeper's `ServerStats`), per-connection figures (`ServerCnxn`'s
//! `cons` fields), and per-op latency histograms.
//!
//! Connections update their own counters with atomics; nothing here is owned by the core, so
//! reading them never waits for it. `srst` / `crst` reset them as ZooKeeper does.

use crate::proto::OpCode;
use crate::session::ConnId;
use dashmap::DashMap;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Milliseconds since the epoch (ZooKeeper's `Time.currentWallTime`).
pub fn wall_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// min/avg/max of a latency in ms, as `ServerStats` and `ServerCnxn` keep them. ZooKeeper
/// reports min as 0 while nothing was measured (its `Long.MAX_VALUE` sentinel is hidden).
#[derive(Debug)]
pub struct MinAvgMax {
    min: AtomicI64,
    max: AtomicI64,
    total: AtomicI64,
    count: AtomicI64,
}

impl Default for MinAvgMax {
    fn default() -> Self {
        MinAvgMax {
            min: AtomicI64::new(i64::MAX),
            max: AtomicI64::new(0),
            total: AtomicI64::new(0),
            count: AtomicI64::new(0),
        }
    }
}

impl MinAvgMax {
    pub fn add(&self, v: i64) {
        self.min.fetch_min(v, Ordering::Relaxed);
        self.max.fetch_max(v, Ordering::Relaxed);
        self.total.fetch_add(v, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }
    pub fn reset(&self) {
        self.min.store(i64::MAX, Ordering::Relaxed);
        self.max.store(0, Ordering::Relaxed);
        self.total.store(0, Ordering::Relaxed);
        self.count.store(0, Ordering::Relaxed);
    }
    pub fn min(&self) -> i64 {
        let m = self.min.load(Ordering::Relaxed);
        if m == i64::MAX {
            0
        } else {
            m
        }
    }
    pub fn max(&self) -> i64 {
        self.max.load(Ordering::Relaxed)
    }
    pub fn count(&self) -> i64 {
        self.count.load(Ordering::Relaxed)
    }
    pub fn total(&self) -> i64 {
        self.total.load(Ordering::Relaxed)
    }
    /// Average as a double (server stats: `Latency min/avg/max: 0/0.5/1`).
    pub fn avg(&self) -> f64 {
        let c = self.count();
        if c == 0 {
            0.0
        } else {
            self.total() as f64 / c as f64
        }
    }
}

/// How many values a [`Reservoir`] keeps (ZooKeeper's `ResettableUniformReservoir.DEFAULT_SIZE`).
const RESERVOIR_SIZE: usize = 4096;

/// A uniform random sample of at most 4096 of the values seen since the last reset (Vitter's
/// algorithm R), from which `mntr` prints p50/p95/p99/p999 as ZooKeeper's
/// `AvgMinMaxPercentileCounter` does for `readlatency` and `updatelatency`.
#[derive(Debug)]
pub struct Reservoir {
    seen: AtomicU64,
    values: Box<[AtomicI64]>,
}

impl Default for Reservoir {
    fn default() -> Self {
        Reservoir { seen: AtomicU64::new(0), values: (0..RESERVOIR_SIZE).map(|_| AtomicI64::new(0)).collect() }
    }
}

impl Reservoir {
    pub fn add(&self, v: i64) {
        let n = self.seen.fetch_add(1, Ordering::Relaxed) + 1;
        let slot = if n as usize <= RESERVOIR_SIZE { n - 1 } else { rand::random::<u64>() % n };
        if let Some(cell) = self.values.get(slot as usize) {
            cell.store(v, Ordering::Relaxed);
        }
    }

    pub fn reset(&self) {
        self.seen.store(0, Ordering::Relaxed);
    }

    /// The `q` quantiles of the sample, each rounded as Java's `Math.round` rounds Dropwizard's
    /// `UniformSnapshot.getValue(q)` (linear interpolation at q·(n+1)); 0 for an empty sample.
    pub fn quantiles(&self, qs: &[f64]) -> Vec<i64> {
        let n = (self.seen.load(Ordering::Relaxed) as usize).min(RESERVOIR_SIZE);
        let mut v: Vec<i64> = self.values[..n].iter().map(|c| c.load(Ordering::Relaxed)).collect();
        v.sort_unstable();
        qs.iter()
            .map(|&q| {
                if v.is_empty() {
                    return 0;
                }
                let pos = q * (v.len() + 1) as f64;
                let i = pos as usize;
                let x = if i < 1 {
                    v[0] as f64
                } else if i >= v.len() {
                    v[v.len() - 1] as f64
                } else {
                    let (lo, hi) = (v[i - 1] as f64, v[i] as f64);
                    lo + (pos - pos.floor()) * (hi - lo)
                };
                (x + 0.5).floor() as i64
            })
            .collect()
    }
}

/// min/avg/max plus percentiles: ZooKeeper's `AvgMinMaxPercentileCounter`.
#[derive(Debug, Default)]
pub struct Summary {
    pub stats: MinAvgMax,
    pub sample: Reservoir,
}

impl Summary {
    pub fn add(&self, v: i64) {
        self.stats.add(v);
        self.sample.add(v);
    }
    pub fn reset(&self) {
        self.stats.reset();
        self.sample.reset();
    }
}

/// Upper bounds, in seconds, of the request-latency histogram buckets.
pub const LATENCY_BUCKETS: &[f64] = &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];

/// A Prometheus histogram with fixed buckets (counts are per bucket, summed on export).
#[derive(Debug)]
pub struct Histogram {
    buckets: Vec<AtomicU64>,
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: LATENCY_BUCKETS.iter().map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }
}

impl Histogram {
    pub fn observe_micros(&self, micros: u64) {
        let secs = micros as f64 / 1e6;
        if let Some(i) = LATENCY_BUCKETS.iter().position(|b| secs <= *b) {
            self.buckets[i].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }
    /// Cumulative bucket counts, in the order of `LATENCY_BUCKETS`.
    pub fn cumulative(&self) -> Vec<u64> {
        let mut acc = 0;
        self.buckets
            .iter()
            .map(|b| {
                acc += b.load(Ordering::Relaxed);
                acc
            })
            .collect()
    }
    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }
    pub fn sum_secs(&self) -> f64 {
        self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6
    }
}

/// `FinalRequestProcessor`'s `lastOp` names, shown by `cons` as `lop=`.
pub fn last_op_name(op: OpCode) -> &'static str {
    use OpCode::*;
    match op {
        Ping => "PING",
        CreateSession => "SESS",
        Multi => "MULT",
        MultiRead => "MLTR",
        Create | Create2 | CreateTtl | CreateContainer => "CREA",
        Delete | DeleteContainer => "DELE",
        SetData => "SETD",
        Reconfig => "RECO",
        SetAcl => "SETA",
        CloseSession => "CLOS",
        Sync => "SYNC",
        Check => "CHEC",
        Exists => "EXIS",
        GetData => "GETD",
        SetWatches => "SETW",
        SetWatches2 => "STW2",
        AddWatch => "ADDW",
        GetAcl => "GETA",
        GetChildren | GetChildren2 => "GETC",
        GetAllChildrenNumber => "GETACN",
        CheckWatches => "CHKW",
        RemoveWatches => "REMW",
        GetEphemerals => "GETE",
        WhoAmI => "HOMI",
        Auth | Sasl | Notification | Error => "NA",
    }
}

/// The label used for an op in `/metrics` (ZooKeeper's `Request.op2String`, lower camel case).
pub fn op_label(op: OpCode) -> &'static str {
    use OpCode::*;
    match op {
        Notification => "notification",
        Create => "create",
        Delete => "delete",
        Exists => "exists",
        GetData => "getData",
        SetData => "setData",
        GetAcl => "getACL",
        SetAcl => "setACL",
        GetChildren => "getChildren",
        Sync => "sync",
        Ping => "ping",
        GetChildren2 => "getChildren2",
        Check => "check",
        Multi => "multi",
        Create2 => "create2",
        Reconfig => "reconfig",
        CheckWatches => "checkWatches",
        RemoveWatches => "removeWatches",
        CreateContainer => "createContainer",
        DeleteContainer => "deleteContainer",
        CreateTtl => "createTtl",
        MultiRead => "multiRead",
        Auth => "auth",
        SetWatches => "setWatches",
        Sasl => "sasl",
        GetEphemerals => "getEphemerals",
        GetAllChildrenNumber => "getAllChildrenNumber",
        SetWatches2 => "setWatches2",
        AddWatch => "addWatch",
        WhoAmI => "whoAmI",
        CreateSession => "createSession",
        CloseSession => "closeSession",
        Error => "error",
    }
}

/// Ops with a latency histogram, in `/metrics` order.
pub const TIMED_OPS: &[OpCode] = &[
    OpCode::Create,
    OpCode::Create2,
    OpCode::CreateContainer,
    OpCode::CreateTtl,
    OpCode::Delete,
    OpCode::Exists,
    OpCode::GetData,
    OpCode::SetData,
    OpCode::GetAcl,
    OpCode::SetAcl,
    OpCode::GetChildren,
    OpCode::GetChildren2,
    OpCode::Sync,
    OpCode::Ping,
    OpCode::Check,
    OpCode::Multi,
    OpCode::MultiRead,
    OpCode::Reconfig,
    OpCode::CheckWatches,
    OpCode::RemoveWatches,
    OpCode::Auth,
    OpCode::SetWatches,
    OpCode::SetWatches2,
    OpCode::AddWatch,
    OpCode::GetEphemerals,
    OpCode::GetAllChildrenNumber,
    OpCode::WhoAmI,
    OpCode::Sasl,
    OpCode::CloseSession,
];

/// Reads: their latency also goes to ZooKeeper's `readlatency`, the rest to `updatelatency`.
pub fn is_write(op: OpCode) -> bool {
    use OpCode::*;
    matches!(
        op,
        Create
            | Create2
            | CreateContainer
            | CreateTtl
            | Delete
            | DeleteContainer
            | SetData
            | SetAcl
            | Multi
            | Reconfig
            | CloseSession
            | CreateSession
    )
}

/// One connection's figures (`cons`, `/commands/connections`).
#[derive(Debug)]
pub struct ConnStats {
    pub peer: SocketAddr,
    /// The session this connection serves (0 until the handshake is answered).
    pub session: AtomicI64,
    pub timeout_ms: AtomicI64,
    /// Wall-clock ms when the session was established on this connection.
    pub established_ms: AtomicI64,
    pub received: AtomicU64,
    pub sent: AtomicU64,
    pub latency: MinAvgMax,
    pub last: Mutex<LastResponse>,
    /// Requests read and not yet answered, oldest first: when each arrived and what it was.
    pending: Mutex<VecDeque<(Instant, OpCode)>>,
}

/// What `cons` shows about the last answered request (reset by `crst`).
#[derive(Debug, Clone)]
pub struct LastResponse {
    pub op: &'static str,
    pub cxid: i64,
    pub zxid: i64,
    /// Monotonic ms (ZooKeeper's `Time.currentElapsedTime`).
    pub resp_ms: u64,
    pub latency_ms: i64,
}

impl Default for LastResponse {
    fn default() -> Self {
        LastResponse { op: "NA", cxid: -1, zxid: -1, resp_ms: 0, latency_ms: 0 }
    }
}

impl ConnStats {
    pub fn new(peer: SocketAddr) -> ConnStats {
        ConnStats {
            peer,
            session: AtomicI64::new(0),
            timeout_ms: AtomicI64::new(0),
            established_ms: AtomicI64::new(0),
            received: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            latency: MinAvgMax::default(),
            last: Mutex::new(LastResponse::default()),
            pending: Mutex::new(VecDeque::new()),
        }
    }

    /// The handshake was answered with a session.
    pub fn established(&self, session: i64, timeout_ms: i32) {
        self.session.store(session, Ordering::Relaxed);
        self.timeout_ms.store(timeout_ms as i64, Ordering::Relaxed);
        self.established_ms.store(wall_ms(), Ordering::Relaxed);
    }

    pub fn outstanding(&self) -> usize {
        self.pending.lock().len()
    }

    pub fn reset(&self) {
        self.received.store(0, Ordering::Relaxed);
        self.sent.store(0, Ordering::Relaxed);
        self.latency.reset();
        *self.last.lock() = LastResponse::default();
    }
}

/// Server-wide figures (`srvr`, `mntr`, `/metrics`).
#[derive(Debug)]
pub struct ServerStats {
    pub started: Instant,
    pub started_wall_ms: i64,
    pub packets_received: AtomicU64,
    pub packets_sent: AtomicU64,
    pub bytes_received: AtomicU64,
    pub outstanding: AtomicI64,
    pub auth_failed: AtomicU64,
    pub latency: MinAvgMax,
    pub read_latency: Summary,
    pub update_latency: Summary,
    /// fsync time of the transaction log, ms (ZooKeeper's `fsynctime`).
    pub fsync: MinAvgMax,
    pub fsync_hist: Histogram,
    pub by_op: Vec<(OpCode, Histogram)>,
    pub conns: DashMap<ConnId, Arc<ConnStats>>,
}

impl Default for ServerStats {
    fn default() -> Self {
        ServerStats {
            started: Instant::now(),
            started_wall_ms: wall_ms(),
            packets_received: AtomicU64::new(0),
            packets_sent: AtomicU64::new(0),
            bytes_received: AtomicU64::new(0),
            outstanding: AtomicI64::new(0),
            auth_failed: AtomicU64::new(0),
            latency: MinAvgMax::default(),
            read_latency: Summary::default(),
            update_latency: Summary::default(),
            fsync: MinAvgMax::default(),
            fsync_hist: Histogram::default(),
            by_op: TIMED_OPS.iter().map(|op| (*op, Histogram::default())).collect(),
            conns: DashMap::new(),
        }
    }
}

impl ServerStats {
    pub fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// A packet read from a connection (handshake, request or four-letter word).
    pub fn packet_received(&self, conn: &ConnStats, bytes: usize) {
        self.packets_received.fetch_add(1, Ordering::Relaxed);
        self.bytes_received.fetch_add(bytes as u64, Ordering::Relaxed);
        conn.received.fetch_add(1, Ordering::Relaxed);
    }

    /// A packet written to a connection (reply, notification or handshake answer).
    pub fn packet_sent(&self, conn: &ConnStats) {
        self.packets_sent.fetch_add(1, Ordering::Relaxed);
        conn.sent.fetch_add(1, Ordering::Relaxed);
    }

    /// A request handed to the core: it is outstanding until its reply is written.
    pub fn request_started(&self, conn: &ConnStats, op: OpCode) {
        self.outstanding.fetch_add(1, Ordering::Relaxed);
        conn.pending.lock().push_back((Instant::now(), op));
    }

    /// A reply is being written: the oldest pending request of the connection is answered
    /// (replies leave in request order).
    pub fn request_answered(&self, conn: &ConnStats, cxid: i32, zxid: i64) {
        let Some((at, op)) = conn.pending.lock().pop_front() else {
            return;
        };
        self.outstanding.fetch_sub(1, Ordering::Relaxed);
        let micros = at.elapsed().as_micros() as u64;
        let ms = (micros / 1000) as i64;
        self.latency.add(ms);
        if is_write(op) {
            self.update_latency.add(ms);
        } else {
            self.read_latency.add(ms);
        }
        if let Some((_, h)) = self.by_op.iter().find(|(o, _)| *o == op) {
            h.observe_micros(micros);
        }
        conn.latency.add(ms);
        let mut last = conn.last.lock();
        last.op = last_op_name(op);
        // ZooKeeper keeps the last cxid of client requests only; pings and auth use negative xids.
        if cxid >= 0 {
            last.cxid = cxid as i64;
        }
        last.zxid = zxid;
        last.resp_ms = self.elapsed_ms();
        last.latency_ms = ms;
    }

    /// A connection went away with requests unanswered.
    pub fn conn_closed(&self, id: ConnId) {
        if let Some((_, c)) = self.conns.remove(&id) {
            let n = c.pending.lock().len() as i64;
            self.outstanding.fetch_sub(n, Ordering::Relaxed);
        }
    }

    /// `srst`: packets, failed auths and every latency summary back to zero, as ZooKeeper's
    /// `ServerStats.reset` (which also resets all of `ServerMetrics`: `fsynctime`, `readlatency`…).
    pub fn reset(&self) {
        self.packets_received.store(0, Ordering::Relaxed);
        self.packets_sent.store(0, Ordering::Relaxed);
        self.auth_failed.store(0, Ordering::Relaxed);
        self.latency.reset();
        self.read_latency.reset();
        self.update_latency.reset();
        self.fsync.reset();
    }

    /// `crst`: every connection's figures back to zero.
    pub fn reset_connections(&self) {
        for c in self.conns.iter() {
            c.reset();
        }
    }

    pub fn fsync_done(&self, micros: u64) {
        self.fsync.add((micros / 1000) as i64);
        self.fsync_hist.observe_micros(micros);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservoir_quantiles_interpolate_like_dropwizard() {
        let r = Reservoir::default();
        assert_eq!(r.quantiles(&[0.5, 0.99]), [0, 0]);
        for v in (1..=100).rev() {
            r.add(v);
        }
        // q·(n+1) = 50.5 lies between the 50th and 51st values; Math.round(50.5) = 51.
        assert_eq!(r.quantiles(&[0.5, 0.95, 0.99, 0.999]), [51, 96, 100, 100]);
        for v in 0..10_000 {
            r.add(v % 7);
        }
        let q = r.quantiles(&[0.5, 0.999]);
        assert!(q[1] <= 100 && q[0] <= 6, "{q:?}");
        r.reset();
        assert_eq!(r.quantiles(&[0.5]), [0]);
    }

    #[test]
    fn srst_resets_every_summary() {
        let s = ServerStats::default();
        s.read_latency.add(3);
        s.update_latency.add(5);
        s.fsync.add(2);
        s.auth_failed.store(1, Ordering::Relaxed);
        s.reset();
        assert_eq!(s.read_latency.stats.count() + s.update_latency.stats.count() + s.fsync.count(), 0);
        assert_eq!(s.update_latency.sample.quantiles(&[0.99]), [0]);
        assert_eq!(s.auth_failed.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn latency_moves_and_resets() {
        let s = ServerStats::default();
        let c = Arc::new(ConnStats::new("127.0.0.1:1".parse().unwrap()));
        s.request_started(&c, OpCode::Create);
        assert_eq!(s.outstanding.load(Ordering::Relaxed), 1);
        s.request_answered(&c, 7, 42);
        assert_eq!(s.outstanding.load(Ordering::Relaxed), 0);
        assert_eq!(s.latency.count(), 1);
        let create = &s.by_op.iter().find(|(o, _)| *o == OpCode::Create).unwrap().1;
        assert_eq!(create.count(), 1);
        assert_eq!(c.last.lock().op, "CREA");
        assert_eq!(c.last.lock().cxid, 7);
        s.reset();
        assert_eq!(s.latency.count(), 0);
        c.reset();
        assert_eq!(c.last.lock().cxid, -1);
    }

    #[test]
    fn min_is_zero_when_empty() {
        let m = MinAvgMax::default();
        assert_eq!((m.min(), m.max(), m.avg()), (0, 0, 0.0));
        m.add(3);
        m.add(1);
        assert_eq!((m.min(), m.max(), m.avg()), (1, 3, 2.0));
    }
}
