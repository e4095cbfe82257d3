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
//!          | 5 Attach timeout:i32 password:16 bytes                  (a client re-attaches its session here;
//!                                                                     logged before prep rules 3)
//!          | 6 Attach timeout:i32 password:16 bytes seen_member:u64 seen_seq:u64
//!                                                                    (the same, with the session's owner
//!                                                                     as the proposer knew it)
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
use crate::txn::{SessionId, Zxid};
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
    /// A client re-attaches its session on the proposing member. Going through the log does
    /// two things ZooKeeper's learner does by revalidating a session with its leader
    /// (Learner.validateSession): the session is judged only once this member has applied
    /// everything committed before (a member that has not yet applied the session's creation
    /// must not call it expired), and from this point of the log on the session is owned by
    /// the proposer (SessionTracker.setOwner), so writes still on their way from where the
    /// client was before are refused with SessionMoved instead of applied after its new ones.
    Attach {
        timeout_ms: i32,
        password: [u8; PASSWORD_LEN],
        /// The session's owner (member, seq) as the proposer had applied it, (0, 0) if it knew
        /// no owner: a re-attach it had not applied meanwhile makes this one stale
        /// (`SessionOwner::admits_attach`). `None` in entries of prep rules before 3.
        seen: Option<Origin>,
    },
    /// A reconfig the member the client asked has checked (`reconfig::plan`). Applied, it
    /// becomes the ensemble's pending reconfig, unless one is pending or `from_version` is no
    /// longer the configuration's version: every member decides that alike at the same log
    /// position, as ZooKeeper orders reconfigs in its leader's PrepRequestProcessor. The
    /// leader then carries it out, and a later leader finishes what a dead one left.
    ReconfigBegin {
        plan: crate::raft::plan::Plan,
    },
    /// The leader carried out (`code` 0) or gave up (a ZooKeeper error code) the pending
    /// reconfig begun at zxid `begun`: the configuration's new version and `/zookeeper/config`
    /// appear here, once, as ZooKeeper's reconfig is one proposal.
    ReconfigEnd {
        begun: Zxid,
        code: i32,
    },
    /// Chunk `index` of the ZooKeeper snapshot an AdminServer restore (`restore` id) replaces
    /// the tree with: staged with the tree on every member (`DataTree::staged_restore`) until
    /// its `RestoreEnd`, so the restore is one change in the log however large the snapshot.
    RestoreChunk {
        restore: i64,
        index: i32,
        bytes: bytes::Bytes,
    },
    /// The last record of a restore: every member parses the `chunks` staged chunks alike and,
    /// if all are there and they make a whole snapshot, makes it the tree at this record.
    RestoreEnd {
        restore: i64,
        chunks: i32,
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
            CommandOp::Attach { timeout_ms, password, seen } => {
                b.put_u8(if seen.is_some() { 6 } else { 5 });
                b.put_i32(*timeout_ms);
                b.put_slice(password);
                if let Some(o) = seen {
                    b.put_u64(o.member);
                    b.put_u64(o.seq);
                }
            }
            CommandOp::ReconfigBegin { plan } => {
                b.put_u8(7);
                b.put_buffer(Some(&plan.to_bytes()));
            }
            CommandOp::ReconfigEnd { begun, code } => {
                b.put_u8(8);
                b.put_i64(*begun);
                b.put_i32(*code);
            }
            CommandOp::RestoreChunk { restore, index, bytes } => {
                b.put_u8(9);
                b.put_i64(*restore);
                b.put_i32(*index);
                b.put_buffer(Some(bytes));
            }
            CommandOp::RestoreEnd { restore, chunks } => {
                b.put_u8(10);
                b.put_i64(*restore);
                b.put_i32(*chunks);
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
            CommandOp::Attach { .. } => 40,
            CommandOp::Reap { path } => path.len(),
            CommandOp::ReconfigBegin { .. } | CommandOp::ReconfigEnd { .. } => 512,
            CommandOp::RestoreChunk { bytes, .. } => 16 + bytes.len(),
            CommandOp::RestoreEnd { .. } => 16,
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
                    let (i, (timeout_ms, password)) = timeout_and_password(i)?;
                    (i, CommandOp::CreateSession { timeout_ms, password })
                }
                5 => {
                    let (i, (timeout_ms, password)) = timeout_and_password(i)?;
                    (i, CommandOp::Attach { timeout_ms, password, seen: None })
                }
                6 => {
                    let (i, (timeout_ms, password)) = timeout_and_password(i)?;
                    let (i, member) = jute::long(i)?;
                    let (i, seq) = jute::long(i)?;
                    let seen = Some(Origin { member: member as u64, seq: seq as u64 });
                    (i, CommandOp::Attach { timeout_ms, password, seen })
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
                7 => {
                    let (i, plan) = jute::buffer(i)?;
                    let plan =
                        crate::raft::plan::Plan::from_bytes(plan.as_deref().unwrap_or_default()).ok_or_else(bad)?;
                    (i, CommandOp::ReconfigBegin { plan })
                }
                8 => {
                    let (i, begun) = jute::long(i)?;
                    let (i, code) = jute::int(i)?;
                    (i, CommandOp::ReconfigEnd { begun, code })
                }
                9 => {
                    let (i, restore) = jute::long(i)?;
                    let (i, index) = jute::int(i)?;
                    let (i, bytes) = jute::buffer(i)?;
                    (i, CommandOp::RestoreChunk { restore, index, bytes: bytes.unwrap_or_default() })
                }
                10 => {
                    let (i, restore) = jute::long(i)?;
                    let (i, chunks) = jute::int(i)?;
                    (i, CommandOp::RestoreEnd { restore, chunks })
                }
                _ => return Err(bad()),
            };
            Ok((i, Command { origin: Origin { member: member as u64, seq: seq as u64 }, time, session, op }))
        })
    }
}

/// A session's timeout and password (createSession, attach).
fn timeout_and_password(i: &[u8]) -> jute::JResult<'_, (i32, [u8; PASSWORD_LEN])> {
    let (i, timeout_ms) = jute::int(i)?;
    let password: [u8; PASSWORD_LEN] =
        i.get(..PASSWORD_LEN).and_then(|p| p.try_into().ok()).ok_or(nom::Err::Failure(DecodeError::Truncated))?;
    Ok((&i[PASSWORD_LEN..], (timeout_ms, password)))
}

/// The commands of one log entry, applied in order, each with its own zxid, with what lets every
/// member check it prepares them as the leader did.
///
/// Encoded once, when it is made or read: an entry is cloned for every follower it is sent to
/// and for the apply, and serialized for each of those sends and for the log. Sharing the
/// commands and their bytes made those a reference count and a copy, where each was a deep copy
/// and a fresh encode (a leader spent a sixth of its CPU there).
#[derive(Debug, Clone, Default)]
pub struct Batch(std::sync::Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    cmds: Vec<Command>,
    /// The prep rules the entry was made under (`PREP_VERSION` of the leader's code).
    version: u32,
    /// The leader's tree right after an entry it had applied when it made this one.
    check: Option<AppliedCheck>,
    /// The batch as it is logged and sent.
    bytes: Vec<u8>,
}

impl PartialEq for Batch {
    fn eq(&self, other: &Batch) -> bool {
        (&self.0.cmds, self.0.version, self.0.check) == (&other.0.cmds, other.0.version, other.0.check)
    }
}

impl Eq for Batch {}

/// A member's tree digest (`DataTree::digest`) at a zxid where an entry ended. ZooKeeper 3.6+
/// logs the leader's digest in every txn and a learner compares it with its own
/// (`ZooKeeperServer.compareDigest`); ClickHouse Keeper does the same per log entry. zkr's
/// members prepare the logged requests themselves, so a member that prepares one differently
/// (a bug, a different version) would diverge silently without it. The leader cannot know
/// the digest after an entry before the entry is committed, so each entry carries the digest
/// of a recent one instead: divergence is caught a few entries after it starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppliedCheck {
    pub zxid: i64,
    pub digest: u64,
}

/// The leader's newest `AppliedCheck`, published by its core after each apply, read by the
/// submitter for every batch it makes.
pub type LatestCheck = std::sync::Arc<parking_lot::Mutex<Option<AppliedCheck>>>;

/// The prep rules of this code: a member applies entries made under versions it prepares alike
/// (`prepares_alike`) and stops on any other (a rolling upgrade must not mix two members'
/// notions of what a request does).
/// Version 2: a leader's own decisions (session expiries and reaps, seq 0) apply only in an
/// entry of the leadership that made them (`Command::decided_by_another_leader`).
/// Version 3: a re-attach names the session's owner as its proposer knew it, and is refused if
/// another re-attach moved the session since (`SessionOwner::admits_attach`).
/// Version 4: a reconfig is one pending record, begun and ended in the log (`ReconfigBegin`).
/// Version 5: an AdminServer restore is staged chunk by chunk and ended in the log (`RestoreChunk`).
pub const PREP_VERSION: u32 = 5;

/// The first version whose leaders' own decisions are checked against the entry's leader.
const OWN_DECISIONS_CHECKED: u32 = 2;

/// True if this code prepares entries of `version` exactly as their leader did: 0 marks
/// entries from before versions were logged, prepared by the same rules as version 1.
pub fn prepares_alike(version: u32) -> bool {
    version <= PREP_VERSION
}

/// Marks a batch of several commands: a command starts with its origin member's id, never this.
const MANY: u64 = u64::MAX;
/// Marks a batch with its prep version and check (the format written now).
const CHECKED: u64 = u64::MAX - 1;

/// Most commands in one batch.
pub const BATCH_MAX_COMMANDS: usize = 1024;
/// A batch stops growing at this many encoded bytes (one larger command still goes alone), so
/// `max_payload_entries` entries stay well inside a peer frame (`wire::MAX_FRAME`).
pub const BATCH_MAX_BYTES: usize = 256 * 1024;

impl Command {
    /// True for a leader's own decision (an expiry or a reap: nobody waits for it, seq 0) that
    /// reached the log through another leader, `entry_leader`, in a batch of `version`: it was
    /// made under a leadership that is over and is not applied (on every member alike). A leader
    /// paused past its sessions' timeouts, once resumed, still runs a tick as leader before it
    /// learns it was deposed and expires every session whose reports it slept through; forwarded
    /// to the new leader, those expiries closed live sessions. ZooKeeper's expiries come from the
    /// leader's SessionTracker alone and die with its epoch.
    pub fn decided_by_another_leader(&self, version: u32, entry_leader: u64) -> bool {
        version >= OWN_DECISIONS_CHECKED && self.origin.seq == 0 && self.origin.member != entry_leader
    }
}

impl Batch {
    /// A batch made by this code's leader.
    pub fn new(cmds: Vec<Command>, check: Option<AppliedCheck>) -> Batch {
        Batch::of_version(cmds, PREP_VERSION, check)
    }

    /// A batch made under prep rules `version` (tests make other versions' entries with it).
    pub fn of_version(cmds: Vec<Command>, version: u32, check: Option<AppliedCheck>) -> Batch {
        let mut bytes = Vec::with_capacity(32 + 64 * cmds.len());
        encode(&mut bytes, &cmds, version, check);
        Batch(std::sync::Arc::new(Shared { cmds, version, check, bytes }))
    }

    pub fn cmds(&self) -> &[Command] {
        &self.0.cmds
    }

    /// The commands, to apply: taken if this is the last holder, else copied.
    pub fn into_cmds(self) -> Vec<Command> {
        match std::sync::Arc::try_unwrap(self.0) {
            Ok(shared) => shared.cmds,
            Err(shared) => shared.cmds.clone(),
        }
    }

    /// The prep rules the entry was made under.
    pub fn version(&self) -> u32 {
        self.0.version
    }

    /// The leader's tree right after an entry it had applied when it made this one.
    pub fn check(&self) -> Option<AppliedCheck> {
        self.0.check
    }

    /// The batch as it is logged and sent.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0.bytes
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        self.0.bytes.clone()
    }

    pub fn decode(bytes: &[u8]) -> Result<Batch, DecodeError> {
        let (cmds, version, check) = Self::parts(bytes)?;
        Ok(Batch::read(cmds, version, check, bytes.to_vec()))
    }

    /// `decode`, keeping the buffer it was given (serde hands bincode's own) instead of a copy.
    fn decode_owned(bytes: Vec<u8>) -> Result<Batch, DecodeError> {
        let (cmds, version, check) = Self::parts(&bytes)?;
        Ok(Batch::read(cmds, version, check, bytes))
    }

    /// The commands, prep version and applied check that `bytes` hold, in whatever format.
    fn parts(bytes: &[u8]) -> Result<(Vec<Command>, u32, Option<AppliedCheck>), DecodeError> {
        let bad = || DecodeError::Malformed(nom::error::ErrorKind::Verify);
        let tag = bytes.get(..8).map(|t| u64::from_be_bytes([t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]]));
        match tag {
            Some(CHECKED) => {
                let version = bytes.get(8..12).map(|v| u32::from_be_bytes([v[0], v[1], v[2], v[3]])).ok_or_else(bad)?;
                let (check, rest) = match bytes.get(12) {
                    Some(0) => (None, &bytes[13..]),
                    Some(1) => {
                        let c = bytes.get(13..29).ok_or_else(bad)?;
                        let zxid = i64::from_be_bytes(c[..8].try_into().map_err(|_| bad())?);
                        let digest = u64::from_be_bytes(c[8..].try_into().map_err(|_| bad())?);
                        (Some(AppliedCheck { zxid, digest }), &bytes[29..])
                    }
                    _ => return Err(bad()),
                };
                let cmds = match commands(rest) {
                    Ok(cmds) => cmds,
                    // Commands of newer prep rules this code cannot read: the batch is refused
                    // for its version (`prepares_alike`) with a clear reason, not as damage.
                    Err(_) if !prepares_alike(version) => Vec::new(),
                    Err(e) => return Err(e),
                };
                Ok((cmds, version, check))
            }
            // Written before checks: a count and commands, or one bare command.
            Some(MANY) => Ok((commands(&bytes[8..])?, 0, None)),
            _ => Command::decode(bytes).map(|c| (vec![c], 0, None)),
        }
    }

    /// A batch read from `bytes`: logged and sent on as it was read, in whatever format.
    fn read(cmds: Vec<Command>, version: u32, check: Option<AppliedCheck>, bytes: Vec<u8>) -> Batch {
        Batch(std::sync::Arc::new(Shared { cmds, version, check, bytes }))
    }
}

/// The format written now: the `CHECKED` mark, the prep version, the check, the commands.
fn encode(b: &mut Vec<u8>, cmds: &[Command], version: u32, check: Option<AppliedCheck>) {
    b.put_u64(CHECKED);
    b.put_u32(version);
    match check {
        Some(c) => {
            b.put_u8(1);
            b.put_i64(c.zxid);
            b.put_u64(c.digest);
        }
        None => b.put_u8(0),
    }
    put_commands(b, cmds);
}

/// `count:u32 (len:u32 command)*count`
fn put_commands(b: &mut Vec<u8>, cmds: &[Command]) {
    b.put_u32(cmds.len() as u32);
    for c in cmds {
        let at = b.len();
        b.put_u32(0);
        c.encode(b);
        let len = (b.len() - at - 4) as u32;
        b[at..at + 4].copy_from_slice(&len.to_be_bytes());
    }
}

fn commands(bytes: &[u8]) -> Result<Vec<Command>, DecodeError> {
    let bad = || DecodeError::Malformed(nom::error::ErrorKind::Verify);
    let n = bytes.get(..4).map(|n| u32::from_be_bytes([n[0], n[1], n[2], n[3]]) as usize).ok_or_else(bad)?;
    let mut rest = &bytes[4..];
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
    Ok(cmds)
}

impl std::fmt::Display for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "batch of {}", self.0.cmds.len())
    }
}

/// In a Raft entry a batch is one opaque byte string (bincode frames it).
impl serde::Serialize for Batch {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.as_bytes())
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
    fn from_vec(b: Vec<u8>) -> Result<Self, DecodeError> {
        Self::from_bytes(&b)
    }
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
    fn from_vec(b: Vec<u8>) -> Result<Self, DecodeError> {
        Batch::decode_owned(b)
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
        T::from_vec(v).map_err(E::custom)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<T, A::Error> {
        let mut v = Vec::new();
        while let Some(b) = seq.next_element::<u8>()? {
            v.push(b);
        }
        T::from_vec(v).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
#[path = "command_tests.rs"]
mod tests;
