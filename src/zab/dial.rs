//! The observer's connections to ZooKeeper's voters and leader: plain TCP, or TLS with
//! `sslQuorum=true`. ZooKeeper opens both the election connections (`QuorumCnxManager`) and the
//! learner's connection to the leader (`Learner.createSocket`) as TLS sockets when `sslQuorum`
//! is set, with the handshake before anything else (then quorum SASL, then the protocol).
//!
//! The learner and the election code use blocking sockets split between threads (a reader and
//! a writer), which a TLS session cannot be. A TLS connection is therefore held by a task on
//! the server's runtime that relays it to one end of a local socket pair; the caller gets the
//! other end, a plain blocking socket with the same timeouts and shutdown as a TCP one.

use crate::security::quorum_tls::QuorumTls;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::time::Duration;

/// How connections to ZooKeeper's members are opened.
#[derive(Clone, Default)]
pub struct Dialer {
    tls: Option<(Arc<QuorumTls>, tokio::runtime::Handle)>,
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dialer").field("tls", &self.tls.is_some()).finish()
    }
}

impl Dialer {
    /// Plain TCP.
    pub fn plain() -> Dialer {
        Dialer::default()
    }

    /// TLS with these stores, its connections relayed by tasks on `runtime`. With
    /// `portUnification` alone (`sslQuorum=false`) connections stay plain, as ZooKeeper's do.
    pub fn new(tls: Option<Arc<QuorumTls>>, runtime: tokio::runtime::Handle) -> Dialer {
        Dialer { tls: tls.filter(|t| t.settings().encrypt).map(|t| (t, runtime)) }
    }

    /// Connects to `addr`, which `name` (`host:port` as the `server.N` line has it) names:
    /// the host name a certificate is checked against. `timeout` bounds the connect and the
    /// TLS handshake each.
    pub fn connect(&self, addr: SocketAddr, name: &str, timeout: Duration) -> std::io::Result<Conn> {
        let Some((tls, runtime)) = &self.tls else {
            let tcp = TcpStream::connect_timeout(&addr, timeout)?;
            tcp.set_nodelay(true)?;
            return Ok(Conn::Tcp(tcp));
        };
        let tls = tls.clone();
        let name = name.to_owned();
        let stream = runtime.block_on(async move {
            let tcp = tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr))
                .await
                .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, format!("connecting to {addr}")))??;
            tcp.set_nodelay(true)?;
            tls.connect(tcp, &name, timeout).await.map_err(std::io::Error::other)
        })?;
        let (ours, relay) = UnixStream::pair()?;
        relay.set_nonblocking(true)?;
        runtime.spawn(async move {
            match tokio::net::UnixStream::from_std(relay) {
                Ok(relay) => relay_until_closed(relay, stream).await,
                Err(e) => tracing::warn!("relaying the TLS connection to {addr}: {e}"),
            }
        });
        Ok(Conn::Relayed(ours))
    }
}

/// Copies both ways until either side ends: the leader closing ends the caller's reads, the
/// caller's shutdown closes the TLS connection (close_notify, then FIN).
async fn relay_until_closed(
    relay: tokio::net::UnixStream,
    tls: tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
) {
    use tokio::io::AsyncWriteExt;
    let (mut from_caller, mut to_caller) = relay.into_split();
    let (mut from_peer, mut to_peer) = tokio::io::split(tls);
    let up = async {
        let r = tokio::io::copy(&mut from_caller, &mut to_peer).await;
        let _ = to_peer.shutdown().await;
        r
    };
    let down = tokio::io::copy(&mut from_peer, &mut to_caller);
    tokio::select! {
        _ = up => {}
        _ = down => {}
    }
}

/// One connection to a ZooKeeper member: used like a blocking `TcpStream`.
#[derive(Debug)]
pub enum Conn {
    Tcp(TcpStream),
    /// The local end of a TLS connection relayed by a task ([`Dialer`]).
    Relayed(UnixStream),
}

impl Conn {
    pub fn try_clone(&self) -> std::io::Result<Conn> {
        Ok(match self {
            Conn::Tcp(s) => Conn::Tcp(s.try_clone()?),
            Conn::Relayed(s) => Conn::Relayed(s.try_clone()?),
        })
    }

    pub fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            Conn::Tcp(s) => s.set_read_timeout(t),
            Conn::Relayed(s) => s.set_read_timeout(t),
        }
    }

    pub fn set_write_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            Conn::Tcp(s) => s.set_write_timeout(t),
            Conn::Relayed(s) => s.set_write_timeout(t),
        }
    }

    pub fn shutdown(&self, how: Shutdown) -> std::io::Result<()> {
        match self {
            Conn::Tcp(s) => s.shutdown(how),
            Conn::Relayed(s) => s.shutdown(how),
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.read(buf),
            Conn::Relayed(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Tcp(s) => s.write(buf),
            Conn::Relayed(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Conn::Tcp(s) => s.flush(),
            Conn::Relayed(s) => s.flush(),
        }
    }
}
