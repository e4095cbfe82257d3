//! Watch tables and triggering, with ZooKeeper's WatchManager semantics.
//!
//! Watches belong to a connection (`WatcherId`), never to the log: they vanish with the
//! connection and come back through setWatches. Two tables as in ZooKeeper: data watches
//! (getData/exists, persistent, persistent-recursive) and child watches (getChildren,
//! persistent). Per (path, watcher) a bit set of modes; one allocation per watched path, not
//! per relation.

use crate::proto::{EventType, WatcherType};
use crate::tree::Change;
use std::collections::{HashMap, HashSet};

/// A connection's identity in the watch tables.
pub type WatcherId = u64;

const STANDARD: u8 = 1;
const PERSISTENT: u8 = 2;
const RECURSIVE: u8 = 4;

#[derive(Default, Debug)]
struct Table {
    by_path: HashMap<String, HashMap<WatcherId, u8>>,
    by_watcher: HashMap<WatcherId, HashSet<String>>,
    recursive: usize,
}

impl Table {
    fn add(&mut self, path: &str, w: WatcherId, mode: u8) {
        let modes = self.by_path.entry(path.to_owned()).or_default().entry(w).or_insert(0);
        if mode == RECURSIVE && *modes & RECURSIVE == 0 {
            self.recursive += 1;
        }
        *modes |= mode;
        self.by_watcher.entry(w).or_default().insert(path.to_owned());
    }

    fn has(&self, path: &str, w: WatcherId, mode: Option<u8>) -> bool {
        match self.by_path.get(path).and_then(|m| m.get(&w)) {
            Some(bits) => mode.is_none_or(|m| bits & m != 0),
            None => false,
        }
    }

    /// Clears `mode` (all modes if `None`) of one relation; true if anything was removed.
    fn remove(&mut self, path: &str, w: WatcherId, mode: Option<u8>) -> bool {
        let Some(watchers) = self.by_path.get_mut(path) else {
            return false;
        };
        let Some(bits) = watchers.get_mut(&w) else {
            return false;
        };
        let clear = mode.unwrap_or(STANDARD | PERSISTENT | RECURSIVE);
        if *bits & clear == 0 {
            return false;
        }
        if *bits & clear & RECURSIVE != 0 {
            self.recursive -= 1;
        }
        *bits &= !clear;
        if *bits == 0 {
            watchers.remove(&w);
            if watchers.is_empty() {
                self.by_path.remove(path);
            }
            if let Some(paths) = self.by_watcher.get_mut(&w) {
                paths.remove(path);
                if paths.is_empty() {
                    self.by_watcher.remove(&w);
                }
            }
        }
        true
    }

    fn remove_watcher(&mut self, w: WatcherId) {
        let Some(paths) = self.by_watcher.remove(&w) else {
            return;
        };
        for p in paths {
            if let Some(watchers) = self.by_path.get_mut(&p) {
                if let Some(bits) = watchers.remove(&w) {
                    if bits & RECURSIVE != 0 {
                        self.recursive -= 1;
                    }
                }
                if watchers.is_empty() {
                    self.by_path.remove(&p);
                }
            }
        }
    }

    /// `WatchManager.triggerWatch`: watchers on the path itself (one-shot ones are consumed)
    /// and recursive watchers on every ancestor.
    fn trigger(&mut self, path: &str, out: &mut Vec<WatcherId>) {
        let mut consumed = Vec::new();
        if let Some(watchers) = self.by_path.get(path) {
            for (w, bits) in watchers.iter() {
                out.push(*w);
                if *bits & STANDARD != 0 {
                    consumed.push(*w);
                }
            }
        }
        for w in consumed {
            self.remove(path, w, Some(STANDARD));
        }
        if self.recursive > 0 {
            let mut p = path;
            while p != "/" {
                p = crate::tree::path::parent(p);
                if let Some(watchers) = self.by_path.get(p) {
                    out.extend(watchers.iter().filter(|(_, b)| **b & RECURSIVE != 0).map(|(w, _)| *w));
                }
            }
        }
    }

    fn count(&self) -> usize {
        self.by_path.values().map(|m| m.len()).sum()
    }
}

/// One notification to deliver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fired {
    pub watcher: WatcherId,
    pub event: EventType,
    pub path: String,
}

#[derive(Default, Debug)]
pub struct WatchManager {
    data: Table,
    child: Table,
}

impl WatchManager {
    /// getData / exists registration (exists on a missing node registers too).
    pub fn add_data(&mut self, path: &str, w: WatcherId) {
        self.data.add(path, w, STANDARD);
    }

    pub fn add_child(&mut self, path: &str, w: WatcherId) {
        self.child.add(path, w, STANDARD);
    }

    /// addWatch: PERSISTENT goes in both tables, PERSISTENT_RECURSIVE only in the data table
    /// (so recursive watchers never see NodeChildrenChanged).
    pub fn add_persistent(&mut self, path: &str, w: WatcherId, recursive: bool) {
        if recursive {
            self.data.add(path, w, RECURSIVE);
        } else {
            self.data.add(path, w, PERSISTENT);
            self.child.add(path, w, PERSISTENT);
        }
    }

    pub fn remove_watcher(&mut self, w: WatcherId) {
        self.data.remove_watcher(w);
        self.child.remove_watcher(w);
    }

    /// checkWatches (`DataTree.containsWatcher`, 3.9: typed by mode).
    pub fn contains(&self, path: &str, ty: WatcherType, w: WatcherId) -> bool {
        match ty {
            WatcherType::Children => self.child.has(path, w, Some(STANDARD)),
            WatcherType::Data => self.data.has(path, w, Some(STANDARD)),
            WatcherType::Persistent => self.data.has(path, w, Some(PERSISTENT)),
            WatcherType::PersistentRecursive => self.data.has(path, w, Some(RECURSIVE)),
            WatcherType::Any => self.child.has(path, w, None) || self.data.has(path, w, None),
        }
    }

    /// removeWatches (`DataTree.removeWatch`); true if something was removed.
    pub fn remove(&mut self, path: &str, ty: WatcherType, w: WatcherId) -> bool {
        match ty {
            WatcherType::Children => self.child.remove(path, w, Some(STANDARD)),
            WatcherType::Data => self.data.remove(path, w, Some(STANDARD)),
            WatcherType::Persistent => {
                let c = self.child.remove(path, w, Some(PERSISTENT));
                let d = self.data.remove(path, w, Some(PERSISTENT));
                c | d
            }
            WatcherType::PersistentRecursive => self.data.remove(path, w, Some(RECURSIVE)),
            WatcherType::Any => {
                let c = self.child.remove(path, w, None);
                let d = self.data.remove(path, w, None);
                c | d
            }
        }
    }

    /// Turns tree changes into notifications: at most one per watcher per change, and for a
    /// delete the child-table watchers already notified by the data table are suppressed.
    pub fn trigger(&mut self, changes: &[Change], out: &mut Vec<Fired>) {
        let mut hit = Vec::new();
        for change in changes {
            hit.clear();
            let (event, path) = match change {
                Change::Created(p) => {
                    self.data.trigger(p, &mut hit);
                    (EventType::NodeCreated, p)
                }
                Change::DataChanged(p) => {
                    self.data.trigger(p, &mut hit);
                    (EventType::NodeDataChanged, p)
                }
                Change::ChildrenChanged(p) => {
                    self.child.trigger(p, &mut hit);
                    (EventType::NodeChildrenChanged, p)
                }
                Change::Deleted(p, _) => {
                    self.data.trigger(p, &mut hit);
                    self.child.trigger(p, &mut hit);
                    (EventType::NodeDeleted, p)
                }
            };
            let mut seen = HashSet::with_capacity(hit.len());
            for w in hit.iter().copied() {
                if seen.insert(w) {
                    out.push(Fired { watcher: w, event, path: path.clone() });
                }
            }
        }
    }

    /// Every watched path of both tables, or `None` while a recursive watch exists (it sees
    /// every path below its own).
    pub fn watched_paths(&self) -> Option<Vec<String>> {
        if self.data.recursive > 0 || self.child.recursive > 0 {
            return None;
        }
        let paths: std::collections::BTreeSet<&String> =
            self.data.by_path.keys().chain(self.child.by_path.keys()).collect();
        Some(paths.into_iter().cloned().collect())
    }

    /// Total watch relations (mntr's zk_watch_count).
    pub fn count(&self) -> usize {
        self.data.count() + self.child.count()
    }

    /// Paths with a data watch, per watcher (wchc / wchp / `wchs`). ZooKeeper lists only its
    /// data-watch table there (`DataTree.getWatches` reads `dataWatches`), so child watches are
    /// left out, while mntr's zk_watch_count counts both tables.
    pub fn data_by_watcher(&self) -> HashMap<WatcherId, Vec<String>> {
        let mut out: HashMap<WatcherId, Vec<String>> = HashMap::new();
        for (w, paths) in &self.data.by_watcher {
            let mut v: Vec<String> = paths.iter().cloned().collect();
            v.sort();
            out.insert(*w, v);
        }
        out
    }

    /// (watchers, paths, relations) of the data-watch table (`wchs`).
    pub fn data_summary(&self) -> (usize, usize, usize) {
        (self.data.by_watcher.len(), self.data.by_path.len(), self.data.count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fire(m: &mut WatchManager, c: Change) -> Vec<Fired> {
        let mut out = Vec::new();
        m.trigger(&[c], &mut out);
        out
    }

    #[test]
    fn one_shot_fires_once() {
        let mut m = WatchManager::default();
        m.add_data("/a", 1);
        assert_eq!(fire(&mut m, Change::DataChanged("/a".into())).len(), 1);
        assert!(fire(&mut m, Change::DataChanged("/a".into())).is_empty());
        assert_eq!(m.count(), 0);
    }

    #[test]
    fn recursive_reports_changed_path_and_never_children_changed() {
        let mut m = WatchManager::default();
        m.add_persistent("/a", 1, true);
        let f = fire(&mut m, Change::Created("/a/b/c".into()));
        assert_eq!(f, vec![Fired { watcher: 1, event: EventType::NodeCreated, path: "/a/b/c".into() }]);
        assert!(fire(&mut m, Change::ChildrenChanged("/a/b".into())).is_empty());
        assert_eq!(fire(&mut m, Change::DataChanged("/a".into())).len(), 1);
        assert_eq!(fire(&mut m, Change::DataChanged("/a".into())).len(), 1, "persistent stays");
    }

    #[test]
    fn delete_notifies_each_watcher_once() {
        let mut m = WatchManager::default();
        m.add_data("/a", 1);
        m.add_child("/a", 1);
        m.add_child("/a", 2);
        let f = fire(&mut m, Change::Deleted("/a".into(), std::sync::Arc::from(Vec::new())));
        assert_eq!(f.len(), 2);
        assert_eq!(m.count(), 0);
    }

    #[test]
    fn remove_and_contains_by_type() {
        let mut m = WatchManager::default();
        m.add_data("/a", 1);
        m.add_persistent("/a", 1, false);
        assert!(m.contains("/a", WatcherType::Data, 1));
        assert!(!m.contains("/a", WatcherType::Children, 1));
        assert!(m.remove("/a", WatcherType::Persistent, 1));
        assert!(!m.contains("/a", WatcherType::Persistent, 1));
        assert!(m.contains("/a", WatcherType::Any, 1));
        m.remove_watcher(1);
        assert!(!m.contains("/a", WatcherType::Any, 1));
        assert_eq!(m.count(), 0);
    }
}
