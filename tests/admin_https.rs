//! Issue 42, item 2: the AdminServer serves HTTPS as ZooKeeper's `admin.forceHttps`,
//! `admin.portUnification` and `admin.needClientAuth` ask, with the `ssl.quorum.*` stores; a
//! standalone server in this process, its AdminServer asked by zkr's own HTTPS client (the one
//! `zkr takeover` uses) and by a plain HTTP one.

use crate::common::certs::Ca;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use zkr::config::{Config, ServeArgs};
use zkr::security::quorum_tls::QuorumTls;
use zkr::takeover::http::AdminClient;

/// A standalone zkr whose zoo.cfg has `admin` lines and the stores of `ca` (a server
/// certificate for 127.0.0.1).
async fn server_with(dir: &Path, ca: &Ca, admin: &str) -> (zkr::server::Server, Config) {
    let store = ca.key_store("admin", &["127.0.0.1"]);
    let text = format!(
        "{admin}ssl.quorum.keyStore.location={}\nssl.quorum.trustStore.location={}\n",
        store.display(),
        ca.trust_store("ca").display()
    );
    let file = dir.join(format!("zoo-{}.cfg", admin.len()));
    std::fs::write(&file, text).unwrap();
    let read = Config::from_args(&ServeArgs { config: Some(file), ..ServeArgs::default() }).expect("zoo.cfg");
    let cfg = Config {
        admin_enabled: true,
        admin_bind: "127.0.0.1".parse().unwrap(),
        admin_port: 0,
        admin_tls: read.admin_tls.clone(),
        ..crate::common::test_config()
    };
    let (server, _) = crate::common::start_with(cfg.clone()).await;
    (server, cfg)
}

/// zkr's HTTPS client with the server's stores (`key_store` instead of its own).
fn https(cfg: &Config, key_store: Option<&Path>) -> AdminClient {
    let mut tls = cfg.admin_tls.clone().expect("HTTPS").tls;
    if let Some(k) = key_store {
        tls.stores.key_store.path = k.to_owned();
    }
    let tls: Arc<QuorumTls> = QuorumTls::load(tls).expect("the stores load");
    AdminClient::new(Some(tls), None, Duration::from_secs(5))
}

fn plain() -> AdminClient {
    AdminClient::new(None, None, Duration::from_secs(5))
}

#[tokio::test]
async fn port_unification_serves_http_and_https_on_one_port() {
    let dir = crate::common::temp_dir();
    let ca = Ca::new(&dir, "ca");
    let (server, cfg) = server_with(&dir, &ca, "admin.portUnification=true\n").await;
    let addr = server.admin_addr().expect("the AdminServer listens").to_string();
    let (code, body) = plain().request(&addr, "GET", "/commands/ruok", None).await.expect("plain HTTP");
    assert_eq!(code, 200, "{body}");
    let (code, body) = https(&cfg, None).request(&addr, "GET", "/commands/ruok", None).await.expect("HTTPS");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"command\": \"ruok\""), "{body}");
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn force_https_with_client_auth_takes_only_trusted_certificates() {
    let dir = crate::common::temp_dir();
    let ca = Ca::new(&dir, "ca");
    let (server, cfg) = server_with(&dir, &ca, "admin.forceHttps=true\nadmin.needClientAuth=true\n").await;
    let addr = server.admin_addr().expect("the AdminServer listens").to_string();
    let answer = plain().request(&addr, "GET", "/commands/ruok", None).await;
    assert!(!matches!(answer, Ok((200, _))), "no plain HTTP: {answer:?}");
    let (code, _) = https(&cfg, None).request(&addr, "GET", "/metrics", None).await.expect("HTTPS with a certificate");
    assert_eq!(code, 200);
    let rogue = Ca::new(&dir.join("rogue"), "rogue").key_store("admin", &["127.0.0.1"]);
    let answer = https(&cfg, Some(&rogue)).request(&addr, "GET", "/commands/ruok", None).await;
    assert!(answer.is_err(), "another CA's certificate is refused: {answer:?}");
    // The server stays up for the next client.
    assert_eq!(https(&cfg, None).request(&addr, "GET", "/commands/ruok", None).await.expect("HTTPS").0, 200);
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
