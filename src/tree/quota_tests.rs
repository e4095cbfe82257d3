//! The quota bookkeeping of `apply` and the enforcement of prep, on a tree driven by txns.

use super::*;
use crate::proto::{Acl, CreateRequest, ErrorCode, MultiOp, OpCode, RequestBody};
use crate::tree::prep::{self, PrepCtx};
use crate::txn::Txn;

struct T {
    tree: DataTree,
    zxid: i64,
}

impl T {
    fn new() -> T {
        let mut tree = DataTree::new();
        tree.digest();
        T { tree, zxid: 0 }
    }

    fn write(&mut self, enforce: bool, op: OpCode, body: RequestBody) -> crate::tree::OpOutcome {
        let ctx = PrepCtx { session: 7, ids: &[], ttl_enabled: true, enforce_quota: enforce };
        let prepared = prep::prepare_request(&self.tree, &ctx, op, &body);
        self.zxid += 1;
        self.tree.apply(&Txn { zxid: self.zxid, time: 1, session: 7, op: prepared }, &mut Vec::new())
    }

    fn create(&mut self, path: &str, data: Option<&str>) -> crate::tree::OpOutcome {
        let req = CreateRequest {
            path: path.into(),
            data: data.map(|d| Bytes::from(d.to_owned())),
            acl: Acl::open_unsafe(),
            flags: 0,
            ttl: None,
        };
        self.write(true, OpCode::Create, RequestBody::Create(req))
    }

    fn set(&mut self, path: &str, data: &str) -> crate::tree::OpOutcome {
        let body = RequestBody::SetData { path: path.into(), data: Some(Bytes::from(data.to_owned())), version: -1 };
        self.write(true, OpCode::SetData, body)
    }

    fn delete(&mut self, path: &str) -> crate::tree::OpOutcome {
        self.write(true, OpCode::Delete, RequestBody::Delete { path: path.into(), version: -1 })
    }

    fn data(&self, path: &str) -> String {
        let d = self.tree.get(path).and_then(|n| n.data.clone()).unwrap_or_default();
        String::from_utf8_lossy(&d).into_owned()
    }

    /// What zkCli's setquota writes for a new quota on `path` (which must be one level deep).
    fn setquota(&mut self, path: &str, limits: &str) {
        let q = format!("{QUOTA_ROOT}{path}");
        self.create(&q, None);
        self.create(&format!("{q}/{LIMIT_NODE}"), Some(limits));
        self.create(&format!("{q}/{STAT_NODE}"), Some("count=0,bytes=0"));
    }

    /// The digest `apply` kept equals one computed from scratch.
    fn digest_is_consistent(&mut self) {
        let mut fresh = self.tree.clone();
        fresh.digest = None;
        assert_eq!(self.tree.digest(), fresh.digest());
    }
}

fn is_error(o: &crate::tree::OpOutcome, code: ErrorCode) -> bool {
    matches!(o, crate::tree::OpOutcome::Error(e) if *e == code)
}

#[test]
fn stats_follow_creates_deletes_and_set_data_as_in_zookeeper() {
    let mut t = T::new();
    t.create("/q", Some("r"));
    t.create("/q/a", Some("xx"));
    t.create("/other", Some("12345"));
    t.setquota("/q", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=10");
    // The client wrote count=0,bytes=0; the server recounted the subtree at once.
    let stat_path = stat_path("/q");
    assert_eq!(t.data(&stat_path), "count=2,bytes=3");
    let before = t.tree.get(&stat_path).map(|n| n.stat).unwrap();
    t.create("/q/b", Some("123"));
    t.create("/q/b/c", None);
    t.create("/other/x", Some("not counted"));
    assert_eq!(t.data(&stat_path), "count=4,bytes=6");
    t.set("/q/a", "12345");
    assert_eq!(t.data(&stat_path), "count=4,bytes=9");
    t.delete("/q/b/c");
    assert_eq!(t.data(&stat_path), "count=3,bytes=9");
    // The stats node's Stat does not move (no version, mzxid or mtime change), only its data.
    let after = t.tree.get(&stat_path).map(|n| n.stat).unwrap();
    assert_eq!(before, after);
    assert_eq!(t.tree.quota_root_of("/q/a/deeper"), Some("/q".to_string()));
    assert_eq!(t.tree.quota_root_of("/other"), None);
    t.digest_is_consistent();
    // Deleting the limits node ends the quota; the stats node stays until deleted too.
    t.delete(&limit_path("/q"));
    assert_eq!(t.tree.quota_root_of("/q/a"), None);
    t.create("/q/z", None);
    assert_eq!(t.data(&stat_path), "count=3,bytes=9");
    t.digest_is_consistent();
}

#[test]
fn hard_limits_refuse_soft_limits_only_log() {
    let mut t = T::new();
    t.create("/q", None);
    t.setquota("/q", "count=-1,bytes=-1=;byteHardLimit=5;countHardLimit=3");
    assert!(matches!(t.create("/q/a", Some("12")), crate::tree::OpOutcome::Created { .. }));
    assert!(matches!(t.create("/q/b", None), crate::tree::OpOutcome::Created { .. }));
    // count 3 + 1 > 3
    assert!(is_error(&t.create("/q/c", None), ErrorCode::QuotaExceeded));
    // bytes 2 -> 6 > 5, checked before the version (BadVersion would come after)
    let body = RequestBody::SetData { path: "/q/a".into(), data: Some(Bytes::from_static(b"123456")), version: 9 };
    assert!(is_error(&t.write(true, OpCode::SetData, body.clone()), ErrorCode::QuotaExceeded));
    assert!(is_error(&t.write(false, OpCode::SetData, body), ErrorCode::BadVersion), "not enforced: no check");
    assert!(matches!(t.set("/q/a", "12345"), crate::tree::OpOutcome::SetData { .. }));
    assert_eq!(t.data(&stat_path("/q")), "count=3,bytes=5");
    // Without enforcement the same create goes through and the stats count past the limit.
    let req = CreateRequest { path: "/q/c".into(), data: None, acl: Acl::open_unsafe(), flags: 0, ttl: None };
    assert!(matches!(t.write(false, OpCode::Create, RequestBody::Create(req)), crate::tree::OpOutcome::Created { .. }));
    assert_eq!(t.data(&stat_path("/q")), "count=4,bytes=5");
    // Soft limits only: past them is allowed.
    t.create("/s", None);
    t.setquota("/s", "count=1,bytes=0");
    assert!(matches!(t.create("/s/a", Some("x")), crate::tree::OpOutcome::Created { .. }));
    assert_eq!(t.data(&stat_path("/s")), "count=2,bytes=1");
    t.digest_is_consistent();
}

#[test]
fn a_multi_is_checked_against_the_tree_before_it() {
    let mut t = T::new();
    t.create("/q", None);
    t.setquota("/q", "count=-1,bytes=-1=;countHardLimit=2");
    t.create("/q/a", None);
    // Deleting /q/a first does not make room: ZooKeeper checks its DataTree, not the multi.
    let create = CreateRequest { path: "/q/b".into(), data: None, acl: Acl::open_unsafe(), flags: 0, ttl: None };
    let ops = vec![MultiOp::Delete { path: "/q/a".into(), version: -1 }, MultiOp::Create(OpCode::Create, create)];
    match t.write(true, OpCode::Multi, RequestBody::Multi(ops)) {
        crate::tree::OpOutcome::Multi(v) => {
            assert!(is_error(&v[0], ErrorCode::Ok));
            assert!(is_error(&v[1], ErrorCode::QuotaExceeded));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_malformed_limit_node_answers_marshalling_error() {
    let mut t = T::new();
    t.create("/q", None);
    t.setquota("/q", "count=");
    assert!(is_error(&t.create("/q/a", None), ErrorCode::MarshallingError));
}

#[test]
fn setup_quota_rebuilds_roots_and_recounts_after_a_restore() {
    let mut t = T::new();
    t.create("/q", Some("abc"));
    t.setquota("/q", "count=10,bytes=-1");
    t.create("/q/a", Some("de"));
    let mut copy = DataTree::empty();
    t.tree.visit(|path, n| {
        copy.restore_node(path, n.data.clone(), &n.acl, n.stat, 0);
    });
    // A snapshot from a ZooKeeper whose stats were stale: the restore recounts them.
    copy.set_stats_data(&stat_path("/q"), "count=99,bytes=99".into());
    copy.setup_quota();
    assert_eq!(copy.quota_roots().collect::<Vec<_>>(), vec!["/q"]);
    assert_eq!(
        String::from_utf8_lossy(copy.get(&stat_path("/q")).and_then(|n| n.data.as_deref()).unwrap()),
        "count=2,bytes=5"
    );
}
