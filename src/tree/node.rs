//! Znode storage: a slab of nodes addressed by `NodeId`, each child name stored once.
//!
//! A node keeps its name (compressed against the slab's segment dictionary, see `names`) and its
//! parent's id; the parent's child table holds only child ids
//! (looked up by hashing the name and comparing with the child's own name), so each name is
//! stored once. Full paths are derived on demand, never stored per node.

pub use super::names::Encoded;
use super::names::NameDict;
use crate::proto::{Acl, Stat};
use crate::txn::Zxid;
use bytes::Bytes;
use std::sync::Arc;

pub type NodeId = u32;

/// A node's children: their ids, hashed by name with the tree's aHash state (keyed per process,
/// so flood-resistant; SipHash over 300–1500-byte provider names dominated recovery profiles).
/// 5 bytes per slot instead of a 16-byte name pointer plus the id.
pub type Children = hashbrown::HashTable<NodeId>;

/// A znode's metadata without the two derived fields (dataLength, numChildren).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NodeStat {
    pub czxid: Zxid,
    pub mzxid: Zxid,
    pub pzxid: Zxid,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    pub cversion: i32,
    pub aversion: i32,
    pub ephemeral_owner: i64,
}

#[derive(Debug, Clone)]
pub struct Znode {
    pub parent: NodeId,
    /// Encoded against the slab's `NameDict` (decode with it). Shared, not owned: the snapshot
    /// copy of the tree then costs a pointer per name, not the name.
    pub(super) name: Encoded,
    /// `None` is jute null (zkCli's `create /a` without data), distinct from empty.
    pub data: Option<Bytes>,
    pub acl: Arc<[Acl]>,
    pub stat: NodeStat,
    /// `None` for a leaf: most znodes (every provider URL) never get a child, and an empty map
    /// with its hasher state is 64 bytes against 8 for the `None`.
    children: Option<Box<Children>>,
}

impl Znode {
    pub(super) fn new(parent: NodeId, name: Encoded, data: Option<Bytes>, acl: Arc<[Acl]>, stat: NodeStat) -> Znode {
        Znode { parent, name, data, acl, stat, children: None }
    }

    pub fn child_count(&self) -> usize {
        self.children.as_ref().map_or(0, |c| c.len())
    }

    pub fn has_children(&self) -> bool {
        self.child_count() > 0
    }

    pub fn child_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.children.iter().flat_map(|c| c.iter().copied())
    }

    pub fn data_len(&self) -> i32 {
        self.data.as_ref().map_or(0, |d| d.len() as i32)
    }

    /// The Stat clients see, computed as ZooKeeper's `DataNode.copyStat` does.
    pub fn wire_stat(&self) -> Stat {
        let s = &self.stat;
        let num_children = self.child_count() as i32;
        Stat {
            czxid: s.czxid,
            mzxid: s.mzxid,
            ctime: s.ctime,
            mtime: s.mtime,
            version: s.version,
            // Stored cversion counts creates; ZooKeeper reports creates + deletes ("v3 semantics"):
            // `2 × creates − children`, so `/zookeeper` shows -2.
            cversion: s.cversion.wrapping_mul(2).wrapping_sub(num_children),
            aversion: s.aversion,
            // `getClientEphemeralOwner`: containers and TTL nodes report 0.
            ephemeral_owner: if crate::txn::owner::is_session(s.ephemeral_owner) { s.ephemeral_owner } else { 0 },
            data_length: self.data_len(),
            num_children,
            pzxid: s.pzxid,
        }
    }
}

/// A node's child names in its child table's order (what getChildren sends); nothing for a leaf.
/// Sized, as the list encoder writes the count first.
pub struct ChildNames<'a> {
    ids: Option<hashbrown::hash_table::Iter<'a, NodeId>>,
    nodes: &'a Slab,
}

impl Iterator for ChildNames<'_> {
    type Item = String;

    fn next(&mut self) -> Option<Self::Item> {
        let id = *self.ids.as_mut()?.next()?;
        Some(self.nodes.get(id).map_or_else(String::new, |n| self.nodes.names.decode(&n.name)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.ids.as_ref().map_or((0, Some(0)), |k| k.size_hint())
    }
}

impl ExactSizeIterator for ChildNames<'_> {}

/// Nodes per chunk of the slab: what a write during a snapshot copies at most, once.
const CHUNK: usize = 256;

/// Slab of znodes with a free list; ids are reused after delete.
///
/// The slots live in chunks shared by reference: a clone of the slab (the copy a snapshot is
/// written from) copies one pointer per chunk, and a chunk is copied only when a node in it
/// changes while a snapshot still holds it (`Arc::make_mut`). Without a snapshot running no
/// chunk is shared, and a change copies nothing.
#[derive(Debug, Default, Clone)]
pub struct Slab {
    chunks: Vec<Arc<Vec<Option<Znode>>>>,
    /// Slots handed out so far (used or free).
    slots: usize,
    free: Vec<NodeId>,
    len: usize,
    /// The segments of every stored name; a node's name takes its uses when it is encoded
    /// (`names.intern`) and gives them back when the node is removed.
    pub names: NameDict,
}

impl Slab {
    fn slot_mut(&mut self, id: NodeId) -> Option<&mut Option<Znode>> {
        let i = id as usize;
        Arc::make_mut(self.chunks.get_mut(i / CHUNK)?).get_mut(i % CHUNK)
    }

    pub fn insert(&mut self, node: Znode) -> NodeId {
        self.len += 1;
        if let Some(id) = self.free.pop() {
            if let Some(slot) = self.slot_mut(id) {
                *slot = Some(node);
                return id;
            }
        }
        let id = self.slots as NodeId;
        if self.slots.is_multiple_of(CHUNK) {
            self.chunks.push(Arc::new(Vec::with_capacity(CHUNK)));
        }
        if let Some(last) = self.chunks.last_mut() {
            Arc::make_mut(last).push(Some(node));
        }
        self.slots += 1;
        id
    }

    pub fn remove(&mut self, id: NodeId) -> Option<Znode> {
        let n = self.slot_mut(id)?.take()?;
        self.names.release(&n.name);
        self.free.push(id);
        self.len -= 1;
        Some(n)
    }

    pub fn get(&self, id: NodeId) -> Option<&Znode> {
        let i = id as usize;
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)?.as_ref()
    }

    pub fn get_mut(&mut self, id: NodeId) -> Option<&mut Znode> {
        self.slot_mut(id)?.as_mut()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    /// The child of `parent` whose encoded name is `name` (`hash` hashes it).
    pub fn child(&self, parent: &Znode, hash: u64, name: &[u8]) -> Option<NodeId> {
        let c = parent.children.as_ref()?;
        c.find(hash, |&id| self.get(id).is_some_and(|n| &*n.name == name)).copied()
    }

    pub fn child_names<'a>(&'a self, parent: &'a Znode) -> ChildNames<'a> {
        ChildNames { ids: parent.children.as_ref().map(|c| c.iter()), nodes: self }
    }

    pub fn child_names_none(&self) -> ChildNames<'_> {
        ChildNames { ids: None, nodes: self }
    }

    /// Adds `child` (already in the slab) to its parent's table.
    pub fn add_child(&mut self, parent: NodeId, child: NodeId, hasher: &ahash::RandomState) {
        let Some(mut c) = self.get_mut(parent).map(|p| p.children.take().unwrap_or_default()) else { return };
        let rehash = |id: &NodeId| self.get(*id).map_or(0, |n| hasher.hash_one(&*n.name));
        c.insert_unique(rehash(&child), child, rehash);
        if let Some(p) = self.get_mut(parent) {
            p.children = Some(c);
        }
    }

    /// Removes `child` (still in the slab) from its parent's table; the table goes with the
    /// last child, so a directory emptied by churn holds nothing, as a leaf.
    pub fn remove_child(&mut self, parent: NodeId, child: NodeId, hash: u64) {
        let Some(c) = self.get_mut(parent).and_then(|p| p.children.as_mut()) else { return };
        if let Ok(e) = c.find_entry(hash, |&id| id == child) {
            e.remove();
        }
        if c.is_empty() {
            if let Some(p) = self.get_mut(parent) {
                p.children = None;
            }
        }
    }

    /// Room for `n` more children of `parent` (a snapshot records each node's child count).
    pub fn reserve_children(&mut self, parent: NodeId, n: usize, hasher: &ahash::RandomState) {
        if n == 0 {
            return;
        }
        let Some(mut c) = self.get_mut(parent).map(|p| p.children.take().unwrap_or_default()) else { return };
        c.reserve(n, |id| self.get(*id).map_or(0, |n| hasher.hash_one(&*n.name)));
        if let Some(p) = self.get_mut(parent) {
            p.children = Some(c);
        }
    }
}
