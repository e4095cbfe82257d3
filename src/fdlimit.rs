//! The process's open-file limit, and the client connections it leaves room for. A member holds
//! one file per client connection besides its own (log segments, snapshots, peer links); when a
//! reconnect storm took every file, a member could not open its next log segment and stopped,
//! and the ensemble lost its quorum (issue 25's storm at 38,000 sessions). So connections beyond
//! the limit less a reserve are refused at accept, as maxCnxns refuses them.

/// Files kept for the member's own use.
pub const RESERVE: u64 = 512;

/// Raises the soft open-file limit to the hard one, as the JVM does at startup
/// (-XX:+MaxFDLimit, on by default), so zkr holds as many connections as ZooKeeper would under
/// the same limits. Returns the soft limit now (None where it is unlimited or unknown).
pub fn raise() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut l = getrlimit(Resource::Nofile);
    if l.current != l.maximum {
        let want = rustix::process::Rlimit { current: l.maximum, maximum: l.maximum };
        if setrlimit(Resource::Nofile, want).is_ok() {
            l = getrlimit(Resource::Nofile);
        }
    }
    l.current
}

/// The client connections this process may hold: maxCnxns (0: unlimited), and never more than
/// the open-file limit less `RESERVE`.
pub fn connection_cap(max_connections: u32, nofile: Option<u64>) -> usize {
    let by_files = nofile.map(|n| n.saturating_sub(RESERVE).max(1));
    let cap = match (max_connections, by_files) {
        (0, Some(f)) => f,
        (0, None) => u64::MAX,
        (m, Some(f)) => (m as u64).min(f),
        (m, None) => m as u64,
    };
    usize::try_from(cap).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_limit_caps_connections_and_max_cnxns_may_cap_lower() {
        assert_eq!(connection_cap(0, Some(20_000)), 19_488);
        assert_eq!(connection_cap(500, Some(20_000)), 500);
        assert_eq!(connection_cap(50_000, Some(20_000)), 19_488);
        assert_eq!(connection_cap(0, None), usize::MAX);
        assert_eq!(connection_cap(7, None), 7);
        assert_eq!(connection_cap(0, Some(100)), 1, "a tiny limit still admits one");
    }

    #[test]
    fn raising_keeps_a_limit() {
        let now = raise();
        assert_eq!(raise(), now, "raising twice changes nothing");
    }
}
