//! Issue 39 items 4 and 5: the AdminServer's `snapshot` and `restore` commands on a standalone
//! server in this process, asked over plain HTTP/1.1 as curl asks them. The streamed snapshot
//! reads back with zkr's import reader as the tree the clients see; refusals (no or wrong
//! credentials, switched off, rate limited) are ZooKeeper's status codes and JSON; a restore
//! replaces the tree (Stat values and all), a truncated body is refused with nothing changed,
//! and the restore survives a restart. tests/interop/import/run.sh (variant `adminsnap`) starts
//! ZooKeeper 3.8 on a streamed snapshot.

use crate::common::{self, cluster::client, cluster::persistent};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zkr::config::{AdminBackup, Config};
use zookeeper_client as zk;

const SUPER: &str = "digest super:test";

/// One HTTP answer: status, headers (lower-case names), body.
struct Answer {
    status: u16,
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
}

impl Answer {
    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&self.body)))
    }
}

/// A plain HTTP/1.1 request with `Connection: close`; a chunked body is put back together.
async fn http(addr: SocketAddr, method: &str, path: &str, auth: Option<&str>, body: &[u8]) -> Answer {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(a) = auth {
        req.push_str(&format!("Authorization: {a}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    s.write_all(req.as_bytes()).await.unwrap();
    s.write_all(body).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").expect("a header block");
    let head = String::from_utf8_lossy(&raw[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|c| c.parse().ok()).unwrap();
    let headers: BTreeMap<String, String> =
        lines.filter_map(|l| l.split_once(": ")).map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned())).collect();
    let mut rest = &raw[end + 4..];
    let body = if headers.get("transfer-encoding").is_some_and(|t| t == "chunked") {
        let mut out = Vec::new();
        loop {
            let eol = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let len = usize::from_str_radix(std::str::from_utf8(&rest[..eol]).unwrap().trim(), 16).unwrap();
            if len == 0 {
                break out;
            }
            out.extend_from_slice(&rest[eol + 2..eol + 2 + len]);
            rest = &rest[eol + 2 + len + 2..];
        }
    } else {
        rest.to_vec()
    };
    Answer { status, headers, body }
}

fn config(backup: AdminBackup) -> Config {
    Config {
        admin_enabled: true,
        admin_bind: "127.0.0.1".parse().unwrap(),
        admin_port: 0,
        super_digest: zkr::tree::acl::digest("super:test"),
        admin_backup: backup,
        ..common::test_config()
    }
}

/// Data and Stat of each path, as a client sees them (None: no such node).
async fn seen(c: &zk::Client, paths: &[&str]) -> Vec<Option<(Vec<u8>, zk::Stat)>> {
    let mut out = Vec::new();
    for p in paths {
        out.push(c.get_data(p).await.ok());
    }
    out
}

const PATHS: &[&str] = &["/app", "/app/child", "/app/private", "/extra", "/zookeeper/quota"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_streams_and_restore_replaces_the_tree_durably() {
    let cfg = config(AdminBackup { snapshot: true, restore: true, rate_limit_ms: 300 });
    let (server, addr) = common::start_with(cfg.clone()).await;
    let admin = server.admin_addr().expect("the AdminServer listens");
    let c = client(&addr).await;
    c.create("/app", b"v1", &persistent()).await.unwrap();
    c.set_data("/app", b"v2", None).await.unwrap();
    c.create("/app/child", b"kid", &persistent()).await.unwrap();
    let creator = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_read());
    c.create("/app/private", b"read only", &creator).await.unwrap();

    // Refusals before any work: ZooKeeper's 401 and 403 JSON.
    let a = http(admin, "GET", "/commands/snapshot", None, b"").await;
    assert_eq!((a.status, a.json()["error"].as_str()), (401, Some("Auth info is missing for the command")));
    let a = http(admin, "GET", "/commands/snapshot", Some("digest super:wrong"), b"").await;
    assert_eq!((a.status, a.json()["error"].as_str()), (403, Some("Not authorized")));
    let a = http(admin, "POST", "/commands/restore", Some("digest nobody"), b"").await;
    assert_eq!((a.status, a.json()["command"].as_str()), (403, Some("restore")));

    let before = seen(&c, PATHS).await;
    let snap = http(admin, "GET", "/commands/snapshot?streaming=true", Some(SUPER), b"").await;
    assert_eq!(snap.status, 200);
    assert_eq!(snap.headers["content-type"], "application/octet-stream");
    assert_eq!(snap.headers["snapshot_size"], snap.body.len().to_string(), "snapshot_size is the body's length");
    let parsed = zkr::import::snapfile::read_stream(Box::new(std::io::Cursor::new(snap.body.clone())), "body".as_ref())
        .expect("the streamed snapshot reads with the import reader");
    let zxid = parsed.last_processed.expect("3.9's last processed zxid trailer");
    assert_eq!(snap.headers["last_zxid"], format!("0x{zxid:x}"));
    for (p, s) in PATHS.iter().zip(&before) {
        let node = parsed.tree.get(p).map(|n| (n.data.as_deref().unwrap_or_default().to_vec(), n.stat));
        match (node, s) {
            (None, None) => {}
            (Some((data, stat)), Some((want, ws))) => {
                assert_eq!(&data, want, "{p}");
                let got = (stat.czxid, stat.mzxid, stat.pzxid, stat.ctime, stat.mtime, stat.version, stat.cversion);
                let want = (ws.czxid, ws.mzxid, ws.pzxid, ws.ctime, ws.mtime, ws.version, ws.cversion);
                assert_eq!(got, want, "{p}: Stat");
            }
            (got, want) => panic!("{p}: snapshot has {got:?}, clients see {want:?}"),
        }
    }

    // A second one inside the interval: ZooKeeper's 429.
    let a = http(admin, "GET", "/commands/snap", Some(SUPER), b"").await;
    assert_eq!((a.status, a.json()["error"].clone()), (429, serde_json::Value::Null));

    // Change the tree, then a truncated snapshot: refused, nothing changed.
    c.delete("/app/child", None).await.unwrap();
    c.create("/extra", b"", &persistent()).await.unwrap();
    c.set_data("/app", b"v3", None).await.unwrap();
    let changed = seen(&c, PATHS).await;
    let cut = &snap.body[..snap.body.len() / 2];
    let a = http(admin, "POST", "/commands/restore", Some(SUPER), cut).await;
    assert_eq!(a.status, 500, "{}", a.json());
    assert!(a.json()["error"].as_str().is_some_and(|e| e.contains("not a whole ZooKeeper snapshot")), "{}", a.json());
    assert_eq!(seen(&c, PATHS).await, changed, "a refused restore changes nothing");

    tokio::time::sleep(Duration::from_millis(400)).await;
    // c's session is in the snapshot: its connection stays and its watches fire.
    let (_, _, data_w) = c.get_and_watch_data("/app").await.unwrap();
    let (_, extra_w) = c.check_and_watch_stat("/extra").await.unwrap();
    let (_, _, kept_w) = c.get_and_watch_data("/app/private").await.unwrap();
    // A session the snapshot lacks: its connection is closed.
    let late = client(&addr).await;
    let a = http(admin, "POST", "/commands/restore", Some(SUPER), &snap.body).await;
    assert_eq!(a.status, 200, "{}", a.json());
    let restored_zxid = a.json()["last_zxid"].as_i64().expect("last_zxid");
    let within = Duration::from_secs(5);
    let ev = tokio::time::timeout(within, data_w.changed()).await.expect("/app's data watch fires");
    assert_eq!((ev.event_type, ev.path.as_str()), (zk::EventType::NodeDataChanged, "/app"));
    let ev = tokio::time::timeout(within, extra_w.changed()).await.expect("/extra's watch fires");
    assert_eq!((ev.event_type, ev.path.as_str()), (zk::EventType::NodeDeleted, "/extra"));
    assert_eq!(seen(&c, PATHS).await, before, "c goes on, on the restored tree");
    assert!(
        tokio::time::timeout(Duration::from_millis(500), kept_w.changed()).await.is_err(),
        "no event for a node the restore left as it was"
    );
    assert!(late.get_data("/app").await.is_err(), "a session the snapshot lacks is gone");
    let changed_zxid = changed[0].as_ref().unwrap().1.mzxid;
    assert!(restored_zxid > changed_zxid, "zxids never go backwards: {restored_zxid} after {changed_zxid}");
    let c2 = client(&addr).await;
    assert_eq!(seen(&c2, PATHS).await, before, "the snapshot's tree, Stat for Stat");
    c2.create("/after", b"", &persistent()).await.unwrap();
    let (_, after) = c2.get_data("/after").await.unwrap();
    assert!(after.czxid > restored_zxid, "writes continue after the restore's zxid");
    drop((c, c2, late));

    server.shutdown().await;
    let (server, addr) = common::start_with(cfg).await;
    let c3 = client(&addr).await;
    assert_eq!(seen(&c3, PATHS).await, before, "the restore survives a restart");
    assert!(c3.check_stat("/after").await.unwrap().is_some(), "and so does the write after it");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switched_off_commands_answer_503_after_authentication() {
    let (server, _) = common::start_with(config(AdminBackup::default())).await;
    let admin = server.admin_addr().expect("the AdminServer listens");
    let a = http(admin, "GET", "/commands/snapshot", None, b"").await;
    assert_eq!(a.status, 401, "authentication comes first, as in ZooKeeper");
    for (method, path, name) in [("GET", "/commands/snapshot", "snapshot"), ("POST", "/commands/restore", "restore")] {
        let a = http(admin, method, path, Some(SUPER), b"").await;
        assert_eq!(a.status, 503, "{path}");
        assert_eq!(a.json(), serde_json::json!({ "command": name, "error": null }), "{path}");
    }
    let list = http(admin, "GET", "/commands", None, b"").await;
    let list = String::from_utf8_lossy(&list.body).into_owned();
    assert!(list.contains("/commands/snapshot") && list.contains("/commands/restore"), "{list}");
    server.shutdown().await;
}

/// Issue 39 item 4 on an ensemble: the restore asked of a follower goes through the log in
/// chunks, so every member, one that was down meanwhile included, serves the snapshot's tree
/// Stat for Stat; a truncated body is refused with nothing changed; a session the snapshot
/// holds keeps its connection and its watches fire for what the restore changed; writes go on
/// above the restore's zxid; the restore survives a restart (the chunks replayed from the log).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_on_an_ensemble_goes_through_the_log_to_every_member() {
    let extra = format!(
        "admin.snapshot.enabled=true\nadmin.restore.enabled=true\nadmin.rateLimiterIntervalInMS=0\n\
         DigestAuthenticationProvider.superDigest={}\n",
        zkr::tree::acl::digest("super:test").unwrap()
    );
    let mut e = common::ensemble_proc::ProcEnsemble::start_with_admin(3, 100, &extra);
    let leader = e.leader();
    let (asked, down) = ((leader + 1) % 3, (leader + 2) % 3);
    let ports = e.admin_ports.clone();
    let admin = |i: usize| -> SocketAddr { format!("127.0.0.1:{}", ports[i]).parse().unwrap() };
    let c = client(&e.addr(leader)).await;
    c.create("/app", b"v1", &persistent()).await.unwrap();
    c.set_data("/app", b"v2", None).await.unwrap();
    c.create("/app/child", b"kid", &persistent()).await.unwrap();
    // A session the snapshot will hold, on the member that will be asked.
    let watcher = client(&e.addr(asked)).await;
    // A value large enough that the snapshot takes several chunks.
    let big = vec![7u8; 1000 * 1000];
    for i in 0..3 {
        c.create(&format!("/app/big{i}"), &big, &persistent()).await.unwrap();
    }
    let before = seen(&c, PATHS).await;
    // (From the leader, which has applied every acknowledged write.)
    let snap = http(admin(leader), "GET", "/commands/snapshot?streaming=true", Some(SUPER), b"").await;
    assert_eq!(snap.status, 200);
    assert!(snap.body.len() > 2 * 1024 * 1024, "several chunks: {} bytes", snap.body.len());

    c.delete("/app/child", None).await.unwrap();
    c.create("/extra", b"", &persistent()).await.unwrap();
    c.set_data("/app", b"v3", None).await.unwrap();
    let changed = seen(&c, PATHS).await;
    let cut = &snap.body[..snap.body.len() / 2];
    let a = http(admin(asked), "POST", "/commands/restore", Some(SUPER), cut).await;
    assert_eq!(a.status, 500, "{}", a.json());
    assert_eq!(seen(&c, PATHS).await, changed, "a refused restore changes nothing");
    let a = http(admin(asked), "POST", "/commands/restore", Some("digest nobody"), &snap.body).await;
    assert_eq!(a.status, 403, "{}", a.json());
    drop(c);

    // Watches on what the restore will change: /app's data (v3 back to v2) and children
    // (/app/child back), /extra (gone again).
    watcher.sync("/").await.unwrap();
    let (_, _, data_w) = watcher.get_and_watch_data("/app").await.unwrap();
    let (_, _, child_w) = watcher.get_and_watch_children("/app").await.unwrap();
    let (extra, extra_w) = watcher.check_and_watch_stat("/extra").await.unwrap();
    assert!(extra.is_some());
    e.kill(down);
    let a = http(admin(asked), "POST", "/commands/restore", Some(SUPER), &snap.body).await;
    assert_eq!(a.status, 200, "{}", a.json());
    let restored_zxid = a.json()["last_zxid"].as_i64().expect("last_zxid");
    let within = Duration::from_secs(10);
    let ev = tokio::time::timeout(within, data_w.changed()).await.expect("/app's data watch fires");
    assert_eq!((ev.event_type, ev.path.as_str()), (zk::EventType::NodeDataChanged, "/app"));
    let ev = tokio::time::timeout(within, child_w.changed()).await.expect("/app's child watch fires");
    assert_eq!((ev.event_type, ev.path.as_str()), (zk::EventType::NodeChildrenChanged, "/app"));
    let ev = tokio::time::timeout(within, extra_w.changed()).await.expect("/extra's watch fires");
    assert_eq!((ev.event_type, ev.path.as_str()), (zk::EventType::NodeDeleted, "/extra"));
    assert_eq!(seen(&watcher, PATHS).await, before, "the session the snapshot holds goes on, on the restored tree");
    drop(watcher);
    e.restart(down);
    for i in 0..3 {
        assert_eq!(serving(&e.addr(i), &before).await, before, "member {}: the snapshot's tree, Stat for Stat", i + 1);
    }
    let c = client(&e.addr(down)).await;
    c.create("/after", b"", &persistent()).await.unwrap();
    let (_, after) = c.get_data("/after").await.unwrap();
    assert!(after.czxid > restored_zxid, "writes continue after the restore's zxid");
    let (data, _) = c.get_data("/app/big2").await.unwrap();
    assert_eq!(data, big);
    drop(c);

    for i in 0..3 {
        e.kill(i);
    }
    for i in 0..3 {
        e.restart(i);
    }
    for i in 0..3 {
        assert_eq!(serving(&e.addr(i), &before).await, before, "member {}: the restore survives a restart", i + 1);
    }
    let c = client(&e.addr(leader)).await;
    assert!(c.check_stat("/after").await.unwrap().is_some(), "and so does the write after it");
}

/// What the member at `addr` serves of `PATHS` once it serves `want` (or after 20 s, what it
/// served last).
async fn serving(addr: &str, want: &[Option<(Vec<u8>, zk::Stat)>]) -> Vec<Option<(Vec<u8>, zk::Stat)>> {
    let mut last = Vec::new();
    for _ in 0..100 {
        if let Ok(Ok(c)) = tokio::time::timeout(Duration::from_secs(5), zk::Client::connect(addr)).await {
            last = seen(&c, PATHS).await;
            if last == want {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    last
}
