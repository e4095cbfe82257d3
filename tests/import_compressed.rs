//! `zkr import-zookeeper` on what Debian's ZooKeeper 3.8 writes with compressed snapshots
//! (`-Dzookeeper.snapshot.compression.method=snappy|gz`), snapCount=200, ~1,272 znodes, purged
//! with ZooKeeper's own `PurgeTxnLog -n 3`: zkr serves every znode with the Stat ZooKeeper
//! served, and the same as ZooKeeper restarted on the purged directory. Then the directory is
//! broken the ways an operator meets (a gap between the snapshot and the logs, a damaged
//! snapshot or log record, logs without any snapshot): the command exits 1, names the file and
//! the reason and the way out, and imports nothing; with `--accept-data-loss` it imports. Needs
//! `apt-get install zookeeper zookeeper-bin`; it fails, not skips, when ZooKeeper cannot start.

use crate::common;
use crate::zab_observer::{create, served_tree, served_tree_at, spawn_member, srvr_mode, Launch, Session};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};
use zkr::proto::{Acl, OpCode, RequestBody};

type Tree = Vec<(String, Option<bytes::Bytes>, zkr::proto::Stat)>;

/// Parents and children per parent of the workload: with `/`, `/zookeeper`, its quota and
/// config nodes, the ephemerals and the deletes, 1,272 znodes are served in the end.
const PARENTS: usize = 40;
const CHILDREN: usize = 31;
const EPHEMERALS: usize = 28;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imports_zookeeper_38_snappy_snapshots_after_a_purge_and_refuses_a_broken_history() {
    let zk = Written::new("snappy").await;
    assert!(zk.snapshots().iter().all(|p| p.to_string_lossy().ends_with(".snappy")));
    zk.imports_every_znode().await;
    zk.refuses_a_broken_history();
    zk.restarted_zookeeper_serves_the_same_tree().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imports_zookeeper_38_gz_snapshots_after_a_purge() {
    let zk = Written::new("gz").await;
    assert!(zk.snapshots().iter().all(|p| p.to_string_lossy().ends_with(".gz")));
    zk.imports_every_znode().await;
    zk.restarted_zookeeper_serves_the_same_tree().await;
}

/// A ZooKeeper data directory written, stopped and purged, with the tree ZooKeeper served.
struct Written {
    dir: PathBuf,
    /// dataDir, holding zoo.cfg and version-2/.
    data: PathBuf,
    port: u16,
    props: Vec<String>,
    tree: Tree,
}

impl Drop for Written {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A ZooKeeper server that is killed on drop.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Written {
    async fn new(method: &str) -> Written {
        let dir = common::temp_dir();
        let data = dir.join("zk");
        std::fs::create_dir_all(&data).unwrap();
        let port = common::cluster::free_port();
        std::fs::write(
            data.join("zoo.cfg"),
            format!(
                "tickTime=2000\ndataDir={}\nclientPort={port}\nclientPortAddress=127.0.0.1\nsnapCount=200\n\
                 admin.enableServer=false\n4lw.commands.whitelist=*\nmaxClientCnxns=0\nforceSync=no\n",
                data.display()
            ),
        )
        .unwrap();
        let props = vec![format!("-Dzookeeper.snapshot.compression.method={method}")];
        let mut zk = Written { dir, data, port, props, tree: Vec::new() };
        let server = zk.start().await;
        workload(port).await;
        zk.tree = served_tree(port).await;
        drop(server);
        assert!(zk.snapshots().len() > 3, "snapCount=200 leaves more than 3 snapshots: {:?}", zk.files());
        purge(&zk.data);
        assert_eq!(zk.snapshots().len(), 3, "PurgeTxnLog -n 3 keeps 3 snapshots: {:?}", zk.files());
        zk
    }

    async fn start(&self) -> Running {
        let server = Running(spawn_member(&Launch::Debian, &self.data, &self.props));
        let deadline = Instant::now() + Duration::from_secs(60);
        while srvr_mode(self.port).await.as_deref() != Some("standalone") {
            let log = std::fs::read_to_string(self.data.join("zk.out")).unwrap_or_default();
            assert!(Instant::now() < deadline, "ZooKeeper did not start within 60 s:\n{log}");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        server
    }

    fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.data.join("version-2"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn snapshots(&self) -> Vec<PathBuf> {
        zk_files(&self.data.join("version-2"), "snapshot").into_iter().map(|(_, p)| p).collect()
    }

    /// A copy of the purged dataDir, to break.
    fn copy(&self, name: &str) -> PathBuf {
        let to = self.dir.join(name).join("version-2");
        std::fs::create_dir_all(&to).unwrap();
        for e in std::fs::read_dir(self.data.join("version-2")).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
        self.dir.join(name)
    }

    async fn imports_every_znode(&self) {
        let out = self.dir.join("imported");
        let run = import(&self.data, &out, &[]);
        let said = String::from_utf8_lossy(&run.stdout);
        assert!(run.status.success(), "import failed: {said}{}", String::from_utf8_lossy(&run.stderr));
        let newest = self.snapshots().pop().unwrap();
        assert!(said.contains(&newest.display().to_string()), "starts from the newest snapshot: {said}");
        assert_eq!(self.tree.len(), 1_272, "the workload's size");
        let (server, addr) = common::start_with(zkr::config::Config { data_dir: out, ..common::test_config() }).await;
        let ours = served_tree_at(&addr).await;
        server.shutdown().await;
        assert_same(&self.tree, &ours, "zkr on the imported directory");
    }

    async fn restarted_zookeeper_serves_the_same_tree(&self) {
        let _server = self.start().await;
        let again = served_tree(self.port).await;
        assert_same(&self.tree, &again, "ZooKeeper restarted on the purged directory");
    }

    fn refuses_a_broken_history(&self) {
        // A gap: a log the snapshot needs is gone.
        let gap = self.copy("gap");
        let next_log = make_gap(&gap.join("version-2"));
        refused(&gap, &self.dir.join("gap-out"), &[&next_log.display().to_string(), "the history has a gap"]);
        accepted(&gap, &self.dir.join("gap-lossy"));

        // No snapshot at all, and logs that start after the first zxid (what the issue saw:
        // "snapshot none, 569 txns").
        let bare = self.copy("bare");
        for s in zk_files(&bare.join("version-2"), "snapshot") {
            std::fs::remove_file(s.1).unwrap();
        }
        refused(&bare, &self.dir.join("bare-out"), &["no snapshot could be read"]);
        accepted(&bare, &self.dir.join("bare-lossy"));

        // The newest snapshot damaged: the older one and its logs are whole, so the import takes
        // them, as ZooKeeper does, and loses nothing.
        let one = self.copy("one-damaged");
        let snaps = zk_files(&one.join("version-2"), "snapshot");
        let newest = &snaps.last().unwrap().1;
        damage(newest);
        let run = import(&one, &self.dir.join("one-out"), &[]);
        let said = String::from_utf8_lossy(&run.stdout);
        assert!(run.status.success(), "{said}{}", String::from_utf8_lossy(&run.stderr));
        assert!(said.contains(&format!("skipped snapshot {}", newest.display())), "{said}");
        let whole = zkr::import::load(&self.data, None, &Default::default()).unwrap().tree;
        let older = zkr::import::load(&one, None, &Default::default()).unwrap().tree;
        assert_eq!(digest_of(older), digest_of(whole), "the older snapshot and its logs give the same tree");

        // Every snapshot damaged: the logs alone do not reach back to the first zxid.
        for (_, s) in &snaps[..snaps.len() - 1] {
            damage(s);
        }
        let name = snaps[0].1.display().to_string();
        refused(&one, &self.dir.join("all-out"), &[&name, "could not be read", "no snapshot could be read"]);
        accepted(&one, &self.dir.join("all-lossy"));

        // A whole record of a log fails its checksum: ZooKeeper stops loading there.
        let rec = self.copy("record");
        let logs = zk_files(&rec.join("version-2"), "log");
        let last = &logs.last().unwrap().1;
        let mut bytes = std::fs::read(last).unwrap();
        // The first record's body starts after the header (16) and its checksum and length (12).
        bytes[16 + 12 + 20] ^= 0x40;
        std::fs::write(last, bytes).unwrap();
        refused(&rec, &self.dir.join("record-out"), &[&last.display().to_string(), "damaged at offset 16", "Adler-32"]);
        accepted(&rec, &self.dir.join("record-lossy"));
    }
}

/// Creates, changes and deletes nodes on ZooKeeper, leaving a session with ephemerals open.
async fn workload(port: u16) {
    let mut s = Session::open(port, 30_000).await;
    let c = |path: String, flags: i32| RequestBody::Create(create(&path, path.as_bytes(), flags));
    s.write(OpCode::Create, c("/app".into(), 0)).await;
    for p in 0..PARENTS {
        s.write(OpCode::Create, c(format!("/app/p{p}"), 0)).await;
        for k in 0..CHILDREN {
            s.write(OpCode::Create, c(format!("/app/p{p}/n{k}"), 0)).await;
        }
        // Versions, cversions and pzxids that differ from the creates'.
        let data = Some(bytes::Bytes::from(format!("v{p}")));
        s.write(OpCode::SetData, RequestBody::SetData { path: format!("/app/p{p}/n0"), data, version: -1 }).await;
        s.write(OpCode::Delete, RequestBody::Delete { path: format!("/app/p{p}/n1"), version: -1 }).await;
        let mut acl = Acl::open_unsafe();
        acl[0].perms = 15;
        s.write(OpCode::SetAcl, RequestBody::SetAcl { path: format!("/app/p{p}/n2"), acl, version: -1 }).await;
    }
    for e in 0..EPHEMERALS {
        s.write(OpCode::Create, c(format!("/app/e{e}"), 1)).await;
    }
    // Kept open: its ephemerals are in the data directory when ZooKeeper is killed.
    std::mem::forget(s);
}

/// ZooKeeper's own purge, as `autopurge.snapRetainCount=3` runs it.
fn purge(data: &Path) {
    let jars = ["zookeeper", "zookeeper-jute", "slf4j-api", "slf4j-nop", "snappy-java", "commons-io"];
    let cp: Vec<String> = jars.iter().map(|j| format!("/usr/share/java/{j}.jar")).collect();
    let out = Command::new("java")
        .args(["-cp", &cp.join(":"), "org.apache.zookeeper.server.PurgeTxnLog"])
        .arg(data)
        .arg(data)
        .args(["-n", "3"])
        .output()
        .expect("java runs");
    assert!(out.status.success(), "PurgeTxnLog: {}", String::from_utf8_lossy(&out.stderr));
}

/// `<prefix>.<hex zxid>[.ext]` files of a version-2 directory, oldest first.
fn zk_files(dir: &Path, prefix: &str) -> Vec<(i64, PathBuf)> {
    let mut out: Vec<(i64, PathBuf)> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name()?.to_string_lossy().into_owned();
            let hex = name.strip_prefix(prefix)?.strip_prefix('.')?.split('.').next()?.to_owned();
            Some((i64::from_str_radix(&hex, 16).ok()?, path))
        })
        .collect();
    out.sort();
    out
}

/// Removes a log that some snapshot needs while a later log is still there (and the snapshots
/// newer than that one, which would not need it): the txns between are in no file. Returns the
/// log after the gap.
fn make_gap(v2: &Path) -> PathBuf {
    let snaps = zk_files(v2, "snapshot");
    let logs = zk_files(v2, "log");
    for (i, (snap, _)) in snaps.iter().enumerate().rev() {
        let first = logs.iter().rposition(|(z, _)| z <= snap).unwrap_or(0);
        for pair in logs[first..].windows(2) {
            let ((from, removed), (next, after)) = (&pair[0], &pair[1]);
            // The removed log held txns (max(from, snap+1) ..= next-1) the snapshot lacks.
            if *next > (*from).max(snap + 1) {
                std::fs::remove_file(removed).unwrap();
                for (_, newer) in &snaps[i + 1..] {
                    std::fs::remove_file(newer).unwrap();
                }
                return after.clone();
            }
        }
    }
    panic!("no log to remove for a gap in {:?}", logs);
}

/// Flips bytes in the middle of a file.
fn damage(file: &Path) {
    let mut bytes = std::fs::read(file).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 8] {
        *b ^= 0x5a;
    }
    std::fs::write(file, bytes).unwrap();
}

fn import(src: &Path, out: &Path, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zkr"))
        .args(["import-zookeeper", "--zk-data-dir"])
        .arg(src)
        .arg("--data-dir")
        .arg(out)
        .args(extra)
        .output()
        .expect("zkr runs")
}

/// The import exits 1, says each of `reasons` and the way out, and writes nothing.
fn refused(src: &Path, out: &Path, reasons: &[&str]) {
    let run = import(src, out, &[]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "refused: {err}{}", String::from_utf8_lossy(&run.stdout));
    for r in reasons.iter().chain(&["Nothing was imported", "--accept-data-loss"]) {
        assert!(err.contains(r), "the refusal says {r:?}: {err}");
    }
    assert_eq!(common::cluster::files_in(&out.join("snap")), 0, "nothing written: {err}");
}

/// With `--accept-data-loss` the same directory imports, and the output lists what was lost.
fn accepted(src: &Path, out: &Path) {
    let run = import(src, out, &["--accept-data-loss"]);
    let said = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{said}{}", String::from_utf8_lossy(&run.stderr));
    assert!(said.contains("imported zxid") && said.contains("lost (--accept-data-loss)"), "{said}");
    assert!(common::cluster::files_in(&out.join("snap")) > 0, "{said}");
}

fn digest_of(mut tree: zkr::tree::DataTree) -> u64 {
    tree.digest()
}

fn assert_same(zk: &Tree, ours: &Tree, what: &str) {
    let paths = |t: &Tree| t.iter().map(|n| n.0.clone()).collect::<Vec<_>>();
    assert_eq!(paths(zk), paths(ours), "{what}: the same znodes");
    for (a, b) in zk.iter().zip(ours) {
        assert_eq!(a, b, "{what}: {} has ZooKeeper's data and Stat", a.0);
    }
}
