//! Key and trust stores made by keytool and openssl (see `testkit.rs`), read back.

use super::*;
use crate::config::Origin;
use crate::security::testkit::{self, PW};
use std::path::PathBuf;

fn store(dir: &Path, file: &str, kind: StoreType, password: &str) -> StoreSettings {
    StoreSettings {
        path: dir.join(file),
        kind,
        password: StorePassword::Inline(password.to_owned()),
        origin: Origin::Line { file: "zoo.cfg".into(), line: 7, key: "ssl.keyStore.location".into() },
    }
}

fn subject(cert: &CertificateDer<'_>) -> String {
    crate::security::x500::subject_of_cert(cert).unwrap_or_default()
}

/// The key loads into rustls' ring provider, as the acceptor loads it (EC keys from Java get
/// their public key from the certificate first).
fn usable(entry: &KeyEntry) -> bool {
    let provider = rustls::crypto::ring::default_provider();
    let key = match &entry.key {
        PrivateKeyDer::Pkcs8(p8) => {
            with_ec_public_key(p8.secret_pkcs8_der(), &entry.chain[0]).unwrap_or(entry.key.clone_key())
        }
        other => other.clone_key(),
    };
    provider.key_provider.load_private_key(key).is_ok()
}

#[test]
fn key_stores_of_every_type() {
    let Some(d) = testkit::dir() else { return };
    for (file, kind, cn) in [
        ("server.jks", StoreType::Jks, "CN=localhost"),
        ("ec.jks", StoreType::Jks, "CN=ec"),
        ("server.p12", StoreType::Pkcs12, "CN=localhost"),
        ("legacy.p12", StoreType::Pkcs12, "CN=localhost"),
        ("keytool.p12", StoreType::Pkcs12, "CN=keytool"),
        ("server-store.pem", StoreType::Pem, "CN=localhost"),
        ("server-enc-store.pem", StoreType::Pem, "CN=localhost"),
        // Java 9+ reads either format whichever of JKS and PKCS12 is declared.
        ("server.p12", StoreType::Jks, "CN=localhost"),
        ("server.jks", StoreType::Pkcs12, "CN=localhost"),
    ] {
        let entries = key_entries(&store(d, file, kind, PW), None).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(entries.len(), 1, "{file}");
        assert_eq!(subject(&entries[0].chain[0]), cn, "{file}");
        assert!(usable(&entries[0]), "{file}: rustls cannot use the key");
    }
    // A PEM certificate with its key in a file of its own (--tls-key).
    let e = key_entries(&store(d, "server.pem", StoreType::Pem, ""), Some(&d.join("server.key"))).unwrap();
    assert!(usable(&e[0]));
}

#[test]
fn trust_stores_of_every_type() {
    let Some(d) = testkit::dir() else { return };
    for (file, kind) in [("trust.jks", StoreType::Jks), ("trust.p12", StoreType::Pkcs12), ("ca.pem", StoreType::Pem)] {
        let anchors = trust_anchors(&store(d, file, kind, PW)).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(anchors.iter().map(subject).collect::<Vec<_>>(), vec!["CN=zkr test ca"], "{file}");
    }
    let e = trust_anchors(&store(d, "openssl-trust.p12", StoreType::Pkcs12, PW)).unwrap_err().to_string();
    assert!(e.contains("none marked trusted for Java"), "{e}");
    // A key store's own certificate is no trust anchor (PKIXParameters takes certificate entries).
    let e = trust_anchors(&store(d, "server.jks", StoreType::Jks, PW)).unwrap_err().to_string();
    assert!(e.contains("the trustAnchors parameter must be non-empty"), "{e}");
}

#[test]
fn bad_stores_say_where_and_why() {
    let Some(d) = testkit::dir() else { return };
    let err = |file: &str, kind, pw: &str| key_entries(&store(d, file, kind, pw), None).unwrap_err().to_string();
    let at = |file: &str| format!("zoo.cfg:7: ssl.keyStore.location={}: ", d.join(file).display());
    let e = err("server.jks", StoreType::Jks, "wrong");
    assert!(e.starts_with(&at("server.jks")) && e.contains("wrong password: the JKS integrity check failed"), "{e}");
    let e = err("server.p12", StoreType::Pkcs12, "wrong");
    assert!(e.contains("wrong password: the PKCS12 integrity check (MAC) failed"), "{e}");
    let e = err("missing.jks", StoreType::Jks, PW);
    assert!(e.starts_with(&at("missing.jks")) && e.contains("cannot read it"), "{e}");
    let e = err("trust.jks", StoreType::Jks, PW);
    assert!(e.contains("no private key entry in this JKS key store"), "{e}");
    let e = err("trust.p12", StoreType::Pkcs12, PW);
    assert!(e.contains("no private key entry in this PKCS12 key store"), "{e}");
    let e = err("keypass.jks", StoreType::Jks, PW);
    assert!(e.contains("Cannot recover key"), "{e}");
    let e = err("server-store.pem", StoreType::Jks, PW);
    assert!(e.contains("a PEM file, but its type is JKS"), "{e}");
    let e = err("server.jks", StoreType::Pem, PW);
    assert!(e.contains("a JKS key store, but its type is PEM"), "{e}");
    let e = err("ca.pem", StoreType::Pem, "");
    assert!(e.contains("no PRIVATE KEY block"), "{e}");
    let e = err("server-enc-store.pem", StoreType::Pem, "");
    assert!(e.contains("the private key is encrypted"), "{e}");
    let e = err("server-enc-store.pem", StoreType::Pem, "wrong");
    assert!(e.contains("cannot decrypt the private key"), "{e}");
    let e = err("leaf.ext", StoreType::Pkcs12, PW);
    assert!(e.contains("not a PKCS12 key store"), "{e}");
}

#[test]
fn passwords_from_a_file_as_secret_utils_reads_them() {
    let Some(d) = testkit::dir() else { return };
    let file = d.join("pw-file-test");
    std::fs::write(&file, format!("{PW}\n")).unwrap();
    let origin = Origin::Line { file: "zoo.cfg".into(), line: 9, key: "ssl.keyStore.passwordPath".into() };
    let mut s = store(d, "server.jks", StoreType::Jks, "");
    s.password = StorePassword::File { path: file.clone(), origin: origin.clone() };
    assert_eq!(key_entries(&s, None).unwrap().len(), 1);
    // Only one line separator is dropped, and nothing else is trimmed.
    std::fs::write(&file, format!("{PW} \n")).unwrap();
    assert!(key_entries(&s, None).unwrap_err().to_string().contains("wrong password"));
    s.password = StorePassword::File { path: PathBuf::from("/nonexistent/pw"), origin };
    let e = key_entries(&s, None).unwrap_err().to_string();
    assert!(e.starts_with("zoo.cfg:9: ssl.keyStore.passwordPath=/nonexistent/pw: cannot read it"), "{e}");
}
