//! The core: the single task that orders every request, prepares and applies txns, answers
//! reads, fires watches and expires sessions.
//!
//! It runs on its own thread and is the only owner of the tree, the session table and the watch
//! tables, which is what makes replies FIFO per session, reads never overtake their session's
//! writes, and a watch event always precede the reply to any later request of its connection.
//! It never blocks on a connection: output goes to bounded per-connection queues with
//! `try_send`, and a connection whose queue is full is closed.

mod auth;
mod log;
pub mod observing;
pub mod replicated;
pub mod restore;
mod sessions;
mod standalone;
mod watches;
mod writes;

pub use self::log::Log;
use self::log::Submit;
use super::outbound::Delivery;
pub use super::outbound::{ConnHandle, Durable, Outbound};
use super::reads::{self, Reader};
use crate::config::Config;
use crate::proto::{
    xid, ConnectRequest, ConnectResponse, ErrorCode, Id, MultiOp, MultiResult, OpCode, ReplyHeader, Request,
    RequestBody, Response, WatcherEvent, STATE_SYNC_CONNECTED,
};
use crate::security::digest_md5::DigestServer;
use crate::session::{initial_session_id, ConnId, ExpiryQueue, Passwords, Session};
use crate::storage::{self, wal, Layout};
use crate::tree::{acl, prep, Change, DataTree, OpOutcome};
use crate::txn::{SessionId, Txn, TxnOp, Zxid};
use crate::watch::{Fired, WatchManager};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// Messages into the core.
#[derive(Debug)]
pub enum CoreMsg {
    Connect {
        conn: ConnHandle,
        req: ConnectRequest,
    },
    Request {
        conn: ConnId,
        req: Request,
    },
    /// An op code zkr does not know: answered with Unimplemented, then the connection closes.
    UnknownOp {
        conn: ConnId,
        xid: i32,
    },
    Disconnected {
        conn: ConnId,
    },
    Tick,
    Stats(tokio::sync::oneshot::Sender<CoreStats>),
    /// Sessions, ephemerals and watches for the operator views (`dump`, `wchc`, `wchp`…).
    Inspect(tokio::sync::oneshot::Sender<Inspection>),
    /// A node's ACL (None: no such node), for the AdminServer's admin authentication.
    AclOf(String, tokio::sync::oneshot::Sender<Option<Vec<crate::proto::Acl>>>),
    /// Take a snapshot now (operator request).
    Snapshot,
    /// The AdminServer's `snapshot`: a copy of the tree, and on a standalone server the counter
    /// that says when its zxid is durable.
    SnapshotCopy(tokio::sync::oneshot::Sender<(DataTree, Option<Durable>)>),
    /// The AdminServer's `restore`: replace the tree (`restore.rs`).
    Restore {
        tree: Box<DataTree>,
        last_processed: Option<Zxid>,
        /// The snapshot as received: what an ensemble member logs (`replicated::restore`).
        raw: bytes::Bytes,
        reply: restore::RestoreReply,
    },
    /// Ensemble: committed log entries to apply, in order; `done` is told when they are.
    Apply {
        entries: Vec<replicated::Committed>,
        done: tokio::sync::oneshot::Sender<()>,
    },
    /// Ensemble: what the Raft side learned (role, leader, proposals that failed, sync points,
    /// sessions touched on other members, snapshots).
    Replication(replicated::ReplMsg),
    /// Observer of a ZooKeeper ensemble: what its leader sent (`crate::zab::follow`).
    Zab(crate::zab::follow::Up),
}

impl From<replicated::Up> for CoreMsg {
    fn from(up: replicated::Up) -> CoreMsg {
        match up {
            replicated::Up::Apply { entries, done } => CoreMsg::Apply { entries, done },
            replicated::Up::Tell(m) => CoreMsg::Replication(m),
        }
    }
}

/// Numbers for four-letter words and metrics.
#[derive(Debug, Clone, Default)]
pub struct CoreStats {
    /// The node count ZooKeeper reports (mntr, stat, srvr, metrics): the size of its node map,
    /// which holds the root twice, as "" and "/" (5 on a fresh server).
    pub znodes: usize,
    pub ephemerals: usize,
    pub watches: usize,
    pub sessions: usize,
    pub connections: usize,
    pub last_zxid: Zxid,
    pub data_size: u64,
    /// An ensemble member's tree digest (`DataTree::digest`), comparable across members.
    pub digest: Option<u64>,
    /// An observer of a ZooKeeper ensemble: txns after which ZooKeeper's digest of this tree
    /// differed from the leader's (mntr's `digest_mismatches_count`, as ZooKeeper counts them).
    pub digest_mismatches: u64,
}

/// What the operator views show about sessions and watches, taken in one core turn.
#[derive(Debug, Clone, Default)]
pub struct Inspection {
    /// Session expiry buckets: wall-clock ms when due, and the sessions in it, soonest first.
    pub expiry: Vec<(i64, Vec<SessionId>)>,
    /// The tick the buckets are rounded to, ms.
    pub expiry_interval_ms: u64,
    /// Ephemeral paths per session (sessions that own any), sorted.
    pub ephemerals: Vec<(SessionId, Vec<String>)>,
    /// Data-watch paths per session of the watching connection, sorted.
    pub watches: Vec<(SessionId, Vec<String>)>,
    /// (watchers, paths, relations) of the data-watch table.
    pub watch_summary: (usize, usize, usize),
    /// The session of each connection that has one.
    pub conn_sessions: HashMap<ConnId, SessionId>,
    /// Session id → (timeout ms, bucket due wall ms).
    pub sessions: HashMap<SessionId, (i32, i64)>,
}

struct Conn {
    handle: ConnHandle,
    session: Option<SessionId>,
    /// The connection's SASL exchange, once the client has started one.
    sasl: Option<auth::SaslExchange>,
    /// Ensemble: requests waiting behind this connection's proposals (per-session FIFO).
    queue: std::collections::VecDeque<Request>,
    /// Ensemble: proposals of this connection not yet applied here.
    in_flight: u32,
    /// A request answered outside the log's order (sync, reconfig) is in flight: nothing
    /// after it is served until it is answered (ZooKeeper's CommitProcessor holds a session's
    /// later requests behind its pending sync the same way).
    barrier: bool,
    /// A read-only session's connection (a member cut off from the quorum in read-only mode).
    read_only: bool,
}

pub struct Core {
    cfg: Arc<Config>,
    tree: DataTree,
    watches: WatchManager,
    sessions: HashMap<SessionId, Session>,
    expiry: ExpiryQueue,
    conns: HashMap<ConnId, Conn>,
    passwords: Passwords,
    next_session: SessionId,
    next_sweep_ms: u64,
    changes: Vec<Change>,
    fired: Vec<Fired>,
    /// This turn's output, released at its end by the log (`log::Core::end_turn`).
    out: Vec<Delivery>,
    /// Where txns go: the standalone log or the ensemble's (`log.rs`).
    log: Log,
    layout: Layout,
    durable: Durable,
    stats: Arc<super::stats::ServerStats>,
    /// The read view connections answer plain reads from (see `view`).
    views: super::view::Publisher,
    /// SASL GSSAPI logins: the server's Kerberos credential (see `set_kerberos`).
    kerberos: Option<Arc<crate::security::gssapi::Kerberos>>,
}

/// Messages handled per turn before the turn's output is committed.
const MAX_TURN: usize = 4096;

fn wall_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

impl Core {
    /// A core over a recovered tree. Sessions found in it get a fresh full timeout to come back.
    pub fn new(
        cfg: Arc<Config>,
        tree: DataTree,
        secret: [u8; 32],
        log: Log,
        durable: Durable,
        stats: Arc<super::stats::ServerStats>,
        views: Arc<super::view::Views>,
    ) -> Core {
        let mut tree = tree;
        if log.keeps_digest() {
            // Members compare digests: keep it from the start (one walk now, O(1) per txn after).
            tree.digest();
        }
        let mut expiry = ExpiryQueue::new(cfg.tick_time_ms as u64);
        let mut sessions = HashMap::new();
        let mut next_session = initial_session_id(wall_ms(), cfg.server_id);
        // A recovered session gets a full timeout from now, as ZooKeeper's SessionTrackerImpl
        // touches each session it loads: time spent loading the data must not expire them.
        let now = crate::session::mono_ms();
        for (id, info) in tree.sessions() {
            expiry.touch(*id, now, info.timeout_ms as u64);
            sessions.insert(*id, Session { timeout_ms: info.timeout_ms, conn: None, ids: Vec::new() });
            if (*id as u64) >> 56 == cfg.server_id as u64 {
                next_session = next_session.max(id + 1);
            }
        }
        Core {
            expiry,
            next_sweep_ms: cfg.container_check_interval_ms,
            layout: Layout::new(&cfg),
            cfg,
            tree,
            watches: WatchManager::default(),
            sessions,
            conns: HashMap::new(),
            passwords: Passwords::new(secret),
            next_session,
            changes: Vec::new(),
            fired: Vec::new(),
            out: Vec::new(),
            log,
            durable,
            stats,
            views: super::view::Publisher::new(views),
            kerberos: None,
        }
    }

    pub fn config(&self) -> &Arc<Config> {
        &self.cfg
    }

    /// Clients log in with SASL GSSAPI as this credential (the server's JAAS login is Kerberos).
    pub fn set_kerberos(&mut self, kerberos: Arc<crate::security::gssapi::Kerberos>) {
        self.kerberos = Some(kerberos);
    }

    /// Runs until every sender is gone. Blocking: call on a dedicated thread. Each turn handles
    /// what is queued (up to `MAX_TURN` messages), then hands its log records and output to the
    /// committer, so one fsync covers every write of the turn.
    pub fn run(mut self, mut rx: mpsc::Receiver<CoreMsg>) {
        while let Some(msg) = rx.blocking_recv() {
            self.handle(msg);
            for _ in 1..MAX_TURN {
                match rx.try_recv() {
                    Ok(m) => self.handle(m),
                    Err(_) => break,
                }
            }
            self.end_turn();
        }
        self.end_turn();
        self.snapshot_at_shutdown();
    }

    fn now_ms(&self) -> u64 {
        crate::session::mono_ms()
    }

    pub fn handle(&mut self, msg: CoreMsg) {
        match msg {
            CoreMsg::Connect { conn, req } => self.connect(conn, req),
            CoreMsg::Request { conn, req } => self.request(conn, req),
            CoreMsg::UnknownOp { conn, xid } => {
                // UnimplementedRequestProcessor: reply Unimplemented with the request's unset zxid
                // (-1), then close the connection.
                let header = ReplyHeader { xid, zxid: -1, err: ErrorCode::Unimplemented.code() };
                self.send(conn, Outbound::Reply(header, Response::Empty));
                self.close_conn(conn);
            }
            CoreMsg::Disconnected { conn } => self.drop_conn(conn),
            CoreMsg::Tick => self.tick(),
            CoreMsg::Snapshot => self.snapshot_in_background(),
            CoreMsg::SnapshotCopy(tx) => {
                let _ = tx.send(self.snapshot_copy());
            }
            CoreMsg::Restore { tree, last_processed, raw, reply } => match &self.log {
                Log::Replicated(_) => self.propose_restore(raw, reply),
                _ => _ = reply.send(self.restore(*tree, last_processed)),
            },
            CoreMsg::Apply { entries, done } => {
                self.apply_committed(entries);
                let _ = done.send(());
            }
            CoreMsg::Replication(m) => self.replication(m),
            CoreMsg::Zab(up) => self.observed(up),
            CoreMsg::Stats(tx) => {
                let _ = tx.send(CoreStats {
                    znodes: self.tree.node_count() + 1,
                    ephemerals: self.tree.ephemeral_count(),
                    watches: self.watches.count(),
                    sessions: self.sessions.len(),
                    connections: self.conns.len(),
                    last_zxid: self.tree.last_zxid(),
                    data_size: self.tree.data_size(),
                    digest: self.log.keeps_digest().then(|| self.tree.digest()),
                    digest_mismatches: self.observer_digests().map_or(0, |(_, m)| m),
                });
            }
            CoreMsg::Inspect(tx) => {
                self.catch_up_pings();
                let _ = tx.send(self.inspect());
            }
            CoreMsg::AclOf(path, tx) => {
                let _ = tx.send(self.tree.get(&path).map(|n| n.acl.to_vec()));
            }
        }
    }

    fn inspect(&self) -> Inspection {
        let offset = wall_ms() - self.now_ms() as i64;
        let expiry: Vec<(i64, Vec<SessionId>)> =
            self.expiry.buckets().into_iter().map(|(due, ids)| (offset + due as i64, ids)).collect();
        let mut sessions = HashMap::new();
        for (due, ids) in &expiry {
            for id in ids {
                let timeout = self.sessions.get(id).map_or(0, |s| s.timeout_ms);
                sessions.insert(*id, (timeout, *due));
            }
        }
        let mut ephemerals: Vec<(SessionId, Vec<String>)> = self
            .tree
            .sessions()
            .keys()
            .map(|sid| {
                let mut paths = self.tree.ephemerals_of(*sid);
                paths.sort();
                (*sid, paths)
            })
            .filter(|(_, p)| !p.is_empty())
            .collect();
        ephemerals.sort();
        let conn_sessions: HashMap<ConnId, SessionId> =
            self.conns.iter().filter_map(|(id, c)| c.session.map(|s| (*id, s))).collect();
        let mut watches: Vec<(SessionId, Vec<String>)> = self
            .watches
            .data_by_watcher()
            .into_iter()
            .filter_map(|(conn, paths)| conn_sessions.get(&conn).map(|sid| (*sid, paths)))
            .collect();
        watches.sort();
        Inspection {
            expiry,
            expiry_interval_ms: self.expiry.interval(),
            ephemerals,
            watches,
            watch_summary: self.watches.data_summary(),
            conn_sessions,
            sessions,
        }
    }

    /// Applies one txn to the tree and sends the watch events it fires.
    fn apply_txn(&mut self, txn: &Txn) -> OpOutcome {
        self.views.withdraw();
        self.changes.clear();
        let outcome = match &mut self.log {
            // ZooKeeper's digest follows the tree, to be checked against the leader's.
            Log::Observer(o) => o.digest.apply(&mut self.tree, txn, &mut self.changes),
            _ => self.tree.apply(txn, &mut self.changes),
        };
        self.fire_watches(txn.zxid);
        outcome
    }

    /// Sends the watch events `self.changes` fire, as of a txn at `zxid`, to the watchers that
    /// may read the node.
    fn fire_watches(&mut self, zxid: Zxid) {
        self.fired.clear();
        self.watches.trigger(&self.changes, &mut self.fired);
        let fired = std::mem::take(&mut self.fired);
        for f in &fired {
            if !self.may_read(f) {
                continue;
            }
            let ev = WatcherEvent { event_type: f.event as i32, state: STATE_SYNC_CONNECTED, path: f.path.clone() };
            self.send(f.watcher, Outbound::Event(zxid, ev));
        }
        self.fired = fired;
    }

    /// Queues a message for a connection. It leaves when the turn is committed: after the
    /// fsync of every txn the turn logged, so no client sees a change that is not durable.
    fn send(&mut self, conn: ConnId, msg: Outbound) {
        let Some(c) = self.conns.get(&conn) else { return };
        self.out.push(Delivery {
            conn,
            peer: c.handle.peer,
            tx: c.handle.tx.clone(),
            cancel: c.handle.cancel.clone(),
            queued: c.handle.queued.clone(),
            gate: c.handle.gate.clone(),
            msg,
        });
    }

    /// Queues a close after what is already queued.
    fn close_conn(&mut self, conn: ConnId) {
        self.send(conn, Outbound::Close);
        self.drop_conn(conn);
    }

    /// Closes a connection at once, dropping what is queued for it: the connection of a session
    /// that expired or was closed elsewhere. ZooKeeper closes such a socket without flushing, and
    /// a client that stopped reading must not keep it open behind a full socket buffer.
    fn abort_conn(&mut self, conn: ConnId) {
        if let Some(c) = self.conns.get(&conn) {
            c.handle.cancel.cancel();
        }
        self.drop_conn(conn);
    }

    /// Forgets a connection: its watches go, its session stays until it expires.
    fn drop_conn(&mut self, conn: ConnId) {
        let Some(c) = self.conns.remove(&conn) else {
            return;
        };
        self.watches.remove_watcher(conn);
        if let Some(sid) = c.session {
            if let Some(s) = self.sessions.get_mut(&sid) {
                if s.conn == Some(conn) {
                    // Pings the connection answered itself count until the end: the session is
                    // due `timeout` after the last one, as in ZooKeeper, not at its stale bucket.
                    let heard = c.handle.last_heard.load(Ordering::Acquire);
                    if heard != 0 {
                        self.expiry.extend(sid, heard, s.timeout_ms as u64);
                    }
                    s.conn = None;
                }
            }
        }
    }

    fn reply(&mut self, conn: ConnId, xid: i32, result: Result<Response, ErrorCode>) {
        let zxid = self.tree.last_zxid();
        let (err, body) = match result {
            Ok(r) => (0, r),
            Err(e) => (e.code(), Response::Empty),
        };
        self.send(conn, Outbound::Reply(ReplyHeader { xid, zxid, err }, body));
    }

    fn request(&mut self, conn: ConnId, req: Request) {
        if self.log.pipelines() {
            let holding = self.log.holding_conns();
            let Some(c) = self.conns.get_mut(&conn) else { return };
            if c.in_flight > 0 || !c.queue.is_empty() || (holding && !c.read_only) {
                // Behind a proposal of the same connection, or waiting for a new leader:
                // answered in order, after it.
                c.queue.push_back(req);
                return;
            }
        }
        self.serve_next(conn, req);
    }

    /// Serves one request of the connection; a barrier that is now in flight holds the rest.
    fn serve_next(&mut self, conn: ConnId, req: Request) {
        let barrier = is_barrier(&req);
        self.serve(conn, req);
        if barrier {
            if let Some(c) = self.conns.get_mut(&conn) {
                c.barrier = c.in_flight > 0;
            }
        }
    }

    fn serve(&mut self, conn: ConnId, req: Request) {
        let Some(sid) = self.conns.get(&conn).and_then(|c| c.session) else {
            return;
        };
        let Some(session) = self.sessions.get(&sid) else {
            self.close_conn(conn);
            return;
        };
        if session.conn != Some(conn) {
            // The session moved to another connection (ZooKeeper's SessionMoved): drop this one.
            self.close_conn(conn);
            return;
        }
        let timeout = session.timeout_ms as u64;
        self.expiry.touch(sid, self.now_ms(), timeout);
        self.log.touched(sid);
        // Read-only sessions exist only in an ensemble: standalone skips the lookup.
        if self.log.replicated().is_some() && self.serve_read_only(conn, sid, &req) {
            return;
        }
        if self.refused_unauthenticated(conn, sid, &req) {
            return;
        }
        let xid = req.xid;
        let op = req.op;
        match req.body {
            RequestBody::Empty if op == OpCode::Ping => {
                let zxid = self.tree.last_zxid();
                self.send(conn, Outbound::Reply(ReplyHeader { xid: xid::PING, zxid, err: 0 }, Response::Empty));
            }
            RequestBody::Empty if op == OpCode::CloseSession => self.submit(conn, sid, Submit::Close { xid }),
            RequestBody::Empty => {
                // whoAmI
                let ids = ids_of(&self.sessions, sid);
                let infos = ids.iter().map(|i| (i.scheme.clone(), client_user(i))).collect();
                self.reply(conn, xid, Ok(Response::WhoAmI(infos)));
            }
            RequestBody::Auth { scheme, auth, .. } => self.auth(conn, sid, xid, &scheme, auth.as_deref()),
            RequestBody::Multi(ops) if op != OpCode::Multi => {
                let ids = ids_of(&self.sessions, sid);
                let r = Reader { ids, watcher: conn };
                let res = reads::multi_read(&self.tree, &r, &ops);
                self.reply(conn, xid, res);
            }
            body @ (RequestBody::Create(_)
            | RequestBody::Delete { .. }
            | RequestBody::SetData { .. }
            | RequestBody::SetAcl { .. }
            | RequestBody::Multi(_)
            | RequestBody::Reconfig { .. }) => self.submit(conn, sid, Submit::Write { xid, op, body }),
            RequestBody::PathWatch { path, watch } => {
                let ids = ids_of(&self.sessions, sid);
                let r = Reader { ids, watcher: conn };
                let (t, w) = (&self.tree, watch.then_some(&mut self.watches));
                let res = match op {
                    OpCode::Exists => reads::exists(t, w, &r, &path),
                    OpCode::GetData => reads::get_data(t, w, &r, &path),
                    OpCode::GetChildren => reads::get_children(t, w, &r, &path, false),
                    _ => reads::get_children(t, w, &r, &path, true),
                };
                self.reply(conn, xid, res);
            }
            RequestBody::Path { path } if op == OpCode::Sync => self.submit(conn, sid, Submit::Sync { xid, path }),
            RequestBody::Path { path } => {
                let ids = ids_of(&self.sessions, sid);
                let r = Reader { ids, watcher: conn };
                let res = match op {
                    OpCode::GetAcl => reads::get_acl(&self.tree, &r, &path),
                    OpCode::GetAllChildrenNumber => reads::all_children_number(&self.tree, &r, &path),
                    OpCode::GetEphemerals => Ok(reads::ephemerals(&self.tree, sid, &path)),
                    // (sync is the log's: `Submit::Sync` above)
                    _ => Err(ErrorCode::Unimplemented),
                };
                self.reply(conn, xid, res);
            }
            RequestBody::Check { path, version } => {
                let ids = ids_of(&self.sessions, sid);
                let r = Reader { ids, watcher: conn };
                let res = reads::check(&self.tree, &r, &path, version);
                self.reply(conn, xid, res);
            }
            RequestBody::Watches { path, watcher_type } => {
                let ids = ids_of(&self.sessions, sid);
                let r = Reader { ids, watcher: conn };
                let res = reads::watches(&mut self.watches, &r, &path, watcher_type, op == OpCode::RemoveWatches);
                self.reply(conn, xid, res);
            }
            RequestBody::SetWatches(sw) => {
                self.set_watches(conn, &sw);
                self.reply(conn, xid, Ok(Response::Empty));
            }
            RequestBody::AddWatch { path, mode } => {
                let res = match mode {
                    0 | 1 => {
                        self.watches.add_persistent(&path, conn, mode == 1);
                        Ok(Response::ErrorBody(0))
                    }
                    // WatcherMode.fromZooAddWatchMode throws; FinalRequestProcessor answers MarshallingError.
                    _ => Err(ErrorCode::MarshallingError),
                };
                self.reply(conn, xid, res);
            }
            RequestBody::Sasl { token } => self.sasl(conn, sid, xid, token.as_deref().unwrap_or(&[])),
        }
    }
}

/// Requests that wait behind proposals (an ensemble member's, an observer's forwards).
impl Core {
    /// One of the connection's proposals is answered: serve what queued behind it.
    fn finish(&mut self, conn: ConnId) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.in_flight = c.in_flight.saturating_sub(1);
            // A barrier is served only with nothing else in flight, and nothing is served
            // behind it: the answer that brings the count to zero is the barrier's.
            c.barrier &= c.in_flight > 0;
        }
        self.serve_queued(conn);
    }

    /// Serves what queued on a connection, up to the first request that must wait.
    fn serve_queued(&mut self, conn: ConnId) {
        let holding = self.log.holding_conns();
        loop {
            let Some(c) = self.conns.get_mut(&conn) else { return };
            if (holding && !c.read_only) || c.barrier {
                return;
            }
            let Some(front) = c.queue.front() else { return };
            // Writes pipeline (they reach the log in order); a read or a barrier waits for all
            // of them.
            if c.in_flight > 0 && !pipelines(front) {
                return;
            }
            let Some(req) = c.queue.pop_front() else { return };
            self.serve_next(conn, req);
        }
    }
}

/// True for a request that may be served while the connection's earlier proposals are in
/// flight: a write that is answered in log order, so its answer cannot overtake theirs.
fn pipelines(req: &Request) -> bool {
    matches!(
        req.body,
        RequestBody::Create(_) | RequestBody::Delete { .. } | RequestBody::SetData { .. } | RequestBody::SetAcl { .. }
    ) || req.op == OpCode::Multi
        || req.op == OpCode::CloseSession
}

/// True for a request answered outside the log's order: a sync (answered when this server has
/// applied the leader's commit point, which may lie before the connection's own pending
/// writes) and a reconfig (answered when the leader finished it). It waits for every earlier
/// request of its connection and holds every later one until it is answered, so a session's
/// replies leave in the order it sent them, as ZooKeeper sends them (kazoo drops the connection
/// on "xids do not match", the Java client on "Xid out of order").
fn is_barrier(req: &Request) -> bool {
    req.op == OpCode::Sync || matches!(req.body, RequestBody::Reconfig { .. })
}

/// A session's identities, borrowed from the session table only, so that the tree and the watch
/// tables stay free to borrow on the same request (no copy per request).
pub(in crate::server::core) fn ids_of(sessions: &HashMap<SessionId, Session>, sid: SessionId) -> &[Id] {
    sessions.get(&sid).map_or(&[], |s| s.ids.as_slice())
}

/// whoAmI's user: the digest user name without its hash, the address for ip.
/// `AuthUtil.getUser` asks the scheme's provider; `super` has none, so its user is "".
fn client_user(id: &Id) -> String {
    match id.scheme.as_str() {
        "digest" => id.id.split(':').next().unwrap_or("").to_owned(),
        "super" => String::new(),
        _ => id.id.clone(),
    }
}
