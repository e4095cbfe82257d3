//! The records a ZooKeeper leader and its learners exchange on the quorum port: a bare sequence
//! of jute `QuorumPacket`s, with no length prefix (`Learner.readPacket`/`writePacket` put a
//! `BinaryInputArchive` straight on the socket), unlike the client protocol.
//!
//! Packet numbers are `Leader.java`'s, the same in ZooKeeper 3.5 through 3.9 (checked against
//! Debian's 3.8 jar).

use crate::import::{ImportError, Jute};
use crate::proto::jute::JuteWrite;
use bytes::{BufMut, Bytes};

/// `Leader.java`'s packet types.
pub mod kind {
    pub const REQUEST: i32 = 1;
    pub const PROPOSAL: i32 = 2;
    pub const ACK: i32 = 3;
    pub const COMMIT: i32 = 4;
    pub const PING: i32 = 5;
    pub const REVALIDATE: i32 = 6;
    pub const SYNC: i32 = 7;
    pub const INFORM: i32 = 8;
    pub const COMMITANDACTIVATE: i32 = 9;
    pub const NEWLEADER: i32 = 10;
    pub const FOLLOWERINFO: i32 = 11;
    pub const UPTODATE: i32 = 12;
    pub const DIFF: i32 = 13;
    pub const TRUNC: i32 = 14;
    pub const SNAP: i32 = 15;
    pub const OBSERVERINFO: i32 = 16;
    pub const LEADERINFO: i32 = 17;
    pub const ACKEPOCH: i32 = 18;
    pub const INFORMANDACTIVATE: i32 = 19;

    /// For log lines.
    pub fn name(k: i32) -> &'static str {
        const NAMES: [&str; 20] = [
            "?",
            "REQUEST",
            "PROPOSAL",
            "ACK",
            "COMMIT",
            "PING",
            "REVALIDATE",
            "SYNC",
            "INFORM",
            "COMMITANDACTIVATE",
            "NEWLEADER",
            "FOLLOWERINFO",
            "UPTODATE",
            "DIFF",
            "TRUNC",
            "SNAP",
            "OBSERVERINFO",
            "LEADERINFO",
            "ACKEPOCH",
            "INFORMANDACTIVATE",
        ];
        usize::try_from(k).ok().and_then(|i| NAMES.get(i)).copied().unwrap_or("?")
    }
}

/// `Leader.java`'s protocol version for 3.4+ learners (`0x10000`), sent in LearnerInfo and
/// LEADERINFO.
pub const PROTOCOL_VERSION: i32 = 0x10000;

/// `QuorumPacket { int type; long zxid; buffer data; vector<Id> authinfo }`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumPacket {
    pub kind: i32,
    pub zxid: i64,
    pub data: Option<Bytes>,
    /// (scheme, id) pairs: the client's identities on a forwarded REQUEST. `None` is jute's null
    /// vector, which every other packet carries; a REQUEST must carry a list, even an empty one:
    /// ZooKeeper 3.8's leader answers a forwarded create whose authinfo is null with a
    /// MarshallingError txn (its ACL check walks the list).
    pub auth: Option<Vec<(String, String)>>,
}

impl QuorumPacket {
    pub fn new(kind: i32, zxid: i64, data: Option<Bytes>) -> QuorumPacket {
        QuorumPacket { kind, zxid, data, auth: None }
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.put_i32(self.kind);
        out.put_i64(self.zxid);
        out.put_buffer(self.data.as_deref());
        match &self.auth {
            None => out.put_i32(-1),
            Some(auth) => {
                out.put_i32(auth.len() as i32);
                for (scheme, id) in auth {
                    out.put_ustring(scheme);
                    out.put_ustring(id);
                }
            }
        }
    }

    pub fn read<J: Jute>(j: &mut J) -> Result<QuorumPacket, ImportError> {
        let kind = j.int("packet type")?;
        let zxid = j.long("packet zxid")?;
        let data = j.bytes("packet data")?;
        let n = j.int("packet authinfo count")?;
        if n > 64 {
            return Err(j.err(&format!("packet with {n} authinfo entries")));
        }
        let auth = if n < 0 {
            None
        } else {
            let mut auth = Vec::new();
            for _ in 0..n {
                auth.push((j.string("auth scheme")?, j.string("auth id")?));
            }
            Some(auth)
        };
        Ok(QuorumPacket { kind, zxid, data, auth })
    }

    /// The data as one big-endian int (LEADERINFO's protocol version), if it is one.
    pub fn data_int(&self) -> Option<i32> {
        let d = self.data.as_deref()?;
        Some(i32::from_be_bytes(d.get(..4)?.try_into().ok()?))
    }
}

/// `LearnerInfo { long serverid; int protocolVersion; long configVersion }`: 20 bytes inside
/// OBSERVERINFO's data. The leader refuses a configVersion above its own ("Follower is ahead of
/// the leader"), so a learner that knows none sends 0.
pub fn learner_info(sid: i64, config_version: i64) -> Bytes {
    let mut b = Vec::with_capacity(20);
    b.extend_from_slice(&sid.to_be_bytes());
    b.extend_from_slice(&PROTOCOL_VERSION.to_be_bytes());
    b.extend_from_slice(&config_version.to_be_bytes());
    b.into()
}

/// PING's data from a learner: the sessions its clients touched since the last ping, each as
/// (long id, int timeout) (`Learner.ping`, `LearnerSessionTracker.snapshot`).
pub fn ping_sessions(touched: &[(i64, i32)]) -> Bytes {
    let mut b = Vec::with_capacity(touched.len() * 12);
    for (id, timeout) in touched {
        b.extend_from_slice(&id.to_be_bytes());
        b.extend_from_slice(&timeout.to_be_bytes());
    }
    b.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::Stream;

    #[test]
    fn a_packet_reads_back_as_written() {
        let mut p = QuorumPacket::new(kind::REQUEST, -1, Some(Bytes::from_static(b"body")));
        p.auth = Some(vec![("ip".into(), "127.0.0.1".into())]);
        let mut out = Vec::new();
        p.encode(&mut out);
        QuorumPacket::new(kind::UPTODATE, -1, None).encode(&mut out);
        let mut s = Stream::new(&out[..], "t".into(), 1 << 20);
        assert_eq!(QuorumPacket::read(&mut s).unwrap(), p);
        let up = QuorumPacket::read(&mut s).unwrap();
        assert_eq!((up.kind, up.zxid, up.data, up.auth), (kind::UPTODATE, -1, None, None));
        let mut out = Vec::new();
        QuorumPacket { auth: Some(vec![]), ..QuorumPacket::new(kind::REQUEST, -1, None) }.encode(&mut out);
        assert_eq!(&out[out.len() - 4..], &0i32.to_be_bytes(), "an empty list, not null");
        assert!(QuorumPacket::read(&mut s).is_err(), "end of stream");
    }

    /// OBSERVERINFO as ZooKeeper's own Observer sends it for sid 4 at accepted epoch 1
    /// (Learner.registerWithLeader): type 16, zxid 1<<32, 20 bytes of LearnerInfo, null authinfo.
    #[test]
    fn observerinfo_bytes() {
        let mut out = Vec::new();
        QuorumPacket::new(kind::OBSERVERINFO, 1 << 32, Some(learner_info(4, 0))).encode(&mut out);
        let want: Vec<u8> = [
            &16i32.to_be_bytes()[..],
            &(1i64 << 32).to_be_bytes(),
            &20i32.to_be_bytes(),
            &4i64.to_be_bytes(),
            &0x10000i32.to_be_bytes(),
            &0i64.to_be_bytes(),
            &(-1i32).to_be_bytes(),
        ]
        .concat();
        assert_eq!(out, want);
        assert_eq!(kind::name(kind::OBSERVERINFO), "OBSERVERINFO");
        assert_eq!(kind::name(99), "?");
    }
}
