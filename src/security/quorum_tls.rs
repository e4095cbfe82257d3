//! TLS between ensemble members (`sslQuorum=true`, ZooKeeper 3.5.5+): each member is a TLS
//! server on its peer port and a TLS client to the others, with its own key store, and checks
//! the other member's certificate both ways, as ZooKeeper's `QuorumX509Util` does:
//! - the chain must end in the `ssl.quorum.trustStore` (Java's PKIX; v1 certificates signed by a
//!   trusted CA directly are accepted, as Java accepts them);
//! - a member asks for the connecting member's certificate (`ssl.quorum.clientAuth`, need by
//!   default);
//! - with `ssl.quorum.hostnameVerification` (default true) the certificate must name the other
//!   member: its IP address, else its host name. A connecting member checks the name in its
//!   `server.N` line (the name Java's socket was opened with), or the reverse DNS name when
//!   the line has an address; an accepting member checks the reverse DNS name of the address
//!   the connection came from (`ZKTrustManager.performHostVerification`).
//!
//! Certificates are loaded at startup (a bad store stops it with the setting that named it) and,
//! with `sslQuorumReloadCertFiles=true`, again when a store file changes.

use super::client_cert::{is_v1, tls12_signature, tls13_signature, verify_v1};
use super::tls::{own_keys, provider_and_versions, server_config, watch_files, watched, TlsError};
use super::{hostname, keystore};
use crate::config::{QuorumTlsSettings, TlsStores};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::ResolvesClientCert;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, TrustAnchor, UnixTime};
use rustls::sign::CertifiedKey;
use rustls::{CertificateError, DigitallySignedStruct, Error, SignatureScheme};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

/// The member's TLS endpoint on the peer port, both ways, reloadable.
#[derive(Debug)]
pub struct QuorumTls {
    settings: QuorumTlsSettings,
    current: parking_lot::RwLock<Endpoints>,
}

#[derive(Debug, Clone)]
struct Endpoints {
    server: Arc<rustls::ServerConfig>,
    client: Arc<rustls::ClientConfig>,
}

impl QuorumTls {
    /// Loads the stores; any problem stops startup with the setting that named the file.
    pub fn load(settings: QuorumTlsSettings) -> Result<Arc<QuorumTls>, TlsError> {
        let current = parking_lot::RwLock::new(endpoints(&settings.stores)?);
        Ok(Arc::new(QuorumTls { settings, current }))
    }

    pub fn settings(&self) -> &QuorumTlsSettings {
        &self.settings
    }

    /// For a connection another member opened to this one.
    pub fn acceptor(&self) -> tokio_rustls::TlsAcceptor {
        tokio_rustls::TlsAcceptor::from(self.current.read().server.clone())
    }

    /// For a connection this member opens to another.
    pub fn connector(&self) -> tokio_rustls::TlsConnector {
        tokio_rustls::TlsConnector::from(self.current.read().client.clone())
    }

    /// Opens TLS on `tcp`, a connection this member made to `addr` (`host:port` of a `server.N`
    /// line), and checks the other member's certificate: its chain here, its name (with
    /// `ssl.quorum.hostnameVerification`) after the handshake. Err says what failed, naming `addr`.
    pub async fn connect(
        &self,
        tcp: TcpStream,
        addr: &str,
        wait: Duration,
    ) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
        let ip = tcp.peer_addr().map_err(|e| format!("TLS with {addr}: {e}"))?.ip();
        let host = host_of(addr);
        let named = host.parse::<IpAddr>().is_err().then_some(host);
        let server_name = named
            .and_then(|h| ServerName::try_from(h.to_owned()).ok())
            .unwrap_or_else(|| ServerName::IpAddress(ip.into()));
        let stream = tokio::time::timeout(wait, self.connector().connect(server_name, tcp))
            .await
            .map_err(|_| format!("no TLS handshake with {addr} in time"))?
            .map_err(|e| format!("TLS handshake with {addr}: {e}"))?;
        if self.settings.hostname_verification {
            let cert = stream.get_ref().1.peer_certificates().and_then(|c| c.first());
            check_name(cert, ip, named).await.map_err(|e| format!("member at {addr}: {e}"))?;
        }
        Ok(stream)
    }

    /// With `sslQuorumReloadCertFiles=true`: reloads the stores when one of their files changes,
    /// until `stop` (new connections use the new certificates; open ones keep theirs).
    pub async fn watch(self: Arc<Self>, stop: CancellationToken, every: Duration) {
        let files = watched(&self.settings.stores);
        watch_files(files, stop, every, move || {
            let e = endpoints(&self.settings.stores)?;
            *self.current.write() = e;
            tracing::info!("quorum TLS key/trust store changed: new peer connections use the reloaded certificates");
            Ok(())
        })
        .await
    }
}

fn endpoints(s: &TlsStores) -> Result<Endpoints, TlsError> {
    Ok(Endpoints { server: server_config(s)?, client: client_config(s)? })
}

/// The TLS client side: this member's keys for the other's `CertificateRequest`, and the other
/// member's certificate checked against the trust store.
fn client_config(s: &TlsStores) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let (provider, versions) = provider_and_versions(s)?;
    let anchors = match &s.trust_store {
        Some(ts) => keystore::trust_anchors(ts)?,
        None => Vec::new(),
    };
    let verifier = MemberCerts::new(anchors, &provider).map_err(|reason| TlsError::Key {
        at: s.trust_store.as_ref().map(|t| t.describe()).unwrap_or_default(),
        reason,
    })?;
    let keys = own_keys(s, &provider)?;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| TlsError::Rustls(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_client_cert_resolver(Arc::new(ClientKeys(keys)));
    Ok(Arc::new(config))
}

/// Checks another member's certificate chain when this member connects to it. Its name is
/// checked after the handshake ([`check_name`]), against the address the connection reached.
#[derive(Debug)]
struct MemberCerts {
    certs: Vec<CertificateDer<'static>>,
    anchors: Vec<TrustAnchor<'static>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl MemberCerts {
    fn new(certs: Vec<CertificateDer<'static>>, provider: &rustls::crypto::CryptoProvider) -> Result<Self, String> {
        let anchors = certs
            .iter()
            .enumerate()
            .map(|(i, c)| {
                webpki::anchor_from_trusted_cert(c)
                    .map(|a| a.to_owned())
                    .map_err(|e| format!("trust store certificate {}: {e}", i + 1))
            })
            .collect::<Result<Vec<_>, _>>()?;
        if anchors.is_empty() {
            return Err("the trust store holds no certificate".into());
        }
        Ok(MemberCerts { certs, anchors, algorithms: provider.signature_verification_algorithms })
    }
}

impl ServerCertVerifier for MemberCerts {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _name: &ServerName<'_>,
        _ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        if is_v1(end_entity) {
            return verify_v1(end_entity, &self.certs, now).map(|()| ServerCertVerified::assertion());
        }
        let cert = webpki::EndEntityCert::try_from(end_entity)
            .map_err(|_| Error::InvalidCertificate(CertificateError::BadEncoding))?;
        cert.verify_for_usage(
            self.algorithms.all,
            &self.anchors,
            intermediates,
            now,
            webpki::KeyUsage::server_auth(),
            None,
            None,
        )
        .map_err(pki_error)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        tls12_signature(&self.algorithms, message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        tls13_signature(&self.algorithms, message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

fn pki_error(e: webpki::Error) -> Error {
    use webpki::Error as E;
    let c = match e {
        E::UnknownIssuer => CertificateError::UnknownIssuer,
        E::CertExpired { .. } => CertificateError::Expired,
        E::CertNotValidYet { .. } => CertificateError::NotValidYet,
        E::InvalidSignatureForPublicKey => CertificateError::BadSignature,
        E::RequiredEkuNotFoundContext(_) => CertificateError::InvalidPurpose,
        other => CertificateError::Other(rustls::OtherError(Arc::new(other))),
    };
    Error::InvalidCertificate(c)
}

/// This member's keys when another member asks for a certificate: the first (in alias order)
/// that can sign with a scheme the other offers, as Java's `X509KeyManager` picks by key type.
#[derive(Debug)]
struct ClientKeys(Vec<Arc<CertifiedKey>>);

impl ResolvesClientCert for ClientKeys {
    fn resolve(&self, _hints: &[&[u8]], schemes: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        self.0.iter().find(|k| k.key.choose_scheme(schemes).is_some()).cloned()
    }

    fn has_certs(&self) -> bool {
        !self.0.is_empty()
    }
}

/// The other member's certificate names it (`ZKTrustManager.performHostVerification`): its IP
/// address first, then `name` (the `server.N` host name for a connection this member opened),
/// else the reverse DNS name of the address. Err says what the certificate did not name.
pub async fn check_name(cert: Option<&CertificateDer<'_>>, ip: IpAddr, name: Option<&str>) -> Result<(), String> {
    let Some(cert) = cert else {
        return Err("no certificate to check the host name against".into());
    };
    if hostname::names(cert, &ip.to_string()) {
        return Ok(());
    }
    let name = match name {
        Some(n) => Some(n.to_owned()),
        None => tokio::task::spawn_blocking(move || dns_lookup::lookup_addr(&ip).ok()).await.ok().flatten(),
    };
    match name {
        Some(n) if hostname::names(cert, &n) => Ok(()),
        Some(n) => Err(format!("its certificate names neither {ip} nor {n}")),
        None => Err(format!("its certificate does not name {ip}, which has no reverse DNS name")),
    }
}

/// The host of `host:port` (`[v6]:port` too).
fn host_of(addr: &str) -> &str {
    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
    host.trim_start_matches('[').trim_end_matches(']')
}

#[cfg(test)]
mod tests {
    #[test]
    fn hosts_of_peer_addresses() {
        assert_eq!(super::host_of("zoo1.example.com:2888"), "zoo1.example.com");
        assert_eq!(super::host_of("127.0.0.1:2888"), "127.0.0.1");
        assert_eq!(super::host_of("[::1]:2888"), "::1");
    }
}
