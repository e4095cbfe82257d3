//! Proposals on their way to the log: the submitter batches the leader's own and its followers'
//! forwarded commands into log entries, and a follower's proposer forwards the core's proposals to
//! the leader over one stream and reads the replies.

use super::*;

/// What to do when a proposal will not be committed through this leader (its fate is then
/// unknown to the proposer): called with the proposal's seq.
pub(super) type OnFail = Box<dyn FnOnce(u64) + Send>;

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
pub(super) const SUBMIT_WAIT: Duration = Duration::from_millis(5);

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

pub(super) async fn run_submitter(
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

/// How long a joining participant may take to catch up before a reconfig gives up.
pub(super) static CATCH_UP: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();

/// Sets the catch-up limit of reconfigs (initLimit ticks, ZooKeeper's limit for a learner to sync).
pub fn set_catch_up(d: Duration) {
    let _ = CATCH_UP.set(d);
}

/// Carries out a reconfig on this (leader) member.
pub(super) async fn run_reconfig(
    raft: &Raft,
    plan: crate::raft::reconfig::Plan,
) -> Result<u64, Option<crate::proto::ErrorCode>> {
    let wait = CATCH_UP.get().copied().unwrap_or(Duration::from_secs(20));
    crate::raft::reconfig::execute(raft, plan, wait).await.map_err(|f| match f {
        crate::raft::reconfig::Failed::Code(c) => Some(c),
        crate::raft::reconfig::Failed::Unknown => None,
    })
}

/// The leader's commit point, confirmed by a quorum (openraft's read index).
pub(super) async fn read_index(raft: &Raft) -> Option<u64> {
    match tokio::time::timeout(Duration::from_secs(5), raft.get_read_log_id()).await {
        Ok(Ok((read, _))) => Some(read.map_or(0, |l| l.index)),
        _ => None,
    }
}

/// A forward stream to the current leader.
pub(super) struct Forward {
    leader: MemberId,
    wr: PeerWrite,
    broken: Arc<AtomicBool>,
}

/// Takes the core's proposals to the log: straight into it on the leader, over the forward
/// stream to the leader elsewhere.
pub async fn propose(
    link: Link,
    ensemble: Arc<parking_lot::RwLock<Ensemble>>,
    raft: Raft,
    submitter: Submitter,
    core: mpsc::Sender<CoreMsg>,
    mut rx: mpsc::UnboundedReceiver<Proposal>,
    shutdown: CancellationToken,
) {
    let me = link.me;
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
            match link.connect(&addr, Kind::Forward).await {
                Ok(s) => {
                    let (rd, wr) = link::split(s);
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
pub(super) async fn refuse(core: &mpsc::Sender<CoreMsg>, p: Proposal) {
    match p {
        Proposal::Command(cmd) if cmd.origin.seq != 0 => {
            to_core(core, ReplMsg::ProposalFailed { seq: cmd.origin.seq }).await
        }
        Proposal::ReadIndex { seq } => to_core(core, ReplMsg::ReadIndex { seq, index: None }).await,
        Proposal::Reconfig { seq, .. } => to_core(core, ReplMsg::ReconfigDone { seq, result: Err(None) }).await,
        _ => {}
    }
}

pub(super) async fn read_replies(
    mut rd: PeerRead,
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
