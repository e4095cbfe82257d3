//! Micro-benchmarks of the hot paths: request decoding, reply encoding, and tree operations
//! with Dubbo-shaped provider names. Run with `cargo bench`.

use criterion::{criterion_group, criterion_main, Criterion};
use std::hint::black_box;
use zkr::proto::{Acl, CreateRequest, MultiOp, OpCode, Request, RequestBody, Response, Stat};
use zkr::tree::{prep, DataTree};
use zkr::txn::Txn;

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

fn codec(c: &mut Criterion) {
    let req = Request {
        xid: 7,
        op: OpCode::Create2,
        body: RequestBody::Create(CreateRequest {
            path: format!("/dubbo/org.apache.dubbo.demo.DemoService/providers/{}", provider(1)),
            data: None,
            acl: Acl::open_unsafe(),
            flags: 1,
            ttl: None,
        }),
    };
    let mut bytes = Vec::new();
    req.write(&mut bytes);
    c.bench_function("decode create2 (Dubbo provider)", |b| b.iter(|| Request::parse(black_box(&bytes)).unwrap()));
    let children: Vec<std::sync::Arc<str>> = (0..1000).map(|i| std::sync::Arc::from(provider(i))).collect();
    let reply = Response::Children2 { children, stat: Stat::default() };
    let mut out = Vec::with_capacity(1 << 20);
    c.bench_function("encode getChildren2 reply, 1000 providers", |b| {
        b.iter(|| {
            out.clear();
            reply.write(&mut out);
            black_box(out.len())
        })
    });
}

fn tree(c: &mut Criterion) {
    let mut t = DataTree::new();
    let ctx = prep::PrepCtx { session: 1, ids: &[], ttl_enabled: true };
    let mut zxid = 0;
    let mut create = |t: &mut DataTree, path: String| {
        zxid += 1;
        let req = CreateRequest { path, data: None, acl: Acl::open_unsafe(), flags: 0, ttl: None };
        let op = prep::prepare(t, &ctx, &MultiOp::Create(OpCode::Create, req));
        t.apply(&Txn { zxid, time: 0, session: 1, op }, &mut Vec::new());
    };
    create(&mut t, "/dubbo".into());
    create(&mut t, "/dubbo/svc".into());
    create(&mut t, "/dubbo/svc/providers".into());
    for i in 0..10_000 {
        create(&mut t, format!("/dubbo/svc/providers/{}", provider(i)));
    }
    let path = format!("/dubbo/svc/providers/{}", provider(5000));
    c.bench_function("lookup a provider among 10k", |b| b.iter(|| black_box(t.get(black_box(&path)).is_some())));
    c.bench_function("list 10k provider names", |b| {
        b.iter(|| black_box(t.get("/dubbo/svc/providers").unwrap().children.keys().cloned().collect::<Vec<_>>()))
    });
}

criterion_group!(benches, codec, tree);
criterion_main!(benches);
