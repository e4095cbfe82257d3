//! Authentication beyond ZooKeeper's digest/ip schemes. Clients: TLS on `secureClientPort` with
//! the `x509` identity of client certificates, and SASL DIGEST-MD5 (opcode 102) with users from
//! a JAAS file, giving the `sasl` identity. Ensemble members: quorum TLS (`quorum_tls`) and
//! quorum SASL (`quorum_sasl`). Pure parts (subject formatting, JAAS parsing, the DIGEST-MD5
//! state machine, key store formats) live here, and so does the TLS acceptor with its reload;
//! the server and the peer links wire them in.
pub mod client_cert;
pub mod digest_md5;
pub mod gssapi;
pub mod hostname;
pub mod jaas;
pub mod jks;
pub mod keystore;
pub mod quorum_sasl;
pub mod quorum_tls;
#[cfg(test)]
mod testkit;
pub mod tls;
pub mod tls_params;
pub mod x500;
