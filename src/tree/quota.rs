//! Quotas as ZooKeeper 3.7+ keeps them: the quota roots (ZooKeeper's `PathTrie`), the
//! `zookeeper_stats` counters under `/zookeeper/quota/<path>/` kept current by `apply`, and the
//! `StatsTrack` text both quota nodes hold.
//!
//! Clients (zkCli's `setquota`) write `/zookeeper/quota/<path>/zookeeper_limits` and
//! `zookeeper_stats` themselves; the tree only notices them, as `DataTree.createNode` and
//! `deleteNode` do. Whether a write may cross a limit is decided in prep (`check` below), from
//! the tree alone. Deterministic like the rest of the tree: no clock, no logging of state.

use super::DataTree;
use bytes::Bytes;
use std::collections::BTreeMap;

/// `Quotas.quotaZookeeper`.
pub const QUOTA_ROOT: &str = "/zookeeper/quota";
/// `Quotas.limitNode`.
pub const LIMIT_NODE: &str = "zookeeper_limits";
/// `Quotas.statNode`.
pub const STAT_NODE: &str = "zookeeper_stats";

/// `Quotas.limitPath`: `/zookeeper/quota<path>/zookeeper_limits`.
pub fn limit_path(path: &str) -> String {
    format!("{QUOTA_ROOT}{path}/{LIMIT_NODE}")
}

/// `Quotas.statPath`: `/zookeeper/quota<path>/zookeeper_stats`.
pub fn stat_path(path: &str) -> String {
    format!("{QUOTA_ROOT}{path}/{STAT_NODE}")
}

/// `PathTrie.split`: the components, without those that are empty or only blanks
/// (`t.trim().isEmpty()`, Java's trim: code points up to U+0020).
fn components(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|c| !c.trim_matches(|ch: char| ch <= ' ').is_empty())
}

/// The trie key of a path: its components joined as `/a/b` (a trie that is only the root is "/").
fn trie_key(path: &str) -> String {
    let mut key = String::new();
    for c in components(path) {
        key.push('/');
        key.push_str(c);
    }
    if key.is_empty() {
        key.push('/');
    }
    key
}

/// `StatsTrack`: `count=N,bytes=N` then, when there are other keys, `=` and `;key=value` for
/// each in sorted order ("count=4,bytes=5=;byteHardLimit=10;countHardLimit=10"). A missing key
/// reads as -1.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsTrack {
    values: BTreeMap<String, i64>,
}

/// What `new StatsTrack(bytes)` throws on: the text is not `key=value` pairs of longs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed quota text {0:?}")]
pub struct BadStatsTrack(pub String);

pub const COUNT: &str = "count";
pub const BYTES: &str = "bytes";
pub const COUNT_HARD: &str = "countHardLimit";
pub const BYTES_HARD: &str = "byteHardLimit";

impl StatsTrack {
    /// Parses as `new StatsTrack(String)`: pairs split on runs of `,` or `;`, each split on
    /// `=` (Java's `split`, which drops trailing empty parts, so `bytes=5=` is `bytes` = 5); an
    /// empty value is -1. Null or empty data is an empty track.
    pub fn parse(data: Option<&[u8]>) -> Result<StatsTrack, BadStatsTrack> {
        let text = String::from_utf8_lossy(data.unwrap_or_default());
        let bad = || BadStatsTrack(text.to_string());
        let mut values = BTreeMap::new();
        if text.is_empty() {
            return Ok(StatsTrack { values });
        }
        let mut pairs: Vec<&str> = text.split([',', ';']).collect();
        // Pattern.split: a run of separators is one; trailing empty strings are removed (a
        // leading one stays, and then fails below like Java's kv[1]).
        while pairs.last().is_some_and(|p| p.is_empty()) {
            pairs.pop();
        }
        let mut first = true;
        for pair in pairs {
            if pair.is_empty() && !first {
                continue;
            }
            first = false;
            let mut kv: Vec<&str> = pair.split('=').collect();
            while kv.last().is_some_and(|p| p.is_empty()) {
                kv.pop();
            }
            let (Some(key), Some(value)) = (kv.first(), kv.get(1)) else { return Err(bad()) };
            let value = if value.is_empty() { -1 } else { value.parse::<i64>().map_err(|_| bad())? };
            values.insert((*key).to_owned(), value);
        }
        Ok(StatsTrack { values })
    }

    pub fn get(&self, key: &str) -> i64 {
        self.values.get(key).copied().unwrap_or(-1)
    }

    pub fn set(&mut self, key: &str, value: i64) {
        self.values.insert(key.to_owned(), value);
    }

    /// `StatsTrack.toString`.
    pub fn render(&self) -> String {
        let mut out = format!("{COUNT}={},{BYTES}={}", self.get(COUNT), self.get(BYTES));
        let mut rest = self.values.iter().filter(|(k, _)| k.as_str() != COUNT && k.as_str() != BYTES).peekable();
        if rest.peek().is_some() {
            // "Add extra = to trick old parsing code so it will ignore new flags".
            out.push('=');
            for (k, v) in rest {
                out.push_str(&format!(";{k}={v}"));
            }
        }
        out
    }
}

/// Why prep refuses a write under a quota, or cannot tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuotaCheck {
    /// Within the limits, or no hard limit crossed.
    Ok,
    /// A soft limit is crossed: ZooKeeper only logs it (the text is its log line).
    Soft(String),
    /// A hard limit is crossed: QuotaExceeded (-125). The text is ZooKeeper's log line.
    Hard(String),
    /// The limit or stats node does not parse: ZooKeeper's prep throws, which answers
    /// MarshallingError.
    Malformed,
}

impl DataTree {
    /// `DataTree.getMaxPrefixWithQuota`: the deepest quota root at or above `path`; `None` for
    /// none (and for "/", on which ZooKeeper keeps no quota).
    pub fn quota_root_of(&self, path: &str) -> Option<String> {
        if self.quota_roots.is_empty() {
            return None;
        }
        let parts: Vec<&str> = components(path).collect();
        (1..=parts.len()).rev().map(|n| format!("/{}", parts[..n].join("/"))).find(|k| self.quota_roots.contains(k))
    }

    /// Every quota root at or above `path` (for the digest's touched paths).
    pub(super) fn quota_roots_above(&self, path: &str) -> Vec<String> {
        if self.quota_roots.is_empty() {
            return Vec::new();
        }
        let parts: Vec<&str> = components(path).collect();
        (1..=parts.len())
            .map(|n| format!("/{}", parts[..n].join("/")))
            .filter(|k| self.quota_roots.contains(k))
            .collect()
    }

    /// The quota roots (ZooKeeper's trie of paths with the property set), for tests and tools.
    pub fn quota_roots(&self) -> impl Iterator<Item = &str> {
        self.quota_roots.iter().map(String::as_str)
    }

    /// What `createNode` does for quotas once the node is in: a `zookeeper_limits` child of a
    /// path under `/zookeeper/quota` makes that path a quota root; a `zookeeper_stats` child
    /// gets the subtree's counts at once (`updateQuotaForPath`). Then the deepest quota root
    /// above the new node counts it.
    pub(super) fn quota_after_create(&mut self, path: &str, data_len: i64) {
        let parent = super::path::parent(path);
        // `parentName.startsWith(quotaZookeeper)`: a string prefix, as in ZooKeeper.
        if let Some(trimmed) = parent.strip_prefix(QUOTA_ROOT) {
            match super::path::name(path) {
                LIMIT_NODE => self.add_quota_root(trimmed),
                STAT_NODE => self.update_quota_for_path(trimmed),
                _ => {}
            }
        }
        if let Some(root) = self.quota_root_of(path) {
            self.update_quota_stat(&root, data_len, 1);
        }
    }

    /// `deleteNode`: deleting a `zookeeper_limits` node under `/zookeeper` ends that quota
    /// root first; then the deepest quota root above the node uncounts it.
    pub(super) fn quota_after_delete(&mut self, path: &str, data_len: i64) {
        let parent = super::path::parent(path);
        if parent.starts_with("/zookeeper") && super::path::name(path) == LIMIT_NODE {
            // `Quotas.trimQuotaPath` is `substring(16)` whatever the prefix was.
            if let Some(trimmed) = parent.get(QUOTA_ROOT.len()..) {
                self.quota_roots.remove(&trie_key(trimmed));
            }
        }
        if let Some(root) = self.quota_root_of(path) {
            self.update_quota_stat(&root, -data_len, -1);
        }
    }

    /// `setData`: the quota root above the node counts the change of its data length.
    pub(super) fn quota_after_set_data(&mut self, path: &str, bytes_diff: i64) {
        if let Some(root) = self.quota_root_of(path) {
            self.update_quota_stat(&root, bytes_diff, 0);
        }
    }

    /// `PathTrie.addPath` (an empty path throws in ZooKeeper; "/" sets the property on the trie's
    /// root, which `findMaxPrefix` never reports, so neither makes a root here).
    fn add_quota_root(&mut self, path: &str) {
        let key = trie_key(path);
        if key != "/" {
            self.quota_roots.insert(key);
        }
    }

    /// Replaces the data of a quota stats node the way ZooKeeper does: the Stat stays as it was
    /// (no version, mzxid or mtime change; only dataLength follows the data), no watch fires, and
    /// the approximate data size is not adjusted (`nodeDataSize` is left alone there too).
    fn set_stats_data(&mut self, stat_path: &str, text: String) {
        if let Some(n) = self.lookup(stat_path).and_then(|id| self.nodes.get_mut(id)) {
            n.data = Some(Bytes::from(text));
        }
    }

    /// `updateQuotaStat`: adds to the counters in `<root>`'s stats node. A missing stats node
    /// is skipped (ZooKeeper logs "Missing node for stat"); so is one that does not parse,
    /// where ZooKeeper's apply would throw.
    fn update_quota_stat(&mut self, root: &str, bytes_diff: i64, count_diff: i64) {
        let path = stat_path(root);
        let Some(node) = self.get(&path) else { return };
        let Ok(mut track) = StatsTrack::parse(node.data.as_deref()) else { return };
        track.set(COUNT, track.get(COUNT).wrapping_add(count_diff));
        track.set(BYTES, track.get(BYTES).wrapping_add(bytes_diff));
        self.set_stats_data(&path, track.render());
    }

    /// `updateQuotaForPath`: the stats node of `path` gets the node count and data bytes of the
    /// subtree at `path` (itself included; nothing if it does not exist).
    fn update_quota_for_path(&mut self, path: &str) {
        let (mut count, mut bytes) = (0i64, 0i64);
        if let Some(id) = self.lookup(path) {
            let mut stack = vec![id];
            while let Some(cur) = stack.pop() {
                if let Some(n) = self.nodes.get(cur) {
                    count += 1;
                    bytes += i64::from(n.data_len());
                    stack.extend(n.child_ids());
                }
            }
        }
        let mut track = StatsTrack::default();
        track.set(BYTES, bytes);
        track.set(COUNT, count);
        self.set_stats_data(&stat_path(path), track.render());
    }

    /// `DataTree.setupQuota`, run after a snapshot is loaded: every leaf under `/zookeeper/quota`
    /// whose path ends in `/zookeeper_limits` makes a quota root, and its stats are recounted.
    pub fn setup_quota(&mut self) {
        self.quota_roots.clear();
        let mut limits = Vec::new();
        if let Some(id) = self.lookup(QUOTA_ROOT) {
            let mut stack = vec![(id, QUOTA_ROOT.to_owned())];
            while let Some((cur, path)) = stack.pop() {
                let Some(n) = self.nodes.get(cur) else { continue };
                if !n.has_children() {
                    if path.ends_with(&format!("/{LIMIT_NODE}")) {
                        limits.push(path);
                    }
                    continue;
                }
                for (child, name) in n.child_ids().zip(self.child_names(cur)) {
                    stack.push((child, format!("{path}/{name}")));
                }
            }
        }
        for path in limits {
            // path.substring(quotaZookeeper.length(), path.indexOf("/zookeeper_limits"))
            let end = path.find(&format!("/{LIMIT_NODE}")).unwrap_or(path.len());
            let real = path.get(QUOTA_ROOT.len()..end).unwrap_or_default().to_owned();
            self.update_quota_for_path(&real);
            self.add_quota_root(&real);
        }
    }

    /// The stats node paths a write to `path` can change (for the digest): those of every quota
    /// root above it, and, for a node under `/zookeeper/quota`, its stats sibling.
    pub(super) fn quota_paths_touched(&self, path: &str, out: &mut Vec<String>) {
        for root in self.quota_roots_above(path) {
            out.push(stat_path(&root));
        }
        let parent = super::path::parent(path);
        if parent.starts_with(QUOTA_ROOT) {
            out.push(format!("{parent}/{STAT_NODE}"));
        }
    }
}

/// `ZooKeeperServer.checkQuota`, run by prep on a create (`count_diff` 1) or setData
/// (`count_diff` 0) with the change in data bytes. It reads the committed tree, as ZooKeeper
/// reads its DataTree rather than the outstanding changes (so the ops of one multi are each
/// checked against the tree before the multi).
pub fn check(tree: &DataTree, path: &str, bytes_diff: i64, count_diff: i64) -> QuotaCheck {
    let Some(root) = tree.quota_root_of(path) else { return QuotaCheck::Ok };
    let Some(limit_node) = tree.get(&limit_path(&root)) else { return QuotaCheck::Ok };
    let Ok(limits) = StatsTrack::parse(limit_node.data.as_deref()) else { return QuotaCheck::Malformed };
    let check_count = count_diff != 0 && (limits.get(COUNT) > -1 || limits.get(COUNT_HARD) > -1);
    let check_bytes = bytes_diff != 0 && (limits.get(BYTES) > -1 || limits.get(BYTES_HARD) > -1);
    if !check_count && !check_bytes {
        return QuotaCheck::Ok;
    }
    let Some(stat_node) = tree.get(&stat_path(&root)) else { return QuotaCheck::Ok };
    let Ok(current) = StatsTrack::parse(stat_node.data.as_deref()) else { return QuotaCheck::Malformed };
    let mut soft = None;
    let checks = [
        (check_count, COUNT, COUNT_HARD, count_diff, "count", "CountLimit"),
        (check_bytes, BYTES, BYTES_HARD, bytes_diff, "bytes", "ByteLimit"),
    ];
    for (on, soft_key, hard_key, diff, what, limit_name) in checks {
        if !on {
            continue;
        }
        let new = current.get(soft_key).wrapping_add(diff);
        let hard = limits.get(hard_key) > -1;
        let limit = if hard { limits.get(hard_key) } else { limits.get(soft_key) };
        if new > limit {
            let kind = if hard { "hard" } else { "soft" };
            let msg = format!("Quota exceeded: {root} [current {what}={new}, {kind}{limit_name}={limit}]");
            if hard {
                return QuotaCheck::Hard(msg);
            }
            soft.get_or_insert(msg);
        }
    }
    soft.map_or(QuotaCheck::Ok, QuotaCheck::Soft)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<StatsTrack, BadStatsTrack> {
        StatsTrack::parse(Some(s.as_bytes()))
    }

    #[test]
    fn stats_track_text_as_zookeeper_writes_and_reads_it() {
        let mut t = StatsTrack::default();
        t.set(COUNT, -1);
        t.set(BYTES, -1);
        t.set(COUNT_HARD, 4);
        t.set(BYTES_HARD, -1);
        // What Debian's ZooKeeper 3.8 stored for `setquota -N 4 /qa`.
        assert_eq!(t.render(), "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=4");
        assert_eq!(parse(&t.render()), Ok(t));
        let mut s = StatsTrack::default();
        s.set(COUNT, 2);
        s.set(BYTES, 3);
        assert_eq!(s.render(), "count=2,bytes=3");
        assert_eq!(StatsTrack::default().render(), "count=-1,bytes=-1");
        assert!(parse("count=5,bytes=").is_err(), "split drops the empty value: kv[1] is out of bounds");
        assert_eq!(parse("count=5,,;bytes=7;;").map(|t| (t.get(COUNT), t.get(BYTES))), Ok((5, 7)));
        assert_eq!(parse("a==5").map(|t| t.get("a")), Ok(-1));
        assert!(parse("count=").is_err(), "Java's kv[1] is out of bounds");
        assert!(parse("count=x").is_err());
        assert!(parse(",count=1").is_err(), "a leading separator leaves an empty first pair");
        assert_eq!(StatsTrack::parse(None), Ok(StatsTrack::default()));
    }

    #[test]
    fn trie_keys_drop_empty_and_blank_components() {
        assert_eq!(trie_key("/a//b/"), "/a/b");
        assert_eq!(trie_key("/a/ /b"), "/a/b");
        assert_eq!(trie_key("x"), "/x");
        assert_eq!(trie_key(""), "/");
    }
}

#[cfg(test)]
#[path = "quota_tests.rs"]
mod tree_tests;
