//! What one loader worker counts while its sessions run: each planned provider change until the
//! last of this worker's consumers watching that service has re-listed it and seen the change
//! (the coordinator takes the latest over all workers), ping latencies by phase, and where each
//! session is connected (the reconnect storm is over when no session is left on the killed member
//! and none is between members). Times that cross processes are wall-clock microseconds: the
//! workers share one machine's clock.

use super::super::stats::Latencies;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Microseconds since the Unix epoch (comparable between the loader's processes).
pub fn wall_us() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

/// One provider node appearing (`present`) or vanishing in one service's providers directory.
struct Change {
    id: u32,
    name: String,
    present: bool,
    /// Per watcher of the service (its global slot): whether it has listed the change. Only
    /// this worker's consumers are waited for.
    seen: Vec<bool>,
    /// This worker's watchers of the service, and those that have not seen the change yet.
    local: usize,
    left: usize,
    done_us: Option<i64>,
}

/// One change as a worker reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub id: u32,
    /// When this worker made the change (only the provider's worker did).
    pub made_us: Option<i64>,
    /// When this worker's last watching consumer saw it (None: it has none).
    pub done_us: Option<i64>,
    /// This worker's consumers have not all seen it.
    pub unseen: bool,
}

pub struct Tracker {
    services: Vec<Mutex<Vec<Change>>>,
    made: Mutex<HashMap<u32, i64>>,
    pub relists: AtomicU64,
}

impl Tracker {
    pub fn new(services: usize) -> Tracker {
        Tracker {
            services: (0..services).map(|_| Mutex::new(Vec::new())).collect(),
            made: Mutex::new(HashMap::new()),
            relists: AtomicU64::new(0),
        }
    }

    /// A planned change to `service`, which `watchers` consumers watch, `local` of them here.
    /// Registered before it can happen, so no listing can show it early.
    pub fn expect(&self, id: u32, service: usize, name: String, present: bool, watchers: usize, local: usize) {
        let c = Change { id, name, present, seen: vec![false; watchers], local, left: local, done_us: None };
        self.services[service].lock().push(c);
    }

    /// This worker made change `id` now.
    pub fn made(&self, id: u32) {
        self.made.lock().insert(id, wall_us());
    }

    /// The consumer at `slot` among `service`'s watchers received this listing.
    pub fn listed(&self, service: usize, slot: usize, children: &[&[u8]]) {
        self.relists.fetch_add(1, Ordering::Relaxed);
        let mut pending = self.services[service].lock();
        for c in pending.iter_mut().filter(|c| c.left > 0) {
            let Some(seen) = c.seen.get_mut(slot) else { continue };
            if *seen {
                continue;
            }
            let listed = children.contains(&c.name.as_bytes());
            if listed == c.present {
                *seen = true;
                c.left -= 1;
                if c.left == 0 {
                    c.done_us = Some(wall_us());
                }
            }
        }
    }

    /// Changes some consumer of this worker has not seen yet.
    pub fn unseen(&self) -> usize {
        self.services.iter().map(|s| s.lock().iter().filter(|c| c.left > 0).count()).sum()
    }

    /// Every planned change, taken out.
    pub fn report(&self) -> Vec<Report> {
        let made = std::mem::take(&mut *self.made.lock());
        let mut out = Vec::new();
        for s in &self.services {
            for c in std::mem::take(&mut *s.lock()) {
                out.push(Report {
                    id: c.id,
                    made_us: made.get(&c.id).copied(),
                    done_us: if c.local > 0 { c.done_us } else { None },
                    unseen: c.left > 0,
                });
            }
        }
        out
    }
}

/// Merges the workers' reports: per change, the latest local completion minus when it was made.
/// Returns the times and how many changes some consumer never saw (or nobody made).
pub fn merge(reports: &[Report]) -> (Latencies, usize) {
    let mut by_id: HashMap<u32, (Option<i64>, Option<i64>, bool)> = HashMap::new();
    for r in reports {
        let e = by_id.entry(r.id).or_insert((None, None, false));
        e.0 = e.0.or(r.made_us);
        e.1 = match (e.1, r.done_us) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        e.2 |= r.unseen;
    }
    let mut lat = Latencies::default();
    let mut unseen = 0;
    for (made, done, missing) in by_id.into_values() {
        match (made, done, missing) {
            (Some(m), Some(d), false) => {
                lat.record(std::time::Duration::from_micros(d.saturating_sub(m).max(0) as u64))
            }
            // A service nobody watches: nothing to wait for.
            (Some(_), None, false) => {}
            _ => unseen += 1,
        }
    }
    (lat, unseen)
}

/// The workload's phases, for ping latencies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(usize)]
pub enum Phase {
    Setup = 0,
    Steady = 1,
    Release = 2,
    Storm = 3,
    After = 4,
}

pub const PHASES: usize = 5;

/// Session-wide counters of one worker.
pub struct Counters {
    phase: AtomicUsize,
    pings: [Mutex<Latencies>; PHASES],
    /// Sessions connected to each member now.
    pub on_member: Vec<AtomicUsize>,
    /// Sessions between a connection loss and their re-attachment.
    pub lost: AtomicUsize,
    /// Connection loss to re-attachment, per session (the client's random pause included).
    pub reconnects: Mutex<Latencies>,
    /// The successful attempt alone: connect and handshake, the server's share of a re-attach.
    pub handshakes: Mutex<Latencies>,
    pub expired: AtomicU64,
    pub errors: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl Counters {
    pub fn new(members: usize) -> Counters {
        Counters {
            phase: AtomicUsize::new(Phase::Setup as usize),
            pings: Default::default(),
            on_member: (0..members).map(|_| AtomicUsize::new(0)).collect(),
            lost: AtomicUsize::new(0),
            reconnects: Mutex::new(Latencies::default()),
            handshakes: Mutex::new(Latencies::default()),
            expired: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            first_error: Mutex::new(None),
        }
    }

    pub fn set_phase(&self, p: usize) {
        self.phase.store(p.min(PHASES - 1), Ordering::SeqCst);
    }

    pub fn ping(&self, d: std::time::Duration) {
        let p = self.phase.load(Ordering::Relaxed);
        self.pings[p].lock().record(d);
    }

    pub fn take_pings(&self, p: usize) -> Latencies {
        std::mem::take(&mut *self.pings[p.min(PHASES - 1)].lock())
    }

    pub fn error(&self, e: impl std::fmt::Display) {
        if self.errors.fetch_add(1, Ordering::SeqCst) == 0 {
            *self.first_error.lock() = Some(e.to_string());
        }
    }

    pub fn first_error(&self) -> Option<String> {
        self.first_error.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A change is done when this worker's last watching consumer lists it; a listing that does
    /// not show it does not count; the merge takes the latest worker and the maker's time.
    #[test]
    fn a_change_is_timed_to_its_last_consumer() {
        let t = Tracker::new(2);
        t.expect(7, 1, "a".into(), true, 3, 2);
        t.expect(8, 1, "b".into(), false, 3, 2);
        t.made(7);
        t.listed(1, 0, &[b"b"]);
        assert_eq!(t.unseen(), 2);
        t.listed(1, 0, &[b"a"]);
        t.listed(1, 2, &[b"a", b"b"]);
        assert_eq!(t.unseen(), 1, "b is still listed by the consumer at slot 2");
        t.listed(1, 2, &[b"a"]);
        assert_eq!(t.unseen(), 0);
        let mut here = t.report();
        here.sort_by_key(|r| r.id);
        assert!(here[0].made_us.is_some() && here[0].done_us.is_some() && !here[0].unseen);
        // Another worker holds the third watcher of service 1 and saw change 7 later.
        let late = here[0].done_us.unwrap_or(0) + 5_000;
        let other = vec![
            Report { id: 7, made_us: None, done_us: Some(late), unseen: false },
            Report { id: 8, made_us: None, done_us: None, unseen: true },
        ];
        let all: Vec<Report> = here.iter().cloned().chain(other).collect();
        let (mut lat, unseen) = merge(&all);
        assert_eq!(lat.len(), 1);
        assert_eq!(unseen, 1, "change 8 was never made and is unseen elsewhere");
        assert!(lat.summary().2 >= 5_000);
    }
}
