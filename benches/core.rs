//! Micro-benchmarks of the hot paths, with Dubbo-shaped provider names:
//! - codec: decode and encode of every common request and reply;
//! - tree: create, get, getChildren and delete in trees of 10^5 and 10^6 nodes;
//! - watch: one change firing thousands of watchers.
//!
//! Run with `cargo bench` (or `cargo bench -- codec` for one group); CI only compiles them.

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};
use zkr::proto::{
    Acl, ConnectRequest, ConnectResponse, CreateRequest, MultiOp, MultiResult, OpCode, Request, RequestBody, Response,
    SetWatches, Stat, WatcherEvent,
};
use zkr::tree::{prep, Change, DataTree};
use zkr::txn::Txn;
use zkr::watch::WatchManager;

/// A provider node name as Dubbo writes it: a URL-encoded provider URL, ~600 bytes.
fn provider(i: usize) -> String {
    let url = format!(
        "dubbo://10.0.{}.{}:20880/org.apache.dubbo.demo.DemoService?anyhost=true&application=demo-provider&deprecated=false&dubbo=2.0.2&dynamic=true&generic=false&interface=org.apache.dubbo.demo.DemoService&methods=sayHello,sayHelloAsync&pid={}&release=3.3.0&side=provider&timestamp=1700000000000&{}",
        i / 250,
        i % 250,
        i,
        "x".repeat(300)
    );
    url.replace(':', "%3A").replace('/', "%2F").replace('?', "%3F").replace('&', "%26").replace('=', "%3D")
}

fn providers_dir(svc: usize) -> String {
    format!("/dubbo/org.apache.dubbo.demo.DemoService{svc}/providers")
}

fn stat() -> Stat {
    Stat {
        czxid: 0x1_0000_0005,
        mzxid: 0x1_0000_0009,
        ctime: 1_700_000_000_000,
        mtime: 1_700_000_000_100,
        version: 3,
        cversion: 7,
        aversion: 0,
        ephemeral_owner: 0x1000_0a3b_0000_0001,
        data_length: 100,
        num_children: 0,
        pzxid: 0x1_0000_0005,
    }
}

fn requests() -> Vec<(&'static str, Request)> {
    let dubbo = format!("{}/{}", providers_dir(1), provider(1));
    let pw = |op, path: &str| Request { xid: 7, op, body: RequestBody::PathWatch { path: path.into(), watch: true } };
    vec![
        (
            "create2 (Dubbo provider)",
            Request {
                xid: 7,
                op: OpCode::Create2,
                body: RequestBody::Create(CreateRequest {
                    path: dubbo.clone(),
                    data: None,
                    acl: Acl::open_unsafe(),
                    flags: 1,
                    ttl: None,
                }),
            },
        ),
        ("getData", pw(OpCode::GetData, "/dubbo/config/app.properties")),
        ("exists", pw(OpCode::Exists, &dubbo)),
        ("getChildren2", pw(OpCode::GetChildren2, &providers_dir(1))),
        (
            "setData (100 B)",
            Request {
                xid: 7,
                op: OpCode::SetData,
                body: RequestBody::SetData {
                    path: "/dubbo/config/app.properties".into(),
                    data: Some(Bytes::from(vec![b'v'; 100])),
                    version: -1,
                },
            },
        ),
        (
            "delete (Dubbo provider)",
            Request { xid: 7, op: OpCode::Delete, body: RequestBody::Delete { path: dubbo.clone(), version: -1 } },
        ),
        ("ping", Request { xid: -2, op: OpCode::Ping, body: RequestBody::Empty }),
        (
            "multi (check, create, delete)",
            Request {
                xid: 7,
                op: OpCode::Multi,
                body: RequestBody::Multi(vec![
                    MultiOp::Check { path: "/locks".into(), version: 3 },
                    MultiOp::Create(
                        OpCode::Create,
                        CreateRequest {
                            path: "/locks/lock-".into(),
                            data: Some(Bytes::new()),
                            acl: Acl::open_unsafe(),
                            flags: 3,
                            ttl: None,
                        },
                    ),
                    MultiOp::Delete { path: "/locks/old".into(), version: -1 },
                ]),
            },
        ),
        (
            "setWatches2 (100 child watches)",
            Request {
                xid: -8,
                op: OpCode::SetWatches2,
                body: RequestBody::SetWatches(SetWatches {
                    relative_zxid: 0x1_0000_0009,
                    child: (0..100).map(providers_dir).collect(),
                    ..Default::default()
                }),
            },
        ),
    ]
}

fn replies() -> Vec<(&'static str, OpCode, Response)> {
    let children: Vec<Arc<str>> = (0..1000).map(|i| Arc::from(provider(i))).collect();
    vec![
        (
            "getData (100 B)",
            OpCode::GetData,
            Response::GetData { data: Some(Bytes::from(vec![b'v'; 100])), stat: stat() },
        ),
        ("exists / setData (Stat)", OpCode::Exists, Response::Stat(stat())),
        (
            "create2",
            OpCode::Create2,
            Response::Create2 { path: format!("{}/{}", providers_dir(1), provider(1)), stat: stat() },
        ),
        (
            "getChildren2, 1000 providers",
            OpCode::GetChildren2,
            Response::Children2 { children: children.clone(), stat: stat() },
        ),
        ("getChildren, 1000 providers", OpCode::GetChildren, Response::Children(children)),
        (
            "multi (check, create, delete)",
            OpCode::Multi,
            Response::Multi(vec![
                MultiResult::Check,
                MultiResult::Create { path: "/locks/lock-0000000001".into() },
                MultiResult::Delete,
            ]),
        ),
    ]
}

fn codec(c: &mut Criterion) {
    let mut g = c.benchmark_group("codec");
    let mut out = Vec::with_capacity(1 << 20);
    for (name, req) in requests() {
        let mut bytes = Vec::new();
        req.write(&mut bytes);
        g.bench_function(format!("decode request {name}"), |b| b.iter(|| Request::parse(black_box(&bytes)).unwrap()));
        g.bench_function(format!("encode request {name}"), |b| {
            b.iter(|| {
                out.clear();
                req.write(&mut out);
                black_box(out.len())
            })
        });
    }
    for (name, op, reply) in replies() {
        let mut bytes = Vec::new();
        reply.write(&mut bytes);
        g.bench_function(format!("decode reply {name}"), |b| {
            b.iter(|| Response::parse(op, 0, black_box(&bytes)).unwrap())
        });
        g.bench_function(format!("encode reply {name}"), |b| {
            b.iter(|| {
                out.clear();
                reply.write(&mut out);
                black_box(out.len())
            })
        });
    }
    let ev = WatcherEvent { event_type: 4, state: 3, path: providers_dir(1) };
    g.bench_function("encode notification", |b| {
        b.iter(|| {
            out.clear();
            ev.write(&mut out);
            black_box(out.len())
        })
    });
    let mut evb = Vec::new();
    ev.write(&mut evb);
    g.bench_function("decode notification", |b| b.iter(|| WatcherEvent::parse(black_box(&evb)).unwrap()));
    let conn = ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0x1_0000_0009,
        timeout_ms: 30_000,
        session_id: 0,
        password: vec![0; 16],
        read_only: Some(false),
    };
    let mut cb = Vec::new();
    conn.write(&mut cb);
    g.bench_function("decode ConnectRequest", |b| b.iter(|| ConnectRequest::parse(black_box(&cb)).unwrap()));
    let resp = ConnectResponse {
        protocol_version: 0,
        timeout_ms: 30_000,
        session_id: 0x1000_0a3b_0000_0001,
        password: vec![7; 16],
        read_only: Some(false),
    };
    g.bench_function("encode ConnectResponse", |b| {
        b.iter(|| {
            out.clear();
            resp.write(&mut out);
            black_box(out.len())
        })
    });
    g.finish();
}

/// A tree applying txns as the core does (prepare, then apply).
struct Tree {
    t: DataTree,
    zxid: i64,
    changes: Vec<Change>,
}

impl Tree {
    fn op(&mut self, op: MultiOp) {
        self.zxid += 1;
        let ctx = prep::PrepCtx { session: 1, ids: &[], ttl_enabled: true, enforce_quota: false };
        let txn = prep::prepare(&self.t, &ctx, &op);
        self.changes.clear();
        black_box(self.t.apply(&Txn { zxid: self.zxid, time: 0, session: 1, op: txn }, &mut self.changes));
    }

    fn create(&mut self, path: String) {
        self.op(MultiOp::Create(
            OpCode::Create,
            CreateRequest { path, data: None, acl: Acl::open_unsafe(), flags: 0, ttl: None },
        ));
    }

    fn delete(&mut self, path: String) {
        self.op(MultiOp::Delete { path, version: -1 });
    }

    /// `n` provider nodes: 1000 per service directory.
    fn dubbo(n: usize) -> Tree {
        let mut t = Tree { t: DataTree::new(), zxid: 0, changes: Vec::new() };
        t.create("/dubbo".into());
        for s in 0..n.div_ceil(1000) {
            t.create(providers_dir(s).trim_end_matches("/providers").to_owned());
            t.create(providers_dir(s));
        }
        for i in 0..n {
            t.create(format!("{}/{}", providers_dir(i / 1000), provider(i)));
        }
        t
    }
}

fn tree(c: &mut Criterion) {
    let mut g = c.benchmark_group("tree");
    g.sample_size(20).measurement_time(Duration::from_secs(3));
    for n in [100_000usize, 1_000_000] {
        let mut t = Tree::dubbo(n);
        let mid = format!("{}/{}", providers_dir(n / 2000), provider(n / 2));
        g.bench_with_input(BenchmarkId::new("get a provider", n), &mid, |b, p| {
            b.iter(|| black_box(t.t.get(black_box(p)).is_some()))
        });
        let dir = providers_dir(n / 2000);
        g.bench_with_input(BenchmarkId::new("getChildren of 1000 providers", n), &dir, |b, d| {
            b.iter(|| black_box(t.t.lookup(d).map(|id| t.t.child_names(id).map(Arc::<str>::from).collect::<Vec<_>>())))
        });
        // create and delete of a fresh provider, each timed alone; the tree keeps its size.
        let mut k = 0usize;
        g.bench_function(BenchmarkId::new("create a provider", n), |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    k += 1;
                    let p = format!("{}/{}", providers_dir(k % 100), provider(n + k));
                    let t0 = Instant::now();
                    t.create(p.clone());
                    spent += t0.elapsed();
                    t.delete(p);
                }
                spent
            })
        });
        g.bench_function(BenchmarkId::new("delete a provider", n), |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    k += 1;
                    let p = format!("{}/{}", providers_dir(k % 100), provider(n + k));
                    t.create(p.clone());
                    let t0 = Instant::now();
                    t.delete(p);
                    spent += t0.elapsed();
                }
                spent
            })
        });
    }
    g.finish();
}

fn watch(c: &mut Criterion) {
    let mut g = c.benchmark_group("watch");
    for watchers in [1_000u64, 10_000] {
        // One providers directory watched by `watchers` consumers (one-shot child watches,
        // re-armed after each change as consumers do), and a provider leaving.
        let dir = providers_dir(1);
        let acl: Arc<[zkr::proto::Acl]> = Arc::from(zkr::proto::Acl::open_unsafe());
        let change = vec![Change::Deleted(format!("{dir}/{}", provider(1)), acl), Change::ChildrenChanged(dir.clone())];
        let mut w = WatchManager::default();
        let mut fired = Vec::with_capacity(watchers as usize);
        g.bench_function(BenchmarkId::new("one change, child watchers re-armed", watchers), |b| {
            b.iter_custom(|iters| {
                let mut spent = Duration::ZERO;
                for _ in 0..iters {
                    for id in 0..watchers {
                        w.add_child(&dir, id);
                    }
                    fired.clear();
                    let t0 = Instant::now();
                    w.trigger(&change, &mut fired);
                    spent += t0.elapsed();
                    assert_eq!(fired.len() as u64, watchers);
                }
                spent
            })
        });
        let mut w = WatchManager::default();
        for id in 0..watchers {
            w.add_persistent(&dir, id, false);
        }
        g.bench_function(BenchmarkId::new("one change, persistent watchers", watchers), |b| {
            b.iter(|| {
                fired.clear();
                w.trigger(&change, &mut fired);
                black_box(fired.len())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, codec, tree, watch);
criterion_main!(benches);
