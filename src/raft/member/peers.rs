//! The peer port: openraft's RPCs from the other members, and the forward streams on which
//! followers send the leader their clients' proposals, session touches and sync points. When a
//! leader's replication stream ends and its port refuses, this member starts an election at once.

use super::*;

/// Serves the peer port: openraft's RPCs and forward streams from other members.
pub async fn serve_peers(
    link: Link,
    listener: TcpListener,
    raft: Raft,
    submitter: Submitter,
    core: mpsc::Sender<CoreMsg>,
    status: Arc<MemberStatus>,
    shutdown: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => break,
            a = listener.accept() => a,
        };
        let (tcp, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("peer accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let (raft, core, status, stop) = (raft.clone(), core.clone(), status.clone(), shutdown.clone());
        let (submitter, link) = (submitter.clone(), link.clone());
        tokio::spawn(async move {
            let mut stream = match link.accept(tcp, peer).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(%peer, "closing peer connection: {e}");
                    return;
                }
            };
            let hello =
                tokio::time::timeout(Duration::from_secs(5), network::read_frame::<_, Hello>(&mut stream)).await;
            let hello = match hello {
                Ok(Ok(h)) => h,
                Ok(Err(e)) => {
                    tracing::warn!(%peer, "closing peer connection: {e}");
                    return;
                }
                Err(_) => {
                    tracing::warn!(%peer, "closing peer connection: no hello in time");
                    return;
                }
            };
            let result = tokio::select! {
                _ = stop.cancelled() => Ok(()),
                r = async {
                    match hello.kind {
                        Kind::Rpc => serve_rpc(stream, hello.from, &raft, &status, &link).await,
                        Kind::Forward => serve_forward(stream, &raft, &submitter, &core).await,
                    }
                } => r,
            };
            if let Err(e) = result {
                match &e {
                    network::PeerError::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {}
                    _ => tracing::info!(%peer, from = hello.from, "peer connection closed: {e}"),
                }
            }
        });
    }
}

/// Serves openraft's RPCs from member `from`. When a connection that carried the current
/// leader's AppendEntries ends and the leader's peer port no longer takes connections, the
/// leader process is gone: like a ZooKeeper follower whose leader connection drops (it goes
/// LOOKING at once), this member stops serving now, instead of accepting clients for the
/// election timeout on behalf of a dead leader and dropping them again when the election
/// starts. A stream that ends while the leader still answers (openraft rebuilds its
/// replication streams, e.g. after a membership change) changes nothing. The next
/// AppendEntries, from whichever leader, makes this member a follower again.
pub(super) async fn serve_rpc(
    mut s: PeerStream,
    from: MemberId,
    raft: &Raft,
    status: &MemberStatus,
    link: &Link,
) -> Result<(), network::PeerError> {
    let mut replicated = false;
    let result = serve_rpc_frames(&mut s, from, raft, status, &mut replicated).await;
    drop(s);
    let (me, leader, addr) = {
        let m = raft.metrics();
        let m = m.borrow();
        (m.id, m.current_leader, m.membership_config.membership().get_node(&from).map(|n| n.peer_addr()))
    };
    tracing::debug!(peer = from, replicated, ?leader, "peer RPC connection ended");
    if replicated && leader == Some(from) {
        let alive = match addr {
            Some(addr) => !peer_is_gone(&addr, link).await,
            None => false,
        };
        if !alive && raft.metrics().borrow().current_leader == Some(from) {
            tracing::info!(leader = from, "the leader is gone (its stream ended, its peer port refuses): not serving until a leader is heard from");
            status.leader_lost.store(true, Ordering::Release);
            status.wake.notify_one();
            tokio::spawn(elect_after_leader_loss(raft.clone(), me, from));
        }
    }
    result
}

/// True if the member at `addr` is gone: its peer port refuses, or takes a connection and
/// drops it at once. A process being killed can still complete a connect (the kernel answers
/// for its listening socket until the file is closed), and then resets it; a live member keeps
/// the connection open, waiting for a request. Asked three times, 50 ms apart.
pub(super) async fn peer_is_gone(addr: &str, link: &Link) -> bool {
    use tokio::io::AsyncReadExt;
    for attempt in 0..3 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        match link.connect(addr, Kind::Rpc).await {
            Err(_) => return true,
            Ok(mut s) => {
                let mut b = [0u8; 1];
                if let Ok(Ok(0) | Err(_)) = tokio::time::timeout(Duration::from_millis(100), s.read(&mut b)).await {
                    return true;
                }
            }
        }
    }
    false
}

pub(super) async fn serve_rpc_frames(
    s: &mut PeerStream,
    from: MemberId,
    raft: &Raft,
    status: &MemberStatus,
    replicated: &mut bool,
) -> Result<(), network::PeerError> {
    loop {
        let req: RpcRequest = network::read_frame(&mut *s).await?;
        if !matches!(req, RpcRequest::SeedProbe) && status.seed.lock().refuses(from, initialized(raft)) {
            // Waiting for a seed (or holding one not yet on a quorum): no other member may
            // lead this one. Closing the connection reads as unreachable to the caller.
            tracing::debug!(peer = from, "refusing a Raft RPC while the ensemble's seed is pending");
            return Ok(());
        }
        let resp = match req {
            RpcRequest::SeedProbe => {
                let term = raft.metrics().borrow().current_term;
                RpcResponse::SeedProbe(status.seed.lock().answer(from, term, initialized(raft)))
            }
            RpcRequest::Append(r) => {
                let res = raft.append_entries(r).await;
                if res.is_ok() {
                    *replicated = true;
                    status.leader_contact.store(crate::session::mono_ms().max(1), Ordering::Release);
                    status.leader_lost.store(false, Ordering::Release);
                }
                RpcResponse::Append(res)
            }
            RpcRequest::Vote(r) => RpcResponse::Vote(raft.vote(r).await),
            RpcRequest::Snapshot(r) => {
                *replicated = true;
                status.leader_contact.store(crate::session::mono_ms().max(1), Ordering::Release);
                status.leader_lost.store(false, Ordering::Release);
                RpcResponse::Snapshot(raft.install_snapshot(r).await)
            }
        };
        network::write_frame(&mut *s, &resp).await?;
    }
}

/// The leader's end of a follower's forward stream: proposals go into the log in the order they
/// arrive (one stream per follower keeps each session's writes in order).
pub(super) async fn serve_forward(
    s: PeerStream,
    raft: &Raft,
    submitter: &Submitter,
    core: &mpsc::Sender<CoreMsg>,
) -> Result<(), network::PeerError> {
    let (mut rd, mut wr) = link::split(s);
    let (tx, mut rx) = mpsc::unbounded_channel::<ForwardReply>();
    let writer = tokio::spawn(async move {
        while let Some(r) = rx.recv().await {
            if network::write_frame(&mut wr, &r).await.is_err() {
                break;
            }
        }
    });
    let result = loop {
        let msg: ForwardMsg = match network::read_frame(&mut rd).await {
            Ok(m) => m,
            Err(e) => break Err(e),
        };
        match msg {
            ForwardMsg::Propose(mut cmd) => {
                // The leader's clock stamps every txn, as ZooKeeper's leader does in prep.
                cmd.time = wall_ms();
                let tx = tx.clone();
                submitter.submit(cmd, move |seq| {
                    let _ = tx.send(ForwardReply::Failed { seq });
                });
            }
            ForwardMsg::ReadIndex { seq } => {
                let (raft, tx) = (raft.clone(), tx.clone());
                tokio::spawn(async move {
                    let index = read_index(&raft).await;
                    let _ = tx.send(ForwardReply::ReadIndex { seq, index });
                });
            }
            ForwardMsg::Touch(sids) => to_core(core, ReplMsg::Touch(sids)).await,
            ForwardMsg::Reconfig { seq, plan } => {
                let (raft, tx) = (raft.clone(), tx.clone());
                tokio::spawn(async move {
                    let result = run_reconfig(&raft, plan).await.map_err(|e| e.map(|c| c.code()));
                    let _ = tx.send(ForwardReply::Reconfig { seq, result });
                });
            }
        }
    };
    drop(tx);
    let _ = writer.await;
    result
}

/// Time between the survivors' elections after the leader's process is gone.
pub(super) static ELECT_STEP: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();

/// Sets that step (half a heartbeat: more than a vote's round trip with its fsync).
pub fn set_elect_step(d: Duration) {
    let _ = ELECT_STEP.set(d);
}

/// The leader's process is gone (`serve_rpc` saw its stream end and its peer port refuse):
/// elect now, as ZooKeeper's followers start leader election as soon as the leader's connection
/// drops, instead of waiting out openraft's leader lease and an election timeout (3–4 s at
/// tickTime 2000). A voter refuses candidates while the lease of the leader it voted for lasts,
/// unless it is a candidate itself; so the surviving voters, ranked by id, each start an
/// election one step apart (which ends their leases), and the first of them starts another
/// after the last: its higher term wins every vote its log allows. If that log is behind,
/// openraft's own timeouts elect someone else, as before.
pub(super) async fn elect_after_leader_loss(raft: Raft, me: MemberId, dead: MemberId) {
    let step = ELECT_STEP.get().copied().unwrap_or(Duration::from_millis(100));
    let survivors: Vec<MemberId> = {
        let m = raft.metrics();
        let m = m.borrow();
        let mut v: Vec<MemberId> = m.membership_config.membership().voter_ids().filter(|id| *id != dead).collect();
        v.sort_unstable();
        v
    };
    let Some(rank) = survivors.iter().position(|id| *id == me) else { return };
    let leaderless = |raft: &Raft| raft.metrics().borrow().current_leader.is_none_or(|l| l == dead);
    tokio::time::sleep(step * rank as u32).await;
    if !leaderless(&raft) {
        return;
    }
    tracing::info!(dead, rank, "electing a new leader now");
    let _ = raft.trigger().elect().await;
    if rank == 0 {
        tokio::time::sleep(step * survivors.len() as u32).await;
        if leaderless(&raft) && raft.metrics().borrow().state != openraft::ServerState::Leader {
            let _ = raft.trigger().elect().await;
        }
    }
}
