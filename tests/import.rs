//! `import-zookeeper` over a small data directory written by Debian's ZooKeeper 3.8
//! (tests/data/zk38-small: its initial snapshot and a log trimmed of its preallocated zeros).
//! Expected values were read from that ZooKeeper with zkCli.sh before it was stopped.
//! tests/interop/import/ runs the larger differential version against a live ZooKeeper.

use std::path::Path;

#[test]
fn imports_a_zookeeper_38_data_directory() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/zk38-small");
    let loaded = zkr::import::load(&src, None, &Default::default()).expect("import");
    assert!(loaded.snapshot.is_some_and(|p| p.ends_with("snapshot.0")));
    assert_eq!((loaded.logs, loaded.txns > 20, loaded.losses.len()), (1, true, 0));
    let tree = loaded.tree;
    let mut paths = Vec::new();
    tree.visit(|p, _| paths.push(p.to_string()));
    paths.sort();
    let want = [
        "/",
        "/a",
        "/a/s0000000001",
        "/c",
        "/n",
        "/p",
        "/x1",
        "/x1/b",
        "/x1/c",
        "/x1/s0000000005",
        "/zookeeper",
        "/zookeeper/config",
        "/zookeeper/quota",
    ];
    assert_eq!(paths, want);

    let a = tree.get("/a").unwrap();
    let s = a.wire_stat();
    assert_eq!((s.czxid, s.mzxid, s.pzxid, s.cversion, s.version, s.num_children), (2, 5, 0xa, 3, 1, 1));
    assert_eq!(a.data.as_deref(), Some(&b"v2"[..]));

    let p = tree.get("/p").unwrap();
    assert_eq!((p.wire_stat().aversion, p.data.as_deref()), (1, Some(&b"data"[..])));
    assert_eq!(p.acl.to_vec(), zkr::proto::Acl::read_unsafe());

    let x1 = tree.get("/x1").unwrap();
    let s = x1.wire_stat();
    assert_eq!((s.czxid, s.pzxid, s.cversion, s.num_children, s.data_length), (0xf, 0x18, 9, 3, 0));
    assert_eq!(x1.data, None, "zkCli's create without data stays null");
    assert_eq!(tree.get("/zookeeper").unwrap().wire_stat().cversion, -2);
}

/// What `zkr takeover --zookeeper-data` reads: the last zxid logged, the same the full import
/// reaches; a torn last record does not count, and a log with no record leaves the one before.
#[test]
fn the_last_logged_zxid_is_the_imports_and_a_torn_record_does_not_count() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/zk38-small");
    let tree = zkr::import::load(&src, None, &Default::default()).unwrap().tree;
    let last = zkr::import::last_logged(&src).unwrap();
    assert_eq!(last, Some(tree.last_zxid()));

    let dir = std::env::temp_dir().join(format!("zkr-last-logged-{}", std::process::id()));
    let v2 = dir.join("version-2");
    std::fs::create_dir_all(&v2).unwrap();
    let log = std::fs::read(src.join("version-2/log.1")).unwrap();
    // Cut in the middle of a record: the record before it is the last.
    std::fs::write(v2.join("log.1"), &log[..log.len() / 2]).unwrap();
    let torn = zkr::import::last_logged(&dir).unwrap().unwrap();
    assert!(torn > 1 && torn < tree.last_zxid(), "0x{torn:x}");
    // A newer log holding only its header (ZooKeeper rolled it and wrote nothing yet).
    std::fs::write(v2.join(format!("log.{:x}", tree.last_zxid() + 1)), &log[..16]).unwrap();
    assert_eq!(zkr::import::last_logged(&dir).unwrap(), Some(torn));
    assert_eq!(zkr::import::last_logged(&dir.join("nothing")).unwrap(), None);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn import_refuses_a_used_data_directory_and_a_missing_source() {
    let out = std::env::temp_dir().join(format!("zkr-import-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/zk38-small");
    let opts = zkr::import::Options::default();
    zkr::import::import(&src, None, &out, &opts).expect("first import");
    assert!(matches!(zkr::import::import(&src, None, &out, &opts), Err(zkr::import::ImportError::NotEmpty(_))));
    assert!(matches!(zkr::import::load(&out.join("nothing"), None, &opts), Err(zkr::import::ImportError::Empty(_))));
}

use crate::common;

/// Clients of the old ZooKeeper keep their (session id, password) and re-attach to zkr after a
/// migration; ZooKeeper-derived passwords are accepted only for sessions that were imported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_sessions_accept_zookeeper_passwords_and_only_they_do() {
    let cfg = common::test_config();
    let mut tree = zkr::tree::DataTree::new();
    let imported: i64 = 0x1000020b7660000;
    let native: i64 = 0x1000020b7660001;
    let info = |zk_password| zkr::tree::SessionInfo { timeout_ms: 3000, zk_password, password: None, owner: None };
    tree.restore_session(imported, info(true));
    tree.restore_session(native, info(false));
    zkr::storage::snapshot::write(&cfg.data_dir.join("snap"), &tree).unwrap();
    // Recovered sessions get their timeout from the server's start, not from the process's
    // first clock reading: make the process older than the timeout first (CI once saw this
    // session expired on arrival, after other tests had run in the same process).
    while zkr::session::mono_ms() < 3500 {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (server, addr) = common::start_with(cfg).await;
    let attach = |id: i64, password: Vec<u8>| {
        let addr = addr.clone();
        async move {
            let mut r = common::Raw::open(&addr).await;
            let mut req = common::new_session(5000);
            req.session_id = id;
            req.password = password;
            r.handshake(req).await.unwrap().session_id
        }
    };
    assert_eq!(attach(imported, zkr::session::zookeeper_password(imported).to_vec()).await, imported);
    assert_eq!(attach(imported, vec![7; 16]).await, 0, "a wrong password is still refused");
    assert_eq!(
        attach(native, zkr::session::zookeeper_password(native).to_vec()).await,
        0,
        "not for zkr's own sessions"
    );
    server.shutdown().await;
}
