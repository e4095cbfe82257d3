//! What the Raft side reports: role changes (elections, leader loss, read-only mode), snapshots
//! installed from the leader, and the ensemble's tick (session reports to the leader, expiry
//! and reaping on the leader); read-only sessions of a member cut off from the quorum.

use super::*;

impl Core {
    pub(in crate::server::core) fn replication(&mut self, msg: ReplMsg) {
        match msg {
            ReplMsg::Role { role, leader, term, leader_gone } => self.role_changed(role, leader, term, leader_gone),
            ReplMsg::ProposalFailed { seq } => self.fail(seq),
            ReplMsg::ForwardLost => {
                if self.log.replicated().is_some_and(|r| r.role != Role::Leader) {
                    self.fail_all();
                }
            }
            ReplMsg::ReadIndex { seq, index: None } => self.fail(seq),
            // Leadership moved while the reconfig ran: the next leader finishes it.
            ReplMsg::ReconfigDone { seq, result: Err(None) } => _ = self.repl().map(|r| r.reconfig_runs.remove(&seq)),
            ReplMsg::ReconfigDone { seq, result: Err(Some(code)) } => self.reconfig_done(seq, Some(code)),
            ReplMsg::ReconfigDone { seq, result: Ok(_) } => self.reconfig_done(seq, None),
            // A sync's read point: answered once applied.
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
                let Some(r) = self.log.replicated() else { return };
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

    pub(super) fn role_changed(&mut self, role: Role, leader: Option<u64>, term: u64, leader_gone: bool) {
        let Some(r) = self.log.replicated_mut() else { return };
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
                r.reconfig_runs.clear();
            }
            // A reconfig a former leader began is finished by this one.
            self.carry_out_reconfig();
        }
        let now = self.now_ms();
        if role == Role::Looking && was.0 != Role::Looking {
            // No leader: nothing can be served here. The connections close now, as ZooKeeper
            // shuts its client server down while LOOKING, and clients move to another member
            // with their sessions (so a Java client sees Disconnected, Curator SUSPENDED).
            // Read-only sessions (read-only mode) stay while cut off.
            // With `zkr.keepClientsOnLeaderLoss`, when the leader's process is gone the
            // survivors elect at once (about a tenth of a second): the clients' connections
            // stay and their requests wait for the new leader, up to an election timeout, so
            // a leader's crash disconnects only the leader's own clients. A member cut off, or
            // a leader without its quorum, still closes them at once.
            let hold = self.repl().filter(|r| r.keep_clients).map_or(0, |r| r.hold_ms);
            if leader_gone && hold > 0 {
                tracing::info!(hold_ms = hold, "the leader is gone: clients' requests wait for the election");
                if let Some(r) = self.repl() {
                    r.hold_conns_until = Some(now + hold);
                }
            } else {
                self.close_client_conns();
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
            // Requests held through the election are served now, in order.
            if self.repl().and_then(|r| r.hold_conns_until.take()).is_some() {
                let waiting: Vec<ConnId> =
                    self.conns.iter().filter(|(_, c)| !c.queue.is_empty()).map(|(id, _)| *id).collect();
                for conn in waiting {
                    self.serve_queued(conn);
                }
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

    /// Closes every client connection but read-only ones (their clients re-attach elsewhere).
    pub(super) fn close_client_conns(&mut self) {
        let conns: Vec<ConnId> = self.conns.iter().filter(|(_, c)| !c.read_only).map(|(id, _)| *id).collect();
        for c in conns {
            self.close_conn(c);
        }
    }

    /// Replaces the whole state with a snapshot from the leader. Clients here re-attach and
    /// catch up through setWatches, as after a ZooKeeper follower's SNAP sync.
    pub(super) fn install(&mut self, tree: Box<DataTree>, log_id: Option<LogId>, membership: Membership) {
        let conns: Vec<ConnId> = self.conns.keys().copied().collect();
        for c in conns {
            self.close_conn(c);
        }
        self.fail_all();
        self.views.withdraw();
        self.tree = *tree;
        self.tree.digest();
        if let Some(r) = self.repl() {
            r.checks.forget();
        }
        self.sessions_from_tree();
        let now = self.now_ms();
        for (sid, s) in &self.sessions {
            self.expiry.touch(*sid, now, s.timeout_ms as u64);
        }
        if membership.log_id().is_some() {
            self.write_config_files(Self::config_version(&membership), &membership);
        }
        if let Some(r) = self.repl() {
            r.applied = log_id;
            if !crate::raft::types::is_joint(membership.membership()) {
                r.follow_addresses(&membership);
            }
            r.membership = membership;
        }
        self.durable.store(self.tree.last_zxid(), Ordering::Release);
        self.release_syncs();
    }

    /// The periodic work of a member: the leader expires sessions and reaps, the others report
    /// the sessions they heard from.
    pub(in crate::server::core) fn ensemble_tick(&mut self) {
        let now = self.now_ms();
        let Some(role) = self.log.replicated().map(|r| r.role) else { return };
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
        if self.log.replicated().and_then(|r| r.hold_conns_until).is_some_and(|until| now >= until) {
            if let Some(r) = self.repl() {
                r.hold_conns_until = None;
            }
            if role == Role::Looking {
                tracing::info!("no leader within an election timeout: closing client connections");
                self.close_client_conns();
            }
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
                let interval = self.cfg.session_report_ms();
                let Some(r) = self.log.replicated_mut() else { return };
                if now < r.next_report_ms {
                    return;
                }
                let since = r.next_report_ms.saturating_sub(interval);
                r.next_report_ms = now + interval;
                let mut sids: HashSet<SessionId> = std::mem::take(&mut r.touched);
                // Pings a connection answered itself count as much as requests.
                sids.extend(self.heard_since(since));
                let Some(r) = self.log.replicated_mut() else { return };
                // A report that finds its lane full goes with the next one.
                if !sids.is_empty() && !r.out.send(Proposal::Touch(sids.iter().copied().collect())) {
                    r.touched.extend(sids);
                }
            }
            Role::Looking => {}
        }
    }

    /// A client that allows read-only mode, on a member cut off from the quorum: its session is
    /// served read-only (ReadOnlyZooKeeperServer). A new one is local to this member; an
    /// existing one is re-attached after the usual password check, without the log.
    pub(in crate::server::core) fn connect_read_only(&mut self, id: ConnId, req: ConnectRequest) {
        if let Some(c) = self.conns.get_mut(&id) {
            c.read_only = true;
        }
        let timeout =
            req.timeout_ms.clamp(self.cfg.min_session_timeout_ms as i32, self.cfg.max_session_timeout_ms as i32);
        let Some(ids) = self.conns.get(&id).map(|c| c.handle.connect_ids()) else { return };
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
            let local = self.log.replicated().is_some_and(|r| r.ro_sessions.contains(&sid));
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
    pub(in crate::server::core) fn serve_read_only(&mut self, conn: ConnId, sid: SessionId, req: &Request) -> bool {
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
        if pipelines(req) || is_barrier(req) || req.op == OpCode::Check {
            self.reply(conn, req.xid, Err(ErrorCode::NotReadOnly));
            return true;
        }
        false
    }

    /// This member's role, leader and last applied index (for the operator views).
    pub fn ensemble_view(&self) -> Option<(Role, Option<u64>, Option<LogId>)> {
        self.log.replicated().map(|r| (r.role, r.leader, r.applied))
    }
}
