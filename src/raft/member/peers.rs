//! The peer port: openraft's RPCs from the other members, and the forward streams on which
//! followers send the leader their clients' proposals, session touches and sync points. When a
//! leader's replication stream ends and its port refuses, this member starts an election at once.

use super::elections::hearing;
use super::*;
use crate::raft::prevote;

/// What the peer port serves with: this member's side of its peer connections, its Raft, the
/// leader's way into the log, its core, its status and a reader of its log (for divergence).
pub struct PeerPort {
    pub link: Link,
    pub raft: Raft,
    pub submitter: Submitter,
    pub core: Upward,
    pub status: Arc<MemberStatus>,
    pub log: LogStore,
    /// The `deaf-peer-port` failpoint: connections accepted this soon after start are closed.
    pub deaf_for: Duration,
    /// The `slow-appends` failpoint (`SlowAppends`).
    pub slow_appends: Option<SlowAppends>,
}

/// The `slow-appends=MS` failpoint: this member takes each AppendEntries that carries more than
/// `SlowAppends::OVER` bytes of entries MS ms longer to append, one at a time, as a member whose
/// disk takes that long to write them (smaller ones, heartbeats among them, as usual: the
/// ensemble forms and elects as always). A test of the beat lane: a follower that heard its
/// leader only through appends heard nothing for as long.
pub struct SlowAppends {
    delay: Duration,
    disk: tokio::sync::Mutex<()>,
}

impl SlowAppends {
    /// Entries above this size, encoded, are slow.
    pub const OVER: u64 = 512 * 1024;

    pub fn new(ms: u64) -> Option<SlowAppends> {
        (ms > 0).then(|| SlowAppends { delay: Duration::from_millis(ms), disk: Default::default() })
    }

    /// Waits as the slow disk would for `r`'s entries; the guard holds the disk while `r` is
    /// appended.
    async fn write(&self, r: &openraft::raft::AppendEntriesRequest<crate::raft::types::Zkr>) -> Option<impl Drop + '_> {
        let bytes: u64 = r.entries.iter().map(|e| bincode::serialized_size(e).unwrap_or(0)).sum();
        if bytes <= Self::OVER {
            return None;
        }
        let disk = self.disk.lock().await;
        tracing::info!(bytes, "failpoint slow-appends: this append takes {:?} longer", self.delay);
        tokio::time::sleep(self.delay).await;
        Some(disk)
    }
}

/// Serves the peer port: openraft's RPCs and forward streams from other members.
pub async fn serve_peers(port: PeerPort, mut listener: crate::listen::Listener, shutdown: CancellationToken) {
    let deaf_until = std::time::Instant::now() + port.deaf_for;
    let port = Arc::new(port);
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
        if std::time::Instant::now() < deaf_until {
            tracing::debug!(%peer, "failpoint deaf-peer-port: closing a peer connection");
            continue;
        }
        let _ = tcp.set_nodelay(true);
        let (port, stop) = (port.clone(), shutdown.clone());
        tokio::spawn(async move {
            let link = &port.link;
            let mut stream = match link.accept(tcp, peer).await {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(%peer, "closing peer connection: {e}");
                    return;
                }
            };
            let hello = match link.hello(&mut stream, peer).await {
                Ok(h) => h,
                Err(e) => {
                    tracing::warn!(%peer, "closing peer connection: {e}");
                    return;
                }
            };
            let result = tokio::select! {
                _ = stop.cancelled() => Ok(()),
                r = async {
                    match hello.kind {
                        Kind::Rpc => serve_rpc(stream, hello.from, &port).await,
                        Kind::Forward => serve_forward(stream, &port).await,
                        Kind::Beat => super::beats::serve_beats(stream, hello.from, &port.raft, &port.status).await,
                    }
                } => r,
            };
            if let Err(e) = result {
                match &e {
                    wire::PeerError::Io(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {}
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
pub(super) async fn serve_rpc(mut s: PeerStream, from: MemberId, port: &PeerPort) -> Result<(), wire::PeerError> {
    let (raft, status, link, log) = (&port.raft, &port.status, &port.link, &port.log);
    let mut replicated = false;
    let result = serve_rpc_frames(&mut s, from, port, &mut replicated).await;
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
        // Every stream the dead leader held (replication, heartbeats, snapshots) ends at once;
        // only the first to see it starts the election at once: one election per survivor is
        // the plan (`elect_after_leader_loss`), and twenty each bumped the term twenty times,
        // their candidacies overtaking each other (a 5-member failover took 1.0-1.2 s, terms
        // 281 -> 348).
        if !alive
            && raft.metrics().borrow().current_leader == Some(from)
            && !status.leader_lost.swap(true, Ordering::AcqRel)
        {
            tracing::info!(leader = from, "the leader is gone (its stream ended, its peer port refuses): not serving until a leader is heard from");
            status.wake.notify_one();
            let (raft, status, link, log) = (raft.clone(), status.clone(), link.clone(), log.clone());
            tokio::spawn(async move { elect_after_leader_loss(&raft, me, from, &status, &link, &log).await });
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
            // No answer at all is a partition (or a paused host), not a death: the election
            // timeout decides, or a member cut off for half a second deposes a healthy leader at
            // every heal (found by the fault suite's moved-session nemesis).
            Err(wire::PeerError::Io(e)) if e.kind() == std::io::ErrorKind::TimedOut => return false,
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
    port: &PeerPort,
    replicated: &mut bool,
) -> Result<(), wire::PeerError> {
    let (raft, status, log) = (&port.raft, &*port.status, &port.log);
    let election_min = port.link.timing.election_min;
    let mut incoming = super::snapshot_in::Incoming::default();
    loop {
        let req: RpcRequest = wire::read_frame(&mut *s).await?;
        let probe = matches!(
            req,
            RpcRequest::SeedProbe
                | RpcRequest::StateProbe
                | RpcRequest::StateProbeOf(_)
                | RpcRequest::PreVote(_)
                | RpcRequest::PreVoteWithLeader(_)
        );
        if !probe && status.seed.lock().refuses(from, initialized(raft)) {
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
            RpcRequest::StateProbe => RpcResponse::StateProbe(state_answer(raft)),
            RpcRequest::StateProbeOf(asker) => RpcResponse::StateProbeOf(standing(raft, asker)),
            RpcRequest::PreVote(last) => {
                let answer = prevote::answer(&hearing(raft, status, log), last, election_min.as_millis() as u64);
                if let Err(why) = &answer {
                    tracing::debug!(candidate = from, "pre-vote denied: {why}");
                }
                RpcResponse::PreVote(answer.map_err(|d| d.to_string()))
            }
            RpcRequest::PreVoteWithLeader(last) => {
                let h = hearing(raft, status, log);
                let answer = prevote::answer_with_leader(&h, last, election_min.as_millis() as u64);
                if let Err(why) = &answer.vote {
                    tracing::debug!(candidate = from, leaderless = answer.leaderless, "pre-vote denied: {why}");
                }
                RpcResponse::PreVoteWithLeader(answer)
            }
            RpcRequest::Append(r) if status.amnesia.refuses_leader(r.vote.leader_id.term) => {
                stale_leader(from, r.vote.leader_id.term);
                return Ok(());
            }
            RpcRequest::Snapshot(r) if status.amnesia.refuses_leader(r.vote.leader_id.term) => {
                stale_leader(from, r.vote.leader_id.term);
                return Ok(());
            }
            RpcRequest::Append(r) => {
                let (applied, vote) = {
                    let m = raft.metrics();
                    let m = m.borrow();
                    (m.last_applied, m.vote)
                };
                // Only a leader this member would follow can prove a divergence: a deposed one
                // (paused while the others elected, its log rightly behind theirs) is refused by
                // openraft below. (Found by a_paused_leader_never_stalls_a_follower: the new
                // leader took the old one's append for a divergence and stopped.)
                if r.vote >= vote {
                    if let Some((index, mine, theirs)) =
                        crate::raft::diverge::at(log, applied, r.prev_log_id, &r.entries)
                    {
                        start_over(log, from, index, mine, theirs);
                    }
                }
                let (term, commit) = (r.vote.leader_id.term, r.leader_commit);
                // A successful append means this member's log matches the leader's up to the
                // request's last entry: exact, where the metrics may not show the append yet.
                let sent_up_to = r.entries.last().map(|e| e.log_id.index).or(r.prev_log_id.map(|p| p.index));
                let slow = match &port.slow_appends {
                    Some(disk) => disk.write(&r).await,
                    None => None,
                };
                let res = raft.append_entries(r).await;
                drop(slow);
                let from_our_leader =
                    matches!(&res, Ok(resp) if !matches!(resp, openraft::raft::AppendEntriesResponse::HigherVote(_)));
                if let (Ok(resp), true) = (&res, from_our_leader) {
                    *replicated = true;
                    status.heard_leader();
                    status.leader_lost.store(false, Ordering::Release);
                    let last = raft.metrics().borrow().last_log_index.max(sent_up_to);
                    if resp.is_success() && status.amnesia.caught_up(term, commit, last) {
                        tracing::info!(
                            leader = from,
                            term,
                            "caught up by a leader elected without this member: it is whole again and votes"
                        );
                    }
                }
                RpcResponse::Append(res)
            }
            RpcRequest::Vote(r) => match status.amnesia.refusal() {
                Some(why) => {
                    let vote = raft.metrics().borrow().vote;
                    tracing::debug!(candidate = from, "vote refused: {why}");
                    RpcResponse::VoteRefused { resp: openraft::raft::VoteResponse::new(vote, None, false), why }
                }
                None => RpcResponse::Vote(raft.vote(r).await),
            },
            RpcRequest::Snapshot(r) => {
                // A deposed leader's snapshot is refused by openraft: it is no contact with a leader.
                if r.vote >= raft.metrics().borrow().vote {
                    *replicated = true;
                    status.heard_leader();
                    status.leader_lost.store(false, Ordering::Release);
                }
                match incoming.check(from, &r) {
                    Err(refused) => RpcResponse::Snapshot(Err(*refused)),
                    Ok(()) => RpcResponse::Snapshot(raft.install_snapshot(r).await),
                }
            }
        };
        wire::write_frame(&mut *s, &resp).await?;
    }
}

/// The leader disagrees with an entry this member applied (see `diverge`): say so, mark the
/// Raft state to be set aside and stop, to start again as an empty member the leader refills.
fn start_over(log: &LogStore, leader: MemberId, index: u64, mine: LogId, theirs: LogId) -> ! {
    let dir = log.raft_dir();
    let line = format!(
        "member {leader} leads a log that differs from what this member applied at index {index} (here {mine}, \
         there {theirs}): the ensemble went on without writes this member holds (zkr.acceptDataLoss on another \
         member). This member stops; started again it sets its Raft state aside and catches up as an empty member"
    );
    tracing::error!("{line}");
    eprintln!("zkr: {line}");
    if let Err(e) = crate::raft::diverge::mark(&dir, &line) {
        tracing::error!(dir = %dir.display(), "cannot mark the raft state to be set aside: {e}");
    }
    std::process::exit(70);
}

/// An amnesiac member refuses a leader of a term older than the newest it knew of: that leader
/// may have been deposed while this member lost what it had acknowledged to its successor, and
/// with this member's help it could still commit in a term that is over. Closing the
/// connection reads as unreachable to it.
fn stale_leader(from: MemberId, term: u64) {
    tracing::debug!(
        leader = from,
        term,
        "refusing entries from a leader of a term older than this member knew before it lost data"
    );
}

/// The leader's end of a follower's forward stream: proposals go into the log in the order they
/// arrive (one stream per follower keeps each session's writes in order). While the log's queue
/// is full this stops reading the stream (the follower's own queue then fills and fails its
/// requests); replies wait in a bounded queue, and a follower that takes none of them for an
/// election timeout loses the stream.
pub(super) async fn serve_forward(s: PeerStream, port: &PeerPort) -> Result<(), wire::PeerError> {
    let (raft, submitter, core, timing) = (&port.raft, &port.submitter, &port.core, port.link.timing);
    let (mut rd, mut wr) = link::split(s);
    let (tx, mut rx) = mpsc::channel::<ForwardReply>(FORWARD_QUEUE);
    let gone = CancellationToken::new();
    let writer = tokio::spawn({
        let gone = gone.clone();
        async move {
            while let Some(r) = rx.recv().await {
                match tokio::time::timeout(timing.election_max, wire::write_frame(&mut wr, &r)).await {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) | Err(_) => break,
                }
            }
            gone.cancel();
        }
    });
    // A reply that finds the queue full means the follower stopped reading: the stream ends.
    let reply = {
        let (tx, gone) = (tx.clone(), gone.clone());
        move |r: ForwardReply| {
            if tx.try_send(r).is_err() {
                gone.cancel();
            }
        }
    };
    let result = loop {
        let msg: ForwardMsg = tokio::select! {
            _ = gone.cancelled() => break Err(wire::PeerError::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the follower does not read its replies",
            ))),
            m = wire::read_frame(&mut rd) => match m {
                Ok(m) => m,
                Err(e) => break Err(e),
            },
        };
        match msg {
            ForwardMsg::Propose(mut cmd) => {
                // The leader's clock stamps every txn, as ZooKeeper's leader does in prep.
                cmd.time = wall_ms();
                let reply = reply.clone();
                submitter.submit(cmd, move |seq| reply(ForwardReply::Failed { seq })).await;
            }
            ForwardMsg::ReadIndex { seq } => {
                let (raft, reply) = (raft.clone(), reply.clone());
                tokio::spawn(async move {
                    let index = read_index(&raft, timing.read_index).await;
                    reply(ForwardReply::ReadIndex { seq, index });
                });
            }
            ForwardMsg::Touch(sids) => to_core(core, ReplMsg::Touch(sids)).await,
            ForwardMsg::Reconfig { seq, plan } => {
                let (raft, reply, submitter) = (raft.clone(), reply.clone(), submitter.clone());
                tokio::spawn(async move {
                    let result =
                        run_reconfig(&raft, &submitter, plan, timing.catch_up).await.map_err(|e| e.map(|c| c.code()));
                    reply(ForwardReply::Reconfig { seq, result });
                });
            }
        }
    };
    drop((tx, reply));
    writer.abort();
    result
}

/// The leader's process looks gone (`serve_rpc` saw its stream end and its peer port refuse):
/// once a quorum agrees it hears no leader (`elections::leader_gone_for_a_quorum`), elect now,
/// as ZooKeeper's followers start leader election as soon as the leader's connection drops,
/// instead of waiting out openraft's leader lease and an election timeout (3–4 s at tickTime
/// 2000). A voter refuses candidates while the lease of the leader it voted for lasts, unless
/// it is a candidate itself; so the first quorum of surviving voters, ranked by id, each start an election one
/// step apart (`Timing::elect_step`; it ends their leases, a survivor with a shorter log
/// included), and the first of them starts another after the last: its higher term wins every
/// vote its log allows. If that log is behind, openraft's own timeouts elect someone else.
pub(super) async fn elect_after_leader_loss(
    raft: &Raft,
    me: MemberId,
    dead: MemberId,
    status: &MemberStatus,
    link: &Link,
    log: &LogStore,
) {
    if status.amnesia.active() {
        return;
    }
    let step = link.timing.elect_step;
    let survivors: Vec<MemberId> = {
        let m = raft.metrics();
        let m = m.borrow();
        let mut v: Vec<MemberId> = m.membership_config.membership().voter_ids().filter(|id| *id != dead).collect();
        v.sort_unstable();
        v
    };
    let Some(rank) = survivors.iter().position(|id| *id == me) else { return };
    // The first `quorum` survivors stand one step apart: their candidacies end their own leases,
    // which is all the first one's second election needs. The others wait until after that second
    // election and stand only if there is still no leader (one of the first may be down): ranked
    // right after them, a survivor stood just when an earlier one had won (five members: a new
    // leader deposed 8 ms after its election, then openraft's timeout, kills at 1.1-1.6 s).
    let voters = survivors.len() + 1;
    let quorum = voters / 2 + 1;
    let wait = if rank < quorum { step * rank as u32 } else { step * (survivors.len() + 1 + rank) as u32 };
    let leaderless = |raft: &Raft| raft.metrics().borrow().current_leader.is_none_or(|l| l == dead);
    tokio::time::sleep(wait).await;
    if !super::elections::leader_gone_for_a_quorum(raft, link, log, leaderless).await {
        return;
    }
    tracing::info!(dead, rank, "electing a new leader now");
    let _ = raft.trigger().elect().await;
    if rank == 0 {
        tokio::time::sleep(step * survivors.len() as u32).await;
        if leaderless(raft)
            && raft.metrics().borrow().state != openraft::ServerState::Leader
            && super::elections::leader_gone_for_a_quorum(raft, link, log, leaderless).await
        {
            let _ = raft.trigger().elect().await;
        }
    }
}
