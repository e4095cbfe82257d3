//! The core as an ensemble member: writes are proposed to the Raft log and answered when this
//! member applies them; reads are answered from the local tree, in order behind the
//! connection's own proposals; sessions are global.
//!
//! Owns what is runtime-only in an ensemble: the proposals waiting for their entry, the
//! member's role, the sessions touched here that the leader must hear of, and the sync points.
//! It never talks to the network itself: proposals leave through `Proposal`, and what the Raft
//! side learns comes back as `ReplMsg` (ZooKeeper's split between the request processors and
//! the Learner/Leader threads).
//!
//! The rules it keeps (ZooKeeper's, `FollowerRequestProcessor` / `CommitProcessor`):
//! - a connection's requests are answered in order: anything after a proposal waits for it;
//! - a proposal whose fate is unknown (its leader changed, its forward stream broke) closes its
//!   connection, so the client sees ConnectionLoss and re-attaches, exactly as when a ZooKeeper
//!   follower loses its leader;
//! - only the leader expires sessions and reaps containers, through the log; a new leader gives
//!   every session a full timeout;
//! - a member with no leader serves nobody.

use super::*;
use crate::raft::command::{Command, CommandOp, Origin};
use crate::raft::members::ServerSpec;
use crate::raft::types::{epoch_start, next_zxid, zxid_of, LogId, Membership};
use std::collections::HashSet;

/// A committed log entry, as the core applies it.
#[derive(Debug)]
pub struct Committed {
    pub log_id: LogId,
    pub payload: CommittedPayload,
}

#[derive(Debug)]
pub enum CommittedPayload {
    /// A batch of commands, each its own txn with its own zxid, in order.
    Commands(Vec<Command>),
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
        plan: crate::raft::reconfig::Plan,
    },
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
            ReplMsg::Role { role, leader, term } => write!(f, "Role({role:?}, {leader:?}, {term})"),
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

/// A proposal of this member waiting for its entry to be applied here.
#[derive(Debug)]
enum Waiting {
    Session { conn: ConnId, timeout: i32, ids: Vec<Id> },
    Write { conn: ConnId, xid: i32 },
    Close { conn: ConnId, xid: i32 },
    Sync { conn: ConnId, xid: i32, path: String },
    Reconfig { conn: ConnId, xid: i32 },
}

impl Waiting {
    fn conn(&self) -> ConnId {
        match self {
            Waiting::Session { conn, .. }
            | Waiting::Write { conn, .. }
            | Waiting::Close { conn, .. }
            | Waiting::Sync { conn, .. }
            | Waiting::Reconfig { conn, .. } => *conn,
        }
    }
}

/// The core's ensemble state.
pub struct Replicated {
    me: u64,
    out: mpsc::UnboundedSender<Proposal>,
    next_seq: u64,
    waiting: HashMap<u64, Waiting>,
    role: Role,
    leader: Option<u64>,
    term: u64,
    /// Sessions that sent a request here since the last report to the leader.
    touched: HashSet<SessionId>,
    next_report_ms: u64,
    applied: Option<LogId>,
    membership: Membership,
    /// Syncs waiting for this member to apply up to an index: (index, seq).
    syncs: Vec<(u64, u64)>,
    /// Leader: sessions whose expiry is proposed, paths whose reaping is.
    closing: HashSet<SessionId>,
    reaping: HashSet<String>,
    /// Read-only mode is on (`readonlymode.enabled`).
    read_only_enabled: bool,
    /// Sessions created while read-only: local to this member, gone when it rejoins a quorum.
    ro_sessions: HashSet<SessionId>,
    /// Handshakes that came while there was no leader, with when they came: answered once
    /// there is one, refused after `hold_ms`.
    pub(super) held: Vec<(ConnId, crate::proto::ConnectRequest, u64)>,
    pub(super) hold_ms: u64,
}

impl Replicated {
    /// `first_seq`: where this run's proposal numbers start, above every earlier run's
    /// (`crate::raft::first_seq`), so an entry of an earlier run never answers a client of this one.
    pub fn new(
        me: u64,
        out: mpsc::UnboundedSender<Proposal>,
        first_seq: u64,
        applied: Option<LogId>,
        membership: Membership,
    ) -> Replicated {
        Replicated {
            me,
            out,
            next_seq: first_seq,
            waiting: HashMap::new(),
            role: Role::Looking,
            leader: None,
            term: 0,
            touched: HashSet::new(),
            next_report_ms: 0,
            applied,
            membership,
            syncs: Vec::new(),
            closing: HashSet::new(),
            reaping: HashSet::new(),
            read_only_enabled: false,
            ro_sessions: HashSet::new(),
            held: Vec::new(),
            hold_ms: 0,
        }
    }

    /// Turns read-only mode on (ZooKeeper's `readonlymode.enabled`).
    pub fn with_read_only(mut self, enabled: bool) -> Replicated {
        self.read_only_enabled = enabled;
        self
    }

    /// How long a handshake that comes while there is no leader waits for one before it is
    /// refused (0: refused at once).
    pub fn with_handshake_hold(mut self, ms: u64) -> Replicated {
        self.hold_ms = ms;
        self
    }

    pub fn read_only_enabled(&self) -> bool {
        self.read_only_enabled
    }

    /// A member serves clients only while it has a leader.
    pub fn serving(&self) -> bool {
        self.role != Role::Looking
    }

    pub fn touched(&mut self, sid: SessionId) {
        if self.role != Role::Leader {
            self.touched.insert(sid);
        }
    }

    fn applied_index(&self) -> u64 {
        self.applied.map_or(0, |l| l.index)
    }
}

/// True for a request that becomes a proposal (the ones later reads must wait for).
fn is_proposal(req: &Request) -> bool {
    matches!(
        req.body,
        RequestBody::Create(_)
            | RequestBody::Delete { .. }
            | RequestBody::SetData { .. }
            | RequestBody::SetAcl { .. }
            | RequestBody::Reconfig { .. }
    ) || req.op == OpCode::Multi
        || req.op == OpCode::CloseSession
        || req.op == OpCode::Sync
}

impl Core {
    fn repl(&mut self) -> Option<&mut Replicated> {
        self.repl.as_deref_mut()
    }

    /// Sends a command to the log. With a waiter, the connection's later requests queue behind it.
    fn propose(&mut self, session: SessionId, op: CommandOp, waiting: Option<Waiting>) {
        let conn = waiting.as_ref().map(Waiting::conn);
        let Some(r) = self.repl.as_deref_mut() else { return };
        let seq = match waiting {
            Some(w) => {
                r.next_seq += 1;
                r.waiting.insert(r.next_seq, w);
                r.next_seq
            }
            None => 0,
        };
        let cmd = Command { origin: Origin { member: r.me, seq }, time: wall_ms(), session, op };
        let sent = r.out.send(Proposal::Command(cmd)).is_ok();
        if let Some(c) = conn.and_then(|c| self.conns.get_mut(&c)) {
            c.in_flight += 1;
        }
        if !sent {
            self.fail(seq);
        }
    }

    pub(super) fn propose_session(&mut self, conn: ConnId, sid: SessionId, timeout: i32) {
        let Some(c) = self.conns.get(&conn) else { return };
        let ids = crate::authinfo::from_added(
            std::iter::once(Id::new("ip", &c.handle.peer.to_string())).chain(c.handle.tls_ids.iter().cloned()),
        );
        let password = self.passwords.for_session(sid);
        let w = Waiting::Session { conn, timeout, ids };
        self.propose(sid, CommandOp::CreateSession { timeout_ms: timeout, password }, Some(w));
    }

    pub(super) fn propose_request(&mut self, conn: ConnId, sid: SessionId, xid: i32, op: OpCode, body: RequestBody) {
        let ids = ids_of(&self.sessions, sid).to_vec();
        let (ttl_enabled, enforce_quota) = (self.cfg.ttl_enabled, self.cfg.enforce_quota);
        let cmd = CommandOp::Request { ids, ttl_enabled, enforce_quota, op, body };
        self.propose(sid, cmd, Some(Waiting::Write { conn, xid }));
    }

    pub(super) fn propose_close(&mut self, conn: ConnId, sid: SessionId, xid: i32) {
        self.propose(sid, CommandOp::CloseSession, Some(Waiting::Close { conn, xid }));
    }

    pub(super) fn propose_sync(&mut self, conn: ConnId, xid: i32, path: String) {
        let Some(r) = self.repl.as_deref_mut() else { return };
        r.next_seq += 1;
        let seq = r.next_seq;
        r.waiting.insert(seq, Waiting::Sync { conn, xid, path });
        let sent = r.out.send(Proposal::ReadIndex { seq }).is_ok();
        if let Some(c) = self.conns.get_mut(&conn) {
            c.in_flight += 1;
        }
        if !sent {
            self.fail(seq);
        }
    }

    /// A proposal that will not be answered: its connection closes (ConnectionLoss).
    fn fail(&mut self, seq: u64) {
        let Some(w) = self.repl().and_then(|r| r.waiting.remove(&seq)) else { return };
        let conn = w.conn();
        tracing::info!(conn, "closing connection: its request's fate is unknown (leader change or lost link)");
        self.close_conn(conn);
    }

    fn fail_all(&mut self) {
        let seqs: Vec<u64> = self.repl().map(|r| r.waiting.keys().copied().collect()).unwrap_or_default();
        for seq in seqs {
            self.fail(seq);
        }
        if let Some(r) = self.repl() {
            r.syncs.clear();
        }
    }

    /// One of the connection's proposals is answered: serve what queued behind it.
    fn finish(&mut self, conn: ConnId) {
        if let Some(c) = self.conns.get_mut(&conn) {
            c.in_flight = c.in_flight.saturating_sub(1);
        }
        loop {
            let Some(c) = self.conns.get_mut(&conn) else { return };
            let Some(front) = c.queue.front() else { return };
            // Writes pipeline (they reach the log in order); a read waits for all of them.
            if c.in_flight > 0 && !is_proposal(front) {
                return;
            }
            let Some(req) = c.queue.pop_front() else { return };
            self.serve(conn, req);
        }
    }

    /// Applies committed entries in log order.
    pub(super) fn apply_committed(&mut self, entries: Vec<Committed>) {
        for e in entries {
            match e.payload {
                CommittedPayload::Commands(cmds) => {
                    for cmd in cmds {
                        let zxid = next_zxid(self.tree.last_zxid(), &e.log_id);
                        self.apply_command(zxid, cmd);
                        self.advance_zxid(zxid);
                    }
                }
                CommittedPayload::Membership(m) => {
                    let zxid = next_zxid(self.tree.last_zxid(), &e.log_id);
                    self.apply_membership(zxid, &m);
                    self.advance_zxid(zxid);
                    if let Some(r) = self.repl() {
                        r.membership = m;
                    }
                }
                CommittedPayload::Blank => self.advance_zxid(epoch_start(&e.log_id)),
            }
            if let Some(r) = self.repl() {
                r.applied = Some(e.log_id);
            }
        }
        self.durable.store(self.tree.last_zxid(), Ordering::Release);
        self.release_syncs();
    }

    /// Every applied txn moves the tree's zxid to its own, failed ones too (as ZooKeeper's
    /// error txns do), so the next one numbers after it.
    fn advance_zxid(&mut self, zxid: Zxid) {
        if zxid > self.tree.last_zxid() {
            self.tree.set_last_zxid(zxid);
        }
    }

    /// The version of the ensemble's configuration: its log position as a zxid (term, index),
    /// so 0 for the configuration an ensemble starts with, as ZooKeeper's static config has
    /// version 0, and increasing with every reconfig (ZooKeeper's is the reconfig's zxid;
    /// clients only compare it and send it back as `fromConfig`).
    fn config_version(m: &Membership) -> Zxid {
        m.log_id().map_or(0, |l| zxid_of(&l))
    }

    /// `/zookeeper/config` follows the membership (QuorumPeer writes it on every change).
    fn apply_membership(&mut self, zxid: Zxid, m: &Membership) {
        let text = config_text(m, Self::config_version(m));
        let version = self.tree.get("/zookeeper/config").map_or(0, |n| n.stat.version + 1);
        let op = TxnOp::SetData { path: "/zookeeper/config".into(), data: Some(text.into()), version };
        // Membership entries carry no time: mtime 0 keeps every member's tree the same.
        self.apply_txn(&Txn { zxid, time: 0, session: 0, op });
        self.write_config_files(Self::config_version(m), m);
    }

    /// With `reconfigEnabled=true`, zoo.cfg and its dynamic file follow the membership, as
    /// ZooKeeper's processReconfig writes them (see `raft::config_file`). A failure is logged,
    /// not fatal, as in ZooKeeper.
    fn write_config_files(&self, zxid: Zxid, m: &Membership) {
        let Some(ens) = self.cfg.ensemble.as_ref().filter(|e| e.reconfig_enabled) else { return };
        let Some(file) = ens.config_file.as_deref() else { return };
        // openraft changes membership through a joint configuration, which ZooKeeper has no
        // file for: only the configuration it settles on is written.
        if m.membership().get_joint_config().len() > 1 {
            return;
        }
        let members = members_of(m);
        match crate::raft::config_file::rewrite(file, zxid, members.iter().map(|(id, s)| (*id, s)), ens.my_id) {
            Ok(Some(dynamic)) => {
                tracing::info!(config = %file.display(), dynamic = %dynamic.display(), "configuration files rewritten for the new membership")
            }
            Ok(None) => {}
            Err(e) => tracing::error!(config = %file.display(), "cannot rewrite the configuration files: {e}"),
        }
    }

    fn apply_command(&mut self, zxid: Zxid, cmd: Command) {
        let me = self.repl.as_ref().map_or(0, |r| r.me);
        let waiting = match (cmd.origin.member == me, cmd.origin.seq) {
            (true, seq) if seq != 0 => self.repl().and_then(|r| r.waiting.remove(&seq)),
            _ => None,
        };
        let sid = cmd.session;
        let txn = |op| Txn { zxid, time: cmd.time, session: sid, op };
        match cmd.op {
            CommandOp::CreateSession { timeout_ms, password } => {
                self.apply_txn(&txn(TxnOp::CreateSession { timeout_ms, password: Some(password) }));
                self.sessions.entry(sid).or_insert(Session { timeout_ms, conn: None, ids: Vec::new() });
                if self.repl.as_ref().is_some_and(|r| r.role == Role::Leader) {
                    self.expiry.touch(sid, self.now_ms(), timeout_ms as u64);
                }
                if let Some(Waiting::Session { conn, timeout, ids }) = waiting {
                    if self.conns.contains_key(&conn) {
                        if let Some(s) = self.sessions.get_mut(&sid) {
                            s.conn = Some(conn);
                            s.ids = ids;
                        }
                        tracing::debug!(session = format!("0x{sid:x}"), timeout, "session created");
                        self.attached(conn, sid, timeout);
                        self.finish(conn);
                    }
                }
            }
            CommandOp::CloseSession => {
                let had = self.sessions.remove(&sid);
                self.expiry.remove(sid);
                if let Some(r) = self.repl() {
                    r.closing.remove(&sid);
                }
                self.apply_txn(&txn(TxnOp::CloseSession));
                match waiting {
                    Some(Waiting::Close { conn, xid }) => {
                        self.send(conn, Outbound::Reply(ReplyHeader { xid, zxid, err: 0 }, Response::Empty));
                        self.close_conn(conn);
                    }
                    _ => {
                        // Expired by the leader, or closed through another member.
                        if let Some(c) = had.and_then(|s| s.conn) {
                            tracing::info!(session = format!("0x{sid:x}"), "session expired");
                            self.abort_conn(c);
                        }
                    }
                }
            }
            CommandOp::Request { ids, ttl_enabled, enforce_quota, op, body } => {
                let prepared = if self.tree.sessions().contains_key(&sid) {
                    let ctx = prep::PrepCtx { session: sid, ids: &ids, ttl_enabled, enforce_quota };
                    prep::prepare_request(&self.tree, &ctx, op, &body)
                } else {
                    // PrepRequestProcessor.checkSession: the session expired before its write.
                    TxnOp::Error(ErrorCode::SessionExpired)
                };
                let outcome = self.apply_txn(&txn(prepared));
                if let Some(Waiting::Write { conn, xid }) = waiting {
                    self.reply(conn, xid, super::writes::write_response(op, &body, outcome));
                    self.finish(conn);
                }
            }
            CommandOp::Reap { path } => {
                let op = prep::prepare_reap(&self.tree, &path).unwrap_or(TxnOp::Error(ErrorCode::NoNode));
                self.apply_txn(&txn(op));
                if let Some(r) = self.repl() {
                    r.reaping.remove(&path);
                }
            }
        }
    }

    /// Answers the syncs whose point this member has applied.
    fn release_syncs(&mut self) {
        let Some(r) = self.repl.as_deref_mut() else { return };
        let applied = r.applied_index();
        let mut ready = Vec::new();
        r.syncs.retain(|(index, seq)| {
            if *index <= applied {
                ready.push(*seq);
                false
            } else {
                true
            }
        });
        for seq in ready {
            self.answer_sync(seq);
        }
    }

    /// Answers a sync, or a reconfig, whose point this member has applied.
    fn answer_sync(&mut self, seq: u64) {
        match self.repl().and_then(|r| r.waiting.remove(&seq)) {
            Some(Waiting::Sync { conn, xid, path }) => {
                self.reply(conn, xid, Ok(Response::Path(path)));
                self.finish(conn);
            }
            Some(Waiting::Reconfig { conn, xid }) => {
                // ReconfigRequest's answer: the new configuration's data and Stat.
                let res = match self.tree.get("/zookeeper/config") {
                    Some(n) => Ok(Response::GetData { data: n.data.clone(), stat: n.wire_stat() }),
                    None => Err(ErrorCode::SystemError),
                };
                self.reply(conn, xid, res);
                self.finish(conn);
            }
            _ => {}
        }
    }

    /// `reconfig` on an ensemble with reconfigEnabled: checked here in PrepRequestProcessor's order
    /// (syntax, the `fromConfig` version, then WRITE on /zookeeper/config, which only super
    /// has; kazoo's TestReconfig pins that order), carried out by the leader.
    pub(super) fn propose_reconfig(&mut self, conn: ConnId, sid: SessionId, xid: i32, body: &RequestBody) {
        let RequestBody::Reconfig { joining, leaving, new_members, cur_config_id } = body else { return };
        let Some(r) = self.repl.as_deref() else { return };
        let current = r.membership.clone();
        let planned =
            crate::raft::reconfig::plan(joining.as_deref(), leaving.as_deref(), new_members.as_deref(), &current);
        let plan = match planned {
            Ok(p) => p,
            Err(e) => return self.reply(conn, xid, Err(e)),
        };
        let version = Self::config_version(&current);
        if *cur_config_id != -1 && *cur_config_id != version {
            return self.reply(conn, xid, Err(ErrorCode::BadVersion));
        }
        let allowed = self
            .tree
            .get("/zookeeper/config")
            .is_some_and(|n| acl::allows(&n.acl, crate::proto::perms::WRITE, ids_of(&self.sessions, sid)));
        if !allowed {
            return self.reply(conn, xid, Err(ErrorCode::NoAuth));
        }
        let Some(r) = self.repl.as_deref_mut() else { return };
        r.next_seq += 1;
        let seq = r.next_seq;
        r.waiting.insert(seq, Waiting::Reconfig { conn, xid });
        tracing::info!(?plan, "reconfig");
        let sent = r.out.send(Proposal::Reconfig { seq, plan }).is_ok();
        if let Some(c) = self.conns.get_mut(&conn) {
            c.in_flight += 1;
        }
        if !sent {
            self.fail(seq);
        }
    }

    pub(super) fn replication(&mut self, msg: ReplMsg) {
        match msg {
            ReplMsg::Role { role, leader, term } => self.role_changed(role, leader, term),
            ReplMsg::ProposalFailed { seq } => self.fail(seq),
            ReplMsg::ForwardLost => {
                if self.repl.as_ref().is_some_and(|r| r.role != Role::Leader) {
                    self.fail_all();
                }
            }
            ReplMsg::ReadIndex { seq, index: None } => self.fail(seq),
            ReplMsg::ReconfigDone { seq, result: Err(None) } => self.fail(seq),
            ReplMsg::ReconfigDone { seq, result: Err(Some(code)) } => {
                if let Some(Waiting::Reconfig { conn, xid }) = self.repl().and_then(|r| r.waiting.remove(&seq)) {
                    self.reply(conn, xid, Err(code));
                    self.finish(conn);
                }
            }
            ReplMsg::ReconfigDone { seq, result: Ok(index) } => {
                let Some(r) = self.repl() else { return };
                if index <= r.applied_index() {
                    self.answer_sync(seq);
                } else {
                    r.syncs.push((index, seq));
                }
            }
            ReplMsg::ReadIndex { seq, index: Some(index) } => {
                let Some(r) = self.repl() else { return };
                if index <= r.applied_index() {
                    self.answer_sync(seq);
                } else {
                    r.syncs.push((index, seq));
                }
            }
            ReplMsg::Touch(sids) => {
                let now = self.now_ms();
                for sid in sids {
                    if let Some(s) = self.sessions.get(&sid) {
                        let t = s.timeout_ms as u64;
                        self.expiry.touch(sid, now, t);
                    }
                }
            }
            ReplMsg::SnapshotView(tx) => {
                let Some(r) = self.repl.as_deref() else { return };
                let view = SnapshotView {
                    tree: self.tree.snapshot_view(),
                    log_id: r.applied,
                    membership: r.membership.clone(),
                };
                let _ = tx.send(view);
            }
            ReplMsg::Install { tree, log_id, membership, done } => {
                self.install(tree, log_id, membership);
                let _ = done.send(());
            }
        }
    }

    fn role_changed(&mut self, role: Role, leader: Option<u64>, term: u64) {
        let Some(r) = self.repl.as_deref_mut() else { return };
        let was = (r.role, r.leader, r.term);
        if was == (role, leader, term) {
            return;
        }
        tracing::info!(role = role.name(), ?leader, term, "ensemble role");
        r.role = role;
        r.leader = leader;
        r.term = term;
        if (was.1, was.2) != (leader, term) {
            // Proposals in flight went to a leader that is gone: their fate is unknown.
            self.fail_all();
        }
        if role == Role::Leader && was.0 != Role::Leader {
            // A new leader gives every session a full timeout (ZooKeeper's leader does the same
            // when it loads its session tracker).
            let now = self.now_ms();
            self.expiry = ExpiryQueue::new(self.cfg.tick_time_ms as u64);
            for (sid, s) in &self.sessions {
                self.expiry.touch(*sid, now, s.timeout_ms as u64);
            }
            if let Some(r) = self.repl() {
                r.closing.clear();
                r.reaping.clear();
            }
        }
        if role == Role::Looking && was.0 != Role::Looking {
            // No leader: nothing can be served here (ZooKeeper shuts its client server down
            // while LOOKING); clients move to another member and keep their sessions. Read-only
            // sessions (read-only mode) stay while the member stays cut off.
            let conns: Vec<ConnId> = self.conns.iter().filter(|(_, c)| !c.read_only).map(|(id, _)| *id).collect();
            for c in conns {
                self.close_conn(c);
            }
        } else if was.0 == Role::Looking && role != Role::Looking {
            // Back in a quorum (not merely a new election term while still looking): read-only
            // connections close, so their clients look for a read-write server (ZooKeeper stops
            // its ReadOnlyZooKeeperServer the same way).
            let conns: Vec<ConnId> = self.conns.iter().filter(|(_, c)| c.read_only).map(|(id, _)| *id).collect();
            for c in conns {
                self.close_conn(c);
            }
            let local: Vec<SessionId> = self.repl().map(|r| r.ro_sessions.drain().collect()).unwrap_or_default();
            for sid in local {
                self.sessions.remove(&sid);
            }
        }
        if role != Role::Looking {
            let held = self.repl().map(|r| std::mem::take(&mut r.held)).unwrap_or_default();
            for (conn, req, _) in held {
                if self.conns.contains_key(&conn) {
                    self.handshake(conn, req);
                }
            }
        }
    }

    /// Replaces the whole state with a snapshot from the leader. Clients here re-attach and
    /// catch up through setWatches, as after a ZooKeeper follower's SNAP sync.
    fn install(&mut self, tree: Box<DataTree>, log_id: Option<LogId>, membership: Membership) {
        let conns: Vec<ConnId> = self.conns.keys().copied().collect();
        for c in conns {
            self.close_conn(c);
        }
        self.fail_all();
        self.views.withdraw();
        self.tree = *tree;
        self.tree.digest();
        self.sessions = self
            .tree
            .sessions()
            .iter()
            .map(|(id, i)| (*id, Session { timeout_ms: i.timeout_ms, conn: None, ids: Vec::new() }))
            .collect();
        self.expiry = ExpiryQueue::new(self.cfg.tick_time_ms as u64);
        let now = self.now_ms();
        for (sid, s) in &self.sessions {
            self.expiry.touch(*sid, now, s.timeout_ms as u64);
        }
        if membership.log_id().is_some() {
            self.write_config_files(Self::config_version(&membership), &membership);
        }
        if let Some(r) = self.repl() {
            r.applied = log_id;
            r.membership = membership;
        }
        self.durable.store(self.tree.last_zxid(), Ordering::Release);
        self.release_syncs();
    }

    /// The periodic work of a member: the leader expires sessions and reaps, the others report
    /// the sessions they heard from.
    pub(super) fn ensemble_tick(&mut self) {
        let now = self.now_ms();
        let Some(role) = self.repl.as_ref().map(|r| r.role) else { return };
        let late: Vec<ConnId> = match self.repl() {
            Some(r) if !r.held.is_empty() => {
                let hold = r.hold_ms;
                let (late, keep) = std::mem::take(&mut r.held).into_iter().partition(|h| now >= h.2 + hold);
                r.held = keep;
                late.into_iter().map(|h: (ConnId, crate::proto::ConnectRequest, u64)| h.0).collect()
            }
            _ => Vec::new(),
        };
        for conn in late {
            tracing::info!(conn, "refusing connection: this member still has no leader");
            self.close_conn(conn);
        }
        match role {
            Role::Leader => {
                for sid in self.expiry.expired(now) {
                    if self.heard_lately(sid, now) {
                        continue;
                    }
                    if self.repl().is_some_and(|r| r.closing.insert(sid)) {
                        tracing::info!(session = format!("0x{sid:x}"), "session expired: proposing its close");
                        self.propose(sid, CommandOp::CloseSession, None);
                    }
                }
                if now >= self.next_sweep_ms {
                    self.next_sweep_ms = now + self.cfg.container_check_interval_ms;
                    let mut victims = self.tree.container_candidates();
                    victims.extend(self.tree.expired_ttls(wall_ms()));
                    for p in victims {
                        if prep::prepare_reap(&self.tree, &p).is_some()
                            && self.repl().is_some_and(|r| r.reaping.insert(p.clone()))
                        {
                            tracing::debug!(path = %p, "reaping empty container or expired TTL node");
                            self.propose(0, CommandOp::Reap { path: p }, None);
                        }
                    }
                }
            }
            Role::Follower | Role::Observer => {
                let interval = (self.cfg.tick_time_ms as u64 / 2).max(10);
                let Some(r) = self.repl.as_deref_mut() else { return };
                if now < r.next_report_ms {
                    return;
                }
                let since = r.next_report_ms.saturating_sub(interval);
                r.next_report_ms = now + interval;
                let mut sids: HashSet<SessionId> = std::mem::take(&mut r.touched);
                // Pings a connection answered itself count as much as requests.
                for (sid, s) in &self.sessions {
                    let heard =
                        s.conn.and_then(|c| self.conns.get(&c)).map(|c| c.handle.last_heard.load(Ordering::Acquire));
                    if heard.is_some_and(|h| h != 0 && h >= since) {
                        sids.insert(*sid);
                    }
                }
                if !sids.is_empty() {
                    let _ = r.out.send(Proposal::Touch(sids.into_iter().collect()));
                }
            }
            Role::Looking => {}
        }
    }

    /// A client that allows read-only mode, on a member cut off from the quorum: its session is
    /// served read-only (ReadOnlyZooKeeperServer). A new one is local to this member; an
    /// existing one is re-attached after the usual password check, without the log.
    pub(super) fn connect_read_only(&mut self, id: ConnId, req: ConnectRequest) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.read_only = true;
        }
        let timeout =
            req.timeout_ms.clamp(self.cfg.min_session_timeout_ms as i32, self.cfg.max_session_timeout_ms as i32);
        let Some(c) = self.conns.get(&id) else { return };
        let mut ids = vec![Id::new("ip", &c.handle.peer.to_string())];
        ids.extend(c.handle.tls_ids.iter().cloned());
        let sid = if req.session_id == 0 {
            let sid = self.next_session;
            self.next_session += 1;
            self.sessions.insert(sid, Session { timeout_ms: timeout, conn: Some(id), ids });
            if let Some(r) = self.repl() {
                r.ro_sessions.insert(sid);
            }
            tracing::info!(session = format!("0x{sid:x}"), "read-only session created");
            sid
        } else {
            let sid = req.session_id;
            let replicated = self.tree.sessions().get(&sid).and_then(|s| s.password);
            let local = self.repl.as_ref().is_some_and(|r| r.ro_sessions.contains(&sid));
            let known = self.sessions.contains_key(&sid)
                && match replicated {
                    Some(p) => crate::session::same_password(&p, &req.password),
                    None => local && self.passwords.verify(sid, &req.password),
                };
            if !known {
                self.send(id, Outbound::Connected(ConnectResponse::expired()));
                self.close_conn(id);
                return;
            }
            if let Some(s) = self.sessions.get_mut(&sid) {
                s.conn = Some(id);
                s.ids = ids;
            }
            sid
        };
        self.attached(id, sid, timeout);
    }

    /// A request on a read-only connection: writes get NotReadOnly (ReadOnlyRequestProcessor's
    /// list); closeSession ends the connection without the log. `true` if it was handled here.
    pub(super) fn serve_read_only(&mut self, conn: ConnId, sid: SessionId, req: &Request) -> bool {
        if !self.conns.get(&conn).is_some_and(|c| c.read_only) {
            return false;
        }
        if req.op == OpCode::CloseSession {
            if self.repl().is_some_and(|r| r.ro_sessions.remove(&sid)) {
                self.sessions.remove(&sid);
            }
            let zxid = self.tree.last_zxid();
            self.send(conn, Outbound::Reply(ReplyHeader { xid: req.xid, zxid, err: 0 }, Response::Empty));
            self.close_conn(conn);
            return true;
        }
        if is_proposal(req) || req.op == OpCode::Check {
            self.reply(conn, req.xid, Err(ErrorCode::NotReadOnly));
            return true;
        }
        false
    }

    /// This member's role, leader and last applied index (for the operator views).
    pub fn ensemble_view(&self) -> Option<(Role, Option<u64>, Option<LogId>)> {
        self.repl.as_deref().map(|r| (r.role, r.leader, r.applied))
    }
}

/// The text of `/zookeeper/config`: a `server.N=` line per member, then `version=` (the zxid of
/// the configuration in hex, as QuorumVerifier.toString writes it).
pub fn config_text(m: &Membership, zxid: Zxid) -> String {
    let mut out = String::new();
    for (id, spec) in members_of(m) {
        out.push_str(&format!("server.{id}={}\n", spec.config_value()));
    }
    out.push_str(&format!("version={zxid:x}"));
    out
}

/// The members of a membership, each marked observer unless it votes.
fn members_of(m: &Membership) -> Vec<(u64, ServerSpec)> {
    let voters: HashSet<u64> = m.membership().voter_ids().collect();
    m.membership()
        .nodes()
        .map(|(id, node)| {
            let mut spec = node.clone();
            spec.observer = !voters.contains(id);
            (*id, spec)
        })
        .collect()
}
