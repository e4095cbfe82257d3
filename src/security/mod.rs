//! Client authentication beyond ZooKeeper's digest/ip schemes: TLS on `secureClientPort` with
//! the `x509` identity of client certificates, and SASL DIGEST-MD5 (opcode 102) with users from
//! a JAAS file, giving the `sasl` identity. Pure parts (subject formatting, JAAS parsing, the
//! DIGEST-MD5 state machine, key store formats) live here, and so does the TLS acceptor with
//! its reload; the server wires them into connections and the core.

pub mod client_cert;
pub mod digest_md5;
pub mod hostname;
pub mod jaas;
pub mod jks;
pub mod keystore;
pub mod quorum_tls;
#[cfg(test)]
mod testkit;
pub mod tls;
pub mod tls_params;
pub mod x500;
