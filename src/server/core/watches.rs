//! Watches in the core: which notifications a watcher may READ, and `setWatches` catch-up.

use super::*;

impl Core {
    /// ZooKeeper (ServerCnxn.process with the znode's ACL, 3.7+) drops a notification the
    /// watcher's session may not READ: the watch is used up but nothing is sent. The ACL is the
    /// node's (the parent's for a child event), or the deleted node's for NodeDeleted.
    pub(super) fn may_read(&self, f: &Fired) -> bool {
        use crate::proto::EventType as E;
        let deleted = || {
            self.changes.iter().find_map(|c| match c {
                Change::Deleted(p, acl) if *p == f.path => Some(acl.clone()),
                _ => None,
            })
        };
        let acl = match f.event {
            E::NodeDeleted => deleted(),
            // A node a multi created and deleted again is judged by the ACL it had.
            _ => self.tree.get(&f.path).map(|n| n.acl.clone()).or_else(deleted),
        };
        let Some(acl) = acl else { return true };
        let ids = self.conns.get(&f.watcher).and_then(|c| c.session).map_or(&[][..], |s| ids_of(&self.sessions, s));
        acl::allows(&acl, crate::proto::perms::READ, ids)
    }

    /// `DataTree.setWatches`: catch up on what changed since `relative_zxid`, re-arm the rest.
    pub(super) fn set_watches(&mut self, conn: ConnId, sw: &crate::proto::SetWatches) {
        use crate::proto::EventType as E;
        let rel = sw.relative_zxid;
        let mut events = Vec::new();
        for p in &sw.data {
            match self.tree.get(p) {
                None => events.push((E::NodeDeleted, p)),
                Some(n) if n.stat.mzxid > rel => events.push((E::NodeDataChanged, p)),
                Some(_) => self.watches.add_data(p, conn),
            }
        }
        for p in &sw.exist {
            match self.tree.get(p) {
                Some(_) => events.push((E::NodeCreated, p)),
                None => self.watches.add_data(p, conn),
            }
        }
        for p in &sw.child {
            match self.tree.get(p) {
                None => events.push((E::NodeDeleted, p)),
                Some(n) if n.stat.pzxid > rel => events.push((E::NodeChildrenChanged, p)),
                Some(_) => self.watches.add_child(p, conn),
            }
        }
        for p in &sw.persistent {
            self.watches.add_persistent(p, conn, false);
        }
        for p in &sw.persistent_recursive {
            self.watches.add_persistent(p, conn, true);
        }
        for (t, p) in events {
            let ev = WatcherEvent { event_type: t as i32, state: STATE_SYNC_CONNECTED, path: p.clone() };
            self.send(conn, Outbound::Event(-1, ev));
        }
    }
}
