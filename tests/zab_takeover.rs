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

use crate::takeover_kit::{
    admin, error_of, log_proof, mode, start_observers, super_auth, super_header, takeover, Observer, ObserverPlan,
    Secure, Secured,
};
use crate::zab_observer::{
    create, served_tree_at, served_tree_retrying, until_async, zookeeper_39_classpath, Ensemble, Launch, Session,
};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zkr::proto::{OpCode, RequestBody};
use zkr::security::quorum_tls::QuorumTls;
use zkr::takeover::http::AdminClient;

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
    take_over(Launch::Debian, false, Secure::None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkr_takeover_of_a_zookeeper_39_ensemble_from_maven_central() {
    take_over(Launch::Classpath(zookeeper_39_classpath()), true, Secure::None).await;
}

/// An ensemble secured as ZooKeeper's guide secures one: its members speak TLS to each other
/// (sslQuorum) and log in with quorum SASL. The observers do both towards ZooKeeper's members,
/// and after the takeover the same zoo.cfg and JAAS file make the zkr members do both with each
/// other (serverRequireSasl=true: members that did not log in could not form the ensemble).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkr_takeover_of_a_zookeeper_38_ensemble_that_requires_quorum_tls_and_sasl() {
    take_over(crate::zab_quorum_tls::debian_with_netty(), false, Secure::TlsAndSasl).await;
}

/// Three zkr observers of a three-participant ZooKeeper ensemble, then the takeover. With
/// `silent_first`, a first attempt finds one observer silent (SIGSTOPped) and is refused: that
/// observer may hold txns the others lack. `secure`: what ZooKeeper's members require.
async fn take_over(launch: Launch, silent_first: bool, secure: Secure) {
    let plan = ObserverPlan::new();
    let (ips, lines) = (plan.ips.clone(), plan.lines.clone());
    let secured = Secured::new(secure);
    // The takeover authenticates: the x509 super user's certificate over HTTPS, or the super
    // user's digest.
    let (auth, header) = match secure {
        Secure::TlsAndSasl => ("x509".to_owned(), "x509".to_owned()),
        Secure::None => (super_auth(), super_header()),
    };
    let mut zk = Ensemble::start_configured(&launch, &lines, &secured.lines, &secured.props());
    let jaas = secured.jaas.as_deref();
    let zk_data: Vec<PathBuf> = (0..3).map(|i| zk.data_dir(i)).collect();
    let leader = zk.leader().await;
    let mut c = Session::open(zk.client[leader], 30_000).await;
    c.write(OpCode::Create, RequestBody::Create(create("/dubbo", b"", 0))).await;
    c.write(OpCode::Create, RequestBody::Create(create("/dubbo/zk-provider", b"zk", 1))).await;

    let obs = start_observers(&plan, &zk.servers, &secured.for_observers()).await;
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

    refused_while_zookeeper_runs(o9, &secured, &zk_data, &auth, &header).await;

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
        let out = takeover(&o9.dir.join("zoo.cfg"), jaas, &zk_data, Some(&auth));
        assert!(Command::new("kill").args(["-CONT", &pid]).status().unwrap().success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "refused while server.11 is silent: {err}");
        assert!(err.contains("server.11") && err.contains("--without 11"), "{err}");
        assert_eq!(mode(&o9.addr()).await, None, "nothing changed: server.9 is still an observer without a leader");
    }
    let config = o9.dir.join("zoo.cfg");
    let jaas_file = jaas.map(Path::to_path_buf);
    let data = zk_data.clone();
    let tool_auth = auth.clone();
    let tool = tokio::task::spawn_blocking(move || takeover(&config, jaas_file.as_deref(), &data, Some(&tool_auth)));
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
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("ZooKeeper's logs: server.1 0x"), "the participants' logs were checked: {said}");
    let (zxid, pause) = acked.expect("the zkr ensemble acknowledged a write within 60 s");
    eprintln!(
        "write pause: {} ms from the last ZooKeeper participant stopped to the first write acknowledged",
        pause.as_millis()
    );
    assert!(pause < Duration::from_secs(15), "the write pause was {pause:?}");
    assert!(zxid >> 32 > zk_zxid >> 32, "zxids continue above ZooKeeper's epoch: 0x{zxid:x} after 0x{zk_zxid:x}");

    one_ensemble_serving_zookeepers_tree(&obs, before).await;
    // ZooKeeper's session re-attaches on zkr with ZooKeeper's password and writes; its
    // ephemeral and zkr's session's are still there.
    c.reattach_at(&o10.addr(), 30_000).await.expect("ZooKeeper's session re-attaches on the zkr ensemble");
    c.write(OpCode::SetData, RequestBody::SetData { path: "/dubbo".into(), data: Some("zkr".into()), version: -1 })
        .await;
    let tree = served_tree_retrying(&o9.addr()).await;
    for p in ["/dubbo/zk-provider", "/dubbo/zkr-provider"] {
        let n = tree.iter().find(|n| n.0 == p).unwrap_or_else(|| panic!("{p} kept"));
        assert_ne!(n.2.ephemeral_owner, 0, "{p} is still an ephemeral");
    }
    equal_digests(&obs).await;
    converted(o9, o10, &ips[1], secure);
    // Asked again, the tool refuses: these are no observers any more.
    let out = takeover(&o9.dir.join("zoo.cfg.observer"), jaas, &zk_data, Some(&auth));
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Before ZooKeeper stops: the tool refuses, naming a participant, and an observer asked
/// directly (authenticated, with what ZooKeeper's logs hold) refuses too while it follows
/// ZooKeeper's leader; nothing changes.
async fn refused_while_zookeeper_runs(o9: &Observer, secured: &Secured, zk_data: &[PathBuf], auth: &str, header: &str) {
    let jaas = secured.jaas.as_deref();
    let out = takeover(&o9.dir.join("zoo.cfg"), jaas, zk_data, Some(auth));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "refused while ZooKeeper runs: {err}");
    assert!(err.contains("ZooKeeper participants still answer: server."), "{err}");
    assert_eq!(mode(&o9.addr()).await.as_deref(), Some("observer"));
    let admin9 = o9.admin_addr();
    let path = "/zkr/takeover?seed=9&members=9,10,11&check=1";
    let proof = log_proof(zk_data);
    let answer = client_of(o9.config(), jaas, None, header).request(&admin9, "POST", path, Some(&proof)).await;
    let (code, why) = error_of(&answer.expect("the AdminServer answers"));
    assert_eq!(code, 409, "{why}");
    assert!(why.contains("still follows ZooKeeper's leader") && why.contains("participants still answer"), "{why}");
    if secured.dir.is_some() {
        https_only_for_trusted_certificates(secured, o9.config(), jaas, &admin9, &proof).await;
    }
}

/// One leader, two followers; the same tree as ZooKeeper's (`before`) plus the new node, on each.
async fn one_ensemble_serving_zookeepers_tree(
    obs: &[Observer],
    before: Vec<(String, Option<bytes::Bytes>, zkr::proto::Stat)>,
) {
    let mut modes = Vec::new();
    for o in obs {
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
    for o in obs {
        let after = served_tree_retrying(&o.addr()).await;
        assert_eq!(after[0].2.cversion, root_cversion + 1, "server.{}: / got one child", o.id);
        assert_eq!(without_root(after), before, "server.{} serves ZooKeeper's tree, every Stat", o.id);
    }
}

/// Every member applied the same: equal digests at the same zxid.
async fn equal_digests(obs: &[Observer]) {
    let digests = || async {
        let mut out = Vec::new();
        for o in obs {
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
}

/// zoo.cfg now names the zkr ensemble (with the security `secure` asked for); the observer's
/// is kept beside it; the members set what they observed aside, the seed's snapshot became the
/// ensemble's.
fn converted(o9: &Observer, o10: &Observer, ip10: &str, secure: Secure) {
    let cfg = std::fs::read_to_string(o9.dir.join("zoo.cfg")).unwrap();
    assert!(!cfg.contains("zkr.ensembleProtocol") && !cfg.contains("server.1="), "{cfg}");
    assert!(cfg.contains(&format!("server.10={ip10}:")) && cfg.contains(":participant;"), "{cfg}");
    // New sessions of the migrated ensemble get ZooKeeper's passwords: the way back keeps them.
    assert!(cfg.contains("\nzkr.zookeeperPasswords=true\n"), "{cfg}");
    assert!(o9.dir.join("zoo.cfg.observer").exists());
    // Quorum SASL and TLS stay required: the members that formed this ensemble logged in to
    // each other over TLS.
    let secured_cfg = cfg.contains("quorum.auth.serverRequireSasl=true") && cfg.contains("sslQuorum=true");
    assert_eq!(secure == Secure::TlsAndSasl, secured_cfg, "{cfg}");
    let aside = std::fs::read_dir(&o10.dir)
        .unwrap()
        .flatten()
        .any(|e| e.file_name().to_string_lossy().starts_with("observed-"));
    assert!(aside, "server.10 kept its observed state aside");
}

/// The schedule that loses an acknowledged write if nobody looks at ZooKeeper's logs: the
/// leader drops its observers (here: they stop answering for longer than syncLimit), commits a
/// write a client is told succeeded, and the participants stop before any observer hears of
/// it. The observers all agree with each other, so only the participants' logs show the gap:
/// the takeover refuses, naming it. ZooKeeper started again brings the observers up to date,
/// and once it is stopped again the takeover goes ahead with the write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkr_takeover_refuses_while_zookeepers_logs_hold_a_write_no_observer_received() {
    let plan = ObserverPlan::new();
    let mut zk = Ensemble::start_observed(&Launch::Debian, &plan.lines);
    let zk_data: Vec<PathBuf> = (0..3).map(|i| zk.data_dir(i)).collect();
    let leader = zk.leader().await;
    let mut c = Session::open(zk.client[leader], 60_000).await;
    c.write(OpCode::Create, RequestBody::Create(create("/seen", b"", 0))).await;
    let secured = Secured::new(Secure::None);
    let obs = start_observers(&plan, &zk.servers, &secured).await;

    // The observers stop answering; the leader drops them after syncLimit ticks.
    let signal = |sig: &str| {
        for o in &obs {
            assert!(Command::new("kill").args([sig, &o.child.id().to_string()]).status().unwrap().success());
        }
    };
    signal("-STOP");
    let leader_port = zk.client[leader];
    until_async("the ZooKeeper leader dropped its observers", 30, || async move {
        let mntr = crate::zab_observer::four_letter(leader_port, "mntr").await;
        mntr.contains("zk_synced_observers\t0")
    })
    .await;
    c.write(OpCode::Create, RequestBody::Create(create("/missed", b"acknowledged", 0))).await;
    let missed = c.last_zxid;
    for ch in &mut zk.children {
        let _ = ch.kill();
        let _ = ch.wait();
    }
    signal("-CONT");

    let config = obs[0].dir.join("zoo.cfg");
    let out = takeover(&config, None, &zk_data, Some(&super_auth()));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "refused: {err}");
    assert!(err.contains(&format!("hold txns up to 0x{missed:x}")), "names the write no observer holds: {err}");
    // Asked directly by the super user, an observer refuses itself: without the log proof, and
    // with it (the seed lacks the write).
    let (admin9, path) = (obs[0].admin_addr(), "/zkr/takeover?seed=9&members=9,10,11&check=1");
    let (code, why) = error_of(&admin(&admin9, "POST", path, Some(&super_header()), None).await);
    assert_eq!(code, 409, "{why}");
    assert!(why.contains("carries no proof of what ZooKeeper's logs hold"), "{why}");
    let proof = log_proof(&zk_data);
    let (code, why) = error_of(&admin(&admin9, "POST", path, Some(&super_header()), Some(&proof)).await);
    assert_eq!(code, 409, "{why}");
    assert!(why.contains(&format!("hold txns up to 0x{missed:x}")), "{why}");
    // What a takeover without the check would have seeded from: no observer holds the write.
    for o in &obs {
        let (code, body) = admin(&o.admin_addr(), "GET", "/zkr/takeover", None, None).await;
        let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
        let zxid = v["zxid"].as_i64().unwrap_or(i64::MAX);
        assert!(code == 200 && zxid < missed, "server.{} applied 0x{zxid:x}, the write is 0x{missed:x}", o.id);
    }
    // Without the participants' data the tool does not take over blind.
    let bare = takeover(&config, None, &[], Some(&super_auth()));
    assert_eq!(bare.status.code(), Some(2), "{}", String::from_utf8_lossy(&bare.stderr));
    for o in &obs {
        assert_eq!(mode(&o.addr()).await, None, "nothing changed: server.{} is an observer without a leader", o.id);
    }

    // ZooKeeper again: the observers sync and get the write; stopped again, the takeover goes on.
    for i in 0..3 {
        zk.restart(i);
    }
    zk.leader().await;
    for o in &obs {
        let a = o.addr();
        until_async("the observer synced again, with the write", 60, || {
            let a = a.clone();
            async move {
                // (The tree walk panics, in its own task, if the observer closes the connection.)
                let walk = tokio::spawn(async move { served_tree_at(&a).await });
                walk.await.is_ok_and(|t| t.iter().any(|n| n.0 == "/missed"))
            }
        })
        .await;
    }
    for ch in &mut zk.children {
        let _ = ch.kill();
        let _ = ch.wait();
    }
    let out =
        tokio::task::spawn_blocking(move || takeover(&config, None, &zk_data, Some(&super_auth()))).await.unwrap();
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let a = obs[1].addr();
    until_async("server.10 serves", 30, || {
        let a = a.clone();
        async move { matches!(mode(&a).await.as_deref(), Some("leader" | "follower")) }
    })
    .await;
    let tree = served_tree_retrying(&a).await;
    let node = tree.iter().find(|n| n.0 == "/missed").expect("the acknowledged write is in the zkr ensemble");
    assert_eq!(node.1.as_deref(), Some(&b"acknowledged"[..]));
}

async fn four_letter_at(addr: &str, word: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(word.as_bytes()).await.expect("send");
    let mut out = String::new();
    tokio::time::timeout(Duration::from_secs(2), s.read_to_string(&mut out)).await.expect("in time").expect("read");
    out
}

/// A client of the observers' AdminServers as the observer's zoo.cfg at `config` has them
/// served (HTTPS with its `ssl.quorum.*` stores; `key_store` instead of its own), sending the
/// `Authorization` header `auth`.
fn client_of(config: PathBuf, jaas: Option<&Path>, key_store: Option<&Path>, auth: &str) -> AdminClient {
    let args =
        zkr::config::ServeArgs { config: Some(config), jaas_config: jaas.map(Path::to_path_buf), ..Default::default() };
    let cfg = zkr::config::Config::from_args(&args).expect("the observer's zoo.cfg");
    let tls: Option<Arc<QuorumTls>> = cfg.admin_tls.map(|mut a| {
        if let Some(k) = key_store {
            a.tls.stores.key_store.path = k.to_owned();
        }
        QuorumTls::load(a.tls).expect("the AdminServer's stores")
    });
    AdminClient::new(tls, Some(auth.to_owned()).filter(|a| !a.is_empty()), Duration::from_secs(10))
}

/// `admin.forceHttps` and `admin.needClientAuth`: plain HTTP is not served, a certificate from
/// another CA is refused in the handshake, and a trusted certificate whose subject is not the
/// x509 super user (nor named by `/`'s ACL) is not authorized.
async fn https_only_for_trusted_certificates(
    secured: &Secured,
    config: PathBuf,
    jaas: Option<&Path>,
    admin9: &str,
    proof: &str,
) {
    let path = "/zkr/takeover?seed=9&members=9,10,11&check=1";
    let plain = AdminClient::new(None, Some("x509".into()), Duration::from_secs(5));
    let answer = plain.request(admin9, "GET", "/commands/ruok", None).await;
    assert!(!matches!(answer, Ok((200, _))), "no plain HTTP: {answer:?}");
    let dir = secured.dir.as_deref().expect("the certificates' directory");
    let rogue =
        crate::common::certs::Ca::new(&dir.join("rogue"), "rogue").key_store("member", crate::zab_quorum_tls::NAMES);
    let answer = client_of(config.clone(), jaas, Some(&rogue), "x509").request(admin9, "POST", path, Some(proof)).await;
    assert!(answer.is_err(), "a certificate of another CA is refused: {answer:?}");
    let other = secured.key_store("other");
    let answer = client_of(config.clone(), jaas, Some(&other), "x509").request(admin9, "POST", path, Some(proof)).await;
    assert_eq!(error_of(&answer.expect("answers")), (403, "Not authorized".to_owned()));
    let answer = client_of(config, jaas, None, "").request(admin9, "GET", "/commands/ruok", None).await;
    assert_eq!(answer.expect("read-only commands need no authentication").0, 200);
}
