//! `Command`: a client write as the ensemble replicates it, the payload of a Raft log entry.
//!
//! A member logs the *request*, not the prepared txn: every member prepares and applies it when
//! it is committed, against the same tree in the same order, so the leader needs no overlay of
//! uncommitted changes and a proposal never goes stale. What prep needs that is not in the tree
//! travels with it: the session's identities (for ACLs), the time (stamped by the leader, as
//! ZooKeeper's leader stamps its txns) and the proposer's settings.
//!
//! ```text
//! command := origin u64 | seq u64 | time i64 | session i64 | op
//! op      := 1 CreateSession timeout:i32 password:16 bytes
//!          | 2 CloseSession
//!          | 3 Request flags:u8 ids:vector<Id> request:buffer        (RequestHeader with xid 0 + record)
//! flags   := bit 0 ttlEnabled | bit 1 enforceQuota
//!          | 4 Reap path:ustring                                      (empty container / expired TTL node)
//! ```
//! (big-endian integers; strings, buffers and vectors as in jute)
//!
//! A log entry carries a `Batch` of commands: the leader's log appends are fsync'd one at a
//! time (openraft 0.9 waits for each append's flush before it takes the next request), so
//! one entry per command would cap writes at one command per fsync; a batch takes every
//! command that arrived meanwhile (ZooKeeper's SyncRequestProcessor groups its txns per fsync
//! the same way).
//! ```text
//! batch   := command                                    (one command: the format of one command alone)
//!          | 0xffffffffffffffff count:u32 (len:u32 command)*count
//! ```

use crate::proto::jute::{self, DecodeError, JuteWrite};
use crate::proto::{Id, OpCode, Request, RequestBody, PASSWORD_LEN};
use crate::txn::SessionId;
use bytes::BufMut;

/// The member that proposed a command and its sequence number there: the proposer answers
/// its client when it applies the entry; other members only apply it. Seq 0: nobody waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Origin {
    pub member: u64,
    pub seq: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    pub origin: Origin,
    /// Wall-clock ms for ctime/mtime and TTLs; the leader overwrites it when it accepts the command.
    pub time: i64,
    pub session: SessionId,
    pub op: CommandOp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandOp {
    CreateSession {
        timeout_ms: i32,
        password: [u8; PASSWORD_LEN],
    },
    /// A client's closeSession, or the leader's expiry of the session.
    CloseSession,
    /// A client write request with what prep needs of its session and server.
    Request {
        ids: Vec<Id>,
        ttl_enabled: bool,
        /// zoo.cfg `enforceQuota` of the proposer: every member refuses the same writes.
        enforce_quota: bool,
        op: OpCode,
        body: RequestBody,
    },
    /// The leader's sweep deletes an empty container or an expired TTL node (ZooKeeper's
    /// ContainerManager also goes through the log, as a deleteContainer request).
    Reap {
        path: String,
    },
}

impl Command {
    pub fn encode(&self, b: &mut impl BufMut) {
        b.put_u64(self.origin.member);
        b.put_u64(self.origin.seq);
        b.put_i64(self.time);
        b.put_i64(self.session);
        match &self.op {
            CommandOp::CreateSession { timeout_ms, password } => {
                b.put_u8(1);
                b.put_i32(*timeout_ms);
                b.put_slice(password);
            }
            CommandOp::CloseSession => b.put_u8(2),
            CommandOp::Request { ids, ttl_enabled, enforce_quota, op, body } => {
                b.put_u8(3);
                b.put_u8(u8::from(*ttl_enabled) | (u8::from(*enforce_quota) << 1));
                b.put_i32(ids.len() as i32);
                for id in ids {
                    b.put_ustring(&id.scheme);
                    b.put_ustring(&id.id);
                }
                let mut req = Vec::new();
                Request { xid: 0, op: *op, body: body.clone() }.write(&mut req);
                b.put_buffer(Some(&req));
            }
            CommandOp::Reap { path } => {
                b.put_u8(4);
                b.put_ustring(path);
            }
        }
    }

    /// About the encoded size (within a few dozen bytes): what a batch's byte bound counts,
    /// without encoding the command twice.
    pub fn approx_len(&self) -> usize {
        fn data(d: &Option<bytes::Bytes>) -> usize {
            d.as_ref().map_or(0, |d| d.len())
        }
        fn acl(a: &[crate::proto::Acl]) -> usize {
            a.iter().map(|a| 12 + a.id.scheme.len() + a.id.id.len()).sum()
        }
        fn multi(op: &crate::proto::MultiOp) -> usize {
            use crate::proto::MultiOp as M;
            16 + match op {
                M::Create(_, c) => c.path.len() + data(&c.data) + acl(&c.acl),
                M::SetData { path, data: d, .. } => path.len() + data(d),
                M::Delete { path, .. } | M::Check { path, .. } => path.len(),
                _ => 64,
            }
        }
        48 + match &self.op {
            CommandOp::CreateSession { .. } | CommandOp::CloseSession => 24,
            CommandOp::Reap { path } => path.len(),
            CommandOp::Request { ids, body, .. } => {
                ids.iter().map(|i| 8 + i.scheme.len() + i.id.len()).sum::<usize>()
                    + 32
                    + match body {
                        RequestBody::Create(c) => c.path.len() + data(&c.data) + acl(&c.acl),
                        RequestBody::SetData { path, data: d, .. } => path.len() + data(d),
                        RequestBody::SetAcl { path, acl: a, .. } => path.len() + acl(a),
                        RequestBody::Multi(ops) => ops.iter().map(multi).sum(),
                        RequestBody::Delete { path, .. } | RequestBody::Path { path } => path.len(),
                        _ => 256,
                    }
            }
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64);
        self.encode(&mut b);
        b
    }

    pub fn decode(bytes: &[u8]) -> Result<Command, DecodeError> {
        let bad = || nom::Err::Failure(DecodeError::Malformed(nom::error::ErrorKind::Verify));
        jute::parse_all(bytes, |i| {
            let (i, member) = jute::long(i)?;
            let (i, seq) = jute::long(i)?;
            let (i, time) = jute::long(i)?;
            let (i, session) = jute::long(i)?;
            let (i, tag) = i.split_first().map(|(t, r)| (r, *t)).ok_or_else(bad)?;
            let (i, op) = match tag {
                1 => {
                    let (i, timeout_ms) = jute::int(i)?;
                    if i.len() < PASSWORD_LEN {
                        return Err(bad());
                    }
                    let mut password = [0u8; PASSWORD_LEN];
                    password.copy_from_slice(&i[..PASSWORD_LEN]);
                    (&i[PASSWORD_LEN..], CommandOp::CreateSession { timeout_ms, password })
                }
                2 => (i, CommandOp::CloseSession),
                3 => {
                    let (i, flags) = i.split_first().map(|(t, r)| (r, *t)).ok_or_else(bad)?;
                    let (mut i, n) = jute::int(i)?;
                    if n < 0 || n as usize > i.len() {
                        return Err(bad());
                    }
                    let mut ids = Vec::with_capacity(n as usize);
                    for _ in 0..n {
                        let (r, scheme) = jute::ustring(i)?;
                        let (r, id) = jute::ustring(r)?;
                        ids.push(Id { scheme, id });
                        i = r;
                    }
                    let (i, req) = jute::buffer(i)?;
                    let req = Request::parse(req.as_deref().unwrap_or_default()).map_err(|_| bad())?;
                    let (ttl_enabled, enforce_quota) = (flags & 1 != 0, flags & 2 != 0);
                    (i, CommandOp::Request { ids, ttl_enabled, enforce_quota, op: req.op, body: req.body })
                }
                4 => {
                    let (i, path) = jute::ustring(i)?;
                    (i, CommandOp::Reap { path })
                }
                _ => return Err(bad()),
            };
            Ok((i, Command { origin: Origin { member: member as u64, seq: seq as u64 }, time, session, op }))
        })
    }
}

/// The commands of one log entry, applied in order, each with its own zxid.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Batch(pub Vec<Command>);

/// Marks a batch of several commands: a command starts with its origin member's id, never this.
const MANY: u64 = u64::MAX;

/// Most commands in one batch.
pub const BATCH_MAX_COMMANDS: usize = 1024;
/// A batch stops growing at this many encoded bytes (one larger command still goes alone), so
/// `max_payload_entries` entries stay well inside a peer frame (`network::MAX_FRAME`).
pub const BATCH_MAX_BYTES: usize = 256 * 1024;

impl Batch {
    pub fn encode(&self, b: &mut Vec<u8>) {
        match self.0.as_slice() {
            [one] => one.encode(b),
            many => {
                b.put_u64(MANY);
                b.put_u32(many.len() as u32);
                for c in many {
                    let at = b.len();
                    b.put_u32(0);
                    c.encode(b);
                    let len = (b.len() - at - 4) as u32;
                    b[at..at + 4].copy_from_slice(&len.to_be_bytes());
                }
            }
        }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(64 * self.0.len());
        self.encode(&mut b);
        b
    }

    pub fn decode(bytes: &[u8]) -> Result<Batch, DecodeError> {
        let bad = || DecodeError::Malformed(nom::error::ErrorKind::Verify);
        if bytes.len() < 12 || bytes[..8] != MANY.to_be_bytes() {
            return Command::decode(bytes).map(|c| Batch(vec![c]));
        }
        let n = u32::from_be_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
        let mut rest = &bytes[12..];
        // Each command takes at least its 4-byte length: a count beyond that is a lie.
        if n > rest.len() / 4 {
            return Err(bad());
        }
        let mut cmds = Vec::with_capacity(n);
        for _ in 0..n {
            if rest.len() < 4 {
                return Err(bad());
            }
            let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            let body = rest.get(4..4 + len).ok_or_else(bad)?;
            cmds.push(Command::decode(body)?);
            rest = &rest[4 + len..];
        }
        if !rest.is_empty() {
            return Err(bad());
        }
        Ok(Batch(cmds))
    }
}

impl std::fmt::Display for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "batch of {}", self.0.len())
    }
}

/// In a Raft entry a batch is one opaque byte string (bincode frames it).
impl serde::Serialize for Batch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.to_bytes())
    }
}

impl<'de> serde::Deserialize<'de> for Batch {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Batch, D::Error> {
        d.deserialize_byte_buf(OpaqueBytes(std::marker::PhantomData))
    }
}

/// On the forward stream a command is one opaque byte string (bincode frames it).
impl serde::Serialize for Command {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.to_bytes())
    }
}

impl<'de> serde::Deserialize<'de> for Command {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Command, D::Error> {
        d.deserialize_byte_buf(OpaqueBytes(std::marker::PhantomData))
    }
}

/// What travels as one opaque byte string in bincode: decoded by its own format.
trait FromBytes: Sized {
    fn from_bytes(b: &[u8]) -> Result<Self, DecodeError>;
}

impl FromBytes for Command {
    fn from_bytes(b: &[u8]) -> Result<Self, DecodeError> {
        Command::decode(b)
    }
}

impl FromBytes for Batch {
    fn from_bytes(b: &[u8]) -> Result<Self, DecodeError> {
        Batch::decode(b)
    }
}

/// serde's visitor for a `FromBytes` value (bytes, an owned buffer, or a sequence of u8).
struct OpaqueBytes<T>(std::marker::PhantomData<T>);

impl<'de, T: FromBytes> serde::de::Visitor<'de> for OpaqueBytes<T> {
    type Value = T;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("encoded zkr commands")
    }
    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<T, E> {
        T::from_bytes(v).map_err(E::custom)
    }
    fn visit_byte_buf<E: serde::de::Error>(self, v: Vec<u8>) -> Result<T, E> {
        self.visit_bytes(&v)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        let mut v = Vec::new();
        while let Some(b) = seq.next_element::<u8>()? {
            v.push(b);
        }
        self.visit_bytes(&v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::{Acl, CreateRequest, MultiOp};

    fn round_trip(c: Command) {
        assert_eq!(Command::decode(&c.to_bytes()).unwrap(), c);
        let b = bincode::serialize(&c).unwrap();
        assert_eq!(bincode::deserialize::<Command>(&b).unwrap(), c);
    }

    #[test]
    fn round_trips_every_op() {
        let o = Origin { member: 2, seq: 77 };
        round_trip(Command {
            origin: o,
            time: 5,
            session: 9,
            op: CommandOp::CreateSession { timeout_ms: 4000, password: [7; 16] },
        });
        round_trip(Command { origin: o, time: 5, session: 9, op: CommandOp::CloseSession });
        round_trip(Command {
            origin: Origin::default(),
            time: 1,
            session: 0,
            op: CommandOp::Reap { path: "/c".into() },
        });
        let create = CreateRequest {
            path: "/a".into(),
            data: Some(bytes::Bytes::from_static(b"x")),
            acl: Acl::open_unsafe(),
            flags: 2,
            ttl: None,
        };
        round_trip(Command {
            origin: o,
            time: 5,
            session: 9,
            op: CommandOp::Request {
                ids: vec![Id::new("ip", "127.0.0.1"), Id::new("digest", "u:h")],
                ttl_enabled: true,
                enforce_quota: false,
                op: OpCode::Multi,
                body: RequestBody::Multi(vec![
                    MultiOp::Create(OpCode::Create, create.clone()),
                    MultiOp::Delete { path: "/b".into(), version: 3 },
                ]),
            },
        });
        round_trip(Command {
            origin: o,
            time: 5,
            session: 9,
            op: CommandOp::Request {
                ids: vec![],
                ttl_enabled: false,
                enforce_quota: true,
                op: OpCode::Create2,
                body: RequestBody::Create(create),
            },
        });
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for n in 0..40 {
            let _ = Command::decode(&vec![3u8; n]);
            let _ = Batch::decode(&vec![0xff; n]);
        }
        assert!(Command::decode(&[]).is_err());
        assert!(Batch::decode(&[]).is_err());
        // A count far beyond what the bytes can hold is refused before anything is allocated.
        let mut b = MANY.to_be_bytes().to_vec();
        b.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(Batch::decode(&b).is_err());
    }

    fn cmd(seq: u64, path: &str) -> Command {
        Command { origin: Origin { member: 1, seq }, time: 3, session: 4, op: CommandOp::Reap { path: path.into() } }
    }

    #[test]
    fn a_batch_of_one_is_the_format_of_one_command_so_earlier_logs_still_read() {
        let one = Batch(vec![cmd(5, "/a")]);
        assert_eq!(one.to_bytes(), cmd(5, "/a").to_bytes());
        // An entry written before batches (a bare command) reads as a batch of one.
        let old = bincode::serialize(&cmd(5, "/a")).unwrap();
        assert_eq!(bincode::deserialize::<Batch>(&old).unwrap(), one);
        for batch in [Batch(vec![cmd(1, "/a"), cmd(2, "/bb"), cmd(0, "/c")]), Batch(vec![])] {
            let b = bincode::serialize(&batch).unwrap();
            assert_eq!(bincode::deserialize::<Batch>(&b).unwrap(), batch);
        }
        // Trailing bytes after the last command are an error.
        let mut b = Batch(vec![cmd(1, "/a"), cmd(2, "/b")]).to_bytes();
        b.push(0);
        assert!(Batch::decode(&b).is_err());
    }
}
