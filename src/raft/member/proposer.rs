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
    tx: mpsc::Sender<(Command, Option<OnFail>)>,
    /// Held while a reconfig runs on this leader: reconfigs are carried out one at a time, each
    /// checked against the configuration the one before it left.
    reconfig: Arc<tokio::sync::Mutex<()>>,
    /// A test's `crash-at` failpoint, for the steps of a reconfig.
    crash: Option<crate::config::CrashPoint>,
}

/// Proposals queued for the leader's log: past this, whoever submits waits (the leader's own
/// proposer, whose queue then fails the core's requests; a follower's forward stream, which
/// then stops being read, so the follower's queue fills and fails its requests).
pub const SUBMIT_QUEUE: usize = 16 * 1024;

/// What a batch carries besides its commands: this leader's newest applied check.
type Checks = super::super::command::LatestCheck;

/// How long the submitter waits for the log to take a batch before it sends the next one
/// anyway (a lost metrics update must not stall proposals).
pub(super) const SUBMIT_WAIT: Duration = Duration::from_millis(5);

impl Submitter {
    pub fn spawn(raft: Raft, checks: Checks, status: Arc<MemberStatus>, shutdown: CancellationToken) -> Submitter {
        let (tx, rx) = mpsc::channel(SUBMIT_QUEUE);
        tokio::spawn(run_submitter(raft, rx, checks, status, shutdown));
        Submitter { tx, reconfig: Arc::default(), crash: None }
    }

    /// Stops the process at a reconfig's step `crash` names (a test's failpoint).
    pub fn with_crash_point(mut self, crash: Option<crate::config::CrashPoint>) -> Submitter {
        self.crash = crash;
        self
    }

    /// Queues a command for the log, waiting while the queue is full; `failed(seq)` runs if it
    /// will not be committed through this leader. A command with seq 0 has nobody waiting for it.
    pub async fn submit(&self, cmd: Command, failed: impl FnOnce(u64) + Send + 'static) {
        let seq = cmd.origin.seq;
        let on_fail: Option<OnFail> = (seq != 0).then(|| Box::new(failed) as OnFail);
        if let Err(mpsc::error::SendError((cmd, Some(f)))) = self.tx.send((cmd, on_fail)).await {
            f(cmd.origin.seq);
        }
    }
}

pub(super) async fn run_submitter(
    raft: Raft,
    mut rx: mpsc::Receiver<(Command, Option<OnFail>)>,
    checks: Checks,
    status: Arc<MemberStatus>,
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
        if status.quiet.load(Ordering::Acquire) {
            // A leader without a quorum could not commit them, and each append it replicated
            // to a follower on its side of a partition would tell that follower its leader is
            // alive: it would keep serving its clients' pings while the majority, which never
            // hears them, expires their sessions (found by the fault suite's partition-halves
            // with sessions created through such a follower). Never appended, never applied.
            fails.into_iter().for_each(|(seq, f)| f(seq));
            continue;
        }
        let before = metrics.borrow().last_log_index.unwrap_or(0);
        let check = *checks.lock();
        match raft.client_write_ff(Batch::new(cmds, check)).await {
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

/// Carries out a reconfig on this (leader) member; a joining participant may take `catch_up`
/// (initLimit ticks, ZooKeeper's limit for a learner to sync).
pub(super) async fn run_reconfig(
    raft: &Raft,
    submitter: &Submitter,
    plan: crate::raft::plan::Plan,
    catch_up: Duration,
) -> Result<u64, Option<crate::proto::ErrorCode>> {
    let _one_at_a_time = submitter.reconfig.lock().await;
    crate::raft::reconfig::execute(raft, plan, catch_up, submitter.crash).await.map_err(|f| match f {
        crate::raft::reconfig::Failed::Code(c) => Some(c),
        crate::raft::reconfig::Failed::Unknown => None,
    })
}

/// The leader's commit point, confirmed by a quorum within `wait` (openraft's read index).
pub(super) async fn read_index(raft: &Raft, wait: Duration) -> Option<u64> {
    match tokio::time::timeout(wait, raft.get_read_log_id()).await {
        Ok(Ok((read, _))) => Some(read.map_or(0, |l| l.index)),
        _ => None,
    }
}

/// Frames queued for one forward stream's writer. Past this the leader is not reading them
/// (paused, overloaded): the stream is given up and the proposals fail at once.
pub const FORWARD_QUEUE: usize = 4 * 1024;

/// A forward stream to the current leader: frames go to its writer task through a bounded
/// queue (session reports through their own, written first), so the proposer never waits on
/// the network.
pub(super) struct Forward {
    leader: MemberId,
    queue: mpsc::Sender<ForwardMsg>,
    touches: mpsc::Sender<Vec<crate::txn::SessionId>>,
    broken: Arc<AtomicBool>,
}

impl Forward {
    fn open(leader: MemberId, s: PeerStream, core: &Upward, wait: Duration, stop: &CancellationToken) -> Forward {
        let (rd, wr) = link::split(s);
        let broken = Arc::new(AtomicBool::new(false));
        let (queue, frames) = mpsc::channel(FORWARD_QUEUE);
        let (touches, reports) = mpsc::channel(crate::raft::seam::TOUCH_QUEUE);
        tokio::spawn(read_replies(rd, core.clone(), broken.clone(), stop.clone()));
        tokio::spawn(write_forward(leader, wr, frames, reports, core.clone(), broken.clone(), wait));
        Forward { leader, queue, touches, broken }
    }

    /// Queues `msg` without waiting; gives it back (`Some`) if the stream is broken or the
    /// leader stopped reading it (its queue is full).
    fn send(&self, msg: ForwardMsg) -> Option<ForwardMsg> {
        use mpsc::error::TrySendError::{Closed, Full};
        if self.broken.load(Ordering::Acquire) {
            return Some(msg);
        }
        match msg {
            // A report that finds its lane full is dropped: the next one, half a tick later,
            // names every session heard since.
            ForwardMsg::Touch(sids) => match self.touches.try_send(sids) {
                Err(Closed(sids)) => Some(ForwardMsg::Touch(sids)),
                _ => None,
            },
            msg => self.queue.try_send(msg).err().map(|(Full(m) | Closed(m))| m),
        }
    }
}

/// Writes a forward stream's frames, session reports first. A write the leader does not take
/// within `wait` (an election timeout: by then the followers elect another) breaks the stream:
/// the core fails what it had forwarded (ConnectionLoss for its clients), as when the
/// connection drops.
async fn write_forward(
    leader: MemberId,
    mut wr: PeerWrite,
    mut frames: mpsc::Receiver<ForwardMsg>,
    mut reports: mpsc::Receiver<Vec<crate::txn::SessionId>>,
    core: Upward,
    broken: Arc<AtomicBool>,
    wait: Duration,
) {
    loop {
        let msg = tokio::select! {
            biased;
            Some(t) = reports.recv() => ForwardMsg::Touch(t),
            m = frames.recv() => match m { Some(m) => m, None => return },
        };
        let why = match tokio::time::timeout(wait, wire::write_frame(&mut wr, &msg)).await {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("the leader took nothing for {} ms", wait.as_millis()),
        };
        if !broken.swap(true, Ordering::AcqRel) {
            tracing::warn!(leader, "forward stream to the leader broke: {why}");
            to_core(&core, ReplMsg::ForwardLost).await;
        }
        return;
    }
}

/// Takes the core's proposals to the log: straight into it on the leader, over the forward
/// stream to the leader elsewhere.
pub async fn propose(
    link: Link,
    ensemble: Arc<parking_lot::RwLock<Ensemble>>,
    raft: Raft,
    submitter: Submitter,
    core: Upward,
    mut rx: Inlet,
    shutdown: CancellationToken,
) {
    let (me, timing) = (link.me, link.timing);
    let mut fwd: Option<Forward> = None;
    // The leader whose forward stream broke, and when: its proposals fail at once for an
    // election timeout instead of filling a new stream it will not read either.
    let mut gave_up: Option<(MemberId, tokio::time::Instant)> = None;
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
                    submitter
                        .submit(cmd, move |seq| {
                            tokio::spawn(async move { to_core(&core, ReplMsg::ProposalFailed { seq }).await });
                        })
                        .await;
                }
                Proposal::ReadIndex { seq } => {
                    let (raft, core) = (raft.clone(), core.clone());
                    tokio::spawn(async move {
                        let index = read_index(&raft, timing.read_index).await;
                        to_core(&core, ReplMsg::ReadIndex { seq, index }).await;
                    });
                }
                Proposal::Touch(sids) => to_core(&core, ReplMsg::Touch(sids)).await,
                Proposal::Reconfig { seq, plan } => {
                    let (raft, core, submitter) = (raft.clone(), core.clone(), submitter.clone());
                    tokio::spawn(async move {
                        let result = run_reconfig(&raft, &submitter, plan, timing.catch_up).await;
                        to_core(&core, ReplMsg::ReconfigDone { seq, result }).await;
                    });
                }
            }
            continue;
        }
        if matches!(&p, Proposal::Command(c) if c.origin.seq == 0) {
            // This member's own expiry or reap, decided while it led: no other leader may carry
            // it out (see `Command::decided_by_another_leader`, which the log enforces too).
            tracing::info!("an expiry or reap decided as leader, after leadership moved: dropped");
            continue;
        }
        let Some(leader) = leader else {
            refuse(&core, p).await;
            continue;
        };
        if fwd.as_ref().is_some_and(|f| f.leader != leader || f.broken.load(Ordering::Acquire)) {
            if let Some(f) = fwd.take().filter(|f| f.broken.load(Ordering::Acquire)) {
                gave_up = Some((f.leader, tokio::time::Instant::now()));
            }
        }
        if gave_up.is_some_and(|(l, at)| l == leader && at.elapsed() < timing.election_max) {
            refuse(&core, p).await;
            continue;
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
                Ok(s) => fwd = Some(Forward::open(leader, s, &core, timing.election_max, &shutdown)),
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
        if let Some(f) = &fwd {
            if let Some(msg) = f.send(msg) {
                // The leader stopped reading (or the stream broke): give it up, and fail what
                // this member forwarded, this proposal too.
                if !f.broken.swap(true, Ordering::AcqRel) {
                    tracing::warn!(
                        leader,
                        queued = FORWARD_QUEUE,
                        "the leader is not reading this member's forwards: giving up the stream"
                    );
                    to_core(&core, ReplMsg::ForwardLost).await;
                }
                gave_up = Some((leader, tokio::time::Instant::now()));
                fwd = None;
                let p = match msg {
                    ForwardMsg::Propose(cmd) => Proposal::Command(cmd),
                    ForwardMsg::ReadIndex { seq } => Proposal::ReadIndex { seq },
                    ForwardMsg::Touch(sids) => Proposal::Touch(sids),
                    ForwardMsg::Reconfig { seq, plan } => Proposal::Reconfig { seq, plan },
                };
                refuse(&core, p).await;
            }
        }
    }
}

/// A proposal that cannot go anywhere (no leader): its waiter fails at once.
pub(super) async fn refuse(core: &Upward, p: Proposal) {
    match p {
        Proposal::Command(cmd) if cmd.origin.seq != 0 => {
            to_core(core, ReplMsg::ProposalFailed { seq: cmd.origin.seq }).await
        }
        Proposal::ReadIndex { seq } => to_core(core, ReplMsg::ReadIndex { seq, index: None }).await,
        Proposal::Reconfig { seq, .. } => to_core(core, ReplMsg::ReconfigDone { seq, result: Err(None) }).await,
        _ => {}
    }
}

pub(super) async fn read_replies(mut rd: PeerRead, core: Upward, broken: Arc<AtomicBool>, shutdown: CancellationToken) {
    loop {
        let frame = tokio::select! {
            _ = shutdown.cancelled() => return,
            f = wire::read_frame::<_, ForwardReply>(&mut rd) => f,
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
