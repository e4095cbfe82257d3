//! ACL checks and ACL fix-up with ZooKeeper's schemes: world, auth, digest, ip (CIDR), super.
//!
//! Pure functions over the ACL list of a node and the identities of a session; the session
//! layer owns the identities, the tree owns the ACLs.

use crate::proto::{Acl, ErrorCode, Id};
use base64::Engine;
use sha1::{Digest, Sha1};
use std::net::IpAddr;

/// `DigestAuthenticationProvider.generateDigest`: `user:base64(sha1("user:password"))`.
pub fn digest(user_password: &str) -> Option<String> {
    let (user, _) = user_password.split_once(':')?;
    let hash = Sha1::digest(user_password.as_bytes());
    Some(format!("{user}:{}", base64::engine::general_purpose::STANDARD.encode(hash)))
}

/// True if one of `ids` is granted any of the bits in `perm` by `acl`
/// (ZooKeeper's `checkACL`: super passes everything, an empty ACL passes everything).
pub fn allows(acl: &[Acl], perm: i32, ids: &[Id]) -> bool {
    if ids.iter().any(|i| i.scheme == "super") || acl.is_empty() {
        return true;
    }
    acl.iter().filter(|a| a.perms & perm != 0).any(|a| {
        let want = &a.id;
        if want.scheme == "world" && want.id == "anyone" {
            return true;
        }
        ids.iter().filter(|have| have.scheme == want.scheme).any(|have| match want.scheme.as_str() {
            "ip" => ip_matches(&have.id, &want.id),
            "digest" | "x509" | "sasl" => have.id == want.id,
            _ => false,
        })
    })
}

/// `IPAuthenticationProvider.isValid`: an address with an optional `/bits` prefix length.
fn parse_cidr(expr: &str) -> Option<(IpAddr, u32)> {
    let (addr, bits) = match expr.split_once('/') {
        Some((a, b)) => (a, Some(b)),
        None => (expr, None),
    };
    let ip: IpAddr = addr.parse().ok()?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let bits = match bits {
        Some(b) => b.parse::<u32>().ok().filter(|b| *b <= max)?,
        None => max,
    };
    Some((ip, bits))
}

fn ip_matches(client: &str, expr: &str) -> bool {
    let (Ok(client), Some((net, bits))) = (client.parse::<IpAddr>(), parse_cidr(expr)) else {
        return false;
    };
    fn masked(a: &[u8], bits: u32) -> Vec<u8> {
        a.iter()
            .enumerate()
            .map(|(i, b)| {
                let start = i as u32 * 8;
                if bits >= start + 8 {
                    *b
                } else if bits <= start {
                    0
                } else {
                    b & (0xffu8 << (8 - (bits - start)))
                }
            })
            .collect()
    }
    match (client, net) {
        (IpAddr::V4(c), IpAddr::V4(n)) => masked(&c.octets(), bits) == masked(&n.octets(), bits),
        (IpAddr::V6(c), IpAddr::V6(n)) => masked(&c.octets(), bits) == masked(&n.octets(), bits),
        _ => false,
    }
}

/// `PrepRequestProcessor.fixupACL`: validates an ACL from a create/setACL and expands the `auth`
/// scheme into the session's authenticated identities. InvalidACL for anything ZooKeeper rejects.
pub fn fixup(acl: &[Acl], ids: &[Id]) -> Result<Vec<Acl>, ErrorCode> {
    if acl.is_empty() {
        return Err(ErrorCode::InvalidAcl);
    }
    let mut unique: Vec<&Acl> = Vec::with_capacity(acl.len());
    for a in acl {
        if !unique.contains(&a) {
            unique.push(a);
        }
    }
    let mut out = Vec::with_capacity(unique.len());
    for a in unique {
        let id = &a.id;
        if id.scheme == "world" && id.id == "anyone" {
            out.push(a.clone());
        } else if id.scheme == "auth" {
            // Only providers that say isAuthenticated() count: digest (and x509/sasl), not ip.
            let mut any = false;
            for have in ids.iter().filter(|i| matches!(i.scheme.as_str(), "digest" | "x509" | "sasl")) {
                any = true;
                out.push(Acl { perms: a.perms, id: have.clone() });
            }
            if !any {
                return Err(ErrorCode::InvalidAcl);
            }
        } else {
            let valid = match id.scheme.as_str() {
                // `DigestAuthenticationProvider.isValid`: Java's split(":") must give two parts.
                "digest" => {
                    let parts: Vec<&str> = id.id.split(':').collect();
                    let trimmed = parts.iter().rposition(|p| !p.is_empty()).map_or(0, |i| i + 1);
                    trimmed == 2
                }
                "ip" => parse_cidr(&id.id).is_some(),
                "x509" | "sasl" => true,
                _ => false,
            };
            if !valid {
                return Err(ErrorCode::InvalidAcl);
            }
            out.push(a.clone());
        }
    }
    Ok(out)
}

/// getACL without ADMIN permission hides digest hashes (`user:x`), as ZooKeeper 3.9 does.
pub fn redact(acl: &[Acl]) -> Vec<Acl> {
    acl.iter()
        .map(|a| {
            if a.id.scheme == "digest" {
                let user = a.id.id.split(':').next().unwrap_or("");
                Acl { perms: a.perms, id: Id::new("digest", &format!("{user}:x")) }
            } else {
                a.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::perms;

    #[test]
    fn digest_matches_zookeeper() {
        // DigestAuthenticationProvider.generateDigest("super:test") from ZooKeeper's docs.
        assert_eq!(digest("super:test").unwrap(), "super:D/InIHSb7yEEbrWz8b9l71RjZJU=");
        assert_eq!(digest("nocolon"), None);
    }

    #[test]
    fn checks_schemes() {
        let acl = vec![
            Acl { perms: perms::READ, id: Id::new("ip", "10.0.0.0/8") },
            Acl { perms: perms::ALL, id: Id::new("digest", "u:h") },
        ];
        assert!(allows(&acl, perms::READ, &[Id::new("ip", "10.1.2.3")]));
        assert!(!allows(&acl, perms::WRITE, &[Id::new("ip", "10.1.2.3")]));
        assert!(!allows(&acl, perms::READ, &[Id::new("ip", "11.1.2.3")]));
        assert!(allows(&acl, perms::WRITE, &[Id::new("digest", "u:h")]));
        assert!(allows(&acl, perms::WRITE, &[Id::new("super", "")]));
    }

    #[test]
    fn fixup_expands_auth_and_rejects_bad_ids() {
        let auth = vec![Acl { perms: perms::ALL, id: Id::new("auth", "") }];
        assert_eq!(fixup(&auth, &[Id::new("ip", "127.0.0.1")]), Err(ErrorCode::InvalidAcl));
        let ids = [Id::new("ip", "127.0.0.1"), Id::new("digest", "u:h")];
        assert_eq!(fixup(&auth, &ids).unwrap(), vec![Acl { perms: perms::ALL, id: Id::new("digest", "u:h") }]);
        let bad = vec![Acl { perms: perms::ALL, id: Id::new("world", "someone") }];
        assert_eq!(fixup(&bad, &[]), Err(ErrorCode::InvalidAcl));
        assert_eq!(fixup(&[], &[]), Err(ErrorCode::InvalidAcl));
        let bad_digest = vec![Acl { perms: perms::ALL, id: Id::new("digest", "nohash") }];
        assert_eq!(fixup(&bad_digest, &[]), Err(ErrorCode::InvalidAcl));
    }
}
