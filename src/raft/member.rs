//! A running ensemble member's Raft side: the peer listener, the proposer that takes the core's
//! proposals to the leader, and the watcher that tells the core its role.
//!
//! The core never waits on any of these: proposals leave through an unbounded queue (each
//! connection bounds its own requests in flight) and everything learned comes back as a
//! `CoreMsg::Replication` message.

use super::command::Command;
use super::members::{Ensemble, ServerSpec};
use super::network::{self, ForwardMsg, ForwardReply, Hello, Kind, RpcRequest, RpcResponse};
use super::types::{MemberId, Raft};
use crate::server::core::replicated::{Proposal, ReplMsg, Role};
use crate::server::core::CoreMsg;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What the operator views read about this member.
#[derive(Debug, Default)]
pub struct MemberStatus {
    pub role: parking_lot::Mutex<(Role, Option<MemberId>, u64)>,
    /// `mono_ms` of the last AppendEntries from a leader.
    pub leader_contact: AtomicU64,
    /// `mono_ms` when this member last became leader.
    pub leader_since: AtomicU64,
}

fn wall_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Sends a core message without waiting when the core is busy (the core must never wait on us,
/// and we should not wait on it either beyond its queue).
async fn to_core(core: &mpsc::Sender<CoreMsg>, msg: ReplMsg) {
    let _ = core.send(CoreMsg::Replication(msg)).await;
}

/// Serves the peer port: openraft's RPCs and forward streams from other members.
pub async fn serve_peers(
    listener: TcpListener,
    raft: Raft,
    core: mpsc::Sender<CoreMsg>,
    status: Arc<MemberStatus>,
    shutdown: CancellationToken,
) {
    loop {
        let accepted = tokio::select! {
            _ = shutdown.cancelled() => break,
            a = listener.accept() => a,
        };
        let (mut stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("peer accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (raft, core, status, stop) = (raft.clone(), core.clone(), status.clone(), shutdown.clone());
        tokio::spawn(async move {
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
                        Kind::Rpc => serve_rpc(stream, &raft, &status).await,
                        Kind::Forward => serve_forward(stream, &raft, &core).await,
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

async fn serve_rpc(mut s: TcpStream, raft: &Raft, status: &MemberStatus) -> Result<(), network::PeerError> {
    loop {
        let req: RpcRequest = network::read_frame(&mut s).await?;
        let resp = match req {
            RpcRequest::Append(r) => {
                let res = raft.append_entries(r).await;
                if res.is_ok() {
                    status.leader_contact.store(crate::session::mono_ms(), Ordering::Release);
                }
                RpcResponse::Append(res)
            }
            RpcRequest::Vote(r) => RpcResponse::Vote(raft.vote(r).await),
            RpcRequest::Snapshot(r) => {
                status.leader_contact.store(crate::session::mono_ms(), Ordering::Release);
                RpcResponse::Snapshot(raft.install_snapshot(r).await)
            }
        };
        network::write_frame(&mut s, &resp).await?;
    }
}

/// The leader's end of a follower's forward stream: proposals go into the log in the order they
/// arrive (one stream per follower keeps each session's writes in order).
async fn serve_forward(s: TcpStream, raft: &Raft, core: &mpsc::Sender<CoreMsg>) -> Result<(), network::PeerError> {
    let (mut rd, mut wr) = s.into_split();
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
                let seq = cmd.origin.seq;
                submit(raft, cmd, seq, {
                    let tx = tx.clone();
                    move |seq| {
                        let _ = tx.send(ForwardReply::Failed { seq });
                    }
                })
                .await;
            }
            ForwardMsg::ReadIndex { seq } => {
                let (raft, tx) = (raft.clone(), tx.clone());
                tokio::spawn(async move {
                    let index = read_index(&raft).await;
                    let _ = tx.send(ForwardReply::ReadIndex { seq, index });
                });
            }
            ForwardMsg::Touch(sids) => to_core(core, ReplMsg::Touch(sids)).await,
        }
    };
    drop(tx);
    let _ = writer.await;
    result
}

/// Puts a command into the leader's log; `failed(seq)` runs if it will not be committed
/// through this leader (its fate is then unknown to the proposer).
async fn submit(raft: &Raft, cmd: Command, seq: u64, failed: impl FnOnce(u64) + Send + 'static) {
    match raft.client_write_ff(cmd).await {
        Ok(rx) if seq != 0 => {
            tokio::spawn(async move {
                if !matches!(rx.await, Ok(Ok(_))) {
                    failed(seq);
                }
            });
        }
        Ok(_) => {}
        Err(_) if seq != 0 => failed(seq),
        Err(_) => {}
    }
}

/// The leader's commit point, confirmed by a quorum (openraft's read index).
async fn read_index(raft: &Raft) -> Option<u64> {
    match tokio::time::timeout(Duration::from_secs(5), raft.get_read_log_id()).await {
        Ok(Ok((read, _))) => Some(read.map_or(0, |l| l.index)),
        _ => None,
    }
}

/// A forward stream to the current leader.
struct Forward {
    leader: MemberId,
    wr: OwnedWriteHalf,
    broken: Arc<AtomicBool>,
}

/// Takes the core's proposals to the log: straight into it on the leader, over the forward
/// stream to the leader elsewhere.
pub async fn propose(
    me: MemberId,
    ensemble: Arc<parking_lot::RwLock<Ensemble>>,
    raft: Raft,
    core: mpsc::Sender<CoreMsg>,
    mut rx: mpsc::UnboundedReceiver<Proposal>,
    shutdown: CancellationToken,
) {
    let mut fwd: Option<Forward> = None;
    loop {
        let p = tokio::select! {
            _ = shutdown.cancelled() => break,
            p = rx.recv() => match p { Some(p) => p, None => break },
        };
        let leader = raft.metrics().borrow().current_leader;
        if leader == Some(me) {
            fwd = None;
            match p {
                Proposal::Command(cmd) => {
                    let seq = cmd.origin.seq;
                    let core = core.clone();
                    submit(&raft, cmd, seq, move |seq| {
                        tokio::spawn(async move { to_core(&core, ReplMsg::ProposalFailed { seq }).await });
                    })
                    .await;
                }
                Proposal::ReadIndex { seq } => {
                    let (raft, core) = (raft.clone(), core.clone());
                    tokio::spawn(async move {
                        let index = read_index(&raft).await;
                        to_core(&core, ReplMsg::ReadIndex { seq, index }).await;
                    });
                }
                Proposal::Touch(sids) => to_core(&core, ReplMsg::Touch(sids)).await,
            }
            continue;
        }
        let Some(leader) = leader else {
            refuse(&core, p).await;
            continue;
        };
        if fwd.as_ref().is_some_and(|f| f.leader != leader || f.broken.load(Ordering::Acquire)) {
            fwd = None;
        }
        if fwd.is_none() {
            let addr = ensemble.read().members.get(&leader).map(|s| s.peer_addr());
            let Some(addr) = addr else {
                refuse(&core, p).await;
                continue;
            };
            match network::connect(&addr, me, Kind::Forward).await {
                Ok(s) => {
                    let (rd, wr) = s.into_split();
                    let broken = Arc::new(AtomicBool::new(false));
                    tokio::spawn(read_replies(rd, core.clone(), broken.clone(), shutdown.clone()));
                    fwd = Some(Forward { leader, wr, broken });
                }
                Err(e) => {
                    tracing::warn!(leader, "cannot reach the leader to forward a request: {e}");
                    refuse(&core, p).await;
                    continue;
                }
            }
        }
        let msg = match p {
            Proposal::Command(cmd) => ForwardMsg::Propose(cmd),
            Proposal::ReadIndex { seq } => ForwardMsg::ReadIndex { seq },
            Proposal::Touch(sids) => ForwardMsg::Touch(sids),
        };
        if let Some(f) = &mut fwd {
            if let Err(e) = network::write_frame(&mut f.wr, &msg).await {
                tracing::warn!(leader, "forward stream to the leader broke: {e}");
                f.broken.store(true, Ordering::Release);
                fwd = None;
                to_core(&core, ReplMsg::ForwardLost).await;
            }
        }
    }
}

/// A proposal that cannot go anywhere (no leader): its waiter fails at once.
async fn refuse(core: &mpsc::Sender<CoreMsg>, p: Proposal) {
    match p {
        Proposal::Command(cmd) if cmd.origin.seq != 0 => {
            to_core(core, ReplMsg::ProposalFailed { seq: cmd.origin.seq }).await
        }
        Proposal::ReadIndex { seq } => to_core(core, ReplMsg::ReadIndex { seq, index: None }).await,
        _ => {}
    }
}

async fn read_replies(
    mut rd: tokio::net::tcp::OwnedReadHalf,
    core: mpsc::Sender<CoreMsg>,
    broken: Arc<AtomicBool>,
    shutdown: CancellationToken,
) {
    loop {
        let frame = tokio::select! {
            _ = shutdown.cancelled() => return,
            f = network::read_frame::<_, ForwardReply>(&mut rd) => f,
        };
        match frame {
            Ok(ForwardReply::Failed { seq }) => to_core(&core, ReplMsg::ProposalFailed { seq }).await,
            Ok(ForwardReply::ReadIndex { seq, index }) => to_core(&core, ReplMsg::ReadIndex { seq, index }).await,
            Err(_) => {
                if !broken.swap(true, Ordering::AcqRel) {
                    to_core(&core, ReplMsg::ForwardLost).await;
                }
                return;
            }
        }
    }
}

/// Makes the ensemble's observers (`server.N=…:observer`) Raft learners. openraft's `initialize`
/// takes the voters only and a learner can only be added by a leader, so whichever member leads
/// adds the observers its membership does not hold yet (and retries while an earlier membership
/// change is still uncommitted). Without this an observer never receives the log, never hears of
/// a leader and refuses every client.
pub async fn admit_observers(
    me: MemberId,
    raft: Raft,
    observers: std::collections::BTreeMap<MemberId, ServerSpec>,
    shutdown: CancellationToken,
) {
    if observers.is_empty() {
        return;
    }
    let mut every = tokio::time::interval(Duration::from_millis(100));
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = every.tick() => {}
        }
        let missing: Vec<(MemberId, ServerSpec)> = {
            let m = raft.metrics();
            let m = m.borrow();
            if m.state != openraft::ServerState::Leader || m.current_leader != Some(me) {
                continue;
            }
            let membership = m.membership_config.membership();
            observers
                .iter()
                .filter(|(id, _)| membership.get_node(id).is_none())
                .map(|(id, s)| (*id, s.clone()))
                .collect()
        };
        for (id, spec) in missing {
            match raft.add_learner(id, spec, false).await {
                Ok(_) => tracing::info!(observer = id, "observer added to the ensemble as a Raft learner"),
                Err(e) => tracing::debug!(observer = id, "adding the observer as a learner: {e}"),
            }
        }
    }
}

/// Watches openraft's metrics and tells the core its role: leader, follower, observer, or
/// looking (no leader, or a leader or member that lost touch with the quorum for `stale`).
///
/// A leader out of touch with its quorum also stops its heartbeats until it is no longer that
/// leader: openraft's leader never steps down by itself, and its heartbeats would keep its
/// followers and observers "in contact" and serving stale reads for good. ZooKeeper's leader
/// gives up after syncLimit ticks and its learners stop serving when they lose it; here they
/// stop `stale` after the last heartbeat, and voters elect a leader once a quorum is back.
pub async fn watch_role(
    raft: Raft,
    core: mpsc::Sender<CoreMsg>,
    status: Arc<MemberStatus>,
    stale: Duration,
    shutdown: CancellationToken,
) {
    let mut metrics = raft.metrics();
    let mut every = tokio::time::interval(Duration::from_millis(50));
    let mut last: Option<(Role, Option<MemberId>, u64)> = None;
    let stale_ms = stale.as_millis() as u64;
    let mut heartbeats_stopped = false;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            r = metrics.changed() => if r.is_err() { break },
            _ = every.tick() => {}
        }
        let (state, leader, term, since_ack) = {
            let m = metrics.borrow();
            (m.state, m.current_leader, m.current_term, m.millis_since_quorum_ack)
        };
        let contact = crate::session::mono_ms().saturating_sub(status.leader_contact.load(Ordering::Acquire));
        use openraft::ServerState as S;
        let leader_without_quorum = state == S::Leader && since_ack.is_some_and(|ms| ms > stale_ms);
        if leader_without_quorum != heartbeats_stopped {
            heartbeats_stopped = leader_without_quorum;
            raft.runtime_config().heartbeat(!heartbeats_stopped);
            if heartbeats_stopped {
                tracing::warn!(
                    term,
                    stale_ms,
                    "leader out of touch with its quorum: no heartbeats until a new election"
                );
            } else {
                tracing::info!(term, "heartbeats on again");
            }
        }
        let role = match state {
            S::Leader if since_ack.is_some_and(|ms| ms > stale_ms) => Role::Looking,
            S::Leader => Role::Leader,
            S::Follower if leader.is_some() && contact <= stale_ms => Role::Follower,
            S::Learner if leader.is_some() && contact <= stale_ms => Role::Observer,
            _ => Role::Looking,
        };
        let now = (role, if role == Role::Looking { None } else { leader }, term);
        if last != Some(now) {
            if now.0 == Role::Leader && last.is_none_or(|l| l.0 != Role::Leader) {
                status.leader_since.store(crate::session::mono_ms().max(1), Ordering::Release);
            }
            last = Some(now);
            *status.role.lock() = now;
            to_core(&core, ReplMsg::Role { role: now.0, leader: now.1, term }).await;
        }
    }
}
