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
//!
//! This file holds the proposing side; `apply` applies what the log committed, `role` handles
//! what the Raft side reports (role changes, installed snapshots) and the ensemble's tick,
//! `offline` replays a stopped member's committed log with the same `apply` (for the export).

mod apply;
mod check;
pub mod offline;
mod reconfig;
mod restore;
mod role;
#[cfg(test)]
mod tests;

use super::*;
use crate::raft::command::{Command, CommandOp, Origin};
use crate::raft::types::{epoch_start, next_zxid, zxid_of, LogId, Membership};
use crate::tree::SessionOwner;
use std::collections::HashSet;

pub use crate::raft::config_file::{config_text, members_of};
pub use crate::raft::seam::{
    outlet, Committed, CommittedPayload, Inlet, Outlet, Proposal, ReplMsg, Role, SnapshotView, Up,
};

/// A proposal of this member waiting for its entry to be applied here.
#[derive(Debug)]
enum Waiting {
    Session {
        conn: ConnId,
        timeout: i32,
        ids: Vec<Id>,
    },
    /// A re-attach, answered when its `Attach` is applied here.
    Attach {
        conn: ConnId,
        timeout: i32,
        ids: Vec<Id>,
        password: Vec<u8>,
    },
    Write {
        conn: ConnId,
        xid: i32,
    },
    Close {
        conn: ConnId,
        xid: i32,
    },
    Sync {
        conn: ConnId,
        xid: i32,
        path: String,
    },
    Reconfig {
        conn: ConnId,
        xid: i32,
    },
    /// The AdminServer's restore, answered when its end record is applied here.
    Restore {
        reply: crate::server::core::restore::RestoreReply,
    },
}

impl Waiting {
    /// The client connection waiting, if a client waits.
    fn conn(&self) -> Option<ConnId> {
        match self {
            Waiting::Session { conn, .. }
            | Waiting::Attach { conn, .. }
            | Waiting::Write { conn, .. }
            | Waiting::Close { conn, .. }
            | Waiting::Sync { conn, .. }
            | Waiting::Reconfig { conn, .. } => Some(*conn),
            Waiting::Restore { .. } => None,
        }
    }
}

/// The core's ensemble state.
pub struct Replicated {
    me: u64,
    out: Outlet,
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
    /// Keep clients' connections through an election when the leader's process is gone
    /// (`zkr.keepClientsOnLeaderLoss`; off by default, where ZooKeeper's behaviour is kept).
    keep_clients: bool,
    /// While the leader's process is gone and the survivors elect: until when the clients'
    /// connections are kept (their requests queued) instead of closed.
    hold_conns_until: Option<u64>,
    /// This member's digests where entries ended, checked against the leader's.
    checks: check::Checks,
    /// Where this member's client and peer listeners move when a reconfig changes its
    /// addresses (`crate::listen`).
    addresses: Option<(crate::listen::Follow, crate::listen::Follow)>,
    /// This member's entry in the last settled configuration applied in this run.
    settled: Option<crate::raft::members::ServerSpec>,
    /// Leader: the pending reconfig its Raft side is carrying out, by run: the begin's zxid.
    reconfig_runs: HashMap<u64, Zxid>,
    /// A stopped member's log replayed by `zkr export-zookeeper` (`offline`): nothing is
    /// written into the member's directory, a divergence included.
    offline: bool,
}

impl Replicated {
    /// `first_seq`: where this run's proposal numbers start, above every earlier run's
    /// (`crate::raft::first_seq`), so an entry of an earlier run never answers a client of this one.
    pub fn new(me: u64, out: Outlet, first_seq: u64, applied: Option<LogId>, membership: Membership) -> Replicated {
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
            keep_clients: false,
            hold_conns_until: None,
            addresses: None,
            settled: None,
            reconfig_runs: HashMap::new(),
            checks: check::Checks::default(),
            offline: false,
        }
    }

    /// Publishes where this member's entries end into `latest` (read by its submitter).
    pub fn with_latest_check(mut self, latest: crate::raft::command::LatestCheck) -> Replicated {
        self.checks = check::Checks::new(latest);
        self
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

    /// Followers keep their clients' connections while the survivors of a leader's crash elect
    /// a new one (up to the handshake hold), instead of closing them as ZooKeeper's do.
    pub fn with_keep_clients(mut self, keep: bool) -> Replicated {
        self.keep_clients = keep;
        self
    }

    /// Client and peer listeners follow this member's addresses in the applied configuration.
    pub fn with_addresses(mut self, client: crate::listen::Follow, peer: crate::listen::Follow) -> Replicated {
        self.addresses = Some((client, peer));
        self
    }

    /// A configuration settled on (not a joint one) is applied: if it gives this member another
    /// client or peer address, its listeners move there (QuorumPeer.processReconfig →
    /// ServerCnxnFactory.reconfigure).
    pub(super) fn follow_addresses(&mut self, new: &Membership) {
        let Some(now) = new.membership().get_node(&self.me).cloned() else { return };
        let before = self.settled.replace(now.clone());
        let (Some((client, peer)), Some(before)) = (&self.addresses, before) else { return };
        if let Some((host, port)) = &now.client {
            if before.client.as_ref() != Some(&(host.clone(), *port)) {
                let _ = client.send(Some(crate::raft::members::join_host_port(host, *port)));
            }
        }
        if before.peer_addr() != now.peer_addr() {
            let _ = peer.send(Some(now.peer_addr()));
        }
    }

    pub fn read_only_enabled(&self) -> bool {
        self.read_only_enabled
    }

    /// A member serves clients only while it has a leader, and never once it stopped (see
    /// `check`).
    pub fn serving(&self) -> bool {
        self.role != Role::Looking && self.checks.stopped.is_none()
    }

    /// True while clients' requests wait for a new leader (see `hold_conns_until`).
    pub(super) fn holding_conns(&self) -> bool {
        self.role == Role::Looking && self.hold_conns_until.is_some()
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

impl Core {
    fn repl(&mut self) -> Option<&mut Replicated> {
        self.log.replicated_mut()
    }

    /// The ensemble's side of `Core::submit`: everything is proposed, and answered when this
    /// member applies its entry (`apply.rs`).
    pub(in crate::server::core) fn propose_submit(&mut self, conn: ConnId, sid: SessionId, s: Submit) {
        match s {
            Submit::Session { sid, timeout } => self.propose_session(conn, sid, timeout),
            Submit::Attach { sid, timeout, password } => {
                if self.sessions.contains_key(&sid) && !self.password_ok(sid, &password) {
                    // A wrong password is refused at once, as ZooKeeper checks it before it
                    // revalidates the session with its leader.
                    return self.refuse_reattach(conn, sid);
                }
                // Unknown here may only mean not applied here yet: judged when the attach is.
                self.propose_attach(conn, sid, timeout, password);
            }
            Submit::Write { xid, op, body } => {
                let reconfig_enabled = self.cfg.ensemble.as_ref().is_some_and(|e| e.reconfig_enabled);
                if reconfig_enabled && matches!(body, RequestBody::Reconfig { .. }) {
                    return self.propose_reconfig(conn, sid, xid, &body);
                }
                self.propose_request(conn, sid, xid, op, body);
            }
            Submit::Close { xid } => self.propose_close(conn, sid, xid),
            Submit::Sync { xid, path } => self.propose_sync(conn, xid, path),
        }
    }

    /// Sends a command to the log. With a waiter, the connection's later requests queue behind it.
    fn propose(&mut self, session: SessionId, op: CommandOp, waiting: Option<Waiting>) {
        let conn = waiting.as_ref().and_then(Waiting::conn);
        let Some(r) = self.log.replicated_mut() else { return };
        let seq = match waiting {
            Some(w) => {
                r.next_seq += 1;
                r.waiting.insert(r.next_seq, w);
                r.next_seq
            }
            None => 0,
        };
        // A leader's own expiry or reap that found the queue full is proposed again next tick.
        let retry = match &op {
            CommandOp::CloseSession if seq == 0 => Some(None),
            CommandOp::Reap { path } => Some(Some(path.clone())),
            _ => None,
        };
        let cmd = Command { origin: Origin { member: r.me, seq }, time: wall_ms(), session, op };
        let sent = r.out.send(Proposal::Command(cmd));
        if !sent {
            match retry {
                Some(None) => _ = r.closing.remove(&session),
                Some(Some(path)) => _ = r.reaping.remove(&path),
                None => {}
            }
        }
        if let Some(c) = conn.and_then(|c| self.conns.get_mut(&c)) {
            c.in_flight += 1;
        }
        if !sent {
            self.fail(seq);
        }
    }

    fn propose_session(&mut self, conn: ConnId, sid: SessionId, timeout: i32) {
        let Some(ids) = self.conns.get(&conn).map(|c| c.handle.connect_ids()) else { return };
        let password = self.new_session_password(sid);
        let w = Waiting::Session { conn, timeout, ids };
        self.propose(sid, CommandOp::CreateSession { timeout_ms: timeout, password }, Some(w));
    }

    /// A client re-attaches session `sid` here: judged, and the session moved here, when this
    /// member applies the `Attach` (see `CommandOp::Attach`).
    fn propose_attach(&mut self, conn: ConnId, sid: SessionId, timeout: i32, password: Vec<u8>) {
        let Some(ids) = self.conns.get(&conn).map(|c| c.handle.connect_ids()) else { return };
        let mut fixed = [0u8; crate::proto::PASSWORD_LEN];
        if let Some(p) = password.get(..crate::proto::PASSWORD_LEN) {
            fixed.copy_from_slice(p);
        }
        let w = Waiting::Attach { conn, timeout, ids, password };
        let known = self.tree.sessions().get(&sid).and_then(|s| s.owner);
        let seen = known.map_or(Origin::default(), |o| Origin { member: o.member, seq: o.seq });
        let op = CommandOp::Attach { timeout_ms: timeout, password: fixed, seen: Some(seen) };
        self.propose(sid, op, Some(w));
    }

    fn propose_request(&mut self, conn: ConnId, sid: SessionId, xid: i32, op: OpCode, body: RequestBody) {
        let ids = ids_of(&self.sessions, sid).to_vec();
        let (ttl_enabled, enforce_quota) = (self.cfg.ttl_enabled, self.cfg.enforce_quota);
        let cmd = CommandOp::Request { ids, ttl_enabled, enforce_quota, op, body };
        self.propose(sid, cmd, Some(Waiting::Write { conn, xid }));
    }

    fn propose_close(&mut self, conn: ConnId, sid: SessionId, xid: i32) {
        self.propose(sid, CommandOp::CloseSession, Some(Waiting::Close { conn, xid }));
    }

    fn propose_sync(&mut self, conn: ConnId, xid: i32, path: String) {
        let Some(r) = self.log.replicated_mut() else { return };
        r.next_seq += 1;
        let seq = r.next_seq;
        r.waiting.insert(seq, Waiting::Sync { conn, xid, path });
        let sent = r.out.send(Proposal::ReadIndex { seq });
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
        let conn = match w {
            Waiting::Restore { reply } => {
                let _ = reply.send(Err(crate::server::core::restore::RestoreError::Lost));
                return;
            }
            w => w.conn(),
        };
        let Some(conn) = conn else { return };
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
}
