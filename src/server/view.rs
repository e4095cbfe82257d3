//! Reads without the core: the core publishes a read-only view of the tree, and a connection
//! with nothing in flight answers its plain reads from it on its own task.
//!
//! The core thread orders everything, but a read that does not register a watch needs none of
//! that order when its session has nothing in flight and the view is exactly what clients have
//! been shown. Three rules keep it indistinguishable from a read answered by the core (and so
//! from ZooKeeper's FinalRequestProcessor):
//! - **Per-session order**: only a connection with no request at the core (every reply to what
//!   it sent the core is queued; replies answered here are queued at once) reads here, so its
//!   reply cannot overtake one of its own.
//! - **Nothing unseen, nothing unacknowledged**: the view is served only while its zxid is the
//!   zxid whose replies and watch events have all been handed to the connections (`delivered`)
//!   and no later one is being handed over (`announced`). A write acknowledged before the read
//!   was sent is in the view; a write not yet durable (standalone: not yet fsync'd) is not.
//! - **Watch events before replies**: the check and the queueing of the reply happen under the
//!   connection's order gate, which every delivery to that connection also takes after the
//!   deliverer announced its zxid. A reply queued here therefore precedes any event of a later
//!   zxid, and a reply from a view that shows a change follows that change's events.
//!
//! Reads that set a watch, reads whose ACL the view cannot decide without the session's
//! identities, and everything else go to the core as before. The core withdraws the view before
//! it applies a txn (so a write never copies a chunk a stale view still shares) and publishes a
//! new one when a reader found none, at most once per `PUBLISH_COST_FACTOR` times its cost.

pub use super::outbound::{to_core, Gate};
use super::outbound::{DeliveryMarks, Outbound};
use crate::proto::{ErrorCode, OpCode, ReplyHeader, Request, RequestBody, Response};
use crate::tree::DataTree;
use crate::txn::Zxid;
use parking_lot::RwLock;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

/// Publishing costs the core O(nodes / 256) pointer copies: at most 1/20 of its time goes to it.
const PUBLISH_COST_FACTOR: u32 = 20;
/// And never more often than this, however cheap.
const PUBLISH_MIN_INTERVAL: std::time::Duration = std::time::Duration::from_micros(500);

/// The tree as of one zxid, for reading only.
pub struct ReadView {
    pub tree: DataTree,
    pub zxid: Zxid,
}

/// What the core, the deliverers and the connections share.
#[derive(Default)]
pub struct Views {
    current: RwLock<Option<Arc<ReadView>>>,
    /// A reader found no servable view: the core publishes one at the end of its turn.
    wanted: AtomicBool,
    /// The newest zxid whose replies and events are being handed to connections.
    announced: AtomicI64,
    /// The newest zxid whose replies and events have all been handed over.
    delivered: AtomicI64,
}

impl DeliveryMarks for Views {
    fn announce(&self, zxid: Zxid) {
        Views::announce(self, zxid);
    }

    fn delivered(&self, zxid: Zxid) {
        Views::delivered(self, zxid);
    }
}

impl Views {
    pub fn new(zxid: Zxid) -> Views {
        Views { announced: AtomicI64::new(zxid), delivered: AtomicI64::new(zxid), ..Views::default() }
    }

    /// Messages up to `zxid` are about to be handed over.
    pub fn announce(&self, zxid: Zxid) {
        self.announced.fetch_max(zxid, Ordering::SeqCst);
    }

    /// Messages up to `zxid` have been handed over.
    pub fn delivered(&self, zxid: Zxid) {
        self.delivered.fetch_max(zxid, Ordering::SeqCst);
    }

    /// The view if it shows exactly what has been delivered; otherwise asks for a new one.
    /// Call with the connection's gate held.
    fn servable(&self) -> Option<Arc<ReadView>> {
        let delivered = self.delivered.load(Ordering::SeqCst);
        let announced = self.announced.load(Ordering::SeqCst);
        let view = self.current.read().clone();
        match view {
            Some(v) if v.zxid == delivered && v.zxid == announced => Some(v),
            _ => {
                self.wanted.store(true, Ordering::Relaxed);
                None
            }
        }
    }

    /// Core: stop serving the current view (before the tree changes under it).
    pub fn withdraw(&self) {
        *self.current.write() = None;
    }

    /// Core: whether a reader asked for a view since the last call.
    pub fn take_wanted(&self) -> bool {
        self.wanted.load(Ordering::Relaxed) && self.wanted.swap(false, Ordering::Relaxed)
    }

    pub fn publish(&self, view: ReadView) {
        *self.current.write() = Some(Arc::new(view));
    }
}

/// The core's side: when to publish, bounded by what publishing costs.
pub struct Publisher {
    views: Arc<Views>,
    /// The zxid of the view out, if one is (withdrawn before a txn only then, to save the lock).
    published: Option<Zxid>,
    next_at: std::time::Instant,
}

impl Publisher {
    pub fn new(views: Arc<Views>) -> Publisher {
        Publisher { views, published: None, next_at: std::time::Instant::now() }
    }

    pub fn views(&self) -> &Arc<Views> {
        &self.views
    }

    /// Before the tree changes.
    pub fn withdraw(&mut self) {
        if self.published.take().is_some() {
            self.views.withdraw();
        }
    }

    /// At the end of a turn: publishes the tree if a reader asked and it is not out already.
    /// `serving` is false while an ensemble member has no leader (it answers no reads then).
    pub fn end_turn(&mut self, tree: &DataTree, serving: bool) {
        if !serving {
            self.withdraw();
            return;
        }
        let now = std::time::Instant::now();
        if now < self.next_at || !self.views.take_wanted() {
            return;
        }
        let zxid = tree.last_zxid();
        if self.published == Some(zxid) {
            return;
        }
        let tree = tree.read_view();
        self.views.publish(ReadView { tree, zxid });
        self.published = Some(zxid);
        let cost = now.elapsed();
        self.next_at = now + (cost * PUBLISH_COST_FACTOR).max(PUBLISH_MIN_INTERVAL);
    }
}

/// Answers `req` from the published view when it is a read the view can answer exactly as the
/// core would: exists, getData and getChildren(2) without a watch, on a node whose ACL lets
/// anyone read (a node readable only with the session's identities goes to the core, which
/// knows them), while none of the connection's requests is at the core. `None`: send it to the
/// core (`to_core`). `queue` puts the reply on the connection's outbound queue, under the gate.
pub fn answer<E>(
    views: &Views,
    gate: &Gate,
    req: &Request,
    queue: impl FnOnce(Outbound) -> Result<(), E>,
) -> Option<Result<(), E>> {
    let RequestBody::PathWatch { path, watch: false } = &req.body else { return None };
    if !matches!(req.op, OpCode::Exists | OpCode::GetData | OpCode::GetChildren | OpCode::GetChildren2) {
        return None;
    }
    let order = gate.lock();
    if order.at_core != 0 {
        return None;
    }
    let view = views.servable()?;
    let (err, body) = match read(&view.tree, req.op, path)? {
        Ok(r) => (0, r),
        Err(e) => (e.code(), Response::Empty),
    };
    Some(queue(Outbound::Reply(ReplyHeader { xid: req.xid, zxid: view.zxid, err }, body)))
}

/// One read with no identities: `None` where the answer would be NoAuth, which identities the
/// view does not have might turn into a yes.
fn read(tree: &DataTree, op: OpCode, path: &str) -> Option<Result<Response, ErrorCode>> {
    let r = super::reads::Reader { ids: &[], watcher: 0 };
    let res = match op {
        OpCode::Exists => super::reads::exists(tree, None, &r, path),
        OpCode::GetData => super::reads::get_data(tree, None, &r, path),
        OpCode::GetChildren => super::reads::get_children(tree, None, &r, path, false),
        _ => super::reads::get_children(tree, None, &r, path, true),
    };
    match res {
        Err(ErrorCode::NoAuth) => None,
        other => Some(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::outbound::queued;

    fn views_with_tree_at(zxid: Zxid) -> Views {
        let views = Views::new(zxid);
        let mut tree = DataTree::new();
        tree.set_last_zxid(zxid);
        views.publish(ReadView { tree, zxid });
        views
    }

    fn get(path: &str, watch: bool) -> Request {
        Request { xid: 7, op: OpCode::GetData, body: RequestBody::PathWatch { path: path.into(), watch } }
    }

    /// Answers `req` here if it can; the reply, or None when it goes to the core.
    fn try_answer(views: &Views, gate: &Gate, req: &Request) -> Option<Outbound> {
        let mut out = None;
        let r = answer(views, gate, req, |m| -> Result<(), ()> {
            out = Some(m);
            Ok(())
        });
        assert_eq!(r.is_some(), out.is_some());
        out
    }

    #[test]
    fn a_view_is_served_only_at_exactly_the_delivered_zxid() {
        let views = views_with_tree_at(5);
        let gate = Gate::default();
        assert!(try_answer(&views, &gate, &get("/zookeeper", false)).is_some());
        // Messages of zxid 6 are being handed over: a newer state may already be visible.
        views.announce(6);
        assert!(try_answer(&views, &gate, &get("/zookeeper", false)).is_none());
        assert!(views.take_wanted(), "a reader that found no view asks for one");
        assert!(!views.take_wanted());
        views.delivered(6);
        assert!(try_answer(&views, &gate, &get("/zookeeper", false)).is_none(), "the view is stale");
        // A view ahead of what was delivered (not yet durable) is not served either.
        let mut tree = DataTree::new();
        tree.set_last_zxid(7);
        views.publish(ReadView { tree, zxid: 7 });
        assert!(try_answer(&views, &gate, &get("/zookeeper", false)).is_none());
        views.announce(7);
        views.delivered(7);
        match try_answer(&views, &gate, &get("/zookeeper", false)) {
            Some(Outbound::Reply(h, Response::GetData { .. })) => assert_eq!((h.xid, h.zxid, h.err), (7, 7, 0)),
            other => panic!("{other:?}"),
        }
        views.withdraw();
        assert!(try_answer(&views, &gate, &get("/zookeeper", false)).is_none());
    }

    #[test]
    fn nothing_is_answered_here_while_a_request_of_the_connection_is_at_the_core() {
        let views = views_with_tree_at(3);
        let gate = Gate::default();
        to_core(&gate);
        to_core(&gate);
        assert!(try_answer(&views, &gate, &get("/", false)).is_none());
        let event = crate::proto::WatcherEvent { event_type: 3, state: 3, path: "/".into() };
        queued(&mut gate.lock(), &Outbound::Event(3, event));
        queued(&mut gate.lock(), &Outbound::Reply(ReplyHeader { xid: 1, zxid: 3, err: 0 }, Response::Empty));
        assert!(try_answer(&views, &gate, &get("/", false)).is_none(), "one reply of two is queued");
        queued(&mut gate.lock(), &Outbound::Reply(ReplyHeader { xid: 2, zxid: 3, err: 0 }, Response::Empty));
        assert!(try_answer(&views, &gate, &get("/", false)).is_some());
    }

    #[test]
    fn only_plain_reads_are_answered_here() {
        let views = views_with_tree_at(1);
        let gate = Gate::default();
        assert!(try_answer(&views, &gate, &get("/", true)).is_none(), "a watch is registered by the core");
        let set = Request {
            xid: 1,
            op: OpCode::SetData,
            body: RequestBody::SetData { path: "/".into(), data: None, version: -1 },
        };
        assert!(try_answer(&views, &gate, &set).is_none());
        match try_answer(&views, &gate, &get("/missing", false)) {
            Some(Outbound::Reply(h, Response::Empty)) => assert_eq!(h.err, ErrorCode::NoNode.code()),
            other => panic!("{other:?}"),
        }
        let exists = Request {
            xid: 2,
            op: OpCode::Exists,
            body: RequestBody::PathWatch { path: "/zookeeper/quota".into(), watch: false },
        };
        assert!(matches!(try_answer(&views, &gate, &exists), Some(Outbound::Reply(_, Response::Stat(_)))));
    }
}
