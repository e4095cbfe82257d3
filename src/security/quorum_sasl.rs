//! Quorum SASL: ZooKeeper's DIGEST-MD5 login between ensemble members
//! (`quorum.auth.enableSasl`). The side that opens a connection (ZooKeeper's learner) logs in
//! with the JAAS `QuorumLearner` section's `username`/`password` when
//! `quorum.auth.learnerRequireSasl=true`; the side that takes it checks the login against the
//! `QuorumServer` section's `user_<name>` accounts, and with `quorum.auth.serverRequireSasl=true`
//! refuses a connection that sends none. An observer of a ZooKeeper ensemble logs in on every
//! connection it opens: to the leader's quorum port before OBSERVERINFO, to each voter's
//! election port after the initial message and before its notification
//! (docs/zab-quorum-sasl.md, checked against Debian's ZooKeeper 3.8). zkr's own members do both
//! sides on their peer links (`raft::link`): the login goes before the hello.
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

use crate::security::digest_md5::{DigestClient, DigestServer, SaslError, Step, QUORUM_PROTOCOL, QUORUM_SERVER_NAME};
use crate::security::gssapi::{ffi, sasl as gss};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

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

/// A member's login on the connections it opens: DIGEST-MD5 (`username`/`password`) or
/// Kerberos (`Krb5LoginModule` in the `QuorumLearner` section).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Login {
    Digest(Credentials),
    Kerberos(KerberosLogin),
}

/// A Kerberos learner login: its own principal and keytab, and the principal of the member it
/// logs in to (`quorum.auth.kerberos.servicePrincipal`, `_HOST` replaced by that member's host
/// as written in its `server.N` line, lower-cased, as `SecurityUtils.getServerPrincipal` does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KerberosLogin {
    pub principal: String,
    pub keytab: PathBuf,
    pub service_principal: String,
}

impl KerberosLogin {
    /// The principal to log in to at `peer` (`host:port` as a `server.N` line writes it).
    pub fn target(&self, peer: &str) -> String {
        self.service_principal.replace("_HOST", &host_of(peer).to_lowercase())
    }
}

/// The host of `host:port` or `[v6]:port` (a bare host is itself).
fn host_of(peer: &str) -> &str {
    if let Some(rest) = peer.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(h, _)| h);
    }
    match peer.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') && p.parse::<u16>().is_ok() => h,
        _ => peer,
    }
}

/// What a member taking a connection checks a login against.
#[derive(Clone, PartialEq, Eq)]
pub enum Accounts {
    /// `QuorumServer`'s `user_<name>` DIGEST-MD5 accounts.
    Digest(BTreeMap<String, String>),
    /// `QuorumServer`'s Kerberos login: tickets for this principal are accepted from a learner
    /// whose principal's host part (if it has one) is one of the members' hosts.
    Kerberos { principal: String, keytab: PathBuf, hosts: Vec<String> },
}

impl std::fmt::Debug for Accounts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Accounts::Digest(u) => f.debug_tuple("Digest").field(&u.keys().collect::<Vec<_>>()).finish(),
            Accounts::Kerberos { principal, hosts, .. } => {
                f.debug_struct("Kerberos").field("principal", principal).field("hosts", hosts).finish()
            }
        }
    }
}

/// The process's Kerberos credentials of one kind, one per (principal, keytab), made on first use.
type CredentialCache<T> = parking_lot::Mutex<BTreeMap<(String, PathBuf), Arc<T>>>;

fn cached<T>(
    cache: &CredentialCache<T>,
    principal: &str,
    keytab: &std::path::Path,
    make: fn(&str, &std::path::Path) -> Result<T, ffi::GssError>,
) -> Result<Arc<T>, AuthError> {
    let key = (principal.to_owned(), keytab.to_owned());
    if let Some(c) = cache.lock().get(&key) {
        return Ok(c.clone());
    }
    let made = make(principal, keytab).map_err(|source| AuthError::Kerberos {
        principal: principal.to_owned(),
        keytab: keytab.display().to_string(),
        source,
    })?;
    Ok(cache.lock().entry(key).or_insert_with(|| Arc::new(made)).clone())
}

fn initiator(k: &KerberosLogin) -> Result<Arc<ffi::Initiator>, AuthError> {
    static CACHE: CredentialCache<ffi::Initiator> = parking_lot::Mutex::new(BTreeMap::new());
    cached(&CACHE, &k.principal, &k.keytab, ffi::Initiator::new)
}

fn acceptor(principal: &str, keytab: &std::path::Path) -> Result<Arc<ffi::Acceptor>, AuthError> {
    static CACHE: CredentialCache<ffi::Acceptor> = parking_lot::Mutex::new(BTreeMap::new());
    cached(&CACHE, principal, keytab, ffi::Acceptor::new)
}

/// Checks a member's Kerberos credentials at startup (the keytab must hold the principals), so
/// a bad keytab stops startup instead of failing every link later.
pub fn check_kerberos(q: &QuorumSasl) -> Result<(), AuthError> {
    if let Some(Login::Kerberos(k)) = &q.login {
        initiator(k)?;
    }
    if let Accounts::Kerberos { principal, keytab, .. } = &q.accounts {
        acceptor(principal, keytab)?;
    }
    Ok(())
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
    #[error("quorum SASL (GSSAPI): {0}")]
    Gssapi(#[from] gss::GssapiError),
    #[error("quorum SASL: Kerberos login of {principal} from keytab {keytab}: {source}")]
    Kerberos { principal: String, keytab: String, source: ffi::GssError },
    #[error("quorum SASL: {0} is not authorized to connect")]
    Unauthorized(String),
    #[error("quorum SASL: the peer said SUCCESS before the GSSAPI exchange was complete")]
    EarlySuccess,
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
    let (status, n) = parse_head(&head)?;
    let mut token = vec![0u8; n];
    r.read_exact(&mut token)?;
    Ok((status, token))
}

/// The first four bytes of every packet (of the magic): how a member taking a connection tells
/// a login from a peer hello, whose first bytes are a frame length under 2^30.
pub fn starts_packet(first: [u8; 4]) -> bool {
    first == MAGIC.to_be_bytes()[..4]
}

/// A packet's fixed part: (status, token length; a null token is empty).
fn parse_head(head: &[u8; 16]) -> Result<(i32, usize), AuthError> {
    let magic = i64::from_be_bytes(head[0..8].try_into().unwrap_or_default());
    if magic != MAGIC {
        return Err(AuthError::NotAuth(magic));
    }
    let status = i32::from_be_bytes(head[8..12].try_into().unwrap_or_default());
    let len = i32::from_be_bytes(head[12..16].try_into().unwrap_or_default());
    match usize::try_from(len) {
        Ok(n) if n <= MAX_TOKEN => Ok((status, n)),
        Err(_) if len == -1 => Ok((status, 0)),
        _ => Err(AuthError::TooLarge(len)),
    }
}

/// Reads one packet from an async stream; `first` is its first four bytes when the caller
/// already read them.
async fn read_async<S: AsyncRead + Unpin>(s: &mut S, first: Option<[u8; 4]>) -> Result<(i32, Vec<u8>), AuthError> {
    let mut head = [0u8; 16];
    match first {
        Some(f) => {
            head[..4].copy_from_slice(&f);
            s.read_exact(&mut head[4..]).await?;
        }
        None => {
            s.read_exact(&mut head).await?;
        }
    }
    let (status, n) = parse_head(&head)?;
    let mut token = vec![0u8; n];
    s.read_exact(&mut token).await?;
    Ok((status, token))
}

async fn send<S: AsyncWrite + Unpin>(s: &mut S, status: i32, token: &[u8]) -> Result<(), AuthError> {
    s.write_all(&encode(status, token)).await?;
    // A TLS stream may hold a record back until it is flushed.
    s.flush().await?;
    Ok(())
}

/// The learner's side of the exchange without I/O (`SaslQuorumAuthLearner`): the first packet to
/// send, then what each packet from the peer calls for. The blocking `authenticate` and the
/// async `login` only move its bytes.
enum LearnerExchange {
    Digest { client: DigestClient, user: String, rounds: usize },
    Kerberos { client: Box<gss::GssapiClient<ffi::ClientContext>>, principal: String, rounds: usize },
}

/// What the learner does after a packet from the peer.
enum Next {
    Send(Vec<u8>),
    /// The peer said SUCCESS (DIGEST-MD5: and proved it knows the password, its `rspauth`).
    Done,
}

impl LearnerExchange {
    /// `host`: the member logged in to, `host:port` as its `server.N` line names it.
    fn start(login: &Login, host: &str) -> Result<(LearnerExchange, Vec<u8>), AuthError> {
        match login {
            Login::Digest(creds) => {
                let cnonce: [u8; 16] = rand::random();
                let client =
                    DigestClient::new(&creds.user, &creds.password, QUORUM_PROTOCOL, QUORUM_SERVER_NAME, &cnonce);
                let x = LearnerExchange::Digest { client, user: creds.user.clone(), rounds: 0 };
                Ok((x, encode(IN_PROGRESS, &[])))
            }
            Login::Kerberos(k) => {
                let init = initiator(k)?;
                let target = k.target(host);
                let ctx = init.context(&target).map_err(|source| AuthError::Kerberos {
                    principal: target.clone(),
                    keytab: k.keytab.display().to_string(),
                    source,
                })?;
                let mut client = Box::new(gss::GssapiClient::new(ctx, &k.principal));
                // GSSAPI has an initial response: the first context token goes at once.
                let first = client.start()?;
                let x = LearnerExchange::Kerberos { client, principal: k.principal.clone(), rounds: 0 };
                Ok((x, encode(IN_PROGRESS, &first)))
            }
        }
    }

    fn on_packet(&mut self, status: i32, token: &[u8]) -> Result<Next, AuthError> {
        match self {
            LearnerExchange::Digest { client, user, rounds } => {
                *rounds += 1;
                match status {
                    IN_PROGRESS if *rounds >= MAX_ROUNDS => Err(AuthError::TooManyRounds),
                    IN_PROGRESS => Ok(Next::Send(encode(IN_PROGRESS, &client.respond(token)?))),
                    SUCCESS => {
                        client.finish(token)?;
                        Ok(Next::Done)
                    }
                    status => Err(AuthError::Refused { user: user.clone(), status }),
                }
            }
            LearnerExchange::Kerberos { client, principal, rounds } => {
                *rounds += 1;
                match status {
                    IN_PROGRESS if *rounds >= MAX_ROUNDS => Err(AuthError::TooManyRounds),
                    IN_PROGRESS => Ok(Next::Send(encode(IN_PROGRESS, &client.respond(token)?))),
                    // After the learner's last token the server's SUCCESS ends it; its token
                    // is not read (SaslQuorumAuthLearner's loop ends on isComplete).
                    SUCCESS if client.is_complete() => Ok(Next::Done),
                    SUCCESS => Err(AuthError::EarlySuccess),
                    status => Err(AuthError::Refused { user: principal.clone(), status }),
                }
            }
        }
    }
}

/// Runs the learner's side of the exchange on a connected blocking stream (the ZAB observer's
/// sockets) with the member `host`; returns once the peer said SUCCESS (and, with DIGEST-MD5,
/// proved it knows the password).
pub fn authenticate<S: Read + Write>(s: &mut S, login: &Login, host: &str) -> Result<(), AuthError> {
    let (mut x, mut out) = LearnerExchange::start(login, host)?;
    loop {
        s.write_all(&out)?;
        s.flush()?;
        let (status, token) = read(s)?;
        match x.on_packet(status, &token)? {
            Next::Send(next) => out = next,
            Next::Done => return Ok(()),
        }
    }
}

/// The learner's side on an async stream (a zkr member opening a peer connection to `host`).
pub async fn login<S: AsyncRead + AsyncWrite + Unpin>(s: &mut S, login: &Login, host: &str) -> Result<(), AuthError> {
    let (mut x, mut out) = LearnerExchange::start(login, host)?;
    loop {
        s.write_all(&out).await?;
        // A TLS stream may hold a record back until it is flushed.
        s.flush().await?;
        let (status, token) = read_async(s, None).await?;
        match x.on_packet(status, &token)? {
            Next::Send(next) => out = next,
            Next::Done => return Ok(()),
        }
    }
}

/// The side that takes a connection (`SaslQuorumAuthServer`): checks the login whose first
/// packet began with `first` against `accounts`; on success answers SUCCESS (DIGEST-MD5: with
/// the proof that it knows the password too) and returns the learner's name; on a wrong login
/// answers ERROR.
pub async fn admit<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    first: [u8; 4],
    accounts: &Accounts,
) -> Result<String, AuthError> {
    match accounts {
        Accounts::Digest(users) => admit_digest(s, first, users).await,
        Accounts::Kerberos { principal, keytab, hosts } => {
            let acceptor = match acceptor(principal, keytab) {
                Ok(a) => a,
                Err(e) => {
                    send(s, ERROR, &[]).await?;
                    return Err(e);
                }
            };
            admit_kerberos(s, first, &acceptor, hosts).await
        }
    }
}

async fn admit_digest<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    first: [u8; 4],
    users: &BTreeMap<String, String>,
) -> Result<String, AuthError> {
    let nonce: [u8; 16] = rand::random();
    let mut server = DigestServer::for_service(QUORUM_PROTOCOL, QUORUM_SERVER_NAME);
    let mut first = Some(first);
    for _ in 0..MAX_ROUNDS {
        let (_, token) = read_async(s, first.take()).await?;
        match server.step(&token, users, &nonce) {
            Ok(Step { token, authorized: Some(user) }) => {
                send(s, SUCCESS, &token).await?;
                return Ok(user);
            }
            Ok(Step { token, authorized: None }) => send(s, IN_PROGRESS, &token).await?,
            Err(e) => {
                send(s, ERROR, &[]).await?;
                return Err(AuthError::Sasl(e));
            }
        }
    }
    Err(AuthError::TooManyRounds)
}

/// `SaslQuorumServerCallbackHandler`'s rule: the learner's authorization id must be its
/// principal, and a principal with a host part (`service/host@REALM`) must name a member's host.
fn authorized(principal: &str, authz: &str, hosts: &[String]) -> bool {
    if principal != authz {
        return false;
    }
    let parts: Vec<&str> = authz.split(['/', '@']).collect();
    parts.len() != 3 || hosts.iter().any(|h| h == parts[1])
}

async fn admit_kerberos<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    first: [u8; 4],
    acceptor: &Arc<ffi::Acceptor>,
    hosts: &[String],
) -> Result<String, AuthError> {
    let mut server = gss::GssapiServer::new(acceptor.context());
    let mut first = Some(first);
    for _ in 0..MAX_ROUNDS {
        let (_, token) = read_async(s, first.take()).await?;
        match server.step(&token) {
            Ok(gss::Step { authenticated: Some((principal, authz)), .. }) => {
                if !authorized(&principal, &authz, hosts) {
                    send(s, ERROR, &[]).await?;
                    return Err(AuthError::Unauthorized(authz));
                }
                send(s, SUCCESS, &[]).await?;
                return Ok(principal);
            }
            Ok(gss::Step { token, authenticated: None }) => {
                send(s, IN_PROGRESS, token.as_deref().unwrap_or(&[])).await?
            }
            Err(e) => {
                send(s, ERROR, &[]).await?;
                return Err(AuthError::Gssapi(e));
            }
        }
    }
    Err(AuthError::TooManyRounds)
}

/// Quorum SASL on zkr's own peer links, from zoo.cfg's `quorum.auth.*` keys and the JAAS file.
#[derive(Clone, PartialEq, Eq)]
pub struct QuorumSasl {
    /// This member's login on every connection it opens (`quorum.auth.learnerRequireSasl`).
    pub login: Option<Login>,
    /// What a member opening a connection is checked against (`QuorumServer`).
    pub accounts: Accounts,
    /// `quorum.auth.serverRequireSasl`: a connection that sends no login is refused.
    pub require: bool,
}

impl std::fmt::Debug for QuorumSasl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuorumSasl")
            .field("login", &self.login)
            .field("accounts", &self.accounts)
            .field("require", &self.require)
            .finish()
    }
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
        authenticate(&mut c, &Login::Digest(Credentials { user: "learner".into(), password: "pw".into() }), "h")
            .unwrap();
        assert_eq!(l.join().unwrap().as_deref(), Some("learner"));

        let (mut c, s) = pair();
        let l = leader(s, users);
        let wrong = Login::Digest(Credentials { user: "learner".into(), password: "no".into() });
        let e = authenticate(&mut c, &wrong, "h").unwrap_err();
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

    /// A member opening a peer connection logs in; the member taking it admits it. Async, both
    /// sides of zkr's own peer links.
    #[tokio::test]
    async fn members_log_in_to_each_other_and_a_wrong_password_is_refused_on_both_sides() {
        let users: BTreeMap<String, String> = [("member".to_owned(), "pw".to_owned())].into();
        for (password, ok) in [("pw", true), ("wrong", false)] {
            let (mut a, mut b) = tokio::io::duplex(4096);
            let creds = Login::Digest(Credentials { user: "member".into(), password: password.into() });
            let taker = {
                let users = Accounts::Digest(users.clone());
                tokio::spawn(async move {
                    let mut first = [0u8; 4];
                    b.read_exact(&mut first).await.unwrap();
                    assert!(starts_packet(first));
                    admit(&mut b, first, &users).await
                })
            };
            let opened = login(&mut a, &creds, "h").await;
            let taken = taker.await.unwrap();
            assert_eq!(opened.is_ok(), ok, "{opened:?}");
            if ok {
                assert_eq!(taken.unwrap(), "member");
            } else {
                assert!(matches!(opened, Err(AuthError::Refused { status: ERROR, .. })));
                assert!(matches!(taken, Err(AuthError::Sasl(_))), "{taken:?}");
            }
        }
    }

    #[test]
    fn kerberos_learners_are_authorized_as_zookeeper_authorizes_them() {
        let hosts = vec!["zk1.example".to_owned(), "zk2.example".to_owned()];
        assert!(authorized("zkquorum/zk1.example@R", "zkquorum/zk1.example@R", &hosts));
        assert!(!authorized("zkquorum/evil.example@R", "zkquorum/evil.example@R", &hosts));
        assert!(!authorized("zkquorum/zk1.example@R", "zkquorum/zk2.example@R", &hosts), "authz must be the principal");
        assert!(authorized("quorum@R", "quorum@R", &hosts), "no host part: no host check");
        let k =
            KerberosLogin { principal: "p".into(), keytab: "k".into(), service_principal: "zkquorum/_HOST@R".into() };
        assert_eq!(k.target("ZK1.Example:2888"), "zkquorum/zk1.example@R");
        assert_eq!(k.target("[::1]:2888"), "zkquorum/::1@R");
        assert_eq!(k.target("zk2"), "zkquorum/zk2@R");
    }

    #[test]
    fn a_peer_hello_does_not_look_like_a_login() {
        assert!(starts_packet(encode(IN_PROGRESS, &[])[..4].try_into().unwrap()));
        // A hello frame starts with its length: a small big-endian number.
        assert!(!starts_packet(12u32.to_be_bytes()));
    }
}
