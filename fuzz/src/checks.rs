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
