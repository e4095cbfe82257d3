//! Admin authentication of the AdminServer's commands that change state, as ZooKeeper 3.9.4+
//! checks its own (`Commands.runCommand`: `handleAuthentication`, then `handleAuthorization`;
//! CVE-2025-58457 was `snapshot` and `restore` served without it). Such a command names the
//! permission it needs on a node (`AuthRequest`: ALL on `/` for every one of them); the
//! request's `Authorization: <scheme> [<data>]` header becomes identities through the scheme's
//! provider, and those are checked against the node's ACL by the client port's ACL code
//! (`tree::acl::allows`), one permission bit at a time (ZOOKEEPER-4964). Read-only commands
//! need nothing, as in ZooKeeper.
//!
//! The schemes (`ServerAuthenticationProvider.handleAuthentication(HttpServletRequest, byte[])`):
//! - `digest user:password`: `digest:user:<base64 sha1>`, plus `super` when it is the
//!   `DigestAuthenticationProvider.superDigest`;
//! - `x509`: the subject of the client certificate the TLS handshake verified
//!   (`admin.needClientAuth`), plus `super` when it is `X509AuthenticationProvider.superUser`;
//! - `ip`: the connection's remote address.
//!
//! One difference, on purpose: an ACL entry for `world:anyone` does not grant these commands.
//! ZooKeeper's `/` is `world:anyone:cdrwa` unless someone changed it, and there any header with
//! a known scheme would pass (`ip` needs no secret at all); a takeover is too much to hand to
//! whoever can reach the port, so it needs `super` or an identity `/`'s ACL names.

use super::listener::Peer;
use crate::config::Config;
use crate::proto::{perms, Acl, Id};
use crate::server::ops::Ops;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use sha1::{Digest, Sha1};
use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::Arc;

/// What a command needs: every bit of `perm` on the node at `path` (`AuthRequest`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuthRequest {
    pub perm: i32,
    pub path: &'static str,
}

/// What ZooKeeper's `snapshot` and `restore` ask for, and what zkr's takeover asks for.
pub const ALL_ON_ROOT: AuthRequest = AuthRequest { perm: perms::ALL, path: "/" };

/// Why a command was refused. The texts are ZooKeeper's `CommandResponse` errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization` header: HTTP 401.
    #[error("Auth info is missing for the command")]
    Missing,
    /// A scheme zkr does not know, a malformed header, or no identity from it (`x509` without
    /// a certificate): HTTP 401. The field says which, for the log only.
    #[error("Not authenticated")]
    NotAuthenticated(String),
    /// The identities lack a permission bit: HTTP 403.
    #[error("Not authorized")]
    NotAuthorized,
    /// The node could not be read (no such node, the server stopping): HTTP 500.
    #[error("Error occurred during auth")]
    Internal(String),
}

impl AuthError {
    /// ZooKeeper's status code for it.
    pub fn status(&self) -> StatusCode {
        match self {
            AuthError::Missing | AuthError::NotAuthenticated(_) => StatusCode::UNAUTHORIZED,
            AuthError::NotAuthorized => StatusCode::FORBIDDEN,
            AuthError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn detail(&self) -> &str {
        match self {
            AuthError::NotAuthenticated(why) | AuthError::Internal(why) => why,
            AuthError::Missing => "no Authorization header",
            AuthError::NotAuthorized => "the identities lack a permission the command needs",
        }
    }
}

/// The identities the `Authorization` header proves for the connection from `peer`.
pub fn authenticate(header: Option<&str>, peer: &Peer, cfg: &Config) -> Result<Vec<Id>, AuthError> {
    let info = header.ok_or(AuthError::Missing)?;
    // `authInfo.split(" ")`: Java's split drops trailing empty strings, and wants 1 or 2 parts
    // (x509 and ip take their identity from the request, digest from the second part).
    let mut parts: Vec<&str> = info.split(' ').collect();
    while parts.len() > 1 && parts.last() == Some(&"") {
        parts.pop();
    }
    if parts.len() > 2 {
        return Err(AuthError::NotAuthenticated("the header is not `<scheme> [<data>]`".into()));
    }
    let (scheme, data) = (parts[0], parts.get(1).copied());
    let ids = match scheme {
        "digest" => {
            let data = data.ok_or_else(|| AuthError::NotAuthenticated("digest without user:password".into()))?;
            digest_ids(data, cfg.super_digest.as_deref())
        }
        "x509" => crate::security::tls::identities(peer.certs.as_deref(), cfg.x509_super_user.as_deref()),
        "ip" => vec![Id::new("ip", &peer.addr.ip().to_canonical().to_string())],
        // The scheme itself is not logged: a client that sent a password as its only word would
        // see it in the log.
        _ => return Err(AuthError::NotAuthenticated("no auth provider for that scheme".into())),
    };
    if ids.is_empty() {
        return Err(AuthError::NotAuthenticated(format!(
            "the scheme {scheme} gave no identity (no client certificate)"
        )));
    }
    Ok(ids)
}

/// `DigestAuthenticationProvider.handleAuthentication`: `generateDigest` hashes the whole text
/// and names the part before the first colon (the whole text if there is none).
fn digest_ids(user_password: &str, super_digest: Option<&str>) -> Vec<Id> {
    let user = user_password.split(':').next().unwrap_or_default();
    let hash = base64::engine::general_purpose::STANDARD.encode(Sha1::digest(user_password.as_bytes()));
    let digest = format!("{user}:{hash}");
    let mut ids = Vec::with_capacity(2);
    if super_digest == Some(digest.as_str()) {
        ids.push(Id::new("super", ""));
    }
    ids.push(Id::new("digest", &digest));
    ids
}

/// Every bit of `perm` granted to `ids` by `acl` (`handleAuthorization`, bit by bit), with
/// `super` passing everything and `world:anyone` granting nothing (see the module doc).
pub fn authorize(acl: &[Acl], perm: i32, ids: &[Id]) -> Result<(), AuthError> {
    if ids.iter().any(|i| i.scheme == "super") {
        return Ok(());
    }
    let named: Vec<Acl> = acl.iter().filter(|a| !(a.id.scheme == "world" && a.id.id == "anyone")).cloned().collect();
    // An empty list grants everything to the ACL check; here nobody is named, so nobody passes.
    if named.is_empty() {
        return Err(AuthError::NotAuthorized);
    }
    let bits = (0..i32::BITS).map(|b| 1i32 << b).filter(|bit| perm & bit != 0);
    for bit in bits {
        if !crate::tree::acl::allows(&named, bit, ids) {
            return Err(AuthError::NotAuthorized);
        }
    }
    Ok(())
}

/// Refusals are logged once per client address; past this many addresses, no more are kept.
const LOGGED_CLIENTS: usize = 4096;

/// The AdminServer's check of one command: authenticates, reads the node's ACL from the tree,
/// authorizes; a refusal is ZooKeeper's answer, logged the first time for each client.
pub struct Gate {
    ops: Arc<Ops>,
    logged: parking_lot::Mutex<HashSet<IpAddr>>,
}

impl Gate {
    pub fn new(ops: Arc<Ops>) -> Gate {
        Gate { ops, logged: parking_lot::Mutex::new(HashSet::new()) }
    }

    /// The caller's identities if it may run `command`, else the answer to send.
    pub async fn check(
        &self,
        command: &str,
        need: AuthRequest,
        headers: &HeaderMap,
        peer: &Peer,
    ) -> Result<Vec<Id>, Response> {
        let checked = match header_text(headers).and_then(|h| authenticate(h, peer, &self.ops.cfg)) {
            Err(e) => Err(e),
            Ok(ids) => match self.ops.acl_of(need.path).await {
                None => Err(AuthError::Internal(format!("cannot read the ACL of {}", need.path))),
                Some(acl) => authorize(&acl, need.perm, &ids).map(|()| ids),
            },
        };
        checked.map_err(|e| {
            self.log_refusal(command, peer, &e);
            refusal(command, &e)
        })
    }

    fn log_refusal(&self, command: &str, peer: &Peer, e: &AuthError) {
        let ip = peer.addr.ip();
        let first = {
            let mut logged = self.logged.lock();
            let first = !logged.contains(&ip) && logged.len() < LOGGED_CLIENTS;
            if first {
                logged.insert(ip);
            }
            first
        };
        if first {
            tracing::warn!(client = %peer.addr, command, "AdminServer refused {command}: {e} ({}); further refusals of this client are not logged", e.detail());
        } else {
            tracing::debug!(client = %peer.addr, command, "AdminServer refused {command}: {e} ({})", e.detail());
        }
    }
}

/// The `Authorization` header's value, if there is one.
fn header_text(headers: &HeaderMap) -> Result<Option<&str>, AuthError> {
    match headers.get(header::AUTHORIZATION) {
        None => Ok(None),
        Some(v) => v.to_str().map(Some).map_err(|_| AuthError::NotAuthenticated("the header is not text".into())),
    }
}

/// ZooKeeper's answer to a refused command: the status code and `{"command", "error"}`.
pub fn refusal(command: &str, e: &AuthError) -> Response {
    let body = serde_json::json!({ "command": command, "error": e.to_string() });
    let text = serde_json::to_string_pretty(&body).unwrap_or_default();
    (e.status(), [(header::CONTENT_TYPE, "application/json")], text).into_response()
}

#[cfg(test)]
#[path = "auth_tests.rs"]
mod tests;
