//! Following a ZooKeeper ensemble for as long as the server runs: find the leader through the
//! voters' election ports, sync with it, hand every committed txn up in zxid order, and when the
//! leader goes, do it again with the next one (ZooKeeper's `Observer.observeLeader` loop inside
//! `QuorumPeer.run`).
//!
//! One thread reads the leader (`Learner::step`), one writes what the core forwards (`Outbox`),
//! so a leader that stops reading never blocks the reader or the core. Nothing here holds a
//! tree: the core does, and applies what `Up` carries.

use super::election::{find_leader, Voter};
use super::learner::{Event, Learner, Options, Sender, Synced, ZabError};
use crate::import::ZkTxn;
use crate::tree::DataTree;
use crate::txn::{SessionId, Zxid};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

/// What the follower hands up to the core, in order.
#[derive(Debug)]
pub enum Up {
    /// The leader's whole tree (SNAP): it replaces the core's.
    Snap(Box<DataTree>),
    /// A committed txn to apply.
    Txn(Box<ZkTxn>),
    /// UPTODATE: clients are served from here on; requests forwarded with `generation` reach
    /// this leader.
    Synced { generation: u64, leader: i64, epoch: i64 },
    /// The answer to the oldest forwarded `sync` (FIFO).
    Sync,
    /// The leader's answer to a REVALIDATE.
    Revalidated { session: SessionId, valid: bool },
    /// The connection to the leader is gone: nothing forwarded will be answered.
    Lost(String),
}

/// What the operator views read: whether this observer is synced, with which leader, and since
/// when it has not been (what the takeover's partition check asks).
#[derive(Debug, Default)]
pub struct Status {
    synced: AtomicBool,
    leader: AtomicI64,
    epoch: AtomicI64,
    /// `session::mono_ms` when the leader was lost; 0 (the clock's start) if it never was.
    lost_at_ms: AtomicU64,
}

impl Status {
    pub fn synced(&self, leader: i64, epoch: i64) {
        self.leader.store(leader, Ordering::Release);
        self.epoch.store(epoch, Ordering::Release);
        self.synced.store(true, Ordering::Release);
    }

    pub fn lost(&self) {
        self.lost_at_ms.store(crate::session::mono_ms(), Ordering::Release);
        self.synced.store(false, Ordering::Release);
    }

    /// How long this observer has heard nothing from a ZooKeeper leader: 0 while it is synced,
    /// else since it lost the last one (the learner notices within syncLimit ticks, so this is
    /// the later bound), or since the process started if it never synced.
    pub fn silent_for(&self) -> std::time::Duration {
        if self.is_synced() {
            return std::time::Duration::ZERO;
        }
        let since = self.lost_at_ms.load(Ordering::Acquire);
        std::time::Duration::from_millis(crate::session::mono_ms().saturating_sub(since))
    }

    pub fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// The leader's `myid` and epoch of the last sync.
    pub fn leader(&self) -> (i64, i64) {
        (self.leader.load(Ordering::Acquire), self.epoch.load(Ordering::Acquire))
    }
}

/// One ZooKeeper voter, as its `server.N` line names it.
#[derive(Debug, Clone)]
pub struct VoterAddr {
    pub sid: i64,
    /// `host:quorumPort`.
    pub quorum: String,
    /// `host:electionPort`.
    pub election: String,
}

/// What the follower needs to know.
#[derive(Debug, Clone)]
pub struct Follow {
    /// This observer's `myid`.
    pub sid: i64,
    /// This observer's own election address (`host:electionPort` of its `server.N` line),
    /// sent in the election protocol's first message.
    pub my_election: String,
    pub voters: Vec<VoterAddr>,
    pub tick: Duration,
    pub init_limit: u32,
    pub sync_limit: u32,
    pub max_buffer: usize,
    /// Where the core's tree stands at start.
    pub last_zxid: Zxid,
    /// Where the epochs are kept (`acceptedEpoch` and `currentEpoch`, ZooKeeper's file names);
    /// `None`: in memory only.
    pub epochs_dir: Option<std::path::PathBuf>,
    /// The quorum SASL login, when the ensemble requires one.
    pub auth: Option<crate::security::quorum_sasl::Login>,
    /// Plain TCP, or TLS with `sslQuorum=true`.
    pub dial: super::dial::Dialer,
}

/// ZooKeeper's `acceptedEpoch` and `currentEpoch` files: the number as text. A missing file is
/// epoch 0 (a new observer); a file that does not parse is an error, as in ZooKeeper.
pub fn read_epochs(dir: &std::path::Path) -> std::io::Result<(i64, i64)> {
    let read = |name: &str| -> std::io::Result<i64> {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(t) => t.trim().parse().map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{}: not an epoch: {t:?}", dir.join(name).display()),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(e),
        }
    };
    Ok((read("acceptedEpoch")?, read("currentEpoch")?))
}

/// Writes both epoch files, each through a synced temporary file renamed over the old one.
fn write_epochs(dir: &std::path::Path, accepted: i64, current: i64) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, v) in [("acceptedEpoch", accepted), ("currentEpoch", current)] {
        let tmp = dir.join(format!("{name}.tmp"));
        let mut f = std::fs::File::create(&tmp)?;
        std::io::Write::write_all(&mut f, format!("{v}\n").as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, dir.join(name))?;
    }
    std::fs::File::open(dir)?.sync_all()
}

/// A request forwarded to the leader.
#[derive(Debug)]
pub enum Out {
    /// `Learner.request`: a client's request, or a session's create or close.
    Request { session: SessionId, cxid: i32, opcode: i32, body: Vec<u8>, auth: Vec<(String, String)> },
    /// `Learner.validateSession`.
    Revalidate { session: SessionId, timeout_ms: i32 },
}

/// The core's way to the leader. Each message names the generation (the leader connection) it
/// was meant for: one that finds another leader connected is dropped, since its waiter was
/// failed when the old connection was lost.
#[derive(Clone)]
pub struct Outbox {
    tx: SyncSender<(u64, Out)>,
}

/// How many forwarded requests may wait for the writer before the core's are refused.
const OUTBOX: usize = 16 * 1024;

impl Outbox {
    /// An outbox whose other end the caller reads (tests that play the writer).
    pub fn pair(bound: usize) -> (Outbox, Receiver<(u64, Out)>) {
        let (tx, rx) = std::sync::mpsc::sync_channel(bound);
        (Outbox { tx }, rx)
    }

    /// False if the writer is gone or too far behind: the request's fate is then known (never
    /// sent), and its connection is closed by the caller.
    pub fn send(&self, generation: u64, out: Out) -> bool {
        match self.tx.try_send((generation, out)) {
            Ok(()) => true,
            Err(TrySendError::Full(_)) => {
                tracing::warn!("the requests forwarded to the ZooKeeper leader queue up: refusing more");
                false
            }
            Err(TrySendError::Disconnected(_)) => false,
        }
    }
}

/// Sessions the core's clients used since the leader's last PING, with their timeouts.
#[derive(Clone, Default)]
pub struct Touched(Arc<Mutex<HashMap<SessionId, i32>>>);

impl Touched {
    pub fn touch(&self, sid: SessionId, timeout_ms: i32) {
        self.0.lock().insert(sid, timeout_ms);
    }

    fn take(&self) -> Vec<(SessionId, i32)> {
        self.0.lock().drain().collect()
    }
}

/// The handles the server keeps.
pub struct Following {
    pub outbox: Outbox,
    pub touched: Touched,
    stop: Arc<AtomicBool>,
    current: Arc<Mutex<Option<(u64, Sender)>>>,
}

impl Following {
    /// Stops following: the reader's socket is closed and no new one is opened.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        if let Some((_, s)) = self.current.lock().take() {
            s.shutdown();
        }
    }
}

/// Starts the reader and writer threads. `up` hands a message to the core; false means the
/// core is gone and the follower stops.
pub fn spawn(f: Follow, up: impl FnMut(Up) -> bool + Send + 'static) -> std::io::Result<Following> {
    let (tx, rx) = std::sync::mpsc::sync_channel(OUTBOX);
    let stop = Arc::new(AtomicBool::new(false));
    let current: Arc<Mutex<Option<(u64, Sender)>>> = Arc::new(Mutex::new(None));
    let touched = Touched::default();
    let w = current.clone();
    std::thread::Builder::new().name("zkr-zab-writer".into()).spawn(move || write_loop(rx, w))?;
    let (r, t, s) = (current.clone(), touched.clone(), stop.clone());
    std::thread::Builder::new().name("zkr-zab-reader".into()).spawn(move || follow_loop(f, up, r, t, s))?;
    Ok(Following { outbox: Outbox { tx }, touched, stop, current })
}

fn write_loop(rx: Receiver<(u64, Out)>, current: Arc<Mutex<Option<(u64, Sender)>>>) {
    while let Ok((generation, out)) = rx.recv() {
        let sender = match &*current.lock() {
            Some((g, s)) if *g == generation => s.clone(),
            _ => continue,
        };
        let sent = match out {
            Out::Request { session, cxid, opcode, body, auth } => sender.forward(session, cxid, opcode, &body, auth),
            Out::Revalidate { session, timeout_ms } => sender.revalidate(session, timeout_ms),
        };
        if let Err(e) = sent {
            // The reader notices the closed socket and reports the loss.
            tracing::warn!("forwarding to the ZooKeeper leader: {e}");
            sender.shutdown();
        }
    }
}

fn resolve(addr: &str) -> Option<SocketAddr> {
    addr.to_socket_addrs().ok()?.next()
}

fn follow_loop(
    f: Follow,
    mut up: impl FnMut(Up) -> bool,
    current: Arc<Mutex<Option<(u64, Sender)>>>,
    touched: Touched,
    stop: Arc<AtomicBool>,
) {
    let mut last_zxid = f.last_zxid;
    let (mut accepted_epoch, mut current_epoch) = match f.epochs_dir.as_deref().map(read_epochs) {
        Some(Ok(e)) => e,
        Some(Err(e)) => {
            tracing::warn!("cannot read the epochs this observer accepted ({e}): starting from epoch 0");
            (0, 0)
        }
        None => (0, 0),
    };
    let mut generation = 0u64;
    let init_timeout = f.tick * f.init_limit;
    let sync_timeout = f.tick * f.sync_limit;
    let retry = f.tick.clamp(Duration::from_millis(100), Duration::from_secs(1));
    let mut last_error = String::new();
    while !stop.load(Ordering::Acquire) {
        let voters: Vec<Voter> = f
            .voters
            .iter()
            .filter_map(|v| {
                resolve(&v.election).map(|election| Voter { sid: v.sid, election, name: v.election.clone() })
            })
            .collect();
        let attempt = (|| -> Result<(Learner, i64), ZabError> {
            let ask = init_timeout.min(Duration::from_secs(5));
            let found = find_leader(f.sid, &f.my_election, &voters, ask, f.auth.as_ref(), &f.dial)?;
            let voter = f.voters.iter().find(|v| v.sid == found.leader);
            let quorum = voter.and_then(|v| Some((resolve(&v.quorum)?, v.quorum.clone())));
            let Some((leader, leader_name)) = quorum else {
                return Err(ZabError::NoLeader { votes: format!("server.{} has no quorum address", found.leader) });
            };
            let opts = Options {
                sid: f.sid,
                leader,
                leader_name,
                dial: f.dial.clone(),
                accepted_epoch,
                current_epoch,
                init_timeout,
                sync_timeout,
                max_buffer: f.max_buffer,
                auth: f.auth.clone(),
            };
            let mut alive = true;
            let mut on = |s: Synced| {
                alive &= match s {
                    Synced::Snap(t) => up(Up::Snap(t)),
                    Synced::Txn(t) => up(Up::Txn(t)),
                };
            };
            let l = Learner::sync(&opts, last_zxid, &mut on)?;
            if !alive {
                stop.store(true, Ordering::Release);
            }
            Ok((l, found.leader))
        })();
        let (mut l, leader) = match attempt {
            Ok(v) => v,
            Err(ZabError::Truncate(to)) => {
                // The leader holds less than this observer applied (only a leader that lost
                // committed txns could ask it). Nothing is kept on disk to roll back to: start
                // over from ZooKeeper's genesis tree, which the next sync fills (SNAP or DIFF).
                tracing::warn!(
                    to = format_args!("{to:#x}"),
                    "the ZooKeeper leader asks for a truncation: syncing again from nothing"
                );
                if !up(Up::Snap(Box::default())) {
                    break;
                }
                last_zxid = 0;
                continue;
            }
            Err(e) => {
                let msg = e.to_string();
                if msg != last_error {
                    tracing::warn!("cannot follow the ZooKeeper ensemble yet: {msg}");
                    last_error = msg;
                }
                std::thread::sleep(retry);
                continue;
            }
        };
        last_error.clear();
        last_zxid = l.last_zxid;
        if (accepted_epoch, current_epoch) != (l.epoch, l.epoch) {
            accepted_epoch = l.epoch;
            current_epoch = l.epoch;
            if let Some(Err(e)) = f.epochs_dir.as_deref().map(|d| write_epochs(d, l.epoch, l.epoch)) {
                tracing::warn!("cannot keep the epoch this observer accepted: {e}");
            }
        }
        generation += 1;
        let sender = l.sender();
        let _ = sender.set_write_timeout(sync_timeout);
        *current.lock() = Some((generation, sender));
        tracing::info!(
            leader,
            epoch = l.epoch,
            mode = ?l.mode,
            zxid = format_args!("{last_zxid:#x}"),
            "synced with the ZooKeeper leader: observing"
        );
        if stop.load(Ordering::Acquire) || !up(Up::Synced { generation, leader, epoch: l.epoch }) {
            break;
        }
        let why = loop {
            let ev = l.step(&mut || touched.take());
            let msg = match ev {
                Ok(Event::Txn(t)) => Up::Txn(t),
                Ok(Event::Sync) => Up::Sync,
                Ok(Event::Revalidated { session, valid }) => Up::Revalidated { session, valid },
                Ok(Event::Ping | Event::Ignored(_)) => continue,
                Err(e) => break e.to_string(),
            };
            if !up(msg) {
                stop.store(true, Ordering::Release);
                break "the server is stopping".to_owned();
            }
        };
        last_zxid = l.last_zxid;
        if let Some((_, s)) = current.lock().take() {
            s.shutdown();
        }
        if stop.load(Ordering::Acquire) {
            break;
        }
        tracing::warn!(leader, "lost the ZooKeeper leader: {why}");
        if !up(Up::Lost(why)) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    //! A scripted ZooKeeper (one voter's election port and its leader's quorum port, as
    //! ZooKeeper's `Zab1_0Test.testNormalObserverRun` drives an observer) against the follower:
    //! deterministic, no ZooKeeper needed.

    use super::*;
    use crate::import::Stream;
    use crate::txn::TxnOp;
    use crate::zab::election::LEADING;
    use crate::zab::packet::{kind, QuorumPacket};
    use std::io::{BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::mpsc::{channel, Receiver};

    /// `TxnHeader` then the record.
    fn txn(session: i64, cxid: i32, zxid: i64, ty: i32, record: &[u8]) -> Bytes {
        let mut b = Vec::new();
        b.extend_from_slice(&session.to_be_bytes());
        b.extend_from_slice(&cxid.to_be_bytes());
        b.extend_from_slice(&zxid.to_be_bytes());
        b.extend_from_slice(&1_700_000_000_000i64.to_be_bytes());
        b.extend_from_slice(&ty.to_be_bytes());
        b.extend_from_slice(record);
        b.into()
    }

    /// `CreateTxn{path, data, acl (world:anyone ALL), ephemeral false, parentCVersion}`.
    fn create_record(path: &str, parent_cversion: i32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&(path.len() as i32).to_be_bytes());
        b.extend_from_slice(path.as_bytes());
        b.extend_from_slice(&1i32.to_be_bytes());
        b.push(b'x');
        b.extend_from_slice(&1i32.to_be_bytes());
        b.extend_from_slice(&31i32.to_be_bytes());
        for s in ["world", "anyone"] {
            b.extend_from_slice(&(s.len() as i32).to_be_bytes());
            b.extend_from_slice(s.as_bytes());
        }
        b.push(0);
        b.extend_from_slice(&parent_cversion.to_be_bytes());
        b
    }

    use bytes::Bytes;

    struct Leader {
        out: TcpStream,
        input: Stream<BufReader<TcpStream>>,
    }

    impl Leader {
        fn accept(l: &TcpListener) -> Leader {
            let (s, _) = l.accept().unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let input = Stream::new(BufReader::new(s.try_clone().unwrap()), "fake leader".into(), 1 << 20);
            Leader { out: s, input }
        }

        fn send(&mut self, kind: i32, zxid: i64, data: Option<Bytes>) {
            let mut b = Vec::new();
            QuorumPacket::new(kind, zxid, data).encode(&mut b);
            self.out.write_all(&b).unwrap();
        }

        fn read(&mut self) -> QuorumPacket {
            QuorumPacket::read(&mut self.input).unwrap()
        }

        /// OBSERVERINFO → LEADERINFO(epoch) → ACKEPOCH: returns the observer's accepted epoch and
        /// the zxid it reports.
        fn register(&mut self, epoch: i64) -> (i64, i64) {
            let info = self.read();
            assert_eq!(info.kind, kind::OBSERVERINFO);
            self.send(kind::LEADERINFO, epoch << 32, Some(Bytes::from_static(&[0, 1, 0, 0])));
            let ack = self.read();
            assert_eq!(ack.kind, kind::ACKEPOCH);
            (info.zxid >> 32, ack.zxid)
        }

        /// NEWLEADER (acked) and UPTODATE (acked).
        fn up_to_date(&mut self, epoch: i64) {
            self.send(kind::NEWLEADER, epoch << 32, Some(Bytes::from_static(b"server.1=x")));
            assert_eq!(self.read().kind, kind::ACK);
            self.send(kind::UPTODATE, -1, None);
            assert_eq!(self.read().kind, kind::ACK);
        }
    }

    /// One voter's election port, answering every observer that asks: "I lead, epoch `epoch`".
    fn voter(l: TcpListener, epoch: i64) {
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { return };
                let mut first = [0u8; 64];
                let _ = s.read(&mut first);
                let mut n = Vec::new();
                n.extend_from_slice(&40i32.to_be_bytes());
                n.extend_from_slice(&LEADING.to_be_bytes());
                n.extend_from_slice(&1i64.to_be_bytes());
                n.extend_from_slice(&(epoch << 32).to_be_bytes());
                n.extend_from_slice(&1i64.to_be_bytes());
                n.extend_from_slice(&epoch.to_be_bytes());
                n.extend_from_slice(&0i32.to_be_bytes());
                let _ = s.write_all(&n);
            }
        });
    }

    fn next(rx: &Receiver<Up>) -> Up {
        rx.recv_timeout(Duration::from_secs(10)).expect("the follower hands something up")
    }

    #[test]
    fn the_follower_syncs_forwards_pings_and_starts_over_after_a_truncation() {
        let election = TcpListener::bind("127.0.0.1:0").unwrap();
        let quorum = TcpListener::bind("127.0.0.1:0").unwrap();
        let (e_addr, q_addr) = (election.local_addr().unwrap(), quorum.local_addr().unwrap());
        voter(election, 1);
        let f = Follow {
            sid: 9,
            my_election: "127.0.0.1:1".into(),
            voters: vec![VoterAddr { sid: 1, quorum: q_addr.to_string(), election: e_addr.to_string() }],
            tick: Duration::from_millis(100),
            init_limit: 50,
            sync_limit: 50,
            max_buffer: 1 << 20,
            last_zxid: 0,
            epochs_dir: None,
            auth: None,
            dial: crate::zab::dial::Dialer::plain(),
        };
        let (tx, rx) = channel();
        let following = spawn(f, move |up| tx.send(up).is_ok()).unwrap();

        // A DIFF from the genesis tree: a session's create waits for its COMMIT.
        let mut l = Leader::accept(&quorum);
        assert_eq!(l.register(1), (0, 0), "a new observer: accepted epoch 0, zxid 0");
        let sid = 9i64 << 56 | 1;
        l.send(kind::DIFF, 0x1_0000_0001, None);
        l.send(kind::PROPOSAL, 0x1_0000_0001, Some(txn(sid, 0, 0x1_0000_0001, -10, &3000i32.to_be_bytes())));
        l.send(kind::COMMIT, 0x1_0000_0001, None);
        l.up_to_date(1);
        let Up::Txn(t) = next(&rx) else { panic!("the committed createSession first") };
        assert_eq!((t.txn.session, t.cxid, t.txn.zxid), (sid, 0, 0x1_0000_0001));
        assert!(matches!(t.txn.op, TxnOp::CreateSession { timeout_ms: 3000, .. }));
        let Up::Synced { generation: 1, leader: 1, epoch: 1 } = next(&rx) else { panic!("then synced") };

        // Following: an INFORM; a PING answered with the sessions the core touched.
        l.send(kind::INFORM, 0x1_0000_0002, Some(txn(sid, 1, 0x1_0000_0002, 1, &create_record("/a", 1))));
        let Up::Txn(t) = next(&rx) else { panic!("the INFORM") };
        assert!(matches!(&t.txn.op, TxnOp::Create { path, .. } if path == "/a"));
        following.touched.touch(sid, 3000);
        l.send(kind::PING, 0x1_0000_0002, None);
        let ping = l.read();
        assert_eq!(ping.kind, kind::PING);
        let mut want = sid.to_be_bytes().to_vec();
        want.extend_from_slice(&3000i32.to_be_bytes());
        assert_eq!(ping.data.as_deref(), Some(&want[..]), "the touched session rides on the PING reply");

        // A forwarded request reaches the leader as REQUEST(session, cxid, type, body); one
        // meant for an earlier connection does not.
        assert!(following
            .outbox
            .send(0, Out::Request { session: sid, cxid: 7, opcode: 5, body: vec![1], auth: vec![] }));
        assert!(following.outbox.send(1, Out::Revalidate { session: sid, timeout_ms: 3000 }));
        let rv = l.read();
        assert_eq!(rv.kind, kind::REVALIDATE, "the stale request was dropped, not sent");
        assert!(following
            .outbox
            .send(1, Out::Request { session: sid, cxid: 7, opcode: 5, body: vec![1], auth: vec![] }));
        let rq = l.read();
        assert_eq!(rq.kind, kind::REQUEST);
        assert_eq!(rq.data.as_deref().map(|d| d.len()), Some(17));
        l.send(kind::SYNC, 0, None);
        assert!(matches!(next(&rx), Up::Sync));

        // The leader goes; the next one asks for a truncation below what the observer applied:
        // it starts over from the genesis tree and syncs again from zxid 0.
        drop(l);
        assert!(matches!(next(&rx), Up::Lost(_)));
        let mut l = Leader::accept(&quorum);
        assert_eq!(l.register(2), (1, 0x1_0000_0002), "it reports epoch 1 and what it applied");
        l.send(kind::TRUNC, 0x1_0000_0001, None);
        let Up::Snap(t) = next(&rx) else { panic!("a genesis tree") };
        assert_eq!(t.last_zxid(), 0);
        let mut l = Leader::accept(&quorum);
        assert_eq!(l.register(2).1, 0, "after the truncation it reports zxid 0");
        l.send(kind::DIFF, 0, None);
        l.up_to_date(2);
        let Up::Synced { generation: 2, epoch: 2, .. } = next(&rx) else { panic!("synced with the second leader") };
        following.stop();
    }
}
