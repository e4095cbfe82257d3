//! Building a `Config`: defaults, then zoo.cfg's keys, then `zkr serve`'s flags, then the checks
//! and the ensemble. Each step is its own function; `Config::merge` runs them in that order.

use super::tls::{admin_tls_from_file, quorum_tls_from_file, tls_from_file, tls_settings, TlsFromFile};
use super::zoo_cfg::{self, metrics_from_file, CfgKeys, ZooCfg};
use super::{Config, ConfigError, ServeArgs};
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// What zoo.cfg says that is settled only once the flags are known.
#[derive(Default)]
struct FromFile {
    min_session_timeout: Option<i64>,
    max_session_timeout: Option<i64>,
    tls: TlsFromFile,
}

/// Typed reads of zoo.cfg's keys; every error names the file and the key's line.
pub(super) struct Keys<'a> {
    pub(super) name: &'a str,
    pub(super) keys: &'a CfgKeys,
}

impl Keys<'_> {
    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.keys.get(key).map(|(v, _)| v.as_str())
    }

    pub(super) fn bad(&self, key: &str, reason: String) -> ConfigError {
        ConfigError::Line { file: self.name.to_owned(), line: self.keys.get(key).map_or(0, |(_, l)| *l), reason }
    }

    fn num(&self, key: &str) -> Result<Option<i64>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => {
                v.parse::<i64>().map(Some).map_err(|_| self.bad(key, format!("{key} must be a number, found {v:?}")))
            }
        }
    }

    /// A number within `lo..=hi`, if the key is there.
    fn within(&self, key: &str, lo: i64, hi: i64) -> Result<Option<i64>, ConfigError> {
        match self.num(key)? {
            Some(v) if v < lo || v > hi => Err(self.bad(key, format!("{key}={v} is out of range {lo}..={hi}"))),
            v => Ok(v),
        }
    }

    /// A key whose value must be exactly true or false (no Java parsing to match there).
    fn strict_bool(&self, key: &str) -> Result<Option<bool>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some("true") => Ok(Some(true)),
            Some("false") => Ok(Some(false)),
            Some(v) => Err(self.bad(key, format!("{key} must be true or false, found {v:?}"))),
        }
    }

    /// Java's Boolean.parseBoolean: anything but "true" (any case) is false.
    pub(super) fn java_bool(&self, key: &str) -> Option<bool> {
        self.get(key).map(|v| v.eq_ignore_ascii_case("true"))
    }

    fn ip(&self, key: &str) -> Result<Option<IpAddr>, ConfigError> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => {
                v.parse().map(Some).map_err(|_| self.bad(key, format!("{key} must be an IP address, found {v:?}")))
            }
        }
    }

    fn string(&self, key: &str) -> Option<String> {
        self.get(key).map(str::to_owned)
    }
}

impl Config {
    pub(super) fn merge(args: &ServeArgs, file: Option<&ZooCfg>) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        admin_backup_from_jvm_flags(&mut c.admin_backup);
        let from_file = match file {
            Some(f) => c.read_file(f)?,
            None => FromFile::default(),
        };
        c.apply_flags(args, from_file)?;
        c.read_jaas(args, file)?;
        c.check()?;
        c.read_only_enabled = read_only_enabled(args, file);
        c.enforce_auth = super::auth::enforce_auth(file)?;
        c.resolve_ensemble(args, file)?;
        Ok(c)
    }

    /// zoo.cfg's keys over the defaults.
    fn read_file(&mut self, f: &ZooCfg) -> Result<FromFile, ConfigError> {
        let k = Keys { name: &f.name, keys: &f.keys };
        self.read_server_keys(&k)?;
        self.read_storage_keys(&k)?;
        self.read_admin_keys(&k)?;
        // zkr's own keys.
        if let Some(v) = k.strict_bool("zkr.keepClientsOnLeaderLoss")? {
            self.keep_clients_on_leader_loss = v;
        }
        if let Some(v) = k.strict_bool("zkr.acceptDataLoss")? {
            self.accept_data_loss = v;
        }
        if let Some(v) = k.strict_bool("zkr.zookeeperPasswords")? {
            self.zookeeper_passwords = v;
        }
        self.zab_observer = match k.get("zkr.ensembleProtocol") {
            None | Some("raft") => false,
            Some("zab") => true,
            Some(v) => {
                return Err(
                    k.bad("zkr.ensembleProtocol", format!("zkr.ensembleProtocol must be raft or zab, found {v:?}"))
                )
            }
        };
        // Boolean.parseBoolean(System.getProperty("zookeeper.enforceQuota")).
        if let Some(v) = k.java_bool("enforceQuota") {
            self.enforce_quota = v;
        }
        self.metrics = metrics_from_file(&f.name, &f.keys)?;
        // ZooKeeper turns this zoo.cfg key into zookeeper.DigestAuthenticationProvider.superDigest.
        self.super_digest = k.string("DigestAuthenticationProvider.superDigest");
        self.x509_super_user = k.string("X509AuthenticationProvider.superUser");
        self.sasl_super_user = k.string("superUser");
        for (key, (_, line)) in f.keys.iter() {
            if key == super::SNAPSHOT_COMPRESSION_KEY {
                tracing::info!(file = %f.name, line, key = %key, "zoo.cfg key not used by zkr serve (its snapshots are zkr's own format); zkr export-zookeeper --config honours it");
            } else if !USED.contains(&key.as_str()) && !key.starts_with("server.") {
                tracing::info!(file = %f.name, line, key = %key, "zoo.cfg key not used by zkr, ignored");
            }
        }
        Ok(FromFile {
            // ZooKeeper treats -1 as "use the default".
            min_session_timeout: k.num("minSessionTimeout")?.filter(|v| *v >= 0),
            max_session_timeout: k.num("maxSessionTimeout")?.filter(|v| *v >= 0),
            tls: tls_from_file(&f.name, &f.keys)?,
        })
    }

    /// Client port and address, ticks, connection and frame limits, extended types.
    fn read_server_keys(&mut self, k: &Keys) -> Result<(), ConfigError> {
        if let Some(v) = k.within("clientPort", 0, 65535)? {
            self.port = v as u16;
        }
        if let Some(v) = k.ip("clientPortAddress")? {
            self.bind = v;
        }
        if let Some(v) = k.within("tickTime", 1, i32::MAX as i64)? {
            self.tick_time_ms = v as u32;
        }
        if let Some(v) = k.within("maxClientCnxns", 0, u32::MAX as i64)? {
            self.max_client_cnxns = v as u32;
        }
        // ZooKeeper takes -1 (its default) or 0 as "the JVM's default backlog".
        if let Some(v) = k.within("clientPortListenBacklog", -1, i32::MAX as i64)? {
            self.listen_backlog = (v > 0).then_some(v as u32);
        }
        // ZooKeeper logs and ignores a negative maxCnxns; zkr refuses it like any bad number.
        if let Some(v) = k.within("maxCnxns", 0, u32::MAX as i64)? {
            self.max_connections = v as u32;
        }
        if let Some(v) = k.within("nio.sessionlessCnxnTimeout", 1, i32::MAX as i64)? {
            self.handshake_timeout_ms = v as u64;
        }
        if let Some(v) = k.within("jute.maxbuffer", 1, i32::MAX as i64)? {
            self.max_frame = v as usize;
        }
        if let Some(v) = k.strict_bool("extendedTypesEnabled")? {
            self.ttl_enabled = v;
        }
        Ok(())
    }

    /// Data directories, fsync, snapshots.
    fn read_storage_keys(&mut self, k: &Keys) -> Result<(), ConfigError> {
        if let Some(v) = k.get("dataDir") {
            self.data_dir = PathBuf::from(v);
        }
        if let Some(v) = k.get("dataLogDir") {
            self.data_log_dir = Some(PathBuf::from(v));
        }
        if let Some(v) = k.get("forceSync") {
            self.force_sync = match v {
                "yes" | "true" => true,
                "no" | "false" => false,
                _ => return Err(k.bad("forceSync", format!("forceSync must be yes or no, found {v:?}"))),
            };
        }
        if let Some(v) = k.within("snapCount", 1, i64::MAX)? {
            self.snap_count = v as u64;
        }
        // ZooKeeper keeps at least 3 whatever is asked.
        if let Some(v) = k.within("autopurge.snapRetainCount", 0, 1_000_000)? {
            self.snap_retain_count = v.max(3) as usize;
        }
        Ok(())
    }

    /// Four-letter words and the AdminServer.
    fn read_admin_keys(&mut self, k: &Keys) -> Result<(), ConfigError> {
        if let Some(v) = k.get("4lw.commands.whitelist") {
            self.four_letter_words = v.split(',').map(|w| w.trim().to_owned()).filter(|w| !w.is_empty()).collect();
        }
        if let Some(v) = k.java_bool("admin.enableServer") {
            self.admin_enabled = v;
        }
        if let Some(v) = k.ip("admin.serverAddress")? {
            self.admin_bind = v;
        }
        if let Some(v) = k.within("admin.serverPort", 0, 65535)? {
            self.admin_port = v as u16;
        }
        self.admin_tls = admin_tls_from_file(k.name, k.keys)?;
        if let Some(v) = k.java_bool("admin.snapshot.enabled") {
            self.admin_backup.snapshot = v;
        }
        if let Some(v) = k.java_bool("admin.restore.enabled") {
            self.admin_backup.restore = v;
        }
        if let Some(v) = k.within("admin.rateLimiterIntervalInMS", 0, i64::from(i32::MAX))? {
            self.admin_backup.rate_limit_ms = v as u64;
        }
        Ok(())
    }

    /// `zkr serve`'s flags over the file; then the settings that depend on both.
    fn apply_flags(&mut self, args: &ServeArgs, file: FromFile) -> Result<(), ConfigError> {
        fn set<T: Clone>(slot: &mut T, flag: &Option<T>) {
            if let Some(v) = flag {
                *slot = v.clone();
            }
        }
        set(&mut self.enforce_quota, &args.enforce_quota);
        set(&mut self.keep_clients_on_leader_loss, &args.keep_clients_on_leader_loss);
        set(&mut self.accept_data_loss, &args.accept_data_loss);
        if let Some(port) = args.metrics_port {
            let host = self.metrics.map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
            self.metrics = Some(std::net::SocketAddr::new(host, port));
        }
        set(&mut self.port, &args.port);
        set(&mut self.bind, &args.bind);
        set(&mut self.data_dir, &args.data_dir);
        set(&mut self.tick_time_ms, &args.tick_time);
        self.min_session_timeout_ms =
            args.min_session_timeout.or(file.min_session_timeout.map(|v| v as u32)).unwrap_or(2 * self.tick_time_ms);
        self.max_session_timeout_ms =
            args.max_session_timeout.or(file.max_session_timeout.map(|v| v as u32)).unwrap_or(20 * self.tick_time_ms);
        set(&mut self.max_client_cnxns, &args.max_client_cnxns);
        set(&mut self.max_frame, &args.max_frame);
        set(&mut self.max_connections, &args.max_connections);
        set(&mut self.handshake_timeout_ms, &args.handshake_timeout_ms);
        set(&mut self.max_outstanding_per_conn, &args.max_outstanding);
        set(&mut self.max_outbound_queue, &args.max_outbound_queue);
        set(&mut self.max_outbound_bytes, &args.max_outbound_bytes);
        if let Some(v) = &args.super_digest {
            self.super_digest = Some(v.clone());
        }
        set(&mut self.container_check_interval_ms, &args.container_check_interval_ms);
        if let Some(v) = &args.data_log_dir {
            self.data_log_dir = Some(v.clone());
        }
        set(&mut self.force_sync, &args.force_sync);
        if let Some(v) = args.snap_count {
            self.snap_count = v.max(1);
        }
        self.recover_older_snapshot |= args.recover_older_snapshot;
        set(&mut self.admin_port, &args.admin_port);
        set(&mut self.admin_enabled, &args.admin_enable);
        self.tls = tls_settings(args, file.tls, self.bind)?;
        if let Some(v) = &args.x509_super_user {
            self.x509_super_user = Some(v.clone());
        }
        if let Some(v) = &args.sasl_super_user {
            self.sasl_super_user = Some(v.clone());
        }
        Ok(())
    }

    /// Settings that cannot work together, or at all.
    fn check(&self) -> Result<(), ConfigError> {
        if self.tick_time_ms == 0 {
            return Err(ConfigError::Invalid("tickTime must be positive".into()));
        }
        if self.min_session_timeout_ms > self.max_session_timeout_ms {
            return Err(ConfigError::Invalid(format!(
                "minSessionTimeout {} is larger than maxSessionTimeout {}",
                self.min_session_timeout_ms, self.max_session_timeout_ms
            )));
        }
        if self.handshake_timeout_ms == 0
            || self.max_outstanding_per_conn == 0
            || self.max_outbound_queue == 0
            || self.max_outbound_bytes == 0
        {
            return Err(ConfigError::Invalid(
                "handshake timeout, max outstanding, max outbound queue and max outbound bytes must be positive".into(),
            ));
        }
        if self.container_check_interval_ms == 0 {
            return Err(ConfigError::Invalid("container check interval must be positive".into()));
        }
        Ok(())
    }

    /// The ensemble (zoo.cfg's and the dynamic file's `server.N` lines, myid, `--id`/`--peers`),
    /// its quorum TLS, and this server's own client address from its `server.N` line.
    fn resolve_ensemble(&mut self, args: &ServeArgs, file: Option<&ZooCfg>) -> Result<(), ConfigError> {
        let file_keys = file.map(|f| (f.name.as_str(), &f.keys));
        let dynamic = match file {
            Some(f) => zoo_cfg::dynamic_file(f)?,
            None => None,
        };
        let dyn_keys = dynamic.as_ref().map(|(p, d)| (p.as_path(), (d.name.as_str(), &d.keys)));
        self.ensemble =
            crate::raft::members::resolve(file_keys, dyn_keys, args.id, args.peers.as_deref(), &self.data_dir)?;
        if let Some(f) = file {
            self.check_zab_observer(f)?;
        }
        if let (Some(_), Some(f)) = (&self.ensemble, file) {
            self.quorum_sasl = super::auth::quorum_sasl(f, args.jaas_config.as_deref())?;
            self.quorum_tls = quorum_tls_from_file(&f.name, &f.keys)?;
        }
        let me = match &self.ensemble {
            Some(ens) => {
                self.server_id = ens.my_id as u8;
                ens.me().cloned()
            }
            None => file.and_then(|f| standalone_server_line(f, &self.data_dir)),
        };
        // `server.N=…;[addr:]port` names this server's client port (ZooKeeper 3.5+); it wins
        // over clientPort, and a --port flag wins over both.
        if let Some((addr, port)) = me.and_then(|m| m.client) {
            if args.port.is_none() {
                self.port = port;
            }
            if args.bind.is_none() {
                if let Ok(ip) = addr.parse() {
                    self.bind = ip;
                }
            }
        }
        Ok(())
    }
}

impl Config {
    /// `zkr.ensembleProtocol=zab` makes this server an observer of the ZooKeeper ensemble its
    /// `server.N` lines name: its own line must say `:observer` (and `peerType`, if given,
    /// agree), and its myid must be above every voter's, since a ZooKeeper voter drops an
    /// election connection from a lower id and dials it back (`QuorumCnxManager`), which an
    /// observer has no listener for.
    fn check_zab_observer(&self, f: &ZooCfg) -> Result<(), ConfigError> {
        let k = Keys { name: &f.name, keys: &f.keys };
        let peer_type = k.get("peerType");
        if let Some(v) = peer_type.filter(|v| !matches!(*v, "observer" | "participant")) {
            return Err(k.bad("peerType", format!("peerType must be observer or participant, found {v:?}")));
        }
        if !self.zab_observer {
            if peer_type == Some("observer") && self.ensemble.as_ref().and_then(|e| e.me()).is_some_and(|m| !m.observer)
            {
                return Err(k.bad(
                    "peerType",
                    "peerType=observer, but this server's server.N line does not end in :observer".into(),
                ));
            }
            return Ok(());
        }
        let key = "zkr.ensembleProtocol";
        let Some(ens) = &self.ensemble else {
            return Err(k.bad(
                key,
                "zkr.ensembleProtocol=zab needs the ZooKeeper ensemble's server.N lines and this server's myid".into(),
            ));
        };
        let Some(me) = ens.me() else {
            return Err(k.bad(
                key,
                format!("zkr.ensembleProtocol=zab: server.{} (this server's myid) has no server.N line", ens.my_id),
            ));
        };
        if !me.observer || peer_type == Some("participant") {
            return Err(k.bad(
                key,
                format!("zkr.ensembleProtocol=zab: zkr joins a ZooKeeper ensemble as an observer only; end this server's line with :observer (server.{}=host:quorumPort:electionPort:observer) and set peerType=observer", ens.my_id),
            ));
        }
        if let Some(v) = ens.voters().find(|v| *v > ens.my_id) {
            return Err(k.bad(
                key,
                format!("zkr.ensembleProtocol=zab: this observer's myid {} must be above every ZooKeeper voter's (server.{v} is not)", ens.my_id),
            ));
        }
        Ok(())
    }
}

/// Read-only mode: the flag, else zoo.cfg's key, else the system property ZooKeeper reads
/// (deployments set it in SERVER_JVMFLAGS or JVMFLAGS).
fn read_only_enabled(args: &ServeArgs, file: Option<&ZooCfg>) -> bool {
    let from_jvm_flags = ["SERVER_JVMFLAGS", "JVMFLAGS"]
        .iter()
        .any(|v| std::env::var(v).is_ok_and(|f| f.split_whitespace().any(|a| a == "-Dreadonlymode.enabled=true")));
    let from_file = file.and_then(|f| f.keys.get("readonlymode.enabled")).is_some_and(|(v, _)| v == "true");
    args.readonlymode_enabled.unwrap_or(from_file || from_jvm_flags)
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

/// The backup commands' system properties in SERVER_JVMFLAGS or JVMFLAGS (`-Dzookeeper.admin.
/// snapshot.enabled=true` and the like, as ZooKeeper reads them with `System.getProperty`); a
/// zoo.cfg key, read after this, wins.
pub(super) fn admin_backup_from_jvm_flags(backup: &mut crate::config::AdminBackup) {
    for var in ["SERVER_JVMFLAGS", "JVMFLAGS"] {
        let Ok(flags) = std::env::var(var) else { continue };
        for arg in flags.split_whitespace() {
            let Some((key, value)) = arg.strip_prefix("-Dzookeeper.admin.").and_then(|a| a.split_once('=')) else {
                continue;
            };
            match key {
                // Boolean.parseBoolean: "true" in any case is true, anything else false.
                "snapshot.enabled" => backup.snapshot = value.eq_ignore_ascii_case("true"),
                "restore.enabled" => backup.restore = value.eq_ignore_ascii_case("true"),
                "rateLimiterIntervalInMS" => {
                    if let Ok(ms) = value.parse::<u32>() {
                        backup.rate_limit_ms = u64::from(ms);
                    }
                }
                _ => {}
            }
        }
    }
}

/// Keys zkr reads.
pub(super) const USED: &[&str] = &[
    "readonlymode.enabled",
    "zkr.keepClientsOnLeaderLoss",
    "zkr.acceptDataLoss",
    "zkr.zookeeperPasswords",
    "zkr.ensembleProtocol",
    "peerType",
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
    "clientPortListenBacklog",
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
    "admin.forceHttps",
    "admin.portUnification",
    "admin.needClientAuth",
    "admin.snapshot.enabled",
    "admin.restore.enabled",
    "admin.rateLimiterIntervalInMS",
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
    "quorum.auth.enableSasl",
    "quorum.auth.learnerRequireSasl",
    "quorum.auth.serverRequireSasl",
    "quorum.auth.learner.saslLoginContext",
    "quorum.auth.server.saslLoginContext",
    "quorum.auth.kerberos.servicePrincipal",
    "X509AuthenticationProvider.superUser",
    "DigestAuthenticationProvider.superDigest",
    "superUser",
    "enforceQuota",
    "enforce.auth.enabled",
    "enforce.auth.scheme",
    "enforce.auth.schemes",
    "sessionRequireClientSASLAuth",
    "sasl.serverconfig",
    "security.auth_to_local",
    "kerberos.removeHostFromPrincipal",
    "kerberos.removeRealmFromPrincipal",
    "metricsProvider.className",
    "metricsProvider.httpHost",
    "metricsProvider.httpPort",
    "metricsProvider.exportJvmInfo",
];
