//! `zkr export-zookeeper` from an ensemble member's data directory: three members and a Raft
//! observer with `zkr.zookeeperPasswords=true` take writes (enough for Raft snapshots and log entries after
//! them), the tree is read through a client from the live ensemble, the ensemble stops, and the
//! export of every member's directory holds the same znodes with the same data and Stat, the
//! zxid the members served, the open session with ZooKeeper's password (re-attachable), and
//! nothing in the member's directory changed. A running member's directory is refused.
//! tests/interop/import/wayback.sh starts three ZooKeeper 3.8 members on such exports.

use crate::common::cluster::{client, ephemeral, four_letter, persistent, Cluster};
use std::collections::BTreeMap;
use std::time::Duration;
use zkr::export::{export, ExportError, Options};
use zookeeper_client as zk;

/// Path → (data, Stat fields a client sees).
type Seen = BTreeMap<String, (Vec<u8>, [i64; 9])>;

/// The Stat a client would see (`wire_stat`: ZooKeeper's `copyStat`, cversion as 2 × creates − children).
fn fields(n: &zkr::tree::Znode) -> [i64; 9] {
    let s = n.wire_stat();
    [
        s.czxid,
        s.mzxid,
        s.pzxid,
        s.ctime,
        s.mtime,
        s.version as i64,
        s.cversion as i64,
        s.aversion as i64,
        s.ephemeral_owner,
    ]
}

/// Every znode a client reads from the live ensemble, but `/zookeeper` (ZooKeeper's own).
async fn walk(c: &zk::Client) -> Seen {
    let mut out = BTreeMap::new();
    let mut todo = vec!["/".to_owned()];
    while let Some(path) = todo.pop() {
        let (data, s) = c.get_data(&path).await.expect("get_data");
        let f = [
            s.czxid,
            s.mzxid,
            s.pzxid,
            s.ctime,
            s.mtime,
            s.version as i64,
            s.cversion as i64,
            s.aversion as i64,
            s.ephemeral_owner,
        ];
        for child in c.list_children(&path).await.expect("children") {
            let p = if path == "/" { format!("/{child}") } else { format!("{path}/{child}") };
            if p != "/zookeeper" {
                todo.push(p);
            }
        }
        out.insert(path, (data, f));
    }
    out
}

fn exported(tree: &zkr::tree::DataTree) -> Seen {
    let mut out = BTreeMap::new();
    tree.visit(|p, n| {
        let p = if p.is_empty() { "/" } else { p };
        if p != "/zookeeper" && !p.starts_with("/zookeeper/") {
            out.insert(p.to_owned(), (n.data.as_ref().map(|d| d.to_vec()).unwrap_or_default(), fields(n)));
        }
    });
    out
}

fn zxid_of(srvr: &str) -> i64 {
    let line = srvr.lines().find_map(|l| l.strip_prefix("Zxid: ")).expect("srvr has Zxid");
    i64::from_str_radix(line.trim().trim_start_matches("0x"), 16).expect("hex zxid")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_of_each_members_directory_is_the_tree_the_ensemble_served() {
    // Members 1-3 vote; member 4 is a Raft observer (its directory has the same layout).
    let mut cfgs = crate::common::cluster::ensemble_configs(4);
    for c in &mut cfgs {
        c.zookeeper_passwords = true;
        c.snap_count = 40;
        c.ensemble.as_mut().unwrap().members.get_mut(&4).unwrap().observer = true;
    }
    let cl = Cluster::start_with(cfgs).await;
    let leader = cl.leader().await;
    let c = client(&cl.addr(leader)).await;
    c.create("/app", b"v0", &persistent()).await.unwrap();
    for i in 0..150 {
        c.create(&format!("/app/n{i:03}"), format!("{i}").as_bytes(), &persistent()).await.unwrap();
        if i % 3 == 0 {
            c.set_data(&format!("/app/n{i:03}"), b"changed", None).await.unwrap();
        }
    }
    for i in (0..150).step_by(7) {
        c.delete(&format!("/app/n{i:03}"), None).await.unwrap();
    }
    let seq = zk::CreateMode::PersistentSequential.with_acls(zk::Acls::anyone_all());
    c.create("/app/seq-", b"", &seq).await.unwrap();
    let follower = cl.follower(leader);
    let holder = client(&cl.addr(follower)).await;
    holder.create("/app/held", b"mine", &ephemeral()).await.unwrap();
    let holder_id = holder.session_id().0;
    c.set_data("/app", b"last", None).await.unwrap();
    // Every member applies everything and hears the commit point (a heartbeat or two).
    for i in 0..4 {
        let m = client(&cl.addr(i)).await;
        m.sync("/").await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let want = walk(&c).await;
    assert!(
        want.contains_key("/app/held") && want.keys().any(|k| k.starts_with("/app/seq-")),
        "{:?}",
        want.keys().last()
    );
    let zxids: Vec<i64> = futures_zxids(&cl).await;
    assert!(zxids.iter().all(|z| *z == zxids[0]), "members at {zxids:x?}");

    // A running member's directory is refused.
    let busy = cl.cfgs[0].data_dir.with_extension("zk-busy");
    let e = export(&cl.cfgs[0].data_dir, &busy, &Options::default()).unwrap_err();
    assert!(matches!(e, ExportError::Read(zkr::storage::StorageError::Locked(_))), "{e}");
    let cfgs = cl.cfgs.clone();
    cl.shutdown().await;
    drop((c, holder));

    let mut replayed = 0;
    for (i, cfg) in cfgs.iter().enumerate() {
        let before = listing(&cfg.data_dir);
        let out = cfg.data_dir.with_extension("zk");
        let _ = std::fs::remove_dir_all(&out);
        let done = export(&cfg.data_dir, &out, &Options { myid: Some(i as u64 + 1), ..Default::default() })
            .unwrap_or_else(|e| panic!("member {}: {e}", i + 1));
        assert!(done.member.is_some(), "member {}: read as a member's directory", i + 1);
        replayed += done.member.map_or(0, |(_, n)| n);
        assert_eq!(done.zxid, zxids[0], "member {}: the zxid the ensemble served", i + 1);
        let files = zkr::import::files::snapshots(&out).unwrap();
        let got = zkr::import::snapfile::read(&files[0]).expect("ZooKeeper's format reads back");
        let got_nodes = exported(&got);
        let diff: Vec<_> = want
            .keys()
            .chain(got_nodes.keys())
            .filter(|k| want.get(*k) != got_nodes.get(*k))
            .map(|k| (k, want.get(k), got_nodes.get(k)))
            .collect();
        assert!(diff.is_empty(), "member {}: every znode, data and Stat (path, live, exported): {diff:?}", i + 1);
        let info = got.sessions().get(&holder_id).copied();
        assert!(info.is_some(), "member {}: the open session is exported", i + 1);
        assert_eq!(done.zookeeper_passwords, done.sessions, "every session has ZooKeeper's password");
        assert_eq!(listing(&cfg.data_dir), before, "member {}: its directory is unchanged", i + 1);
    }
    // Each member snapshots at its own random point: log entries after a snapshot were replayed.
    assert!(replayed > 0, "no member replayed log entries after its snapshot");
}

async fn futures_zxids(cl: &Cluster) -> Vec<i64> {
    let mut out = Vec::new();
    for i in 0..4 {
        out.push(zxid_of(&four_letter(&cl.addr(i), "srvr").await));
    }
    out
}

/// Every file under `dir` with its length and modification time.
fn listing(dir: &std::path::Path) -> Vec<(std::path::PathBuf, u64, std::time::SystemTime)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let m = e.metadata().unwrap();
            if m.is_dir() {
                todo.push(e.path());
            } else {
                out.push((e.path(), m.len(), m.modified().unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Standalone, the key puts ZooKeeper's password into the session's createSession txn: the export
/// counts the session as re-attachable; without it, the directory's own password is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standalone_sessions_get_zookeepers_passwords_with_the_key() {
    for key in [true, false] {
        let cfg = zkr::config::Config { zookeeper_passwords: key, ..crate::common::test_config() };
        let (server, addr) = crate::common::start_with(cfg.clone()).await;
        let c = client(&addr).await;
        c.create("/held", b"", &ephemeral()).await.unwrap();
        server.shutdown().await;
        drop(c);
        let out = cfg.data_dir.with_extension("zk");
        let done = export(&cfg.data_dir, &out, &Options::default()).expect("export");
        assert_eq!(done.sessions, 1);
        assert_eq!(done.zookeeper_passwords, usize::from(key), "zkr.zookeeperPasswords={key}");
    }
}
