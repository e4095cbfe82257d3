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
    pub children: Children,
}

impl Znode {
    pub fn data_len(&self) -> i32 {
        self.data.as_ref().map_or(0, |d| d.len() as i32)
    }

    /// The Stat clients see, computed as ZooKeeper's `DataNode.copyStat` does.
    pub fn wire_stat(&self) -> Stat {
        let s = &self.stat;
        let num_children = self.children.len() as i32;
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
