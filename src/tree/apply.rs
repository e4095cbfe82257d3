//! Applying txns to the tree, and the tree's digest that `apply` keeps current: the
//! deterministic state machine every member runs in the same order.

use super::*;

impl DataTree {
    /// The tree's digest: the wrapping sum of a hash of each node's path, stat and data (as
    /// ZooKeeper 3.6's DigestCalculator sums its nodes), so it does not depend on the order nodes
    /// were added or are listed, and two members (or a member and its snapshot) holding the same
    /// tree agree on it. The first call walks the tree; `apply` keeps it current after that.
    pub fn digest(&mut self) -> u64 {
        if let Some(d) = self.digest {
            return d;
        }
        let mut d = 0u64;
        self.visit(|path, n| d = d.wrapping_add(node_digest(path, n)));
        self.digest = Some(d);
        d
    }

    /// The paths a txn can change (its nodes, their parents, their quota nodes), sorted and
    /// unique: what a digest kept beside the tree (ZooKeeper's, in `zab::digest`) re-hashes.
    pub fn paths_touched_by(&self, txn: &Txn) -> Vec<String> {
        let mut paths = Vec::new();
        self.touched_paths(txn, &txn.op, &mut paths);
        paths.sort();
        paths.dedup();
        paths
    }

    /// The paths a txn can change the digest of: its nodes and their parents.
    fn touched_paths(&self, txn: &Txn, op: &TxnOp, out: &mut Vec<String>) {
        match op {
            TxnOp::Create { path: p, .. } | TxnOp::Delete { path: p } => {
                out.push(p.clone());
                out.push(path::parent(p).to_owned());
                self.quota_paths_touched(p, out);
            }
            TxnOp::SetData { path: p, .. } => {
                out.push(p.clone());
                self.quota_paths_touched(p, out);
            }
            TxnOp::SetAcl { path: p, .. } => out.push(p.clone()),
            TxnOp::Multi(ops) => ops.iter().for_each(|o| self.touched_paths(txn, o, out)),
            TxnOp::CloseSession => {
                for p in self.ephemerals_of(txn.session) {
                    out.push(path::parent(&p).to_owned());
                    self.quota_paths_touched(&p, out);
                    out.push(p);
                }
            }
            TxnOp::CreateSession { .. } | TxnOp::Check { .. } | TxnOp::Error(_) => {}
        }
    }

    fn digest_of_paths(&self, paths: &[String]) -> u64 {
        paths.iter().filter_map(|p| self.get(p).map(|n| node_digest(p, n))).fold(0, u64::wrapping_add)
    }

    /// Applies a txn. Deterministic: the same txns in the same order give the same tree.
    pub fn apply(&mut self, txn: &Txn, changes: &mut Vec<Change>) -> OpOutcome {
        let Some(digest) = self.digest else { return self.apply_untracked(txn, changes) };
        let paths = self.paths_touched_by(txn);
        let before = self.digest_of_paths(&paths);
        let out = self.apply_untracked(txn, changes);
        let after = self.digest_of_paths(&paths);
        self.digest = Some(digest.wrapping_sub(before).wrapping_add(after));
        out
    }

    fn apply_untracked(&mut self, txn: &Txn, changes: &mut Vec<Change>) -> OpOutcome {
        let out = self.apply_op(txn, &txn.op, changes);
        if txn.zxid > self.last_zxid {
            self.last_zxid = txn.zxid;
        }
        out
    }

    fn apply_op(&mut self, txn: &Txn, op: &TxnOp, changes: &mut Vec<Change>) -> OpOutcome {
        match op {
            TxnOp::CreateSession { timeout_ms, password } => {
                self.sessions.insert(
                    txn.session,
                    SessionInfo { timeout_ms: *timeout_ms, zk_password: false, password: *password, owner: None },
                );
                OpOutcome::Session
            }
            TxnOp::CloseSession => {
                self.sessions.remove(&txn.session);
                let mut paths = self.ephemerals_of(txn.session);
                paths.sort();
                for p in paths {
                    self.delete_node(&p, txn.zxid, changes);
                }
                self.ephemerals.remove(&txn.session);
                OpOutcome::Session
            }
            TxnOp::Create { path, data, acl, ephemeral_owner, parent_cversion } => {
                match self.create_node(path, data.clone(), acl.clone(), *ephemeral_owner, *parent_cversion, txn) {
                    Some(stat) => {
                        changes.push(Change::Created(path.clone()));
                        changes.push(Change::ChildrenChanged(path::parent(path).to_owned()));
                        OpOutcome::Created { path: path.clone(), stat }
                    }
                    None => OpOutcome::Error(crate::proto::ErrorCode::NoNode),
                }
            }
            TxnOp::Delete { path } => {
                self.delete_node(path, txn.zxid, changes);
                OpOutcome::Deleted
            }
            TxnOp::SetData { path, data, version } => {
                let Some(id) = self.lookup(path) else {
                    return OpOutcome::Error(crate::proto::ErrorCode::NoNode);
                };
                let Some(n) = self.nodes.get_mut(id) else {
                    return OpOutcome::Error(crate::proto::ErrorCode::NoNode);
                };
                let old = n.data_len() as u64;
                n.data = data.clone().map(own_data);
                n.stat.version = *version;
                n.stat.mzxid = txn.zxid;
                n.stat.mtime = txn.time;
                let stat = n.wire_stat();
                self.data_size = (self.data_size + stat.data_length as u64).saturating_sub(old);
                self.quota_after_set_data(path, i64::from(stat.data_length) - old as i64);
                changes.push(Change::DataChanged(path.clone()));
                OpOutcome::SetData { stat }
            }
            TxnOp::SetAcl { path, acl, aversion } => {
                let acl = self.intern_acl(acl);
                let Some(n) = self.lookup(path).and_then(|id| self.nodes.get_mut(id)) else {
                    return OpOutcome::Error(crate::proto::ErrorCode::NoNode);
                };
                n.acl = acl;
                n.stat.aversion = *aversion;
                OpOutcome::SetAcl { stat: n.wire_stat() }
            }
            TxnOp::Check { .. } => OpOutcome::Checked,
            TxnOp::Multi(ops) => {
                // A multi with an error sub-txn applies nothing (DataTree.processTxn). zkr's prep
                // already logs such a multi as all errors; ZooKeeper's own logs (import) keep
                // the ops before the failing one, so they are turned into errors here.
                if let Some(failed) = ops.iter().position(|o| matches!(o, TxnOp::Error(_))) {
                    let code = |i: usize, o: &TxnOp| match o {
                        TxnOp::Error(code) => *code,
                        _ if i < failed => crate::proto::ErrorCode::Ok,
                        _ => crate::proto::ErrorCode::RuntimeInconsistency,
                    };
                    return OpOutcome::Multi(
                        ops.iter().enumerate().map(|(i, o)| OpOutcome::Error(code(i, o))).collect(),
                    );
                }
                OpOutcome::Multi(ops.iter().map(|op| self.apply_op(txn, op, changes)).collect())
            }
            TxnOp::Error(code) => OpOutcome::Error(*code),
        }
    }

    fn create_node(
        &mut self,
        path: &str,
        data: Option<Bytes>,
        acl: Arc<[Acl]>,
        ephemeral_owner: i64,
        parent_cversion: i32,
        txn: &Txn,
    ) -> Option<Stat> {
        let parent = self.lookup(path::parent(path))?;
        let name = path::name(path);
        if self.child_named(parent, name).is_some() {
            // Only on replay over a fuzzy (ZooKeeper) snapshot: ZooKeeper's FileTxnSnapLog
            // still moves the parent's cversion and pzxid forward (setCversionPzxid).
            if let Some(p) = self.nodes.get_mut(parent) {
                if parent_cversion > p.stat.cversion {
                    p.stat.cversion = parent_cversion;
                    p.stat.pzxid = txn.zxid;
                }
            }
            return None;
        }
        let acl = self.intern_acl(&acl);
        let stat = NodeStat {
            czxid: txn.zxid,
            mzxid: txn.zxid,
            pzxid: txn.zxid,
            ctime: txn.time,
            mtime: txn.time,
            version: 0,
            cversion: 0,
            aversion: 0,
            ephemeral_owner,
        };
        let id = self.attach(parent, name, data, acl, stat);
        if let Some(p) = self.nodes.get_mut(parent) {
            // DataTree.createNode only moves cversion forward (replay of a fuzzy snapshot).
            if parent_cversion > p.stat.cversion {
                p.stat.cversion = parent_cversion;
                p.stat.pzxid = txn.zxid;
            }
        }
        self.index(id, ephemeral_owner);
        // The reply's Stat is taken before the quota bookkeeping, as createNode copies it first.
        let stat = self.nodes.get(id).map(|n| n.wire_stat());
        self.quota_after_create(path, stat.map_or(0, |s| i64::from(s.data_length)));
        stat
    }

    /// Registers a node in the container, TTL or ephemeral index its owner puts it in.
    pub(super) fn index(&mut self, id: NodeId, ephemeral_owner: i64) {
        if ephemeral_owner == owner::CONTAINER {
            self.containers.insert(id);
        } else if owner::ttl_of(ephemeral_owner).is_some() {
            self.ttls.insert(id);
        } else if ephemeral_owner != 0 {
            self.ephemerals.entry(ephemeral_owner).or_default().insert(id);
        }
    }

    /// Removes a childless node. The parent's pzxid moves forward; its stored cversion does not
    /// (it counts creates; the delete shows through `wire_stat`), as in DataTree.deleteNode.
    fn delete_node(&mut self, path: &str, zxid: Zxid, changes: &mut Vec<Change>) {
        let Some(id) = self.lookup(path) else {
            // Replay over a fuzzy snapshot: the parent's pzxid still moves (DataTree.deleteNode).
            if let Some(p) = self.lookup(path::parent(path)).and_then(|p| self.nodes.get_mut(p)) {
                if zxid > p.stat.pzxid {
                    p.stat.pzxid = zxid;
                }
            }
            return;
        };
        if id == ROOT {
            return;
        }
        let path_len = self.path_len(id);
        let Some(node) = self.nodes.remove(id) else {
            return;
        };
        // Saturating: quota stats nodes change size without being counted (see `quota`).
        self.data_size = self.data_size.saturating_sub(path_len + node.data_len() as u64);
        self.nodes.remove_child(node.parent, id, self.hasher.hash_one(&*node.name));
        if let Some(p) = self.nodes.get_mut(node.parent) {
            if zxid > p.stat.pzxid {
                p.stat.pzxid = zxid;
            }
        }
        self.children_changed(node.parent);
        self.children_changed(id);
        let o = node.stat.ephemeral_owner;
        if o == owner::CONTAINER {
            self.containers.remove(&id);
        } else if owner::ttl_of(o).is_some() {
            self.ttls.remove(&id);
        } else if o != 0 {
            if let Some(set) = self.ephemerals.get_mut(&o) {
                set.remove(&id);
                if set.is_empty() {
                    self.ephemerals.remove(&o);
                }
            }
        }
        self.quota_after_delete(path, i64::from(node.data_len()));
        changes.push(Change::Deleted(path.to_owned(), node.acl.clone()));
        changes.push(Change::ChildrenChanged(path::parent(path).to_owned()));
    }
}

/// One node's part of the tree digest: two CRC-32s (different seeds) of its path, stat fields
/// and data, as one 64-bit value. Fixed seeds: comparable across processes and versions.
fn node_digest(path: &str, n: &Znode) -> u64 {
    let mut a = crc32fast::Hasher::new_with_initial(0x7a6b_7231);
    let mut b = crc32fast::Hasher::new_with_initial(0x1357_9bdf);
    let s = &n.stat;
    let mut fields = [0u8; 60];
    for (i, v) in [s.czxid, s.mzxid, s.pzxid, s.ctime, s.mtime, s.ephemeral_owner].iter().enumerate() {
        fields[i * 8..i * 8 + 8].copy_from_slice(&v.to_be_bytes());
    }
    for (i, v) in [s.version, s.cversion, s.aversion].iter().enumerate() {
        fields[48 + i * 4..52 + i * 4].copy_from_slice(&v.to_be_bytes());
    }
    for h in [&mut a, &mut b] {
        h.update(path.as_bytes());
        h.update(&fields);
        h.update(n.data.as_deref().unwrap_or(b"\xff"));
    }
    (u64::from(a.finalize()) << 32) | u64::from(b.finalize())
}
