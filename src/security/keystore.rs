//! ZooKeeper's key and trust stores read as `X509Util` reads them (`createKeyManager`,
//! `createTrustManager` and their `FileKeyStoreLoader`s): JKS, PKCS12 or PEM, with the store
//! password. Files in, DER out; what rustls does with them is `tls.rs`'s business.
//!
//! Every error names the store the way the configuration did (`zoo.cfg:7:
//! ssl.keyStore.location=/k/ks.jks: …`, or `--tls-cert /k/s.pem: …`), so that a bad store stops
//! startup with the line to fix.

use super::jks::{self, JksError};
use crate::config::{StorePassword, StoreSettings, StoreType};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs1KeyDer, PrivatePkcs8KeyDer, PrivateSec1KeyDer};
use std::path::Path;

/// A store bigger than this is refused before it is parsed (a real one is a few KiB).
const MAX_STORE_BYTES: u64 = 16 << 20;

/// A store that could not be used, and the setting that named it.
#[derive(Debug, thiserror::Error)]
#[error("{at}: {reason}")]
pub struct StoreError {
    pub at: String,
    pub reason: Reason,
}

/// Why a store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum Reason {
    #[error("cannot read it: {0}")]
    Read(std::io::Error),
    #[error("{0}")]
    Jks(#[from] JksError),
    /// Java: "keystore password was incorrect".
    #[error("wrong password: the PKCS12 integrity check (MAC) failed (Java: \"keystore password was incorrect\")")]
    Pkcs12Password,
    #[error("cannot read it as PKCS12: {0}")]
    Pkcs12(String),
    #[error("{0}")]
    Content(String),
}

/// A private key with its certificate chain (leaf first), from one key store entry.
#[derive(Debug)]
pub struct KeyEntry {
    pub alias: String,
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

/// What the first bytes say a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Content {
    Jks,
    Jceks,
    /// A DER SEQUENCE: PKCS12.
    Der,
    Pem,
    Unknown,
}

fn sniff(bytes: &[u8]) -> Content {
    if bytes.starts_with(&jks::MAGIC) {
        Content::Jks
    } else if bytes.starts_with(&jks::JCEKS_MAGIC) {
        Content::Jceks
    } else if bytes.first() == Some(&0x30) {
        Content::Der
    } else if memchr::memmem::find(bytes, b"-----BEGIN").is_some() {
        Content::Pem
    } else {
        Content::Unknown
    }
}

fn read_capped(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.take(MAX_STORE_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_STORE_BYTES {
        return Err(std::io::Error::other(format!("larger than {MAX_STORE_BYTES} bytes")));
    }
    Ok(bytes)
}

/// The store's password. A password file is read as `SecretUtils.readSecret` reads it: UTF-8,
/// one trailing line separator ("\n") dropped, nothing else trimmed.
pub fn password(store: &StoreSettings) -> Result<String, StoreError> {
    match &store.password {
        StorePassword::Inline(p) => Ok(p.clone()),
        StorePassword::File { path, origin } => {
            let at = match origin {
                crate::config::Origin::Line { file, line, key } => format!("{file}:{line}: {key}={}", path.display()),
                crate::config::Origin::Flag(f) => format!("{f} {}", path.display()),
            };
            let bytes = read_capped(path).map_err(|e| StoreError { at, reason: Reason::Read(e) })?;
            let text = String::from_utf8_lossy(&bytes);
            Ok(text.strip_suffix('\n').unwrap_or(&text).to_owned())
        }
    }
}

/// The format of a store of a declared type. JKS and PKCS12 are one thing to Java 9+:
/// `KeyStore.getInstance("JKS")` and `("PKCS12")` both read either format
/// (`keystore.type.compat`), so ZooKeeper reads a .p12 file declared JKS; zkr does the same.
fn format_of(store: &StoreSettings, bytes: &[u8]) -> Result<Content, Reason> {
    let content = sniff(bytes);
    let declared = store.kind.name();
    match (store.kind, content) {
        (StoreType::Jks | StoreType::Pkcs12, Content::Jks | Content::Der) => Ok(content),
        (StoreType::Pem, Content::Pem) => Ok(content),
        (_, Content::Jceks) => Err(Reason::Content(
            "a JCEKS key store, which ZooKeeper's JKS type does not read either: convert it \
             (keytool -importkeystore -deststoretype PKCS12)"
                .into(),
        )),
        (StoreType::Pem, Content::Jks | Content::Der) => {
            let actual = if content == Content::Jks { "JKS" } else { "PKCS12" };
            Err(Reason::Content(format!("a {actual} key store, but its type is PEM (set the type to {actual})")))
        }
        (_, Content::Pem) => Err(Reason::Content(format!(
            "a PEM file, but its type is {declared} (set the type to PEM, or name the file .pem)"
        ))),
        (_, _) => Err(Reason::Content(format!(
            "not a {declared} key store (Java: \"Invalid keystore format\"){}",
            if store.kind == StoreType::Pem { ": no -----BEGIN line" } else { "" }
        ))),
    }
}

fn load(store: &StoreSettings) -> Result<(Vec<u8>, Content, String), StoreError> {
    let err = |reason| StoreError { at: store.describe(), reason };
    let bytes = read_capped(&store.path).map_err(|e| err(Reason::Read(e)))?;
    let content = format_of(store, &bytes).map_err(err)?;
    let pw = if content == Content::Pem { String::new() } else { password(store)? };
    Ok((bytes, content, pw))
}

/// The private keys of a key store, with their chains. `key_file` is `--tls-key`, a PEM key in
/// a file of its own; otherwise the key comes from the store, as in ZooKeeper.
pub fn key_entries(store: &StoreSettings, key_file: Option<&Path>) -> Result<Vec<KeyEntry>, StoreError> {
    let err = |reason| StoreError { at: store.describe(), reason };
    let (bytes, content, pw) = load(store)?;
    let entries = match content {
        Content::Jks => jks_keys(&bytes, &pw).map_err(err)?,
        Content::Der => pkcs12_keys(&bytes, &pw).map_err(err)?,
        _ => {
            let pem_pw = password(store)?;
            let chain = pem_certs(&bytes).map_err(err)?;
            let key = match key_file {
                Some(path) => {
                    let at = format!("--tls-key {}", path.display());
                    let bytes =
                        read_capped(path).map_err(|e| StoreError { at: at.clone(), reason: Reason::Read(e) })?;
                    pem_key(&bytes, "").map_err(|reason| StoreError { at, reason })?
                }
                None => pem_key(&bytes, &pem_pw).map_err(err)?,
            };
            if chain.is_empty() {
                // PemReader: "Certificate file does not contain any certificates".
                return Err(err(Reason::Content("no CERTIFICATE block".into())));
            }
            vec![KeyEntry { alias: "key".into(), chain, key }]
        }
    };
    if entries.is_empty() {
        return Err(err(Reason::Content(format!(
            "no private key entry in this {} key store (a trust store?)",
            if content == Content::Jks { "JKS" } else { "PKCS12" }
        ))));
    }
    Ok(entries)
}

/// The CA certificates of a trust store: JKS trusted-certificate entries, PKCS12 certificates
/// Java marks trusted, or every certificate of a PEM file (`PemReader.loadTrustStore`).
pub fn trust_anchors(store: &StoreSettings) -> Result<Vec<CertificateDer<'static>>, StoreError> {
    let err = |reason| StoreError { at: store.describe(), reason };
    let (bytes, content, pw) = load(store)?;
    let certs = match content {
        Content::Jks => jks_anchors(&bytes, &pw).map_err(err)?,
        Content::Der => pkcs12_anchors(&bytes, &pw).map_err(err)?,
        _ => pem_certs(&bytes).map_err(err)?,
    };
    if certs.is_empty() {
        // PKIXParameters: "the trustAnchors parameter must be non-empty".
        return Err(err(Reason::Content(
            "no trusted certificate in it (Java: \"the trustAnchors parameter must be non-empty\")".into(),
        )));
    }
    Ok(certs)
}

/// JKS private keys, each recovered with the store password: ZooKeeper hands the store
/// password to `KeyManagerFactory.init`, so a key with a password of its own is not usable.
/// Such keys are skipped (with a warning) when another key is usable, and an error otherwise.
fn jks_keys(bytes: &[u8], pw: &str) -> Result<Vec<KeyEntry>, Reason> {
    let mut out = Vec::new();
    let mut unusable = None;
    for entry in jks::parse(bytes, pw)? {
        let jks::Entry::PrivateKey { alias, protected_key, chain } = entry else { continue };
        match jks::decrypt_key(&alias, &protected_key, pw) {
            Ok(key) => out.push(KeyEntry {
                alias,
                chain: chain.into_iter().map(CertificateDer::from).collect(),
                key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key)),
            }),
            Err(e) => unusable = Some(e),
        }
    }
    match (out.is_empty(), unusable) {
        (true, Some(e)) => Err(e.into()),
        (false, Some(e)) => {
            tracing::warn!("key store: {e}; using the other key entries");
            Ok(out)
        }
        (_, None) => Ok(out),
    }
}

/// JKS trusted-certificate entries; private key entries are no trust anchors to Java's
/// `PKIXParameters(KeyStore)`, which takes only `isCertificateEntry` aliases.
fn jks_anchors(bytes: &[u8], pw: &str) -> Result<Vec<CertificateDer<'static>>, Reason> {
    Ok(jks::parse(bytes, pw)?
        .into_iter()
        .filter_map(|e| match e {
            jks::Entry::TrustedCert { cert, .. } => Some(CertificateDer::from(cert)),
            jks::Entry::PrivateKey { .. } => None,
        })
        .collect())
}

fn pkcs12_error(e: p12_keystore::error::Error) -> Reason {
    use p12_keystore::error::Error as E;
    match e {
        E::MacError(_) => Reason::Pkcs12Password,
        E::UnpadError | E::InvalidPrivateKey => Reason::Pkcs12(format!("{e} (wrong password?)")),
        other => Reason::Pkcs12(other.to_string()),
    }
}

/// PKCS12 keys paired with their certificates by localKeyId, chains completed from the other
/// certificates in the file (what Java's `PKCS12KeyStore` does).
fn pkcs12_keys(bytes: &[u8], pw: &str) -> Result<Vec<KeyEntry>, Reason> {
    use p12_keystore::{KeyStore, KeyStoreEntry, Pkcs12ImportPolicy};
    let store = KeyStore::from_pkcs12(bytes, pw, Pkcs12ImportPolicy::Strict).map_err(pkcs12_error)?;
    Ok(store
        .entries()
        .filter_map(|(alias, entry)| match entry {
            KeyStoreEntry::PrivateKeyChain(c) if !c.certs().is_empty() => Some(KeyEntry {
                alias: alias.clone(),
                chain: c.certs().iter().map(|cert| CertificateDer::from(cert.as_der().to_vec())).collect(),
                key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(c.key().as_der().to_vec())),
            }),
            _ => None,
        })
        .collect())
}

/// PKCS12 certificates with Java's trusted-key-usage attribute (OID 2.16.840.1.113894.746875.1.1,
/// written by keytool): Java's `PKCS12KeyStore` makes only those certificate entries, so a
/// trust store made by `openssl pkcs12 -export -nokeys` has no trust anchors for ZooKeeper.
fn pkcs12_anchors(bytes: &[u8], pw: &str) -> Result<Vec<CertificateDer<'static>>, Reason> {
    use p12_keystore::Pkcs12Archive;
    let archive = Pkcs12Archive::from_pkcs12(bytes, pw).map_err(pkcs12_error)?;
    let trusted: Vec<_> = archive
        .certs
        .iter()
        .filter(|c| c.trusted && c.local_key_id.is_none())
        .map(|c| CertificateDer::from(c.cert.as_der().to_vec()))
        .collect();
    let untrusted = archive.certs.iter().filter(|c| !c.trusted && c.local_key_id.is_none()).count();
    if trusted.is_empty() && untrusted > 0 {
        return Err(Reason::Content(format!(
            "{untrusted} certificate(s) but none marked trusted for Java (attribute 2.16.840.1.113894.746875.1.1, \
             which keytool -importcert writes and openssl pkcs12 -export does not), so ZooKeeper would have no \
             trust anchors either: make the trust store with keytool -importcert, or use a PEM file"
        )));
    }
    Ok(trusted)
}

fn pem_sections(bytes: &[u8]) -> Result<Vec<pem::Pem>, Reason> {
    pem::parse_many(bytes).map_err(|e| Reason::Content(format!("bad PEM: {e}")))
}

fn pem_certs(bytes: &[u8]) -> Result<Vec<CertificateDer<'static>>, Reason> {
    Ok(pem_sections(bytes)?
        .into_iter()
        .filter(|p| p.tag() == "CERTIFICATE")
        .map(|p| CertificateDer::from(p.into_contents()))
        .collect())
}

/// The first `… PRIVATE KEY` block, as `PemReader.loadPrivateKey` takes it. ZooKeeper reads
/// PKCS#8 only (`ENCRYPTED PRIVATE KEY` when the store has a password); zkr also takes PKCS#1
/// (`RSA PRIVATE KEY`) and SEC1 (`EC PRIVATE KEY`) keys, which it read before key stores.
fn pem_key(bytes: &[u8], pw: &str) -> Result<PrivateKeyDer<'static>, Reason> {
    let Some(block) = pem_sections(bytes)?.into_iter().find(|p| p.tag().ends_with("PRIVATE KEY")) else {
        return Err(Reason::Content("no PRIVATE KEY block (ZooKeeper: \"did not find a private key\")".into()));
    };
    if block.headers().get("Proc-Type").is_some_and(|v| v.contains("ENCRYPTED")) {
        return Err(Reason::Content(
            "an OpenSSL-encrypted (Proc-Type) key, which ZooKeeper does not read either: convert it to PKCS#8 \
             (openssl pkcs8 -topk8)"
                .into(),
        ));
    }
    match block.tag() {
        "PRIVATE KEY" => Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(block.into_contents()))),
        "RSA PRIVATE KEY" => Ok(PrivateKeyDer::Pkcs1(PrivatePkcs1KeyDer::from(block.into_contents()))),
        "EC PRIVATE KEY" => Ok(PrivateKeyDer::Sec1(PrivateSec1KeyDer::from(block.into_contents()))),
        "ENCRYPTED PRIVATE KEY" if pw.is_empty() => {
            Err(Reason::Content("the private key is encrypted: set the key store password".into()))
        }
        "ENCRYPTED PRIVATE KEY" => {
            let info = pkcs8::EncryptedPrivateKeyInfoRef::try_from(block.contents())
                .map_err(|e| Reason::Content(format!("bad ENCRYPTED PRIVATE KEY: {e}")))?;
            let doc = info.decrypt(pw).map_err(|e| {
                Reason::Content(format!("cannot decrypt the private key with the key store password: {e}"))
            })?;
            Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(doc.as_bytes().to_vec())))
        }
        other => Err(Reason::Content(format!("unsupported private key block {other:?}"))),
    }
}

/// `ECPrivateKey` (RFC 5915), the inner key of an EC PKCS#8 key.
#[derive(der::Sequence)]
struct EcPrivateKey<'a> {
    version: u8,
    private_key: &'a der::asn1::OctetStringRef,
    #[asn1(context_specific = "0", optional = "true")]
    parameters: Option<der::asn1::ObjectIdentifier>,
    #[asn1(context_specific = "1", optional = "true")]
    public_key: Option<der::asn1::BitStringRef<'a>>,
}

/// An EC PKCS#8 key with the public key filled in from its certificate. Java writes EC keys
/// without the optional public key (keytool's EC keys in JKS and PKCS12 have none), and ring
/// needs it; ring also checks that it belongs to the private key, so a wrong one is refused.
/// None when the key is not an EC key lacking its public key.
pub fn with_ec_public_key(pkcs8: &[u8], leaf: &CertificateDer<'_>) -> Option<PrivateKeyDer<'static>> {
    use der::{Decode, Encode};
    use x509_parser::prelude::{FromDer, X509Certificate};
    const EC_PUBLIC_KEY: der::asn1::ObjectIdentifier = der::asn1::ObjectIdentifier::new_unwrap("1.2.840.10045.2.1");
    let info = pkcs8::PrivateKeyInfoRef::from_der(pkcs8).ok()?;
    if info.algorithm.oid != EC_PUBLIC_KEY {
        return None;
    }
    let inner = EcPrivateKey::from_der(info.private_key.as_bytes()).ok()?;
    if inner.public_key.is_some() {
        return None;
    }
    let (_, cert) = X509Certificate::from_der(leaf).ok()?;
    let point = cert.public_key().subject_public_key.data.to_vec();
    let completed =
        EcPrivateKey { public_key: Some(der::asn1::BitStringRef::from_bytes(&point).ok()?), ..inner }.to_der().ok()?;
    let info = pkcs8::PrivateKeyInfoRef { private_key: der::asn1::OctetStringRef::new(&completed).ok()?, ..info };
    Some(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(info.to_der().ok()?)))
}

#[cfg(test)]
#[path = "keystore_tests.rs"]
mod tests;
