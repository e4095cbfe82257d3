//! Big writes never starve the heartbeats (issue 43, item 2): 200 creates of 1,000,000 bytes
//! each, pipelined through a follower of a 3-member ensemble started from zoo.cfg files
//! (tickTime 2000, initLimit 10, syncLimit 5). Before the peer link had a control lane and
//! byte-bounded appends, the leader's AppendEntries of 64 such entries missed openraft's
//! one-heartbeat deadline again and again: the leader lost its quorum ("leader without a quorum
//! for 10s"), the followers heard no leader, and most creates got ConnectionLoss. ZooKeeper 3.8
//! takes all 200 in about 9 s. Part of the `ensemble_pause` binary, whose tests take turns
//! (`ALONE`): heartbeat gaps are timing, and beside the integration binary's parallel ensembles
//! one burst saw a member log a lost leader, which measured the machine, not the link.

use crate::common::cluster::persistent;
use crate::common::ensemble_proc::ProcEnsemble;
use std::time::Duration;
use zookeeper_client as zk;

const CREATES: usize = 200;
const VALUE_BYTES: usize = 1_000_000;

/// What the client saw of the burst.
#[derive(Debug, Default)]
struct Outcome {
    ok: usize,
    connection_loss: usize,
    other: Vec<String>,
}

/// Pipelines `CREATES` creates of `VALUE_BYTES` each under `/big` (each is sent when it is
/// made) and waits for every answer.
async fn burst(c: &zk::Client) -> Outcome {
    use futures::StreamExt;
    let data = vec![b'b'; VALUE_BYTES];
    let paths: Vec<String> = (0..CREATES).map(|i| format!("/big/n{i:03}")).collect();
    let options = persistent();
    let mut inflight: futures::stream::FuturesUnordered<_> =
        paths.iter().map(|p| c.create(p, &data, &options)).collect();
    let mut out = Outcome::default();
    while let Some(r) = inflight.next().await {
        match r {
            Ok(_) => out.ok += 1,
            Err(zk::Error::ConnectionLoss) => out.connection_loss += 1,
            Err(e) => out.other.push(e.to_string()),
        }
    }
    out
}

/// The last `n` lines of `log`.
fn tail(log: &str, n: usize) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n") + "\n"
}

/// The largest gap between two appends or heartbeats from the leader that member `i` reports
/// (`zk_leader_gap_max_ms` in mntr), since its last `srst`.
fn leader_gap_max_ms(ens: &ProcEnsemble, i: usize) -> Option<u64> {
    let mntr = ens.four_letter(i, "mntr");
    crate::common::cluster::mntr_value(&mntr, "zk_leader_gap_max_ms").and_then(|v| v.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_one_megabyte_creates_through_a_follower_all_succeed_without_losing_the_leader() {
    let _alone = crate::ALONE.lock().await;
    let ens = ProcEnsemble::start(3, 2000);
    let l = ens.leader();
    let f = (0..3).find(|i| *i != l && ens.mode(*i) == "follower").expect("a follower");
    let followers: Vec<usize> = (0..3).filter(|i| *i != l).collect();
    let c = zk::Client::connector()
        .session_timeout(Duration::from_secs(10))
        .connect(&ens.addr(f))
        .await
        .expect("client connects to the follower");
    c.create("/big", b"", &persistent()).await.unwrap();
    // Gaps from the ensemble's start (elections) are not the burst's.
    for i in &followers {
        ens.four_letter(*i, "srst");
    }
    let started = std::time::Instant::now();
    let Ok(out) = tokio::time::timeout(Duration::from_secs(120), burst(&c)).await else {
        let tails = (0..3).map(|i| format!("--- member {} ---\n{}", i + 1, tail(&ens.log(i), 60))).collect::<String>();
        panic!("the burst did not end within 120 s\n{tails}");
    };
    let took = started.elapsed();
    let gaps: Vec<Option<u64>> = followers.iter().map(|i| leader_gap_max_ms(&ens, *i)).collect();
    let logs: Vec<String> = (0..3).map(|i| ens.log(i)).collect();
    let dump = || logs.iter().enumerate().map(|(i, g)| format!("--- member {} ---\n{g}", i + 1)).collect::<String>();
    eprintln!("{CREATES} x {VALUE_BYTES} bytes through member {}: {out:?} in {took:?}, leader gaps {gaps:?}", f + 1);
    assert_eq!(
        (out.ok, out.connection_loss, out.other.len()),
        (CREATES, 0, 0),
        "every create succeeds, none gets ConnectionLoss: {out:?} in {took:?}\n{}",
        dump()
    );
    for (i, log) in logs.iter().enumerate() {
        for bad in ["without a quorum", "no leader heard"] {
            assert!(!log.contains(bad), "member {} logged {bad:?} during the burst\n{}", i + 1, dump());
        }
    }
    assert_eq!(ens.mode(l), "leader", "the leader still leads");
    let children = c.list_children("/big").await.expect("children of /big");
    assert_eq!(children.len(), CREATES);
    // Heartbeats kept coming: a follower that heard nothing for an election timeout (1 s here)
    // would grant a pre-vote against its leader.
    for (i, g) in followers.iter().zip(&gaps) {
        let g = g.unwrap_or_else(|| panic!("member {} reports no zk_leader_gap_max_ms", i + 1));
        assert!(g < 1000, "member {} heard nothing from its leader for {g} ms during the burst\n{}", i + 1, dump());
    }
}

/// The beat lane: followers whose disk takes 1.5 s to append each large AppendEntries (the
/// `slow-appends` failpoint), longer than the shortest election timeout (1 s at tickTime 2000)
/// and far longer than the heartbeat openraft gives an AppendEntries, keep hearing their leader
/// every heartbeat, nobody stands for election, and the leader keeps its quorum past syncLimit
/// ticks (10 s) although no AppendEntries is ever answered in time. With heartbeats only in
/// openraft's replication loop the followers heard nothing while an append was in flight (1.5 s
/// gaps, a pre-vote any of them would grant), and the leader gave up its quorum after 10 s
/// (ZooKeeper's leader pings its learners whatever the proposals in flight).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn followers_hear_their_leader_while_an_append_takes_longer_than_an_election_timeout() {
    let _alone = crate::ALONE.lock().await;
    let ens = ProcEnsemble::start_with(3, 2000, "", &[("ZKR_FAILPOINTS", "slow-appends=1500")]);
    let l = ens.leader();
    let followers: Vec<usize> = (0..3).filter(|i| *i != l).collect();
    let c = zk::Client::connector()
        .session_timeout(Duration::from_secs(30))
        .connect(&ens.addr(followers[0]))
        .await
        .expect("client connects to a follower");
    c.create("/big", b"", &persistent()).await.unwrap();
    for i in &followers {
        ens.four_letter(*i, "srst");
    }
    let data = vec![b's'; VALUE_BYTES];
    // The write waits for the slow disks; the ensemble must hold meanwhile.
    let write = tokio::time::timeout(Duration::from_secs(12), c.create("/big/slow", &data, &persistent()));
    let watch = async {
        let mut changes = Vec::new();
        let until = tokio::time::Instant::now() + Duration::from_secs(12);
        while tokio::time::Instant::now() < until {
            let modes: Vec<String> = (0..3).map(|i| ens.mode(i)).collect();
            let expected = (0..3).all(|i| modes[i] == if i == l { "leader" } else { "follower" });
            if !expected {
                changes.push(format!("{modes:?}"));
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        changes
    };
    let (_, changes) = tokio::join!(write, watch);
    let gaps: Vec<Option<u64>> = followers.iter().map(|i| leader_gap_max_ms(&ens, *i)).collect();
    let dump = || (0..3).map(|i| format!("--- member {} ---\n{}", i + 1, ens.log(i))).collect::<String>();
    eprintln!("slow appends: leader gaps {gaps:?}, mode changes {changes:?}");
    assert!(changes.is_empty(), "the members left their roles: {changes:?}\n{}", dump());
    for (i, g) in followers.iter().zip(&gaps) {
        let g = g.unwrap_or_else(|| panic!("member {} reports no zk_leader_gap_max_ms", i + 1));
        assert!(g < 1000, "member {} heard nothing from its leader for {g} ms\n{}", i + 1, dump());
    }
    for i in &followers {
        assert!(ens.log(*i).contains("failpoint slow-appends"), "member {} never had a slow append", i + 1);
    }
    for i in 0..3 {
        for bad in ["without a quorum", "no leader heard"] {
            assert!(!ens.log(i).contains(bad), "member {} logged {bad:?}\n{}", i + 1, dump());
        }
    }
}
