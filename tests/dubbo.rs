//! The Dubbo view over TCP: a zkr server on port 0, a registry written by a third-party client
//! (the `zookeeper-client` crate) with a live ephemeral provider, read back through
//! `zkr::dubbo::web` both directly and through its axum router.

use crate::common;

use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use zkr::dubbo::web::{router, DubboWeb};
use zookeeper_client as zk;

const IFACE: &str = "org.example.Greeter";

/// `URLEncoder.encode` of a Dubbo provider URL, as Dubbo names the node.
const PROVIDER: &str = "dubbo%3A%2F%2F10.1.2.3%3A20880%2Forg.example.Greeter%3Fapplication%3Dgreeter%26group%3Dblue\
                        %26interface%3Dorg.example.Greeter%26methods%3Dhello%2Cbye%26side%3Dprovider\
                        %26timestamp%3D1700000000000%26version%3D2.0.0";

async fn client(addr: &str) -> zk::Client {
    zk::Client::connector().session_timeout(Duration::from_secs(5)).connect(addr).await.expect("client connects")
}

fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

async fn json(web: &DubboWeb, path: &str) -> serde_json::Value {
    let reply = web.handle(path).await.expect("a Dubbo view path");
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    serde_json::from_slice(&reply.body).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn providers_with_sessions_and_services_without_providers() {
    let (server, addr) = common::start().await;
    let admin = client(&addr).await;
    for p in ["/dubbo", "/dubbo/org.example.Greeter", "/dubbo/org.example.Greeter/providers"] {
        admin.create(p, b"", &persistent()).await.unwrap();
    }
    for p in ["/dubbo/org.example.Orphan", "/dubbo/org.example.Orphan/providers", "/dubbo/config"] {
        admin.create(p, b"", &persistent()).await.unwrap();
    }
    let provider = client(&addr).await;
    let eph = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    provider.create(&format!("/dubbo/{IFACE}/providers/{PROVIDER}"), b"", &eph).await.unwrap();

    let web = DubboWeb::new(addr.parse().unwrap());
    let services = json(&web, "/dubbo/api/services").await;
    let rows = services["services"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "config is not a service: {services}");
    assert_eq!(rows[0]["service"], "blue/org.example.Greeter:2.0.0");
    assert_eq!(
        (rows[0]["providers"].as_u64(), rows[0]["provider_applications"][0].as_str()),
        (Some(1), Some("greeter"))
    );
    assert_eq!((rows[1]["interface"].as_str(), rows[1]["providers"].as_u64()), (Some("org.example.Orphan"), Some(0)));

    let providers = json(&web, &format!("/dubbo/api/providers?interface={IFACE}")).await;
    let p = &providers["providers"][0];
    assert_eq!(p["address"], "10.1.2.3:20880");
    assert_eq!(p["methods"], serde_json::json!(["hello", "bye"]));
    assert_eq!(
        (p["group"].as_str(), p["version"].as_str(), p["weight"].as_i64()),
        (Some("blue"), Some("2.0.0"), Some(100))
    );
    assert_eq!(p["session"].as_str().unwrap(), format!("0x{:x}", provider.session_id().0));
    let missing = web.handle("/dubbo/api/providers?interface=org.example.Nope").await.unwrap();
    assert_eq!(missing.status, 404);

    // The same data through the axum router, over HTTP.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let http = listener.local_addr().unwrap();
    let serving = tokio::spawn(async move { axum::serve(listener, router(addr.parse().unwrap())).await });
    let mut conn = tokio::net::TcpStream::connect(http).await.unwrap();
    let request =
        format!("GET /dubbo/api/providers?interface={IFACE} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    conn.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains("application/json") && answer.contains("\"10.1.2.3:20880\""), "{answer}");
    serving.abort();

    // The provider's session ends: its node goes, and the view shows it without a new DubboWeb.
    drop(provider); // closeSession
    let path = format!("/dubbo/api/providers?interface={IFACE}");
    common::eventually("the provider disappears from the view", || async {
        json(&web, &path).await["providers"] == serde_json::json!([])
    })
    .await;
    server.shutdown().await;
}
