//! Sessions in the core: the handshake (a new session or a re-attach, handed to the log), the
//! password check, moving a session to a connection, and the pings a connection answered
//! itself, which expiry counts.

use super::*;

impl Core {
    pub(super) fn connect(&mut self, conn: ConnHandle, req: ConnectRequest) {
        let id = conn.id;
        self.conns.insert(
            id,
            Conn {
                handle: conn,
                session: None,
                sasl: None,
                queue: Default::default(),
                in_flight: 0,
                barrier: false,
                read_only: false,
            },
        );
        self.handshake(id, req);
    }

    /// Answers a connection's ConnectRequest (again, for one held while there was no leader).
    pub(super) fn handshake(&mut self, id: ConnId, req: ConnectRequest) {
        let Some(peer) = self.conns.get(&id).map(|c| c.handle.peer) else { return };
        let now = self.now_ms();
        // No leader, most likely for an election's fraction of a second: the client waits for
        // its answer instead of being refused and backing off (the Java client sleeps up to a
        // second before it tries another host).
        let Some(req) = self.log.hold_handshake(id, req, now) else {
            tracing::debug!(conn = id, %peer, "holding a handshake until this member has a leader");
            return;
        };
        let last = self.tree.last_zxid();
        if req.last_zxid_seen > last {
            // ZooKeeper refuses a client that has seen a newer state, without a response.
            tracing::warn!(conn = id, %peer, client_zxid = format!("0x{:x}", req.last_zxid_seen), our_zxid = format!("0x{last:x}"),
                "refusing session: client has seen a zxid ahead of this server");
            self.close_conn(id);
            return;
        }
        if self.log.read_only_now() && req.read_only == Some(true) {
            self.connect_read_only(id, req);
            return;
        }
        if !self.log.serving() {
            // A member with no leader is not serving (ZooKeeper closes the connection the same
            // way while it is LOOKING): the client tries the next host.
            tracing::info!(conn = id, %peer, "refusing connection: this member has no leader");
            self.close_conn(id);
            return;
        }
        let timeout =
            req.timeout_ms.clamp(self.cfg.min_session_timeout_ms as i32, self.cfg.max_session_timeout_ms as i32);
        if req.session_id == 0 {
            let sid = self.next_session;
            self.next_session += 1;
            self.submit(id, sid, Submit::Session { sid, timeout });
        } else {
            let sid = req.session_id;
            self.submit(id, sid, Submit::Attach { sid, timeout, password: req.password });
        }
    }

    /// True if `given` is the password of session `sid`: the replicated one of an ensemble's
    /// session, the one derived from this server's secret, or, for a session imported from
    /// ZooKeeper, the one ZooKeeper derived.
    pub(super) fn password_ok(&self, sid: SessionId, given: &[u8]) -> bool {
        let info = self.tree.sessions().get(&sid);
        let zk_imported = info.is_some_and(|s| s.zk_password);
        let replicated = info.and_then(|s| s.password);
        replicated.map_or_else(|| self.passwords.verify(sid, given), |p| crate::session::same_password(&p, given))
            || (zk_imported && given == crate::session::zookeeper_password(sid))
    }

    /// The password a new session gets, kept with it in its createSession txn: ZooKeeper's
    /// (derived from the id) with `zkr.zookeeperPasswords=true` or as an observer of a ZooKeeper
    /// ensemble, so that its client can re-attach to ZooKeeper after `export-zookeeper` (which
    /// counts such sessions as re-attachable); otherwise the one derived from this server's
    /// secret, which only this data directory can check.
    pub(super) fn new_session_password(&self, sid: SessionId) -> [u8; crate::proto::PASSWORD_LEN] {
        if self.cfg.zookeeper_passwords || self.log.zookeeper_passwords() {
            crate::session::zookeeper_password(sid)
        } else {
            self.passwords.for_session(sid)
        }
    }

    /// The password a session's client is given: the replicated one of an ensemble's session,
    /// ZooKeeper's for a session of (or imported from) a ZooKeeper ensemble, otherwise the one
    /// derived from this server's secret.
    fn session_password(&self, sid: SessionId) -> [u8; crate::proto::PASSWORD_LEN] {
        let info = self.tree.sessions().get(&sid);
        match info.and_then(|s| s.password) {
            Some(p) => p,
            None if self.log.zookeeper_passwords() || info.is_some_and(|s| s.zk_password) => {
                crate::session::zookeeper_password(sid)
            }
            None => self.passwords.for_session(sid),
        }
    }

    /// Answers a re-attach with "session expired" (ZooKeeper's answer for an expired or unknown
    /// session and for a wrong password alike) and closes the connection.
    pub(super) fn refuse_reattach(&mut self, conn: ConnId, sid: SessionId) {
        let peer = self.conns.get(&conn).map(|c| c.handle.peer);
        tracing::info!(
            session = format!("0x{sid:x}"),
            ?peer,
            "re-attach refused: session expired, unknown or wrong password"
        );
        self.send(conn, Outbound::Connected(ConnectResponse::expired()));
        self.close_conn(conn);
    }

    /// Moves a known session to connection `conn`; its earlier connection here closes.
    pub(super) fn reattach(&mut self, conn: ConnId, sid: SessionId, timeout: i32, ids: Vec<Id>) {
        let old = self.sessions.get(&sid).and_then(|s| s.conn);
        if let Some(old) = old.filter(|o| *o != conn) {
            self.close_conn(old);
        }
        if let Some(s) = self.sessions.get_mut(&sid) {
            s.conn = Some(conn);
            s.timeout_ms = timeout;
            s.ids = ids;
        }
        tracing::debug!(session = format!("0x{sid:x}"), "session re-attached");
    }

    /// The session is attached to the connection: answer its ConnectRequest.
    pub(super) fn attached(&mut self, id: ConnId, sid: SessionId, timeout: i32) {
        self.expiry.touch(sid, self.now_ms(), timeout as u64);
        self.log.touched(sid);
        if let Some(c) = self.conns.get_mut(&id) {
            c.session = Some(sid);
        }
        let password = self.session_password(sid).to_vec();
        let resp = ConnectResponse {
            protocol_version: 0,
            timeout_ms: timeout,
            session_id: sid,
            password,
            read_only: Some(self.conns.get(&id).is_some_and(|c| c.read_only)),
        };
        self.send(id, Outbound::Connected(resp));
    }

    /// A new session's txn is applied: the connection that asked for it (if still here) gets
    /// the session and its ConnectResponse, and what queued behind it is served.
    pub(super) fn session_created(&mut self, conn: ConnId, sid: SessionId, timeout: i32, ids: Vec<Id>) {
        if !self.conns.contains_key(&conn) {
            return;
        }
        if let Some(s) = self.sessions.get_mut(&sid) {
            s.conn = Some(conn);
            s.ids = ids;
        }
        tracing::debug!(session = format!("0x{sid:x}"), timeout, "session created");
        self.attached(conn, sid, timeout);
        self.finish(conn);
    }

    /// The session table after the tree was replaced (a leader's snapshot): one entry per
    /// session in it, none attached here.
    pub(super) fn sessions_from_tree(&mut self) {
        self.sessions = self
            .tree
            .sessions()
            .iter()
            .map(|(id, i)| (*id, Session { timeout_ms: i.timeout_ms, conn: None, ids: Vec::new() }))
            .collect();
        self.expiry = ExpiryQueue::new(self.cfg.tick_time_ms as u64);
    }

    /// Sessions whose connection here answered a ping itself at or after `since` (a learner
    /// reports them to its leader as much as those that sent requests).
    pub(super) fn heard_since(&self, since: u64) -> impl Iterator<Item = SessionId> + '_ {
        self.sessions.iter().filter_map(move |(sid, s)| {
            let heard = s.conn.and_then(|c| self.conns.get(&c)).map(|c| c.handle.last_heard.load(Ordering::Acquire));
            heard.is_some_and(|h| h != 0 && h >= since).then_some(*sid)
        })
    }

    /// Moves each session whose connection answered pings itself to the expiry bucket those
    /// pings earned, so operator views (`dump`) show when it is really due.
    pub(super) fn catch_up_pings(&mut self) {
        for (sid, s) in &self.sessions {
            let Some(c) = s.conn.and_then(|c| self.conns.get(&c)) else { continue };
            let heard = c.handle.last_heard.load(Ordering::Acquire);
            if heard != 0 {
                self.expiry.extend(*sid, heard, s.timeout_ms as u64);
            }
        }
    }

    /// True if the session's connection answered a ping itself recently enough that the
    /// session is not due yet; it is then re-queued at the time that ping makes it due.
    pub(super) fn heard_lately(&mut self, sid: SessionId, now: u64) -> bool {
        let Some(s) = self.sessions.get(&sid) else { return false };
        let Some(c) = s.conn.and_then(|c| self.conns.get(&c)) else { return false };
        let heard = c.handle.last_heard.load(Ordering::Acquire);
        let timeout = s.timeout_ms as u64;
        if heard == 0 || !self.expiry.due_after(heard, timeout, now) {
            return false;
        }
        self.expiry.touch(sid, heard, timeout);
        true
    }
}
