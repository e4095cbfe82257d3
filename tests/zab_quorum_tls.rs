//! Issue 24, item 4: zkr observes a ZooKeeper 3.8 ensemble whose members speak TLS to each other
//! (`sslQuorum=true`): its election connections to the voters and its learner connection to the
//! leader are TLS, with its own certificate (ZooKeeper needs one: `ssl.quorum.clientAuth` is
//! need by default) and ZooKeeper's checked against the trust store and by name. A certificate
//! the ensemble does not trust keeps it out; a leader change is followed over TLS again.

use crate::common::certs::Ca;
use crate::zab_observer::{
    create, free_port, observer_config_with, served_tree, srvr_mode, until_async, Ensemble, Launch, Session,
    OBSERVER_SID,
};
use std::path::Path;
use std::time::Duration;
use zkr::proto::{OpCode, RequestBody};

/// Debian's ZooKeeper 3.8 with the Netty modules its quorum TLS needs, which zkServer.sh's class
/// path lacks (Debian's netty-all.jar is an empty shell).
pub(crate) fn debian_with_netty() -> Launch {
    let mut cp = Vec::new();
    for j in ["zookeeper", "zookeeper-jute", "slf4j-api", "slf4j-simple", "commons-io"] {
        let p = format!("/usr/share/java/{j}.jar");
        assert!(Path::new(&p).exists(), "{p} is missing: apt-get install zookeeper libzookeeper-java");
        cp.push(p);
    }
    for m in ["buffer", "codec", "common", "handler", "resolver", "transport", "transport-native-unix-common"] {
        let p = format!("/usr/share/java/netty-{m}.jar");
        assert!(Path::new(&p).exists(), "{p} is missing: apt-get install libnetty-java");
        cp.push(p);
    }
    Launch::Classpath(cp.join(":"))
}

/// zoo.cfg's quorum TLS lines, PEM stores (ZooKeeper 3.6+ reads them as zkr does).
pub(crate) fn tls_lines(key_store: &Path, trust_store: &Path) -> String {
    format!(
        "sslQuorum=true\nssl.quorum.keyStore.location={}\nssl.quorum.keyStore.type=PEM\n\
         ssl.quorum.trustStore.location={}\nssl.quorum.trustStore.type=PEM\n",
        key_store.display(),
        trust_store.display()
    )
}

/// Every server's certificate names the loopback addresses the tests give them.
pub(crate) const NAMES: &[&str] = &["127.0.0.1", "127.0.0.9", "127.0.0.10", "127.0.0.11", "localhost"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkr_observes_a_zookeeper_38_ensemble_over_quorum_tls_and_an_untrusted_certificate_is_kept_out() {
    let dir = crate::common::temp_dir();
    let ca = Ca::new(&dir, "ca");
    let trust = ca.trust_store("ca");
    let zk_store = ca.key_store("zookeeper", NAMES);
    let (oq, oe) = (free_port(), free_port());
    let line = format!("server.{OBSERVER_SID}=127.0.0.1:{oq}:{oe}:observer\n");
    let mut zk = Ensemble::start_configured(&debian_with_netty(), &line, &tls_lines(&zk_store, &trust), &[]);
    let leader = zk.leader().await;
    let mut c = Session::open(zk.client[leader], 30_000).await;
    c.write(OpCode::Create, RequestBody::Create(create("/tls", b"quorum", 0))).await;

    // A certificate from another CA: ZooKeeper refuses the handshakes, so it never syncs.
    let rogue = Ca::new(&dir.join("rogue"), "rogue").key_store("observer", NAMES);
    let port = free_port();
    let cfg = observer_config_with(&zk, port, &tls_lines(&rogue, &trust), None);
    let (server, _) = crate::common::start_with(cfg).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_ne!(srvr_mode(port).await.as_deref(), Some("observer"), "kept out with an untrusted certificate");
    server.shutdown().await;

    // A trusted one: it syncs, serves ZooKeeper's tree and forwards a write.
    let store = ca.key_store("observer", NAMES);
    let port = free_port();
    let cfg = observer_config_with(&zk, port, &tls_lines(&store, &trust), None);
    assert!(cfg.quorum_tls.as_ref().is_some_and(|q| q.encrypt), "sslQuorum is read");
    let (server, _) = crate::common::start_with(cfg).await;
    until_async("srvr says Mode: observer", 60, || async move { srvr_mode(port).await.as_deref() == Some("observer") })
        .await;
    let mut o = Session::open(port, 30_000).await;
    o.write(OpCode::Create, RequestBody::Create(create("/tls/through-zkr", b"", 0))).await;
    c.write(OpCode::SetData, RequestBody::SetData { path: "/tls".into(), data: Some("v2".into()), version: -1 }).await;
    let zk_port = zk.client[leader];
    until_async("the observer applied ZooKeeper's write", 10, || async move {
        served_tree(port).await == served_tree(zk_port).await
    })
    .await;

    // The leader is killed: the observer finds the next one and syncs with it, over TLS again.
    let _ = zk.children[leader].kill();
    let _ = zk.children[leader].wait();
    let survivors: Vec<usize> = (0..3).filter(|i| *i != leader).collect();
    let next = zk.leader_of(&survivors).await;
    let mut c = Session::open(zk.client[next], 30_000).await;
    c.write(OpCode::Create, RequestBody::Create(create("/tls/after-leader-change", b"", 0))).await;
    let zk_port = zk.client[next];
    until_async("the observer synced with the next leader", 60, || async move {
        // Until it has, the observer closes client connections, which the tree walk takes
        // as a failure (a panic in its task).
        let ours = tokio::spawn(served_tree(port)).await.ok();
        ours.is_some() && ours == tokio::spawn(served_tree(zk_port)).await.ok()
    })
    .await;
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
