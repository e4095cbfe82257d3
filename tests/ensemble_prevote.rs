//! No member deposes a leader the rest of the ensemble follows (pre-vote, `raft::prevote`): a
//! member that hears no leader while the others do must not raise the term. Without pre-vote an
//! openraft follower campaigns when its own timer runs out, and the leader, hearing the higher
//! term in that member's next answer, steps down: every client of every member sees a
//! disconnect and the ensemble is unavailable until the next election (found in CI: a member
//! restarted at tickTime 500 campaigned before the leader's backoff let its appends through, and
//! the Java client's transcript had one reconnect more than ZooKeeper's). ZooKeeper's
//! restarted or cut-off server follows the established leader in its epoch.
//! Part of the `ensemble_pause` test binary: its tests run alone.

use crate::common::cluster::{client, persistent, Cluster};
use std::time::Duration;
use zkr::server::core::replicated::Role;

fn term(cl: &Cluster, i: usize) -> u64 {
    cl.servers[i].as_ref().and_then(|s| s.member()).map_or(0, |m| m.raft.metrics().borrow().current_term)
}

/// Watches every running member for `dur`: the leader `l` must keep leading and no member may
/// reach a term above `t`. Returns what broke, if anything.
async fn hold(cl: &Cluster, l: usize, t: u64, dur: Duration) -> Result<(), String> {
    let until = tokio::time::Instant::now() + dur;
    while tokio::time::Instant::now() < until {
        for i in 0..cl.servers.len() {
            if term(cl, i) > t {
                return Err(format!("member {} reached term {} (the leader's is {t})", i + 1, term(cl, i)));
            }
        }
        if cl.role(l) != Some(Role::Leader) {
            return Err(format!("member {} stopped leading: {:?}", l + 1, cl.role(l)));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

/// Configs for 3 members at `tick_ms`.
fn configs(tick_ms: u32) -> Vec<zkr::config::Config> {
    let mut cfgs = crate::common::cluster::ensemble_configs(3);
    for c in &mut cfgs {
        c.tick_time_ms = tick_ms;
    }
    cfgs
}

/// The one-way partition: a follower restarted with its peer port closing every connection for
/// 4 s (the `deaf-peer-port` failpoint) hears no leader, but its own connections to the others
/// work: its vote requests would reach them, and its higher term would reach the leader in the
/// answer to the first append that gets through. At tickTime 1000 its openraft timer runs out
/// after 1.5-2 s, twice within the 4 s. With pre-vote the others say they hear their leader,
/// it never campaigns, and once its port answers it follows the same leader in the same term.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_hears_no_leader_but_reaches_the_others_never_deposes_it() {
    let _alone = crate::ALONE.lock().await;
    let mut cl = Cluster::start_with(configs(1000)).await;
    let l = cl.leader().await;
    let f = cl.follower(l);
    let c = client(&cl.addr(l)).await;
    c.create("/before", b"x", &persistent()).await.unwrap();
    let t = term(&cl, l);
    cl.stop(f).await;
    cl.cfgs[f].failpoints.deaf_peer_port_ms = 4000;
    cl.restart(f).await;
    if let Err(e) = hold(&cl, l, t, Duration::from_secs(6)).await {
        panic!("a member that heard no leader deposed the one the others follow: {e}");
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while cl.role(f) != Some(Role::Follower) {
        assert!(tokio::time::Instant::now() < deadline, "member {} never followed again: {:?}", f + 1, cl.role(f));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!((term(&cl, f), term(&cl, l)), (t, t), "the same leader, the same term");
    let cf = client(&cl.addr(f)).await;
    cf.create("/after", b"y", &persistent()).await.expect("a write through the restarted member");
    assert_eq!(c.get_data("/after").await.unwrap().0, b"y");
    cl.shutdown().await;
}

/// The schedule CI found: a follower stopped and restarted under a steady writer, three times,
/// at tickTime 500 (heartbeats every 50 ms, elections after 250-500 ms). Each time it must
/// follow the leader it left, without a new term, and the writer must never fail. The race CI
/// lost is narrow here (the leader's retry had to miss the restarted member's first moments by
/// its 500 ms backoff); the one-way test above is the form of it that fails every time without
/// pre-vote. This one guards the everyday restart: pre-vote must not make it slower or worse.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_member_follows_the_leader_it_left_without_a_new_term() {
    let _alone = crate::ALONE.lock().await;
    let mut cl = Cluster::start_with(configs(500)).await;
    let l = cl.leader().await;
    let t = term(&cl, l);
    let c = client(&cl.addr(l)).await;
    c.create("/w", b"", &persistent()).await.unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = tokio::spawn({
        let (c, stop) = (c.clone(), stop.clone());
        async move {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                c.set_data("/w", &n.to_be_bytes(), None).await.map_err(|e| format!("write {n} failed: {e}"))?;
                n += 1;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Ok::<u64, String>(n)
        }
    });
    for round in 0..3 {
        let f = [0, 1, 2].into_iter().filter(|i| *i != l).nth(round % 2).unwrap();
        cl.stop(f).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
        cl.restart(f).await;
        if let Err(e) = hold(&cl, l, t, Duration::from_secs(3)).await {
            panic!("round {round}: restarting member {} deposed the leader: {e}", f + 1);
        }
        assert_eq!(cl.role(f), Some(Role::Follower), "round {round}: member {} follows again", f + 1);
    }
    stop.store(true, std::sync::atomic::Ordering::Release);
    let written = writer.await.unwrap().expect("the writer on the leader never fails");
    assert!(written > 100, "the writer kept writing: {written}");
    cl.shutdown().await;
}
