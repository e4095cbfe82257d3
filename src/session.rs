//! Session runtime state that is not replicated: passwords, auth identities, the connection a
//! session is attached to, and the tick-bucketed expiry queue (ZooKeeper's ExpiryQueue).

use crate::proto::{Id, PASSWORD_LEN};
use crate::txn::SessionId;
use sha1::{Digest, Sha1};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::OnceLock;
use std::time::Instant;

/// Monotonic milliseconds since the first call in this process: the clock of session expiry,
/// shared by the core and the connection tasks that record when a session was last heard.
pub fn mono_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

/// Connection id, unique for the life of the process.
pub type ConnId = u64;

#[derive(Debug, Clone)]
pub struct Session {
    pub timeout_ms: i32,
    /// The connection currently attached, if any.
    pub conn: Option<ConnId>,
    /// Identities for ACL checks: `ip:<addr>` plus whatever auth packets added, in the order
    /// ZooKeeper's auth set lists them (`authinfo::add`).
    pub ids: Vec<Id>,
}

/// Derives session passwords from a server secret, so they need not be stored
/// (ZooKeeper derives them from the id too, but from a constant, guessable seed).
#[derive(Clone)]
pub struct Passwords {
    secret: [u8; 32],
}

impl Passwords {
    pub fn new(secret: [u8; 32]) -> Passwords {
        Passwords { secret }
    }

    pub fn for_session(&self, id: SessionId) -> [u8; PASSWORD_LEN] {
        let mut h = Sha1::new();
        h.update(self.secret);
        h.update(id.to_be_bytes());
        let d = h.finalize();
        let mut p = [0u8; PASSWORD_LEN];
        p.copy_from_slice(&d[..PASSWORD_LEN]);
        p
    }

    /// Constant-time comparison.
    pub fn verify(&self, id: SessionId, given: &[u8]) -> bool {
        same_password(&self.for_session(id), given)
    }
}

/// Constant-time comparison of a session password with what a client sent.
pub fn same_password(want: &[u8; PASSWORD_LEN], given: &[u8]) -> bool {
    given.len() == PASSWORD_LEN && want.iter().zip(given).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// The password ZooKeeper gives session `id`: `new java.util.Random(id ^ 0xB3415C00).nextBytes`
/// (`ZooKeeperServer.generatePasswd`). Accepted only for sessions imported from ZooKeeper, so
/// that its clients can re-attach to zkr after a migration.
pub fn zookeeper_password(id: SessionId) -> [u8; PASSWORD_LEN] {
    const MULT: i64 = 0x5DEE_CE66D;
    const MASK: i64 = (1 << 48) - 1;
    let mut seed = (id ^ 0xB341_5C00 ^ MULT) & MASK;
    let mut next_int = || {
        seed = (seed.wrapping_mul(MULT).wrapping_add(0xB)) & MASK;
        (seed >> 16) as i32
    };
    let mut out = [0u8; PASSWORD_LEN];
    for chunk in out.chunks_mut(4) {
        let mut rnd = next_int();
        for b in chunk {
            *b = rnd as u8;
            rnd >>= 8;
        }
    }
    out
}

/// First session id: ZooKeeper's layout, `(time << 24) >>> 8` with the server id in the top byte.
pub fn initial_session_id(now_ms: i64, server_id: u8) -> SessionId {
    let t = ((now_ms as u64) << 24) >> 8;
    (t | ((server_id as u64) << 56)) as i64
}

/// Sessions bucketed by expiry time rounded up to the next tick, so a sweep touches only
/// the buckets that are due.
#[derive(Debug, Default)]
pub struct ExpiryQueue {
    interval: u64,
    buckets: BTreeMap<u64, HashSet<SessionId>>,
    at: HashMap<SessionId, u64>,
}

impl ExpiryQueue {
    pub fn new(interval_ms: u64) -> ExpiryQueue {
        ExpiryQueue { interval: interval_ms.max(1), ..Default::default() }
    }

    fn round_up(&self, t: u64) -> u64 {
        (t / self.interval + 1) * self.interval
    }

    /// Moves a session to the bucket of `now + timeout`.
    pub fn touch(&mut self, id: SessionId, now_ms: u64, timeout_ms: u64) {
        let due = self.round_up(now_ms + timeout_ms);
        match self.at.insert(id, due) {
            Some(old) if old == due => return,
            Some(old) => {
                // The emptied bucket stays until it is due, as ZooKeeper's ExpiryQueue.update
                // leaves it: `dump` lists it with no session.
                if let Some(b) = self.buckets.get_mut(&old) {
                    b.remove(&id);
                }
            }
            None => {}
        }
        self.buckets.entry(due).or_default().insert(id);
    }

    /// Like `touch`, but only ever moves a queued session later.
    pub fn extend(&mut self, id: SessionId, now_ms: u64, timeout_ms: u64) {
        let due = self.round_up(now_ms + timeout_ms);
        if self.at.get(&id).is_some_and(|at| *at < due) {
            self.touch(id, now_ms, timeout_ms);
        }
    }

    /// True if a session heard at `heard_ms` would be due only after `now_ms`.
    pub fn due_after(&self, heard_ms: u64, timeout_ms: u64, now_ms: u64) -> bool {
        self.round_up(heard_ms + timeout_ms) > now_ms
    }

    /// Forgets a session; its bucket stays until due, even if empty (ZooKeeper's ExpiryQueue.remove).
    pub fn remove(&mut self, id: SessionId) {
        if let Some(old) = self.at.remove(&id) {
            if let Some(b) = self.buckets.get_mut(&old) {
                b.remove(&id);
            }
        }
    }

    /// Every bucket: when it is due and its sessions, soonest first (the `dump` word).
    pub fn buckets(&self) -> Vec<(u64, Vec<SessionId>)> {
        self.buckets
            .iter()
            .map(|(due, ids)| {
                let mut v: Vec<SessionId> = ids.iter().copied().collect();
                v.sort();
                (*due, v)
            })
            .collect()
    }

    /// The interval buckets are rounded to.
    pub fn interval(&self) -> u64 {
        self.interval
    }

    /// Removes and returns every session whose bucket is due at `now`.
    pub fn expired(&mut self, now_ms: u64) -> Vec<SessionId> {
        let mut out = Vec::new();
        while let Some((&due, _)) = self.buckets.first_key_value() {
            if due > now_ms {
                break;
            }
            if let Some(ids) = self.buckets.remove(&due) {
                for id in ids {
                    self.at.remove(&id);
                    out.push(id);
                }
            }
        }
        out.sort();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expires_within_timeout_plus_one_tick() {
        let mut q = ExpiryQueue::new(100);
        q.touch(1, 0, 1000);
        assert!(q.expired(1000).is_empty());
        assert_eq!(q.expired(1100), vec![1]);
        q.touch(2, 0, 1000);
        q.touch(2, 500, 1000);
        assert!(q.expired(1100).is_empty());
        assert_eq!(q.expired(1600), vec![2]);
    }

    #[test]
    fn extend_only_moves_later() {
        let mut q = ExpiryQueue::new(100);
        q.touch(1, 500, 1000);
        q.extend(1, 0, 1000);
        assert_eq!(q.buckets(), vec![(1600, vec![1])]);
        q.extend(1, 900, 1000);
        assert_eq!(q.buckets(), vec![(1600, vec![]), (2000, vec![1])]);
        q.extend(2, 900, 1000);
        assert_eq!(q.buckets(), vec![(1600, vec![]), (2000, vec![1])], "an unqueued session stays unqueued");
    }

    #[test]
    fn emptied_buckets_stay_until_due_as_in_zookeeper() {
        let mut q = ExpiryQueue::new(100);
        q.touch(1, 0, 1000);
        q.touch(2, 0, 1000);
        q.touch(1, 250, 1000);
        q.remove(2);
        // ZooKeeper's dump lists the emptied 1100 bucket until its time comes.
        assert_eq!(q.buckets(), vec![(1100, vec![]), (1300, vec![1])]);
        assert_eq!(q.expired(1100), Vec::<SessionId>::new());
        assert_eq!(q.buckets(), vec![(1300, vec![1])]);
        assert_eq!(q.expired(1300), vec![1]);
        assert!(q.buckets().is_empty());
    }

    #[test]
    fn passwords_verify() {
        let p = Passwords::new([7; 32]);
        let pw = p.for_session(42);
        assert!(p.verify(42, &pw));
        assert!(!p.verify(43, &pw));
        assert!(!p.verify(42, &[0; 16]));
    }

    #[test]
    fn zookeeper_passwords_match_a_real_server() {
        // Session 0x1000020b7660000 and its password, from protocol-fixtures/multi-fail.txt.
        let want = [0xb8, 0x94, 0x4c, 0x16, 0xe5, 0xd3, 0x6d, 0xc2, 0x56, 0xc2, 0x3f, 0x0a, 0x36, 0x4b, 0xa9, 0xf6];
        assert_eq!(zookeeper_password(0x1000020b7660000), want);
    }

    #[test]
    fn session_ids_carry_server_id() {
        let id = initial_session_id(1_700_000_000_000, 1);
        assert_eq!((id as u64) >> 56, 1);
    }
}
