//! The backup commands of ZooKeeper 3.9's AdminServer (`Commands.SnapshotCommand`,
//! `Commands.RestoreCommand`): `GET /commands/snapshot[?streaming=true|false]` (alias `snap`)
//! streams the tree as a ZooKeeper snapshot file; `POST /commands/restore` (alias `rest`) with
//! such a file as its body replaces the tree. Both are checked in ZooKeeper's order:
//! authentication and ALL on `/` (`auth::Gate`, 401/403), then the switch
//! (`admin.snapshot.enabled`/`admin.restore.enabled`, 503 when off), then the rate limit
//! (`admin.rateLimiterIntervalInMS`, 429), then the work (500 when it fails).
//!
//! The snapshot is a copy of the tree at one zxid taken in one core turn
//! (`DataTree::snapshot_view`, nodes shared, not copied), measured for the `snapshot_size`
//! header from its paths' and data's lengths (`snapwrite::encoded_len_with_zxid`) and encoded
//! once into the response, both off the core at a lower CPU priority. Writes go on meanwhile. The restore body is read whole (at most `MAX_RESTORE_BYTES`), parsed off the core
//! (`import::snapfile::read_stream`: any damage refuses it whole), and only a tree that read
//! whole goes to the core (`server::core::restore`).

use super::auth::{Gate, ALL_ON_ROOT};
use super::listener::Peer;
use crate::export::snapwrite;
use crate::server::ops::Ops;
use crate::tree::DataTree;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, DefaultBodyLimit, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::{json, Map, Value as Json};
use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The largest restore body taken (the body is held whole while it is parsed).
pub const MAX_RESTORE_BYTES: usize = 1 << 30;
/// Bytes of snapshot per chunk of the streamed response.
const CHUNK: usize = 256 << 10;
/// Chunks encoded ahead of a slow client.
const CHUNKS_AHEAD: usize = 4;
/// ZooKeeper's answer to a command switched off (`zookeeper.admin.snapshot.enabled` or
/// `zookeeper.admin.restore.enabled` false): 503, `{"command", "error": null}`.
const DISABLED: StatusCode = StatusCode::SERVICE_UNAVAILABLE;
/// ZooKeeper's answer to a command its `RateLimiter` refuses: 429, `{"command", "error": null}`.
const RATE_LIMITED: StatusCode = StatusCode::TOO_MANY_REQUESTS;
/// `SnapshotCommand`'s header: the snapshot's zxid as "0x" and lower-case hex without padding
/// (`ZxidUtils.zxidToString`).
const LAST_ZXID: &str = "last_zxid";
/// `SnapshotCommand`'s header: the snapshot file's size in bytes.
const SNAPSHOT_SIZE: &str = "snapshot_size";
/// How long a snapshot waits for its zxid to reach the log on disk.
const DURABLE_WAIT: Duration = Duration::from_secs(10);

/// ZooKeeper's `RateLimiter(1, interval)`: one request per window; a window starts with the
/// first request after the previous one ended (the first request of all passes).
pub struct RateLimiter {
    interval: Duration,
    window: parking_lot::Mutex<Option<(Instant, bool)>>,
}

impl RateLimiter {
    pub fn new(interval: Duration) -> RateLimiter {
        RateLimiter { interval, window: parking_lot::Mutex::new(None) }
    }

    /// True if a request may run now (and counts it).
    pub fn allow(&self) -> bool {
        let now = Instant::now();
        let mut w = self.window.lock();
        match &mut *w {
            Some((start, used)) if now <= *start + self.interval => !std::mem::replace(used, true),
            _ => {
                *w = Some((now, true));
                true
            }
        }
    }
}

#[derive(Clone)]
struct Backup {
    ops: Arc<Ops>,
    gate: Arc<Gate>,
    snapshots: Arc<RateLimiter>,
    restores: Arc<RateLimiter>,
}

/// The two commands' routes (each under both of its names), merged into the AdminServer.
pub fn router(ops: Arc<Ops>) -> Router {
    let interval = Duration::from_millis(ops.cfg.admin_backup.rate_limit_ms);
    let state = Backup {
        gate: Arc::new(Gate::new(ops.clone())),
        ops,
        snapshots: Arc::new(RateLimiter::new(interval)),
        restores: Arc::new(RateLimiter::new(interval)),
    };
    let limit = DefaultBodyLimit::max(MAX_RESTORE_BYTES);
    let mut r = Router::new();
    for name in ["snapshot", "snap"] {
        r = r.route(&format!("/commands/{name}"), get(move |s, c, h, q| snapshot(s, c, h, q, name)));
    }
    for name in ["restore", "rest"] {
        r = r.route(&format!("/commands/{name}"), post(move |s, c, h, b| restore(s, c, h, b, name)).layer(limit));
    }
    r.with_state(state)
}

/// `CommandResponse` as JSON: `command`, `error`, then the command's own keys.
fn answer(status: StatusCode, command: &str, error: Option<String>, extra: Map<String, Json>) -> Response {
    let mut m = Map::new();
    m.insert("command".into(), json!(command));
    m.insert("error".into(), json!(error));
    m.extend(extra);
    let text = serde_json::to_string_pretty(&Json::Object(m)).unwrap_or_default();
    (status, [(header::CONTENT_TYPE, "application/json")], text).into_response()
}

/// What `SnapshotCommand` and `RestoreCommand` check first, in ZooKeeper 3.9.5's order:
/// authentication (ALL on `/`), then switched on (`admin.<command>.enabled`, 503), then the
/// rate limit (429). `command` is the canonical name, `name` the one asked for.
async fn admitted(
    s: &Backup,
    command: &'static str,
    name: &'static str,
    on: bool,
    limit: &RateLimiter,
    headers: &HeaderMap,
    peer: &Peer,
) -> Result<(), Response> {
    s.gate.check(name, ALL_ON_ROOT, headers, peer).await?;
    if !on {
        tracing::warn!(client = %peer.addr, "{command} command is disabled (admin.{command}.enabled)");
        return Err(answer(DISABLED, command, None, Map::new()));
    }
    if !limit.allow() {
        tracing::warn!(client = %peer.addr, "{command} request was rate limited (admin.rateLimiterIntervalInMS)");
        return Err(answer(RATE_LIMITED, command, None, Map::new()));
    }
    Ok(())
}

/// `Boolean.parseBoolean` of the `streaming` parameter; absent means true.
fn streaming(q: &HashMap<String, String>) -> bool {
    q.get("streaming").is_none_or(|v| v.eq_ignore_ascii_case("true"))
}

async fn snapshot(
    State(s): State<Backup>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
    name: &'static str,
) -> Response {
    let on = s.ops.cfg.admin_backup.snapshot;
    if let Err(refused) = admitted(&s, "snapshot", name, on, &s.snapshots, &headers, &peer).await {
        return refused;
    }
    match take(&s.ops).await {
        Err(why) => {
            tracing::warn!(client = %peer.addr, "snapshot command failed: {why}");
            answer(StatusCode::INTERNAL_SERVER_ERROR, "snapshot", Some(why), Map::new())
        }
        Ok((tree, size)) => {
            tracing::info!(client = %peer.addr, zxid = format!("0x{:x}", tree.last_zxid()), size, "snapshot command");
            let mut response = if streaming(&q) {
                let mut r = Response::new(stream(tree.clone()));
                r.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
                r
            } else {
                // ZooKeeper's command leaves the snapshot on its disk: zkr takes one of its own.
                s.ops.snapshot_now().await;
                answer(StatusCode::OK, "snapshot", None, Map::new())
            };
            let h = response.headers_mut();
            if let Ok(v) = HeaderValue::from_str(&format!("0x{:x}", tree.last_zxid())) {
                h.insert(LAST_ZXID, v);
            }
            h.insert(SNAPSHOT_SIZE, HeaderValue::from(size));
            response
        }
    }
}

/// A copy of the tree, once its zxid is on disk, and the size of its snapshot file.
async fn take(ops: &Ops) -> Result<(Arc<DataTree>, u64), String> {
    let (tree, durable) = ops.snapshot_copy().await.ok_or("the server is shutting down")?;
    if let Some(durable) = durable {
        let since = Instant::now();
        while durable.load(Ordering::Acquire) < tree.last_zxid() {
            if since.elapsed() > DURABLE_WAIT {
                return Err("the log did not reach the snapshot's zxid in time".into());
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let tree = Arc::new(tree);
    let counted = tree.clone();
    // The size from the paths' and data's lengths: the tree is encoded once, as it streams.
    let size = background("zkr-snap-size", move || snapwrite::encoded_len_with_zxid(&counted))
        .map_err(|e| e.to_string())?
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    Ok((tree, size))
}

/// How much lower than the server's the encoding threads' CPU priority is (nice).
const BACKGROUND_NICE: i32 = 10;

/// Runs `f` on a thread of its own at a lower CPU priority: encoding a large tree keeps a core
/// busy for seconds, and on a small machine the core and log threads, which acknowledge writes,
/// must win the CPU over it (BENCHMARKS.md, "streamed snapshot of 1,000,000 znodes": their
/// waits for a CPU made the writes' longest gap). Linux's nice value is per thread.
fn background<T: Send + 'static>(
    name: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> io::Result<tokio::sync::oneshot::Receiver<T>> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new().name(name.into()).spawn(move || {
        // (None: the calling thread. A failure leaves it at the server's priority.)
        let lower =
            rustix::process::getpriority_process(None).map_or(BACKGROUND_NICE, |n| (n + BACKGROUND_NICE).min(19));
        if let Err(e) = rustix::process::setpriority_process(None, lower) {
            tracing::debug!("cannot lower the snapshot thread's priority: {e}");
        }
        let _ = tx.send(f());
    })?;
    Ok(rx)
}

/// Hands what is written to it to the response in chunks; fails once the client is gone.
struct ChunkSender {
    buf: Vec<u8>,
    tx: mpsc::Sender<io::Result<Bytes>>,
}

impl ChunkSender {
    fn send(&mut self) -> io::Result<()> {
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.tx.blocking_send(Ok(chunk)).map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "client gone"))
    }
}

impl Write for ChunkSender {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(buf);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.send()?;
        }
        Ok(())
    }
}

/// The snapshot file as a response body, encoded on a blocking thread as the client reads it.
/// A failure ends the body with an error, so the client sees a cut connection, not a short file.
fn stream(tree: Arc<DataTree>) -> Body {
    let (tx, rx) = mpsc::channel(CHUNKS_AHEAD);
    let failed = tx.clone();
    let started = background("zkr-snap-stream", move || {
        let failed = tx.clone();
        let out = ChunkSender { buf: Vec::with_capacity(CHUNK), tx };
        if let Err(e) = snapwrite::encode_with_zxid(&tree, out) {
            if e.kind() != io::ErrorKind::BrokenPipe {
                tracing::warn!("streaming the snapshot failed: {e}");
                let _ = failed.blocking_send(Err(e));
            }
        }
    });
    if let Err(e) = started {
        tracing::warn!("streaming the snapshot failed: no thread for it: {e}");
        let _ = failed.try_send(Err(e));
    }
    Body::from_stream(futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) }))
}

async fn restore(
    State(s): State<Backup>,
    ConnectInfo(peer): ConnectInfo<Peer>,
    headers: HeaderMap,
    body: Bytes,
    name: &'static str,
) -> Response {
    let on = s.ops.cfg.admin_backup.restore;
    if let Err(refused) = admitted(&s, "restore", name, on, &s.restores, &headers, &peer).await {
        return refused;
    }
    match restore_body(&s.ops, body).await {
        Ok(zxid) => {
            tracing::info!(client = %peer.addr, zxid = format!("0x{zxid:x}"), "restore command: the tree was replaced");
            let mut extra = Map::new();
            extra.insert("last_zxid".into(), json!(zxid));
            answer(StatusCode::OK, "restore", None, extra)
        }
        Err(why) => {
            tracing::warn!(client = %peer.addr, "restore command refused, nothing changed: {why}");
            answer(StatusCode::INTERNAL_SERVER_ERROR, "restore", Some(why), Map::new())
        }
    }
}

/// Parses the body off the core, then has the core install it; the new zxid or why not.
async fn restore_body(ops: &Ops, body: Bytes) -> Result<i64, String> {
    if ops.observer.is_some() {
        return Err(crate::server::core::restore::RestoreError::NotStandalone.to_string());
    }
    let raw = body.clone();
    let parsed = tokio::task::spawn_blocking(move || {
        let label = std::path::Path::new("the restore request's body");
        crate::import::snapfile::read_stream(Box::new(io::Cursor::new(body)), label)
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| format!("not a whole ZooKeeper snapshot: {e}"))?;
    match ops.restore(parsed.tree, parsed.last_processed, raw).await {
        None => Err("the server is shutting down".into()),
        Some(r) => r.map_err(|e| e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_encoding_thread_runs_at_a_lower_priority_than_the_server() {
        let server = rustix::process::getpriority_process(None).unwrap();
        let theirs = background("zkr-test", || rustix::process::getpriority_process(None).unwrap()).unwrap();
        assert_eq!(theirs.await.unwrap(), (server + BACKGROUND_NICE).min(19));
        assert_eq!(rustix::process::getpriority_process(None).unwrap(), server, "the caller's priority is unchanged");
    }
}
