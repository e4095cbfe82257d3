//! The seam between a member's core (above, in `server/`) and its Raft side (this folder).
//!
//! Down: the core hands `Proposal`s to the proposer through a bounded `Outlet`/`Inlet` pair
//! (session reports on a lane of their own). Up: the Raft side hands the core committed entries
//! to apply and what it learned (`ReplMsg`) through an `Upward`, which the server connects to
//! its core's queue. `raft/` owns every type that crosses, so nothing here imports `server/`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::mpsc;

use super::command::Command;
use super::types::{LogId, Membership};
use crate::proto::ErrorCode;
use crate::tree::DataTree;
use crate::txn::SessionId;

/// A committed log entry, as the core applies it.
#[derive(Debug)]
pub struct Committed {
    pub log_id: LogId,
    pub payload: CommittedPayload,
}

#[derive(Debug)]
pub enum CommittedPayload {
    /// A batch of commands, each its own txn with its own zxid, in order.
    Commands(super::command::Batch),
    Membership(Membership),
    /// A new leader's first entry.
    Blank,
}

/// This member's part in the ensemble (what `srvr` calls the mode).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Role {
    /// No leader known: electing, or cut off from the quorum.
    #[default]
    Looking,
    Leader,
    Follower,
    Observer,
}

impl Role {
    /// ZooKeeper's name for the mode.
    pub fn name(self) -> &'static str {
        match self {
            Role::Looking => "looking",
            Role::Leader => "leader",
            Role::Follower => "follower",
            Role::Observer => "observer",
        }
    }
}

/// What leaves the core for the Raft side.
#[derive(Debug)]
pub enum Proposal {
    Command(Command),
    /// `sync`: learn the leader's commit point (answered with `ReplMsg::ReadIndex`).
    ReadIndex {
        seq: u64,
    },
    /// Sessions heard from on this member since the last report (for the leader's expiry).
    Touch(Vec<SessionId>),
    /// A checked reconfig for the leader to carry out (answered with `ReplMsg::ReconfigDone`).
    Reconfig {
        seq: u64,
        plan: super::plan::Plan,
    },
}

/// How many proposals may wait for the proposer (the log or the forward stream to the
/// leader). Past that the leader is not keeping up: a request is failed at once (its
/// connection closed, as for a lost leader) instead of growing the queue without bound.
pub const PROPOSAL_QUEUE: usize = 16 * 1024;

/// Session reports waiting for the proposer: they take a lane of their own, so a report is never
/// queued behind client writes (a session would expire while its writes wait for a slow leader).
pub const TOUCH_QUEUE: usize = 8;

/// The core's end of the way to the log: proposals, and session reports on their own lane.
pub struct Outlet {
    proposals: mpsc::Sender<Proposal>,
    touches: mpsc::Sender<Vec<SessionId>>,
}

/// The proposer's end.
pub struct Inlet {
    proposals: mpsc::Receiver<Proposal>,
    touches: mpsc::Receiver<Vec<SessionId>>,
}

/// A bounded way from the core to the proposer.
pub fn outlet() -> (Outlet, Inlet) {
    let (ptx, prx) = mpsc::channel(PROPOSAL_QUEUE);
    let (ttx, trx) = mpsc::channel(TOUCH_QUEUE);
    (Outlet { proposals: ptx, touches: ttx }, Inlet { proposals: prx, touches: trx })
}

impl Outlet {
    /// Hands `p` on without waiting (the core never blocks): false if the queue is full or the
    /// proposer is gone, and `p` was dropped.
    pub fn send(&self, p: Proposal) -> bool {
        match p {
            Proposal::Touch(sids) => self.touches.try_send(sids).is_ok(),
            p => self.proposals.try_send(p).is_ok(),
        }
    }
}

impl Inlet {
    /// The next proposal, session reports first.
    pub async fn recv(&mut self) -> Option<Proposal> {
        tokio::select! {
            biased;
            Some(t) = self.touches.recv() => Some(Proposal::Touch(t)),
            p = self.proposals.recv() => p,
        }
    }

    /// A proposal already queued, session reports first (tests).
    pub fn try_recv(&mut self) -> Option<Proposal> {
        self.touches.try_recv().map(Proposal::Touch).or_else(|_| self.proposals.try_recv()).ok()
    }
}

/// A consistent view of the applied state, for openraft's snapshot builder.
pub struct SnapshotView {
    pub tree: DataTree,
    pub log_id: Option<LogId>,
    pub membership: Membership,
}

/// What the Raft side tells the core.
pub enum ReplMsg {
    Role {
        role: Role,
        leader: Option<u64>,
        term: u64,
        /// Looking because the leader's process is gone (its stream ended and its peer port
        /// refuses): the survivors elect at once, so clients are held rather than dropped.
        leader_gone: bool,
    },
    /// A proposal was refused or its fate is unknown.
    ProposalFailed {
        seq: u64,
    },
    /// Every proposal sent to the leader may be lost (the forward stream broke).
    ForwardLost,
    /// The leader's commit point for a `sync`, or `None` if it could not be had.
    ReadIndex {
        seq: u64,
        index: Option<u64>,
    },
    /// Leader: sessions another member heard from.
    Touch(Vec<SessionId>),
    /// A reconfig's outcome: the log index of its last membership entry, an error for the
    /// client, or `Err(None)` when its fate is unknown.
    ReconfigDone {
        seq: u64,
        result: Result<u64, Option<ErrorCode>>,
    },
    SnapshotView(tokio::sync::oneshot::Sender<SnapshotView>),
    /// A snapshot from the leader replaces the whole state.
    Install {
        tree: Box<DataTree>,
        log_id: Option<LogId>,
        membership: Membership,
        done: tokio::sync::oneshot::Sender<()>,
    },
}

impl std::fmt::Debug for ReplMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReplMsg::Role { role, leader, term, leader_gone } => {
                write!(f, "Role({role:?}, {leader:?}, {term}, gone {leader_gone})")
            }
            ReplMsg::ProposalFailed { seq } => write!(f, "ProposalFailed({seq})"),
            ReplMsg::ForwardLost => f.write_str("ForwardLost"),
            ReplMsg::ReadIndex { seq, index } => write!(f, "ReadIndex({seq}, {index:?})"),
            ReplMsg::Touch(v) => write!(f, "Touch({})", v.len()),
            ReplMsg::ReconfigDone { seq, result } => write!(f, "ReconfigDone({seq}, {result:?})"),
            ReplMsg::SnapshotView(_) => f.write_str("SnapshotView"),
            ReplMsg::Install { log_id, .. } => write!(f, "Install({log_id:?})"),
        }
    }
}

/// What goes up to the core.
#[derive(Debug)]
pub enum Up {
    /// Committed log entries to apply, in order; `done` is told when they are.
    Apply { entries: Vec<Committed>, done: tokio::sync::oneshot::Sender<()> },
    /// What the Raft side learned (role, leader, proposals that failed, sync points, sessions
    /// touched on other members, snapshots).
    Tell(ReplMsg),
}

type SendUp = dyn Fn(Up) -> Pin<Box<dyn Future<Output = bool> + Send>> + Send + Sync;

/// The Raft side's way up to the core: a bounded queue the server owns, whose messages are
/// made from `Up`. Sending waits while the queue is full (the core sets the pace of applying).
#[derive(Clone)]
pub struct Upward(Arc<SendUp>);

impl Upward {
    /// Sends into `tx`, whose items are made from `Up`.
    pub fn to<T: From<Up> + Send + 'static>(tx: mpsc::Sender<T>) -> Upward {
        Upward(Arc::new(move |up| {
            let tx = tx.clone();
            Box::pin(async move { tx.send(T::from(up)).await.is_ok() })
        }))
    }

    /// Hands `up` to the core: false if the core has stopped.
    pub async fn send(&self, up: Up) -> bool {
        (self.0)(up).await
    }

    /// Tells the core what the Raft side learned: false if the core has stopped.
    pub async fn tell(&self, msg: ReplMsg) -> bool {
        self.send(Up::Tell(msg)).await
    }
}
