//! Durability: nothing acknowledged is lost across clean restarts, SIGKILL, torn log tails,
//! and snapshots; sessions and their ephemerals survive a restart.

use crate::common;
use crate::durable;

use common::Raw;
use durable::{create, get, refused_startup, spawn};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;
use zkr::proto::{Acl, CreateRequest, OpCode, Request, RequestBody, Response};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clean_restart_keeps_tree_zxid_and_sessions() {
    let data = common::temp_dir();
    let p = spawn(&data, &[]);
    let (mut c, resp) = Raw::connect(&p.addr, 5000).await;
    let (h, _) = c.call(&create(1, "/kept", b"v", 0)).await;
    assert_eq!(h.err, 0);
    let (h2, r) = c.call(&create(2, "/eph", b"e", 1)).await;
    assert_eq!(h2.err, 0);
    let Response::Create2 { stat: before, .. } = r else { panic!("{r:?}") };
    drop(c); // no closeSession: the session must outlive the restart
    p.stop();

    let p = spawn(&data, &[]);
    // Re-attach with the same id and password and a lastZxidSeen of what we saw.
    let mut again = Raw::open(&p.addr).await;
    let mut req = common::new_session(5000);
    req.session_id = resp.session_id;
    req.password = resp.password.clone();
    req.last_zxid_seen = h2.zxid;
    let back = again.handshake(req).await.expect("re-attach answered");
    assert_eq!(back.session_id, resp.session_id, "session survived the restart");
    let (h, r) = again.call(&get(1, "/eph")).await;
    assert_eq!(h.err, 0, "ephemeral survived with its session");
    let Response::GetData { stat, .. } = r else { panic!("{r:?}") };
    assert_eq!(stat, before);
    let (h, _) = again.call(&create(2, "/next", b"", 0)).await;
    assert!(h.zxid > h2.zxid, "zxid continues after restart");
    p.kill9();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_not_back_in_time_expire_after_restart() {
    let data = common::temp_dir();
    let p = spawn(&data, &[]);
    let (mut c, _) = Raw::connect(&p.addr, 1500).await;
    assert_eq!(c.call(&create(1, "/gone-soon", b"", 1)).await.0.err, 0);
    drop(c);
    p.kill9();
    let p = spawn(&data, &[]);
    let (mut w, _) = Raw::connect(&p.addr, 5000).await;
    assert_eq!(w.call(&get(1, "/gone-soon")).await.0.err, 0, "restored with its session");
    let mut gone = false;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        if w.call(&get(2, "/gone-soon")).await.0.err == -101 {
            gone = true;
            break;
        }
    }
    assert!(gone, "the restored session expired after its timeout");
    p.kill9();
}

/// One write of the crash loop.
#[derive(Clone)]
enum Sent {
    Create(String),
    SetState(String),
    /// Two creates in one multi: both or neither may exist, never one.
    Pair(String, String),
}

fn request_for(xid: i32, sent: &Sent) -> Request {
    use zkr::proto::MultiOp;
    match sent {
        Sent::Create(p) => create(xid, p, p.as_bytes(), 0),
        Sent::SetState(v) => Request {
            xid,
            op: OpCode::SetData,
            body: RequestBody::SetData {
                path: "/state".into(),
                data: Some(bytes::Bytes::from(v.clone())),
                version: -1,
            },
        },
        Sent::Pair(a, b) => {
            let c = |p: &str| {
                MultiOp::Create(
                    OpCode::Create,
                    CreateRequest { path: p.into(), data: None, acl: Acl::open_unsafe(), flags: 0, ttl: None },
                )
            };
            Request { xid, op: OpCode::Multi, body: RequestBody::Multi(vec![c(a), c(b)]) }
        }
    }
}

/// Pipelined existence check of many paths: true where getData answered OK.
async fn present(c: &mut Raw, paths: &[String]) -> Vec<bool> {
    let mut out = Vec::with_capacity(paths.len());
    for chunk in paths.chunks(500) {
        for (i, p) in chunk.iter().enumerate() {
            c.send(&get(i as i32, p)).await;
        }
        for _ in chunk {
            let (h, _) = c.recv(OpCode::GetData).await.expect("reply");
            out.push(h.err == 0);
        }
    }
    out
}

/// The crash loop: pipelined creates, setData and multis, SIGKILL at a random moment (often
/// while a snapshot is being written: --snap-count 30), restart, and check that every
/// acknowledged change is there and no multi is half applied. `ZKR_CRASH_ROUNDS` (default 20)
/// sets the number of kills; the long form is `ZKR_CRASH_ROUNDS=500 cargo test --release
/// --test integration durability::crash_loop`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_loop_loses_no_acknowledged_write() {
    let rounds: usize = std::env::var("ZKR_CRASH_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let data = common::temp_dir();
    let mut acked_creates: Vec<String> = Vec::new();
    let mut pairs: Vec<(String, String, bool)> = Vec::new(); // (a, b, acknowledged)
                                                             // The /state values in send order, and how far the acknowledged ones reach.
    let mut states: Vec<String> = Vec::new();
    let mut state_acked: Option<usize> = None;
    for round in 0..=rounds {
        let p = spawn(&data, &["--snap-count", "30"]);
        let (mut c, _) = Raw::connect(&p.addr, 5000).await;
        let ok = present(&mut c, &acked_creates).await;
        if let Some(i) = ok.iter().position(|x| !x) {
            panic!("round {round}: lost acknowledged create {}", acked_creates[i]);
        }
        let flat: Vec<String> = pairs.iter().flat_map(|(a, b, _)| [a.clone(), b.clone()]).collect();
        let ok = present(&mut c, &flat).await;
        for (n, (a, b, acked)) in pairs.iter().enumerate() {
            let (ha, hb) = (ok[2 * n], ok[2 * n + 1]);
            assert_eq!(ha, hb, "round {round}: multi half applied: {a} {ha}, {b} {hb}");
            assert!(!acked || ha, "round {round}: lost acknowledged multi {a}");
        }
        if let Some(last) = state_acked {
            let (h, r) = c.call(&get(1, "/state")).await;
            assert_eq!(h.err, 0, "round {round}: /state lost");
            let Response::GetData { data: Some(v), .. } = r else { panic!("{r:?}") };
            let at = states.iter().position(|s| s.as_bytes() == &v[..]).expect("a value that was sent");
            assert!(at >= last, "round {round}: /state went back from {} to {}", states[last], states[at]);
        }
        if round == rounds {
            p.kill9();
            break;
        }
        if round == 0 {
            assert_eq!(c.call(&create(1, "/state", b"", 0)).await.0.err, 0);
        }
        let mut plan = Vec::new();
        for i in 0..2000 {
            let sent = match i % 3 {
                0 => Sent::Create(format!("/c{round}-{i}")),
                1 => Sent::SetState(format!("{round}-{i}")),
                _ => Sent::Pair(format!("/m{round}-{i}-a"), format!("/m{round}-{i}-b")),
            };
            match &sent {
                Sent::SetState(v) => states.push(v.clone()),
                Sent::Pair(a, b) => pairs.push((a.clone(), b.clone(), false)),
                Sent::Create(_) => {}
            }
            plan.push(sent);
        }
        let state_base = states.len() - plan.iter().filter(|s| matches!(s, Sent::SetState(_))).count();
        let pair_base = pairs.len() - plan.iter().filter(|s| matches!(s, Sent::Pair(..))).count();
        let to_send = plan.clone();
        let writer = tokio::spawn(async move {
            let mut acked = Vec::new();
            for (i, sent) in to_send.iter().enumerate() {
                if !c.try_send(&request_for(i as i32, sent)).await {
                    break; // killed mid-send: collect what was acknowledged
                }
            }
            while let Some((h, body)) = c.recv(OpCode::Multi).await {
                let ok = match &to_send[h.xid as usize] {
                    Sent::Pair(..) => h.err == 0 && body.get(8..12) == Some(&[0, 0, 0, 0][..]),
                    _ => h.err == 0,
                };
                if ok {
                    acked.push(h.xid as usize);
                }
            }
            acked
        });
        let delay = rand::random::<u64>() % 40 + 1;
        tokio::time::sleep(Duration::from_millis(delay)).await;
        p.kill9();
        let acked = writer.await.unwrap();
        eprintln!("round {round}: killed after {delay} ms with {} of {} writes acknowledged", acked.len(), plan.len());
        let (mut nth_state, mut nth_pair) = (state_base, pair_base);
        let acked: std::collections::HashSet<usize> = acked.into_iter().collect();
        for (i, sent) in plan.iter().enumerate() {
            match sent {
                Sent::Create(p) if acked.contains(&i) => acked_creates.push(p.clone()),
                Sent::SetState(_) => {
                    if acked.contains(&i) {
                        state_acked = Some(nth_state);
                    }
                    nth_state += 1;
                }
                Sent::Pair(..) => {
                    if acked.contains(&i) {
                        pairs[nth_pair].2 = true;
                    }
                    nth_pair += 1;
                }
                _ => {}
            }
        }
    }
    assert!(acked_creates.len() > rounds, "the loop acknowledged too little to mean anything");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_are_taken_purged_and_recovered() {
    let data = common::temp_dir();
    let p = spawn(&data, &["--snap-count", "10"]);
    let (mut c, _) = Raw::connect(&p.addr, 5000).await;
    for i in 0..120 {
        assert_eq!(c.call(&create(i, &format!("/s{i}"), b"x", 0)).await.0.err, 0);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    p.kill9();
    let snaps = std::fs::read_dir(data.join("snap")).unwrap().count();
    assert!((1..=4).contains(&snaps), "old snapshots purged, newest kept: {snaps}");
    let p = spawn(&data, &[]);
    let (mut c, _) = Raw::connect(&p.addr, 5000).await;
    for i in 0..120 {
        assert_eq!(c.call(&get(i, &format!("/s{i}"))).await.0.err, 0, "/s{i}");
    }
    p.kill9();
}

#[test]
fn corrupt_log_stops_startup_naming_file_and_offset() {
    let data = common::temp_dir();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let p = spawn(&data, &[]);
        let (mut c, _) = Raw::connect(&p.addr, 5000).await;
        for i in 0..5 {
            c.call(&create(i, &format!("/c{i}"), b"payload", 0)).await;
        }
        p.kill9();
    });
    let seg = std::fs::read_dir(data.join("wal")).unwrap().next().unwrap().unwrap().path();
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[8 + 8 + 3] ^= 0x55; // inside the first record's payload, with good records after it
    std::fs::write(&seg, &bytes).unwrap();
    let err = refused_startup(&data);
    assert!(err.contains(&seg.display().to_string()) && err.contains("offset 8"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_snapshot_is_refused_unless_asked_to_fall_back() {
    let data = common::temp_dir();
    let p = spawn(&data, &["--snap-count", "20"]);
    let (mut c, _) = Raw::connect(&p.addr, 5000).await;
    for i in 0..70 {
        assert_eq!(c.call(&create(i, &format!("/n{i}"), b"x", 0)).await.0.err, 0);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    p.stop(); // also writes a final snapshot
    let mut snaps: Vec<_> = std::fs::read_dir(data.join("snap")).unwrap().map(|e| e.unwrap().path()).collect();
    snaps.sort();
    assert!(snaps.len() >= 2, "{snaps:?}");
    let newest = snaps.last().unwrap().clone();
    let mut bytes = std::fs::read(&newest).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&newest, &bytes).unwrap();

    let err = refused_startup(&data);
    assert!(err.contains(&newest.display().to_string()) && err.contains("fails its checksum"), "{err}");

    let p = spawn(&data, &["--recover-older-snapshot"]);
    let (mut c, _) = Raw::connect(&p.addr, 5000).await;
    for i in 0..70 {
        assert_eq!(c.call(&get(i, &format!("/n{i}"))).await.0.err, 0, "/n{i} after falling back");
    }
    p.kill9();
}

/// The full-disk failpoint fails the append itself: the write that hit it never reaches the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_stops_acknowledgements_instead_of_losing_writes() {
    log_failure_stops_acknowledgements("ZKR_FAILPOINT_LOG_FULL_AFTER", "no space left on device", false).await;
}

/// The fsync failpoint fails after the append, as a real fsync error does: the write that hit it
/// is in the file (the page cache outlives the process) but was never acknowledged. A client
/// must treat an unanswered write as unknown, as with ZooKeeper; what matters is that zkr does
/// not answer it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_fsync_stops_acknowledgements_instead_of_losing_writes() {
    log_failure_stops_acknowledgements("ZKR_FAILPOINT_FSYNC_FAILS_AFTER", "fsync failed", true).await;
}

/// Creates one at a time (so each write is its own group commit and the one that hits the
/// failure is known: the first without an answer) until the failpoint stops zkr, then a write
/// on a second session. Checks that the failing write and everything after it got no answer at
/// all, that zkr exited 70 naming the failure, and, after a restart without the failpoint, that
/// every acknowledged create is there with the zxid it was acknowledged with, and nothing from
/// after the failure is.
async fn log_failure_stops_acknowledgements(failpoint: &str, says: &str, failed_write_reaches_the_log: bool) {
    let data = common::temp_dir();
    let mut child = Command::new(env!("CARGO_BIN_EXE_zkr"))
        .args(["serve", "--admin-enable", "false", "--bind", "127.0.0.1", "--port", "0", "--data-dir"])
        .arg(&data)
        .env(failpoint, "20000")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let addr = loop {
        let line = lines.next().unwrap().unwrap();
        if line.contains("accepting client connections") {
            break line.split("addr=").nth(1).unwrap().split_whitespace().next().unwrap().to_string();
        }
    };
    let (mut c, _) = Raw::connect(&addr, 5000).await;
    let (mut second, _) = Raw::connect(&addr, 5000).await;
    let mut acked: Vec<(String, i64)> = Vec::new();
    let mut failed = None;
    for i in 0..1000 {
        let path = format!("/f{i}");
        c.send(&create(i, &path, &[7u8; 100], 0)).await;
        match c.recv(OpCode::Create2).await {
            Some((h, _)) if h.err == 0 => acked.push((path, h.zxid)),
            Some((h, _)) => panic!("{path}: an error reply ({}) instead of no reply", h.err),
            None => {
                failed = Some(path);
                break;
            }
        }
    }
    let failed = failed.expect("the failpoint stopped acknowledgements");
    assert!(acked.len() > 10, "acknowledged {} writes before the failure", acked.len());
    // After the failure nothing is acknowledged, on any session.
    let after = "/after-the-failure";
    if second.try_send(&create(1, after, b"", 0)).await {
        assert!(second.recv(OpCode::Create2).await.is_none(), "a write after the failure was answered");
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(70), "zkr stops when its log cannot be written");
    let said: Vec<String> = lines.map_while(Result::ok).collect();
    assert!(said.iter().any(|l| l.contains("cannot write the transaction log") && l.contains(says)), "{said:?}");

    let p = spawn(&data, &[]);
    let (mut c, _) = Raw::connect(&p.addr, 5000).await;
    for (i, (path, zxid)) in acked.iter().enumerate() {
        let (h, r) = c.call(&get(i as i32, path)).await;
        assert_eq!(h.err, 0, "lost acknowledged {path}");
        let Response::GetData { stat, .. } = r else { panic!("{r:?}") };
        assert_eq!(stat.czxid, *zxid, "{path} is the write that was acknowledged");
    }
    let last_acked = acked.last().map_or(0, |(_, z)| *z);
    let (h, r) = c.call(&get(0, &failed)).await;
    if failed_write_reaches_the_log {
        assert_eq!(h.err, 0, "the write whose fsync failed is in the log");
        let Response::GetData { stat, .. } = r else { panic!("{r:?}") };
        assert_eq!(stat.czxid, last_acked + 1, "and it is the one right after the last acknowledged");
    } else {
        assert_eq!(h.err, -101, "the write that found the disk full is not in the log");
    }
    assert_eq!(c.call(&get(1, after)).await.0.err, -101, "nothing after the failure reached the log");
    let (h, _) = c.call(&create(2, "/next", b"", 0)).await;
    assert_eq!(h.err, 0);
    assert!(h.zxid > last_acked, "the zxid continues after every acknowledged write");
    p.kill9();
}
