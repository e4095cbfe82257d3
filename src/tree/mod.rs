//! The znode tree: storage, lookups, and `apply(&Txn)`, the deterministic state machine
//! (`apply.rs`, with the tree digest it keeps current).
//!
//! Owns znodes, the session table and the indexes that derive from them (ephemerals per
//! session, containers, TTL nodes). Must not read clocks, spawn tasks or know about
//! connections: everything it needs is in the `Txn`.

pub mod acl;
mod apply;
pub mod diff;
mod names;
mod node;
pub mod path;
pub mod prep;
pub mod quota;

pub use node::{ChildNames, Children, NodeId, NodeStat, Znode};

use crate::proto::{Acl, Stat};
use crate::txn::{owner, SessionId, Txn, TxnOp, Zxid};
use bytes::Bytes;
use node::Slab;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

/// Node data as the tree keeps it: its own allocation of exactly its length. Data decoded from a
/// request frame (or a log or snapshot buffer) is a slice that would otherwise keep that whole
/// buffer alive for as long as the node lives.
fn own_data(d: Bytes) -> Bytes {
    if d.is_empty() {
        Bytes::new()
    } else {
        Bytes::copy_from_slice(&d)
    }
}

/// A change the watch layer turns into notifications.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Created(String),
    /// The deleted node's ACL rides along: watchers of a node that is gone are still told only
    /// if they could READ it (ZooKeeper passes the node's ACL to triggerWatch).
    Deleted(String, Arc<[Acl]>),
    DataChanged(String),
    /// The path is the parent whose child list changed.
    ChildrenChanged(String),
}

/// What applying one (sub-)txn produced, for the reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpOutcome {
    Created { path: String, stat: Stat },
    Deleted,
    SetData { stat: Stat },
    SetAcl { stat: Stat },
    Checked,
    Session,
    Multi(Vec<OpOutcome>),
    Error(crate::proto::ErrorCode),
}

/// A session as the state machine knows it: the part that is replicated and persisted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionInfo {
    pub timeout_ms: i32,
    /// Imported from ZooKeeper: its clients still hold a password derived ZooKeeper's way.
    pub zk_password: bool,
    /// The password of an ensemble's session (replicated, so any member can check it).
    pub password: Option<[u8; crate::proto::PASSWORD_LEN]>,
    /// An ensemble's session: where it is attached (`None` standalone, and for sessions from
    /// before owners were kept, which any member may serve).
    pub owner: Option<SessionOwner>,
}

/// The member a session is attached to, and the number of the proposal that attached it there
/// (its createSession, or the re-attach of its client). A member numbers its proposals in
/// increasing order, across restarts too, so a write of this session that member proposed
/// before the attach has a lower number: ZooKeeper's session owner (SessionTrackerImpl's
/// `owner`, set by createSession and by a re-attach's revalidation), kept in the replicated
/// state so that every member checks it at the same point of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionOwner {
    pub member: u64,
    pub seq: u64,
    /// Set by a re-attach (not by the session's creation): an attach proposed by a member that
    /// had not applied this one is stale (see `admits_attach`).
    pub by_attach: bool,
}

impl SessionOwner {
    /// True if a write proposed by `member` as its proposal `seq` comes from where the session
    /// is attached now, and after it was attached there; otherwise it is refused with
    /// SessionMoved, as PrepRequestProcessor's `checkSession` refuses a request from a server
    /// that no longer owns the session.
    pub fn accepts(&self, member: u64, seq: u64) -> bool {
        member == self.member && seq > self.seq
    }

    /// True if a re-attach proposed by `member` as its proposal `seq`, when that member knew the
    /// session's owner as `seen` (`(0, 0)`: it did not know the session), may move the session:
    /// no re-attach it had not applied moved the session since, unless that one was its own
    /// earlier one. A re-attach still queued at a member the client gave up on, applied after
    /// the client re-attached elsewhere, would otherwise take the session back and close the
    /// client's live connection. ZooKeeper never meets this: a follower drops what it queued for
    /// a leader that is gone, where zkr's proposals may outlive a leader change.
    pub fn admits_attach(&self, member: u64, seq: u64, seen: (u64, u64)) -> bool {
        !self.by_attach || (self.member, self.seq) == seen || (member == self.member && seq > self.seq)
    }
}

pub const ROOT: NodeId = 0;

#[derive(Debug, Clone)]
pub struct DataTree {
    nodes: Slab,
    sessions: BTreeMap<SessionId, SessionInfo>,
    ephemerals: HashMap<SessionId, BTreeSet<NodeId>>,
    containers: HashSet<NodeId>,
    ttls: HashSet<NodeId>,
    acl_cache: HashSet<Arc<[Acl]>>,
    last_zxid: Zxid,
    data_size: u64,
    child_lists: ChildListCache,
    /// Hashes child names for every node's child table (a copy hashes the same way).
    hasher: ahash::RandomState,
    /// The order-independent digest of every node (see `digest`), kept up to date by `apply`
    /// once it has been asked for; `None` until then, so a server that never asks pays nothing.
    digest: Option<u64>,
    /// Paths with a quota (ZooKeeper's `pTrie`), derived from the `zookeeper_limits` nodes.
    quota_roots: BTreeSet<String>,
    /// A reconfig begun in the replicated log and not yet ended, as the replicated core encodes
    /// it (`raft::plan::Pending`): kept here so that snapshots carry it with the tree.
    pending_reconfig: Option<Vec<u8>>,
    /// An AdminServer restore being staged in the replicated log: its chunks so far, kept
    /// here so that snapshots and new members carry them until the end record applies them.
    staged_restore: Option<StagedRestore>,
}

/// The chunks of a ZooKeeper snapshot an ensemble restore has logged so far (`restore` id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StagedRestore {
    pub id: i64,
    pub chunks: Vec<Bytes>,
}

/// Lists longer than this (encoded) are not kept: one huge directory must not double its memory.
const CHILD_LIST_MAX: usize = 1 << 20;
/// Bytes all kept lists may take; past it the cache starts over.
const CHILD_LISTS_TOTAL: usize = 64 << 20;

/// The encoded child lists (jute `vector<ustring>`, in the child map's iteration order) of
/// directories read lately, shared by every getChildren reply until that directory's children
/// change. A clone (the snapshot copy) starts empty.
#[derive(Default)]
struct ChildListCache {
    inner: parking_lot::Mutex<ChildLists>,
}

#[derive(Default)]
struct ChildLists {
    lists: HashMap<NodeId, Bytes>,
    bytes: usize,
}

impl ChildLists {
    fn forget(&mut self, id: NodeId) {
        if let Some(b) = self.lists.remove(&id) {
            self.bytes -= b.len();
        }
    }
}

impl Clone for ChildListCache {
    fn clone(&self) -> Self {
        ChildListCache::default()
    }
}

impl std::fmt::Debug for ChildListCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChildListCache")
    }
}

impl Default for DataTree {
    fn default() -> Self {
        Self::new()
    }
}

impl DataTree {
    /// A tree with ZooKeeper's system nodes: `/zookeeper`, `/zookeeper/quota` and
    /// `/zookeeper/config` (empty in standalone mode, read-only to the world).
    pub fn new() -> DataTree {
        let mut t = DataTree::empty();
        let open = t.intern_acl(&Acl::open_unsafe());
        let zk = t.attach(ROOT, "zookeeper", Some(Bytes::new()), open.clone(), NodeStat::default());
        t.attach(zk, "quota", Some(Bytes::new()), open, NodeStat::default());
        let read = t.intern_acl(&Acl::read_unsafe());
        // DataTree.addConfigNode sets the ACL with version -1, which lands in aversion.
        let stat = NodeStat { aversion: -1, ..NodeStat::default() };
        t.attach(zk, "config", Some(Bytes::new()), read, stat);
        t
    }

    /// A copy to write a snapshot from, at O(1) cost per 256 nodes: the nodes (shared by chunk,
    /// see `Slab`), their names, the sessions and the last zxid, which is all a snapshot holds.
    /// The indexes a snapshot does not store (ephemerals by session, containers, TTL nodes,
    /// quota roots, cached child lists, the digest) are left empty: the copy is for reading
    /// nodes, never for applying txns.
    pub fn snapshot_view(&self) -> DataTree {
        self.copy_nodes(self.sessions.clone())
    }

    /// The nodes shared by chunk (see `snapshot_view`), with these sessions.
    fn copy_nodes(&self, sessions: BTreeMap<SessionId, SessionInfo>) -> DataTree {
        DataTree {
            nodes: self.nodes.clone(),
            sessions,
            ephemerals: HashMap::new(),
            containers: HashSet::new(),
            ttls: HashSet::new(),
            acl_cache: HashSet::new(),
            last_zxid: self.last_zxid,
            data_size: self.data_size,
            child_lists: ChildListCache::default(),
            hasher: self.hasher.clone(),
            digest: None,
            quota_roots: BTreeSet::new(),
            pending_reconfig: self.pending_reconfig.clone(),
            staged_restore: self.staged_restore.clone(),
        }
    }

    /// A copy to answer reads from off the core thread (see `server::view`): the nodes and their
    /// names as `snapshot_view` shares them, and the cached child lists (each valid for exactly
    /// this state, so a published view does not encode a big directory again). No sessions:
    /// reads do not need them, and a view is taken far more often than a snapshot.
    pub fn read_view(&self) -> DataTree {
        let lists = self.child_lists.inner.lock();
        let child_lists = ChildListCache {
            inner: parking_lot::Mutex::new(ChildLists { lists: lists.lists.clone(), bytes: lists.bytes }),
        };
        drop(lists);
        DataTree { child_lists, ..self.copy_nodes(BTreeMap::new()) }
    }

    /// A tree holding only an empty root, to be filled by `restore_node` (snapshot loading).
    pub fn empty() -> DataTree {
        let mut t = DataTree {
            nodes: Slab::default(),
            sessions: BTreeMap::new(),
            ephemerals: HashMap::new(),
            containers: HashSet::new(),
            ttls: HashSet::new(),
            acl_cache: HashSet::new(),
            last_zxid: 0,
            // ZooKeeper's node map holds the root twice, as "" and "/": 0 + 1 path characters.
            data_size: 1,
            child_lists: ChildListCache::default(),
            hasher: ahash::RandomState::new(),
            digest: None,
            quota_roots: BTreeSet::new(),
            pending_reconfig: None,
            staged_restore: None,
        };
        let acl = t.intern_acl(&Acl::open_unsafe());
        let root = Znode::new(ROOT, Arc::from(&[][..]), Some(Bytes::new()), acl, NodeStat::default());
        t.nodes.insert(root);
        t
    }

    fn attach(&mut self, parent: NodeId, name: &str, data: Option<Bytes>, acl: Arc<[Acl]>, stat: NodeStat) -> NodeId {
        let enc = self.nodes.names.intern(name);
        self.attach_encoded(parent, utf16_len(name), enc, data, acl, stat)
    }

    /// `attach` with the name already encoded (`enc` holds its segment uses).
    fn attach_encoded(
        &mut self,
        parent: NodeId,
        name_utf16: u64,
        enc: node::Encoded,
        data: Option<Bytes>,
        acl: Arc<[Acl]>,
        stat: NodeStat,
    ) -> NodeId {
        let data = data.map(own_data);
        self.data_size += self.path_len(parent) + 1 + name_utf16 + data.as_ref().map_or(0, |d| d.len() as u64);
        let name = enc;
        let id = self.nodes.insert(Znode::new(parent, name, data, acl, stat));
        self.nodes.add_child(parent, id, &self.hasher);
        self.children_changed(parent);
        self.children_changed(id);
        id
    }

    /// Drops a directory's cached child list: its children changed (or its id was reused).
    fn children_changed(&mut self, id: NodeId) {
        let c = self.child_lists.inner.get_mut();
        if !c.lists.is_empty() {
            c.forget(id);
        }
    }

    /// The node's child names encoded as a jute `vector<ustring>`, in the order the child map
    /// yields them (what getChildren has always sent), from the cache when it is still valid.
    pub fn encoded_children(&self, id: NodeId) -> Option<Bytes> {
        let n = self.nodes.get(id)?;
        let mut c = self.child_lists.inner.lock();
        if let Some(b) = c.lists.get(&id) {
            return Some(b.clone());
        }
        let encoded = crate::proto::encode_children(self.nodes.child_names(n));
        if encoded.len() <= CHILD_LIST_MAX {
            if c.bytes + encoded.len() > CHILD_LISTS_TOTAL {
                c.lists.clear();
                c.bytes = 0;
            }
            c.bytes += encoded.len();
            c.lists.insert(id, encoded.clone());
        }
        Some(encoded)
    }

    /// Shares identical ACL lists between nodes (ZooKeeper's ReferenceCountedACLCache idea).
    pub fn intern_acl(&mut self, acl: &[Acl]) -> Arc<[Acl]> {
        if let Some(a) = self.acl_cache.get(acl) {
            return a.clone();
        }
        let a: Arc<[Acl]> = Arc::from(acl);
        self.acl_cache.insert(a.clone());
        a
    }

    pub fn last_zxid(&self) -> Zxid {
        self.last_zxid
    }

    /// Adds a node read from a snapshot; its parent must already be there ("/" updates the root).
    /// `children` is a capacity hint (0 if unknown).
    pub fn restore_node(
        &mut self,
        path: &str,
        data: Option<Bytes>,
        acl: &[Acl],
        stat: NodeStat,
        children: usize,
    ) -> bool {
        let acl = self.intern_acl(acl);
        if path == "/" {
            if let Some(root) = self.nodes.get_mut(ROOT) {
                self.data_size += data.as_ref().map_or(0, |d| d.len() as u64);
                root.data = data;
                root.acl = acl;
                root.stat = stat;
            }
            self.nodes.reserve_children(ROOT, children, &self.hasher);
            self.children_changed(ROOT);
            return true;
        }
        let Some(parent) = self.lookup(path::parent(path)) else { return false };
        let name = path::name(path);
        // A path listed twice: the later entry wins, as a map insert did (child tables allow
        // duplicates, so the earlier one is unlinked first). The name is encoded once: stored
        // names are encoded canonically, so the new encoding finds the old node.
        let enc = self.nodes.names.intern(name);
        let hash = self.hasher.hash_one(&*enc);
        if let Some(old) = self.nodes.get(parent).and_then(|p| self.nodes.child(p, hash, &enc)) {
            self.nodes.remove_child(parent, old, hash);
        }
        let id = self.attach_encoded(parent, utf16_len(name), enc, data, acl, stat);
        self.nodes.reserve_children(id, children, &self.hasher);
        self.children_changed(id);
        self.index(id, stat.ephemeral_owner);
        true
    }

    /// Puts back a name segment a snapshot (format 2) recorded; see [`names::NameDict::restore_segment`].
    pub fn restore_segment(&mut self, id: u32, bytes: &[u8]) -> bool {
        self.nodes.names.restore_segment(id, bytes)
    }

    /// Adds a node read from a snapshot of format 2: its name as stored (encoded against the
    /// restored segments) under `parent`. `None` if the name refers to no restored segment or
    /// the parent already has a child of that name (not a snapshot this code wrote).
    pub fn restore_encoded(
        &mut self,
        parent: NodeId,
        enc: &[u8],
        data: Option<Bytes>,
        acl: &[Acl],
        stat: NodeStat,
        children: usize,
    ) -> Option<NodeId> {
        let hash = self.hasher.hash_one(enc);
        if self.nodes.child(self.nodes.get(parent)?, hash, enc).is_some() {
            return None;
        }
        let enc = self.nodes.names.adopt(enc)?;
        let acl = self.intern_acl(acl);
        let utf16 = self.nodes.names.utf16_len(&enc);
        let id = self.attach_encoded(parent, utf16, enc, data, acl, stat);
        self.nodes.reserve_children(id, children, &self.hasher);
        self.children_changed(id);
        self.index(id, stat.ephemeral_owner);
        Some(id)
    }

    /// Ends a snapshot restore (format 2): frees the segment ids no name took.
    pub fn finish_restore(&mut self) {
        self.nodes.names.finish_restore();
    }

    /// The name segments in use, with their ids, for a snapshot.
    pub fn name_segments(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        self.nodes.names.segments()
    }

    /// Visits every node, parents before children, with its position in the visit (the root is
    /// 0), its parent's position (`u32::MAX` for the root) and its name as stored: what a
    /// snapshot of format 2 writes, with no path built per node.
    pub fn visit_encoded(&self, mut f: impl FnMut(u32, &[u8], &Znode)) {
        let mut next = 0u32;
        let mut stack: Vec<(NodeId, u32)> = vec![(ROOT, u32::MAX)];
        while let Some((id, parent)) = stack.pop() {
            let Some(n) = self.nodes.get(id) else { continue };
            let me = next;
            next += 1;
            f(parent, if id == ROOT { &[] } else { &n.name }, n);
            stack.extend(n.child_ids().map(|c| (c, me)));
        }
    }

    pub fn restore_session(&mut self, id: SessionId, info: SessionInfo) {
        self.sessions.insert(id, info);
    }

    /// Attaches an ensemble's session to a member (see `SessionOwner`); false if there is no
    /// such session.
    pub fn set_owner(&mut self, id: SessionId, owner: SessionOwner) -> bool {
        match self.sessions.get_mut(&id) {
            Some(s) => {
                s.owner = Some(owner);
                true
            }
            None => false,
        }
    }

    /// Marks every session as imported from ZooKeeper (their clients keep ZooKeeper passwords).
    pub fn mark_sessions_imported(&mut self) {
        for s in self.sessions.values_mut() {
            s.zk_password = true;
        }
    }

    /// The pending reconfig's record (see the field).
    pub fn pending_reconfig(&self) -> Option<&[u8]> {
        self.pending_reconfig.as_deref()
    }

    pub fn set_pending_reconfig(&mut self, record: Option<Vec<u8>>) {
        self.pending_reconfig = record;
    }

    /// The restore being staged (see the field).
    pub fn staged_restore(&self) -> Option<&StagedRestore> {
        self.staged_restore.as_ref()
    }

    pub fn set_staged_restore(&mut self, staged: Option<StagedRestore>) {
        self.staged_restore = staged;
    }

    pub fn staged_restore_mut(&mut self) -> Option<&mut StagedRestore> {
        self.staged_restore.as_mut()
    }

    pub fn set_last_zxid(&mut self, zxid: Zxid) {
        self.last_zxid = zxid;
    }

    /// Visits every node, parents before children (the order snapshots are written in).
    ///
    /// Depth first with one path buffer: the stack holds only ids and the length of the parent's
    /// path, so a directory of a million children costs 8 bytes per child while it is walked,
    /// not a million full path strings at once.
    pub fn visit(&self, mut f: impl FnMut(&str, &Znode)) {
        let mut path = String::new();
        // (node, length of its parent's path in `path`; the root's children join onto "").
        let mut stack: Vec<(NodeId, usize)> = vec![(ROOT, 0)];
        while let Some((id, parent_len)) = stack.pop() {
            let Some(n) = self.nodes.get(id) else { continue };
            path.truncate(parent_len);
            if id == ROOT {
                f("/", n);
            } else {
                path.push('/');
                self.nodes.names.decode_into(&n.name, &mut path);
                f(&path, n);
            }
            let len = if id == ROOT { 0 } else { path.len() };
            stack.extend(n.child_ids().map(|c| (c, len)));
        }
    }

    /// Visits every node with the byte length of its path (the root's is 0, as ZooKeeper
    /// writes it ""): what `visit` would pass, without building the paths.
    pub fn visit_path_lengths(&self, mut f: impl FnMut(u64, &Znode)) {
        let mut stack: Vec<(NodeId, u64)> = vec![(ROOT, 0)];
        while let Some((id, parent_len)) = stack.pop() {
            let Some(n) = self.nodes.get(id) else { continue };
            let len = if id == ROOT { 0 } else { parent_len + 1 + self.nodes.names.utf8_len(&n.name) };
            f(len, n);
            stack.extend(n.child_ids().map(|c| (c, len)));
        }
    }

    /// The node at an exact path; "" is the root as in ZooKeeper's node map, and any path
    /// with an empty component or a trailing slash is simply absent.
    pub fn lookup(&self, path: &str) -> Option<NodeId> {
        if path.is_empty() || path == "/" {
            return Some(ROOT);
        }
        let rest = path.strip_prefix('/')?;
        let mut id = ROOT;
        for comp in rest.split('/') {
            id = self.child_named(id, comp)?;
        }
        Some(id)
    }

    /// The child of `parent` named `name`.
    fn child_named(&self, parent: NodeId, name: &str) -> Option<NodeId> {
        let enc = self.nodes.names.lookup(name)?;
        self.nodes.child(self.nodes.get(parent)?, self.hasher.hash_one(enc.as_slice()), &enc)
    }

    /// A node's child names in its child table's order (nothing if there is no such node).
    pub fn child_names(&self, id: NodeId) -> ChildNames<'_> {
        match self.nodes.get(id) {
            Some(n) => self.nodes.child_names(n),
            None => self.nodes.child_names_none(),
        }
    }

    pub fn node(&self, id: NodeId) -> Option<&Znode> {
        self.nodes.get(id)
    }

    pub fn get(&self, path: &str) -> Option<&Znode> {
        self.lookup(path).and_then(|id| self.nodes.get(id))
    }

    /// Derives the full path of a node from its parent chain.
    pub fn path_of(&self, id: NodeId) -> String {
        let mut names = Vec::new();
        let mut cur = id;
        while cur != ROOT {
            let Some(n) = self.nodes.get(cur) else { break };
            names.push(&n.name);
            cur = n.parent;
        }
        if names.is_empty() {
            return "/".to_owned();
        }
        let mut p = String::new();
        for n in names.iter().rev() {
            p.push('/');
            self.nodes.names.decode_into(n, &mut p);
        }
        p
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// mntr's `approximate_data_size`: every node's path length plus data length, as
    /// ZooKeeper's `DataTree.approximateDataSize` (paths counted in Java chars, the root twice).
    pub fn data_size(&self) -> u64 {
        self.data_size
    }

    /// Length of a node's full path in UTF-16 units (Java's `String.length()`); 0 for the root,
    /// so that a child's is its parent's + 1 + its name's.
    fn path_len(&self, mut id: NodeId) -> u64 {
        let mut len = 0;
        while id != ROOT {
            let Some(n) = self.nodes.get(id) else { break };
            len += 1 + self.nodes.names.utf16_len(&n.name);
            id = n.parent;
        }
        len
    }

    /// Number of descendants of `path` (getAllChildrenNumber); "/" counts every node but the root.
    pub fn descendant_count(&self, id: NodeId) -> i32 {
        let mut count = 0;
        let mut stack = vec![id];
        while let Some(cur) = stack.pop() {
            if let Some(n) = self.nodes.get(cur) {
                count += n.child_count() as i32;
                stack.extend(n.child_ids());
            }
        }
        count
    }

    pub fn sessions(&self) -> &BTreeMap<SessionId, SessionInfo> {
        &self.sessions
    }

    /// Paths of the ephemerals a session owns.
    pub fn ephemerals_of(&self, session: SessionId) -> Vec<String> {
        self.ephemerals.get(&session).map(|ids| ids.iter().map(|id| self.path_of(*id)).collect()).unwrap_or_default()
    }

    pub fn ephemeral_count(&self) -> usize {
        self.ephemerals.values().map(|s| s.len()).sum()
    }

    /// Containers that are empty and have had a child (cversion > 0): ContainerManager's candidates.
    pub fn container_candidates(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .containers
            .iter()
            .filter_map(|id| self.nodes.get(*id).map(|n| (id, n)))
            .filter(|(_, n)| !n.has_children() && n.stat.cversion > 0)
            .map(|(id, _)| self.path_of(*id))
            .collect();
        out.sort();
        out
    }

    /// TTL nodes that are empty and unmodified for longer than their TTL at `now`.
    pub fn expired_ttls(&self, now: i64) -> Vec<String> {
        let mut out: Vec<String> = self
            .ttls
            .iter()
            .filter_map(|id| self.nodes.get(*id).map(|n| (id, n)))
            .filter(|(_, n)| {
                let ttl = owner::ttl_of(n.stat.ephemeral_owner).unwrap_or(0);
                !n.has_children() && ttl != 0 && now - n.stat.mtime > ttl
            })
            .map(|(id, _)| self.path_of(*id))
            .collect();
        out.sort();
        out
    }
}

/// Length of `s` in UTF-16 code units, what Java's `String.length()` counts.
fn utf16_len(s: &str) -> u64 {
    if s.is_ascii() {
        s.len() as u64
    } else {
        s.encode_utf16().count() as u64
    }
}

#[cfg(test)]
mod tests;
