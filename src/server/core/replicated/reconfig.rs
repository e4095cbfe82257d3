//! `reconfig` on an ensemble, as one step for the client (see `raft::reconfig`): the member the
//! client asked checks the request and logs its plan as a begin record; every member applies
//! that record alike and keeps the plan as pending with its tree; the leader carries it out
//! (and a leader elected while it is pending finishes it) and logs the end record, where
//! `/zookeeper/config` takes the new configuration and the client gets its answer.

use super::{Core, Proposal, Role, Waiting};
use crate::proto::{ErrorCode, RequestBody, Response};
use crate::raft::command::{CommandOp, Origin};
use crate::raft::reconfig::{Pending, Plan};
use crate::session::ConnId;
use crate::tree::acl;
use crate::txn::{SessionId, Zxid};

impl Core {
    /// `reconfig` on an ensemble with reconfigEnabled: checked here in PrepRequestProcessor's order
    /// (syntax, the `fromConfig` version, then WRITE on /zookeeper/config, which only super
    /// has; kazoo's TestReconfig pins that order), then logged as the plan's begin record.
    pub(in crate::server::core) fn propose_reconfig(
        &mut self,
        conn: ConnId,
        sid: SessionId,
        xid: i32,
        body: &RequestBody,
    ) {
        let RequestBody::Reconfig { joining, leaving, new_members, cur_config_id } = body else { return };
        let Some(r) = self.log.replicated() else { return };
        let current = r.membership.clone();
        let planned =
            crate::raft::reconfig::plan(joining.as_deref(), leaving.as_deref(), new_members.as_deref(), &current);
        let mut plan = match planned {
            Ok(p) => p,
            Err(e) => return self.reply(conn, xid, Err(e)),
        };
        plan.from_version = (*cur_config_id != -1).then_some(*cur_config_id);
        let version = Self::config_version(&current);
        if *cur_config_id != -1 && *cur_config_id != version {
            return self.reply(conn, xid, Err(ErrorCode::BadVersion));
        }
        let allowed = self.tree.get("/zookeeper/config").is_some_and(|n| {
            acl::allows(&n.acl, crate::proto::perms::WRITE, crate::server::core::ids_of(&self.sessions, sid))
        });
        if !allowed {
            return self.reply(conn, xid, Err(ErrorCode::NoAuth));
        }
        // ZooKeeper's leader refuses a reconfig while another is being carried out.
        if self.tree.pending_reconfig().is_some() {
            return self.reply(conn, xid, Err(ErrorCode::ReconfigInProgress));
        }
        tracing::info!(?plan, "reconfig");
        self.propose(sid, CommandOp::ReconfigBegin { plan }, Some(Waiting::Reconfig { conn, xid }));
    }

    /// The pending reconfig, if any.
    fn pending_reconfig(&self) -> Option<Pending> {
        self.tree.pending_reconfig().and_then(Pending::from_bytes)
    }

    /// A begin record: the plan becomes pending unless another is, or the configuration moved on
    /// since the client read it; the same decision on every member.
    pub(super) fn apply_reconfig_begin(&mut self, zxid: Zxid, origin: Origin, plan: Plan, waiting: Option<Waiting>) {
        let version = self.log.replicated().map_or(0, |r| Self::config_version(&r.membership));
        let refused = if self.tree.pending_reconfig().is_some() {
            Some(ErrorCode::ReconfigInProgress)
        } else if plan.from_version.is_some_and(|v| v != version) {
            Some(ErrorCode::BadVersion)
        } else {
            None
        };
        if let Some(code) = refused {
            tracing::info!(?code, "reconfig refused where it is ordered in the log");
            if let Some(Waiting::Reconfig { conn, xid }) = waiting {
                self.reply(conn, xid, Err(code));
                self.finish(conn);
            }
            return;
        }
        let pending = Pending { begun: zxid, member: origin.member, seq: origin.seq, plan };
        self.tree.set_pending_reconfig(Some(pending.to_bytes()));
        if let (Some(w), Some(r)) = (waiting, self.repl()) {
            // Answered by the end record.
            r.waiting.insert(origin.seq, w);
        }
        if self.log.replicated().is_some_and(|r| r.role == Role::Leader) {
            if self.log.replicated().is_some_and(|r| r.me == origin.member) {
                // Only where the client asked: a later leader applying the record lives.
                crate::config::CrashPoint::ReconfigBegun.hit(self.cfg.failpoints.crash_at);
            }
            self.carry_out_reconfig();
        }
    }

    /// The leader hands the pending reconfig to its Raft side (`Proposal::Reconfig`); its outcome
    /// comes back as `ReplMsg::ReconfigDone` and is logged as the end record.
    pub(super) fn carry_out_reconfig(&mut self) {
        let Some(p) = self.pending_reconfig() else { return };
        let Some(r) = self.log.replicated_mut() else { return };
        r.next_seq += 1;
        let seq = r.next_seq;
        r.reconfig_runs.insert(seq, p.begun);
        tracing::info!(begun = format!("0x{:x}", p.begun), "carrying out the pending reconfig");
        if !r.out.send(Proposal::Reconfig { seq, plan: p.plan }) {
            r.reconfig_runs.remove(&seq);
        }
    }

    /// What the Raft side made of the reconfig run `seq`: logged as the end record (nothing if
    /// leadership moved: the next leader finishes the plan).
    pub(super) fn reconfig_done(&mut self, seq: u64, code: Option<ErrorCode>) {
        let Some(begun) = self.repl().and_then(|r| r.reconfig_runs.remove(&seq)) else { return };
        let code = code.map_or(0, |c| c.code());
        self.propose(0, CommandOp::ReconfigEnd { begun, code }, None);
    }

    /// An end record: the pending reconfig it names is over; `/zookeeper/config` and the
    /// configuration files take the membership it left (code 0), and its client is answered.
    pub(super) fn apply_reconfig_end(&mut self, zxid: Zxid, time: i64, begun: Zxid, code: i32) {
        let Some(p) = self.pending_reconfig().filter(|p| p.begun == begun) else {
            tracing::debug!(begun = format!("0x{begun:x}"), "an end record of no pending reconfig");
            return;
        };
        self.tree.set_pending_reconfig(None);
        let Some(m) = self.log.replicated().map(|r| r.membership.clone()) else { return };
        if code == 0 {
            self.write_config(zxid, time, &m);
        }
        tracing::info!(code, "reconfig ended");
        let me = self.log.replicated().map_or(0, |r| r.me);
        if p.member != me {
            return;
        }
        if let Some(Waiting::Reconfig { conn, xid }) = self.repl().and_then(|r| r.waiting.remove(&p.seq)) {
            let res = match (code, self.tree.get("/zookeeper/config")) {
                // ReconfigRequest's answer: the new configuration's data and Stat.
                (0, Some(n)) => Ok(Response::GetData { data: n.data.clone(), stat: n.wire_stat() }),
                (0, None) => Err(ErrorCode::SystemError),
                (c, _) => Err(ErrorCode::from_i32(c).unwrap_or(ErrorCode::SystemError)),
            };
            self.reply(conn, xid, res);
            self.finish(conn);
        }
    }
}
