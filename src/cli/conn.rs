//! The session of `zkr cli` with a server, as the Java client's `ZooKeeper` object presents it:
//! a handle to call with requests (replies and connection trouble come back as ZooKeeper error
//! codes), add auth, close, and read the state for the prompt. The socket itself is kept by
//! the task in `task.rs`.

use super::path::Chroot;
use super::task::{Msg, Task};
use super::watches::{Deregistration, Registration};
use crate::proto::{ErrorCode, OpCode, RequestBody, Response};
use parking_lot::Mutex;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, watch};

/// Largest reply accepted: the Java client's default `jute.maxbuffer` (0xfffff bytes).
pub const JUTE_MAXBUFFER: usize = 0xfffff;
/// Commands waiting for the connection task; the shell sends one at a time, so this is slack.
const CALL_QUEUE: usize = 64;

/// `ZooKeeper.States`, shown in the interactive prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum States {
    NotConnected,
    Connecting,
    Connected,
    ConnectedReadOnly,
    Closed,
    AuthFailed,
}

impl States {
    /// `States.isAlive()`: zkCli answers "Not connected" otherwise.
    pub fn is_alive(self) -> bool {
        !matches!(self, States::NotConnected | States::Closed | States::AuthFailed)
    }

    pub fn java_name(self) -> &'static str {
        match self {
            States::NotConnected => "NOT_CONNECTED",
            States::Connecting => "CONNECTING",
            States::Connected => "CONNECTED",
            States::ConnectedReadOnly => "CONNECTEDREADONLY",
            States::Closed => "CLOSED",
            States::AuthFailed => "AUTH_FAILED",
        }
    }

    /// The error a call gets when it cannot be sent (`ClientCnxn.conLossPacket`).
    pub(super) fn loss_code(self) -> i32 {
        match self {
            States::AuthFailed => ErrorCode::AuthFailed.code(),
            States::Closed => ErrorCode::SessionExpired.code(),
            _ => ErrorCode::ConnectionLoss.code(),
        }
    }
}

/// Where and how to connect.
#[derive(Debug, Clone)]
pub struct ConnectConfig {
    /// `host:port` strings, tried in turn.
    pub hosts: Vec<String>,
    pub chroot: Chroot,
    pub session_timeout_ms: i32,
    pub read_only: bool,
}

/// One request of the shell, with what its reply registers or removes in the watch table.
#[derive(Debug, Clone)]
pub struct Call {
    pub op: OpCode,
    pub body: RequestBody,
    pub watch: Registration,
    pub unwatch: Option<Deregistration>,
}

impl Call {
    pub fn new(op: OpCode, body: RequestBody) -> Call {
        Call { op, body, watch: Registration::None, unwatch: None }
    }

    pub fn watching(mut self, watch: Registration) -> Call {
        self.watch = watch;
        self
    }
}

/// A reply: ZooKeeper's error code (0 for success) and the body.
#[derive(Debug, Clone)]
pub struct Reply {
    pub err: i32,
    pub body: Response,
}

impl Reply {
    pub(super) fn failed(err: i32) -> Reply {
        Reply { err, body: Response::Empty }
    }
}

/// Receives every event the default watcher would see: (keeper state, event type, path).
pub type EventSink = Arc<dyn Fn(i32, i32, Option<&str>) + Send + Sync>;

/// Handle of one session (zkCli's `ZooKeeper` object); cheap to share between threads.
pub struct Client {
    tx: mpsc::Sender<Msg>,
    state: Arc<Mutex<States>>,
    attempted: watch::Receiver<bool>,
    chroot: Chroot,
}

impl Client {
    /// Starts the session task on `rt`. With `lazy`, nothing is dialled until the first
    /// message (a one-shot `zkr cli version` never connects).
    pub fn start(rt: &tokio::runtime::Handle, cfg: ConnectConfig, sink: EventSink, lazy: bool) -> Client {
        let (tx, rx) = mpsc::channel(CALL_QUEUE);
        let state = Arc::new(Mutex::new(States::Connecting));
        let (attempted_tx, attempted) = watch::channel(false);
        let chroot = cfg.chroot.clone();
        let task = Task::new(cfg, rx, state.clone(), sink, attempted_tx);
        rt.spawn(task.run(lazy));
        Client { tx, state, attempted, chroot }
    }

    pub fn state(&self) -> States {
        *self.state.lock()
    }

    pub fn chroot(&self) -> &Chroot {
        &self.chroot
    }

    /// Sends a request and waits for its reply; connection trouble comes back as an error code
    /// (ConnectionLoss, SessionExpired, AuthFailed) as in the Java client.
    pub async fn call(&self, call: Call) -> Reply {
        let (reply_tx, reply_rx) = oneshot::channel();
        if self.tx.send(Msg::Call(call, reply_tx)).await.is_err() {
            return Reply::failed(self.state().loss_code());
        }
        match reply_rx.await {
            Ok(r) => r,
            Err(_) => Reply::failed(self.state().loss_code()),
        }
    }

    /// `addAuthInfo`: sent without waiting for the answer, and again after every reconnect.
    pub async fn add_auth(&self, scheme: String, auth: Option<Vec<u8>>) {
        let _ = self.tx.send(Msg::Auth(scheme, auth)).await;
    }

    /// `ZooKeeper.close()`: closes the session if it is alive and waits until it is done.
    pub async fn close(&self) {
        if !self.state().is_alive() {
            return;
        }
        let (done_tx, done_rx) = oneshot::channel();
        if self.tx.send(Msg::Close(done_tx)).await.is_ok() {
            let _ = done_rx.await;
        }
    }

    /// Resolves once the first connection attempt has succeeded or failed.
    pub async fn first_attempt(&self) {
        let mut rx = self.attempted.clone();
        let _ = rx.wait_for(|done| *done).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_follow_java() {
        assert!(States::Connecting.is_alive());
        assert!(!States::Closed.is_alive());
        assert!(!States::AuthFailed.is_alive());
        assert_eq!(States::Closed.loss_code(), -112);
        assert_eq!(States::Connected.java_name(), "CONNECTED");
    }
}
