//! What leaves the server for a client connection: the messages, a connection's handle and
//! order gate, and their delivery to the connections' outbound queues. Below the core, the
//! committer and the read views, which all hand messages over here.

use crate::proto::{ConnectResponse, Id, ReplyHeader, Response, WatcherEvent};
use crate::session::ConnId;
use crate::txn::Zxid;
use parking_lot::Mutex;
use std::net::IpAddr;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// What the core sends to a connection, in order.
#[derive(Debug)]
pub enum Outbound {
    Connected(ConnectResponse),
    Reply(ReplyHeader, Response),
    Event(Zxid, WatcherEvent),
    /// Flush what is queued, then close the socket.
    Close,
}

impl Outbound {
    /// Bytes this message puts on the wire, frame length included.
    pub fn wire_len(&self) -> usize {
        match self {
            // protocolVersion, timeOut, sessionId, passwd (length + 16), readOnly
            Outbound::Connected(_) => 4 + 4 + 4 + 8 + 4 + 16 + 1,
            Outbound::Reply(_, body) => 4 + ReplyHeader::WIRE_LEN + body.wire_len(),
            Outbound::Event(_, ev) => 4 + ReplyHeader::WIRE_LEN + 4 + 4 + 4 + ev.path.len(),
            Outbound::Close => 0,
        }
    }
}

/// A connection as the core sees it.
#[derive(Debug, Clone)]
pub struct ConnHandle {
    pub id: ConnId,
    pub tx: super::outchan::Sender<Outbound>,
    pub cancel: CancellationToken,
    pub peer: IpAddr,
    /// Identities from the TLS client certificate (`x509`, maybe `super`), added at connect.
    pub tls_ids: Vec<Id>,
    /// `mono_ms` when the connection last answered a ping itself; the expiry sweep consults it.
    pub last_heard: Arc<AtomicU64>,
    /// Bytes queued in `tx` and not yet taken by the writer: the queue is bounded in bytes too.
    pub queued: super::outqueue::QueuedBytes,
    /// Held while a message is queued in `tx` (see `view`).
    pub gate: Gate,
}

impl ConnHandle {
    /// The identities a connection holds before any addAuth: `ip` (ZooKeeper's ServerCnxn adds
    /// it on connect) and those of its TLS client certificate.
    pub fn connect_ids(&self) -> Vec<Id> {
        crate::authinfo::from_added(
            std::iter::once(Id::new("ip", &self.peer.to_string())).chain(self.tls_ids.iter().cloned()),
        )
    }
}

/// A connection's order gate (see `view`'s module doc): held while a message is queued for it.
pub type Gate = Arc<Mutex<Order>>;

/// What the gate guards besides the queueing itself.
#[derive(Debug, Default)]
pub struct Order {
    /// Requests of the connection sent to the core whose replies are not yet queued: while
    /// any is, a read answered here could overtake it.
    pub(super) at_core: u32,
}

/// The connection is about to send a request to the core.
pub fn to_core(gate: &Gate) {
    gate.lock().at_core += 1;
}

/// A deliverer queues `msg` for the connection (call with the gate held): a reply is the
/// answer to one request the connection sent to the core.
pub fn queued(order: &mut Order, msg: &Outbound) {
    if matches!(msg, Outbound::Reply(..)) {
        order.at_core = order.at_core.saturating_sub(1);
    }
}

/// The highest zxid the log has made durable (standalone: fsync'd; a member: applied, so
/// committed). Pings report it, and snapshots wait for it so that a snapshot is never ahead of
/// the log it will be combined with.
pub type Durable = Arc<std::sync::atomic::AtomicI64>;

/// One message for one connection.
pub struct Delivery {
    pub conn: ConnId,
    pub peer: IpAddr,
    pub tx: super::outchan::Sender<Outbound>,
    pub cancel: CancellationToken,
    pub queued: super::outqueue::QueuedBytes,
    /// The connection's order gate (`Gate`), held while the message is queued.
    pub gate: Gate,
    pub msg: Outbound,
}

/// What a deliverer tells the read views (`view::Views`) around one turn's messages.
pub trait DeliveryMarks {
    /// Messages up to `zxid` are about to be handed over.
    fn announce(&self, zxid: Zxid);
    /// Messages up to `zxid` have been handed over.
    fn delivered(&self, zxid: Zxid);
}

/// Hands one turn's messages to their connections, announced to the read views first (see
/// `view`): a connection answering a read from a view meanwhile sees a newer zxid coming and
/// leaves the read to the core. `zxid` is the tree's zxid after that turn.
pub fn deliver_all(views: &impl DeliveryMarks, zxid: Zxid, out: Vec<Delivery>) {
    views.announce(zxid);
    out.into_iter().for_each(deliver);
    views.delivered(zxid);
}

fn deliver(d: Delivery) {
    // Bounded per connection, in messages and in bytes: a client that stops reading costs only
    // itself. Its session stays; it may re-attach and catch up with setWatches.
    let (conn, peer) = (d.conn, d.peer);
    if let Err(bytes) = d.queued.add(d.msg.wire_len()) {
        tracing::warn!(conn, %peer, bytes, "outbound queue over its byte bound: closing slow connection from {peer}");
        d.cancel.cancel();
        return;
    }
    let sent = {
        let mut order = d.gate.lock();
        queued(&mut order, &d.msg);
        d.tx.try_send(d.msg)
    };
    match sent {
        Ok(()) => {}
        Err(mpsc::error::TrySendError::Full(_)) => {
            tracing::warn!(conn, %peer, "outbound queue full: closing slow connection from {peer}");
            d.cancel.cancel();
        }
        Err(mpsc::error::TrySendError::Closed(_)) => {}
    }
}
