//! Read-only ZooKeeper access for the Dubbo view, on the client library's session
//! (`client::conn::Client`, as `zkr cli` uses it):
//! children, data and Stat of a path, with a missing node as `None` rather than an error.
//!
//! Owns one session; must not write anything (the view is read-only by design).

use crate::client::conn::{Call, Client, EventSink};
use crate::proto::{ErrorCode, OpCode, RequestBody, Response, Stat};
use std::sync::Arc;

/// Session timeout asked for; the view reconnects on its own, so a short one is enough.
const SESSION_TIMEOUT_MS: i32 = 30_000;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ZkError {
    #[error("bad server address {server:?}: {reason}")]
    Address { server: String, reason: String },
    #[error("{path}: {}", code_name(*code))]
    Keeper { path: String, code: i32 },
    #[error("{path}: unexpected reply")]
    Reply { path: String },
}

impl ZkError {
    /// True when the server could not be reached (the whole view is unavailable).
    pub fn is_connection(&self) -> bool {
        let lost = [ErrorCode::ConnectionLoss, ErrorCode::SessionExpired, ErrorCode::AuthFailed];
        matches!(self, ZkError::Keeper { code, .. } if lost.iter().any(|c| c.code() == *code))
    }
}

fn code_name(code: i32) -> String {
    ErrorCode::from_i32(code).map_or_else(|| format!("error {code}"), |c| c.to_string())
}

/// One read-only session.
pub struct Zk {
    client: Client,
}

impl Zk {
    /// Starts a session to `server` (`host:port[,host:port][/chroot]`) on the current runtime.
    pub fn connect(server: &str) -> Result<Zk, ZkError> {
        let cfg = crate::cli::connect_config(server, SESSION_TIMEOUT_MS, false)
            .map_err(|reason| ZkError::Address { server: server.to_string(), reason })?;
        let quiet: EventSink = Arc::new(|_, _, _| {});
        let client = Client::start(&tokio::runtime::Handle::current(), cfg, quiet, false);
        Ok(Zk { client })
    }

    /// False once the session is closed or expired: make a new `Zk` then.
    pub fn is_usable(&self) -> bool {
        self.client.state().is_alive()
    }

    async fn call(&self, op: OpCode, path: &str) -> Result<Option<Response>, ZkError> {
        let body = RequestBody::PathWatch { path: path.to_string(), watch: false };
        let reply = self.client.call(Call::new(op, body)).await;
        match reply.err {
            0 => Ok(Some(reply.body)),
            e if e == ErrorCode::NoNode.code() => Ok(None),
            code => Err(ZkError::Keeper { path: path.to_string(), code }),
        }
    }

    /// The children of `path`, sorted; `None` if it does not exist.
    pub async fn children(&self, path: &str) -> Result<Option<Vec<String>>, ZkError> {
        match self.call(OpCode::GetChildren, path).await? {
            None => Ok(None),
            Some(Response::Children(c)) => {
                let mut names: Vec<String> = c.iter().map(|s| s.to_string()).collect();
                names.sort();
                Ok(Some(names))
            }
            Some(_) => Err(ZkError::Reply { path: path.to_string() }),
        }
    }

    /// The data and Stat of `path`; `None` if it does not exist.
    pub async fn data(&self, path: &str) -> Result<Option<(Vec<u8>, Stat)>, ZkError> {
        match self.call(OpCode::GetData, path).await? {
            None => Ok(None),
            Some(Response::GetData { data, stat }) => Ok(Some((data.map(|d| d.to_vec()).unwrap_or_default(), stat))),
            Some(_) => Err(ZkError::Reply { path: path.to_string() }),
        }
    }

    /// Closes the session (and waits for the server to confirm).
    pub async fn close(&self) {
        self.client.close().await;
    }
}

/// `parent/child` without doubling the slash under `/`.
pub fn join(parent: &str, child: &str) -> String {
    if parent.ends_with('/') {
        format!("{parent}{child}")
    } else {
        format!("{parent}/{child}")
    }
}
