//! One client connection: the reader half decodes frames and feeds the core in order; the
//! writer half drains the connection's bounded outbound queue (replies and notifications in
//! one FIFO) into the socket, batching writes while the queue has more.
//!
//! Any framing or decoding error ends only this connection, with a log line naming why.

use super::core::{ConnHandle, CoreMsg, Outbound};
use super::four_letter;
use crate::codec::{write_frame, FrameCodec};
use crate::config::Config;
use crate::proto::{xid, ConnectRequest, ReplyHeader, Request, RequestError};
use crate::session::ConnId;
use bytes::BytesMut;
use futures::StreamExt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, Semaphore};
use tokio_util::codec::{Decoder, FramedRead};
use tokio_util::sync::CancellationToken;

/// A client must complete its ConnectRequest within this time (no slowloris).
const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(10);
/// Bytes gathered before a write is issued even if more output is queued.
const WRITE_BATCH: usize = 64 * 1024;

pub struct ConnCtx {
    pub id: ConnId,
    pub peer: SocketAddr,
    pub cfg: Arc<Config>,
    pub core: mpsc::Sender<CoreMsg>,
    pub shutdown: CancellationToken,
}

pub async fn serve(stream: TcpStream, ctx: ConnCtx) {
    let _ = stream.set_nodelay(true);
    let (mut rd, wr) = stream.into_split();
    let id = ctx.id;
    let peer = ctx.peer;

    // The first four bytes are either a frame length or a four-letter word.
    let mut first = [0u8; 4];
    match tokio::time::timeout(HANDSHAKE_DEADLINE, rd.read_exact(&mut first)).await {
        Ok(Ok(_)) => {}
        Ok(Err(_)) => return,
        Err(_) => {
            tracing::info!(conn = id, %peer, "closing connection: no handshake within the deadline");
            return;
        }
    }
    if let Some(word) = four_letter::recognise(&first) {
        four_letter::answer(word, wr, &ctx).await;
        return;
    }
    let mut codec = FrameCodec::new(ctx.cfg.max_frame);
    // Judge the first length now: FramedRead would wait for more bytes before decoding.
    if let Err(e) = codec.decode(&mut BytesMut::from(&first[..])) {
        tracing::warn!(conn = id, %peer, "closing connection: {e}");
        return;
    }
    let mut frames = FramedRead::new(rd, codec);
    frames.read_buffer_mut().extend_from_slice(&first);
    let connect = match tokio::time::timeout(HANDSHAKE_DEADLINE, frames.next()).await {
        Ok(Some(Ok(frame))) => match ConnectRequest::parse(&frame) {
            Ok(req) => req,
            Err(e) => {
                tracing::warn!(conn = id, %peer, "closing connection: bad ConnectRequest: {e}");
                return;
            }
        },
        Ok(Some(Err(e))) => {
            tracing::warn!(conn = id, %peer, "closing connection: {e}");
            return;
        }
        Ok(None) => return,
        Err(_) => {
            tracing::info!(conn = id, %peer, "closing connection: no handshake within the deadline");
            return;
        }
    };

    let (tx, rx) = mpsc::channel(ctx.cfg.max_outbound_queue);
    let cancel = ctx.shutdown.child_token();
    let permits = Arc::new(Semaphore::new(ctx.cfg.max_outstanding_per_conn));
    let handle = ConnHandle { id, tx, cancel: cancel.clone(), peer: peer.ip() };
    let writer = tokio::spawn(write_loop(rx, wr, permits.clone(), cancel.clone()));
    if ctx.core.send(CoreMsg::Connect { conn: handle, req: connect }).await.is_err() {
        return;
    }

    loop {
        let frame = tokio::select! {
            _ = cancel.cancelled() => break,
            f = frames.next() => f,
        };
        let frame = match frame {
            None => break,
            Some(Err(e)) => {
                tracing::warn!(conn = id, %peer, "closing connection: {e}");
                break;
            }
            Some(Ok(f)) => f,
        };
        let msg = match Request::parse(&frame) {
            Ok(req) => CoreMsg::Request { conn: id, req },
            Err(RequestError::UnknownOp { xid, op }) => {
                tracing::warn!(conn = id, %peer, op, "unknown op code: answering Unimplemented and closing");
                let _ = ctx.core.send(CoreMsg::UnknownOp { conn: id, xid }).await;
                break;
            }
            Err(e) => {
                tracing::warn!(conn = id, %peer, "closing connection: {e}");
                break;
            }
        };
        // Stop reading, rather than queue without bound, while too many requests are in flight.
        let permit = tokio::select! {
            _ = cancel.cancelled() => break,
            p = permits.acquire() => p,
        };
        match permit {
            Ok(p) => p.forget(),
            Err(_) => break,
        }
        if ctx.core.send(msg).await.is_err() {
            break;
        }
    }
    let _ = ctx.core.send(CoreMsg::Disconnected { conn: id }).await;
    // The writer flushes anything still queued (e.g. the Unimplemented reply) and exits once
    // the core drops its sender.
    let _ = tokio::time::timeout(Duration::from_secs(5), writer).await;
    cancel.cancel();
}

/// Encodes one message; true if the connection should close after it.
fn encode(msg: Outbound, out: &mut BytesMut, permits: &Semaphore) -> bool {
    match msg {
        Outbound::Connected(resp) => write_frame(out, |b| resp.write(b)),
        Outbound::Reply(h, body) => {
            write_frame(out, |b| {
                h.write(b);
                body.write(b);
            });
            permits.add_permits(1);
        }
        Outbound::Event(zxid, ev) => write_frame(out, |b| {
            ReplyHeader { xid: xid::NOTIFICATION, zxid, err: 0 }.write(b);
            ev.write(b);
        }),
        Outbound::Close => return true,
    }
    false
}

async fn write_loop(
    mut rx: mpsc::Receiver<Outbound>,
    mut wr: OwnedWriteHalf,
    permits: Arc<Semaphore>,
    cancel: CancellationToken,
) {
    // Grown on first use: an idle session (most of 10,000) should not hold 8 KiB here.
    let mut out = BytesMut::new();
    loop {
        let msg = tokio::select! {
            m = rx.recv() => m,
            _ = cancel.cancelled() => None,
        };
        let Some(msg) = msg else { break };
        let mut closing = encode(msg, &mut out, &permits);
        while !closing && out.len() < WRITE_BATCH {
            match rx.try_recv() {
                Ok(m) => closing = encode(m, &mut out, &permits),
                Err(_) => break,
            }
        }
        if wr.write_all(&out).await.is_err() {
            break;
        }
        out.clear();
        if closing {
            break;
        }
    }
    let _ = wr.shutdown().await;
    cancel.cancel();
}
