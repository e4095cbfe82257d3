//! Plain reads answered by the connection from the read view (src/server/view.rs) must be
//! indistinguishable from reads answered by the core: per-session order, a read sees every write
//! acknowledged before it was sent, and a watch event comes before any reply showing its change.
//! Each test races the two paths many times over pipelined raw frames.

use crate::common;

use common::Raw;
use zkr::proto::{Acl, CreateRequest, OpCode, Request, RequestBody, Response};

fn create(xid: i32, path: &str, acl: Vec<Acl>) -> Request {
    let body =
        CreateRequest { path: path.into(), data: Some(bytes::Bytes::from_static(b"0")), acl, flags: 0, ttl: None };
    Request { xid, op: OpCode::Create, body: RequestBody::Create(body) }
}

fn set(xid: i32, path: &str, value: u32) -> Request {
    let data = Some(bytes::Bytes::from(value.to_string()));
    Request { xid, op: OpCode::SetData, body: RequestBody::SetData { path: path.into(), data, version: -1 } }
}

fn get(xid: i32, path: &str, watch: bool) -> Request {
    Request { xid, op: OpCode::GetData, body: RequestBody::PathWatch { path: path.into(), watch } }
}

/// The value a getData reply shows.
fn value(resp: &Response) -> u32 {
    match resp {
        Response::GetData { data: Some(d), .. } => std::str::from_utf8(d).unwrap().parse().unwrap(),
        other => panic!("not a getData reply: {other:?}"),
    }
}

async fn reply(c: &mut Raw, op: OpCode) -> (zkr::proto::ReplyHeader, Response) {
    let (h, body) = c.recv(op).await.expect("reply");
    let resp = if h.xid == -1 { Response::Empty } else { Response::parse(op, h.err, &body).expect("body") };
    (h, resp)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_reads_behind_a_write_of_the_same_session_see_it_in_order() {
    let (server, addr) = common::start().await;
    let (mut a, _) = Raw::connect(&addr, 10_000).await;
    a.call(&create(1, "/n", Acl::open_unsafe())).await;
    let mut xid = 10;
    for round in 1..=300u32 {
        // Reads first (likely answered locally), then a write, then reads that must see it.
        a.send(&get(xid, "/n", false)).await;
        a.send(&set(xid + 1, "/n", round)).await;
        for k in 2..6 {
            a.send(&get(xid + k, "/n", false)).await;
        }
        for k in 0..6 {
            let op = if k == 1 { OpCode::SetData } else { OpCode::GetData };
            let (h, resp) = reply(&mut a, op).await;
            assert_eq!(h.xid, xid + k, "round {round}: replies in request order");
            assert_eq!(h.err, 0);
            match k {
                0 => assert_eq!(value(&resp), round - 1, "round {round}: the read before the write"),
                1 => {}
                _ => assert_eq!(value(&resp), round, "round {round}: a read after its own write sees it"),
            }
        }
        xid += 6;
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_sent_after_another_sessions_write_was_acknowledged_sees_it() {
    let (server, addr) = common::start().await;
    let (mut w, _) = Raw::connect(&addr, 10_000).await;
    let (mut r, _) = Raw::connect(&addr, 10_000).await;
    w.call(&create(1, "/m", Acl::open_unsafe())).await;
    for round in 1..=300u32 {
        let (h, _) = w.call(&set(round as i32 + 1, "/m", round)).await;
        assert_eq!(h.err, 0);
        let (h, resp) = r.call(&get(round as i32, "/m", false)).await;
        assert_eq!(h.err, 0);
        assert_eq!(value(&resp), round, "round {round}: the acknowledged write is visible to another session");
        assert!(h.zxid >= 0);
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_event_comes_before_any_reply_showing_its_change() {
    let (server, addr) = common::start().await;
    let (mut w, _) = Raw::connect(&addr, 10_000).await;
    let (mut r, _) = Raw::connect(&addr, 10_000).await;
    w.call(&create(1, "/w", Acl::open_unsafe())).await;
    let mut xid = 10;
    for round in 1..=100u32 {
        // The watch goes through the core; then plain reads (answered locally while nothing is
        // in flight) race the write from the other session.
        let (h, _) = r.call(&get(xid, "/w", true)).await;
        assert_eq!(h.err, 0);
        xid += 1;
        let reads = 40;
        w.send(&set(round as i32 + 1, "/w", round)).await;
        for k in 0..reads {
            r.send(&get(xid + k, "/w", false)).await;
        }
        let mut notified = false;
        let mut answered = 0;
        while answered < reads {
            let (h, resp) = reply(&mut r, OpCode::GetData).await;
            if h.xid == -1 {
                assert!(!notified, "round {round}: one event per watch");
                notified = true;
                continue;
            }
            assert_eq!(h.xid, xid + answered, "round {round}: replies in request order");
            if value(&resp) == round {
                assert!(notified, "round {round}: a reply showed the change before its watch event");
            }
            answered += 1;
        }
        let (h, _) = reply(&mut w, OpCode::SetData).await;
        assert_eq!(h.err, 0);
        if !notified {
            let (h, _) = reply(&mut r, OpCode::GetData).await;
            assert_eq!(h.xid, -1, "round {round}: the watch event arrives");
        }
        xid += reads;
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_readable_only_with_credentials_is_still_answered_correctly() {
    let (server, addr) = common::start().await;
    let (mut owner, _) = Raw::connect(&addr, 10_000).await;
    let (mut other, _) = Raw::connect(&addr, 10_000).await;
    let auth = Request {
        xid: -4,
        op: OpCode::Auth,
        body: RequestBody::Auth {
            auth_type: 0,
            scheme: "digest".into(),
            auth: Some(bytes::Bytes::from_static(b"u:p")),
        },
    };
    let (h, _) = owner.call(&auth).await;
    assert_eq!(h.err, 0);
    let creator = vec![Acl { perms: 31, id: zkr::proto::Id { scheme: "auth".into(), id: String::new() } }];
    let (h, _) = owner.call(&create(2, "/secret", creator)).await;
    assert_eq!(h.err, 0);
    for i in 0..50 {
        let (h, _) = owner.call(&get(10 + i, "/secret", false)).await;
        assert_eq!(h.err, 0, "the owner reads with its identity (the core decides)");
        let (h, _) = other.call(&get(10 + i, "/secret", false)).await;
        assert_eq!(h.err, zkr::proto::ErrorCode::NoAuth.code(), "anyone else gets NoAuth");
        let (h, _) = other.call(&get(10 + i, "/missing", false)).await;
        assert_eq!(h.err, zkr::proto::ErrorCode::NoNode.code());
    }
    server.shutdown().await;
}
