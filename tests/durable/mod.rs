//! zkr serve as a child process on a data directory that outlives it, for the durability
//! tests: start, SIGKILL, SIGTERM, restart, and a start that must be refused.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;
use zkr::proto::{Acl, CreateRequest, OpCode, Request, RequestBody};

pub fn create(xid: i32, path: &str, data: &[u8], flags: i32) -> Request {
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

pub fn get(xid: i32, path: &str) -> Request {
    Request { xid, op: OpCode::GetData, body: RequestBody::PathWatch { path: path.into(), watch: false } }
}

/// Starts zkr on `data` expecting it to refuse; returns what it said on stderr. A zkr that
/// starts anyway is killed after 30 s and fails the test (rather than hanging it).
pub fn refused_startup(data: &Path) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zkr"))
        .args(["serve", "--admin-enable", "false", "--bind", "127.0.0.1", "--port", "0", "--data-dir"])
        .arg(data)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let said = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let mut status = None;
    for _ in 0..300 {
        status = child.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("zkr started on a damaged data directory:\n{}", said.join().unwrap_or_default());
    };
    assert!(!status.success(), "zkr started on a damaged data directory");
    said.join().unwrap()
}

/// A zkr process with its client address.
pub struct Proc {
    pub child: Child,
    pub addr: String,
}

pub fn spawn(data: &Path, extra: &[&str]) -> Proc {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zkr"))
        .args([
            "serve",
            "--admin-enable",
            "false",
            "--bind",
            "127.0.0.1",
            "--port",
            "0",
            "--tick-time",
            "100",
            "--min-session-timeout",
            "200",
        ])
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

/// A test that fails half-way must not leave its server running.
impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub fn stop(mut self) {
        let _ = Command::new("kill").arg("-TERM").arg(self.child.id().to_string()).status();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "zkr exits 0 on SIGTERM: {status:?}");
    }
}

/// Where `spawn` keeps the stderr of the servers it started on `data`.
pub fn log_path(data: &Path) -> PathBuf {
    data.with_extension("log")
}

/// The log of the servers started on `data`, once it contains `what` (the stderr drain runs on
/// its own thread, so a line can arrive a moment after the process is gone).
pub fn wait_for_log(data: &Path, what: &str) -> String {
    let mut text = String::new();
    for _ in 0..100 {
        text = std::fs::read_to_string(log_path(data)).unwrap_or_default();
        if text.contains(what) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    text
}

/// Runs `zkr repair-log` on `data`; returns its exit status and what it printed.
pub fn repair_log(data: &Path) -> (std::process::ExitStatus, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_zkr")).arg("repair-log").arg("--data-dir").arg(data).output().unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status, said)
}
