//! Issue 24, item 2: `zkr takeover` turns the zkr observers of a ZooKeeper ensemble whose
//! participants were stopped into a zkr ensemble, with every znode and session, zxids above
//! ZooKeeper's epoch, and clients' sessions and ephemerals kept.
//!
//! Three `zkr serve` processes observe three ZooKeeper participants (Debian's 3.8, and 3.9.5
//! from Maven Central), each observer on its own loopback address (127.0.0.9–11) so their
//! AdminServers share one port, as on separate hosts. The takeover re-executes the observers, so
//! they run as processes. The observers (and so the new ensemble) run at ZooKeeper's usual
//! tickTime 2000, which sets zkr's election timeouts; the ZooKeeper participants at 500 ms,
//! which only makes them start faster.

use crate::zab_observer::{
    create, free_port, served_tree_at, until_async, zookeeper_39_classpath, Ensemble, Launch, Session,
};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use zkr::proto::{OpCode, RequestBody};
use zkr::takeover::http::request;

/// The observers' tickTime, ZooKeeper's default.
const TICK_MS: u64 = 2000;
const ZKR: &str = env!("CARGO_BIN_EXE_zkr");

/// One zkr observer process.
struct Observer {
    id: u64,
    ip: String,
    client: u16,
    dir: PathBuf,
    child: Child,
}

impl Observer {
    fn addr(&self) -> String {
        format!("{}:{}", self.ip, self.client)
    }

    /// `sasl`: zoo.cfg's quorum SASL lines and the JAAS file (`--jaas-config`).
    fn start(id: u64, ip: &str, client: u16, admin: u16, servers: &str, sasl: Option<&(String, PathBuf)>) -> Observer {
        let dir = crate::common::temp_dir();
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("myid"), format!("{id}\n")).unwrap();
        let text = format!(
            "tickTime={TICK_MS}\ninitLimit=10\nsyncLimit=5\ndataDir={}\nclientPort={client}\nclientPortAddress={ip}\n\
             admin.serverAddress={ip}\nadmin.serverPort={admin}\n4lw.commands.whitelist=*\n\
             peerType=observer\nzkr.ensembleProtocol=zab\n{servers}{}",
            dir.display(),
            sasl.map_or("", |(lines, _)| lines.as_str())
        );
        std::fs::write(dir.join("zoo.cfg"), text).unwrap();
        let out = std::fs::File::create(dir.join("zkr.out")).unwrap();
        let mut cmd = Command::new(ZKR);
        cmd.arg("serve").arg("--config").arg(dir.join("zoo.cfg"));
        if let Some((_, jaas)) = sasl {
            cmd.arg("--jaas-config").arg(jaas);
        }
        let child = cmd
            .env("RUST_LOG", "info")
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .stdin(Stdio::null())
            .spawn()
            .expect("start zkr");
        Observer { id, ip: ip.to_owned(), client, dir, child }
    }

    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("zkr.out")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        } else {
            eprintln!("--- zkr server.{} ({}) ---\n{}", self.id, self.dir.display(), self.log_tail());
        }
    }
}

async fn mode(addr: &str) -> Option<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.ok()?;
    s.write_all(b"srvr").await.ok()?;
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(2), s.read_to_string(&mut out)).await.ok()?.ok()?;
    out.lines().find_map(|l| l.strip_prefix("Mode: ").map(str::to_owned))
}

fn takeover(config: &Path, jaas: Option<&Path>) -> std::process::Output {
    let mut cmd = Command::new(ZKR);
    cmd.arg("takeover").arg("--config").arg(config);
    if let Some(j) = jaas {
        cmd.arg("--jaas-config").arg(j);
    }
    cmd.output().expect("zkr takeover runs")
}

/// A create through `s`, re-attached at `addr`; `None` if the member does not answer yet.
async fn try_create_at(s: &mut Session, addr: &str, path: &str) -> Option<(i32, i64)> {
    s.reattach_at(addr, 6000).await?;
    s.xid += 1;
    let req = zkr::proto::Request { xid: s.xid, op: OpCode::Create, body: RequestBody::Create(create(path, b"", 0)) };
    if !s.raw.try_send(&req).await {
        return None;
    }
    let (h, _) = s.raw.recv(OpCode::Create).await?;
    Some((h.err, h.zxid))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkr_takeover_turns_the_observers_of_a_stopped_zookeeper_38_ensemble_into_a_zkr_ensemble_keeping_sessions() {
    take_over(Launch::Debian, false, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkr_takeover_of_a_zookeeper_39_ensemble_from_maven_central() {
    take_over(Launch::Classpath(zookeeper_39_classpath()), true, false).await;
}

/// An ensemble that requires quorum SASL: the observers log in to ZooKeeper's members, and after
/// the takeover the same zoo.cfg and JAAS file make the zkr members require it of each other
/// (serverRequireSasl=true: members that did not log in could not form the ensemble).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkr_takeover_of_a_zookeeper_38_ensemble_that_requires_quorum_sasl() {
    take_over(Launch::Debian, false, true).await;
}

/// Three zkr observers of a three-participant ZooKeeper ensemble, then the takeover. With
/// `silent_first`, a first attempt finds one observer silent (SIGSTOPped) and is refused: that
/// observer may hold txns the others lack. With `sasl`, ZooKeeper requires quorum SASL.
async fn take_over(launch: Launch, silent_first: bool, sasl: bool) {
    let ips = ["127.0.0.9", "127.0.0.10", "127.0.0.11"];
    let clients = [free_port(), free_port(), free_port()];
    let admin = free_port();
    let mut lines = String::new();
    for (i, ip) in ips.iter().enumerate() {
        lines += &format!("server.{}={ip}:{}:{}:observer;{ip}:{}\n", 9 + i, free_port(), free_port(), clients[i]);
    }
    let sasl = sasl.then(|| {
        let dir = crate::common::temp_dir();
        (crate::zab_quorum_sasl::SASL.to_owned(), crate::zab_quorum_sasl::jaas(&dir, "s3cret"))
    });
    let mut zk = match &sasl {
        Some((lines_sasl, jaas)) => {
            let props = [format!("-Djava.security.auth.login.config={}", jaas.display())];
            Ensemble::start_configured(&launch, &lines, lines_sasl, &props)
        }
        None => Ensemble::start_observed(&launch, &lines),
    };
    let jaas = sasl.as_ref().map(|(_, j)| j.as_path());
    let leader = zk.leader().await;
    let mut c = Session::open(zk.client[leader], 30_000).await;
    c.write(OpCode::Create, RequestBody::Create(create("/dubbo", b"", 0))).await;
    c.write(OpCode::Create, RequestBody::Create(create("/dubbo/zk-provider", b"zk", 1))).await;

    let obs: Vec<Observer> =
        (0..3).map(|i| Observer::start(9 + i as u64, ips[i], clients[i], admin, &zk.servers, sasl.as_ref())).collect();
    for o in &obs {
        let a = o.addr();
        until_async("the zkr observer synced", 60, || {
            let a = a.clone();
            async move { mode(&a).await.as_deref() == Some("observer") }
        })
        .await;
    }
    let (o9, o10) = (&obs[0], &obs[1]);
    // A session on zkr with an ephemeral, and writes through both observers.
    let mut s = Session::open_at(&o9.addr(), 20_000).await;
    s.write(OpCode::Create, RequestBody::Create(create("/dubbo/zkr-provider", b"zkr", 1))).await;
    let mut w = Session::open_at(&o10.addr(), 20_000).await;
    for i in 0..20 {
        w.write(OpCode::Create, RequestBody::Create(create(&format!("/dubbo/n{i}"), b"v", 0))).await;
    }
    w.write(OpCode::CloseSession, RequestBody::Empty).await;
    let zk_zxid = c.last_zxid.max(s.last_zxid);
    let before = served_tree_at(&format!("127.0.0.1:{}", zk.client[leader])).await;

    // Refused while ZooKeeper runs, naming a participant; nothing changes.
    let out = takeover(&o9.dir.join("zoo.cfg"), jaas);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "refused while ZooKeeper runs: {err}");
    assert!(err.contains("ZooKeeper participants still answer: server."), "{err}");
    assert_eq!(mode(&o9.addr()).await.as_deref(), Some("observer"));
    // An observer asked directly refuses too while it follows ZooKeeper's leader.
    let admin9 = format!("{}:{admin}", ips[0]);
    let post = move || request(&admin9, "POST", "/zkr/takeover?seed=9&members=9,10,11", Duration::from_secs(5));
    let (code, body) = tokio::task::spawn_blocking(post.clone()).await.unwrap().expect("the AdminServer answers");
    assert_eq!(code, 409, "{body}");
    assert!(body.contains("still follows ZooKeeper's leader"), "{body}");

    // Every ZooKeeper participant stops; the takeover runs at once, and the zkr session's
    // client writes until the new ensemble acknowledges.
    for ch in &mut zk.children {
        let _ = ch.kill();
        let _ = ch.wait();
    }
    let stopped = Instant::now();
    if silent_first {
        let pid = obs[2].child.id().to_string();
        assert!(Command::new("kill").args(["-STOP", &pid]).status().unwrap().success());
        let out = takeover(&o9.dir.join("zoo.cfg"), jaas);
        assert!(Command::new("kill").args(["-CONT", &pid]).status().unwrap().success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "refused while server.11 is silent: {err}");
        assert!(err.contains("server.11") && err.contains("--without 11"), "{err}");
        assert_eq!(mode(&o9.addr()).await, None, "nothing changed: server.9 is still an observer without a leader");
    }
    let config = o9.dir.join("zoo.cfg");
    let jaas_file = jaas.map(Path::to_path_buf);
    let tool = tokio::task::spawn_blocking(move || takeover(&config, jaas_file.as_deref()));
    let mut acked = None;
    while acked.is_none() && stopped.elapsed() < Duration::from_secs(60) {
        for o in &obs {
            if let Some((0, zxid)) = try_create_at(&mut s, &o.addr(), "/after-takeover").await {
                acked = Some((zxid, stopped.elapsed()));
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let out = tool.await.unwrap();
    eprintln!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "zkr takeover succeeded");
    let (zxid, pause) = acked.expect("the zkr ensemble acknowledged a write within 60 s");
    eprintln!(
        "write pause: {} ms from the last ZooKeeper participant stopped to the first write acknowledged",
        pause.as_millis()
    );
    assert!(pause < Duration::from_secs(15), "the write pause was {pause:?}");
    assert!(zxid >> 32 > zk_zxid >> 32, "zxids continue above ZooKeeper's epoch: 0x{zxid:x} after 0x{zk_zxid:x}");

    // One leader, two followers; the same tree as ZooKeeper's plus the new node, on each.
    let mut modes = Vec::new();
    for o in &obs {
        let a = o.addr();
        until_async("every member serves", 30, || {
            let a = a.clone();
            async move { matches!(mode(&a).await.as_deref(), Some("leader" | "follower")) }
        })
        .await;
        modes.push(mode(&a).await.unwrap_or_default());
    }
    modes.sort();
    assert_eq!(modes, ["follower", "follower", "leader"]);
    // ("/" itself changed with the new child: its child version by one.)
    let without_root = |t: Vec<(String, Option<bytes::Bytes>, zkr::proto::Stat)>| {
        t.into_iter().filter(|n| n.0 != "/" && n.0 != "/after-takeover").collect::<Vec<_>>()
    };
    let root_cversion = before[0].2.cversion;
    let before = without_root(before);
    for o in &obs {
        let after = served_tree_at(&o.addr()).await;
        assert_eq!(after[0].2.cversion, root_cversion + 1, "server.{}: / got one child", o.id);
        assert_eq!(without_root(after), before, "server.{} serves ZooKeeper's tree, every Stat", o.id);
    }
    // ZooKeeper's session re-attaches on zkr with ZooKeeper's password and writes; its
    // ephemeral and zkr's session's are still there.
    c.reattach_at(&o10.addr(), 30_000).await.expect("ZooKeeper's session re-attaches on the zkr ensemble");
    c.write(OpCode::SetData, RequestBody::SetData { path: "/dubbo".into(), data: Some("zkr".into()), version: -1 })
        .await;
    let tree = served_tree_at(&o9.addr()).await;
    for p in ["/dubbo/zk-provider", "/dubbo/zkr-provider"] {
        let n = tree.iter().find(|n| n.0 == p).unwrap_or_else(|| panic!("{p} kept"));
        assert_ne!(n.2.ephemeral_owner, 0, "{p} is still an ephemeral");
    }
    // Every member applied the same: equal digests at the same zxid.
    let digests = || async {
        let mut out = Vec::new();
        for o in &obs {
            let mntr = four_letter_at(&o.addr(), "mntr").await;
            let get = |k: &str| mntr.lines().find_map(|l| l.strip_prefix(k).map(|v| v.trim().to_owned()));
            out.push((get("zk_digest_zxid\t"), get("zk_digest\t")));
        }
        out
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut d = digests().await;
    while !(d[0].0.is_some() && d.iter().all(|x| *x == d[0])) {
        assert!(Instant::now() < deadline, "the members' digests differ: {d:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
        d = digests().await;
    }
    // zoo.cfg now names the zkr ensemble; the observer's is kept beside it.
    let cfg = std::fs::read_to_string(o9.dir.join("zoo.cfg")).unwrap();
    assert!(!cfg.contains("zkr.ensembleProtocol") && !cfg.contains("server.1="), "{cfg}");
    assert!(cfg.contains(&format!("server.10={}:", ips[1])) && cfg.contains(":participant;"), "{cfg}");
    assert!(o9.dir.join("zoo.cfg.observer").exists());
    // Quorum SASL stays required: the members that formed this ensemble logged in to each other.
    assert_eq!(sasl.is_some(), cfg.contains("quorum.auth.serverRequireSasl=true"), "{cfg}");
    // The members set what they observed aside; the seed's snapshot became the ensemble's.
    let aside = std::fs::read_dir(&o10.dir)
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("observed-"));
    assert!(aside, "server.10 kept its observed state aside");
    // Asked again, the tool refuses: these are no observers any more.
    let out = takeover(&o9.dir.join("zoo.cfg.observer"), jaas);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
}

async fn four_letter_at(addr: &str, word: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(word.as_bytes()).await.expect("send");
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(2), s.read_to_string(&mut out)).await.expect("in time").expect("read");
    out
}
