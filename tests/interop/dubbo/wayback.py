"""Step 6 of migrate.py: the way back from the zkr ensemble to ZooKeeper, with the same Dubbo processes.

The zkr members (their zoo.cfg has zkr.zookeeperPasswords=true, written by `zkr takeover`) are stopped
with SIGTERM; `zkr export-zookeeper --myid N` writes a ZooKeeper dataDir from each member's directory;
Debian's ZooKeeper 3.8 starts as a 3-member ensemble (myids 9, 10, 11) on the zkr members' hosts and
client, quorum and election ports, so the Dubbo processes' address lists reach it. Then: every Dubbo
ephemeral is on every ZooKeeper member, owned by the same session (the sessions re-attached: p1, p2 and
the consumer came from the first ZooKeeper, p3 was born on zkr), no session expired, the consumer's calls
succeed, and p4, started afterwards, registers and is called.
"""

import os
import subprocess
import time

WAYBACK_CHECKS = [
    ("wayback_export", "the way back: zkr members stopped (SIGTERM), each exported with zkr export-zookeeper; "
                       "ZooKeeper 3.8 starts as a 3-member ensemble on the exports, same hosts and ports"),
    ("wayback_nodes", "the way back: p1, p2, p3 and the consumer are on every ZooKeeper member, owned by the same "
                      "sessions as on zkr (their sessions re-attached); no Dubbo session expired"),
    ("wayback_calls", "the way back: the consumer's calls to p1, p2 and p3 succeed on ZooKeeper"),
    ("wayback_new_provider", "the way back: p4, started on ZooKeeper afterwards, registers and is called"),
]


def way_back(run, zkr_ids, server_cls, servers_text, session_ms):
    """Runs step 6 on migrate.py's Migration `run`; records the WAYBACK_CHECKS."""
    want3 = ["p1", "p2", "p3"]
    t0 = run.step("6 the way back: zkr stops, each member is exported, ZooKeeper starts on the exports")
    before = run.owners(zkr_ids[0])
    run.tl("Dubbo ephemerals on zkr (owner sessions)",
           ", ".join(f"{k}=0x{v:x}" if v else f"{k}=-" for k, v in sorted(before.items())))
    sessions = run.dubbo_sessions()
    for m in zkr_ids:
        old = run.obs.pop(m, None)
        if old is not None:
            run.drop(old)
    t_stop = time.time()
    for m in zkr_ids:
        run.members[m].stop()
    run.tl("zkr members stopped", f"+{time.time() - t0:.1f}s")
    exported = []
    for m in zkr_ids:
        z = run.members[m]
        target = os.path.join(run.work, f"zookeeper-{m}", "data")
        cmd = [run.args.zkr_bin, "export-zookeeper", "--data-dir", os.path.join(z.dir, "data"),
               "--zk-data-dir", target, "--myid", str(m)]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        line = (p.stdout.splitlines() or [p.stderr.strip()])[0]
        run.tl(f"export server.{m}", f"exit {p.returncode}: {line}")
        exported.append((p.returncode, line))
        run.members[m] = server_cls("zookeeper", m, z.host, z.port, servers_text, run.work, run.args.zkr_bin,
                                    run.pids, run.admin_port)
    if any(rc != 0 for rc, _ in exported):
        run.check("wayback_export", False, "; ".join(line for _, line in exported))
        return
    run.start_servers(zkr_ids)
    t_l = run.wait_for("ZooKeeper on the exports: one leader, two followers", t0,
                       lambda: run.one_leader(list(zkr_ids)), 60)
    zxids = {line.split()[2].rstrip(":") for _, line in exported}
    run.check("wayback_export", t_l is not None and len(zxids) == 1,
              f"exports at zxid {', '.join(sorted(zxids))}; {run.modes_of(zkr_ids)}; ZooKeeper led "
              f"{(t_l or 0) + t0 - t_stop:.1f}s after zkr began to stop")
    if t_l is None:
        return
    for m in zkr_ids:
        run.wait_for(f"server.{m} takes a new client", t0, lambda m=m: run.connect_observer(m) or True, 30,
                     every=0.5)
    t_back = run.wait_for(f"all {len(sessions)} Dubbo sessions served by ZooKeeper", t0,
                          lambda: sessions <= run.dubbo_sessions(), 60)
    time.sleep(3)
    bad = []
    for m in zkr_ids:
        owners = run.owners(m)
        if not run.exact(m, want3):
            bad.append(f"server.{m}: providers {run.providers(m)}, consumers {run.consumers(m)}")
        elif owners != before:
            bad.append(f"server.{m}: sessions changed {sorted(k for k in owners if owners[k] != before.get(k))}")
    if t_back is None:
        bad.append(f"Dubbo sessions not on ZooKeeper: {[hex(s) for s in sorted(sessions - run.dubbo_sessions())]}")
    exp = run.expiry_lines()
    if exp:
        bad.append(" | ".join(exp[:3]))
    run.check("wayback_nodes", not bad, "; ".join(bad) if bad else
              f"p1, p2, p3 and the consumer on server.9-11 with the same ephemeralOwner; {len(sessions)} Dubbo "
              f"sessions back after {t_back:.1f}s; no Dubbo log mentions an expired session")
    ok, text = run.calls_ok(want3)
    t1 = time.time()
    run.tl("background calls during the way back", run.ticks_text(t_stop, t1))
    ok_a, fail_a, by_a, _, _, _ = run.ticks(t1 - 2.0, t1)
    run.check("wayback_calls", ok and ok_a > 0, f"{text}; the last 2 s: {ok_a} ok, {fail_a} failed")
    run.start_jvm("p4", "provider", session_ms, "p4")
    run.wait_ready("p4")
    want4 = want3 + ["p4"]
    t = run.wait_for("p4 on every ZooKeeper member; consumer directories list it", t0,
                     lambda: all(run.exact(m, want4) for m in zkr_ids) and run.dir_is(want4), 60)
    ok4, text4 = run.calls_ok(want4)
    run.check("wayback_new_provider", t is not None and ok4,
              ("registered" if t is not None else f"providers {[run.providers(m) for m in zkr_ids]}") + f"; {text4}")
