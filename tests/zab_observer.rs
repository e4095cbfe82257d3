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
use zkr::proto::{
    Acl, ConnectRequest, ConnectResponse, CreateRequest, MultiOp, OpCode, Request, RequestBody, Response,
};
use zkr::tree::DataTree;
use zkr::txn::TxnOp;
use zkr::zab::dial::Dialer;
use zkr::zab::digest::Checked;
use zkr::zab::election::{find_leader, Voter};
use zkr::zab::{Event, Learner, Options, Sender, SyncMode, Synced, ZabError};

const ZKSERVER: &str = "/usr/share/zookeeper/bin/zkServer.sh";
pub(crate) const OBSERVER_SID: i64 = 9;
const TICK_MS: u64 = 500;

/// Ports below the kernel's ephemeral range (`common::cluster::free_port`): a ZooKeeper member
/// that cannot bind its election port exits, and a port the kernel handed out and this test
/// released can be taken meanwhile as the source port of another test's outgoing connection
/// (seen once in CI: two members refused election connections after a leader kill).
pub(crate) fn free_port() -> u16 {
    common::cluster::free_port()
}

/// How a ZooKeeper member is started.
#[derive(Clone)]
pub(crate) enum Launch {
    /// Debian's ZooKeeper 3.8 (`zkServer.sh`).
    Debian,
    /// A ZooKeeper release's classpath (3.9 from Maven Central, `zookeeper_39_classpath`).
    Classpath(String),
}

/// ZooKeeper 3.9.5 and what its server needs, resolved from Maven Central with
/// `tests/interop/zab/zk39/pom.xml` (once; the classpath is kept in the target directory).
pub(crate) fn zookeeper_39_classpath() -> String {
    zookeeper_classpath("3.9.5")
}

/// A ZooKeeper release from Maven Central and what its server needs (the same pom, another
/// `zookeeper.version`).
pub(crate) fn zookeeper_classpath(version: &str) -> String {
    let pom = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/zab/zk39/pom.xml");
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("zookeeper-{version}.classpath"));
    if !file.exists() {
        let tmp = file.with_extension("tmp");
        let out = Command::new("mvn")
            .args(["-B", "-q", "-f"])
            .arg(&pom)
            .arg("dependency:build-classpath")
            .arg(format!("-Dzookeeper.version={version}"))
            .arg(format!("-Dmdep.outputFile={}", tmp.display()))
            .output()
            .expect("mvn runs (apt-get install maven)");
        assert!(
            out.status.success(),
            "Maven could not resolve ZooKeeper {version}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        std::fs::rename(&tmp, &file).unwrap();
    }
    std::fs::read_to_string(&file).unwrap().trim().to_owned()
}

/// Three ZooKeeper members on 127.0.0.1, killed on drop.
pub(crate) struct Ensemble {
    dir: PathBuf,
    launch: Launch,
    props: Vec<String>,
    pub(crate) client: [u16; 3],
    quorum: [u16; 3],
    election: [u16; 3],
    /// The election address zkr's `server.9` line gives it.
    observer_election: String,
    /// Every member's `server.N` line, zkr's included, as each zoo.cfg holds them.
    pub(crate) servers: String,
    pub(crate) children: Vec<Child>,
}

impl Ensemble {
    fn start() -> Ensemble {
        Ensemble::start_with(&Launch::Debian)
    }

    fn start_with(launch: &Launch) -> Ensemble {
        let (oq, oe) = (free_port(), free_port());
        // zkr's line, as a ZooKeeper observer's would be: the leader admits it by this sid.
        let line = format!("server.{OBSERVER_SID}=127.0.0.1:{oq}:{oe}:observer\n");
        let mut zk = Ensemble::start_observed(launch, &line);
        zk.observer_election = format!("127.0.0.1:{oe}");
        zk
    }

    /// Three ZooKeeper members whose zoo.cfg also holds `observer_lines`.
    pub(crate) fn start_observed(launch: &Launch, observer_lines: &str) -> Ensemble {
        Ensemble::start_configured(launch, observer_lines, "", &[])
    }

    /// The same, with `extra` zoo.cfg lines and JVM system properties (`-Dk=v`).
    pub(crate) fn start_configured(launch: &Launch, observer_lines: &str, extra: &str, props: &[String]) -> Ensemble {
        Ensemble::start_on("127.0.0.1", launch, observer_lines, extra, props)
    }

    /// The same, with the members' quorum and election ports on `peer_host` (an address of
    /// this machine: the end of a network namespace's link), their client ports on 127.0.0.1.
    pub(crate) fn start_on(
        peer_host: &str,
        launch: &Launch,
        observer_lines: &str,
        extra: &str,
        props: &[String],
    ) -> Ensemble {
        if let Launch::Debian = launch {
            assert!(Path::new(ZKSERVER).exists(), "{ZKSERVER} is missing: apt-get install zookeeper zookeeper-bin");
        }
        let dir = common::temp_dir();
        let client = [free_port(), free_port(), free_port()];
        let quorum = [free_port(), free_port(), free_port()];
        let election = [free_port(), free_port(), free_port()];
        let mut servers = String::new();
        for i in 0..3 {
            servers += &format!("server.{}={peer_host}:{}:{};127.0.0.1:{}\n", i + 1, quorum[i], election[i], client[i]);
        }
        servers += observer_lines;
        let mut children = Vec::new();
        for (i, port) in client.iter().enumerate() {
            let d = dir.join(format!("m{}", i + 1));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("myid"), format!("{}\n", i + 1)).unwrap();
            let cfg = format!(
                "tickTime={TICK_MS}\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={}\nclientPortAddress=127.0.0.1\n\
                 admin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\n{servers}{extra}",
                d.display(),
                port
            );
            std::fs::write(d.join("zoo.cfg"), cfg).unwrap();
            children.push(spawn_member(launch, &d, props));
        }
        let (launch, props) = (launch.clone(), props.to_vec());
        Ensemble { dir, launch, props, client, quorum, election, observer_election: String::new(), servers, children }
    }

    /// Every member's quorum and election port.
    pub(crate) fn peer_ports(&self) -> Vec<u16> {
        self.quorum.iter().chain(self.election.iter()).copied().collect()
    }

    /// Member `i`'s data directory (its dataDir, with myid and version-2).
    pub(crate) fn data_dir(&self, i: usize) -> PathBuf {
        self.dir.join(format!("m{}", i + 1))
    }

    /// Starts member `i` again, on its data (after it was killed).
    pub(crate) fn restart(&mut self, i: usize) {
        let _ = self.children[i].kill();
        let _ = self.children[i].wait();
        self.children[i] = spawn_member(&self.launch, &self.data_dir(i), &self.props);
    }

    /// The member that says `Mode: leader`, once one does (and the others follow).
    pub(crate) async fn leader(&self) -> usize {
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

/// Starts one ZooKeeper member on the zoo.cfg in `d`, its output appended to `d/zk.out`.
pub(crate) fn spawn_member(launch: &Launch, d: &Path, props: &[String]) -> Child {
    let out = std::fs::OpenOptions::new().create(true).append(true).open(d.join("zk.out")).unwrap();
    let mut cmd = match launch {
        Launch::Debian => {
            let mut c = Command::new(ZKSERVER);
            c.arg("start-foreground").arg(d.join("zoo.cfg"));
            c
        }
        Launch::Classpath(cp) => {
            let mut c = Command::new("java");
            c.arg("-Xmx256m")
                .args(props)
                .args(["-cp", cp, "org.apache.zookeeper.server.quorum.QuorumPeerMain"])
                .arg(d.join("zoo.cfg"));
            c
        }
    };
    cmd.env("SERVER_JVMFLAGS", props.join(" "))
        .env("ZOOCFGDIR", d)
        .env("ZOO_LOG_DIR", d)
        .env("ZOOPIDFILE", d.join("zk.pid"))
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .stdin(Stdio::null())
        .spawn()
        .expect("start ZooKeeper")
}

impl Ensemble {
    /// The one of `members` that says `Mode: leader`, once one does.
    pub(crate) async fn leader_of(&self, members: &[usize]) -> usize {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            for m in members {
                if srvr_mode(self.client[*m]).await.as_deref() == Some("leader") {
                    return *m;
                }
            }
            assert!(Instant::now() < deadline, "no leader among {members:?}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    fn voters(&self) -> Vec<Voter> {
        (0..3)
            .map(|i| {
                let election = SocketAddr::from(([127, 0, 0, 1], self.election[i]));
                Voter { sid: i as i64 + 1, election, name: election.to_string() }
            })
            .collect()
    }

    /// The leader as the observer finds it: through the voters' election ports.
    async fn find_leader(&self) -> Result<usize, String> {
        let (voters, me) = (self.voters(), self.observer_election.clone());
        tokio::task::spawn_blocking(move || {
            find_leader(OBSERVER_SID, &me, &voters, Duration::from_secs(2), None, &Dialer::plain())
        })
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

pub(crate) async fn four_letter(port: u16, word: &str) -> String {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.expect("connect");
    s.write_all(word.as_bytes()).await.expect("send");
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(2), s.read_to_string(&mut out)).await.expect("in time").expect("read");
    out
}

pub(crate) async fn srvr_mode(port: u16) -> Option<String> {
    let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.ok()?;
    s.write_all(b"srvr").await.ok()?;
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(2), s.read_to_string(&mut out)).await.ok()?.ok()?;
    out.lines().find_map(|l| l.strip_prefix("Mode: ").map(str::to_owned))
}

fn req(xid: i32, op: OpCode, body: RequestBody) -> Request {
    Request { xid, op, body }
}

pub(crate) fn create(path: &str, data: &[u8], flags: i32) -> CreateRequest {
    CreateRequest {
        path: path.into(),
        data: Some(bytes::Bytes::copy_from_slice(data)),
        acl: Acl::open_unsafe(),
        flags,
        ttl: None,
    }
}

/// A client session on ZooKeeper that counts its xids and remembers the last zxid it saw.
pub(crate) struct Session {
    pub(crate) raw: Raw,
    pub(crate) id: i64,
    password: Vec<u8>,
    pub(crate) xid: i32,
    pub(crate) last_zxid: i64,
}

impl Session {
    pub(crate) async fn open(port: u16, timeout_ms: i32) -> Session {
        Session::open_at(&format!("127.0.0.1:{port}"), timeout_ms).await
    }

    pub(crate) async fn open_at(addr: &str, timeout_ms: i32) -> Session {
        let (raw, resp) = Raw::connect(addr, timeout_ms).await;
        Session { raw, id: resp.session_id, password: resp.password, xid: 0, last_zxid: 0 }
    }

    /// Re-attaches this session on another server (or the same one after a disconnect), as a
    /// client moving to the next host of its list does. `None` if refused (expired).
    pub(crate) async fn reattach(&mut self, port: u16, timeout_ms: i32) -> Option<ConnectResponse> {
        self.reattach_at(&format!("127.0.0.1:{port}"), timeout_ms).await
    }

    /// `reattach` at any address; `None` also when nothing listens there.
    pub(crate) async fn reattach_at(&mut self, addr: &str, timeout_ms: i32) -> Option<ConnectResponse> {
        // One connect, and a refusal is None: a member restarting (a takeover's exec) may
        // refuse a connection a moment after it took one.
        let mut raw = Raw { stream: tokio::net::TcpStream::connect(addr).await.ok()? };
        let req = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: self.last_zxid,
            timeout_ms,
            session_id: self.id,
            password: self.password.clone(),
            read_only: Some(false),
        };
        let resp = raw.handshake(req).await.filter(|r| r.timeout_ms > 0 && r.session_id == self.id)?;
        self.raw = raw;
        Some(resp)
    }

    /// A request whose error is the point: the reply's error code.
    pub(crate) async fn try_call(&mut self, op: OpCode, body: RequestBody) -> i32 {
        self.xid += 1;
        let (h, _) = self.raw.call(&req(self.xid, op, body)).await;
        self.last_zxid = self.last_zxid.max(h.zxid);
        h.err
    }

    /// A read of `path`; `None` if the node is gone (NoNode).
    async fn call_unless_gone(&mut self, op: OpCode, path: &str) -> Option<Response> {
        self.xid += 1;
        let body = RequestBody::PathWatch { path: path.into(), watch: false };
        let (h, r) = self.raw.call(&req(self.xid, op, body)).await;
        if h.err == -101 {
            return None;
        }
        assert_eq!(h.err, 0, "{op:?} {path} (xid {}) of session 0x{:x} failed with {}", self.xid, self.id, h.err);
        Some(r)
    }

    pub(crate) async fn ping(&mut self) {
        let (h, _) = self.raw.call(&req(-2, OpCode::Ping, RequestBody::Empty)).await;
        assert_eq!(h.err, 0);
    }

    pub(crate) async fn call(&mut self, op: OpCode, body: RequestBody) -> Response {
        self.xid += 1;
        let (h, r) = self.raw.call(&req(self.xid, op, body)).await;
        assert_eq!(h.err, 0, "{op:?} (xid {}) of session 0x{:x} failed with {}: {r:?}", self.xid, self.id, h.err);
        self.last_zxid = self.last_zxid.max(h.zxid);
        r
    }

    pub(crate) async fn write(&mut self, op: OpCode, body: RequestBody) {
        self.call(op, body).await;
    }
}

/// Every node ZooKeeper serves under `/`, with its data and Stat.
pub(crate) async fn zk_tree(port: u16) -> Vec<(String, Option<bytes::Bytes>, zkr::proto::Stat)> {
    zk_tree_at(&format!("127.0.0.1:{port}")).await
}

pub(crate) async fn zk_tree_at(addr: &str) -> Vec<(String, Option<bytes::Bytes>, zkr::proto::Stat)> {
    let mut s = Session::open_at(addr, 10_000).await;
    let mut out = Vec::new();
    let mut todo = vec!["/".to_owned()];
    while let Some(p) = todo.pop() {
        // A node listed a moment ago may be gone (an ephemeral of a session that just ended):
        // it is not in this tree, and a comparison of two trees still sees any difference.
        let Some(Response::GetData { data, stat }) = s.call_unless_gone(OpCode::GetData, &p).await else {
            continue;
        };
        let Some(Response::Children(kids)) = s.call_unless_gone(OpCode::GetChildren, &p).await else {
            continue;
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

/// The learner and the tree it keeps in step, as the core holds it.
struct Observed {
    l: Learner,
    tree: DataTree,
    digest: Checked,
}

fn follow(mut o: Observed, seen: Arc<Mutex<Seen>>) -> std::thread::JoinHandle<Observed> {
    std::thread::spawn(move || {
        let mut changes = Vec::new();
        loop {
            match o.l.step(&mut || seen.lock().touched.clone()) {
                Ok(Event::Txn(txn)) => {
                    o.digest.apply_checked(&mut o.tree, &txn, &mut changes);
                    let mut s = seen.lock();
                    s.last_zxid = txn.txn.zxid;
                    s.applied.push((txn.txn.zxid, txn.txn.session, txn.cxid, txn.txn.op.clone()));
                }
                Ok(Event::Ping) => seen.lock().pings += 1,
                Ok(_) => {}
                Err(e) => {
                    seen.lock().error = Some(e.to_string());
                    return o;
                }
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

pub(crate) async fn exists(port: u16, path: &str) -> bool {
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
        leader_name: format!("127.0.0.1:{}", quorum[leader]),
        dial: Dialer::plain(),
        accepted_epoch,
        current_epoch,
        init_timeout: Duration::from_millis(TICK_MS * 10),
        sync_timeout: Duration::from_millis(TICK_MS * 5),
        max_buffer: 2 * 0xfffff,
        auth: None,
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
    let first_mode = l.l.mode;
    assert!(l.l.config.contains(&format!("server.{OBSERVER_SID}=")), "NEWLEADER carries the config: {}", l.l.config);
    let sender = l.l.sender();
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
    assert_eq!(l.digest.checked, informs, "ZooKeeper 3.8 sends its tree digest with every txn");
    assert_eq!(l.digest.mismatches, 0, "the tree digest agreed with the leader's after every txn");
    assert!(l.tree.sessions().contains_key(&c.id) && !l.tree.sessions().contains_key(&d.id));

    // A restart of the observer with what it holds: the leader sends only the difference.
    c.write(OpCode::Create, RequestBody::Create(create("/after", b"", 0))).await;
    let (epoch, tree) = (l.l.epoch, l.tree);
    let l2 = sync_with(opts(leader, epoch, epoch), tree).await.expect("the observer syncs again");
    eprintln!("first sync: {first_mode:?}; second: {:?}", l2.l.mode);
    assert_eq!(l2.l.mode, SyncMode::Diff, "an observer that holds the leader's recent history gets a DIFF");
    assert_same_tree(&zk_tree(zk.client[leader]).await, &l2.tree, "after the DIFF");

    // The leader is killed: the observer finds the new one through the election ports, syncs
    // with it, and the session it keeps alive outlives the change (a new ZooKeeper leader gives
    // every session a fresh timeout; the observer's pings do the rest).
    let sender = l2.l.sender();
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
    let (epoch, tree) = (l2.l.epoch, l2.tree);
    let l3 = sync_with(opts(new_leader, epoch, epoch), tree).await.expect("the observer syncs with the new leader");
    assert!(l3.l.epoch > epoch, "a new epoch: {} after {epoch}", l3.l.epoch);
    let sender = l3.l.sender();
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
    assert_eq!(l3.digest.mismatches, 0);
}

/// `Learner::sync` (blocking) on a blocking thread, applying what it brings to `tree`.
async fn sync_with(o: Options, tree: DataTree) -> Result<Observed, ZabError> {
    tokio::task::spawn_blocking(move || {
        let mut tree = tree;
        let mut digest = Checked::of(&tree);
        let mut changes = Vec::new();
        let l = Learner::sync(&o, tree.last_zxid(), &mut |s| match s {
            Synced::Snap(t) => {
                tree = *t;
                digest.reset(&tree);
            }
            Synced::Txn(t) => {
                digest.apply_checked(&mut tree, &t, &mut changes);
            }
        })?;
        Ok(Observed { l, tree, digest })
    })
    .await
    .expect("the sync's thread")
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

/// zkr's zoo.cfg as ZooKeeper's own observer's would be, plus the one zkr key.
fn observer_config(zk: &Ensemble, client_port: u16) -> zkr::config::Config {
    observer_config_with(zk, client_port, "", None)
}

/// The same with `extra` zoo.cfg lines and a JAAS file (`--jaas-config`).
pub(crate) fn observer_config_with(
    zk: &Ensemble,
    client_port: u16,
    extra: &str,
    jaas: Option<PathBuf>,
) -> zkr::config::Config {
    let dir = common::temp_dir();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("myid"), format!("{OBSERVER_SID}\n")).unwrap();
    let text = format!(
        "tickTime={TICK_MS}\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={client_port}\nclientPortAddress=127.0.0.1\n\
         admin.enableServer=false\n4lw.commands.whitelist=*\npeerType=observer\nzkr.ensembleProtocol=zab\n{}{extra}",
        dir.display(),
        zk.servers
    );
    let file = dir.join("zoo.cfg");
    std::fs::write(&file, text).unwrap();
    let args = zkr::config::ServeArgs { config: Some(file), jaas_config: jaas, ..Default::default() };
    let mut cfg = zkr::config::Config::from_args(&args).expect("the observer's zoo.cfg");
    cfg.exit_on_fatal = false;
    cfg
}

/// The next watch event on a raw connection: (type, path).
async fn next_event(raw: &mut Raw) -> (i32, String) {
    loop {
        let f = tokio::time::timeout(Duration::from_secs(10), raw.read_frame())
            .await
            .expect("an event within 10 s")
            .expect("the connection stays open");
        if i32::from_be_bytes(f[0..4].try_into().unwrap()) != -1 {
            continue;
        }
        let ty = i32::from_be_bytes(f[16..20].try_into().unwrap());
        let len = i32::from_be_bytes(f[24..28].try_into().unwrap()) as usize;
        return (ty, String::from_utf8(f[28..28 + len].to_vec()).unwrap());
    }
}

/// Every node under `/` but `/zookeeper/config` (each ZooKeeper server keeps its own there
/// while reconfig is off, ZOOKEEPER-2819).
pub(crate) async fn served_tree(port: u16) -> Vec<(String, Option<bytes::Bytes>, zkr::proto::Stat)> {
    served_tree_at(&format!("127.0.0.1:{port}")).await
}

/// `served_tree_at`, tried again while the server closes the connection: a member that has just
/// joined closes every connection when it installs the leader's snapshot, as a ZooKeeper
/// follower does when it syncs with SNAP, and a client connects again.
pub(crate) async fn served_tree_retrying(addr: &str) -> Vec<(String, Option<bytes::Bytes>, zkr::proto::Stat)> {
    for _ in 0..30 {
        let a = addr.to_owned();
        // (The tree walk panics, in its own task, if the server closes the connection.)
        if let Ok(tree) = tokio::spawn(async move { served_tree_at(&a).await }).await {
            return tree;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    panic!("{addr} closed every connection for 30 s");
}

pub(crate) async fn served_tree_at(addr: &str) -> Vec<(String, Option<bytes::Bytes>, zkr::proto::Stat)> {
    let empty_is_null = |d: Option<bytes::Bytes>| d.filter(|b| !b.is_empty());
    zk_tree_at(addr)
        .await
        .into_iter()
        .filter(|n| n.0 != "/zookeeper/config")
        .map(|(p, d, s)| (p, empty_is_null(d), s))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkr_serve_observes_a_zookeeper_38_ensemble_serves_its_tree_forwards_writes_and_follows_a_new_leader() {
    observe_a_live_ensemble(Launch::Debian).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkr_serve_observes_a_zookeeper_39_ensemble_from_maven_central() {
    observe_a_live_ensemble(Launch::Classpath(zookeeper_39_classpath())).await;
}

/// The older releases issue 24 names, from Maven Central: 3.5 sends no txn digest (it came with
/// 3.6), 3.6 and 3.7 digest every txn as 3.8 does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkr_serve_observes_zookeeper_35_36_and_37_ensembles_from_maven_central() {
    for version in ["3.5.10", "3.6.4", "3.7.2"] {
        eprintln!("--- ZooKeeper {version}");
        observe_a_live_ensemble(Launch::Classpath(zookeeper_classpath(version))).await;
    }
}

/// `zkr serve` as an observer of a live three-member ZooKeeper ensemble, from its sync through a
/// leader kill to its own restart.
async fn observe_a_live_ensemble(launch: Launch) {
    let mut zk = Ensemble::start_with(&launch);
    let leader = zk.leader().await;
    let follower = (leader + 1) % 3;
    let mut c = Session::open(zk.client[follower], 30_000).await;
    c.write(OpCode::Create, RequestBody::Create(create("/pre", b"before", 0))).await;
    c.write(OpCode::Create, RequestBody::Create(create("/pre/a", b"", 0))).await;

    // `zkr serve` with ZooKeeper's own observer lines and zkr.ensembleProtocol=zab.
    let port = free_port();
    let cfg = observer_config(&zk, port);
    let (server, _) = common::start_with(cfg.clone()).await;
    until_async("srvr says Mode: observer", 60, || async move { srvr_mode(port).await.as_deref() == Some("observer") })
        .await;
    assert_eq!(
        served_tree(port).await,
        served_tree(zk.client[leader]).await,
        "zkr serves ZooKeeper's tree, every Stat"
    );

    // A session created through zkr (forwarded createSession), an ephemeral and a write of it.
    let mut o = Session::open(port, 30_000).await;
    assert_eq!((o.id >> 56) as i64, OBSERVER_SID, "a ZooKeeper session id with the observer's myid on top");
    o.write(OpCode::Create, RequestBody::Create(create("/obs", b"mine", 1))).await;
    let Response::GetData { data, .. } =
        o.call(OpCode::GetData, RequestBody::PathWatch { path: "/obs".into(), watch: false }).await
    else {
        panic!("getData")
    };
    assert_eq!(data.as_deref(), Some(&b"mine"[..]), "a read after the session's own write sees it");
    assert!(exists(zk.client[follower], "/obs").await, "the write reached ZooKeeper");
    let err = o.try_call(OpCode::Create, RequestBody::Create(create("/obs", b"", 0))).await;
    assert_eq!(err, -110, "the leader's error txn answers the client: NodeExists");
    let err = o.try_call(OpCode::Delete, RequestBody::Delete { path: "/pre".into(), version: -1 }).await;
    assert_eq!(err, -111, "NotEmpty");

    // A watch set on zkr fires for a write made on ZooKeeper.
    o.call(OpCode::GetData, RequestBody::PathWatch { path: "/pre".into(), watch: true }).await;
    c.write(OpCode::SetData, RequestBody::SetData { path: "/pre".into(), data: Some("after".into()), version: -1 })
        .await;
    assert_eq!(next_event(&mut o.raw).await, (3, "/pre".to_owned()), "NodeDataChanged on zkr");
    let Response::Path(p) = o.call(OpCode::Sync, RequestBody::Path { path: "/pre".into() }).await else {
        panic!("sync")
    };
    assert_eq!(p, "/pre");
    let Response::GetData { data, .. } =
        o.call(OpCode::GetData, RequestBody::PathWatch { path: "/pre".into(), watch: false }).await
    else {
        panic!("getData")
    };
    assert_eq!(data.as_deref(), Some(&b"after"[..]));

    // Sessions move both ways: ZooKeeper's session re-attaches on zkr (revalidated by the
    // leader) and writes there; zkr's re-attaches on a ZooKeeper server with zkr's password.
    c.reattach(port, 30_000).await.expect("ZooKeeper's session re-attaches on zkr");
    c.write(OpCode::SetData, RequestBody::SetData { path: "/pre/a".into(), data: Some("via zkr".into()), version: -1 })
        .await;
    o.reattach(zk.client[follower], 30_000)
        .await
        .expect("zkr's session re-attaches on ZooKeeper with the password zkr gave");
    o.write(OpCode::SetData, RequestBody::SetData { path: "/obs".into(), data: Some("moved".into()), version: -1 })
        .await;
    assert_eq!(served_tree(port).await, served_tree(zk.client[leader]).await, "the same tree after both moves");
    // Closed now, not left to expire (its ephemeral going) in the middle of a later comparison.
    o.write(OpCode::CloseSession, RequestBody::Empty).await;
    // A session closed on ZooKeeper is expired for zkr too (the leader says so on REVALIDATE),
    // and so is a live one brought with the wrong password (checked on zkr).
    let mut dead = Session::open(zk.client[follower], 30_000).await;
    dead.write(OpCode::CloseSession, RequestBody::Empty).await;
    assert!(dead.reattach(port, 30_000).await.is_none(), "a closed session re-attaching on zkr is expired");
    let mut wrong = Session::open(zk.client[follower], 30_000).await;
    wrong.password[0] ^= 1;
    assert!(wrong.reattach(port, 30_000).await.is_none(), "a wrong password is refused");

    // A real client: kazoo on zkr beside kazoo on ZooKeeper (a registry, watches, errors, a
    // transaction, a session's close). It fails the test if kazoo is missing.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/zab/kazoo_observer.py");
    let out = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(format!("127.0.0.1:{port}"))
        .arg(format!("127.0.0.1:{}", zk.client[follower]))
        .output()
        .expect("python3 runs");
    eprintln!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "kazoo on the zkr observer failed (apt-get install python3-kazoo)");

    // The leader is killed: zkr closes its clients' connections, syncs with the next leader,
    // and a session kept on zkr re-attaches there and keeps its ephemeral.
    let mut k = Session::open(port, 4000).await;
    k.write(OpCode::Create, RequestBody::Create(create("/obs-kept", b"", 1))).await;
    let _ = zk.children[leader].kill();
    let _ = zk.children[leader].wait();
    let t0 = Instant::now();
    let survivor = (0..3).find(|i| *i != leader).unwrap();
    until_async(
        "zkr synced with a new leader",
        30,
        || async move { srvr_mode(port).await.as_deref() == Some("observer") },
    )
    .await;
    let mut attached = false;
    while !attached && t0.elapsed() < Duration::from_secs(30) {
        attached = k.reattach(port, 4000).await.is_some();
        if !attached {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    assert!(attached, "the session re-attached on zkr after the leader change");
    eprintln!("session back on zkr {:?} after the leader kill", t0.elapsed());
    for _ in 0..9 {
        k.ping().await;
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert!(exists(zk.client[survivor], "/obs-kept").await, "kept alive through zkr's PING replies to the new leader");
    k.write(OpCode::SetData, RequestBody::SetData { path: "/obs-kept".into(), data: Some("x".into()), version: -1 })
        .await;
    // Its 4 s timeout would otherwise end it (and its ephemeral) during the comparison below.
    k.write(OpCode::CloseSession, RequestBody::Empty).await;
    let new_leader = zk.leader_of(&[survivor, (0..3).find(|i| *i != leader && *i != survivor).unwrap()]).await;
    assert_eq!(
        served_tree(port).await,
        served_tree(zk.client[new_leader]).await,
        "the same tree after the leader change"
    );
    let mntr = four_letter(port, "mntr").await;
    assert!(mntr.contains("zk_digest_mismatches_count\t0\n"), "ZooKeeper's digest agreed after every txn: {mntr}");
    assert!(mntr.contains("zk_server_state\tobserver\n"), "{mntr}");

    // The way back: with zkr stopped, ZooKeeper goes on as it was.
    server.shutdown().await;
    let mut w = Session::open(zk.client[survivor], 30_000).await;
    w.write(OpCode::Create, RequestBody::Create(create("/without-zkr", b"", 0))).await;
    assert!(exists(zk.client[new_leader], "/without-zkr").await);

    // It kept what it observed: the epochs, as ZooKeeper's files, and a snapshot.
    let epoch: i64 = std::fs::read_to_string(cfg.data_dir.join("zab/acceptedEpoch")).unwrap().trim().parse().unwrap();
    assert!(epoch >= 2, "the new leader's epoch is kept: {epoch}");
    assert_eq!(std::fs::read_to_string(cfg.data_dir.join("zab/currentEpoch")).unwrap().trim(), epoch.to_string());
    let snapshots = walk(&cfg.data_dir)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("snapshot.")))
        .count();
    assert!(snapshots >= 1, "a snapshot of the observed tree");

    // zkr restarted on the same data directory syncs again and serves the same tree.
    let data_dir = cfg.data_dir.clone();
    let (server, _) = common::start_with(cfg).await;
    until_async("srvr says Mode: observer after the restart", 30, || async move {
        srvr_mode(port).await.as_deref() == Some("observer")
    })
    .await;
    let served = served_tree(port).await;
    assert_eq!(served, served_tree(zk.client[new_leader]).await, "the same tree after zkr's restart");
    server.shutdown().await;

    // The way back from an observer's directory (issue 39 item 2): `zkr export-zookeeper` writes
    // what it served, every field (its snapshots are read as a standalone server's).
    let out = data_dir.with_extension("zk");
    zkr::export::export(&data_dir, &out, &zkr::export::Options::default()).expect("the observer's directory exports");
    let files = zkr::import::files::snapshots(&out).expect("the export's snapshot");
    let got = zkr::import::snapfile::read(&files[0]).expect("ZooKeeper's format reads back");
    let fields = |t: &[(String, Option<bytes::Bytes>, zkr::proto::Stat)]| -> Vec<_> {
        let mut v: Vec<_> = t
            .iter()
            .map(|(p, d, s)| {
                (p.clone(), d.clone(), [s.czxid, s.mzxid, s.pzxid, s.ephemeral_owner], s.version, s.aversion)
            })
            .collect();
        v.sort();
        v
    };
    let mut exported = Vec::new();
    got.visit(|p, n| {
        if p != "/zookeeper/config" {
            exported.push((p.to_owned(), n.data.clone().filter(|d| !d.is_empty()), n.wire_stat()));
        }
    });
    assert_eq!(fields(&exported), fields(&served), "the export holds the tree the observer served");
}

pub(crate) async fn until_async<F: Fn() -> Fut, Fut: std::future::Future<Output = bool>>(what: &str, secs: u64, f: F) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f().await {
        assert!(Instant::now() < deadline, "timed out after {secs} s waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
