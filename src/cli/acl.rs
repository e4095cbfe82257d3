//! zkCli's ACL argument (`AclParser`): `scheme:id:perms[,scheme:id:perms...]`.
//!
//! Pure: returns the ACL list and the complaints zkCli prints to stderr for entries it skips or
//! letters it does not know; the caller prints them.

use crate::proto::{perms, Acl, Id};

/// Parsed ACL entries plus zkCli's stderr lines, in the order zkCli prints them.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ParsedAcl {
    pub acl: Vec<Acl>,
    pub complaints: Vec<String>,
}

/// Java's `String.split(",")`: trailing empty pieces are dropped, but an input with no comma
/// at all is returned whole (so `""` gives one empty piece).
fn java_split_commas(s: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = s.split(',').collect();
    if parts.len() > 1 {
        while parts.last() == Some(&"") {
            parts.pop();
        }
    }
    parts
}

pub fn parse(text: &str) -> ParsedAcl {
    let mut out = ParsedAcl::default();
    for entry in java_split_commas(text) {
        let (first, last) = match (entry.find(':'), entry.rfind(':')) {
            (Some(f), Some(l)) if f != l => (f, l),
            _ => {
                out.complaints.push(format!("{entry} does not have the form scheme:id:perm"));
                continue;
            }
        };
        let mut bits = 0;
        for c in entry[last + 1..].chars() {
            match c {
                'r' => bits |= perms::READ,
                'w' => bits |= perms::WRITE,
                'c' => bits |= perms::CREATE,
                'd' => bits |= perms::DELETE,
                'a' => bits |= perms::ADMIN,
                other => out.complaints.push(format!("Unknown perm type: {other}")),
            }
        }
        out.acl.push(Acl { perms: bits, id: Id::new(&entry[..first], &entry[first + 1..last]) });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_aclparser() {
        let p = parse("world:anyone:rx,foo");
        assert_eq!(p.acl, vec![Acl { perms: perms::READ, id: Id::new("world", "anyone") }]);
        assert_eq!(p.complaints, vec!["Unknown perm type: x", "foo does not have the form scheme:id:perm"]);
        let d = parse("digest:alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E=:cdrwa");
        assert_eq!(d.acl[0].id, Id::new("digest", "alice:aYXlLOpEooaV1cRAvUL1fp9Qt7E="));
        assert_eq!(d.acl[0].perms, perms::ALL);
        let ip = parse("ip:127.0.0.1:cdrwa,");
        assert_eq!(ip.acl.len(), 1);
        assert!(ip.complaints.is_empty());
        assert_eq!(parse("").complaints, vec![" does not have the form scheme:id:perm"]);
        assert_eq!(parse("world:anyone:").acl[0].perms, 0);
    }
}
