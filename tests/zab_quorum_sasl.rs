//! Issue 24, item 4: zkr observes a ZooKeeper ensemble that requires quorum SASL
//! (`quorum.auth.enableSasl`, `learnerRequireSasl`, `serverRequireSasl`; DIGEST-MD5 with the
//! JAAS `QuorumServer`/`QuorumLearner` sections), logging in on the voters' election ports and
//! the leader's quorum port as ZooKeeper's own learners do; with a wrong password it is kept out.

use crate::zab_observer::{
    create, free_port, observer_config_with, served_tree, srvr_mode, until_async, Ensemble, Launch, Session,
    OBSERVER_SID,
};
use std::time::Duration;
use zkr::proto::{OpCode, RequestBody};

pub(crate) const SASL: &str = "quorum.auth.enableSasl=true\nquorum.auth.learnerRequireSasl=true\n\
                    quorum.auth.serverRequireSasl=true\nquorum.auth.learner.saslLoginContext=QuorumLearner\n\
                    quorum.auth.server.saslLoginContext=QuorumServer\n";

pub(crate) fn jaas(dir: &std::path::Path, learner_password: &str) -> std::path::PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(format!("jaas-{learner_password}.conf"));
    let text = format!(
        "QuorumServer {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  user_learner=\"s3cret\";\n}};\n\
         QuorumLearner {{\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n  username=\"learner\"\n  \
         password=\"{learner_password}\";\n}};\n"
    );
    std::fs::write(&p, text).unwrap();
    p
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zkr_observes_a_zookeeper_38_ensemble_that_requires_quorum_sasl_and_a_wrong_password_is_kept_out() {
    let dir = crate::common::temp_dir();
    let good = jaas(&dir, "s3cret");
    let props = [format!("-Djava.security.auth.login.config={}", good.display())];
    let (oq, oe) = (free_port(), free_port());
    let line = format!("server.{OBSERVER_SID}=127.0.0.1:{oq}:{oe}:observer\n");
    let zk = Ensemble::start_configured(&Launch::Debian, &line, SASL, &props);
    let leader = zk.leader().await;
    let mut c = Session::open(zk.client[leader], 30_000).await;
    c.write(OpCode::Create, RequestBody::Create(create("/sasl", b"quorum", 0))).await;

    // The wrong password: the voters refuse its election connections, so it never syncs.
    let port = free_port();
    let cfg = observer_config_with(&zk, port, SASL, Some(jaas(&dir, "wrong")));
    let (server, _) = crate::common::start_with(cfg).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_ne!(srvr_mode(port).await.as_deref(), Some("observer"), "kept out with a wrong password");
    server.shutdown().await;

    // The right one: it syncs, serves ZooKeeper's tree and forwards a write.
    let port = free_port();
    let cfg = observer_config_with(&zk, port, SASL, Some(good));
    assert!(cfg.quorum_sasl.as_ref().is_some_and(|q| q.login.is_some()), "the QuorumLearner login is read");
    let (server, _) = crate::common::start_with(cfg).await;
    until_async("srvr says Mode: observer", 60, || async move { srvr_mode(port).await.as_deref() == Some("observer") })
        .await;
    let mut o = Session::open(port, 30_000).await;
    o.write(OpCode::Create, RequestBody::Create(create("/sasl/through-zkr", b"", 0))).await;
    assert_eq!(served_tree(port).await, served_tree(zk.client[leader]).await, "the same tree, every Stat");
    server.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
