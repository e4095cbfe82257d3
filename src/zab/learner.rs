//! One observer's connection to a ZooKeeper leader's quorum port, from OBSERVERINFO to UPTODATE
//! and on (`Observer.observeLeader`, `Learner.registerWithLeader` and `syncWithLeader` in
//! ZooKeeper; the steps are listed in `../shared/ZAB-OBSERVER.md` §5 and were checked against
//! Debian's ZooKeeper 3.8 by `tests/zab_observer.rs`).
//!
//! Blocking I/O on the caller's thread: a learner has exactly one socket, and the leader's SNAP
//! is a jute stream whose end is known only by parsing it.

use super::dial::{Conn, Dialer};
use super::packet::{kind, learner_info, ping_sessions, QuorumPacket};
use crate::import::{parse_txn, read_tree, ImportError, Jute, Stream, ZkTxn};
use crate::tree::DataTree;
use crate::txn::{SessionId, Zxid};
use bytes::Bytes;
use std::collections::VecDeque;
use std::io::{BufReader, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ZabError {
    #[error("connecting to the ZooKeeper leader at {addr}: {source}")]
    Connect { addr: SocketAddr, source: std::io::Error },
    #[error(transparent)]
    Read(#[from] ImportError),
    #[error("writing to the ZooKeeper leader: {0}")]
    Write(std::io::Error),
    #[error("the ZooKeeper leader sent {got} while this observer waited for {want}")]
    Unexpected { got: &'static str, want: &'static str },
    #[error("the ZooKeeper leader proposes epoch {leader}, below the epoch {ours} this observer accepted: not the current leader")]
    EpochBehind { leader: i64, ours: i64 },
    #[error("the ZooKeeper leader asks this observer to truncate its log to {0:#x}, which it cannot do yet: start it with an empty data directory")]
    Truncate(Zxid),
    #[error("the ZooKeeper leader committed {committed:#x} while the next proposal it sent is {pending}")]
    CommitOrder { committed: Zxid, pending: String },
    #[error("the SNAP stream ends with {0:?} instead of ZooKeeper's signature \"BenWasHere\"")]
    Signature(String),
    #[error("this observer's myid {ours} must be above every ZooKeeper voter's (server.{voter} is not): a voter hangs up on a lower id and dials it back")]
    SidTooLow { ours: i64, voter: i64 },
    #[error("no ZooKeeper leader that a majority of the voters follow: {votes}")]
    NoLeader { votes: String },
}

/// Where this observer stands before it connects.
#[derive(Debug, Clone)]
pub struct Options {
    /// This observer's `myid`: unique in the ensemble, never a ZooKeeper server's.
    pub sid: i64,
    pub leader: SocketAddr,
    /// The leader's `host:quorumPort` as its `server.N` line has it (the name its quorum TLS
    /// certificate is checked against).
    pub leader_name: String,
    /// Plain TCP, or TLS with `sslQuorum=true`.
    pub dial: Dialer,
    /// The last epoch it accepted from a leader (ZooKeeper's `acceptedEpoch` file).
    pub accepted_epoch: i64,
    /// The epoch of the last leader it synced with (ZooKeeper's `currentEpoch` file).
    pub current_epoch: i64,
    /// `tickTime * initLimit`: how long each read may take until synced.
    pub init_timeout: Duration,
    /// `tickTime * syncLimit`: how long each read may take once synced.
    pub sync_timeout: Duration,
    /// The largest buffer accepted (ZooKeeper's `jute.maxbuffer` plus its extra size).
    pub max_buffer: usize,
    /// The quorum SASL login, when the ensemble requires one (`security::quorum_sasl`).
    pub auth: Option<crate::security::quorum_sasl::Login>,
}

/// How the leader brought this observer up to date.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncMode {
    /// The txns this observer lacked (possibly none).
    Diff,
    /// A whole tree, then the txns after it.
    Snap,
}

/// What the sync brings, in the order it must be applied.
#[derive(Debug)]
pub enum Synced {
    /// SNAP: the leader's whole tree, which replaces this observer's.
    Snap(Box<DataTree>),
    /// A committed txn of the DIFF, or one committed since the sync began.
    Txn(Box<ZkTxn>),
}

/// What one packet from the leader brought once synced.
#[derive(Debug)]
pub enum Event {
    /// A committed txn, to apply in this order: `cxid` matches it to a request this observer
    /// forwarded.
    Txn(Box<ZkTxn>),
    /// The leader's ping, answered.
    Ping,
    /// The answer to a forwarded `sync` (FIFO with this observer's requests).
    Sync,
    /// The leader's answer to a REVALIDATE.
    Revalidated { session: SessionId, valid: bool },
    /// A packet an observer has no use for (a PROPOSAL or COMMIT meant for followers).
    Ignored(i32),
}

/// The learner's sending half, shared by the thread that reads the leader and whoever forwards
/// clients' requests: one packet is written whole under the lock.
#[derive(Clone)]
pub struct Sender {
    sock: std::sync::Arc<parking_lot::Mutex<Conn>>,
}

impl Sender {
    pub fn send(&self, p: &QuorumPacket) -> Result<(), ZabError> {
        let mut out = Vec::with_capacity(32 + p.data.as_ref().map_or(0, |d| d.len()));
        p.encode(&mut out);
        self.sock.lock().write_all(&out).map_err(ZabError::Write)
    }

    /// Forwards a client's request to the leader (`Learner.request`): data is the session, the
    /// request's cxid and opcode, then the client's jute request body unchanged; `auth` is the
    /// client's identities, which the leader's ACL checks use.
    pub fn forward(
        &self,
        session: SessionId,
        cxid: i32,
        opcode: i32,
        body: &[u8],
        auth: Vec<(String, String)>,
    ) -> Result<(), ZabError> {
        let mut data = Vec::with_capacity(16 + body.len());
        data.extend_from_slice(&session.to_be_bytes());
        data.extend_from_slice(&cxid.to_be_bytes());
        data.extend_from_slice(&opcode.to_be_bytes());
        data.extend_from_slice(body);
        self.send(&QuorumPacket { kind: kind::REQUEST, zxid: -1, data: Some(data.into()), auth: Some(auth) })
    }

    /// Asks the leader whether a session a client brought here is still alive, and moves it to
    /// this observer (`Learner.validateSession`); the answer comes as `Event::Revalidated`.
    pub fn revalidate(&self, session: SessionId, timeout_ms: i32) -> Result<(), ZabError> {
        let mut data = Vec::with_capacity(12);
        data.extend_from_slice(&session.to_be_bytes());
        data.extend_from_slice(&timeout_ms.to_be_bytes());
        self.send(&QuorumPacket::new(kind::REVALIDATE, -1, Some(data.into())))
    }

    /// Closes the connection: the reading thread's next `step` fails.
    pub fn shutdown(&self) {
        let _ = self.sock.lock().shutdown(std::net::Shutdown::Both);
    }

    /// Bounds each write, so a leader that stopped reading cannot hold the writer forever.
    pub fn set_write_timeout(&self, t: Duration) -> Result<(), ZabError> {
        self.sock.lock().set_write_timeout(Some(t)).map_err(ZabError::Write)
    }
}

/// The learner holds no tree: what the leader sends is handed to whoever holds it (the core, or
/// a test), in order, so a tree is never held twice.
pub struct Learner {
    reader: Stream<BufReader<Conn>>,
    writer: Sender,
    /// The leader's epoch, as agreed at LEADERINFO.
    pub epoch: i64,
    pub mode: SyncMode,
    /// NEWLEADER's data: the leader's view of the ensemble's configuration.
    pub config: String,
    /// The last zxid handed on (the one this observer reported, then each txn's).
    pub last_zxid: Zxid,
}

impl Learner {
    /// Connects, registers as an observer and syncs: returns once the leader said UPTODATE.
    /// `last_zxid` is where the holder's tree stands (0 for ZooKeeper's genesis tree,
    /// `DataTree::new()`); what the sync brings goes to `on`, in order.
    pub fn sync(opts: &Options, last_zxid: Zxid, on: &mut dyn FnMut(Synced)) -> Result<Learner, ZabError> {
        let connect = |source| ZabError::Connect { addr: opts.leader, source };
        let mut sock = opts.dial.connect(opts.leader, &opts.leader_name, opts.init_timeout).map_err(connect)?;
        sock.set_read_timeout(Some(opts.init_timeout)).map_err(connect)?;
        if let Some(creds) = &opts.auth {
            // Before anything else on the socket, as Learner.connectToLeader authenticates.
            crate::security::quorum_sasl::authenticate(&mut sock, creds, &opts.leader_name)
                .map_err(|e| ZabError::Connect { addr: opts.leader, source: std::io::Error::other(e.to_string()) })?;
        }
        let writer = Sender { sock: std::sync::Arc::new(parking_lot::Mutex::new(sock.try_clone().map_err(connect)?)) };
        let label = PathBuf::from(format!("ZooKeeper leader {}", opts.leader));
        let reader = Stream::new(BufReader::with_capacity(1 << 16, sock), label, opts.max_buffer);
        let mut l = Learner { reader, writer, epoch: 0, mode: SyncMode::Diff, config: String::new(), last_zxid };
        l.register(opts)?;
        l.sync_with_leader(on)?;
        l.reader.get_mut().get_ref().set_read_timeout(Some(opts.sync_timeout)).map_err(ZabError::Write)?;
        Ok(l)
    }

    fn send(&mut self, p: &QuorumPacket) -> Result<(), ZabError> {
        self.writer.send(p)
    }

    /// A handle to forward requests while another thread runs `step`.
    pub fn sender(&self) -> Sender {
        self.writer.clone()
    }

    fn read(&mut self) -> Result<QuorumPacket, ZabError> {
        Ok(QuorumPacket::read(&mut self.reader)?)
    }

    /// OBSERVERINFO → LEADERINFO → ACKEPOCH.
    fn register(&mut self, opts: &Options) -> Result<(), ZabError> {
        let info = QuorumPacket::new(kind::OBSERVERINFO, opts.accepted_epoch << 32, Some(learner_info(opts.sid, 0)));
        self.send(&info)?;
        let p = self.read()?;
        if p.kind != kind::LEADERINFO {
            return Err(ZabError::Unexpected { got: kind::name(p.kind), want: "LEADERINFO" });
        }
        let epoch = p.zxid >> 32;
        // Learner.registerWithLeader: a newer epoch is answered with the current one, the same
        // epoch with -1, an older one means this is not the leader.
        let reply = match epoch.cmp(&opts.accepted_epoch) {
            std::cmp::Ordering::Greater => opts.current_epoch as i32,
            std::cmp::Ordering::Equal => -1,
            std::cmp::Ordering::Less => return Err(ZabError::EpochBehind { leader: epoch, ours: opts.accepted_epoch }),
        };
        self.epoch = epoch;
        let ack = QuorumPacket::new(kind::ACKEPOCH, self.last_zxid, Some(Bytes::copy_from_slice(&reply.to_be_bytes())));
        self.send(&ack)
    }

    /// DIFF or SNAP, the txns after it, NEWLEADER (acked), UPTODATE (acked).
    fn sync_with_leader(&mut self, on: &mut dyn FnMut(Synced)) -> Result<(), ZabError> {
        let p = self.read()?;
        match p.kind {
            kind::DIFF => self.mode = SyncMode::Diff,
            kind::SNAP => {
                let mut tree = read_tree(&mut self.reader)?;
                let sig = self.reader.string("snapshot signature")?;
                if sig != "BenWasHere" {
                    return Err(ZabError::Signature(sig));
                }
                tree.set_last_zxid(p.zxid);
                tree.setup_quota();
                // Sessions that came with ZooKeeper's tree re-attach with ZooKeeper's passwords.
                tree.mark_sessions_imported();
                self.last_zxid = p.zxid;
                self.mode = SyncMode::Snap;
                on(Synced::Snap(Box::new(tree)));
            }
            kind::TRUNC => return Err(ZabError::Truncate(p.zxid)),
            other => return Err(ZabError::Unexpected { got: kind::name(other), want: "DIFF, SNAP or TRUNC" }),
        }
        // Proposals of the diff wait for their COMMIT; INFORMs are already committed.
        let mut pending: VecDeque<ZkTxn> = VecDeque::new();
        loop {
            let p = self.read()?;
            match p.kind {
                kind::PROPOSAL => pending.push_back(self.parse(&p)?),
                kind::COMMIT => match pending.pop_front() {
                    Some(t) if t.txn.zxid == p.zxid => self.hand_on(t, on),
                    other => {
                        let pending = other.map_or("none".to_owned(), |t| format!("{:#x}", t.txn.zxid));
                        return Err(ZabError::CommitOrder { committed: p.zxid, pending });
                    }
                },
                kind::INFORM => {
                    let t = self.parse(&p)?;
                    self.hand_on(t, on);
                }
                kind::INFORMANDACTIVATE | kind::COMMITANDACTIVATE => {
                    if let Some(t) = self.parse_activate(&p)? {
                        self.hand_on(t, on);
                    }
                }
                kind::NEWLEADER => {
                    self.config = String::from_utf8_lossy(p.data.as_deref().unwrap_or_default()).into_owned();
                    self.send(&QuorumPacket::new(kind::ACK, self.epoch << 32, None))?;
                }
                kind::UPTODATE => {
                    self.send(&QuorumPacket::new(kind::ACK, self.epoch << 32, None))?;
                    return Ok(());
                }
                // Learner.syncWithLeader ignores pings until synced.
                kind::PING => {}
                other => return Err(ZabError::Unexpected { got: kind::name(other), want: "the txns of the sync" }),
            }
        }
    }

    fn parse(&self, p: &QuorumPacket) -> Result<ZkTxn, ZabError> {
        Ok(parse_txn(p.data.as_deref().unwrap_or_default(), self.reader.label())?)
    }

    /// INFORMANDACTIVATE carries the designated leader's sid before the reconfig txn;
    /// COMMITANDACTIVATE (to followers) carries no txn.
    fn parse_activate(&self, p: &QuorumPacket) -> Result<Option<ZkTxn>, ZabError> {
        let data = p.data.as_deref().unwrap_or_default();
        if p.kind == kind::COMMITANDACTIVATE || data.len() < 8 {
            return Ok(None);
        }
        Ok(Some(parse_txn(&data[8..], self.reader.label())?))
    }

    /// Hands a committed txn of the sync on. A txn the SNAP already holds (it is fuzzy: the
    /// leader serialized its tree while txns went on) is handed on too, and applied again the
    /// way ZooKeeper replays it (`DataTree.processTxn` ignores NodeExists and NoNode).
    fn hand_on(&mut self, t: ZkTxn, on: &mut dyn FnMut(Synced)) {
        self.last_zxid = self.last_zxid.max(t.txn.zxid);
        on(Synced::Txn(Box::new(t)));
    }

    /// Reads and handles the leader's next packet. On a PING, `touched` gives the sessions this
    /// observer's clients used since the last one: the leader keeps them alive only through
    /// PING replies.
    pub fn step(&mut self, touched: &mut dyn FnMut() -> Vec<(SessionId, i32)>) -> Result<Event, ZabError> {
        let p = self.read()?;
        Ok(match p.kind {
            kind::INFORM => {
                let t = self.parse(&p)?;
                self.last_zxid = self.last_zxid.max(t.txn.zxid);
                Event::Txn(Box::new(t))
            }
            kind::INFORMANDACTIVATE => match self.parse_activate(&p)? {
                Some(t) => {
                    self.last_zxid = self.last_zxid.max(t.txn.zxid);
                    Event::Txn(Box::new(t))
                }
                None => Event::Ignored(p.kind),
            },
            kind::PING => {
                // Learner.ping: echo type, zxid and authinfo, with the touched sessions as data.
                let reply = QuorumPacket { data: Some(ping_sessions(&touched())), ..p };
                self.send(&reply)?;
                Event::Ping
            }
            kind::SYNC => Event::Sync,
            kind::REVALIDATE => {
                let data = p.data.as_deref().unwrap_or_default();
                let session = data.get(..8).and_then(|b| b.try_into().ok()).map_or(0, i64::from_be_bytes);
                Event::Revalidated { session, valid: data.get(8).is_some_and(|b| *b != 0) }
            }
            other => Event::Ignored(other),
        })
    }
}
