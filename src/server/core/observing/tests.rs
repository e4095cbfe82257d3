//! An observer's core driven by hand: the test plays the ZooKeeper leader (it reads what the
//! core forwards and hands up the txns, syncs and revalidations), so the matching of answers to
//! requests and the order of a connection's replies are exact and replayable.

use super::*;
use crate::proto::{Acl, CreateRequest};
use crate::server::stats::ServerStats;
use crate::server::view::Views;
use crate::zab::follow::Outbox;
use std::sync::atomic::{AtomicI64, AtomicU64};
use std::sync::mpsc::Receiver;
use tokio_util::sync::CancellationToken;

const ME: i64 = 9;

struct Observer {
    core: Core,
    forwarded: Receiver<(u64, Out)>,
    zxid: Zxid,
}

struct Client {
    id: ConnId,
    rx: crate::server::outchan::Receiver<Outbound>,
    _cancel: CancellationToken,
}

fn observer() -> Observer {
    let cfg = Arc::new(Config { tick_time_ms: 100, server_id: ME as u8, exit_on_fatal: false, ..Config::default() });
    let (outbox, forwarded) = Outbox::pair(64);
    let tree = DataTree::new();
    let o = Observing::new(outbox, Touched::default(), Arc::new(Status::default()), &tree);
    let core = Core::new(
        cfg,
        tree,
        [0; 32],
        Log::Observer(Box::new(o)),
        Arc::new(AtomicI64::new(0)),
        Arc::new(ServerStats::default()),
        Arc::new(Views::new(0)),
    );
    Observer { core, forwarded, zxid: 0x1_0000_0000 }
}

impl Observer {
    fn up(&mut self, up: Up) {
        self.core.handle(CoreMsg::Zab(up));
        self.core.end_turn();
    }

    fn synced(&mut self, generation: u64) {
        self.up(Up::Synced { generation, leader: 1, epoch: 1 });
    }

    /// The leader commits a txn of `session` answering its request `cxid`.
    fn commit(&mut self, session: SessionId, cxid: i32, op: TxnOp) {
        self.zxid += 1;
        let txn = Txn { zxid: self.zxid, time: 1, session, op };
        self.up(Up::Txn(Box::new(ZkTxn { txn, cxid, digest: None })));
    }

    fn connect(&mut self, id: ConnId, session_id: i64, password: Vec<u8>) -> Client {
        let (tx, rx) = crate::server::outchan::channel(64);
        let cancel = CancellationToken::new();
        let handle = ConnHandle {
            id,
            tx,
            cancel: cancel.clone(),
            peer: "127.0.0.1".parse().unwrap(),
            tls_ids: Vec::new(),
            last_heard: Arc::new(AtomicU64::new(0)),
            queued: crate::server::outqueue::QueuedBytes::new(1 << 20),
            gate: Default::default(),
        };
        let req = ConnectRequest {
            protocol_version: 0,
            last_zxid_seen: 0,
            timeout_ms: 6000,
            session_id,
            password,
            read_only: Some(false),
        };
        self.core.handle(CoreMsg::Connect { conn: handle, req });
        self.core.end_turn();
        Client { id, rx, _cancel: cancel }
    }

    fn request(&mut self, c: &Client, xid: i32, op: OpCode, body: RequestBody) {
        self.core.handle(CoreMsg::Request { conn: c.id, req: Request { xid, op, body } });
        self.core.end_turn();
    }

    fn forwarded(&mut self) -> Vec<(u64, Out)> {
        self.forwarded.try_iter().collect()
    }

    /// A new session through the leader: its id, as the observer made it.
    fn session(&mut self, id: ConnId) -> (Client, SessionId) {
        let mut c = self.connect(id, 0, vec![0; 16]);
        let f = self.forwarded();
        let [(1, Out::Request { session, cxid: 0, opcode: -10, body, .. })] = f.as_slice() else {
            panic!("a createSession forwarded: {f:?}")
        };
        assert_eq!(body, &6000i32.to_be_bytes().to_vec(), "the body is the timeout");
        let sid = *session;
        assert!(c.rx.try_recv().is_err(), "no answer before the leader's txn");
        self.commit(sid, 0, TxnOp::CreateSession { timeout_ms: 6000, password: None });
        match c.rx.try_recv() {
            Ok(Outbound::Connected(r)) => {
                assert_eq!(r.session_id, sid);
                assert_eq!(r.password, crate::session::zookeeper_password(sid).to_vec(), "ZooKeeper's password");
            }
            other => panic!("connected, got {other:?}"),
        }
        (c, sid)
    }
}

fn create(path: &str) -> RequestBody {
    RequestBody::Create(CreateRequest {
        path: path.into(),
        data: Some("d".into()),
        acl: Acl::open_unsafe(),
        flags: 0,
        ttl: None,
    })
}

fn create_txn(path: &str) -> TxnOp {
    TxnOp::Create {
        path: path.into(),
        data: Some("d".into()),
        acl: Acl::open_unsafe().into(),
        ephemeral_owner: 0,
        parent_cversion: 1,
    }
}

fn replies(c: &mut Client) -> Vec<(i32, i32)> {
    let mut out = Vec::new();
    while let Ok(m) = c.rx.try_recv() {
        match m {
            Outbound::Reply(h, _) => out.push((h.xid, h.err)),
            Outbound::Close => out.push((0, i32::MIN)),
            _ => {}
        }
    }
    out
}

#[test]
fn nothing_is_served_before_the_first_sync() {
    let mut o = observer();
    let mut c = o.connect(1, 0, vec![0; 16]);
    assert!(matches!(c.rx.try_recv(), Ok(Outbound::Close)), "refused while not synced");
    assert!(o.forwarded().is_empty());
}

#[test]
fn writes_are_answered_from_their_txns_and_reads_wait_behind_them() {
    let mut o = observer();
    o.synced(1);
    let (mut c, sid) = o.session(1);
    assert_eq!(sid >> 56, ME, "ZooKeeper's session id: myid in the top byte");
    o.request(&c, 1, OpCode::Create, create("/a"));
    o.request(&c, 2, OpCode::GetData, RequestBody::PathWatch { path: "/a".into(), watch: false });
    let f = o.forwarded();
    assert!(matches!(f.as_slice(), [(1, Out::Request { cxid: 1, opcode: 1, .. })]), "{f:?}");
    assert!(replies(&mut c).is_empty(), "the read waits behind the write");
    // Another session's txn with the same cxid answers nothing here.
    o.commit(sid + 1, 1, create_txn("/other"));
    assert!(replies(&mut c).is_empty());
    o.commit(sid, 1, create_txn("/a"));
    assert_eq!(replies(&mut c), vec![(1, 0), (2, 0)], "the write, then the read that waited");
    // The leader's error txn is the client's error.
    o.request(&c, 3, OpCode::Create, create("/a"));
    o.forwarded();
    o.commit(sid, 3, TxnOp::Error(ErrorCode::NodeExists));
    assert_eq!(replies(&mut c), vec![(3, ErrorCode::NodeExists.code())]);
    // sync: answered by the leader's SYNC, in order.
    o.request(&c, 4, OpCode::Sync, RequestBody::Path { path: "/a".into() });
    assert!(matches!(o.forwarded().as_slice(), [(1, Out::Request { cxid: 4, opcode: 9, .. })]));
    o.up(Up::Sync);
    assert_eq!(replies(&mut c), vec![(4, 0)]);
    // The leader expires the session (cxid 0, no request of ours): its connection goes.
    o.commit(sid, 0, TxnOp::CloseSession);
    assert!(c._cancel.is_cancelled(), "the expired session's connection is closed at once");
}

#[test]
fn a_lost_leader_closes_connections_and_requests_wait_for_the_next() {
    let mut o = observer();
    o.synced(1);
    let (mut c, sid) = o.session(1);
    o.request(&c, 1, OpCode::Create, create("/a"));
    assert_eq!(o.forwarded().len(), 1);
    o.up(Up::Lost("gone".into()));
    assert_eq!(replies(&mut c), vec![(0, i32::MIN)], "closed without an answer: ConnectionLoss");
    // The txn of the request whose answer was given up comes after all: applied, answering
    // nobody.
    o.commit(sid, 1, create_txn("/a"));
    assert!(o.core.tree.get("/a").is_some());
    // Until the next sync, nothing is forwarded; then the session comes back, revalidated.
    let mut again = o.connect(2, sid, crate::session::zookeeper_password(sid).to_vec());
    assert!(matches!(again.rx.try_recv(), Ok(Outbound::Close)));
    o.synced(2);
    let mut back = o.connect(3, sid, crate::session::zookeeper_password(sid).to_vec());
    let f = o.forwarded();
    assert!(matches!(f.as_slice(), [(2, Out::Revalidate { session, timeout_ms: 6000 })] if *session == sid), "{f:?}");
    o.up(Up::Revalidated { session: sid, valid: true });
    assert!(matches!(back.rx.try_recv(), Ok(Outbound::Connected(r)) if r.session_id == sid && r.timeout_ms == 6000));
}

#[test]
fn a_session_brought_from_elsewhere_is_checked_here_then_by_the_leader() {
    let mut o = observer();
    o.synced(1);
    let other = (1i64 << 56) | 7;
    let mut wrong = o.connect(1, other, vec![1; 16]);
    assert!(matches!(wrong.rx.try_recv(), Ok(Outbound::Connected(r)) if r.timeout_ms == 0), "wrong password: expired");
    assert!(o.forwarded().is_empty(), "the leader is not asked");
    let mut dead = o.connect(2, other, crate::session::zookeeper_password(other).to_vec());
    assert!(matches!(o.forwarded().as_slice(), [(1, Out::Revalidate { .. })]));
    o.up(Up::Revalidated { session: other, valid: false });
    assert!(matches!(dead.rx.try_recv(), Ok(Outbound::Connected(r)) if r.timeout_ms == 0), "the leader says expired");
    let mut live = o.connect(3, other, crate::session::zookeeper_password(other).to_vec());
    o.forwarded();
    o.up(Up::Revalidated { session: other, valid: true });
    assert!(matches!(live.rx.try_recv(), Ok(Outbound::Connected(r)) if r.session_id == other));
    // Its writes go to the leader under its id.
    o.request(&live, 1, OpCode::Delete, RequestBody::Delete { path: "/x".into(), version: -1 });
    assert!(
        matches!(o.forwarded().as_slice(), [(1, Out::Request { session, cxid: 1, opcode: 2, .. })] if *session == other)
    );
}
