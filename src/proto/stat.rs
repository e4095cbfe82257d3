//! `Stat` (68 bytes on the wire), `Id` and `ACL` records.

use super::jute::{self, JResult, JuteWrite};
use bytes::BufMut;

/// A znode's metadata exactly as ZooKeeper sends it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stat {
    pub czxid: i64,
    pub mzxid: i64,
    pub ctime: i64,
    pub mtime: i64,
    pub version: i32,
    pub cversion: i32,
    pub aversion: i32,
    pub ephemeral_owner: i64,
    pub data_length: i32,
    pub num_children: i32,
    pub pzxid: i64,
}

impl Stat {
    pub const WIRE_LEN: usize = 68;

    pub fn write(&self, b: &mut impl BufMut) {
        b.put_i64(self.czxid);
        b.put_i64(self.mzxid);
        b.put_i64(self.ctime);
        b.put_i64(self.mtime);
        b.put_i32(self.version);
        b.put_i32(self.cversion);
        b.put_i32(self.aversion);
        b.put_i64(self.ephemeral_owner);
        b.put_i32(self.data_length);
        b.put_i32(self.num_children);
        b.put_i64(self.pzxid);
    }

    pub fn parse(i: &[u8]) -> JResult<'_, Stat> {
        let (i, czxid) = jute::long(i)?;
        let (i, mzxid) = jute::long(i)?;
        let (i, ctime) = jute::long(i)?;
        let (i, mtime) = jute::long(i)?;
        let (i, version) = jute::int(i)?;
        let (i, cversion) = jute::int(i)?;
        let (i, aversion) = jute::int(i)?;
        let (i, ephemeral_owner) = jute::long(i)?;
        let (i, data_length) = jute::int(i)?;
        let (i, num_children) = jute::int(i)?;
        let (i, pzxid) = jute::long(i)?;
        Ok((
            i,
            Stat {
                czxid,
                mzxid,
                ctime,
                mtime,
                version,
                cversion,
                aversion,
                ephemeral_owner,
                data_length,
                num_children,
                pzxid,
            },
        ))
    }
}

/// An identity: `scheme` plus scheme-specific `id` (`org.apache.zookeeper.data.Id`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id {
    pub scheme: String,
    pub id: String,
}

impl Id {
    pub fn new(scheme: &str, id: &str) -> Id {
        Id { scheme: scheme.to_owned(), id: id.to_owned() }
    }

    pub fn parse(i: &[u8]) -> JResult<'_, Id> {
        let (i, scheme) = jute::ustring(i)?;
        let (i, id) = jute::ustring(i)?;
        Ok((i, Id { scheme, id }))
    }

    pub fn write(&self, b: &mut impl BufMut) {
        b.put_ustring(&self.scheme);
        b.put_ustring(&self.id);
    }
}

/// One ACL entry: permission bits granted to an identity.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Acl {
    pub perms: i32,
    pub id: Id,
}

impl Acl {
    pub fn parse(i: &[u8]) -> JResult<'_, Acl> {
        let (i, perms) = jute::int(i)?;
        let (i, id) = Id::parse(i)?;
        Ok((i, Acl { perms, id }))
    }

    pub fn write(&self, b: &mut impl BufMut) {
        b.put_i32(self.perms);
        self.id.write(b);
    }

    /// `world:anyone` with all permissions (`ZooDefs.Ids.OPEN_ACL_UNSAFE`).
    pub fn open_unsafe() -> Vec<Acl> {
        vec![Acl { perms: super::perms::ALL, id: Id::new("world", "anyone") }]
    }

    /// `world:anyone` read-only (`ZooDefs.Ids.READ_ACL_UNSAFE`), used by `/zookeeper/config`.
    pub fn read_unsafe() -> Vec<Acl> {
        vec![Acl { perms: super::perms::READ, id: Id::new("world", "anyone") }]
    }
}

pub fn write_acls(acls: &[Acl], b: &mut impl BufMut) {
    b.put_i32(acls.len() as i32);
    for a in acls {
        a.write(b);
    }
}

pub fn parse_acls(i: &[u8]) -> JResult<'_, Vec<Acl>> {
    jute::vector(Acl::parse)(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_round_trips_in_68_bytes() {
        let s = Stat {
            czxid: 1,
            mzxid: 2,
            ctime: 3,
            mtime: 4,
            version: 5,
            cversion: 6,
            aversion: 7,
            ephemeral_owner: 8,
            data_length: 9,
            num_children: 10,
            pzxid: 11,
        };
        let mut b = Vec::new();
        s.write(&mut b);
        assert_eq!(b.len(), Stat::WIRE_LEN);
        assert_eq!(jute::parse_all(&b, Stat::parse).unwrap(), s);
    }
}
