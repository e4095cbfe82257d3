//! `churn`: a Dubbo registry under provider churn.
//!
//! P provider sessions each register one ephemeral URL node under each of I interfaces'
//! `providers` directories; C consumer sessions each hold a child watch on every providers
//! directory and, on every NodeChildrenChanged, re-list it with getChildren2 (re-arming the
//! watch), as Dubbo's ZookeeperRegistry does. Then providers leave gracefully (closeSession),
//! join, and leave by session expiry (the connection drops, the server expires the session).
//!
//! One change is one provider leaving or joining, i.e. I directories changing. Its time is from
//! the moment the change is made (closeSession or the first create sent) until every consumer has
//! re-listed every one of the I directories and seen the change. For an expiry the server decides
//! when the change happens, so the time is taken from the first notification any consumer gets
//! (`expiry_*`), and the detection delay after the drop is reported apart (`expiry_detect_*`).
//! Changes are made one at a time. With `--server-pid`, the server's CPU time over the graceful
//! rounds divided by the re-lists made in them is `server_cpu_us_per_op` (the changes' own writes
//! and every session's pings are in it too; they are a small share).

use super::client::{self, Conn, Template};
use super::stats::{Latencies, Summary};
use super::{provider_name, BenchError, Target};
use crate::proto::{EventType, OpCode};
use bytes::{Bytes, BytesMut};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, Notify};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, clap::Args)]
pub struct ChurnArgs {
    #[command(flatten)]
    pub target: Target,
    /// Provider sessions.
    #[arg(long, default_value_t = 20)]
    pub providers: usize,
    /// Interfaces each provider registers (one providers directory each).
    #[arg(long, default_value_t = 10)]
    pub interfaces: usize,
    /// Consumer sessions, each watching every providers directory.
    #[arg(long, default_value_t = 100)]
    pub consumers: usize,
    /// Graceful leave + join rounds.
    #[arg(long, default_value_t = 20)]
    pub rounds: usize,
    /// Providers that leave by session expiry (one at a time).
    #[arg(long, default_value_t = 3)]
    pub expiries: usize,
    /// Length of each provider URL node name, bytes.
    #[arg(long, default_value_t = 400)]
    pub name_bytes: usize,
    /// Providers' session timeout, ms (expiry takes this long).
    #[arg(long, default_value_t = 4000)]
    pub provider_timeout_ms: i32,
}

fn dir(iface: usize) -> String {
    format!("/dubbo/org.apache.dubbo.demo.DemoService{iface}/providers")
}

fn node_name(provider: usize, iface: usize, len: usize) -> String {
    provider_name((provider as u64) << 10 | iface as u64, len)
}

/// A change every consumer must observe on every directory.
struct Pending {
    /// The provider's node name in each directory.
    names: Vec<String>,
    /// Whether the nodes must be listed (join) or absent (leave).
    present: bool,
    seen: Vec<bool>,
    left: usize,
    first_event: Option<Instant>,
    done_at: Option<Instant>,
    notify: Arc<Notify>,
}

#[derive(Default)]
struct Tracker {
    pending: Mutex<Vec<Pending>>,
    /// Every consumer's re-lists so far (the server's CPU is divided by those made while it
    /// was sampled).
    relists: AtomicU64,
}

impl Tracker {
    fn event(&self) {
        if let Ok(mut p) = self.pending.lock() {
            for x in p.iter_mut().filter(|x| x.first_event.is_none()) {
                x.first_event = Some(Instant::now());
            }
        }
    }

    fn listed(&self, consumer: usize, iface: usize, ifaces: usize, children: &[&[u8]]) {
        self.relists.fetch_add(1, Ordering::Relaxed);
        let Ok(mut p) = self.pending.lock() else { return };
        for x in p.iter_mut() {
            let slot = consumer * ifaces + iface;
            if x.seen[slot] {
                continue;
            }
            let listed = children.iter().any(|c| *c == x.names[iface].as_bytes());
            if listed == x.present {
                x.seen[slot] = true;
                x.left -= 1;
                if x.left == 0 {
                    x.done_at = Some(Instant::now());
                    x.notify.notify_one();
                }
            }
        }
    }
}

/// What a provider is told to do.
enum Leave {
    Graceful,
    Drop,
}

/// Registers the provider's nodes, then pings until told to leave.
async fn provider(
    a: Arc<ChurnArgs>,
    id: usize,
    ready: oneshot::Sender<Result<(), BenchError>>,
    leave: oneshot::Receiver<Leave>,
) -> Result<(), BenchError> {
    let mut c = match Conn::open(a.target.host(id), a.provider_timeout_ms).await {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(BenchError::Protocol(e.to_string())));
            return Err(e);
        }
    };
    let mut buf = BytesMut::new();
    for i in 0..a.interfaces {
        let req = client::create(
            i as i32 + 1,
            format!("{}/{}", dir(i), node_name(id, i, a.name_bytes)),
            Bytes::new(),
            1,
            OpCode::Create,
        );
        crate::codec::write_frame(&mut buf, |o| req.write(o));
    }
    c.send_raw(&buf).await?;
    for _ in 0..a.interfaces {
        let f = c.next_reply().await?;
        if f.header.err != 0 {
            let e = BenchError::Protocol(format!("provider create: error {}", f.header.err));
            let _ = ready.send(Err(BenchError::Protocol(e.to_string())));
            return Err(e);
        }
    }
    let _ = ready.send(Ok(()));
    let ping = Template::new(&client::ping());
    let mut every = tokio::time::interval(Duration::from_millis((a.provider_timeout_ms / 3).max(100) as u64));
    tokio::pin!(leave);
    loop {
        tokio::select! {
            l = &mut leave => {
                return match l {
                    Ok(Leave::Graceful) => {
                        c.send_raw(&{ let mut b = BytesMut::new(); crate::codec::write_frame(&mut b, |o| client::close_session(1000).write(o)); b }).await?;
                        // Wait for the reply or the close; either way the session is gone.
                        let _ = tokio::time::timeout(Duration::from_secs(30), c.next_reply()).await;
                        Ok(())
                    }
                    // Dropping the connection without closeSession: the session expires later.
                    Ok(Leave::Drop) | Err(_) => Ok(()),
                };
            }
            _ = every.tick() => {
                buf.clear();
                ping.put(crate::proto::xid::PING, &mut buf);
                c.send_raw(&buf).await?;
            }
            f = c.next_frame() => { f?; }
        }
    }
}

/// Watches every providers directory and re-lists it on each child event.
async fn consumer(
    a: Arc<ChurnArgs>,
    id: usize,
    tracker: Arc<Tracker>,
    ready: oneshot::Sender<()>,
    stop: CancellationToken,
) -> Result<u64, BenchError> {
    let mut c = Conn::open(a.target.host(id), 30_000).await?;
    let lists: Vec<Template> =
        (0..a.interfaces).map(|i| Template::new(&client::path_watch(0, OpCode::GetChildren2, &dir(i), true))).collect();
    let ping = Template::new(&client::ping());
    let mut inflight: VecDeque<(i32, usize)> = VecDeque::new();
    let mut buf = BytesMut::new();
    let mut xid = 1;
    for (i, t) in lists.iter().enumerate() {
        t.put(xid, &mut buf);
        inflight.push_back((xid, i));
        xid += 1;
    }
    c.send_raw(&buf).await?;
    let mut ready = Some(ready);
    let mut relists = 0u64;
    let mut every = tokio::time::interval(Duration::from_secs(5));
    loop {
        let f = tokio::select! {
            _ = stop.cancelled() => break,
            _ = every.tick() => {
                buf.clear();
                ping.put(crate::proto::xid::PING, &mut buf);
                c.send_raw(&buf).await?;
                continue;
            }
            f = c.next_frame() => f?,
        };
        match f.header.xid {
            crate::proto::xid::NOTIFICATION => {
                let ev = client::event(&f.body)?;
                if ev.event_type != EventType::NodeChildrenChanged as i32 {
                    continue;
                }
                tracker.event();
                let Some(i) = (0..a.interfaces).find(|i| dir(*i) == ev.path) else { continue };
                buf.clear();
                lists[i].put(xid, &mut buf);
                inflight.push_back((xid, i));
                xid += 1;
                c.send_raw(&buf).await?;
            }
            crate::proto::xid::PING => {}
            x => {
                let Some((want, i)) = inflight.pop_front() else {
                    return Err(BenchError::Protocol(format!("unexpected reply xid {x}")));
                };
                if want != x || f.header.err != 0 {
                    return Err(BenchError::Protocol(format!(
                        "getChildren2: xid {x} (wanted {want}) error {}",
                        f.header.err
                    )));
                }
                let children = client::children(&f.body)
                    .ok_or_else(|| BenchError::Protocol("undecodable getChildren2 reply".into()))?;
                relists += 1;
                tracker.listed(id, i, a.interfaces, &children);
                if inflight.is_empty() {
                    if let Some(r) = ready.take() {
                        let _ = r.send(());
                    }
                }
            }
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(10), c.call(&client::close_session(xid))).await;
    Ok(relists)
}

struct Live {
    id: usize,
    leave: oneshot::Sender<Leave>,
    task: tokio::task::JoinHandle<Result<(), BenchError>>,
}

async fn start_provider(a: &Arc<ChurnArgs>, id: usize) -> Result<Live, BenchError> {
    let (rtx, rrx) = oneshot::channel();
    let (ltx, lrx) = oneshot::channel();
    let task = tokio::spawn(provider(a.clone(), id, rtx, lrx));
    rrx.await.map_err(|_| BenchError::Protocol("provider task ended".into()))??;
    Ok(Live { id, leave: ltx, task })
}

/// The next provider whose session is still alive; dead ones are counted in `lost`.
fn next_alive(live: &mut VecDeque<Live>, lost: &mut u64) -> Option<Live> {
    while let Some(p) = live.pop_front() {
        if !p.task.is_finished() {
            return Some(p);
        }
        *lost += 1;
    }
    None
}

/// Registers a change, makes it with `act`, and waits until every consumer has seen it.
/// Returns (made at, first event, done at), or None when it was not seen within `limit`.
async fn observe(
    a: &ChurnArgs,
    tracker: &Tracker,
    provider: usize,
    present: bool,
    limit: Duration,
    act: impl std::future::Future<Output = Result<(), BenchError>>,
) -> Result<Option<(Instant, Instant, Instant)>, BenchError> {
    let notify = Arc::new(Notify::new());
    let slots = a.consumers * a.interfaces;
    {
        let mut p = tracker.pending.lock().map_err(|_| BenchError::Protocol("tracker poisoned".into()))?;
        p.clear();
        p.push(Pending {
            names: (0..a.interfaces).map(|i| node_name(provider, i, a.name_bytes)).collect(),
            present,
            seen: vec![false; slots],
            left: slots,
            first_event: None,
            done_at: None,
            notify: notify.clone(),
        });
    }
    let t0 = Instant::now();
    act.await?;
    let finished = tokio::time::timeout(limit, notify.notified()).await.is_ok();
    let mut p = tracker.pending.lock().map_err(|_| BenchError::Protocol("tracker poisoned".into()))?;
    let x = p.pop();
    Ok(match x {
        Some(Pending { first_event: Some(f), done_at: Some(d), .. }) if finished => Some((t0, f, d)),
        _ => None,
    })
}

pub async fn run(a: ChurnArgs) -> Result<(), BenchError> {
    let a = Arc::new(a);
    let mut paths = vec!["/dubbo".to_owned()];
    for i in 0..a.interfaces {
        let d = dir(i);
        paths.push(d.trim_end_matches("/providers").to_owned());
        paths.push(d);
    }
    client::ensure_paths(a.target.host(0), &paths).await?;
    let mut live = VecDeque::new();
    for id in 0..a.providers {
        live.push_back(start_provider(&a, id).await?);
    }
    let tracker = Arc::new(Tracker::default());
    let stop = CancellationToken::new();
    let mut consumers = Vec::new();
    let mut readies = Vec::new();
    for id in 0..a.consumers {
        let (tx, rx) = oneshot::channel();
        consumers.push(tokio::spawn(consumer(a.clone(), id, tracker.clone(), tx, stop.clone())));
        readies.push(rx);
    }
    for r in readies {
        match tokio::time::timeout(Duration::from_secs(120), r).await {
            Ok(Ok(())) => {}
            _ => return Err(BenchError::Protocol("a consumer failed before its first listing".into())),
        }
    }
    let limit = Duration::from_secs(60);
    let (mut leave, mut join, mut expiry, mut detect) =
        (Latencies::default(), Latencies::default(), Latencies::default(), Latencies::default());
    let mut errors = 0u64;
    // A provider whose session the server expired on its own (its pings came too late, e.g. a
    // loader starved of CPU) is counted, not waited for.
    let mut lost = 0u64;
    // The server's CPU over the graceful rounds, per re-list: each change is I writes (or one
    // closeSession) and C x I re-lists, so the re-lists dominate; pings run throughout.
    let (cpu_before, relists_before) = (a.target.sample(), tracker.relists.load(Ordering::Relaxed));
    for round in 0..a.rounds {
        let Some(p) = next_alive(&mut live, &mut lost) else { break };
        let Live { id, leave: tx, task } = p;
        let r = observe(&a, &tracker, id, false, limit, async move {
            let _ = tx.send(Leave::Graceful);
            Ok(())
        })
        .await?;
        match r {
            Some((t0, _, d)) => leave.record(d - t0),
            None => errors += 1,
        }
        let _ = task.await;
        // Joining providers get fresh ids after the first ones.
        let id = a.providers + round;
        let mut started = None;
        let r = observe(&a, &tracker, id, true, limit, async {
            started = Some(start_provider(&a, id).await?);
            Ok(())
        })
        .await?;
        match r {
            Some((t0, _, d)) => join.record(d - t0),
            None => errors += 1,
        }
        live.extend(started);
    }
    let cpu_after = a.target.sample();
    let measured_relists = tracker.relists.load(Ordering::Relaxed) - relists_before;
    let expiry_limit = limit + Duration::from_millis(a.provider_timeout_ms as u64 * 3);
    for _ in 0..a.expiries {
        let Some(p) = next_alive(&mut live, &mut lost) else { break };
        let Live { id, leave: tx, task } = p;
        let r = observe(&a, &tracker, id, false, expiry_limit, async move {
            let _ = tx.send(Leave::Drop);
            let _ = task.await;
            Ok(())
        })
        .await?;
        match r {
            Some((t0, f, d)) => {
                expiry.record(d - f);
                detect.record(f - t0);
            }
            None => errors += 1,
        }
    }
    stop.cancel();
    let mut relists = 0;
    for c in consumers {
        match tokio::time::timeout(Duration::from_secs(30), c).await {
            Ok(Ok(Ok(n))) => relists += n,
            Ok(Ok(Err(e))) => {
                eprintln!("zkr bench churn: consumer failed: {e}");
                errors += 1;
            }
            _ => errors += 1,
        }
    }
    for p in live {
        let _ = p.leave.send(Leave::Graceful);
        let _ = p.task.await;
    }
    let mut s = Summary::new("churn");
    s.kv("providers", a.providers)
        .kv("interfaces", a.interfaces)
        .kv("consumers", a.consumers)
        .kv("watches", a.consumers * a.interfaces)
        .kv("changes", leave.len() + join.len() + expiry.len())
        .lat("leave", &mut leave)
        .lat("join", &mut join)
        .lat("expiry", &mut expiry)
        .lat("expiry_detect", &mut detect)
        .kv("relists", relists)
        .kv("providers_lost", lost)
        .kv("errors", errors + lost)
        .kv("measured_relists", measured_relists)
        .server_per_op(cpu_before, cpu_after, measured_relists);
    s.print();
    Ok(())
}
