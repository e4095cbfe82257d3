//! Admin authentication against ZooKeeper 3.9.4's rules (`Commands.handleAuthentication`,
//! `handleAuthorization`, the providers' `handleAuthentication(HttpServletRequest, byte[])`).

use super::{authenticate, authorize, AuthError, ALL_ON_ROOT};
use crate::admin::listener::Peer;
use crate::config::Config;
use crate::proto::{perms, Acl, Id};
use axum::http::StatusCode;
use rustls::pki_types::CertificateDer;

/// `DigestAuthenticationProvider.generateDigest("super:test")`, from ZooKeeper's docs.
const SUPER_TEST: &str = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=";

fn peer(certs: Option<Vec<CertificateDer<'static>>>) -> Peer {
    Peer { addr: "10.1.2.3:40000".parse().unwrap(), certs: certs.map(Into::into) }
}

fn cfg() -> Config {
    Config {
        super_digest: Some(SUPER_TEST.into()),
        x509_super_user: Some("O=zkr,CN=operator".into()),
        ..Config::default()
    }
}

fn cert(cn: &str) -> CertificateDer<'static> {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(rcgen::DnType::CommonName, cn);
    p.distinguished_name.push(rcgen::DnType::OrganizationName, "zkr");
    p.self_signed(&key).unwrap().der().clone()
}

#[test]
fn the_header_names_the_scheme_and_its_data() {
    let c = cfg();
    assert_eq!(authenticate(None, &peer(None), &c), Err(AuthError::Missing));
    let ids = authenticate(Some("digest super:test"), &peer(None), &c).unwrap();
    assert_eq!(ids, [Id::new("super", ""), Id::new("digest", SUPER_TEST)]);
    let ids = authenticate(Some("digest bob:secret"), &peer(None), &c).unwrap();
    assert_eq!(ids.len(), 1);
    assert!(ids[0].scheme == "digest" && ids[0].id.starts_with("bob:"));
    // generateDigest of a text without a colon still gives an identity (which nothing names).
    assert_eq!(authenticate(Some("digest nocolon"), &peer(None), &c).unwrap()[0].id.split(':').count(), 2);
    assert_eq!(authenticate(Some("ip"), &peer(None), &c).unwrap(), [Id::new("ip", "10.1.2.3")]);
    assert_eq!(authenticate(Some("ip "), &peer(None), &c).unwrap(), [Id::new("ip", "10.1.2.3")], "trailing blank");
    for bad in ["digest", "digest a:b c", "sasl", "world anyone", "", "x509"] {
        let e = authenticate(Some(bad), &peer(None), &c);
        assert!(matches!(e, Err(AuthError::NotAuthenticated(_))), "{bad:?}: {e:?}");
        assert_eq!(e.unwrap_err().status(), StatusCode::UNAUTHORIZED);
    }
}

#[test]
fn x509_is_the_verified_client_certificate_and_its_super_user() {
    let c = cfg();
    let ids = authenticate(Some("x509"), &peer(Some(vec![cert("alice")])), &c).unwrap();
    assert_eq!(ids, [Id::new("x509", "O=zkr,CN=alice")]);
    let ids = authenticate(Some("x509"), &peer(Some(vec![cert("operator")])), &c).unwrap();
    assert_eq!(ids, [Id::new("super", "O=zkr,CN=operator"), Id::new("x509", "O=zkr,CN=operator")]);
}

#[test]
fn every_permission_bit_is_checked_and_world_anyone_grants_none() {
    let (need, super_ids) = (ALL_ON_ROOT, [Id::new("super", "")]);
    let open = [Acl { perms: perms::ALL, id: Id::new("world", "anyone") }];
    let bob = Id::new("digest", "bob:hash");
    let just_bob = std::slice::from_ref(&bob);
    assert_eq!(authorize(&open, need.perm, just_bob), Err(AuthError::NotAuthorized));
    assert_eq!(authorize(&open, need.perm, &[Id::new("ip", "10.1.2.3")]), Err(AuthError::NotAuthorized));
    assert_eq!(authorize(&open, need.perm, &super_ids), Ok(()));
    assert_eq!(authorize(&[], need.perm, just_bob), Err(AuthError::NotAuthorized));
    // ZOOKEEPER-4964 (CVE-2025-58457): READ on / is not ALL.
    let read = [Acl { perms: perms::READ, id: bob.clone() }];
    assert_eq!(authorize(&read, need.perm, just_bob), Err(AuthError::NotAuthorized));
    let split = [
        Acl { perms: perms::READ | perms::WRITE, id: bob.clone() },
        Acl { perms: perms::CREATE | perms::DELETE | perms::ADMIN, id: Id::new("ip", "10.0.0.0/8") },
    ];
    assert_eq!(authorize(&split, need.perm, just_bob), Err(AuthError::NotAuthorized));
    assert_eq!(authorize(&split, need.perm, &[bob.clone(), Id::new("ip", "10.1.2.3")]), Ok(()));
    let admin = [Acl { perms: perms::ALL, id: bob.clone() }, open[0].clone()];
    assert_eq!(authorize(&admin, need.perm, &[bob]), Ok(()));
    assert_eq!(AuthError::NotAuthorized.status(), StatusCode::FORBIDDEN);
    assert_eq!(AuthError::NotAuthorized.to_string(), "Not authorized");
    assert_eq!(AuthError::Missing.to_string(), "Auth info is missing for the command");
}
