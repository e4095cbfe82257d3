//! The task behind a `conn::Client`: dials and handshakes, sends requests in order and matches
//! replies by xid (FIFO), pings at a third of the negotiated timeout, turns notifications
//! (xid -1) and state changes into events, and reconnects with the same session (auth and
//! watches re-sent) until the session is closed or expires.
//!
//! Owns: the socket, the xid counter, the session id/password, the local watch table.
//! Must not: print (events go to the `EventSink`), block, or panic on bytes from the server
//! (a bad frame ends only that connection).

use super::call::{Call, ConnectConfig, EventSink, Reply, States, JUTE_MAXBUFFER};
use super::watches::WatchTable;
use crate::codec::{write_frame, FrameCodec, FrameError};
use crate::proto::{
    jute, xid, ConnectRequest, ConnectResponse, DecodeError, ErrorCode, OpCode, ReplyHeader, Request, RequestBody,
    Response, SetWatches, WatcherEvent, PASSWORD_LEN, STATE_SYNC_CONNECTED,
};
use bytes::BytesMut;
use futures::StreamExt;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

/// Keeper states carried by the events this task makes (`Watcher.Event.KeeperState`).
const STATE_DISCONNECTED: i32 = 0;
const STATE_AUTH_FAILED: i32 = 4;
const STATE_CONNECTED_READ_ONLY: i32 = 5;
const STATE_CLOSED: i32 = 7;
const STATE_EXPIRED: i32 = -112;
const EVENT_NONE: i32 = -1;

/// Why a connection was given up (logged nowhere; it only decides what happens next).
#[derive(Debug, thiserror::Error)]
enum ConnError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("framing: {0}")]
    Frame(#[from] FrameError),
    #[error("undecodable reply: {0}")]
    Decode(#[from] DecodeError),
    #[error("timed out")]
    Timeout,
    #[error("server closed the connection")]
    Eof,
    #[error("reply xid {got} does not match the oldest request {expected:?}")]
    XidOutOfOrder { got: i32, expected: Option<i32> },
}

/// What a `Client` asks of its task.
pub(super) enum Msg {
    Call(Call, oneshot::Sender<Reply>),
    Auth(String, Option<Vec<u8>>),
    Close(oneshot::Sender<()>),
}

struct Pending {
    call: Call,
    reply: oneshot::Sender<Reply>,
}

struct InFlight {
    xid: i32,
    pending: Pending,
}

/// How a connected period ended.
enum Ended {
    Lost,
    Closed(Option<oneshot::Sender<()>>),
    AuthFailed,
}

/// An established, handshaken connection.
struct Link {
    frames: FramedRead<OwnedReadHalf, FrameCodec>,
    wr: OwnedWriteHalf,
    resp: ConnectResponse,
}

pub(super) struct Task {
    cfg: ConnectConfig,
    rx: mpsc::Receiver<Msg>,
    state: Arc<Mutex<States>>,
    sink: EventSink,
    attempted: watch::Sender<bool>,
    session_id: i64,
    password: Vec<u8>,
    last_zxid: i64,
    auth: Vec<(String, Option<Vec<u8>>)>,
    watches: WatchTable,
    /// Calls accepted while no connection is up.
    queued: VecDeque<Pending>,
    /// The last state delivered (`EventThread.sessionState`): repeated state events are dropped.
    keeper_state: Option<i32>,
    next_xid: i32,
    host: usize,
}

impl Task {
    pub(super) fn new(
        cfg: ConnectConfig,
        rx: mpsc::Receiver<Msg>,
        state: Arc<Mutex<States>>,
        sink: EventSink,
        attempted: watch::Sender<bool>,
    ) -> Task {
        Task {
            cfg,
            rx,
            state,
            sink,
            attempted,
            session_id: 0,
            password: vec![0; PASSWORD_LEN],
            last_zxid: 0,
            auth: Vec::new(),
            watches: WatchTable::default(),
            queued: VecDeque::new(),
            // EventThread starts out Disconnected, so a failed first attempt prints nothing.
            keeper_state: Some(STATE_DISCONNECTED),
            next_xid: 1,
            host: 0,
        }
    }
}

/// Dials `addr` and performs the handshake, all within `limit`.
async fn dial(addr: String, req: ConnectRequest, limit: Duration) -> Result<Link, ConnError> {
    let handshake = async {
        let stream = TcpStream::connect(addr.as_str()).await?;
        stream.set_nodelay(true)?;
        let (rd, mut wr) = stream.into_split();
        let mut out = BytesMut::new();
        write_frame(&mut out, |b| req.write(b));
        wr.write_all(&out).await?;
        let mut frames = FramedRead::new(rd, FrameCodec::new(JUTE_MAXBUFFER));
        let frame = frames.next().await.ok_or(ConnError::Eof)??;
        let resp = ConnectResponse::parse(&frame)?;
        Ok::<Link, ConnError>(Link { frames, wr, resp })
    };
    tokio::time::timeout(limit, handshake).await.map_err(|_| ConnError::Timeout)?
}

fn encode(req: &Request) -> BytesMut {
    let mut out = BytesMut::new();
    write_frame(&mut out, |b| req.write(b));
    out
}

impl Task {
    fn set_state(&self, s: States) {
        *self.state.lock() = s;
    }

    /// `EventThread.queueEvent`: state events equal to the current state are dropped; every
    /// event that passes becomes the current state; the printer sees it if `fire`.
    fn event(&mut self, state: i32, event_type: i32, path: Option<&str>, fire: bool) {
        if event_type == EVENT_NONE && self.keeper_state == Some(state) {
            return;
        }
        self.keeper_state = Some(state);
        if fire {
            (self.sink)(state, event_type, path);
        }
    }

    fn state_event(&mut self, state: i32) {
        self.event(state, EVENT_NONE, None, true);
    }

    fn xid(&mut self) -> i32 {
        let x = self.next_xid;
        self.next_xid = if x == i32::MAX { 1 } else { x + 1 };
        x
    }

    /// `finishPacket`: register or remove watches according to the outcome, then answer.
    fn finish(&mut self, p: Pending, mut err: i32, body: Response) {
        self.watches.register(&p.call.watch, err);
        if let Some(d) = &p.call.unwatch {
            match self.watches.deregister(d, err) {
                Ok(events) => {
                    let lost = err == ErrorCode::ConnectionLoss.code() || err == ErrorCode::SessionExpired.code();
                    let state = if lost { STATE_DISCONNECTED } else { STATE_SYNC_CONNECTED };
                    for e in events {
                        self.event(state, e as i32, Some(&d.path), true);
                    }
                    err = ErrorCode::Ok.code();
                }
                Err(code) => err = code,
            }
        }
        let _ = p.reply.send(Reply { err, body });
    }

    fn fail_queued(&mut self, err: i32) {
        while let Some(p) = self.queued.pop_front() {
            self.finish(p, err, Response::Empty);
        }
    }

    /// Handles a message while no connection is up; returns a close request.
    fn accept_offline(&mut self, msg: Msg) -> Option<oneshot::Sender<()>> {
        match msg {
            Msg::Call(call, reply) => self.queued.push_back(Pending { call, reply }),
            Msg::Auth(scheme, auth) => self.auth.push((scheme, auth)),
            Msg::Close(done) => return Some(done),
        }
        None
    }

    fn finish_closed(&mut self, done: Option<oneshot::Sender<()>>) {
        self.set_state(States::Closed);
        self.fail_queued(ErrorCode::ConnectionLoss.code());
        self.state_event(STATE_CLOSED);
        if let Some(done) = done {
            let _ = done.send(());
        }
    }

    pub(super) async fn run(mut self, lazy: bool) {
        if lazy {
            match self.rx.recv().await {
                Some(msg) => {
                    if let Some(done) = self.accept_offline(msg) {
                        return self.finish_closed(Some(done));
                    }
                }
                None => return,
            }
        }
        let mut first = true;
        loop {
            if !first {
                // Like the Java client: a random pause of up to a second between attempts.
                let pause = Duration::from_millis(rand::random::<u64>() % 1000);
                let until = Instant::now() + pause;
                loop {
                    tokio::select! {
                        _ = tokio::time::sleep_until(until) => break,
                        msg = self.rx.recv() => match msg {
                            Some(msg) => if let Some(done) = self.accept_offline(msg) {
                                return self.finish_closed(Some(done));
                            },
                            None => return self.finish_closed(None),
                        },
                    }
                }
            }
            first = false;
            let Some(addr) = self.cfg.hosts.get(self.host % self.cfg.hosts.len().max(1)).cloned() else {
                return self.finish_closed(None);
            };
            self.host = self.host.wrapping_add(1);
            let req = ConnectRequest {
                protocol_version: 0,
                last_zxid_seen: self.last_zxid,
                timeout_ms: self.cfg.session_timeout_ms,
                session_id: self.session_id,
                password: self.password.clone(),
                read_only: Some(self.cfg.read_only),
            };
            let hosts = self.cfg.hosts.len().max(1) as u64;
            let limit = Duration::from_millis((self.cfg.session_timeout_ms.max(1000) as u64) / hosts);
            let attempt = dial(addr, req, limit);
            tokio::pin!(attempt);
            let outcome = loop {
                tokio::select! {
                    r = &mut attempt => break r,
                    msg = self.rx.recv() => match msg {
                        Some(msg) => if let Some(done) = self.accept_offline(msg) {
                            return self.finish_closed(Some(done));
                        },
                        None => return self.finish_closed(None),
                    },
                }
            };
            // The shell waits for `attempted` before its first prompt: set it once the state
            // and the event of this attempt are out.
            let link = match outcome {
                Ok(link) => link,
                Err(_) => {
                    self.fail_queued(ErrorCode::ConnectionLoss.code());
                    self.state_event(STATE_DISCONNECTED);
                    self.attempted.send_replace(true);
                    continue;
                }
            };
            if link.resp.timeout_ms <= 0 {
                // The server no longer knows the session.
                self.set_state(States::Closed);
                self.state_event(STATE_EXPIRED);
                self.fail_queued(ErrorCode::SessionExpired.code());
                self.attempted.send_replace(true);
                return;
            }
            self.session_id = link.resp.session_id;
            self.password = link.resp.password.clone();
            let read_only = link.resp.read_only == Some(true);
            self.set_state(if read_only { States::ConnectedReadOnly } else { States::Connected });
            self.state_event(if read_only { STATE_CONNECTED_READ_ONLY } else { STATE_SYNC_CONNECTED });
            self.attempted.send_replace(true);
            match self.serve(link).await {
                Ended::Lost => {
                    self.set_state(States::Connecting);
                    self.state_event(STATE_DISCONNECTED);
                }
                Ended::Closed(done) => return self.finish_closed(done),
                Ended::AuthFailed => {
                    self.set_state(States::AuthFailed);
                    self.state_event(STATE_AUTH_FAILED);
                    self.fail_queued(ErrorCode::AuthFailed.code());
                    return;
                }
            }
        }
    }

    /// The first frames of a connection: auth, then the watches to re-arm, then queued calls.
    fn prime(&mut self, out: &mut BytesMut, inflight: &mut VecDeque<InFlight>) {
        for (scheme, auth) in &self.auth {
            let body = RequestBody::Auth { auth_type: 0, scheme: scheme.clone(), auth: auth.clone().map(Into::into) };
            write_frame(out, |b| Request { xid: xid::AUTH, op: OpCode::Auth, body }.write(b));
        }
        if !self.watches.is_empty() {
            let to_server = |set: &std::collections::BTreeSet<String>| -> Vec<String> {
                set.iter().map(|p| self.cfg.chroot.to_server(p)).collect()
            };
            let w = &self.watches;
            let sw = SetWatches {
                relative_zxid: self.last_zxid,
                data: to_server(&w.data),
                exist: to_server(&w.exist),
                child: to_server(&w.child),
                persistent: to_server(&w.persistent),
                persistent_recursive: to_server(&w.persistent_recursive),
            };
            // Like the Java client, the old record when there is nothing persistent to re-arm.
            let op = if sw.persistent.is_empty() && sw.persistent_recursive.is_empty() {
                OpCode::SetWatches
            } else {
                OpCode::SetWatches2
            };
            write_frame(out, |b| Request { xid: xid::SET_WATCHES, op, body: RequestBody::SetWatches(sw) }.write(b));
        }
        while let Some(p) = self.queued.pop_front() {
            let x = self.xid();
            write_frame(out, |b| Request { xid: x, op: p.call.op, body: p.call.body.clone() }.write(b));
            inflight.push_back(InFlight { xid: x, pending: p });
        }
    }

    async fn serve(&mut self, link: Link) -> Ended {
        let Link { mut frames, mut wr, resp } = link;
        let negotiated = Duration::from_millis(resp.timeout_ms.max(1) as u64);
        let read_timeout = negotiated * 2 / 3;
        let ping_every = negotiated / 3;
        let mut inflight: VecDeque<InFlight> = VecDeque::new();
        let mut out = BytesMut::new();
        self.prime(&mut out, &mut inflight);
        let mut last_send = Instant::now();
        let mut last_recv = Instant::now();
        let mut closing: Option<(i32, Option<oneshot::Sender<()>>)> = None;
        let ended = 'conn: loop {
            if !out.is_empty() {
                if wr.write_all(&out).await.is_err() {
                    break 'conn Ended::Lost;
                }
                out.clear();
                last_send = Instant::now();
            }
            let deadline = (last_send + ping_every).min(last_recv + read_timeout);
            tokio::select! {
                frame = frames.next() => {
                    let frame = match frame {
                        Some(Ok(f)) => f,
                        _ => break 'conn Ended::Lost,
                    };
                    last_recv = Instant::now();
                    match self.on_frame(&frame, &mut inflight, closing.as_ref().map(|c| c.0)) {
                        Ok(FrameOutcome::Continue) => {}
                        Ok(FrameOutcome::CloseAcked) => break 'conn Ended::Closed(closing.take().and_then(|c| c.1)),
                        Ok(FrameOutcome::AuthFailed) => break 'conn Ended::AuthFailed,
                        Err(_) => break 'conn Ended::Lost,
                    }
                }
                msg = self.rx.recv(), if closing.is_none() => match msg {
                    Some(Msg::Call(call, reply)) => {
                        let x = self.xid();
                        out = encode(&Request { xid: x, op: call.op, body: call.body.clone() });
                        inflight.push_back(InFlight { xid: x, pending: Pending { call, reply } });
                    }
                    Some(Msg::Auth(scheme, auth)) => {
                        let body = RequestBody::Auth {
                            auth_type: 0,
                            scheme: scheme.clone(),
                            auth: auth.clone().map(Into::into),
                        };
                        out = encode(&Request { xid: xid::AUTH, op: OpCode::Auth, body });
                        self.auth.push((scheme, auth));
                    }
                    close => {
                        let done = match close {
                            Some(Msg::Close(done)) => Some(done),
                            _ => None,
                        };
                        let x = self.xid();
                        out = encode(&Request { xid: x, op: OpCode::CloseSession, body: RequestBody::Empty });
                        closing = Some((x, done));
                    }
                },
                _ = tokio::time::sleep_until(deadline) => {
                    let now = Instant::now();
                    if now.duration_since(last_recv) >= read_timeout {
                        // Nothing heard for two thirds of the session timeout: give the link up.
                        break 'conn match closing.take() {
                            Some((_, done)) => Ended::Closed(done),
                            None => Ended::Lost,
                        };
                    }
                    if now.duration_since(last_send) >= ping_every {
                        out = encode(&Request { xid: xid::PING, op: OpCode::Ping, body: RequestBody::Empty });
                    }
                }
            }
        };
        let ended = match (ended, closing) {
            (Ended::Lost, Some((_, done))) => Ended::Closed(done),
            (e, _) => e,
        };
        let code = match ended {
            Ended::AuthFailed => ErrorCode::AuthFailed.code(),
            _ => ErrorCode::ConnectionLoss.code(),
        };
        while let Some(f) = inflight.pop_front() {
            self.finish(f.pending, code, Response::Empty);
        }
        ended
    }

    fn on_frame(
        &mut self,
        frame: &[u8],
        inflight: &mut VecDeque<InFlight>,
        close_xid: Option<i32>,
    ) -> Result<FrameOutcome, ConnError> {
        let (rest, hdr) = ReplyHeader::parse(frame).map_err(|_| ConnError::Decode(DecodeError::Truncated))?;
        match hdr.xid {
            xid::NOTIFICATION => {
                let ev = jute::parse_all(rest, WatcherEvent::parse)?;
                let path = self.cfg.chroot.to_client(&ev.path);
                let fire = self.watches.trigger(ev.event_type, &path);
                self.event(ev.state, ev.event_type, Some(&path), fire);
                return Ok(FrameOutcome::Continue);
            }
            xid::PING | xid::SET_WATCHES => return Ok(FrameOutcome::Continue),
            xid::AUTH => {
                return Ok(if hdr.err == ErrorCode::AuthFailed.code() {
                    FrameOutcome::AuthFailed
                } else {
                    FrameOutcome::Continue
                });
            }
            _ => {}
        }
        if hdr.zxid > 0 {
            self.last_zxid = hdr.zxid;
        }
        if Some(hdr.xid) == close_xid && inflight.is_empty() {
            return Ok(FrameOutcome::CloseAcked);
        }
        let expected = inflight.front().map(|f| f.xid);
        if expected != Some(hdr.xid) {
            return Err(ConnError::XidOutOfOrder { got: hdr.xid, expected });
        }
        let Some(front) = inflight.pop_front() else {
            return Err(ConnError::XidOutOfOrder { got: hdr.xid, expected });
        };
        match Response::parse(front.pending.call.op, hdr.err, rest) {
            Ok(body) => {
                self.finish(front.pending, hdr.err, body);
                Ok(FrameOutcome::Continue)
            }
            Err(e) => {
                inflight.push_front(front);
                Err(e.into())
            }
        }
    }
}

enum FrameOutcome {
    Continue,
    CloseAcked,
    AuthFailed,
}
