//! The binary form of a `Txn`, as stored in log records and replicated.
//!
//! ```text
//! txn    := zxid:i64 time:i64 session:i64 op
//! op     := 1 CreateSession timeout:i32
//!         | 10 CreateSession timeout:i32 password:16 bytes  (an ensemble's session)
//!         | 2 CloseSession
//!         | 3 Create path:ustring data:buffer acl:vector<ACL> owner:i64 parentCversion:i32
//!         | 4 Delete path:ustring
//!         | 5 SetData path:ustring data:buffer version:i32
//!         | 6 SetAcl path:ustring acl:vector<ACL> aversion:i32
//!         | 7 Check path:ustring
//!         | 8 Multi count:i32 op*
//!         | 9 Error code:i32
//! ```
//! (one tag byte per op; integers big-endian; strings and buffers as in jute)

use crate::proto::jute::{self, DecodeError, JResult, JuteWrite};
use crate::proto::stat::{parse_acls, write_acls};
use crate::proto::ErrorCode;
use crate::txn::{Txn, TxnOp};
use bytes::BufMut;
use nom::number::complete::be_u8;
use std::sync::Arc;

pub fn encode(txn: &Txn, b: &mut impl BufMut) {
    b.put_i64(txn.zxid);
    b.put_i64(txn.time);
    b.put_i64(txn.session);
    encode_op(&txn.op, b);
}

fn encode_op(op: &TxnOp, b: &mut impl BufMut) {
    match op {
        TxnOp::CreateSession { timeout_ms, password: None } => {
            b.put_u8(1);
            b.put_i32(*timeout_ms);
        }
        TxnOp::CreateSession { timeout_ms, password: Some(p) } => {
            b.put_u8(10);
            b.put_i32(*timeout_ms);
            b.put_slice(p);
        }
        TxnOp::CloseSession => b.put_u8(2),
        TxnOp::Create { path, data, acl, ephemeral_owner, parent_cversion } => {
            b.put_u8(3);
            b.put_ustring(path);
            b.put_buffer(data.as_deref());
            write_acls(acl, b);
            b.put_i64(*ephemeral_owner);
            b.put_i32(*parent_cversion);
        }
        TxnOp::Delete { path } => {
            b.put_u8(4);
            b.put_ustring(path);
        }
        TxnOp::SetData { path, data, version } => {
            b.put_u8(5);
            b.put_ustring(path);
            b.put_buffer(data.as_deref());
            b.put_i32(*version);
        }
        TxnOp::SetAcl { path, acl, aversion } => {
            b.put_u8(6);
            b.put_ustring(path);
            write_acls(acl, b);
            b.put_i32(*aversion);
        }
        TxnOp::Check { path } => {
            b.put_u8(7);
            b.put_ustring(path);
        }
        TxnOp::Multi(ops) => {
            b.put_u8(8);
            b.put_i32(ops.len() as i32);
            for o in ops {
                encode_op(o, b);
            }
        }
        TxnOp::Error(code) => {
            b.put_u8(9);
            b.put_i32(code.code());
        }
    }
}

fn bad() -> nom::Err<DecodeError> {
    nom::Err::Failure(DecodeError::Malformed(nom::error::ErrorKind::Switch))
}

fn op(i: &[u8]) -> JResult<'_, TxnOp> {
    let (i, tag) = be_u8(i).map_err(|_: nom::Err<DecodeError>| nom::Err::Failure(DecodeError::Truncated))?;
    Ok(match tag {
        1 => {
            let (i, timeout_ms) = jute::int(i)?;
            (i, TxnOp::CreateSession { timeout_ms, password: None })
        }
        10 => {
            let (i, timeout_ms) = jute::int(i)?;
            let p: [u8; crate::proto::PASSWORD_LEN] =
                i.get(..crate::proto::PASSWORD_LEN).and_then(|p| p.try_into().ok()).ok_or_else(bad)?;
            (&i[crate::proto::PASSWORD_LEN..], TxnOp::CreateSession { timeout_ms, password: Some(p) })
        }
        2 => (i, TxnOp::CloseSession),
        3 => {
            let (i, path) = jute::ustring(i)?;
            let (i, data) = jute::buffer(i)?;
            let (i, acl) = parse_acls(i)?;
            let (i, ephemeral_owner) = jute::long(i)?;
            let (i, parent_cversion) = jute::int(i)?;
            (i, TxnOp::Create { path, data, acl: Arc::from(acl), ephemeral_owner, parent_cversion })
        }
        4 => {
            let (i, path) = jute::ustring(i)?;
            (i, TxnOp::Delete { path })
        }
        5 => {
            let (i, path) = jute::ustring(i)?;
            let (i, data) = jute::buffer(i)?;
            let (i, version) = jute::int(i)?;
            (i, TxnOp::SetData { path, data, version })
        }
        6 => {
            let (i, path) = jute::ustring(i)?;
            let (i, acl) = parse_acls(i)?;
            let (i, aversion) = jute::int(i)?;
            (i, TxnOp::SetAcl { path, acl: Arc::from(acl), aversion })
        }
        7 => {
            let (i, path) = jute::ustring(i)?;
            (i, TxnOp::Check { path })
        }
        8 => {
            let (mut i, n) = jute::int(i)?;
            if n < 0 || n as usize > i.len() {
                return Err(bad());
            }
            let mut ops = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let (rest, o) = op(i)?;
                ops.push(o);
                i = rest;
            }
            (i, TxnOp::Multi(ops))
        }
        9 => {
            let (i, code) = jute::int(i)?;
            (i, TxnOp::Error(ErrorCode::from_i32(code).ok_or_else(bad)?))
        }
        _ => return Err(bad()),
    })
}

pub fn decode(payload: &[u8]) -> Result<Txn, DecodeError> {
    jute::parse_all(payload, |i| {
        let (i, zxid) = jute::long(i)?;
        let (i, time) = jute::long(i)?;
        let (i, session) = jute::long(i)?;
        let (i, op) = op(i)?;
        Ok((i, Txn { zxid, time, session, op }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Acl;

    #[test]
    fn round_trips_every_op() {
        let ops = vec![
            TxnOp::CreateSession { timeout_ms: 3000, password: None },
            TxnOp::CreateSession { timeout_ms: 3000, password: Some([9; 16]) },
            TxnOp::CloseSession,
            TxnOp::Create {
                path: "/a".into(),
                data: None,
                acl: Arc::from(Acl::open_unsafe()),
                ephemeral_owner: 5,
                parent_cversion: 2,
            },
            TxnOp::Delete { path: "/a".into() },
            TxnOp::SetData { path: "/a".into(), data: Some(bytes::Bytes::from_static(b"x")), version: 3 },
            TxnOp::SetAcl { path: "/a".into(), acl: Arc::from(Acl::read_unsafe()), aversion: 1 },
            TxnOp::Multi(vec![TxnOp::Check { path: "/a".into() }, TxnOp::Error(ErrorCode::NodeExists)]),
        ];
        for (n, op) in ops.into_iter().enumerate() {
            let t = Txn { zxid: n as i64 + 1, time: 42, session: 7, op };
            let mut b = Vec::new();
            encode(&t, &mut b);
            assert_eq!(decode(&b).unwrap(), t);
        }
    }
}
