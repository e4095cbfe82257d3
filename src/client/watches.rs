//! The client's own record of the watches it has set, as the Java client's `ZKWatchManager`
//! keeps it: which notifications to show, what `removewatches` may remove, and what to re-arm
//! with SetWatches after a reconnect.
//!
//! zkCli sets every watch with its single default watcher, so each table is a set of client
//! paths (chroot removed). Owned by the connection task; no locks, no I/O.

use crate::proto::{ErrorCode, EventType, WatcherType};
use std::collections::BTreeSet;

/// What a successful (or, for exists, a NoNode) reply registers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registration {
    None,
    /// getData, getConfig.
    Data(String),
    /// exists: a data watch if the node exists, an exist watch if it does not.
    Exists(String),
    /// getChildren / getChildren2.
    Child(String),
    /// addWatch PERSISTENT.
    Persistent(String),
    /// addWatch PERSISTENT_RECURSIVE.
    PersistentRecursive(String),
}

/// `removewatches path [-c|-d|-a] [-l]` as a request to deregister.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deregistration {
    pub path: String,
    pub kind: WatcherType,
    /// `-l`: remove locally even if the server cannot be asked.
    pub local: bool,
}

#[derive(Debug, Default, Clone)]
pub struct WatchTable {
    pub data: BTreeSet<String>,
    pub exist: BTreeSet<String>,
    pub child: BTreeSet<String>,
    pub persistent: BTreeSet<String>,
    pub persistent_recursive: BTreeSet<String>,
}

/// `/a/b/c` → `/a/b/c`, `/a/b`, `/a`, `/` (Java's `PathParentIterator.forAll`).
fn self_and_ancestors(path: &str) -> impl Iterator<Item = &str> {
    let mut next = Some(path);
    std::iter::from_fn(move || {
        let current = next?;
        next = match current.rfind('/') {
            _ if current == "/" => None,
            Some(0) => Some("/"),
            Some(i) => Some(&current[..i]),
            None => None,
        };
        Some(current)
    })
}

impl WatchTable {
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
            && self.exist.is_empty()
            && self.child.is_empty()
            && self.persistent.is_empty()
            && self.persistent_recursive.is_empty()
    }

    /// `WatchRegistration.register(rc)`.
    pub fn register(&mut self, reg: &Registration, err: i32) {
        let ok = err == ErrorCode::Ok.code();
        match reg {
            Registration::None => {}
            Registration::Data(p) if ok => {
                self.data.insert(p.clone());
            }
            Registration::Exists(p) if ok => {
                self.data.insert(p.clone());
            }
            Registration::Exists(p) if err == ErrorCode::NoNode.code() => {
                self.exist.insert(p.clone());
            }
            Registration::Child(p) if ok => {
                self.child.insert(p.clone());
            }
            Registration::Persistent(p) if ok => {
                self.persistent.insert(p.clone());
            }
            Registration::PersistentRecursive(p) if ok => {
                self.persistent_recursive.insert(p.clone());
            }
            _ => {}
        }
    }

    fn persistent_match(&self, path: &str) -> bool {
        self.persistent.contains(path) || self_and_ancestors(path).any(|p| self.persistent_recursive.contains(p))
    }

    /// `materialize` for a node event: consumes the one-shot watches it triggers and says
    /// whether the default watcher (zkCli's printer) is to be called.
    pub fn trigger(&mut self, event_type: i32, path: &str) -> bool {
        const CREATED: i32 = EventType::NodeCreated as i32;
        const DELETED: i32 = EventType::NodeDeleted as i32;
        const DATA: i32 = EventType::NodeDataChanged as i32;
        const CHILDREN: i32 = EventType::NodeChildrenChanged as i32;
        let fired = match event_type {
            DATA | CREATED => {
                let d = self.data.remove(path);
                let e = self.exist.remove(path);
                d | e
            }
            CHILDREN => self.child.remove(path),
            DELETED => {
                let d = self.data.remove(path);
                let e = self.exist.remove(path);
                let c = self.child.remove(path);
                d | e | c
            }
            _ => return false,
        };
        let persistent = self.persistent_match(path);
        fired || persistent
    }

    /// `containsWatcher` for a removal of watches of `kind` on `path`.
    fn contains(&self, path: &str, kind: WatcherType) -> bool {
        let persistent = self.persistent.contains(path) || self.persistent_recursive.contains(path);
        match kind {
            WatcherType::Children => self.child.contains(path) || persistent,
            WatcherType::Data => self.data.contains(path) || self.exist.contains(path) || persistent,
            _ => self.child.contains(path) || self.data.contains(path) || self.exist.contains(path) || persistent,
        }
    }

    /// `removeWatcher` after the server answered `err`: `Ok` with the removal events to show
    /// (in the order ChildWatchRemoved, DataWatchRemoved, PersistentWatchRemoved), or the
    /// error code the call reports (NoWatcher when nothing matched locally).
    pub fn deregister(&mut self, d: &Deregistration, err: i32) -> Result<Vec<EventType>, i32> {
        if !self.contains(&d.path, d.kind) {
            return Err(ErrorCode::NoWatcher.code());
        }
        if !d.local && err != ErrorCode::Ok.code() {
            return Err(err);
        }
        let p = d.path.as_str();
        let (mut child, mut data, mut persistent) = (false, false, false);
        match d.kind {
            WatcherType::Children => child = self.child.remove(p),
            WatcherType::Data => {
                data = self.data.remove(p);
                data |= self.exist.remove(p);
            }
            _ => {
                child = self.child.remove(p);
                data = self.data.remove(p);
                data |= self.exist.remove(p);
                persistent = self.persistent.remove(p);
                persistent |= self.persistent_recursive.remove(p);
            }
        }
        let events: Vec<EventType> = [
            (child, EventType::ChildWatchRemoved),
            (data, EventType::DataWatchRemoved),
            (persistent, EventType::PersistentWatchRemoved),
        ]
        .into_iter()
        .filter_map(|(removed, e)| removed.then_some(e))
        .collect();
        if events.is_empty() {
            return Err(ErrorCode::NoWatcher.code());
        }
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestors() {
        let v: Vec<&str> = self_and_ancestors("/a/b").collect();
        assert_eq!(v, vec!["/a/b", "/a", "/"]);
        assert_eq!(self_and_ancestors("/").collect::<Vec<_>>(), vec!["/"]);
    }

    #[test]
    fn one_shot_and_persistent() {
        let mut w = WatchTable::default();
        w.register(&Registration::Data("/a".into()), 0);
        w.register(&Registration::Exists("/b".into()), -101);
        w.register(&Registration::Child("/a".into()), -101);
        w.register(&Registration::PersistentRecursive("/r".into()), 0);
        assert!(w.trigger(3, "/a"));
        assert!(!w.trigger(3, "/a"));
        assert!(!w.trigger(4, "/a"));
        assert!(w.trigger(1, "/b"));
        assert!(w.trigger(4, "/r/x/y"));
        assert!(w.trigger(4, "/r/x/y"));
        assert!(!w.trigger(4, "/rx"));
    }

    #[test]
    fn removal_follows_java_rules() {
        let mut w = WatchTable::default();
        let any = |p: &str, local| Deregistration { path: p.into(), kind: WatcherType::Any, local };
        assert_eq!(w.deregister(&any("/x", false), 0), Err(-121));
        w.register(&Registration::Persistent("/p".into()), 0);
        let data = Deregistration { path: "/p".into(), kind: WatcherType::Data, local: false };
        assert_eq!(w.deregister(&data, 0), Err(-121));
        assert_eq!(w.deregister(&any("/p", false), -4), Err(-4));
        assert_eq!(w.deregister(&any("/p", true), -4), Ok(vec![EventType::PersistentWatchRemoved]));
        w.register(&Registration::Data("/d".into()), 0);
        w.register(&Registration::Child("/d".into()), 0);
        assert_eq!(
            w.deregister(&any("/d", false), 0),
            Ok(vec![EventType::ChildWatchRemoved, EventType::DataWatchRemoved])
        );
        assert!(w.is_empty());
    }
}
