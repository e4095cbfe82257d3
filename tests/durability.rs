//! Durability: nothing acknowledged is lost across clean restarts, SIGKILL, torn log tails,
//! and snapshots; sessions and their ephemerals survive a restart.

mod common;

use common::Raw;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use zkr::proto::{Acl, CreateRequest, OpCode, Request, RequestBody, Response};

fn create(xid: i32, path: &str, data: &[u8], flags: i32) -> Request {
    Request {
        xid,
        op: OpCode::Create2,
        body: RequestBody::Create(CreateRequest {
            path: path.into(),
            data: Some(bytes::Bytes::copy_from_slice(data)),
            acl: Acl::open_unsafe(),
            flags,
            ttl: None,
        }),
    }
}

fn get(xid: i32, path: &str) -> Request {
    Request { xid, op: OpCode::GetData, body: RequestBody::PathWatch { path: path.into(), watch: false } }
}

/// A zkr process with its client address.
struct Proc {
    child: Child,
    addr: String,
}

fn spawn(data: &Path, extra: &[&str]) -> Proc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zkr"))
        .args(["serve", "--bind", "127.0.0.1", "--port", "0", "--tick-time", "100", "--min-session-timeout", "200"])
        .arg("--data-dir")
        .arg(data)
        .args(extra)
        .env("RUST_LOG", "info")
        .stderr(Stdio::piped())
        .spawn()
        .expect("zkr starts");
    let stderr = child.stderr.take().unwrap();
    let mut lines = BufReader::new(stderr).lines();
    let log_path = data.with_extension("log");
    let mut early = Vec::new();
    let addr = loop {
        let line = lines.next().expect("zkr printed its address").unwrap();
        early.push(line.clone());
        if let Some(rest) = line.split("addr=").nth(1) {
            if line.contains("accepting client connections") {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        }
    };
    // Keep draining stderr (into <data>.log, for post-mortems) so the child never blocks.
    std::thread::spawn(move || {
        use std::io::Write;
        let mut log = std::fs::OpenOptions::new().create(true).append(true).open(log_path).ok();
        for line in early.into_iter().chain(lines.map_while(Result::ok)) {
            if let Some(f) = log.as_mut() {
                let _ = writeln!(f, "{line}");
            }
        }
    });
    Proc { child, addr }
}

impl Proc {
    fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn stop(mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "zkr exits 0 on SIGTERM: {status:?}");
    }
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_loses_no_acknowledged_write() {
    let data = common::temp_dir();
    let mut acked: Vec<String> = Vec::new();
    for round in 0..4 {
        let p = spawn(&data, &["--snap-count", "25"]);
        let (mut c, _) = Raw::connect(&p.addr, 5000).await;
        // Everything acknowledged before must be there.
        for (i, path) in acked.iter().enumerate() {
            let (h, r) = c.call(&get(i as i32 + 1, path)).await;
            assert_eq!(h.err, 0, "round {round}: lost acknowledged {path}");
            assert_eq!(
                r,
                Response::GetData {
                    data: Some(bytes::Bytes::from(path.clone())),
                    stat: match r.clone() {
                        Response::GetData { stat, .. } => stat,
                        _ => unreachable!(),
                    }
                }
            );
        }
        // Pipeline writes and kill the server while they are in flight.
        let writer = tokio::spawn(async move {
            let mut done = Vec::new();
            for i in 0..400 {
                let path = format!("/r{round}-{i}");
                c.send(&create(i, &path, path.as_bytes(), 0)).await;
            }
            while let Some((h, _)) = c.recv(OpCode::Create2).await {
                if h.err == 0 {
                    done.push(format!("/r{round}-{}", h.xid));
                }
            }
            done
        });
        tokio::time::sleep(Duration::from_millis(20 + round * 15)).await;
        p.kill9();
        let done = writer.await.unwrap();
        acked.extend(done);
    }
    let p = spawn(&data, &[]);
    let (mut c, _) = Raw::connect(&p.addr, 5000).await;
    for (i, path) in acked.iter().enumerate() {
        assert_eq!(c.call(&get(i as i32, path)).await.0.err, 0, "lost {path}");
    }
    assert!(!acked.is_empty());
    p.kill9();
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
    let out = Command::new(env!("CARGO_BIN_EXE_zkr"))
        .args(["serve", "--bind", "127.0.0.1", "--port", "0", "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&seg.display().to_string()) && err.contains("offset 8"), "{err}");
}
