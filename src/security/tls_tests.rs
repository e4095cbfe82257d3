//! The acceptor over real handshakes (tokio duplex pipes), with stores from `testkit.rs`.

use super::*;
use crate::config::{Origin, StorePassword, StoreSettings, StoreType, TlsStores};
use crate::security::testkit::{self, PW};
use crate::security::tls_params::Protocol;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::path::Path;

fn store(path: &Path, kind: StoreType) -> StoreSettings {
    StoreSettings {
        path: path.to_owned(),
        kind,
        password: StorePassword::Inline(PW.into()),
        origin: Origin::Line { file: "zoo.cfg".into(), line: 3, key: "ssl.keyStore.location".into() },
    }
}

fn settings(key_store: StoreSettings, trust: Option<StoreSettings>, auth: ClientAuth) -> TlsSettings {
    TlsSettings {
        port: 0,
        bind: [127, 0, 0, 1].into(),
        stores: TlsStores {
            key_store,
            key_file: None,
            trust_store: trust,
            client_auth: auth,
            protocols: vec![Protocol::Tls12],
            cipher_suites: tls_params::cipher_suites(None).unwrap().0,
        },
    }
}

/// Accepts any server certificate: these tests look at which one the server sent.
#[derive(Debug)]
struct AnyServer;

impl ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            m,
            c,
            d,
            &rustls::crypto::ring::default_provider().signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        m: &[u8],
        c: &CertificateDer<'_>,
        d: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            m,
            c,
            d,
            &rustls::crypto::ring::default_provider().signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        rustls::crypto::ring::default_provider().signature_verification_algorithms.supported_schemes()
    }
}

/// A client with every protocol rustls has, optionally limited to one, and optionally a
/// client certificate (PEM files).
fn client(version: Option<Protocol>, cert: Option<(&Path, &Path)>) -> rustls::ClientConfig {
    let versions: Vec<_> = match version {
        Some(p) => vec![p.rustls()],
        None => vec![&rustls::version::TLS12, &rustls::version::TLS13],
    };
    let b = rustls::ClientConfig::builder_with_protocol_versions(&versions)
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServer));
    match cert {
        None => b.with_no_client_auth(),
        Some((chain, key)) => {
            let s = store(chain, StoreType::Pem);
            let e = keystore::key_entries(&s, Some(key)).unwrap().remove(0);
            let provider = rustls::crypto::ring::default_provider();
            let signer = provider.key_provider.load_private_key(e.key).unwrap();
            // Not with_client_auth_cert: its key check parses the certificate with webpki (v3 only).
            b.with_client_cert_resolver(Arc::new(OneClientCert(Arc::new(CertifiedKey::new(e.chain, signer)))))
        }
    }
}

#[derive(Debug)]
struct OneClientCert(Arc<CertifiedKey>);

impl rustls::client::ResolvesClientCert for OneClientCert {
    fn resolve(&self, _: &[&[u8]], _: &[SignatureScheme]) -> Option<Arc<CertifiedKey>> {
        Some(self.0.clone())
    }
    fn has_certs(&self) -> bool {
        true
    }
}

/// One handshake; Ok((server certificate subject, protocol)) or the server's error.
async fn handshake(tls: &TlsContext, client: rustls::ClientConfig) -> Result<(String, String), String> {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let acceptor = tls.acceptor();
    let server = tokio::spawn(async move { acceptor.accept(a).await.map(|_| ()).map_err(|e| e.to_string()) });
    let connector = tokio_rustls::TlsConnector::from(Arc::new(client));
    let name = ServerName::try_from("localhost").unwrap();
    let c = connector.connect(name, b).await;
    let server = server.await.unwrap();
    let c = c.map_err(|e| format!("client: {e}"))?;
    server?;
    let conn = c.get_ref().1;
    let subject = conn.peer_certificates().and_then(|p| x500::subject_of_cert(&p[0])).unwrap_or_default();
    let version = conn.protocol_version().map(|v| format!("{v:?}")).unwrap_or_default();
    Ok((subject, version))
}

#[tokio::test]
async fn serves_jks_pkcs12_and_pem_with_zookeeper_default_protocols() {
    let Some(d) = testkit::dir() else { return };
    for (file, kind) in [
        ("server.jks", StoreType::Jks),
        ("server.p12", StoreType::Pkcs12),
        ("server-store.pem", StoreType::Pem),
        ("ec.jks", StoreType::Jks),
    ] {
        let tls = TlsContext::load(settings(store(&d.join(file), kind), None, ClientAuth::None)).unwrap();
        let (subject, version) = handshake(&tls, client(None, None)).await.unwrap_or_else(|e| panic!("{file}: {e}"));
        assert!(subject == "CN=localhost" || subject == "CN=ec", "{file}: {subject}");
        // ZooKeeper 3.8 enables only ssl.protocol (TLSv1.2) unless ssl.enabledProtocols says more.
        assert_eq!(version, "TLSv1_2", "{file}");
        assert!(handshake(&tls, client(Some(Protocol::Tls13), None)).await.is_err(), "{file}");
    }
}

#[tokio::test]
async fn enabled_protocols_and_suites() {
    let Some(d) = testkit::dir() else { return };
    let mut s = settings(store(&d.join("server.jks"), StoreType::Jks), None, ClientAuth::None);
    s.stores.protocols = vec![Protocol::Tls12, Protocol::Tls13];
    s.stores.cipher_suites =
        tls_params::cipher_suites(Some("TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")).unwrap().0;
    let tls = TlsContext::load(s.clone()).unwrap();
    assert_eq!(handshake(&tls, client(None, None)).await.unwrap().1, "TLSv1_3");
    assert_eq!(handshake(&tls, client(Some(Protocol::Tls12), None)).await.unwrap().1, "TLSv1_2");
    // TLSv1.3 alone with ZooKeeper's default suites (all TLS 1.2): refused at startup.
    s.stores.protocols = vec![Protocol::Tls13];
    s.stores.cipher_suites = tls_params::cipher_suites(None).unwrap().0;
    let e = TlsContext::load(s).unwrap_err().to_string();
    assert!(e.contains("no suite for the enabled protocols (TLSv1.3)"), "{e}");
}

#[tokio::test]
async fn client_certificates_v3_and_v1() {
    let Some(d) = testkit::dir() else { return };
    let trust = store(&d.join("trust.jks"), StoreType::Jks);
    let mut s = settings(store(&d.join("server.p12"), StoreType::Pkcs12), Some(trust), ClientAuth::Need);
    s.stores.protocols = vec![Protocol::Tls12, Protocol::Tls13];
    s.stores.cipher_suites =
        tls_params::cipher_suites(Some("TLS_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256")).unwrap().0;
    let tls = TlsContext::load(s).unwrap();
    let v3 = (d.join("server.pem"), d.join("server.key"));
    let v1 = (d.join("v1.pem"), d.join("v1.key"));
    let other_ca = (d.join("server2.pem"), d.join("server2.key"));
    for version in [Protocol::Tls12, Protocol::Tls13] {
        assert!(handshake(&tls, client(Some(version), Some((&v3.0, &v3.1)))).await.is_ok(), "v3 {version:?}");
        let r = handshake(&tls, client(Some(version), Some((&v1.0, &v1.1)))).await;
        assert!(r.is_ok(), "v1 {version:?}: {r:?}");
        assert!(handshake(&tls, client(Some(version), Some((&other_ca.0, &other_ca.1)))).await.is_err());
        assert!(handshake(&tls, client(Some(version), None)).await.is_err(), "need without a certificate");
    }
}

#[tokio::test]
async fn a_changed_key_store_serves_new_connections() {
    let Some(d) = testkit::dir() else { return };
    let work = d.join(format!("reload-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let live = work.join("keystore.jks");
    std::fs::copy(d.join("server.jks"), &live).unwrap();
    let tls = TlsContext::load(settings(store(&live, StoreType::Jks), None, ClientAuth::None)).unwrap();
    let stop = CancellationToken::new();
    let watcher = tokio::spawn(tls.clone().watch(stop.clone(), Duration::from_millis(20)));
    assert_eq!(handshake(&tls, client(None, None)).await.unwrap().0, "CN=localhost");
    let seen = |want: &'static str| {
        let tls = tls.clone();
        async move {
            for _ in 0..200 {
                if handshake(&tls, client(None, None)).await.map(|r| r.0).as_deref() == Ok(want) {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            false
        }
    };
    // Replaced by rename (an atomic deploy), then a damaged copy (kept the old one), then cp.
    std::fs::copy(d.join("server2.jks"), work.join("new.jks")).unwrap();
    std::fs::rename(work.join("new.jks"), &live).unwrap();
    assert!(seen("CN=second").await, "rename not picked up");
    std::fs::write(&live, b"\xfe\xed\xfe\xed damaged").unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        handshake(&tls, client(None, None)).await.unwrap().0,
        "CN=second",
        "a bad file must not replace a good one"
    );
    std::fs::copy(d.join("server.jks"), &live).unwrap();
    assert!(seen("CN=localhost").await, "copy not picked up");
    stop.cancel();
    watcher.await.unwrap();
    let _ = std::fs::remove_dir_all(&work);
}

#[test]
fn a_key_that_is_not_the_certificates_is_refused() {
    let Some(d) = testkit::dir() else { return };
    let mut s = settings(store(&d.join("server2.pem"), StoreType::Pem), None, ClientAuth::None);
    s.stores.key_file = Some(d.join("server.key"));
    let e = TlsContext::load(s).unwrap_err().to_string();
    assert!(e.contains("the private key does not belong to the certificate"), "{e}");
}
