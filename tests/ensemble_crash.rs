//! Crash points inside recovery and snapshots (issue 38, item 3): a member of a real-process
//! ensemble is stopped (`ZKR_FAILPOINTS=crash-at=NAME`, an abort where a kill -9 could land) at
//! each fsync, rename and unlink whose order decides what a crash leaves behind: cutting a
//! damaged log, the amnesia marker, setting a diverged member's state aside, an empty member's
//! probe, writing a snapshot, installing one from the leader. It is started again without the
//! failpoint, and the schedule goes on: no acknowledged write is lost, no member crash-loops,
//! and nobody leads without the writes while the member that holds them is down.

use crate::common;

use common::cluster::{ephemeral, persistent};
use common::ensemble_proc::ProcEnsemble;
use std::time::Duration;
use zookeeper_client as zk;

async fn client(addr: &str) -> zk::Client {
    zk::Client::connector().session_timeout(Duration::from_secs(10)).connect(addr).await.expect("client connects")
}

/// Stops member `i` at `point` as it starts, and starts it again without the failpoint.
fn crash_once_at(e: &mut ProcEnsemble, i: usize, point: &str) {
    e.set_env(&[("ZKR_FAILPOINTS", &format!("crash-at={point}"))]);
    e.restart(i);
    let code = e.wait_exit(i, Duration::from_secs(30));
    assert!(code.is_some(), "{point}: member {} never reached its crash point:\n{}", i + 1, e.log(i));
    assert!(e.log(i).contains(&format!("failpoint crash-at={point}")), "{point}: it stopped elsewhere:\n{}", e.log(i));
    e.set_env(&[]);
    e.restart(i);
}

/// Flips one byte in the middle of the last record of member `i`'s newest Raft log segment.
fn flip_last_record(e: &ProcEnsemble, i: usize) {
    use std::os::unix::fs::FileExt;
    let seg = common::cluster::newest_file(&e.data_dir(i).join("raft").join("log"), "seg.");
    let recs = common::cluster::segment_records(&seg);
    let (off, len) = recs[recs.len() - 1];
    let f = std::fs::OpenOptions::new().read(true).write(true).open(&seg).unwrap();
    let mut b = [0u8; 1];
    f.read_exact_at(&mut b, off + len / 2).unwrap();
    f.write_all_at(&[b[0] ^ 0x5a], off + len / 2).unwrap();
}

/// `check` holds on member `i` within 30 s (it may still be catching up).
async fn eventually_on(e: &ProcEnsemble, i: usize, what: &str, check: impl Fn(Vec<String>) -> bool) {
    let until = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Ok(c)) = tokio::time::timeout(
            Duration::from_secs(3),
            zk::Client::connector().session_timeout(Duration::from_secs(6)).connect(&e.addr(i)),
        )
        .await
        {
            if c.sync("/").await.is_ok() {
                if let Ok(children) = c.list_children("/acked").await {
                    if check(children) {
                        return;
                    }
                }
            }
        }
        assert!(tokio::time::Instant::now() < until, "member {}: {what}:\n{}", i + 1, e.log(i));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The two-fault schedule of item 1 with a crash inside F1's recovery: F2 down; one write
/// acknowledged by L and F1, the newest record of F1's log; L and F1 killed, a byte of that
/// record flipped; F1 started and stopped at `point`, then started again with F2. They must not
/// elect without the write; once L is back, every member has it.
async fn two_faults_and_a_crash_in_recovery(point: &str) {
    let mut e = ProcEnsemble::start(3, 500);
    let l = e.leader();
    let f1 = (l + 1) % 3;
    let f2 = (l + 2) % 3;
    let c = client(&e.addr(l)).await;
    c.create("/acked", b"", &persistent()).await.unwrap();
    e.kill(f2);
    c.create("/acked/w", b"x", &persistent()).await.expect("acknowledged by L and F1");
    // The session stays open: its close is not the newest record.
    e.kill(l);
    e.kill(f1);
    drop(c);
    flip_last_record(&e, f1);
    crash_once_at(&mut e, f1, point);
    e.restart(f2);
    let until = std::time::Instant::now() + Duration::from_secs(4);
    while std::time::Instant::now() < until {
        for i in [f1, f2] {
            assert_ne!(e.mode(i), "leader", "{point}: a leader without the acknowledged write");
            assert_eq!(e.exited(i), None, "{point}: member {} stopped:\n{}", i + 1, e.log(i));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    e.restart(l);
    e.leader();
    for i in 0..3 {
        eventually_on(&e, i, &format!("{point}: the acknowledged write"), |c| c == ["w"]).await;
        assert_eq!(e.exited(i), None, "{point}: member {} stopped:\n{}", i + 1, e.log(i));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_at_every_step_of_cutting_a_damaged_log_loses_no_acknowledged_write() {
    for point in ["amnesia-marked", "log-cut-copied", "log-cut-zeroed", "log-cut-moved"] {
        two_faults_and_a_crash_in_recovery(point).await;
    }
}

/// A wiped follower of an ensemble whose leader purged its log, stopped at `point` (its probe
/// marked, or the leader's snapshot renamed into place without its `.meta`) and started again:
/// it probes again if the crash cut its probe short (it was empty, whatever files the leader's
/// first appends wrote meanwhile), takes the snapshot again, and has every node.
async fn a_wiped_member_stopped_at(point: &str) {
    let mut e = ProcEnsemble::start_with(3, 500, "snapCount=50\n", &[]);
    let l = e.leader();
    let f = (l + 1) % 3;
    let c = client(&e.addr(l)).await;
    c.create("/acked", b"", &persistent()).await.unwrap();
    for n in 0..300 {
        c.create(&format!("/acked/n{n}"), &[b'y'; 40], &persistent()).await.unwrap();
    }
    let purged = e.data_dir(l).join("raft").join("purged");
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while !purged.exists() {
        assert!(std::time::Instant::now() < until, "{point}: the leader never purged its log");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    e.kill(f);
    for entry in std::fs::read_dir(e.data_dir(f)).unwrap().flatten() {
        if entry.file_name() != "myid" {
            let p = entry.path();
            if p.is_dir() {
                std::fs::remove_dir_all(&p).unwrap();
            } else {
                std::fs::remove_file(&p).unwrap();
            }
        }
    }
    crash_once_at(&mut e, f, point);
    eventually_on(&e, f, &format!("{point}: every node back"), |c| c.len() == 300).await;
    let log = e.log(f);
    let after = log.split(&format!("failpoint crash-at={point}")).nth(1).unwrap_or("");
    if point == "probe-marked" {
        assert!(after.contains("zkr::raft::member::probe"), "{point}: the probe ran again after the crash:\n{log}");
    }
    assert_eq!(e.exited(f), None, "{point}: the member stopped:\n{}", e.log(f));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wiped_member_stopped_in_its_probe_or_its_snapshot_install_catches_up() {
    for point in ["probe-marked", "install-renamed"] {
        a_wiped_member_stopped_at(point).await;
    }
}

/// A follower stopped while it writes a snapshot (its tree file renamed into place without its
/// `.meta`, or the `.meta` written before the purge), while it purges an old one (its `.meta`
/// gone, its tree file not), or while it purges its log (the mark written, the segments not
/// removed) starts from what it has and catches up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_stopped_while_it_writes_or_purges_a_snapshot_or_purges_its_log_loses_nothing() {
    for point in ["snapshot-written", "snapshot-meta", "snapshot-purge-meta", "log-purged"] {
        let mut e = ProcEnsemble::start_with(3, 500, "snapCount=50\n", &[]);
        let l = e.leader();
        let f = (l + 1) % 3;
        e.set_env(&[("ZKR_FAILPOINTS", &format!("crash-at={point}"))]);
        e.restart(f);
        e.set_env(&[]);
        let c = client(&e.addr(l)).await;
        c.create("/acked", b"", &persistent()).await.unwrap();
        for n in 0..200 {
            c.create(&format!("/acked/n{n}"), b"z", &persistent()).await.unwrap();
        }
        assert!(e.wait_exit(f, Duration::from_secs(30)).is_some(), "{point}: never reached:\n{}", e.log(f));
        assert!(e.log(f).contains(&format!("failpoint crash-at={point}")), "{point}:\n{}", e.log(f));
        e.restart(f);
        eventually_on(&e, f, &format!("{point}: every node back"), |c| c.len() == 200).await;
        assert_eq!(e.exited(f), None, "{point}: the member stopped:\n{}", e.log(f));
    }
}

/// A diverged follower (the prep-skew failpoint) stopped after the first file of its Raft state
/// was set aside: started again, it finishes setting it aside and is refilled by the leader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_diverged_member_stopped_while_its_state_is_set_aside_starts_over_whole() {
    let mut e = ProcEnsemble::start(3, 500);
    let l = e.leader();
    let f = (l + 1) % 3;
    e.set_env(&[("ZKR_FAILPOINTS", "prep-skew")]);
    e.restart(f);
    e.set_env(&[]);
    let c = client(&e.addr(l)).await;
    c.create("/acked", b"", &persistent()).await.unwrap();
    for n in 0..20 {
        c.create(&format!("/acked/p{n}"), b"data", &persistent()).await.unwrap();
    }
    let _keep = c.create("/acked/eph", b"", &ephemeral()).await;
    assert!(e.wait_exit(f, Duration::from_secs(30)).is_some(), "the skewed member never stopped:\n{}", e.log(f));
    crash_once_at(&mut e, f, "diverge-moved-one");
    eventually_on(&e, f, "refilled by the leader", |c| c.len() == 21).await;
    assert!(e.log(f).contains("set aside"), "{}", e.log(f));
    assert_eq!(e.exited(f), None, "the member stopped:\n{}", e.log(f));
}

const RECONFIG: &str =
    "reconfigEnabled=true\nDigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU=\n";

/// A session on member `i` with the super identity, if it answers within 5 s.
async fn admin_on(e: &ProcEnsemble, i: usize) -> Option<zk::Client> {
    let addr = e.addr(i);
    let mut connector = zk::Client::connector();
    let connect = connector.session_timeout(Duration::from_secs(6)).connect(&addr);
    let c = tokio::time::timeout(Duration::from_secs(5), connect).await.ok()?.ok()?;
    c.auth("digest".into(), b"super:test".to_vec()).await.ok()?;
    Some(c)
}

/// Member `i`'s `/zookeeper/config`: its `server.N` lines, sorted, and its version.
async fn config_on(e: &ProcEnsemble, i: usize) -> Option<(Vec<String>, i64)> {
    let c = admin_on(e, i).await?;
    c.sync("/zookeeper/config").await.ok()?;
    let (text, _) = c.get_config().await.ok()?;
    let text = String::from_utf8(text).ok()?;
    let mut servers: Vec<String> = text.lines().filter(|l| l.starts_with("server.")).map(str::to_owned).collect();
    servers.sort();
    let version = text.lines().find_map(|l| l.strip_prefix("version="))?;
    Some((servers, i64::from_str_radix(version, 16).ok()?))
}

/// `lines` as joining servers (`incremental`) or as the new member list, from `version`.
async fn reconfigure(c: &zk::Client, lines: &[String], incremental: bool, version: i64) -> Result<(), zk::Error> {
    let items: Vec<&str> = lines.iter().map(String::as_str).collect();
    let it = items.iter().copied();
    let update = match incremental {
        true => zk::EnsembleUpdate::Incremental { joinings: it, leavings: [].iter().copied() },
        false => zk::EnsembleUpdate::New { ensemble: it },
    };
    c.update_ensemble(update, Some(version)).await.map(|_| ())
}

/// Reconfig is one step for the client (issue 38, item 6): the leader is stopped at `point`, a
/// step of carrying out a reconfig that adds member 4 and removes a follower (or, with
/// `demote`, makes a follower an observer). The survivors' leader finishes the plan: no member
/// ever shows a configuration that is neither the old nor the new one, every member ends on
/// the new one with one version, the client's retry from the old version gets BadVersion (it
/// happened), and the ensemble serves writes.
async fn a_leader_stopped_at_a_reconfig_step(point: &str, demote: bool) {
    let mut e = ProcEnsemble::start_with(3, 500, RECONFIG, &[("ZKR_FAILPOINTS", &format!("crash-at={point}"))]);
    let l = e.leader();
    let (f, g) = ((l + 1) % 3, (l + 2) % 3);
    let (before, version) = config_on(&e, f).await.expect("the configuration");
    let c = admin_on(&e, l).await.expect("an admin session on the leader");
    let (lines, joiner) = if demote {
        (vec![format!("server.{}={}", g + 1, e.server_spec(g).replace(":participant", ":observer"))], None)
    } else {
        let j = e.join();
        // The new member has answered its own start (probed the others: being added, it votes)
        // before the reconfig, as ZooKeeper's docs start a server before adding it. A reconfig
        // racing that probe while the leader stops is another schedule, open: the joiner can
        // take a candidate's raised term for the ensemble's and refuse to vote (closing note of
        // 2026-12-07, /work/ci-logs/2026-12-07-ci-reconfig-flake.log).
        let until = std::time::Instant::now() + Duration::from_secs(20);
        while !e.log(j).contains("is adding this member: it votes") {
            assert!(std::time::Instant::now() < until, "{point}: the joiner never settled:\n{}", e.log(j));
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let lines = [l, f, j].iter().map(|i| format!("server.{}={}", i + 1, e.server_spec(*i))).collect();
        (lines, Some(j))
    };
    let outcome = reconfigure(&c, &lines, demote, version).await;
    assert!(outcome.is_err(), "{point}: the leader answered before it stopped: {outcome:?}");
    assert!(e.wait_exit(l, Duration::from_secs(30)).is_some(), "{point}: never reached:\n{}", e.log(l));
    assert!(e.log(l).contains(&format!("failpoint crash-at={point}")), "{point}: stopped elsewhere:\n{}", e.log(l));
    drop(c);

    // The survivors finish the plan; meanwhile every configuration shown is the old or the new.
    let survivors: Vec<usize> = [Some(f), Some(g), joiner].into_iter().flatten().collect();
    let mut seen: Vec<Vec<String>> = vec![before.clone()];
    let until = tokio::time::Instant::now() + Duration::from_secs(60);
    if demote {
        // The demotion left l and f as the voters: nothing is decided without l.
        e.set_env(&[]);
        e.restart(l);
    }
    let settled = loop {
        let mut now = Vec::new();
        for i in &survivors {
            if let Some((servers, v)) = config_on(&e, *i).await {
                if !seen.contains(&servers) {
                    seen.push(servers.clone());
                }
                now.push((*i, servers, v));
            }
        }
        // The removed member may keep the old configuration; the others move.
        let must_move: Vec<usize> = survivors.iter().copied().filter(|i| demote || *i != g).collect();
        let moved = must_move.iter().all(|i| now.iter().any(|(j, s, _)| j == i && *s != before));
        if moved {
            break now.iter().find(|(_, s, _)| *s != before).map(|(_, s, v)| (s.clone(), *v)).expect("a new one");
        }
        assert!(
            tokio::time::Instant::now() < until,
            "{point}: the plan was never finished: {now:?}\n{}",
            survivors.iter().map(|i| e.log(*i)).collect::<String>()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(seen.len() <= 2, "{point}: a configuration neither old nor new was shown: {seen:#?}");
    let (servers, new_version) = settled;
    assert_ne!(new_version, version, "{point}");
    let line = |i: usize| servers.iter().find(|s| s.starts_with(&format!("server.{}=", i + 1))).cloned();
    if demote {
        assert!(line(g).is_some_and(|s| s.contains(":observer")), "{point}: {servers:?}");
    } else {
        assert!(line(g).is_none(), "{point}: member {} removed: {servers:?}", g + 1);
        let j = joiner.expect("a joiner");
        assert!(line(j).is_some_and(|s| s.contains(":participant")), "{point}: {servers:?}");
    }

    // The stopped leader comes back on the new configuration; the retry learns it happened.
    e.set_env(&[]);
    e.restart(l);
    let members: Vec<usize> = [Some(l), Some(f), joiner, demote.then_some(g)].into_iter().flatten().collect();
    for i in &members {
        let until = tokio::time::Instant::now() + Duration::from_secs(30);
        while config_on(&e, *i).await != Some((servers.clone(), new_version)) {
            assert!(
                tokio::time::Instant::now() < until,
                "{point}: member {} never showed {servers:?}:\n{}",
                i + 1,
                e.log(*i)
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let c = admin_on(&e, f).await.expect("a session");
    let retry = reconfigure(&c, &lines, demote, version).await;
    assert_eq!(retry, Err(zk::Error::BadVersion), "{point}: the retry from the old version");
    c.create(&format!("/after-{point}"), b"", &persistent()).await.expect("the ensemble serves writes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_stopped_at_any_step_of_a_reconfig_leaves_the_old_or_the_new_configuration_never_a_mix() {
    for point in ["reconfig-begun", "reconfig-added", "reconfig-voted", "reconfig-removed"] {
        a_leader_stopped_at_a_reconfig_step(point, false).await;
    }
    a_leader_stopped_at_a_reconfig_step("reconfig-demoted", true).await;
}

/// A member whose `raft/vote` was damaged (set aside at its start: it may have promised its vote
/// in a term it no longer knows) votes again once a leader of the newest term has caught it up.
/// Found by the disk matrix's leader schedule: with an intact log it never ran the probe that
/// ends that state, refused votes for good, and the next leader kill left no quorum.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_whose_vote_was_damaged_votes_again_once_caught_up() {
    let mut e = ProcEnsemble::start(3, 500);
    let l = e.leader();
    let (f, g) = ((l + 1) % 3, (l + 2) % 3);
    let c = client(&e.addr(l)).await;
    c.create("/acked", b"", &persistent()).await.unwrap();
    e.kill(f);
    let vote = e.data_dir(f).join("raft").join("vote");
    let len = std::fs::metadata(&vote).expect("a vote file").len();
    std::fs::OpenOptions::new().write(true).open(&vote).unwrap().set_len(len / 2).unwrap();
    e.restart(f);
    c.create("/acked/a", b"", &persistent()).await.unwrap();
    eventually_on(&e, f, "caught up", |c| c == ["a"]).await;
    assert!(e.log(f).contains("damaged raft state files set aside"), "{}", e.log(f));
    drop(c);
    // The leader goes: a new one needs f's vote.
    e.kill(l);
    let until = std::time::Instant::now() + Duration::from_secs(20);
    while e.mode(f) != "leader" && e.mode(g) != "leader" {
        assert!(std::time::Instant::now() < until, "no leader without the old one:\n{}\n{}", e.log(f), e.log(g));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let now = if e.mode(f) == "leader" { f } else { g };
    client(&e.addr(now)).await.create("/acked/b", b"", &persistent()).await.expect("the new leader serves");
}
