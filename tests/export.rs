//! `zkr export-zookeeper`: a zkr data directory written by a real server (snapshot and log)
//! is exported plain, gzip and snappy, and read back with the import's own reader
//! (`import::snapfile`): the same tree, Stat values, ACLs, sessions and zxid. The export
//! refuses a used target and a damaged zkr directory, writing nothing. With a zoo.cfg
//! (`--config`), ZooKeeper's `snapshot.compression.method` chooses the file written, the flag
//! wins over it, an unknown method is refused, and `zkr serve` still starts with the key.
//! tests/interop/import/run.sh (variants export, roundtrip) starts ZooKeeper 3.8 on the output.

use crate::common::{self, cluster::client, cluster::persistent};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use zkr::config::{export_config, ExportConfig, ServeArgs};
use zkr::export::{export, settings, ExportError, Flags, Options};
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

/// A small stopped zkr directory (one snapshot) for the command-line tests: its tree.
fn snapshot_dir(data_dir: &Path) -> DataTree {
    let mut tree = DataTree::new();
    for (i, path) in ["/app", "/app/config", "/lease"].into_iter().enumerate() {
        let zxid = 0x1_0000_0003 + i as i64;
        let stat = NodeStat { czxid: zxid, mzxid: zxid, pzxid: zxid, ..NodeStat::default() };
        let data = bytes::Bytes::from(format!("data of {path}"));
        assert!(tree.restore_node(path, Some(data), &Acl::open_unsafe(), stat, 0));
    }
    tree.set_last_zxid(0x1_0000_0005);
    zkr::storage::snapshot::write(&data_dir.join("snap"), &tree).unwrap();
    tree
}

/// A zoo.cfg beside the test's data directory.
fn zoo_cfg(data_dir: &Path, text: &str) -> PathBuf {
    let path = data_dir.with_extension("cfg");
    std::fs::write(&path, text).unwrap();
    path
}

/// `zkr serve` (in-process) on `zoo_cfg` with a fresh data directory: it starts and serves a write.
async fn serve_starts_with(zoo_cfg: &Path) {
    let args = ServeArgs {
        config: Some(zoo_cfg.to_owned()),
        port: Some(0),
        bind: Some("127.0.0.1".parse().unwrap()),
        data_dir: Some(common::temp_dir()),
        admin_enable: Some(false),
        ..ServeArgs::default()
    };
    let cfg = zkr::config::Config::from_args(&args).expect("serve takes the zoo.cfg");
    let (server, addr) = common::start_with(cfg).await;
    client(&addr).await.create("/served", b"", &persistent()).await.unwrap();
    server.shutdown().await;
}

/// `snapshot.compression.method` in the zoo.cfg given with `--config` chooses the file ZooKeeper
/// reads (`snapshot.<zxid>.snappy`), the file's dataDir is the zkr directory read, and
/// `--compression` wins over the key; `zkr serve` with the key still starts (it ignores it: its
/// snapshots are zkr's own). In-process, as `zkr export-zookeeper` resolves its flags (main.rs):
/// a child process here would inherit other tests' data directory locks while it starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_honours_snapshot_compression_method_in_zoo_cfg() {
    let cfg = common::test_config();
    let want = snapshot_dir(&cfg.data_dir);
    let text = format!("tickTime=2000\ndataDir={}\nsnapshot.compression.method=snappy\n", cfg.data_dir.display());
    let zoo_cfg = zoo_cfg(&cfg.data_dir, &text);
    // A -D in the JVM flags loses to the file's key, as in ZooKeeper.
    let jvm = [("SERVER_JVMFLAGS", "-Dzookeeper.snapshot.compression.method=gz".to_owned())];
    let from_cfg = export_config(Some(&zoo_cfg), &jvm).unwrap();
    assert_eq!(from_cfg.compression, Some((Compression::Snappy, format!("{}:3", zoo_cfg.display()))));

    let (data_dir, opts) = settings(Flags::default(), from_cfg.clone()).expect("dataDir from the file");
    assert_eq!(data_dir, cfg.data_dir);
    let out = target(&cfg.data_dir, "snappy");
    let done = export(&data_dir, &out, &opts).expect("export");
    let file = snapshot_of(&out);
    assert_eq!(file.path.file_name().unwrap().to_str().unwrap(), "snapshot.100000005.snappy");
    assert_eq!(file.path, done.snapshot);
    assert_eq!((file.compression, file.zxid), (Compression::Snappy, want.last_zxid()));
    assert!(zkr::import::snapfile::looks_valid(&file).unwrap(), "ZooKeeper's quick check of a snappy stream");
    let got = zkr::import::snapfile::read(&file).expect("the import reader reads the export");
    assert_eq!(nodes(&got), nodes(&want), "every node's data, ACL and Stat");

    // The flag wins over the key.
    let gz = target(&cfg.data_dir, "gz");
    let flags = Flags { compression: Some(Compression::Gzip), ..Flags::default() };
    let (data_dir, opts) = settings(flags, from_cfg).unwrap();
    export(&data_dir, &gz, &opts).expect("export");
    assert_eq!(snapshot_of(&gz).path.file_name().unwrap().to_str().unwrap(), "snapshot.100000005.gz");
    // No data directory anywhere: nothing to export.
    assert!(settings(Flags::default(), ExportConfig::default()).is_none());

    serve_starts_with(&zoo_cfg).await;
    for d in [out, gz] {
        let _ = std::fs::remove_dir_all(&d);
    }
    let _ = std::fs::remove_file(&zoo_cfg);
}

/// A method ZooKeeper does not know (it would write plain snapshots without a word) is refused
/// with the file, the line and the reason, before anything is read or written; so is one in
/// SERVER_JVMFLAGS. `zkr serve` still starts with it, as ZooKeeper does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_refuses_an_unknown_snapshot_compression_method() {
    let cfg = common::test_config();
    snapshot_dir(&cfg.data_dir);
    let text = format!("dataDir={}\n# a typo next\nsnapshot.compression.method=snapy\n", cfg.data_dir.display());
    let zoo_cfg = zoo_cfg(&cfg.data_dir, &text);
    let e = export_config(Some(&zoo_cfg), &[]).unwrap_err().to_string();
    let want = format!(
        "{}:3: snapshot.compression.method must be gz, snappy or empty (plain), found \"snapy\"",
        zoo_cfg.display()
    );
    assert!(e.starts_with(&want), "{e}");

    // The system property in SERVER_JVMFLAGS, when no zoo.cfg sets the key.
    let jvm = [("SERVER_JVMFLAGS", "-Xmx1g -Dzookeeper.snapshot.compression.method=lz4".to_owned())];
    let e = export_config(None, &jvm).unwrap_err().to_string();
    assert!(e.contains("SERVER_JVMFLAGS: snapshot.compression.method must be gz, snappy"), "{e}");

    serve_starts_with(&zoo_cfg).await;
    let _ = std::fs::remove_file(&zoo_cfg);
}
