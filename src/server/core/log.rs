//! The log seam: where the core's requests become txns, and how the txns come back.
//!
//! The core hands everything that changes the replicated state (a new session, a re-attach, a
//! write, a close, a sync) to `Core::submit`, and asks the log the few questions that differ
//! by mode (is it serving, must requests wait, which sessions to report). Two logs sit behind
//! it:
//! - `Standalone` (`standalone.rs`): the request is prepared and applied in the same turn and its
//!   txn framed into the turn's records; the committer makes them durable (group commit) and
//!   only then releases the turn's replies.
//! - `Replicated` (`replicated/`): the request is proposed to the Raft log and prepared and
//!   applied when it comes back committed (`CoreMsg::Apply`); replies leave at the end of the
//!   turn that applied it.
//! - `Observer` (`observing.rs`): the request is forwarded to a ZooKeeper leader and answered
//!   when its txn comes back (`CoreMsg::Zab`); the leader prepared it.
//!
//! The first two apply txns with `Core::apply_txn` and answer writes with `writes::write_response`, so
//! the two modes cannot answer the same request differently. This is the one place that
//! chooses between them.

use super::observing::Observing;
use super::replicated::Replicated;
use super::*;
use crate::server::committer::{Batch, CommitQueue};
use crate::server::outbound::deliver_all;

/// Where the core's txns go.
pub enum Log {
    /// Standalone: its own transaction log, through the committer.
    Standalone(Standalone),
    /// An ensemble member: proposals to the Raft log, applied when committed.
    Replicated(Box<Replicated>),
    /// An observer of a ZooKeeper ensemble: requests forwarded to its leader, txns applied as
    /// the leader sends them (`observing.rs`).
    Observer(Box<Observing>),
}

/// The standalone log's side in the core: the turn's framed records and snapshot scheduling.
pub struct Standalone {
    queue: CommitQueue,
    /// Log records of this turn, handed to the committer with the turn's output.
    pub(super) records: Vec<u8>,
    pub(super) first_zxid: Zxid,
    /// Txns since the last snapshot (`snapCount`).
    pub(super) since_snapshot: u64,
    pub(super) snapshot_running: Arc<AtomicBool>,
}

/// What a request asks of the log.
pub(super) enum Submit {
    /// A new session for the connection's ConnectRequest.
    Session { sid: SessionId, timeout: i32 },
    /// The connection re-attaches a session it names.
    Attach { sid: SessionId, timeout: i32, password: Vec<u8> },
    /// create, delete, setData, setACL, multi, reconfig.
    Write { xid: i32, op: OpCode, body: RequestBody },
    /// closeSession.
    Close { xid: i32 },
    /// sync: answered once this server has applied everything committed before it.
    Sync { xid: i32, path: String },
}

impl Log {
    pub fn standalone(queue: CommitQueue) -> Log {
        Log::Standalone(Standalone {
            queue,
            records: Vec::new(),
            first_zxid: 0,
            since_snapshot: 0,
            snapshot_running: Arc::new(AtomicBool::new(false)),
        })
    }

    pub(super) fn replicated(&self) -> Option<&Replicated> {
        match self {
            Log::Replicated(r) => Some(r),
            _ => None,
        }
    }

    pub(super) fn replicated_mut(&mut self) -> Option<&mut Replicated> {
        match self {
            Log::Replicated(r) => Some(r),
            _ => None,
        }
    }

    /// Clients are served: always standalone; a member or an observer while it has a leader.
    pub(super) fn serving(&self) -> bool {
        match self {
            Log::Standalone(_) => true,
            Log::Replicated(r) => r.serving(),
            Log::Observer(o) => o.serving(),
        }
    }

    /// Requests wait in their connection's queue (a member waiting for a new leader).
    pub(super) fn holding_conns(&self) -> bool {
        self.replicated().is_some_and(Replicated::holding_conns)
    }

    /// Requests may be in flight past the end of a turn, so later ones must queue behind them.
    pub(super) fn pipelines(&self) -> bool {
        !matches!(self, Log::Standalone(_))
    }

    /// A session sent a request here: a member or an observer reports it to its leader.
    pub(super) fn touched(&mut self, sid: SessionId) {
        match self {
            Log::Standalone(_) => {}
            Log::Replicated(r) => r.touched(sid),
            Log::Observer(o) => o.touched(sid),
        }
    }

    /// Sessions get ZooKeeper's passwords (derived from the id): an observer's clients may move
    /// to the ZooKeeper servers beside it.
    pub(super) fn zookeeper_passwords(&self) -> bool {
        matches!(self, Log::Observer(_))
    }

    /// The tree digest is kept and compared (members compare theirs; standalone has no one to).
    pub(super) fn keeps_digest(&self) -> bool {
        matches!(self, Log::Replicated(_))
    }

    /// Read-only mode applies: a member cut off from its quorum with `readonlymode.enabled`.
    pub(super) fn read_only_now(&self) -> bool {
        self.replicated().is_some_and(|r| !r.serving() && r.read_only_enabled())
    }

    /// A member without a leader holds a handshake (for an election's fraction of a second)
    /// instead of refusing it; standalone never does. Gives the request back if not held.
    pub(super) fn hold_handshake(&mut self, id: ConnId, req: ConnectRequest, now: u64) -> Option<ConnectRequest> {
        match self {
            Log::Replicated(r) if !r.serving() && r.hold_ms > 0 && r.stopped().is_none() => {
                if r.read_only_enabled() && req.read_only == Some(true) {
                    return Some(req);
                }
                r.held.push((id, req, now));
                None
            }
            _ => Some(req),
        }
    }
}

impl Core {
    /// Hands a request that changes the state to the log: standalone commits it in this turn,
    /// a member proposes it and answers when it is applied.
    pub(super) fn submit(&mut self, conn: ConnId, sid: SessionId, s: Submit) {
        match self.log {
            Log::Standalone(_) => self.commit_now(conn, sid, s),
            Log::Replicated(_) => self.propose_submit(conn, sid, s),
            Log::Observer(_) => self.forward_submit(conn, sid, s),
        }
    }

    /// The turn's output leaves: standalone through the committer, after the fsync of the
    /// turn's records; a member's at once, since what it applied is committed already.
    pub(super) fn end_turn(&mut self) {
        let serving = self.log.serving();
        self.views.end_turn(&self.tree, serving);
        let zxid = self.tree.last_zxid();
        match &mut self.log {
            Log::Standalone(s) if s.records.is_empty() && self.out.is_empty() => {}
            Log::Standalone(s) => {
                let batch = Batch {
                    records: std::mem::take(&mut s.records),
                    first_zxid: s.first_zxid,
                    last_zxid: zxid,
                    out: std::mem::take(&mut self.out),
                };
                if s.queue.submit(batch).is_err() {
                    tracing::error!("the log writer has stopped");
                }
            }
            // Even a turn with nothing to send applied entries the read view must count as
            // delivered.
            Log::Replicated(_) | Log::Observer(_) => {
                deliver_all(&**self.views.views(), zxid, std::mem::take(&mut self.out))
            }
        }
    }

    /// Periodic work: standalone expires sessions and reaps here; a member's leader does it
    /// through the log, the others report their sessions.
    pub(super) fn tick(&mut self) {
        match self.log {
            Log::Standalone(_) => self.standalone_tick(),
            Log::Replicated(_) => self.ensemble_tick(),
            Log::Observer(_) => self.observer_tick(),
        }
    }
}
