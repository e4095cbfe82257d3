//! One client connection: the reader half decodes frames and feeds the core in order; the
//! writer half drains the connection's bounded outbound queue (replies and notifications in
//! one FIFO) into the socket, gathering everything queued into one vectored write.
//!
//! The same code serves the plaintext and the TLS port: it works over any byte stream.
//!
//! Any framing or decoding error ends only this connection, with a log line naming why.

use super::core::{ConnHandle, CoreMsg, Outbound};
use super::four_letter;
use super::outbuf::OutBuf;
use super::outqueue::QueuedBytes;
use super::stats::{ConnStats, ServerStats};
use crate::codec::{FrameCodec, FrameError};
use crate::config::Config;
use crate::proto::{xid, ConnectRequest, Id, OpCode, ReplyHeader, Request, RequestError, Response};
use crate::session::{mono_ms, ConnId};
use bytes::BytesMut;
use futures::future::Either;
use futures::StreamExt;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::sync::{mpsc, Semaphore};
use tokio_util::codec::{Decoder, FramedRead};
use tokio_util::sync::CancellationToken;

/// Bytes gathered before a write is issued even if more output is queued.
const WRITE_BATCH: usize = 256 * 1024;
/// Initial read buffer per connection: tokio-util's default, 8 KiB, was most of an idle session's
/// memory (10,000 sessions: 170 MB RSS; 149 MB with 2 KiB, 139 MB with 1 KiB). A registry's
/// sessions are idle but for pings (12 bytes), so it starts at 512 bytes (6 small pipelined
/// requests); a busy connection's buffer grows to what its bursts need and keeps that.
const READ_BUFFER: usize = 512;

pub struct ConnCtx {
    pub id: ConnId,
    pub peer: SocketAddr,
    pub cfg: Arc<Config>,
    pub core: mpsc::Sender<CoreMsg>,
    pub shutdown: CancellationToken,
    pub ops: Arc<super::ops::Ops>,
    /// The highest zxid on disk, which a ping answered here carries.
    pub durable: super::outbound::Durable,
    /// The read view plain reads are answered from when nothing of the session is in flight.
    pub views: Arc<super::view::Views>,
    /// When the whole handshake (TLS, if any, then the ConnectRequest) must be done, counted from
    /// the accept: ZooKeeper's nio.sessionlessCnxnTimeout is one limit per connection, not per step.
    pub handshake_deadline: tokio::time::Instant,
}

/// Serves one connection. `tls_ids` are the identities its TLS client certificate brought
/// (empty on the plaintext port); `guard` (the accept loop's count of this connection) is dropped
/// when it ends. A plain function returning an `async move` block, not an `async fn`: an async
/// fn keeps its arguments twice in its state (as passed and as moved into its body), and this
/// state is part of every connection's task for its whole life.
#[allow(clippy::manual_async_fn)] // on purpose: see above
pub fn serve<S, G>(stream: S, ctx: ConnCtx, tls_ids: Vec<Id>, guard: G) -> impl Future<Output = ()> + Send
where
    S: AsyncRead + AsyncWrite + Send + 'static,
    G: Send + 'static,
{
    async move {
        let cs = Arc::new(ConnStats::new(ctx.peer));
        ctx.ops.stats.conns.insert(ctx.id, cs.clone());
        serve_conn(stream, &ctx, &cs, tls_ids).await;
        ctx.ops.stats.conn_closed(ctx.id);
        drop(guard);
    }
}

async fn serve_conn<S>(stream: S, ctx: &ConnCtx, cs: &Arc<ConnStats>, tls_ids: Vec<Id>)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    // The handshake's states (a four-letter word's answer, the ConnectRequest's read, its trip to
    // the core) are boxed: they last a moment, and inline they would size every connection's
    // task for its whole life (2.0 KiB; the serving loop alone needs under half of it).
    let Some((frames, wr, connect)) = Box::pin(handshake(stream, ctx, cs)).await else { return };
    let (live, handle, writer) = Live::start(wr, ctx, cs, tls_ids);
    if to_core(ctx, CoreMsg::Connect { conn: handle, req: connect }).await.is_err() {
        return;
    }
    live.serve(frames, ctx, cs).await;
    // The reader's own sender goes first: the writer ends once every sender is gone.
    let cancel = live.cancel.clone();
    drop(live);
    let _ = to_core(ctx, CoreMsg::Disconnected { conn: ctx.id }).await;
    // The writer flushes anything still queued (e.g. the Unimplemented reply) and exits once
    // the core drops its sender.
    let _ = Box::pin(tokio::time::timeout(Duration::from_secs(5), writer)).await;
    cancel.cancel();
}

/// Hands a message to the core: at once if its queue has room, else through a boxed wait. The
/// returned future is 16 bytes: an inline `send` future (the message and the queue's wait
/// state, 472 bytes) would be part of every connection's task for its whole life, and the
/// queue is rarely full.
fn to_core(ctx: &ConnCtx, msg: CoreMsg) -> impl Future<Output = Result<(), ()>> + '_ {
    match ctx.core.try_send(msg) {
        Ok(()) => Either::Left(std::future::ready(Ok(()))),
        Err(mpsc::error::TrySendError::Full(msg)) => {
            Either::Right(Box::pin(async move { ctx.core.send(msg).await.map_err(|_| ()) }))
        }
        Err(mpsc::error::TrySendError::Closed(_)) => Either::Left(std::future::ready(Err(()))),
    }
}

/// The connection's first bytes: a four-letter word (answered here, `None`) or a ConnectRequest,
/// returned with the stream's halves.
async fn handshake<S>(
    stream: S,
    ctx: &ConnCtx,
    cs: &Arc<ConnStats>,
) -> Option<(FramedRead<ReadHalf<S>, FrameCodec>, WriteHalf<S>, ConnectRequest)>
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (mut rd, wr) = tokio::io::split(stream);
    let first = read_first(&mut rd, ctx).await?;
    if let Some(word) = four_letter::recognise(&first) {
        answer_word(word, rd, wr, ctx, cs).await;
        return None;
    }
    let (frames, connect) = read_connect(rd, first, ctx, cs).await?;
    Some((frames, wr, connect))
}

/// The first four bytes: a frame length or a four-letter word. `None` if the connection closed
/// or the handshake's deadline passed first.
async fn read_first<R: AsyncRead + Unpin>(rd: &mut R, ctx: &ConnCtx) -> Option<[u8; 4]> {
    // One deadline for the whole handshake, however slowly the bytes trickle in (no slowloris;
    // ZooKeeper closes a connection without a session after nio.sessionlessCnxnTimeout).
    let mut first = [0u8; 4];
    match tokio::time::timeout_at(ctx.handshake_deadline, rd.read_exact(&mut first)).await {
        Ok(Ok(_)) => Some(first),
        Ok(Err(_)) => None,
        Err(_) => {
            tracing::info!(conn = ctx.id, peer = %ctx.peer, "closing connection: no handshake within the deadline");
            None
        }
    }
}

/// Answers a four-letter word and ends the connection.
async fn answer_word<R, W>(word: &str, mut rd: R, wr: W, ctx: &ConnCtx, cs: &Arc<ConnStats>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    ctx.ops.stats.packet_received(cs, 4);
    four_letter::answer(word, wr, &ctx.ops).await;
    // Answered, the connection leaves `cons` at once, as ZooKeeper closes a four-letter
    // word's connection once it has written the answer: a `cons` right after a `stat` listed
    // the `stat` connection while its client's close was still on its way.
    ctx.ops.stats.conn_closed(ctx.id);
    // Read what the client still sends (the word's newline) until it closes: closing a
    // socket with unread input sends a reset, which can destroy the answer in flight.
    let mut sink = [0u8; 256];
    let _ = tokio::time::timeout(Duration::from_secs(2), async {
        while let Ok(n) = rd.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}

/// Reads the ConnectRequest, whose frame starts with `first`; `None` (with a log line where it is
/// the client's fault) if it is bad, late or missing.
async fn read_connect<R: AsyncRead + Unpin>(
    rd: R,
    first: [u8; 4],
    ctx: &ConnCtx,
    cs: &Arc<ConnStats>,
) -> Option<(FramedRead<R, FrameCodec>, ConnectRequest)> {
    let (id, peer) = (ctx.id, ctx.peer);
    let mut codec = FrameCodec::new(ctx.cfg.max_frame);
    // Judge the first length now: FramedRead would wait for more bytes before decoding.
    if let Err(e) = codec.decode(&mut BytesMut::from(&first[..])) {
        tracing::warn!(conn = id, %peer, "closing connection: {e}");
        return None;
    }
    let mut frames = FramedRead::with_capacity(rd, codec, READ_BUFFER);
    frames.read_buffer_mut().extend_from_slice(&first);
    match tokio::time::timeout_at(ctx.handshake_deadline, frames.next()).await {
        Ok(Some(Ok(frame))) => {
            ctx.ops.stats.packet_received(cs, frame.len() + 4);
            match ConnectRequest::parse(&frame) {
                Ok(req) => Some((frames, req)),
                Err(e) => {
                    tracing::warn!(conn = id, %peer, "closing connection: bad ConnectRequest: {e}");
                    None
                }
            }
        }
        Ok(Some(Err(e))) => {
            tracing::warn!(conn = id, %peer, "closing connection: {e}");
            None
        }
        Ok(None) => None,
        Err(_) => {
            tracing::info!(conn = id, %peer, "closing connection: no handshake within the deadline");
            None
        }
    }
}

/// A connection with a handshake: the reader's side of what it shares with its writer task and
/// the core.
struct Live {
    cancel: CancellationToken,
    /// Requests read and not yet answered, bounded by maxOutstanding.
    permits: Arc<Semaphore>,
    last_heard: Arc<AtomicU64>,
    /// The reader's own way to the writer, for the replies it gives itself (pings, local reads).
    out: super::outchan::Sender<Outbound>,
    queued: QueuedBytes,
    gate: super::view::Gate,
}

impl Live {
    /// Starts the writer task; the handle goes to the core with the ConnectRequest.
    fn start<W: AsyncWrite + Unpin + Send + 'static>(
        wr: W,
        ctx: &ConnCtx,
        cs: &Arc<ConnStats>,
        tls_ids: Vec<Id>,
    ) -> (Live, ConnHandle, tokio::task::JoinHandle<()>) {
        let (tx, rx) = super::outchan::channel(ctx.cfg.max_outbound_queue);
        let live = Live {
            cancel: ctx.shutdown.child_token(),
            permits: Arc::new(Semaphore::new(ctx.cfg.max_outstanding_per_conn)),
            last_heard: Arc::new(AtomicU64::new(0)),
            out: tx.clone(),
            queued: QueuedBytes::new(ctx.cfg.max_outbound_bytes),
            gate: super::view::Gate::default(),
        };
        let handle = ConnHandle {
            id: ctx.id,
            tx,
            cancel: live.cancel.clone(),
            peer: ctx.peer.ip(),
            tls_ids,
            last_heard: live.last_heard.clone(),
            queued: live.queued.clone(),
            gate: live.gate.clone(),
        };
        let writer = tokio::spawn(write_loop(
            rx,
            wr,
            live.permits.clone(),
            live.cancel.clone(),
            ctx.ops.stats.clone(),
            cs.clone(),
            live.queued.clone(),
        ));
        (live, handle, writer)
    }

    /// Reads requests until the connection ends: pings and plain reads answered here when
    /// nothing of the session is in flight, everything else to the core, in order.
    async fn serve<R: AsyncRead + Unpin>(&self, mut frames: FramedRead<R, FrameCodec>, ctx: &ConnCtx, cs: &ConnStats) {
        let (id, peer) = (ctx.id, ctx.peer);
        loop {
            let frame = tokio::select! {
                _ = self.cancel.cancelled() => break,
                f = frames.next() => f,
            };
            let frame = match frame {
                None => break,
                // A TLS client that closes without close_notify (kazoo, the Java client) is a
                // normal end of connection, not an error worth a warning.
                Some(Err(FrameError::Io(e))) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                Some(Err(e)) => {
                    tracing::warn!(conn = id, %peer, "closing connection: {e}");
                    break;
                }
                Some(Ok(f)) => f,
            };
            ctx.ops.stats.packet_received(cs, frame.len() + 4);
            let req = match Request::parse(&frame) {
                // With enforce.auth every request goes to the core, which knows the session's ids.
                Ok(req)
                    if req.op == OpCode::Ping
                        && ctx.cfg.enforce_auth.is_none()
                        && idle(&self.permits, ctx.cfg.max_outstanding_per_conn, cs) =>
                {
                    if self.pong(ctx, cs).await {
                        continue;
                    }
                    break;
                }
                Ok(req) => req,
                Err(RequestError::UnknownOp { xid, op }) => {
                    tracing::warn!(conn = id, %peer, op, "unknown op code: answering Unimplemented and closing");
                    ctx.ops.stats.request_started(cs, OpCode::Error);
                    let _ = to_core(ctx, CoreMsg::UnknownOp { conn: id, xid }).await;
                    break;
                }
                Err(e) => {
                    tracing::warn!(conn = id, %peer, "closing connection: {e}");
                    break;
                }
            };
            // Stop reading, rather than queue without bound, while too many requests are in flight.
            let permit = match self.permits.try_acquire() {
                Ok(p) => {
                    p.forget();
                    true
                }
                Err(_) => Box::pin(self.wait_permit()).await,
            };
            if !permit {
                break;
            }
            ctx.ops.stats.request_started(cs, req.op);
            if cs.session.load(Ordering::Acquire) != 0 && ctx.cfg.enforce_auth.is_none() {
                match self.answer_locally(ctx, &req) {
                    Some(Ok(())) => continue,
                    Some(Err(why)) => {
                        tracing::warn!(conn = id, %peer, "{why}: closing slow connection from {peer}");
                        break;
                    }
                    None => {}
                }
            }
            super::view::to_core(&self.gate);
            if to_core(ctx, CoreMsg::Request { conn: id, req }).await.is_err() {
                break;
            }
        }
    }

    /// Waits for a request slot (maxOutstanding reached): false if the connection is closing. Boxed
    /// by its caller, as this wait is rare and its state large.
    async fn wait_permit(&self) -> bool {
        tokio::select! {
            _ = self.cancel.cancelled() => false,
            p = self.permits.acquire() => p.map(|p| p.forget()).is_ok(),
        }
    }

    /// Answers a ping of an idle session here: nothing of it is in flight, so this keeps replies
    /// in request order (ZooKeeper answers a ping in turn with the session's requests) and costs
    /// no wake-up of the core. False if the connection must close. Not an `async fn`: its state
    /// would be part of every connection's task; a full queue's wait is boxed instead.
    fn pong(&self, ctx: &ConnCtx, cs: &ConnStats) -> impl Future<Output = bool> + '_ {
        self.last_heard.store(mono_ms(), Ordering::Release);
        if let Ok(p) = self.permits.try_acquire() {
            p.forget();
        }
        ctx.ops.stats.request_started(cs, OpCode::Ping);
        let header = ReplyHeader { xid: xid::PING, zxid: ctx.durable.load(Ordering::Acquire), err: 0 };
        let pong = Outbound::Reply(header, Response::Empty);
        if self.queued.add(pong.wire_len()).is_err() {
            tracing::warn!(conn = ctx.id, peer = %ctx.peer, "outbound queue over its byte bound: closing slow connection");
            return Either::Left(std::future::ready(false));
        }
        match self.out.try_send(pong) {
            Ok(()) => Either::Left(std::future::ready(true)),
            Err(mpsc::error::TrySendError::Full(pong)) => {
                Either::Right(Box::pin(async move { self.out.send(pong).await.is_ok() }))
            }
            Err(mpsc::error::TrySendError::Closed(_)) => Either::Left(std::future::ready(false)),
        }
    }

    /// A plain read while nothing of the session is at the core, answered from the read view
    /// without a trip through the core (see `view`); `None` if it must go to the core.
    fn answer_locally(&self, ctx: &ConnCtx, req: &Request) -> Option<Result<(), &'static str>> {
        super::view::answer(&ctx.views, &self.gate, req, |reply| {
            self.last_heard.store(mono_ms(), Ordering::Release);
            self.queued.add(reply.wire_len()).map_err(|_| "outbound queue over its byte bound")?;
            self.out.try_send(reply).map_err(|_| "outbound queue full")
        })
    }
}

/// True when the connection has a session and every request it read has been answered (its
/// reply at least queued for the writer), so a reply queued now cannot overtake another.
fn idle(permits: &Semaphore, max: usize, cs: &ConnStats) -> bool {
    permits.available_permits() == max && cs.session.load(Ordering::Acquire) != 0
}

/// Encodes one message; true if the connection should close after it.
fn encode(msg: Outbound, out: &mut OutBuf, permits: &Semaphore, stats: &ServerStats, cs: &ConnStats) -> bool {
    match msg {
        Outbound::Connected(resp) => {
            if resp.session_id != 0 {
                cs.established(resp.session_id, resp.timeout_ms);
            }
            out.frame(|b| resp.write(b));
        }
        Outbound::Reply(h, body) => {
            out.reply(&h, &body);
            stats.request_answered(cs, h.xid, h.zxid);
            permits.add_permits(1);
        }
        Outbound::Event(zxid, ev) => out.frame(|b| {
            ReplyHeader { xid: xid::NOTIFICATION, zxid, err: 0 }.write(b);
            ev.write(b);
        }),
        Outbound::Close => return true,
    }
    stats.packet_sent(cs);
    false
}

/// The writer task. A plain function returning an `async move` block (see `serve`): its state is
/// part of every connection for its whole life.
#[allow(clippy::manual_async_fn)] // on purpose: see above
fn write_loop<W: AsyncWrite + Unpin + Send + 'static>(
    mut rx: super::outchan::Receiver<Outbound>,
    mut wr: W,
    permits: Arc<Semaphore>,
    cancel: CancellationToken,
    stats: Arc<ServerStats>,
    cs: Arc<ConnStats>,
    queued: QueuedBytes,
) -> impl Future<Output = ()> + Send {
    async move {
        // Grown on first use: an idle session (most of 10,000) should not hold 8 KiB here.
        let mut out = OutBuf::new();
        let take = |m: Outbound, out: &mut OutBuf| {
            queued.taken(m.wire_len());
            encode(m, out, &permits, &stats, &cs)
        };
        loop {
            let msg = tokio::select! {
                m = rx.recv() => m,
                _ = cancel.cancelled() => None,
            };
            let Some(msg) = msg else { break };
            let mut closing = take(msg, &mut out);
            while !closing && out.len() < WRITE_BATCH {
                match rx.try_recv() {
                    Ok(m) => closing = take(m, &mut out),
                    Err(_) => break,
                }
            }
            // A client that does not read fills the socket buffer and would hold this write
            // forever: a cancel (session expired, server stopping) ends it.
            let written = tokio::select! {
                r = out.write_to(&mut wr) => r.is_ok(),
                _ = cancel.cancelled() => false,
            };
            if !written || closing {
                break;
            }
        }
        // Bounded too: a TLS close_notify is a write into the same possibly full buffer.
        let _ = Box::pin(tokio::time::timeout(Duration::from_secs(1), wr.shutdown())).await;
        cancel.cancel();
    }
}
