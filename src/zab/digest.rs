//! ZooKeeper 3.6+'s tree digest, kept beside a `DataTree` that follows a ZooKeeper leader, so
//! every INFORM's `TxnDigest` can be checked (issue 24: "checks the 3.6+ txn digest on each").
//!
//! It is not zkr's own digest (`DataTree::digest`): ZooKeeper hashes each node with one CRC32
//! and leaves `/zookeeper/…` out, and the two must not be mixed.

use crate::import::{TxnDigest, ZkTxn};
use crate::tree::{DataTree, NodeStat, OpOutcome};
use crate::txn::{Txn, Zxid};

/// The digest format ZooKeeper 3.6–3.9 send (`DigestCalculator.DIGEST_VERSION`).
pub const VERSION: i32 = 2;

/// One node's digest as `DigestCalculator.calculateDigest` computes it: CRC32 over the path
/// (`/` hashed as `""`), the data if not null, then czxid, mzxid, pzxid, ctime, mtime, version,
/// cversion, aversion, ephemeralOwner big-endian. Nodes under `/zookeeper/` count 0 (quota nodes
/// are updated locally on each ZooKeeper server, so they are left out there).
pub fn node(path: &str, data: Option<&[u8]>, s: &NodeStat) -> u64 {
    if path.starts_with("/zookeeper/") {
        return 0;
    }
    let path = if path == "/" { "" } else { path };
    let mut fields = [0u8; 60];
    for (i, v) in [s.czxid, s.mzxid, s.pzxid, s.ctime, s.mtime].iter().enumerate() {
        fields[i * 8..i * 8 + 8].copy_from_slice(&v.to_be_bytes());
    }
    for (i, v) in [s.version, s.cversion, s.aversion].iter().enumerate() {
        fields[40 + i * 4..44 + i * 4].copy_from_slice(&v.to_be_bytes());
    }
    fields[52..60].copy_from_slice(&s.ephemeral_owner.to_be_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(path.as_bytes());
    if let Some(d) = data {
        h.update(d);
    }
    h.update(&fields);
    u64::from(h.finalize())
}

/// The tree digest: the wrapping sum of the node digests (ZooKeeper's `AdHash`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZkDigest(u64);

impl ZkDigest {
    /// Walks the whole tree once.
    pub fn of(tree: &DataTree) -> ZkDigest {
        let mut sum = 0u64;
        tree.visit(|p, n| sum = sum.wrapping_add(node(p, n.data.as_deref(), &n.stat)));
        ZkDigest(sum)
    }

    /// As ZooKeeper sends it in a `TxnDigest`.
    pub fn value(&self) -> i64 {
        self.0 as i64
    }

    fn of_paths(tree: &DataTree, paths: &[String]) -> u64 {
        paths.iter().filter_map(|p| tree.get(p).map(|n| node(p, n.data.as_deref(), &n.stat))).fold(0, u64::wrapping_add)
    }

    /// Applies `txn` to `tree` and moves the digest by what it changed.
    pub fn apply(&mut self, tree: &mut DataTree, txn: &Txn, changes: &mut Vec<crate::tree::Change>) -> OpOutcome {
        let paths = tree.paths_touched_by(txn);
        let before = Self::of_paths(tree, &paths);
        let out = tree.apply(txn, changes);
        let after = Self::of_paths(tree, &paths);
        self.0 = self.0.wrapping_sub(before).wrapping_add(after);
        out
    }
}

/// A tree that follows a ZooKeeper leader keeps this beside it: the digest, and how each txn's
/// `TxnDigest` compared.
#[derive(Debug, Clone, Copy)]
pub struct Checked {
    digest: ZkDigest,
    /// Txns that carried a digest of this format and were checked.
    pub checked: u64,
    /// Txns whose digest disagreed with this tree's after applying them (each logged).
    pub mismatches: u64,
}

impl Checked {
    pub fn of(tree: &DataTree) -> Checked {
        Checked { digest: ZkDigest::of(tree), checked: 0, mismatches: 0 }
    }

    /// The tree was replaced (a SNAP): the digest starts over from it; the counts go on.
    pub fn reset(&mut self, tree: &DataTree) {
        self.digest = ZkDigest::of(tree);
    }

    pub fn value(&self) -> i64 {
        self.digest.value()
    }

    /// Applies a txn from the leader, moving the digest by what it changed.
    pub fn apply(&mut self, tree: &mut DataTree, txn: &Txn, changes: &mut Vec<crate::tree::Change>) -> OpOutcome {
        self.digest.apply(tree, txn, changes)
    }

    /// Compares the tree's digest after txn `zxid` with the one the leader sent. A mismatch is
    /// logged and counted, not fatal: ZooKeeper does the same (`DataTree.compareDigest`), and a
    /// txn replayed over the fuzzy SNAP may differ.
    pub fn check(&mut self, zxid: Zxid, sent: Option<TxnDigest>) {
        let Some(d) = sent.filter(|d| d.version == VERSION) else { return };
        self.checked += 1;
        if d.tree != self.digest.value() {
            self.mismatches += 1;
            tracing::warn!(
                zxid = format_args!("{zxid:#x}"),
                leader = format_args!("{:#x}", d.tree),
                ours = format_args!("{:#x}", self.digest.value()),
                "the tree digest after this txn differs from the ZooKeeper leader's"
            );
        }
    }

    /// `apply`, then `check`.
    pub fn apply_checked(
        &mut self,
        tree: &mut DataTree,
        t: &ZkTxn,
        changes: &mut Vec<crate::tree::Change>,
    ) -> OpOutcome {
        let out = self.apply(tree, &t.txn, changes);
        self.check(t.txn.zxid, t.digest);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_zookeeper_subtree_counts_zero_and_root_hashes_as_empty() {
        let s = NodeStat {
            czxid: 1,
            mzxid: 2,
            pzxid: 3,
            ctime: 4,
            mtime: 5,
            version: 6,
            cversion: 7,
            aversion: 8,
            ephemeral_owner: 9,
        };
        assert_eq!(node("/zookeeper/quota", None, &s), 0);
        assert_ne!(node("/zookeeper", None, &s), 0);
        assert_eq!(node("/", Some(b""), &s), node("", None, &s));
        let mut fields = Vec::new();
        for v in [1i64, 2, 3, 4, 5] {
            fields.extend_from_slice(&v.to_be_bytes());
        }
        for v in [6i32, 7, 8] {
            fields.extend_from_slice(&v.to_be_bytes());
        }
        fields.extend_from_slice(&9i64.to_be_bytes());
        let want = crc32fast::hash(&[&b"/a"[..], b"xy", &fields].concat());
        assert_eq!(node("/a", Some(b"xy"), &s), u64::from(want));
    }
}
