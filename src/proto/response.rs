//! Server replies: `ReplyHeader` + body, notifications (`WatcherEvent`), and their parsing
//! (a reply's layout depends on the op of the request it answers, so parsing takes that op).

use super::codes::{ErrorCode, OpCode};
use super::jute::{self, DecodeError, JResult, JuteWrite};
use super::stat::{parse_acls, write_acls, Acl, Stat};
use bytes::{BufMut, Bytes};
use std::sync::Arc;

/// `ReplyHeader{int xid, long zxid, int err}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyHeader {
    pub xid: i32,
    pub zxid: i64,
    pub err: i32,
}

impl ReplyHeader {
    pub const WIRE_LEN: usize = 16;

    pub fn write(&self, b: &mut impl BufMut) {
        b.put_i32(self.xid);
        b.put_i64(self.zxid);
        b.put_i32(self.err);
    }

    pub fn parse(i: &[u8]) -> JResult<'_, ReplyHeader> {
        let (i, xid) = jute::int(i)?;
        let (i, zxid) = jute::long(i)?;
        let (i, err) = jute::int(i)?;
        Ok((i, ReplyHeader { xid, zxid, err }))
    }
}

/// The result of one op of a multi / multiRead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MultiResult {
    /// create (1): `CreateResponse`.
    Create {
        path: String,
    },
    /// create2/container/TTL: `Create2Response`; ZooKeeper's `CreateResult(path, stat)` reports type 15.
    Create2 {
        path: String,
        stat: Stat,
    },
    Delete,
    SetData {
        stat: Stat,
    },
    Check,
    GetChildren {
        children: Vec<Arc<str>>,
    },
    GetData {
        data: Option<Bytes>,
        stat: Stat,
    },
    /// `ErrorResponse{int err}` with header type -1.
    Error(i32),
}

/// A reply body. `Empty` is header-only (delete, ping, setWatches, auth, errors…).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Response {
    Empty,
    /// create (1) and sync (9): one ustring.
    Path(String),
    Create2 {
        path: String,
        stat: Stat,
    },
    /// exists, setData, setACL, standalone check.
    Stat(Stat),
    GetData {
        data: Option<Bytes>,
        stat: Stat,
    },
    GetAcl {
        acl: Vec<Acl>,
        stat: Stat,
    },
    Children(Vec<Arc<str>>),
    Children2 {
        children: Vec<Arc<str>>,
        stat: Stat,
    },
    /// getChildren answered from the tree's cache: the child list already encoded.
    EncodedChildren(Bytes),
    /// getChildren2 answered from the tree's cache.
    EncodedChildren2 {
        children: Bytes,
        stat: Stat,
    },
    Multi(Vec<MultiResult>),
    /// getEphemerals.
    Strings(Vec<String>),
    /// getAllChildrenNumber.
    Number(i32),
    /// addWatch: `ErrorResponse{err=0}`; the 4-byte body is required by clients.
    ErrorBody(i32),
    /// whoAmI: `vector<ClientInfo{authScheme, user}>`.
    WhoAmI(Vec<(String, String)>),
    Sasl(Option<Bytes>),
}

/// A child list as getChildren sends it: `vector<ustring>`.
pub fn encode_children(names: impl ExactSizeIterator<Item = impl AsRef<str>>) -> Bytes {
    let mut b = bytes::BytesMut::new();
    b.put_i32(names.len() as i32);
    for s in names {
        b.put_ustring(s.as_ref());
    }
    b.freeze()
}

fn write_children(c: &[Arc<str>], b: &mut impl BufMut) {
    b.put_i32(c.len() as i32);
    for s in c {
        b.put_ustring(s);
    }
}

impl Response {
    pub fn write(&self, b: &mut impl BufMut) {
        match self {
            Response::Empty => {}
            Response::Path(p) => b.put_ustring(p),
            Response::Create2 { path, stat } => {
                b.put_ustring(path);
                stat.write(b);
            }
            Response::Stat(s) => s.write(b),
            Response::GetData { data, stat } => {
                b.put_buffer(data.as_deref());
                stat.write(b);
            }
            Response::GetAcl { acl, stat } => {
                write_acls(acl, b);
                stat.write(b);
            }
            Response::Children(c) => write_children(c, b),
            Response::Children2 { children, stat } => {
                write_children(children, b);
                stat.write(b);
            }
            Response::EncodedChildren(c) => b.put_slice(c),
            Response::EncodedChildren2 { children, stat } => {
                b.put_slice(children);
                stat.write(b);
            }
            Response::Multi(results) => {
                for r in results {
                    let (t, err) = match r {
                        MultiResult::Create { .. } => (OpCode::Create as i32, 0),
                        MultiResult::Create2 { .. } => (OpCode::Create2 as i32, 0),
                        MultiResult::Delete => (OpCode::Delete as i32, 0),
                        MultiResult::SetData { .. } => (OpCode::SetData as i32, 0),
                        MultiResult::Check => (OpCode::Check as i32, 0),
                        MultiResult::GetChildren { .. } => (OpCode::GetChildren as i32, 0),
                        MultiResult::GetData { .. } => (OpCode::GetData as i32, 0),
                        MultiResult::Error(e) => (-1, *e),
                    };
                    b.put_i32(t);
                    b.put_bool_j(false);
                    b.put_i32(err);
                    match r {
                        MultiResult::Create { path } => b.put_ustring(path),
                        MultiResult::Create2 { path, stat } => {
                            b.put_ustring(path);
                            stat.write(b);
                        }
                        MultiResult::Delete | MultiResult::Check => {}
                        MultiResult::SetData { stat } => stat.write(b),
                        MultiResult::GetChildren { children } => write_children(children, b),
                        MultiResult::GetData { data, stat } => {
                            b.put_buffer(data.as_deref());
                            stat.write(b);
                        }
                        MultiResult::Error(e) => b.put_i32(*e),
                    }
                }
                b.put_i32(-1);
                b.put_bool_j(true);
                b.put_i32(-1);
            }
            Response::Strings(v) => {
                b.put_i32(v.len() as i32);
                for s in v {
                    b.put_ustring(s);
                }
            }
            Response::Number(n) | Response::ErrorBody(n) => b.put_i32(*n),
            Response::WhoAmI(v) => {
                b.put_i32(v.len() as i32);
                for (scheme, user) in v {
                    b.put_ustring(scheme);
                    b.put_ustring(user);
                }
            }
            Response::Sasl(t) => b.put_buffer(t.as_deref()),
        }
    }

    /// The bytes `write` puts on the wire, computed without encoding: what a reply costs a
    /// connection's outbound queue, which is bounded in bytes.
    pub fn wire_len(&self) -> usize {
        fn ustr(s: &str) -> usize {
            4 + s.len()
        }
        fn buf(b: Option<&[u8]>) -> usize {
            4 + b.map_or(0, <[u8]>::len)
        }
        fn strings<S: AsRef<str>>(v: &[S]) -> usize {
            4 + v.iter().map(|s| ustr(s.as_ref())).sum::<usize>()
        }
        const STAT: usize = Stat::WIRE_LEN;
        match self {
            Response::Empty => 0,
            Response::Path(p) => ustr(p),
            Response::Create2 { path, .. } => ustr(path) + STAT,
            Response::Stat(_) => STAT,
            Response::GetData { data, .. } => buf(data.as_deref()) + STAT,
            Response::GetAcl { acl, .. } => {
                4 + acl.iter().map(|a| 4 + ustr(&a.id.scheme) + ustr(&a.id.id)).sum::<usize>() + STAT
            }
            Response::Children(c) => strings(c),
            Response::Children2 { children, .. } => strings(children) + STAT,
            Response::EncodedChildren(c) => c.len(),
            Response::EncodedChildren2 { children, .. } => children.len() + STAT,
            Response::Multi(results) => {
                let body = |r: &MultiResult| match r {
                    MultiResult::Create { path } => ustr(path),
                    MultiResult::Create2 { path, .. } => ustr(path) + STAT,
                    MultiResult::Delete | MultiResult::Check => 0,
                    MultiResult::SetData { .. } => STAT,
                    MultiResult::GetChildren { children } => strings(children),
                    MultiResult::GetData { data, .. } => buf(data.as_deref()) + STAT,
                    MultiResult::Error(_) => 4,
                };
                results.iter().map(|r| 9 + body(r)).sum::<usize>() + 9
            }
            Response::Strings(v) => strings(v),
            Response::Number(_) | Response::ErrorBody(_) => 4,
            Response::WhoAmI(v) => 4 + v.iter().map(|(s, u)| ustr(s) + ustr(u)).sum::<usize>(),
            Response::Sasl(t) => buf(t.as_deref()),
        }
    }

    /// Parses a reply body for a request of op `op` whose header carried `err`.
    pub fn parse(op: OpCode, err: i32, i: &[u8]) -> Result<Response, DecodeError> {
        // A failed reply has no body, except multi/multiRead which always carry their results.
        if err != ErrorCode::Ok.code() && !matches!(op, OpCode::Multi | OpCode::MultiRead) {
            return jute::parse_all(i, |i| Ok((i, Response::Empty)));
        }
        Ok(match op {
            OpCode::Create | OpCode::Sync => Response::Path(jute::parse_all(i, jute::ustring)?),
            OpCode::Create2 | OpCode::CreateContainer | OpCode::CreateTtl => jute::parse_all(i, |i| {
                let (i, path) = jute::ustring(i)?;
                let (i, stat) = Stat::parse(i)?;
                Ok((i, Response::Create2 { path, stat }))
            })?,
            OpCode::Exists | OpCode::SetData | OpCode::SetAcl | OpCode::Check => {
                Response::Stat(jute::parse_all(i, Stat::parse)?)
            }
            OpCode::GetData | OpCode::Reconfig => jute::parse_all(i, |i| {
                let (i, data) = jute::buffer(i)?;
                let (i, stat) = Stat::parse(i)?;
                Ok((i, Response::GetData { data, stat }))
            })?,
            OpCode::GetAcl => jute::parse_all(i, |i| {
                let (i, acl) = parse_acls(i)?;
                let (i, stat) = Stat::parse(i)?;
                Ok((i, Response::GetAcl { acl, stat }))
            })?,
            OpCode::GetChildren => Response::Children(jute::parse_all(i, children)?),
            OpCode::GetChildren2 => jute::parse_all(i, |i| {
                let (i, children) = children(i)?;
                let (i, stat) = Stat::parse(i)?;
                Ok((i, Response::Children2 { children, stat }))
            })?,
            OpCode::Multi | OpCode::MultiRead => Response::Multi(jute::parse_all(i, multi_results)?),
            OpCode::GetEphemerals => Response::Strings(jute::parse_all(i, jute::vector(jute::ustring))?),
            OpCode::GetAllChildrenNumber => Response::Number(jute::parse_all(i, jute::int)?),
            OpCode::AddWatch => Response::ErrorBody(jute::parse_all(i, jute::int)?),
            OpCode::WhoAmI => Response::WhoAmI(jute::parse_all(
                i,
                jute::vector(|i| {
                    let (i, s) = jute::ustring(i)?;
                    let (i, u) = jute::ustring(i)?;
                    Ok((i, (s, u)))
                }),
            )?),
            OpCode::Sasl => Response::Sasl(jute::parse_all(i, jute::buffer)?),
            _ => jute::parse_all(i, |i| Ok((i, Response::Empty)))?,
        })
    }
}

fn children(i: &[u8]) -> JResult<'_, Vec<Arc<str>>> {
    let (i, v) = jute::vector(jute::ustring)(i)?;
    Ok((i, v.into_iter().map(Arc::from).collect()))
}

fn multi_results(mut i: &[u8]) -> JResult<'_, Vec<MultiResult>> {
    let mut out = Vec::new();
    loop {
        let (r, t) = jute::int(i)?;
        let (r, done) = jute::boolean(r)?;
        let (r, _err) = jute::int(r)?;
        i = r;
        if done {
            return Ok((i, out));
        }
        let (r, res) = match t {
            1 => {
                let (r, path) = jute::ustring(i)?;
                (r, MultiResult::Create { path })
            }
            15 | 19 | 21 => {
                let (r, path) = jute::ustring(i)?;
                let (r, stat) = Stat::parse(r)?;
                (r, MultiResult::Create2 { path, stat })
            }
            2 => (i, MultiResult::Delete),
            13 => (i, MultiResult::Check),
            5 => {
                let (r, stat) = Stat::parse(i)?;
                (r, MultiResult::SetData { stat })
            }
            8 => {
                let (r, c) = children(i)?;
                (r, MultiResult::GetChildren { children: c })
            }
            4 => {
                let (r, data) = jute::buffer(i)?;
                let (r, stat) = Stat::parse(r)?;
                (r, MultiResult::GetData { data, stat })
            }
            -1 => {
                let (r, e) = jute::int(i)?;
                (r, MultiResult::Error(e))
            }
            _ => return Err(nom::Err::Failure(DecodeError::Malformed(nom::error::ErrorKind::Switch))),
        };
        out.push(res);
        i = r;
    }
}

/// `WatcherEvent{int type, int state, ustring path}` pushed with xid -1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatcherEvent {
    pub event_type: i32,
    pub state: i32,
    pub path: String,
}

impl WatcherEvent {
    pub fn write(&self, b: &mut impl BufMut) {
        b.put_i32(self.event_type);
        b.put_i32(self.state);
        b.put_ustring(&self.path);
    }

    pub fn parse(i: &[u8]) -> JResult<'_, WatcherEvent> {
        let (i, event_type) = jute::int(i)?;
        let (i, state) = jute::int(i)?;
        let (i, path) = jute::ustring(i)?;
        Ok((i, WatcherEvent { event_type, state, path }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Id;

    #[test]
    fn multi_round_trips() {
        let r = Response::Multi(vec![
            MultiResult::Create2 { path: "/a".into(), stat: Stat::default() },
            MultiResult::Error(-101),
            MultiResult::Delete,
        ]);
        let mut b = Vec::new();
        r.write(&mut b);
        assert_eq!(Response::parse(OpCode::Multi, 0, &b).unwrap(), r);
    }

    #[test]
    fn wire_len_is_what_write_writes() {
        let stat = Stat { czxid: 3, ..Default::default() };
        let data = Some(Bytes::from_static(b"payload"));
        let kids: Vec<Arc<str>> = vec!["a".into(), "provider-1".into()];
        let acl = vec![Acl { perms: 31, id: Id { scheme: "world".into(), id: "anyone".into() } }];
        let all = vec![
            Response::Empty,
            Response::Path("/a/b".into()),
            Response::Create2 { path: "/x".into(), stat },
            Response::Stat(stat),
            Response::GetData { data: data.clone(), stat },
            Response::GetData { data: None, stat },
            Response::GetAcl { acl, stat },
            Response::Children(kids.clone()),
            Response::Children2 { children: kids.clone(), stat },
            Response::EncodedChildren(encode_children(kids.iter())),
            Response::EncodedChildren2 { children: encode_children(kids.iter()), stat },
            Response::Multi(vec![
                MultiResult::Create { path: "/c".into() },
                MultiResult::Create2 { path: "/c2".into(), stat },
                MultiResult::Delete,
                MultiResult::SetData { stat },
                MultiResult::Check,
                MultiResult::GetChildren { children: kids },
                MultiResult::GetData { data, stat },
                MultiResult::Error(-101),
            ]),
            Response::Strings(vec!["/e1".into(), "/e2".into()]),
            Response::Number(7),
            Response::ErrorBody(0),
            Response::WhoAmI(vec![("ip".into(), "127.0.0.1".into())]),
            Response::Sasl(Some(Bytes::from_static(b"token"))),
            Response::Sasl(None),
        ];
        for r in all {
            let mut b = Vec::new();
            r.write(&mut b);
            assert_eq!(r.wire_len(), b.len(), "{r:?}");
        }
    }

    #[test]
    fn add_watch_has_a_four_byte_body() {
        let mut b = Vec::new();
        Response::ErrorBody(0).write(&mut b);
        assert_eq!(b, vec![0, 0, 0, 0]);
    }
}
