//! The TLS side of `secureClientPort`: a rustls acceptor built from ZooKeeper's key and trust
//! stores (`keystore.rs`), protocols and cipher suites (`tls_params.rs`) and client certificate
//! checks (`client_cert.rs`); reloaded when a store file changes; and the `x509` identity of a
//! client certificate. The connection code above it is the same as for the plaintext port.

use super::keystore::{self, KeyEntry, StoreError};
use super::{client_cert, tls_params, x500};
use crate::config::{ClientAuth, TlsSettings, TlsStores};
use crate::proto::Id;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Why the TLS port could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("{at}: {reason}")]
    Key { at: String, reason: String },
    #[error("TLS setup: {0}")]
    Rustls(String),
}

/// How often the store files are looked at for changes.
pub const RELOAD_POLL: Duration = Duration::from_millis(500);

/// The acceptor of the secure port and the settings it was built from. [`TlsContext::acceptor`]
/// gives the current one; [`TlsContext::watch`] replaces it when a store file changes.
#[derive(Debug)]
pub struct TlsContext {
    settings: TlsSettings,
    current: parking_lot::RwLock<Arc<rustls::ServerConfig>>,
}

impl TlsContext {
    /// Loads the stores; any problem stops startup with the setting that named the file.
    pub fn load(settings: TlsSettings) -> Result<Arc<TlsContext>, TlsError> {
        let config = server_config(&settings.stores)?;
        Ok(Arc::new(TlsContext { settings, current: parking_lot::RwLock::new(config) }))
    }

    /// The acceptor for a new connection; connections already open keep theirs.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.current.read().clone())
    }

    /// Reloads the key and trust stores when one of their files changes, until `stop`, as
    /// ZooKeeper's `FileChangeWatcher` makes `X509Util` do: a changed or newly created file
    /// rebuilds everything (passwords from files are read again too) and new connections use
    /// it; a file that fails to load leaves the previous certificates in place; a deleted file
    /// is ignored until it comes back. FileChangeWatcher is inotify on the parent directory;
    /// zkr looks at the files every `every` and reloads once a change has settled for one
    /// look, so a half-written file is not loaded, and a symlink swap (Kubernetes secrets) counts.
    /// ZooKeeper 3.8 itself reloads only quorum certificates (`sslQuorumReloadCertFiles`), not
    /// the client port's; zkr always reloads the client port (and the quorum's when asked).
    pub async fn watch(self: Arc<Self>, stop: CancellationToken, every: Duration) {
        let files = watched(&self.settings.stores);
        watch_files(files, stop, every, move || {
            let config = server_config(&self.settings.stores)?;
            *self.current.write() = config;
            tracing::info!(
                "TLS key/trust store changed: new connections on the secure port use the reloaded certificates"
            );
            Ok(())
        })
        .await
    }
}

/// The files whose change reloads a TLS endpoint: the key store (and `--tls-key`), the trust store.
pub(crate) fn watched(s: &TlsStores) -> Vec<PathBuf> {
    let mut files = vec![s.key_store.path.clone()];
    files.extend(s.key_file.clone());
    files.extend(s.trust_store.as_ref().map(|t| t.path.clone()));
    files
}

/// Calls `reload` (on a blocking thread) each time `files` have changed and settled, until
/// `stop`: a changed or newly created file counts once it is the same for one look `every`
/// later, so a half-written file is not loaded; a deleted file is waited for. A reload that
/// fails is logged and the previous certificates stay.
pub(crate) async fn watch_files<F>(files: Vec<PathBuf>, stop: CancellationToken, every: Duration, reload: F)
where
    F: Fn() -> Result<(), TlsError> + Send + Sync + 'static,
{
    let reload = Arc::new(reload);
    let mut loaded = stamps(&files);
    let mut last = loaded.clone();
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(every) => {}
        }
        let now = stamps(&files);
        let settled = now == last;
        last = now.clone();
        if !settled || now == loaded || now.iter().any(Option::is_none) {
            continue;
        }
        loaded = now;
        let reload = reload.clone();
        match tokio::task::spawn_blocking(move || reload()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(
                    "TLS key/trust store changed but cannot be loaded, keeping the previous certificates: {e}"
                )
            }
            Err(e) => tracing::warn!("TLS reload failed: {e}"),
        }
    }
}

/// What identifies a version of a file: size, inode and the modification and change times.
type Stamp = (u64, u64, i64, i64, i64, i64);

fn stamps(files: &[PathBuf]) -> Vec<Option<Stamp>> {
    use std::os::unix::fs::MetadataExt;
    files
        .iter()
        .map(|f| {
            std::fs::metadata(f).ok().map(|m| (m.len(), m.ino(), m.mtime(), m.mtime_nsec(), m.ctime(), m.ctime_nsec()))
        })
        .collect()
}

/// The crypto provider restricted to the configured suites, and the protocol versions those
/// suites can serve (an error when none: ZooKeeper would fail every handshake).
pub(crate) fn provider_and_versions(
    s: &TlsStores,
) -> Result<(Arc<CryptoProvider>, Vec<&'static rustls::SupportedProtocolVersion>), TlsError> {
    let suites = tls_params::resolve(&s.cipher_suites);
    let (protocols, dropped) = tls_params::usable_protocols(&s.protocols, &suites);
    if protocols.is_empty() {
        return Err(TlsError::Rustls(format!(
            "ssl.ciphersuites has no suite for the enabled protocols ({}); ZooKeeper would fail every handshake: \
             add TLS 1.3 suites (TLS_AES_128_GCM_SHA256, TLS_AES_256_GCM_SHA384) or enable TLSv1.2",
            s.protocols.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
        )));
    }
    if !dropped.is_empty() {
        tracing::info!(
            "{} enabled but no suite in ssl.ciphersuites is for it, so it cannot be negotiated (as in ZooKeeper)",
            dropped.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
        );
    }
    let versions: Vec<_> = protocols.iter().map(|p| p.rustls()).collect();
    let provider = Arc::new(CryptoProvider { cipher_suites: suites, ..rustls::crypto::ring::default_provider() });
    Ok((provider, versions))
}

/// This endpoint's keys, each checked against its certificate.
pub(crate) fn own_keys(s: &TlsStores, provider: &CryptoProvider) -> Result<Vec<Arc<CertifiedKey>>, TlsError> {
    let mut keys = Vec::new();
    for entry in keystore::key_entries(&s.key_store, s.key_file.as_deref())? {
        keys.push(certified(entry, provider).map_err(|reason| TlsError::Key { at: s.key_store.describe(), reason })?);
    }
    Ok(keys)
}

/// Builds the rustls server configuration from the settings, reading every store.
pub(crate) fn server_config(s: &TlsStores) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let (provider, versions) = provider_and_versions(s)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| TlsError::Rustls(e.to_string()))?;
    let builder = match (&s.trust_store, s.client_auth) {
        (_, ClientAuth::None) | (None, _) => builder.with_no_client_auth(),
        (Some(ts), auth) => {
            let anchors = keystore::trust_anchors(ts)?;
            let verifier = client_cert::ClientCerts::new(anchors, auth == ClientAuth::Need, provider.clone())
                .map_err(|reason| TlsError::Key { at: ts.describe(), reason })?;
            builder.with_client_cert_verifier(Arc::new(verifier))
        }
    };
    let keys = own_keys(s, &provider)?;
    let mut config = builder.with_cert_resolver(Arc::new(ServerKeys(keys)));
    // The server's order of ssl.ciphersuites decides, as a Java server's does (JSSE servers
    // honour their own suite order by default): ZooKeeper's list puts AES-128-GCM first.
    config.ignore_client_order = true;
    Ok(Arc::new(config))
}

/// A key entry made usable by rustls, after checking that the key is the certificate's.
/// (rustls' own check parses the certificate with webpki, which refuses version 1
/// certificates; Java serves them, and kazoo's test harness makes one.)
fn certified(entry: KeyEntry, provider: &CryptoProvider) -> Result<Arc<CertifiedKey>, String> {
    let alias = entry.alias;
    let Some(leaf) = entry.chain.first() else {
        return Err(format!("private key {alias:?} has no certificate"));
    };
    let key = match (provider.key_provider.load_private_key(entry.key.clone_key()), &entry.key) {
        (Ok(key), _) => key,
        (Err(e), PrivateKeyDer::Pkcs8(p8)) => keystore::with_ec_public_key(p8.secret_pkcs8_der(), leaf)
            .and_then(|k| provider.key_provider.load_private_key(k).ok())
            .ok_or_else(|| format!("private key {alias:?}: {e}"))?,
        (Err(e), _) => return Err(format!("private key {alias:?}: {e}")),
    };
    let cert_spki = x509_spki(leaf).ok_or_else(|| format!("{alias:?}: the certificate does not parse"))?;
    if let Some(key_spki) = key.public_key() {
        if key_spki.as_ref() != cert_spki.as_slice() {
            return Err(format!("{alias:?}: the private key does not belong to the certificate"));
        }
    }
    Ok(Arc::new(CertifiedKey::new(entry.chain, key)))
}

fn x509_spki(cert: &CertificateDer<'_>) -> Option<Vec<u8>> {
    use x509_parser::prelude::{FromDer, X509Certificate};
    X509Certificate::from_der(cert).ok().map(|(_, c)| c.public_key().raw.to_vec())
}

/// The server's keys. With several key entries, Java's `X509KeyManager` picks one per
/// handshake by the key type the client can use; here: the first (in alias order) that can
/// sign with a scheme the client offers.
#[derive(Debug)]
struct ServerKeys(Vec<Arc<CertifiedKey>>);

impl ResolvesServerCert for ServerKeys {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let offered = hello.signature_schemes();
        self.0.iter().find(|k| k.key.choose_scheme(offered).is_some()).cloned()
    }
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

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
