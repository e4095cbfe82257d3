//! `sessions`: a session storm. Opens COUNT sessions, keeps each pinging at the Java client's
//! cadence (a third of the session timeout when idle), and measures the server's CPU and RSS over
//! a window while they are all held.

use super::client::{self, Conn, Template};
use super::stats::{Latencies, Summary};
use super::{BenchError, Target};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

#[derive(Debug, Clone, clap::Args)]
pub struct SessionsArgs {
    #[command(flatten)]
    pub target: Target,
    #[arg(long, default_value_t = 10_000)]
    pub count: usize,
    /// Session timeout asked for, ms.
    #[arg(long, default_value_t = 30_000)]
    pub timeout_ms: i32,
    /// Ping interval per session, ms (the Java client pings after a third of the timeout idle).
    #[arg(long, default_value_t = 10_000)]
    pub ping_ms: u64,
    /// Handshakes in flight while opening.
    #[arg(long, default_value_t = 200)]
    pub opening: usize,
    /// Seconds the server is measured once every session is open.
    #[arg(long, default_value_t = 30.0)]
    pub secs: f64,
}

/// Pings at the cadence until `end`, then holds the session open until `release` fires: the
/// closes are not part of the measured steady state, and the window must not see them.
async fn hold(
    mut c: Conn,
    ping_every: Duration,
    first: Instant,
    end: Instant,
    pings: Arc<AtomicU64>,
    mut release: tokio::sync::watch::Receiver<bool>,
) -> Result<Latencies, BenchError> {
    let ping = Template::new(&client::ping());
    let mut buf = bytes::BytesMut::new();
    let mut lat = Latencies::default();
    let mut next = first;
    while next < end {
        tokio::time::sleep_until(next.into()).await;
        buf.clear();
        ping.put(crate::proto::xid::PING, &mut buf);
        let sent = Instant::now();
        c.send_raw(&buf).await?;
        let f = c.next_reply().await?;
        if f.header.xid != crate::proto::xid::PING || f.header.err != 0 {
            return Err(BenchError::Protocol(format!("bad ping reply: {:?}", f.header)));
        }
        lat.record(sent.elapsed());
        pings.fetch_add(1, Ordering::Relaxed);
        next += ping_every;
    }
    let _ = release.wait_for(|go| *go).await;
    let _ = tokio::time::timeout(Duration::from_secs(10), c.call(&client::close_session(1))).await;
    Ok(lat)
}

pub async fn run(a: SessionsArgs) -> Result<(), BenchError> {
    let base = a.target.sample();
    let gate = Arc::new(Semaphore::new(a.opening.max(1)));
    let opened = Instant::now();
    let mut opens = Vec::with_capacity(a.count);
    for k in 0..a.count {
        let (gate, server, t) = (gate.clone(), a.target.host(k).to_owned(), a.timeout_ms);
        opens.push(tokio::spawn(async move {
            let _p = gate.acquire_owned().await;
            Conn::open(&server, t).await
        }));
    }
    let mut conns = Vec::with_capacity(a.count);
    let mut errors = 0u64;
    for o in opens {
        match o.await.map_err(|e| BenchError::Protocol(e.to_string()))? {
            Ok(c) => conns.push(c),
            Err(e) => {
                if errors == 0 {
                    eprintln!("zkr bench sessions: open failed: {e}");
                }
                errors += 1;
            }
        }
    }
    let open_secs = opened.elapsed().as_secs_f64();
    // Every session pings once per interval, spread evenly over it; the window starts after one
    // full round so that it sees the steady state.
    let ping_every = Duration::from_millis(a.ping_ms.max(1));
    let start = Instant::now();
    let warm = start + ping_every;
    let end = warm + Duration::from_secs_f64(a.secs);
    let pings = Arc::new(AtomicU64::new(0));
    let n = conns.len().max(1);
    let (release, released) = tokio::sync::watch::channel(false);
    let mut tasks = Vec::with_capacity(n);
    for (i, c) in conns.into_iter().enumerate() {
        let first = start + ping_every.mul_f64(i as f64 / n as f64);
        tasks.push(tokio::spawn(hold(c, ping_every, first, end, pings.clone(), released.clone())));
    }
    tokio::time::sleep_until(warm.into()).await;
    let before = a.target.sample();
    let pings_before = pings.load(Ordering::Relaxed);
    tokio::time::sleep_until(end.into()).await;
    let after = a.target.sample();
    let pings_in_window = pings.load(Ordering::Relaxed) - pings_before;
    // Only now may the sessions close: 10,000 closeSession txns (each fsynced) inside the window
    // were once most of the CPU it reported.
    let _ = release.send(true);
    let mut lat = Latencies::default();
    for t in tasks {
        match t.await.map_err(|e| BenchError::Protocol(e.to_string()))? {
            Ok(l) => lat.merge(l),
            Err(e) => {
                if errors == 0 {
                    eprintln!("zkr bench sessions: session failed: {e}");
                }
                errors += 1;
            }
        }
    }
    let mut s = Summary::new("sessions");
    s.kv("count", a.count)
        .kv("open", n)
        .f("open_secs", open_secs)
        .kv("ping_ms", a.ping_ms)
        .f("secs", a.secs)
        .kv("pings", pings_in_window)
        .lat("ping", &mut lat)
        .kv("errors", errors)
        .server(before, after);
    if let (Some(b), Some(x)) = (base, after) {
        s.kv("server_rss_base_kb", b.rss_kb);
        s.f("rss_bytes_per_session", (x.rss_kb.saturating_sub(b.rss_kb) * 1024) as f64 / n as f64);
    }
    s.print();
    Ok(())
}
