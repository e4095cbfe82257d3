//! Java's own key store format (JKS, `sun.security.provider.JavaKeyStore`), read only: the
//! default `ssl.keyStore.type` of ZooKeeper and of `keytool` before Java 9. Pure: bytes and a
//! password in, entries out. What a store is for (key store or trust store) is decided by the
//! caller (`keystore.rs`).
//!
//! The file, as `JavaKeyStore.engineStore` writes it (big-endian, Java `DataOutputStream`):
//!
//! ```text
//! u32 magic 0xFEEDFEED | u32 version (1 or 2) | u32 entry count
//! entry: u32 tag (1 private key, 2 trusted certificate) | UTF alias | u64 creation ms
//!   tag 1: u32 len | EncryptedPrivateKeyInfo DER (Sun key protection) | u32 chain length
//!          | chain length × certificate
//!   tag 2: certificate
//! certificate: (version 2 only: UTF type, "X.509") | u32 len | DER
//! trailer: SHA-1(password as UTF-16BE ‖ "Mighty Aphrodite" ‖ every byte before the trailer)
//! ```
//!
//! `UTF` is a u16 length and that many bytes of Java's modified UTF-8. Every length is checked
//! against the bytes that are left, so a damaged file is an error, never a panic or a large
//! allocation. The only ASN.1 (the key's `EncryptedPrivateKeyInfo` wrapper) is decoded by `der`.

use der::asn1::{AnyRef, ObjectIdentifier, OctetStringRef};
use der::{Decode, Sequence};
use sha1::{Digest, Sha1};

/// First four bytes of a JKS file.
pub const MAGIC: [u8; 4] = [0xFE, 0xED, 0xFE, 0xED];
/// First four bytes of a JCEKS file (`com.sun.crypto.provider.JceKeyStore`), which Java's JKS
/// type does not read either.
pub const JCEKS_MAGIC: [u8; 4] = [0xCE, 0xCE, 0xCE, 0xCE];
/// The algorithm of Sun's proprietary key protection (`sun.security.provider.KeyProtector`).
const KEY_PROTECTOR_OID: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.42.2.17.1.1");
const DIGEST_LEN: usize = 20;

/// Why a JKS file could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum JksError {
    #[error("not a JKS key store (no 0xFEEDFEED magic)")]
    NotJks,
    #[error("unsupported JKS version {0}")]
    Version(u32),
    #[error("damaged JKS key store: {0}")]
    Damaged(&'static str),
    /// Java: "Keystore was tampered with, or password was incorrect".
    #[error("wrong password: the JKS integrity check failed (Java: \"Keystore was tampered with, or password was incorrect\")")]
    WrongPassword,
    #[error("unknown JKS entry tag {0}")]
    Tag(u32),
    #[error("private key {alias:?}: {reason}")]
    Key { alias: String, reason: String },
}

/// One entry of a JKS file. Private keys stay encrypted until [`decrypt_key`] is asked for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    PrivateKey { alias: String, protected_key: Vec<u8>, chain: Vec<Vec<u8>> },
    TrustedCert { alias: String, cert: Vec<u8> },
}

/// Reads a JKS file, checking its integrity digest with `password` first (as `JavaKeyStore`
/// does whenever a password is given; ZooKeeper always gives one, "" when none is set).
pub fn parse(bytes: &[u8], password: &str) -> Result<Vec<Entry>, JksError> {
    if bytes.len() < 12 || bytes[..4] != MAGIC {
        return Err(JksError::NotJks);
    }
    if bytes.len() < 12 + DIGEST_LEN {
        return Err(JksError::Damaged("too short"));
    }
    let (body, digest) = bytes.split_at(bytes.len() - DIGEST_LEN);
    let mut h = Sha1::new();
    h.update(utf16be(password));
    h.update(b"Mighty Aphrodite");
    h.update(body);
    if h.finalize().as_slice() != digest {
        return Err(JksError::WrongPassword);
    }
    let mut r = Reader { rest: &body[4..] };
    let version = r.u32()?;
    if version != 1 && version != 2 {
        return Err(JksError::Version(version));
    }
    let count = r.u32()?;
    let mut entries = Vec::new();
    for _ in 0..count {
        let tag = r.u32()?;
        let alias = r.utf()?;
        let _created_ms = r.bytes(8)?;
        match tag {
            1 => {
                let len = r.u32()? as usize;
                let protected_key = r.bytes(len)?.to_vec();
                let n = r.u32()?;
                let mut chain = Vec::new();
                for _ in 0..n {
                    chain.push(r.cert(version)?);
                }
                entries.push(Entry::PrivateKey { alias, protected_key, chain });
            }
            2 => entries.push(Entry::TrustedCert { alias, cert: r.cert(version)? }),
            t => return Err(JksError::Tag(t)),
        }
    }
    if !r.rest.is_empty() {
        return Err(JksError::Damaged("bytes after the last entry"));
    }
    Ok(entries)
}

/// `EncryptedPrivateKeyInfo` (RFC 5208), the wrapper JKS stores each protected key in.
#[derive(Sequence)]
struct EncryptedKeyInfo<'a> {
    algorithm: AlgorithmIdentifier<'a>,
    encrypted: &'a OctetStringRef,
}

#[derive(Sequence)]
struct AlgorithmIdentifier<'a> {
    oid: ObjectIdentifier,
    parameters: Option<AnyRef<'a>>,
}

/// Recovers the PKCS#8 `PrivateKeyInfo` DER of a private key entry with `password`, as
/// `KeyProtector.recover` does: the protected bytes are salt (20) ‖ key XOR keystream ‖
/// SHA-1(password ‖ key); keystream block i = SHA-1(password ‖ block i-1), block 0 the salt;
/// the password is its UTF-16BE bytes.
pub fn decrypt_key(alias: &str, protected_key: &[u8], password: &str) -> Result<Vec<u8>, JksError> {
    let bad = |reason: &str| JksError::Key { alias: alias.to_owned(), reason: reason.to_owned() };
    let info =
        EncryptedKeyInfo::from_der(protected_key).map_err(|e| bad(&format!("not an EncryptedPrivateKeyInfo: {e}")))?;
    if info.algorithm.oid != KEY_PROTECTOR_OID {
        return Err(bad(&format!("protected with {}, not Sun's JKS key protection", info.algorithm.oid)));
    }
    let data = info.encrypted.as_bytes();
    if data.len() < 2 * DIGEST_LEN + 1 {
        return Err(bad("protected key too short"));
    }
    let (salt, rest) = data.split_at(DIGEST_LEN);
    let (encrypted, check) = rest.split_at(rest.len() - DIGEST_LEN);
    let pw = utf16be(password);
    let mut plain = Vec::with_capacity(encrypted.len());
    let mut block: Vec<u8> = salt.to_vec();
    for chunk in encrypted.chunks(DIGEST_LEN) {
        let mut h = Sha1::new();
        h.update(&pw);
        h.update(&block);
        block = h.finalize().to_vec();
        plain.extend(chunk.iter().zip(&block).map(|(c, k)| c ^ k));
    }
    let mut h = Sha1::new();
    h.update(&pw);
    h.update(&plain);
    if h.finalize().as_slice() != check {
        // Java: UnrecoverableKeyException "Cannot recover key".
        return Err(bad("cannot recover the key with the store password (Java: \"Cannot recover key\")"));
    }
    Ok(plain)
}

/// Java's `char[]` password as bytes, two per UTF-16 unit, high byte first.
fn utf16be(password: &str) -> Vec<u8> {
    password.encode_utf16().flat_map(u16::to_be_bytes).collect()
}

struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], JksError> {
        if n > self.rest.len() {
            return Err(JksError::Damaged("a length runs past the end of the file"));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32, JksError> {
        let b = self.bytes(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn utf(&mut self) -> Result<String, JksError> {
        let b = self.bytes(2)?;
        let len = u16::from_be_bytes([b[0], b[1]]) as usize;
        // Modified UTF-8 differs from UTF-8 only for NUL and supplementary characters.
        Ok(String::from_utf8_lossy(self.bytes(len)?).into_owned())
    }

    fn cert(&mut self, version: u32) -> Result<Vec<u8>, JksError> {
        if version == 2 {
            let kind = self.utf()?;
            if kind != "X.509" {
                return Err(JksError::Damaged("a certificate that is not X.509"));
            }
        }
        let len = self.u32()? as usize;
        Ok(self.bytes(len)?.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A JKS file written the way `JavaKeyStore.engineStore` writes one, for the damage tests;
    /// real keytool stores are read in `keystore.rs`'s tests.
    fn store(password: &str, entries: &[(u32, &str, &[u8])]) -> Vec<u8> {
        let mut b = MAGIC.to_vec();
        b.extend(2u32.to_be_bytes());
        b.extend((entries.len() as u32).to_be_bytes());
        for (tag, alias, cert) in entries {
            b.extend(tag.to_be_bytes());
            b.extend((alias.len() as u16).to_be_bytes());
            b.extend(alias.as_bytes());
            b.extend(0u64.to_be_bytes());
            b.extend(5u16.to_be_bytes());
            b.extend(b"X.509");
            b.extend((cert.len() as u32).to_be_bytes());
            b.extend(*cert);
        }
        let mut h = Sha1::new();
        h.update(utf16be(password));
        h.update(b"Mighty Aphrodite");
        h.update(&b);
        b.extend(h.finalize());
        b
    }

    #[test]
    fn reads_trusted_certs_and_checks_the_password() {
        let s = store("changeit", &[(2, "ca", b"DER")]);
        assert_eq!(parse(&s, "changeit"), Ok(vec![Entry::TrustedCert { alias: "ca".into(), cert: b"DER".to_vec() }]));
        assert_eq!(parse(&s, "wrong"), Err(JksError::WrongPassword));
        assert_eq!(parse(&s, ""), Err(JksError::WrongPassword));
    }

    #[test]
    fn damage_is_an_error_not_a_panic() {
        let s = store("pw", &[(2, "ca", b"DER")]);
        for cut in 0..s.len() {
            assert!(parse(&s[..cut], "pw").is_err(), "cut at {cut}");
        }
        // A length field claiming 4 GiB, with a valid digest over it.
        let mut big = store("pw", &[(2, "ca", &[0u8; 4])]);
        big.truncate(big.len() - DIGEST_LEN);
        let at = big.len() - 8;
        big[at..at + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        let mut h = Sha1::new();
        h.update(utf16be("pw"));
        h.update(b"Mighty Aphrodite");
        h.update(&big);
        big.extend(h.finalize());
        assert_eq!(parse(&big, "pw"), Err(JksError::Damaged("a length runs past the end of the file")));
        assert_eq!(parse(&store("pw", &[(7, "x", b"")]), "pw"), Err(JksError::Tag(7)));
        assert_eq!(parse(b"-----BEGIN CERTIFICATE-----", "pw"), Err(JksError::NotJks));
    }

    #[test]
    fn key_protection_round_trip_and_wrong_password() {
        // Protect a key the way KeyProtector.protect does, then recover it.
        let key = b"a PKCS#8 PrivateKeyInfo, 41 bytes long....".to_vec();
        let salt = [7u8; 20];
        let pw = utf16be("s3cret");
        let (mut out, mut block) = (salt.to_vec(), salt.to_vec());
        for chunk in key.chunks(20) {
            let mut h = Sha1::new();
            h.update(&pw);
            h.update(&block);
            block = h.finalize().to_vec();
            out.extend(chunk.iter().zip(&block).map(|(c, k)| c ^ k));
        }
        let mut h = Sha1::new();
        h.update(&pw);
        h.update(&key);
        out.extend(h.finalize());
        let oid = der::Encode::to_der(&KEY_PROTECTOR_OID).unwrap();
        let octets = der::Encode::to_der(&OctetStringRef::new(&out).unwrap()).unwrap();
        let mut alg = vec![0x30, (oid.len() + 2) as u8];
        alg.extend(&oid);
        alg.extend([0x05, 0x00]);
        let mut info = alg;
        info.extend(&octets);
        let der = der::Encode::to_der(&der::asn1::AnyRef::new(der::Tag::Sequence, &info).unwrap()).unwrap();
        assert_eq!(decrypt_key("k", &der, "s3cret"), Ok(key));
        assert!(matches!(decrypt_key("k", &der, "other"), Err(JksError::Key { .. })));
        assert!(matches!(decrypt_key("k", b"\x30\x00", "s3cret"), Err(JksError::Key { .. })));
    }
}
