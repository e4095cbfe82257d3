//! zkr's ZAB learner against a real ZooKeeper: Debian's ZooKeeper 3.8 runs a 3-member ensemble
//! whose zoo.cfg lists zkr as `server.9=…:observer`; the learner registers with the leader,
//! syncs, follows every txn (checking ZooKeeper's txn digest on each), forwards a session and a
//! write of its own, keeps that session alive only through its PING replies, and ends with the
//! same tree as ZooKeeper, every Stat field. Needs `apt-get install zookeeper` (scripts/test-all.sh
//! installs it); it fails, not skips, when ZooKeeper cannot start.

use crate::common;

use common::Raw;
use parking_lot::Mutex;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zkr::proto::{Acl, CreateRequest, MultiOp, OpCode, Request, RequestBody, Response};
use zkr::tree::DataTree;
use zkr::txn::TxnOp;
use zkr::zab::election::{find_leader, Voter};
use zkr::zab::{Event, Learner, Options, Sender, SyncMode, ZabError};

const ZKSERVER: &str = "/usr/share/zookeeper/bin/zkServer.sh";
const OBSERVER_SID: i64 = 9;
const TICK_MS: u64 = 500;

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// Three ZooKeeper members on 127.0.0.1, killed on drop.
struct Ensemble {
    dir: PathBuf,
    client: [u16; 3],
    quorum: [u16; 3],
    election: [u16; 3],
    /// The election address zkr's `server.9` line gives it.
    observer_election: String,
    children: Vec<Child>,
}

impl Ensemble {
    fn start() -> Ensemble {
        assert!(Path::new(ZKSERVER).exists(), "{ZKSERVER} is missing: apt-get install zookeeper zookeeper-bin");
        let dir = common::temp_dir();
        let client = [free_port(), free_port(), free_port()];
        let quorum = [free_port(), free_port(), free_port()];
        let election = [free_port(), free_port(), free_port()];
        let (oq, oe) = (free_port(), free_port());
        let mut servers = String::new();
        for i in 0..3 {
            servers += &format!("server.{}=127.0.0.1:{}:{};127.0.0.1:{}\n", i + 1, quorum[i], election[i], client[i]);
        }
        // zkr's line, as a ZooKeeper observer's would be: the leader admits it by this sid.
        servers += &format!("server.{OBSERVER_SID}=127.0.0.1:{oq}:{oe}:observer\n");
        let mut children = Vec::new();
        for (i, port) in client.iter().enumerate() {
            let d = dir.join(format!("m{}", i + 1));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("myid"), format!("{}\n", i + 1)).unwrap();
            let cfg = format!(
                "tickTime={TICK_MS}\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={}\nclientPortAddress=127.0.0.1\n\
                 admin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\n{servers}",
                d.display(),
                port
            );
            std::fs::write(d.join("zoo.cfg"), cfg).unwrap();
            let out = std::fs::File::create(d.join("zk.out")).unwrap();
            let child = Command::new(ZKSERVER)
                .arg("start-foreground")
                .arg(d.join("zoo.cfg"))
                .env("ZOOCFGDIR", &d)
                .env("ZOO_LOG_DIR", &d)
                .env("ZOOPIDFILE", d.join("zk.pid"))
                .stdout(out.try_clone().unwrap())
                .stderr(out)
                .stdin(Stdio::null())
                .spawn()
                .expect("start ZooKeeper");
            children.push(child);
        }
        Ensemble { dir, client, quorum, election, observer_election: format!("127.0.0.1:{oe}"), children }
    }

    /// The member that says `Mode: leader`, once one does (and the others follow).
    async fn leader(&self) -> usize {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let mut modes = Vec::new();
            for port in self.client {
                modes.push(srvr_mode(port).await);
            }
            if modes.iter().filter(|m| m.as_deref() == Some("follower")).count() == 2 {
                if let Some(i) = modes.iter().position(|m| m.as_deref() == Some("leader")) {
                    return i;
                }
            }
            if Instant::now() > deadline {
                for i in 0..3 {
                    let log = std::fs::read_to_string(self.dir.join(format!("m{}/zk.out", i + 1))).unwrap_or_default();
                    eprintln!(
                        "--- member {} ---\n{}",
                        i + 1,
                        log.lines().rev().take(30).collect::<Vec<_>>().join("\n")
                    );
                }
                panic!("no ZooKeeper leader within 60 s: {modes:?}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Ensemble {
    fn voters(&self) -> Vec<Voter> {
        (0..3)
            .map(|i| Voter { sid: i as i64 + 1, election: SocketAddr::from(([127, 0, 0, 1], self.election[i])) })
            .collect()
    }

    /// The leader as the observer finds it: through the voters' election ports.
    async fn find_leader(&self) -> Result<usize, String> {
        let (voters, me) = (self.voters(), self.observer_election.clone());
        tokio::task::spawn_blocking(move || find_leader(OBSERVER_SID, &me, &voters, Duration::from_secs(2)))
            .await
            .unwrap()
            .map(|f| f.leader as usize - 1)
            .map_err(|e| e.to_string())
    }
}

impl Drop for Ensemble {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn srvr_mode(port: u16) -> Option<String> {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    s.write_all(b"srvr").await.ok()?;
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(2), s.read_to_string(&mut out)).await.ok()?.ok()?;
    out.lines().find_map(|l| l.strip_prefix("Mode: ").map(str::to_owned))
}

fn req(xid: i32, op: OpCode, body: RequestBody) -> Request {
    Request { xid, op, body }
}

fn create(path: &str, data: &[u8], flags: i32) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: Some(bytes::Bytes::copy_from_slice(data)),
        acl: Acl::open_unsafe(),
        flags,
        ttl: None,
    }
}

/// A client session on ZooKeeper that counts its xids and remembers the last zxid it saw.
struct Session {
    raw: Raw,
    id: i64,
    xid: i32,
    last_zxid: i64,
}

impl Session {
    async fn open(port: u16, timeout_ms: i32) -> Session {
        let (raw, resp) = Raw::connect(&format!("127.0.0.1:{port}"), timeout_ms).await;
        Session { raw, id: resp.session_id, xid: 0, last_zxid: 0 }
    }

    async fn call(&mut self, op: OpCode, body: RequestBody) -> Response {
        self.xid += 1;
        let (h, r) = self.raw.call(&req(self.xid, op, body)).await;
        assert_eq!(h.err, 0, "{op:?} failed on ZooKeeper: {r:?}");
        self.last_zxid = self.last_zxid.max(h.zxid);
        r
    }

    async fn write(&mut self, op: OpCode, body: RequestBody) {
        self.call(op, body).await;
    }
}

/// Every node ZooKeeper serves under `/`, with its data and Stat.
async fn zk_tree(port: u16) -> Vec<(String, Option<bytes::Bytes>, zkr::proto::Stat)> {
    let mut s = Session::open(port, 10_000).await;
    let mut out = Vec::new();
    let mut todo = vec!["/".to_owned()];
    while let Some(p) = todo.pop() {
        let Response::GetData { data, stat } =
            s.call(OpCode::GetData, RequestBody::PathWatch { path: p.clone(), watch: false }).await
        else {
            panic!("getData {p}")
        };
        let Response::Children(kids) =
            s.call(OpCode::GetChildren, RequestBody::PathWatch { path: p.clone(), watch: false }).await
        else {
            panic!("getChildren {p}")
        };
        for k in kids {
            todo.push(if p == "/" { format!("/{k}") } else { format!("{p}/{k}") });
        }
        out.push((p, data, stat));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn assert_same_tree(zk: &[(String, Option<bytes::Bytes>, zkr::proto::Stat)], ours: &DataTree, what: &str) {
    let mut paths = Vec::new();
    ours.visit(|p, _| paths.push(p.to_owned()));
    paths.sort();
    let zk_paths: Vec<&str> = zk.iter().map(|n| n.0.as_str()).collect();
    assert_eq!(paths, zk_paths, "{what}: the paths differ from ZooKeeper's");
    for (path, data, stat) in zk {
        let n = ours.get(path).unwrap();
        // /zookeeper/config: with reconfig off each ZooKeeper server keeps its own (ZOOKEEPER-2819).
        if path == "/zookeeper/config" {
            continue;
        }
        let empty_is_null = |d: &Option<bytes::Bytes>| d.clone().filter(|b| !b.is_empty());
        assert_eq!(empty_is_null(&n.data), empty_is_null(data), "{what}: data of {path}");
        assert_eq!(&n.wire_stat(), stat, "{what}: Stat of {path}");
    }
}

/// What the learner's thread saw, shared with the test.
#[derive(Default)]
struct Seen {
    applied: Vec<(i64, i64, i32, TxnOp)>,
    last_zxid: i64,
    pings: u64,
    touched: Vec<(i64, i32)>,
    error: Option<String>,
}

fn follow(mut l: Learner, seen: Arc<Mutex<Seen>>) -> std::thread::JoinHandle<Learner> {
    std::thread::spawn(move || loop {
        let touched = seen.lock().touched.clone();
        match l.step(&touched) {
            Ok(Event::Applied { txn, .. }) => {
                let mut s = seen.lock();
                s.last_zxid = txn.txn.zxid;
                s.applied.push((txn.txn.zxid, txn.txn.session, txn.cxid, txn.txn.op.clone()));
            }
            Ok(Event::Ping) => seen.lock().pings += 1,
            Ok(_) => {}
            Err(e) => {
                seen.lock().error = Some(e.to_string());
                return l;
            }
        }
    })
}

async fn until(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out after {secs} s waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn exists(port: u16, path: &str) -> bool {
    let mut s = Session::open(port, 10_000).await;
    s.xid += 1;
    let (h, _) =
        s.raw.call(&req(s.xid, OpCode::Exists, RequestBody::PathWatch { path: path.into(), watch: false })).await;
    h.err == 0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_syncs_from_a_zookeeper_38_leader_follows_it_and_forwards_a_session() {
    let mut zk = Ensemble::start();
    let leader = zk.leader().await;
    assert_eq!(zk.find_leader().await, Ok(leader), "the election ports name the leader srvr names");
    let follower = (leader + 1) % 3;
    let quorum = zk.quorum;
    let opts = |leader: usize, accepted_epoch, current_epoch| Options {
        sid: OBSERVER_SID,
        leader: SocketAddr::from(([127, 0, 0, 1], quorum[leader])),
        accepted_epoch,
        current_epoch,
        init_timeout: Duration::from_millis(TICK_MS * 10),
        sync_timeout: Duration::from_millis(TICK_MS * 5),
        max_buffer: 2 * 0xfffff,
    };

    // Before the observer joins: every kind of txn it must take from the leader's sync.
    let mut c = Session::open(zk.client[follower], 30_000).await;
    c.write(OpCode::Create, RequestBody::Create(create("/app", b"v1", 0))).await;
    c.write(OpCode::Create, RequestBody::Create(create("/app/a", b"", 0))).await;
    for _ in 0..3 {
        c.write(OpCode::Create2, RequestBody::Create(create("/app/s-", b"seq", 2))).await;
    }
    c.write(OpCode::SetData, RequestBody::SetData { path: "/app".into(), data: Some("v2".into()), version: -1 }).await;
    c.write(OpCode::SetAcl, RequestBody::SetAcl { path: "/app/a".into(), acl: Acl::read_unsafe(), version: 0 }).await;
    c.write(OpCode::Create, RequestBody::Create(create("/app/eph", b"e", 1))).await;
    c.write(OpCode::CreateContainer, RequestBody::Create(create("/cont", b"", 4))).await;
    c.write(OpCode::Delete, RequestBody::Delete { path: "/app/s-0000000001".into(), version: -1 }).await;
    let multi = vec![
        MultiOp::Create(OpCode::Create, create("/m1", b"1", 0)),
        MultiOp::Create(OpCode::Create, create("/m1/m2", b"2", 0)),
        MultiOp::SetData { path: "/app".into(), data: Some("v3".into()), version: 1 },
    ];
    c.write(OpCode::Multi, RequestBody::Multi(multi)).await;

    let l = sync_with(opts(leader, 0, 0), DataTree::new()).await.expect("the observer syncs with the ZooKeeper leader");
    let first_mode = l.mode;
    assert!(l.config.contains(&format!("server.{OBSERVER_SID}=")), "NEWLEADER carries the config: {}", l.config);
    let sender = l.sender();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let thread = follow(l, seen.clone());

    // After it joined: INFORMs, including a session's close and its ephemeral's removal.
    let mut d = Session::open(zk.client[leader], 30_000).await;
    d.write(OpCode::Create, RequestBody::Create(create("/live", b"x", 0))).await;
    d.write(OpCode::Create, RequestBody::Create(create("/live/eph", b"", 1))).await;
    d.write(OpCode::SetData, RequestBody::SetData { path: "/live".into(), data: None, version: 0 }).await;
    d.write(OpCode::CloseSession, RequestBody::Empty).await;
    c.write(OpCode::Create2, RequestBody::Create(create("/app/s-", b"seq", 2))).await;
    let want = c.last_zxid.max(d.last_zxid);
    until("the observer applied every write", 20, || seen.lock().last_zxid >= want).await;
    assert!(seen.lock().applied.iter().any(|a| a.1 == d.id && a.3 == TxnOp::CloseSession));

    // Its own session and write, forwarded: a session id with its sid in the top byte, as
    // ZooKeeper's SessionTrackerImpl makes them; the reply is the INFORM with its cxid.
    let sid = (OBSERVER_SID << 56) | 0x42;
    let auth = vec![("ip".into(), "127.0.0.1".into())];
    forward_session_and_ephemeral(&sender, &seen, sid, 2000, "/obs-eph", auth).await;
    // Kept alive by the PING replies alone for twice its timeout, then let go.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(exists(zk.client[follower], "/obs-eph").await, "the pings kept the observer's session alive");
    seen.lock().touched.clear();
    until("the leader expired the session the observer stopped touching", 15, || {
        seen.lock().applied.iter().any(|a| a.1 == sid && a.3 == TxnOp::CloseSession)
    })
    .await;
    assert!(!exists(zk.client[follower], "/obs-eph").await);

    sender.shutdown();
    let l = thread.join().expect("the learner's thread");
    assert!(seen.lock().pings > 4, "the leader pinged the observer");
    assert_same_tree(&zk_tree(zk.client[leader]).await, &l.tree, "after following");
    let informs = seen.lock().applied.len() as u64;
    assert!(informs >= 8, "{informs} INFORMs");
    assert_eq!(l.digests_checked, informs, "ZooKeeper 3.8 sends its tree digest with every txn");
    assert_eq!(l.digest_mismatches, 0, "the tree digest agreed with the leader's after every txn");
    assert!(l.tree.sessions().contains_key(&c.id) && !l.tree.sessions().contains_key(&d.id));

    // A restart of the observer with what it holds: the leader sends only the difference.
    c.write(OpCode::Create, RequestBody::Create(create("/after", b"", 0))).await;
    let (epoch, tree) = (l.epoch, l.tree);
    let l2 = sync_with(opts(leader, epoch, epoch), tree).await.expect("the observer syncs again");
    eprintln!("first sync: {first_mode:?}; second: {:?}", l2.mode);
    assert_eq!(l2.mode, SyncMode::Diff, "an observer that holds the leader's recent history gets a DIFF");
    assert_same_tree(&zk_tree(zk.client[leader]).await, &l2.tree, "after the DIFF");

    // The leader is killed: the observer finds the new one through the election ports, syncs
    // with it, and the session it keeps alive outlives the change (a new ZooKeeper leader gives
    // every session a fresh timeout; the observer's pings do the rest).
    let sender = l2.sender();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let thread = follow(l2, seen.clone());
    let sid2 = (OBSERVER_SID << 56) | 0x43;
    forward_session_and_ephemeral(&sender, &seen, sid2, 4000, "/obs-eph2", vec![]).await;
    let _ = zk.children[leader].kill();
    let _ = zk.children[leader].wait();
    until("the observer noticed the leader is gone", 10, || seen.lock().error.is_some()).await;
    let l2 = thread.join().expect("the learner's thread");
    let t0 = Instant::now();
    let new_leader = loop {
        match zk.find_leader().await {
            Ok(l) if l != leader => break l,
            other => assert!(t0.elapsed() < Duration::from_secs(30), "no new leader: {other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let (epoch, tree) = (l2.epoch, l2.tree);
    let l3 = sync_with(opts(new_leader, epoch, epoch), tree).await.expect("the observer syncs with the new leader");
    assert!(l3.epoch > epoch, "a new epoch: {} after {epoch}", l3.epoch);
    let sender = l3.sender();
    let seen = Arc::new(Mutex::new(Seen { touched: vec![(sid2, 4000)], ..Seen::default() }));
    let thread = follow(l3, seen.clone());
    eprintln!("new leader found and synced {:?} after the kill", t0.elapsed());
    tokio::time::sleep(Duration::from_secs(9)).await;
    let survivor = (0..3).find(|i| *i != leader).unwrap();
    assert!(exists(zk.client[survivor], "/obs-eph2").await, "the observer's session outlived the leader change");
    assert!(seen.lock().error.is_none(), "{:?}", seen.lock().error);
    sender.shutdown();
    let l3 = thread.join().expect("the learner's thread");
    assert_same_tree(&zk_tree(zk.client[new_leader]).await, &l3.tree, "after the leader change");
    assert_eq!(l3.digest_mismatches, 0);
}

/// `Learner::sync` (blocking) on a blocking thread.
async fn sync_with(o: Options, tree: DataTree) -> Result<Learner, ZabError> {
    tokio::task::spawn_blocking(move || Learner::sync(&o, tree)).await.expect("the sync's thread")
}

/// Creates session `sid` through the leader as the observer would for a client (touched in its
/// pings from now on), then an ephemeral `path` of it, each forwarded and awaited as an INFORM.
async fn forward_session_and_ephemeral(
    sender: &Sender,
    seen: &Arc<Mutex<Seen>>,
    sid: i64,
    timeout_ms: i32,
    path: &str,
    auth: Vec<(String, String)>,
) {
    seen.lock().touched = vec![(sid, timeout_ms)];
    sender.forward(sid, 0, -10, &timeout_ms.to_be_bytes(), vec![]).expect("forward createSession");
    // As a client waits for its ConnectResponse, which the observer sends once the session is
    // committed: a write forwarded before that is refused by the leader (SessionExpired).
    until("the leader created the session", 10, || seen.lock().applied.iter().any(|a| a.1 == sid)).await;
    let mut body = Vec::new();
    req(1, OpCode::Create, RequestBody::Create(create(path, b"mine", 1))).write(&mut body);
    sender.forward(sid, 1, 1, &body[8..], auth).expect("forward create");
    until("the forwarded create came back", 10, || {
        seen.lock()
            .applied
            .iter()
            .any(|a| a.1 == sid && a.2 == 1 && matches!(&a.3, TxnOp::Create { path: p, .. } if p == path))
    })
    .await;
}
