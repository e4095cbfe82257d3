//! A connection's authenticated identities kept in the order ZooKeeper lists them.
//!
//! ZooKeeper holds them in `ServerCnxn.authInfo`, a `Collections.newSetFromMap(new
//! ConcurrentHashMap<>())`, and every place that lists them walks that set: whoAmI
//! (`AuthUtil.getClientInfos`) and the `auth` scheme of `PrepRequestProcessor.fixupACL`. So
//! zkCli's `whoami` prints `digest: bob` before `ip: 127.0.0.1` before `digest: alice`: the
//! order of the hash table's bins, not the order the identities came in. This module replays
//! `ConcurrentHashMap.putVal` (bins of 16, doubled at three quarters full, split as `transfer`
//! splits them) over the jute-generated `Id.hashCode`, so that a `Vec<Id>` is always in the
//! order ZooKeeper's set iterates. Pure functions; the session table owns the vectors.

use crate::proto::Id;

/// `String.hashCode`: over UTF-16 code units, `31 * h + c`, wrapping.
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The jute-generated `Id.hashCode`: `result = 17; result = 37 * result + field.hashCode()`
/// for `scheme`, then `id`.
fn id_hash(id: &Id) -> i32 {
    let r = 37i32.wrapping_mul(17).wrapping_add(java_string_hash(&id.scheme));
    37i32.wrapping_mul(r).wrapping_add(java_string_hash(&id.id))
}

/// `ConcurrentHashMap.spread`: the high half folded into the low half, sign bit cleared.
fn spread(id: &Id) -> u32 {
    let h = id_hash(id) as u32;
    (h ^ (h >> 16)) & 0x7fff_ffff
}

/// The table length a set of `len` identities has: 16 (`DEFAULT_CAPACITY`), doubled each
/// time the count reached three quarters of it (`sizeCtl = n - n/4`, checked in `addCount`).
fn table_len(len: usize) -> usize {
    let mut n = 16;
    while len >= n - n / 4 {
        n *= 2;
    }
    n
}

type Bins = Vec<Vec<(u32, Id)>>;

/// `ConcurrentHashMap.transfer` of one table into one twice its size: each bin splits into the
/// nodes whose hash has bit `n` clear (staying at `i`) and set (moving to `i + n`). The tail
/// run of nodes that all go the same way (`lastRun`) keeps its order; the nodes before it are
/// pushed onto the front of their list one by one, so they come out reversed.
fn transfer(bins: Bins) -> Bins {
    let n = bins.len();
    let mut out: Bins = vec![Vec::new(); n * 2];
    for (i, bin) in bins.into_iter().enumerate() {
        let Some(first) = bin.first() else { continue };
        let goes_high = |h: u32| h as usize & n != 0;
        let mut run_high = goes_high(first.0);
        let mut last_run = 0;
        for (k, (h, _)) in bin.iter().enumerate().skip(1) {
            if goes_high(*h) != run_high {
                run_high = goes_high(*h);
                last_run = k;
            }
        }
        let mut lo: Vec<(u32, Id)> = Vec::new();
        let mut hi: Vec<(u32, Id)> = Vec::new();
        let mut nodes = bin.into_iter();
        let head: Vec<(u32, Id)> = nodes.by_ref().take(last_run).collect();
        let tail: Vec<(u32, Id)> = nodes.collect();
        if run_high {
            hi = tail;
        } else {
            lo = tail;
        }
        for node in head {
            if goes_high(node.0) {
                hi.insert(0, node);
            } else {
                lo.insert(0, node);
            }
        }
        out[i] = lo;
        out[i + n] = hi;
    }
    out
}

/// Adds `id` as `authInfo.add(id)` does (a set: an identity already there changes nothing),
/// keeping `ids` in the set's iteration order. `ids` must be in that order already, which
/// holds for any vector built only by this function: the bins, and the order within each,
/// follow from the iteration order and the count alone. (A bin of 8 would make ZooKeeper
/// grow the table early, `treeifyBin`; a connection never has that many colliding ids.)
pub fn add(ids: &mut Vec<Id>, id: Id) {
    if ids.contains(&id) {
        return;
    }
    let n = table_len(ids.len());
    let mut bins: Bins = vec![Vec::new(); n];
    for x in ids.drain(..).chain(std::iter::once(id)) {
        let h = spread(&x);
        bins[h as usize & (n - 1)].push((h, x));
    }
    let count: usize = bins.iter().map(Vec::len).sum();
    while count >= bins.len() - bins.len() / 4 {
        bins = transfer(bins);
    }
    ids.extend(bins.into_iter().flatten().map(|(_, id)| id));
}

/// A set built by adding `ids` in turn (a connection's `ip` identity, then its certificate's).
pub fn from_added(ids: impl IntoIterator<Item = Id>) -> Vec<Id> {
    let mut out = Vec::new();
    for id in ids {
        add(&mut out, id);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Id {
        let (scheme, id) = s.split_once(':').unwrap();
        Id::new(scheme, id)
    }

    fn show(ids: &[Id]) -> String {
        ids.iter().map(|i| format!("{}:{}", i.scheme, i.id)).collect::<Vec<_>>().join(" ")
    }

    /// Each case: identities added in this order, and the order `new ArrayList<>(set)` gave on
    /// Java 17 for `Collections.newSetFromMap(new ConcurrentHashMap<Id, Boolean>())` with
    /// `org.apache.zookeeper.data.Id` from Debian's zookeeper-jute 3.8.0 (a small program run
    /// while writing this; the first case is what zkCli's whoami printed from Debian's server).
    #[test]
    fn order_matches_java_concurrent_hash_map() {
        let many: Vec<String> = (1..=14).map(|i| format!("digest:u{i}:p")).collect();
        let more: Vec<String> = std::iter::once("ip:0:0:0:0:0:0:0:1".to_owned())
            .chain((1..=30).map(|i| format!("digest:user{i}:xyz{i}")))
            .collect();
        let cases: Vec<(Vec<String>, &str)> = vec![
            (
                vec!["ip:127.0.0.1".into(), "digest:alice:h1".into(), "digest:bob:h2".into()],
                "digest:alice:h1 digest:bob:h2 ip:127.0.0.1",
            ),
            (
                vec!["ip:10.0.0.7".into(), "super:".into(), "digest:root:abc".into()],
                "digest:root:abc ip:10.0.0.7 super:",
            ),
            (vec!["ip:127.0.0.1".into(), "sasl:bob".into(), "super:".into()], "sasl:bob super: ip:127.0.0.1"),
            (
                vec!["ip:127.0.0.1".into(), "x509:CN=bob,O=zkr".into(), "super:CN=bob,O=zkr".into()],
                "x509:CN=bob,O=zkr ip:127.0.0.1 super:CN=bob,O=zkr",
            ),
            (
                many,
                "digest:u13:p digest:u14:p digest:u11:p digest:u12:p digest:u3:p digest:u2:p digest:u5:p \
                    digest:u4:p digest:u7:p digest:u6:p digest:u10:p digest:u9:p digest:u8:p digest:u1:p",
            ),
            (
                more,
                "digest:user5:xyz5 digest:user14:xyz14 digest:user23:xyz23 digest:user2:xyz2 \
                    digest:user12:xyz12 digest:user16:xyz16 digest:user8:xyz8 ip:0:0:0:0:0:0:0:1 \
                    digest:user17:xyz17 digest:user28:xyz28 digest:user9:xyz9 digest:user3:xyz3 \
                    digest:user20:xyz20 digest:user6:xyz6 digest:user25:xyz25 digest:user19:xyz19 \
                    digest:user11:xyz11 digest:user22:xyz22 digest:user24:xyz24 digest:user13:xyz13 \
                    digest:user27:xyz27 digest:user10:xyz10 digest:user18:xyz18 digest:user26:xyz26 \
                    digest:user30:xyz30 digest:user29:xyz29 digest:user21:xyz21 digest:user7:xyz7 \
                    digest:user1:xyz1 digest:user15:xyz15 digest:user4:xyz4",
            ),
            (
                vec!["ip:127.0.0.1".into(), "digest:\u{e9}t\u{e9}:\u{fc}".into()],
                "digest:\u{e9}t\u{e9}:\u{fc} ip:127.0.0.1",
            ),
        ];
        for (added, want) in cases {
            let ids = from_added(added.iter().map(|s| parse(s)));
            let want = want.split_whitespace().collect::<Vec<_>>().join(" ");
            assert_eq!(show(&ids), want, "added {added:?}");
        }
    }

    #[test]
    fn adding_an_identity_twice_changes_nothing() {
        let mut ids = from_added([parse("ip:127.0.0.1"), parse("digest:a:b")]);
        let before = ids.clone();
        add(&mut ids, parse("digest:a:b"));
        assert_eq!(ids, before);
    }
}
