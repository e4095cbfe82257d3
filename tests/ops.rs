//! Operator interfaces over TCP: four-letter words (formats, whitelist, counters, resets) and
//! the AdminServer (JSON commands, /metrics). The side-by-side comparison with ZooKeeper and the
//! real parsers (go-zookeeper, zktop, collectd, prometheus_client) are in tests/interop/ops/.

use crate::common;

use common::Raw;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zkr::proto::{Acl, CreateRequest, OpCode, Request, RequestBody};

async fn word(addr: &str, w: &str) -> String {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(w.as_bytes()).await.unwrap();
    s.shutdown().await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out
}

async fn http_get(addr: std::net::SocketAddr, path: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).await.expect("connect admin");
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    let (head, body) = out.split_once("\r\n\r\n").expect("an HTTP response");
    (head.to_owned(), body.to_owned())
}

fn create(xid: i32, path: &str) -> Request {
    Request {
        xid,
        op: OpCode::Create,
        body: RequestBody::Create(CreateRequest {
            path: path.into(),
            data: Some(bytes::Bytes::from_static(b"d")),
            acl: Acl::open_unsafe(),
            flags: 0,
            ttl: None,
        }),
    }
}

fn all_words() -> zkr::config::Config {
    zkr::config::Config {
        four_letter_words: vec!["*".into()],
        admin_enabled: true,
        admin_bind: "127.0.0.1".parse().unwrap(),
        admin_port: 0,
        ..common::test_config()
    }
}

#[tokio::test]
async fn default_whitelist_answers_srvr_only() {
    let (server, addr) = common::start().await;
    assert!(word(&addr, "srvr").await.starts_with("Zookeeper version: "));
    assert_eq!(word(&addr, "ruok").await, "ruok is not executed because it is not in the whitelist.\n");
    assert_eq!(word(&addr, "mntr").await, "mntr is not executed because it is not in the whitelist.\n");
    assert!(server.admin_addr().is_none(), "the test config turns the AdminServer off");
    server.shutdown().await;
}

#[tokio::test]
async fn counters_move_and_reset() {
    let (server, addr) = common::start_with(all_words()).await;
    let (mut c, resp) = Raw::connect(&addr, 10_000).await;
    for i in 0..5 {
        c.call(&create(i + 1, &format!("/n{i}"))).await;
    }
    let srvr = word(&addr, "srvr").await;
    let lines: Vec<&str> = srvr.lines().collect();
    assert_eq!(lines.len(), 9, "{srvr}");
    assert!(lines[1].starts_with("Latency min/avg/max: "), "{srvr}");
    // 4 system nodes + 5, and the root once more, as ZooKeeper counts it.
    assert!(srvr.contains("\nZxid: 0x6\nMode: standalone\nNode count: 10\n"), "{srvr}");
    let received: u64 = lines[2].trim_start_matches("Received: ").parse().unwrap();
    assert!(received >= 6, "handshake + 5 creates: {srvr}");

    let cons = word(&addr, "cons").await;
    let line = cons.lines().find(|l| l.contains(&format!("sid=0x{:x},", resp.session_id))).expect(&cons);
    assert!(line.contains("(queued=0,recved=6,sent=6,"), "{line}");
    assert!(line.contains(",lop=CREA,") && line.contains(",lcxid=0x5,lzxid=0x6,"), "{line}");
    assert!(cons.ends_with(")\n\n"), "a blank line ends cons: {cons:?}");

    assert_eq!(word(&addr, "crst").await, "Connection stats reset.\n");
    let cons = word(&addr, "cons").await;
    let line = cons.lines().find(|l| l.contains("sid=")).expect(&cons);
    assert!(line.contains("(queued=0,recved=0,sent=0,"), "{line}");
    assert!(
        line.contains(",lop=NA,") && !line.contains("lcxid") && line.contains(",lzxid=0xffffffffffffffff,"),
        "{line}"
    );

    assert_eq!(word(&addr, "srst").await, "Server stats reset.\n");
    let srvr = word(&addr, "srvr").await;
    assert!(srvr.contains("Latency min/avg/max: 0/0.0/0\n"), "{srvr}");

    let mntr = word(&addr, "mntr").await;
    let keys: Vec<&str> = mntr.lines().map(|l| l.split('\t').next().unwrap()).collect();
    assert_eq!(&keys[..3], ["zk_version", "zk_server_state", "zk_ephemerals_count"]);
    assert!(mntr.contains("\nzk_znode_count\t10\n"), "{mntr}");
    assert!(mntr.contains("\nzk_global_sessions\t1\n"), "{mntr}");
    drop(c);
    server.shutdown().await;
}

#[tokio::test]
async fn watches_and_ephemerals_are_listed_by_session() {
    let (server, addr) = common::start_with(all_words()).await;
    let (mut c, resp) = Raw::connect(&addr, 10_000).await;
    let mut eph = create(1, "/e");
    if let RequestBody::Create(cr) = &mut eph.body {
        cr.flags = 1;
    }
    c.call(&eph).await;
    c.call(&Request { xid: 2, op: OpCode::GetData, body: RequestBody::PathWatch { path: "/e".into(), watch: true } })
        .await;
    c.call(&Request { xid: 3, op: OpCode::Exists, body: RequestBody::PathWatch { path: "/x".into(), watch: true } })
        .await;
    let sid = format!("0x{:x}", resp.session_id);
    assert_eq!(word(&addr, "wchs").await, "1 connections watching 2 paths\nTotal watches:2\n");
    assert_eq!(word(&addr, "wchc").await, format!("{sid}\n\t/e\n\t/x\n\n"));
    assert_eq!(word(&addr, "wchp").await, format!("/e\n\t{sid}\n/x\n\t{sid}\n\n"));
    let dump = word(&addr, "dump").await;
    assert!(dump.contains(&format!("Sessions with Ephemerals (1):\n{sid}:\n\t/e\n")), "{dump}");

    let admin = server.admin_addr().expect("admin server bound");
    let (head, body) = http_get(admin, "/commands/wchp").await;
    assert!(head.starts_with("HTTP/1.1 200") && head.to_ascii_lowercase().contains("application/json"), "{head}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["command"], "watches_by_path");
    assert_eq!(v["path_to_session_ids"]["/x"][0], resp.session_id);
    let (_, body) = http_get(admin, "/commands/nosuch").await;
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["error"], "Unknown command: nosuch");
    drop(c);
    server.shutdown().await;
}

#[tokio::test]
async fn metrics_count_requests_per_op() {
    let (server, addr) = common::start_with(all_words()).await;
    let admin = server.admin_addr().expect("admin server bound");
    let (mut c, _) = Raw::connect(&addr, 10_000).await;
    for i in 0..3 {
        c.call(&create(i + 1, &format!("/m{i}"))).await;
    }
    let (head, body) = http_get(admin, "/metrics").await;
    assert!(head.contains("text/plain"), "{head}");
    assert!(body.contains("\nzkr_request_latency_seconds_count{op=\"create\"} 3\n"), "{body}");
    assert!(body.contains("\nzkr_request_latency_seconds_bucket{op=\"create\",le=\"+Inf\"} 3\n"), "{body}");
    assert!(body.contains("# TYPE znode_count gauge\nznode_count 8\n"), "{body}");
    assert!(body.contains("# TYPE fsynctime summary\n"), "{body}");
    drop(c);
    server.shutdown().await;
}

#[tokio::test]
async fn a_taken_admin_port_is_logged_and_clients_are_served() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let cfg = zkr::config::Config { admin_port: taken.local_addr().unwrap().port(), ..all_words() };
    let (server, addr) = common::start_with(cfg).await;
    assert!(server.admin_addr().is_none());
    assert_eq!(word(&addr, "ruok").await, "imok");
    let (_c, resp) = Raw::connect(&addr, 10_000).await;
    assert_ne!(resp.session_id, 0);
    server.shutdown().await;
}

/// zoo.cfg's `metricsProvider.*` (ZooKeeper's PrometheusMetricsProvider): `/metrics` on its own
/// port with ZooKeeper's names, `/` 404 as ZooKeeper 3.8's Jetty servlet mapping answers.
#[tokio::test]
async fn prometheus_metrics_provider_port() {
    let metrics = Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
    let (server, addr) = common::start_with(zkr::config::Config { metrics, ..all_words() }).await;
    let port = server.metrics_addr().expect("metrics port bound");
    let (mut c, _) = Raw::connect(&addr, 10_000).await;
    c.call(&create(1, "/p")).await;
    let (head, body) = http_get(port, "/metrics").await;
    assert!(head.starts_with("HTTP/1.1 200") && head.contains("text/plain"), "{head}");
    for series in [
        "\nznode_count 6\n",
        "\nglobal_sessions 1\n",
        "\nconnection_request_count ",
        "\nelection_time{quantile=\"0.5\"} NaN\n",
        "\nelection_time_count 0\n",
        "\nmax_latency ",
        "\nprocess_resident_memory_bytes ",
    ] {
        assert!(body.contains(series), "{series:?} in {body}");
    }
    assert!(!body.contains("\nlatency_count"), "max_latency is a scalar, not a summary part");
    let (head, _) = http_get(port, "/").await;
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    drop(c);
    server.shutdown().await;
}
