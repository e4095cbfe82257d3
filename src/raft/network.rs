//! Peer traffic over the `server.N` peer port: openraft's RPCs and the forward stream.
//!
//! ```text
//! frame   length u32 | crc32 u32 (of payload) | payload (bincode, fixed-width integers)
//! a connection starts with Hello{from, kind}, then:
//!   kind Rpc:     request, response, request, response …   (one RPC at a time per connection)
//!   kind Forward: a follower streams its proposals, sync points and touched sessions to the
//!                 leader; the leader streams back what failed and the sync points it confirmed
//! ```
//! A frame that is too long, fails its checksum or does not decode closes that connection with
//! a log line, never the member. Only the peer port is used; the election port of `server.N`
//! is accepted and shown, but zkr elects over the peer port (Raft's vote RPC). Connections are
//! plain TCP or TLS (`link`).

use super::command::Command;
use super::link::{Link, PeerStream};
use super::types::{MemberId, Zkr};
use crate::txn::SessionId;
use bincode::Options;
use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use serde::{Deserialize, Serialize};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest frame accepted: a batch of entries or a snapshot chunk (openraft's default chunk is
/// 3 MiB), with room for the largest znode data (jute.maxbuffer) several times over.
pub const MAX_FRAME: u32 = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("frame of {0} bytes is over the limit")]
    TooLong(u32),
    #[error("frame fails its checksum")]
    Checksum,
    #[error("undecodable frame: {0}")]
    Decode(#[from] bincode::Error),
    #[error("{0}")]
    Tls(String),
}

fn codec() -> impl bincode::Options {
    bincode::DefaultOptions::new().with_fixint_encoding().with_limit(MAX_FRAME as u64)
}

pub async fn write_frame<W: AsyncWrite + Unpin, T: Serialize>(w: &mut W, v: &T) -> Result<(), PeerError> {
    let payload = codec().serialize(v)?;
    let mut b = Vec::with_capacity(8 + payload.len());
    b.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    b.extend_from_slice(&crc32fast::hash(&payload).to_be_bytes());
    b.extend_from_slice(&payload);
    w.write_all(&b).await?;
    // A TLS stream may keep records it could not send yet until it is flushed (a no-op on TCP).
    w.flush().await?;
    Ok(())
}

pub async fn read_frame<R: AsyncRead + Unpin, T: for<'de> Deserialize<'de>>(r: &mut R) -> Result<T, PeerError> {
    let mut h = [0u8; 8];
    r.read_exact(&mut h).await?;
    let len = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
    if len > MAX_FRAME {
        return Err(PeerError::TooLong(len));
    }
    let mut payload = vec![0u8; len as usize];
    r.read_exact(&mut payload).await?;
    if crc32fast::hash(&payload).to_be_bytes() != h[4..8] {
        return Err(PeerError::Checksum);
    }
    Ok(codec().deserialize(&payload)?)
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum Kind {
    Rpc,
    Forward,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Hello {
    pub from: MemberId,
    pub kind: Kind,
}

#[derive(Debug, Serialize, Deserialize)]
pub enum RpcRequest {
    Append(AppendEntriesRequest<Zkr>),
    Vote(VoteRequest<MemberId>),
    Snapshot(InstallSnapshotRequest<Zkr>),
    /// A member seeding a new ensemble asks whether this one is empty (see `seed`).
    SeedProbe,
    /// An empty member asks whether the ensemble has data (see `amnesia`); no side effect.
    StateProbe,
}

#[derive(Debug, Serialize, Deserialize)]
pub enum RpcResponse {
    Append(Result<AppendEntriesResponse<MemberId>, RaftError<MemberId>>),
    Vote(Result<VoteResponse<MemberId>, RaftError<MemberId>>),
    Snapshot(Result<InstallSnapshotResponse<MemberId>, RaftError<MemberId, InstallSnapshotError>>),
    SeedProbe(super::seed::SeedAnswer),
    StateProbe(super::amnesia::StateAnswer),
    /// A vote refused because the member may have lost acknowledged entries, with why (the
    /// candidate logs it: an ensemble that cannot elect says why on every member).
    VoteRefused {
        resp: VoteResponse<MemberId>,
        why: String,
    },
}

/// Follower → leader on a forward stream.
#[derive(Debug, Serialize, Deserialize)]
pub enum ForwardMsg {
    Propose(Command),
    ReadIndex { seq: u64 },
    Touch(Vec<SessionId>),
    Reconfig { seq: u64, plan: super::reconfig::Plan },
}

/// Leader → follower on a forward stream.
#[derive(Debug, Serialize, Deserialize)]
pub enum ForwardReply {
    /// The proposal with this origin seq was refused or lost.
    Failed { seq: u64 },
    /// The leader's commit point for a sync (None: not leader, or no quorum).
    ReadIndex { seq: u64, index: Option<u64> },
    /// A reconfig's outcome: its last membership entry's index, an error code for the client,
    /// or `Err(None)` when its fate is unknown.
    Reconfig { seq: u64, result: Result<u64, Option<i32>> },
}

/// Makes RPC clients for openraft.
pub struct Network {
    pub link: Link,
}

impl RaftNetworkFactory<Zkr> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: MemberId, node: &super::members::ServerSpec) -> PeerClient {
        PeerClient {
            link: self.link.clone(),
            target,
            addr: node.peer_addr(),
            conn: None,
            reachable: true,
            refusal_logged: None,
        }
    }
}

/// openraft's RPCs to one member, over one connection reopened when it breaks.
pub struct PeerClient {
    link: Link,
    target: MemberId,
    addr: String,
    conn: Option<PeerStream>,
    /// Whether the last RPC got through: a change is logged once, not every retry (openraft's
    /// own per-retry errors are filtered out of the default log).
    reachable: bool,
    /// When this member last logged the target's refusal to vote.
    refusal_logged: Option<std::time::Instant>,
}

impl PeerClient {
    async fn call<E: std::error::Error>(
        &mut self,
        req: RpcRequest,
        ttl: Duration,
    ) -> Result<RpcResponse, RPCError<MemberId, super::members::ServerSpec, E>> {
        let conn = match self.conn.take() {
            Some(c) => c,
            None => match self.link.connect(&self.addr, Kind::Rpc).await {
                Ok(c) => c,
                Err(e) => {
                    self.lost(&e);
                    return Err(RPCError::Unreachable(Unreachable::new(&e)));
                }
            },
        };
        let mut conn = conn;
        let exchange = async {
            write_frame(&mut conn, &req).await?;
            read_frame::<_, RpcResponse>(&mut conn).await
        };
        match tokio::time::timeout(ttl, exchange).await {
            Ok(Ok(resp)) => {
                self.conn = Some(conn);
                if !self.reachable {
                    self.reachable = true;
                    tracing::info!(peer = self.target, addr = %self.addr, "member {} is reachable again", self.target);
                }
                Ok(resp)
            }
            Ok(Err(e)) => {
                self.lost(&e);
                Err(RPCError::Network(NetworkError::new(&e)))
            }
            Err(_) => {
                let e = std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("no answer from {} in {ttl:?}", self.addr),
                );
                Err(RPCError::Network(NetworkError::new(&e)))
            }
        }
    }

    fn lost(&mut self, e: &dyn std::fmt::Display) {
        if self.reachable {
            self.reachable = false;
            tracing::warn!(peer = self.target, addr = %self.addr, "cannot reach member {}: {e}", self.target);
        }
    }

    fn unexpected<E: std::error::Error>(&self) -> RPCError<MemberId, super::members::ServerSpec, E> {
        let e = std::io::Error::other(format!("member {} answered another RPC", self.target));
        RPCError::Network(NetworkError::new(&e))
    }
}

type Rpc<T, E = openraft::error::Infallible> =
    Result<T, RPCError<MemberId, super::members::ServerSpec, RaftError<MemberId, E>>>;

impl RaftNetwork<Zkr> for PeerClient {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<Zkr>,
        option: RPCOption,
    ) -> Rpc<AppendEntriesResponse<MemberId>> {
        match self.call(RpcRequest::Append(rpc), option.hard_ttl()).await? {
            RpcResponse::Append(r) => r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e))),
            _ => Err(self.unexpected()),
        }
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<Zkr>,
        option: RPCOption,
    ) -> Rpc<InstallSnapshotResponse<MemberId>, InstallSnapshotError> {
        match self.call(RpcRequest::Snapshot(rpc), option.hard_ttl()).await? {
            RpcResponse::Snapshot(r) => r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e))),
            _ => Err(self.unexpected()),
        }
    }

    async fn vote(&mut self, rpc: VoteRequest<MemberId>, option: RPCOption) -> Rpc<VoteResponse<MemberId>> {
        match self.call(RpcRequest::Vote(rpc), option.hard_ttl()).await? {
            RpcResponse::Vote(r) => r.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e))),
            RpcResponse::VoteRefused { resp, why } => {
                if self.refusal_logged.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
                    self.refusal_logged = Some(std::time::Instant::now());
                    tracing::warn!(peer = self.target, "member {} refuses to vote: {why}", self.target);
                }
                Ok(resp)
            }
            _ => Err(self.unexpected()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip_and_garbage_is_an_error() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        write_frame(&mut a, &Hello { from: 3, kind: Kind::Forward }).await.unwrap();
        let h: Hello = read_frame(&mut b).await.unwrap();
        assert_eq!((h.from, h.kind), (3, Kind::Forward));
        // A length over the limit, then a bad checksum: errors, not panics or huge allocations.
        a.write_all(&(MAX_FRAME + 1).to_be_bytes()).await.unwrap();
        a.write_all(&[0; 4]).await.unwrap();
        assert!(matches!(read_frame::<_, Hello>(&mut b).await, Err(PeerError::TooLong(_))));
        a.write_all(&[0, 0, 0, 2, 1, 2, 3, 4, 9, 9]).await.unwrap();
        assert!(matches!(read_frame::<_, Hello>(&mut b).await, Err(PeerError::Checksum)));
        // A well-framed payload that claims a huge vector.
        let payload = [0xffu8; 16];
        let mut f = Vec::new();
        f.extend_from_slice(&16u32.to_be_bytes());
        f.extend_from_slice(&crc32fast::hash(&payload).to_be_bytes());
        f.extend_from_slice(&payload);
        a.write_all(&f).await.unwrap();
        assert!(matches!(read_frame::<_, ForwardMsg>(&mut b).await, Err(PeerError::Decode(_))));
    }
}
