//! Ensemble tests whose timing must not share two cores with other ensembles: a slow or paused
//! leader never stalls a follower (issue 22, item 3), on an ensemble of `zkr serve` processes,
//! and no member deposes a leader the others follow (`ensemble_prevote`). A test binary of its
//! own, its tests one at a time (`ALONE`): beside the in-process ensembles of
//! tests/ensemble_guarantees.rs, the load made openraft's AppendEntries deadline (one
//! heartbeat) miss and stalled the new leader for reasons of its own.

mod common;
mod ensemble_big_writes;
mod ensemble_prevote;

/// Held by each test of this binary for its whole run.
pub static ALONE: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

use common::cluster::persistent;
use std::time::Duration;
use zookeeper_client as zk;

/// A slow or paused leader never stalls a follower (issue 22, item 3): a client on a follower
/// pipelines 32 KB writes, far more than the peer link's socket buffers hold, and the leader is
/// SIGSTOPped until they are acknowledged again, at most 10 s (past the 6 s session timeout;
/// ZooKeeper's usual tickTime 2000: elections after 1–2 s without a heartbeat). Writes through
/// the follower must be
/// acknowledged again (by the leader the others elect) while the old one is still stopped, and
/// the client's session must survive. Processes, not in-process members: only a stopped process
/// stops reading its sockets the way a paused JVM or a swapped-out leader does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_leader_never_stalls_a_follower() {
    let _alone = ALONE.lock().await;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;
    let ens = common::ensemble_proc::ProcEnsemble::start(3, 2000);
    let l = ens.leader();
    let f = (0..3).find(|i| *i != l && ens.mode(*i) == "follower").expect("a follower");
    let c = zk::Client::connector()
        .session_timeout(Duration::from_secs(6))
        .connect(&ens.addr(f))
        .await
        .expect("client connects to the follower");
    c.create("/p", b"", &persistent()).await.unwrap();
    let start = std::time::Instant::now();
    let ms = move || start.elapsed().as_millis() as u64;
    let (last_ack, expired, stop) =
        (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
    let acks = Arc::new(AtomicU64::new(0));
    let writer = tokio::spawn({
        let (c, last_ack, expired, stop, acks) =
            (c.clone(), last_ack.clone(), expired.clone(), stop.clone(), acks.clone());
        async move {
            let data = vec![b'w'; 32 * 1024];
            let mut inflight = tokio::task::JoinSet::new();
            while !stop.load(Ordering::Acquire) {
                while inflight.len() < 512 {
                    let fut = c.set_data("/p", &data, None);
                    inflight.spawn(fut);
                }
                match inflight.join_next().await {
                    Some(Ok(Ok(_))) => {
                        acks.fetch_add(1, Ordering::AcqRel);
                        last_ack.store(ms(), Ordering::Release);
                    }
                    Some(Ok(Err(zk::Error::SessionExpired))) => {
                        expired.store(true, Ordering::Release);
                        return;
                    }
                    Some(Ok(Err(_))) => tokio::time::sleep(Duration::from_millis(10)).await,
                    _ => {}
                }
            }
        }
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(acks.load(Ordering::Acquire) > 0, "writes flow before the pause");
    ens.signal(l, libc::SIGSTOP);
    let paused_at = ms();
    // Replies already on their way drain within a moment; a later ack was ordered by a new leader.
    let resumed = async {
        while last_ack.load(Ordering::Acquire) < paused_at + 1_000 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let in_time = tokio::time::timeout(Duration::from_secs(10), resumed).await;
    let resumed_after = last_ack.load(Ordering::Acquire).saturating_sub(paused_at);
    ens.signal(l, libc::SIGCONT);
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Release);
    let _ = tokio::time::timeout(Duration::from_secs(20), writer).await;
    assert!(
        in_time.is_ok(),
        "writes through the follower stalled while the leader was stopped (10 s, last ack {resumed_after} ms after the pause)\n{}",
        ens.log(f)
    );
    assert!(!expired.load(Ordering::Acquire), "the follower's client lost its session while the leader was stopped");
    if let Err(e) = c.get_data("/p").await {
        let logs: Vec<String> =
            (0..3).map(|i| format!("--- member {} (leader was {})\n{}", i + 1, l + 1, ens.log(i))).collect();
        panic!("the session no longer serves: {e}\n{}", logs.join("\n"));
    }
}
