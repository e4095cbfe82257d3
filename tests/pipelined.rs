//! Pipelined load, checked as a property: each session sends a seeded random mix of every
//! request kind (create, delete, setData, getData/exists/getChildren(2) with and without a
//! watch, multi, multiRead, sync, setWatches, addWatch, removeWatches, auth) with data from a
//! few bytes up to about jute.maxbuffer, all at once without waiting for replies, on its own
//! subtree. A model of that subtree and of the session's watches (ZooKeeper's DataTree and
//! WatchManager rules) says what each reply's error code is and which watch events come right
//! before it. The checker requires:
//! - every reply in xid order, each request answered once, zxids never going back;
//! - every reply's error code as the model says;
//! - exactly the events the model says between a reply and the one before it (so every event
//!   comes before the reply to any later request);
//! - no connection lost.
//!
//! It runs on a standalone server, on an ensemble's leader, follower and observer (several
//! sessions at once), and on a ZooKeeper 3.9 ensemble, which keeps the model honest.
//! A failure prints its seed; `ZKR_PIPELINED_SEED=<seed>` replays it.

use crate::common::cluster::{ensemble_configs, Cluster};
use crate::common::{self, new_session, Raw};
use crate::zab_observer::{zookeeper_39_classpath, Ensemble, Launch};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zkr::proto::{
    xid, Acl, CreateRequest, ErrorCode, MultiOp, OpCode, ReplyHeader, Request, RequestBody, SetWatches, WatcherEvent,
};

const CREATED: i32 = 1;
const DELETED: i32 = 2;
const DATA_CHANGED: i32 = 3;
const CHILDREN_CHANGED: i32 = 4;
/// The subtree's paths, relative to the session's root.
const RELS: [&str; 5] = ["", "/a", "/b", "/a/x", "/b/x"];

/// How a watch is held: one-shot, persistent, persistent-recursive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mode {
    Standard,
    Persistent,
    Recursive,
}

/// What the server holds for one session: the nodes of its subtree and its watches, kept as
/// ZooKeeper's DataTree and WatchManager keep them (exists and getData watches share the data
/// table; addWatch puts a persistent watch in both tables, a recursive one in the data table).
#[derive(Clone, Default)]
struct Model {
    nodes: BTreeSet<String>,
    data: BTreeSet<(String, Mode)>,
    child: BTreeSet<(String, Mode)>,
}

type Events = Vec<(i32, String)>;

fn parent(p: &str) -> &str {
    &p[..p.rfind('/').unwrap_or(0)]
}

fn under(base: &str, p: &str) -> bool {
    p == base || (p.starts_with(base) && p.as_bytes().get(base.len()) == Some(&b'/'))
}

impl Model {
    /// A data-table change at `p`: one event for this session if any of its watches matches.
    fn trigger_data(&mut self, p: &str) -> bool {
        let hit =
            self.data.iter().any(|(w, m)| (w == p && *m != Mode::Recursive) || (*m == Mode::Recursive && under(w, p)));
        self.data.remove(&(p.to_owned(), Mode::Standard));
        hit
    }

    fn trigger_child(&mut self, p: &str) -> bool {
        let hit = self.child.iter().any(|(w, _)| w == p);
        self.child.remove(&(p.to_owned(), Mode::Standard));
        hit
    }

    fn create(&mut self, p: &str, ev: &mut Events) -> i32 {
        if self.nodes.contains(p) {
            return ErrorCode::NodeExists.code();
        }
        if !self.nodes.contains(parent(p)) {
            return ErrorCode::NoNode.code();
        }
        self.nodes.insert(p.to_owned());
        if self.trigger_data(p) {
            ev.push((CREATED, p.to_owned()));
        }
        if self.trigger_child(parent(p)) {
            ev.push((CHILDREN_CHANGED, parent(p).to_owned()));
        }
        0
    }

    fn delete(&mut self, p: &str, ev: &mut Events) -> i32 {
        if !self.nodes.contains(p) {
            return ErrorCode::NoNode.code();
        }
        if self.nodes.iter().any(|n| n != p && under(p, n)) {
            return ErrorCode::NotEmpty.code();
        }
        self.nodes.remove(p);
        // One event for the session, whichever of its tables held the watch.
        let d = self.trigger_data(p);
        let c = self.trigger_child(p);
        if d || c {
            ev.push((DELETED, p.to_owned()));
        }
        if self.trigger_child(parent(p)) {
            ev.push((CHILDREN_CHANGED, parent(p).to_owned()));
        }
        0
    }

    fn set_data(&mut self, p: &str, ev: &mut Events) -> i32 {
        if !self.nodes.contains(p) {
            return ErrorCode::NoNode.code();
        }
        if self.trigger_data(p) {
            ev.push((DATA_CHANGED, p.to_owned()));
        }
        0
    }

    /// True if a one-shot watch may be set on `p` without meeting a persistent one there (the
    /// generator avoids that: ZooKeeper before 3.9 let the later mode replace the earlier).
    fn standard_ok(&self, p: &str) -> bool {
        !self.data.iter().chain(&self.child).any(|(w, m)| w == p && *m != Mode::Standard)
    }

    fn persistent_ok(&self, p: &str) -> bool {
        !self.data.iter().chain(&self.child).any(|(w, _)| w == p)
    }
}

/// What the checker expects of one request's reply.
struct Expect {
    /// The request, for the failure message.
    req: String,
    xid: i32,
    err: i32,
    events: Events,
}

struct Gen {
    rng: StdRng,
    root: String,
    model: Model,
    max_data: usize,
    next_xid: i32,
}

impl Gen {
    fn new(seed: u64, root: &str, max_data: usize) -> Gen {
        let mut model = Model::default();
        model.nodes.insert(root.to_owned());
        Gen { rng: StdRng::seed_from_u64(seed), root: root.to_owned(), model, max_data, next_xid: 1 }
    }

    fn path(&mut self) -> String {
        format!("{}{}", self.root, RELS[self.rng.gen_range(0..RELS.len())])
    }

    /// A child path (never the root, which must stay).
    fn child_path(&mut self) -> String {
        format!("{}{}", self.root, RELS[self.rng.gen_range(1..RELS.len())])
    }

    fn data(&mut self) -> Option<bytes::Bytes> {
        self.data_up_to(self.max_data)
    }

    /// Data of a random size: mostly small, some large, one in a hundred `max` bytes.
    fn data_up_to(&mut self, max: usize) -> Option<bytes::Bytes> {
        let r: f64 = self.rng.gen();
        let len = if r < 0.6 {
            self.rng.gen_range(0..64)
        } else if r < 0.9 {
            self.rng.gen_range(64..4096)
        } else if r < 0.99 {
            self.rng.gen_range(4096..100_000)
        } else {
            max
        };
        let len = len.min(max);
        Some(bytes::Bytes::from(vec![b'd'; len]))
    }

    fn create_req(&mut self, p: String) -> CreateRequest {
        CreateRequest { path: p, data: self.data(), acl: Acl::open_unsafe(), flags: 0, ttl: None }
    }

    /// The next request and what its reply must be (`None` for auth, whose reply ZooKeeper
    /// sends outside the session's order).
    fn next(&mut self) -> (Request, Option<Expect>) {
        let xid = self.next_xid;
        self.next_xid += 1;
        let mut ev = Events::new();
        let (op, body, err) = match self.rng.gen_range(0..100) {
            0..=19 => {
                let c = {
                    let p = self.child_path();
                    self.create_req(p)
                };
                let err = self.model.create(&c.path, &mut ev);
                (OpCode::Create, RequestBody::Create(c), err)
            }
            20..=29 => {
                let p = self.child_path();
                let err = self.model.delete(&p, &mut ev);
                (OpCode::Delete, RequestBody::Delete { path: p, version: -1 }, err)
            }
            30..=44 => {
                let p = self.path();
                let data = self.data();
                let err = self.model.set_data(&p, &mut ev);
                (OpCode::SetData, RequestBody::SetData { path: p, data, version: -1 }, err)
            }
            45..=66 => self.read(),
            67..=74 => self.multi(&mut ev),
            75..=78 => {
                let ops = (0..self.rng.gen_range(1..4))
                    .map(|_| {
                        let path = self.path();
                        if self.rng.gen() {
                            MultiOp::GetData { path, watch: false }
                        } else {
                            MultiOp::GetChildren { path, watch: false }
                        }
                    })
                    .collect();
                (OpCode::MultiRead, RequestBody::Multi(ops), 0)
            }
            79..=83 => (OpCode::Sync, RequestBody::Path { path: self.path() }, 0),
            84..=86 => self.set_watches(&mut ev),
            87..=89 => {
                let p = self.path();
                if !self.model.persistent_ok(&p) {
                    (OpCode::Exists, RequestBody::PathWatch { path: p.clone(), watch: false }, self.exists_err(&p))
                } else {
                    let mode = self.rng.gen_range(0..2);
                    if mode == 0 {
                        self.model.data.insert((p.clone(), Mode::Persistent));
                        self.model.child.insert((p.clone(), Mode::Persistent));
                    } else {
                        self.model.data.insert((p.clone(), Mode::Recursive));
                    }
                    (OpCode::AddWatch, RequestBody::AddWatch { path: p, mode }, 0)
                }
            }
            90..=96 => {
                let p = self.path();
                let ty = self.rng.gen_range(1..4);
                let m = &mut self.model;
                let found = match ty {
                    1 => m.child.remove(&(p.clone(), Mode::Standard)),
                    2 => m.data.remove(&(p.clone(), Mode::Standard)),
                    _ => {
                        let before = m.data.len() + m.child.len();
                        m.data.retain(|(w, _)| *w != p);
                        m.child.retain(|(w, _)| *w != p);
                        m.data.len() + m.child.len() < before
                    }
                };
                let err = if found { 0 } else { ErrorCode::NoWatcher.code() };
                (OpCode::RemoveWatches, RequestBody::Watches { path: p, watcher_type: ty }, err)
            }
            _ => {
                let auth = RequestBody::Auth {
                    auth_type: 0,
                    scheme: "digest".into(),
                    auth: Some(bytes::Bytes::from_static(b"pipelined:secret")),
                };
                return (Request { xid: xid::AUTH, op: OpCode::Auth, body: auth }, None);
            }
        };
        let req = Request { xid, op, body };
        let shown = format!("{:?} {:.200}", req.op, format!("{:?}", req.body));
        (req, Some(Expect { req: shown, xid, err, events: ev }))
    }

    fn exists_err(&self, p: &str) -> i32 {
        if self.model.nodes.contains(p) {
            0
        } else {
            ErrorCode::NoNode.code()
        }
    }

    /// exists, getData, getChildren or getChildren2, with a watch where the model allows one.
    fn read(&mut self) -> (OpCode, RequestBody, i32) {
        let p = self.path();
        let op = [OpCode::Exists, OpCode::GetData, OpCode::GetChildren, OpCode::GetChildren2][self.rng.gen_range(0..4)];
        let watch = self.rng.gen_bool(0.5) && self.model.standard_ok(&p);
        let exists = self.model.nodes.contains(&p);
        if watch {
            match op {
                // exists sets a watch whether or not the node exists (an exist watch).
                OpCode::Exists => _ = self.model.data.insert((p.clone(), Mode::Standard)),
                OpCode::GetData if exists => _ = self.model.data.insert((p.clone(), Mode::Standard)),
                OpCode::GetChildren | OpCode::GetChildren2 if exists => {
                    _ = self.model.child.insert((p.clone(), Mode::Standard))
                }
                _ => {}
            }
        }
        let err = self.exists_err(&p);
        (op, RequestBody::PathWatch { path: p, watch }, err)
    }

    /// A multi of 1-3 writes and checks: all applied with their events, or none (the reply
    /// header's error is 0 either way, the per-op results say which op failed).
    fn multi(&mut self, ev: &mut Events) -> (OpCode, RequestBody, i32) {
        let mut trial = self.model.clone();
        let mut trial_ev = Events::new();
        let mut ok = true;
        let mut ops = Vec::new();
        for _ in 0..self.rng.gen_range(1..4) {
            let (op, err) = match self.rng.gen_range(0..4) {
                0 => {
                    let p = self.child_path();
                    let data = self.data_up_to(self.max_data / 4);
                    let c = CreateRequest { path: p, data, acl: Acl::open_unsafe(), flags: 0, ttl: None };
                    let err = trial.create(&c.path, &mut trial_ev);
                    (MultiOp::Create(OpCode::Create, c), err)
                }
                1 => {
                    let p = self.child_path();
                    let err = trial.delete(&p, &mut trial_ev);
                    (MultiOp::Delete { path: p, version: -1 }, err)
                }
                2 => {
                    let p = self.path();
                    // Three ops of a quarter each keep the frame under jute.maxbuffer.
                    let data = self.data_up_to(self.max_data / 4);
                    let err = trial.set_data(&p, &mut trial_ev);
                    (MultiOp::SetData { path: p, data, version: -1 }, err)
                }
                _ => {
                    let p = self.path();
                    let err = if trial.nodes.contains(&p) { 0 } else { ErrorCode::NoNode.code() };
                    (MultiOp::Check { path: p, version: -1 }, err)
                }
            };
            ok &= err == 0;
            ops.push(op);
        }
        if ok {
            self.model = trial;
            ev.extend(trial_ev);
        }
        (OpCode::Multi, RequestBody::Multi(ops), 0)
    }

    /// setWatches with a relative zxid past every change: a data watch on a missing node and
    /// an exist watch on a present one fire at once, as do child watches on a missing node;
    /// the rest are set.
    fn set_watches(&mut self, ev: &mut Events) -> (OpCode, RequestBody, i32) {
        let mut sw = SetWatches {
            relative_zxid: i64::MAX,
            data: vec![],
            exist: vec![],
            child: vec![],
            persistent: vec![],
            persistent_recursive: vec![],
        };
        for _ in 0..self.rng.gen_range(1..4) {
            let p = self.path();
            if !self.model.standard_ok(&p) {
                continue;
            }
            let exists = self.model.nodes.contains(&p);
            match self.rng.gen_range(0..3) {
                0 => {
                    if exists {
                        self.model.data.insert((p.clone(), Mode::Standard));
                    } else {
                        ev.push((DELETED, p.clone()));
                    }
                    sw.data.push(p);
                }
                1 => {
                    if exists {
                        ev.push((CREATED, p.clone()));
                    } else {
                        self.model.data.insert((p.clone(), Mode::Standard));
                    }
                    sw.exist.push(p);
                }
                _ => {
                    if exists {
                        self.model.child.insert((p.clone(), Mode::Standard));
                    } else {
                        ev.push((DELETED, p.clone()));
                    }
                    sw.child.push(p);
                }
            }
        }
        (OpCode::SetWatches, RequestBody::SetWatches(sw), 0)
    }
}

/// What one session's run saw.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    pub(crate) replies: usize,
    pub(crate) events: usize,
}

async fn read_frame(rd: &mut tokio::net::tcp::OwnedReadHalf) -> Option<Vec<u8>> {
    let len = rd.read_i32().await.ok()?;
    let mut buf = vec![0u8; usize::try_from(len).ok()?];
    rd.read_exact(&mut buf).await.ok()?;
    Some(buf)
}

/// A new session on `addr`, tried again for up to 20 s (a member that just joined its leader
/// may still refuse clients).
async fn connect(addr: &str) -> Result<Raw, String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(s) = tokio::net::TcpStream::connect(addr).await {
            let mut raw = Raw { stream: s };
            if raw.handshake(new_session(30_000)).await.is_some_and(|r| r.session_id != 0) {
                return Ok(raw);
            }
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!("no session on {addr} within 20 s"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// One session on `addr`: `n` requests on the subtree `root` (made first), sent all at once,
/// then checked reply by reply against the model. Err says what broke and where.
pub(crate) async fn run_session(addr: &str, root: &str, seed: u64, n: usize, max_data: usize) -> Result<Seen, String> {
    let mut raw = connect(addr).await?;
    let mk = CreateRequest { path: root.into(), data: None, acl: Acl::open_unsafe(), flags: 0, ttl: None };
    let (h, _) = raw.call(&Request { xid: 0, op: OpCode::Create, body: RequestBody::Create(mk) }).await;
    if h.err != 0 {
        return Err(format!("creating {root}: error {}", h.err));
    }
    let mut gen = Gen::new(seed, root, max_data);
    let mut frames = Vec::with_capacity(n);
    let mut expect = std::collections::VecDeque::new();
    let mut auths = 0;
    for _ in 0..n {
        let (req, e) = gen.next();
        let mut b = Vec::new();
        req.write(&mut b);
        frames.push(b);
        match e {
            Some(e) => expect.push_back(e),
            None => auths += 1,
        }
    }
    let (mut rd, mut wr) = raw.stream.into_split();
    let writer = tokio::spawn(async move {
        for f in frames {
            let mut out = Vec::with_capacity(4 + f.len());
            out.extend_from_slice(&(f.len() as i32).to_be_bytes());
            out.extend_from_slice(&f);
            if wr.write_all(&out).await.is_err() {
                return wr;
            }
        }
        wr
    });
    let mut seen = Seen::default();
    let mut events = Events::new();
    let mut last_zxid = 0;
    while !expect.is_empty() || auths > 0 {
        let at = seen.replies;
        let Ok(frame) = tokio::time::timeout(Duration::from_secs(60), read_frame(&mut rd)).await else {
            return Err(format!(
                "no reply within 60 s after {at} replies (next xid {:?})",
                expect.front().map(|e| e.xid)
            ));
        };
        let Some(frame) = frame else {
            return Err(format!("connection lost after {at} replies (next xid {:?})", expect.front().map(|e| e.xid)));
        };
        let (rest, h) = ReplyHeader::parse(&frame).map_err(|e| format!("bad reply header: {e:?}"))?;
        match h.xid {
            xid::NOTIFICATION => {
                let (_, e) = WatcherEvent::parse(rest).map_err(|e| format!("bad event: {e:?}"))?;
                events.push((e.event_type, e.path));
                seen.events += 1;
                continue;
            }
            xid::AUTH => {
                auths -= 1;
                if h.err != 0 {
                    return Err(format!("auth failed: {}", h.err));
                }
                continue;
            }
            _ => {}
        }
        let Some(want) = expect.pop_front() else {
            return Err(format!("a reply with xid {} after every request was answered", h.xid));
        };
        if h.xid != want.xid {
            return Err(format!("reply with xid {} where xid {} was due (after {at} replies)", h.xid, want.xid));
        }
        if h.err != want.err {
            return Err(format!("xid {} ({}): error {} where the model says {}", h.xid, want.req, h.err, want.err));
        }
        if h.zxid < last_zxid {
            return Err(format!("xid {}: zxid 0x{:x} after 0x{last_zxid:x}", h.xid, h.zxid));
        }
        last_zxid = h.zxid;
        let (mut got, mut wanted) = (std::mem::take(&mut events), want.events);
        got.sort();
        wanted.sort();
        if got != wanted {
            return Err(format!(
                "xid {} ({}): events {got:?} before it where the model says {wanted:?}",
                h.xid, want.req
            ));
        }
        seen.replies += 1;
    }
    let _ = writer.await;
    Ok(seen)
}

/// The seeds to run: a few fixed ones, and a new one each run unless `ZKR_PIPELINED_SEED` names
/// one to replay.
fn seeds(fixed: &[u64]) -> Vec<u64> {
    if let Some(s) = std::env::var("ZKR_PIPELINED_SEED").ok().and_then(|s| s.parse().ok()) {
        return vec![s];
    }
    let fresh = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(7, |d| d.as_nanos() as u64);
    fixed.iter().copied().chain([fresh]).collect()
}

/// Runs `sessions` sessions at once on each of `addrs`, for every seed, and fails with each
/// failure's seed.
async fn run_all(what: &str, addrs: &[String], sessions: u64, n: usize, max_data: usize, fixed: &[u64]) {
    for seed in seeds(fixed) {
        let mut runs = Vec::new();
        for (i, addr) in addrs.iter().enumerate() {
            for s in 0..sessions {
                let (addr, root) = (addr.clone(), format!("/p{seed}-{i}-{s}"));
                let seed = seed.wrapping_add(i as u64 * 1000 + s);
                runs.push(tokio::spawn(async move {
                    (addr.clone(), seed, run_session(&addr, &root, seed, n, max_data).await)
                }));
            }
        }
        for r in runs {
            let (addr, s, res) = r.await.expect("session task");
            match res {
                Ok(seen) => assert!(seen.replies > 0, "{what}: {addr} seed {s}: no replies"),
                Err(e) => panic!("{what}: {addr}, session seed {s} (replay: ZKR_PIPELINED_SEED={seed}): {e}"),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_are_answered_in_order_with_their_events_on_a_standalone_server() {
    let (server, addr) = common::start().await;
    run_all("standalone", &[addr], 3, 400, 1_000_000, &[1, 2]).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pipelined_requests_are_answered_in_order_with_their_events_on_leader_follower_and_observer() {
    let mut cfgs = ensemble_configs(4);
    for c in &mut cfgs {
        c.ensemble.as_mut().unwrap().members.get_mut(&4).unwrap().observer = true;
    }
    let cl = Cluster::start_with(cfgs).await;
    let leader = cl.leader().await;
    let follower = cl.follower(leader);
    common::eventually("member 4 observes", || async {
        cl.role(3) == Some(zkr::server::core::replicated::Role::Observer)
    })
    .await;
    let addrs = [cl.addr(leader), cl.addr(follower), cl.addr(3)];
    run_all("ensemble", &addrs, 2, 300, 1_000_000, &[3]).await;
    cl.shutdown().await;
}

/// The same workload on a ZooKeeper 3.9 ensemble: the model is ZooKeeper's, not zkr's. (3.9,
/// because removeWatches of one kind leaves a persistent watch on the path in place since
/// ZOOKEEPER-4466; Debian's 3.8 removes it too.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pipelined_model_holds_on_zookeeper_39() {
    let zk = Ensemble::start_observed(&Launch::Classpath(zookeeper_39_classpath()), "");
    let leader = zk.leader_of(&[0, 1, 2]).await;
    let follower = (leader + 1) % 3;
    let addrs = [format!("127.0.0.1:{}", zk.client[leader]), format!("127.0.0.1:{}", zk.client[follower])];
    run_all("zookeeper", &addrs, 2, 300, 1_000_000, &[3]).await;
}

/// The schedule of issue 43 (kazoo: "xids do not match, expected 1981 received 2004"): 2,000
/// creates sent at once, then a sync, then 2,000 more and a sync, on the leader, a follower and
/// an observer. The sync's read point could lie before the session's own pending creates, so
/// its reply overtook theirs; and a create after it could be answered before it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_sync_after_2000_pipelined_creates_is_answered_after_them_on_every_member_kind() {
    let mut cfgs = ensemble_configs(4);
    for c in &mut cfgs {
        c.ensemble.as_mut().unwrap().members.get_mut(&4).unwrap().observer = true;
    }
    let cl = Cluster::start_with(cfgs).await;
    let leader = cl.leader().await;
    common::eventually("member 4 observes", || async {
        cl.role(3) == Some(zkr::server::core::replicated::Role::Observer)
    })
    .await;
    for (kind, i) in [("leader", leader), ("follower", cl.follower(leader)), ("observer", 3)] {
        let mut raw = connect(&cl.addr(i)).await.unwrap();
        let root = format!("/sync-{kind}");
        let mut xid = 0;
        let mut want = Vec::new();
        let mut send = |raw_out: &mut Vec<u8>, op: OpCode, body: RequestBody| {
            xid += 1;
            want.push(xid);
            let mut b = Vec::new();
            Request { xid, op, body }.write(&mut b);
            raw_out.extend_from_slice(&(b.len() as i32).to_be_bytes());
            raw_out.extend_from_slice(&b);
        };
        let mut out = Vec::new();
        let create = |p: String| {
            RequestBody::Create(CreateRequest { path: p, data: None, acl: Acl::open_unsafe(), flags: 0, ttl: None })
        };
        send(&mut out, OpCode::Create, create(root.clone()));
        for round in 0..2 {
            for n in 0..2000 {
                send(&mut out, OpCode::Create, create(format!("{root}/n{round}-{n}")));
            }
            send(&mut out, OpCode::Sync, RequestBody::Path { path: root.clone() });
        }
        raw.stream.write_all(&out).await.unwrap();
        for w in want {
            let frame = tokio::time::timeout(Duration::from_secs(60), raw.read_frame()).await;
            let frame = frame.unwrap_or_else(|_| panic!("{kind}: no reply for xid {w}")).expect("connection kept");
            let (_, h) = ReplyHeader::parse(&frame).unwrap();
            assert_eq!((h.xid, h.err), (w, 0), "{kind}: replies in the order sent");
        }
    }
    cl.shutdown().await;
}
