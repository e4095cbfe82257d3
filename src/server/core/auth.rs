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
    /// SASL is not required; the session stays until it expires. The mechanism is the server's
    /// one: GSSAPI when its JAAS login is Kerberos, else DIGEST-MD5.
    pub(super) fn sasl(&mut self, conn: ConnId, sid: SessionId, xid: i32, token: &[u8]) {
        let ok = |t: Option<Vec<u8>>| {
            Outbound::Reply(ReplyHeader { xid, zxid: 0, err: 0 }, Response::Sasl(t.map(Into::into)))
        };
        // Arcs, so that the accounts are not copied per token while a connection is borrowed.
        let (kerberos, cfg) = (self.kerberos.clone(), self.cfg.clone());
        let users = cfg.sasl_users.as_ref();
        let Some(c) = self.conns.get_mut(&conn) else { return };
        let exchange = match (&kerberos, users, &mut c.sasl) {
            (_, _, Some(x)) => x,
            (Some(k), _, slot) => slot.insert(SaslExchange::Gssapi(Box::new(k.server()))),
            (None, Some(_), slot) => slot.insert(SaslExchange::Digest(DigestServer::new())),
            (None, None, _) => {
                // No SASL server configured: ZooKeeper answers with an empty (null) token.
                self.send(conn, ok(None));
                return;
            }
        };
        let step = match exchange {
            SaslExchange::Digest(d) => {
                let nonce: [u8; 30] = rand::random();
                match users.map(|u| d.step(token, &u.0, &nonce)) {
                    Some(Ok(step)) => Ok((Some(step.token), step.authorized.map(|u| ("DIGEST-MD5", u)))),
                    Some(Err(e)) => Err(e.to_string()),
                    None => Err("no DIGEST-MD5 accounts".to_owned()),
                }
            }
            SaslExchange::Gssapi(g) => match g.step(token) {
                Ok(step) => {
                    let id = step.authenticated.map(|(principal, authz)| {
                        let rules = kerberos.as_ref().map(|k| &k.rules);
                        ("GSSAPI", gssapi_id(rules, conn, &principal, authz))
                    });
                    Ok((step.token, id))
                }
                Err(e) => Err(e.to_string()),
            },
        };
        match step {
            Ok((token, authorized)) => {
                if let Some((mechanism, user)) = authorized {
                    tracing::info!(conn, session = format!("0x{sid:x}"), user, mechanism, "SASL authenticated");
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
                self.send(conn, ok(token));
            }
            Err(e) => {
                tracing::warn!(conn, session = format!("0x{sid:x}"), "SASL authentication failed: {e}");
                let err = match &self.cfg.enforce_auth {
                    Some(e) if e.sasl_required() => ErrorCode::SessionClosedRequireSaslAuth,
                    _ => ErrorCode::AuthFailed,
                };
                let header = ReplyHeader { xid, zxid: 0, err: err.code() };
                self.send(conn, Outbound::Reply(header, Response::Sasl(None)));
                self.close_conn(conn);
            }
        }
    }
}

impl Core {
    /// `enforce.auth`: a request other than auth and sasl from a session without the scheme is
    /// answered SESSIONCLOSEDREQUIRESASLAUTH and its connection closed; the session stays until
    /// it expires (ZooKeeper's `AuthenticationHelper.enforceAuthentication`, pings included).
    pub(super) fn refused_unauthenticated(&mut self, conn: ConnId, sid: SessionId, req: &Request) -> bool {
        let Some(enforce) = &self.cfg.enforce_auth else { return false };
        if matches!(req.body, RequestBody::Auth { .. } | RequestBody::Sasl { .. }) {
            return false;
        }
        let ids = ids_of(&self.sessions, sid);
        if ids.iter().any(|i| enforce.schemes.contains(&i.scheme)) {
            return false;
        }
        let schemes: Vec<&str> = ids.iter().map(|i| i.scheme.as_str()).collect();
        tracing::error!(
            conn,
            session = format!("0x{sid:x}"),
            ?schemes,
            expected = ?enforce.schemes,
            "client authentication scheme(s) do not match the expected authentication scheme: closing the connection"
        );
        let header = ReplyHeader { xid: req.xid, zxid: 0, err: ErrorCode::SessionClosedRequireSaslAuth.code() };
        self.send(conn, Outbound::Reply(header, Response::Empty));
        self.close_conn(conn);
        true
    }
}

/// A connection's SASL exchange, by the server's mechanism.
pub(super) enum SaslExchange {
    Digest(DigestServer),
    Gssapi(Box<crate::security::gssapi::sasl::GssapiServer<crate::security::gssapi::ffi::Context>>),
}

/// The `sasl` id of a Kerberos login. When no auth_to_local rule applies, ZooKeeper's
/// `SaslServerCallbackHandler` logs an error and keeps the authorization id the client sent.
fn gssapi_id(
    rules: Option<&crate::security::gssapi::name::Rules>,
    conn: ConnId,
    principal: &str,
    authz: String,
) -> String {
    match rules.map(|r| r.sasl_id(principal)) {
        Some(Ok(id)) => id,
        Some(Err(e)) => {
            tracing::error!(conn, principal, "failed to set name based on Kerberos authentication rules: {e}");
            authz
        }
        None => authz,
    }
}
