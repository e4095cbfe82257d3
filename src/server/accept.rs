//! The client ports' accept loops: per-IP (maxClientCnxns) and total (maxCnxns and the
//! open-file cap) limits, refusals logged at most once a second, and one task per accepted
//! connection (plain and TLS apart, so a plain connection's task stays small).

use super::{conn, ops, outbound, view};
use crate::config::Config;
use crate::server::core::CoreMsg;
use dashmap::DashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What the accept loops share: per-IP counts span both ports, as in ZooKeeper.
pub(super) struct Accepting {
    counts: Arc<DashMap<IpAddr, u32>>,
    next_id: AtomicU64,
    cfg: Arc<Config>,
    core: mpsc::Sender<CoreMsg>,
    shutdown: CancellationToken,
    ops: Arc<ops::Ops>,
    /// The highest zxid on disk: the zxid a ping answered by its connection carries.
    durable: outbound::Durable,
    views: Arc<view::Views>,
    /// Sockets open on both client ports (the global maxCnxns limit).
    open: Arc<AtomicUsize>,
    /// The most sockets `open` may reach: maxCnxns, and the open-file limit less a reserve.
    conn_cap: usize,
    /// Refusal lines, rate-limited across both ports.
    refusals: parking_lot::Mutex<RefusalLog>,
}

impl Accepting {
    /// Raises the open-file soft limit (as the JVM does) and caps client connections by it.
    pub(super) fn new(
        cfg: Arc<Config>,
        core: mpsc::Sender<CoreMsg>,
        shutdown: CancellationToken,
        ops: Arc<ops::Ops>,
        durable: outbound::Durable,
        views: Arc<view::Views>,
    ) -> Arc<Accepting> {
        let nofile = crate::fdlimit::raise();
        let conn_cap = crate::fdlimit::connection_cap(cfg.max_connections, nofile);
        let by_files = cfg.max_connections == 0 || cfg.max_connections as usize > conn_cap;
        if let Some(n) = nofile.filter(|_| by_files) {
            tracing::info!(open_files = n, connections = conn_cap, "client connections capped by the open-file limit");
        }
        Arc::new(Accepting {
            counts: Arc::new(DashMap::new()),
            open: Arc::new(AtomicUsize::new(0)),
            conn_cap,
            refusals: parking_lot::Mutex::new(RefusalLog { last: None, suppressed: 0 }),
            next_id: AtomicU64::new(1),
            cfg,
            core,
            shutdown,
            ops,
            durable,
            views,
        })
    }
}

pub(super) async fn accept_loop(
    mut listener: crate::listen::Listener,
    tls: Option<Arc<crate::security::tls::TlsContext>>,
    shared: Arc<Accepting>,
) {
    let cfg = &shared.cfg;
    let counts = &shared.counts;
    let open = &shared.open;
    loop {
        let accepted = tokio::select! {
            _ = shared.shutdown.cancelled() => break,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let ip = peer.ip();
        // Refused connections are closed at once, before reading a byte, as ZooKeeper does.
        if open.load(Ordering::Acquire) >= shared.conn_cap {
            let why = if cfg.max_connections as usize == shared.conn_cap {
                "too many connections in total (maxCnxns)"
            } else {
                "the open-file limit leaves room for no more connections"
            };
            shared.refusals.lock().refused(ip, why, shared.conn_cap as u64);
            continue;
        }
        {
            let mut c = counts.entry(ip).or_insert(0);
            if cfg.max_client_cnxns != 0 && *c >= cfg.max_client_cnxns {
                drop(c);
                shared.refusals.lock().refused(
                    ip,
                    "too many connections from this address (maxClientCnxns)",
                    cfg.max_client_cnxns as u64,
                );
                continue;
            }
            *c += 1;
        }
        open.fetch_add(1, Ordering::AcqRel);
        let slot = IpSlot { ip, counts: counts.clone(), open: open.clone() };
        let ctx = conn::ConnCtx {
            id: shared.next_id.fetch_add(1, Ordering::Relaxed),
            peer,
            cfg: cfg.clone(),
            core: shared.core.clone(),
            shutdown: shared.shutdown.clone(),
            ops: shared.ops.clone(),
            durable: shared.durable.clone(),
            views: shared.views.clone(),
            handshake_deadline: tokio::time::Instant::now() + Duration::from_millis(cfg.handshake_timeout_ms),
        };
        let _ = stream.set_nodelay(true);
        // The acceptor of the moment: a reloaded key store serves new connections only.
        let tls = tls.as_ref().map(|t| t.acceptor());
        // Two tasks, not one with a branch: a task's future is as large as its largest branch,
        // and the TLS one (rustls' state inline) made every plain connection's task 5.6 KiB.
        let Some(acceptor) = tls else {
            let plain = conn::serve(stream, ctx, Vec::new(), slot);
            tokio::spawn(plain);
            continue;
        };
        tokio::spawn(async move {
            let id = ctx.id;
            let stream = match tokio::time::timeout_at(ctx.handshake_deadline, acceptor.accept(stream)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::info!(conn = id, %peer, "closing connection: TLS handshake failed: {e}");
                    return;
                }
                Err(_) => {
                    tracing::info!(conn = id, %peer, "closing connection: no TLS handshake within the deadline");
                    return;
                }
            };
            let ids = crate::security::tls::identities(
                stream.get_ref().1.peer_certificates(),
                ctx.cfg.x509_super_user.as_deref(),
            );
            conn::serve(stream, ctx, ids, slot).await;
        });
    }
}

/// Decrements the per-IP and total counts when a connection ends.
struct IpSlot {
    ip: IpAddr,
    counts: Arc<DashMap<IpAddr, u32>>,
    open: Arc<AtomicUsize>,
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        if let Some(mut c) = self.counts.get_mut(&self.ip) {
            *c = c.saturating_sub(1);
        }
        self.counts.remove_if(&self.ip, |_, c| *c == 0);
        self.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// At most one refusal line per second, so a connection flood cannot flood the log
/// (ZooKeeper rate-limits the same lines).
struct RefusalLog {
    last: Option<std::time::Instant>,
    suppressed: u64,
}

impl RefusalLog {
    fn refused(&mut self, ip: IpAddr, why: &str, limit: u64) {
        let now = std::time::Instant::now();
        if self.last.is_some_and(|t| now.duration_since(t) < Duration::from_secs(1)) {
            self.suppressed += 1;
            return;
        }
        let suppressed = std::mem::take(&mut self.suppressed);
        self.last = Some(now);
        tracing::warn!(%ip, limit, suppressed, "connection from {ip} refused: {why}");
    }
}
