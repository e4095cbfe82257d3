//! Whether a certificate names a host, as ZooKeeper's `ZKHostnameVerifier` decides it (the rules
//! of Apache HttpClient's `DefaultHostnameVerifier`): with subject alternative names, an IP
//! address must equal one of the certificate's IP entries and a host name must match one of its
//! DNS entries (a `*` only in the leftmost label, standing for part or all of one label); a
//! certificate without subject alternative names is matched by the most specific CN of its
//! subject instead. Names compare without regard to case.

use std::net::IpAddr;
use x509_parser::extensions::GeneralName;
use x509_parser::prelude::{FromDer, X509Certificate};

/// Whether the DER certificate `cert` names `host` (an IP address or a host name).
pub fn names(cert: &[u8], host: &str) -> bool {
    let Ok((_, c)) = X509Certificate::from_der(cert) else { return false };
    let alt: Vec<GeneralName<'_>> = match c.subject_alternative_name() {
        Ok(Some(ext)) => ext.value.general_names.clone(),
        Ok(None) => Vec::new(),
        Err(_) => return false,
    };
    let ip: Option<IpAddr> = host.trim_start_matches('[').trim_end_matches(']').parse().ok();
    if !alt.is_empty() {
        return match ip {
            Some(ip) => alt.iter().any(|n| matches!(n, GeneralName::IPAddress(b) if ip_of(b) == Some(ip))),
            None => alt.iter().any(|n| matches!(n, GeneralName::DNSName(d) if identity_matches(host, d))),
        };
    }
    // The most specific CN is the last in the certificate's order (the first of Java's RFC 2253
    // form of the subject, which ZKHostnameVerifier.extractCN reads).
    let cn = c.subject().iter_common_name().filter_map(|a| a.as_str().ok()).last();
    match (cn, ip) {
        (Some(cn), Some(ip)) => cn.parse::<IpAddr>().is_ok_and(|c| c == ip),
        (Some(cn), None) => identity_matches(host, cn),
        (None, _) => false,
    }
}

fn ip_of(b: &[u8]) -> Option<IpAddr> {
    match b.len() {
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(b).ok()?)),
        16 => Some(IpAddr::from(<[u8; 16]>::try_from(b).ok()?)),
        _ => None,
    }
}

/// `matchIdentityStrict`: `host` against a certificate's DNS name, `*` allowed in its leftmost
/// label only, standing for characters of that one label (never a dot).
fn identity_matches(host: &str, identity: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let identity = identity.trim_end_matches('.').to_ascii_lowercase();
    let Some((first, rest)) = identity.split_once('.') else {
        return host == identity;
    };
    let Some(star) = first.find('*') else {
        return host == identity;
    };
    let (prefix, suffix) = (&first[..star], &first[star + 1..]);
    let Some((host_first, host_rest)) = host.split_once('.') else { return false };
    host_rest == rest
        && host_first.len() >= prefix.len() + suffix.len()
        && host_first.starts_with(prefix)
        && host_first.ends_with(suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_identities_match_as_zookeeper_matches_them() {
        assert!(identity_matches("zoo1.example.com", "zoo1.example.com"));
        assert!(identity_matches("ZOO1.Example.com", "zoo1.example.COM"));
        assert!(identity_matches("zoo1.example.com", "*.example.com"));
        assert!(identity_matches("zoo1.example.com", "zoo*.example.com"));
        assert!(identity_matches("zoo1.example.com", "z*1.example.com"));
        // Strict: a star never spans a dot, and only the leftmost label may have one.
        assert!(!identity_matches("a.zoo1.example.com", "*.example.com"));
        assert!(!identity_matches("zoo1.example.com", "zoo1.*.com"));
        assert!(!identity_matches("example.com", "*.example.com"));
        assert!(!identity_matches("zoo2.example.com", "zoo1.example.com"));
        assert!(!identity_matches("zoo1.example.org", "*.example.com"));
    }

    fn cert(cn: &str, sans: &[&str]) -> Vec<u8> {
        use rcgen::{CertificateParams, DnType, KeyPair, SanType};
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(DnType::CommonName, cn);
        for s in sans {
            p.subject_alt_names.push(match s.parse() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*s).try_into().unwrap()),
            });
        }
        p.self_signed(&KeyPair::generate().unwrap()).unwrap().der().to_vec()
    }

    #[test]
    fn certificates_name_hosts_by_their_alternative_names_else_their_cn() {
        let c = cert("ignored.example.com", &["10.0.0.1", "::1", "*.zk.example.com"]);
        assert!(names(&c, "10.0.0.1") && names(&c, "::1") && names(&c, "[::1]"));
        assert!(names(&c, "zoo1.zk.example.com") && names(&c, "ZOO2.zk.example.com"));
        assert!(!names(&c, "10.0.0.2") && !names(&c, "zk.example.com") && !names(&c, "a.b.zk.example.com"));
        // With alternative names the CN is not looked at.
        assert!(!names(&c, "ignored.example.com"));
        // Without any, the CN is.
        let c = cert("zoo1.example.com", &[]);
        assert!(names(&c, "zoo1.example.com") && !names(&c, "zoo2.example.com") && !names(&c, "127.0.0.1"));
        let c = cert("127.0.0.1", &[]);
        assert!(names(&c, "127.0.0.1"));
        assert!(!names(b"not a certificate", "127.0.0.1"));
    }

    #[test]
    fn ip_entries_are_compared_as_addresses() {
        assert_eq!(ip_of(&[127, 0, 0, 1]), Some(IpAddr::from([127, 0, 0, 1])));
        assert_eq!(ip_of(&[0; 16]), Some("::".parse().unwrap()));
        assert_eq!(ip_of(&[1, 2, 3]), None);
    }
}
