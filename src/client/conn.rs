//! The session of `zkr cli` with a server, as the Java client's `ZooKeeper` object presents it:
//! a handle to call with requests (replies and connection trouble come back as ZooKeeper error
//! codes), add auth, close, and read the state for the prompt. The socket itself is kept by
//! the task in `task.rs`.

pub use super::call::{Call, ConnectConfig, EventSink, Reply, States};
use super::path::Chroot;
use super::task::{Msg, Task};
use parking_lot::Mutex;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot, watch};

/// Commands waiting for the connection task; the shell sends one at a time, so this is slack.
const CALL_QUEUE: usize = 64;

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
