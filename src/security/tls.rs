//! The TLS side of `secureClientPort`: a rustls acceptor built from PEM files (server certificate
//! chain and key, optional CA bundle for client certificates) and the `x509` identity of a
//! client certificate. The connection code above it is the same as for the plaintext port.

use super::x500;
use crate::config::{ClientAuth, TlsSettings};
use crate::proto::Id;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use std::path::Path;
use std::sync::Arc;

/// Why the TLS port could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {file}: {source}")]
    Read { file: String, source: std::io::Error },
    #[error("{file}: {reason}")]
    Pem { file: String, reason: String },
    #[error("TLS setup: {0}")]
    Rustls(String),
}

fn read_pem(path: &Path) -> Result<Vec<rustls_pemfile::Item>, TlsError> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| TlsError::Read { file: file.clone(), source })?;
    let mut items = Vec::new();
    for item in rustls_pemfile::read_all(&mut bytes.as_slice()) {
        items.push(item.map_err(|e| TlsError::Pem { file: file.clone(), reason: format!("bad PEM: {e}") })?);
    }
    Ok(items)
}

fn certs_in(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Vec<_> = read_pem(path)?
        .into_iter()
        .filter_map(|i| match i {
            rustls_pemfile::Item::X509Certificate(c) => Some(c),
            _ => None,
        })
        .collect();
    if certs.is_empty() {
        return Err(TlsError::Pem { file: path.display().to_string(), reason: "no CERTIFICATE block".into() });
    }
    Ok(certs)
}

fn key_in(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let key = read_pem(path)?.into_iter().find_map(|i| match i {
        rustls_pemfile::Item::Pkcs1Key(k) => Some(PrivateKeyDer::Pkcs1(k)),
        rustls_pemfile::Item::Pkcs8Key(k) => Some(PrivateKeyDer::Pkcs8(k)),
        rustls_pemfile::Item::Sec1Key(k) => Some(PrivateKeyDer::Sec1(k)),
        _ => None,
    });
    key.ok_or_else(|| TlsError::Pem {
        file: path.display().to_string(),
        reason: "no unencrypted PRIVATE KEY block (encrypted keys are not supported)".into(),
    })
}

/// Builds the acceptor. The certificate file may also hold the key (ZooKeeper's PEM key store
/// is one file with both), in which case `key` is the same path.
pub fn acceptor(s: &TlsSettings) -> Result<tokio_rustls::TlsAcceptor, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let chain = certs_in(&s.cert)?;
    let key = key_in(&s.key)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Rustls(e.to_string()))?;
    let builder = match (&s.ca, s.client_auth) {
        (_, ClientAuth::None) | (None, _) => builder.with_no_client_auth(),
        (Some(ca), auth) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in certs_in(ca)? {
                roots.add(c).map_err(|e| TlsError::Pem { file: ca.display().to_string(), reason: e.to_string() })?;
            }
            let mut v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            if auth == ClientAuth::Want {
                v = v.allow_unauthenticated();
            }
            builder.with_client_cert_verifier(v.build().map_err(|e| TlsError::Rustls(e.to_string()))?)
        }
    };
    let config = builder.with_single_cert(chain, key).map_err(|e| TlsError::Rustls(e.to_string()))?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// The identities a verified client certificate brings, as `X509AuthenticationProvider` adds
/// them at connect time: `x509:<subject>`, plus `super` when the subject is the configured
/// `zookeeper.X509AuthenticationProvider.superUser`.
pub fn identities(peer: Option<&[CertificateDer<'_>]>, super_user: Option<&str>) -> Vec<Id> {
    let Some(subject) = peer.and_then(|c| c.first()).and_then(|c| x500::subject_of_cert(c)) else {
        return Vec::new();
    };
    let mut ids = Vec::with_capacity(2);
    if super_user == Some(subject.as_str()) {
        ids.push(Id::new("super", &subject));
    }
    ids.push(Id::new("x509", &subject));
    ids
}
