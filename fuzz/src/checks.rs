//! The properties every fuzz target checks, as plain functions over bytes. Shared by the
//! cargo-fuzz targets in `fuzz/fuzz_targets/` (long runs under libFuzzer) and by the stable
//! harness `tests/fuzz_smoke.rs` (a short deterministic run in CI). A property failure panics.
//!
//! For every decoder: no panic on any input, and whatever decodes re-encodes to bytes that decode
//! to the same value (so zkr never answers with a record it could not read back).
#![allow(dead_code)]

use bytes::BytesMut;
use tokio_util::codec::Decoder;
use zkr::codec::{FrameCodec, FrameError};
use zkr::proto::{ConnectRequest, ConnectResponse, OpCode, ReplyHeader, Request, Response, WatcherEvent};

/// Every op code a reply can be decoded for.
pub const OPS: &[OpCode] = &[
    OpCode::Create,
    OpCode::Delete,
    OpCode::Exists,
    OpCode::GetData,
    OpCode::SetData,
    OpCode::GetAcl,
    OpCode::SetAcl,
    OpCode::GetChildren,
    OpCode::Sync,
    OpCode::Ping,
    OpCode::GetChildren2,
    OpCode::Check,
    OpCode::Multi,
    OpCode::Create2,
    OpCode::Reconfig,
    OpCode::CheckWatches,
    OpCode::RemoveWatches,
    OpCode::CreateContainer,
    OpCode::CreateTtl,
    OpCode::MultiRead,
    OpCode::Auth,
    OpCode::SetWatches,
    OpCode::Sasl,
    OpCode::GetEphemerals,
    OpCode::GetAllChildrenNumber,
    OpCode::SetWatches2,
    OpCode::AddWatch,
    OpCode::WhoAmI,
    OpCode::CloseSession,
];

/// The frame decoder over a byte stream cut into chunks at the positions `data[0]` picks: frames
/// come out whole, never longer than the limit, and an error ends the stream.
pub fn frames(data: &[u8]) {
    let (max, step, stream) = match data {
        [a, b, rest @ ..] => (((*a as usize) << 4) + 1, (*b as usize % 64) + 1, rest),
        _ => return,
    };
    let mut codec = FrameCodec::new(max);
    let mut buf = BytesMut::new();
    let mut consumed = 0usize;
    for chunk in stream.chunks(step) {
        buf.extend_from_slice(chunk);
        loop {
            match codec.decode(&mut buf) {
                Ok(Some(frame)) => {
                    assert!(frame.len() <= max, "frame of {} bytes over the limit {max}", frame.len());
                    consumed += 4 + frame.len();
                }
                Ok(None) => break,
                Err(FrameError::TooLarge { len, .. }) => {
                    assert!(len > max);
                    return;
                }
                Err(FrameError::Negative(n)) => {
                    assert!(n < 0);
                    return;
                }
                Err(e) => panic!("unexpected frame error {e}"),
            }
        }
    }
    assert_eq!(consumed + buf.len(), stream.len(), "bytes lost or invented by the decoder");
}

/// A request frame (what a client sends after its handshake).
pub fn request(data: &[u8]) {
    if let Ok(req) = Request::parse(data) {
        let mut b = Vec::new();
        req.write(&mut b);
        let again = Request::parse(&b).unwrap_or_else(|e| panic!("re-encoded {req:?} does not parse: {e:?}"));
        assert_eq!(again, req, "request changed across write/parse");
    }
}

/// The handshake record, with and without the trailing readOnly byte.
pub fn connect_request(data: &[u8]) {
    if let Ok(req) = ConnectRequest::parse(data) {
        let mut b = Vec::new();
        req.write(&mut b);
        let again = ConnectRequest::parse(&b).unwrap_or_else(|e| panic!("re-encoded {req:?} does not parse: {e:?}"));
        assert_eq!(again, req);
    }
}

/// What a client decodes: the ConnectResponse, a reply header and a body for every op code,
/// and a notification.
pub fn replies(data: &[u8]) {
    if let Ok(resp) = ConnectResponse::parse(data) {
        let mut b = Vec::new();
        resp.write(&mut b);
        assert_eq!(ConnectResponse::parse(&b).ok(), Some(resp));
    }
    if let Ok((rest, header)) = ReplyHeader::parse(data) {
        let mut b = Vec::new();
        header.write(&mut b);
        assert_eq!(ReplyHeader::parse(&b).map(|(_, h)| h).ok(), Some(header));
        if let Ok((_, ev)) = WatcherEvent::parse(rest) {
            let mut b = Vec::new();
            ev.write(&mut b);
            assert_eq!(WatcherEvent::parse(&b).map(|(_, e)| e).ok(), Some(ev));
        }
        for op in OPS {
            if let Ok(body) = Response::parse(*op, header.err, rest) {
                let mut b = Vec::new();
                body.write(&mut b);
                let again = Response::parse(*op, header.err, &b)
                    .unwrap_or_else(|e| panic!("re-encoded {op:?} reply {body:?} does not parse: {e:?}"));
                assert_eq!(again, body, "{op:?} reply changed across write/parse");
            }
        }
    }
}

/// A log record payload (bad input from disk: a corrupt or hostile data directory).
pub fn txn_record(data: &[u8]) {
    if let Ok(txn) = zkr::storage::record::decode(data) {
        let mut b = Vec::new();
        zkr::storage::record::encode(&txn, &mut b);
        let again =
            zkr::storage::record::decode(&b).unwrap_or_else(|e| panic!("re-encoded {txn:?} does not decode: {e:?}"));
        assert_eq!(again, txn);
    }
}

/// Every decoder on the same input, for the CI harness.
pub fn all(data: &[u8]) {
    frames(data);
    request(data);
    connect_request(data);
    replies(data);
    txn_record(data);
}

/// A keytab holding one aes256-cts key for `principal` (`a/b@REALM`), written as MIT's file
/// format 0x0502 lays it out: the acceptor needs nothing else (no KDC, no krb5.conf).
fn write_keytab(path: &std::path::Path, principal: &str, key: &[u8; 32]) -> std::io::Result<()> {
    let (name, realm) = principal.split_once('@').unwrap_or((principal, ""));
    let parts: Vec<&str> = name.split('/').collect();
    let mut e = Vec::new();
    e.extend_from_slice(&(parts.len() as u16).to_be_bytes());
    for s in std::iter::once(realm).chain(parts.iter().copied()) {
        e.extend_from_slice(&(s.len() as u16).to_be_bytes());
        e.extend_from_slice(s.as_bytes());
    }
    e.extend_from_slice(&1u32.to_be_bytes()); // KRB5_NT_PRINCIPAL
    e.extend_from_slice(&0u32.to_be_bytes()); // timestamp
    e.push(1); // kvno
    e.extend_from_slice(&18u16.to_be_bytes()); // aes256-cts-hmac-sha1-96
    e.extend_from_slice(&32u16.to_be_bytes());
    e.extend_from_slice(key);
    e.extend_from_slice(&1u32.to_be_bytes());
    let mut out = vec![0x05, 0x02];
    out.extend_from_slice(&(e.len() as i32).to_be_bytes());
    out.extend_from_slice(&e);
    std::fs::write(path, out)
}

/// The server's accepting credential for the GSSAPI target, made once per process.
fn gss_acceptor() -> std::sync::Arc<zkr::security::gssapi::ffi::Acceptor> {
    static A: std::sync::OnceLock<std::sync::Arc<zkr::security::gssapi::ffi::Acceptor>> = std::sync::OnceLock::new();
    A.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("zkr-fuzz-{}.keytab", std::process::id()));
        let principal = "zookeeper/localhost@FUZZ.TEST";
        write_keytab(&path, principal, &[7u8; 32]).expect("writing the fuzz keytab");
        let a = zkr::security::gssapi::ffi::Acceptor::new(principal, &path)
            .expect("the GSS-API acceptor (MIT libgssapi_krb5.so.2 must be installed)");
        std::sync::Arc::new(a)
    })
    .clone()
}

/// A context that follows the bytes: a token starting with `E` establishes it (the rest is
/// the reply token), wrap prefixes `W`, unwrap strips it (anything else fails).
struct ScriptedContext;

impl zkr::security::gssapi::sasl::SecurityContext for ScriptedContext {
    fn accept(
        &mut self,
        token: &[u8],
    ) -> Result<zkr::security::gssapi::ffi::Accepted, zkr::security::gssapi::ffi::GssError> {
        let peer = token.first().is_some_and(|b| *b == b'E').then(|| "fuzz@FUZZ.TEST".to_owned());
        Ok(zkr::security::gssapi::ffi::Accepted { token: token.get(1..).unwrap_or_default().to_vec(), peer })
    }
    fn wrap(&mut self, data: &[u8]) -> Result<Vec<u8>, zkr::security::gssapi::ffi::GssError> {
        Ok([b"W", data].concat())
    }
    fn unwrap(&mut self, data: &[u8]) -> Result<Vec<u8>, zkr::security::gssapi::ffi::GssError> {
        data.strip_prefix(b"W")
            .map(<[u8]>::to_vec)
            .ok_or(zkr::security::gssapi::ffi::GssError::Input("not wrapped".into()))
    }
}

/// The SASL GSSAPI token path (issue 40): MIT's own accept of any first token through zkr's
/// FFI, which never authenticates garbage and never panics; and the RFC 4752 state machine
/// over any token sequence (tokens split at 0xff): errors, never a panic, and a login only
/// after a well-formed choice (4 bytes or more, the "no layer" bit set).
pub fn sasl_gssapi(data: &[u8]) {
    let first = data.split(|b| *b == 0xff).next().unwrap_or_default();
    let mut real = zkr::security::gssapi::sasl::GssapiServer::new(gss_acceptor().context());
    if let Ok(step) = real.step(first) {
        assert!(step.authenticated.is_none(), "a first token alone authenticated: {first:02x?}");
    }
    let mut s = zkr::security::gssapi::sasl::GssapiServer::new(ScriptedContext);
    for token in data.split(|b| *b == 0xff).take(6) {
        match s.step(token) {
            Ok(step) => {
                if step.authenticated.is_some() {
                    let choice = token.strip_prefix(b"W").unwrap_or_default();
                    assert!(choice.len() >= 4 && choice[0] & 1 == 1, "logged in on {token:02x?}");
                }
            }
            Err(_) => break,
        }
    }
}
