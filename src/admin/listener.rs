//! The AdminServer's listening socket, as ZooKeeper's `JettyAdminServer` sets up its connector:
//! plain HTTP; HTTPS only (`admin.forceHttps`); or both on one port (`admin.portUnification`,
//! Jetty's `UnifiedConnectionFactory`: a first byte of 0x16, a TLS handshake record, means
//! TLS). TLS uses the `ssl.quorum.*` stores (`security::quorum_tls`, reloaded when they change)
//! and asks for a client certificate only with `admin.needClientAuth`.
//!
//! Handshakes run in tasks of their own, at most `MAX_HANDSHAKES` at once and each within
//! `HANDSHAKE_TIMEOUT`, so a slow client holds up nobody; axum serves what comes out of them.
//! Each connection carries its `Peer`: the remote address (the `ip` scheme) and the certificate
//! chain the handshake verified (the `x509` scheme).

use crate::security::quorum_tls::QuorumTls;
use axum::extract::connect_info::Connected;
use axum::serve::IncomingStream;
use rustls::pki_types::CertificateDer;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::sync::CancellationToken;

/// Handshakes in progress at once; more connections wait to be accepted.
const MAX_HANDSHAKES: usize = 64;
/// A client that has not finished its TLS handshake (or sent its first byte on a unified port)
/// by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The first byte of a TLS handshake record (`NettyServerCnxnFactory`, Jetty's unified port).
const TLS_HANDSHAKE: u8 = 0x16;

/// Who is at the other end of a connection.
#[derive(Debug, Clone)]
pub struct Peer {
    pub addr: SocketAddr,
    /// The client certificate chain the TLS handshake verified, leaf first.
    pub certs: Option<Arc<[CertificateDer<'static>]>>,
}

/// What the AdminServer speaks on its port.
#[derive(Clone)]
pub enum Mode {
    Plain,
    /// `admin.forceHttps`: TLS only.
    Https(Arc<QuorumTls>),
    /// `admin.portUnification`: TLS or plain, by the first byte.
    Unified(Arc<QuorumTls>),
}

/// One accepted connection, plain or TLS.
pub enum Io {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl AsyncRead for Io {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The connections, handshakes done, as axum takes them.
pub struct AdminListener {
    ready: mpsc::Receiver<(Io, Peer)>,
    local: SocketAddr,
}

impl AdminListener {
    /// Accepts on `tcp` until `shutdown`, handshaking as `mode` says.
    pub fn spawn(tcp: TcpListener, mode: Mode, shutdown: CancellationToken) -> std::io::Result<AdminListener> {
        let local = tcp.local_addr()?;
        let (tx, ready) = mpsc::channel(MAX_HANDSHAKES);
        tokio::spawn(accept_loop(tcp, mode, tx, shutdown));
        Ok(AdminListener { ready, local })
    }
}

impl axum::serve::Listener for AdminListener {
    type Io = Io;
    type Addr = Peer;

    async fn accept(&mut self) -> (Io, Peer) {
        match self.ready.recv().await {
            Some(c) => c,
            // The accept loop stopped (shutdown): nothing more comes.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Peer> {
        Ok(Peer { addr: self.local, certs: None })
    }
}

impl Connected<IncomingStream<'_, AdminListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, AdminListener>) -> Peer {
        stream.remote_addr().clone()
    }
}

async fn accept_loop(tcp: TcpListener, mode: Mode, tx: mpsc::Sender<(Io, Peer)>, shutdown: CancellationToken) {
    let slots = Arc::new(Semaphore::new(MAX_HANDSHAKES));
    loop {
        let Ok(permit) = slots.clone().acquire_owned().await else { return };
        let (stream, addr) = tokio::select! {
            _ = shutdown.cancelled() => return,
            a = tcp.accept() => match a {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait, as axum's own loop does.
                    tracing::debug!("AdminServer accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let (mode, tx) = (mode.clone(), tx.clone());
        tokio::spawn(async move {
            let _permit = permit;
            match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake(stream, addr, &mode)).await {
                Ok(Ok(c)) => {
                    let _ = tx.send(c).await;
                }
                Ok(Err(e)) => tracing::debug!(client = %addr, "AdminServer TLS handshake failed: {e}"),
                Err(_) => tracing::debug!(client = %addr, "AdminServer handshake not done in time"),
            }
        });
    }
}

async fn handshake(stream: TcpStream, addr: SocketAddr, mode: &Mode) -> std::io::Result<(Io, Peer)> {
    let plain = |stream| Ok((Io::Plain(stream), Peer { addr, certs: None }));
    let tls = match mode {
        Mode::Plain => return plain(stream),
        Mode::Https(tls) => tls,
        Mode::Unified(tls) => {
            let mut first = [0u8; 1];
            let n = stream.peek(&mut first).await?;
            if n == 0 || first[0] != TLS_HANDSHAKE {
                return plain(stream);
            }
            tls
        }
    };
    let accepted = tls.acceptor().accept(stream).await?;
    let certs = accepted.get_ref().1.peer_certificates().map(|c| c.iter().map(|c| c.clone().into_owned()).collect());
    Ok((Io::Tls(Box::new(accepted)), Peer { addr, certs }))
}
