//! Read requests, answered from the tree as ZooKeeper's FinalRequestProcessor answers them:
//! same checks in the same order (NoNode, then ACL, then watch registration).

use crate::proto::{perms, ErrorCode, Id, MultiOp, MultiResult, Response, WatcherType};
use crate::tree::{acl, DataTree};
use crate::watch::{WatchManager, WatcherId};

/// Who is reading, and which connection any watch belongs to.
pub struct Reader<'a> {
    pub ids: &'a [Id],
    pub watcher: WatcherId,
}

fn readable(tree: &DataTree, path: &str, r: &Reader, perm: i32) -> Result<crate::tree::NodeId, ErrorCode> {
    let id = tree.lookup(path).ok_or(ErrorCode::NoNode)?;
    let n = tree.node(id).ok_or(ErrorCode::NoNode)?;
    if !acl::allows(&n.acl, perm, r.ids) {
        return Err(ErrorCode::NoAuth);
    }
    Ok(id)
}

/// exists: READ is checked only when the node exists; a missing node still gets the watch.
/// `watch`: the watch table, when the request asks for a watch.
pub fn exists(
    tree: &DataTree,
    watch: Option<&mut WatchManager>,
    r: &Reader,
    path: &str,
) -> Result<Response, ErrorCode> {
    if path.contains('\0') {
        return Err(ErrorCode::BadArguments);
    }
    if let Some(n) = tree.get(path) {
        if !acl::allows(&n.acl, perms::READ, r.ids) {
            return Err(ErrorCode::NoAuth);
        }
    }
    if let Some(w) = watch {
        w.add_data(path, r.watcher);
    }
    tree.get(path).map(|n| Response::Stat(n.wire_stat())).ok_or(ErrorCode::NoNode)
}

pub fn get_data(
    tree: &DataTree,
    watch: Option<&mut WatchManager>,
    r: &Reader,
    path: &str,
) -> Result<Response, ErrorCode> {
    let id = readable(tree, path, r, perms::READ)?;
    if let Some(w) = watch {
        w.add_data(path, r.watcher);
    }
    let n = tree.node(id).ok_or(ErrorCode::NoNode)?;
    Ok(Response::GetData { data: n.data.clone(), stat: n.wire_stat() })
}

pub fn get_children(
    tree: &DataTree,
    watch: Option<&mut WatchManager>,
    r: &Reader,
    path: &str,
    with_stat: bool,
) -> Result<Response, ErrorCode> {
    let id = readable(tree, path, r, perms::READ)?;
    if let Some(w) = watch {
        w.add_child(path, r.watcher);
    }
    let n = tree.node(id).ok_or(ErrorCode::NoNode)?;
    let children = tree.encoded_children(id).ok_or(ErrorCode::NoNode)?;
    Ok(if with_stat {
        Response::EncodedChildren2 { children, stat: n.wire_stat() }
    } else {
        Response::EncodedChildren(children)
    })
}

/// A child list as names (multiRead's sub-results).
fn child_names(tree: &DataTree, r: &Reader, path: &str) -> Result<Vec<std::sync::Arc<str>>, ErrorCode> {
    let id = readable(tree, path, r, perms::READ)?;
    tree.node(id).ok_or(ErrorCode::NoNode)?;
    Ok(tree.child_names(id).map(std::sync::Arc::from).collect())
}

/// getACL needs READ or ADMIN; without ADMIN digest hashes are hidden.
pub fn get_acl(tree: &DataTree, r: &Reader, path: &str) -> Result<Response, ErrorCode> {
    let id = readable(tree, path, r, perms::READ | perms::ADMIN)?;
    let n = tree.node(id).ok_or(ErrorCode::NoNode)?;
    let acl = if acl::allows(&n.acl, perms::ADMIN, r.ids) { n.acl.to_vec() } else { acl::redact(&n.acl) };
    Ok(Response::GetAcl { acl, stat: n.wire_stat() })
}

pub fn all_children_number(tree: &DataTree, r: &Reader, path: &str) -> Result<Response, ErrorCode> {
    let id = readable(tree, path, r, perms::READ)?;
    Ok(Response::Number(tree.descendant_count(id)))
}

/// Standalone check (3.9 answers it as a read): NoNode, READ, version; header-only reply.
pub fn check(tree: &DataTree, r: &Reader, path: &str, version: i32) -> Result<Response, ErrorCode> {
    let id = readable(tree, path, r, perms::READ)?;
    let n = tree.node(id).ok_or(ErrorCode::NoNode)?;
    if version != -1 && version != n.stat.version {
        return Err(ErrorCode::BadVersion);
    }
    Ok(Response::Empty)
}

/// getEphemerals: a plain string prefix match, as ZooKeeper does (`startsWith`).
pub fn ephemerals(tree: &DataTree, session: i64, prefix: &str) -> Response {
    let mut all = tree.ephemerals_of(session);
    let p = prefix.trim();
    if !(p.is_empty() || p == "/") {
        all.retain(|e| e.starts_with(prefix));
    }
    all.sort();
    Response::Strings(all)
}

/// multiRead: each op answered on its own, failures as ErrorResult.
pub fn multi_read(tree: &DataTree, r: &Reader, ops: &[MultiOp]) -> Result<Response, ErrorCode> {
    let mut out = Vec::with_capacity(ops.len());
    for op in ops {
        let res = match op {
            MultiOp::GetChildren { path, .. } => match child_names(tree, r, path) {
                Ok(children) => MultiResult::GetChildren { children },
                Err(e) => MultiResult::Error(e.code()),
            },
            MultiOp::GetData { path, .. } => match get_data(tree, None, r, path) {
                Ok(Response::GetData { data, stat }) => MultiResult::GetData { data, stat },
                Ok(_) => MultiResult::Error(ErrorCode::SystemError.code()),
                Err(e) => MultiResult::Error(e.code()),
            },
            // "Invalid type of readOp": ZooKeeper fails the whole request.
            _ => return Err(ErrorCode::MarshallingError),
        };
        out.push(res);
    }
    Ok(Response::Multi(out))
}

/// checkWatches / removeWatches: NoWatcher when there is nothing of that type.
pub fn watches(w: &mut WatchManager, r: &Reader, path: &str, ty: i32, remove: bool) -> Result<Response, ErrorCode> {
    let ty = WatcherType::from_i32(ty).ok_or(ErrorCode::MarshallingError)?;
    let found = if remove { w.remove(path, ty, r.watcher) } else { w.contains(path, ty, r.watcher) };
    if found {
        Ok(Response::Empty)
    } else {
        Err(ErrorCode::NoWatcher)
    }
}
