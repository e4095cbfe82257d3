//! A listening socket that follows its address. An ensemble member whose own client or peer
//! address a reconfig changes binds the new address and closes the old one, as ZooKeeper's
//! `QuorumPeer.processReconfig` calls `ServerCnxnFactory.reconfigure`; connections already
//! accepted stay open. If the new address cannot be bound, the old listener stays and the
//! failure is logged (ZooKeeper logs it the same way and keeps serving).

use std::io;
use std::net::SocketAddr;
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;

/// Binds `addr` with SO_REUSEADDR (as tokio's `TcpListener::bind` does) and listens with
/// `backlog` pending connections (tokio's `bind` asks for 1024, and Rust's std for 128).
pub fn bind(addr: SocketAddr, backlog: u32) -> io::Result<TcpListener> {
    let socket = if addr.is_ipv4() { TcpSocket::new_v4()? } else { TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(backlog)
}

/// The sending side: the address to listen on from now (`host:port`).
pub type Follow = watch::Sender<Option<String>>;

/// A `Follow` and the receiver a `Listener` takes.
pub fn follow() -> (Follow, watch::Receiver<Option<String>>) {
    watch::channel(None)
}

/// What a moved listener asks for unless told otherwise (tokio's `bind`).
const DEFAULT_MOVED_BACKLOG: u32 = 1024;

pub struct Listener {
    inner: TcpListener,
    addr: Option<watch::Receiver<Option<String>>>,
    /// What listens here, for the log lines ("client", "peer").
    what: &'static str,
    /// The backlog a moved listener listens with.
    backlog: u32,
}

impl Listener {
    /// A listener that never moves.
    pub fn fixed(inner: TcpListener, what: &'static str) -> Listener {
        Listener { inner, addr: None, what, backlog: DEFAULT_MOVED_BACKLOG }
    }

    /// A listener that moves whenever `addr` names a new address.
    pub fn following(inner: TcpListener, addr: watch::Receiver<Option<String>>, what: &'static str) -> Listener {
        Listener { inner, addr: Some(addr), what, backlog: DEFAULT_MOVED_BACKLOG }
    }

    /// The backlog the listener uses when a reconfig moves it.
    pub fn with_backlog(mut self, backlog: u32) -> Listener {
        self.backlog = backlog;
        self
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// The next connection, on whatever address is current.
    pub async fn accept(&mut self) -> io::Result<(TcpStream, SocketAddr)> {
        loop {
            let Some(rx) = self.addr.as_mut() else { return self.inner.accept().await };
            tokio::select! {
                a = self.inner.accept() => return a,
                changed = rx.changed() => {
                    if changed.is_err() {
                        // Nobody moves it any more.
                        self.addr = None;
                        continue;
                    }
                    let next = rx.borrow_and_update().clone();
                    if let Some(next) = next {
                        self.move_to(&next).await;
                    }
                }
            }
        }
    }

    async fn move_to(&mut self, next: &str) {
        let old = self.inner.local_addr().ok();
        let resolved = tokio::net::lookup_host(next).await.map(|mut a| a.next());
        if let (Some(old), Ok(Some(new))) = (old, &resolved) {
            if old == *new {
                return;
            }
        }
        let bound = match resolved {
            Ok(Some(addr)) => bind(addr, self.backlog),
            Ok(None) => Err(io::Error::new(io::ErrorKind::NotFound, "the name resolves to no address")),
            Err(e) => Err(e),
        };
        match bound {
            Ok(l) => {
                let now = l.local_addr().ok();
                tracing::info!(what = self.what, from = ?old, to = ?now, "listening on the address the new configuration gives this member");
                self.inner = l;
            }
            Err(e) => tracing::error!(
                what = self.what,
                addr = next,
                still = ?old,
                "cannot listen on the address the new configuration gives this member: {e}; the old one stays"
            ),
        }
    }
}
