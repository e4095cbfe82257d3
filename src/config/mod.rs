//! Server configuration: `zkr serve` flags merged over a ZooKeeper `zoo.cfg`.
//!
//! Flags win over the file, the file wins over defaults. A malformed line stops startup with
//! the file, the line number and the reason; unknown keys are logged once and ignored.
//! `export` reads the few keys `zkr export-zookeeper` takes from a zoo.cfg (the directories and
//! `snapshot.compression.method`), apart from the server's `Config`.

mod auth;
mod export;
mod merge;
mod tls;
mod zoo_cfg;

pub use auth::jvm_property;
pub use export::{export_config, jvm_flags_from_env, ExportConfig, SNAPSHOT_COMPRESSION_KEY};
pub use tls::{
    AdminTlsSettings, ClientAuth, Origin, QuorumTlsSettings, StorePassword, StoreSettings, StoreType, TlsSettings,
    TlsStores,
};
use zoo_cfg::read_file;
pub use zoo_cfg::{dynamic_file, parse_zoo_cfg, CfgKeys, ZooCfg};

use std::net::IpAddr;
use std::path::PathBuf;

/// Why a configuration could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}:{line}: {reason}")]
    Line { file: String, line: usize, reason: String },
    #[error("cannot read {file}: {source}")]
    Read { file: String, source: std::io::Error },
    #[error("invalid configuration: {0}")]
    Invalid(String),
    #[error("{0}")]
    Ensemble(#[from] crate::raft::members::MembersError),
}

/// The client port's listen backlog when zoo.cfg sets none. ZooKeeper's default (-1) is the
/// JVM's 50, which drops SYNs in a reconnect storm (the clients retry after a second); the
/// kernel caps this at net.core.somaxconn (4096 by default).
pub const DEFAULT_LISTEN_BACKLOG: u32 = 4096;

/// Faults a test can inject into one member (never set in production).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Failpoints {
    /// `prep-skew`: this member prepares a create's data differently from the others (one byte
    /// more), so its tree diverges from the leader's while it applies the same log.
    pub prep_skew: bool,
    /// `leader-dies-in-joint`: a leader that appended a joint membership entry (the first step
    /// of openraft's membership change) exits as it applies it, before the second step, as if
    /// killed between the two.
    pub leader_dies_in_joint: bool,
    /// `deaf-peer-port=MS`: for MS ms after it starts, this member's peer port closes every
    /// connection it accepts, while its own connections to the others work: a member that hears
    /// nobody but reaches everyone (a one-way partition), as a restarted member is until the
    /// leader's next append reaches it.
    pub deaf_peer_port_ms: u64,
    /// `slow-appends=MS`: this member takes MS ms longer to append each AppendEntries that
    /// carries more than 512 KiB of entries, one at a time, as a member with a disk that slow
    /// (`raft::member::SlowAppends`).
    pub slow_appends_ms: u64,
    /// `crash-at=NAME`: the process aborts at that step (as a kill -9 would stop it there).
    pub crash_at: Option<CrashPoint>,
}

/// The steps of recovery and of snapshots a test can stop a member at (`crash-at=NAME`): each
/// fsync, rename or unlink whose order decides what a crash leaves behind (the steps ALICE and
/// CrashMonkey enumerate); and the steps of a reconfig between which a leader may die.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    /// The amnesia marker written, the damaged log not cut yet.
    AmnesiaMarked,
    /// The damaged segment's copy kept in `damaged/`, the segment not zeroed yet.
    LogCutCopied,
    /// The damaged segment zeroed from the bad record on, later segments not moved yet.
    LogCutZeroed,
    /// Later segments moved aside, the commit hint not yet.
    LogCutMoved,
    /// A log that does not reach back to the snapshot set aside, the member not started.
    LogSetAside,
    /// Setting a diverged member's Raft state aside: the first file moved, the rest not.
    DivergeMovedOne,
    /// An empty member's probe marked as started, nothing asked yet.
    ProbeMarked,
    /// A snapshot's tree file written and renamed, its `.meta` not written yet.
    SnapshotWritten,
    /// A snapshot's `.meta` written, older snapshots not purged yet.
    SnapshotMeta,
    /// A snapshot from the leader renamed into place, its `.meta` not written yet.
    InstallRenamed,
    /// Purging an old snapshot: its `.meta` removed, its tree file not yet.
    SnapshotPurgeMeta,
    /// Purging the log: the `purged` mark written, the purged segments not removed yet.
    LogPurged,
    /// A leader applied a reconfig's begin record, no membership changed yet.
    ReconfigBegun,
    /// A reconfig's new servers joined as learners (each fires after a step that changed the
    /// membership, so a later leader finishing the plan skips it and lives).
    ReconfigAdded,
    /// A reconfig's new addresses set.
    ReconfigMoved,
    /// A reconfig's new voters added.
    ReconfigVoted,
    /// A reconfig's demoted participants kept as learners.
    ReconfigDemoted,
    /// A reconfig's leaving servers removed, its end record not proposed yet.
    ReconfigRemoved,
}

impl CrashPoint {
    pub const ALL: [(&'static str, CrashPoint); 18] = [
        ("amnesia-marked", CrashPoint::AmnesiaMarked),
        ("log-cut-copied", CrashPoint::LogCutCopied),
        ("log-cut-zeroed", CrashPoint::LogCutZeroed),
        ("log-cut-moved", CrashPoint::LogCutMoved),
        ("log-set-aside", CrashPoint::LogSetAside),
        ("diverge-moved-one", CrashPoint::DivergeMovedOne),
        ("probe-marked", CrashPoint::ProbeMarked),
        ("snapshot-written", CrashPoint::SnapshotWritten),
        ("snapshot-meta", CrashPoint::SnapshotMeta),
        ("install-renamed", CrashPoint::InstallRenamed),
        ("snapshot-purge-meta", CrashPoint::SnapshotPurgeMeta),
        ("log-purged", CrashPoint::LogPurged),
        ("reconfig-begun", CrashPoint::ReconfigBegun),
        ("reconfig-added", CrashPoint::ReconfigAdded),
        ("reconfig-moved", CrashPoint::ReconfigMoved),
        ("reconfig-voted", CrashPoint::ReconfigVoted),
        ("reconfig-demoted", CrashPoint::ReconfigDemoted),
        ("reconfig-removed", CrashPoint::ReconfigRemoved),
    ];

    pub fn name(self) -> &'static str {
        CrashPoint::ALL.iter().find(|(_, p)| *p == self).map_or("?", |(n, _)| n)
    }

    /// Aborts the process if `at` names this step (the member's failpoint).
    pub fn hit(self, at: Option<CrashPoint>) {
        if at == Some(self) {
            eprintln!("failpoint crash-at={}: the process stops here", self.name());
            std::process::abort();
        }
    }
}

impl Failpoints {
    pub fn parse(list: &str) -> Result<Failpoints, ConfigError> {
        let mut f = Failpoints::default();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "prep-skew" => f.prep_skew = true,
                "leader-dies-in-joint" => f.leader_dies_in_joint = true,
                other if other.starts_with("deaf-peer-port=") => {
                    f.deaf_peer_port_ms = millis("deaf-peer-port", &other["deaf-peer-port=".len()..])?;
                }
                other if other.starts_with("slow-appends=") => {
                    f.slow_appends_ms = millis("slow-appends", &other["slow-appends=".len()..])?;
                }
                other if other.starts_with("crash-at=") => {
                    let at = &other["crash-at=".len()..];
                    let point = CrashPoint::ALL.iter().find(|(n, _)| *n == at).map(|(_, p)| *p);
                    f.crash_at = Some(point.ok_or_else(|| {
                        ConfigError::Invalid(format!("ZKR_FAILPOINTS: crash-at names no step: {at:?}"))
                    })?);
                }
                other => return Err(ConfigError::Invalid(format!("ZKR_FAILPOINTS: unknown failpoint {other:?}"))),
            }
        }
        Ok(f)
    }
}

fn millis(failpoint: &str, ms: &str) -> Result<u64, ConfigError> {
    ms.parse().map_err(|_| ConfigError::Invalid(format!("ZKR_FAILPOINTS: {failpoint} wants milliseconds, not {ms:?}")))
}

/// Flags of `zkr serve`; `None` means "not given" so that zoo.cfg can fill it.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeArgs {
    /// Client port (zoo.cfg clientPort); 0 picks a free port.
    #[arg(long)]
    pub port: Option<u16>,
    /// Address to bind (zoo.cfg clientPortAddress).
    #[arg(long)]
    pub bind: Option<IpAddr>,
    /// Data directory (zoo.cfg dataDir).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Milliseconds per tick (zoo.cfg tickTime).
    #[arg(long)]
    pub tick_time: Option<u32>,
    /// Smallest session timeout granted, ms (default 2 × tickTime).
    #[arg(long)]
    pub min_session_timeout: Option<u32>,
    /// Largest session timeout granted, ms (default 20 × tickTime).
    #[arg(long)]
    pub max_session_timeout: Option<u32>,
    /// Connections per client IP (zoo.cfg maxClientCnxns); 0 = unlimited.
    #[arg(long)]
    pub max_client_cnxns: Option<u32>,
    /// Connections in total, all addresses together (ZooKeeper's maxCnxns); 0 = unlimited.
    #[arg(long)]
    pub max_connections: Option<u32>,
    /// A connection that has not completed its ConnectRequest (or four-letter word) within this
    /// many ms is closed (ZooKeeper's nio.sessionlessCnxnTimeout, 10000).
    #[arg(long)]
    pub handshake_timeout_ms: Option<u64>,
    /// Requests in flight on one connection before zkr stops reading from it.
    #[arg(long)]
    pub max_outstanding: Option<usize>,
    /// Replies and notifications queued for one connection before it is closed as too slow.
    #[arg(long)]
    pub max_outbound_queue: Option<usize>,
    /// Bytes of replies and notifications queued for one connection before it is closed as too
    /// slow (one larger reply still goes out alone).
    #[arg(long)]
    pub max_outbound_bytes: Option<usize>,
    /// Largest frame accepted, bytes (ZooKeeper's jute.maxbuffer).
    #[arg(long)]
    pub max_frame: Option<usize>,
    /// `user:base64(sha1(user:password))` of the super user
    /// (ZooKeeper's zookeeper.DigestAuthenticationProvider.superDigest).
    #[arg(long)]
    pub super_digest: Option<String>,
    /// How often empty containers and expired TTL nodes are swept, ms
    /// (ZooKeeper's znode.container.checkIntervalMs).
    #[arg(long)]
    pub container_check_interval_ms: Option<u64>,
    /// Directory for the write-ahead log (zoo.cfg dataLogDir; default <data-dir>/wal).
    #[arg(long)]
    pub data_log_dir: Option<PathBuf>,
    /// fsync the log before acknowledging writes (zoo.cfg forceSync); `--force-sync false` trades
    /// durability for speed, as in ZooKeeper.
    #[arg(long)]
    pub force_sync: Option<bool>,
    /// Txns between snapshots (zoo.cfg snapCount).
    #[arg(long)]
    pub snap_count: Option<u64>,
    /// If the newest snapshot fails its checksum, start from an older one instead of stopping.
    #[arg(long)]
    pub recover_older_snapshot: bool,
    /// AdminServer HTTP port (zoo.cfg admin.serverPort, default 8080); 0 picks a free port.
    #[arg(long)]
    pub admin_port: Option<u16>,
    /// Serve the AdminServer at all (zoo.cfg admin.enableServer, default true).
    #[arg(long)]
    pub admin_enable: Option<bool>,
    /// Refuse creates and setData that cross a hard quota limit with QuotaExceeded
    /// (zoo.cfg enforceQuota, ZooKeeper's zookeeper.enforceQuota; default false).
    #[arg(long)]
    pub enforce_quota: Option<bool>,
    /// Serve Prometheus metrics at http://ADDR:PORT/metrics, as ZooKeeper's
    /// PrometheusMetricsProvider does (zoo.cfg metricsProvider.httpHost/httpPort; default off).
    #[arg(long)]
    pub metrics_port: Option<u16>,
    /// A ZooKeeper zoo.cfg to read.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// This member's id in an ensemble (ZooKeeper's myid file); needs --peers or server.N lines.
    #[arg(long)]
    pub id: Option<u64>,
    /// Serve read-only sessions while cut off from the ensemble's quorum (ZooKeeper's
    /// `-Dreadonlymode.enabled=true`; zoo.cfg `readonlymode.enabled=true` works too).
    #[arg(long)]
    pub readonlymode_enabled: Option<bool>,
    /// In an ensemble, followers keep their clients' connections while the survivors of a
    /// leader's crash elect a new leader (requests wait, up to an election timeout), instead of
    /// closing them as ZooKeeper's followers do. Those clients then see no Disconnected (Curator:
    /// no SUSPENDED) for a leader crash. zoo.cfg `zkr.keepClientsOnLeaderLoss=true`; default false.
    #[arg(long)]
    pub keep_clients_on_leader_loss: Option<bool>,
    /// An ensemble member that lost log entries it may have acknowledged (a damaged log cut, a
    /// wiped data directory) votes again at once instead of waiting to be caught up by a leader
    /// that has them: the operator accepts that those writes may be lost. zoo.cfg
    /// `zkr.acceptDataLoss=true`; default false. Meant for one restart, then removed.
    #[arg(long)]
    pub accept_data_loss: Option<bool>,
    /// The ensemble's members and their peer ports: `1=host:port,2=host:port,…`
    /// (zoo.cfg's server.N lines: `N=host:peerPort:electionPort[:observer]` is accepted too).
    #[arg(long)]
    pub peers: Option<String>,
    /// TLS client port (zoo.cfg secureClientPort); runs beside the plaintext port.
    #[arg(long)]
    pub secure_port: Option<u16>,
    /// PEM server certificate chain for the TLS port (may also hold the key, as ZooKeeper's
    /// PEM `ssl.keyStore.location` does).
    #[arg(long)]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of the server certificate (default: looked for in --tls-cert).
    #[arg(long)]
    pub tls_key: Option<PathBuf>,
    /// PEM CA certificates that client certificates must chain to (zoo.cfg ssl.trustStore.location).
    #[arg(long)]
    pub tls_ca: Option<PathBuf>,
    /// Client certificates: none, want or need (zoo.cfg ssl.clientAuth; default need with a CA).
    #[arg(long)]
    pub tls_client_auth: Option<String>,
    /// Client certificate subject that gets `super`
    /// (ZooKeeper's zookeeper.X509AuthenticationProvider.superUser).
    #[arg(long)]
    pub x509_super_user: Option<String>,
    /// JAAS file whose `Server` section lists SASL DIGEST-MD5 users as `user_<name>="<password>"`
    /// (what ZooKeeper reads from -Djava.security.auth.login.config).
    #[arg(long)]
    pub jaas_config: Option<PathBuf>,
    /// SASL user that gets `super` (ZooKeeper's zookeeper.superUser).
    #[arg(long)]
    pub sasl_super_user: Option<String>,
}

/// ZooKeeper's authentication enforcement (`AuthenticationHelper`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnforceAuth {
    /// A connection's identities must include one of these schemes before its requests are served.
    pub schemes: Vec<String>,
}

impl EnforceAuth {
    /// `sasl` enforced: a failed SASL login is answered SESSIONCLOSEDREQUIRESASLAUTH, not
    /// AUTHFAILED (`ZooKeeperServer.processSasl`).
    pub fn sasl_required(&self) -> bool {
        self.schemes.iter().any(|s| s == "sasl")
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub bind: IpAddr,
    pub port: u16,
    pub data_dir: PathBuf,
    pub data_log_dir: Option<PathBuf>,
    pub tick_time_ms: u32,
    pub min_session_timeout_ms: u32,
    pub max_session_timeout_ms: u32,
    pub max_client_cnxns: u32,
    /// The client port's listen backlog (zoo.cfg clientPortListenBacklog); None: zkr's default,
    /// `DEFAULT_LISTEN_BACKLOG`.
    pub listen_backlog: Option<u32>,
    /// Connections in total (zoo.cfg maxCnxns); 0 = unlimited.
    pub max_connections: u32,
    /// Time allowed to send a complete ConnectRequest (zoo.cfg nio.sessionlessCnxnTimeout).
    pub handshake_timeout_ms: u64,
    pub max_frame: usize,
    pub super_digest: Option<String>,
    pub container_check_interval_ms: u64,
    /// TTL nodes (zoo.cfg extendedTypesEnabled); on unless the file turns it off.
    pub ttl_enabled: bool,
    /// Outstanding requests per connection before zkr stops reading from it.
    pub max_outstanding_per_conn: usize,
    /// Replies and notifications queued for one connection before it is dropped as too slow.
    pub max_outbound_queue: usize,
    /// Bytes those may put on the wire before it is dropped as too slow.
    pub max_outbound_bytes: usize,
    /// Server id in the top byte of session ids (0 in standalone mode, like ZooKeeper).
    pub server_id: u8,
    /// fsync before acknowledging (zoo.cfg forceSync=yes|no).
    pub force_sync: bool,
    /// Txns between snapshots (zoo.cfg snapCount, ZooKeeper's default 100,000).
    pub snap_count: u64,
    /// Snapshots kept by the purge (zoo.cfg autopurge.snapRetainCount, default 3).
    pub snap_retain_count: usize,
    /// Fall back to an older snapshot when the newest is corrupt.
    pub recover_older_snapshot: bool,
    /// Four-letter words answered (zoo.cfg 4lw.commands.whitelist; ZooKeeper's default is srvr).
    pub four_letter_words: Vec<String>,
    /// AdminServer on/off (zoo.cfg admin.enableServer; on by default, as in ZooKeeper).
    pub admin_enabled: bool,
    /// AdminServer address (zoo.cfg admin.serverAddress, default 0.0.0.0).
    pub admin_bind: IpAddr,
    /// AdminServer port (zoo.cfg admin.serverPort, default 8080).
    pub admin_port: u16,
    /// The AdminServer's HTTPS (admin.forceHttps / admin.portUnification with the ssl.quorum.*
    /// stores); `None`: plain HTTP, as ZooKeeper serves it by default.
    pub admin_tls: Option<AdminTlsSettings>,
    /// The backup commands (`snapshot`, `restore`): on/off and their rate limit.
    pub admin_backup: AdminBackup,
    /// The TLS port, if configured (secureClientPort).
    pub tls: Option<TlsSettings>,
    /// Subject of the x509 super user.
    pub x509_super_user: Option<String>,
    /// SASL DIGEST-MD5 users and passwords (JAAS Server section); None = no SASL server.
    pub sasl_users: Option<crate::security::jaas::Users>,
    /// SASL user that gets `super`.
    pub sasl_super_user: Option<String>,
    /// SASL GSSAPI: the JAAS server section logs in with Kerberos (then clients log in with
    /// GSSAPI, not DIGEST-MD5, as ZooKeeper's server picks its one mechanism by its login).
    pub sasl_kerberos: Option<crate::security::gssapi::KerberosSettings>,
    /// Requests of a connection not authenticated with this scheme are refused and the
    /// connection closed (`enforce.auth.*`, `sessionRequireClientSASLAuth`).
    pub enforce_auth: Option<EnforceAuth>,
    /// The ensemble this server is a member of; `None` standalone.
    pub ensemble: Option<crate::raft::members::Ensemble>,
    /// TLS between ensemble members (`sslQuorum`, `portUnification`); `None`: plaintext.
    pub quorum_tls: Option<QuorumTlsSettings>,
    /// Read-only mode: a member cut off from the quorum serves clients that allow it, read-only.
    pub read_only_enabled: bool,
    /// Followers keep their clients through the election after a leader's crash
    /// (`zkr.keepClientsOnLeaderLoss`; off: ZooKeeper's behaviour).
    pub keep_clients_on_leader_loss: bool,
    /// A member that lost acknowledged entries votes at once (`zkr.acceptDataLoss`; see
    /// `raft::amnesia`).
    pub accept_data_loss: bool,
    /// New sessions get the password ZooKeeper derives from the session id instead of one
    /// derived from the data directory's secret (`zkr.zookeeperPasswords`; off by default): their
    /// clients can re-attach to ZooKeeper after `export-zookeeper`. Anyone who knows a session
    /// id can derive such a password.
    pub zookeeper_passwords: bool,
    /// `zkr.ensembleProtocol=zab`: the ensemble is a ZooKeeper one, which this server observes
    /// (`crate::zab`); otherwise zkr's own members replicate with Raft.
    pub zab_observer: bool,
    /// Quorum SASL (`quorum.auth.enableSasl`): on a zkr ensemble's peer links both sides; an
    /// observer of a ZooKeeper ensemble sends its `login` on every connection to it.
    pub quorum_sasl: Option<crate::security::quorum_sasl::QuorumSasl>,
    /// On an error after which this member must not go on (its tree diverged from the leader's,
    /// an entry of newer prep rules), stop the process (exit 70) for a supervisor to restart
    /// it; tests in one process turn this off, and the member only stops serving.
    pub exit_on_fatal: bool,
    /// Faults injected by tests (`ZKR_FAILPOINTS`, comma-separated names).
    pub failpoints: Failpoints,
    /// Hard quota limits refuse writes (zoo.cfg enforceQuota; off by default, as in ZooKeeper).
    pub enforce_quota: bool,
    /// Where Prometheus metrics are served (`metricsProvider.className` =
    /// ZooKeeper's PrometheusMetricsProvider, `metricsProvider.httpHost`/`httpPort`).
    pub metrics: Option<std::net::SocketAddr>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: IpAddr::from([0, 0, 0, 0]),
            port: 2181,
            data_dir: PathBuf::from("zkr-data"),
            data_log_dir: None,
            tick_time_ms: 2000,
            min_session_timeout_ms: 4000,
            max_session_timeout_ms: 40000,
            max_client_cnxns: 60,
            listen_backlog: None,
            max_connections: 0,
            handshake_timeout_ms: 10_000,
            max_frame: 1_048_575,
            super_digest: None,
            container_check_interval_ms: 60_000,
            ttl_enabled: true,
            max_outstanding_per_conn: 1000,
            max_outbound_queue: 100_000,
            max_outbound_bytes: 32 * 1024 * 1024,
            server_id: 0,
            four_letter_words: vec!["srvr".to_owned()],
            admin_enabled: true,
            admin_bind: IpAddr::from([0, 0, 0, 0]),
            admin_port: 8080,
            force_sync: true,
            snap_count: 100_000,
            snap_retain_count: 3,
            recover_older_snapshot: false,
            admin_tls: None,
            admin_backup: AdminBackup::default(),
            tls: None,
            x509_super_user: None,
            sasl_users: None,
            sasl_kerberos: None,
            enforce_auth: None,
            sasl_super_user: None,
            ensemble: None,
            quorum_tls: None,
            read_only_enabled: false,
            keep_clients_on_leader_loss: false,
            zab_observer: false,
            quorum_sasl: None,
            accept_data_loss: false,
            zookeeper_passwords: false,
            exit_on_fatal: true,
            failpoints: Failpoints::default(),
            enforce_quota: false,
            metrics: None,
        }
    }
}

/// `metricsProvider.className` of ZooKeeper's Prometheus exporter, the one zkr stands in for.
pub const PROMETHEUS_PROVIDER: &str = "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider";

impl Config {
    /// How often a follower or observer reports the sessions heard from it to the leader: half a
    /// tick, as ZooKeeper's learner pings its leader (`Learner.ping`, every tickTime / 2).
    pub fn session_report_ms(&self) -> u64 {
        (self.tick_time_ms as u64 / 2).max(10)
    }

    /// The core's own tick (expiry, reaping, reports): half a tick, at least every 100 ms so
    /// that session expiry stays within ZooKeeper's precision at any tickTime.
    pub fn core_tick(&self) -> std::time::Duration {
        std::time::Duration::from_millis((self.tick_time_ms as u64 / 2).clamp(10, 100))
    }

    /// Builds the configuration from flags and, if given, the zoo.cfg they name.
    pub fn from_args(args: &ServeArgs) -> Result<Config, ConfigError> {
        let file = match &args.config {
            Some(p) => Some(read_file(p)?),
            None => None,
        };
        let mut c = Config::merge(args, file.as_ref())?;
        c.failpoints = Failpoints::parse(&std::env::var("ZKR_FAILPOINTS").unwrap_or_default())?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests;

/// The AdminServer's backup commands (`/commands/snapshot`, `/commands/restore`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminBackup {
    /// `admin.snapshot.enabled` (system property `zookeeper.admin.snapshot.enabled`). Off unless
    /// set: ZooKeeper 3.9 defaults it to true, zkr does not serve its tree unless asked.
    pub snapshot: bool,
    /// `admin.restore.enabled` (`zookeeper.admin.restore.enabled`); off unless set, as `snapshot`.
    pub restore: bool,
    /// `admin.rateLimiterIntervalInMS` (`zookeeper.admin.rateLimiterIntervalInMS`): the least
    /// time between two snapshot (or two restore) commands, ms (ZooKeeper's default 5 minutes).
    pub rate_limit_ms: u64,
}

impl Default for AdminBackup {
    fn default() -> AdminBackup {
        AdminBackup { snapshot: false, restore: false, rate_limit_ms: 300_000 }
    }
}
