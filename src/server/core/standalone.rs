//! The core on the standalone log (`log::Standalone`): requests are prepared and applied in the
//! turn they arrive, their txns framed into the turn's records, and the committer releases the
//! turn's replies after one fsync (ZooKeeper's standalone SyncRequestProcessor, group commit).
//! Sessions expire and containers are reaped here, each through a txn of its own.

use super::log::{Log, Submit};
use super::*;

impl Core {
    /// The standalone side of `Core::submit`.
    pub(super) fn commit_now(&mut self, conn: ConnId, sid: SessionId, s: Submit) {
        match s {
            Submit::Session { sid, timeout } => {
                let Some(ids) = self.conns.get(&conn).map(|c| c.handle.connect_ids()) else { return };
                // A session with ZooKeeper's password keeps it in its txn (so the log and the
                // snapshot say so, for the export); one with this directory's secret needs none.
                let password = self.cfg.zookeeper_passwords.then(|| self.new_session_password(sid));
                self.commit(sid, TxnOp::CreateSession { timeout_ms: timeout, password });
                self.sessions.insert(sid, Session { timeout_ms: timeout, conn: Some(conn), ids });
                tracing::debug!(session = format!("0x{sid:x}"), timeout, "session created");
                self.attached(conn, sid, timeout);
            }
            Submit::Attach { sid, timeout, password } => {
                if !(self.sessions.contains_key(&sid) && self.password_ok(sid, &password)) {
                    return self.refuse_reattach(conn, sid);
                }
                let Some(ids) = self.conns.get(&conn).map(|c| c.handle.connect_ids()) else { return };
                self.reattach(conn, sid, timeout, ids);
                self.attached(conn, sid, timeout);
            }
            Submit::Write { xid, op, body } => {
                let ids = ids_of(&self.sessions, sid);
                let ctx = prep::PrepCtx {
                    session: sid,
                    ids,
                    ttl_enabled: self.cfg.ttl_enabled,
                    enforce_quota: self.cfg.enforce_quota,
                };
                let txn = prep::prepare_request(&self.tree, &ctx, op, &body);
                let (_, outcome) = self.commit(sid, txn);
                self.reply(conn, xid, writes::write_response(op, &body, outcome));
            }
            Submit::Close { xid } => {
                self.close_session(sid);
                let zxid = self.tree.last_zxid();
                self.send(conn, Outbound::Reply(ReplyHeader { xid, zxid, err: 0 }, Response::Empty));
                self.close_conn(conn);
            }
            // Standalone has nothing to wait for: everything committed is applied. The path
            // is echoed back.
            Submit::Sync { xid, path } => self.reply(conn, xid, Ok(Response::Path(path))),
        }
    }

    /// Logs (at the end of the turn) and applies one txn, then fires its watches. Returns its
    /// zxid and outcome.
    pub(super) fn commit(&mut self, session: SessionId, op: TxnOp) -> (Zxid, OpOutcome) {
        let txn = Txn { zxid: self.tree.last_zxid() + 1, time: wall_ms(), session, op };
        let Log::Standalone(s) = &mut self.log else {
            // A member never commits here: its txns come back through `apply_committed`.
            tracing::error!(zxid = txn.zxid, "a txn committed outside the log of a member: dropped");
            return (txn.zxid, OpOutcome::Error(ErrorCode::SystemError));
        };
        if s.records.is_empty() {
            s.first_zxid = txn.zxid;
        }
        wal::frame(&txn, &mut s.records);
        s.since_snapshot += 1;
        if s.since_snapshot >= self.cfg.snap_count {
            self.snapshot_in_background();
        }
        let outcome = self.apply_txn(&txn);
        (txn.zxid, outcome)
    }

    /// Closes a session: a txn that deletes its ephemerals; its connection is told to go.
    pub(super) fn close_session(&mut self, sid: SessionId) {
        if self.sessions.remove(&sid).is_none() {
            return;
        }
        self.expiry.remove(sid);
        tracing::debug!(session = format!("0x{sid:x}"), "session closed");
        self.commit(sid, TxnOp::CloseSession);
    }

    /// Expires the sessions that are due and reaps empty containers and expired TTL nodes.
    pub(super) fn standalone_tick(&mut self) {
        let now = self.now_ms();
        for sid in self.expiry.expired(now) {
            if self.heard_lately(sid, now) {
                continue;
            }
            tracing::info!(session = format!("0x{sid:x}"), "session expired");
            let conn = self.sessions.get(&sid).and_then(|s| s.conn);
            self.close_session(sid);
            if let Some(c) = conn {
                self.abort_conn(c);
            }
        }
        if now >= self.next_sweep_ms {
            self.next_sweep_ms = now + self.cfg.container_check_interval_ms;
            let mut victims = self.tree.container_candidates();
            victims.extend(self.tree.expired_ttls(wall_ms()));
            for p in victims {
                if let Some(op) = prep::prepare_reap(&self.tree, &p) {
                    tracing::debug!(path = %p, "reaping empty container or expired TTL node");
                    self.commit(0, op);
                }
            }
        }
    }

    /// Writes a snapshot of the current tree on a background thread, then purges old files.
    /// (An ensemble's snapshots are openraft's to take; an observer of ZooKeeper takes its own.)
    pub(super) fn snapshot_in_background(&mut self) {
        let (since, running) = match &mut self.log {
            Log::Standalone(s) => (&mut s.since_snapshot, &s.snapshot_running),
            Log::Observer(o) => (&mut o.since_snapshot, &o.snapshot_running),
            Log::Replicated(_) => return,
        };
        if running.swap(true, Ordering::AcqRel) {
            return;
        }
        *since = 0;
        let running = running.clone();
        let taken = std::time::Instant::now();
        let tree = self.tree.snapshot_view();
        let view_us = taken.elapsed().as_micros() as u64;
        let layout = self.layout.clone();
        let keep = self.cfg.snap_retain_count;
        let durable = self.durable.clone();
        let failed = running.clone();
        let spawned = std::thread::Builder::new().name("zkr-snapshot".into()).spawn(move || {
            // Never let a snapshot get ahead of the log: wait until its zxid is on disk.
            while durable.load(Ordering::Acquire) < tree.last_zxid() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            match storage::snapshot::write(&layout.snap_dir, &tree) {
                Ok(p) => {
                    tracing::info!(file = %p.display(), zxid = format!("0x{:x}", tree.last_zxid()), znodes = tree.node_count(), view_us, ms = taken.elapsed().as_millis() as u64, "snapshot written");
                    if let Err(e) = storage::purge(&layout, keep) {
                        tracing::warn!("purging old snapshots and logs failed: {e}");
                    }
                }
                Err(e) => tracing::warn!("snapshot failed: {e}"),
            }
            running.store(false, Ordering::Release);
        });
        if spawned.is_err() {
            failed.store(false, Ordering::Release);
        }
    }

    /// At shutdown, once the log is on disk: a snapshot makes the next start a snapshot load
    /// with nothing to replay.
    pub(super) fn snapshot_at_shutdown(&mut self) {
        let since = match &self.log {
            Log::Standalone(s) => s.since_snapshot,
            Log::Observer(o) => {
                // An observer logs no txns: its newest snapshot is all a restart (or a takeover
                // seeded from it) has. A background one still running must finish first.
                while o.snapshot_running.load(Ordering::Acquire) {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                let newest = storage::snapshot::list(&self.layout.snap_dir).ok().and_then(|l| l.first().map(|s| s.0));
                if newest == Some(self.tree.last_zxid()) {
                    0
                } else {
                    1
                }
            }
            Log::Replicated(_) => return,
        };
        if since == 0 {
            return;
        }
        while self.durable.load(Ordering::Acquire) < self.tree.last_zxid() {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        match storage::snapshot::write(&self.layout.snap_dir, &self.tree) {
            Ok(p) => tracing::info!(file = %p.display(), "snapshot written at shutdown"),
            Err(e) => tracing::warn!("snapshot at shutdown failed: {e}"),
        }
    }
}
