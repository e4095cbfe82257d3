//! ZooKeeper's TLS protocol and cipher suite settings (`ssl.protocol`, `ssl.enabledProtocols`,
//! `ssl.ciphersuites`) mapped to rustls. Pure: names in, checked names out; the acceptor
//! (`tls.rs`) turns them into rustls objects. Nothing here reads files.

use rustls::crypto::ring::ALL_CIPHER_SUITES;
use rustls::SupportedCipherSuite;

/// A TLS version zkr can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Protocol {
    Tls12,
    Tls13,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Tls12 => "TLSv1.2",
            Protocol::Tls13 => "TLSv1.3",
        }
    }

    pub fn rustls(self) -> &'static rustls::SupportedProtocolVersion {
        match self {
            Protocol::Tls12 => &rustls::version::TLS12,
            Protocol::Tls13 => &rustls::version::TLS13,
        }
    }

    fn parse(name: &str) -> Option<Protocol> {
        match name {
            n if n.eq_ignore_ascii_case("TLSv1.2") => Some(Protocol::Tls12),
            n if n.eq_ignore_ascii_case("TLSv1.3") => Some(Protocol::Tls13),
            _ => None,
        }
    }
}

/// Protocol names Java knows that zkr does not serve; Java 17 disables all of them in
/// `jdk.tls.disabledAlgorithms`, so a ZooKeeper on Java 17 never negotiates them either.
const LEGACY_PROTOCOLS: &[&str] = &["TLSv1.1", "TLSv1", "SSLv3", "SSLv2Hello"];

/// `ssl.protocol`'s default (`X509Util.DEFAULT_PROTOCOL`).
pub const DEFAULT_PROTOCOL: &str = "TLSv1.2";

/// `ssl.protocol`: the `SSLContext` algorithm. Its only effect on the server is the default of
/// `ssl.enabledProtocols`, which is that one name (`SSLContextAndOptions.getEnabledProtocols`
/// falls back to `sslContext.getProtocol()`). Err(reason) for a name Java would not accept.
pub fn check_context_protocol(value: &str) -> Result<(), String> {
    const CONTEXTS: &[&str] = &["TLS", "TLSv1.3", "TLSv1.2", "TLSv1.1", "TLSv1", "SSL", "SSLv3"];
    if CONTEXTS.iter().any(|c| c.eq_ignore_ascii_case(value)) {
        Ok(())
    } else {
        Err(format!("unknown TLS protocol {value:?} (expected TLSv1.2 or TLSv1.3)"))
    }
}

/// The enabled protocols: `ssl.enabledProtocols` if set (comma-separated), else `[ssl.protocol]`.
/// Returns the protocols and the names that were skipped (legacy versions zkr does not serve).
/// Err(reason) for an unknown name or when nothing servable is left.
///
/// Names are trimmed and matched without case; ZooKeeper splits on "," without trimming, and a
/// name with a space is then unknown to Java (every handshake fails), so zkr is lenient there.
pub fn enabled_protocols(enabled: Option<&str>, context: &str) -> Result<(Vec<Protocol>, Vec<String>), String> {
    let (list, key) = match enabled {
        Some(v) => (v, "ssl.enabledProtocols"),
        None => (context, "ssl.protocol"),
    };
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match Protocol::parse(name) {
            Some(p) if !out.contains(&p) => out.push(p),
            Some(_) => {}
            None if LEGACY_PROTOCOLS.iter().any(|l| l.eq_ignore_ascii_case(name)) => skipped.push(name.to_owned()),
            None if enabled.is_none() => {
                return Err(format!(
                    "with ssl.protocol={name} and no ssl.enabledProtocols, ZooKeeper enables the protocol {name:?}, \
                     which no handshake can use: set ssl.enabledProtocols (TLSv1.2, TLSv1.3)"
                ))
            }
            None => return Err(format!("unknown protocol {name:?} in {key} (zkr serves TLSv1.2 and TLSv1.3)")),
        }
    }
    if out.is_empty() {
        return Err(format!("{key}={list:?} enables no protocol zkr serves (TLSv1.2, TLSv1.3)"));
    }
    out.sort();
    Ok((out, skipped))
}

/// ZooKeeper's default `ssl.ciphersuites` on Java 9+ (`X509Util.DEFAULT_CIPHERS_JAVA9`: the GCM
/// suites, then the CBC ones). rustls has no CBC suites, so zkr's default is the first four.
pub const ZOOKEEPER_DEFAULT_SUITES: &[&str] = &[
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
];

/// Suites Java 17 supports that rustls does not implement (CBC, DHE and static-RSA key
/// exchange): a list naming them is not wrong, zkr just cannot offer them.
const JAVA_ONLY_SUITES: &[&str] = &[
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_DHE_DSS_WITH_AES_256_GCM_SHA384",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_DHE_DSS_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256",
    "TLS_DHE_DSS_WITH_AES_256_CBC_SHA256",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_DHE_DSS_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_DHE_DSS_WITH_AES_256_CBC_SHA",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_DHE_DSS_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA256",
    "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_EMPTY_RENEGOTIATION_INFO_SCSV",
];

/// Java/IANA name of a rustls suite: rustls spells the TLS 1.3 ones `TLS13_…`, IANA `TLS_…`.
pub fn java_name(suite: SupportedCipherSuite) -> String {
    let name = suite.suite().as_str().unwrap_or("unknown");
    match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name.to_owned(),
    }
}

fn rustls_suite(name: &str) -> Option<SupportedCipherSuite> {
    ALL_CIPHER_SUITES.iter().copied().find(|s| java_name(*s).eq_ignore_ascii_case(name))
}

/// A Java name for a suite Java knows but has disabled or rustls lacks: the IANA names above,
/// Java's `SSL_` spellings of old suites, and the export, NULL, anonymous, RC4, DES and 3DES
/// families (all in Java 17's `jdk.tls.disabledAlgorithms`).
fn java_only(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    const LEGACY: &[&str] = &["_EXPORT", "_NULL_", "_ANON_", "_RC4_", "_DES_", "_3DES_", "_DES40_", "_KRB5_"];
    JAVA_ONLY_SUITES.contains(&upper.as_str())
        || (upper.starts_with("SSL_") || upper.starts_with("TLS_")) && LEGACY.iter().any(|f| upper.contains(f))
}

/// The cipher suites: `ssl.ciphersuites` if set (comma-separated Java/IANA names), else
/// ZooKeeper's default list. Returns the canonical names zkr will offer, in the given order,
/// and the names skipped as Java-only. Err(reason) for a name that is no TLS cipher suite, or
/// when no suite is left.
pub fn cipher_suites(value: Option<&str>) -> Result<(Vec<String>, Vec<String>), String> {
    let names: Vec<&str> = match value {
        Some(v) => v.split(',').map(str::trim).filter(|n| !n.is_empty()).collect(),
        None => ZOOKEEPER_DEFAULT_SUITES.to_vec(),
    };
    let mut out: Vec<String> = Vec::new();
    let mut skipped = Vec::new();
    for name in names {
        match rustls_suite(name) {
            Some(s) => {
                let n = java_name(s);
                if !out.contains(&n) {
                    out.push(n);
                }
            }
            None if java_only(name) => skipped.push(name.to_owned()),
            None => {
                return Err(format!(
                    "unknown cipher suite {name:?} in ssl.ciphersuites (zkr offers {})",
                    ALL_CIPHER_SUITES.iter().map(|s| java_name(*s)).collect::<Vec<_>>().join(", ")
                ))
            }
        }
    }
    if out.is_empty() {
        return Err(format!(
            "ssl.ciphersuites leaves no suite zkr can offer (skipped, not in rustls: {})",
            skipped.join(", ")
        ));
    }
    Ok((out, skipped))
}

/// The rustls suites for checked names (see [`cipher_suites`]).
pub fn resolve(names: &[String]) -> Vec<SupportedCipherSuite> {
    names.iter().filter_map(|n| rustls_suite(n)).collect()
}

/// The protocols that keep at least one suite: a version none of whose suites is enabled
/// cannot be negotiated (Java behaves the same: with ZooKeeper's default suites, all TLS 1.2
/// ones, a TLS 1.3-only server fails every handshake). Returns (kept, dropped).
pub fn usable_protocols(protocols: &[Protocol], suites: &[SupportedCipherSuite]) -> (Vec<Protocol>, Vec<Protocol>) {
    protocols.iter().partition(|p| suites.iter().any(|s| s.version() == p.rustls()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_default_to_ssl_protocol() {
        assert_eq!(enabled_protocols(None, "TLSv1.2"), Ok((vec![Protocol::Tls12], vec![])));
        assert_eq!(enabled_protocols(None, "tlsv1.3"), Ok((vec![Protocol::Tls13], vec![])));
        assert!(enabled_protocols(None, "TLS").unwrap_err().contains("set ssl.enabledProtocols"));
        assert_eq!(
            enabled_protocols(Some("TLSv1.3, TLSv1.2,TLSv1.1"), "TLS"),
            Ok((vec![Protocol::Tls12, Protocol::Tls13], vec!["TLSv1.1".to_owned()]))
        );
        assert!(enabled_protocols(Some("TLSv1.4"), "TLSv1.2").unwrap_err().contains("unknown protocol \"TLSv1.4\""));
        assert!(enabled_protocols(Some("TLSv1"), "TLSv1.2").unwrap_err().contains("enables no protocol"));
        assert!(check_context_protocol("TLS").is_ok() && check_context_protocol("QUIC").is_err());
    }

    #[test]
    fn suites_map_java_names_and_refuse_unknown_ones() {
        let (names, skipped) = cipher_suites(None).unwrap();
        assert_eq!(names, ZOOKEEPER_DEFAULT_SUITES[..4].to_vec());
        assert_eq!(skipped.len(), 8);
        let (names, skipped) =
            cipher_suites(Some("TLS_AES_128_GCM_SHA256, TLS_RSA_WITH_AES_128_CBC_SHA,SSL_RSA_WITH_3DES_EDE_CBC_SHA"))
                .unwrap();
        assert_eq!(names, vec!["TLS_AES_128_GCM_SHA256"]);
        assert_eq!(skipped, vec!["TLS_RSA_WITH_AES_128_CBC_SHA", "SSL_RSA_WITH_3DES_EDE_CBC_SHA"]);
        let e = cipher_suites(Some("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA265")).unwrap_err();
        assert!(e.contains("unknown cipher suite \"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA265\""), "{e}");
        assert!(cipher_suites(Some("TLS_RSA_WITH_AES_128_CBC_SHA")).unwrap_err().contains("leaves no suite"));
        assert_eq!(resolve(&names).len(), 1);
    }

    #[test]
    fn a_version_without_suites_is_dropped() {
        let suites = resolve(&cipher_suites(None).unwrap().0);
        let (kept, dropped) = usable_protocols(&[Protocol::Tls12, Protocol::Tls13], &suites);
        assert_eq!((kept, dropped), (vec![Protocol::Tls12], vec![Protocol::Tls13]));
    }
}
