//! Issue 42, item 4: a partition is not a takeover. Debian's ZooKeeper 3.8 runs in the root
//! network namespace with its quorum and election ports on the address of a bridge; three zkr
//! observers run each in a namespace of the test's, on that bridge (`<subnet>.9-11`). iptables
//! DROP rules inside an observer's namespace cut it off from the live participants' ports,
//! while the test still reaches every observer, the observers reach each other, and ZooKeeper
//! keeps serving its clients. Every
//! takeover request, sent directly by the super user with ZooKeeper's log proof, is refused:
//! - two observers cut off, the third still following: the cut-off ones heard from ZooKeeper
//!   within the session timeout and another observer still reaches the participants; the third
//!   follows a leader whose participants answer it;
//! - all three cut off: each one heard from ZooKeeper within the session timeout (the check and
//!   the accept alike), and the tool, run inside the namespace, is refused by the observers;
//! - healed, every observer observes ZooKeeper again: nothing changed.

use crate::common::netns::TestNet;
use crate::takeover_kit::{
    admin, error_of, log_proof, mode, start_observers_in, super_auth, super_header, until_not_following, Observer,
    ObserverPlan, Secured, ZKR,
};
use crate::zab_observer::{create, until_async, Ensemble, Launch, Session};
use std::path::PathBuf;
use std::process::Command;
use zkr::proto::{OpCode, RequestBody};

const CHECK: &str = "/zkr/takeover?seed=9&members=9,10,11&check=1";
const ACCEPT: &str = "/zkr/takeover?seed=9&members=9,10,11";

/// The refusal `o` answers to the super user's `path` with `proof`.
async fn refusal(o: &Observer, path: &str, proof: &str) -> String {
    let (code, why) = error_of(&admin(&o.admin_addr(), "POST", path, Some(&super_header()), Some(proof)).await);
    assert_eq!(code, 409, "server.{} refuses: {why}", o.id);
    why
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observers_cut_off_from_live_zookeeper_participants_refuse_every_takeover_request() {
    let net = TestNet::create(&[9, 10, 11]);
    let zk_host = net.addr(1);
    let plan = ObserverPlan::at([net.addr(9), net.addr(10), net.addr(11)]);
    // The test's session lives through every step without a ping: its expiry would be a txn
    // no observer holds, and the tool would refuse on ZooKeeper's logs before it asks them.
    let zk = Ensemble::start_on(&zk_host, &Launch::Debian, &plan.lines, "maxSessionTimeout=120000\n", &[]);
    let zk_data: Vec<PathBuf> = (0..3).map(|i| zk.data_dir(i)).collect();
    let leader = zk.leader().await;
    let mut c = Session::open(zk.client[leader], 120_000).await;
    c.write(OpCode::Create, RequestBody::Create(create("/live", b"", 0))).await;
    // A session timeout long enough for every step below (90 s).
    let secured = Secured::with_lines("maxSessionTimeout=90000\n");
    let namespaces = [net.ns(9), net.ns(10), net.ns(11)];
    let obs = start_observers_in(&plan, &zk.servers, &secured, Some(&namespaces)).await;
    let ports = zk.peer_ports();

    // Two observers cut off; server.11 still follows.
    net.cut(9, &zk_host, &ports);
    net.cut(10, &zk_host, &ports);
    until_not_following(&obs[0]).await;
    until_not_following(&obs[1]).await;
    c.write(OpCode::Create, RequestBody::Create(create("/during-partition", b"", 0))).await;
    let proof = log_proof(&zk_data);
    for o in &obs[..2] {
        let why = refusal(o, CHECK, &proof).await;
        assert!(why.contains("give no answer") && why.contains("within the session timeout (90 s)"), "{why}");
        assert!(why.contains("observer server.11 still reaches ZooKeeper participants"), "{why}");
        assert!(why.contains("server.11 still follows ZooKeeper's leader"), "{why}");
    }
    let why = refusal(&obs[2], CHECK, &proof).await;
    assert!(why.contains("this observer still follows") && why.contains("participants still answer"), "{why}");

    // All three cut off: each only knows it heard from ZooKeeper a moment ago.
    net.cut(11, &zk_host, &ports);
    until_not_following(&obs[2]).await;
    let proof = log_proof(&zk_data);
    for o in &obs {
        let why = refusal(o, CHECK, &proof).await;
        assert!(why.contains("give no answer") && why.contains("heard from ZooKeeper's leader"), "{why}");
        let why = refusal(o, ACCEPT, &proof).await;
        assert!(why.contains("give no answer") && why.contains("was not checked here"), "{why}");
    }
    // The tool, on an observer's host: the participants are unreachable from there, and the
    // observers refuse its plan.
    let mut tool = Command::new("ip");
    tool.args(["netns", "exec", &net.ns(9), ZKR, "takeover", "--config"]).arg(obs[0].config());
    for d in &zk_data {
        tool.arg("--zookeeper-data").arg(d);
    }
    let out = tokio::task::spawn_blocking(move || tool.args(["--auth", &super_auth()]).output().expect("zkr takeover"))
        .await
        .unwrap();
    let (said, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{said}{err}");
    assert!(said.contains("no answer (unreachable from here"), "{said}");
    assert!(err.contains("refused: nothing changed") && err.contains("within the session timeout"), "{err}");

    // ZooKeeper serves all along, on the other side.
    c.write(OpCode::Create, RequestBody::Create(create("/all-cut-off", b"", 0))).await;

    // Healed: every observer observes ZooKeeper again.
    net.heal();
    c.write(OpCode::Create, RequestBody::Create(create("/healed", b"", 0))).await;
    for o in &obs {
        let a = o.addr();
        until_async("the observer observes ZooKeeper again", 60, || {
            let a = a.clone();
            async move { mode(&a).await.as_deref() == Some("observer") }
        })
        .await;
        assert!(!o.dir.join("zoo.cfg.observer").exists(), "server.{} was not converted", o.id);
    }
}
