//! The server: binds the client ports (plaintext and, if configured, TLS; their accept loops are
//! in `accept`), starts the core thread, its ticker and the log, and shuts down in order (stop
//! accepting, close connections, let the core drain and stop).
//!
//! A request enters at `conn` (one task per connection; reads answered from `view` when they
//! can be), goes to `core` (the single writer), and what the core sends back leaves through
//! `outbound` (messages, connection handles, delivery in order), after the standalone log's
//! fsync in `committer`, or at once in an ensemble.

mod accept;
pub(crate) mod committer;
mod conn;
pub mod core;
pub mod four_letter;
pub mod ops;
mod outbound;
mod outbuf;
pub(crate) mod outchan;
pub(crate) mod outqueue;
mod reads;
pub mod stats;
mod view;

use crate::config::Config;
use crate::server::core::{Core, CoreMsg, Log};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Bound of the queue into the core; senders wait when it is full.
const CORE_QUEUE: usize = 64 * 1024;

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: String, source: std::io::Error },
    #[error("cannot recover the data directory: {0}")]
    Storage(#[from] crate::storage::StorageError),
    #[error("cannot start a thread: {0}")]
    Thread(std::io::Error),
    #[error("secure client port: {0}")]
    Tls(#[from] crate::security::tls::TlsError),
    #[error("quorum TLS (sslQuorum): {0}")]
    QuorumTls(crate::security::tls::TlsError),
    #[error("ensemble: {0}")]
    Ensemble(String),
    #[error("SASL GSSAPI: {0}")]
    Kerberos(#[from] crate::security::gssapi::KerberosError),
    #[error("{0}")]
    QuorumSasl(#[from] crate::security::quorum_sasl::AuthError),
}

/// A running server.
pub struct Server {
    addr: SocketAddr,
    secure_addr: Option<SocketAddr>,
    /// Taken at shutdown: the core stops once every sender is gone.
    core_tx: Option<mpsc::Sender<CoreMsg>>,
    shutdown: CancellationToken,
    accept: Vec<tokio::task::JoinHandle<()>>,
    core: Option<std::thread::JoinHandle<()>>,
    log: Option<std::thread::JoinHandle<()>>,
    admin_addr: Option<SocketAddr>,
    metrics_addr: Option<SocketAddr>,
    /// The Raft side of an ensemble member.
    member: Option<Member>,
    /// The follower of a ZooKeeper ensemble this server observes.
    observer: Option<Observer>,
    _lock: std::fs::File,
}

/// An ensemble member's Raft node and what the operator views read of it.
pub struct Member {
    pub raft: crate::raft::types::Raft,
    pub status: Arc<crate::raft::member::MemberStatus>,
    pub peer_addr: SocketAddr,
    /// The peer port's accept loop: awaited at shutdown so the port is free when we return.
    peers: tokio::task::JoinHandle<()>,
}

/// The core and its log, however this server keeps its state.
struct Started {
    core_tx: mpsc::Sender<CoreMsg>,
    core: std::thread::JoinHandle<()>,
    log: Option<std::thread::JoinHandle<()>>,
    durable: outbound::Durable,
    views: Arc<view::Views>,
    member: Option<Member>,
    /// A member's client address as reconfigs change it (see `listen`).
    client_follow: Option<tokio::sync::watch::Receiver<Option<String>>>,
    lock: std::fs::File,
    observer: Option<Observer>,
}

/// An observer of a ZooKeeper ensemble: its follower threads and what the views read.
struct Observer {
    following: crate::zab::follow::Following,
    status: Arc<crate::zab::follow::Status>,
    /// Where `/zkr/takeover` leaves an accepted plan (see `takeover`).
    takeover: Arc<crate::takeover::Slot>,
}

impl Server {
    /// Binds and starts serving; returns once the port accepts connections.
    pub async fn start(cfg: Config) -> Result<Server, StartError> {
        let cfg = Arc::new(cfg);
        let bind_err = |source| StartError::Bind { addr: format!("{}:{}", cfg.bind, cfg.port), source };
        let backlog = cfg.listen_backlog.unwrap_or(crate::config::DEFAULT_LISTEN_BACKLOG);
        let listener = crate::listen::bind((cfg.bind, cfg.port).into(), backlog).map_err(bind_err)?;
        let addr = listener.local_addr().map_err(bind_err)?;
        let secure = match &cfg.tls {
            Some(t) => {
                let acceptor = crate::security::tls::TlsContext::load(t.clone())?;
                let bind_err = |source| StartError::Bind { addr: format!("{}:{}", t.bind, t.port), source };
                let l = crate::listen::bind((t.bind, t.port).into(), backlog).map_err(bind_err)?;
                let a = l.local_addr().map_err(bind_err)?;
                Some((l, acceptor, a))
            }
            None => None,
        };
        let stats = Arc::new(stats::ServerStats::default());
        let shutdown = CancellationToken::new();
        let st = match &cfg.ensemble {
            None => start_standalone(&cfg, &stats)?,
            Some(ens) if cfg.zab_observer => start_observer(&cfg, ens, &stats, &shutdown)?,
            Some(ens) => start_member(&cfg, ens, &stats, &shutdown).await?,
        };
        let Started { core_tx, core, log, durable, views, member, client_follow, lock, observer } = st;

        let tick = cfg.core_tick();
        let (ticker_tx, ticker_stop) = (core_tx.clone(), shutdown.clone());
        tokio::spawn(async move {
            let mut every = tokio::time::interval(tick);
            loop {
                tokio::select! {
                    _ = ticker_stop.cancelled() => break,
                    _ = every.tick() => { let _ = ticker_tx.try_send(CoreMsg::Tick); }
                }
            }
        });

        let member_view = member.as_ref().map(|m| ops::MemberView { status: m.status.clone(), raft: m.raft.clone() });
        let ops = Arc::new(ops::Ops {
            cfg: cfg.clone(),
            core: core_tx.downgrade(),
            stats: stats.clone(),
            member: member_view,
            observer: observer.as_ref().map(|o| o.status.clone()),
        });
        let admin_addr = if cfg.admin_enabled {
            // The Dubbo view reads the registry as a client of this server's own port.
            let own = match addr.ip() {
                ip if ip.is_unspecified() && ip.is_ipv6() => {
                    SocketAddr::new(std::net::Ipv6Addr::LOCALHOST.into(), addr.port())
                }
                ip if ip.is_unspecified() => SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), addr.port()),
                _ => addr,
            };
            match crate::admin::Mode::from_config(&cfg, &shutdown) {
                Ok(mode) => {
                    let mut app = crate::admin::router(ops.clone()).merge(crate::dubbo::web::router(own));
                    if let Some(o) = &observer {
                        app = app.merge(crate::admin::takeover_router(ops.clone(), o.takeover.clone(), mode.tls()));
                    }
                    let addr = SocketAddr::new(cfg.admin_bind, cfg.admin_port);
                    crate::admin::serve(app, addr, mode, shutdown.clone()).await
                }
                Err(e) => {
                    tracing::warn!("cannot start the AdminServer (its HTTPS stores), continuing without it: {e}");
                    None
                }
            }
        } else {
            None
        };
        let metrics_addr = match cfg.metrics {
            Some(a) => crate::admin::serve_metrics(ops.clone(), a, shutdown.clone()).await,
            None => None,
        };
        let shared = accept::Accepting::new(cfg.clone(), core_tx.clone(), shutdown.clone(), ops, durable, views);
        let listener = match client_follow {
            Some(rx) => crate::listen::Listener::following(listener, rx, "client"),
            None => crate::listen::Listener::fixed(listener, "client"),
        }
        .with_backlog(backlog);
        let mut accept = vec![tokio::spawn(accept::accept_loop(listener, None, shared.clone()))];
        tracing::info!(%addr, "zkr accepting client connections");
        let mut secure_addr = None;
        if let Some((l, tls, a)) = secure {
            let watch = tls.clone().watch(shutdown.clone(), crate::security::tls::RELOAD_POLL);
            accept.push(tokio::spawn(watch));
            let l = crate::listen::Listener::fixed(l, "TLS client");
            accept.push(tokio::spawn(accept::accept_loop(l, Some(tls), shared)));
            tracing::info!(addr = %a, "zkr accepting TLS client connections (secureClientPort)");
            secure_addr = Some(a);
        }
        Ok(Server {
            addr,
            secure_addr,
            core_tx: Some(core_tx),
            shutdown,
            accept,
            core: Some(core),
            log,
            admin_addr,
            metrics_addr,
            member,
            observer,
            _lock: lock,
        })
    }

    /// The ensemble member's Raft side, if this server is one.
    pub fn member(&self) -> Option<&Member> {
        self.member.as_ref()
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where the AdminServer listens, if it is enabled and its port could be bound.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin_addr
    }

    /// Where Prometheus metrics are served (zoo.cfg `metricsProvider.*`), if configured and bound.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The TLS port's address, if one is configured.
    pub fn secure_addr(&self) -> Option<SocketAddr> {
        self.secure_addr
    }

    /// An observer's takeover slot: `zkr serve` waits on it (see `takeover`); `None` for other servers.
    pub fn takeover(&self) -> Option<Arc<crate::takeover::Slot>> {
        self.observer.as_ref().map(|o| o.takeover.clone())
    }

    /// Asks for a snapshot now; it is written in the background (SIGUSR1 in `zkr serve`).
    pub async fn snapshot_now(&self) {
        if let Some(tx) = &self.core_tx {
            let _ = tx.send(CoreMsg::Snapshot).await;
        }
    }

    /// Stops accepting, closes every connection, lets the core finish its queue and write a
    /// snapshot, and waits for the log to be flushed.
    pub async fn shutdown(mut self) {
        self.shutdown.cancel();
        if let Some(o) = self.observer.take() {
            o.following.stop();
        }
        if let Some(m) = self.member.take() {
            let _ = m.raft.shutdown().await;
            let _ = m.peers.await;
        }
        drop(self.core_tx.take());
        for a in self.accept.drain(..) {
            let _ = a.await;
        }
        let (core, log) = (self.core.take(), self.log.take());
        let _ = tokio::task::spawn_blocking(move || {
            if let Some(core) = core {
                let _ = core.join();
            }
            if let Some(log) = log {
                let _ = log.join();
            }
        })
        .await;
    }
}

/// The core on its own thread, until every sender is gone. A Kerberos login configured for
/// the client port is made here, so a keytab without the principal stops startup.
fn spawn_core(mut core: Core, rx: mpsc::Receiver<CoreMsg>) -> Result<std::thread::JoinHandle<()>, StartError> {
    if let Some(q) = &core.config().quorum_sasl {
        crate::security::quorum_sasl::check_kerberos(q)?;
    }
    if let Some(k) = &core.config().sasl_kerberos {
        let kerberos = crate::security::gssapi::Kerberos::start(k)?;
        tracing::info!(principal = kerberos.acceptor.principal(), keytab = %k.keytab.display(), "SASL GSSAPI (Kerberos) logins");
        core.set_kerberos(Arc::new(kerberos));
    }
    std::thread::Builder::new().name("zkr-core".into()).spawn(move || core.run(rx)).map_err(StartError::Thread)
}

/// A standalone server: the write-ahead log, its committer thread, the core.
fn start_standalone(cfg: &Arc<Config>, stats: &Arc<stats::ServerStats>) -> Result<Started, StartError> {
    let started = std::time::Instant::now();
    let recovered = crate::storage::recover(cfg)?;
    let zxid = recovered.tree.last_zxid();
    tracing::info!(
        data_dir = %cfg.data_dir.display(),
        zxid = format!("0x{zxid:x}"),
        znodes = recovered.tree.node_count(),
        sessions = recovered.tree.sessions().len(),
        replayed = recovered.replayed,
        ms = started.elapsed().as_millis() as u64,
        "recovered"
    );
    let layout = crate::storage::Layout::new(cfg);
    let wal = crate::storage::wal::Wal::open(&layout.log_dir, recovered.tail, zxid + 1, cfg.force_sync)?;
    let durable = Arc::new(std::sync::atomic::AtomicI64::new(zxid));
    let views = Arc::new(view::Views::new(zxid));
    let (log_tx, log) =
        committer::spawn(wal, durable.clone(), stats.clone(), views.clone()).map_err(StartError::Thread)?;
    let (core_tx, core_rx) = mpsc::channel(CORE_QUEUE);
    let (tree, secret) = (recovered.tree, recovered.secret);
    let core =
        Core::new(cfg.clone(), tree, secret, Log::standalone(log_tx), durable.clone(), stats.clone(), views.clone());
    let core = spawn_core(core, core_rx)?;
    Ok(Started {
        core_tx,
        core,
        log: Some(log),
        durable,
        views,
        member: None,
        client_follow: None,
        lock: recovered.lock,
        observer: None,
    })
}

/// An ensemble member: the Raft log and snapshots, openraft, the peer port, the core.
async fn start_member(
    cfg: &Arc<Config>,
    ens: &crate::raft::members::Ensemble,
    stats: &Arc<stats::ServerStats>,
    shutdown: &CancellationToken,
) -> Result<Started, StartError> {
    use crate::raft::{member, network, state_machine};
    let me = ens.my_id;
    let spec = ens.me().cloned().ok_or_else(|| StartError::Ensemble(format!("server.{me} is not in the ensemble")))?;
    std::fs::create_dir_all(&cfg.data_dir).map_err(|e| crate::storage::StorageError::io(&cfg.data_dir, e))?;
    let timing = crate::raft::timing::Timing::of(cfg, ens);
    let link = peer_link(cfg, me, timing, shutdown)?;
    let seeding = crate::raft::seed::wanted(cfg)?;
    if seeding {
        // Asked every heartbeat: an empty member started with this one initializes after one
        // election timeout (ten heartbeats) unless it has heard this member's probe (a probe
        // every 500 ms lost that race at tickTime 200 on a loaded machine).
        let every = timing.heartbeat;
        let peers_term = crate::raft::seed::probe(&link, ens, shutdown, every).await.map_err(|e| {
            StartError::Ensemble(format!("cannot seed the ensemble from {}: {e}", cfg.data_dir.display()))
        })?;
        crate::raft::seed::seed(cfg, ens, peers_term)?;
    }
    let lock = crate::storage::lock(&cfg.data_dir)?;
    let secret = crate::storage::secret(&cfg.data_dir)?;
    let started = std::time::Instant::now();
    let started_ms = crate::session::mono_ms();
    let rec = crate::raft::recover(cfg)?;
    let raft_cfg = crate::raft::raft_config(cfg, ens).map_err(StartError::Ensemble)?;
    tracing::info!(
        id = me,
        zxid = format!("0x{:x}", rec.tree.last_zxid()),
        znodes = rec.tree.node_count(),
        sessions = rec.tree.sessions().len(),
        applied = ?rec.applied,
        ms = started.elapsed().as_millis() as u64,
        "ensemble member recovered its snapshot; the log is applied as the ensemble commits it"
    );
    let durable = Arc::new(std::sync::atomic::AtomicI64::new(rec.tree.last_zxid()));
    let (outlet, proposals) = crate::raft::seam::outlet();
    let repl = core::replicated::Replicated::new(me, outlet, rec.first_seq, rec.applied, rec.membership.clone())
        .with_read_only(cfg.read_only_enabled);
    // Handshakes wait for a leader up to one election timeout (an election after a leader's
    // death takes a fraction of that) before they are refused.
    let checks = crate::raft::command::LatestCheck::default();
    let (client_follow, client_addr) = crate::listen::follow();
    let (peer_follow, peer_addr_rx) = crate::listen::follow();
    let repl = repl
        .with_addresses(client_follow, peer_follow)
        .with_handshake_hold(timing.election_max.as_millis() as u64)
        .with_keep_clients(cfg.keep_clients_on_leader_loss)
        .with_latest_check(checks.clone());
    let (core_tx, core_rx) = mpsc::channel(CORE_QUEUE);
    let up = crate::raft::seam::Upward::to(core_tx.clone());
    let crate::raft::Recovered { tree, applied, membership, log, snap_dir, amnesia, .. } = rec;
    let views = Arc::new(view::Views::new(tree.last_zxid()));
    let core = Core::new(
        cfg.clone(),
        tree,
        secret,
        Log::Replicated(Box::new(repl)),
        durable.clone(),
        stats.clone(),
        views.clone(),
    );
    let core = spawn_core(core, core_rx)?;
    let log_reader = log.clone();
    let log_for_votes = log.clone();
    let due = state_machine::SnapshotDue::new(cfg.snap_count);
    let sm = state_machine::StateMachine::new(up.clone(), due.clone(), snap_dir, applied, membership)
        .with_crash_point(cfg.failpoints.crash_at);
    let raft = crate::raft::types::Raft::new(me, Arc::new(raft_cfg), network::Network::new(link.clone()), log, sm)
        .await
        .map_err(|e| StartError::Ensemble(format!("cannot start Raft: {e}")))?;
    tokio::spawn(due.run(raft.clone(), shutdown.clone()));
    let peer = spec.peer_addr();
    let listener = TcpListener::bind(&peer).await.map_err(|source| StartError::Bind { addr: peer.clone(), source })?;
    let peer_addr = listener.local_addr().map_err(|source| StartError::Bind { addr: peer.clone(), source })?;
    let gate = crate::raft::seed::Gate::load(&crate::raft::raft_dir(cfg))?;
    let amnesia = crate::raft::amnesia::Amnesia::new(&crate::raft::raft_dir(cfg), amnesia);
    let status = Arc::new(member::MemberStatus { seed: parking_lot::Mutex::new(gate), amnesia, ..Default::default() });
    member::tag_logs(me, status.clone());
    let submitter = member::Submitter::spawn(raft.clone(), checks, status.clone(), shutdown.clone())
        .with_crash_point(cfg.failpoints.crash_at);
    let port = member::PeerPort {
        link: link.clone(),
        raft: raft.clone(),
        submitter: submitter.clone(),
        core: up.clone(),
        status: status.clone(),
        log: log_reader,
        deaf_for: Duration::from_millis(cfg.failpoints.deaf_peer_port_ms),
        slow_appends: member::SlowAppends::new(cfg.failpoints.slow_appends_ms),
    };
    let listener = crate::listen::Listener::following(listener, peer_addr_rx, "peer");
    let peers = tokio::spawn(member::serve_peers(port, listener, shutdown.clone()));
    if seeding {
        // A quorum just answered the seed's probe: stand for election now, not after a timeout.
        let raft = raft.clone();
        tokio::spawn(async move {
            if let Err(e) = raft.trigger().elect().await {
                tracing::debug!("the seed's first election: {e}");
            }
        });
    }
    // An observer never initializes the ensemble: the leader adds it as a learner.
    if !spec.observer && !raft.is_initialized().await.unwrap_or(true) {
        tokio::spawn(initialize_new(raft.clone(), status.clone(), link.clone(), ens.clone(), timing, shutdown.clone()));
    } else if status.amnesia.state() == crate::raft::amnesia::State::Probing {
        // Its vote was set aside as damaged, its log is whole: it asks the others for the newest
        // term as an empty member does, and votes again once a leader of that term caught it up
        // (without the probe it refused votes for good: found by the disk matrix's leader cells).
        let (link, ens, status, stop) = (link.clone(), ens.clone(), status.clone(), shutdown.clone());
        tokio::spawn(async move { member::probe_ensemble(&link, &ens, &status, &stop, timing.heartbeat).await });
    }
    {
        // openraft's own elections start switched off (`raft_config`): this switches them on
        // while a pre-vote is won, never while the member may have lost entries, and only while
        // it is a voter (an observer a reconfig makes a participant campaigns from then on).
        let (raft, link, status, log) = (raft.clone(), link.clone(), status.clone(), log_for_votes);
        tokio::spawn(member::guard_elections(raft, link, status, log, started_ms, shutdown.clone()));
    }
    // The leader's heartbeats on a lane of their own, never behind a large AppendEntries.
    tokio::spawn(member::send_beats(raft.clone(), link.clone(), status.clone(), shutdown.clone()));
    let shared = Arc::new(parking_lot::RwLock::new(ens.clone()));
    tokio::spawn(member::propose(
        link,
        shared.clone(),
        raft.clone(),
        submitter,
        up.clone(),
        proposals,
        shutdown.clone(),
    ));
    tokio::spawn(member::keep_observers(raft.clone(), shared.clone(), shutdown.clone()));
    let limits = member::Silence { stale: timing.stale_after, leader: timing.leader_silence };
    tokio::spawn(member::watch_role(raft.clone(), up, status.clone(), limits, shutdown.clone()));
    tracing::info!(id = me, peer = %peer_addr, members = ens.members.len(), "ensemble member started");
    let member = Member { raft, status, peer_addr, peers };
    Ok(Started {
        core_tx,
        core,
        log: None,
        durable,
        views,
        member: Some(member),
        client_follow: Some(client_addr),
        lock,
        observer: None,
    })
}

/// The links to the other members, with quorum TLS when the config asks for it.
fn peer_link(
    cfg: &Config,
    me: u64,
    timing: crate::raft::timing::Timing,
    shutdown: &CancellationToken,
) -> Result<crate::raft::link::Link, StartError> {
    let quorum_tls = load_quorum_tls(cfg, shutdown)?;
    Ok(crate::raft::link::Link::new(me, quorum_tls, cfg.quorum_sasl.clone(), timing))
}

/// Quorum TLS's stores when the config asks for it (`sslQuorum`, `portUnification`), reloaded
/// until `shutdown` with `sslQuorumReloadCertFiles=true`.
fn load_quorum_tls(
    cfg: &Config,
    shutdown: &CancellationToken,
) -> Result<Option<Arc<crate::security::quorum_tls::QuorumTls>>, StartError> {
    let Some(q) = &cfg.quorum_tls else { return Ok(None) };
    let t = crate::security::quorum_tls::QuorumTls::load(q.clone()).map_err(StartError::QuorumTls)?;
    if t.settings().reload {
        tokio::spawn(t.clone().watch(shutdown.clone(), crate::security::tls::RELOAD_POLL));
    }
    Ok(Some(t))
}

/// A member of a new ensemble proposes the initial membership (every voter proposes the same
/// one, which openraft allows; whoever wins the first election commits it). It waits one
/// election timeout first, so that a member seeding the ensemble and started with it is heard
/// from before (no election could end sooner anyway).
async fn initialize_new(
    raft: crate::raft::types::Raft,
    status: Arc<crate::raft::member::MemberStatus>,
    link: crate::raft::link::Link,
    ens: crate::raft::members::Ensemble,
    timing: crate::raft::timing::Timing,
    stop: CancellationToken,
) {
    use crate::raft::member;
    let voters: std::collections::BTreeMap<u64, crate::raft::members::ServerSpec> =
        ens.members.iter().filter(|(_, s)| !s.observer).map(|(id, s)| (*id, s.clone())).collect();
    if status.amnesia.state() == crate::raft::amnesia::State::Probing {
        // Empty: a member of a new ensemble, or one whose data was wiped? The others know.
        let every = timing.heartbeat;
        if member::probe_ensemble(&link, &ens, &status, &stop, every).await != member::Probed::Initialize {
            return;
        }
    }
    tokio::select! {
        _ = stop.cancelled() => return,
        _ = tokio::time::sleep(timing.election_max) => {}
    }
    // A member that waited for a seed may have it by now: nothing left to initialize.
    if raft.is_initialized().await.unwrap_or(true) || !status.seed.lock().may_initialize() {
        return;
    }
    if let Err(e) = raft.initialize(voters).await {
        tracing::debug!("initialize: {e}");
    }
}

/// An observer of a ZooKeeper ensemble (`zkr.ensembleProtocol=zab`): the core over ZooKeeper's
/// genesis tree, and the follower that syncs it from the leader and keeps it in step.
fn start_observer(
    cfg: &Arc<Config>,
    ens: &crate::raft::members::Ensemble,
    stats: &Arc<stats::ServerStats>,
    shutdown: &CancellationToken,
) -> Result<Started, StartError> {
    use crate::zab::follow::{self, Follow, Status, VoterAddr};
    let me = ens.me().ok_or_else(|| StartError::Ensemble(format!("server.{} is not in the ensemble", ens.my_id)))?;
    // The last snapshot of what it observed (a restart then syncs with a DIFF from there), or
    // ZooKeeper's own genesis tree, to which a DIFF from zxid 0 applies.
    let recovered = crate::storage::recover(cfg)?;
    let (tree, secret, lock) = (recovered.tree, recovered.secret, recovered.lock);
    let zxid = tree.last_zxid();
    tracing::info!(zxid = format!("0x{zxid:x}"), znodes = tree.node_count(), "observer recovered its last snapshot");
    // ZooKeeper's members ask for TLS on their quorum and election ports with sslQuorum=true.
    let quorum_tls = load_quorum_tls(cfg, shutdown)?;
    let voters = ens
        .members
        .iter()
        .filter(|(_, s)| !s.observer)
        .map(|(id, s)| VoterAddr {
            sid: *id as i64,
            quorum: s.peer_addr(),
            election: crate::raft::members::join_host_port(&s.host, s.election_port),
        })
        .collect();
    let f = Follow {
        sid: ens.my_id as i64,
        my_election: crate::raft::members::join_host_port(&me.host, me.election_port),
        voters,
        tick: Duration::from_millis(cfg.tick_time_ms as u64),
        init_limit: ens.init_limit,
        sync_limit: ens.sync_limit,
        // jute.maxbuffer plus ZooKeeper's extra size of the same amount.
        max_buffer: cfg.max_frame.saturating_mul(2),
        last_zxid: zxid,
        epochs_dir: Some(cfg.data_dir.join("zab")),
        auth: cfg.quorum_sasl.as_ref().and_then(|q| q.login.clone()),
        dial: crate::zab::dial::Dialer::new(quorum_tls, tokio::runtime::Handle::current()),
    };
    let (core_tx, core_rx) = mpsc::channel(CORE_QUEUE);
    let weak = core_tx.downgrade();
    let following =
        follow::spawn(f, move |up| weak.upgrade().is_some_and(|tx| tx.blocking_send(CoreMsg::Zab(up)).is_ok()))
            .map_err(StartError::Thread)?;
    let status = Arc::new(Status::default());
    let observing =
        core::observing::Observing::new(following.outbox.clone(), following.touched.clone(), status.clone(), &tree);
    let durable = Arc::new(std::sync::atomic::AtomicI64::new(zxid));
    let views = Arc::new(view::Views::new(zxid));
    let core = Core::new(
        cfg.clone(),
        tree,
        secret,
        Log::Observer(Box::new(observing)),
        durable.clone(),
        stats.clone(),
        views.clone(),
    );
    let core = spawn_core(core, core_rx)?;
    tracing::info!(id = ens.my_id, voters = ens.voters().count(), "observing a ZooKeeper ensemble");
    Ok(Started {
        core_tx,
        core,
        log: None,
        durable,
        views,
        member: None,
        client_follow: None,
        lock,
        observer: Some(Observer { following, status, takeover: Arc::default() }),
    })
}
