//! The tree's own invariants: sizes as ZooKeeper counts them, views, child-list caches, digest.

use super::*;

/// The figures Debian's ZooKeeper 3.8 printed for the same steps: 44 on a fresh server,
/// 59 after `/abc` (5 bytes, then 1) and `/abc/été` (2 bytes; 8 Java chars), 44 again.
#[test]
fn approximate_data_size_counts_paths_like_zookeeper() {
    let mut t = DataTree::new();
    assert_eq!(t.data_size(), 44);
    let mut changes = Vec::new();
    let acl: Arc<[Acl]> = Arc::from(Acl::open_unsafe());
    let mut zxid = 0;
    let mut run = |t: &mut DataTree, op: TxnOp| {
        zxid += 1;
        t.apply(&Txn { zxid, time: 0, session: 0, op }, &mut changes);
    };
    let create = |path: &str, data: &'static [u8]| TxnOp::Create {
        path: path.to_owned(),
        data: Some(Bytes::from_static(data)),
        acl: acl.clone(),
        ephemeral_owner: 0,
        parent_cversion: 0,
    };
    run(&mut t, create("/abc", b"12345"));
    run(&mut t, create("/abc/\u{e9}t\u{e9}", b"xy"));
    run(&mut t, TxnOp::SetData { path: "/abc".to_owned(), data: Some(Bytes::from_static(b"1")), version: 1 });
    assert_eq!(t.data_size(), 59);
    run(&mut t, TxnOp::Delete { path: "/abc/\u{e9}t\u{e9}".to_owned() });
    run(&mut t, TxnOp::Delete { path: "/abc".to_owned() });
    assert_eq!(t.data_size(), 44);
}

/// A snapshot view is the tree as it was when taken, however the tree changes afterwards
/// (the nodes are shared by chunk and copied on write), and it encodes to the same bytes.
#[test]
fn a_snapshot_view_keeps_the_tree_as_it_was() {
    let mut t = DataTree::new();
    let mut changes = Vec::new();
    let acl: Arc<[Acl]> = Arc::from(Acl::open_unsafe());
    let mut zxid = 0;
    let mut run = |t: &mut DataTree, op: TxnOp| {
        zxid += 1;
        t.apply(&Txn { zxid, time: 0, session: 7, op }, &mut changes);
    };
    let create = |path: String, owner: i64| TxnOp::Create {
        path,
        data: Some(Bytes::from_static(b"v1")),
        acl: acl.clone(),
        ephemeral_owner: owner,
        parent_cversion: 0,
    };
    run(&mut t, TxnOp::CreateSession { timeout_ms: 30_000, password: None });
    run(&mut t, create("/d".into(), 0));
    for i in 0..2000 {
        run(&mut t, create(format!("/d/n{i}"), if i % 2 == 0 { 7 } else { 0 }));
    }
    let before = crate::storage::snapshot::encode(&t);
    let view = t.snapshot_view();
    for i in 0..2000 {
        match i % 3 {
            0 => run(&mut t, TxnOp::Delete { path: format!("/d/n{i}") }),
            1 => run(
                &mut t,
                TxnOp::SetData { path: format!("/d/n{i}"), data: Some(Bytes::from_static(b"v2")), version: 1 },
            ),
            _ => run(&mut t, create(format!("/d/m{i}"), 0)),
        }
    }
    assert_eq!(crate::storage::snapshot::encode(&view), before, "the view changed with the tree");
    assert_eq!(view.get("/d/n1").and_then(|n| n.data.clone()), Some(Bytes::from_static(b"v1")));
    assert!(view.get("/d/m2").is_none());
    assert_eq!(t.get("/d/n1").and_then(|n| n.data.clone()), Some(Bytes::from_static(b"v2")));
    assert!(t.get("/d/n0").is_none() && t.get("/d/m2").is_some());
}

/// Stored data does not point into the buffer it was decoded from (a 1 MiB frame must not
/// stay alive for a 3-byte node), on create and on setData.
#[test]
fn node_data_is_copied_out_of_its_frame() {
    let frame = Bytes::from(vec![7u8; 1 << 20]);
    let inside = |d: &Bytes| {
        let (lo, hi) = (frame.as_ptr() as usize, frame.as_ptr() as usize + frame.len());
        (lo..hi).contains(&(d.as_ptr() as usize))
    };
    let mut t = DataTree::new();
    let mut changes = Vec::new();
    let acl: Arc<[Acl]> = Arc::from(Acl::open_unsafe());
    let create = TxnOp::Create {
        path: "/n".to_owned(),
        data: Some(frame.slice(10..13)),
        acl,
        ephemeral_owner: 0,
        parent_cversion: 0,
    };
    t.apply(&Txn { zxid: 1, time: 0, session: 0, op: create }, &mut changes);
    let d = t.get("/n").and_then(|n| n.data.clone()).unwrap();
    assert_eq!(&d[..], &[7, 7, 7]);
    assert!(!inside(&d));
    let set = TxnOp::SetData { path: "/n".to_owned(), data: Some(frame.slice(20..22)), version: 1 };
    t.apply(&Txn { zxid: 2, time: 0, session: 0, op: set }, &mut changes);
    let d = t.get("/n").and_then(|n| n.data.clone()).unwrap();
    assert_eq!(&d[..], &[7, 7]);
    assert!(!inside(&d));
}

/// The cached child list of every directory equals a fresh encoding of its children after
/// any sequence of creates and deletes (deterministic pseudo-random sequence).
#[test]
fn cached_child_lists_always_match_a_fresh_encoding() {
    let mut t = DataTree::new();
    let acl: Arc<[Acl]> = Arc::from(Acl::open_unsafe());
    let mut seed: u64 = 0x5eed_1234;
    let mut next = move || {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize
    };
    let mut zxid = 0;
    let mut changes = Vec::new();
    let mut apply = |t: &mut DataTree, op: TxnOp| {
        zxid += 1;
        t.apply(&Txn { zxid, time: 0, session: 0, op }, &mut changes);
    };
    let create = |path: &str| TxnOp::Create {
        path: path.to_owned(),
        data: None,
        acl: acl.clone(),
        ephemeral_owner: 0,
        parent_cversion: 0,
    };
    for d in ["/a", "/b", "/a/c"] {
        apply(&mut t, create(d));
    }
    // Directories that come and go too, so node ids get reused.
    let dirs = ["/", "/a", "/b", "/a/c", "/a/n1", "/b/n2"];
    let check = |t: &DataTree, path: &str| {
        let Some(id) = t.lookup(path) else { return };
        let fresh = crate::proto::encode_children(t.child_names(id));
        assert_eq!(t.encoded_children(id).unwrap(), fresh, "child list of {path}");
    };
    let mut cached = 0;
    for _ in 0..20_000 {
        let dir = dirs[1 + next() % (dirs.len() - 1)];
        let path = format!("{}/n{}", dir, next() % 40);
        match t.get(&path) {
            None if t.get(dir).is_some() => apply(&mut t, create(&path)),
            Some(n) if !n.has_children() => apply(&mut t, TxnOp::Delete { path }),
            _ => {}
        }
        for d in dirs {
            if next() % 3 == 0 {
                check(&t, d);
                cached += 1;
            }
        }
    }
    assert!(cached > 10_000);
    let copy = t.clone();
    for d in dirs {
        check(&t, d);
        check(&copy, d);
    }
}

#[test]
fn digest_is_kept_by_apply_and_ignores_order() {
    let acl: Arc<[Acl]> = Arc::from(Acl::open_unsafe());
    let create = |p: &str, cv: i32, owner: i64| TxnOp::Create {
        path: p.into(),
        data: Some(Bytes::from(p.to_owned())),
        acl: acl.clone(),
        ephemeral_owner: owner,
        parent_cversion: cv,
    };
    let run = |t: &mut DataTree, ops: Vec<TxnOp>| {
        for (i, op) in ops.into_iter().enumerate() {
            let txn = Txn { zxid: i as i64 + 1, time: 7, session: 5, op };
            t.apply(&txn, &mut Vec::new());
        }
    };
    let mut tracked = DataTree::new();
    tracked.digest();
    let ops = vec![
        TxnOp::CreateSession { timeout_ms: 1000, password: None },
        create("/a", 1, 0),
        create("/a/b", 1, 5),
        TxnOp::SetData { path: "/a".into(), data: Some(Bytes::from_static(b"x")), version: 1 },
        TxnOp::SetAcl { path: "/a".into(), acl: Arc::from(Acl::read_unsafe()), aversion: 1 },
        TxnOp::Multi(vec![create("/c", 2, 0), TxnOp::Delete { path: "/c".into() }]),
        create("/d", 3, 5),
        TxnOp::CloseSession,
    ];
    run(&mut tracked, ops.clone());
    let mut fresh = tracked.clone();
    fresh.digest = None;
    assert_eq!(tracked.digest(), fresh.digest(), "the kept digest is the recomputed one");
    let mut untracked = DataTree::new();
    run(&mut untracked, ops);
    assert_eq!(untracked.digest(), tracked.digest());
    // The same nodes added in another order (different zxids aside) give the same sum.
    let mut x = DataTree::new();
    let mut y = DataTree::new();
    let t = |zxid, op| Txn { zxid, time: 7, session: 0, op };
    x.apply(&t(1, create("/p", 1, 0)), &mut Vec::new());
    x.apply(&t(1, create("/q", 2, 0)), &mut Vec::new());
    y.apply(&t(1, create("/q", 1, 0)), &mut Vec::new());
    y.apply(&t(1, create("/p", 2, 0)), &mut Vec::new());
    assert_eq!(x.digest(), y.digest());
    let before = x.digest();
    x.apply(&t(2, TxnOp::SetData { path: "/p".into(), data: None, version: 1 }), &mut Vec::new());
    assert_ne!(x.digest(), before);
}
