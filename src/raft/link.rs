//! Opening and taking peer connections: plain TCP, or TLS with `sslQuorum=true` (see
//! `security::quorum_tls`), then quorum SASL's login when `quorum.auth.enableSasl=true` (see
//! `security::quorum_sasl`), then the hello. Everything above this module reads and writes
//! frames on a [`PeerStream`] whichever it is.

use super::timing::Timing;
use super::types::MemberId;
use super::wire::{self, write_frame, Hello, Kind, PeerError};
use crate::security::quorum_sasl::{self, QuorumSasl};
use crate::security::quorum_tls::{self, QuorumTls};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, ReadHalf, WriteHalf};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio_util::either::Either;

pub type TlsStream = tokio_rustls::TlsStream<TcpStream>;
/// A connection between two members.
pub type PeerStream = Either<TcpStream, TlsStream>;
pub type PeerRead = Either<OwnedReadHalf, ReadHalf<TlsStream>>;
pub type PeerWrite = Either<OwnedWriteHalf, WriteHalf<TlsStream>>;

/// Splits a connection for a reading task and a writing one.
pub fn split(s: PeerStream) -> (PeerRead, PeerWrite) {
    match s {
        Either::Left(tcp) => {
            let (r, w) = tcp.into_split();
            (Either::Left(r), Either::Left(w))
        }
        Either::Right(tls) => {
            let (r, w) = tokio::io::split(tls);
            (Either::Right(r), Either::Right(w))
        }
    }
}

/// This member's side of its peer connections, with the member's timeouts: a connect may take
/// `timing.connect`, a TLS handshake or the first byte on a unified port `timing.handshake`.
#[derive(Debug, Clone)]
pub struct Link {
    pub me: MemberId,
    tls: Option<Arc<QuorumTls>>,
    sasl: Option<Arc<QuorumSasl>>,
    pub timing: Timing,
}

impl Link {
    pub fn new(me: MemberId, tls: Option<Arc<QuorumTls>>, sasl: Option<QuorumSasl>, timing: Timing) -> Link {
        Link { me, tls, sasl: sasl.map(Arc::new), timing }
    }

    /// Opens a peer connection of `kind` to `addr` (`host:port` of a `server.N` line): TLS
    /// when `sslQuorum=true`, the other member's certificate checked, then the hello.
    pub async fn connect(&self, addr: &str, kind: Kind) -> Result<PeerStream, PeerError> {
        let tcp = tokio::time::timeout(self.timing.connect, TcpStream::connect(addr)).await.map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::TimedOut, format!("connecting to {addr} timed out"))
        })??;
        let _ = tcp.set_nodelay(true);
        let mut s = match &self.tls {
            Some(t) if t.settings().encrypt => {
                let tls = t.connect(tcp, addr, self.timing.handshake).await.map_err(PeerError::Tls)?;
                Either::Right(TlsStream::Client(tls))
            }
            _ => Either::Left(tcp),
        };
        if let Some(creds) = self.sasl.as_ref().and_then(|q| q.login.as_ref()) {
            let login = tokio::time::timeout(self.timing.handshake, quorum_sasl::login(&mut s, creds, addr))
                .await
                .map_err(|_| PeerError::Refused(format!("no quorum SASL answer from {addr} in time")))?;
            if let Err(e) = &login {
                refused_login(addr, e);
            }
            login?;
        }
        write_frame(&mut s, &Hello { from: self.me, kind }).await?;
        Ok(s)
    }

    /// Reads the hello of a connection `accept` took, checking quorum SASL's login first when
    /// the member opening it sent one (it must when `quorum.auth.serverRequireSasl=true`).
    /// Mixed logins are taken while `serverRequireSasl` is false, as ZooKeeper does, so that
    /// quorum SASL can be turned on one member at a time.
    pub async fn hello(&self, s: &mut PeerStream, peer: SocketAddr) -> Result<Hello, PeerError> {
        let read = async {
            let mut first = [0u8; 4];
            s.read_exact(&mut first).await?;
            if !quorum_sasl::starts_packet(first) {
                if self.sasl.as_ref().is_some_and(|q| q.require) {
                    let why = "sent no quorum SASL login and quorum.auth.serverRequireSasl=true here";
                    return Err(PeerError::Refused(format!("member connecting from {peer} {why}")));
                }
                return wire::read_frame_after(s, first).await;
            }
            let Some(sasl) = &self.sasl else {
                let why = "sent a quorum SASL login and quorum.auth.enableSasl is not true here";
                return Err(PeerError::Refused(format!("member connecting from {peer} {why}")));
            };
            let user = quorum_sasl::admit(s, first, &sasl.accounts).await?;
            tracing::debug!(%peer, user, "member logged in with quorum SASL");
            wire::read_frame(s).await
        };
        tokio::time::timeout(self.timing.handshake, read)
            .await
            .map_err(|_| PeerError::Refused(format!("no hello in time from {peer}")))?
    }

    /// Takes a connection another member opened: a TLS handshake when `sslQuorum=true`; with
    /// `portUnification=true`, TLS if the first byte starts a TLS record, plaintext otherwise
    /// (ZooKeeper's `UnifiedServerSocket`).
    pub async fn accept(&self, tcp: TcpStream, peer: SocketAddr) -> Result<PeerStream, PeerError> {
        let Some(t) = &self.tls else { return Ok(Either::Left(tcp)) };
        let s = t.settings();
        let tls = if s.port_unification { starts_tls(&tcp, self.timing.handshake).await? } else { s.encrypt };
        if !tls {
            return Ok(Either::Left(tcp));
        }
        let stream = tokio::time::timeout(self.timing.handshake, t.acceptor().accept(tcp))
            .await
            .map_err(|_| PeerError::Tls("no TLS handshake in time".into()))?
            .map_err(|e| PeerError::Tls(format!("TLS handshake: {e}")))?;
        // ZKTrustManager checks the name of a certificate the client presented; with
        // ssl.quorum.clientAuth=want or none there may be none, and nothing to check.
        let cert = stream.get_ref().1.peer_certificates().and_then(|c| c.first());
        if s.hostname_verification && cert.is_some() {
            quorum_tls::check_name(cert, peer.ip(), None)
                .await
                .map_err(|e| PeerError::Tls(format!("member connecting from {peer}: {e}")))?;
        }
        Ok(Either::Right(TlsStream::Server(stream)))
    }
}

/// Whether a connection starts with a TLS handshake record (content type 22); a plaintext
/// peer connection starts with a frame length, whose first byte is 0 for a hello.
async fn starts_tls(tcp: &TcpStream, wait: Duration) -> Result<bool, PeerError> {
    let mut b = [0u8; 1];
    let n = tokio::time::timeout(wait, tcp.peek(&mut b))
        .await
        .map_err(|_| PeerError::Tls("nothing received in time".into()))??;
    Ok(n == 1 && b[0] == 0x16)
}

/// A login the other member refused (or this member could not make: no ticket, a bad keytab)
/// is an operator's problem: one warning per peer every 30 s, as connections are retried.
fn refused_login(addr: &str, e: &quorum_sasl::AuthError) {
    use quorum_sasl::AuthError;
    if matches!(e, AuthError::Io(_)) {
        return;
    }
    static LAST: parking_lot::Mutex<Option<std::collections::HashMap<String, std::time::Instant>>> =
        parking_lot::Mutex::new(None);
    let mut last = LAST.lock();
    let seen = last.get_or_insert_with(Default::default);
    let now = std::time::Instant::now();
    if seen.get(addr).is_some_and(|t| now.duration_since(*t) < std::time::Duration::from_secs(30)) {
        return;
    }
    seen.insert(addr.to_owned(), now);
    tracing::warn!(peer = addr, "quorum SASL login to another member failed: {e}");
}
