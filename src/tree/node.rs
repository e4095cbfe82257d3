//! Znode storage: a slab of nodes addressed by `NodeId`, each child name stored once.
//!
//! A node keeps its name (shared with the parent's child map through one `Arc<str>`) and its
//! parent's id; full paths are derived on demand, never stored per node.

use crate::proto::{Acl, Stat};
use crate::txn::Zxid;
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::Arc;

pub type NodeId = u32;

/// A node's children by name. aHash instead of SipHash: provider names are 300–1500 bytes and
/// SipHash dominated recovery profiles; aHash is keyed per process, so it stays flood-resistant.
pub type Children = HashMap<Arc<str>, NodeId, ahash::RandomState>;

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
    pub name: Arc<str>,
    /// `None` is jute null (zkCli's `create /a` without data), distinct from empty.
    pub data: Option<Bytes>,
    pub acl: Arc<[Acl]>,
    pub stat: NodeStat,
    /// `None` for a leaf: most znodes (every provider URL) never get a child, and an empty map
    /// with its hasher state is 64 bytes against 8 for the `None`.
    children: Option<Box<Children>>,
}

impl Znode {
    pub fn new(parent: NodeId, name: Arc<str>, data: Option<Bytes>, acl: Arc<[Acl]>, stat: NodeStat) -> Znode {
        Znode { parent, name, data, acl, stat, children: None }
    }

    pub fn child_count(&self) -> usize {
        self.children.as_ref().map_or(0, |c| c.len())
    }

    pub fn has_children(&self) -> bool {
        self.child_count() > 0
    }

    /// The child names, in the child map's order (what getChildren sends).
    pub fn child_names(&self) -> ChildNames<'_> {
        ChildNames(self.children.as_ref().map(|c| c.keys()))
    }

    pub fn child_ids(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.children.iter().flat_map(|c| c.values().copied())
    }

    pub fn child(&self, name: &str) -> Option<NodeId> {
        self.children.as_ref()?.get(name).copied()
    }

    pub(super) fn add_child(&mut self, name: Arc<str>, id: NodeId) {
        self.children.get_or_insert_with(Default::default).insert(name, id);
    }

    /// Removes a child; the map goes when the last child does (a directory emptied by churn
    /// holds nothing, as a leaf).
    pub(super) fn remove_child(&mut self, name: &str) {
        if let Some(c) = self.children.as_mut() {
            c.remove(name);
            if c.is_empty() {
                self.children = None;
            }
        }
    }

    /// Room for `n` more children (a snapshot records each node's child count).
    pub(super) fn reserve_children(&mut self, n: usize) {
        if n > 0 {
            self.children.get_or_insert_with(Default::default).reserve(n);
        }
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

/// A node's child names; nothing for a leaf. Sized, as the list encoder writes the count first.
pub struct ChildNames<'a>(Option<std::collections::hash_map::Keys<'a, Arc<str>, NodeId>>);

impl<'a> Iterator for ChildNames<'a> {
    type Item = &'a Arc<str>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.as_mut()?.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.as_ref().map_or((0, Some(0)), |k| k.size_hint())
    }
}

impl ExactSizeIterator for ChildNames<'_> {}

/// Slab of znodes with a free list; ids are reused after delete.
#[derive(Debug, Default, Clone)]
pub struct Slab {
    slots: Vec<Option<Znode>>,
    free: Vec<NodeId>,
    len: usize,
}

impl Slab {
    pub fn insert(&mut self, node: Znode) -> NodeId {
        self.len += 1;
        if let Some(id) = self.free.pop() {
            self.slots[id as usize] = Some(node);
            id
        } else {
            self.slots.push(Some(node));
            (self.slots.len() - 1) as NodeId
        }
    }

    pub fn remove(&mut self, id: NodeId) -> Option<Znode> {
        let n = self.slots.get_mut(id as usize)?.take()?;
        self.free.push(id);
        self.len -= 1;
        Some(n)
    }

    pub fn get(&self, id: NodeId) -> Option<&Znode> {
        self.slots.get(id as usize)?.as_ref()
    }

    pub fn get_mut(&mut self, id: NodeId) -> Option<&mut Znode> {
        self.slots.get_mut(id as usize)?.as_mut()
    }

    pub fn len(&self) -> usize {
        self.len
    }
}
