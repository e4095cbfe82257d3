//! Checking client certificates on the TLS port the way ZooKeeper's trust manager does
//! (`X509Util.createTrustManager`: Java's PKIX validator wrapped in `ZKTrustManager`).
//!
//! Version 3 certificates go to webpki, rustls' verifier. webpki refuses version 1 certificates
//! (no extensions), which Java accepts and which `openssl x509 -req` without `-extfile` and
//! kazoo's test harness make; those are checked here: signed directly by a trust store
//! certificate, and inside their validity period. No host name is checked for client
//! certificates: ZooKeeper does not on the client port (`ClientX509Util.shouldVerifyClientHostname`).

use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, SubjectPublicKeyInfoDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{CertificateError, DigitallySignedStruct, DistinguishedName, Error, SignatureScheme};
use std::sync::Arc;
use x509_parser::prelude::{FromDer, X509Certificate};

/// The verifier of the TLS port: webpki for v3 chains, [`verify_v1`] for v1 certificates.
#[derive(Debug)]
pub struct ClientCerts {
    webpki: Arc<dyn ClientCertVerifier>,
    anchors: Vec<CertificateDer<'static>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ClientCerts {
    /// `mandatory` is ZooKeeper's `ssl.clientAuth=need`; otherwise `want`.
    pub fn new(
        anchors: Vec<CertificateDer<'static>>,
        mandatory: bool,
        provider: Arc<CryptoProvider>,
    ) -> Result<ClientCerts, String> {
        let mut roots = rustls::RootCertStore::empty();
        for (i, c) in anchors.iter().enumerate() {
            roots.add(c.clone()).map_err(|e| format!("trust store certificate {}: {e}", i + 1))?;
        }
        let algorithms = provider.signature_verification_algorithms;
        let mut builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
        if !mandatory {
            builder = builder.allow_unauthenticated();
        }
        let webpki = builder.build().map_err(|e| e.to_string())?;
        Ok(ClientCerts { webpki, anchors, algorithms })
    }
}

/// A certificate's version, if it parses (0 = v1, 2 = v3).
fn version(cert: &[u8]) -> Option<u32> {
    X509Certificate::from_der(cert).ok().map(|(_, c)| c.version().0)
}

fn bad(e: CertificateError) -> Error {
    Error::InvalidCertificate(e)
}

/// A v1 client certificate is good when a trust store certificate whose subject is its issuer
/// signed it and `now` is inside its validity period (Java's PKIX path of length one; a trust
/// anchor is trusted as it is, its own dates are not checked, as in Java and webpki).
pub(crate) fn verify_v1(leaf_der: &[u8], anchors: &[CertificateDer<'_>], now: UnixTime) -> Result<(), Error> {
    let (_, leaf) = X509Certificate::from_der(leaf_der).map_err(|_| bad(CertificateError::BadEncoding))?;
    let secs = i64::try_from(now.as_secs()).map_err(|_| bad(CertificateError::Expired))?;
    let now = x509_parser::time::ASN1Time::from_timestamp(secs).map_err(|_| bad(CertificateError::Expired))?;
    let validity = leaf.validity();
    if now < validity.not_before {
        return Err(bad(CertificateError::NotValidYet));
    }
    if now > validity.not_after {
        return Err(bad(CertificateError::Expired));
    }
    let issued_by_anchor = anchors.iter().any(|a| {
        X509Certificate::from_der(a).is_ok_and(|(_, ca)| {
            ca.subject().as_raw() == leaf.issuer().as_raw() && leaf.verify_signature(Some(ca.public_key())).is_ok()
        })
    });
    if issued_by_anchor {
        Ok(())
    } else {
        Err(bad(CertificateError::UnknownIssuer))
    }
}

/// The SubjectPublicKeyInfo of a v1 certificate, for its handshake signature.
fn spki_of(cert: &[u8]) -> Result<SubjectPublicKeyInfoDer<'static>, Error> {
    let (_, c) = X509Certificate::from_der(cert).map_err(|_| bad(CertificateError::BadEncoding))?;
    Ok(SubjectPublicKeyInfoDer::from(c.public_key().raw.to_vec()))
}

impl ClientCertVerifier for ClientCerts {
    fn offer_client_auth(&self) -> bool {
        self.webpki.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.webpki.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.webpki.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, Error> {
        match version(end_entity) {
            Some(0) => verify_v1(end_entity, &self.anchors, now).map(|()| ClientCertVerified::assertion()),
            _ => self.webpki.verify_client_cert(end_entity, intermediates, now),
        }
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
        self.webpki.supported_verify_schemes()
    }
}

/// A TLS 1.2 handshake signature by `cert`'s key, v1 certificates included (rustls' own helper
/// parses the certificate with webpki, v3 only; the key is all it needs).
pub(crate) fn tls12_signature(
    algorithms: &WebPkiSupportedAlgorithms,
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
) -> Result<HandshakeSignatureValid, Error> {
    if version(cert) != Some(0) {
        return rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms);
    }
    let spki = spki_of(cert)?;
    let key = webpki::RawPublicKeyEntity::try_from(&spki).map_err(|_| bad(CertificateError::BadEncoding))?;
    let candidates = algorithms
        .mapping
        .iter()
        .find(|(scheme, _)| *scheme == dss.scheme)
        .map(|(_, algs)| *algs)
        .ok_or(Error::PeerMisbehaved(rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme))?;
    if candidates.iter().any(|alg| key.verify_signature(*alg, message, dss.signature()).is_ok()) {
        Ok(HandshakeSignatureValid::assertion())
    } else {
        Err(bad(CertificateError::BadSignature))
    }
}

/// A TLS 1.3 handshake signature by `cert`'s key, v1 certificates included.
pub(crate) fn tls13_signature(
    algorithms: &WebPkiSupportedAlgorithms,
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
) -> Result<HandshakeSignatureValid, Error> {
    if version(cert) != Some(0) {
        return rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms);
    }
    rustls::crypto::verify_tls13_signature_with_raw_key(message, &spki_of(cert)?, dss, algorithms)
}

/// Whether `cert` is a version 1 certificate (no extensions), which webpki refuses.
pub(crate) fn is_v1(cert: &[u8]) -> bool {
    version(cert) == Some(0)
}
