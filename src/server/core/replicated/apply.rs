//! Applying committed entries: txns to the tree in log order, membership changes to
//! `/zookeeper/config` and the config files, sync points released; and `reconfig` proposals.

use super::*;

impl Core {
    /// Applies committed entries in log order.
    pub(in crate::server::core) fn apply_committed(&mut self, entries: Vec<Committed>) {
        for e in entries {
            if self.log.replicated().is_some_and(|r| r.checks.stopped.is_some()) {
                // Stopped (see `check`): nothing more is applied here.
                return;
            }
            match e.payload {
                CommittedPayload::Commands(batch) => {
                    if let Some((why, start_over)) = self.refuses_batch(&batch) {
                        self.stop_member(why, start_over);
                        return;
                    }
                    let entry_leader = e.log_id.leader_id.node_id;
                    let version = batch.version();
                    for cmd in batch.into_cmds() {
                        if cmd.decided_by_another_leader(version, entry_leader) {
                            tracing::warn!(
                                session = format!("0x{:x}", cmd.session),
                                decided_by = cmd.origin.member,
                                entry_leader,
                                "a deposed leader's expiry or reap reached the log through another leader: not applied"
                            );
                            continue;
                        }
                        let zxid = next_zxid(self.tree.last_zxid(), &e.log_id);
                        if self.apply_command(zxid, cmd) {
                            self.advance_zxid(zxid);
                        }
                    }
                }
                CommittedPayload::Membership(m) => {
                    let zxid = next_zxid(self.tree.last_zxid(), &e.log_id);
                    self.apply_membership(zxid, &m);
                    self.advance_zxid(zxid);
                    let joint = crate::raft::types::is_joint(m.membership());
                    if let Some(r) = self.repl() {
                        if !joint {
                            r.follow_addresses(&m);
                        }
                        r.membership = m;
                    }
                    if joint && self.cfg.failpoints.leader_dies_in_joint {
                        self.die_in_joint(&e.log_id);
                    }
                }
                CommittedPayload::Blank => self.advance_zxid(epoch_start(&e.log_id)),
            }
            if let Some(r) = self.repl() {
                r.applied = Some(e.log_id);
            }
            self.record_end();
        }
        self.durable.store(self.tree.last_zxid(), Ordering::Release);
        self.release_syncs();
    }

    /// The `leader-dies-in-joint` failpoint: the leader that appended this joint membership entry
    /// exits as it applies it (a later leader that commits it lives on).
    fn die_in_joint(&mut self, log_id: &LogId) {
        let Some(r) = self.log.replicated() else { return };
        if r.role == Role::Leader && log_id.leader_id.node_id == r.me && log_id.leader_id.term == r.term {
            tracing::error!(
                "failpoint leader-dies-in-joint: the leader exits between the two steps of a membership change"
            );
            eprintln!("zkr: failpoint leader-dies-in-joint");
            std::process::exit(86);
        }
    }

    /// Every applied txn moves the tree's zxid to its own, failed ones too (as ZooKeeper's
    /// error txns do), so the next one numbers after it.
    pub(super) fn advance_zxid(&mut self, zxid: Zxid) {
        if zxid > self.tree.last_zxid() {
            self.tree.set_last_zxid(zxid);
        }
    }

    /// The version of the ensemble's configuration: its log position as a zxid (term, index),
    /// so 0 for the configuration an ensemble starts with, as ZooKeeper's static config has
    /// version 0, and increasing with every reconfig (ZooKeeper's is the reconfig's zxid;
    /// clients only compare it and send it back as `fromConfig`).
    pub(super) fn config_version(m: &Membership) -> Zxid {
        m.log_id().map_or(0, |l| zxid_of(&l))
    }

    /// `/zookeeper/config` follows the membership (QuorumPeer writes it on every change).
    pub(super) fn apply_membership(&mut self, zxid: Zxid, m: &Membership) {
        if self.tree.pending_reconfig().is_some() {
            // The steps of a reconfig: the configuration appears at its end record, once.
            return;
        }
        self.write_config(zxid, 0, m);
    }

    /// `/zookeeper/config` and the configuration files say membership `m`, at `zxid`.
    pub(super) fn write_config(&mut self, zxid: Zxid, time: i64, m: &Membership) {
        let text = config_text(m, Self::config_version(m));
        let version = self.tree.get("/zookeeper/config").map_or(0, |n| n.stat.version + 1);
        let op = TxnOp::SetData { path: "/zookeeper/config".into(), data: Some(text.into()), version };
        // Membership entries carry no time: mtime 0 keeps every member's tree the same.
        self.apply_txn(&Txn { zxid, time, session: 0, op });
        self.write_config_files(Self::config_version(m), m);
    }

    /// With `reconfigEnabled=true`, zoo.cfg and its dynamic file follow the membership, as
    /// ZooKeeper's processReconfig writes them (see `raft::config_file`). A failure is logged,
    /// not fatal, as in ZooKeeper.
    pub(super) fn write_config_files(&self, zxid: Zxid, m: &Membership) {
        let Some(ens) = self.cfg.ensemble.as_ref().filter(|e| e.reconfig_enabled) else { return };
        let Some(file) = ens.config_file.as_deref() else { return };
        // openraft changes membership through a joint configuration, which ZooKeeper has no
        // file for: only the configuration it settles on is written.
        if crate::raft::types::is_joint(m.membership()) {
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

    /// Applies one command; false if it was no txn (and took no zxid).
    pub(super) fn apply_command(&mut self, zxid: Zxid, cmd: Command) -> bool {
        let me = self.log.replicated().map_or(0, |r| r.me);
        let waiting = match (cmd.origin.member == me, cmd.origin.seq) {
            (true, seq) if seq != 0 => self.repl().and_then(|r| r.waiting.remove(&seq)),
            _ => None,
        };
        let sid = cmd.session;
        let txn = |op| Txn { zxid, time: cmd.time, session: sid, op };
        match cmd.op {
            CommandOp::CreateSession { timeout_ms, password } => {
                self.apply_txn(&txn(TxnOp::CreateSession { timeout_ms, password: Some(password) }));
                let owner = SessionOwner { member: cmd.origin.member, seq: cmd.origin.seq, by_attach: false };
                self.tree.set_owner(sid, owner);
                self.sessions.entry(sid).or_insert(Session { timeout_ms, conn: None, ids: Vec::new() });
                if self.log.replicated().is_some_and(|r| r.role == Role::Leader) {
                    self.expiry.touch(sid, self.now_ms(), timeout_ms as u64);
                }
                if let Some(Waiting::Session { conn, timeout, ids }) = waiting {
                    self.session_created(conn, sid, timeout, ids);
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
                let prepared = match self.tree.sessions().get(&sid) {
                    // PrepRequestProcessor.checkSession: the session expired before its write.
                    None => TxnOp::Error(ErrorCode::SessionExpired),
                    // ... or it moved: the client re-attached elsewhere (or anew here) after
                    // this write was proposed, and may have written since.
                    Some(s) if s.owner.is_some_and(|o| !o.accepts(cmd.origin.member, cmd.origin.seq)) => {
                        TxnOp::Error(ErrorCode::SessionMoved)
                    }
                    Some(_) => {
                        let ctx = prep::PrepCtx { session: sid, ids: &ids, ttl_enabled, enforce_quota };
                        let txn = prep::prepare_request(&self.tree, &ctx, op, &body);
                        if self.cfg.failpoints.prep_skew {
                            skew(txn)
                        } else {
                            txn
                        }
                    }
                };
                let moved = matches!(prepared, TxnOp::Error(ErrorCode::SessionMoved));
                let outcome = self.apply_txn(&txn(prepared));
                match waiting {
                    // FinalRequestProcessor: SessionMoved is a connection-level error, the
                    // connection closes without a reply (ZOOKEEPER-710).
                    Some(Waiting::Write { conn, .. }) if moved => {
                        tracing::info!(
                            session = format!("0x{sid:x}"),
                            conn,
                            "write of a session that moved: refused, connection closed"
                        );
                        self.close_conn(conn);
                    }
                    Some(Waiting::Write { conn, xid }) => {
                        self.reply(conn, xid, crate::server::core::writes::write_response(op, &body, outcome));
                        self.finish(conn);
                    }
                    _ => {}
                }
            }
            CommandOp::Reap { path } => {
                let op = prep::prepare_reap(&self.tree, &path).unwrap_or(TxnOp::Error(ErrorCode::NoNode));
                self.apply_txn(&txn(op));
                if let Some(r) = self.repl() {
                    r.reaping.remove(&path);
                }
            }
            CommandOp::ReconfigBegin { plan } => self.apply_reconfig_begin(zxid, cmd.origin, plan, waiting),
            CommandOp::ReconfigEnd { begun, code } => self.apply_reconfig_end(zxid, cmd.time, begun, code),
            CommandOp::RestoreChunk { restore, index, bytes } => {
                self.apply_restore_chunk(restore, index, bytes);
                return false;
            }
            CommandOp::RestoreEnd { restore, chunks } => {
                return self.apply_restore_end(zxid, cmd.time, restore, chunks, waiting);
            }
            CommandOp::Attach { timeout_ms, password, seen } => {
                // Not a txn: no zxid, as ZooKeeper's revalidation of a session makes none.
                self.apply_attach(cmd.origin, sid, timeout_ms, &password, seen, waiting);
                return false;
            }
        }
        true
    }

    /// A client re-attached its session on `origin.member` (see `CommandOp::Attach`); `waiting`
    /// is its connection if that is this member. Every
    /// member moves the session there if the password is right, and closes its own connection
    /// of the session if it has one; the proposer answers the client: attached, or expired if
    /// the session no longer exists (it has now applied everything committed before).
    pub(super) fn apply_attach(
        &mut self,
        origin: crate::raft::command::Origin,
        sid: SessionId,
        timeout_ms: i32,
        password: &[u8; crate::proto::PASSWORD_LEN],
        seen: Option<crate::raft::command::Origin>,
        waiting: Option<Waiting>,
    ) {
        let stale = seen.is_some_and(|s| {
            let owner = self.tree.sessions().get(&sid).and_then(|i| i.owner);
            owner.is_some_and(|o| !o.admits_attach(origin.member, origin.seq, (s.member, s.seq)))
        });
        if stale {
            // Another re-attach moved the session after this one was proposed (the client gave
            // up on this member and went elsewhere): the session stays where it is. If the
            // client still waits here, it is closed without an answer and tries again; its next
            // attach names the owner this member now knows.
            tracing::info!(
                session = format!("0x{sid:x}"),
                from = origin.member,
                "re-attach overtaken by a newer one elsewhere: not applied"
            );
            if let Some(Waiting::Attach { conn, .. }) = waiting {
                self.close_conn(conn);
            }
            return;
        }
        let moved = match self.tree.sessions().get(&sid) {
            Some(info) if attach_allowed(sid, info, password) => {
                let owner = SessionOwner { member: origin.member, seq: origin.seq, by_attach: true };
                self.tree.set_owner(sid, owner)
            }
            _ => false,
        };
        if moved {
            if self.log.replicated().is_some_and(|r| r.role == Role::Leader) {
                self.expiry.touch(sid, self.now_ms(), timeout_ms.max(0) as u64);
            }
            let waiting_conn = match &waiting {
                Some(Waiting::Attach { conn, .. }) => Some(*conn),
                _ => None,
            };
            // The client is elsewhere now: a connection of the session here is stale.
            let local = self.sessions.get(&sid).and_then(|s| s.conn);
            if let Some(old) = local.filter(|c| Some(*c) != waiting_conn) {
                tracing::info!(
                    session = format!("0x{sid:x}"),
                    conn = old,
                    to = origin.member,
                    "session re-attached elsewhere: closing its connection here"
                );
                self.close_conn(old);
            }
        }
        let Some(Waiting::Attach { conn, timeout, ids, password }) = waiting else { return };
        if !self.conns.contains_key(&conn) {
            return;
        }
        if moved && self.sessions.contains_key(&sid) && self.password_ok(sid, &password) {
            self.reattach(conn, sid, timeout, ids);
            self.attached(conn, sid, timeout);
            self.finish(conn);
        } else {
            self.refuse_reattach(conn, sid);
        }
    }

    /// Answers the syncs whose point this member has applied.
    pub(super) fn release_syncs(&mut self) {
        let Some(r) = self.log.replicated_mut() else { return };
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
    pub(super) fn answer_sync(&mut self, seq: u64) {
        if let Some(Waiting::Sync { conn, xid, path }) = self.repl().and_then(|r| r.waiting.remove(&seq)) {
            self.reply(conn, xid, Ok(Response::Path(path)));
            self.finish(conn);
        }
    }
}

/// Whether an attach may move session `sid` (the same on every member): the password must be
/// the session's replicated one, or ZooKeeper's for an imported session. A session with
/// neither (from a standalone data directory) is judged by the proposer alone, after the
/// attach is applied, with its own secret.
fn attach_allowed(
    sid: SessionId,
    info: &crate::tree::SessionInfo,
    password: &[u8; crate::proto::PASSWORD_LEN],
) -> bool {
    match info.password {
        Some(p) => {
            crate::session::same_password(&p, password)
                || (info.zk_password && *password == crate::session::zookeeper_password(sid))
        }
        None => true,
    }
}

/// The `prep-skew` failpoint: a create's data one byte longer than the request's, as a member
/// whose prep had a bug would make it.
fn skew(txn: TxnOp) -> TxnOp {
    match txn {
        TxnOp::Create { path, data, acl, ephemeral_owner, parent_cversion } => {
            let mut d = data.map(|d| d.to_vec()).unwrap_or_default();
            d.push(b'!');
            TxnOp::Create { path, data: Some(d.into()), acl, ephemeral_owner, parent_cversion }
        }
        other => other,
    }
}
