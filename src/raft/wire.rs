//! The peer port's wire: frames and the messages they carry, below the modules that open
//! connections (`link`), answer them (`member::peers`) and use them (`network`, `seed`,
//! `member::proposer`, `member::probe`).
//!
//! ```text
//! frame   length u32 | crc32 u32 (of payload) | payload (bincode, fixed-width integers)
//! a connection starts with Hello{from, kind}, then:
//!   kind Rpc:     request, response, request, response …   (one RPC at a time per connection)
//!   kind Forward: a follower streams its proposals, sync points and touched sessions to the
//!                 leader; the leader streams back what failed and the sync points it confirmed
//!   kind Beat:    the leader's heartbeats, each answered at once (`member::beats`): apart from
//!                 the Rpc connection that carries AppendEntries, so never behind a large one
//! ```
//! A frame that is too long, fails its checksum or does not decode closes that connection with
//! a log line, never the member.

use super::command::Command;
use super::types::{LogId, MemberId, Zkr};
use crate::txn::SessionId;
use bincode::Options;
use openraft::error::{InstallSnapshotError, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse, VoteRequest,
    VoteResponse,
};
use serde::{Deserialize, Serialize};
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
    #[error("{0}")]
    Auth(#[from] crate::security::quorum_sasl::AuthError),
    /// A connection this member's settings do not take (quorum SASL required and not sent).
    #[error("{0}")]
    Refused(String),
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
    let (len, crc) = (u32::from_be_bytes([h[0], h[1], h[2], h[3]]), [h[4], h[5], h[6], h[7]]);
    read_payload(r, len, crc).await
}

/// The rest of a frame whose first four bytes (its length) the caller already read: how a
/// member that looked for a quorum SASL login reads the hello that came instead.
pub async fn read_frame_after<R: AsyncRead + Unpin, T: for<'de> Deserialize<'de>>(
    r: &mut R,
    len: [u8; 4],
) -> Result<T, PeerError> {
    let mut crc = [0u8; 4];
    r.read_exact(&mut crc).await?;
    read_payload(r, u32::from_be_bytes(len), crc).await
}

/// A frame's payload after its header: checked against the limit and the checksum, decoded.
async fn read_payload<R: AsyncRead + Unpin, T: for<'de> Deserialize<'de>>(
    r: &mut R,
    len: u32,
    crc: [u8; 4],
) -> Result<T, PeerError> {
    if len > MAX_FRAME {
        return Err(PeerError::TooLong(len));
    }
    let mut payload = vec![0u8; len as usize];
    r.read_exact(&mut payload).await?;
    if crc32fast::hash(&payload).to_be_bytes() != crc {
        return Err(PeerError::Checksum);
    }
    Ok(codec().deserialize(&payload)?)
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub enum Kind {
    Rpc,
    Forward,
    /// Added after `Forward`: a member of an older release closes the connection at its hello.
    Beat,
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
    /// Members of this release ask `StateProbeOf` and fall back to this form.
    StateProbe,
    /// The same, naming the asker, so that the answer says whether its membership counts the
    /// asker's acknowledgements (a member being added by a reconfig is not amnesiac).
    StateProbeOf(MemberId),
    /// Would this member vote for a candidate whose log ends here (see `prevote`)? No side
    /// effect. A member of an older release closes the connection: the asker counts it as yes.
    PreVote(Option<LogId>),
    /// A pre-vote whose answer also says whether the voter hears a leader (`prevote::Answer`).
    /// Last, so that the tags before it keep their numbers: a member of an older release cannot
    /// read it and closes the connection, which the candidate takes as a grant.
    PreVoteWithLeader(Option<LogId>),
}

#[derive(Debug, Serialize, Deserialize)]
pub enum RpcResponse {
    Append(Result<AppendEntriesResponse<MemberId>, RaftError<MemberId>>),
    Vote(Result<VoteResponse<MemberId>, RaftError<MemberId>>),
    Snapshot(Result<InstallSnapshotResponse<MemberId>, RaftError<MemberId, InstallSnapshotError>>),
    SeedProbe(SeedAnswer),
    StateProbe(super::amnesia::StateAnswer),
    /// A vote refused because the member may have lost acknowledged entries, with why (the
    /// candidate logs it: an ensemble that cannot elect says why on every member).
    VoteRefused {
        resp: VoteResponse<MemberId>,
        why: String,
    },
    StateProbeOf(super::amnesia::Standing),
    /// Yes, or why not (`prevote::Denial`, as the candidate logs it).
    PreVote(Result<(), String>),
    PreVoteWithLeader(crate::raft::prevote::Answer),
}

/// Leader → member on a beat connection: "I lead with this vote".
#[derive(Debug, Serialize, Deserialize)]
pub struct Beat {
    pub vote: super::types::Vote,
}

/// Member → leader: whether it follows that leader (its vote names it and it takes its
/// entries), and its vote.
#[derive(Debug, Serialize, Deserialize)]
pub struct BeatAnswer {
    pub follows: bool,
    pub vote: super::types::Vote,
}

/// Follower → leader on a forward stream.
#[derive(Debug, Serialize, Deserialize)]
pub enum ForwardMsg {
    Propose(Command),
    ReadIndex { seq: u64 },
    Touch(Vec<SessionId>),
    Reconfig { seq: u64, plan: super::plan::Plan },
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

/// A member's answer to a seed member's probe.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
pub struct SeedAnswer {
    /// No Raft state and not initializing: it now defers to the seed member.
    pub empty: bool,
    /// Its current term (0 when empty).
    pub term: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

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
