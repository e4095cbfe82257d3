//! Certificates for tests of quorum TLS, made in the test with rcgen: a CA and PEM key stores
//! (key and certificate in one file, ZooKeeper's PEM key store type) that zkr and ZooKeeper 3.6+
//! both read.

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};
use std::path::{Path, PathBuf};

/// A certificate authority that signs member certificates into PEM key stores (key and
/// certificate in one file, as ZooKeeper's PEM key store type has them).
pub struct Ca {
    key: KeyPair,
    cert: rcgen::Certificate,
    dir: PathBuf,
}

impl Ca {
    pub fn new(dir: &Path, name: &str) -> Ca {
        std::fs::create_dir_all(dir).unwrap();
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name.push(DnType::CommonName, format!("zkr test {name}"));
        let cert = p.self_signed(&key).unwrap();
        std::fs::write(dir.join(format!("{name}.pem")), cert.pem()).unwrap();
        Ca { key, cert, dir: dir.to_owned() }
    }

    pub fn trust_store(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.pem"))
    }

    /// A key store for a member whose certificate names `sans` (IP addresses or DNS names).
    pub fn key_store(&self, file: &str, sans: &[&str]) -> PathBuf {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name.push(DnType::CommonName, file);
        for s in sans {
            p.subject_alt_names.push(match s.parse() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => SanType::DnsName((*s).try_into().unwrap()),
            });
        }
        let cert = p.signed_by(&key, &self.cert, &self.key).unwrap();
        let path = self.dir.join(format!("{file}.pem"));
        std::fs::write(&path, format!("{}{}", key.serialize_pem(), cert.pem())).unwrap();
        path
    }
}
