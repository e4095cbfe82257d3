//! A `zkr serve` child process for tests that look at the server from outside: its log, its
//! memory, threads and open files (/proc), and `mntr`.
#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub struct ZkrProc {
    child: Child,
    pub addr: String,
    log: Arc<Mutex<String>>,
    data: std::path::PathBuf,
}

impl ZkrProc {
    /// Starts zkr on loopback, port 0, a fresh data directory, every four-letter word allowed,
    /// with `extra` flags and `RUST_LOG=rust_log`; returns once it accepts connections.
    pub fn start(extra: &[&str], rust_log: &str) -> ZkrProc {
        ZkrProc::start_under(&[], extra, rust_log)
    }

    /// As `start`, run by the command `wrapper` (e.g. `prlimit --nofile=600:600 --`).
    pub fn start_under(wrapper: &[&str], extra: &[&str], rust_log: &str) -> ZkrProc {
        let data = super::temp_dir();
        std::fs::create_dir_all(&data).unwrap();
        let cfg = data.join("zoo.cfg");
        std::fs::write(&cfg, "4lw.commands.whitelist=*\n").unwrap();
        let mut cmd = match wrapper.split_first() {
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args).arg(env!("CARGO_BIN_EXE_zkr"));
                c
            }
            None => Command::new(env!("CARGO_BIN_EXE_zkr")),
        };
        let mut child = cmd
            .args(["serve", "--bind", "127.0.0.1", "--port", "0", "--config"])
            .arg(&cfg)
            .arg("--data-dir")
            .arg(data.join("d"))
            .args(extra)
            .env("RUST_LOG", rust_log)
            .env("NO_COLOR", "1")
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("zkr starts");
        let stderr = child.stderr.take().unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let sink = log.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("accepting client connections") {
                    if let (Some(t), Some(rest)) = (tx.take(), line.split("addr=").nth(1)) {
                        let _ = t.send(rest.split_whitespace().next().unwrap_or("").to_string());
                    }
                }
                let mut l = sink.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        let Ok(addr) = rx.recv_timeout(Duration::from_secs(30)) else {
            // Never leave a server behind, even when it did not come up as expected.
            let _ = child.kill();
            let _ = child.wait();
            panic!("zkr did not print its address within 30 s:\n{}", log.lock().unwrap());
        };
        ZkrProc { child, addr, log, data }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything zkr has logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    fn status_field(&self, key: &str) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).expect("/proc status");
        s.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .expect("status field")
    }

    /// Resident memory, KiB.
    pub fn rss_kb(&self) -> u64 {
        self.status_field("VmRSS:")
    }

    pub fn threads(&self) -> u64 {
        self.status_field("Threads:")
    }

    /// Open file descriptors (sockets, log files, the listener…).
    pub fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid())).map(|d| d.count()).unwrap_or(0)
    }

    /// Sends a four-letter word and returns the whole answer.
    pub fn four_letter(&self, word: &str) -> String {
        let mut s = TcpStream::connect(&self.addr).expect("connect for 4lw");
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(word.as_bytes()).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    /// `mntr` as key → value.
    pub fn mntr(&self) -> HashMap<String, String> {
        self.four_letter("mntr")
            .lines()
            .filter_map(|l| l.split_once('\t'))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    /// zk_num_alive_connections, the mntr connection itself included (as in ZooKeeper).
    pub fn alive_connections(&self) -> usize {
        self.mntr().get("zk_num_alive_connections").and_then(|v| v.parse().ok()).expect("mntr alive")
    }
}

impl Drop for ZkrProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.data);
    }
}
