//! openraft's RPCs to the other members, over the `server.N` peer port (frames and messages:
//! `wire`). Only the peer port is used; the election port of `server.N`
//! is accepted and shown, but zkr elects over the peer port (Raft's vote RPC). Connections are
//! plain TCP or TLS (`link`).

use super::link::{Link, PeerStream};
use super::types::{MemberId, Zkr};
use super::wire::{read_frame, write_frame, Kind, RpcRequest, RpcResponse};
use openraft::error::{InstallSnapshotError, NetworkError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use std::time::Duration;

/// Makes RPC clients for openraft.
pub struct Network {
    pub link: Link,
    /// The peer address each member was last dialled at.
    dialled: std::collections::HashMap<MemberId, String>,
}

impl Network {
    pub fn new(link: Link) -> Network {
        Network { link, dialled: Default::default() }
    }
}

impl RaftNetworkFactory<Zkr> for Network {
    type Network = PeerClient;

    async fn new_client(&mut self, target: MemberId, node: &super::members::ServerSpec) -> PeerClient {
        let addr = node.peer_addr();
        let before = self.dialled.insert(target, addr.clone());
        PeerClient {
            link: self.link.clone(),
            target,
            fallback: before.filter(|b| *b != addr),
            addr,
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
    /// A reconfig moved the member: its old address, tried while the new one refuses. The
    /// member listens at the new one only once it has applied the configuration that moves it,
    /// and that configuration reaches it through this client.
    fallback: Option<String>,
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
                Ok(c) => {
                    self.fallback = None;
                    c
                }
                Err(e) => match &self.fallback {
                    Some(old) => match self.link.connect(old, Kind::Rpc).await {
                        Ok(c) => c,
                        Err(_) => {
                            self.lost(&e);
                            return Err(RPCError::Unreachable(Unreachable::new(&e)));
                        }
                    },
                    None => {
                        self.lost(&e);
                        return Err(RPCError::Unreachable(Unreachable::new(&e)));
                    }
                },
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

    /// After an unreachable member, the leader tries it again one heartbeat later (openraft's
    /// default waits 500 ms): a member restarted at a short tickTime must hear the leader's
    /// appends before its election timeout, as a restarted ZooKeeper follower connects to the
    /// leader at once. A refused connect costs nothing; a partitioned member's connects are
    /// paced by the connect timeout anyway.
    fn backoff(&self) -> openraft::network::Backoff {
        openraft::network::Backoff::new(std::iter::repeat(self.link.timing.heartbeat))
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
