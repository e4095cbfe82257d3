//! The core as an observer of a running ZooKeeper ensemble (issue 24: live migration): the
//! third log. Reads and watches are served from the local tree; everything that changes the
//! state (a new session, a write, a close, a sync) is forwarded to the ZooKeeper leader and
//! answered when its txn comes back committed, matched by session and cxid, as ZooKeeper's
//! `ObserverRequestProcessor` and `CommitProcessor` do. A client that brings a session from
//! elsewhere is revalidated with the leader (`Learner.validateSession`), which moves the
//! session's owner here.
//!
//! The rules it keeps are ZooKeeper's observer's:
//! - the leader alone expires sessions; this server tells it which of its sessions are alive in
//!   every PING reply (`crate::zab::follow::Touched`);
//! - new sessions get ZooKeeper's ids (`myid` in the top byte) and ZooKeeper's passwords, so a
//!   client can move between this server and ZooKeeper's;
//! - when the leader goes, every client connection closes (`Learner.shutdown` closes them) and
//!   nothing is served until the next leader synced this server.

use super::*;
use crate::import::ZkTxn;
use crate::zab::digest::Checked;
use crate::zab::follow::{Out, Outbox, Status, Touched, Up};
use std::collections::{HashSet, VecDeque};

#[cfg(test)]
mod tests;

/// A forwarded request waiting for its txn.
#[derive(Debug)]
enum Waiting {
    Session { conn: ConnId, timeout: i32, ids: Vec<Id> },
    Write { conn: ConnId, xid: i32, op: OpCode, body: RequestBody },
    Close { conn: ConnId, xid: i32 },
}

impl Waiting {
    fn conn(&self) -> ConnId {
        match self {
            Waiting::Session { conn, .. } | Waiting::Write { conn, .. } | Waiting::Close { conn, .. } => *conn,
        }
    }

    /// Whether a committed txn of this type answers this request: a session's txn its
    /// ConnectRequest, a close its closeSession, anything else a write (an error txn too).
    fn answered_by(&self, op: &TxnOp) -> bool {
        match self {
            Waiting::Session { .. } => matches!(op, TxnOp::CreateSession { .. } | TxnOp::Error(_)),
            Waiting::Close { .. } => matches!(op, TxnOp::CloseSession | TxnOp::Error(_)),
            Waiting::Write { .. } => !matches!(op, TxnOp::CreateSession { .. } | TxnOp::CloseSession),
        }
    }
}

/// The core's observer state.
pub struct Observing {
    outbox: Outbox,
    touched: Touched,
    status: Arc<Status>,
    /// The leader connection requests go to; `None` while there is none (not serving).
    generation: Option<u64>,
    /// Forwarded requests by (session, cxid).
    waiting: HashMap<(SessionId, i32), Waiting>,
    /// Forwarded syncs, answered in order by the leader's SYNC packets.
    syncs: VecDeque<(ConnId, i32, String)>,
    /// Re-attaches waiting for the leader's REVALIDATE answer, per session in order.
    revalidating: HashMap<SessionId, VecDeque<(ConnId, i32, Vec<Id>)>>,
    /// Sessions that sent a request here since the last report.
    recent: HashSet<SessionId>,
    next_report_ms: u64,
    /// ZooKeeper's tree digest, checked against the leader's after every txn.
    pub(super) digest: Checked,
    /// Txns since the last snapshot (`snapCount`), and whether one is being written: the
    /// observed state is kept as snapshots, so a restart syncs from the last one with a DIFF.
    pub(super) since_snapshot: u64,
    pub(super) snapshot_running: Arc<AtomicBool>,
}

impl Observing {
    pub fn new(outbox: Outbox, touched: Touched, status: Arc<Status>, tree: &DataTree) -> Observing {
        Observing {
            outbox,
            touched,
            status,
            generation: None,
            waiting: HashMap::new(),
            syncs: VecDeque::new(),
            revalidating: HashMap::new(),
            recent: HashSet::new(),
            next_report_ms: 0,
            digest: Checked::of(tree),
            since_snapshot: 0,
            snapshot_running: Arc::new(AtomicBool::new(false)),
        }
    }

    pub fn serving(&self) -> bool {
        self.generation.is_some()
    }

    pub(super) fn touched(&mut self, sid: SessionId) {
        self.recent.insert(sid);
    }

    /// Forwards to the leader; false if it cannot be sent (no leader, or the writer is behind).
    fn forward(&self, out: Out) -> bool {
        self.generation.is_some_and(|g| self.outbox.send(g, out))
    }
}

/// A request's jute body as the client sent it (its header left out).
fn body_bytes(op: OpCode, body: &RequestBody) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    crate::proto::request::write_body(body, op, &mut out);
    out
}

impl Core {
    fn observer(&mut self) -> Option<&mut Observing> {
        match &mut self.log {
            Log::Observer(o) => Some(o),
            _ => None,
        }
    }

    /// The observer's side of `Core::submit`: forwarded, and answered when its txn is applied.
    pub(super) fn forward_submit(&mut self, conn: ConnId, sid: SessionId, s: Submit) {
        // The identities the leader's ACL checks use (a session's create and re-attach carry none).
        let auth = |sessions: &HashMap<SessionId, Session>| -> Vec<(String, String)> {
            ids_of(sessions, sid).iter().map(|i| (i.scheme.clone(), i.id.clone())).collect()
        };
        let (key, waiting, out) = match s {
            Submit::Session { sid, timeout } => {
                let Some(ids) = self.conns.get(&conn).map(|c| c.handle.connect_ids()) else { return };
                // ZooKeeperServer.createSession: a createSession request whose body is the
                // timeout, with cxid 0; the leader answers with the txn.
                let out = Out::Request {
                    session: sid,
                    cxid: 0,
                    opcode: OpCode::CreateSession as i32,
                    body: timeout.to_be_bytes().to_vec(),
                    auth: Vec::new(),
                };
                ((sid, 0), Waiting::Session { conn, timeout, ids }, out)
            }
            Submit::Attach { sid, timeout, password } => return self.revalidate(conn, sid, timeout, &password),
            Submit::Write { xid, op, body } => {
                let bytes = body_bytes(op, &body);
                let out = Out::Request {
                    session: sid,
                    cxid: xid,
                    opcode: op as i32,
                    body: bytes,
                    auth: auth(&self.sessions),
                };
                ((sid, xid), Waiting::Write { conn, xid, op, body }, out)
            }
            Submit::Close { xid } => {
                let out = Out::Request {
                    session: sid,
                    cxid: xid,
                    opcode: OpCode::CloseSession as i32,
                    body: Vec::new(),
                    auth: auth(&self.sessions),
                };
                ((sid, xid), Waiting::Close { conn, xid }, out)
            }
            Submit::Sync { xid, path } => {
                let body = body_bytes(OpCode::Sync, &RequestBody::Path { path: path.clone() });
                let out = Out::Request {
                    session: sid,
                    cxid: xid,
                    opcode: OpCode::Sync as i32,
                    body,
                    auth: auth(&self.sessions),
                };
                let Some(o) = self.observer() else { return };
                if !o.forward(out) {
                    return self.close_unanswered(conn);
                }
                o.syncs.push_back((conn, xid, path));
                return self.in_flight(conn);
            }
        };
        let Some(o) = self.observer() else { return };
        if !o.forward(out) {
            return self.close_unanswered(conn);
        }
        o.waiting.insert(key, waiting);
        self.in_flight(conn);
    }

    fn in_flight(&mut self, conn: ConnId) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.in_flight += 1;
        }
    }

    /// A request that was not forwarded, or whose answer will not come: the client sees
    /// ConnectionLoss and tries again, as with a ZooKeeper observer that lost its leader.
    fn close_unanswered(&mut self, conn: ConnId) {
        tracing::info!(conn, "closing connection: its request cannot reach the ZooKeeper leader");
        self.close_conn(conn);
    }

    /// A client re-attaches a session: the password is checked here (ZooKeeper's
    /// `checkPasswd`, derived from the session id), then the leader says whether the session
    /// lives and moves it here.
    fn revalidate(&mut self, conn: ConnId, sid: SessionId, timeout: i32, password: &[u8]) {
        if password != crate::session::zookeeper_password(sid) && !self.password_ok(sid, password) {
            return self.refuse_reattach(conn, sid);
        }
        let Some(ids) = self.conns.get(&conn).map(|c| c.handle.connect_ids()) else { return };
        let Some(o) = self.observer() else { return };
        if !o.forward(Out::Revalidate { session: sid, timeout_ms: timeout }) {
            return self.close_unanswered(conn);
        }
        o.revalidating.entry(sid).or_default().push_back((conn, timeout, ids));
        self.in_flight(conn);
    }

    /// What the follower hands up (`crate::zab::follow`).
    pub(super) fn observed(&mut self, up: Up) {
        match up {
            Up::Txn(t) => self.apply_observed(*t),
            Up::Snap(tree) => self.install_observed(*tree),
            Up::Synced { generation, leader, epoch } => {
                let Some(o) = self.observer() else { return };
                o.generation = Some(generation);
                o.status.synced(leader, epoch);
                tracing::info!(
                    leader,
                    epoch,
                    zxid = format!("0x{:x}", self.tree.last_zxid()),
                    "serving as an observer"
                );
            }
            Up::Sync => {
                let Some((conn, xid, path)) = self.observer().and_then(|o| o.syncs.pop_front()) else { return };
                self.reply(conn, xid, Ok(Response::Path(path)));
                self.finish(conn);
            }
            Up::Revalidated { session, valid } => self.revalidated(session, valid),
            Up::Lost(why) => self.leader_lost(&why),
        }
    }

    fn revalidated(&mut self, sid: SessionId, valid: bool) {
        let Some(o) = self.observer() else { return };
        let Some(q) = o.revalidating.get_mut(&sid) else { return };
        let next = q.pop_front();
        if q.is_empty() {
            o.revalidating.remove(&sid);
        }
        let Some((conn, timeout, ids)) = next else { return };
        if !self.conns.contains_key(&conn) {
            return;
        }
        if !valid {
            return self.refuse_reattach(conn, sid);
        }
        // The session may not be applied here yet (its createSession still on its way): the
        // leader's word is enough, as in ZooKeeper.
        self.sessions.entry(sid).or_insert(Session { timeout_ms: timeout, conn: None, ids: Vec::new() });
        self.reattach(conn, sid, timeout, ids);
        self.attached(conn, sid, timeout);
        self.finish(conn);
    }

    /// The leader is gone: every client connection closes and nothing is served until the next
    /// leader synced this server (ZooKeeper's observer shuts its server down the same way).
    fn leader_lost(&mut self, why: &str) {
        let Some(o) = self.observer() else { return };
        o.generation = None;
        o.status.lost();
        o.waiting.clear();
        o.syncs.clear();
        o.revalidating.clear();
        tracing::warn!("no ZooKeeper leader ({why}): closing client connections until the next one");
        let conns: Vec<ConnId> = self.conns.keys().copied().collect();
        for c in conns {
            self.close_conn(c);
        }
    }

    /// The leader's SNAP replaces the tree (no client is connected while syncing).
    fn install_observed(&mut self, tree: DataTree) {
        let conns: Vec<ConnId> = self.conns.keys().copied().collect();
        for c in conns {
            self.close_conn(c);
        }
        self.views.withdraw();
        self.tree = tree;
        self.sessions_from_tree();
        let Log::Observer(o) = &mut self.log else { return };
        o.digest.reset(&self.tree);
        self.durable.store(self.tree.last_zxid(), Ordering::Release);
        // As a ZooKeeper learner does after a SNAP: the new state is kept at once.
        self.snapshot_in_background();
    }

    /// Applies a committed txn from the leader and answers the request it came from, if this
    /// server forwarded it.
    fn apply_observed(&mut self, t: ZkTxn) {
        let ZkTxn { mut txn, cxid, digest } = t;
        let sid = txn.session;
        if let TxnOp::CreateSession { password, .. } = &mut txn.op {
            // ZooKeeper derives every session's password from its id (generatePasswd): kept
            // with the session so it is checked the same way here, and after a takeover.
            *password = Some(crate::session::zookeeper_password(sid));
        }
        let waiting = self.observer().and_then(|o| match o.waiting.remove(&(sid, cxid)) {
            Some(w) if w.answered_by(&txn.op) => Some(w),
            Some(w) => {
                o.waiting.insert((sid, cxid), w);
                None
            }
            None => None,
        });
        let outcome = self.apply_txn(&txn);
        let snapshot_due = match &mut self.log {
            Log::Observer(o) => {
                o.digest.check(txn.zxid, digest);
                o.since_snapshot += 1;
                o.since_snapshot >= self.cfg.snap_count
            }
            _ => false,
        };
        self.durable.store(self.tree.last_zxid(), Ordering::Release);
        if snapshot_due {
            self.snapshot_in_background();
        }
        match &txn.op {
            TxnOp::CreateSession { timeout_ms, .. } => {
                self.sessions.entry(sid).or_insert(Session { timeout_ms: *timeout_ms, conn: None, ids: Vec::new() });
                if let Some(Waiting::Session { conn, timeout, ids }) = waiting {
                    self.session_created(conn, sid, timeout, ids);
                }
            }
            TxnOp::CloseSession => {
                let had = self.sessions.remove(&sid);
                self.expiry.remove(sid);
                match waiting {
                    Some(Waiting::Close { conn, xid }) => {
                        let zxid = txn.zxid;
                        self.send(conn, Outbound::Reply(ReplyHeader { xid, zxid, err: 0 }, Response::Empty));
                        self.close_conn(conn);
                    }
                    _ => {
                        if let Some(c) = had.and_then(|s| s.conn) {
                            tracing::info!(session = format!("0x{sid:x}"), "session expired");
                            self.abort_conn(c);
                        }
                    }
                }
            }
            _ => match waiting {
                // FinalRequestProcessor: SessionMoved closes the connection without a reply.
                Some(w) if matches!(outcome, OpOutcome::Error(ErrorCode::SessionMoved)) => {
                    tracing::info!(session = format!("0x{sid:x}"), "write of a session that moved: connection closed");
                    self.close_conn(w.conn());
                }
                Some(Waiting::Write { conn, xid, op, body }) => {
                    self.reply(conn, xid, writes::write_response(op, &body, outcome));
                    self.finish(conn);
                }
                // A session's create or close that failed (an error txn).
                Some(w) => {
                    let conn = w.conn();
                    if let (Waiting::Session { .. }, Some(c)) = (&w, self.conns.get(&conn)) {
                        tracing::info!(conn, peer = %c.handle.peer, ?outcome, "the ZooKeeper leader refused the session");
                    }
                    self.close_conn(conn);
                }
                None => {}
            },
        }
    }

    /// Every half tick: the sessions heard from here since the last report are handed to the
    /// follower, which puts them in its next PING reply (`Learner.ping`).
    pub(super) fn observer_tick(&mut self) {
        let now = self.now_ms();
        let interval = self.cfg.session_report_ms();
        let Log::Observer(o) = &mut self.log else { return };
        if now < o.next_report_ms {
            return;
        }
        let since = o.next_report_ms.saturating_sub(interval);
        o.next_report_ms = now + interval;
        let mut sids = std::mem::take(&mut o.recent);
        // Pings a connection answered itself count as much as requests.
        sids.extend(self.heard_since(since));
        let Log::Observer(o) = &self.log else { return };
        for sid in sids {
            if let Some(s) = self.sessions.get(&sid) {
                o.touched.touch(sid, s.timeout_ms);
            }
        }
    }

    /// ZooKeeper's digest agreed with this tree's after every txn checked so far.
    pub fn observer_digests(&self) -> Option<(u64, u64)> {
        match &self.log {
            Log::Observer(o) => Some((o.digest.checked, o.digest.mismatches)),
            _ => None,
        }
    }
}
