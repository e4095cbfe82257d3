//! Client requests: `RequestHeader` + the record for its op code, parsed into a typed `Request`,
//! and written back byte-identically (golden tests, the load generator and `zkr cli` use that).

use super::codes::OpCode;
use super::jute::{self, DecodeError, JResult, JuteWrite};
use super::stat::{parse_acls, write_acls, Acl};
use bytes::{BufMut, Bytes};

/// `CreateRequest` / `CreateTTLRequest` (ops 1, 15, 19, 21).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRequest {
    pub path: String,
    pub data: Option<Bytes>,
    pub acl: Vec<Acl>,
    pub flags: i32,
    /// Only in `CreateTTLRequest` (op 21).
    pub ttl: Option<i64>,
}

/// `SetWatches` (101) and `SetWatches2` (105); the two persistent lists exist only in 105.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SetWatches {
    pub relative_zxid: i64,
    pub data: Vec<String>,
    pub exist: Vec<String>,
    pub child: Vec<String>,
    pub persistent: Vec<String>,
    pub persistent_recursive: Vec<String>,
}

/// One operation inside a multi (14) or multiRead (22).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiOp {
    /// op is 1, 15, 19 or 21.
    Create(OpCode, CreateRequest),
    Delete {
        path: String,
        version: i32,
    },
    SetData {
        path: String,
        data: Option<Bytes>,
        version: i32,
    },
    Check {
        path: String,
        version: i32,
    },
    /// `GetChildrenRequest{path, watch}`: the watch flag is on the wire but ignored in a multiRead.
    GetChildren {
        path: String,
        watch: bool,
    },
    /// `GetDataRequest{path, watch}`, likewise.
    GetData {
        path: String,
        watch: bool,
    },
}

/// A parsed request body. The op code that chose the layout is kept in `Request::op`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestBody {
    Create(CreateRequest),
    Delete {
        path: String,
        version: i32,
    },
    /// exists, getData, getChildren, getChildren2.
    PathWatch {
        path: String,
        watch: bool,
    },
    SetData {
        path: String,
        data: Option<Bytes>,
        version: i32,
    },
    /// getACL, sync, getAllChildrenNumber, getEphemerals (prefix path).
    Path {
        path: String,
    },
    SetAcl {
        path: String,
        acl: Vec<Acl>,
        version: i32,
    },
    Check {
        path: String,
        version: i32,
    },
    Multi(Vec<MultiOp>),
    /// Null strings (the Java client's default) stay null.
    Reconfig {
        joining: Option<String>,
        leaving: Option<String>,
        new_members: Option<String>,
        cur_config_id: i64,
    },
    /// checkWatches / removeWatches.
    Watches {
        path: String,
        watcher_type: i32,
    },
    Auth {
        auth_type: i32,
        scheme: String,
        auth: Option<Bytes>,
    },
    SetWatches(SetWatches),
    Sasl {
        token: Option<Bytes>,
    },
    AddWatch {
        path: String,
        mode: i32,
    },
    /// ping, whoAmI, closeSession: header only.
    Empty,
}

/// A complete request frame payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub xid: i32,
    pub op: OpCode,
    pub body: RequestBody,
}

/// Why a request frame was rejected (the connection is closed for any of these).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("undecodable {op} request: {err}")]
    Decode { op: i32, err: DecodeError },
    /// Not an error of the frame: the server answers Unimplemented, as ZooKeeper does.
    #[error("unknown op code {op}")]
    UnknownOp { xid: i32, op: i32 },
    #[error("request header truncated")]
    Header,
}

fn create_req(ttl: bool) -> impl Fn(&[u8]) -> JResult<'_, CreateRequest> {
    move |i| {
        let (i, path) = jute::ustring(i)?;
        let (i, data) = jute::buffer(i)?;
        let (i, acl) = parse_acls(i)?;
        let (i, flags) = jute::int(i)?;
        let (i, ttl) = if ttl {
            let (i, t) = jute::long(i)?;
            (i, Some(t))
        } else {
            (i, None)
        };
        Ok((i, CreateRequest { path, data, acl, flags, ttl }))
    }
}

fn path_version(i: &[u8]) -> JResult<'_, (String, i32)> {
    let (i, path) = jute::ustring(i)?;
    let (i, version) = jute::int(i)?;
    Ok((i, (path, version)))
}

fn path_watch(i: &[u8]) -> JResult<'_, (String, bool)> {
    let (i, path) = jute::ustring(i)?;
    let (i, watch) = jute::boolean(i)?;
    Ok((i, (path, watch)))
}

fn set_data(i: &[u8]) -> JResult<'_, (String, Option<Bytes>, i32)> {
    let (i, path) = jute::ustring(i)?;
    let (i, data) = jute::buffer(i)?;
    let (i, version) = jute::int(i)?;
    Ok((i, (path, data, version)))
}

/// `MultiHeader{int type, bool done, int err}`.
fn multi_header(i: &[u8]) -> JResult<'_, (i32, bool, i32)> {
    let (i, t) = jute::int(i)?;
    let (i, done) = jute::boolean(i)?;
    let (i, err) = jute::int(i)?;
    Ok((i, (t, done, err)))
}

fn multi_ops(mut i: &[u8]) -> JResult<'_, Vec<MultiOp>> {
    let mut ops = Vec::new();
    loop {
        let (rest, (t, done, _)) = multi_header(i)?;
        i = rest;
        if done {
            return Ok((i, ops));
        }
        let (rest, op) = match OpCode::from_i32(t) {
            Some(op @ (OpCode::Create | OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl)) => {
                let (r, c) = create_req(op == OpCode::CreateTtl)(i)?;
                (r, MultiOp::Create(op, c))
            }
            Some(OpCode::Delete) => {
                let (r, (path, version)) = path_version(i)?;
                (r, MultiOp::Delete { path, version })
            }
            Some(OpCode::SetData) => {
                let (r, (path, data, version)) = set_data(i)?;
                (r, MultiOp::SetData { path, data, version })
            }
            Some(OpCode::Check) => {
                let (r, (path, version)) = path_version(i)?;
                (r, MultiOp::Check { path, version })
            }
            Some(OpCode::GetChildren) => {
                let (r, (path, watch)) = path_watch(i)?;
                (r, MultiOp::GetChildren { path, watch })
            }
            Some(OpCode::GetData) => {
                let (r, (path, watch)) = path_watch(i)?;
                (r, MultiOp::GetData { path, watch })
            }
            // ZooKeeper's MultiOperationRecord throws "Invalid type of op" and drops the connection.
            _ => return Err(nom::Err::Failure(DecodeError::Malformed(nom::error::ErrorKind::Switch))),
        };
        ops.push(op);
        i = rest;
    }
}

fn set_watches(v2: bool) -> impl Fn(&[u8]) -> JResult<'_, SetWatches> {
    move |i| {
        let (i, relative_zxid) = jute::long(i)?;
        let (i, data) = jute::vector(jute::ustring)(i)?;
        let (i, exist) = jute::vector(jute::ustring)(i)?;
        let (i, child) = jute::vector(jute::ustring)(i)?;
        let (i, persistent, persistent_recursive) = if v2 {
            let (i, p) = jute::vector(jute::ustring)(i)?;
            let (i, r) = jute::vector(jute::ustring)(i)?;
            (i, p, r)
        } else {
            (i, Vec::new(), Vec::new())
        };
        Ok((i, SetWatches { relative_zxid, data, exist, child, persistent, persistent_recursive }))
    }
}

fn body(op: OpCode, i: &[u8]) -> Result<RequestBody, DecodeError> {
    use RequestBody as B;
    Ok(match op {
        OpCode::Create | OpCode::Create2 | OpCode::CreateContainer => B::Create(jute::parse_all(i, create_req(false))?),
        OpCode::CreateTtl => B::Create(jute::parse_all(i, create_req(true))?),
        OpCode::Delete => {
            let (path, version) = jute::parse_all(i, path_version)?;
            B::Delete { path, version }
        }
        OpCode::Exists | OpCode::GetData | OpCode::GetChildren | OpCode::GetChildren2 => {
            let (path, watch) = jute::parse_all(i, path_watch)?;
            B::PathWatch { path, watch }
        }
        OpCode::SetData => {
            let (path, data, version) = jute::parse_all(i, set_data)?;
            B::SetData { path, data, version }
        }
        OpCode::GetAcl | OpCode::Sync | OpCode::GetAllChildrenNumber | OpCode::GetEphemerals => {
            B::Path { path: jute::parse_all(i, jute::ustring)? }
        }
        OpCode::SetAcl => jute::parse_all(i, |i| {
            let (i, path) = jute::ustring(i)?;
            let (i, acl) = parse_acls(i)?;
            let (i, version) = jute::int(i)?;
            Ok((i, B::SetAcl { path, acl, version }))
        })?,
        OpCode::Check => {
            let (path, version) = jute::parse_all(i, path_version)?;
            B::Check { path, version }
        }
        OpCode::Multi | OpCode::MultiRead => B::Multi(jute::parse_all(i, multi_ops)?),
        OpCode::Reconfig => jute::parse_all(i, |i| {
            let (i, joining) = jute::ustring_opt(i)?;
            let (i, leaving) = jute::ustring_opt(i)?;
            let (i, new_members) = jute::ustring_opt(i)?;
            let (i, cur_config_id) = jute::long(i)?;
            Ok((i, B::Reconfig { joining, leaving, new_members, cur_config_id }))
        })?,
        OpCode::CheckWatches | OpCode::RemoveWatches => jute::parse_all(i, |i| {
            let (i, path) = jute::ustring(i)?;
            let (i, watcher_type) = jute::int(i)?;
            Ok((i, B::Watches { path, watcher_type }))
        })?,
        OpCode::Auth => jute::parse_all(i, |i| {
            let (i, auth_type) = jute::int(i)?;
            let (i, scheme) = jute::ustring(i)?;
            let (i, auth) = jute::buffer(i)?;
            Ok((i, B::Auth { auth_type, scheme, auth }))
        })?,
        OpCode::SetWatches => B::SetWatches(jute::parse_all(i, set_watches(false))?),
        OpCode::SetWatches2 => B::SetWatches(jute::parse_all(i, set_watches(true))?),
        OpCode::Sasl => B::Sasl { token: jute::parse_all(i, jute::buffer)? },
        OpCode::AddWatch => jute::parse_all(i, |i| {
            let (i, path) = jute::ustring(i)?;
            let (i, mode) = jute::int(i)?;
            Ok((i, B::AddWatch { path, mode }))
        })?,
        // Header-only requests: ZooKeeper ignores anything after the header for these.
        OpCode::Ping | OpCode::WhoAmI | OpCode::CloseSession => B::Empty,
        // Server-internal ops never reach here: `client_op` turns them into UnknownOp first.
        OpCode::Notification | OpCode::DeleteContainer | OpCode::CreateSession | OpCode::Error => B::Empty,
    })
}

/// Op codes a client may send; anything else is answered with Unimplemented.
fn client_op(op: i32) -> Option<OpCode> {
    match OpCode::from_i32(op)? {
        OpCode::Notification | OpCode::DeleteContainer | OpCode::CreateSession | OpCode::Error => None,
        op => Some(op),
    }
}

impl Request {
    /// Parses a frame payload (without the 4-byte length).
    pub fn parse(frame: &[u8]) -> Result<Request, RequestError> {
        let (rest, (xid, op_raw)) = (|i| -> JResult<'_, (i32, i32)> {
            let (i, xid) = jute::int(i)?;
            let (i, op) = jute::int(i)?;
            Ok((i, (xid, op)))
        })(frame)
        .map_err(|_| RequestError::Header)?;
        let op = client_op(op_raw).ok_or(RequestError::UnknownOp { xid, op: op_raw })?;
        let body = body(op, rest).map_err(|err| RequestError::Decode { op: op_raw, err })?;
        Ok(Request { xid, op, body })
    }

    /// Writes the payload (without the length prefix).
    pub fn write(&self, b: &mut impl BufMut) {
        b.put_i32(self.xid);
        b.put_i32(self.op as i32);
        write_body(&self.body, self.op, b);
    }
}

fn write_create(c: &CreateRequest, b: &mut impl BufMut) {
    b.put_ustring(&c.path);
    b.put_buffer(c.data.as_deref());
    write_acls(&c.acl, b);
    b.put_i32(c.flags);
    if let Some(ttl) = c.ttl {
        b.put_i64(ttl);
    }
}

fn write_strings(v: &[String], b: &mut impl BufMut) {
    b.put_i32(v.len() as i32);
    for s in v {
        b.put_ustring(s);
    }
}

/// A request's body as the client sent it, without its xid and op code (what a ZooKeeper
/// learner forwards to its leader).
pub fn write_body(body: &RequestBody, op: OpCode, b: &mut impl BufMut) {
    use RequestBody as B;
    match body {
        B::Create(c) => write_create(c, b),
        B::Delete { path, version } | B::Check { path, version } => {
            b.put_ustring(path);
            b.put_i32(*version);
        }
        B::PathWatch { path, watch } => {
            b.put_ustring(path);
            b.put_bool_j(*watch);
        }
        B::SetData { path, data, version } => {
            b.put_ustring(path);
            b.put_buffer(data.as_deref());
            b.put_i32(*version);
        }
        B::Path { path } => b.put_ustring(path),
        B::SetAcl { path, acl, version } => {
            b.put_ustring(path);
            write_acls(acl, b);
            b.put_i32(*version);
        }
        B::Multi(ops) => {
            for op in ops {
                let t = match op {
                    MultiOp::Create(c, _) => *c,
                    MultiOp::Delete { .. } => OpCode::Delete,
                    MultiOp::SetData { .. } => OpCode::SetData,
                    MultiOp::Check { .. } => OpCode::Check,
                    MultiOp::GetChildren { .. } => OpCode::GetChildren,
                    MultiOp::GetData { .. } => OpCode::GetData,
                };
                b.put_i32(t as i32);
                b.put_bool_j(false);
                b.put_i32(-1);
                match op {
                    MultiOp::Create(_, c) => write_create(c, b),
                    MultiOp::Delete { path, version } | MultiOp::Check { path, version } => {
                        b.put_ustring(path);
                        b.put_i32(*version);
                    }
                    MultiOp::SetData { path, data, version } => {
                        b.put_ustring(path);
                        b.put_buffer(data.as_deref());
                        b.put_i32(*version);
                    }
                    MultiOp::GetChildren { path, watch } | MultiOp::GetData { path, watch } => {
                        b.put_ustring(path);
                        b.put_bool_j(*watch);
                    }
                }
            }
            b.put_i32(-1);
            b.put_bool_j(true);
            b.put_i32(-1);
        }
        B::Reconfig { joining, leaving, new_members, cur_config_id } => {
            b.put_ustring_opt(joining.as_deref());
            b.put_ustring_opt(leaving.as_deref());
            b.put_ustring_opt(new_members.as_deref());
            b.put_i64(*cur_config_id);
        }
        B::Watches { path, watcher_type } => {
            b.put_ustring(path);
            b.put_i32(*watcher_type);
        }
        B::Auth { auth_type, scheme, auth } => {
            b.put_i32(*auth_type);
            b.put_ustring(scheme);
            b.put_buffer(auth.as_deref());
        }
        B::SetWatches(sw) => {
            b.put_i64(sw.relative_zxid);
            write_strings(&sw.data, b);
            write_strings(&sw.exist, b);
            write_strings(&sw.child, b);
            if op == OpCode::SetWatches2 {
                write_strings(&sw.persistent, b);
                write_strings(&sw.persistent_recursive, b);
            }
        }
        B::Sasl { token } => b.put_buffer(token.as_deref()),
        B::AddWatch { path, mode } => {
            b.put_ustring(path);
            b.put_i32(*mode);
        }
        B::Empty => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(r: Request) {
        let mut b = Vec::new();
        r.write(&mut b);
        assert_eq!(Request::parse(&b).unwrap(), r);
    }

    #[test]
    fn round_trips() {
        round_trip(Request {
            xid: 7,
            op: OpCode::CreateTtl,
            body: RequestBody::Create(CreateRequest {
                path: "/a".into(),
                data: Some(Bytes::from_static(b"x")),
                acl: Acl::open_unsafe(),
                flags: 5,
                ttl: Some(100),
            }),
        });
        round_trip(Request {
            xid: 8,
            op: OpCode::Multi,
            body: RequestBody::Multi(vec![
                MultiOp::Check { path: "/a".into(), version: 1 },
                MultiOp::Delete { path: "/a".into(), version: -1 },
            ]),
        });
        round_trip(Request {
            xid: 9,
            op: OpCode::SetWatches2,
            body: RequestBody::SetWatches(SetWatches {
                relative_zxid: 5,
                data: vec!["/x".into()],
                ..Default::default()
            }),
        });
    }

    #[test]
    fn unknown_op_is_reported_with_its_xid() {
        let mut b = Vec::new();
        b.put_i32(3);
        b.put_i32(999);
        assert_eq!(Request::parse(&b), Err(RequestError::UnknownOp { xid: 3, op: 999 }));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for len in 0..40 {
            let junk: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let _ = Request::parse(&junk);
        }
        let mut b = Vec::new();
        b.put_i32(1);
        b.put_i32(1);
        b.put_i32(1000);
        assert!(matches!(Request::parse(&b), Err(RequestError::Decode { .. })));
    }
}
