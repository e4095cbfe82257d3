//! Notifications respect READ (issue #5 item 4): ZooKeeper 3.7+ checks the watcher's READ
//! permission on the node's ACL when a notification is sent, so a persistent watch, or a
//! one-shot watch set before the ACL changed, tells nothing about a node the session may not
//! read. Found by the ACL matrix (tests/interop/hostile/) against Debian's ZooKeeper.

use crate::common;

use common::Raw;
use zkr::proto::{Acl, CreateRequest, Id, OpCode, Request, RequestBody};

fn acl(perms: i32) -> Vec<Acl> {
    vec![Acl { perms, id: Id::new("world", "anyone") }]
}

fn create(xid: i32, path: &str, acl: Vec<Acl>) -> Request {
    Request {
        xid,
        op: OpCode::Create,
        body: RequestBody::Create(CreateRequest { path: path.into(), data: None, acl, flags: 0, ttl: None }),
    }
}

fn set_data(xid: i32, path: &str) -> Request {
    Request { xid, op: OpCode::SetData, body: RequestBody::SetData { path: path.into(), data: None, version: -1 } }
}

fn set_acl(xid: i32, path: &str, acl: Vec<Acl>) -> Request {
    Request { xid, op: OpCode::SetAcl, body: RequestBody::SetAcl { path: path.into(), acl, version: -1 } }
}

/// Sends a sync and counts the notifications that arrive before its reply.
async fn events_before_next_reply(c: &mut Raw, xid: i32) -> usize {
    c.send(&Request { xid, op: OpCode::Sync, body: RequestBody::Path { path: "/".into() } }).await;
    let mut events = 0;
    loop {
        let (h, _) = c.recv(OpCode::Sync).await.expect("reply");
        if h.xid == -1 {
            events += 1;
        } else {
            return events;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_for_unreadable_nodes_are_withheld() {
    let (server, addr) = common::start().await;
    let (mut owner, _) = Raw::connect(&addr, 10_000).await;
    let (mut watcher, _) = Raw::connect(&addr, 10_000).await;
    assert_eq!(owner.call(&create(1, "/secret", acl(31))).await.0.err, 0);
    let recursive = Request { xid: 1, op: OpCode::AddWatch, body: RequestBody::AddWatch { path: "/".into(), mode: 1 } };
    assert_eq!(watcher.call(&recursive).await.0.err, 0);
    // A one-shot data watch set while the node is readable.
    let get =
        Request { xid: 2, op: OpCode::GetData, body: RequestBody::PathWatch { path: "/secret".into(), watch: true } };
    assert_eq!(watcher.call(&get).await.0.err, 0);

    // Readable: the change is told (recursive watch and one-shot watch: one notification).
    assert_eq!(owner.call(&set_data(2, "/secret")).await.0.err, 0);
    assert_eq!(events_before_next_reply(&mut watcher, 3).await, 1);
    assert_eq!(watcher.call(&get).await.0.err, 0);

    // Everything but READ: the setACL itself is a change nobody watches by data, and from now
    // on neither the data change nor the delete of /secret is told.
    assert_eq!(owner.call(&set_acl(3, "/secret", acl(31 & !1))).await.0.err, 0);
    assert_eq!(owner.call(&set_data(4, "/secret")).await.0.err, 0);
    assert_eq!(events_before_next_reply(&mut watcher, 4).await, 0, "a change of an unreadable node was told");
    assert_eq!(owner.call(&create(5, "/secret/child", acl(31))).await.0.err, 0);
    // The readable child's creation is told (its own ACL); /secret's child list is not.
    assert_eq!(events_before_next_reply(&mut watcher, 5).await, 1);
    let delete = |xid, path: &str| Request {
        xid,
        op: OpCode::Delete,
        body: RequestBody::Delete { path: path.into(), version: -1 },
    };
    assert_eq!(owner.call(&delete(6, "/secret/child")).await.0.err, 0);
    assert_eq!(owner.call(&delete(7, "/secret")).await.0.err, 0);
    // NodeDeleted of the readable child is told; NodeDeleted of /secret is not (judged by the
    // ACL it had). Recursive watches get no NodeChildrenChanged, as in ZooKeeper.
    assert_eq!(events_before_next_reply(&mut watcher, 6).await, 1);
    server.shutdown().await;
}
