//! A running ensemble member's Raft side: the peer listener, the proposer that takes the core's
//! proposals to the leader, and the watcher that tells the core its role.
//!
//! The core never waits on any of these: proposals leave through an unbounded queue (each
//! connection bounds its own requests in flight) and everything learned comes back as a
//! `CoreMsg::Replication` message.

use super::command::{Batch, Command, BATCH_MAX_BYTES, BATCH_MAX_COMMANDS};
use super::members::Ensemble;
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
    /// `mono_ms` (at least 1) of the last AppendEntries from a leader; 0 until the first one.
    pub leader_contact: AtomicU64,
    /// `mono_ms` when this member last became leader.
    pub leader_since: AtomicU64,
    /// Set when the leader's replication stream to this member ended (see `serve_rpc`), cleared
    /// by the next AppendEntries.
    pub leader_lost: AtomicBool,
    /// Wakes the role watcher when `leader_lost` is set.
    pub wake: tokio::sync::Notify,
    /// Seeding a new ensemble from a standalone data directory (see `seed`).
    pub seed: parking_lot::Mutex<super::seed::Gate>,
}

/// True once this member has a membership (it initialized, or a leader's log or snapshot
/// reached it).
fn initialized(raft: &Raft) -> bool {
    raft.metrics().borrow().membership_config.membership().voter_ids().next().is_some()
}

/// The member whose id and role this process's log lines carry (the first started; a process
/// normally runs one).
static LOG_MEMBER: std::sync::OnceLock<(MemberId, Arc<MemberStatus>)> = std::sync::OnceLock::new();

/// Registers the member whose id and role the log lines name.
pub fn tag_logs(me: MemberId, status: Arc<MemberStatus>) {
    let _ = LOG_MEMBER.set((me, status));
}

/// `(id, role)` for log lines, once an ensemble member runs in this process.
pub fn log_tag() -> Option<(MemberId, &'static str)> {
    LOG_MEMBER.get().map(|(id, st)| (*id, st.role.lock().0.name()))
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
        let submitter = submitter.clone();
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
                        Kind::Rpc => serve_rpc(stream, hello.from, &raft, &status).await,
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
async fn serve_rpc(
    mut s: TcpStream,
    from: MemberId,
    raft: &Raft,
    status: &MemberStatus,
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
            Some(addr) => !peer_is_gone(&addr, me).await,
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
async fn peer_is_gone(addr: &str, me: MemberId) -> bool {
    use tokio::io::AsyncReadExt;
    for attempt in 0..3 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        match network::connect(addr, me, Kind::Rpc).await {
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

async fn serve_rpc_frames(
    s: &mut TcpStream,
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
async fn serve_forward(
    s: TcpStream,
    raft: &Raft,
    submitter: &Submitter,
    core: &mpsc::Sender<CoreMsg>,
) -> Result<(), network::PeerError> {
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

/// What to do when a proposal will not be committed through this leader (its fate is then
/// unknown to the proposer): called with the proposal's seq.
type OnFail = Box<dyn FnOnce(u64) + Send>;

/// The leader's one way into its Raft log: every proposal, the leader's own and those its
/// followers forward, is queued here and goes into the log in a `Batch` with every other one
/// queued meanwhile. openraft 0.9 appends one client write at a time and waits for that
/// append's fsync before it takes the next, so this task hands it a batch and waits until the
/// log has taken it before it forms the next one: each fsync carries what arrived during the
/// previous one (ZooKeeper's SyncRequestProcessor groups its txns per fsync the same way).
/// Each source's proposals keep their order (one queue, read in order).
#[derive(Clone)]
pub struct Submitter {
    tx: mpsc::UnboundedSender<(Command, Option<OnFail>)>,
}

/// How long the submitter waits for the log to take a batch before it sends the next one
/// anyway (a lost metrics update must not stall proposals).
const SUBMIT_WAIT: Duration = Duration::from_millis(5);

impl Submitter {
    pub fn spawn(raft: Raft, shutdown: CancellationToken) -> Submitter {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run_submitter(raft, rx, shutdown));
        Submitter { tx }
    }

    /// Queues a command for the log; `failed(seq)` runs if it will not be committed through
    /// this leader. A command with seq 0 has nobody waiting for it.
    pub fn submit(&self, cmd: Command, failed: impl FnOnce(u64) + Send + 'static) {
        let seq = cmd.origin.seq;
        let on_fail: Option<OnFail> = (seq != 0).then(|| Box::new(failed) as OnFail);
        if let Err(mpsc::error::SendError((cmd, Some(f)))) = self.tx.send((cmd, on_fail)) {
            f(cmd.origin.seq);
        }
    }
}

async fn run_submitter(
    raft: Raft,
    mut rx: mpsc::UnboundedReceiver<(Command, Option<OnFail>)>,
    shutdown: CancellationToken,
) {
    let mut metrics = raft.metrics();
    loop {
        let first = tokio::select! {
            _ = shutdown.cancelled() => break,
            p = rx.recv() => match p { Some(p) => p, None => break },
        };
        let mut bytes = first.0.approx_len();
        let mut batch = vec![first];
        while batch.len() < BATCH_MAX_COMMANDS && bytes < BATCH_MAX_BYTES {
            match rx.try_recv() {
                Ok(p) => {
                    bytes += p.0.approx_len();
                    batch.push(p);
                }
                Err(_) => break,
            }
        }
        let mut cmds = Vec::with_capacity(batch.len());
        let mut fails = Vec::new();
        for (cmd, f) in batch {
            if let Some(f) = f {
                fails.push((cmd.origin.seq, f));
            }
            cmds.push(cmd);
        }
        let before = metrics.borrow().last_log_index.unwrap_or(0);
        match raft.client_write_ff(Batch(cmds)).await {
            Ok(rx) if !fails.is_empty() => {
                tokio::spawn(async move {
                    if !matches!(rx.await, Ok(Ok(_))) {
                        fails.into_iter().for_each(|(seq, f)| f(seq));
                    }
                });
            }
            Ok(_) => {}
            Err(_) => fails.into_iter().for_each(|(seq, f)| f(seq)),
        }
        // openraft publishes its metrics once per turn of its loop, after the append (and its
        // fsync) finished: a higher last log index means the batch is in.
        let taken = metrics.wait_for(|m| m.last_log_index.unwrap_or(0) > before);
        let _ = tokio::time::timeout(SUBMIT_WAIT, taken).await;
    }
}

/// Time between the survivors' elections after the leader's process is gone.
static ELECT_STEP: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();

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
async fn elect_after_leader_loss(raft: Raft, me: MemberId, dead: MemberId) {
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

/// How long a joining participant may take to catch up before a reconfig gives up.
static CATCH_UP: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();

/// Sets the catch-up limit of reconfigs (initLimit ticks, ZooKeeper's limit for a learner to sync).
pub fn set_catch_up(d: Duration) {
    let _ = CATCH_UP.set(d);
}

/// Carries out a reconfig on this (leader) member.
async fn run_reconfig(raft: &Raft, plan: super::reconfig::Plan) -> Result<u64, Option<crate::proto::ErrorCode>> {
    let wait = CATCH_UP.get().copied().unwrap_or(Duration::from_secs(20));
    super::reconfig::execute(raft, plan, wait).await.map_err(|f| match f {
        super::reconfig::Failed::Code(c) => Some(c),
        super::reconfig::Failed::Unknown => None,
    })
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
    submitter: Submitter,
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
                    let core = core.clone();
                    submitter.submit(cmd, move |seq| {
                        tokio::spawn(async move { to_core(&core, ReplMsg::ProposalFailed { seq }).await });
                    });
                }
                Proposal::ReadIndex { seq } => {
                    let (raft, core) = (raft.clone(), core.clone());
                    tokio::spawn(async move {
                        let index = read_index(&raft).await;
                        to_core(&core, ReplMsg::ReadIndex { seq, index }).await;
                    });
                }
                Proposal::Touch(sids) => to_core(&core, ReplMsg::Touch(sids)).await,
                Proposal::Reconfig { seq, plan } => {
                    let (raft, core) = (raft.clone(), core.clone());
                    tokio::spawn(async move {
                        let result = run_reconfig(&raft, plan).await;
                        to_core(&core, ReplMsg::ReconfigDone { seq, result }).await;
                    });
                }
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
            // The leader's address from the replicated membership (reconfig may have added it),
            // else from the configuration this member started with.
            let from_membership =
                raft.metrics().borrow().membership_config.membership().get_node(&leader).map(|n| n.peer_addr());
            let addr = from_membership.or_else(|| ensemble.read().members.get(&leader).map(|s| s.peer_addr()));
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
            Proposal::Reconfig { seq, plan } => ForwardMsg::Reconfig { seq, plan },
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
        Proposal::Reconfig { seq, .. } => to_core(core, ReplMsg::ReconfigDone { seq, result: Err(None) }).await,
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
            Ok(ForwardReply::Reconfig { seq, result }) => {
                let result = result.map_err(|e| e.and_then(crate::proto::ErrorCode::from_i32));
                to_core(&core, ReplMsg::ReconfigDone { seq, result }).await
            }
            Err(_) => {
                if !broken.swap(true, Ordering::AcqRel) {
                    to_core(&core, ReplMsg::ForwardLost).await;
                }
                return;
            }
        }
    }
}

/// Watches openraft's metrics and tells the core its role: leader, follower, observer, or
/// looking (no leader, or a leader or member that lost touch with the quorum for `stale`).
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
    let mut heartbeat_off = false;
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            r = metrics.changed() => if r.is_err() { break },
            _ = status.wake.notified() => {}
            _ = every.tick() => {}
        }
        let (state, leader, term, since_ack, running, applied) = {
            let m = metrics.borrow();
            let applied = m.last_applied.map_or(0, |l| l.index);
            (m.state, m.current_leader, m.current_term, m.millis_since_quorum_ack, m.running_state.clone(), applied)
        };
        {
            let mut gate = status.seed.lock();
            // A leader's first entry after the seed (index 1) is applied only once a quorum
            // has it, and a follower installs the seed before it appends anything after it.
            if gate.seed_pending() && state == openraft::ServerState::Leader && applied >= 2 {
                gate.seed_done();
            }
            if !gate.seed_pending() && initialized(&raft) {
                gate.seeded();
            }
        }
        if let Err(fatal) = running {
            if shutdown.is_cancelled() || matches!(fatal, openraft::error::Fatal::Stopped) {
                break;
            }
            *status.role.lock() = (Role::Looking, None, term);
            to_core(&core, ReplMsg::Role { role: Role::Looking, leader: None, term }).await;
            replication_lost(&fatal);
        }
        let in_touch = in_touch_with_leader(
            status.leader_contact.load(Ordering::Acquire),
            crate::session::mono_ms(),
            stale_ms,
            status.leader_lost.load(Ordering::Acquire),
        );
        use openraft::ServerState as S;
        // A leader serves once a quorum has acknowledged it: openraft restarts a member whose
        // saved vote is its own as leader of that old term until it hears of a newer one, and
        // such a member must not answer a read meanwhile (ZooKeeper's restarted leader is
        // LOOKING until an election settles). A single voter is its own quorum.
        let sole_voter = metrics.borrow().membership_config.membership().voter_ids().count() == 1;
        let acked = sole_voter || since_ack.is_some_and(|ms| ms <= stale_ms);
        let role = match state {
            S::Leader if !acked => Role::Looking,
            S::Leader => Role::Leader,
            S::Follower if leader.is_some() && in_touch => Role::Follower,
            S::Learner if leader.is_some() && in_touch => Role::Observer,
            _ => Role::Looking,
        };
        // A leader that lost its quorum stops its heartbeats, so that followers and observers
        // still in touch with it notice too and stop serving (ZooKeeper's leader gives up
        // leading after syncLimit ticks without a quorum); elections bring them back.
        let quiet = state == S::Leader && since_ack.is_some_and(|ms| ms > stale_ms) && !sole_voter;
        if quiet != heartbeat_off {
            heartbeat_off = quiet;
            raft.runtime_config().heartbeat(!quiet);
            if quiet {
                tracing::warn!("leader without a quorum for {stale:?}: not serving, heartbeats stopped");
            }
        }
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

/// openraft's RaftCore ended on an error it cannot recover from (a storage error, a panic, or
/// openraft 0.9's "replication channel closed" race when a purge meets a replication stream that
/// just ended): this member would stay up and serve nobody. It stops instead, as a ZooKeeper
/// server stops on an unrecoverable error, so a supervisor restarts it; a restart recovers from
/// the log and snapshot on disk like any crash.
fn replication_lost(fatal: &openraft::error::Fatal<MemberId>) -> ! {
    tracing::error!("replication stopped on a fatal error, stopping this member for a restart: {fatal}");
    eprintln!("zkr: replication stopped on a fatal error, stopping this member for a restart: {fatal}");
    std::process::exit(70);
}

/// Whether a follower or observer is in touch with a leader: it heard from one (`contact_at`,
/// the `mono_ms` of the last AppendEntries, 0 before the first) within `stale_ms`, and that
/// leader's stream has not ended since (`lost`). A member just started has heard from nobody,
/// even though openraft already names the leader its saved vote was for: until a leader's first
/// AppendEntries it serves nobody (that leader may be gone, and the member far behind), as a
/// ZooKeeper follower serves only once synced with its leader. Found by the fault suite: a
/// restarted member served as a follower from its first millisecond, when `mono_ms` (the time
/// since the process started) was below `stale_ms` and "never" looked like "just now".
fn in_touch_with_leader(contact_at: u64, now: u64, stale_ms: u64, lost: bool) -> bool {
    contact_at != 0 && now.saturating_sub(contact_at) <= stale_ms && !lost
}

/// The leader's duty for observers (`server.N=…:observer`): they join as openraft learners,
/// which replicate the log and serve clients but never vote, as ZooKeeper's observers.
/// An observer is added once: after that, only `reconfig` changes its membership (an observer
/// that a reconfig removed stays removed while this process runs).
pub async fn keep_observers(raft: Raft, ensemble: Arc<parking_lot::RwLock<Ensemble>>, shutdown: CancellationToken) {
    let mut every = tokio::time::interval(Duration::from_millis(500));
    let mut seen = std::collections::HashSet::new();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = every.tick() => {}
        }
        let (leader, present) = {
            let m = raft.metrics().borrow().clone();
            let present: Vec<MemberId> = m.membership_config.membership().nodes().map(|(id, _)| *id).collect();
            (m.state == openraft::ServerState::Leader, present)
        };
        seen.extend(present.iter().copied());
        if !leader {
            continue;
        }
        let missing: Vec<(MemberId, super::members::ServerSpec)> = ensemble
            .read()
            .members
            .iter()
            .filter(|(id, s)| s.observer && !present.contains(id) && !seen.contains(id))
            .map(|(id, s)| (*id, s.clone()))
            .collect();
        for (id, spec) in missing {
            match raft.add_learner(id, spec, false).await {
                Ok(_) => tracing::info!(observer = id, "observer added to the ensemble"),
                Err(e) => tracing::warn!(observer = id, "cannot add the observer yet: {e}"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::in_touch_with_leader as in_touch;

    #[test]
    fn a_member_that_never_heard_from_a_leader_is_not_in_touch_even_when_just_started() {
        // The process started 5 ms ago: no contact yet, whatever the clock says.
        assert!(!in_touch(0, 5, 1000, false));
        assert!(in_touch(3, 5, 1000, false));
        assert!(!in_touch(3, 2000, 1000, false));
        assert!(!in_touch(3, 5, 1000, true));
    }
}
