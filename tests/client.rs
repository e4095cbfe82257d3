//! Integration tests through a real third-party client, the `zookeeper-client` crate.

use crate::common;

use std::time::Duration;
use zookeeper_client as zk;

async fn client(addr: &str) -> zk::Client {
    zk::Client::connector().session_timeout(Duration::from_secs(5)).connect(addr).await.expect("client connects")
}

fn persistent() -> zk::CreateOptions<'static> {
    zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crud_and_versioned_cas() {
    let (server, addr) = common::start().await;
    let c = client(&addr).await;
    let (stat, _) = c.create("/app", b"v0", &persistent()).await.unwrap();
    assert_eq!((stat.version, stat.data_length, stat.num_children), (0, 2, 0));
    let (data, stat) = c.get_data("/app").await.unwrap();
    assert_eq!((data.as_slice(), stat.version), (&b"v0"[..], 0));
    let stat = c.set_data("/app", b"v1", Some(0)).await.unwrap();
    assert_eq!(stat.version, 1);
    assert_eq!(c.set_data("/app", b"v2", Some(0)).await.unwrap_err(), zk::Error::BadVersion);
    assert_eq!(c.create("/app", b"", &persistent()).await.unwrap_err(), zk::Error::NodeExists);
    assert_eq!(c.create("/missing/child", b"", &persistent()).await.unwrap_err(), zk::Error::NoNode);
    c.create("/app/child", b"", &persistent()).await.unwrap();
    assert_eq!(c.delete("/app", None).await.unwrap_err(), zk::Error::NotEmpty);
    let (children, stat) = c.get_children("/app").await.unwrap();
    assert_eq!(children, vec!["child".to_string()]);
    assert_eq!((stat.num_children, stat.cversion), (1, 1));
    c.delete("/app/child", Some(0)).await.unwrap();
    let (_, stat) = c.get_children("/app").await.unwrap();
    assert_eq!(stat.cversion, 2, "a delete shows in cversion as in ZooKeeper");
    c.delete("/app", Some(1)).await.unwrap();
    assert_eq!(c.check_stat("/app").await.unwrap(), None);
    assert_eq!(c.get_data("/app").await.unwrap_err(), zk::Error::NoNode);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_and_ephemeral_nodes_and_close_cleanup() {
    let (server, addr) = common::start().await;
    let owner = client(&addr).await;
    let observer = client(&addr).await;
    owner.create("/reg", b"", &persistent()).await.unwrap();
    let seq = zk::CreateMode::EphemeralSequential.with_acls(zk::Acls::anyone_all());
    let (_, s0) = owner.create("/reg/n-", b"", &seq).await.unwrap();
    let (_, s1) = owner.create("/reg/n-", b"", &seq).await.unwrap();
    assert_eq!((s0.to_string(), s1.to_string()), ("0000000000".to_string(), "0000000001".to_string()));
    let eph = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    owner.create("/reg/e", b"", &eph).await.unwrap();
    assert_eq!(owner.create("/reg/e/x", b"", &persistent()).await.unwrap_err(), zk::Error::NoChildrenForEphemerals);
    let stat = observer.check_stat("/reg/e").await.unwrap().unwrap();
    assert_eq!(stat.ephemeral_owner, owner.session_id().0);
    let mut eph_list = owner.list_ephemerals("/").await.unwrap();
    eph_list.sort();
    assert_eq!(eph_list, vec!["/reg/e", "/reg/n-0000000000", "/reg/n-0000000001"]);

    let (_, _, watcher) = observer.get_and_watch_children("/reg").await.unwrap();
    drop(owner); // closeSession
    let ev = tokio::time::timeout(Duration::from_secs(5), watcher.changed()).await.unwrap();
    assert_eq!((ev.event_type, ev.path.as_str()), (zk::EventType::NodeChildrenChanged, "/reg"));
    common::eventually("ephemerals removed", || async { observer.list_children("/reg").await.unwrap().is_empty() })
        .await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shot_watches_fire_once_with_zookeeper_event_types() {
    let (server, addr) = common::start().await;
    let c = client(&addr).await;
    let w = c.check_and_watch_stat("/w").await.unwrap();
    assert!(w.0.is_none(), "exists on a missing node still registers a watch");
    c.create("/w", b"", &persistent()).await.unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(5), w.1.changed()).await.unwrap();
    assert_eq!((ev.event_type, ev.path.as_str()), (zk::EventType::NodeCreated, "/w"));

    let (_, _, dw) = c.get_and_watch_data("/w").await.unwrap();
    c.set_data("/w", b"1", None).await.unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(5), dw.changed()).await.unwrap();
    assert_eq!(ev.event_type, zk::EventType::NodeDataChanged);

    let (_, _, dw) = c.get_and_watch_data("/w").await.unwrap();
    c.delete("/w", None).await.unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(5), dw.changed()).await.unwrap();
    assert_eq!(ev.event_type, zk::EventType::NodeDeleted);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_recursive_watch_reports_changed_paths() {
    let (server, addr) = common::start().await;
    let c = client(&addr).await;
    c.create("/svc", b"", &persistent()).await.unwrap();
    let mut w = c.watch("/svc", zk::AddWatchMode::PersistentRecursive).await.unwrap();
    c.create("/svc/app", b"", &persistent()).await.unwrap();
    c.create("/svc/app/10.0.0.1:80", b"{}", &persistent()).await.unwrap();
    c.set_data("/svc/app/10.0.0.1:80", b"{1}", None).await.unwrap();
    c.delete("/svc/app/10.0.0.1:80", None).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..4 {
        let ev = tokio::time::timeout(Duration::from_secs(5), w.changed()).await.unwrap();
        seen.push((ev.event_type, ev.path));
    }
    use zk::EventType::*;
    assert_eq!(
        seen,
        vec![
            (NodeCreated, "/svc/app".to_string()),
            (NodeCreated, "/svc/app/10.0.0.1:80".to_string()),
            (NodeDataChanged, "/svc/app/10.0.0.1:80".to_string()),
            (NodeDeleted, "/svc/app/10.0.0.1:80".to_string()),
        ]
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_is_atomic_and_multi_read_reports_per_op() {
    let (server, addr) = common::start().await;
    let c = client(&addr).await;
    c.create("/m", b"", &persistent()).await.unwrap();
    let mut w = c.new_multi_writer();
    w.add_create("/m/a", b"", &persistent()).unwrap();
    w.add_check_version("/m", 5).unwrap();
    w.add_create("/m/b", b"", &persistent()).unwrap();
    match w.commit().await {
        Err(zk::MultiWriteError::OperationFailed { index, source }) => {
            assert_eq!((index, source), (1, zk::Error::BadVersion))
        }
        other => panic!("expected a failed multi, got {other:?}"),
    }
    assert!(c.list_children("/m").await.unwrap().is_empty(), "nothing applied");
    let mut w = c.new_multi_writer();
    w.add_create("/m/a", b"x", &persistent()).unwrap();
    w.add_set_data("/m/a", b"y", Some(0)).unwrap();
    w.add_check_version("/m/a", 1).unwrap();
    let results = w.commit().await.unwrap();
    assert_eq!(results.len(), 3);
    let mut r = c.new_multi_reader();
    r.add_get_data("/m/a").unwrap();
    r.add_get_data("/m/nope").unwrap();
    r.add_get_children("/m").unwrap();
    let results = r.commit().await.unwrap();
    assert!(matches!(&results[0], zk::MultiReadResult::Data { data, .. } if data == b"y"));
    assert!(matches!(&results[1], zk::MultiReadResult::Error { err: zk::Error::NoNode }));
    assert!(matches!(&results[2], zk::MultiReadResult::Children { children } if children == &vec!["a".to_string()]));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reattach_keeps_ephemerals_and_wrong_password_expires() {
    let (server, addr) = common::start().await;
    // Detached: dropping the client closes its socket but not its session.
    let c = zk::Client::connector().detached().session_timeout(Duration::from_secs(5)).connect(&addr).await.unwrap();
    let eph = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    c.create("/provider", b"", &eph).await.unwrap();
    let session = c.session().clone();
    let old_id = c.session_id();
    drop(c);
    let c2 =
        zk::Client::connector().session(session).session_timeout(Duration::from_secs(5)).connect(&addr).await.unwrap();
    assert_eq!(c2.session_id(), old_id);
    let stat = c2.check_stat("/provider").await.unwrap().expect("ephemeral kept");
    assert_eq!(stat.ephemeral_owner, c2.session_id().0);
    drop(c2);

    // A wrong password gets timeOut=0, sessionId=0 and a close, and the real session survives.
    let (mut raw, resp) = common::Raw::connect(&addr, 5000).await;
    let mut req = common::new_session(5000);
    req.session_id = resp.session_id;
    req.password = vec![1; 16];
    let mut thief = common::Raw::open(&addr).await;
    let refused = thief.handshake(req).await.expect("a refusal, not a silent close");
    assert_eq!((refused.timeout_ms, refused.session_id, refused.password), (0, 0, vec![0; 16]));
    assert!(thief.read_frame().await.is_none(), "connection closed after the refusal");
    let ping = zkr::proto::Request { xid: -2, op: zkr::proto::OpCode::Ping, body: zkr::proto::RequestBody::Empty };
    let (h, _) = raw.call(&ping).await;
    assert_eq!((h.xid, h.err), (-2, 0), "the real session is untouched");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digest_acl_denies_others_and_get_acl_shows_digest() {
    let (server, addr) = common::start().await;
    let alice =
        zk::Client::connector().auth("digest".to_string(), b"alice:secret".to_vec()).connect(&addr).await.unwrap();
    let bob = client(&addr).await;
    let creator = zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all());
    alice.create("/private", b"s3cret", &creator).await.unwrap();
    assert_eq!(bob.get_data("/private").await.unwrap_err(), zk::Error::NoAuth);
    assert_eq!(bob.set_data("/private", b"x", None).await.unwrap_err(), zk::Error::NoAuth);
    assert_eq!(bob.create("/private/c", b"", &persistent()).await.unwrap_err(), zk::Error::NoAuth);
    assert_eq!(bob.get_acl("/private").await.unwrap_err(), zk::Error::NoAuth);
    let (acl, _) = alice.get_acl("/private").await.unwrap();
    assert_eq!(acl.len(), 1);
    assert_eq!((acl[0].scheme(), acl[0].id()), ("digest", "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="));
    // The auth scheme without credentials is InvalidACL.
    assert_eq!(bob.create("/bad", b"", &creator).await.unwrap_err(), zk::Error::InvalidAcl);
    let users = alice.list_auth_users().await.unwrap();
    assert!(users.iter().any(|u| u.scheme() == "digest" && u.user() == "alice"), "{users:?}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn containers_and_ttl_nodes_are_reaped() {
    let (server, addr) = common::start().await;
    let c = client(&addr).await;
    let container = zk::CreateMode::Container.with_acls(zk::Acls::anyone_all());
    c.create("/dubbo", b"", &container).await.unwrap();
    c.create("/dubbo/x", b"", &persistent()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(c.check_stat("/dubbo").await.unwrap().is_some(), "a container with a child stays");
    c.delete("/dubbo/x", None).await.unwrap();
    common::eventually("empty container reaped", || async { c.check_stat("/dubbo").await.unwrap().is_none() }).await;

    let ttl = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()).with_ttl(Duration::from_millis(300));
    c.create("/lease", b"", &ttl).await.unwrap();
    let stat = c.check_stat("/lease").await.unwrap().unwrap();
    assert_eq!(stat.ephemeral_owner, 0, "TTL nodes report owner 0");
    common::eventually("TTL node reaped", || async { c.check_stat("/lease").await.unwrap().is_none() }).await;
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_nodes_exist() {
    let (server, addr) = common::start().await;
    let c = client(&addr).await;
    let (config, stat) = c.get_config().await.unwrap();
    assert!(config.is_empty(), "standalone /zookeeper/config is empty");
    assert_eq!(stat.aversion, -1);
    let mut kids = c.list_children("/zookeeper").await.unwrap();
    kids.sort();
    assert_eq!(kids, vec!["config", "quota"]);
    assert_eq!(c.count_descendants_number("/").await.unwrap(), 3);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn super_digest_and_ip_acls() {
    let cfg = zkr::config::Config { super_digest: zkr::tree::acl::digest("super:letmein"), ..common::test_config() };
    let (server, addr) = common::start_with(cfg).await;
    let alice = zk::Client::connector().auth("digest".to_string(), b"alice:pw".to_vec()).connect(&addr).await.unwrap();
    let creator = zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all());
    alice.create("/locked", b"x", &creator).await.unwrap();
    let root =
        zk::Client::connector().auth("digest".to_string(), b"super:letmein".to_vec()).connect(&addr).await.unwrap();
    assert_eq!(root.get_data("/locked").await.unwrap().0, b"x", "super reads anything");
    let wrong =
        zk::Client::connector().auth("digest".to_string(), b"super:guess".to_vec()).connect(&addr).await.unwrap();
    assert_eq!(wrong.get_data("/locked").await.unwrap_err(), zk::Error::NoAuth);

    let local = [zk::Acl::new(zk::Permission::READ, zk::AuthId::new("ip", "127.0.0.0/8"))];
    let remote = [zk::Acl::new(zk::Permission::READ, zk::AuthId::new("ip", "10.0.0.0/8"))];
    let anyone = client(&addr).await;
    anyone.create("/local", b"", &zk::CreateMode::Persistent.with_acls(zk::Acls::new(&local))).await.unwrap();
    anyone.create("/remote", b"", &zk::CreateMode::Persistent.with_acls(zk::Acls::new(&remote))).await.unwrap();
    assert!(anyone.get_data("/local").await.is_ok(), "127.0.0.1 is inside 127.0.0.0/8");
    assert_eq!(anyone.get_data("/remote").await.unwrap_err(), zk::Error::NoAuth);
    assert_eq!(anyone.set_data("/local", b"w", None).await.unwrap_err(), zk::Error::NoAuth, "READ only");
    server.shutdown().await;
}
