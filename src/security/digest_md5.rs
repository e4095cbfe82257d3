//! The server side of SASL DIGEST-MD5 (RFC 2831) as ZooKeeper runs it over opcode 102: protocol
//! `zookeeper`, server name and realm `zk-sasl-md5`, qop `auth` only (no integrity or privacy
//! layer), users and passwords from the JAAS `Server` section.
//!
//! One [`DigestServer`] per connection; [`DigestServer::step`] takes each client token and gives
//! the next server token. Pure apart from the nonce's randomness, which is passed in.

use base64::Engine;
use md5::{Digest, Md5};
use std::collections::BTreeMap;

/// ZooKeeper's `ZooKeeperSaslServer`: `Sasl.createSaslServer("DIGEST-MD5", "zookeeper", "zk-sasl-md5", ...)`.
pub const PROTOCOL: &str = "zookeeper";
pub const SERVER_NAME: &str = "zk-sasl-md5";

/// Why an exchange failed; every variant becomes AUTHFAILED for the client, as a Java
/// `SaslException` does in `ZooKeeperServer.processSasl`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SaslError {
    #[error("malformed DIGEST-MD5 response: {0}")]
    Malformed(String),
    #[error("DIGEST-MD5 response mismatch: {0}")]
    Mismatch(&'static str),
    #[error("authentication failed for user {0:?}")]
    BadCredentials(String),
    #[error("user {0:?} may not act as {1:?}")]
    NotAuthorized(String, String),
    #[error("the exchange is already complete")]
    Complete,
}

#[derive(Debug)]
enum State {
    /// Waiting for the client's (empty) first token.
    Start,
    /// Challenge sent with this nonce.
    Challenged {
        nonce: String,
    },
    Done,
}

/// One connection's DIGEST-MD5 exchange.
#[derive(Debug)]
pub struct DigestServer {
    state: State,
    protocol: &'static str,
    server_name: &'static str,
}

/// ZooKeeper's quorum SASL (`SaslQuorumAuthLearner`/`SaslQuorumAuthServer`): protocol
/// `zookeeper-quorum`, server name and realm `zk-quorum-sasl-md5` (checked against Debian's 3.8:
/// any other digest-uri is refused as "Mismatched URI").
pub const QUORUM_PROTOCOL: &str = "zookeeper-quorum";
pub const QUORUM_SERVER_NAME: &str = "zk-quorum-sasl-md5";

/// What a step produced: the token to send and, when the exchange is complete, the user.
#[derive(Debug, PartialEq, Eq)]
pub struct Step {
    pub token: Vec<u8>,
    pub authorized: Option<String>,
}

impl Default for DigestServer {
    fn default() -> Self {
        DigestServer::new()
    }
}

impl DigestServer {
    pub fn new() -> DigestServer {
        DigestServer::for_service(PROTOCOL, SERVER_NAME)
    }

    /// The exchange for another service (quorum SASL: `QUORUM_PROTOCOL`, `QUORUM_SERVER_NAME`).
    pub fn for_service(protocol: &'static str, server_name: &'static str) -> DigestServer {
        DigestServer { state: State::Start, protocol, server_name }
    }

    /// Handles one client token. `nonce_bytes` seeds the challenge nonce (random in the server,
    /// fixed in tests).
    pub fn step(
        &mut self,
        token: &[u8],
        users: &BTreeMap<String, String>,
        nonce_bytes: &[u8],
    ) -> Result<Step, SaslError> {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Start => {
                // Java's DigestMD5Server ignores whatever the first token holds (ZooKeeper's
                // client sends an empty one) and answers with the challenge.
                let _ = token;
                let nonce = base64::engine::general_purpose::STANDARD.encode(nonce_bytes);
                // The challenge as Java's DigestMD5Server words it: qop is left out when it is
                // only the default "auth", maxbuf when it is the default 65536.
                let challenge =
                    format!("realm=\"{}\",nonce=\"{nonce}\",charset=utf-8,algorithm=md5-sess", self.server_name);
                self.state = State::Challenged { nonce };
                Ok(Step { token: challenge.into_bytes(), authorized: None })
            }
            State::Challenged { nonce } => {
                let uri = format!("{}/{}", self.protocol, self.server_name);
                let (rspauth, user) = verify(token, &nonce, users, self.server_name, &uri)?;
                Ok(Step { token: format!("rspauth={rspauth}").into_bytes(), authorized: Some(user) })
            }
            State::Done => Err(SaslError::Complete),
        }
    }
}

/// Splits `key=value,key="quoted, value"` into pairs (keys lower-cased).
fn directives(text: &str) -> Result<BTreeMap<String, String>, SaslError> {
    let mut out = BTreeMap::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut key = String::new();
        while let Some(c) = chars.peek().copied() {
            if c == '=' {
                break;
            }
            key.push(c);
            chars.next();
        }
        if chars.next() != Some('=') {
            return Err(SaslError::Malformed(format!("directive {key:?} has no value")));
        }
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    None => return Err(SaslError::Malformed(format!("unterminated value of {key:?}"))),
                    Some('"') => break,
                    Some('\\') => match chars.next() {
                        Some(c) => value.push(c),
                        None => return Err(SaslError::Malformed("dangling escape".into())),
                    },
                    Some(c) => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.peek().copied() {
                if c == ',' {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        let key = key.trim().to_ascii_lowercase();
        if out.insert(key.clone(), value.trim().to_owned()).is_some() {
            return Err(SaslError::Malformed(format!("directive {key:?} given twice")));
        }
    }
    Ok(out)
}

/// RFC 2831 §2.1.2.1: with charset=utf-8, strings that fit ISO-8859-1 are hashed in it.
fn hash_bytes(s: &str) -> Vec<u8> {
    if s.chars().all(|c| (c as u32) < 0x100) {
        s.chars().map(|c| c as u8).collect()
    } else {
        s.as_bytes().to_vec()
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn md5_of(parts: &[&[u8]]) -> [u8; 16] {
    let mut h = Md5::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

/// RFC 2831 `response-value` (and `rspauth` when `a2_prefix` is empty).
#[allow(clippy::too_many_arguments)]
fn response_value(
    user: &str,
    realm: &str,
    password: &str,
    nonce: &str,
    cnonce: &str,
    authzid: Option<&str>,
    nc: &str,
    qop: &str,
    a2_prefix: &str,
    uri: &str,
) -> String {
    let secret = md5_of(&[&hash_bytes(user), b":", &hash_bytes(realm), b":", &hash_bytes(password)]);
    let mut a1: Vec<&[u8]> = vec![&secret, b":", nonce.as_bytes(), b":", cnonce.as_bytes()];
    if let Some(z) = authzid {
        a1.push(b":");
        a1.push(z.as_bytes());
    }
    let ha1 = hex(&md5_of(&a1));
    let ha2 = hex(&md5_of(&[a2_prefix.as_bytes(), b":", uri.as_bytes()]));
    let kd = [ha1.as_bytes(), b":", nonce.as_bytes(), b":", nc.as_bytes(), b":", cnonce.as_bytes(), b":"];
    let mut all: Vec<&[u8]> = kd.to_vec();
    all.extend_from_slice(&[qop.as_bytes(), b":", ha2.as_bytes()]);
    hex(&md5_of(&all))
}

/// Checks the client's digest-response; returns the rspauth value and the authorized user.
fn verify(
    token: &[u8],
    nonce: &str,
    users: &BTreeMap<String, String>,
    server_name: &str,
    want_uri: &str,
) -> Result<(String, String), SaslError> {
    let text = std::str::from_utf8(token).map_err(|_| SaslError::Malformed("not UTF-8".into()))?;
    let d = directives(text)?;
    let get = |k: &str| d.get(k).map(String::as_str);
    let need = |k: &'static str| get(k).ok_or_else(|| SaslError::Malformed(format!("missing {k}")));
    let user = need("username")?;
    let realm = get("realm").unwrap_or("");
    if realm != server_name {
        return Err(SaslError::Mismatch("realm"));
    }
    if need("nonce")? != nonce {
        return Err(SaslError::Mismatch("nonce"));
    }
    let cnonce = need("cnonce")?;
    let nc = need("nc")?;
    if nc != "00000001" {
        return Err(SaslError::Mismatch("nonce-count"));
    }
    let qop = get("qop").unwrap_or("auth");
    if qop != "auth" {
        return Err(SaslError::Mismatch("qop"));
    }
    if get("charset").is_some_and(|c| !c.eq_ignore_ascii_case("utf-8")) {
        return Err(SaslError::Mismatch("charset"));
    }
    let uri = need("digest-uri")?;
    if uri != want_uri {
        return Err(SaslError::Mismatch("digest-uri"));
    }
    let given = need("response")?;
    let authzid = get("authzid");
    let Some(password) = users.get(user) else {
        return Err(SaslError::BadCredentials(user.to_owned()));
    };
    let want = response_value(user, realm, password, nonce, cnonce, authzid, nc, qop, "AUTHENTICATE", uri);
    let same = want.len() == given.len()
        && want.bytes().zip(given.to_ascii_lowercase().bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
    if !same {
        return Err(SaslError::BadCredentials(user.to_owned()));
    }
    // ZooKeeper's SaslServerCallbackHandler authorizes only a client acting as itself.
    if let Some(z) = authzid.filter(|z| *z != user) {
        return Err(SaslError::NotAuthorized(user.to_owned(), z.to_owned()));
    }
    let rspauth = response_value(user, realm, password, nonce, cnonce, authzid, nc, qop, "", uri);
    Ok((rspauth, user.to_owned()))
}

/// The client side: what a ZooKeeper learner does toward a leader that requires quorum SASL
/// (Java's DigestMD5Client as `SaslQuorumAuthLearner` drives it: an empty first token, one
/// response to the challenge with authzid = the user, then the server's `rspauth` checked).
#[derive(Debug)]
pub struct DigestClient {
    user: String,
    password: String,
    uri: String,
    cnonce: String,
    /// The `rspauth` the server must send once it accepted the response.
    expect: Option<String>,
}

impl DigestClient {
    /// `cnonce_bytes`: random in a learner, fixed in tests.
    pub fn new(user: &str, password: &str, protocol: &str, server_name: &str, cnonce_bytes: &[u8]) -> DigestClient {
        DigestClient {
            user: user.to_owned(),
            password: password.to_owned(),
            uri: format!("{protocol}/{server_name}"),
            cnonce: base64::engine::general_purpose::STANDARD.encode(cnonce_bytes),
            expect: None,
        }
    }

    /// The digest-response to the server's challenge.
    pub fn respond(&mut self, challenge: &[u8]) -> Result<Vec<u8>, SaslError> {
        let text = std::str::from_utf8(challenge).map_err(|_| SaslError::Malformed("not UTF-8".into()))?;
        let d = directives(text)?;
        let nonce = d.get("nonce").ok_or_else(|| SaslError::Malformed("challenge without a nonce".into()))?;
        let realm = d.get("realm").map_or("", String::as_str);
        if d.get("algorithm").is_some_and(|a| a != "md5-sess") {
            return Err(SaslError::Mismatch("algorithm"));
        }
        if d.get("qop").is_some_and(|q| !q.split(',').any(|o| o.trim() == "auth")) {
            return Err(SaslError::Mismatch("qop"));
        }
        let (user, nc, qop) = (self.user.as_str(), "00000001", "auth");
        let value = |a2_prefix: &str| {
            let (pw, cnonce) = (&self.password, &self.cnonce);
            response_value(user, realm, pw, nonce, cnonce, Some(user), nc, qop, a2_prefix, &self.uri)
        };
        let response = value("AUTHENTICATE");
        self.expect = Some(value(""));
        let q = |v: &str| v.replace('\\', "\\\\").replace('"', "\\\"");
        Ok(format!(
            "charset=utf-8,username=\"{}\",realm=\"{}\",nonce=\"{}\",nc={nc},cnonce=\"{}\",digest-uri=\"{}\",\
             maxbuf=65536,response={response},qop={qop},authzid=\"{}\"",
            q(user),
            q(realm),
            q(nonce),
            self.cnonce,
            self.uri,
            q(user)
        )
        .into_bytes())
    }

    /// Checks the server's last token (`rspauth=...`): the server knew the password too.
    pub fn finish(&mut self, token: &[u8]) -> Result<(), SaslError> {
        let text = std::str::from_utf8(token).map_err(|_| SaslError::Malformed("not UTF-8".into()))?;
        let d = directives(text)?;
        match (d.get("rspauth"), self.expect.take()) {
            (Some(got), Some(want)) if got.eq_ignore_ascii_case(&want) => Ok(()),
            (Some(_), Some(_)) => Err(SaslError::Mismatch("rspauth")),
            (None, _) => Err(SaslError::Malformed("no rspauth in the server's last token".into())),
            (_, None) => Err(SaslError::Complete),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client side computed independently (RFC 2831 §4's example values, our realm and URI).
    fn client_response(user: &str, password: &str, nonce: &str) -> String {
        let cnonce = "OA6MHXh6VqTrRk";
        let r = response_value(
            user,
            SERVER_NAME,
            password,
            nonce,
            cnonce,
            None,
            "00000001",
            "auth",
            "AUTHENTICATE",
            "zookeeper/zk-sasl-md5",
        );
        format!(
            "charset=utf-8,username=\"{user}\",realm=\"zk-sasl-md5\",nonce=\"{nonce}\",nc=00000001,\
             cnonce=\"{cnonce}\",digest-uri=\"zookeeper/zk-sasl-md5\",maxbuf=65536,response={r},qop=auth"
        )
    }

    #[test]
    fn rfc2831_example_digest() {
        // RFC 2831 §4: chris / secret, realm elwood.innosoft.com, imap service.
        let r = response_value(
            "chris",
            "elwood.innosoft.com",
            "secret",
            "OA6MG9tEQGm2hh",
            "OA6MHXh6VqTrRk",
            None,
            "00000001",
            "auth",
            "AUTHENTICATE",
            "imap/elwood.innosoft.com",
        );
        assert_eq!(r, "d388dad90d4bbd760a152321f2143af7");
        let rsp = response_value(
            "chris",
            "elwood.innosoft.com",
            "secret",
            "OA6MG9tEQGm2hh",
            "OA6MHXh6VqTrRk",
            None,
            "00000001",
            "auth",
            "",
            "imap/elwood.innosoft.com",
        );
        assert_eq!(rsp, "ea40f60335c427b5527b84dbabcdfffd");
    }

    #[test]
    fn the_client_side_passes_the_quorum_server_and_checks_its_rspauth() {
        let users: BTreeMap<String, String> = [("learner".to_owned(), "pw".to_owned())].into();
        let mut s = DigestServer::for_service(QUORUM_PROTOCOL, QUORUM_SERVER_NAME);
        let mut c = DigestClient::new("learner", "pw", QUORUM_PROTOCOL, QUORUM_SERVER_NAME, b"cn");
        let challenge = s.step(b"", &users, b"nonce").unwrap().token;
        let done = s.step(&c.respond(&challenge).unwrap(), &users, b"").unwrap();
        assert_eq!(done.authorized.as_deref(), Some("learner"));
        c.finish(&done.token).unwrap();
        // A wrong password is refused by the server; a forged rspauth by the client.
        let mut s = DigestServer::for_service(QUORUM_PROTOCOL, QUORUM_SERVER_NAME);
        let mut c = DigestClient::new("learner", "bad", QUORUM_PROTOCOL, QUORUM_SERVER_NAME, b"cn");
        let challenge = s.step(b"", &users, b"nonce").unwrap().token;
        let r = c.respond(&challenge).unwrap();
        assert_eq!(s.step(&r, &users, b""), Err(SaslError::BadCredentials("learner".into())));
        assert_eq!(c.finish(b"rspauth=00000000000000000000000000000000"), Err(SaslError::Mismatch("rspauth")));
        // The client's URI must be the quorum one: the client port's server refuses it.
        let mut s = DigestServer::new();
        let mut c = DigestClient::new("learner", "pw", QUORUM_PROTOCOL, SERVER_NAME, b"cn");
        let challenge = s.step(b"", &users, b"nonce").unwrap().token;
        assert_eq!(s.step(&c.respond(&challenge).unwrap(), &users, b""), Err(SaslError::Mismatch("digest-uri")));
    }

    #[test]
    fn full_exchange_and_wrong_password() {
        let users: BTreeMap<String, String> = [("bob".to_owned(), "pw".to_owned())].into();
        let mut s = DigestServer::new();
        let first = s.step(b"", &users, b"0123456789").unwrap();
        let text = String::from_utf8(first.token).unwrap();
        let nonce = text.split("nonce=\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
        let done = s.step(client_response("bob", "pw", &nonce).as_bytes(), &users, b"").unwrap();
        assert_eq!(done.authorized.as_deref(), Some("bob"));
        assert!(done.token.starts_with(b"rspauth="));
        assert_eq!(s.step(b"", &users, b""), Err(SaslError::Complete));

        let mut s = DigestServer::new();
        let first = String::from_utf8(s.step(b"", &users, b"x").unwrap().token).unwrap();
        let nonce = first.split("nonce=\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
        let bad = s.step(client_response("bob", "wrong", &nonce).as_bytes(), &users, b"");
        assert_eq!(bad, Err(SaslError::BadCredentials("bob".into())));
        let mut s = DigestServer::new();
        let first = String::from_utf8(s.step(b"ignored", &users, b"n").unwrap().token).unwrap();
        assert_eq!(first, "realm=\"zk-sasl-md5\",nonce=\"bg==\",charset=utf-8,algorithm=md5-sess");
    }
}
