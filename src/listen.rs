//! A listening socket that follows its address. An ensemble member whose own client or peer
//! address a reconfig changes binds the new address and closes the old one, as ZooKeeper's
//! `QuorumPeer.processReconfig` calls `ServerCnxnFactory.reconfigure`; connections already
//! accepted stay open. If the new address cannot be bound, the old listener stays and the
//! failure is logged (ZooKeeper logs it the same way and keeps serving).

use std::io;
use std::net::SocketAddr;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The sending side: the address to listen on from now (`host:port`).
pub type Follow = watch::Sender<Option<String>>;

/// A `Follow` and the receiver a `Listener` takes.
pub fn follow() -> (Follow, watch::Receiver<Option<String>>) {
    watch::channel(None)
}

pub struct Listener {
    inner: TcpListener,
    addr: Option<watch::Receiver<Option<String>>>,
    /// What listens here, for the log lines ("client", "peer").
    what: &'static str,
}

impl Listener {
    /// A listener that never moves.
    pub fn fixed(inner: TcpListener, what: &'static str) -> Listener {
        Listener { inner, addr: None, what }
    }

    /// A listener that moves whenever `addr` names a new address.
    pub fn following(inner: TcpListener, addr: watch::Receiver<Option<String>>, what: &'static str) -> Listener {
        Listener { inner, addr: Some(addr), what }
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
        match TcpListener::bind(next).await {
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
