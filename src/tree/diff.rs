//! What changed between two trees, as the changes a txn reports (`Change`): what a restore
//! fires watches with, so a watcher learns of it as of any write.

use super::{Change, DataTree, Znode};
use std::collections::BTreeSet;

/// Directories up to this many children are compared name by name; larger ones by their
/// child version, pzxid and count.
const NAMES_COMPARED: usize = 1024;

/// The changes that turn `old` into `new` at the paths in `only`, or at every path of either
/// tree when `only` is `None` (a recursive watch can see any path).
pub fn changes(old: &DataTree, new: &DataTree, only: Option<&[String]>) -> Vec<Change> {
    let mut out = Vec::new();
    match only {
        Some(paths) => {
            for p in paths {
                at(old, new, p, old.get(p), &mut out);
            }
        }
        None => {
            old.visit(|p, n| at(old, new, p, Some(n), &mut out));
            new.visit(|p, _| {
                if old.get(p).is_none() {
                    out.push(Change::Created(p.to_owned()));
                }
            });
        }
    }
    out
}

/// The changes at `path`, whose node in `old` is `was`.
fn at(old: &DataTree, new: &DataTree, path: &str, was: Option<&Znode>, out: &mut Vec<Change>) {
    match (was, new.get(path)) {
        (Some(o), None) => out.push(Change::Deleted(path.to_owned(), o.acl.clone())),
        (None, Some(_)) => out.push(Change::Created(path.to_owned())),
        (None, None) => {}
        (Some(o), Some(n)) => {
            let (os, ns) = (&o.stat, &n.stat);
            if o.data != n.data || os.mzxid != ns.mzxid || os.version != ns.version {
                out.push(Change::DataChanged(path.to_owned()));
            }
            if children_differ(old, new, path, o, n) {
                out.push(Change::ChildrenChanged(path.to_owned()));
            }
        }
    }
}

fn children_differ(old: &DataTree, new: &DataTree, path: &str, o: &Znode, n: &Znode) -> bool {
    let names = |t: &DataTree| -> Option<BTreeSet<String>> {
        let id = t.lookup(path)?;
        let names: BTreeSet<String> = t.child_names(id).take(NAMES_COMPARED + 1).collect();
        Some(names)
    };
    if o.stat.cversion != n.stat.cversion || o.stat.pzxid != n.stat.pzxid {
        return true;
    }
    match (names(old), names(new)) {
        (Some(a), Some(b)) if a.len() <= NAMES_COMPARED && b.len() <= NAMES_COMPARED => a != b,
        (Some(a), Some(b)) => a.len() != b.len(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::Acl;
    use crate::tree::NodeStat;
    use bytes::Bytes;

    fn tree(nodes: &[(&str, &str, i64)]) -> DataTree {
        let mut t = DataTree::new();
        for (p, d, mzxid) in nodes {
            let stat = NodeStat { czxid: 1, mzxid: *mzxid, pzxid: 1, ..Default::default() };
            assert!(t.restore_node(p, Some(Bytes::from(d.to_string())), &Acl::open_unsafe(), stat, 0), "{p}");
        }
        t.finish_restore();
        t
    }

    fn names(c: &[Change]) -> Vec<String> {
        let mut v: Vec<String> = c
            .iter()
            .map(|c| match c {
                Change::Created(p) => format!("created {p}"),
                Change::Deleted(p, _) => format!("deleted {p}"),
                Change::DataChanged(p) => format!("data {p}"),
                Change::ChildrenChanged(p) => format!("children {p}"),
            })
            .collect();
        v.sort();
        v
    }

    #[test]
    fn every_kind_of_change_between_two_trees() {
        let old = tree(&[("/a", "1", 2), ("/a/x", "", 3), ("/b", "same", 4), ("/gone", "", 5)]);
        let new = tree(&[("/a", "2", 9), ("/a/y", "", 3), ("/b", "same", 4), ("/new", "", 6)]);
        let all = names(&changes(&old, &new, None));
        assert!(all.contains(&"data /a".to_owned()), "{all:?}");
        assert!(all.contains(&"children /a".to_owned()), "{all:?}");
        for c in ["deleted /a/x", "created /a/y", "deleted /gone", "created /new", "children /"] {
            assert!(all.contains(&c.to_owned()), "{c}: {all:?}");
        }
        assert!(!all.iter().any(|c| c.ends_with(" /b")), "an equal node has no change: {all:?}");
        let only = names(&changes(&old, &new, Some(&["/b".into(), "/gone".into(), "/new".into(), "/none".into()])));
        assert_eq!(only, ["created /new", "deleted /gone"]);
    }
}
