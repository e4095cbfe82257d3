//! Tests of `command`: round trips, batches, prep versions.

use super::*;
use crate::proto::{Acl, CreateRequest, MultiOp};

fn round_trip(c: Command) {
    assert_eq!(Command::decode(&c.to_bytes()).unwrap(), c);
    let b = bincode::serialize(&c).unwrap();
    assert_eq!(bincode::deserialize::<Command>(&b).unwrap(), c);
}

#[test]
fn round_trips_every_op() {
    let o = Origin { member: 2, seq: 77 };
    round_trip(Command {
        origin: o,
        time: 5,
        session: 9,
        op: CommandOp::CreateSession { timeout_ms: 4000, password: [7; 16] },
    });
    round_trip(Command { origin: o, time: 5, session: 9, op: CommandOp::CloseSession });
    round_trip(Command {
        origin: o,
        time: 5,
        session: 9,
        op: CommandOp::Attach { timeout_ms: 6000, password: [1; 16], seen: None },
    });
    round_trip(Command {
        origin: o,
        time: 5,
        session: 9,
        op: CommandOp::Attach { timeout_ms: 6000, password: [1; 16], seen: Some(Origin { member: 3, seq: 1 << 41 }) },
    });
    round_trip(Command { origin: Origin::default(), time: 1, session: 0, op: CommandOp::Reap { path: "/c".into() } });
    let create = CreateRequest {
        path: "/a".into(),
        data: Some(bytes::Bytes::from_static(b"x")),
        acl: Acl::open_unsafe(),
        flags: 2,
        ttl: None,
    };
    round_trip(Command {
        origin: o,
        time: 5,
        session: 9,
        op: CommandOp::Request {
            ids: vec![Id::new("ip", "127.0.0.1"), Id::new("digest", "u:h")],
            ttl_enabled: true,
            enforce_quota: false,
            op: OpCode::Multi,
            body: RequestBody::Multi(vec![
                MultiOp::Create(OpCode::Create, create.clone()),
                MultiOp::Delete { path: "/b".into(), version: 3 },
            ]),
        },
    });
    round_trip(Command {
        origin: o,
        time: 5,
        session: 9,
        op: CommandOp::Request {
            ids: vec![],
            ttl_enabled: false,
            enforce_quota: true,
            op: OpCode::Create2,
            body: RequestBody::Create(create),
        },
    });
    let chunk = bytes::Bytes::from(vec![3u8; 70_000]);
    round_trip(Command {
        origin: o,
        time: 5,
        session: 0,
        op: CommandOp::RestoreChunk { restore: 1 << 49, index: 2, bytes: chunk },
    });
    round_trip(Command { origin: o, time: 5, session: 0, op: CommandOp::RestoreEnd { restore: 1 << 49, chunks: 3 } });
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    for n in 0..40 {
        let _ = Command::decode(&vec![3u8; n]);
        let _ = Batch::decode(&vec![0xff; n]);
    }
    assert!(Command::decode(&[]).is_err());
    assert!(Batch::decode(&[]).is_err());
    // A count far beyond what the bytes can hold is refused before anything is allocated.
    let mut b = MANY.to_be_bytes().to_vec();
    b.extend_from_slice(&u32::MAX.to_be_bytes());
    assert!(Batch::decode(&b).is_err());
}

fn cmd(seq: u64, path: &str) -> Command {
    Command { origin: Origin { member: 1, seq }, time: 3, session: 4, op: CommandOp::Reap { path: path.into() } }
}

#[test]
fn batches_written_before_checks_still_read_as_prep_version_0() {
    let old_form = |cmds: &[Command]| -> Vec<u8> {
        match cmds {
            [one] => one.to_bytes(),
            many => {
                let mut b = MANY.to_be_bytes().to_vec();
                put_commands(&mut b, many);
                b
            }
        }
    };
    for cmds in [vec![cmd(5, "/a")], vec![cmd(1, "/a"), cmd(2, "/bb"), cmd(0, "/c")], vec![]] {
        let back = Batch::decode(&old_form(&cmds)).unwrap();
        assert_eq!(back, Batch::of_version(cmds.clone(), 0, None));
        assert!(prepares_alike(back.version()));
    }
    // An entry written before batches (a bare command, bincode-framed) reads as a batch of one.
    let bare = bincode::serialize(&cmd(5, "/a")).unwrap();
    assert_eq!(bincode::deserialize::<Batch>(&bare).unwrap().cmds(), vec![cmd(5, "/a")]);
}

#[test]
fn a_batch_carries_its_prep_version_and_the_leaders_check() {
    let check = Some(AppliedCheck { zxid: 0x3_0000_0007, digest: 0xdead_beef_0123 });
    for batch in [Batch::new(vec![cmd(1, "/a"), cmd(2, "/bb")], check), Batch::new(vec![], None)] {
        let b = bincode::serialize(&batch).unwrap();
        let back = bincode::deserialize::<Batch>(&b).unwrap();
        assert_eq!(back, batch);
        assert_eq!(back.version(), PREP_VERSION);
    }
    assert!(!prepares_alike(PREP_VERSION + 1), "an entry of newer prep rules is never applied");
    // Trailing bytes after the last command are an error.
    let mut b = Batch::new(vec![cmd(1, "/a"), cmd(2, "/b")], check).to_bytes();
    b.push(0);
    assert!(Batch::decode(&b).is_err());
}

/// A rolling upgrade: an entry of newer prep rules holding an op this code cannot read is
/// read as a batch of that version (refused for it, with its reason), never as damage.
#[test]
fn an_unreadable_command_of_newer_prep_rules_reads_as_a_batch_refused_for_its_version() {
    let newer = Batch::of_version(vec![cmd(1, "/a")], PREP_VERSION + 1, None);
    let mut b = newer.to_bytes();
    let op_at = b.len() - (4 + "/a".len()) - 1; // the Reap's tag, before its ustring
    b[op_at] = 0x7f;
    let back = Batch::decode(&b).unwrap();
    assert_eq!((back.version(), back.cmds().len()), (PREP_VERSION + 1, 0));
    let mut same = Batch::new(vec![cmd(1, "/a")], None).to_bytes();
    same[op_at] = 0x7f;
    assert!(Batch::decode(&same).is_err(), "an unreadable command of this code's rules is damage");
}
