//! `zkr export-zookeeper`: a zkr data directory written by a real server (snapshot and log)
//! is exported plain, gzip and snappy, and read back with the import's own reader
//! (`import::snapfile`): the same tree, Stat values, ACLs, sessions and zxid. The export
//! refuses a used target and a damaged zkr directory, writing nothing.
//! tests/interop/import/run.sh (variants export, roundtrip) starts ZooKeeper 3.8 on the output.

use crate::common::{self, cluster::client, cluster::persistent};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use zkr::export::{export, ExportError, Options};
use zkr::import::files::{Compression, ZkFile};
use zkr::proto::Acl;
use zkr::tree::{DataTree, NodeStat};
use zookeeper_client as zk;

type Nodes = BTreeMap<String, (Option<Vec<u8>>, Vec<Acl>, NodeStat)>;

fn nodes(tree: &DataTree) -> Nodes {
    let mut out = BTreeMap::new();
    tree.visit(|p, n| {
        out.insert(p.to_string(), (n.data.as_ref().map(|d| d.to_vec()), n.acl.to_vec(), n.stat));
    });
    out
}

fn sessions(tree: &DataTree) -> Vec<(i64, i32)> {
    tree.sessions().iter().map(|(id, s)| (*id, s.timeout_ms)).collect()
}

fn snapshot_of(zk_dir: &Path) -> ZkFile {
    let snaps = zkr::import::files::snapshots(zk_dir).unwrap();
    assert_eq!(snaps.len(), 1, "{snaps:?}");
    snaps.into_iter().next().unwrap()
}

/// A fresh target directory beside the test server's.
fn target(data_dir: &Path, name: &str) -> PathBuf {
    let d = data_dir.with_file_name(format!("{}-{name}", data_dir.file_name().unwrap().to_string_lossy()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Writes every kind of znode through a client, keeps one session open (its ephemerals),
/// and stops the server: the data directory then holds a snapshot and log records after it.
async fn write_a_tree(cfg: zkr::config::Config) -> i64 {
    let (server, addr) = common::start_with(cfg).await;
    let c = client(&addr).await;
    c.create("/app", b"app data", &persistent()).await.unwrap();
    c.set_data("/app", b"app data v2", None).await.unwrap();
    let seq = zk::CreateMode::PersistentSequential.with_acls(zk::Acls::anyone_all());
    for i in 0..3 {
        c.create("/app/item-", format!("{i}").as_bytes(), &seq).await.unwrap();
    }
    c.delete("/app/item-0000000001", None).await.unwrap();
    let alice =
        zk::Client::connector().auth("digest".to_string(), b"alice:secret".to_vec()).connect(&addr).await.unwrap();
    let creator = zk::CreateMode::Persistent.with_acls(zk::Acls::creator_all());
    alice.create("/app/private", b"s3cret", &creator).await.unwrap();
    let read_only = zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_read());
    c.create("/app/read-only", b"", &read_only).await.unwrap();
    let container = zk::CreateMode::Container.with_acls(zk::Acls::anyone_all());
    c.create("/box", b"", &container).await.unwrap();
    c.create("/box/kid", b"", &persistent()).await.unwrap();
    let ttl =
        zk::CreateMode::Persistent.with_acls(zk::Acls::anyone_all()).with_ttl(std::time::Duration::from_secs(3600));
    c.create("/lease", b"ttl", &ttl).await.unwrap();
    // A quota as zkCli's setquota writes it.
    c.create("/zookeeper/quota/app", b"", &persistent()).await.unwrap();
    c.create("/zookeeper/quota/app/zookeeper_limits", b"count=10,bytes=1000", &persistent()).await.unwrap();
    let holder = client(&addr).await;
    let eph = zk::CreateMode::Ephemeral.with_acls(zk::Acls::anyone_all());
    holder.create("/app/held", b"held", &eph).await.unwrap();
    let holder_id = holder.session_id().0;
    server.snapshot_now().await;
    // After the snapshot: only in the log.
    c.set_data("/app/held", b"held, changed", None).await.unwrap();
    c.create("/after-snapshot", b"", &persistent()).await.unwrap();
    server.shutdown().await;
    drop(holder);
    holder_id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_reads_back_as_the_same_tree_plain_gzip_and_snappy() {
    let cfg = common::test_config();
    let holder = write_a_tree(cfg.clone()).await;
    let want = zkr::storage::read_stopped(&cfg).expect("the zkr directory reads");
    let want_nodes = nodes(&want);
    assert!(want.sessions().contains_key(&holder), "the holder's session is in the zkr directory");
    assert_eq!(want_nodes["/app/held"].2.ephemeral_owner, holder);
    assert_eq!(want_nodes["/box"].2.ephemeral_owner, i64::MIN, "a container");
    assert_eq!(want_nodes["/lease"].2.ephemeral_owner >> 56, -1, "a TTL node");
    assert!(want_nodes.contains_key("/zookeeper/quota/app/zookeeper_limits"));
    assert!(want_nodes.contains_key("/after-snapshot"), "log records after the snapshot count");

    for (name, compression) in [("plain", None), ("gz", Some(Compression::Gzip)), ("snappy", Some(Compression::Snappy))]
    {
        let out = target(&cfg.data_dir, name);
        let opts = Options { compression, myid: Some(3), ..Default::default() };
        let done = export(&cfg.data_dir, &out, &opts).expect("export");
        let file = snapshot_of(&out);
        assert_eq!(file.compression, compression.unwrap_or(Compression::Plain), "{name}");
        assert_eq!((file.zxid, done.zxid), (want.last_zxid(), want.last_zxid()));
        assert!(zkr::import::snapfile::looks_valid(&file).unwrap(), "{name}: ZooKeeper's quick check");
        let got = zkr::import::snapfile::read(&file).expect("the import reader reads the export");
        assert_eq!(nodes(&got), want_nodes, "{name}: every node's data, ACL and Stat");
        assert_eq!(sessions(&got), sessions(&want), "{name}: sessions and timeouts");
        assert_eq!((done.sessions, done.zookeeper_passwords), (want.sessions().len(), 0), "zkr-born sessions");
        let epoch = (want.last_zxid() >> 32).to_string();
        for f in ["acceptedEpoch", "currentEpoch"] {
            assert_eq!(std::fs::read_to_string(out.join("version-2").join(f)).unwrap(), epoch);
        }
        assert_eq!(std::fs::read_to_string(out.join("myid")).unwrap(), "3\n");
        let _ = std::fs::remove_dir_all(&out);
    }
    // Reading changed nothing: the directory still recovers to the same tree.
    assert_eq!(nodes(&zkr::storage::read_stopped(&cfg).unwrap()), want_nodes);
}

#[test]
fn export_refuses_a_used_target_and_a_damaged_directory_and_writes_nothing() {
    let cfg = common::test_config();
    let mut tree = DataTree::new();
    let stat = NodeStat { czxid: 5, mzxid: 5, pzxid: 5, ..NodeStat::default() };
    assert!(tree.restore_node("/a", Some(bytes::Bytes::from_static(b"x")), &Acl::open_unsafe(), stat, 0));
    tree.set_last_zxid(5);
    let snap = zkr::storage::snapshot::write(&cfg.data_dir.join("snap"), &tree).unwrap();

    // A target that holds anything is refused, and left as it was.
    let out = target(&cfg.data_dir, "used");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("keep"), b"mine").unwrap();
    let e = export(&cfg.data_dir, &out, &Options::default()).unwrap_err();
    assert!(matches!(e, ExportError::NotEmpty(_)), "{e}");
    assert!(e.to_string().contains("Nothing was written"), "{e}");
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);

    // Not a zkr directory.
    let fresh = target(&cfg.data_dir, "fresh");
    let e = export(&cfg.data_dir.join("nothing"), &fresh, &Options::default()).unwrap_err();
    assert!(matches!(e, ExportError::NotZkr(_)), "{e}");

    // A damaged snapshot: refused, naming the file; nothing is written.
    let mut bytes = std::fs::read(&snap).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&snap, &bytes).unwrap();
    let e = export(&cfg.data_dir, &fresh, &Options::default()).unwrap_err();
    assert!(matches!(e, ExportError::Read(_)), "{e}");
    assert!(e.to_string().contains(&snap.display().to_string()), "{e}");
    assert!(!fresh.exists() || std::fs::read_dir(&fresh).unwrap().count() == 0, "nothing written");
}
