//! A stopped member's committed log replayed offline, for `zkr export-zookeeper`: the member's
//! own `apply_committed` on a core that has no connections, proposes nothing and leads nothing,
//! so the exported tree is the one the member would have served after applying the same entries
//! (every zxid, every prep decision, a reconfig's `/zookeeper/config`), not a re-implementation
//! of it. Must not touch the member's files: the core is given no data directory of the member's,
//! and a divergence found on the way is returned, not marked.

use super::*;

/// The tree after `entries` (committed, in log order, following `applied`) are applied to
/// `tree`, the member's snapshot at `applied` with `membership`. Err: why the member would
/// have stopped applying (an entry prepared under rules this build does not share, a tree that
/// differs from the leader's check).
pub fn replay(
    tree: DataTree,
    applied: Option<LogId>,
    membership: Membership,
    entries: Vec<Committed>,
) -> Result<DataTree, String> {
    let (outlet, _proposals) = crate::raft::seam::outlet();
    let mut repl = Replicated::new(u64::MAX, outlet, 1, applied, membership);
    repl.offline = true;
    let cfg = Arc::new(Config { exit_on_fatal: false, ..Config::default() });
    let zxid = tree.last_zxid();
    let views = Arc::new(super::super::super::view::Views::new(zxid));
    let mut core = Core::new(
        cfg,
        tree,
        [0; 32],
        Log::Replicated(Box::new(repl)),
        Arc::new(std::sync::atomic::AtomicI64::new(zxid)),
        Arc::new(crate::server::stats::ServerStats::default()),
        views,
    );
    core.apply_committed(entries);
    if let Some(why) = core.log.replicated().and_then(|r| r.stopped()) {
        return Err(why.to_owned());
    }
    Ok(core.tree)
}
