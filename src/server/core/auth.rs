//! `addauth` (digest, ip, x509 identities) and SASL DIGEST-MD5 rounds in the core.

use super::*;

impl Core {
    /// Auth replies echo the request's xid (-4 from the Java client, a normal xid from others).
    pub(super) fn auth(&mut self, conn: ConnId, sid: SessionId, xid: i32, scheme: &str, auth: Option<&[u8]>) {
        let text = auth.map(|a| String::from_utf8_lossy(a).into_owned()).unwrap_or_default();
        let mut new_ids = Vec::new();
        match scheme {
            "digest" => {
                if let Some(d) = acl::digest(&text) {
                    if self.cfg.super_digest.as_deref() == Some(d.as_str()) {
                        new_ids.push(Id::new("super", ""));
                    }
                    new_ids.push(Id::new("digest", &d));
                }
            }
            "ip" => {
                if let Some(c) = self.conns.get(&conn) {
                    new_ids.push(Id::new("ip", &c.handle.peer.to_string()));
                }
            }
            _ => {}
        }
        if new_ids.is_empty() {
            tracing::info!(conn, scheme, "authentication failed");
            self.stats.auth_failed.fetch_add(1, Ordering::Relaxed);
            self.send(
                conn,
                Outbound::Reply(ReplyHeader { xid, zxid: 0, err: ErrorCode::AuthFailed.code() }, Response::Empty),
            );
            self.close_conn(conn);
            return;
        }
        if let Some(s) = self.sessions.get_mut(&sid) {
            for id in new_ids {
                crate::authinfo::add(&mut s.ids, id);
            }
        }
        self.send(conn, Outbound::Reply(ReplyHeader { xid, zxid: 0, err: 0 }, Response::Empty));
    }

    /// One SASL token (`ZooKeeperServer.processSasl`). Replies carry zxid 0. A failed exchange
    /// answers AUTHFAILED with a null token and closes the connection, as ZooKeeper does when
    /// SASL is not required; the session stays until it expires.
    pub(super) fn sasl(&mut self, conn: ConnId, sid: SessionId, xid: i32, token: &[u8]) {
        let ok = |t: Option<Vec<u8>>| {
            Outbound::Reply(ReplyHeader { xid, zxid: 0, err: 0 }, Response::Sasl(t.map(Into::into)))
        };
        let Some(users) = self.cfg.sasl_users.as_ref() else {
            // No SASL server configured: ZooKeeper answers with an empty (null) token.
            self.send(conn, ok(None));
            return;
        };
        let Some(c) = self.conns.get_mut(&conn) else { return };
        let nonce: [u8; 30] = rand::random();
        let step = c.sasl.get_or_insert_with(DigestServer::new).step(token, &users.0, &nonce);
        match step {
            Ok(step) => {
                if let Some(user) = step.authorized {
                    tracing::info!(conn, session = format!("0x{sid:x}"), user, "SASL DIGEST-MD5 authenticated");
                    let mut new_ids = vec![Id::new("sasl", &user)];
                    if self.cfg.sasl_super_user.as_deref() == Some(user.as_str()) {
                        new_ids.push(Id::new("super", ""));
                    }
                    if let Some(s) = self.sessions.get_mut(&sid) {
                        for id in new_ids {
                            crate::authinfo::add(&mut s.ids, id);
                        }
                    }
                }
                self.send(conn, ok(Some(step.token)));
            }
            Err(e) => {
                tracing::warn!(conn, session = format!("0x{sid:x}"), "SASL authentication failed: {e}");
                let header = ReplyHeader { xid, zxid: 0, err: ErrorCode::AuthFailed.code() };
                self.send(conn, Outbound::Reply(header, Response::Sasl(None)));
                self.close_conn(conn);
            }
        }
    }
}
