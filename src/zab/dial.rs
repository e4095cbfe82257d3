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
        // The TLS connection is made and then relayed by one task; the caller waits here for the
        // other end of the pair (or why there is none). A runtime that is shutting down drops
        // the task, which the closed channel reports.
        let (tls, name) = (tls.clone(), name.to_owned());
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        runtime.spawn(async move {
            let connected = async {
                let tcp =
                    tokio::time::timeout(timeout, tokio::net::TcpStream::connect(addr)).await.map_err(|_| {
                        std::io::Error::new(std::io::ErrorKind::TimedOut, format!("connecting to {addr} timed out"))
                    })??;
                tcp.set_nodelay(true)?;
                let stream = tls.connect(tcp, &name, timeout).await.map_err(std::io::Error::other)?;
                let (ours, relay) = UnixStream::pair()?;
                relay.set_nonblocking(true)?;
                Ok((stream, ours, tokio::net::UnixStream::from_std(relay)?))
            };
            match connected.await {
                Ok((stream, ours, relay)) => {
                    if tx.send(Ok(ours)).is_ok() {
                        relay_until_closed(relay, stream).await;
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            }
        });
        let gone = || std::io::Error::other(format!("TLS connection to {addr}: the server is stopping"));
        rx.recv().map_err(|_| gone())?.map(Conn::Relayed)
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

#[cfg(test)]
mod tests {
    //! The relay against a TLS server made here (rcgen certificates): bytes both ways, a
    //! server that closes ends the caller's reads, the caller's shutdown closes the server's
    //! side, and a certificate the trust store does not hold is refused.

    use super::*;
    use crate::config::{ClientAuth, Origin, QuorumTlsSettings, StorePassword, StoreSettings, StoreType, TlsStores};
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn pem(path: std::path::PathBuf) -> StoreSettings {
        StoreSettings {
            path,
            kind: StoreType::Pem,
            password: StorePassword::Inline(String::new()),
            origin: Origin::Flag("test"),
        }
    }

    /// A CA and one leaf naming 127.0.0.1, as a member's stores: (key store, trust store).
    fn stores(dir: &std::path::Path, name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        std::fs::create_dir_all(dir).unwrap();
        let ca_key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = p.self_signed(&ca_key).unwrap();
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.subject_alt_names.push(SanType::IpAddress([127, 0, 0, 1].into()));
        let leaf = p.signed_by(&key, &ca, &ca_key).unwrap();
        let (ks, ts) = (dir.join(format!("{name}-key.pem")), dir.join(format!("{name}-ca.pem")));
        std::fs::write(&ks, format!("{}{}", key.serialize_pem(), leaf.pem())).unwrap();
        std::fs::write(&ts, ca.pem()).unwrap();
        (ks, ts)
    }

    fn quorum_tls(key_store: std::path::PathBuf, trust: std::path::PathBuf) -> Arc<QuorumTls> {
        let protocols =
            vec![crate::security::tls_params::Protocol::Tls12, crate::security::tls_params::Protocol::Tls13];
        let settings = QuorumTlsSettings {
            stores: TlsStores {
                key_store: pem(key_store),
                key_file: None,
                trust_store: Some(pem(trust)),
                client_auth: ClientAuth::Need,
                protocols,
                cipher_suites: crate::security::tls_params::cipher_suites(Some(
                    "TLS_AES_128_GCM_SHA256,TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                ))
                .unwrap()
                .0,
            },
            encrypt: true,
            port_unification: false,
            hostname_verification: true,
            reload: false,
        };
        QuorumTls::load(settings).unwrap()
    }

    #[test]
    fn a_tls_connection_is_relayed_both_ways_and_closes_from_either_end() {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let dir = std::env::temp_dir().join(format!("zkr-dial-{}", std::process::id()));
        let (ks, ts) = stores(&dir, "a");
        let tls = quorum_tls(ks, ts);
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = tls.acceptor();
        // The server: echoes one message, then closes after the second connection's first read.
        let server = rt.spawn(async move {
            let mut seen_eof = false;
            for round in 0..2 {
                let (tcp, _) = listener.accept().await.unwrap();
                let mut s = acceptor.accept(tcp).await.unwrap();
                let mut b = [0u8; 5];
                s.read_exact(&mut b).await.unwrap();
                if round == 0 {
                    s.write_all(&b).await.unwrap();
                    s.flush().await.unwrap();
                    // The caller shuts down: this side reads the end.
                    let mut rest = Vec::new();
                    seen_eof = s.read_to_end(&mut rest).await.map(|_| rest.is_empty()).unwrap_or(true);
                } else {
                    s.shutdown().await.unwrap();
                }
            }
            seen_eof
        });
        let dial = Dialer::new(Some(tls.clone()), rt.handle().clone());
        let name = addr.to_string();
        let mut c = dial.connect(addr, &name, Duration::from_secs(5)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(b"hello").unwrap();
        let mut b = [0u8; 5];
        c.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"hello");
        c.shutdown(Shutdown::Both).unwrap();

        let mut c = dial.connect(addr, &name, Duration::from_secs(5)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c.write_all(b"again").unwrap();
        let mut rest = Vec::new();
        assert_eq!(c.read_to_end(&mut rest).unwrap(), 0, "the server's close ends the caller's reads");
        assert!(rt.block_on(server).unwrap(), "the caller's shutdown reached the server");

        // Another CA's certificate: the handshake is refused, with the reason.
        let (ks2, ts2) = stores(&dir, "b");
        let stranger = Dialer::new(Some(quorum_tls(ks2, ts2)), rt.handle().clone());
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let addr = listener.local_addr().unwrap();
        let acceptor = tls.acceptor();
        rt.spawn(async move {
            let (tcp, _) = listener.accept().await.unwrap();
            let _ = acceptor.accept(tcp).await;
        });
        let err = stranger.connect(addr, &addr.to_string(), Duration::from_secs(5)).unwrap_err();
        assert!(err.to_string().contains("TLS handshake"), "{err}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
