//! What `zkr cli`'s session handle (`conn::Client`) and its task (`task.rs`) exchange: a call
//! and its reply, where to connect, the connection's states and where events go.

use super::path::Chroot;
use super::watches::{Deregistration, Registration};
use crate::proto::{ErrorCode, OpCode, RequestBody, Response};
use std::sync::Arc;

/// Largest reply accepted: the Java client's default `jute.maxbuffer` (0xfffff bytes).
pub const JUTE_MAXBUFFER: usize = 0xfffff;
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
