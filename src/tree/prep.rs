//! Prep: turns a write request into a fully resolved `TxnOp`, checking it against the tree
//! exactly as ZooKeeper's PrepRequestProcessor does (same checks, same order, same errors).
//!
//! A multi is checked op by op against an overlay of the changes its earlier ops would make
//! (ZooKeeper's outstanding ChangeRecords), so nothing touches the tree before apply.

use super::quota::{self, QuotaCheck};
use super::{acl, path, DataTree, NodeStat};
use crate::proto::{perms, Acl, CreateMode, CreateRequest, ErrorCode, Id, MultiOp, OpCode, RequestBody};
use crate::txn::{owner, SessionId, TxnOp};
use std::collections::HashMap;
use std::sync::Arc;

/// Who is asking.
pub struct PrepCtx<'a> {
    pub session: SessionId,
    pub ids: &'a [Id],
    /// ZooKeeper's `zookeeper.extendedTypesEnabled` (TTL nodes).
    pub ttl_enabled: bool,
    /// ZooKeeper's `zookeeper.enforceQuota` (zoo.cfg `enforceQuota`): hard quota limits refuse
    /// the write with QuotaExceeded. The proposer's setting travels with the request.
    pub enforce_quota: bool,
}

/// What prep needs to know of a node (ZooKeeper's ChangeRecord).
#[derive(Debug, Clone)]
struct Rec {
    stat: NodeStat,
    child_count: i32,
    acl: Arc<[Acl]>,
    /// Length of the record's data, what `checkQuota` subtracts on setData. A node created
    /// earlier in the same multi counts 0: ZooKeeper's ChangeRecord of a create has null data.
    data_len: i64,
}

/// The tree as it will be after the ops prepared so far in this request.
struct Pending<'t> {
    tree: &'t DataTree,
    overlay: HashMap<String, Option<Rec>>,
}

impl Pending<'_> {
    fn get(&self, p: &str) -> Option<Rec> {
        let key = if p.is_empty() { "/" } else { p };
        if let Some(r) = self.overlay.get(key) {
            return r.clone();
        }
        let n = self.tree.get(key)?;
        Some(Rec {
            stat: n.stat,
            child_count: n.child_count() as i32,
            acl: n.acl.clone(),
            data_len: n.data_len().into(),
        })
    }

    fn set(&mut self, p: &str, r: Option<Rec>) {
        self.overlay.insert(p.to_owned(), r);
    }
}

fn check_acl(rec: &Rec, perm: i32, ctx: &PrepCtx) -> Result<(), ErrorCode> {
    if acl::allows(&rec.acl, perm, ctx.ids) {
        Ok(())
    } else {
        Err(ErrorCode::NoAuth)
    }
}

/// `checkAndIncVersion`: -1 matches anything.
fn next_version(current: i32, expected: i32) -> Result<i32, ErrorCode> {
    if expected != -1 && expected != current {
        return Err(ErrorCode::BadVersion);
    }
    Ok(current.wrapping_add(1))
}

/// `validatePathForCreate` / `getParentPathAndValidate`: the text before the last slash.
fn parent_of(p: &str) -> Result<&str, ErrorCode> {
    match p.rfind('/') {
        Some(i) if !p.contains('\0') => Ok(&p[..i]),
        _ => Err(ErrorCode::BadArguments),
    }
}

/// Paths ZooKeeper refuses to delete (`DataTree.isSpecialPath`).
fn is_special(p: &str) -> bool {
    matches!(p, "/" | "/zookeeper" | "/zookeeper/quota" | "/zookeeper/config")
}

/// `zks.checkQuota`: with `enforceQuota`, a write that takes a quota root past a hard limit is
/// refused with QuotaExceeded; past a soft limit it is only logged. Checked against the committed
/// tree (`pending.tree`), as ZooKeeper checks its DataTree and not the outstanding changes.
fn check_quota(pending: &Pending, ctx: &PrepCtx, p: &str, bytes_diff: i64, count_diff: i64) -> Result<(), ErrorCode> {
    if !ctx.enforce_quota {
        return Ok(());
    }
    match quota::check(pending.tree, p, bytes_diff, count_diff) {
        QuotaCheck::Ok => Ok(()),
        QuotaCheck::Soft(msg) => {
            tracing::warn!("{msg}");
            Ok(())
        }
        QuotaCheck::Hard(msg) => {
            tracing::warn!("{msg}");
            Err(ErrorCode::QuotaExceeded)
        }
        // new StatsTrack(...) throws on a malformed node: pRequest answers MarshallingError.
        QuotaCheck::Malformed => Err(ErrorCode::MarshallingError),
    }
}

fn validate(p: &str) -> Result<(), ErrorCode> {
    if path::validate(p, false) {
        Ok(())
    } else {
        Err(ErrorCode::BadArguments)
    }
}

fn create(pending: &mut Pending, ctx: &PrepCtx, op: OpCode, req: &CreateRequest) -> Result<TxnOp, ErrorCode> {
    let mode = CreateMode::from_flags(req.flags).ok_or(ErrorCode::BadArguments)?;
    // validateCreateRequest: TTL needs extended types; the TTL must fit the mode.
    if mode.is_ttl() && !ctx.ttl_enabled {
        return Err(ErrorCode::Unimplemented);
    }
    let ttl = if op == OpCode::CreateTtl { req.ttl.unwrap_or(-1) } else { -1 };
    if mode.is_ttl() {
        if ttl <= 0 || ttl > owner::MAX_TTL {
            return Err(ErrorCode::BadArguments);
        }
    } else if ttl >= 0 {
        return Err(ErrorCode::BadArguments);
    }
    let parent_path = parent_of(&req.path)?;
    let acl = acl::fixup(&req.acl, ctx.ids)?;
    let parent = pending.get(parent_path).ok_or(ErrorCode::NoNode)?;
    check_acl(&parent, perms::CREATE, ctx)?;
    let mut full = req.path.clone();
    if mode.is_sequential() {
        // Sequence number: the parent's cversion, ten digits (String.format("%010d")).
        full.push_str(&format!("{:010}", parent.stat.cversion));
    }
    validate(&full)?;
    if pending.get(&full).is_some() {
        return Err(ErrorCode::NodeExists);
    }
    if owner::is_session(parent.stat.ephemeral_owner) {
        return Err(ErrorCode::NoChildrenForEphemerals);
    }
    check_quota(pending, ctx, &full, req.data.as_ref().map_or(0, |d| d.len() as i64), 1)?;
    let parent_cversion = parent.stat.cversion.wrapping_add(1);
    let ephemeral_owner = match mode {
        CreateMode::Container => owner::CONTAINER,
        m if m.is_ttl() => owner::ttl(ttl),
        m if m.is_ephemeral() => ctx.session,
        _ => 0,
    };
    let mut parent_after = parent;
    parent_after.child_count += 1;
    parent_after.stat.cversion = parent_cversion;
    let parent_key = if parent_path.is_empty() { "/" } else { parent_path };
    pending.set(parent_key, Some(parent_after));
    let acl: Arc<[Acl]> = Arc::from(acl);
    let stat = NodeStat { ephemeral_owner, ..NodeStat::default() };
    pending.set(&full, Some(Rec { stat, child_count: 0, acl: acl.clone(), data_len: 0 }));
    Ok(TxnOp::Create { path: full, data: req.data.clone(), acl, ephemeral_owner, parent_cversion })
}

fn delete(pending: &mut Pending, ctx: &PrepCtx, p: &str, version: i32) -> Result<TxnOp, ErrorCode> {
    let parent_path = parent_of(p)?;
    if is_special(p) {
        return Err(ErrorCode::BadArguments);
    }
    let parent = pending.get(parent_path).ok_or(ErrorCode::NoNode)?;
    check_acl(&parent, perms::DELETE, ctx)?;
    let node = pending.get(p).ok_or(ErrorCode::NoNode)?;
    next_version(node.stat.version, version)?;
    if node.child_count > 0 {
        return Err(ErrorCode::NotEmpty);
    }
    let mut parent_after = parent;
    parent_after.child_count -= 1;
    pending.set(if parent_path.is_empty() { "/" } else { parent_path }, Some(parent_after));
    pending.set(p, None);
    Ok(TxnOp::Delete { path: p.to_owned() })
}

fn set_data(
    pending: &mut Pending,
    ctx: &PrepCtx,
    p: &str,
    data: &Option<bytes::Bytes>,
    version: i32,
) -> Result<TxnOp, ErrorCode> {
    validate(p)?;
    let mut node = pending.get(p).ok_or(ErrorCode::NoNode)?;
    check_acl(&node, perms::WRITE, ctx)?;
    let new_len = data.as_ref().map_or(0, |d| d.len() as i64);
    check_quota(pending, ctx, p, new_len - node.data_len, 0)?;
    let new_version = next_version(node.stat.version, version)?;
    node.stat.version = new_version;
    node.data_len = new_len;
    pending.set(p, Some(node));
    Ok(TxnOp::SetData { path: p.to_owned(), data: data.clone(), version: new_version })
}

fn check(pending: &mut Pending, ctx: &PrepCtx, p: &str, version: i32) -> Result<TxnOp, ErrorCode> {
    validate(p)?;
    let node = pending.get(p).ok_or(ErrorCode::NoNode)?;
    check_acl(&node, perms::READ, ctx)?;
    next_version(node.stat.version, version)?;
    Ok(TxnOp::Check { path: p.to_owned() })
}

fn op(pending: &mut Pending, ctx: &PrepCtx, op: &MultiOp) -> Result<TxnOp, ErrorCode> {
    match op {
        MultiOp::Create(code, req) => create(pending, ctx, *code, req),
        MultiOp::Delete { path, version } => delete(pending, ctx, path, *version),
        MultiOp::SetData { path, data, version } => set_data(pending, ctx, path, data, *version),
        MultiOp::Check { path, version } => check(pending, ctx, path, *version),
        // Reads have no txn form: pRequest2Txn rejects them inside a write multi.
        MultiOp::GetChildren { .. } | MultiOp::GetData { .. } => Err(ErrorCode::BadArguments),
    }
}

/// Prepares a single write (create/delete/setData); an error becomes an error txn.
pub fn prepare(tree: &DataTree, ctx: &PrepCtx, request: &MultiOp) -> TxnOp {
    let mut pending = Pending { tree, overlay: HashMap::new() };
    op(&mut pending, ctx, request).unwrap_or_else(TxnOp::Error)
}

/// Prepares any write request (create, delete, setData, setACL, multi, reconfig) into the txn
/// that records it; an error becomes an error txn, which still takes its zxid as ZooKeeper's
/// ErrorTxn does. Both the standalone core and every ensemble member call this with the same
/// tree and request, so it must stay deterministic.
pub fn prepare_request(tree: &DataTree, ctx: &PrepCtx, op: OpCode, body: &RequestBody) -> TxnOp {
    let mut pending = Pending { tree, overlay: HashMap::new() };
    let prepared = match body {
        RequestBody::Create(c) => create(&mut pending, ctx, op, c),
        RequestBody::Delete { path, version } => delete(&mut pending, ctx, path, *version),
        RequestBody::SetData { path, data, version } => set_data(&mut pending, ctx, path, data, *version),
        RequestBody::SetAcl { path, acl, version } => return prepare_set_acl(tree, ctx, path, acl, *version),
        RequestBody::Multi(ops) => return prepare_multi(tree, ctx, ops),
        // Standalone: PrepRequestProcessor throws ReconfigDisabled, an error txn.
        RequestBody::Reconfig { .. } => Err(ErrorCode::ReconfigDisabled),
        _ => Err(ErrorCode::Unimplemented),
    };
    prepared.unwrap_or_else(TxnOp::Error)
}

/// Prepares setACL: validate, fix up the ACL, ADMIN on the node, aversion check.
pub fn prepare_set_acl(tree: &DataTree, ctx: &PrepCtx, p: &str, new_acl: &[Acl], version: i32) -> TxnOp {
    let run = || -> Result<TxnOp, ErrorCode> {
        validate(p)?;
        let acl = acl::fixup(new_acl, ctx.ids)?;
        let pending = Pending { tree, overlay: HashMap::new() };
        let node = pending.get(p).ok_or(ErrorCode::NoNode)?;
        check_acl(&node, perms::ADMIN, ctx)?;
        let aversion = next_version(node.stat.aversion, version)?;
        Ok(TxnOp::SetAcl { path: p.to_owned(), acl: Arc::from(acl), aversion })
    };
    run().unwrap_or_else(TxnOp::Error)
}

/// Prepares a multi: the first failing op keeps its error, every later op becomes
/// RuntimeInconsistency, and every earlier op is reported as error 0 (rolled back).
pub fn prepare_multi(tree: &DataTree, ctx: &PrepCtx, ops: &[MultiOp]) -> TxnOp {
    let mut pending = Pending { tree, overlay: HashMap::new() };
    let mut txns = Vec::with_capacity(ops.len());
    let mut failed_at = None;
    for (i, o) in ops.iter().enumerate() {
        if failed_at.is_some() {
            txns.push(TxnOp::Error(ErrorCode::RuntimeInconsistency));
            continue;
        }
        match op(&mut pending, ctx, o) {
            Ok(t) => txns.push(t),
            Err(e) => {
                failed_at = Some(i);
                txns.push(TxnOp::Error(e));
            }
        }
    }
    if let Some(f) = failed_at {
        for t in txns.iter_mut().take(f) {
            *t = TxnOp::Error(ErrorCode::Ok);
        }
    }
    TxnOp::Multi(txns)
}

/// The delete a container/TTL sweep proposes, if the node is still eligible.
pub fn prepare_reap(tree: &DataTree, p: &str) -> Option<TxnOp> {
    let n = tree.get(p)?;
    if n.has_children() || owner::is_session(n.stat.ephemeral_owner) || n.stat.ephemeral_owner == 0 {
        return None;
    }
    Some(TxnOp::Delete { path: p.to_owned() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::Txn;

    fn ctx() -> PrepCtx<'static> {
        PrepCtx { session: 0x42, ids: &[], ttl_enabled: true, enforce_quota: false }
    }

    fn create_req(p: &str, flags: i32) -> MultiOp {
        MultiOp::Create(
            OpCode::Create,
            CreateRequest { path: p.into(), data: None, acl: Acl::open_unsafe(), flags, ttl: None },
        )
    }

    fn run(tree: &mut DataTree, zxid: i64, op: TxnOp) -> super::super::OpOutcome {
        let txn = Txn { zxid, time: 1000 + zxid, session: 0x42, op };
        tree.apply(&txn, &mut Vec::new())
    }

    #[test]
    fn sequential_names_use_parent_cversion() {
        let mut t = DataTree::new();
        let op = prepare(&t, &ctx(), &create_req("/q", 0));
        run(&mut t, 1, op);
        for (z, want) in [(2, "/q/n0000000000"), (3, "/q/n0000000001")] {
            let op = prepare(&t, &ctx(), &create_req("/q/n", 2));
            match run(&mut t, z, op) {
                super::super::OpOutcome::Created { path, .. } => assert_eq!(path, want),
                other => panic!("{other:?}"),
            }
        }
        let q = t.get("/q").unwrap().wire_stat();
        assert_eq!((q.cversion, q.num_children, q.pzxid), (2, 2, 3));
        // A delete shows as a cversion bump on the wire, but the sequence counter counts creates.
        let op = prepare(&t, &ctx(), &MultiOp::Delete { path: "/q/n0000000000".into(), version: -1 });
        run(&mut t, 4, op);
        let q = t.get("/q").unwrap().wire_stat();
        assert_eq!((q.cversion, q.num_children, q.pzxid), (3, 1, 4));
        let op = prepare(&t, &ctx(), &create_req("/q/n", 2));
        match run(&mut t, 5, op) {
            super::super::OpOutcome::Created { path, .. } => assert_eq!(path, "/q/n0000000002"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_follow_prep_request_processor() {
        let t = DataTree::new();
        assert_eq!(prepare(&t, &ctx(), &create_req("/a/b", 0)), TxnOp::Error(ErrorCode::NoNode));
        assert_eq!(prepare(&t, &ctx(), &create_req("a", 0)), TxnOp::Error(ErrorCode::BadArguments));
        assert_eq!(prepare(&t, &ctx(), &create_req("/zookeeper", 0)), TxnOp::Error(ErrorCode::NodeExists));
        assert_eq!(prepare(&t, &ctx(), &create_req("/x", 9)), TxnOp::Error(ErrorCode::BadArguments));
        let del = MultiOp::Delete { path: "/zookeeper".into(), version: -1 };
        assert_eq!(prepare(&t, &ctx(), &del), TxnOp::Error(ErrorCode::BadArguments));
    }

    #[test]
    fn multi_sees_its_own_earlier_ops_and_rolls_back() {
        let t = DataTree::new();
        let ops = vec![create_req("/m", 0), create_req("/m/c", 0), MultiOp::Check { path: "/m".into(), version: 0 }];
        match prepare_multi(&t, &ctx(), &ops) {
            TxnOp::Multi(v) => assert!(v.iter().all(|t| !matches!(t, TxnOp::Error(_)))),
            other => panic!("{other:?}"),
        }
        let ops = vec![create_req("/m", 0), create_req("/m", 0), create_req("/z", 0)];
        assert_eq!(
            prepare_multi(&t, &ctx(), &ops),
            TxnOp::Multi(vec![
                TxnOp::Error(ErrorCode::Ok),
                TxnOp::Error(ErrorCode::NodeExists),
                TxnOp::Error(ErrorCode::RuntimeInconsistency)
            ])
        );
    }

    #[test]
    fn ephemerals_cannot_have_children_and_go_with_their_session() {
        let mut t = DataTree::new();
        run(&mut t, 1, TxnOp::CreateSession { timeout_ms: 1000, password: None });
        let op = prepare(&t, &ctx(), &create_req("/e", 1));
        run(&mut t, 2, op);
        assert_eq!(prepare(&t, &ctx(), &create_req("/e/c", 0)), TxnOp::Error(ErrorCode::NoChildrenForEphemerals));
        assert_eq!(t.ephemerals_of(0x42), vec!["/e".to_string()]);
        let mut changes = Vec::new();
        t.apply(&Txn { zxid: 3, time: 5, session: 0x42, op: TxnOp::CloseSession }, &mut changes);
        assert!(t.get("/e").is_none());
        assert_eq!(
            changes,
            vec![
                super::super::Change::Deleted("/e".into(), Arc::from(Acl::open_unsafe())),
                super::super::Change::ChildrenChanged("/".into())
            ]
        );
    }
}
