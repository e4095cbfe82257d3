//! Server configuration: `zkr serve` flags merged over a ZooKeeper `zoo.cfg`.
//!
//! Flags win over the file, the file wins over defaults. A malformed line stops startup with
//! the file, the line number and the reason; unknown keys are logged once and ignored.

mod tls;
mod zoo_cfg;

use tls::{quorum_tls_from_file, tls_from_file, tls_settings, TlsFromFile};
pub use tls::{ClientAuth, Origin, QuorumTlsSettings, StorePassword, StoreSettings, StoreType, TlsSettings, TlsStores};
pub use zoo_cfg::{dynamic_file, parse_zoo_cfg, CfgKeys, ZooCfg};
use zoo_cfg::{metrics_from_file, read_file};

use std::net::IpAddr;
use std::path::{Path, PathBuf};

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
}

impl Failpoints {
    pub fn parse(list: &str) -> Result<Failpoints, ConfigError> {
        let mut f = Failpoints::default();
        for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "prep-skew" => f.prep_skew = true,
                "leader-dies-in-joint" => f.leader_dies_in_joint = true,
                other => return Err(ConfigError::Invalid(format!("ZKR_FAILPOINTS: unknown failpoint {other:?}"))),
            }
        }
        Ok(f)
    }
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
    /// The TLS port, if configured (secureClientPort).
    pub tls: Option<TlsSettings>,
    /// Subject of the x509 super user.
    pub x509_super_user: Option<String>,
    /// SASL DIGEST-MD5 users and passwords (JAAS Server section); None = no SASL server.
    pub sasl_users: Option<crate::security::jaas::Users>,
    /// SASL user that gets `super`.
    pub sasl_super_user: Option<String>,
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
            tls: None,
            x509_super_user: None,
            sasl_users: None,
            sasl_super_user: None,
            ensemble: None,
            quorum_tls: None,
            read_only_enabled: false,
            keep_clients_on_leader_loss: false,
            accept_data_loss: false,
            exit_on_fatal: true,
            failpoints: Failpoints::default(),
            enforce_quota: false,
            metrics: None,
        }
    }
}

/// Keys zkr reads.
const USED: &[&str] = &[
    "readonlymode.enabled",
    "zkr.keepClientsOnLeaderLoss",
    "zkr.acceptDataLoss",
    "initLimit",
    "syncLimit",
    "standaloneEnabled",
    "reconfigEnabled",
    "dynamicConfigFile",
    "clientPort",
    "clientPortAddress",
    "dataDir",
    "dataLogDir",
    "tickTime",
    "minSessionTimeout",
    "maxSessionTimeout",
    "maxClientCnxns",
    "maxCnxns",
    "nio.sessionlessCnxnTimeout",
    "jute.maxbuffer",
    "extendedTypesEnabled",
    "4lw.commands.whitelist",
    "forceSync",
    "snapCount",
    "autopurge.snapRetainCount",
    "admin.enableServer",
    "admin.serverAddress",
    "admin.serverPort",
    "secureClientPort",
    "secureClientPortAddress",
    "ssl.keyStore.location",
    "ssl.keyStore.type",
    "ssl.keyStore.password",
    "ssl.keyStore.passwordPath",
    "ssl.trustStore.location",
    "ssl.trustStore.type",
    "ssl.trustStore.password",
    "ssl.trustStore.passwordPath",
    "ssl.clientAuth",
    "ssl.protocol",
    "ssl.enabledProtocols",
    "ssl.ciphersuites",
    "ssl.hostnameVerification",
    "ssl.crl",
    "ssl.ocsp",
    "sslQuorum",
    "portUnification",
    "sslQuorumReloadCertFiles",
    "ssl.quorum.keyStore.location",
    "ssl.quorum.keyStore.type",
    "ssl.quorum.keyStore.password",
    "ssl.quorum.keyStore.passwordPath",
    "ssl.quorum.trustStore.location",
    "ssl.quorum.trustStore.type",
    "ssl.quorum.trustStore.password",
    "ssl.quorum.trustStore.passwordPath",
    "ssl.quorum.clientAuth",
    "ssl.quorum.protocol",
    "ssl.quorum.enabledProtocols",
    "ssl.quorum.ciphersuites",
    "ssl.quorum.hostnameVerification",
    "ssl.quorum.crl",
    "ssl.quorum.ocsp",
    "X509AuthenticationProvider.superUser",
    "DigestAuthenticationProvider.superDigest",
    "superUser",
    "enforceQuota",
    "metricsProvider.className",
    "metricsProvider.httpHost",
    "metricsProvider.httpPort",
    "metricsProvider.exportJvmInfo",
];

/// `metricsProvider.className` of ZooKeeper's Prometheus exporter, the one zkr stands in for.
pub const PROMETHEUS_PROVIDER: &str = "org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider";

impl Config {
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

    fn merge(args: &ServeArgs, file: Option<&ZooCfg>) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        let mut min_from_file = None;
        let mut max_from_file = None;
        let mut tls_file = TlsFromFile::default();
        if let Some(ZooCfg { name, keys }) = file {
            let num = |key: &str| -> Result<Option<i64>, ConfigError> {
                match keys.get(key) {
                    None => Ok(None),
                    Some((v, line)) => v.parse::<i64>().map(Some).map_err(|_| ConfigError::Line {
                        file: name.clone(),
                        line: *line,
                        reason: format!("{key} must be a number, found {v:?}"),
                    }),
                }
            };
            let range = |key: &str, v: i64, lo: i64, hi: i64| -> Result<i64, ConfigError> {
                if v < lo || v > hi {
                    let line = keys.get(key).map_or(0, |(_, l)| *l);
                    return Err(ConfigError::Line {
                        file: name.clone(),
                        line,
                        reason: format!("{key}={v} is out of range {lo}..={hi}"),
                    });
                }
                Ok(v)
            };
            // A key whose value must be exactly true or false (no Java parsing to match there).
            let strict_bool = |key: &str| -> Result<Option<bool>, ConfigError> {
                match keys.get(key).map(|(v, line)| (v.as_str(), *line)) {
                    None => Ok(None),
                    Some(("true", _)) => Ok(Some(true)),
                    Some(("false", _)) => Ok(Some(false)),
                    Some((v, line)) => Err(ConfigError::Line {
                        file: name.clone(),
                        line,
                        reason: format!("{key} must be true or false, found {v:?}"),
                    }),
                }
            };
            if let Some(v) = num("clientPort")? {
                c.port = range("clientPort", v, 0, 65535)? as u16;
            }
            if let Some((v, line)) = keys.get("clientPortAddress") {
                c.bind = v.parse().map_err(|_| ConfigError::Line {
                    file: name.clone(),
                    line: *line,
                    reason: format!("clientPortAddress must be an IP address, found {v:?}"),
                })?;
            }
            if let Some((v, _)) = keys.get("dataDir") {
                c.data_dir = PathBuf::from(v);
            }
            if let Some((v, _)) = keys.get("dataLogDir") {
                c.data_log_dir = Some(PathBuf::from(v));
            }
            if let Some(v) = num("tickTime")? {
                c.tick_time_ms = range("tickTime", v, 1, i32::MAX as i64)? as u32;
            }
            // ZooKeeper treats -1 as "use the default".
            min_from_file = num("minSessionTimeout")?.filter(|v| *v >= 0);
            max_from_file = num("maxSessionTimeout")?.filter(|v| *v >= 0);
            if let Some(v) = num("maxClientCnxns")? {
                c.max_client_cnxns = range("maxClientCnxns", v, 0, u32::MAX as i64)? as u32;
            }
            if let Some(v) = num("maxCnxns")? {
                // ZooKeeper logs and ignores a negative value; zkr refuses it like any bad number.
                c.max_connections = range("maxCnxns", v, 0, u32::MAX as i64)? as u32;
            }
            if let Some(v) = num("nio.sessionlessCnxnTimeout")? {
                c.handshake_timeout_ms = range("nio.sessionlessCnxnTimeout", v, 1, i32::MAX as i64)? as u64;
            }
            if let Some(v) = num("jute.maxbuffer")? {
                c.max_frame = range("jute.maxbuffer", v, 1, i32::MAX as i64)? as usize;
            }
            if let Some(v) = strict_bool("extendedTypesEnabled")? {
                c.ttl_enabled = v;
            }
            if let Some((v, line)) = keys.get("forceSync") {
                c.force_sync = match v.as_str() {
                    "yes" | "true" => true,
                    "no" | "false" => false,
                    _ => {
                        return Err(ConfigError::Line {
                            file: name.clone(),
                            line: *line,
                            reason: format!("forceSync must be yes or no, found {v:?}"),
                        })
                    }
                };
            }
            if let Some(v) = num("snapCount")? {
                c.snap_count = range("snapCount", v, 1, i64::MAX)? as u64;
            }
            if let Some(v) = num("autopurge.snapRetainCount")? {
                // ZooKeeper keeps at least 3 whatever is asked.
                c.snap_retain_count = range("autopurge.snapRetainCount", v, 0, 1_000_000)?.max(3) as usize;
            }
            if let Some((v, _)) = keys.get("4lw.commands.whitelist") {
                c.four_letter_words = v.split(',').map(|w| w.trim().to_owned()).filter(|w| !w.is_empty()).collect();
            }
            if let Some((v, _)) = keys.get("admin.enableServer") {
                // Java's Boolean.parseBoolean: anything but "true" (any case) is false.
                c.admin_enabled = v.eq_ignore_ascii_case("true");
            }
            if let Some((v, line)) = keys.get("admin.serverAddress") {
                c.admin_bind = v.parse().map_err(|_| ConfigError::Line {
                    file: name.clone(),
                    line: *line,
                    reason: format!("admin.serverAddress must be an IP address, found {v:?}"),
                })?;
            }
            if let Some(v) = num("admin.serverPort")? {
                c.admin_port = range("admin.serverPort", v, 0, 65535)? as u16;
            }
            // zkr's own key.
            if let Some(v) = strict_bool("zkr.keepClientsOnLeaderLoss")? {
                c.keep_clients_on_leader_loss = v;
            }
            if let Some(v) = strict_bool("zkr.acceptDataLoss")? {
                c.accept_data_loss = v;
            }
            if let Some((v, _)) = keys.get("enforceQuota") {
                // Boolean.parseBoolean(System.getProperty("zookeeper.enforceQuota")).
                c.enforce_quota = v.eq_ignore_ascii_case("true");
            }
            c.metrics = metrics_from_file(name, keys)?;
            tls_file = tls_from_file(name, keys)?;
            // ZooKeeper turns this zoo.cfg key into zookeeper.DigestAuthenticationProvider.superDigest.
            c.super_digest = keys.get("DigestAuthenticationProvider.superDigest").map(|(v, _)| v.clone());
            c.x509_super_user = keys.get("X509AuthenticationProvider.superUser").map(|(v, _)| v.clone());
            c.sasl_super_user = keys.get("superUser").map(|(v, _)| v.clone());
            for (k, (_, line)) in keys.iter() {
                if !USED.contains(&k.as_str()) && !k.starts_with("server.") {
                    tracing::info!(file = %name, line, key = %k, "zoo.cfg key not used by zkr, ignored");
                }
            }
        }
        if let Some(v) = args.enforce_quota {
            c.enforce_quota = v;
        }
        if let Some(v) = args.keep_clients_on_leader_loss {
            c.keep_clients_on_leader_loss = v;
        }
        if let Some(v) = args.accept_data_loss {
            c.accept_data_loss = v;
        }
        if let Some(port) = args.metrics_port {
            let host = c.metrics.map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
            c.metrics = Some(std::net::SocketAddr::new(host, port));
        }
        if let Some(v) = args.port {
            c.port = v;
        }
        if let Some(v) = args.bind {
            c.bind = v;
        }
        if let Some(v) = &args.data_dir {
            c.data_dir = v.clone();
        }
        if let Some(v) = args.tick_time {
            c.tick_time_ms = v;
        }
        c.min_session_timeout_ms =
            args.min_session_timeout.or(min_from_file.map(|v| v as u32)).unwrap_or(2 * c.tick_time_ms);
        c.max_session_timeout_ms =
            args.max_session_timeout.or(max_from_file.map(|v| v as u32)).unwrap_or(20 * c.tick_time_ms);
        if let Some(v) = args.max_client_cnxns {
            c.max_client_cnxns = v;
        }
        if let Some(v) = args.max_frame {
            c.max_frame = v;
        }
        if let Some(v) = args.max_connections {
            c.max_connections = v;
        }
        if let Some(v) = args.handshake_timeout_ms {
            c.handshake_timeout_ms = v;
        }
        if let Some(v) = args.max_outstanding {
            c.max_outstanding_per_conn = v;
        }
        if let Some(v) = args.max_outbound_queue {
            c.max_outbound_queue = v;
        }
        if let Some(v) = args.max_outbound_bytes {
            c.max_outbound_bytes = v;
        }
        if let Some(v) = &args.super_digest {
            c.super_digest = Some(v.clone());
        }
        if let Some(v) = args.container_check_interval_ms {
            c.container_check_interval_ms = v;
        }
        if let Some(v) = &args.data_log_dir {
            c.data_log_dir = Some(v.clone());
        }
        if let Some(v) = args.force_sync {
            c.force_sync = v;
        }
        if let Some(v) = args.snap_count {
            c.snap_count = v.max(1);
        }
        c.recover_older_snapshot |= args.recover_older_snapshot;
        if let Some(v) = args.admin_port {
            c.admin_port = v;
        }
        if let Some(v) = args.admin_enable {
            c.admin_enabled = v;
        }
        c.tls = tls_settings(args, tls_file, c.bind)?;
        if let Some(v) = &args.x509_super_user {
            c.x509_super_user = Some(v.clone());
        }
        if let Some(v) = &args.sasl_super_user {
            c.sasl_super_user = Some(v.clone());
        }
        if let Some(p) = &args.jaas_config {
            let users = crate::security::jaas::load(p).map_err(|e| ConfigError::Invalid(e.to_string()))?;
            c.sasl_users = Some(users);
        }
        if c.tick_time_ms == 0 {
            return Err(ConfigError::Invalid("tickTime must be positive".into()));
        }
        if c.min_session_timeout_ms > c.max_session_timeout_ms {
            return Err(ConfigError::Invalid(format!(
                "minSessionTimeout {} is larger than maxSessionTimeout {}",
                c.min_session_timeout_ms, c.max_session_timeout_ms
            )));
        }
        if c.handshake_timeout_ms == 0
            || c.max_outstanding_per_conn == 0
            || c.max_outbound_queue == 0
            || c.max_outbound_bytes == 0
        {
            return Err(ConfigError::Invalid(
                "handshake timeout, max outstanding, max outbound queue and max outbound bytes must be positive".into(),
            ));
        }
        if c.container_check_interval_ms == 0 {
            return Err(ConfigError::Invalid("container check interval must be positive".into()));
        }
        // ZooKeeper reads the system property; deployments set it in SERVER_JVMFLAGS or JVMFLAGS.
        let from_jvm_flags = ["SERVER_JVMFLAGS", "JVMFLAGS"]
            .iter()
            .any(|v| std::env::var(v).is_ok_and(|f| f.split_whitespace().any(|a| a == "-Dreadonlymode.enabled=true")));
        let from_file = file.and_then(|f| f.keys.get("readonlymode.enabled")).is_some_and(|(v, _)| v == "true");
        c.read_only_enabled = args.readonlymode_enabled.unwrap_or(from_file || from_jvm_flags);
        let file_keys = file.map(|f| (f.name.as_str(), &f.keys));
        let dynamic = match file {
            Some(f) => zoo_cfg::dynamic_file(f)?,
            None => None,
        };
        let dyn_keys = dynamic.as_ref().map(|(p, d)| (p.as_path(), (d.name.as_str(), &d.keys)));
        c.ensemble = crate::raft::members::resolve(file_keys, dyn_keys, args.id, args.peers.as_deref(), &c.data_dir)?;
        if let (Some(_), Some(f)) = (&c.ensemble, file) {
            refuse_quorum_sasl(f)?;
            c.quorum_tls = quorum_tls_from_file(&f.name, &f.keys)?;
        }
        let me = match &c.ensemble {
            Some(ens) => {
                c.server_id = ens.my_id as u8;
                ens.me().cloned()
            }
            None => file.and_then(|f| standalone_server_line(f, &c.data_dir)),
        };
        // `server.N=…;[addr:]port` names this server's client port (ZooKeeper 3.5+); it wins
        // over clientPort, and a --port flag wins over both.
        if let Some((addr, port)) = me.and_then(|m| m.client) {
            if args.port.is_none() {
                c.port = port;
            }
            if args.bind.is_none() {
                if let Ok(ip) = addr.parse() {
                    c.bind = ip;
                }
            }
        }
        Ok(c)
    }
}

/// The one `server.N` line of a server that runs standalone (one server, standaloneEnabled),
/// when dataDir's myid names it: its client port is still the one ZooKeeper listens on
/// (QuorumPeerConfig.setupClientPort reads it whenever a myid file exists). The official Docker
/// image writes such a config by default: `server.1=localhost:2888:3888;2181` and myid 1.
fn standalone_server_line(file: &ZooCfg, data_dir: &Path) -> Option<crate::raft::members::ServerSpec> {
    let mut servers = crate::raft::members::servers_of(&file.keys, &file.name).ok()?;
    if servers.len() != 1 {
        return None;
    }
    let id = crate::raft::members::read_myid(data_dir).ok()?;
    servers.remove(&id)
}

/// An ensemble asked to authenticate its members with SASL (`quorum.auth.enableSasl`) stops
/// startup: zkr's peer port does not do it yet, and carrying on would let any host that can
/// reach the peer port join, where the operator asked otherwise. (`sslQuorum` is served: a
/// member then takes only members whose certificates its trust store vouches for.)
fn refuse_quorum_sasl(f: &ZooCfg) -> Result<(), ConfigError> {
    let key = "quorum.auth.enableSasl";
    if let Some((v, line)) = f.keys.get(key).filter(|(v, _)| v.trim().eq_ignore_ascii_case("true")) {
        return Err(ConfigError::Line {
            file: f.name.clone(),
            line: *line,
            reason: format!(
                "{key}={v}: zkr does not yet authenticate ensemble members with SASL; it refuses to start rather than run without it (set {key}=false and use sslQuorum=true with client certificates, or keep the peer ports on a private network)"
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_file(text: &str, args: ServeArgs) -> Result<Config, ConfigError> {
        let keys = parse_zoo_cfg(text, "zoo.cfg")?;
        Config::merge(&args, Some(&ZooCfg { name: "zoo.cfg".to_owned(), keys }))
    }

    #[test]
    fn defaults_match_zookeeper() {
        let c = Config::merge(&ServeArgs::default(), None).unwrap();
        assert_eq!(
            (c.port, c.tick_time_ms, c.min_session_timeout_ms, c.max_session_timeout_ms),
            (2181, 2000, 4000, 40000)
        );
        assert_eq!((c.max_client_cnxns, c.max_frame), (60, 1_048_575));
        assert_eq!((c.admin_enabled, c.admin_port), (true, 8080));
    }

    #[test]
    fn keep_clients_on_leader_loss_is_off_unless_asked() {
        assert!(!with_file("", ServeArgs::default()).unwrap().keep_clients_on_leader_loss);
        assert!(
            with_file("zkr.keepClientsOnLeaderLoss=true\n", ServeArgs::default()).unwrap().keep_clients_on_leader_loss
        );
        let e = with_file("tickTime=2000\nzkr.keepClientsOnLeaderLoss=yes\n", ServeArgs::default())
            .err()
            .map(|e| e.to_string());
        assert!(
            e.as_deref()
                .is_some_and(|e| e.ends_with(":2: zkr.keepClientsOnLeaderLoss must be true or false, found \"yes\"")),
            "{e:?}"
        );
        let flag = ServeArgs { keep_clients_on_leader_loss: Some(false), ..Default::default() };
        assert!(
            !with_file("zkr.keepClientsOnLeaderLoss=true\n", flag).unwrap().keep_clients_on_leader_loss,
            "the flag wins"
        );
    }

    #[test]
    fn enforce_quota_as_java_parses_it() {
        assert!(!with_file("", ServeArgs::default()).unwrap().enforce_quota, "off by default, as in ZooKeeper");
        assert!(with_file("enforceQuota=TRUE\n", ServeArgs::default()).unwrap().enforce_quota);
        assert!(!with_file("enforceQuota=yes\n", ServeArgs::default()).unwrap().enforce_quota, "Boolean.parseBoolean");
        let flag = ServeArgs { enforce_quota: Some(false), ..Default::default() };
        assert!(!with_file("enforceQuota=true\n", flag).unwrap().enforce_quota, "the flag wins");
    }

    #[test]
    fn super_digest_from_zoo_cfg_as_zookeeper_turns_it_into_its_property() {
        let c = with_file("DigestAuthenticationProvider.superDigest=super:abc=\n", ServeArgs::default()).unwrap();
        assert_eq!(c.super_digest.as_deref(), Some("super:abc="));
        let flag = ServeArgs { super_digest: Some("x:y".into()), ..Default::default() };
        let c = with_file("DigestAuthenticationProvider.superDigest=super:abc=\n", flag).unwrap();
        assert_eq!(c.super_digest.as_deref(), Some("x:y"), "the flag wins");
    }

    /// docs/config.md lists every key zkr reads as honoured (so the page stays true when a key
    /// is added to `USED`), and calls no key honoured that zkr does not read.
    #[test]
    fn docs_config_md_matches_the_keys_zkr_reads() {
        let doc = include_str!("../../docs/config.md");
        let mut honoured = Vec::new();
        for line in doc.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = line.split(" | ").collect();
            let (Some(keys), Some(zkr)) = (cells.first(), cells.last()) else { continue };
            let keys: Vec<&str> = keys.split('`').skip(1).step_by(2).collect();
            if zkr.starts_with("honoured") {
                honoured.extend(keys);
            }
        }
        for key in USED {
            assert!(honoured.contains(key), "{key} is read by zkr but docs/config.md does not list it as honoured");
        }
        for key in &honoured {
            // server.N and myid are read by raft::members, not through USED.
            let read = USED.contains(key) || ["server.N", "myid"].contains(key);
            assert!(read, "docs/config.md says {key} is honoured but zkr does not read it");
        }
    }

    #[test]
    fn metrics_provider_keys() {
        assert_eq!(with_file("", ServeArgs::default()).unwrap().metrics, None);
        let cfg = format!("metricsProvider.className={PROMETHEUS_PROVIDER}\n");
        assert_eq!(with_file(&cfg, ServeArgs::default()).unwrap().metrics, Some("0.0.0.0:7000".parse().unwrap()));
        let cfg = format!("{cfg}metricsProvider.httpHost=127.0.0.1\nmetricsProvider.httpPort=7001\n");
        assert_eq!(with_file(&cfg, ServeArgs::default()).unwrap().metrics, Some("127.0.0.1:7001".parse().unwrap()));
        let flag = ServeArgs { metrics_port: Some(9), ..Default::default() };
        assert_eq!(with_file(&cfg, flag).unwrap().metrics, Some("127.0.0.1:9".parse().unwrap()));
        let e = with_file("metricsProvider.className=com.example.Foo\n", ServeArgs::default()).unwrap_err();
        assert!(e.to_string().starts_with("zoo.cfg:1: metrics provider \"com.example.Foo\""), "{e}");
        let e = with_file(&format!("{cfg}metricsProvider.httpPort=x\n"), ServeArgs::default()).unwrap_err();
        assert!(e.to_string().contains("metricsProvider.httpPort must be a port number"), "{e}");
    }

    #[test]
    fn admin_server_keys() {
        let c = with_file("admin.enableServer=false\nadmin.serverPort=30123\n", ServeArgs::default()).unwrap();
        assert_eq!((c.admin_enabled, c.admin_port), (false, 30123));
        let args = ServeArgs { admin_enable: Some(true), admin_port: Some(0), ..Default::default() };
        let c = with_file("admin.enableServer=false\n", args).unwrap();
        assert_eq!((c.admin_enabled, c.admin_port), (true, 0));
    }

    #[test]
    fn quorum_sasl_stops_startup_and_quorum_tls_is_read_from_ssl_quorum_keys() {
        let dir = std::env::temp_dir().join(format!("zkr-cfg-sslquorum-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("myid"), "1\n").unwrap();
        let base =
            format!("dataDir={}\nserver.1=a:2888:3888\nserver.2=b:2888:3888\nserver.3=c:2888:3888\n", dir.display());
        let c = with_file(&format!("{base}sslQuorum=false\n"), ServeArgs::default()).unwrap();
        assert!(c.ensemble.is_some() && c.quorum_tls.is_none());
        let err = with_file(&format!("{base}quorum.auth.enableSasl=true\n"), ServeArgs::default()).unwrap_err();
        assert!(err.to_string().starts_with("zoo.cfg:5: quorum.auth.enableSasl=true"), "{err}");
        // sslQuorum needs this member's key store and a trust store, named by line.
        let err = with_file(&format!("{base}sslQuorum=true\n"), ServeArgs::default()).unwrap_err().to_string();
        assert!(err.starts_with("zoo.cfg:5: sslQuorum=true needs this member's key"), "{err}");
        let stores = "ssl.quorum.keyStore.location=/k/m1.jks\nssl.quorum.keyStore.password=pw\n";
        let err = with_file(&format!("{base}sslQuorum=true\n{stores}"), ServeArgs::default()).unwrap_err().to_string();
        assert!(err.starts_with("zoo.cfg:5: sslQuorum=true needs ssl.quorum.trustStore.location"), "{err}");
        let stores = format!("{stores}ssl.quorum.trustStore.location=/k/trust.p12\nssl.quorum.trustStore.password=t\n");
        let q =
            with_file(&format!("{base}sslQuorum=true\n{stores}"), ServeArgs::default()).unwrap().quorum_tls.unwrap();
        assert!(q.encrypt && !q.port_unification && q.hostname_verification && !q.reload);
        assert_eq!((q.stores.key_store.kind, q.stores.client_auth), (StoreType::Jks, ClientAuth::Need));
        assert_eq!(q.stores.key_store.describe(), "zoo.cfg:6: ssl.quorum.keyStore.location=/k/m1.jks");
        assert_eq!(q.stores.trust_store.as_ref().map(|t| t.kind), Some(StoreType::Pkcs12));
        // The client port's ssl.* keys are not the quorum's.
        assert!(c.tls.is_none());
        let text = format!(
            "{base}portUnification=true\n{stores}ssl.quorum.hostnameVerification=false\nsslQuorumReloadCertFiles=true\n\
             ssl.quorum.clientAuth=want\nssl.quorum.enabledProtocols=TLSv1.3\n"
        );
        let q = with_file(&text, ServeArgs::default()).unwrap().quorum_tls.unwrap();
        assert!(!q.encrypt && q.port_unification && !q.hostname_verification && q.reload);
        assert_eq!(q.stores.client_auth, ClientAuth::Want);
        assert_eq!(q.stores.protocols, vec![crate::security::tls_params::Protocol::Tls13]);
        let err =
            with_file(&format!("{base}sslQuorum=true\n{stores}ssl.quorum.clientAuth=maybe\n"), ServeArgs::default())
                .unwrap_err()
                .to_string();
        assert!(err.starts_with("zoo.cfg:10: ssl.quorum.clientAuth must be none, want or need"), "{err}");
        let err = with_file(&format!("{base}sslQuorum=true\n{stores}ssl.quorum.crl=true\n"), ServeArgs::default())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("zoo.cfg:10: ssl.quorum.crl=true"), "{err}");
        // A standalone server has no peer traffic: ZooKeeper's standalone ignores the keys too.
        let c = with_file(&format!("dataDir={}\nsslQuorum=true\n", dir.display()), ServeArgs::default()).unwrap();
        assert!(c.ensemble.is_none() && c.quorum_tls.is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn standalone_server_line_names_the_client_port() {
        let dir = std::env::temp_dir().join(format!("zkr-cfg-standalone-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = format!("dataDir={}\nserver.1=localhost:2888:3888;127.0.0.1:2999\n", dir.display());
        // No myid: ZooKeeper does not know which line is its own, and keeps clientPort.
        let c = with_file(&text, ServeArgs::default()).unwrap();
        assert_eq!((c.ensemble.is_none(), c.port), (true, 2181));
        std::fs::write(dir.join("myid"), "1\n").unwrap();
        let c = with_file(&text, ServeArgs::default()).unwrap();
        assert_eq!((c.ensemble.is_none(), c.port, c.bind), (true, 2999, IpAddr::from([127, 0, 0, 1])));
        let c = with_file(&text, ServeArgs { port: Some(3000), ..Default::default() }).unwrap();
        assert_eq!(c.port, 3000);
        std::fs::write(dir.join("myid"), "2\n").unwrap();
        let c = with_file(&text, ServeArgs::default()).unwrap();
        assert_eq!(c.port, 2181);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn reads_zoo_cfg_and_flags_win() {
        let text = "# c\ntickTime=500\nclientPort=2999\ndataDir=/tmp/x\nmaxClientCnxns=0\ninitLimit=5\n";
        let c = with_file(text, ServeArgs { port: Some(3000), ..Default::default() }).unwrap();
        assert_eq!((c.port, c.tick_time_ms, c.min_session_timeout_ms), (3000, 500, 1000));
        assert_eq!(c.data_dir, PathBuf::from("/tmp/x"));
        assert_eq!(c.max_client_cnxns, 0);
    }

    #[test]
    fn connection_limits_use_zookeeper_keys() {
        let c = with_file("maxCnxns=500\nnio.sessionlessCnxnTimeout=3000\n", ServeArgs::default()).unwrap();
        assert_eq!((c.max_connections, c.handshake_timeout_ms), (500, 3000));
        let args = ServeArgs { max_connections: Some(7), max_outstanding: Some(3), ..Default::default() };
        let c = with_file("maxCnxns=500\n", args).unwrap();
        assert_eq!((c.max_connections, c.max_outstanding_per_conn), (7, 3));
        assert!(with_file("maxCnxns=-1\n", ServeArgs::default()).is_err());
    }

    #[test]
    fn malformed_lines_name_file_and_line() {
        let e = with_file("tickTime=2000\nthis is wrong\n", ServeArgs::default()).unwrap_err();
        assert_eq!(e.to_string(), "zoo.cfg:2: expected key=value, found \"this is wrong\"");
        let e = with_file("clientPort=abc\n", ServeArgs::default()).unwrap_err();
        assert!(e.to_string().starts_with("zoo.cfg:1: clientPort must be a number"), "{e}");
    }

    #[test]
    fn tls_keys_from_zoo_cfg() {
        let text = "secureClientPort=2281\nssl.keyStore.location=/k/server.pem\nssl.trustStore.location=/k/ca.pem\n";
        let c = with_file(text, ServeArgs::default()).unwrap();
        let t = c.tls.unwrap();
        assert_eq!((t.port, t.stores.client_auth), (2281, ClientAuth::Need));
        assert_eq!(
            (t.stores.key_store.path.clone(), t.stores.key_store.kind),
            (PathBuf::from("/k/server.pem"), StoreType::Pem)
        );
        assert_eq!(t.stores.key_store.describe(), "zoo.cfg:2: ssl.keyStore.location=/k/server.pem");
        assert_eq!(t.stores.key_file, None);
        let e = with_file("ssl.clientAuth=maybe\n", ServeArgs::default()).unwrap_err();
        assert!(e.to_string().starts_with("zoo.cfg:1: ssl.clientAuth must be"), "{e}");
        let e = with_file("secureClientPort=2281\n", ServeArgs::default()).unwrap_err();
        assert!(e.to_string().contains("needs a server certificate"), "{e}");
        let args = ServeArgs { tls_client_auth: Some("want".into()), ..Default::default() };
        let e = with_file("secureClientPort=1\nssl.keyStore.location=/s.pem\n", args).unwrap_err();
        assert!(e.to_string().contains("need CA certificates"), "{e}");
    }

    #[test]
    fn key_store_type_from_type_key_or_file_name() {
        let tls = |text: &str| {
            with_file(&format!("secureClientPort=1\n{text}"), ServeArgs::default()).map(|c| c.tls.unwrap())
        };
        assert_eq!(tls("ssl.keyStore.location=/k/ks.jks\n").unwrap().stores.key_store.kind, StoreType::Jks);
        assert_eq!(tls("ssl.keyStore.location=/k/ks.p12\n").unwrap().stores.key_store.kind, StoreType::Pkcs12);
        assert_eq!(tls("ssl.keyStore.location=/k/ks.PFX\n").unwrap().stores.key_store.kind, StoreType::Pkcs12);
        let t = tls("ssl.keyStore.location=/k/ks\nssl.keyStore.type=pkcs12\n").unwrap();
        assert_eq!(t.stores.key_store.kind, StoreType::Pkcs12);
        // An empty type falls back to the file name, as fromPropertyValue("") returns null.
        assert_eq!(
            tls("ssl.keyStore.location=/k/a.jks\nssl.keyStore.type=\n").unwrap().stores.key_store.kind,
            StoreType::Jks
        );
        let e = tls("ssl.keyStore.location=/k/keystore\n").unwrap_err().to_string();
        assert!(e.starts_with("zoo.cfg:2: cannot tell the key store type"), "{e}");
        let e = tls("ssl.keyStore.location=/k/a.jks\nssl.keyStore.type=JCEKS\n").unwrap_err().to_string();
        assert!(e.starts_with("zoo.cfg:3: unknown key store type \"JCEKS\""), "{e}");
        let e = tls("ssl.keyStore.location=/k/a.bcfks\n").unwrap_err().to_string();
        assert!(e.starts_with("zoo.cfg:2: BCFKS key stores"), "{e}");
    }

    #[test]
    fn store_passwords_inline_or_from_a_file() {
        let text = "secureClientPort=1\nssl.keyStore.location=/k/ks.jks\nssl.keyStore.password=pw\n\
                    ssl.trustStore.location=/k/ts.p12\nssl.trustStore.password=x\nssl.trustStore.passwordPath=/k/tpw\n";
        let t = with_file(text, ServeArgs::default()).unwrap().tls.unwrap();
        assert_eq!(t.stores.key_store.password, StorePassword::Inline("pw".into()));
        let ts = t.stores.trust_store.unwrap();
        let origin = Origin::Line { file: "zoo.cfg".into(), line: 6, key: "ssl.trustStore.passwordPath".into() };
        assert_eq!(ts.password, StorePassword::File { path: PathBuf::from("/k/tpw"), origin });
        assert_eq!(format!("{:?}", t.stores.key_store.password), "Inline(hidden)");
    }

    #[test]
    fn protocols_and_cipher_suites() {
        use crate::security::tls_params::Protocol;
        let tls = |text: &str| {
            with_file(&format!("secureClientPort=1\nssl.keyStore.location=/k/s.pem\n{text}"), ServeArgs::default())
                .map(|c| c.tls.unwrap())
        };
        let t = tls("").unwrap();
        assert_eq!(t.stores.protocols, vec![Protocol::Tls12]);
        assert_eq!(t.stores.cipher_suites.len(), 4);
        let t = tls("ssl.enabledProtocols=TLSv1.3,TLSv1.2\nssl.ciphersuites=TLS_AES_256_GCM_SHA384\n").unwrap();
        assert_eq!(
            (t.stores.protocols, t.stores.cipher_suites),
            (vec![Protocol::Tls12, Protocol::Tls13], vec!["TLS_AES_256_GCM_SHA384".to_owned()])
        );
        let e = tls("ssl.ciphersuites=TLS_FOO\n").unwrap_err().to_string();
        assert!(e.starts_with("zoo.cfg:3: unknown cipher suite \"TLS_FOO\""), "{e}");
        let e = tls("ssl.enabledProtocols=TLSv2\n").unwrap_err().to_string();
        assert!(e.starts_with("zoo.cfg:3: unknown protocol"), "{e}");
        let e = tls("ssl.crl=true\n").unwrap_err().to_string();
        assert!(e.starts_with("zoo.cfg:3: ssl.crl=true: zkr does not check"), "{e}");
        assert!(tls("ssl.ocsp=false\nssl.hostnameVerification=false\n").is_ok());
        // Defaults also apply to a flags-only TLS port.
        let args = ServeArgs { secure_port: Some(1), tls_cert: Some("/s.pem".into()), ..Default::default() };
        let t = Config::merge(&args, None).unwrap().tls.unwrap();
        assert_eq!((t.stores.protocols.len(), t.stores.cipher_suites.len()), (1, 4));
        let args = ServeArgs { tls_key: Some("/k.pem".into()), ..Default::default() };
        let e = with_file("secureClientPort=1\nssl.keyStore.location=/k/a.jks\n", args).unwrap_err().to_string();
        assert!(e.contains("--tls-key goes with a PEM certificate"), "{e}");
    }
}
