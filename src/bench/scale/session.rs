//! One session of the scale workload, as a Dubbo provider or consumer runs it over the Java
//! client: it pings at a third of its timeout, re-lists a providers directory on each child
//! event (re-arming the watch), and after a connection loss waits a random moment below a second,
//! tries the next member, re-attaches with its id, password and last zxid, and re-sets its
//! watches with SetWatches, as ClientCnxn does. Requests lost with the connection are sent again.

use super::super::client::{self, Attached, Conn, Resume};
use super::super::BenchError;
use super::track::{Counters, Tracker};
use super::Topology;
use crate::codec::write_frame;
use crate::proto::{xid, ErrorCode, EventType, OpCode, Request, RequestBody, SetWatches};
use bytes::{Bytes, BytesMut};
use rand::Rng;
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

/// What every session shares.
pub struct Shared {
    pub hosts: Vec<String>,
    pub timeout_ms: i32,
    pub topo: Topology,
    pub tracker: Tracker,
    pub counters: Counters,
    pub stop: CancellationToken,
}

pub enum Role {
    /// Provider `p` in its `gen`th registration; `release` is its place in the rolling release
    /// plan, whose changes it marks as made; `leave` tells it to close its session.
    Provider { p: usize, gen: u64, release: Option<usize>, leave: Option<oneshot::Receiver<()>> },
    /// Consumer `c`: lists its services once `go` turns true.
    Consumer { c: usize, go: watch::Receiver<bool>, watched: Option<oneshot::Sender<()>> },
}

/// A request whose reply is awaited (replies come in request order).
#[derive(Clone, Copy)]
enum Sent {
    Create(usize),
    List(usize),
    Close,
}

struct Session<'a> {
    sh: &'a Shared,
    conn: Conn,
    host: usize,
    resume: Resume,
    xid: i32,
    inflight: VecDeque<(i32, Sent)>,
    ping_sent: Option<Instant>,
    /// The consumer's services, or the provider's.
    services: Vec<usize>,
    names: Vec<String>,
    watching: bool,
    /// The consumer's number (providers never list).
    consumer: usize,
    /// The provider's place in the rolling release.
    release: Option<usize>,
}

/// Runs one session until the workload stops (or it leaves, or the server expires it); `ready`
/// fires once a provider has registered or a consumer is connected.
pub async fn run(sh: Arc<Shared>, k: usize, role: Role, ready: oneshot::Sender<()>) {
    if let Err(e) = session(&sh, k, role, ready).await {
        sh.counters.error(format!("session {k}: {e}"));
    }
}

async fn session(sh: &Shared, k: usize, role: Role, ready: oneshot::Sender<()>) -> Result<(), BenchError> {
    let host = k % sh.hosts.len();
    let fresh = Resume { session_id: 0, password: vec![0; 16], last_zxid: 0 };
    let (conn, resp) = match Conn::attach(&sh.hosts[host], sh.timeout_ms, &fresh).await? {
        Attached::Live(c, r) => (c, r),
        Attached::Expired => return Err(BenchError::Protocol("session refused".into())),
    };
    sh.counters.on_member[host].fetch_add(1, Ordering::SeqCst);
    let resume = Resume { session_id: resp.session_id, password: resp.password, last_zxid: 0 };
    let (services, names, consumer) = match &role {
        Role::Provider { p, gen, .. } => {
            let s = sh.topo.provider_services(*p);
            let n = s.iter().map(|s| sh.topo.node_name(*s, *p, *gen)).collect();
            (s, n, usize::MAX)
        }
        Role::Consumer { c, .. } => (sh.topo.consumer_services(*c).to_vec(), Vec::new(), *c),
    };
    let mut s = Session {
        sh,
        conn,
        host,
        resume,
        xid: 1,
        inflight: VecDeque::new(),
        ping_sent: None,
        services,
        names,
        watching: false,
        consumer,
        release: None,
    };
    let ping_every = Duration::from_millis((sh.timeout_ms / 3).max(100) as u64);
    let first = rand::thread_rng().gen_range(Duration::ZERO..ping_every);
    let mut tick = tokio::time::interval_at((Instant::now() + first).into(), ping_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ready = Some(ready);
    match role {
        Role::Provider { gen, release, mut leave, .. } => {
            s.release = release;
            if let (Some(r), 1) = (release, gen) {
                for j in 0..s.services.len() {
                    sh.tracker.made(sh.topo.change_id(r, j, true));
                }
            }
            let mut buf = BytesMut::new();
            for i in 0..s.services.len() {
                s.put_create(i, &mut buf);
            }
            s.send(&buf).await;
            loop {
                tokio::select! {
                    _ = sh.stop.cancelled() => return Ok(()),
                    l = async {
                        match leave.as_mut() {
                            Some(r) => r.await,
                            None => std::future::pending().await,
                        }
                    }, if leave.is_some() => {
                        leave = None;
                        if l.is_ok() {
                            return s.leave().await;
                        }
                    }
                    _ = tick.tick() => s.ping().await,
                    f = s.conn.next_frame() => match f {
                        Ok(f) => {
                            s.handle(f).await?;
                            if !s.inflight.iter().any(|(_, x)| matches!(x, Sent::Create(_))) {
                                if let Some(r) = ready.take() {
                                    let _ = r.send(());
                                }
                            }
                        }
                        Err(_) => {
                            if !s.reconnect().await? {
                                return Ok(());
                            }
                        }
                    },
                }
            }
        }
        Role::Consumer { mut go, mut watched, .. } => {
            if let Some(r) = ready.take() {
                let _ = r.send(());
            }
            loop {
                tokio::select! {
                    _ = sh.stop.cancelled() => return Ok(()),
                    g = async { go.wait_for(|g| *g).await.is_ok() }, if !s.watching => {
                        if !g {
                            return Ok(());
                        }
                        s.watching = true;
                        let mut buf = BytesMut::new();
                        for i in 0..s.services.len() {
                            s.put_list(i, &mut buf);
                        }
                        s.send(&buf).await;
                    }
                    _ = tick.tick() => s.ping().await,
                    f = s.conn.next_frame() => match f {
                        Ok(f) => {
                            s.handle(f).await?;
                            if s.watching && s.inflight.is_empty() {
                                if let Some(w) = watched.take() {
                                    let _ = w.send(());
                                }
                            }
                        }
                        Err(_) => {
                            if !s.reconnect().await? {
                                return Ok(());
                            }
                        }
                    },
                }
            }
        }
    }
}

impl Session<'_> {
    fn next_xid(&mut self) -> i32 {
        self.xid = self.xid.wrapping_add(1).max(1);
        self.xid
    }

    fn put_create(&mut self, i: usize, buf: &mut BytesMut) {
        let x = self.next_xid();
        let path = format!("{}/{}", Topology::dir(self.services[i]), self.names[i]);
        let req = client::create(x, path, Bytes::new(), 1, OpCode::Create);
        write_frame(buf, |o| req.write(o));
        self.inflight.push_back((x, Sent::Create(i)));
    }

    fn put_list(&mut self, i: usize, buf: &mut BytesMut) {
        let x = self.next_xid();
        let req = client::path_watch(x, OpCode::GetChildren2, &Topology::dir(self.services[i]), true);
        write_frame(buf, |o| req.write(o));
        self.inflight.push_back((x, Sent::List(i)));
    }

    /// Sends; a failed write is noticed by the next read, which re-attaches and sends again.
    async fn send(&mut self, buf: &[u8]) {
        let _ = self.conn.send_raw(buf).await;
    }

    async fn ping(&mut self) {
        if self.ping_sent.is_some() {
            return;
        }
        let mut b = BytesMut::new();
        let req = client::ping();
        write_frame(&mut b, |o| req.write(o));
        self.ping_sent = Some(Instant::now());
        self.send(&b).await;
    }

    /// A provider leaving in a rolling release: its nodes' removal is timed from the close.
    async fn leave(&mut self) -> Result<(), BenchError> {
        if let Some(r) = self.release {
            for j in 0..self.services.len() {
                self.sh.tracker.made(self.sh.topo.change_id(r, j, false));
            }
        }
        let x = self.next_xid();
        let mut b = BytesMut::new();
        write_frame(&mut b, |o| client::close_session(x).write(o));
        self.inflight.push_back((x, Sent::Close));
        self.send(&b).await;
        let _ = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(f) = self.conn.next_frame().await {
                if f.header.xid == x {
                    break;
                }
            }
        })
        .await;
        self.sh.counters.on_member[self.host].fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }

    async fn handle(&mut self, f: client::Frame) -> Result<(), BenchError> {
        match f.header.xid {
            xid::NOTIFICATION => {
                let ev = client::event(&f.body)?;
                if ev.event_type == EventType::NodeChildrenChanged as i32 {
                    if let Some(i) = self.services.iter().position(|s| Topology::dir(*s) == ev.path) {
                        let mut buf = BytesMut::new();
                        self.put_list(i, &mut buf);
                        self.send(&buf).await;
                    }
                }
            }
            xid::PING => {
                if let Some(t) = self.ping_sent.take() {
                    self.sh.counters.ping(t.elapsed());
                }
            }
            xid::SET_WATCHES => {
                if f.header.err != 0 {
                    return Err(BenchError::Protocol(format!("setWatches: error {}", f.header.err)));
                }
            }
            x => {
                self.resume.last_zxid = self.resume.last_zxid.max(f.header.zxid);
                let Some((want, sent)) = self.inflight.pop_front() else {
                    return Err(BenchError::Protocol(format!("unexpected reply xid {x}")));
                };
                if want != x {
                    return Err(BenchError::Protocol(format!("reply xid {x}, wanted {want}")));
                }
                match sent {
                    Sent::Create(i) => {
                        // A create sent again after a connection loss may already have been applied.
                        if f.header.err != 0 && f.header.err != ErrorCode::NodeExists.code() {
                            return Err(BenchError::Protocol(format!(
                                "create in {}: error {}",
                                Topology::dir(self.services[i]),
                                f.header.err
                            )));
                        }
                    }
                    Sent::List(i) => {
                        if f.header.err != 0 {
                            return Err(BenchError::Protocol(format!("getChildren2: error {}", f.header.err)));
                        }
                        let children = client::children(&f.body)
                            .ok_or_else(|| BenchError::Protocol("undecodable getChildren2 reply".into()))?;
                        self.sh.tracker.listed(self.services[i], self.sh.topo.slot(self.consumer, i), &children);
                    }
                    Sent::Close => {}
                }
            }
        }
        Ok(())
    }

    /// After a connection loss: re-attach to another member. Returns false when the workload
    /// stopped meanwhile or the session expired (counted).
    async fn reconnect(&mut self) -> Result<bool, BenchError> {
        let c = &self.sh.counters;
        c.lost.fetch_add(1, Ordering::SeqCst);
        c.on_member[self.host].fetch_sub(1, Ordering::SeqCst);
        let lost_at = Instant::now();
        let conn = loop {
            let pause = rand::thread_rng().gen_range(0..1000);
            tokio::select! {
                _ = self.sh.stop.cancelled() => {
                    c.lost.fetch_sub(1, Ordering::SeqCst);
                    return Ok(false);
                }
                _ = tokio::time::sleep(Duration::from_millis(pause)) => {}
            }
            self.host = (self.host + 1) % self.sh.hosts.len();
            let tried = Instant::now();
            match Conn::attach(&self.sh.hosts[self.host], self.sh.timeout_ms, &self.resume).await {
                Ok(Attached::Live(conn, _)) => {
                    c.handshakes.lock().record(tried.elapsed());
                    break conn;
                }
                Ok(Attached::Expired) => {
                    c.expired.fetch_add(1, Ordering::SeqCst);
                    c.lost.fetch_sub(1, Ordering::SeqCst);
                    return Ok(false);
                }
                Err(_) => continue,
            }
        };
        self.conn = conn;
        c.on_member[self.host].fetch_add(1, Ordering::SeqCst);
        c.lost.fetch_sub(1, Ordering::SeqCst);
        c.reconnects.lock().record(lost_at.elapsed());
        self.ping_sent = None;
        let mut buf = BytesMut::new();
        if self.watching {
            let dirs = self.services.iter().map(|s| Topology::dir(*s)).collect();
            let req = Request {
                xid: xid::SET_WATCHES,
                op: OpCode::SetWatches,
                body: RequestBody::SetWatches(SetWatches {
                    relative_zxid: self.resume.last_zxid,
                    child: dirs,
                    ..Default::default()
                }),
            };
            write_frame(&mut buf, |o| req.write(o));
        }
        for (_, sent) in std::mem::take(&mut self.inflight) {
            match sent {
                Sent::Create(i) => self.put_create(i, &mut buf),
                Sent::List(i) => self.put_list(i, &mut buf),
                Sent::Close => return Ok(false),
            }
        }
        self.send(&buf).await;
        Ok(true)
    }
}
