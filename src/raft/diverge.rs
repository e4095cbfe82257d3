//! A member whose applied log disagrees with its leader's: detected before openraft sees it.
//!
//! Entries a member has applied are committed, and in Raft a committed entry is the same on
//! every member forever. The only way a leader can disagree with one is an ensemble that went on
//! without writes this member holds, because an operator accepted their loss on another member
//! (`zkr.acceptDataLoss`, see `amnesia`). openraft would be asked to cut entries it has applied,
//! which it cannot do (a panic inside `apply_to_state_machine`, found by the schedule of issue
//! 22 item 4). Instead the member says so in one line, marks its Raft state to be set aside
//! (nothing is deleted) and stops; started again, it sets it aside and is an empty member of an
//! existing ensemble, which the leader refills. A member whose tree digest differs from the
//! leader's (see `server::core::replicated::check`) starts over the same way.

use super::log_store::{sync_dir, LogStore};
use super::types::{Entry, LogId};
use std::path::{Path, PathBuf};

/// Where the member's log and the leader's disagree at or below `applied`: (index, this
/// member's log id there, the leader's). `prev` is the leader's log id just before `entries`.
pub fn at(
    log: &LogStore,
    applied: Option<LogId>,
    prev: Option<LogId>,
    entries: &[Entry],
) -> Option<(u64, LogId, LogId)> {
    let applied = applied?.index;
    let theirs = prev.into_iter().chain(entries.iter().map(|e| e.log_id));
    theirs.filter(|l| l.index <= applied).find_map(|l| match log.log_id_at(l.index) {
        Some(mine) if mine != l => Some((l.index, mine, l)),
        _ => None,
    })
}

/// Marks the Raft state to be set aside at the member's next start (`set_aside`), with why.
pub fn mark(raft_dir: &Path, why: &str) -> std::io::Result<()> {
    super::log_store::write_small(&raft_dir.join("diverged"), &why.to_owned(), true)?;
    sync_dir(raft_dir);
    Ok(())
}

/// Why the Raft state is to be set aside, if it is.
pub fn marked(raft_dir: &Path) -> std::io::Result<Option<String>> {
    super::log_store::read_small(&raft_dir.join("diverged"))
}

/// Moves everything in `raft_dir` but the incarnation counter into `raft_dir/diverged-<secs>/`.
/// Returns where it went. The `diverged` mark goes last, once everything else has moved and the
/// moves are durable: a crash in between leaves the mark, and the next start moves the rest
/// (the member never starts with part of its old state, a log without its vote, say).
pub fn set_aside(raft_dir: &Path, crash: Option<crate::config::CrashPoint>) -> std::io::Result<PathBuf> {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let to = raft_dir.join(format!("diverged-{secs}"));
    std::fs::create_dir_all(&to)?;
    for e in std::fs::read_dir(raft_dir)?.flatten() {
        let name = e.file_name();
        let keep = name == "incarnation" || name == "diverged" || name.to_string_lossy().starts_with("diverged-");
        if !keep {
            std::fs::rename(e.path(), to.join(&name))?;
            crate::config::CrashPoint::DivergeMovedOne.hit(crash);
        }
    }
    sync_dir(&to);
    sync_dir(raft_dir);
    std::fs::rename(raft_dir.join("diverged"), to.join("diverged")).or_else(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Ok(()),
        _ => Err(e),
    })?;
    sync_dir(&to);
    sync_dir(raft_dir);
    Ok(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_aside_leaves_an_empty_member_and_keeps_everything() {
        let d = std::env::temp_dir().join(format!("zkr-diverge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("log")).unwrap();
        std::fs::write(d.join("vote"), b"v").unwrap();
        std::fs::write(d.join("incarnation"), b"i").unwrap();
        std::fs::write(d.join("log").join("seg.1"), b"s").unwrap();
        mark(&d, "test").unwrap();
        let to = set_aside(&d, None).unwrap();
        assert!(super::super::is_pristine(&d));
        assert!(to.join("vote").exists() && to.join("log").join("seg.1").exists());
        assert!(d.join("incarnation").exists());
        assert!(marked(&d).unwrap().is_none() && to.join("diverged").exists(), "the mark goes last");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A crash part way through: the mark is still there, so the next start moves the rest.
    #[test]
    fn a_set_aside_cut_short_is_finished_at_the_next_start() {
        let d = std::env::temp_dir().join(format!("zkr-diverge-cut-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("log")).unwrap();
        std::fs::write(d.join("log").join("seg.1"), b"s").unwrap();
        mark(&d, "test").unwrap();
        // The first run moved `vote` and died.
        let first = d.join("diverged-1");
        std::fs::create_dir_all(&first).unwrap();
        std::fs::write(first.join("vote"), b"v").unwrap();
        assert!(marked(&d).unwrap().is_some(), "the mark outlives the crash");
        let to = set_aside(&d, None).unwrap();
        assert!(to.join("log").join("seg.1").exists() && !d.join("log").exists());
        assert!(marked(&d).unwrap().is_none());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
