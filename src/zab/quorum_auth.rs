//! Quorum SASL, the learner's side: an observer of a ZooKeeper ensemble with
//! `quorum.auth.enableSasl` and `quorum.auth.learnerRequireSasl` authenticates with DIGEST-MD5
//! (the JAAS `QuorumLearner` login) on every connection it opens: to the leader's quorum port
//! before OBSERVERINFO, to each voter's election port after the initial message and before
//! its notification (docs/zab-quorum-sasl.md, checked against Debian's ZooKeeper 3.8).
//!
//! Each step is a `QuorumAuthPacket` written as a bare jute record (no length prefix, the tag
//! is not written): magic (long), status (int), token (buffer).
//!
//! ```text
//!  learner                                leader / voter
//!  IN_PROGRESS, empty token  ───────────►
//!                            ◄─────────── IN_PROGRESS, challenge (realm, nonce, md5-sess)
//!  IN_PROGRESS, response     ───────────►
//!                            ◄─────────── SUCCESS, rspauth=…   (or ERROR, empty, and it closes)
//! ```

use crate::security::digest_md5::{DigestClient, SaslError, QUORUM_PROTOCOL, QUORUM_SERVER_NAME};
use std::io::{Read, Write};

/// `QuorumAuth.QUORUM_AUTH_MAGIC_NUMBER`: what a leader peeks for to tell an auth packet from
/// a learner's first QuorumPacket.
pub const MAGIC: i64 = 0x5F24_3501_3501_EDCC;
/// `QuorumAuth.Status`.
pub const IN_PROGRESS: i32 = 0;
pub const SUCCESS: i32 = 1;
pub const ERROR: i32 = -1;
/// Java's learner gives up after this many rounds (`SaslQuorumAuthServer.MAX_RETRIES` on the
/// other side); DIGEST-MD5 needs two.
const MAX_ROUNDS: usize = 5;
/// A token larger than this is no DIGEST-MD5 challenge.
const MAX_TOKEN: usize = 64 * 1024;

/// The `username`/`password` of the JAAS login section (`QuorumLearner` by default).
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: String,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("user", &self.user).finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("quorum SASL: {0}")]
    Io(#[from] std::io::Error),
    #[error("quorum SASL: the peer answered no auth packet (magic 0x{0:x}): does it require quorum SASL?")]
    NotAuth(i64),
    #[error("quorum SASL: the peer refused the login of {user:?} (status {status})")]
    Refused { user: String, status: i32 },
    #[error("quorum SASL: {0}")]
    Sasl(#[from] SaslError),
    #[error("quorum SASL: no success after {MAX_ROUNDS} rounds")]
    TooManyRounds,
    #[error("quorum SASL: a token of {0} bytes")]
    TooLarge(i32),
}

/// One `QuorumAuthPacket` as written.
pub fn encode(status: i32, token: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(16 + token.len());
    out.extend_from_slice(&MAGIC.to_be_bytes());
    out.extend_from_slice(&status.to_be_bytes());
    out.extend_from_slice(&(token.len() as i32).to_be_bytes());
    out.extend_from_slice(token);
    out
}

/// Reads one `QuorumAuthPacket`: (status, token; a null token is empty).
pub fn read(r: &mut impl Read) -> Result<(i32, Vec<u8>), AuthError> {
    let mut head = [0u8; 16];
    r.read_exact(&mut head)?;
    let magic = i64::from_be_bytes(head[0..8].try_into().unwrap_or_default());
    if magic != MAGIC {
        return Err(AuthError::NotAuth(magic));
    }
    let status = i32::from_be_bytes(head[8..12].try_into().unwrap_or_default());
    let len = i32::from_be_bytes(head[12..16].try_into().unwrap_or_default());
    let n = match usize::try_from(len) {
        Ok(n) if n <= MAX_TOKEN => n,
        Ok(_) => return Err(AuthError::TooLarge(len)),
        Err(_) if len == -1 => 0,
        Err(_) => return Err(AuthError::TooLarge(len)),
    };
    let mut token = vec![0u8; n];
    r.read_exact(&mut token)?;
    Ok((status, token))
}

/// Runs the learner's side of the exchange on a connected stream; returns once the peer said
/// SUCCESS and proved it knows the password (its `rspauth`).
pub fn authenticate<S: Read + Write>(s: &mut S, creds: &Credentials) -> Result<(), AuthError> {
    let cnonce: [u8; 16] = rand::random();
    let mut client = DigestClient::new(&creds.user, &creds.password, QUORUM_PROTOCOL, QUORUM_SERVER_NAME, &cnonce);
    s.write_all(&encode(IN_PROGRESS, &[]))?;
    s.flush()?;
    for _ in 0..MAX_ROUNDS {
        match read(s)? {
            (IN_PROGRESS, challenge) => {
                let response = client.respond(&challenge)?;
                s.write_all(&encode(IN_PROGRESS, &response))?;
                s.flush()?;
            }
            (SUCCESS, last) => {
                client.finish(&last)?;
                return Ok(());
            }
            (status, _) => return Err(AuthError::Refused { user: creds.user.clone(), status }),
        }
    }
    Err(AuthError::TooManyRounds)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::security::digest_md5::DigestServer;
    use std::collections::BTreeMap;

    /// A leader's side as `SaslQuorumAuthServer` runs it, over a socket pair.
    fn leader(sock: std::net::TcpStream, users: BTreeMap<String, String>) -> std::thread::JoinHandle<Option<String>> {
        std::thread::spawn(move || {
            let mut s = sock;
            let mut server = DigestServer::for_service(QUORUM_PROTOCOL, QUORUM_SERVER_NAME);
            loop {
                let (status, token) = read(&mut s).ok()?;
                assert_eq!(status, IN_PROGRESS, "a learner always sends IN_PROGRESS");
                match server.step(&token, &users, b"leader-nonce") {
                    Ok(step) if step.authorized.is_some() => {
                        s.write_all(&encode(SUCCESS, &step.token)).ok()?;
                        return step.authorized;
                    }
                    Ok(step) => s.write_all(&encode(IN_PROGRESS, &step.token)).ok()?,
                    Err(_) => {
                        s.write_all(&encode(ERROR, &[])).ok()?;
                        return None;
                    }
                }
            }
        })
    }

    fn pair() -> (std::net::TcpStream, std::net::TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        (c, l.accept().unwrap().0)
    }

    #[test]
    fn a_learner_logs_in_and_a_wrong_password_is_refused() {
        let users: BTreeMap<String, String> = [("learner".to_owned(), "pw".to_owned())].into();
        let (mut c, s) = pair();
        let l = leader(s, users.clone());
        authenticate(&mut c, &Credentials { user: "learner".into(), password: "pw".into() }).unwrap();
        assert_eq!(l.join().unwrap().as_deref(), Some("learner"));

        let (mut c, s) = pair();
        let l = leader(s, users);
        let e = authenticate(&mut c, &Credentials { user: "learner".into(), password: "no".into() }).unwrap_err();
        assert!(matches!(e, AuthError::Refused { status: ERROR, .. }), "{e}");
        assert_eq!(l.join().unwrap(), None);
    }

    #[test]
    fn the_first_packet_is_javas_sixteen_bytes() {
        // Captured from a Java learner (strace) against Debian's ZooKeeper 3.8.
        assert_eq!(encode(IN_PROGRESS, &[]), [0x5f, 0x24, 0x35, 0x01, 0x35, 0x01, 0xed, 0xcc, 0, 0, 0, 0, 0, 0, 0, 0]);
        let mut r = &[0x5f, 0x24, 0x35, 0x01, 0x35, 0x01, 0xed, 0xcc, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff][..];
        assert_eq!(read(&mut r).unwrap(), (SUCCESS, vec![]));
        let mut not = &[0u8; 16][..];
        assert!(matches!(read(&mut not), Err(AuthError::NotAuth(0))));
    }
}
