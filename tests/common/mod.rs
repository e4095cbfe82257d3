//! Shared helpers for integration tests: a zkr server on port 0 and a raw-frame client.
#![allow(dead_code)]

pub mod certs;
pub mod cluster;
pub mod ensemble_proc;
pub mod netns;
pub mod zkr_proc;

use bytes::{BufMut, BytesMut};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use zkr::config::Config;
use zkr::proto::{ConnectRequest, ConnectResponse, OpCode, ReplyHeader, Request, Response};
use zkr::server::Server;

/// A fresh, empty directory for one test server.
pub fn temp_dir() -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("zkr-test-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// A config for tests: loopback, port 0, short ticks so expiry tests are quick.
pub fn test_config() -> Config {
    Config {
        bind: "127.0.0.1".parse().unwrap(),
        port: 0,
        data_dir: temp_dir(),
        tick_time_ms: 100,
        min_session_timeout_ms: 200,
        max_session_timeout_ms: 10_000,
        max_client_cnxns: 0,
        container_check_interval_ms: 200,
        admin_enabled: false,
        // A member that must stop stops serving; the test process goes on.
        exit_on_fatal: false,
        ..Config::default()
    }
}

pub async fn start() -> (Server, String) {
    start_with(test_config()).await
}

pub async fn start_with(cfg: Config) -> (Server, String) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_test_writer()
        .try_init();
    let server = Server::start(cfg).await.expect("server starts");
    let addr = server.local_addr().to_string();
    (server, addr)
}

/// Speaks frames directly, to test what real clients never send.
pub struct Raw {
    pub stream: TcpStream,
}

impl Raw {
    pub async fn open(addr: &str) -> Raw {
        Raw { stream: TcpStream::connect(addr).await.expect("connect") }
    }

    pub async fn send_frame(&mut self, payload: &[u8]) {
        assert!(self.try_send_frame(payload).await, "write to zkr failed");
    }

    /// Sends a frame; false if the connection is gone (e.g. the server was killed).
    pub async fn try_send_frame(&mut self, payload: &[u8]) -> bool {
        let mut b = BytesMut::new();
        b.put_i32(payload.len() as i32);
        b.put_slice(payload);
        self.stream.write_all(&b).await.is_ok()
    }

    pub async fn try_send(&mut self, req: &Request) -> bool {
        let mut b = Vec::new();
        req.write(&mut b);
        self.try_send_frame(&b).await
    }

    /// Next frame, or None on EOF / timeout.
    pub async fn read_frame(&mut self) -> Option<Vec<u8>> {
        let fut = async {
            let mut len = [0u8; 4];
            self.stream.read_exact(&mut len).await.ok()?;
            let mut buf = vec![0u8; i32::from_be_bytes(len) as usize];
            self.stream.read_exact(&mut buf).await.ok()?;
            Some(buf)
        };
        tokio::time::timeout(Duration::from_secs(5), fut).await.ok().flatten()
    }

    pub async fn handshake(&mut self, req: ConnectRequest) -> Option<ConnectResponse> {
        let mut b = Vec::new();
        req.write(&mut b);
        self.send_frame(&b).await;
        let frame = self.read_frame().await?;
        Some(ConnectResponse::parse(&frame).expect("ConnectResponse"))
    }

    pub async fn connect(addr: &str, timeout_ms: i32) -> (Raw, ConnectResponse) {
        let mut r = Raw::open(addr).await;
        let resp = r.handshake(new_session(timeout_ms)).await.expect("handshake");
        (r, resp)
    }

    pub async fn send(&mut self, req: &Request) {
        let mut b = Vec::new();
        req.write(&mut b);
        self.send_frame(&b).await;
    }

    /// Reads the next frame as a reply to `op` (or a notification when xid is -1).
    pub async fn recv(&mut self, op: OpCode) -> Option<(ReplyHeader, Vec<u8>)> {
        let f = self.read_frame().await?;
        let (rest, h) = ReplyHeader::parse(&f).expect("header");
        let _ = op;
        Some((h, rest.to_vec()))
    }

    pub async fn call(&mut self, req: &Request) -> (ReplyHeader, Response) {
        self.send(req).await;
        let (h, body) = self.recv(req.op).await.expect("reply");
        let resp = Response::parse(req.op, h.err, &body).expect("reply body");
        (h, resp)
    }
}

pub fn new_session(timeout_ms: i32) -> ConnectRequest {
    ConnectRequest {
        protocol_version: 0,
        last_zxid_seen: 0,
        timeout_ms,
        session_id: 0,
        password: vec![0; 16],
        read_only: Some(false),
    }
}

pub async fn eventually<F: FnMut() -> Fut, Fut: std::future::Future<Output = bool>>(what: &str, mut f: F) {
    for _ in 0..100 {
        if f().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for: {what}");
}
