//! The TLS client port's settings: ZooKeeper's `ssl.*` keys of zoo.cfg (key and trust stores of
//! any type ZooKeeper reads, protocols, cipher suites) with the `--tls-*` flags over them.

use super::{CfgKeys, ConfigError, ServeArgs};
use std::net::IpAddr;
use std::path::PathBuf;

/// Whether the TLS port asks for client certificates (ZooKeeper's `ssl.clientAuth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    Want,
    Need,
}

impl ClientAuth {
    fn parse(v: &str) -> Option<ClientAuth> {
        match v.to_ascii_lowercase().as_str() {
            "none" => Some(ClientAuth::None),
            "want" => Some(ClientAuth::Want),
            "need" => Some(ClientAuth::Need),
            _ => None,
        }
    }
}

/// Where a TLS setting came from, so that a bad key store names the zoo.cfg line or the flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Line { file: String, line: usize, key: String },
    Flag(&'static str),
}

/// ZooKeeper's key store types (`KeyStoreFileType`; BCFKS needs BouncyCastle FIPS and is refused).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreType {
    Jks,
    Pkcs12,
    Pem,
}

impl StoreType {
    pub fn name(self) -> &'static str {
        match self {
            StoreType::Jks => "JKS",
            StoreType::Pkcs12 => "PKCS12",
            StoreType::Pem => "PEM",
        }
    }
}

/// A key or trust store password: `ssl.*.password`, or `ssl.*.passwordPath`, a file read again
/// at every (re)load as `X509Util.getPasswordFromConfigPropertyOrFile` does. Debug hides it.
#[derive(Clone, PartialEq, Eq)]
pub enum StorePassword {
    Inline(String),
    File { path: PathBuf, origin: Origin },
}

impl std::fmt::Debug for StorePassword {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StorePassword::Inline(p) if p.is_empty() => f.write_str("Inline(empty)"),
            StorePassword::Inline(_) => f.write_str("Inline(hidden)"),
            StorePassword::File { path, .. } => write!(f, "File({})", path.display()),
        }
    }
}

/// One key or trust store: where it is, its type, its password and the line that named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSettings {
    pub path: PathBuf,
    pub kind: StoreType,
    pub password: StorePassword,
    pub origin: Origin,
}

impl StoreSettings {
    /// A PEM file named by a flag (`--tls-cert`, `--tls-ca`): no password.
    fn pem_flag(path: PathBuf, flag: &'static str) -> StoreSettings {
        StoreSettings {
            path,
            kind: StoreType::Pem,
            password: StorePassword::Inline(String::new()),
            origin: Origin::Flag(flag),
        }
    }

    /// `zoo.cfg:7: ssl.keyStore.location=/k/ks.jks` or `--tls-cert /k/server.pem`, to start an
    /// error message with.
    pub fn describe(&self) -> String {
        match &self.origin {
            Origin::Line { file, line, key } => format!("{file}:{line}: {key}={}", self.path.display()),
            Origin::Flag(flag) => format!("{flag} {}", self.path.display()),
        }
    }
}

/// The TLS client port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    pub port: u16,
    pub bind: IpAddr,
    pub stores: TlsStores,
}

/// What a TLS endpoint is made of, on the client port (`ssl.*`) and between ensemble members
/// (`ssl.quorum.*`): ZooKeeper's `X509Util` reads the same keys under either prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsStores {
    /// This server's private key and certificate chain (`keyStore.*`, or `--tls-cert`).
    pub key_store: StoreSettings,
    /// `--tls-key`: a PEM private key in a file of its own (ZooKeeper's PEM store has both).
    pub key_file: Option<PathBuf>,
    /// CA certificates the peer's certificates must chain to (`trustStore.*`, or `--tls-ca`).
    pub trust_store: Option<StoreSettings>,
    pub client_auth: ClientAuth,
    /// `enabledProtocols`, default `[protocol]` = TLSv1.2 (ZooKeeper 3.8).
    pub protocols: Vec<crate::security::tls_params::Protocol>,
    /// `ciphersuites` as Java/IANA names rustls implements, in the configured order.
    pub cipher_suites: Vec<String>,
}

/// TLS between ensemble members (`sslQuorum`, `ssl.quorum.*`, `portUnification`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumTlsSettings {
    /// Key and trust stores; a trust store is always there (zkr has no JDK `cacerts` to fall
    /// back on).
    pub stores: TlsStores,
    /// `sslQuorum=true`: connections to other members use TLS, and only TLS is accepted unless
    /// `port_unification`.
    pub encrypt: bool,
    /// `portUnification=true`: the peer port takes TLS and plaintext connections alike (ZooKeeper's
    /// step for turning quorum TLS on in a running ensemble, one member at a time).
    pub port_unification: bool,
    /// `ssl.quorum.hostnameVerification` (default true): each member checks that the other's
    /// certificate names its address, in both directions (`QuorumX509Util.shouldVerifyClientHostname`).
    pub hostname_verification: bool,
    /// `sslQuorumReloadCertFiles=true`: changed store files are loaded for new connections.
    pub reload: bool,
}

/// The AdminServer's HTTPS, as ZooKeeper's `JettyAdminServer` sets it up: with
/// `admin.forceHttps` (HTTPS only) or `admin.portUnification` (HTTP and HTTPS on one port) it
/// serves TLS with the `ssl.quorum.*` stores (it reads them through `QuorumX509Util`, not the
/// client port's `ssl.*`), and asks for a client certificate only with `admin.needClientAuth`
/// (Jetty's `setNeedClientAuth`: a client without one is refused in the handshake).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminTlsSettings {
    /// Key and trust stores (`ssl.quorum.*`); `stores.client_auth` is `Need` with
    /// `admin.needClientAuth=true`, else `None`. Also what the AdminServer's own HTTPS client
    /// (observer to observer, `zkr takeover`) presents and trusts.
    pub tls: QuorumTlsSettings,
    /// `admin.forceHttps=true`: every connection must be TLS (it wins over portUnification).
    pub https_only: bool,
}

/// TLS keys of a zoo.cfg, checked.
#[derive(Default)]
pub(super) struct TlsFromFile {
    port: Option<u16>,
    bind: Option<IpAddr>,
    stores: StoresFromFile,
}

/// The key and trust store keys under one prefix, checked.
#[derive(Default)]
pub(super) struct StoresFromFile {
    key_store: Option<StoreSettings>,
    trust_store: Option<StoreSettings>,
    client_auth: Option<ClientAuth>,
    protocols: Option<Vec<crate::security::tls_params::Protocol>>,
    cipher_suites: Option<Vec<String>>,
}

/// `ssl.*.type` (`KeyStoreFileType.fromPropertyValue`: the enum name, any case).
pub(super) fn store_type_named(ty: &str) -> Result<StoreType, String> {
    match ty.to_ascii_uppercase().as_str() {
        "JKS" => Ok(StoreType::Jks),
        "PKCS12" => Ok(StoreType::Pkcs12),
        "PEM" => Ok(StoreType::Pem),
        "BCFKS" => Err("BCFKS key stores (BouncyCastle FIPS) are not supported by zkr: convert to PKCS12 \
                        (keytool -importkeystore -deststoretype PKCS12)"
            .into()),
        _ => Err(format!("unknown key store type {ty:?} (ZooKeeper reads JKS, PKCS12, PEM or BCFKS)")),
    }
}

/// The type from the file name when `ssl.*.type` is not set (`KeyStoreFileType.fromFilename`:
/// the text after the last dot, `.jks`, `.pem`, `.p12` or `.bcfks`).
/// zkr is lenient where ZooKeeper is not: any case, `.pfx` is PKCS12, and `.crt`, `.cer` and
/// `.key` are PEM (zkr read those as PEM before it read key stores).
pub(super) fn store_type_of_file(path: &str) -> Result<StoreType, String> {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "jks" => Ok(StoreType::Jks),
        "p12" | "pfx" => Ok(StoreType::Pkcs12),
        "pem" | "crt" | "cer" | "key" => Ok(StoreType::Pem),
        "bcfks" => store_type_named("BCFKS"),
        _ => Err(format!(
            "cannot tell the key store type of {path:?} from its name (ZooKeeper: \"Unable to auto-detect store \
             file type from file name\"): name it .jks, .p12 or .pem, or set the type (JKS, PKCS12, PEM)"
        )),
    }
}

/// ZooKeeper's TLS keys of the client port (`X509Util`'s `zookeeper.ssl.*` properties, which
/// zoo.cfg sets).
pub(super) fn tls_from_file(name: &str, keys: &CfgKeys) -> Result<TlsFromFile, ConfigError> {
    let line_of = |key: &str| keys.get(key).map_or(0, |(_, l)| *l);
    let bad = |key: &str, reason: String| ConfigError::Line { file: name.to_owned(), line: line_of(key), reason };
    let value = |key: &str| keys.get(key).map(|(v, _)| v.as_str());
    let mut t = TlsFromFile::default();
    if let Some(v) = value("secureClientPort") {
        let port = v
            .parse::<u16>()
            .map_err(|_| bad("secureClientPort", format!("secureClientPort must be a port number, found {v:?}")))?;
        t.port = Some(port);
    }
    if let Some(v) = value("secureClientPortAddress") {
        let ip = v.parse().map_err(|_| {
            bad("secureClientPortAddress", format!("secureClientPortAddress must be an IP address, found {v:?}"))
        })?;
        t.bind = Some(ip);
    }
    t.stores = stores_from_file(name, keys, "ssl.")?;
    // ssl.hostnameVerification is read and has no effect here: on the client port ZooKeeper never
    // checks a client certificate's host name (ClientX509Util.shouldVerifyClientHostname() is
    // false); it checks the server's name only when it is the TLS client itself (the quorum).
    if keys.contains_key("ssl.hostnameVerification") {
        tracing::debug!(file = %name, line = line_of("ssl.hostnameVerification"), "ssl.hostnameVerification has no effect on the client port, as in ZooKeeper");
    }
    Ok(t)
}

/// The store, protocol and cipher keys under `prefix` (`ssl.` for the client port, `ssl.quorum.`
/// between members), as `X509Util` reads them under its config prefix.
fn stores_from_file(name: &str, keys: &CfgKeys, prefix: &str) -> Result<StoresFromFile, ConfigError> {
    use crate::security::tls_params;
    let line_of = |key: &str| keys.get(key).map_or(0, |(_, l)| *l);
    let bad = |key: &str, reason: String| ConfigError::Line { file: name.to_owned(), line: line_of(key), reason };
    let origin = |key: &str| Origin::Line { file: name.to_owned(), line: line_of(key), key: key.to_owned() };
    let value = |key: &str| keys.get(key).map(|(v, _)| v.as_str());
    let mut t = StoresFromFile::default();
    for store in ["keyStore", "trustStore"] {
        let loc = format!("{prefix}{store}.location");
        // An empty location is "not specified" to ZooKeeper: no store.
        let Some(path) = value(&loc).filter(|p| !p.is_empty()) else { continue };
        let ty_key = format!("{prefix}{store}.type");
        let kind = match value(&ty_key).filter(|v| !v.is_empty()) {
            Some(ty) => store_type_named(ty).map_err(|r| bad(&ty_key, r))?,
            None => store_type_of_file(path).map_err(|r| bad(&loc, r))?,
        };
        // passwordPath, when set, wins over password (X509Util.getPasswordFromConfigPropertyOrFile).
        let path_key = format!("{prefix}{store}.passwordPath");
        let password = match value(&path_key).filter(|p| !p.is_empty()) {
            Some(p) => StorePassword::File { path: PathBuf::from(p), origin: origin(&path_key) },
            None => StorePassword::Inline(value(&format!("{prefix}{store}.password")).unwrap_or_default().to_owned()),
        };
        let settings = StoreSettings { path: PathBuf::from(path), kind, password, origin: origin(&loc) };
        if store == "keyStore" {
            t.key_store = Some(settings);
        } else {
            t.trust_store = Some(settings);
        }
    }
    let auth_key = format!("{prefix}clientAuth");
    if let Some(v) = value(&auth_key) {
        let auth = ClientAuth::parse(v)
            .ok_or_else(|| bad(&auth_key, format!("{auth_key} must be none, want or need, found {v:?}")))?;
        t.client_auth = Some(auth);
    }
    let context_key = format!("{prefix}protocol");
    let context = value(&context_key).unwrap_or(tls_params::DEFAULT_PROTOCOL);
    tls_params::check_context_protocol(context).map_err(|r| bad(&context_key, r))?;
    let enabled_key = format!("{prefix}enabledProtocols");
    let enabled = value(&enabled_key);
    let protocol_key = if enabled.is_some() { enabled_key } else { context_key };
    let (protocols, skipped) = tls_params::enabled_protocols(enabled, context).map_err(|r| bad(&protocol_key, r))?;
    if !skipped.is_empty() {
        tracing::warn!(file = %name, line = line_of(&protocol_key), "{protocol_key}: {} not served by zkr (Java 17 disables them too), ignored", skipped.join(", "));
    }
    t.protocols = Some(protocols);
    let suites_key = format!("{prefix}ciphersuites");
    let (suites, skipped) = tls_params::cipher_suites(value(&suites_key)).map_err(|r| bad(&suites_key, r))?;
    if !skipped.is_empty() && keys.contains_key(&suites_key) {
        tracing::warn!(file = %name, line = line_of(&suites_key), "{suites_key}: {} not implemented by rustls, not offered", skipped.join(", "));
    }
    t.cipher_suites = Some(suites);
    for key in [format!("{prefix}crl"), format!("{prefix}ocsp")] {
        if java_true(value(&key)) {
            return Err(bad(&key, format!("{key}=true: zkr does not check certificate revocation (CRL/OCSP), which ZooKeeper would; remove the line or set it to false")));
        }
    }
    Ok(t)
}

/// Java's `Boolean.parseBoolean` after trim (`ZKConfig.getBoolean`): only "true", any case.
fn java_true(v: Option<&str>) -> bool {
    v.is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Protocols and suites from a zoo.cfg, or ZooKeeper's defaults.
fn protocols_and_suites(
    file: &mut StoresFromFile,
) -> Result<(Vec<crate::security::tls_params::Protocol>, Vec<String>), ConfigError> {
    use crate::security::tls_params;
    if let (Some(p), Some(c)) = (file.protocols.take(), file.cipher_suites.take()) {
        return Ok((p, c));
    }
    let protocols = tls_params::enabled_protocols(None, tls_params::DEFAULT_PROTOCOL).map_err(ConfigError::Invalid)?.0;
    let suites = tls_params::cipher_suites(None).map_err(ConfigError::Invalid)?.0;
    Ok((protocols, suites))
}

/// TLS between ensemble members, from `sslQuorum`, `portUnification`, `sslQuorumReloadCertFiles`
/// and the `ssl.quorum.*` keys; None when neither `sslQuorum` nor `portUnification` is true.
pub(super) fn quorum_tls_from_file(name: &str, keys: &CfgKeys) -> Result<Option<QuorumTlsSettings>, ConfigError> {
    let line_of = |key: &str| keys.get(key).map_or(0, |(_, l)| *l);
    let bad = |key: &str, reason: String| ConfigError::Line { file: name.to_owned(), line: line_of(key), reason };
    let value = |key: &str| keys.get(key).map(|(v, _)| v.as_str());
    let encrypt = java_true(value("sslQuorum"));
    let port_unification = java_true(value("portUnification"));
    if !encrypt && !port_unification {
        return Ok(None);
    }
    let on = if encrypt { "sslQuorum" } else { "portUnification" };
    let mut file = stores_from_file(name, keys, "ssl.quorum.")?;
    let key_store = file.key_store.take().ok_or_else(|| {
        bad(on, format!("{on}=true needs this member's key and certificate: set ssl.quorum.keyStore.location"))
    })?;
    let trust_store = file.trust_store.take().ok_or_else(|| {
        bad(on, format!("{on}=true needs ssl.quorum.trustStore.location: zkr checks the other members' certificates against it (it has no Java cacerts to fall back on)"))
    })?;
    // ZooKeeper's default is need (X509Util's ClientAuth.fromPropertyValue(null)).
    let client_auth = file.client_auth.unwrap_or(ClientAuth::Need);
    let (protocols, cipher_suites) = protocols_and_suites(&mut file)?;
    let hostname_verification = quorum_hostname_verification(keys);
    Ok(Some(QuorumTlsSettings {
        stores: TlsStores {
            key_store,
            key_file: None,
            trust_store: Some(trust_store),
            client_auth,
            protocols,
            cipher_suites,
        },
        encrypt,
        port_unification,
        hostname_verification,
        reload: java_true(value("sslQuorumReloadCertFiles")),
    }))
}

/// `ssl.quorum.hostnameVerification` (default true).
fn quorum_hostname_verification(keys: &CfgKeys) -> bool {
    match keys.get("ssl.quorum.hostnameVerification").map(|(v, _)| v.as_str()) {
        // ZKConfig.getBoolean(key, true): a value other than true/false is false to Java.
        Some(v) => java_true(Some(v)),
        None => true,
    }
}

/// The AdminServer's HTTPS from `admin.forceHttps`, `admin.portUnification`,
/// `admin.needClientAuth` and the `ssl.quorum.*` stores; None (plain HTTP) unless forceHttps or
/// portUnification is true. ZooKeeper reads the admin keys as `Boolean.getBoolean` (only
/// "true"); a store it cannot load leaves it without an AdminServer, zkr stops at startup with
/// the line that is missing.
pub(super) fn admin_tls_from_file(name: &str, keys: &CfgKeys) -> Result<Option<AdminTlsSettings>, ConfigError> {
    let line_of = |key: &str| keys.get(key).map_or(0, |(_, l)| *l);
    let bad = |key: &str, reason: String| ConfigError::Line { file: name.to_owned(), line: line_of(key), reason };
    let value = |key: &str| keys.get(key).map(|(v, _)| v.as_str());
    let https_only = java_true(value("admin.forceHttps"));
    let unified = java_true(value("admin.portUnification"));
    let need = java_true(value("admin.needClientAuth"));
    if !https_only && !unified {
        if need {
            tracing::info!(file = %name, line = line_of("admin.needClientAuth"), "admin.needClientAuth has no effect without admin.forceHttps or admin.portUnification (as in ZooKeeper)");
        }
        return Ok(None);
    }
    let on = if https_only { "admin.forceHttps" } else { "admin.portUnification" };
    let mut file = stores_from_file(name, keys, "ssl.quorum.")?;
    let key_store = file.key_store.take().ok_or_else(|| {
        bad(on, format!("{on}=true needs the AdminServer's key and certificate: set ssl.quorum.keyStore.location (ZooKeeper's AdminServer serves HTTPS with the quorum stores)"))
    })?;
    let trust_store = file.trust_store.take().ok_or_else(|| {
        bad(on, format!("{on}=true needs ssl.quorum.trustStore.location: client certificates (admin.needClientAuth) and the other observers' AdminServers are checked against it"))
    })?;
    let (protocols, cipher_suites) = protocols_and_suites(&mut file)?;
    let client_auth = if need { ClientAuth::Need } else { ClientAuth::None };
    Ok(Some(AdminTlsSettings {
        tls: QuorumTlsSettings {
            stores: TlsStores {
                key_store,
                key_file: None,
                trust_store: Some(trust_store),
                client_auth,
                protocols,
                cipher_suites,
            },
            encrypt: true,
            port_unification: !https_only,
            hostname_verification: quorum_hostname_verification(keys),
            reload: true,
        },
        https_only,
    }))
}

/// Flags over zoo.cfg for the TLS port; None when no secure port is configured. The flags name
/// PEM files (`--tls-cert`, `--tls-key`, `--tls-ca`); key stores of other types come from zoo.cfg.
pub(super) fn tls_settings(
    args: &ServeArgs,
    file: TlsFromFile,
    plain_bind: IpAddr,
) -> Result<Option<TlsSettings>, ConfigError> {
    let mut stores = file.stores;
    let client_auth = match &args.tls_client_auth {
        Some(v) => Some(ClientAuth::parse(v).ok_or_else(|| {
            ConfigError::Invalid(format!("--tls-client-auth must be none, want or need, found {v:?}"))
        })?),
        None => stores.client_auth,
    };
    let Some(port) = args.secure_port.or(file.port) else {
        if args.tls_cert.is_some() || args.tls_key.is_some() || args.tls_ca.is_some() {
            return Err(ConfigError::Invalid(
                "--tls-cert/--tls-key/--tls-ca need a secure port (--secure-port or secureClientPort)".into(),
            ));
        }
        return Ok(None);
    };
    let key_store = match &args.tls_cert {
        Some(p) => StoreSettings::pem_flag(p.clone(), "--tls-cert"),
        None => stores.key_store.take().ok_or_else(|| {
            ConfigError::Invalid(
                "the secure port needs a server certificate (--tls-cert or ssl.keyStore.location)".into(),
            )
        })?,
    };
    if args.tls_key.is_some() && key_store.kind != StoreType::Pem {
        return Err(ConfigError::Invalid(format!(
            "--tls-key goes with a PEM certificate; {} is a {} key store, which holds the key itself",
            key_store.describe(),
            key_store.kind.name()
        )));
    }
    let trust_store = match &args.tls_ca {
        Some(p) => Some(StoreSettings::pem_flag(p.clone(), "--tls-ca")),
        None => stores.trust_store.take(),
    };
    // ZooKeeper's default is need; without a CA there is nothing to check a client against.
    let client_auth = client_auth.unwrap_or(if trust_store.is_some() { ClientAuth::Need } else { ClientAuth::None });
    if client_auth != ClientAuth::None && trust_store.is_none() {
        return Err(ConfigError::Invalid(
            "client certificates (want/need) need CA certificates (--tls-ca or ssl.trustStore.location)".into(),
        ));
    }
    let (protocols, cipher_suites) = protocols_and_suites(&mut stores)?;
    Ok(Some(TlsSettings {
        port,
        bind: file.bind.unwrap_or(plain_bind),
        stores: TlsStores {
            key_store,
            key_file: args.tls_key.clone(),
            trust_store,
            client_auth,
            protocols,
            cipher_suites,
        },
    }))
}
