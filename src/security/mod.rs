//! Client authentication beyond ZooKeeper's digest/ip schemes: TLS on `secureClientPort` with
//! the `x509` identity of client certificates, and SASL DIGEST-MD5 (opcode 102) with users from
//! a JAAS file, giving the `sasl` identity. Pure parts (subject formatting, JAAS parsing, the
//! DIGEST-MD5 state machine) live here; the server wires them into connections and the core.

pub mod digest_md5;
pub mod jaas;
pub mod tls;
pub mod x500;
